/**
 * The lane's commit: made from the change that passed (or kept, when the fence already judged it), checked once more
 * from its own tree against the fence and against what Fleet checked, refused when it holds a credential, and kept
 * as the lane's patch. A re-run whose remote branch already holds this exact change keeps that commit.
 */
import { join } from 'node:path';
import { checkFence } from '../../core/fence.js';
import type { LaneSpec } from '../../core/model.js';
import { diffLines } from '../../core/strategies.js';
import { writeFileAtomic } from '../../util/fs.js';
import type { LaneContext } from './context.js';
import { LaneFailure } from './failure.js';
import { refuseHeldSecrets } from './secrets.js';
import type { LaneRun } from './state.js';

export function commitMessage(ctx: LaneContext, lane: LaneSpec, attempt: number): string {
  const subject = ctx.file.commit_message ?? lane.title;
  const trailer = attempt > 1 ? `\nFleet-Attempt: ${attempt}` : '';
  return `${subject}\n\n${lane.directive.trim()}\n\nFleet-Id: ${ctx.file.name}\nFleet-Lane: ${lane.id}${trailer}\n`;
}

/** Commits the change (or keeps the commit already made), checks it once more and writes its patch. */
export async function commitChange(run: LaneRun, changed: string[], previous: string | null): Promise<{ commit: string; upToDate: boolean }> {
  const { ctx, lane, repoDir } = run;
  run.update({ phase: 'committing' }, `${changed.length} file${changed.length > 1 ? 's' : ''}`);
  const tCommit = Date.now();
  // The attempt number keeps a CI retry's commit distinct even when the directive produced the same tree.
  let commit = run.made?.commit ?? (await ctx.workspace.commit(repoDir, commitMessage(ctx, lane, run.n)));
  // The files and the patch of the commit, from its tree; an up-to-date remote commit below has the same tree and parent, so the same patch.
  const committed = run.made?.committed ?? (await ctx.workspace.committed(repoDir, run.base, commit));
  // A lane without checks had its fence judged on this very commit already (stageForFence).
  if (!run.made) verifyCommitted(lane, committed.files, changed);
  // Before the patch is written (it travels in the lane's artifact) and before anything is pushed.
  refuseHeldSecrets(ctx, committed.patch);
  // Idempotent re-runs: when the remote lane branch already holds this exact change on this base, keep its commit.
  let upToDate = false;
  if (
    run.n === 1 &&
    previous &&
    (await ctx.workspace.parent(repoDir, previous)) === run.base &&
    (await ctx.workspace.tree(repoDir, previous)) === (await ctx.workspace.tree(repoDir, commit))
  ) {
    commit = previous;
    upToDate = true;
  }
  run.rec.commit = commit;
  run.rec.timings = { ...run.rec.timings, commit_ms: Date.now() - tCommit };
  const patchFile = join(run.dir, 'patch.diff');
  await writeFileAtomic(patchFile, committed.patch);
  if (run.rec.strategy) run.rec.strategy = { ...run.rec.strategy, diff_lines: diffLines(committed.patch) };
  run.rec.evidence = { ...run.rec.evidence, patch: run.rel(patchFile) };
  return { commit, upToDate };
}

/**
 * The fence and the changed files were computed on the index; the commit is
 * checked once more from its own tree against the base, the tree a push
 * carries, so nothing outside the fence can ride along whatever the index or a
 * replace ref showed.
 */
function verifyCommitted(lane: LaneSpec, committed: string[], checked: readonly string[]): void {
  const fence = checkFence(committed, lane.owns, lane.never);
  if (!fence.ok) throw new LaneFailure('fence-violation', `the commit holds files outside the fence: ${fence.message}; nothing was pushed`);
  const expected = new Set(checked);
  const differs = committed.length !== expected.size || committed.some((f) => !expected.has(f));
  if (differs) {
    const extra = committed.filter((f) => !expected.has(f));
    const missing = checked.filter((f) => !committed.includes(f));
    throw new LaneFailure(
      'workspace-corrupted',
      `the commit does not hold the change Fleet checked (${[extra.length ? `also: ${extra.slice(0, 5).join(', ')}` : '', missing.length ? `without: ${missing.slice(0, 5).join(', ')}` : ''].filter(Boolean).join('; ')}); nothing was pushed`,
    );
  }
}
