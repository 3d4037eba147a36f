/**
 * The local runner: plan, then run the waves in order with one global
 * concurrency budget, then report. A lane that fails, hangs or crashes ends as
 * a failed lane; it never stops the others.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { LANE_ID_PATTERN } from '../core/fleet-file.js';
import type { Plan } from '../core/plan.js';
import { Manifest as ManifestSchema, TERMINAL, type LaneRecord, type LanePhase, type Manifest } from '../core/model.js';
import type { Problem, ResolvedFleet } from '../core/validate.js';
import type { LaneSpec } from '../core/model.js';
import type { Checkpoint, Clock, Executor, Forge, QueueEvent, QueueSettle, Workspace } from '../ports.js';
import { canonicalJson, laneDigestInput } from '../core/incremental.js';
import { compareIds, finalizeManifest, summarize } from '../core/manifest.js';
import { renderReport } from '../core/report.js';
import type { DiscoveryEntry } from '../core/relay.js';
import { budgetStop, NO_USAGE } from '../core/spend.js';
import { JsonLines, writeJsonAtomic } from '../util/fs.js';
import { LOCK_FILE, lockWorkspace } from '../util/lock.js';
import { Semaphore } from '../util/pool.js';
import { readLaneResult, reportStep, verifyLane } from './report.js';
import { laneDir, runLane, writeLaneResult, type LaneContext } from './lane/index.js';
import { planStep, type PlanStepOptions } from './plan.js';
import { settleStrategies } from './strategies.js';
import { Integration } from './integrate.js';

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
  /** A previous manifest: lanes it shows completed are kept, the rest run again. */
  resume?: { manifest: Manifest; root: string };
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

/** How long lanes get to stop after an interrupt before the run ends without them. */
export const INTERRUPT_GRACE_MS = 10_000;

export type RunOutcome =
  /** `notes`: what the run wants a person to know that is not a lane's (a stale workspace lock taken over). */
  { ok: true; manifest: Manifest; root: string; plan: Plan; notes: string[] } | { ok: false; problems: Problem[] };

/**
 * The issue queue's part of a run's end: an issue whose lane failed for a reason a retry will not change (or changed
 * nothing) is handed to a person, and the board says so. A forge that cannot is a line on the board, not a failure.
 */
export async function handOffIssues(manifest: Manifest, fleet: ResolvedFleet, settle?: QueueSettle): Promise<Manifest> {
  if (!settle || !manifest.queue) return manifest;
  const done = await settle(fleet, manifest).catch((err: Error) => [`could not hand issues to a person: ${err.message}`]);
  return done.length ? { ...manifest, queue: { ...manifest.queue, actions: [...manifest.queue.actions, ...done] } } : manifest;
}

/** Every target of the fleet was excluded (a wrong path, an archived repository, `exclude:`): no lane ran. */
export function nothingRan(manifest: Manifest): boolean {
  return manifest.lanes.length > 0 && manifest.lanes.every((l) => l.status === 'excluded');
}

export function manifestPath(root: string): string {
  return join(root, 'fleet-status.json');
}

export async function runFleet(opts: RunOptions): Promise<RunOutcome> {
  // Before anything is cloned: a fleet that requires isolation on a machine that cannot give it is a set-up failure.
  const isolation = opts.exec.isolation(opts.fleet.file.isolation);
  if (opts.fleet.file.isolation === 'required' && isolation.kind === 'none') {
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
    // The default workspace is named by the fleet id: claim the folder (mkdir fails if it exists), so even
    // two runs whose ids collided would never share one.
    const base = resolve(cwd, '_workspace', 'fleet');
    await mkdir(base, { recursive: true });
    for (let i = 1; ; i++) {
      const id = i === 1 ? manifest.fleet_id : `${manifest.fleet_id}-${i}`;
      try {
        await mkdir(join(base, id));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw err;
      }
      manifest = { ...manifest, fleet_id: id };
      root = join(base, id);
      break;
    }
  }
  const lock = await lockWorkspace(root, manifest.fleet_id);
  if (!lock.ok) return { ok: false, problems: [{ file: join(root, LOCK_FILE), field: '(workspace)', message: lock.message }] };
  try {
    return await runLocked(opts, {
      plan,
      manifest,
      root,
      fleet: planned.fleet,
      inputs,
      notes: [...(lock.note ? [lock.note] : []), ...planned.notes],
      queueEvents: planned.queue_events,
    });
  } finally {
    active = null;
    await lock.release();
  }
}

async function runLocked(
  opts: RunOptions,
  s: { plan: Plan; manifest: Manifest; root: string; fleet: ResolvedFleet; inputs: LaneInputs; notes: string[]; queueEvents?: QueueEvent[] },
): Promise<RunOutcome> {
  const { plan, root } = s;
  let manifest = s.manifest;
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

  const events = new JsonLines(join(root, 'events.jsonl'));
  const records = new Map(manifest.lanes.map((l) => [l.lane, l]));
  const specs = new Map(s.fleet.lanes.map((l) => [l.id, l]));
  // fleet-status.json follows the lanes while they run (`fleet status` reads it), written at most every LIVE_WRITE_MS.
  const live = new LiveManifest(manifestPath(root), () => {
    const lanes = manifest.lanes.map((l) => records.get(l.lane) ?? l);
    return { ...manifest, lanes, summary: summarize(lanes, manifest.started_at, null) };
  });
  const emit = (rec: LaneRecord, detail: string) => {
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
    events.append(event).catch(() => undefined);
    live.changed();
    opts.onEvent?.(event, records);
  };

  // The issue queue's transitions come first: they are what decided which lanes run.
  for (const q of s.queueEvents ?? []) {
    events
      .append({ time: opts.clock.now().toISOString(), issue: q.issue, from: q.from, to: q.to, detail: q.detail } satisfies QueueLogLine)
      .catch(() => undefined);
  }
  for (const rec of manifest.lanes) {
    if (rec.status === 'excluded' || rec.status === 'skipped') emit(rec, rec.error?.message ?? rec.status);
    if (rec.status === 'unchanged') emit(rec, rec.evidence.notes[0] ?? 'unchanged');
  }

  // Resume: a lane the previous run completed keeps its result; everything else runs again.
  const carried = new Set<string>();
  if (opts.resume) {
    const previous = new Map(opts.resume.manifest.lanes.map((l) => [l.lane, l]));
    for (const rec of manifest.lanes) {
      const prev = previous.get(rec.lane);
      if (prev?.status !== 'completed') continue;
      const read = await readLaneResult(root, rec.lane, manifest.fleet_id);
      if (!read.ok || read.record.status !== 'completed') continue;
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
  await live.now();
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
    relayEntries: () => discoveryEntries([...manifest.lanes.map((l) => verified.get(l.lane) ?? records.get(l.lane) ?? l)]),
    // A resumed run's kept lanes spent their share already.
    fleetSpend: { spent: [...carried].reduce((sum, id) => sum + (records.get(id)?.usage?.cost_usd ?? 0), 0) },
  };
  const ceiling = opts.fleet.file.budget?.fleet?.cost_usd;
  const integration = opts.fleet.file.integrate ? new Integration(ctx, specs, opts.fleet.file.integrate) : null;
  const cancelled = async (start: LaneRecord): Promise<void> => {
    const rec = notStarted(start, opts.clock.now().toISOString());
    emit(rec, 'cancelled');
    await writeLaneResult(root, manifest.fleet_id, rec);
  };
  // max_parallel directives run at once; up to as many more lanes clone or push meanwhile, so git work overlaps the directives.
  ctx.slots = new Semaphore(manifest.max_parallel);
  // Clones and pushes beyond the cores only slow each other (and the directives) down.
  ctx.gitSlots = new Semaphore(Math.max(2, availableParallelism()));
  /** Lanes this process ran and checked against the forge itself (never read back from a file a lane could have edited). */
  const verified = new Map<string, LaneRecord>();
  const budget = new Semaphore(manifest.max_parallel * 2);
  let over = false;
  active = {
    root,
    snapshot: () => ({ ...manifest, lanes: manifest.lanes.map((l) => verified.get(l.lane) ?? records.get(l.lane) ?? l) }),
  };

  const waves = (async () => {
    for (const wave of plan.waves) {
      await Promise.all(
        wave.lanes.map(async (id) => {
          if (carried.has(id) || records.get(id)?.status === 'unchanged') return;
          // A lane of a later wave builds on the integrated work of the waves before it.
          const planned = specs.get(id)!;
          const integratedBase = integration?.baseFor(planned);
          const spec = integratedBase ? { ...planned, base: integratedBase } : planned;
          const start = records.get(id)!;
          if (opts.signal?.aborted) return cancelled(start);
          const blocked = await dependencyBlock(spec, records, specs, opts.forge, manifest.checkpoint, ctx.dryRun);
          if (blocked) {
            const now = opts.clock.now().toISOString();
            const skipped: LaneRecord = { ...start, status: 'skipped', phase: 'skipped', updated_at: now, ended_at: now, error: blocked };
            emit(skipped, blocked.message);
            await writeLaneResult(root, manifest.fleet_id, skipped);
            return;
          }
          await budget.run(async () => {
            if (opts.signal?.aborted) return cancelled(start);
            if (ceiling !== undefined && ctx.fleetSpend!.spent >= ceiling) {
              const skipped = ceilingReached(start, ceiling, ctx.fleetSpend!.spent, opts.clock.now().toISOString());
              emit(skipped, skipped.error!.message);
              await writeLaneResult(root, manifest.fleet_id, skipped);
              return;
            }
            try {
              const done = await runLane(ctx, spec, start);
              // Check the lane against the forge now, while other lanes still run, rather than all at the end.
              const checked = await verifyLane(opts.forge, spec, done, opts.clock.now().toISOString(), ctx.dryRun);
              if (over) return; // the run already ended without this lane (an interrupt it did not stop for)
              verified.set(id, checked);
              if (checked.status !== done.status) emit(checked, checked.error?.message ?? 'not confirmed by the forge');
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
              emit(crashed, 'crashed');
              await writeLaneResult(root, manifest.fleet_id, crashed).catch(() => undefined);
            }
          });
        }),
      );
      // Targets tried several ways: once the wave is done, each group's pick opens its PR, before the next wave's
      // lanes ask for their dependencies' checkpoints.
      if (!opts.signal?.aborted) {
        const current = new Map(wave.lanes.map((id) => [id, verified.get(id) ?? records.get(id)!] as const));
        for (const rec of await settleStrategies(ctx, wave.lanes, specs, current)) {
          if (verified.has(rec.lane)) verified.set(rec.lane, rec);
          records.set(rec.lane, rec);
          current.set(rec.lane, rec);
        }
        for (const rec of (await integration?.afterWave(wave.index, wave.lanes, current)) ?? []) {
          if (verified.has(rec.lane)) verified.set(rec.lane, rec);
          records.set(rec.lane, rec);
          await writeLaneResult(root, manifest.fleet_id, rec);
        }
      }
    }
  })();

  const stuck = await untilDoneOrGraceSpent(waves, opts.signal, opts.interruptGraceMs ?? INTERRUPT_GRACE_MS);
  if (stuck) {
    over = true;
    // Lanes that did not stop by themselves: stuck in a forge call, or not yet confirmed by the forge.
    const now = opts.clock.now().toISOString();
    for (const l of manifest.lanes) {
      const rec = records.get(l.lane);
      if (!rec || carried.has(l.lane) || verified.has(l.lane) || rec.status === 'skipped' || rec.status === 'excluded' || rec.status === 'failed') continue;
      const cancelledRec = stuckLane(rec, now, opts.interruptGraceMs ?? INTERRUPT_GRACE_MS);
      verified.set(l.lane, cancelledRec);
      emit(cancelledRec, 'cancelled');
      await writeLaneResult(root, manifest.fleet_id, cancelledRec).catch(() => undefined);
    }
  }

  // Kept lanes, and unchanged ones (which did not run, but were integrated), stand as their records say.
  manifest = { ...manifest, lanes: manifest.lanes.map((l) => (carried.has(l.lane) || l.status === 'unchanged' ? records.get(l.lane)! : l)) };
  if (integration && !opts.signal?.aborted) {
    await integration.release(new Map([...records].map(([id, r]) => [id, verified.get(id) ?? r])));
  }
  manifest = await reportStep({ root, manifest, lanes: specs, forge: opts.forge, clock: opts.clock, verified, forgeReads: !opts.signal?.aborted });
  if (integration) manifest = { ...manifest, integration: integration.records() };
  if (!opts.signal?.aborted) manifest = await handOffIssues(manifest, s.fleet, opts.settleQueue);
  await events.flush().catch(() => undefined);
  await live.close();
  await writeJsonAtomic(manifestPath(root), manifest);
  active = null;
  return { ok: true, manifest, root, plan, notes: s.notes };
}

/**
 * A lane's dependencies with each target tried several ways replaced by its pick: the group's checkpoint is the
 * pick's. A group without a pick (none green, or a person picks) blocks the lane, saying why.
 */
function strategyPicks(
  depends_on: readonly string[],
  records: ReadonlyMap<string, LaneRecord>,
  specs: ReadonlyMap<string, LaneSpec>,
): string[] | NonNullable<LaneRecord['error']> {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const id of depends_on) {
    const group = specs.get(id)?.strategy?.group;
    if (!group) {
      out.push(id);
      continue;
    }
    if (seen.has(group)) continue;
    seen.add(group);
    const members = depends_on.filter((d) => specs.get(d)?.strategy?.group === group);
    const recs = members.map((m) => records.get(m));
    if (recs.some((r) => !r || !TERMINAL.has(r.status))) {
      return { class: 'checkpoint-unmet', message: `dependency "${group}": not every strategy had finished when this lane's wave started` };
    }
    // An unchanged strategy carries the pick it had when it last ran.
    const picked = recs.find((r) => r!.strategy?.picked === true);
    if (!picked) {
      const reason = recs.find((r) => r!.strategy?.reason)?.strategy?.reason ?? 'no strategy was picked';
      return {
        class: 'dependency-failed',
        message: `dependency "${group}" has no picked strategy (${reason}); this lane was not run against a missing checkpoint`,
      };
    }
    out.push(picked.lane);
  }
  return out;
}

/** A lane that did not start because the fleet's cost ceiling was reached: skipped, saying so. */
export function ceilingReached(start: LaneRecord, ceiling: number, spent: number, now: string): LaneRecord {
  // The words a lane uses when it finds the ceiling reached itself (a lane that was already cloning).
  const message = `not started: ${budgetStop(NO_USAGE, undefined, { spent, ceiling })}`;
  return { ...start, status: 'skipped', phase: 'skipped', updated_at: now, ended_at: now, error: { class: 'budget-exceeded', message } };
}

/** What lanes left for the relay, as the relay reads it. */
export function discoveryEntries(lanes: readonly LaneRecord[]): DiscoveryEntry[] {
  return lanes
    .filter((l) => l.discoveries?.length && l.wave !== null)
    .map((l) => ({ lane: l.lane, repo: l.repo, wave: l.wave!, ended_at: l.ended_at, discoveries: l.discoveries! }));
}

/**
 * Waits for the waves to end. After an interrupt, waits at most `graceMs` more; true when the
 * grace was spent with lanes still busy.
 */
async function untilDoneOrGraceSpent(waves: Promise<void>, signal: AbortSignal | undefined, graceMs: number): Promise<boolean> {
  if (!signal) {
    await waves;
    return false;
  }
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const spent = new Promise<true>((resolve) => {
    const start = () => {
      timer = setTimeout(() => resolve(true), graceMs);
    };
    if (signal.aborted) start();
    else {
      onAbort = start;
      signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([waves.then(() => false as const), spent]);
  } finally {
    if (timer) clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/** A lane that was still busy when the run ended after an interrupt. */
function stuckLane(rec: LaneRecord, now: string, graceMs: number): LaneRecord {
  if (rec.status === 'queued') return notStarted(rec, now);
  const s = Math.round(graceMs / 1000);
  const message =
    rec.status === 'completed'
      ? `the run was interrupted while the forge confirmed this lane; it ended unconfirmed after ${s} s`
      : `the run was interrupted while this lane was ${rec.phase}, and the lane did not stop within ${s} s (a git or forge call that did not answer); ${
          rec.phase === 'pushing' || rec.commit === null ? 'whether it pushed is unknown' : 'what it pushed stays on the forge'
        }`;
  return { ...rec, status: 'failed', phase: 'failed', updated_at: now, ended_at: now, error: { class: 'cancelled', message } };
}

function notStarted(rec: LaneRecord, now: string): LaneRecord {
  const error = { class: 'cancelled' as const, message: 'the run was interrupted before this lane started' };
  return { ...rec, status: 'skipped', phase: 'skipped', updated_at: now, ended_at: now, error };
}

/** The fleet this process is running, for a last-resort write of its state (a second interrupt). */
let active: { root: string; snapshot: () => Manifest } | null = null;

/**
 * Writes the running fleet's manifest and report at once, synchronously, with every lane that
 * has not ended recorded as cancelled: for an exit that cannot wait for the lanes (a second
 * Ctrl-C). Returns the workspace written, or null when no fleet runs.
 */
export function writeInterruptedState(now: Date = new Date()): string | null {
  if (!active) return null;
  const iso = now.toISOString();
  const snap = active.snapshot();
  const lanes = snap.lanes.map((l): LaneRecord => {
    if ((TERMINAL.has(l.status) && l.status !== 'completed') || (l.status === 'completed' && l.evidence.verified_at)) return l;
    if (l.status === 'queued') return notStarted(l, now.toISOString());
    const message = `Fleet was stopped at once (a second interrupt, or the lanes did not stop in time) while this lane was ${l.phase}`;
    return { ...l, status: 'failed', phase: 'failed', updated_at: iso, ended_at: iso, error: { class: 'cancelled', message } };
  });
  const manifest = finalizeManifest({ ...snap, lanes }, iso);
  writeSyncAtomic(manifestPath(active.root), `${JSON.stringify(manifest, null, 2)}\n`);
  writeSyncAtomic(join(active.root, 'report.md'), `${renderReport(manifest, { now: iso, workspace: active.root })}\n`);
  return active.root;
}

function writeSyncAtomic(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

const LIVE_WRITE_MS = 250;

/** The manifest file of a running fleet: rewritten (atomically, one write at a time) soon after lanes change. */
class LiveManifest {
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly path: string,
    private readonly snapshot: () => Manifest,
  ) {}

  changed(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.now();
    }, LIVE_WRITE_MS);
    this.timer.unref();
  }

  /** Write the current state now (after any write in flight); a failed write is retried by the next change. */
  now(): Promise<void> {
    if (this.closed) return this.chain;
    this.chain = this.chain.then(() => (this.closed ? undefined : writeJsonAtomic(this.path, this.snapshot()).catch(() => undefined)));
    return this.chain;
  }

  /** No more writes: the final manifest is written by the caller. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.chain;
  }
}

/**
 * A new run into a workspace that holds an earlier run: remove that run's own
 * files (its manifest names them), so the events log, the lane results and the
 * attempt logs are this run's alone. Nothing else in the folder is touched.
 */
async function clearPreviousRun(root: string): Promise<void> {
  let previous: Manifest;
  try {
    previous = ManifestSchema.parse(JSON.parse(await readFile(manifestPath(root), 'utf8')));
  } catch {
    return; // no earlier run here (or not one Fleet can read): nothing of ours to clear
  }
  // Only ids of the lane alphabet name a folder: a hand-edited manifest cannot point rm elsewhere.
  const ids = previous.lanes.map((l) => l.lane).filter((id) => LANE_ID_PATTERN.test(id));
  await Promise.all(ids.map((id) => rm(laneDir(root, id), { recursive: true, force: true })));
  for (const f of ['events.jsonl', 'plan.json', LANE_INPUTS_FILE, 'report.md', 'fleet-status.json']) await rm(join(root, f), { force: true });
}

/** Where, in a lane's folder, a resumed run puts the files of the runs before it: `previous/1/` (the first), `previous/2/`, … */
export const PREVIOUS_DIR = 'previous';

/**
 * A resumed run's lanes that run again (or no longer run): the files the earlier run left in their folders are moved
 * to `lanes/<lane>/previous/<n>/`, n one more than the last, so the folder holds this run's files alone and the
 * earlier attempts stay readable. The earlier working copy is removed (a lane clones afresh anyway).
 */
export async function setAsidePreviousFiles(root: string, ids: readonly string[]): Promise<void> {
  // Only ids of the lane alphabet name a folder: a hand-edited manifest cannot point a rename elsewhere.
  const safe = ids.filter((id) => LANE_ID_PATTERN.test(id));
  await Promise.all(
    safe.map(async (id) => {
      const dir = laneDir(root, id);
      const entries = (await readdir(dir).catch(() => [] as string[])).filter((e) => e !== PREVIOUS_DIR);
      if (entries.includes('repo')) await rm(join(dir, 'repo'), { recursive: true, force: true });
      const rest = entries.filter((e) => e !== 'repo');
      if (!rest.length) return;
      const aside = join(dir, PREVIOUS_DIR);
      await mkdir(aside, { recursive: true });
      const taken = (await readdir(aside)).filter((e) => /^[1-9]\d*$/.test(e)).map(Number);
      const dest = join(aside, String(Math.max(0, ...taken) + 1));
      await mkdir(dest);
      for (const e of rest) await rename(join(dir, e), join(dest, e));
    }),
  );
}

/** The file in the workspace that keeps what each lane ran with (its digest's input), for a later --resume. */
export const LANE_INPUTS_FILE = 'lane-inputs.json';

/** Per lane id, everything that decides its result (what its digest hashes), as plain JSON. */
export interface LaneInputs {
  fleet_id?: string;
  lanes: Record<string, unknown>;
}

function laneInputsOf(fleet: ResolvedFleet, plan: Plan): LaneInputs {
  const lanes: Record<string, unknown> = {};
  for (const l of plan.lanes) lanes[l.spec.id] = laneDigestInput(fleet.file, l.spec);
  return { lanes };
}

async function readLaneInputs(root: string): Promise<LaneInputs | null> {
  try {
    const raw = JSON.parse(await readFile(join(root, LANE_INPUTS_FILE), 'utf8')) as unknown;
    if (raw && typeof raw === 'object' && 'lanes' in raw && raw.lanes && typeof raw.lanes === 'object' && !Array.isArray(raw.lanes)) return raw as LaneInputs;
  } catch {
    /* a workspace written before the file existed, or one it was removed from: digests alone then */
  }
  return null;
}

/** The fields of two lane inputs that differ: `run`, `checks`, `pr` …, and `Fleet's version`. */
function changedFields(before: unknown, after: unknown): string[] {
  const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
  const out: string[] = [];
  if (canonicalJson(obj(before).fleet_version) !== canonicalJson(obj(after).fleet_version)) out.push("Fleet's version");
  for (const part of ['lane', 'fleet']) {
    const a = obj(obj(before)[part]);
    const b = obj(obj(after)[part]);
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort(compareIds)) {
      if (canonicalJson(a[k]) !== canonicalJson(b[k]) && !out.includes(k)) out.push(k);
    }
  }
  return out;
}

const quoted = (ids: readonly string[]) => ids.map((id) => `"${id}"`).join(', ');

/**
 * A resume against the fleet file as it is now. A lane the earlier run completed is kept as done: if what decides
 * its result changed since (the directive, its command, its checks …), the manifest would report it done with
 * inputs it never ran with, so that is refused, naming what changed. A change only to lanes that run again (and new
 * or removed lanes) goes on, with a note saying what changed. So does a resume with --dry-run of a real run only when
 * it keeps nothing that was pushed (its manifest would say nothing was).
 */
export function resumeCheck(input: {
  file: string;
  previous: Manifest;
  previousInputs: LaneInputs | null;
  manifest: Manifest;
  inputs: LaneInputs;
  dryRun: boolean;
  previousPath: string;
}): { problems: Problem[]; notes: string[] } {
  const { previous, manifest } = input;
  const since = `run ${previous.fleet_id}`;
  const before = new Map(previous.lanes.map((l) => [l.lane, l]));
  const now = new Map(manifest.lanes.map((l) => [l.lane, l]));
  // The lanes the resumed run keeps as they ended (as runFleet decides, from the earlier manifest).
  const kept = (l: LaneRecord) => l.status === 'completed' && (l.phase !== 'dry-run' || input.dryRun);
  const changed: { lane: string; fields: string[] | null; kept: boolean }[] = [];
  for (const [id, cur] of now) {
    const prev = before.get(id);
    if (!prev || !prev.digest || !cur.digest || prev.digest === cur.digest) continue;
    const a = input.previousInputs?.lanes[id];
    const b = input.inputs.lanes[id];
    const fields = a !== undefined && b !== undefined ? changedFields(a, b) : null;
    changed.push({ lane: id, fields: fields?.length ? fields : null, kept: kept(prev) });
  }
  const describe = (list: typeof changed) => {
    const groups = new Map<string, string[]>();
    for (const c of list) {
      const what = c.fields ? c.fields.join(', ') : `fields that decide the result (this workspace has no ${LANE_INPUTS_FILE} to say which)`;
      groups.set(what, [...(groups.get(what) ?? []), c.lane]);
    }
    return [...groups].map(([what, lanes]) => `${what} (lane${lanes.length === 1 ? '' : 's'} ${quoted(lanes)})`).join('; ');
  };
  const problems: Problem[] = [];
  const notes: string[] = [];
  const refused = changed.filter((c) => c.kept);
  if (refused.length) {
    problems.push({
      file: input.file,
      field: '--resume',
      message:
        `the fleet file changed since ${since}: ${describe(refused)}. ` +
        `${refused.length === 1 ? 'That lane' : 'Those lanes'} completed in ${since} with the fleet file as it was, and a resumed run would report ${refused.length === 1 ? 'it' : 'them'} done with inputs ${refused.length === 1 ? 'it' : 'they'} never ran with. ` +
        `Start a new run without --resume (every lane runs with the fleet file as it is), or with --since ${input.previousPath} (only the lanes whose inputs or base changed run)`,
    });
  }
  if (input.dryRun && !previous.dry_run) {
    const pushed = previous.lanes
      .filter((l) => l.status === 'completed' && l.phase !== 'no-op' && l.phase !== 'dry-run')
      .map((l) => l.lane)
      .sort(compareIds);
    if (pushed.length) {
      problems.push({
        file: input.file,
        field: '--dry-run',
        message: `${since} was not a dry run, and lane${pushed.length === 1 ? '' : 's'} ${quoted(pushed.slice(0, 10))}${pushed.length > 10 ? ` and ${pushed.length - 10} more` : ''} pushed ${pushed.length === 1 ? 'its' : 'their'} change; resumed as a dry run, its manifest would say nothing was pushed. Resume without --dry-run, or start a new dry run without --resume`,
      });
    }
  }
  if (problems.length) return { problems, notes };
  const rerun = changed.filter((c) => !c.kept);
  if (rerun.length) notes.push(`the fleet file changed since ${since} for lanes that run again: ${describe(rerun)}; they run with the fleet file as it is now`);
  const added = [...now.keys()].filter((id) => !before.has(id)).sort(compareIds);
  if (added.length)
    notes.push(
      `lane${added.length === 1 ? '' : 's'} ${quoted(added)} ${added.length === 1 ? 'is' : 'are'} new since ${since}: ${added.length === 1 ? 'it runs' : 'they run'}`,
    );
  const removed = [...before.keys()].filter((id) => !now.has(id)).sort(compareIds);
  if (removed.length) {
    const done = removed.filter((id) => before.get(id)!.status === 'completed');
    notes.push(
      `lane${removed.length === 1 ? '' : 's'} ${quoted(removed)} of ${since} ${removed.length === 1 ? 'is' : 'are'} no longer in the fleet file: left out of this run's manifest${done.length ? ` (what ${quoted(done)} pushed stays on the forge)` : ''}; ${removed.length === 1 ? 'its' : 'their'} files are in lanes/<lane>/${PREVIOUS_DIR}/`,
    );
  }
  for (const k of ['max_retries', 'max_parallel'] as const) {
    if (previous[k] !== manifest[k]) notes.push(`${k} is ${manifest[k]} now, ${previous[k]} in ${since}: the lanes kept from it ran with ${previous[k]}`);
  }
  return { problems, notes };
}

/**
 * Why a lane may not start yet, or undefined. A dependency must have completed,
 * and its checkpoint must hold on the forge: the runner never takes a lane's word for it.
 */
export async function dependencyBlock(
  spec: LaneSpec,
  records: ReadonlyMap<string, LaneRecord>,
  specs: ReadonlyMap<string, LaneSpec>,
  forge: Forge,
  checkpoint: Checkpoint,
  dryRun: boolean,
): Promise<LaneRecord['error'] | undefined> {
  const deps = strategyPicks(spec.depends_on, records, specs);
  if (!Array.isArray(deps)) return deps;
  for (const depId of deps) {
    const dep = records.get(depId);
    if (!dep || !TERMINAL.has(dep.status)) {
      return { class: 'checkpoint-unmet', message: `dependency "${depId}" had not finished when this lane's wave started` };
    }
    // Held out of the integration (an unchanged lane too: it is integrated again), its work is not in the base.
    if (dep.integration?.state === 'held') {
      return {
        class: 'dependency-failed',
        message: `dependency "${depId}" is held out of the integration (${dep.integration.reason ?? 'held'}); this lane was not run against a missing checkpoint`,
      };
    }
    // An unchanged dependency's checkpoint was met when it last ran, and neither its base nor its inputs moved since.
    if (dep.status === 'unchanged') continue;
    if (dep.status !== 'completed') {
      const why = dep.error ? `${dep.status} (${dep.error.class})` : dep.status;
      return { class: 'dependency-failed', message: `dependency "${depId}" ${why}; this lane was not run against a missing checkpoint` };
    }
    if (dep.phase === 'no-op' || dryRun) continue;
    const depSpec = specs.get(depId)!;
    // Each checkpoint is read on the forge, not taken from the dependency's record (an artifact, on Actions).
    const asked = async <T>(what: string, call: () => Promise<T>): Promise<T | LaneRecord['error']> => {
      try {
        return await call();
      } catch (err) {
        return { class: 'checkpoint-unmet', message: `dependency "${depId}": the forge could not be asked ${what} (${(err as Error).message})` };
      }
    };
    if (checkpoint === 'merged') {
      const merged = await asked('whether it is merged', () => forge.isMerged(depSpec, dep));
      if (typeof merged !== 'boolean') return merged;
      if (!merged) return { class: 'checkpoint-unmet', message: `dependency "${depId}" is not merged (checkpoint: merged)` };
      continue;
    }
    if (checkpoint === 'green' && dep.commit) {
      const ci = forge.kind === 'local' ? dep.ci_conclusion : await asked('for its CI', () => forge.ciConclusion(depSpec, dep.commit!));
      if (ci !== null && typeof ci === 'object') return ci;
      if (ci !== 'success' && ci !== 'none') {
        return { class: 'checkpoint-unmet', message: `dependency "${depId}" CI is ${ci ?? 'unknown'} (checkpoint: green)` };
      }
    }
    if (dep.branch && dep.commit) {
      const branch = dep.branch;
      // A dependency in fork mode pushed to its fork (a lane job of its own may have made it).
      if (dep.head_repo) forge.useHeadRepo?.(depSpec, dep.head_repo);
      const head = await asked(`where ${branch} is`, () => forge.branchHead(depSpec, branch));
      if (head !== null && typeof head === 'object') return head;
      if (head !== dep.commit) {
        return {
          class: 'checkpoint-unmet',
          message: `dependency "${depId}": ${dep.branch} is at ${head?.slice(0, 12) ?? 'nothing'} on the forge, not ${dep.commit.slice(0, 12)}`,
        };
      }
    }
  }
  return undefined;
}

/**
 * 0 when every lane completed (or had nothing to do), 1 when any lane failed or was skipped, 2 when the fleet had
 * targets and every one was excluded: a run in which no lane ran did nothing, and must not pass as done. (A fleet
 * with no target at all, an issue queue with no ready issue, did what it was asked.)
 */
export function exitCodeFor(manifest: Manifest): 0 | 1 | 2 {
  if (nothingRan(manifest)) return 2;
  // A skipped lane did not get the change either (its dependency failed, was excluded or never reached its
  // checkpoint), so it fails the run just as a failed lane does; an excluded target was refused on purpose.
  // A lane held out of the integration did not get into the one PR either.
  return manifest.lanes.some((l) => l.status === 'failed' || l.status === 'skipped' || l.integration?.state === 'held') ? 1 : 0;
}
