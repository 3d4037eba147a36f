/**
 * The fleet as GitHub Actions jobs: a plan job, wave jobs whose matrix legs
 * each run one shard, and a report job. Jobs share nothing but artifacts:
 * the plan travels as `fleet-plan`, each lane's result as `fleet-lane-<lane>`.
 * Job outputs carry only the small shard lists (they are capped at 1 MB).
 */
import { lstat, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { legPace, writeBudget, writesPerLane, type LegPace, type WriteBudget, type WriteWindow } from '../core/budget.js';
import type { Manifest, LaneRecord } from '../core/model.js';
import type { ResolvedFleet, Problem } from '../core/validate.js';
import type { ArtifactStore, Clock, Executor, Forge, RunJobs, StoredArtifact, Workspace } from '../ports.js';
import { writeJsonAtomic } from '../util/fs.js';
import { mapLimit } from '../util/pool.js';
import { laneDir, runLane, writeLaneResult, type LaneContext } from './lane.js';
import { planStep, type PlanStepOptions } from './plan.js';
import { readLaneResult, reportStep } from './report.js';
import { dependencyBlock } from './run.js';
import { MissingResultExplainer } from './explain.js';

export const PLAN_ARTIFACT = 'fleet-plan';
export const LANE_ARTIFACT_PREFIX = 'fleet-lane-';
export const REPORT_ARTIFACT = 'fleet-report';

/**
 * Every artifact name carries the run attempt that uploaded it
 * (`fleet-lane-core.a2`). GitHub keeps an earlier attempt's artifact beside a
 * re-run's upload of the same name (or refuses the second upload, by some
 * reports), and its ids are not ordered by attempt, so "the latest by id" can
 * be the older one: readers pick by the attempt in the name instead.
 */
export function attemptName(base: string, attempt: number): string {
  return `${base}.a${attempt}`;
}

/** The base name and attempt of an artifact name (attempt 1 for a name without one). */
export function parseAttemptName(name: string): { base: string; attempt: number } {
  const m = /^(.*)\.a(\d+)$/.exec(name);
  return m ? { base: m[1]!, attempt: Number(m[2]) } : { base: name, attempt: 1 };
}

/**
 * Per base name, the artifact of the highest attempt from `since` (earlier
 * attempts' belong to another plan) up to `until`, the attempt reading: no
 * attempt uploads for a later one, so a name from the future is a forgery.
 */
export function latestByAttempt(artifacts: StoredArtifact[], since = 1, until = Infinity): Map<string, StoredArtifact> {
  const out = new Map<string, { a: StoredArtifact; attempt: number }>();
  for (const a of artifacts) {
    const { base, attempt } = parseAttemptName(a.name);
    if (attempt < since || attempt > until) continue;
    const seen = out.get(base);
    if (!seen || attempt > seen.attempt) out.set(base, { a, attempt });
  }
  return new Map([...out].map(([k, v]) => [k, v.a]));
}

export function laneArtifact(lane: string, attempt = 1): string {
  return attemptName(`${LANE_ARTIFACT_PREFIX}${lane}`, attempt);
}

/** What the plan job hands every later job. */
export interface PlanBundle {
  fleet: ResolvedFleet;
  manifest: Manifest;
  /** The run attempt that planned: lane results of earlier attempts belong to an earlier plan ("Re-run all jobs"). */
  attempt?: number;
  /** The fleet's share of the account's write limits (GitHub only): each leg paces its writes to its part of it. */
  budget?: WriteBudget;
}

export interface MatrixPlanInput {
  fleet: ResolvedFleet;
  file: string;
  forge: Forge;
  clock: Clock;
  store: ArtifactStore;
  root: string;
  fleet_id: string;
  /** How many wave jobs the workflow has: a DAG needing more is refused by the planner. */
  waveJobs: number;
  maxParallel?: number;
  dryRun?: boolean;
  discover?: PlanStepOptions['discover'];
  /** The run attempt (GITHUB_RUN_ATTEMPT); default 1. */
  attempt?: number;
  /** The account's secondary write limits to divide among the legs (none: no write budget, e.g. a local forge). */
  writeLimits?: WriteWindow[];
}

export interface MatrixPlanOutputs {
  fleet_id: string;
  wave_count: number;
  /** Shard ids per wave, index 0 = wave 1; waves past wave_count are empty lists. */
  waves: string[][];
  max_parallel: number;
  lane_count: number;
  /**
   * The plan artifact's digest. Later jobs take it from the plan job's outputs
   * (which nothing but the plan job can write) and refuse any other plan: what
   * runs is what the approver saw, whatever a directive uploads.
   */
  plan_digest: string;
}

export async function matrixPlan(
  input: MatrixPlanInput,
): Promise<{ ok: true; manifest: Manifest; outputs: MatrixPlanOutputs; budget?: WriteBudget } | { ok: false; problems: Problem[] }> {
  const fleet: ResolvedFleet = {
    ...input.fleet,
    file: { ...input.fleet.file, max_waves: Math.min(input.fleet.file.max_waves, input.waveJobs) },
  };
  const planned = await planStep(fleet, input.forge, input.clock, {
    file: input.file,
    fleet_id: input.fleet_id,
    maxParallel: input.maxParallel,
    dryRun: input.dryRun,
    discover: input.discover,
  });
  if (!planned.ok) {
    return {
      ok: false,
      problems: planned.problems.map((p) =>
        p.field === 'max_waves'
          ? { ...p, message: `${p.message} (this workflow has ${input.waveJobs} wave jobs; the reusable workflow cannot loop)` }
          : p,
      ),
    };
  }
  const bundleDir = join(input.root, 'plan');
  const attempt = input.attempt ?? 1;
  const budget = input.writeLimits?.length ? fleetBudget(planned.manifest, planned.fleet, input.writeLimits) : undefined;
  // In the bundle, so the plan digest covers it: no leg can give itself a larger share.
  const bundle: PlanBundle = { fleet: planned.fleet, manifest: planned.manifest, attempt, ...(budget ? { budget } : {}) };
  await writeJsonAtomic(join(bundleDir, 'fleet.json'), bundle);
  const uploaded = await input.store.upload(attemptName(PLAN_ARTIFACT, attempt), [join(bundleDir, 'fleet.json')], bundleDir);
  const waves = Array.from({ length: input.waveJobs }, (_, i) => planned.plan.waves[i]?.shards.map((s) => s.id) ?? []);
  return {
    ok: true,
    manifest: planned.manifest,
    ...(budget ? { budget } : {}),
    outputs: {
      fleet_id: planned.manifest.fleet_id,
      wave_count: planned.plan.waves.length,
      waves,
      max_parallel: planned.manifest.max_parallel,
      lane_count: planned.plan.lanes.length,
      plan_digest: uploaded.digest ?? '',
    },
  };
}

/** The account's write limits divided among the legs that run at once: the workflow's max-parallel, or the widest wave if narrower. */
function fleetBudget(manifest: Manifest, fleet: ResolvedFleet, limits: WriteWindow[]): WriteBudget {
  const widest = Math.max(1, ...manifest.waves.map((w) => w.shards.length));
  return writeBudget({
    limits,
    legsAtOnce: Math.min(manifest.max_parallel, widest),
    lanes: manifest.waves.reduce((n, w) => n + w.lanes.length, 0),
    writesPerLane: writesPerLane(fleet.file, manifest.dry_run),
  });
}

/** A leg's write slots: its shard's position in its wave picks its phase, so legs that start together never write together. */
export function legPaceOf(bundle: PlanBundle, shard: string): LegPace | undefined {
  if (!bundle.budget) return undefined;
  for (const wave of bundle.manifest.waves) {
    const index = wave.shards.findIndex((s) => s.id === shard);
    if (index >= 0) return legPace(bundle.budget, index);
  }
  return undefined;
}

export interface PlanPin {
  /** The plan job's `plan-digest` output; without it (local runs, tests) the latest plan is read. */
  digest?: string;
  /** The attempt reading: a plan named for a later attempt is a forgery. */
  attempt?: number;
}

const bareDigest = (d: string | undefined) => (d ?? '').replace(/^sha256:/, '');

/** The plan of the latest attempt that planned (a partial re-run's jobs read the first attempt's plan), or the pinned one. */
export async function loadPlanBundle(store: ArtifactStore, root: string, pin: PlanPin = {}): Promise<PlanBundle> {
  const plans = async (complete: boolean) =>
    (await store.list(PLAN_ARTIFACT, { complete })).filter((a) => parseAttemptName(a.name).base === PLAN_ARTIFACT && parseAttemptName(a.name).attempt <= (pin.attempt ?? Infinity));
  const pick = (list: StoredArtifact[]) => (pin.digest ? list.find((a) => bareDigest(a.digest) === bareDigest(pin.digest)) : latestByAttempt(list).get(PLAN_ARTIFACT));
  const artifact = pick(await plans(false)) ?? pick(await plans(true));
  if (!artifact && pin.digest) {
    throw new Error(`no ${PLAN_ARTIFACT} artifact in this run has the digest the plan job gave (${pin.digest}): refusing to run a plan other than the one planned (and approved)`);
  }
  if (!artifact) throw new Error(`no ${PLAN_ARTIFACT} artifact in this run: the plan job must run first`);
  const dir = join(root, 'plan');
  await store.download(pin.digest ? { ...artifact, digest: pin.digest } : artifact, dir);
  const bundle = JSON.parse(await readFile(join(dir, 'fleet.json'), 'utf8')) as PlanBundle;
  return { ...bundle, attempt: bundle.attempt ?? parseAttemptName(artifact.name).attempt };
}

/**
 * Download the latest results of the given lanes (those that have one) into
 * the workspace. The job's own listing comes first; when a wanted lane is not
 * in it (an earlier attempt's upload that this attempt does not list), the
 * complete listing of the run is read once.
 */
async function fetchLaneResults(store: ArtifactStore, root: string, bundle: PlanBundle, lanes: Iterable<string>, attempt: number): Promise<Map<string, LaneRecord>> {
  const wanted = new Set(lanes);
  const since = bundle.attempt ?? 1;
  const pick = async (all: boolean) => {
    const found = new Map<string, StoredArtifact>();
    for (const [base, artifact] of latestByAttempt(await store.list(LANE_ARTIFACT_PREFIX, { complete: all }), since, attempt)) {
      const lane = base.slice(LANE_ARTIFACT_PREFIX.length);
      if (base.startsWith(LANE_ARTIFACT_PREFIX) && wanted.has(lane)) found.set(lane, artifact);
    }
    return found;
  };
  let found = await pick(false);
  // A job's own listing shows its own attempt's uploads; only after a re-run can a result sit where it does not look.
  if (attempt > since && found.size < wanted.size) found = await pick(true);
  const out = new Map<string, LaneRecord>();
  await mapLimit([...found], 8, async ([lane, artifact]) => {
    // Each artifact unpacks on its own, then its lane folder moves into place: parallel downloads never share a folder.
    const staging = join(root, '.artifacts', artifact.name);
    await store.download(artifact, staging);
    await rm(laneDir(root, lane), { recursive: true, force: true });
    await mkdir(dirname(laneDir(root, lane)), { recursive: true });
    await rename(laneDir(staging, lane), laneDir(root, lane));
    await rm(staging, { recursive: true, force: true });
    const read = await readLaneResult(root, lane, bundle.manifest.fleet_id);
    if (read.ok) out.set(lane, read.record);
  });
  return out;
}

/**
 * The files of a lane's artifact: exactly the ones Fleet wrote for this lane,
 * named from its record (its result, its patch, the log of each attempt that
 * ran and, for an agent lane, its routing and prompts), and only those that
 * are regular files directly in the lane's folder. The folder also holds the
 * working copy (the target's source and `.git`) and whatever the directive
 * wrote there (FLEET_LANE_DIR): on GitHub anyone who can read the fleet's
 * repository can download its artifacts, so nothing is picked by listing the
 * folder, and a link (to /proc/self/environ, say), which the artifact client
 * would follow, never goes.
 */
async function laneFiles(dir: string, rec: LaneRecord, agent: boolean): Promise<string[]> {
  const names = new Set(['result.json']);
  const attempts = rec.attempts.map((a) => a.n);
  for (const a of rec.attempts) if (a.log) names.add(basename(a.log));
  if (rec.evidence.patch) names.add(basename(rec.evidence.patch));
  if (agent) {
    names.add('agent-routing.json');
    for (let n = 1; n <= Math.max(0, ...attempts); n++) names.add(`prompt-${n}.md`);
  }
  const out: string[] = [];
  for (const name of [...names].sort()) {
    // Fleet's own names only: a record is data, and data never names a path outside the folder.
    if (!LANE_FILES.test(name)) continue;
    const file = join(dir, name);
    const st = await lstat(file).catch(() => null);
    if (st?.isFile()) out.push(file);
  }
  return out;
}

/** The names Fleet gives the files it writes into a lane's folder. */
const LANE_FILES = /^(result\.json|patch\.diff|agent-routing\.json|attempt-\d+\.log|prompt-\d+\.md)$/;

export interface MatrixShardInput {
  shard: string;
  store: ArtifactStore;
  root: string;
  forge: Forge;
  workspace: Workspace;
  exec: Executor;
  clock: Clock;
  env: Record<string, string>;
  dryRun?: boolean;
  log?(line: string): void;
  /** The plan, when the caller already downloaded it (to set up the forge it names). */
  bundle?: PlanBundle;
  /** The run attempt (GITHUB_RUN_ATTEMPT) this leg runs in; default 1. */
  attempt?: number;
}

/** One matrix leg: run the lanes of one shard, one after another, each leaving its own artifact. */
export async function matrixShard(input: MatrixShardInput): Promise<LaneRecord[]> {
  const bundle = input.bundle ?? (await loadPlanBundle(input.store, input.root));
  const { fleet, manifest } = bundle;
  const shard = manifest.waves.flatMap((w) => w.shards).find((s) => s.id === input.shard);
  if (!shard) throw new Error(`shard ${input.shard} is not in the plan of ${manifest.fleet_id}`);
  const specs = new Map(fleet.lanes.map((l) => [l.id, l]));
  const planned = new Map(manifest.lanes.map((l) => [l.lane, l]));
  const deps = new Set(shard.lanes.flatMap((id) => specs.get(id)?.depends_on ?? []));
  // This shard's own lanes may have results from an earlier attempt of the run ("Re-run failed jobs"): completed ones are kept.
  const records = await fetchLaneResults(input.store, input.root, bundle, [...deps, ...shard.lanes], input.attempt ?? 1);
  const ctx: LaneContext = {
    fleet_id: manifest.fleet_id,
    file: fleet.file,
    forge: input.forge,
    workspace: input.workspace,
    exec: input.exec,
    clock: input.clock,
    root: input.root,
    dryRun: input.dryRun ?? manifest.dry_run,
    env: input.env,
    onUpdate: (rec, detail) => input.log?.(`${rec.lane}: ${rec.phase} (${detail})`),
  };
  const out: LaneRecord[] = [];
  for (const id of shard.lanes) {
    const spec = specs.get(id)!;
    const start = planned.get(id)!;
    const earlier = records.get(id);
    if (earlier?.status === 'completed') {
      input.log?.(`${id}: completed in an earlier attempt of this run; kept`);
      out.push(earlier);
      continue;
    }
    records.delete(id);
    const blocked = await dependencyBlock(spec, records, specs, input.forge, manifest.checkpoint, ctx.dryRun);
    let rec: LaneRecord;
    if (blocked) {
      const now = input.clock.now().toISOString();
      rec = { ...start, status: 'skipped', phase: 'skipped', updated_at: now, ended_at: now, error: blocked };
      await writeLaneResult(input.root, manifest.fleet_id, rec);
      input.log?.(`${id}: skipped (${blocked.message})`);
    } else {
      rec = await runLane(ctx, spec, start);
    }
    records.set(id, rec);
    out.push(rec);
    const agent = Boolean(fleet.file.agent) && spec.run === undefined;
    await input.store.upload(laneArtifact(id, input.attempt ?? 1), await laneFiles(laneDir(input.root, id), rec, agent), input.root);
  }
  return out;
}

export interface MatrixReportInput {
  store: ArtifactStore;
  root: string;
  forge: Forge;
  clock: Clock;
  jobs?: RunJobs;
  bundle?: PlanBundle;
  /** The run attempt (GITHUB_RUN_ATTEMPT) the report runs in; default 1. */
  attempt?: number;
}

/**
 * The report job: every lane's artifact is downloaded and checked against the
 * forge; a lane without one is explained from the run's jobs.
 */
export async function matrixReport(input: MatrixReportInput): Promise<Manifest> {
  const bundle = input.bundle ?? (await loadPlanBundle(input.store, input.root));
  const { fleet, manifest } = bundle;
  await fetchLaneResults(input.store, input.root, bundle, manifest.lanes.map((l) => l.lane), input.attempt ?? 1);
  const shardOf = new Map(manifest.waves.flatMap((w) => w.shards.flatMap((s) => s.lanes.map((l) => [l, s.id] as const))));
  const explainer = input.jobs ? new MissingResultExplainer(input.jobs) : undefined;
  const final = await reportStep({
    root: input.root,
    manifest,
    lanes: new Map(fleet.lanes.map((l) => [l.id, l])),
    forge: input.forge,
    clock: input.clock,
    explainMissing: explainer ? (lane) => explainer.explain(shardOf.get(lane.lane)) : undefined,
  });
  return final;
}
