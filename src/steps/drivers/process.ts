/**
 * The whole fleet in this process (`fleet run`, on the local forge or on GitHub): plan, then run the waves in order
 * with one global concurrency budget, then report. A lane that fails, hangs or crashes ends as a failed lane; it never
 * stops the others. The run goes in three steps once its workspace is locked: prepare (the workspace, the events log,
 * the lanes a resumed run keeps), waves (each lane admitted or skipped, run, checked against the forge; each wave
 * settled before the next) and finish (the release, the report, the manifest).
 */
import { mkdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { notStarted } from '../../core/admission.js';
import { summarize } from '../../core/manifest.js';
import type { LanePhase, LaneRecord, LaneSpec, Manifest } from '../../core/model.js';
import type { Plan } from '../../core/plan.js';
import type { Problem, ResolvedFleet } from '../../core/validate.js';
import type { Clock, Executor, Forge, QueueEvent, QueueSettle, Workspace } from '../../ports.js';
import { JsonLines, writeJsonAtomic } from '../../util/fs.js';
import { writeManifest } from '../../util/manifest-seal.js';
import { LOCK_FILE, lockWorkspace } from '../../util/lock.js';
import { Semaphore } from '../../util/pool.js';
import { type Admission, budgetGate, dependencyGate, startingSpec } from '../admission.js';
import { Integration } from '../integrate.js';
import { type LaneContext, runLane, writeLaneResult } from '../lane/index.js';
import { handOffIssues } from '../outcome.js';
import { type PlanStepOptions, planStep } from '../plan.js';
import { discoveryEntries } from '../relay.js';
import { readLaneResult, reportStep, verifyLane } from '../report.js';
import { settleWave } from '../settle.js';
import { INTERRUPT_GRACE_MS, stuckLane, trackRunningFleet, untilDoneOrGraceSpent } from './process-interrupt.js';
import { type LaneInputs, laneInputsOf, readLaneInputs, resumeCheck, sameOutcome } from './process-resume.js';
import { claimWorkspace, clearPreviousRun, LANE_INPUTS_FILE, LiveManifest, manifestPath, setAsidePreviousFiles } from './process-workspace.js';

export interface FleetEvent {
  time: string;
  lane: string;
  from: LanePhase;
  to: LanePhase;
  status: LaneRecord['status'];
  detail: string;
}

/** An issue queue line of events.jsonl: an issue's state moved, or the run did something to it. */
export interface QueueLogLine {
  time: string;
  issue: number;
  from: string | null;
  to: string;
  detail: string;
}

export interface RunOptions {
  fleet: ResolvedFleet;
  /** The fleet file's path, for messages. */
  file: string;
  forge: Forge;
  workspace: Workspace;
  exec: Executor;
  clock: Clock;
  env: Record<string, string>;
  /** The fleet workspace; default `_workspace/fleet/<fleet_id>` under `cwd`. */
  root?: string;
  /** Where relative paths and the default workspace resolve; default process.cwd(). */
  cwd?: string;
  maxParallel?: number;
  dryRun?: boolean;
  /** Target discovery (github.discover), when the forge can. */
  discover?: PlanStepOptions['discover'];
  /** The issue queue (source.issues), when the forge can. */
  queue?: PlanStepOptions['queue'];
  /** After the run: hands the issues whose lanes need a person to one. */
  settleQueue?: QueueSettle;
  /**
   * A previous manifest: lanes it shows completed are kept, the rest run again. `keep: false` (a manifest Fleet's seal
   * does not vouch for): none is kept, every lane runs again in the same workspace.
   */
  resume?: { manifest: Manifest; root: string; keep?: boolean };
  /** An incremental sweep: the previous run's manifest; lanes whose base commit and digest are unchanged do not run. */
  since?: Manifest;
  /** Live view hook: called after every lane transition with the current manifest lanes. */
  onEvent?(event: FleetEvent, lanes: ReadonlyMap<string, LaneRecord>): void;
  /** Called once the plan is made, before any lane runs. */
  onPlan?(manifest: Manifest, root: string): void;
  /**
   * Aborted on an interrupt: no lane starts after it (they end skipped, `cancelled`), running lanes
   * stop at their next step. Killing the commands they run is the caller's part (killAllRunning).
   */
  signal?: AbortSignal;
  /**
   * After an interrupt, how long lanes get to stop by themselves (default 10 s). A lane still
   * busy then (stuck in a forge call) is recorded as cancelled, and the run ends without it.
   */
  interruptGraceMs?: number;
}

export type RunOutcome =
  /** `notes`: what the run wants a person to know that is not a lane's (a stale workspace lock taken over). */
  { ok: true; manifest: Manifest; root: string; plan: Plan; notes: string[] } | { ok: false; problems: Problem[] };

export async function runFleet(opts: RunOptions): Promise<RunOutcome> {
  // The sandbox probe (a few hundred milliseconds of namespaces and mounts) starts now and runs while the plan is
  // made and the first lanes clone; only a fleet that requires isolation waits for it here, since on a machine that
  // cannot give it that is a set-up failure, before anything is cloned.
  const probing = opts.exec.isolation(opts.fleet.file.isolation);
  const isolation = opts.fleet.file.isolation === 'required' ? await probing : undefined;
  if (isolation?.kind === 'none') {
    return {
      ok: false,
      problems: [
        {
          file: opts.file,
          field: 'isolation',
          message: `required, but directives cannot be isolated on this machine: ${isolation.detail}. Run where user namespaces or sudo are available, or set isolation: auto`,
        },
      ],
    };
  }
  const planned = await planStep(opts.fleet, opts.forge, opts.clock, {
    file: opts.file,
    fleet_id: opts.resume?.manifest.fleet_id,
    maxParallel: opts.maxParallel,
    dryRun: opts.dryRun,
    discover: opts.discover,
    queue: opts.queue,
    since: opts.since,
  });
  if (!planned.ok) return planned;
  const { plan } = planned;
  let manifest = planned.manifest;
  const inputs = laneInputsOf(planned.fleet, plan);
  if (opts.resume) {
    // Before the workspace is touched: a resume the fleet file no longer matches is refused, or goes on saying what changed.
    const resumed = resolve(opts.cwd ?? process.cwd(), opts.resume.root);
    const previousInputs = await readLaneInputs(resumed);
    const checked = resumeCheck({
      file: opts.file,
      previous: opts.resume.manifest,
      previousInputs,
      manifest,
      inputs,
      dryRun: opts.dryRun ?? false,
      previousPath: manifestPath(resumed),
      keepsNone: opts.resume.keep === false,
    });
    if (checked.problems.length) return { ok: false, problems: checked.problems };
    planned.notes.push(...checked.notes);
  }
  const cwd = opts.cwd ?? process.cwd();
  let root: string;
  if (opts.resume || opts.root) {
    root = resolve(cwd, opts.resume?.root ?? opts.root!);
    await mkdir(root, { recursive: true });
  } else {
    const claimed = await claimWorkspace(cwd, manifest.fleet_id);
    manifest = { ...manifest, fleet_id: claimed.fleet_id };
    root = claimed.root;
  }
  const lock = await lockWorkspace(root, manifest.fleet_id);
  if (!lock.ok) return { ok: false, problems: [{ file: join(root, LOCK_FILE), field: '(workspace)', message: lock.message }] };
  try {
    const run = await prepare(opts, {
      plan,
      manifest,
      root,
      fleet: planned.fleet,
      inputs,
      notes: [...(lock.note ? [lock.note] : []), ...planned.notes],
      queueEvents: planned.queue_events,
    });
    await runWaves(run);
    return await finish(run);
  } finally {
    trackRunningFleet(null);
    await lock.release();
  }
}

/** One run in this process, as its steps share it. */
interface FleetRun {
  opts: RunOptions;
  plan: Plan;
  root: string;
  fleet: ResolvedFleet;
  notes: string[];
  /** The manifest as planned (the live manifest file is it with the lanes' records), then as reported. */
  manifest: Manifest;
  /** Every lane's record as it moves. */
  records: Map<string, LaneRecord>;
  /** Lanes this process ran and checked against the forge itself (never read back from a file a lane could have edited). */
  verified: Map<string, LaneRecord>;
  /** The lanes a resumed run keeps as the run before it left them. */
  carried: Set<string>;
  specs: Map<string, LaneSpec>;
  ctx: LaneContext;
  integration: Integration | null;
  events: JsonLines;
  live: LiveManifest;
  /** A lane moved: its record, the events log, the live manifest and the caller's view follow. */
  emit(rec: LaneRecord, detail: string): void;
}

/**
 * The workspace made ready for this run: an earlier run's files cleared (or, resumed, its kept lanes read back and
 * the others' files set aside), the plan and the lanes' inputs written, the events log begun, the live manifest
 * written before any lane runs, and the lanes' context.
 */
async function prepare(
  opts: RunOptions,
  s: { plan: Plan; manifest: Manifest; root: string; fleet: ResolvedFleet; inputs: LaneInputs; notes: string[]; queueEvents?: QueueEvent[] },
): Promise<FleetRun> {
  const { plan, root, manifest } = s;
  if (!opts.resume) await clearPreviousRun(root);
  await writeJsonAtomic(join(root, 'plan.json'), {
    fleet_id: manifest.fleet_id,
    waves: plan.waves,
    contention: plan.contention,
    excluded: plan.excluded,
    skipped: plan.skipped,
  });
  // What each lane ran with, field by field: a later --resume says what changed in the fleet file, not only that something did.
  await writeJsonAtomic(join(root, LANE_INPUTS_FILE), { fleet_id: manifest.fleet_id, lanes: s.inputs.lanes } satisfies LaneInputs);

  const records = new Map(manifest.lanes.map((l) => [l.lane, l]));
  const verified = new Map<string, LaneRecord>();
  const run: Omit<FleetRun, 'ctx' | 'integration'> = {
    opts,
    plan,
    root,
    fleet: s.fleet,
    notes: s.notes,
    manifest,
    records,
    verified,
    carried: new Set<string>(),
    specs: new Map(s.fleet.lanes.map((l) => [l.id, l])),
    events: new JsonLines(join(root, 'events.jsonl')),
    // fleet-status.json follows the lanes while they run (`fleet status` reads it), written at most every LIVE_WRITE_MS.
    live: new LiveManifest(manifestPath(root), () => {
      const lanes = run.manifest.lanes.map((l) => records.get(l.lane) ?? l);
      return { ...run.manifest, lanes, summary: summarize(lanes, run.manifest.started_at, null) };
    }),
    emit: (rec: LaneRecord, detail: string) => {
      const before = records.get(rec.lane);
      records.set(rec.lane, rec);
      const event: FleetEvent = {
        time: opts.clock.now().toISOString(),
        lane: rec.lane,
        from: before?.phase ?? 'queued',
        to: rec.phase,
        status: rec.status,
        detail,
      };
      // The events log is an audit trail: a failed write (disk full, folder removed) must not take the run down.
      run.events.append(event).catch(() => undefined);
      run.live.changed();
      opts.onEvent?.(event, records);
    },
  };
  const { emit, carried } = run;

  // The issue queue's transitions come first: they are what decided which lanes run.
  for (const q of s.queueEvents ?? []) {
    run.events
      .append({ time: opts.clock.now().toISOString(), issue: q.issue, from: q.from, to: q.to, detail: q.detail } satisfies QueueLogLine)
      .catch(() => undefined);
  }
  for (const rec of manifest.lanes) {
    if (rec.status === 'excluded' || rec.status === 'skipped') emit(rec, rec.error?.message ?? rec.status);
    if (rec.status === 'unchanged') emit(rec, rec.evidence.notes[0] ?? 'unchanged');
  }

  // Resume: a lane the previous run completed keeps its result; everything else runs again.
  if (opts.resume) {
    const previous = new Map(opts.resume.keep === false ? [] : opts.resume.manifest.lanes.map((l) => [l.lane, l]));
    for (const rec of manifest.lanes) {
      const prev = previous.get(rec.lane);
      if (prev?.status !== 'completed') continue;
      const read = await readLaneResult(root, rec.lane, manifest.fleet_id);
      if (!read.ok || read.record.status !== 'completed') continue;
      // The lane's folder is not sealed (another fleet's directive can reach it): kept only where it says what the
      // sealed manifest says of the lane, or a later merge would act on a PR it named.
      if (!sameOutcome(prev, read.record)) continue;
      // A dry run pushed nothing: resumed for real, its lanes run again.
      if (read.record.phase === 'dry-run' && !opts.dryRun) continue;
      carried.add(rec.lane);
      emit({ ...read.record, wave: rec.wave }, 'kept from the previous run');
    }
    // Every other lane's folder still holds the earlier run's files (attempt logs, result, patch, prompts): moved
    // aside, so this run's attempt-1.log starts empty and nothing of the earlier run passes for this run's.
    const current = new Set(manifest.lanes.map((l) => l.lane));
    const stale = [
      ...manifest.lanes.map((l) => l.lane).filter((id) => !carried.has(id)),
      ...opts.resume.manifest.lanes.map((l) => l.lane).filter((id) => !current.has(id)),
    ];
    await setAsidePreviousFiles(root, stale);
  }
  // Written before any lane runs, with the lanes a resumed run keeps: an interrupted resume can itself be resumed.
  await run.live.now();
  opts.onPlan?.(manifest, root);

  const ctx: LaneContext = {
    fleet_id: manifest.fleet_id,
    file: opts.fleet.file,
    forge: opts.forge,
    workspace: opts.workspace,
    exec: opts.exec,
    clock: opts.clock,
    root,
    dryRun: opts.dryRun ?? false,
    env: opts.env,
    onUpdate: emit,
    signal: opts.signal,
    // Waves run one after another here: when a lane of wave k starts, every lane of an earlier wave has ended.
    relayEntries: () => discoveryEntries([...run.manifest.lanes.map((l) => verified.get(l.lane) ?? records.get(l.lane) ?? l)]),
    // A resumed run's kept lanes spent their share already.
    fleetSpend: { spent: [...carried].reduce((sum, id) => sum + (records.get(id)?.usage?.cost_usd ?? 0), 0) },
    // max_parallel directives run at once; up to as many more lanes clone or push meanwhile, so git work overlaps the directives.
    slots: new Semaphore(manifest.max_parallel),
    // Clones and pushes beyond the cores only slow each other (and the directives) down.
    gitSlots: new Semaphore(Math.max(2, availableParallelism())),
  };
  return Object.assign(run, { ctx, integration: opts.fleet.file.integrate ? new Integration(ctx, run.specs, opts.fleet.file.integrate) : null });
}

/**
 * The waves in order, each lane of a wave at once (within the budget of lanes in flight), each wave settled before
 * the next starts. After an interrupt the lanes get a grace to stop; those still busy then end cancelled.
 */
async function runWaves(run: FleetRun): Promise<void> {
  const { opts, records, verified, carried } = run;
  const inFlight = new Semaphore(run.manifest.max_parallel * 2);
  let over = false;
  trackRunningFleet({
    root: run.root,
    snapshot: () => ({ ...run.manifest, lanes: run.manifest.lanes.map((l) => verified.get(l.lane) ?? records.get(l.lane) ?? l) }),
  });

  const waves = (async () => {
    for (const wave of run.plan.waves) {
      await Promise.all(wave.lanes.map((id) => laneOfWave(run, id, inFlight, () => over)));
      // Targets tried several ways: once the wave is done, each group's pick opens its PR, before the next wave's
      // lanes ask for their dependencies' checkpoints.
      if (!opts.signal?.aborted) await endWave(run, wave);
    }
  })();

  const grace = opts.interruptGraceMs ?? INTERRUPT_GRACE_MS;
  const stuck = await untilDoneOrGraceSpent(waves, opts.signal, grace);
  if (!stuck) return;
  over = true;
  // Lanes that did not stop by themselves: stuck in a forge call, or not yet confirmed by the forge.
  const now = opts.clock.now().toISOString();
  for (const l of run.manifest.lanes) {
    const rec = records.get(l.lane);
    if (!rec || carried.has(l.lane) || verified.has(l.lane) || rec.status === 'skipped' || rec.status === 'excluded' || rec.status === 'failed') continue;
    const cancelledRec = stuckLane(rec, now, grace);
    verified.set(l.lane, cancelledRec);
    run.emit(cancelledRec, 'cancelled');
    await writeLaneResult(run.root, run.manifest.fleet_id, cancelledRec).catch(() => undefined);
  }
}

/** One lane of a wave: admitted or skipped (admission.ts), run, and checked against the forge at once. */
async function laneOfWave(run: FleetRun, id: string, inFlight: Semaphore, over: () => boolean): Promise<void> {
  const { opts, ctx, records, verified } = run;
  if (run.carried.has(id) || records.get(id)?.status === 'unchanged') return;
  const start = records.get(id)!;
  const ceiling = opts.fleet.file.budget?.fleet?.cost_usd;
  const admission: Admission = {
    planned: run.specs.get(id)!,
    start,
    records,
    specs: run.specs,
    forge: opts.forge,
    checkpoint: run.manifest.checkpoint,
    dryRun: ctx.dryRun,
    clock: opts.clock,
    // A lane of a later wave builds on the integrated work of the waves before it.
    integration: run.integration ? { records: run.integration.records() } : undefined,
    budget: ceiling !== undefined ? { ceiling, spend: ctx.fleetSpend! } : undefined,
  };
  const spec = startingSpec(admission);
  if (opts.signal?.aborted) return cancelled(run, start);
  const blocked = await dependencyGate(admission);
  if (blocked) return skipped(run, blocked);
  await inFlight.run(async () => {
    if (opts.signal?.aborted) return cancelled(run, start);
    // Asked only now: the lanes that ran while this one waited for a slot spent.
    const overBudget = budgetGate(admission);
    if (overBudget) return skipped(run, overBudget);
    try {
      const done = await runLane(ctx, spec, start);
      // Check the lane against the forge now, while other lanes still run, rather than all at the end.
      const checked = await verifyLane(opts.forge, spec, done, opts.clock.now().toISOString(), ctx.dryRun);
      if (over()) return; // the run already ended without this lane (an interrupt it did not stop for)
      verified.set(id, checked);
      if (checked.status !== done.status) run.emit(checked, checked.error?.message ?? 'not confirmed by the forge');
    } catch (err) {
      // runLane catches its own failures; this is the last line of defence, so one lane's bug stays in that lane.
      const now = opts.clock.now().toISOString();
      const crashed: LaneRecord = {
        ...(records.get(id) ?? start),
        status: 'failed',
        phase: 'failed',
        updated_at: now,
        ended_at: now,
        error: { class: 'lane-crashed', message: `Fleet failed in this lane: ${(err as Error).message}` },
      };
      run.emit(crashed, 'crashed');
      await writeLaneResult(run.root, run.manifest.fleet_id, crashed).catch(() => undefined);
    }
  });
}

async function skipped(run: FleetRun, rec: LaneRecord): Promise<void> {
  run.emit(rec, rec.error!.message);
  await writeLaneResult(run.root, run.manifest.fleet_id, rec);
}

async function cancelled(run: FleetRun, start: LaneRecord): Promise<void> {
  const rec = notStarted(start, run.opts.clock.now().toISOString());
  run.emit(rec, 'cancelled');
  await writeLaneResult(run.root, run.manifest.fleet_id, rec);
}

/** A wave's end (settle.ts): what changed goes into the records, verified where this process verified the lane. */
async function endWave(run: FleetRun, wave: Plan['waves'][number]): Promise<void> {
  const { records, verified } = run;
  const current = new Map(wave.lanes.map((id) => [id, verified.get(id) ?? records.get(id)!] as const));
  await settleWave(
    { ctx: run.ctx, wave: wave.index, lanes: wave.lanes, specs: run.specs, records: current, integration: run.integration },
    async (changed, stage) => {
      for (const rec of changed) {
        if (verified.has(rec.lane)) verified.set(rec.lane, rec);
        records.set(rec.lane, rec);
        // A pick's result file is written as it is picked; an integration outcome's, here.
        if (stage === 'integrated') await writeLaneResult(run.root, run.manifest.fleet_id, rec);
      }
    },
  );
}

/** The release (integrate:), the report (every lane checked against the forge), the issues handed on, the manifest written. */
async function finish(run: FleetRun): Promise<RunOutcome> {
  const { opts, records, verified, carried, integration } = run;
  // Kept lanes, and unchanged ones (which did not run, but were integrated), stand as their records say.
  run.manifest = { ...run.manifest, lanes: run.manifest.lanes.map((l) => (carried.has(l.lane) || l.status === 'unchanged' ? records.get(l.lane)! : l)) };
  if (integration && !opts.signal?.aborted) {
    await integration.release(new Map([...records].map(([id, r]) => [id, verified.get(id) ?? r])));
  }
  run.manifest = await reportStep({
    root: run.root,
    manifest: run.manifest,
    lanes: run.specs,
    forge: opts.forge,
    clock: opts.clock,
    verified,
    forgeReads: !opts.signal?.aborted,
  });
  if (integration) run.manifest = { ...run.manifest, integration: integration.records() };
  if (!opts.signal?.aborted) run.manifest = await handOffIssues(run.manifest, run.fleet, opts.settleQueue);
  await run.events.flush().catch(() => undefined);
  await run.live.close();
  await writeManifest(manifestPath(run.root), run.manifest);
  trackRunningFleet(null);
  return { ok: true, manifest: run.manifest, root: run.root, plan: run.plan, notes: run.notes };
}
