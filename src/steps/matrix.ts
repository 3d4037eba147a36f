/**
 * The fleet as GitHub Actions jobs: a plan job, wave jobs whose matrix legs
 * each run one shard, and a report job. Jobs share nothing but artifacts:
 * the plan travels as `fleet-plan`, each lane's result as `fleet-lane-<lane>`.
 * Job outputs carry only the small shard lists (they are capped at 1 MB).
 */
import { lstat, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { legPace, predecessorIndex, publishWrites, writeBudget, writesPerLane, type LegPace, type WriteBudget, type WriteWindow } from '../core/budget.js';
import { Manifest, type LaneRecord, type Shard } from '../core/model.js';
import type { ResolvedFleet, Problem } from '../core/validate.js';
import type { LaneSpec } from '../core/model.js';
import type { ArtifactStore, Clock, Executor, Forge, RunJob, RunJobs, StoredArtifact, Workspace } from '../ports.js';
import { readUntrustedJson, writeJsonAtomic } from '../util/fs.js';
import { RelayFile, type DiscoveryEntry } from '../core/relay.js';
import { mapLimit } from '../util/pool.js';
import { laneDir, runLane, writeLaneResult, type LaneContext } from './lane/index.js';
import { planStep, type PlanStepOptions } from './plan.js';
import { readLaneResult, reportStep } from './report.js';
import { settleStrategies } from './strategies.js';
import { ceilingReached, dependencyBlock, discoveryEntries } from './run.js';
import { money } from '../core/spend.js';
import { MissingResultExplainer } from './explain.js';
import { integratedBase } from './integrate.js';
import { applyIntegration, integrationMissing, readIntegration } from './matrix-integrate.js';

export const PLAN_ARTIFACT = 'fleet-plan';
export const LANE_ARTIFACT_PREFIX = 'fleet-lane-';
/** A lane that left discoveries also uploads them alone, so a later wave's leg reads the relay without every lane's artifact. */
export const RELAY_ARTIFACT_PREFIX = 'fleet-relay-';
/**
 * A lane whose agent runs reported a cost uploads an empty-ish artifact whose name carries it
 * (`fleet-spent-<lane>.u<micro-dollars>.a<attempt>`): one listing then tells a later leg what the fleet spent, for
 * its cost ceiling, without a download.
 */
export const SPENT_ARTIFACT_PREFIX = 'fleet-spent-';
/** The most relay files one leg downloads (the latest waves first): the relay is cut to a few thousand characters anyway. */
const MAX_RELAY_FILES = 200;
export const REPORT_ARTIFACT = 'fleet-report';
/** What a run hands the run that continues its fleet: the manifest as it stands and the next wave (see matrixContinue). */
export const CHAIN_ARTIFACT = 'fleet-chain';

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
  /**
   * The first wave this run's wave jobs run (0 unless the fleet continues an earlier run's); wave job k runs wave
   * first_wave + k - 1. Lanes of earlier waves are final in `manifest`, checked by the run that ran them.
   */
  first_wave?: number;
  /** How many wave jobs the workflow has. */
  wave_jobs?: number;
}

/** This workflow run, for the manifest's list of runs. */
export interface ThisRun {
  id: number;
  url: string | null;
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
  queue?: PlanStepOptions['queue'];
  /** The run attempt (GITHUB_RUN_ATTEMPT); default 1. */
  attempt?: number;
  /** An incremental sweep: the previous sweep's manifest (restored from the Actions cache). */
  since?: Manifest;
  run?: ThisRun;
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
  /**
   * How many of the wave jobs an integrate job follows (integrate: in the fleet file, not a dry run): every wave job
   * with a wave, even one whose lanes are all unchanged (no shard), so each wave's integration leaves its record.
   */
  integrate_jobs: number;
}

export async function matrixPlan(
  input: MatrixPlanInput,
): Promise<{ ok: true; manifest: Manifest; outputs: MatrixPlanOutputs; notes: string[]; budget?: WriteBudget } | { ok: false; problems: Problem[] }> {
  // A DAG deeper than the workflow's wave jobs continues in new runs of the workflow (matrixContinue): max_waves bounds it.
  const fleet = input.fleet;
  const planned = await planStep(fleet, input.forge, input.clock, {
    file: input.file,
    fleet_id: input.fleet_id,
    maxParallel: input.maxParallel,
    dryRun: input.dryRun,
    discover: input.discover,
    queue: input.queue,
    since: input.since,
  });
  if (!planned.ok) {
    return {
      ok: false,
      problems: planned.problems.map((p) =>
        p.field === 'max_waves'
          ? {
              ...p,
              message: `${p.message} (this workflow has ${input.waveJobs} wave jobs: a deeper DAG continues in a new run of it every ${input.waveJobs} waves)`,
            }
          : p,
      ),
    };
  }
  const budget = input.writeLimits?.length ? fleetBudget(planned.manifest, planned.fleet, input.writeLimits) : undefined;
  const manifest = withRun(planned.manifest, input.run, 0, input.waveJobs);
  // The budget is in the bundle, so the plan digest covers it: no leg can give itself a larger share.
  const bundle: PlanBundle = {
    fleet: planned.fleet,
    manifest,
    attempt: input.attempt ?? 1,
    first_wave: 0,
    wave_jobs: input.waveJobs,
    ...(budget ? { budget } : {}),
  };
  return {
    ok: true,
    manifest,
    notes: planned.notes,
    ...(budget ? { budget } : {}),
    outputs: await publishPlan(input.store, input.root, bundle, planned.plan.lanes.length),
  };
}

/** Adds this run to the manifest's runs, with the waves its wave jobs cover. */
function withRun(m: Manifest, run: ThisRun | undefined, first: number, waveJobs: number): Manifest {
  if (!run) return m;
  const last = Math.min(m.waves.length, first + waveJobs) - 1;
  return { ...m, runs: [...(m.runs ?? []), { run_id: run.id, url: run.url, first_wave: first, last_wave: Math.max(first, last) }] };
}

/** Uploads the plan bundle and gives the plan job's outputs: the shards of the waves this run's wave jobs run. */
async function publishPlan(store: ArtifactStore, root: string, bundle: PlanBundle, laneCount: number): Promise<MatrixPlanOutputs> {
  const bundleDir = join(root, 'plan');
  await writeJsonAtomic(join(bundleDir, 'fleet.json'), bundle);
  const uploaded = await store.upload(attemptName(PLAN_ARTIFACT, bundle.attempt ?? 1), [join(bundleDir, 'fleet.json')], bundleDir);
  const first = bundle.first_wave ?? 0;
  const jobs = bundle.wave_jobs ?? bundle.manifest.waves.length;
  const waves = Array.from({ length: jobs }, (_, i) => bundle.manifest.waves[first + i]?.shards.map((s) => s.id) ?? []);
  return {
    fleet_id: bundle.manifest.fleet_id,
    wave_count: bundle.manifest.waves.length,
    waves,
    max_parallel: bundle.manifest.max_parallel,
    lane_count: laneCount,
    plan_digest: uploaded.digest ?? '',
    integrate_jobs: bundle.fleet.file.integrate && !bundle.manifest.dry_run ? Math.max(0, Math.min(jobs, bundle.manifest.waves.length - first)) : 0,
  };
}

/** Whether waves remain after this run's wave jobs: the fleet continues in a new run. */
export function continuesAfter(bundle: PlanBundle): number | null {
  const next = (bundle.first_wave ?? 0) + (bundle.wave_jobs ?? Infinity);
  return next < bundle.manifest.waves.length ? next : null;
}

/** What a run leaves for the run that continues its fleet. */
export interface ChainState {
  fleet: ResolvedFleet;
  /** The manifest with every lane of the waves run so far final (checked against the forge by the run that ran it). */
  manifest: Manifest;
  next_wave: number;
  /** The write budget the first run planned: later runs' legs pace to the same shares. */
  budget?: WriteBudget;
}

/** The report job of a run whose fleet goes on: the state the next run starts from, as an artifact of this run. */
export async function publishChain(store: ArtifactStore, root: string, state: ChainState, attempt: number): Promise<void> {
  const dir = join(root, 'chain');
  await writeJsonAtomic(join(dir, 'chain.json'), state);
  await store.upload(attemptName(CHAIN_ARTIFACT, attempt), [join(dir, 'chain.json')], dir);
}

export interface MatrixContinueInput {
  /** The artifacts of the run this one continues (read through the REST API). */
  previous: ArtifactStore;
  store: ArtifactStore;
  root: string;
  waveJobs: number;
  attempt?: number;
  run?: ThisRun;
}

/**
 * The plan job of a run that continues a fleet: no planning again (the plan was made, and approved, in the first
 * run), only the state the previous run's report job left, and the next waves for this run's wave jobs.
 */
export async function matrixContinue(input: MatrixContinueInput): Promise<{ manifest: Manifest; outputs: MatrixPlanOutputs }> {
  const artifact = latestByAttempt(await input.previous.list(CHAIN_ARTIFACT, { complete: true })).get(CHAIN_ARTIFACT);
  if (!artifact) throw new Error(`the run to continue left no ${CHAIN_ARTIFACT} artifact: it did not reach its report job, or its fleet had no waves left`);
  const dir = join(input.root, 'chain-in');
  await input.previous.download(artifact, dir);
  const state = JSON.parse(await readFile(join(dir, 'chain.json'), 'utf8')) as ChainState;
  // The manifest is checked like any manifest Fleet reads; the fleet, by the run checks in continuePlan (main.ts).
  const parsed = Manifest.safeParse(state.manifest);
  if (!parsed.success || !Number.isInteger(state.next_wave) || state.next_wave < 1 || state.next_wave >= parsed.data.waves.length) {
    throw new Error(
      `the ${CHAIN_ARTIFACT} artifact of the run to continue is not a fleet's state: ${parsed.success ? `next_wave ${String(state.next_wave)}` : parsed.error.issues[0]?.message}`,
    );
  }
  const manifest = withRun(state.manifest, input.run, state.next_wave, input.waveJobs);
  const bundle: PlanBundle = {
    fleet: state.fleet,
    manifest,
    attempt: input.attempt ?? 1,
    first_wave: state.next_wave,
    wave_jobs: input.waveJobs,
    ...(state.budget ? { budget: state.budget } : {}),
  };
  return { manifest, outputs: await publishPlan(input.store, input.root, bundle, state.fleet.lanes.length) };
}

/** The account's write limits divided among the legs that run at once: the workflow's max-parallel, or the widest wave if narrower. */
function fleetBudget(manifest: Manifest, fleet: ResolvedFleet, limits: WriteWindow[]): WriteBudget {
  const widest = Math.max(1, ...manifest.waves.map((w) => w.shards.length));
  return writeBudget({
    limits,
    legsAtOnce: Math.min(manifest.max_parallel, widest),
    lanes: manifest.waves.reduce((n, w) => n + w.lanes.length, 0),
    writesPerLane: writesPerLane(fleet.file, manifest.dry_run),
    burst: publishWrites(fleet.file, manifest.dry_run),
  });
}

/** A leg's write slots: its shard's position in its wave picks its phase, so legs that start together never write together. */
export function legPaceOf(bundle: PlanBundle, shard: string): LegPace | undefined {
  const at = shardPosition(bundle, shard);
  return bundle.budget && at ? legPace(bundle.budget, at.index) : undefined;
}

/** A shard's wave and its position in it. */
function shardPosition(bundle: PlanBundle, shard: string): { shards: Shard[]; index: number } | undefined {
  for (const wave of bundle.manifest.waves) {
    const index = wave.shards.findIndex((s) => s.id === shard);
    if (index >= 0) return { shards: wave.shards, index };
  }
  return undefined;
}

/** The shard whose write slots `shard` takes over once it has finished (see src/core/budget.ts), if any. */
export function predecessorOf(bundle: PlanBundle, shard: string): Shard | undefined {
  const at = shardPosition(bundle, shard);
  const before = bundle.budget && at ? predecessorIndex(bundle.budget, at.index) : undefined;
  return before === undefined ? undefined : at!.shards[before];
}

/** How often a waiting leg lists the run's artifacts (the results service, not the account's REST limits). */
export const PREDECESSOR_POLL_MS = 5_000;
/** When a waiting leg first reads the run's jobs (REST, the job's GITHUB_TOKEN); each later read waits twice as long. */
export const PREDECESSOR_JOBS_AFTER_MS = 120_000;

export interface PredecessorWait {
  store: ArtifactStore;
  root: string;
  bundle: PlanBundle;
  shard: string;
  attempt: number;
  /** The run's jobs: a predecessor whose job has ended without its artifacts (a lost runner, a cancel) no longer holds the slots. */
  jobs?: RunJobs;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  log?: (line: string) => void;
  pollMs?: number;
  jobsAfterMs?: number;
}

/**
 * Resolves when the shard before this leg in its write slots has finished: every lane of it has left its artifact in
 * this attempt (the job's own artifact listing: no REST calls), or its job has ended. A listing that fails is tried
 * again at the next poll: giving up would put two legs in the same slots.
 */
export async function waitForPredecessor(w: PredecessorWait): Promise<void> {
  const before = predecessorOf(w.bundle, w.shard);
  if (!before) return;
  const now = w.now ?? Date.now;
  const sleep = w.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let pending = await lanesToAwait(w, before);
  const started = now();
  let jobsAt = w.jobsAfterMs ?? PREDECESSOR_JOBS_AFTER_MS;
  let slept = false;
  while (pending.length) {
    try {
      const names = new Set((await w.store.list(LANE_ARTIFACT_PREFIX)).map((a) => a.name));
      pending = pending.filter((l) => !names.has(laneArtifact(l, w.attempt)));
    } catch (err) {
      w.log?.(`Write budget: listing the run's artifacts failed (${(err as Error).message}); trying again`);
    }
    if (!pending.length) break;
    const waited = now() - started;
    if (w.jobs && waited >= jobsAt) {
      // Back-off: legs that wait for hours (a predecessor running agent lanes) read the jobs a handful of times, not every minute.
      jobsAt = waited * 2;
      if (await predecessorJobEnded(w.jobs, before.id, pending, w.log)) break;
    }
    if (!slept) w.log?.(`Write budget: waiting for shard ${before.id}, which holds these write slots until it finishes (${pending.length} lane(s) to go)`);
    slept = true;
    await sleep(w.pollMs ?? PREDECESSOR_POLL_MS);
  }
  if (slept) w.log?.(`Write budget: shard ${before.id} finished; this leg's writes start (waited ${Math.round((now() - started) / 1000)} s)`);
}

/**
 * The predecessor's lanes to wait for. In the attempt that planned, all of them. After "Re-run failed jobs" only a
 * shard that failed runs again (a lane of it failed, or it left no result), and it keeps its completed lanes
 * without writing: only its other lanes are waited for.
 */
async function lanesToAwait(w: PredecessorWait, before: Shard): Promise<string[]> {
  if (w.attempt <= (w.bundle.attempt ?? 1)) return before.lanes;
  let earlier: Map<string, LaneRecord>;
  try {
    earlier = await fetchLaneResults(w.store, join(w.root, '.predecessor'), w.bundle, before.lanes, w.attempt - 1);
  } catch (err) {
    w.log?.(`Write budget: the earlier results of shard ${before.id} could not be read (${(err as Error).message}); waiting for all its lanes`);
    return before.lanes;
  }
  const reruns = before.lanes.some((l) => !earlier.has(l) || earlier.get(l)!.status === 'failed');
  return reruns ? before.lanes.filter((l) => earlier.get(l)?.status !== 'completed') : [];
}

/** Whether the run's jobs show the predecessor's job ended; a failed read or a job not found says no, and why. */
async function predecessorJobEnded(jobs: RunJobs, shard: string, pending: string[], log?: (line: string) => void): Promise<boolean> {
  let list: RunJob[];
  try {
    list = await jobs.list();
  } catch (err) {
    log?.(`Write budget: reading the run's jobs failed (${(err as Error).message}); waiting for shard ${shard}'s artifacts`);
    return false;
  }
  const job = list.find((j) => j.name.endsWith(`(${shard})`));
  if (!job) {
    log?.(`Write budget: no job of this run is named for shard ${shard}; waiting for its artifacts`);
    return false;
  }
  if (job.status !== 'completed') return false;
  log?.(`Write budget: shard ${shard} ended (${job.conclusion ?? 'no conclusion'}) without the artifacts of ${pending.join(', ')}; its slots are free`);
  return true;
}

export interface PlanPin {
  /** The plan job's `plan-digest` output; without it (local runs, tests) the latest plan is read. */
  digest?: string;
  /** The attempt reading: a plan named for a later attempt is a forgery. */
  attempt?: number;
}

export const bareDigest = (d: string | undefined) => (d ?? '').replace(/^sha256:/, '');

/** The plan of the latest attempt that planned (a partial re-run's jobs read the first attempt's plan), or the pinned one. */
export async function loadPlanBundle(store: ArtifactStore, root: string, pin: PlanPin = {}): Promise<PlanBundle> {
  const plans = async (complete: boolean) =>
    (await store.list(PLAN_ARTIFACT, { complete })).filter(
      (a) => parseAttemptName(a.name).base === PLAN_ARTIFACT && parseAttemptName(a.name).attempt <= (pin.attempt ?? Infinity),
    );
  const pick = (list: StoredArtifact[]) =>
    pin.digest ? list.find((a) => bareDigest(a.digest) === bareDigest(pin.digest)) : latestByAttempt(list).get(PLAN_ARTIFACT);
  const artifact = pick(await plans(false)) ?? pick(await plans(true));
  if (!artifact && pin.digest) {
    throw new Error(
      `no ${PLAN_ARTIFACT} artifact in this run has the digest the plan job gave (${pin.digest}): refusing to run a plan other than the one planned (and approved)`,
    );
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
export async function fetchLaneResults(
  store: ArtifactStore,
  root: string,
  bundle: PlanBundle,
  lanes: Iterable<string>,
  attempt: number,
): Promise<Map<string, LaneRecord>> {
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
    // The review's agent runs: their logs (redacted as they were written), not their raw answers; only from a review
    // folder that is a folder (a link a directive left there is not followed).
    const review = join(dir, 'review');
    if (rec.review && (await lstat(review).catch(() => null))?.isDirectory())
      for (const name of await readdir(review).catch(() => [])) names.add(`review/${name}`);
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
const LANE_FILES = /^(result\.json|patch\.diff|agent-routing\.json|attempt-\d+\.log|prompt-\d+\.md|review\/a\d+-r\d+-[a-z0-9._-]+\.log)$/;

export interface MatrixShardInput {
  shard: string;
  store: ArtifactStore;
  root: string;
  forge: Forge;
  workspace: Workspace;
  exec: Executor;
  clock: Clock;
  env: Record<string, string>;
  /** For agent directives only (see LaneContext.agentEnv). */
  agentEnv?: Record<string, string>;
  /** See LaneContext.neverInChange. */
  neverInChange?: readonly string[];
  dryRun?: boolean;
  log?(line: string): void;
  /** The plan, when the caller already downloaded it (to set up the forge it names). */
  bundle?: PlanBundle;
  /** The run attempt (GITHUB_RUN_ATTEMPT) this leg runs in; default 1. */
  attempt?: number;
  /**
   * The digests of the integration records this job may read (the integrate jobs' outputs, as the plan's digest
   * pins the plan); undefined reads the latest by name (local runs, tests).
   */
  integrationPins?: readonly string[];
}

/** What a job of the fleet hands its lanes (and its integration): the plan's fleet, this job's adapters and log. */
export function legContext(input: Omit<MatrixShardInput, 'shard' | 'store'>, bundle: PlanBundle): LaneContext {
  return {
    fleet_id: bundle.manifest.fleet_id,
    file: bundle.fleet.file,
    forge: input.forge,
    workspace: input.workspace,
    exec: input.exec,
    clock: input.clock,
    root: input.root,
    dryRun: input.dryRun ?? bundle.manifest.dry_run,
    env: input.env,
    agentEnv: input.agentEnv,
    neverInChange: input.neverInChange,
    onUpdate: (rec, detail) => input.log?.(`${rec.lane}: ${rec.phase} (${detail})`),
  };
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
  // An unchanged dependency left no artifact (it did not run): its record is in the plan, and it counts as a met checkpoint.
  for (const id of deps) if (planned.get(id)?.status === 'unchanged') records.set(id, planned.get(id)!);
  // Dependencies an earlier run of the chain ran are final in the plan's manifest (that run checked them against the forge).
  for (const l of manifest.lanes) if (!records.has(l.lane) && inEarlierRun(bundle, l)) records.set(l.lane, l);
  const ctx = legContext(input, bundle);
  // With integrate:, the lanes of a later wave start from the integration of the waves before it, and a dependency
  // held out of it blocks them, as in the local runner.
  const integration =
    fleet.file.integrate && !ctx.dryRun && shard.wave > 0
      ? await readIntegration(input.store, input.root, bundle, shard.wave, input.attempt ?? 1, input.integrationPins)
      : undefined;
  const noIntegration = integration && integrationMissing(integration, shard.wave);
  if (noIntegration) input.log?.(`Integration: ${noIntegration}`);
  for (const [id, outcome] of Object.entries(integration?.state.lanes ?? {}))
    if (records.has(id)) records.set(id, { ...records.get(id)!, integration: outcome });
  const ceiling = fleet.file.budget?.fleet?.cost_usd;
  if (ceiling !== undefined) {
    ctx.fleetSpend = { spent: await fleetSpent(input.store, bundle, input.attempt ?? 1) };
    input.log?.(`Budget: the fleet has spent $${money(ctx.fleetSpend.spent)} of its $${money(ceiling)} ceiling before this leg`);
  }
  if (fleet.file.relay !== false && shard.wave > 0) {
    const relay = await fetchRelay(input.store, input.root, bundle, shard.wave, input.attempt ?? 1).catch((err: Error) => {
      // The relay helps a lane; it never fails one.
      input.log?.(`Relay: the discoveries of earlier waves could not be read (${err.message}); the lanes run without them`);
      return [];
    });
    ctx.relayEntries = () => relay;
  }
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
    const base = integration && integratedBase(integration.state.records, spec.repo);
    const laneSpec = base ? { ...spec, base } : spec;
    const blocked = noIntegration
      ? { class: 'checkpoint-unmet' as const, message: noIntegration }
      : await dependencyBlock(laneSpec, records, specs, input.forge, manifest.checkpoint, ctx.dryRun);
    let rec: LaneRecord;
    if (!blocked && ceiling !== undefined && ctx.fleetSpend!.spent >= ceiling) {
      rec = ceilingReached(start, ceiling, ctx.fleetSpend!.spent, input.clock.now().toISOString());
      await writeLaneResult(input.root, manifest.fleet_id, rec);
      input.log?.(`${id}: skipped (${rec.error!.message})`);
    } else if (blocked) {
      const now = input.clock.now().toISOString();
      rec = { ...start, status: 'skipped', phase: 'skipped', updated_at: now, ended_at: now, error: blocked };
      await writeLaneResult(input.root, manifest.fleet_id, rec);
      input.log?.(`${id}: skipped (${blocked.message})`);
    } else {
      rec = await runLane(ctx, laneSpec, start);
    }
    records.set(id, rec);
    out.push(rec);
    // A strategy's artifact waits for its group's pick (an artifact name is written once per attempt).
    if (!spec.strategy) await uploadLane(input, fleet, spec, rec);
  }
  const settled = await settleStrategies(ctx, shard.lanes, specs, records);
  for (const rec of settled) {
    out[out.findIndex((r) => r.lane === rec.lane)] = rec;
    await uploadLane(input, fleet, specs.get(rec.lane)!, rec);
  }
  return out;
}

/** A lane's artifact, and beside it what later legs read without downloading it: its spending and its discoveries. */
async function uploadLane(input: MatrixShardInput, fleet: ResolvedFleet, spec: LaneSpec, rec: LaneRecord): Promise<void> {
  const id = spec.id;
  const agent = Boolean(fleet.file.agent) && spec.run === undefined;
  await input.store.upload(laneArtifact(id, input.attempt ?? 1), await laneFiles(laneDir(input.root, id), rec, agent), input.root);
  if (rec.usage?.cost_usd) {
    const file = join(input.root, 'spent', `${id}.json`);
    await writeJsonAtomic(file, rec.usage);
    await input.store.upload(attemptName(`${SPENT_ARTIFACT_PREFIX}${id}.u${Math.round(rec.usage.cost_usd * 1e6)}`, input.attempt ?? 1), [file], input.root);
  }
  if (rec.discoveries?.length) {
    const file = join(input.root, 'relay', `${id}.json`);
    await writeJsonAtomic(file, { lane: id, discoveries: rec.discoveries } satisfies RelayFile);
    await input.store.upload(attemptName(`${RELAY_ARTIFACT_PREFIX}${id}`, input.attempt ?? 1), [file], input.root);
  }
}

/**
 * The discoveries lanes of waves before `wave` left: their relay artifacts of this run (the latest attempt of each),
 * and for lanes an earlier run of the chain ran, their records in the plan. The wave and repository come from the
 * plan, never from the file: a relay file says only what was found.
 */
async function fetchRelay(store: ArtifactStore, root: string, bundle: PlanBundle, wave: number, attempt: number): Promise<DiscoveryEntry[]> {
  const planned = new Map(bundle.manifest.lanes.map((l) => [l.lane, l]));
  const entries = discoveryEntries(bundle.manifest.lanes.filter((l) => inEarlierRun(bundle, l)));
  const found: { lane: string; artifact: StoredArtifact; wave: number }[] = [];
  for (const [base, artifact] of latestByAttempt(
    await store.list(RELAY_ARTIFACT_PREFIX, { complete: attempt > (bundle.attempt ?? 1) }),
    bundle.attempt ?? 1,
    attempt,
  )) {
    const lane = base.slice(RELAY_ARTIFACT_PREFIX.length);
    const p = planned.get(lane);
    if (base.startsWith(RELAY_ARTIFACT_PREFIX) && p?.wave != null && p.wave < wave && !inEarlierRun(bundle, p)) found.push({ lane, artifact, wave: p.wave });
  }
  found.sort((a, b) => b.wave - a.wave);
  await mapLimit(found.slice(0, MAX_RELAY_FILES), 8, async ({ lane, artifact }) => {
    const dir = join(root, '.relay', artifact.name);
    await store.download(artifact, dir);
    const parsed = RelayFile.safeParse(await readUntrustedJson(join(dir, 'relay', `${lane}.json`), 1024 * 1024));
    await rm(dir, { recursive: true, force: true });
    if (!parsed.success || parsed.data.lane !== lane) return;
    const p = planned.get(lane)!;
    entries.push({ lane, repo: p.repo, wave: p.wave!, ended_at: null, discoveries: parsed.data.discoveries });
  });
  // In plan order, whatever order the downloads finished in: every leg of a wave builds the same relay.
  const order = new Map(bundle.manifest.lanes.map((l, i) => [l.lane, i]));
  return entries.sort((a, b) => order.get(a.lane)! - order.get(b.lane)!);
}

/**
 * What the fleet spent before this leg: every spent artifact of this plan's attempts (each attempt of a lane spent
 * its own money), and the lanes earlier runs of the chain ran, from the plan.
 */
async function fleetSpent(store: ArtifactStore, bundle: PlanBundle, attempt: number): Promise<number> {
  let micro = 0;
  const since = bundle.attempt ?? 1;
  for (const a of await store.list(SPENT_ARTIFACT_PREFIX, { complete: attempt > since })) {
    const m = /^fleet-spent-.+\.u(\d{1,15})\.a(\d+)$/.exec(a.name);
    if (m && Number(m[2]) >= since && Number(m[2]) <= attempt) micro += Number(m[1]);
  }
  const earlier = bundle.manifest.lanes.filter((l) => inEarlierRun(bundle, l)).reduce((sum, l) => sum + (l.usage?.cost_usd ?? 0), 0);
  return micro / 1e6 + earlier;
}

export interface MatrixReportInput {
  /** See MatrixShardInput.integrationPins. */
  integrationPins?: readonly string[];
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
  // Lanes of earlier runs of the chain are final, and lanes of later ones have not run: both stand as the manifest has them.
  const elsewhere = new Map(manifest.lanes.filter((l) => inEarlierRun(bundle, l) || inLaterRun(bundle, l)).map((l) => [l.lane, l]));
  const here = manifest.lanes.filter((l) => !elsewhere.has(l.lane)).map((l) => l.lane);
  const fetched = await fetchLaneResults(input.store, input.root, bundle, here, input.attempt ?? 1);
  const integration =
    fleet.file.integrate && !manifest.dry_run
      ? await applyIntegration(input.store, input.root, bundle, input.attempt ?? 1, input.integrationPins, here, fetched)
      : undefined;
  const shardOf = new Map(manifest.waves.flatMap((w) => w.shards.flatMap((s) => s.lanes.map((l) => [l, s.id] as const))));
  const explainer = input.jobs ? new MissingResultExplainer(input.jobs) : undefined;
  const final = await reportStep({
    root: input.root,
    manifest,
    lanes: new Map(fleet.lanes.map((l) => [l.id, l])),
    forge: input.forge,
    clock: input.clock,
    verified: elsewhere,
    explainMissing: explainer ? (lane) => explainer.explain(shardOf.get(lane.lane)) : undefined,
  });
  if (!integration) return final;
  // Unchanged lanes did not run and have no result file: their outcome comes from the record itself.
  const lanes = final.lanes.map((l) =>
    l.status === 'unchanged' && integration.unchanged.has(l.lane) ? { ...l, integration: integration.unchanged.get(l.lane) } : l,
  );
  return { ...final, lanes, integration: integration.records };
}

function inEarlierRun(bundle: PlanBundle, l: LaneRecord): boolean {
  return l.wave !== null && l.wave < (bundle.first_wave ?? 0);
}

function inLaterRun(bundle: PlanBundle, l: LaneRecord): boolean {
  const next = continuesAfter(bundle);
  return next !== null && l.wave !== null && l.wave >= next;
}
