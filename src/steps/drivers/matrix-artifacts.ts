/**
 * What the jobs of a fleet on GitHub Actions share, and share only through artifacts: their names (each carrying the
 * run attempt that uploaded it), the plan bundle every job after the plan job reads, the lanes' results downloaded
 * into a job's workspace, the files of a lane's artifact, and the lane context a job hands its lanes. The plan, leg
 * and report (matrix.ts) and the integrate job (matrix-integrate.ts) each build on it.
 */
import { lstat, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { WriteBudget } from '../../core/budget.js';
import type { LaneRecord, Manifest } from '../../core/model.js';
import type { ResolvedFleet } from '../../core/validate.js';
import type { ArtifactStore, Clock, Executor, Forge, StoredArtifact, Workspace } from '../../ports.js';
import { mapLimit } from '../../util/pool.js';
import { type LaneContext, laneDir } from '../lane/index.js';
import { readLaneResult } from '../report.js';

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
/** Whether waves remain after this run's wave jobs: the fleet continues in a new run. */
export function continuesAfter(bundle: PlanBundle): number | null {
  const next = (bundle.first_wave ?? 0) + (bundle.wave_jobs ?? Infinity);
  return next < bundle.manifest.waves.length ? next : null;
}

/** A lane of a wave an earlier run of the chain ran: final in the plan's manifest. */
export function inEarlierRun(bundle: PlanBundle, l: LaneRecord): boolean {
  return l.wave !== null && l.wave < (bundle.first_wave ?? 0);
}

/** A lane of a wave a later run of the chain runs. */
export function inLaterRun(bundle: PlanBundle, l: LaneRecord): boolean {
  const next = continuesAfter(bundle);
  return next !== null && l.wave !== null && l.wave >= next;
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
 * would follow, never goes, nor a file with a second name (a hard link).
 */
export async function laneFiles(dir: string, rec: LaneRecord, agent: boolean): Promise<string[]> {
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
    // One name only: a second name of another file (a hard link a directive left where the kernel lets it link
    // files it does not own, or as root without isolation) would upload that file.
    if (st?.isFile() && st.nlink === 1) out.push(file);
  }
  return out;
}

/** The names Fleet gives the files it writes into a lane's folder. */
const LANE_FILES = /^(result\.json|patch\.diff|agent-routing\.json|attempt-\d+\.log|prompt-\d+\.md|review\/a\d+-r\d+-[a-z0-9._-]+\.log)$/;

/** What every job after the plan job is given: the run's artifacts, its workspace, its adapters, its log. */
export interface JobInput {
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
  /** The run attempt (GITHUB_RUN_ATTEMPT) this job runs in; default 1. */
  attempt?: number;
  /**
   * The digests of the integration records this job may read (the integrate jobs' outputs, as the plan's digest
   * pins the plan); undefined reads the latest by name (local runs, tests).
   */
  integrationPins?: readonly string[];
}

/** What a job of the fleet hands its lanes (and its integration): the plan's fleet, this job's adapters and log. */
export function legContext(input: Omit<JobInput, 'store'>, bundle: PlanBundle): LaneContext {
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
