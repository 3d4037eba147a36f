/**
 * One lane, start to end, as the list of its phases: clone, produce a change (attempts), review it, commit, push,
 * publish, CI (a red CI with attempts left goes round again), merge, and the lane result written whatever happened.
 * The same code runs in the local runner and in a GitHub matrix job; only the ports differ. Each phase is a module
 * of this folder; they share the lane's state (state.ts).
 */
import type { LaneRecord, LaneReview, LaneSpec } from '../../core/model.js';
import { issueMarkdown } from '../../core/queue.js';
import { hasUsage } from '../../core/spend.js';
import { writeFileAtomic } from '../../util/fs.js';
import { produceInBudget } from './attempts.js';
import { checksAsCi, readCi } from './ci.js';
import { checkIsolation, clone } from './clone.js';
import { commitChange } from './commit.js';
import type { LaneContext } from './context.js';
import { route, runsAgent } from './directive.js';
import { ChangeTooLarge } from '../../core/limits.js';
import { interrupted, LaneFailure, stopIfCancelled } from './failure.js';
import { issuePath, writeLaneResult } from './layout.js';
import { applyMergePolicy } from './merge.js';
import { publish } from './publish.js';
import { push } from './push.js';
import { leaveDiscoveries, receiveRelay } from './relay.js';
import { handOverReview, reviewPhase } from './review-phase.js';
import { LaneRun } from './state.js';

export async function runLane(ctx: LaneContext, lane: LaneSpec, start: LaneRecord): Promise<LaneRecord> {
  const run = new LaneRun(ctx, lane, start);
  try {
    const isolated = await checkIsolation(run);
    try {
      await clone(run);
    } finally {
      await isolated();
    }
    await receiveRelay(run);
    if (lane.issue) await writeFileAtomic(issuePath(ctx.root, lane.id), issueMarkdown(lane.issue));
    if (ctx.file.agent) {
      run.routing = await route(ctx, lane, run.repoDir, run.dir);
      run.rec.routing = run.routing.selected;
    }
    let previous = run.cloned.remote_branch_commit;
    for (;;) {
      let changed = await produceInBudget(run);
      run.rec.changed_files = changed;
      if (!changed.length) return await endNoOp(run, 'nothing changed');
      let review: LaneReview | null = null;
      if (lane.review && runsAgent(ctx, lane)) {
        ({ review, changed } = await reviewPhase(run, lane.review));
        if (!changed.length) return await endNoOp(run, 'nothing changed after review');
      }

      stopIfCancelled(ctx);
      const { commit, upToDate } = await commitChange(run, changed, previous);
      if (ctx.dryRun) {
        // Where the lane's own checks stand for CI (readCi), they ran and passed in a dry run too.
        const ci_conclusion = ctx.forge.capabilities.ci === 'lane-checks' ? checksAsCi(lane) : run.rec.ci_conclusion;
        run.update(
          { status: 'completed', phase: 'dry-run', ci_conclusion, ended_at: ctx.clock.now().toISOString() },
          `patch kept in ${run.rec.evidence.patch ?? 'the lane folder'}, nothing pushed`,
        );
        return await finish(run);
      }
      if (!upToDate) {
        await push(run, commit, previous);
        previous = commit;
      } else {
        run.rec.timings = { ...run.rec.timings, push_ms: 0 };
      }
      run.update({ phase: 'pushed' }, upToDate ? `${lane.branch} already up to date` : `${lane.branch} at ${commit.slice(0, 12)}`);
      // A strategy opens no PR of its own: once every strategy of its target has finished, only the pick does.
      // Integrated lanes open none either: one PR carries the whole fleet at the end (integrate:).
      if (!lane.strategy && !ctx.file.integrate) await publish(run, review);
      if (review?.verdict === 'needs-person') {
        handOverReview(run, review);
        return await finish(run);
      }

      const ci = await readCi(run, commit);
      if (ci === 'done') break;
      if (ci === 'handed-over') return await finish(run);
    }
    if (!lane.strategy && !ctx.file.integrate)
      await applyMergePolicy(
        ctx,
        lane,
        () => run.rec,
        (patch, detail) => run.update(patch, detail),
      );
    // The phase says where the lane ended (pushed, pr-open, merged); the status says that it ended: each said once.
    run.update({ status: 'completed', ended_at: ctx.clock.now().toISOString() }, 'completed');
    return await finish(run);
  } catch (err) {
    const failure =
      err instanceof LaneFailure && err.errorClass === 'cancelled'
        ? err
        : ctx.signal?.aborted
          ? interrupted(run.rec, err)
          : err instanceof LaneFailure
            ? err
            : err instanceof ChangeTooLarge
              ? new LaneFailure('fence-violation', err.message)
              : new LaneFailure('lane-crashed', `Fleet itself failed in this lane: ${(err as Error).message ?? String(err)}`);
    const ended = failure.notStarted ? ('skipped' as const) : ('failed' as const);
    run.update(
      { status: ended, phase: ended, ended_at: ctx.clock.now().toISOString(), error: { class: failure.errorClass, message: failure.message } },
      failure.errorClass,
    );
    return await finish(run);
  }
}

/** The lane made no change (or its review undid it all): it ends completed, with nothing to push. */
function endNoOp(run: LaneRun, detail: string): Promise<LaneRecord> {
  run.update({ status: 'completed', phase: 'no-op', ended_at: run.ctx.clock.now().toISOString(), ci_conclusion: null, merge_status: null }, detail);
  return finish(run);
}

/** However the lane ended: what it leaves for later lanes, what it spent, its timings, and its result file. */
async function finish(run: LaneRun): Promise<LaneRecord> {
  await leaveDiscoveries(run).catch(() => undefined);
  if (hasUsage(run.budget.spent)) run.rec.usage = run.budget.spent;
  run.rec.timings = { ...run.rec.timings, total_ms: run.ctx.clock.now().getTime() - run.t0 };
  await writeLaneResult(run.ctx.root, run.ctx.fleet_id, run.rec);
  return run.rec;
}
