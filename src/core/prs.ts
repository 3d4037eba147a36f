/**
 * A fleet's PRs after its run (`fleet prs`): what the forge shows for each lane now, the rules that decide which
 * PRs `fleet prs merge` may merge, and the table and JSON a person or a script reads. Pure: no I/O; times are
 * compared with a `now` the caller passes.
 */
import type { CiConclusion, LaneStatus } from './model.js';
import { durationSeconds, parseTime } from './manifest.js';
import { codeCell, escapeCell } from './markdown.js';

const DASH = '—';

/** How a merge is made (the fleet file's `merge.method`, or `--method`). */
export const PR_MERGE_METHODS = ['merge', 'squash', 'rebase', 'fast-forward'] as const;
export type PrMergeMethod = (typeof PR_MERGE_METHODS)[number];

/**
 * `branch`: the local forge, which has no pull requests: the lane's pushed branch, not (yet) in its base. Its
 * `merged` is a branch whose head is in the base.
 */
export type PrState = 'open' | 'closed' | 'merged' | 'branch';

/**
 * The review state read from the PR's reviews, each reviewer's latest approval or change request counting:
 * `changes_requested` when any reviewer's latest says so, else `approved` when any approved, else
 * `review_required` while a review is requested from someone who has not answered, else `none`.
 */
export type ReviewState = 'approved' | 'changes_requested' | 'review_required' | 'none';

/** One lane's change request as the forge shows it now. */
export interface PrView {
  /** The PR number; null on a forge without PRs (a branch). */
  number: number | null;
  url: string | null;
  state: PrState;
  draft: boolean;
  /** CI on the head, read afresh; null when not read (a closed or merged PR). Locally `none` (no CI). */
  ci: CiConclusion | null;
  /** Null when not read (a closed or merged PR, a forge without reviews). */
  review: ReviewState | null;
  /** Whether the forge can merge it (no conflict); null while GitHub is still working it out, or when it does not say. */
  mergeable: boolean | null;
  /** GitHub's `mergeable_state` (clean, unstable, blocked, dirty, draft, unknown, …); null where the forge has none. */
  mergeable_state: string | null;
  /** When the PR was opened (locally: the commit date of the branch's head); null when unknown. */
  created_at: string | null;
  head_branch: string;
  /** The PR's head commit (locally: the branch's). */
  head_sha: string | null;
  base_branch: string | null;
  /**
   * The PR carries this fleet's and lane's marker (Fleet opened it); true for a branch (a forge without PRs). A PR
   * someone else opened from the lane's branch is shown, never merged or closed unless the run recorded its number.
   */
  marked: boolean;
  /** Where the head branch is now; null when it no longer exists (deleted). */
  branch_head: string | null;
}

/**
 * One row of `fleet prs`: a lane and its PR as the forge shows it now. `state` is `none` when the forge has
 * neither a PR nor a branch for the lane, `unread` when it could not be asked (`problem` says why).
 */
export interface PrRow {
  lane: string;
  repo: string;
  /** The lane's status in the manifest (a failed lane may still have a PR, from a draft hand-off or an earlier run). */
  lane_status: LaneStatus;
  branch: string | null;
  pr: number | null;
  url: string | null;
  state: PrState | 'none' | 'unread';
  draft: boolean;
  ci: CiConclusion | null;
  review: ReviewState | null;
  mergeable: boolean | null;
  mergeable_state: string | null;
  created_at: string | null;
  head_sha: string | null;
  branch_head: string | null;
  problem: string | null;
}

export function rowFrom(base: Pick<PrRow, 'lane' | 'repo' | 'lane_status' | 'branch'>, view: PrView | null, problem: string | null = null): PrRow {
  return {
    ...base,
    pr: view?.number ?? null,
    url: view?.url ?? null,
    state: problem ? 'unread' : (view?.state ?? 'none'),
    draft: view?.draft ?? false,
    ci: view?.ci ?? null,
    review: view?.review ?? null,
    mergeable: view?.mergeable ?? null,
    mergeable_state: view?.mergeable_state ?? null,
    created_at: view?.created_at ?? null,
    head_sha: view?.head_sha ?? null,
    branch_head: view?.branch_head ?? null,
    problem,
  };
}

/** A submitted review as GitHub lists it (`GET …/pulls/{n}/reviews`, oldest first). */
export interface ReviewLike {
  user: { login: string } | null;
  state: string;
}

/** See ReviewState. `requested`: reviewers and teams asked who have not answered (GitHub drops those who did). */
export function reviewState(reviews: readonly ReviewLike[], requested: number): ReviewState {
  const latest = new Map<string, string>();
  for (const r of reviews) {
    const who = r.user?.login.toLowerCase();
    if (!who) continue;
    // A comment neither approves nor withdraws an approval; a dismissal withdraws the reviewer's verdict.
    if (r.state === 'APPROVED' || r.state === 'CHANGES_REQUESTED') latest.set(who, r.state);
    else if (r.state === 'DISMISSED') latest.delete(who);
  }
  const verdicts = [...latest.values()];
  if (verdicts.includes('CHANGES_REQUESTED')) return 'changes_requested';
  if (verdicts.includes('APPROVED')) return 'approved';
  return requested > 0 ? 'review_required' : 'none';
}

/**
 * Why `fleet prs merge` must not merge this PR, read from the forge now; null when it may try. The rules of
 * `merge.policy: when-green`: open, not a draft, CI green (or no CI at all: the forge's merge then checks that
 * the repository shows no sign of CI still to come), no change requested, no conflict. A `mergeable` GitHub has
 * not worked out yet is no reason: the forge's merge waits for it. The forge's merge checks again, on the lane's
 * own commit, before it merges.
 */
export function mergeBlocker(view: PrView): string | null {
  const name = view.number !== null ? `#${view.number}` : view.head_branch;
  if (view.state === 'closed') return `${name} is closed`;
  if (view.state === 'merged') return `${name} is merged`;
  if (view.draft) return `${name} is a draft`;
  if (view.ci !== null && view.ci !== 'success' && view.ci !== 'none') return `CI is ${view.ci} on ${shortSha(view.head_sha)}`;
  if (view.review === 'changes_requested') return `a reviewer requested changes on ${name}`;
  if (view.mergeable === false) {
    const into = view.base_branch ?? 'its base';
    return !view.mergeable_state || view.mergeable_state === 'dirty'
      ? `${name} conflicts with ${into}`
      : `${name} cannot merge into ${into} (${view.mergeable_state})`;
  }
  return null;
}

/**
 * How `fleet prs merge` merges: `--method` when given, else the fleet file's `merge.method` (squash unless it says
 * otherwise). Typing `fleet prs merge` is the telling Fleet waits for before it merges: `merge.policy` says whether
 * `fleet run` merges on its own, not whether a person may ask it to (issue 27: the README's `fleet prs merge` was refused
 * under the default policy). The output names the method.
 */
export function mergeMethodFor(opts: { flag?: string; policy: 'never' | 'when-green'; method?: string }): { method: PrMergeMethod } | { problem: string } {
  const known = (m: string | undefined): m is PrMergeMethod => (PR_MERGE_METHODS as readonly string[]).includes(m ?? '');
  if (opts.flag !== undefined) {
    return known(opts.flag) ? { method: opts.flag } : { problem: `--method takes ${PR_MERGE_METHODS.join(', ')}, got "${opts.flag}"` };
  }
  if (known(opts.method)) return { method: opts.method };
  return { problem: `merge.method is "${opts.method}": pass --method ${PR_MERGE_METHODS.join('|')}` };
}

// ---------------------------------------------------------------------------
// What `fleet prs merge` and `fleet prs close` did

/**
 * What a command did with one lane. `merged`/`closed`: done now (close also deletes the branch when it may);
 * `would-*`: what a dry run would do; `already-*`: nothing to do; `not-merged`/`not-closed`: refused, `detail`
 * says why; `no-pr`: the forge has neither a PR nor a branch of the lane; `failed`: the forge could not be asked,
 * or refused.
 */
export type PrOutcome =
  | 'merged'
  | 'closed'
  | 'would-merge'
  | 'would-close'
  | 'already-merged'
  | 'already-closed'
  | 'not-merged'
  | 'not-closed'
  | 'no-pr'
  | 'failed';

export interface PrAction {
  lane: string;
  repo: string;
  pr: number | null;
  url: string | null;
  outcome: PrOutcome;
  detail: string;
  /** Whether this command deleted the lane's branch (close). */
  branch_deleted: boolean;
}

/** Outcomes that leave something for a person: the command exits 1. */
export const UNRESOLVED: ReadonlySet<PrOutcome> = new Set(['not-merged', 'not-closed', 'failed']);

/** 0 when every lane's PR ended as asked (or had nothing to do), 1 when some could not be merged or closed. */
export function prsExitCode(actions: readonly PrAction[]): 0 | 1 {
  return actions.some((a) => UNRESOLVED.has(a.outcome)) ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Rendering

/** How long ago `since` was, in its largest whole unit: `45 s`, `12 min`, `5 h`, `3 d`; a dash when unknown. */
export function formatAge(since: string | null, now: string): string {
  const a = parseTime(since);
  const b = parseTime(now);
  if (a === null || b === null || b < a) return DASH;
  const s = Math.floor((b - a) / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  return h < 48 ? `${h} h` : `${Math.floor(h / 24)} d`;
}

const SAFE_URL = /^https?:\/\/[^\s<>()[\]|`"'\\]+$/;

function prCell(pr: number | null, url: string | null): string {
  if (pr === null) return DASH;
  return url && SAFE_URL.test(url) ? `[#${pr}](${url})` : `#${pr}`;
}

function stateCell(r: PrRow): string {
  switch (r.state) {
    case 'open':
      return r.draft ? 'open (draft)' : 'open';
    case 'branch':
      return 'branch (no PR)';
    case 'none':
      return DASH;
    case 'unread':
      return 'unread';
    default:
      return r.state;
  }
}

function branchCell(r: PrRow): string {
  if (!r.branch) return DASH;
  const gone = (r.state === 'closed' || r.state === 'merged') && r.branch_head === null;
  return `${codeCell(r.branch)}${gone ? ' (deleted)' : ''}`;
}

function mergeableCell(r: PrRow): string {
  if (r.state !== 'open' && r.state !== 'branch') return DASH;
  if (r.mergeable === null) return r.mergeable_state && r.mergeable_state !== 'unknown' ? escapeCell(r.mergeable_state) : 'unknown';
  const word = r.mergeable ? 'yes' : 'no';
  return r.mergeable_state && r.mergeable_state !== 'clean' ? `${word} (${escapeCell(r.mergeable_state)})` : word;
}

function cell(s: string | null): string {
  return s === null || s === '' ? DASH : escapeCell(s);
}

function table(header: string[], rows: string[][]): string[] {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The counts under the table: "4 lanes: 2 open (1 draft), 1 merged, 1 without a PR". */
export function prsCounts(rows: readonly PrRow[]): string {
  const count = (s: PrRow['state']) => rows.filter((r) => r.state === s).length;
  const drafts = rows.filter((r) => r.state === 'open' && r.draft).length;
  const parts: string[] = [];
  if (count('open')) parts.push(`${count('open')} open${drafts ? ` (${drafts} draft)` : ''}`);
  if (count('branch')) parts.push(`${plural(count('branch'), 'branch', 'branches')} without a PR`);
  if (count('merged')) parts.push(`${count('merged')} merged`);
  if (count('closed')) parts.push(`${count('closed')} closed`);
  if (count('none')) parts.push(`${count('none')} with nothing on the forge`);
  if (count('unread')) parts.push(`${count('unread')} unread`);
  return `${plural(rows.length, 'lane')}${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

/**
 * The PR table of `fleet prs`: one row per lane, as the forge shows it now, ages relative to `now`; then the
 * counts, and every lane the forge could not be asked about, with why.
 */
export function renderPrsTable(rows: readonly PrRow[], opts: { now: string; title?: string }): string {
  const lines = [`## Fleet PRs${opts.title ? ` — ${escapeCell(opts.title)}` : ''}`, ''];
  if (rows.length === 0) {
    lines.push('No lanes.');
    return `${lines.join('\n')}\n`;
  }
  lines.push(
    ...table(
      ['Lane', 'Repo', 'Branch', 'PR', 'State', 'CI', 'Review', 'Mergeable', 'Age'],
      rows.map((r) => [
        escapeCell(r.lane),
        escapeCell(r.repo),
        branchCell(r),
        prCell(r.pr, r.url),
        stateCell(r),
        cell(r.ci),
        cell(r.review),
        mergeableCell(r),
        formatAge(r.created_at, opts.now),
      ]),
    ),
  );
  lines.push('', `${prsCounts(rows)}.`);
  const unread = rows.filter((r) => r.problem);
  if (unread.length) {
    lines.push('', 'Not read:');
    for (const r of unread) lines.push(`- ${escapeCell(r.lane)}: ${escapeCell(r.problem!)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `fleet prs --json`: the rows as they are, each with its age in seconds at `now` (null when unknown). */
export function prsJson(rows: readonly PrRow[], now: string): Array<PrRow & { age_seconds: number | null }> {
  return rows.map((r) => ({ ...r, age_seconds: durationSeconds(r.created_at, now) }));
}

const OUTCOME_WORDS: Record<PrOutcome, string> = {
  merged: 'merged',
  closed: 'closed',
  'would-merge': 'would merge',
  'would-close': 'would close',
  'already-merged': 'already merged',
  'already-closed': 'already closed',
  'not-merged': 'not merged',
  'not-closed': 'not closed',
  'no-pr': 'no PR',
  failed: 'failed',
};

/** The order outcomes are counted in the line under the table: what was done, then what was left, then nothing. */
const OUTCOME_ORDER: readonly PrOutcome[] = [
  'merged',
  'closed',
  'would-merge',
  'would-close',
  'not-merged',
  'not-closed',
  'failed',
  'already-merged',
  'already-closed',
  'no-pr',
];

/**
 * What `fleet prs merge` or `fleet prs close` did, per lane, and a line that counts it: said plainly, so a merge is
 * never silent. A dry run says first that it changed nothing.
 */
export function renderPrsActions(actions: readonly PrAction[], opts: { command: 'merge' | 'close'; dryRun: boolean; method?: string; title?: string }): string {
  const what = opts.command === 'merge' ? `merge${opts.method ? ` (${escapeCell(opts.method)})` : ''}` : 'close';
  const lines = [`## Fleet PRs: ${what}${opts.title ? ` — ${escapeCell(opts.title)}` : ''}`, ''];
  if (opts.dryRun) lines.push('Dry run: nothing was changed on the forge, in the manifest or in the events log.', '');
  if (actions.length === 0) {
    lines.push('No lanes.');
    return `${lines.join('\n')}\n`;
  }
  lines.push(
    ...table(
      ['Lane', 'Repo', 'PR', 'Outcome', 'Detail'],
      actions.map((a) => [escapeCell(a.lane), escapeCell(a.repo), prCell(a.pr, a.url), OUTCOME_WORDS[a.outcome], cell(a.detail)]),
    ),
  );
  const counts = OUTCOME_ORDER.map((o) => [o, actions.filter((a) => a.outcome === o).length] as const).filter(([, n]) => n > 0);
  lines.push('', `${counts.map(([o, n]) => `${OUTCOME_WORDS[o]}: ${n}`).join(' · ')}.`);
  const left = actions.filter((a) => UNRESOLVED.has(a.outcome)).length;
  if (left) lines.push('', `${plural(left, 'lane')} left for a person (exit code 1).`);
  return `${lines.join('\n')}\n`;
}

function shortSha(sha: string | null): string {
  return sha ? sha.slice(0, 12) : 'its head';
}
