/**
 * A leg's share of the account's write limits (GitHub only): the plan divides them among the legs that run at once,
 * each leg paces its writes to its share, and a leg whose write slots another shard of its wave holds waits until that
 * shard has finished (src/core/budget.ts has the arithmetic).
 */
import { join } from 'node:path';
import { type LegPace, legPace, predecessorIndex, publishWrites, type WriteBudget, type WriteWindow, writeBudget, writesPerLane } from '../../core/budget.js';
import type { LaneRecord, Manifest, Shard } from '../../core/model.js';
import type { ResolvedFleet } from '../../core/validate.js';
import type { ArtifactStore, RunJob, RunJobs } from '../../ports.js';
import { fetchLaneResults, LANE_ARTIFACT_PREFIX, laneArtifact, type PlanBundle } from './matrix-artifacts.js';

/** The account's write limits divided among the legs that run at once: the workflow's max-parallel, or the widest wave if narrower. */
export function fleetBudget(manifest: Manifest, fleet: ResolvedFleet, limits: WriteWindow[]): WriteBudget {
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
