/**
 * A fleet's PRs after its run: `fleet prs` reads every lane's PR live from the forge (state, CI, review,
 * mergeability, age), `fleet prs merge` merges the green ones, `fleet prs close` closes them and deletes their
 * branches. The manifest says which lanes the fleet has and which commit each pushed; the forge says where each PR
 * is now, and only the forge is believed. Merge and close are idempotent (a second run finds nothing to do and
 * says so), take `dryRun`, and return the manifest with its lane records brought up to date and the lines for
 * events.jsonl; `savePrsResult` writes both, `prsCommand` does the whole command under the workspace lock.
 */
import { dirname, join } from 'node:path';
import { MAX_FLEET_JSON_BYTES } from '../core/limits.js';
import { summarize } from '../core/manifest.js';
import { Manifest as ManifestSchema, type LanePrs, type LaneRecord, type Manifest } from '../core/model.js';
import { mergeBlocker, prsExitCode, rowFrom, type PrAction, type PrMergeMethod, type PrOutcome, type PrRow, type PrView } from '../core/prs.js';
import { classifyRepo, type Problem } from '../core/validate.js';
import type { LaneSpec } from '../core/model.js';
import type { Clock, CloseResult, Forge, MergeResult } from '../ports.js';
import { JsonLines, readTextFile } from '../util/fs.js';
import { lockWorkspace } from '../util/lock.js';
import { mapLimit } from '../util/pool.js';
import { sealProblem, writeManifest } from '../util/manifest-seal.js';

export interface PrsContext {
  manifest: Manifest;
  forge: Forge;
  clock: Clock;
  /**
   * The fleet file's lanes, when it was loaded: a lane found there (same id and repository) is asked about as the
   * fleet file describes it; any other (a discovered repository, an issue's lane) is rebuilt from its record.
   */
  lanes?: readonly LaneSpec[];
  /** Forge reads at once while listing; merges and closes run one at a time per repository (default 8). */
  concurrency?: number;
  /** The lanes listed, merged or closed (`--lane`, `--failed`), as Batch Changes acts on changesets one by one; all when absent. */
  only?: (rec: LaneRecord) => boolean;
  /**
   * What every lane branch of this fleet starts with (the fleet file's branch template up to {lane}): a manifest
   * naming another branch (`main`, `release`: an edited or planted manifest) is never acted on.
   */
  branchPrefix?: string;
}

/** The PR state a line of events.jsonl moves from and to. */
export type PrLineState = PrRow['state'];

/**
 * One line of events.jsonl for what `fleet prs merge` or `fleet prs close` changed: keyed by `lane` like a lane
 * transition, with `command` and `pr`; `from` and `to` are PR states (open, closed, merged, branch, none, unread).
 */
export interface PrsEventLine {
  time: string;
  lane: string;
  command: 'prs merge' | 'prs close';
  pr: number | null;
  from: PrLineState;
  to: PrLineState;
  detail: string;
}

export interface PrsResult {
  command: 'merge' | 'close';
  dryRun: boolean;
  method: PrMergeMethod | null;
  /** Every lane's PR as the forge showed it before the command acted. */
  rows: PrRow[];
  /** What the command did, per lane, in manifest order. */
  actions: PrAction[];
  /** The manifest with the records of the lanes it changed brought up to date (the input itself in a dry run). */
  manifest: Manifest;
  /** The lines for events.jsonl: one per lane record that changed; none in a dry run. */
  events: PrsEventLine[];
  /** Whether the manifest changed (a second run of the same command changes nothing). */
  changed: boolean;
  /** 0, or 1 when some PR could not be merged or closed. */
  exitCode: 0 | 1;
}

// ---------------------------------------------------------------------------
// Lanes and rows

/** Lanes that never ran on a target Fleet could reach have nothing on the forge to ask about. */
function asked(rec: LaneRecord): boolean {
  return rec.status !== 'excluded' && rec.branch !== null;
}

/**
 * The lane as the forge is asked about it: the fleet file's spec when it has the lane, else one rebuilt from the
 * record (what the forge needs: repository, branch, base). A repository name Fleet cannot place is a string: why.
 */
export function laneSpecFor(rec: LaneRecord, lanes: readonly LaneSpec[] = []): LaneSpec | string {
  const known = lanes.find((l) => l.id === rec.lane && l.repo === rec.repo);
  const base = rec.base_branch ?? known?.base;
  if (known) return { ...known, branch: rec.branch ?? known.branch, base };
  const kind = classifyRepo(rec.repo);
  if (typeof kind !== 'string') return kind.problem;
  return {
    id: rec.lane,
    repo: rec.repo,
    repo_kind: kind,
    title: rec.lane,
    directive: '',
    run: undefined,
    checks: [],
    depends_on: [...rec.depends_on],
    owns: [],
    never: [],
    exclusive: false,
    branch: rec.branch ?? '',
    base,
    index: -1,
    review: null,
  };
}

/**
 * Why a record's branch is not one this fleet's lanes push to: it must be the fleet file's branch for the lane, or at
 * least carry the fleet's branch prefix (a lane the file does not list: discovered, an issue's), and never its base.
 */
function foreignBranch(rec: LaneRecord, ctx: PrsContext): string | undefined {
  const branch = rec.branch ?? '';
  const known = ctx.lanes?.find((l) => l.id === rec.lane && l.repo === rec.repo);
  const refuse = (why: string) =>
    `the manifest names branch ${JSON.stringify(branch)} for this lane, ${why}: an edited or foreign manifest; nothing was asked or done`;
  if (branch === rec.base_branch) return refuse('its base branch');
  if (known && !rec.strategy && branch !== known.branch) return refuse(`and the fleet file gives ${JSON.stringify(known.branch)}`);
  if (ctx.branchPrefix && !branch.startsWith(ctx.branchPrefix)) return refuse(`which does not start with the fleet's ${JSON.stringify(ctx.branchPrefix)}`);
  return undefined;
}

function rowBase(rec: LaneRecord): Pick<PrRow, 'lane' | 'repo' | 'lane_status' | 'branch'> {
  return { lane: rec.lane, repo: rec.repo, lane_status: rec.status, branch: rec.branch };
}

function messageOf(err: unknown): string {
  return ((err as Error)?.message ?? String(err)).split('\n')[0]!.slice(0, 500);
}

/** One lane's PR, read now; a lane with nothing to ask about is a `none` row, a read that failed an `unread` one. */
async function readRow(ctx: PrsContext, rec: LaneRecord): Promise<{ row: PrRow; view: PrView | null; spec: LaneSpec | null }> {
  if (!asked(rec)) return { row: rowFrom(rowBase(rec), null), view: null, spec: null };
  const foreign = foreignBranch(rec, ctx);
  const spec = foreign ?? laneSpecFor(rec, ctx.lanes);
  if (typeof spec === 'string') return { row: rowFrom(rowBase(rec), null, spec), view: null, spec: null };
  try {
    // A lane that pushed to a fork (pr.fork, or fleet run --fork) has its branch and its PR's head there.
    if (rec.head_repo) ctx.forge.useHeadRepo?.(spec, rec.head_repo);
    const view = await ctx.forge.readPr(spec, rec);
    return { row: rowFrom(rowBase(rec), view), view, spec };
  } catch (err) {
    return { row: rowFrom(rowBase(rec), null, `the forge could not be asked: ${messageOf(err)}`), view: null, spec };
  }
}

/** Every lane of the manifest with its PR as the forge shows it now, in manifest order. Reads only. */
function chosen(ctx: PrsContext): LaneRecord[] {
  return ctx.only ? ctx.manifest.lanes.filter(ctx.only) : ctx.manifest.lanes;
}

export async function listPrs(ctx: PrsContext): Promise<PrRow[]> {
  const read = await mapLimit(chosen(ctx), ctx.concurrency ?? 8, (rec) => readRow(ctx, rec));
  return read.map((r) => r.row);
}

// ---------------------------------------------------------------------------
// Merge and close

interface Step {
  row: PrRow;
  action: PrAction;
  /** The PR's state afterwards, and whether the branch is gone; null when unknown (the forge could not be read). */
  after: { state: LanePrs['state']; branch_gone: boolean; pr: number | null; url: string | null } | null;
}

function action(rec: LaneRecord, row: PrRow, outcome: PrOutcome, detail: string, extra: Partial<PrAction> = {}): PrAction {
  return { lane: rec.lane, repo: rec.repo, pr: row.pr, url: row.url, outcome, detail, branch_deleted: false, ...extra };
}

function laneName(view: PrView): string {
  return view.number !== null ? `#${view.number}` : view.head_branch;
}

/** Why a lane's change is not Fleet's to merge, from the manifest: only what its run completed, and pushed. */
function notFleetsToMerge(rec: LaneRecord): string | null {
  if (rec.status !== 'completed' && rec.status !== 'unchanged') {
    return `the lane ${rec.status}${rec.error ? ` (${rec.error.class})` : ''}: Fleet merges only lanes its run completed; a person merges this one`;
  }
  if (rec.phase === 'dry-run') return 'the lane was a dry run: it pushed nothing';
  if (!rec.commit) return 'the manifest has no commit for the lane: Fleet merges only a commit its run pushed';
  return null;
}

/**
 * Why the PR the forge found from the lane's branch is not one Fleet may act on: a PR without this lane's marker that
 * the run did not open (someone opened it from the branch), or one into another base than the lane's.
 */
function notTheLanesPr(view: PrView, rec: LaneRecord): string | null {
  if (view.number !== null && !view.marked && view.number !== rec.pr_number) {
    return `#${view.number} from ${view.head_branch} was not opened by this fleet's run (no marker of this lane, and the manifest names ${rec.pr_number === null ? 'no PR' : `#${rec.pr_number}`}): a person decides`;
  }
  if (view.base_branch !== null && rec.base_branch !== null && view.base_branch !== rec.base_branch) {
    return `${laneName(view)} is into ${view.base_branch}, and the lane's base is ${rec.base_branch}: a person decides`;
  }
  return null;
}

async function mergeStep(ctx: PrsContext, rec: LaneRecord, method: PrMergeMethod, dryRun: boolean): Promise<Step> {
  const { row, view, spec } = await readRow(ctx, rec);
  if (row.problem) return { row, action: action(rec, row, 'failed', row.problem), after: null };
  if (!view || !spec)
    return {
      row,
      action: action(rec, row, 'no-pr', asked(rec) ? 'neither a PR nor a branch on the forge' : `the lane was ${rec.status}: nothing on the forge`),
      after: null,
    };
  const known = { pr: view.number, url: view.url, branch_gone: view.branch_head === null };
  if (view.state === 'merged') return { row, action: action(rec, row, 'already-merged', `${laneName(view)} is merged`), after: { ...known, state: 'merged' } };
  if (view.state === 'closed')
    return { row, action: action(rec, row, 'already-closed', `${laneName(view)} is closed without merging: not merged`), after: { ...known, state: 'closed' } };
  const refuse = (why: string): Step => ({ row, action: action(rec, row, 'not-merged', why), after: { ...known, state: view.state } });
  const notOurs = notFleetsToMerge(rec) ?? notTheLanesPr(view, rec);
  if (notOurs) return refuse(notOurs);
  const blocker = mergeBlocker(view);
  if (blocker) return refuse(blocker);
  if (view.head_sha !== rec.commit) {
    return refuse(
      `${laneName(view)}'s head is ${view.head_sha?.slice(0, 12) ?? 'unknown'}, not the lane's ${rec.commit!.slice(0, 12)}: someone pushed to ${view.head_branch}; a person merges it`,
    );
  }
  if (dryRun) return { row, action: action(rec, row, 'would-merge', `would merge ${laneName(view)} (${method})`), after: null };
  let m: MergeResult;
  try {
    m = await ctx.forge.merge(spec, { ...rec, pr_number: view.number ?? rec.pr_number, pr_url: view.url ?? rec.pr_url }, method);
  } catch (err) {
    return { row, action: action(rec, row, 'failed', messageOf(err)), after: { ...known, state: view.state } };
  }
  if (m.status === 'merged') return { row, action: action(rec, row, 'merged', m.detail), after: { ...known, state: 'merged' } };
  return { row, action: action(rec, row, m.status === 'failed' ? 'failed' : 'not-merged', m.detail), after: { ...known, state: view.state } };
}

async function closeStep(ctx: PrsContext, rec: LaneRecord, dryRun: boolean): Promise<Step> {
  const { row, view, spec } = await readRow(ctx, rec);
  if (row.problem) return { row, action: action(rec, row, 'failed', row.problem), after: null };
  const closedBefore = rec.prs?.state === 'closed';
  if (!view || !spec) {
    // Locally a closed lane is a deleted branch: the forge then knows nothing of it, the manifest does.
    if (closedBefore)
      return {
        row,
        action: action(rec, row, 'already-closed', 'closed before: nothing of it is left on the forge'),
        after: { state: 'closed', branch_gone: true, pr: rec.pr_number, url: rec.pr_url },
      };
    return {
      row,
      action: action(rec, row, 'no-pr', asked(rec) ? 'neither a PR nor a branch on the forge' : `the lane was ${rec.status}: nothing on the forge`),
      after: null,
    };
  }
  const known = { pr: view.number, url: view.url, branch_gone: view.branch_head === null };
  if (view.state === 'merged')
    return { row, action: action(rec, row, 'already-merged', `${laneName(view)} is merged: left as it is`), after: { ...known, state: 'merged' } };
  const notOurs = notTheLanesPr(view, rec);
  if (notOurs) return { row, action: action(rec, row, 'not-closed', notOurs), after: { ...known, state: view.state } };
  const deletable = view.branch_head !== null && view.branch_head === rec.commit;
  if (view.state === 'closed' && !deletable) {
    const branch = view.branch_head === null ? 'its branch is gone' : `its branch is at ${view.branch_head.slice(0, 12)}, not at the lane's commit: left`;
    return { row, action: action(rec, row, 'already-closed', `${laneName(view)} is closed; ${branch}`), after: { ...known, state: 'closed' } };
  }
  if (dryRun) {
    const what = [
      view.state === 'closed' ? null : view.number !== null ? `close #${view.number}` : null,
      deletable ? `delete ${view.head_branch}` : null,
    ].filter(Boolean);
    const left =
      !deletable && view.branch_head !== null
        ? `; ${view.head_branch} would be left (it is at ${view.branch_head.slice(0, 12)}, not at the lane's commit)`
        : '';
    if (!what.length)
      return {
        row,
        action: action(
          rec,
          row,
          'not-closed',
          `${view.head_branch} is at ${view.branch_head?.slice(0, 12) ?? 'nothing'}, not at the lane's commit: it would be left`,
        ),
        after: null,
      };
    return { row, action: action(rec, row, 'would-close', `would ${what.join(' and ')}${left}`), after: null };
  }
  let c: CloseResult;
  try {
    c = await ctx.forge.closePr(spec, { ...rec, pr_number: view.number ?? rec.pr_number }, { deleteBranch: true });
  } catch (err) {
    return { row, action: action(rec, row, 'failed', messageOf(err)), after: { ...known, state: view.state } };
  }
  const after = { pr: c.pr_number ?? view.number, url: c.pr_url ?? view.url, branch_gone: c.branch_head === null };
  const extra = { branch_deleted: c.branch_deleted, pr: after.pr, url: after.url };
  switch (c.status) {
    case 'closed':
      return { row, action: action(rec, row, 'closed', c.detail, extra), after: { ...after, state: 'closed' } };
    case 'already-closed':
      return { row, action: action(rec, row, 'already-closed', c.detail, extra), after: { ...after, state: 'closed' } };
    case 'merged':
      return { row, action: action(rec, row, 'already-merged', c.detail, extra), after: { ...after, state: 'merged' } };
    case 'none':
      return c.branch_deleted
        ? { row, action: action(rec, row, 'closed', c.detail, extra), after: { ...after, state: 'closed' } }
        : { row, action: action(rec, row, 'no-pr', c.detail, extra), after: null };
    case 'blocked':
      return { row, action: action(rec, row, 'not-closed', c.detail, extra), after: { ...after, state: view.state } };
    default:
      // Failed part-way (a PR closed, its branch not deleted) is still a failure: a person looks, or the command runs again.
      return { row, action: action(rec, row, 'failed', c.detail, extra), after: { ...after, state: c.pr_state ?? view.state } };
  }
}

/** Outcomes written to the lane's record: what the forge now shows for it, or what was refused and why. */
const RECORDED: ReadonlySet<PrOutcome> = new Set(['merged', 'closed', 'already-merged', 'already-closed', 'not-merged', 'not-closed', 'failed']);

/**
 * The lane's record after the step, or null when it stays as it is: a second run that finds what the first left
 * (already merged, already closed, refused again for the same reason) changes nothing, not even a time.
 */
function recordAfter(rec: LaneRecord, step: Step, command: 'merge' | 'close', now: string): LaneRecord | null {
  const { action: a, after } = step;
  if (!after || !RECORDED.has(a.outcome)) return null;
  const next: LanePrs = {
    command,
    outcome: a.outcome as LanePrs['outcome'],
    state: after.state,
    branch_deleted: after.branch_gone,
    detail: a.detail,
    at: now,
  };
  const prev = rec.prs;
  const already = a.outcome === 'already-merged' || a.outcome === 'already-closed';
  const mergedNow = after.state === 'merged' && rec.merge_status !== 'merged';
  const same =
    prev !== undefined &&
    prev.state === next.state &&
    prev.branch_deleted === next.branch_deleted &&
    (already || (prev.outcome === next.outcome && prev.detail === next.detail));
  if (same && !mergedNow && (rec.pr_number !== null || after.pr === null)) return null;
  const out: LaneRecord = { ...rec, prs: same ? prev : next, updated_at: now };
  if (out.pr_number === null && after.pr !== null) {
    out.pr_number = after.pr;
    out.pr_url = after.url;
  }
  if (after.state === 'merged') {
    out.merge_status = 'merged';
    if (rec.status === 'completed') out.phase = 'merged';
  }
  return out;
}

function lineState(step: Step): PrLineState {
  return step.after?.state ?? step.row.state;
}

async function act(
  ctx: PrsContext,
  command: 'merge' | 'close',
  dryRun: boolean,
  method: PrMergeMethod | null,
  one: (rec: LaneRecord) => Promise<Step>,
): Promise<PrsResult> {
  const now = ctx.clock.now().toISOString();
  // One repository's lanes one after another (a merge moves the base the next one merges into); repositories at once.
  const byRepo = new Map<string, LaneRecord[]>();
  for (const rec of chosen(ctx)) byRepo.set(rec.repo, [...(byRepo.get(rec.repo) ?? []), rec]);
  const steps = new Map<string, Step>();
  await mapLimit([...byRepo.values()], ctx.concurrency ?? 8, async (recs) => {
    for (const rec of recs) steps.set(rec.lane, await one(rec));
  });
  const ordered = chosen(ctx).map((rec) => [rec, steps.get(rec.lane)!] as const);
  const events: PrsEventLine[] = [];
  let lanes = ctx.manifest.lanes;
  if (!dryRun) {
    lanes = ctx.manifest.lanes.map((rec) => {
      const step = steps.get(rec.lane);
      // A lane not chosen (--lane, --failed) is left as it was.
      if (!step) return rec;
      const updated = recordAfter(rec, step, command, now);
      if (!updated) return rec;
      events.push({
        time: now,
        lane: rec.lane,
        command: `prs ${command}`,
        pr: step.action.pr,
        from: step.row.state,
        to: lineState(step),
        detail: step.action.detail,
      });
      return updated;
    });
  }
  const changed = events.length > 0;
  const manifest = changed ? { ...ctx.manifest, lanes, summary: summarize(lanes, ctx.manifest.started_at, ctx.manifest.ended_at) } : ctx.manifest;
  const actions = ordered.map(([, s]) => s.action);
  return { command, dryRun, method, rows: ordered.map(([, s]) => s.row), actions, manifest, events, changed, exitCode: prsExitCode(actions) };
}

/**
 * Merges every lane's PR that may merge now, under `method`: open, not a draft, CI green (read now), no change
 * requested, no conflict, at the commit the lane's run pushed (never one someone pushed after it), of a lane its
 * run completed. Everything else is left with the reason. The forge's merge checks CI and the base's required
 * checks once more before it merges. `dryRun`: says what it would merge, changes nothing.
 */
export async function mergePrs(ctx: PrsContext, opts: { method: PrMergeMethod; dryRun: boolean }): Promise<PrsResult> {
  return act(ctx, 'merge', opts.dryRun, opts.method, (rec) => mergeStep(ctx, rec, opts.method, opts.dryRun));
}

/**
 * Closes every lane's open PR and deletes its branch when the branch still holds the lane's commit (a branch
 * someone pushed to is left, and said so); a merged PR is left as it is. Locally, deletes the lane branch.
 * `dryRun`: says what it would close, changes nothing.
 */
export async function closePrs(ctx: PrsContext, opts: { dryRun: boolean }): Promise<PrsResult> {
  return act(ctx, 'close', opts.dryRun, null, (rec) => closeStep(ctx, rec, opts.dryRun));
}

// ---------------------------------------------------------------------------
// Files

/** Writes what a merge or close changed: the manifest (atomically) and the events (appended beside it). Nothing for a dry run or no change. */
export async function savePrsResult(manifestPath: string, result: PrsResult, seal = true): Promise<void> {
  if (result.dryRun || !result.changed) return;
  await writeManifest(manifestPath, result.manifest, { seal });
  const log = new JsonLines(join(dirname(manifestPath), 'events.jsonl'));
  for (const e of result.events) void log.append(e);
  await log.flush();
}

/** A manifest read and validated, or every problem with it as `file: field: message`. */
export async function readManifestFile(path: string): Promise<{ ok: true; manifest: Manifest; text: string } | { ok: false; problems: Problem[] }> {
  const read = await readTextFile(path, MAX_FLEET_JSON_BYTES, 'a manifest');
  if (!read.ok) {
    const message = read.message.startsWith('no such file') ? 'no such file: pass the fleet-status.json a run wrote' : read.message;
    return { ok: false, problems: [{ file: path, field: '(file)', message }] };
  }
  let json: unknown;
  try {
    json = JSON.parse(read.text);
  } catch (err) {
    return { ok: false, problems: [{ file: path, field: '(syntax)', message: `not valid JSON: ${(err as Error).message}` }] };
  }
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success)
    return { ok: false, problems: parsed.error.issues.map((i) => ({ file: path, field: i.path.join('.') || '(top level)', message: i.message })) };
  return { ok: true, manifest: parsed.data, text: read.text };
}

export type PrsCommandOptions = { command: 'list' } | { command: 'merge'; method: PrMergeMethod; dryRun: boolean } | { command: 'close'; dryRun: boolean };

export type PrsCommandResult =
  | { ok: true; command: 'list'; manifestPath: string; manifest: Manifest; rows: PrRow[]; exitCode: 0 | 1 }
  | ({ ok: true; manifestPath: string } & PrsResult)
  | { ok: false; problems: Problem[] };

/**
 * The whole of `fleet prs`, `fleet prs merge` and `fleet prs close` once the CLI has a forge: reads the manifest,
 * asks the forge, and for a merge or close that is not a dry run holds the workspace lock (`.fleet.lock`: no
 * `fleet run` on the same workspace meanwhile, and none of this while one runs), then writes the manifest and the
 * events. The list exits 1 when some lane's PR could not be read.
 */
export async function prsCommand(
  input: {
    manifestPath: string;
    forge: Forge;
    clock: Clock;
    lanes?: readonly LaneSpec[];
    concurrency?: number;
    branchPrefix?: string;
    only?: (rec: LaneRecord) => boolean;
  },
  opts: PrsCommandOptions,
): Promise<PrsCommandResult> {
  const first = await readManifestFile(input.manifestPath);
  if (!first.ok) return first;
  if (first.manifest.forge !== input.forge.kind) {
    return {
      ok: false,
      problems: [
        {
          file: input.manifestPath,
          field: 'forge',
          message: `this manifest is of a fleet on ${first.manifest.forge}, and the fleet file says forge: ${input.forge.kind}: pass this fleet's own fleet file`,
        },
      ],
    };
  }
  const ctx = (manifest: Manifest): PrsContext => ({
    manifest,
    forge: input.forge,
    clock: input.clock,
    lanes: input.lanes,
    concurrency: input.concurrency,
    branchPrefix: input.branchPrefix,
    only: input.only,
  });
  if (opts.command === 'list') {
    const rows = await listPrs(ctx(first.manifest));
    return {
      ok: true,
      command: 'list',
      manifestPath: input.manifestPath,
      manifest: first.manifest,
      rows,
      exitCode: rows.some((r) => r.state === 'unread') ? 1 : 0,
    };
  }
  const run = (manifest: Manifest) => (opts.command === 'merge' ? mergePrs(ctx(manifest), opts) : closePrs(ctx(manifest), opts));
  if (opts.dryRun) return { ok: true, manifestPath: input.manifestPath, ...(await run(first.manifest)) };
  const root = dirname(input.manifestPath);
  const lock = await lockWorkspace(root, first.manifest.fleet_id);
  if (!lock.ok) return { ok: false, problems: [{ file: join(root, '.fleet.lock'), field: '(workspace)', message: lock.message }] };
  try {
    // Read again under the lock: a run that ended meanwhile may have written it.
    const again = await readManifestFile(input.manifestPath);
    if (!again.ok) return again;
    const result = await run(again.manifest);
    // Sealed again only if Fleet's seal vouched for what was read: a merge must not launder a manifest someone else wrote.
    await savePrsResult(input.manifestPath, result, (await sealProblem(input.manifestPath, again.text)) === null);
    return { ok: true, manifestPath: input.manifestPath, ...result };
  } finally {
    await lock.release();
  }
}
