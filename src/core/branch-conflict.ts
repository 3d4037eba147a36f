/**
 * A lane branch someone else pushed to. Fleet force-pushes its own lane branch on every re-run (with a lease on what
 * it saw), which would drop a fix a person pushed there between runs. Before the lane runs, the commits its branch
 * holds beyond the base are told apart: Fleet's own for this lane (its trailers) and "Update branch" merges of the base
 * are Fleet's to redo; anything else is someone else's, and `branch_conflict` says what happens to it.
 */
import { codeSpan } from './markdown.js';

/** What a lane does with commits others pushed to its branch: refuse to run (default), drop them, or keep them. */
export type BranchConflict = 'fail' | 'replace' | 'rebase';

/** A commit on the lane branch that its base lacks, as git shows it. */
export interface BranchCommit {
  commit: string;
  parents: string[];
  /** `Name <email>` */
  author: string;
  message: string;
  /** A merge whose tree is what merging its parents gives, no more (no conflict resolved by hand, no edit). */
  cleanMerge?: boolean;
}

/** Commits listed at most; a branch with more is taken as someone else's work without listing the rest. */
export const MAX_BRANCH_COMMITS = 200;

function trailer(message: string, key: string): string | null {
  const m = new RegExp(`^${key}: (.*)$`, 'm').exec(message);
  return m ? m[1]!.trim() : null;
}

/** A commit Fleet made for this lane of this fleet: its message carries both trailers with their names. */
export function isFleetCommit(c: BranchCommit, fleet: string, lane: string): boolean {
  return trailer(c.message, 'Fleet-Id') === fleet && trailer(c.message, 'Fleet-Lane') === lane;
}

/**
 * The commits on the lane branch (oldest first, as `base..branch` lists them) that are someone else's: neither Fleet's
 * own for the lane nor a clean merge whose other parents the base already holds (GitHub's "Update branch" button, a
 * `git merge main`), which the lane's fresh start on the base makes moot. A merge that resolved a conflict or changed
 * anything else is someone's work.
 */
export function othersCommits(commits: readonly BranchCommit[], fleet: string, lane: string): BranchCommit[] {
  const onBranch = new Set(commits.map((c) => c.commit));
  const bringsBase = (c: BranchCommit) => c.parents.length > 1 && c.cleanMerge === true && c.parents.slice(1).every((p) => !onBranch.has(p));
  return commits.filter((c) => !isFleetCommit(c, fleet, lane) && !bringsBase(c));
}

function subject(message: string): string {
  const first = message.split('\n', 1)[0]!.trim();
  return first.length > 60 ? `${first.slice(0, 59)}…` : first;
}

/** `abc123def456 "Fix the test" (Ada <ada@example.com>)`, for the first few, and how many more. */
export function describeCommits(commits: readonly BranchCommit[], max = 3): string {
  const shown = commits.slice(0, max).map((c) => `${c.commit.slice(0, 12)} ${JSON.stringify(subject(c.message))} (${c.author})`);
  const more = commits.length > max ? `, and ${commits.length - max} more` : '';
  return shown.join(', ') + more;
}

/** Why a lane with `branch_conflict: fail` did not run, and the two ways on. */
export function conflictRefusal(branch: string, others: readonly BranchCommit[], truncated: boolean): string {
  const n = truncated ? `more than ${others.length}` : String(others.length);
  return (
    `${branch} holds ${n} commit${others.length === 1 && !truncated ? '' : 's'} Fleet did not make for this lane: ${describeCommits(others)}. ` +
    'Nothing ran and nothing was pushed. To keep them, set branch_conflict: rebase (Fleet replays them onto the base and runs the directive on top); ' +
    'to drop them, branch_conflict: replace (or fleet run --branch-conflict rebase|replace); or delete the branch'
  );
}

/** The lines a lane's PR body gets about commits it kept or dropped. */
export function conflictBodyLines(strategy: 'replace' | 'rebase', commits: readonly string[]): string[] {
  const list = commits.slice(0, 20).map((c) => `- ${codeSpan(c.slice(0, 12))}`);
  const more = commits.length > 20 ? [`- … and ${commits.length - 20} more`] : [];
  const head =
    strategy === 'rebase'
      ? `**Kept** ${commits.length} commit${commits.length === 1 ? '' : 's'} others pushed to this branch, replayed onto the base before the directive ran (Fleet's own change is the last commit):`
      : `**Replaced** ${commits.length} commit${commits.length === 1 ? '' : 's'} others had pushed to this branch (branch_conflict: replace):`;
  return ['', head, '', ...list, ...more];
}
