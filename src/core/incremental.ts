/**
 * Incremental sweeps: a lane whose target has not moved and whose inputs are the same as when it last
 * completed is not run again. Two things are compared per lane: its digest (a hash of everything that
 * decides its result) and the base commit its target's validation read at plan time.
 *
 * Pure: hashing is computation, not I/O; the previous outcomes come in as data.
 */
import { createHash } from 'node:crypto';
import type { FleetFile } from './fleet-file.js';
import { SCHEMA_VERSION, type LaneRecord, type Manifest } from './model.js';
import type { LaneSpec } from './model.js';

/**
 * Fleet's version, part of every digest: a new Fleet may do a lane differently, so it runs every lane again.
 * Kept equal to package.json's version (a unit test compares them).
 */
export const FLEET_VERSION = '0.1.0';

/**
 * What decides a lane's result, and only that. In: the lane's repository, id, title, directive, run command,
 * checks, owns and never fences, branch, base and review settings; the fleet's name (in branch names and the PR marker), agent
 * settings, commit message, PR settings, CI waiting, merge policy and method, checkpoint, isolation, relay settings and forge;
 * the lanes it depends on; Fleet's version. Out, on purpose: scheduling (max_parallel, max_waves, exclusive,
 * timeouts, max_retries, budget: a lane that completed within them completes again), branch_conflict (how a lane meets
 * commits others pushed to its branch: one that completed met none, or settled them), the other targets, exclude:,
 * discovery settings, and the fleet-wide directive where a lane has its own.
 */
export function laneDigestInput(file: FleetFile, lane: LaneSpec, version: string = FLEET_VERSION): unknown {
  return {
    fleet_version: version,
    fleet: {
      name: file.name,
      forge: file.forge,
      agent: file.agent ?? null,
      commit_message: file.commit_message ?? null,
      pr: file.pr,
      ci: file.ci,
      merge: file.merge,
      checkpoint: file.checkpoint,
      isolation: file.isolation,
      relay: file.relay,
    },
    lane: {
      id: lane.id,
      repo: lane.repo,
      title: lane.title,
      directive: lane.directive,
      run: lane.run ?? null,
      checks: lane.checks,
      owns: lane.owns,
      never: lane.never,
      branch: lane.branch,
      base: lane.base ?? null,
      depends_on: [...lane.depends_on].sort(),
      review: lane.review,
    },
  };
}

/** `sha256:<hex>` of the lane's digest input, as canonical JSON (keys sorted at every level). */
export function laneDigest(file: FleetFile, lane: LaneSpec, version: string = FLEET_VERSION): string {
  return `sha256:${createHash('sha256')
    .update(canonicalJson(laneDigestInput(file, lane, version)))
    .digest('hex')}`;
}

/** JSON with object keys sorted, so two equal values always hash alike whatever order their keys were written in. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * What a sweep remembers of each lane for the next one: the fields an unchanged lane carries forward. A
 * compact file (on GitHub, kept in the Actions cache) rather than the whole manifest.
 */
export interface PreviousOutcome {
  lane: string;
  repo: string;
  status: LaneRecord['status'];
  phase: LaneRecord['phase'];
  digest: string | null;
  base_branch: string | null;
  base_commit: string | null;
  branch: string | null;
  commit: string | null;
  changed_files: string[];
  pr_url: string | null;
  pr_number: number | null;
  merge_status: LaneRecord['merge_status'];
  ci_conclusion: LaneRecord['ci_conclusion'];
  /** The run the lane last really ran in (an unchanged lane keeps its predecessor's). */
  ran_in: string;
  ended_at: string | null;
  /** For a strategy: whether it was its target's pick (an unchanged group keeps its pick). */
  strategy?: LaneRecord['strategy'];
}

export interface Outcomes {
  schema_version: string;
  /** The fleet's name: outcomes of another fleet are never compared. */
  name: string;
  fleet_id: string;
  dry_run: boolean;
  lanes: PreviousOutcome[];
}

/** The outcomes a finished run leaves for the next sweep. */
export function outcomesOf(m: Manifest): Outcomes {
  return {
    schema_version: SCHEMA_VERSION,
    name: m.name,
    fleet_id: m.fleet_id,
    dry_run: m.dry_run,
    lanes: m.lanes
      .filter((l) => l.status === 'completed' || l.status === 'unchanged')
      .map((l) => ({
        lane: l.lane,
        repo: l.repo,
        status: l.status,
        phase: l.phase,
        digest: l.digest ?? null,
        base_branch: l.base_branch,
        base_commit: l.base_commit,
        branch: l.branch,
        commit: l.commit,
        ...(l.strategy ? { strategy: l.strategy } : {}),
        changed_files: l.changed_files,
        pr_url: l.pr_url,
        pr_number: l.pr_number,
        merge_status: l.merge_status,
        ci_conclusion: l.ci_conclusion,
        ran_in: (l.status === 'unchanged' && l.unchanged_since) || m.fleet_id,
        ended_at: l.ended_at,
      })),
  };
}

/** Why previous outcomes cannot be used at all, or null when they can. */
export function outcomesProblem(prev: Outcomes, name: string, dryRun: boolean): string | null {
  if (prev.schema_version !== SCHEMA_VERSION)
    return `they were written by another manifest version (${prev.schema_version}, this Fleet writes ${SCHEMA_VERSION})`;
  if (prev.name !== name) return `they are fleet "${prev.name}"'s, not "${name}"'s`;
  if (prev.dry_run) return 'that run was a dry run: it pushed nothing';
  if (dryRun) return 'this run is a dry run: every lane runs to show its patch';
  return null;
}

/** Could this previous outcome stand for this run's lane? Completed for real (not a draft, not a dry run) or itself unchanged. */
function reusable(p: PreviousOutcome): boolean {
  if (p.status === 'unchanged') return true;
  if (p.status !== 'completed') return false;
  return p.phase !== 'dry-run' && p.phase !== 'draft' && p.merge_status !== 'draft';
}

export interface UnchangedInput {
  /** The runnable lanes in dependency order (the plan's lanes, sorted by wave). */
  lanes: readonly LaneSpec[];
  digests: ReadonlyMap<string, string>;
  /** Each lane's base commit, read by target validation; absent when the forge could not say. */
  baseCommits: ReadonlyMap<string, string>;
  previous: Outcomes;
}

/**
 * The lanes that need not run, each with the outcome it carries forward. A lane is unchanged when its previous
 * outcome is reusable, its digest and base commit are the same, and every lane it depends on is unchanged too
 * (a dependency that runs again may move the checkpoint this lane started from). Anything missing means it runs.
 */
export function unchangedLanes(input: UnchangedInput): Map<string, PreviousOutcome> {
  const prev = new Map(input.previous.lanes.map((l) => [l.lane, l]));
  const out = new Map<string, PreviousOutcome>();
  for (const lane of input.lanes) {
    const p = prev.get(lane.id);
    if (!p || !reusable(p) || p.repo !== lane.repo) continue;
    const digest = input.digests.get(lane.id);
    const base = input.baseCommits.get(lane.id);
    if (!digest || !p.digest || digest !== p.digest) continue;
    if (!base || !p.base_commit || base !== p.base_commit) continue;
    if (!lane.depends_on.every((d) => out.has(d))) continue;
    out.set(lane.id, p);
  }
  return out;
}

/** The lane record of an unchanged lane: its previous outcome carried forward, the run it came from in a note. */
export function unchangedRecord(planned: LaneRecord, p: PreviousOutcome, digest: string, now: string): LaneRecord {
  return {
    ...planned,
    status: 'unchanged',
    phase: 'unchanged',
    updated_at: now,
    ended_at: now,
    base_branch: p.base_branch,
    base_commit: p.base_commit,
    branch: p.branch ?? planned.branch,
    commit: p.commit,
    changed_files: p.changed_files,
    pr_url: p.pr_url,
    pr_number: p.pr_number,
    merge_status: p.merge_status,
    ci_conclusion: p.ci_conclusion,
    digest,
    unchanged_since: p.ran_in,
    ...(p.strategy ? { strategy: p.strategy } : {}),
    evidence: { ...planned.evidence, notes: [`unchanged since ${p.ran_in} (${p.phase}): same base commit ${(p.base_commit ?? '').slice(0, 12)}, same digest`] },
  };
}
