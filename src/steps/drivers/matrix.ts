/**
 * The fleet as GitHub Actions jobs: a plan job, wave jobs whose matrix legs
 * each run one shard, and a report job (the integrate job between wave jobs is
 * matrix-integrate.ts). Jobs share nothing but artifacts (matrix-artifacts.ts):
 * the plan travels as `fleet-plan`, each lane's result as `fleet-lane-<lane>`.
 * Job outputs carry only the small shard lists (they are capped at 1 MB).
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { WriteBudget, WriteWindow } from '../../core/budget.js';
import { type LaneRecord, type LaneSpec, Manifest } from '../../core/model.js';
import { type DiscoveryEntry, RelayFile } from '../../core/relay.js';
import { money } from '../../core/spend.js';
import type { Problem, ResolvedFleet } from '../../core/validate.js';
import type { ArtifactStore, Clock, Forge, RunJobs, StoredArtifact } from '../../ports.js';
import { readUntrustedJson, writeJsonAtomic } from '../../util/fs.js';
import { mapLimit } from '../../util/pool.js';
import { admit } from '../admission.js';
import { MissingResultExplainer } from '../explain.js';
import { laneDir, runLane, writeLaneResult } from '../lane/index.js';
import { type PlanStepOptions, planStep } from '../plan.js';
import { discoveryEntries } from '../relay.js';
import { reportStep } from '../report.js';
import { settleWave } from '../settle.js';
import {
  attemptName,
  CHAIN_ARTIFACT,
  fetchLaneResults,
  inEarlierRun,
  inLaterRun,
  type JobInput,
  laneArtifact,
  laneFiles,
  latestByAttempt,
  legContext,
  loadPlanBundle,
  PLAN_ARTIFACT,
  type PlanBundle,
  RELAY_ARTIFACT_PREFIX,
  SPENT_ARTIFACT_PREFIX,
} from './matrix-artifacts.js';
import { applyIntegration, integrationMissing, readIntegration } from './matrix-integrate.js';
import { fleetBudget } from './matrix-pace.js';

/** The most relay files one leg downloads (the latest waves first): the relay is cut to a few thousand characters anyway. */
const MAX_RELAY_FILES = 200;

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
  /** Each wave job's timeout-minutes: a leg gets only the lanes expected to fill half of it (core/legs.ts). */
  legTimeoutMinutes?: number;
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
    legs: { timeoutMinutes: input.legTimeoutMinutes, writeLimits: input.writeLimits },
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

/** One leg: the shard to run. */
export interface MatrixShardInput extends JobInput {
  shard: string;
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
    const verdict = await admit({
      planned: spec,
      start,
      records,
      specs,
      forge: input.forge,
      checkpoint: manifest.checkpoint,
      dryRun: ctx.dryRun,
      clock: input.clock,
      integration: integration && { records: integration.state.records, missing: noIntegration },
      budget: ceiling !== undefined ? { ceiling, spend: ctx.fleetSpend! } : undefined,
    });
    let rec: LaneRecord;
    if ('skipped' in verdict) {
      rec = verdict.skipped;
      await writeLaneResult(input.root, manifest.fleet_id, rec);
      input.log?.(`${id}: skipped (${rec.error!.message})`);
    } else {
      rec = await runLane(ctx, verdict.start, start);
    }
    records.set(id, rec);
    out.push(rec);
    // A strategy's artifact waits for its group's pick (an artifact name is written once per attempt).
    if (!spec.strategy) await uploadLane(input, fleet, spec, rec);
  }
  // The shard's part of its wave's end: the strategies' picks (the wave's integration is the integrate job's).
  await settleWave({ ctx, wave: shard.wave, lanes: shard.lanes, specs, records }, async (changed) => {
    for (const rec of changed) {
      out[out.findIndex((r) => r.lane === rec.lane)] = rec;
      await uploadLane(input, fleet, specs.get(rec.lane)!, rec);
    }
  });
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
