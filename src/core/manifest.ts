/**
 * The manifest's life: seeded from the plan, lane records merged in as they arrive,
 * summarized, finalized. Pure: every function returns a new manifest and never
 * touches its input; times come in as ISO strings.
 */
import { addUsage, hasUsage } from './spend.js';
import { SCHEMA_VERSION, newLaneRecord, type Manifest, type LaneRecord, type Summary, type Wave, type ContentionEntry, type Exclusion } from './model.js';

export interface ManifestInit {
  fleet_id: string;
  name: string;
  forge: 'local' | 'github';
  started_at: string;
  directive: string;
  max_parallel: number;
  max_retries: number;
  checkpoint: 'pushed' | 'green' | 'merged';
  merge_policy: 'never' | 'when-green';
  dry_run: boolean;
  waves: Wave[];
  contention: ContentionEntry[];
  excluded: Exclusion[];
  /** Runnable lanes: they start `queued`. */
  lanes: { repo: string; lane: string; wave: number; branch: string; depends_on: string[] }[];
  /** Lanes the planner will not run (a dependency is excluded, …): `skipped`, with the reason as a `dependency-failed` error. */
  skipped: { repo: string; lane: string; reason: string; depends_on: string[] }[];
}

/** Code-point order: the same on every machine and locale. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function byWaveThenLane(a: LaneRecord, b: LaneRecord): number {
  const wa = a.wave ?? Number.POSITIVE_INFINITY;
  const wb = b.wave ?? Number.POSITIVE_INFINITY;
  if (wa !== wb) return wa < wb ? -1 : 1;
  return compareIds(a.lane, b.lane);
}

/**
 * The initial manifest: runnable lanes queued, plan-time skips skipped, excluded
 * targets present as lanes too (so every target is accounted for), sorted by
 * (wave, lane) with unscheduled lanes last. A lane id used twice throws.
 */
export function initManifest(init: ManifestInit): Manifest {
  const lanes: LaneRecord[] = [];
  for (const l of init.lanes) {
    lanes.push(newLaneRecord({ repo: l.repo, lane: l.lane, wave: l.wave, branch: l.branch, depends_on: [...l.depends_on] }));
  }
  for (const s of init.skipped) {
    lanes.push({
      ...newLaneRecord({ repo: s.repo, lane: s.lane, wave: null, branch: null, depends_on: [...s.depends_on] }),
      status: 'skipped',
      phase: 'skipped',
      error: { class: 'dependency-failed', message: s.reason },
    });
  }
  for (const x of init.excluded) {
    lanes.push({
      ...newLaneRecord({ repo: x.repo, lane: x.lane, wave: null, branch: null, depends_on: [] }),
      status: 'excluded',
      phase: 'excluded',
      error: { class: 'excluded', message: x.detail ? `${x.reason}: ${x.detail}` : x.reason },
    });
  }
  const seen = new Set<string>();
  for (const l of lanes) {
    if (seen.has(l.lane)) throw new Error(`duplicate lane id "${l.lane}" (repo ${l.repo}): every lane, skipped and excluded target needs its own id`);
    seen.add(l.lane);
  }
  lanes.sort(byWaveThenLane);
  return {
    schema_version: SCHEMA_VERSION,
    fleet_id: init.fleet_id,
    name: init.name,
    forge: init.forge,
    started_at: init.started_at,
    ended_at: null,
    directive: init.directive,
    max_parallel: init.max_parallel,
    max_retries: init.max_retries,
    checkpoint: init.checkpoint,
    merge_policy: init.merge_policy,
    dry_run: init.dry_run,
    waves: init.waves,
    contention: init.contention,
    excluded: init.excluded,
    lanes,
    summary: summarize(lanes, init.started_at, null),
  };
}

/** Milliseconds since the epoch, or null when absent or unparsable. */
export function parseTime(s: string | null | undefined): number | null {
  if (s == null) return null;
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t;
}

/**
 * True when `incoming` must not replace `current`: it is older. A record without
 * `updated_at` is older than any dated one; equal times let the incoming record win
 * (the later write). Unparsable times fall back to comparing the strings.
 */
function isStale(incoming: LaneRecord, current: LaneRecord): boolean {
  if (current.updated_at == null) return false;
  if (incoming.updated_at == null) return true;
  const a = parseTime(incoming.updated_at);
  const b = parseTime(current.updated_at);
  if (a != null && b != null) return a < b;
  return incoming.updated_at < current.updated_at;
}

function unknownLane(lane: string, fleet_id: string): Error {
  return new Error(`unknown lane "${lane}": fleet ${fleet_id} has no lane with that id`);
}

/** One record in; a stale record is ignored (the manifest is still copied). */
export function applyLaneRecord(m: Manifest, rec: LaneRecord): Manifest {
  return mergeLaneRecords(m, [rec]);
}

/**
 * Many records in, in one pass: O(lanes + records). Records for the same lane are
 * taken in order, each subject to the staleness rule. Any unknown lane throws,
 * naming every unknown id, before anything is merged.
 */
export function mergeLaneRecords(m: Manifest, recs: LaneRecord[]): Manifest {
  const index = new Map<string, number>();
  m.lanes.forEach((l, i) => index.set(l.lane, i));
  const unknownSet = new Set<string>();
  for (const r of recs) if (!index.has(r.lane)) unknownSet.add(r.lane);
  const unknown = [...unknownSet];
  if (unknown.length === 1) throw unknownLane(unknown[0]!, m.fleet_id);
  if (unknown.length > 1) {
    const shown = unknown
      .slice(0, 10)
      .map((l) => `"${l}"`)
      .join(', ');
    const more = unknown.length > 10 ? ` and ${unknown.length - 10} more` : '';
    throw new Error(`unknown lanes ${shown}${more}: fleet ${m.fleet_id} has no lanes with those ids`);
  }
  const lanes = m.lanes.slice();
  for (const r of recs) {
    const i = index.get(r.lane)!;
    if (!isStale(r, lanes[i]!)) lanes[i] = r;
  }
  return { ...m, lanes, summary: summarize(lanes, m.started_at, m.ended_at) };
}

/** Whole seconds from `started_at` to `ended_at` (never negative), or null when either is missing. */
export function durationSeconds(started_at: string | null, ended_at: string | null): number | null {
  const a = parseTime(started_at);
  const b = parseTime(ended_at);
  if (a == null || b == null) return null;
  return Math.max(0, Math.floor((b - a) / 1000));
}

export function summarize(lanes: LaneRecord[], started_at: string, ended_at: string | null): Summary {
  const s: Summary = {
    total: lanes.length,
    completed: 0,
    no_op: 0,
    failed: 0,
    skipped: 0,
    excluded: 0,
    unchanged: 0,
    queued: 0,
    running: 0,
    merged: 0,
    draft: 0,
    retries: 0,
    duration_seconds: durationSeconds(started_at, ended_at),
  };
  for (const l of lanes) {
    s[l.status]++;
    if (l.phase === 'no-op') s.no_op++;
    if (l.merge_status === 'merged') s.merged++;
    if (isDraft(l)) s.draft++;
    s.retries += l.retry_count;
    if (hasUsage(l.usage)) s.usage = addUsage(s.usage, l.usage);
  }
  return s;
}

export function isDraft(l: LaneRecord): boolean {
  return l.merge_status === 'draft' || l.phase === 'draft';
}

export function finalizeManifest(m: Manifest, ended_at: string): Manifest {
  return { ...m, ended_at, summary: summarize(m.lanes, m.started_at, ended_at) };
}

/** CI conclusions that say the pushed change is broken or was not tested to the end. */
const RED_CI = new Set(['failure', 'cancelled', 'timed_out']);

/**
 * A lane that completed but whose PR's CI is red as last read (at the report, where Fleet did not wait for CI): its
 * change is not good to merge, so it is a failure for a person to see and for the exit code, whatever the lane's own
 * status says about the work it did.
 */
export function ciRed(l: LaneRecord): boolean {
  return l.status === 'completed' && l.ci_conclusion !== null && RED_CI.has(l.ci_conclusion);
}

/** Lanes a person has to look at: failed ones, those whose PR was left as a draft, and those whose CI is red, by lane id. */
export function needsAction(m: Manifest): LaneRecord[] {
  return m.lanes.filter((l) => l.status === 'failed' || isDraft(l) || ciRed(l)).sort((a, b) => compareIds(a.lane, b.lane));
}

/** Lane ids a resumed run would pick up again: everything not completed and not excluded, sorted. */
export function resumableLanes(m: Manifest): string[] {
  return m.lanes
    .filter((l) => l.status !== 'completed' && l.status !== 'excluded')
    .map((l) => l.lane)
    .sort(compareIds);
}
