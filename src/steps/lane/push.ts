/**
 * The lane's push: its commit onto the lane branch with a lease on what the remote held, so a branch that moved
 * meanwhile is never overwritten, then read back from the forge, so a push that landed somewhere else opens no PR.
 */
import type { LaneSpec } from '../../core/model.js';
import { refusedCredential } from './clone.js';
import type { LaneContext } from './context.js';
import { firstLines, LaneFailure } from './failure.js';
import type { LaneRun } from './state.js';

export async function push(run: LaneRun, commit: string, previous: string | null): Promise<void> {
  const { lane } = run;
  run.update({ phase: 'pushing' }, `to ${lane.branch}`);
  const tPush = Date.now();
  try {
    await pushCommit(run.ctx, lane, run.repoDir, commit, previous);
  } finally {
    run.rec.timings = { ...run.rec.timings, push_ms: (run.rec.timings.push_ms ?? 0) + Date.now() - tPush };
  }
  await confirmPushed(run.ctx, lane, commit);
  run.branchCreated = previous === null;
}

/**
 * Pushes the lane's commit with a lease on what the remote branch held (`previous`), renewing the credential once if
 * git says it was refused. A branch that moved meanwhile is never overwritten.
 */
async function pushCommit(ctx: LaneContext, lane: LaneSpec, repoDir: string, commit: string, previous: string | null): Promise<void> {
  // The credential is read now, not when the lane began: a directive may run for hours (an App token renews).
  const push = () => ctx.workspace.push(repoDir, lane.branch, commit, previous, ctx.forge.gitEnv(), ctx.file.git_timeout_minutes * 60_000);
  const slotted = () => (ctx.gitSlots ? ctx.gitSlots.run(push) : push());
  await ctx.forge.refreshCredential?.();
  let pushed = await slotted();
  if (!pushed.ok && pushed.reason !== 'stale' && refusedCredential(pushed.detail) && (await ctx.forge.refreshCredential?.(true))) pushed = await slotted();
  if (!pushed.ok) {
    const refused = pushed.reason === 'stale' ? null : workflowRefusal(pushed.detail);
    const msg =
      pushed.reason === 'stale'
        ? `${lane.branch} moved on the remote while this lane ran (another run or a person pushed to it); nothing was overwritten`
        : refused
          ? `push refused: the change creates, changes or deletes ${refused.file}, and GitHub takes workflow files only from ${refused.fix}; or keep them out of the lane with never: [".github/workflows/**"]`
          : `push refused: ${firstLines(pushed.detail, 600)}`;
    throw new LaneFailure('push-rejected', msg);
  }
}

/**
 * GitHub's refusal of a push that touches `.github/workflows/` from a credential without the Workflows permission, in
 * the ref's status line: "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml`
 * without `workflows` permission" (a PAT: "… a Personal Access Token … without `workflow` scope";
 * peter-evans/create-pull-request#1234, flashcatcloud/categraf#34). The file, and what grants the permission.
 */
export function workflowRefusal(detail: string): { file: string; fix: string } | null {
  const m =
    /refusing to allow an? (GitHub App|Personal Access Token|OAuth App) to create or update workflow `([^`\n]+)` without `workflows?` (?:permission|scope)/.exec(
      detail,
    );
  if (!m) return null;
  const fix =
    m[1] === 'GitHub App'
      ? "a GitHub App with the Workflows permission (Read and write; give it in the App's settings and accept it on the installation, docs/github-app.md)"
      : 'a token with the workflow scope (a classic PAT) or the Workflows permission (a fine-grained PAT, Read and write)';
  return { file: m[2]!, fix };
}

/**
 * After a push, the lane's branch on the forge must be the lane's commit: a push
 * that went somewhere else (a rewritten remote, a redirect) opens no PR. Read
 * a few times, since a forge may show a fresh ref a moment late.
 */
async function confirmPushed(ctx: LaneContext, lane: LaneSpec, commit: string): Promise<void> {
  let head: string | null = null;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      head = await ctx.forge.branchHead(lane, lane.branch);
    } catch (err) {
      throw new LaneFailure('push-rejected', `reading ${lane.branch} after the push failed: ${(err as Error).message}`);
    }
    if (head === commit) return;
    await new Promise((r) => setTimeout(r, 250 * attempt));
  }
  throw new LaneFailure(
    'push-rejected',
    `after the push, ${lane.branch} in ${lane.repo} is at ${head ? head.slice(0, 12) : 'nothing'}, not at the lane's commit ${commit.slice(0, 12)}: the push did not land in the lane's own repository; no pull request was opened`,
  );
}
