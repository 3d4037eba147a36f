/**
 * The lane's start: its directives can be isolated as the fleet file demands, its working copy is a fresh clone of
 * the target on the base (the lane branch's state read from the forge), and commits others pushed to the lane branch
 * are met before anything runs (refused, dropped by the push, or replayed onto the base).
 */
import { mkdir, rm } from 'node:fs/promises';
import { conflictRefusal, describeCommits, MAX_BRANCH_COMMITS, othersCommits } from '../../core/branch-conflict.js';
import type { LaneSpec } from '../../core/model.js';
import type { LaneContext } from './context.js';
import { forgeCall, LaneFailure } from './failure.js';
import type { LaneRun } from './state.js';

/**
 * Starts the sandbox probe (once per process: later lanes share its answer) and returns what records it on the lane.
 * With `isolation: required` the answer is awaited and checked before the clone; otherwise it is recorded after the
 * clone, which runs meanwhile (no directive runs before the lane's first attempt, which waits for the sandbox anyway).
 */
export async function checkIsolation(run: LaneRun): Promise<() => Promise<void>> {
  const probing = run.ctx.exec.isolation(run.ctx.file.isolation);
  const record = async () => {
    const isolation = await probing;
    run.rec.isolation = isolation;
    if (run.ctx.file.isolation === 'required' && isolation.kind === 'none') {
      throw new LaneFailure('invalid-input', `the fleet file says isolation: required, but directives cannot be isolated on this machine: ${isolation.detail}`);
    }
  };
  if (run.ctx.file.isolation !== 'required') return record;
  await record();
  return async () => {};
}

export async function clone(run: LaneRun): Promise<void> {
  const { lane } = run;
  await rm(run.repoDir, { recursive: true, force: true });
  await mkdir(run.dir, { recursive: true });
  run.update({ phase: 'cloning' }, lane.base ? `${lane.repo} at ${lane.base}` : lane.repo);
  const tClone = Date.now();
  const { cloned, headRepo } = await cloneTarget(run.ctx, lane, run.repoDir);
  run.cloned = cloned;
  if (headRepo) run.rec.head_repo = headRepo;
  run.rec.timings = { ...run.rec.timings, clone_ms: Date.now() - tClone };
  run.rec.base_branch = run.cloned.base_branch;
  run.rec.base_commit = run.cloned.base_commit;
  if (run.cloned.base_branch === lane.branch) {
    // The planner refuses this; a lane run on its own (a matrix job) must not push onto its base either.
    throw new LaneFailure('invalid-input', `the lane branch ${lane.branch} is the base branch: Fleet never commits straight onto a base branch`);
  }
  await meetOthersCommits(run);
}

/**
 * Commits others pushed to the lane branch (src/core/branch-conflict.ts), met before anything runs: the lane is
 * refused (`fail`), or they are dropped by the push (`replace`), or replayed onto the base for the directive to
 * work on top of (`rebase`). They are replayed here, before any directive could touch the working copy's objects.
 */
async function meetOthersCommits(run: LaneRun): Promise<void> {
  const { ctx, lane, repoDir } = run;
  const remote = run.cloned.remote_branch_commit;
  if (!remote || remote === run.cloned.base_commit) return;
  const listed = await ctx.workspace.branchCommits(repoDir, run.cloned.base_commit, remote, MAX_BRANCH_COMMITS + 1);
  const truncated = listed.length > MAX_BRANCH_COMMITS;
  const others = othersCommits(truncated ? listed.slice(1) : listed, ctx.file.name, lane.id);
  if (!others.length) return;
  const strategy = ctx.file.branch_conflict;
  const commits = others.map((c) => c.commit);
  if (strategy === 'fail') throw new LaneFailure('branch-conflict', conflictRefusal(lane.branch, others, truncated));
  if (strategy === 'replace') {
    run.rec.branch_conflict = { strategy, commits, start: null };
    run.addNote(`branch_conflict: replace: the push replaces ${describeCommits(others)} on ${lane.branch}`);
    return;
  }
  const onto = run.cloned.base_branch;
  if (truncated) {
    throw new LaneFailure(
      'branch-conflict',
      `${lane.branch} holds more than ${MAX_BRANCH_COMMITS} commits ${onto} lacks: too many to replay; rebase the branch by hand, or use branch_conflict: replace`,
    );
  }
  const replayed = await ctx.workspace.replay(repoDir, others);
  if (!replayed.ok) {
    const paths = replayed.conflicts.slice(0, 5).join(', ') + (replayed.conflicts.length > 5 ? ', …' : '');
    throw new LaneFailure(
      'branch-conflict',
      `replaying ${replayed.commit.slice(0, 12)} (pushed to ${lane.branch} by someone else) onto ${onto} conflicts in ${paths}: nothing ran and nothing was pushed. Rebase the branch onto ${onto} by hand, or use branch_conflict: replace`,
    );
  }
  run.rec.branch_conflict = { strategy, commits, start: replayed.head };
  const moved = replayed.head !== commits.at(-1);
  run.addNote(`branch_conflict: rebase: kept ${describeCommits(others)}${moved ? `, replayed onto ${onto}` : ''}; the lane's change goes on top`);
}

/** Clones the target for a lane, renewing the forge's credential once if git says it was refused. */
async function cloneTarget(ctx: LaneContext, lane: LaneSpec, repoDir: string) {
  const timeoutMs = ctx.file.git_timeout_minutes * 60_000;
  try {
    // A fork the lane pushes to (pr.fork) is made before the clone reads the lane branch's state there; a dry run makes none.
    const head = await forgeCall('clone-failed', 'finding or making the fork the lane pushes to', async () =>
      ctx.forge.headRepo?.(lane, { create: !ctx.dryRun }),
    );
    const headUrl = head?.url;
    // gitEnv() is read per attempt: the forge's credential may be renewed in between (a GitHub App token).
    const clone = () =>
      ctx.workspace.clone(ctx.forge.cloneUrl(lane), repoDir, {
        base: lane.base ?? ctx.forge.baseBranch?.(lane),
        branch: lane.branch,
        env: ctx.forge.gitEnv(),
        timeoutMs,
        headUrl,
      });
    const slotted = () => (ctx.gitSlots ? ctx.gitSlots.run(clone) : clone());
    await ctx.forge.refreshCredential?.();
    try {
      return { cloned: await slotted(), headRepo: head?.repo };
    } catch (err) {
      if (!refusedCredential((err as Error).message) || !(await ctx.forge.refreshCredential?.(true))) throw err;
      await rm(repoDir, { recursive: true, force: true });
      return { cloned: await slotted(), headRepo: head?.repo };
    }
  } catch (err) {
    throw new LaneFailure('clone-failed', (err as Error).message);
  }
}

/** git's words when the server refused its credential (401): an expired token, worth one renewal and retry. */
export function refusedCredential(text: string | undefined): boolean {
  return /Authentication failed|could not read Username|\b401\b|Bad credentials/i.test(text ?? '');
}
