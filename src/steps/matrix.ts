/**
 * The fleet as GitHub Actions jobs: a plan job, wave jobs whose matrix legs
 * each run one shard, and a report job. Jobs share nothing but artifacts:
 * the plan travels as `fleet-plan`, each lane's result as `fleet-lane-<lane>`.
 * Job outputs carry only the small shard lists (they are capped at 1 MB).
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Manifest, LaneRecord } from '../core/model.js';
import type { ResolvedFleet, Problem } from '../core/validate.js';
import type { ArtifactStore, Clock, Executor, Forge, RunJobs, Workspace } from '../ports.js';
import { writeJsonAtomic } from '../util/fs.js';
import { laneDir, runLane, writeLaneResult, type LaneContext } from './lane.js';
import { planStep, type PlanStepOptions } from './plan.js';
import { readLaneResult, reportStep } from './report.js';
import { dependencyBlock } from './run.js';

export const PLAN_ARTIFACT = 'fleet-plan';
export const LANE_ARTIFACT_PREFIX = 'fleet-lane-';
export const REPORT_ARTIFACT = 'fleet-report';

export function laneArtifact(lane: string): string {
  return `${LANE_ARTIFACT_PREFIX}${lane}`;
}

/** What the plan job hands every later job. */
export interface PlanBundle {
  fleet: ResolvedFleet;
  manifest: Manifest;
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
}

export interface MatrixPlanOutputs {
  fleet_id: string;
  wave_count: number;
  /** Shard ids per wave, index 0 = wave 1; waves past wave_count are empty lists. */
  waves: string[][];
  max_parallel: number;
  lane_count: number;
}

export async function matrixPlan(input: MatrixPlanInput): Promise<{ ok: true; manifest: Manifest; outputs: MatrixPlanOutputs } | { ok: false; problems: Problem[] }> {
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
  const bundle: PlanBundle = { fleet: planned.fleet, manifest: planned.manifest };
  await writeJsonAtomic(join(bundleDir, 'fleet.json'), bundle);
  await input.store.upload(PLAN_ARTIFACT, [join(bundleDir, 'fleet.json')], bundleDir);
  const waves = Array.from({ length: input.waveJobs }, (_, i) => planned.plan.waves[i]?.shards.map((s) => s.id) ?? []);
  return {
    ok: true,
    manifest: planned.manifest,
    outputs: {
      fleet_id: planned.manifest.fleet_id,
      wave_count: planned.plan.waves.length,
      waves,
      max_parallel: planned.manifest.max_parallel,
      lane_count: planned.plan.lanes.length,
    },
  };
}

export async function loadPlanBundle(store: ArtifactStore, root: string): Promise<PlanBundle> {
  const [artifact] = (await store.list(PLAN_ARTIFACT)).filter((a) => a.name === PLAN_ARTIFACT);
  if (!artifact) throw new Error(`no ${PLAN_ARTIFACT} artifact in this run: the plan job must run first`);
  const dir = join(root, 'plan');
  await store.download(artifact, dir);
  return JSON.parse(await readFile(join(dir, 'fleet.json'), 'utf8')) as PlanBundle;
}

/** Download the results of the given lanes (those that have one) into the workspace. */
async function fetchLaneResults(store: ArtifactStore, root: string, fleet_id: string, lanes: Iterable<string>): Promise<Map<string, LaneRecord>> {
  const wanted = new Set(lanes);
  const out = new Map<string, LaneRecord>();
  for (const artifact of await store.list(LANE_ARTIFACT_PREFIX)) {
    const lane = artifact.name.slice(LANE_ARTIFACT_PREFIX.length);
    if (!wanted.has(lane)) continue;
    await store.download(artifact, root);
    const read = await readLaneResult(root, lane, fleet_id);
    if (read.ok) out.set(lane, read.record);
  }
  return out;
}

async function filesOf(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    // The working copy stays on the runner: only what the lane left behind travels.
    if (entry.name === 'repo') continue;
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesOf(p)));
    else out.push(p);
  }
  return out;
}

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
}

/** One matrix leg: run the lanes of one shard, one after another, each leaving its own artifact. */
export async function matrixShard(input: MatrixShardInput): Promise<LaneRecord[]> {
  const { fleet, manifest } = input.bundle ?? (await loadPlanBundle(input.store, input.root));
  const shard = manifest.waves.flatMap((w) => w.shards).find((s) => s.id === input.shard);
  if (!shard) throw new Error(`shard ${input.shard} is not in the plan of ${manifest.fleet_id}`);
  const specs = new Map(fleet.lanes.map((l) => [l.id, l]));
  const planned = new Map(manifest.lanes.map((l) => [l.lane, l]));
  const deps = new Set(shard.lanes.flatMap((id) => specs.get(id)?.depends_on ?? []));
  // This shard's own lanes may have results from an earlier attempt of the run ("Re-run failed jobs"): completed ones are kept.
  const records = await fetchLaneResults(input.store, input.root, manifest.fleet_id, [...deps, ...shard.lanes]);
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
    await input.store.upload(laneArtifact(id), await filesOf(laneDir(input.root, id)), input.root);
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
}

/**
 * The report job: every lane's artifact is downloaded and checked against the
 * forge; a lane without one is explained from the run's jobs.
 */
export async function matrixReport(input: MatrixReportInput): Promise<Manifest> {
  const { fleet, manifest } = input.bundle ?? (await loadPlanBundle(input.store, input.root));
  await fetchLaneResults(input.store, input.root, manifest.fleet_id, manifest.lanes.map((l) => l.lane));
  const shardOf = new Map(manifest.waves.flatMap((w) => w.shards.flatMap((s) => s.lanes.map((l) => [l, s.id] as const))));
  let jobs: Awaited<ReturnType<RunJobs['list']>> | undefined;
  const final = await reportStep({
    root: input.root,
    manifest,
    lanes: new Map(fleet.lanes.map((l) => [l.id, l])),
    forge: input.forge,
    clock: input.clock,
    async explainMissing(lane) {
      if (!input.jobs) return null;
      jobs ??= await input.jobs.list();
      const shard = shardOf.get(lane.lane);
      const job = shard ? jobs.find((j) => j.name.includes(`(${shard})`) || j.name.endsWith(shard)) : undefined;
      if (!job) return { class: 'no-result', message: `no job ran shard ${shard ?? '?'} (its wave job was skipped or never started)` };
      const where = job.html_url ? ` (${job.html_url})` : '';
      if (job.conclusion === 'cancelled') return { class: 'cancelled', message: `job "${job.name}" was cancelled before the lane left a result${where}` };
      if (job.conclusion === 'timed_out') return { class: 'no-result', message: `job "${job.name}" timed out before the lane left a result${where}` };
      if (job.status !== 'completed') return { class: 'no-result', message: `job "${job.name}" is still ${job.status}${where}` };
      return { class: 'no-result', message: `job "${job.name}" ended ${job.conclusion ?? 'without a conclusion'} before uploading the lane result${where}` };
    },
  });
  return final;
}
