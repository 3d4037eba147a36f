/**
 * CI on the lane's pushed commit, and the retry it decides: green goes on to the merge policy; red with attempts left
 * sends the CI failures back to the directive as feedback for another attempt; red with none left hands the PR to a
 * person as a draft. On a forge without CI the lane's own checks stand for it.
 */
import type { CiConclusion, LaneSpec } from '../../core/model.js';
import { firstLines, forgeCall, gist } from './failure.js';
import type { LaneRun } from './state.js';

/** The CI verdict a lane's own checks give on a forge without CI: green when they ran and passed, `none` when it has none. */
export function checksAsCi(lane: LaneSpec): CiConclusion {
  return lane.checks.length ? 'success' : 'none';
}

/**
 * The lane with the base its clone started from, when the fleet file names none: the base's required checks are read
 * from it, and the forge need not ask for the repository's default branch again. Only for the lane's own record in
 * this process: a record read from a result file is not evidence of where the base is.
 */
export function onBase(lane: LaneSpec, rec: { base_branch: string | null }): LaneSpec {
  return lane.base || !rec.base_branch || rec.base_branch === 'HEAD' ? lane : { ...lane, base: rec.base_branch };
}

/** Reads (or waits for) CI on the pushed commit: `done`, `retry` (red, attempts left: feedback set) or `handed-over` (red, out of attempts). */
export async function readCi(run: LaneRun, commit: string): Promise<'done' | 'retry' | 'handed-over'> {
  const { ctx, lane } = run;
  if (ctx.forge.capabilities.ci === 'lane-checks') {
    run.rec.ci_conclusion = checksAsCi(lane);
    return 'done';
  }
  if (!ctx.file.ci.wait) {
    run.rec.ci_conclusion = await forgeCall('ci-failed', 'reading CI', () => ctx.forge.ciConclusion(onBase(lane, run.rec), commit));
    return 'done';
  }
  // `ci` is a phase a lane passes through, never one it ends in: once CI has answered, the lane is back where it
  // was (its PR open, or its branch pushed), so a finished lane never reads as still waiting.
  const before = run.rec.phase;
  run.update({ phase: 'ci' }, `waiting for CI on ${commit.slice(0, 12)}`);
  const verdict = await forgeCall('ci-failed', 'waiting for CI', () =>
    ctx.forge.waitForCi(onBase(lane, run.rec), commit, ctx.file.ci.timeout_minutes * 60_000),
  );
  run.rec.ci_conclusion = verdict.conclusion;
  if (verdict.conclusion !== 'failure' && verdict.conclusion !== 'cancelled' && verdict.conclusion !== 'timed_out') {
    // A PR an earlier run handed over as a draft is ready again once its CI is green.
    if (verdict.conclusion === 'success' && run.rec.pr_number !== null && !ctx.file.pr.draft) {
      await forgeCall('pr-failed', 'marking the pull request ready', () => ctx.forge.setDraft(lane, run.rec.pr_number!, false));
    }
    run.update({ phase: before }, `CI ${verdict.conclusion}`);
    return 'done';
  }
  const n = run.n;
  run.rec.attempts.push({
    n,
    started_at: ctx.clock.now().toISOString(),
    duration_ms: 0,
    exit_code: null,
    signal: null,
    timed_out: false,
    failed_step: 'ci',
    log: run.rec.log ?? '',
  });
  if (n >= ctx.file.max_retries + 1) {
    // Out of retries: hand the PR to a person as a draft instead of leaving a red PR that looks ready.
    if (run.rec.pr_number !== null) {
      const number = run.rec.pr_number;
      await forgeCall('pr-failed', 'turning the pull request into a draft after CI stayed red', () => ctx.forge.setDraft(lane, number, true));
    }
    run.update(
      {
        status: 'failed',
        phase: 'draft',
        merge_status: 'draft',
        ended_at: ctx.clock.now().toISOString(),
        error: {
          class: 'code-review-needed',
          message: `CI is still red after ${n} attempt${n > 1 ? 's' : ''}: ${gist(verdict.failures) || 'see the PR checks'}`,
        },
      },
      'CI red, retries exhausted: handed to a person',
    );
    return 'handed-over';
  }
  run.feedback = `CI failed on the pushed change:\n${firstLines(verdict.failures, 2000)}`;
  return 'retry';
}
