/**
 * The lane's review phase, the lane's side of it: hands the review (review.ts) a narrow handle on the lane, takes
 * back the reviewed change, and, when the review stops with findings open, hands the lane to a person. The handle is
 * the only way the review reaches the lane: it reads a few facts and asks for an agent run, a fix round, a note.
 */
import { ANSWER_ENV, answerCommand } from '../../core/agent.js';
import type { LaneReview, ResolvedReview } from '../../core/model.js';
import { intact, tryChange } from './attempts.js';
import { subtractUsage } from './budget.js';
import { agentRunEnv, directiveCommand, laneEnv } from './directive.js';
import { firstLines } from './failure.js';
import { type ReviewHandle, reviewChange } from './review.js';
import type { LaneRun } from './state.js';

/** Reviews the lane's change: the review and the files the change touches after it (fix rounds may have changed them). */
export async function reviewPhase(run: LaneRun, spec: ResolvedReview): Promise<{ review: LaneReview; changed: string[] }> {
  const reviewed = await reviewChange(reviewHandle(run), spec);
  run.rec.review = reviewed.review;
  // The change leaves the review staged on the base, as a lane with checks leaves its attempts: the commit is made
  // from it, not from a commit a fix round made.
  run.made = null;
  run.rec.changed_files = reviewed.changed;
  return reviewed;
}

function reviewHandle(run: LaneRun): ReviewHandle {
  const { ctx, lane } = run;
  return {
    lane,
    agent: ctx.file.agent!,
    workspace: ctx.workspace,
    repoDir: run.repoDir,
    get base() {
      return run.base;
    },
    dir: run.dir,
    get attempt() {
      return run.n;
    },
    neverInChange: ctx.neverInChange,
    signal: ctx.signal,
    phase: (phase, detail) => run.update({ phase }, detail),
    note: (text) => run.addNote(text),
    rel: (path) => run.rel(path),
    intact: () => intact(run),
    budgetStop: () => run.budget.budgetStop(),
    caps: (share) => run.budget.caps(share),
    chargeRun: (u, given) => run.budget.chargeRun(u, given),
    async answer(inv, { log, answerFile }) {
      const env = {
        ...laneEnv(ctx, lane, run.n, undefined, run.cloned.base_branch),
        ...inv.env,
        ...(await agentRunEnv(ctx, run.dir)),
        [ANSWER_ENV]: answerFile,
      };
      const release = ctx.slots ? await ctx.slots.acquire() : () => undefined;
      try {
        const confine = { workspace: ctx.root, lane: run.dir };
        return await ctx.exec.run(answerCommand(inv.command), {
          cwd: run.repoDir,
          env,
          timeoutMs: ctx.file.timeout_minutes * 60_000,
          logFile: log,
          isolation: ctx.file.isolation,
          confine,
        });
      } finally {
        release();
      }
    },
    async fix({ findings, promptFile, log, what }) {
      run.budget.given = run.budget.caps();
      const { command, env: agentEnv } = await directiveCommand(ctx, lane, run.routing, {
        file: promptFile,
        findings,
        relay: run.relayText,
        caps: run.budget.given,
      });
      const env = { ...laneEnv(ctx, lane, run.n, undefined, run.cloned.base_branch), ...agentEnv };
      const release = ctx.slots ? await ctx.slots.acquire() : () => undefined;
      const before = run.budget.spent;
      try {
        const tried = await tryChange(run, command, env, log, () => undefined, what);
        return { tried, spent: subtractUsage(run.budget.spent, before) };
      } finally {
        release();
      }
    },
  };
}

/** The review reached its round cap with findings open: the lane is handed to a person and does not reach its checkpoint. */
export function handOverReview(run: LaneRun, review: LaneReview): void {
  const open = review.findings.filter((f) => f.status === 'open');
  const failed =
    review.rounds
      .at(-1)
      ?.lenses.filter((l) => l.outcome === 'failed')
      .map((l) => l.lens) ?? [];
  const what = [
    open.length
      ? `${open.length} ACCEPT finding${open.length > 1 ? 's' : ''} open (${open
          .slice(0, 3)
          .map((f) => `${f.id} ${f.file ?? ''}${f.line ? `:${f.line}` : ''} ${f.finding}`.trim())
          .join('; ')}${open.length > 3 ? '; …' : ''})`
      : '',
    failed.length ? `lens${failed.length > 1 ? 'es' : ''} ${failed.join(', ')} gave no readable answer` : '',
  ]
    .filter(Boolean)
    .join(', and ');
  const where =
    run.ctx.forge.capabilities.pullRequests && run.rec.pr_number !== null
      ? `; PR #${run.rec.pr_number} is a draft labelled ${run.lane.review!.label}`
      : `; the branch ${run.lane.branch} is pushed`;
  const rounds = `${review.rounds.length} round${review.rounds.length === 1 ? '' : 's'}`;
  const error = review.stopped
    ? { class: 'budget-exceeded' as const, message: `the review stopped after ${rounds}: ${review.stopped}${what ? `, with ${what}` : ''}${where}` }
    : { class: 'code-review-needed' as const, message: `review reached its cap of ${rounds} with ${what}${where}` };
  run.update(
    {
      status: 'failed',
      phase: 'draft',
      merge_status: 'draft',
      ended_at: run.ctx.clock.now().toISOString(),
      error: { ...error, message: firstLines(error.message, 600) },
    },
    'review open at the round cap: handed to a person',
  );
}
