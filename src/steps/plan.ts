/**
 * The plan step: check every target against the forge, build the DAG into
 * waves and shards, and produce the initial manifest. Every target comes out
 * accounted for: runnable, excluded with a reason, or skipped with a reason.
 */
import { randomBytes } from 'node:crypto';
import { ownsOnlyWorkflows } from '../core/fence.js';
import { type LegOptions, type LegSizing, legSizing } from '../core/legs.js';
import { buildPlan, keepGroupsTogether, shardWave, type Plan } from '../core/plan.js';
import { laneDigest, outcomesOf, outcomesProblem, unchangedLanes, unchangedRecord } from '../core/incremental.js';
import { initManifest, summarize } from '../core/manifest.js';
import type { Exclusion, LaneSpec, Manifest, QueueBoard } from '../core/model.js';
import { addDiscoveredLanes, type Problem, type ResolvedFleet } from '../core/validate.js';
import type { Clock, Forge, QueueEvent, QueueOutcome, QueueSource } from '../ports.js';

export interface PlanStepOptions {
  file: string;
  fleet_id?: string;
  maxParallel?: number;
  dryRun?: boolean;
  /**
   * An incremental sweep: the previous run's manifest. A lane whose base commit and digest are as they were when
   * it last completed ends `unchanged` without running; with no usable previous run, every lane runs.
   */
  since?: Manifest;
  /** Finds targets beyond the listed ones (github.discover); its problems stop the plan. */
  discover?(fleet: ResolvedFleet): Promise<{ repos: string[]; problems: string[] }>;
  /** Reads the issue queue (source.issues) and starts its ready issues as lanes; its problems stop the plan. */
  queue?: QueueSource;
  /** Read the issue queue without changing it (`fleet plan`); a dry run never changes it either. */
  readOnly?: boolean;
  /** How the matrix legs are sized (the wave job's timeout, the write limits): see core/legs.ts. */
  legs?: Omit<LegOptions, 'dryRun'>;
}

export type PlanStepResult =
  /** `fleet` is the fleet as planned: the listed lanes plus the discovered ones. */
  | { ok: true; fleet: ResolvedFleet; plan: Plan; manifest: Manifest; base_branches: Map<string, string>; notes: string[]; queue_events: QueueEvent[] }
  | { ok: false; problems: Problem[] };

/**
 * `fleet-YYYYMMDD-HHMMSS-xxxxxx` (UTC, then 24 random bits): readable and sortable by time, and
 * unique even for runs started in the same second (two of them once shared an id, and with it
 * lane results that each took for its own).
 */
export function fleetIdFor(date: Date, random: string = randomBytes(3).toString('hex')): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `fleet-${date.getUTCFullYear()}${p(date.getUTCMonth() + 1)}${p(date.getUTCDate())}-${p(date.getUTCHours())}${p(date.getUTCMinutes())}${p(date.getUTCSeconds())}-${random}`;
}

export async function planStep(listed: ResolvedFleet, forge: Forge, clock: Clock, opts: PlanStepOptions): Promise<PlanStepResult> {
  let fleet = listed;
  if (fleet.file.github.discover.length) {
    if (!opts.discover) {
      return { ok: false, problems: [{ file: opts.file, field: 'github.discover', message: 'this forge cannot discover targets: set forge: github' }] };
    }
    const found = await opts.discover(fleet);
    if (found.problems.length) {
      return { ok: false, problems: found.problems.map((message) => ({ file: opts.file, field: 'github.discover', message })) };
    }
    fleet = addDiscoveredLanes(fleet, found.repos);
  }
  let queue: { board: QueueBoard; events: QueueEvent[]; commit: QueueOutcome['commit'] } | null = null;
  if (fleet.file.source?.issues) {
    if (!opts.queue) {
      return { ok: false, problems: [{ file: opts.file, field: 'source.issues', message: 'this forge cannot read an issue queue: set forge: github' }] };
    }
    const read = await opts.queue(fleet, {
      readOnly: (opts.readOnly ?? false) || (opts.dryRun ?? false),
      budget: opts.maxParallel ?? fleet.file.max_parallel,
      now: () => clock.now(),
    });
    if (read.problems.length) return { ok: false, problems: read.problems.map((message) => ({ file: opts.file, field: 'source.issues', message })) };
    fleet = { ...fleet, lanes: [...fleet.lanes, ...read.lanes] };
    queue = { board: read.board, events: read.events, commit: read.commit };
  }
  const excludedByConfig = new Set(fleet.excluded.map((e) => e.lane));
  const toCheck = fleet.lanes.filter((l) => !excludedByConfig.has(l.id));
  // Several lanes of one repository need one check, not one each.
  const key = (lane: (typeof toCheck)[number]) => `${lane.repo}\u0000${lane.base ?? ''}`;
  const byRepo = new Map<string, (typeof toCheck)[number]>();
  for (const lane of toCheck) if (!byRepo.has(key(lane))) byRepo.set(key(lane), lane);
  const checks = await forge.checkTargets([...byRepo.values()]);
  const checkByLane = new Map(checks.map((c) => [c.lane, c]));

  const exclusions: Exclusion[] = [];
  const baseBranches = new Map<string, string>();
  const baseCommits = new Map<string, string>();
  for (const lane of toCheck) {
    const c = checkByLane.get(byRepo.get(key(lane))!.id);
    if (!c) {
      exclusions.push({ repo: lane.repo, lane: lane.id, reason: 'unchecked', detail: 'the forge did not answer for this target' });
    } else if (!c.ok) {
      exclusions.push({ repo: lane.repo, lane: lane.id, reason: c.reason, detail: c.detail });
    } else {
      baseBranches.set(lane.id, lane.base ?? c.default_branch);
      if (c.base_commit) baseCommits.set(lane.id, c.base_commit);
    }
  }

  exclusions.push(...(await workflowExclusions(forge, toCheck, exclusions, opts.dryRun ?? false)));
  const missingProblems = missingTargets(fleet, toCheck, exclusions, opts.file);

  // A lane branch that is its base branch would put the change straight onto it, unreviewed.
  const branchProblems: Problem[] = [];
  for (const lane of toCheck) {
    const base = baseBranches.get(lane.id);
    if (base !== undefined && base === lane.branch) {
      branchProblems.push({
        file: opts.file,
        field: fleet.file.branch.includes('{name}') ? `targets[${lane.index}].lane` : 'branch',
        message: `lane "${lane.id}" would work on branch "${lane.branch}", which is the base branch of ${lane.repo}: Fleet never commits straight onto a base branch; change \`branch:\` or the lane id`,
      });
    }
  }

  const maxParallel = opts.maxParallel ?? fleet.file.max_parallel;
  const sizing = legSizing(fleet.file, fleet.lanes, maxParallel, { ...opts.legs, dryRun: opts.dryRun ?? false });
  const built = buildPlan(fleet, exclusions, { maxParallel, maxWaves: fleet.file.max_waves, file: opts.file, sizing });
  if (!built.ok) return { ok: false, problems: [...missingProblems, ...built.problems, ...branchProblems] };
  if (missingProblems.length || branchProblems.length) return { ok: false, problems: [...missingProblems, ...branchProblems] };
  if (queue) {
    try {
      const done = await queue.commit();
      queue = { ...queue, board: done.board, events: done.events };
    } catch (err) {
      return { ok: false, problems: [{ file: opts.file, field: 'source.issues', message: (err as Error).message }] };
    }
  }
  let plan = built.plan;
  const now = clock.now();
  const byId = new Map(fleet.lanes.map((l) => [l.id, l]));
  const manifest = initManifest({
    fleet_id: opts.fleet_id ?? fleetIdFor(now),
    name: fleet.file.name,
    forge: forge.kind,
    started_at: now.toISOString(),
    directive: fleet.file.directive,
    max_parallel: maxParallel,
    max_retries: fleet.file.max_retries,
    checkpoint: fleet.file.checkpoint,
    merge_policy: fleet.file.merge.policy,
    dry_run: opts.dryRun ?? false,
    waves: plan.waves,
    contention: plan.contention,
    excluded: plan.excluded,
    lanes: plan.lanes.map((l) => ({ repo: l.spec.repo, lane: l.spec.id, wave: l.wave, branch: l.spec.branch, depends_on: l.spec.depends_on })),
    skipped: plan.skipped.map((s) => ({ repo: s.repo, lane: s.lane, reason: s.reason, depends_on: byId.get(s.lane)?.depends_on ?? [] })),
  });
  const digests = new Map(plan.lanes.map((l) => [l.spec.id, laneDigest(fleet.file, l.spec)]));
  let lanes = manifest.lanes.map((l) => (digests.has(l.lane) ? { ...l, digest: digests.get(l.lane)! } : l));
  const notes: string[] = [];
  if (opts.since) {
    const previous = outcomesOf(opts.since);
    const problem = outcomesProblem(previous, fleet.file.name, opts.dryRun ?? false);
    if (problem) notes.push(`every lane runs: the previous outcomes (${opts.since.fleet_id}) cannot be used, ${problem}`);
    else {
      // An issue lane runs because the queue started it: its issue (not in the digest) may have changed since.
      const same = unchangedLanes({ lanes: plan.lanes.map((l) => l.spec).filter((l) => !l.issue), digests, baseCommits, previous });
      lanes = lanes.map((l) => {
        const p = same.get(l.lane);
        return p ? unchangedRecord(l, p, digests.get(l.lane)!, now.toISOString()) : l;
      });
      plan = withoutShardsFor(plan, new Set(same.keys()), maxParallel, sizing);
      notes.push(`${same.size} of ${plan.lanes.length} lane${plan.lanes.length === 1 ? '' : 's'} unchanged since ${opts.since.fleet_id}: not run`);
    }
  }
  const out: Manifest = {
    ...manifest,
    lanes,
    waves: plan.waves,
    summary: summarize(lanes, manifest.started_at, null),
    ...(queue ? { queue: queue.board } : {}),
  };
  if (queue) notes.push(queueNote(queue.board));
  return { ok: true, fleet, plan, manifest: out, base_branches: baseBranches, notes, queue_events: queue?.events ?? [] };
}

/** Exclusion reasons that say the target is not there at all, rather than there in some state. */
const MISSING = new Set(['not-found', 'not-a-repository']);

/**
 * Under `missing_targets: fail` (the default), a problem for each listed target that is not there: a typo in a path
 * or a name should stop the plan, not pass as an exclusion in a report that exits 0. Discovered and queued lanes
 * were found on the forge, so only listed targets (and a targets_file's) count.
 */
function missingTargets(fleet: ResolvedFleet, lanes: readonly LaneSpec[], exclusions: readonly Exclusion[], file: string): Problem[] {
  if (fleet.file.missing_targets === 'exclude') return [];
  const byLane = new Map(exclusions.map((e) => [e.lane, e]));
  const seen = new Set<number>();
  const problems: Problem[] = [];
  for (const lane of lanes) {
    const e = byLane.get(lane.id);
    if (!e || !MISSING.has(e.reason) || lane.index < 0 || lane.issue || seen.has(lane.index)) continue;
    seen.add(lane.index);
    problems.push({
      file,
      field: `targets[${lane.index}].repo`,
      message: `${lane.repo} is not there (${e.reason}: ${e.detail ?? 'no detail'}): fix the path or name, remove the target, or list it under exclude: with a reason; to run the other targets anyway, set missing_targets: exclude (or pass --allow-missing)`,
    });
  }
  return problems;
}

/**
 * A lane whose fence holds workflow files only can change nothing but files GitHub refuses to take from a credential
 * without the Workflows permission: under such a credential it is excluded, with the reason and the fix, instead of
 * running its directive to have its push refused. A dry run pushes nothing, so it keeps such lanes: their patches show
 * what they would do. A lane with a wider fence runs, and a push GitHub refuses fails it with the same fix.
 */
async function workflowExclusions(forge: Forge, lanes: readonly LaneSpec[], exclusions: readonly Exclusion[], dryRun: boolean): Promise<Exclusion[]> {
  if (dryRun || !forge.workflowWrites) return [];
  const excluded = new Set(exclusions.map((e) => e.lane));
  const fenced = lanes.filter((l) => !excluded.has(l.id) && ownsOnlyWorkflows(l.owns));
  if (!fenced.length) return [];
  const access = await forge.workflowWrites();
  if (!access || access.allowed) return [];
  return fenced.map((l) => ({
    repo: l.repo,
    lane: l.id,
    reason: 'no-workflows-permission',
    detail: `its owns: holds workflow files only (${l.owns.join(', ')}), and GitHub refuses a push that changes one from ${access.credential}, which lacks the Workflows permission: ${access.fix}`,
  }));
}

/** One line on the queue for the plan's notes: how many issues in each state, and what starts. */
function queueNote(board: QueueBoard): string {
  const counts = new Map<string, number>();
  for (const r of board.rows) counts.set(r.state, (counts.get(r.state) ?? 0) + 1);
  const started = board.rows.flatMap((r) => r.started);
  const states = [...counts.entries()].map(([k, v]) => `${v} ${k}`).join(', ') || 'no ready-labelled issue';
  return `issue queue ${board.repo} (${board.label}): ${states}; ${started.length ? `starting ${started.join(', ')}` : 'nothing starts'}`;
}

/**
 * The plan with unchanged lanes left in their waves (their dependents still wait on them, and see them as
 * met checkpoints) but in no shard: on GitHub no matrix leg starts for them, and a wave of nothing but
 * unchanged lanes has no leg at all.
 */
function withoutShardsFor(plan: Plan, unchanged: ReadonlySet<string>, maxParallel: number, sizing: LegSizing): Plan {
  if (!unchanged.size) return plan;
  const specs = new Map(plan.lanes.map((l) => [l.spec.id, l.spec]));
  const waves = plan.waves.map((w) => {
    const { shards, parallel } = shardWave(
      w.index,
      w.lanes.filter((id) => !unchanged.has(id)),
      maxParallel,
      { sizing },
    );
    // A target's strategies stay in one shard here too: its leg compares them (keepGroupsTogether).
    const kept = keepGroupsTogether(shards, specs);
    return { ...w, shards: kept, parallel: Math.min(parallel, kept.length) };
  });
  return { ...plan, waves };
}
