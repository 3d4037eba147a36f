/**
 * A leg whose shard takes over another shard's write slots (src/core/budget.ts) waits, before its first write, until
 * that shard has finished: its lanes' artifacts of this attempt, read from a real artifact folder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { newLaneRecord, type LaneRecord } from '../../src/core/model.js';
import { FolderArtifactStore } from '../../src/local/artifacts.js';
import type { RunJob } from '../../src/ports.js';
import { writeLaneResult } from '../../src/steps/lane/index.js';
import { laneArtifact, type PlanBundle } from '../../src/steps/drivers/matrix-artifacts.js';
import { predecessorOf, waitForPredecessor } from '../../src/steps/drivers/matrix-pace.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(join(os.tmpdir(), 'fleet-predecessor-'));
  dirs.push(d);
  return d;
};

/** Four shards of two lanes in one wave, two legs at once: w0-s2 takes w0-s0's slots, w0-s3 takes w0-s1's. */
function bundle(attempt = 1): PlanBundle {
  const shards = [0, 1, 2, 3].map((s) => ({ id: `w0-s${s}`, wave: 0, lanes: [`l${s}a`, `l${s}b`] }));
  return {
    attempt,
    first_wave: 0,
    wave_jobs: 8,
    fleet: {} as PlanBundle['fleet'],
    manifest: {
      fleet_id: 'fleet-1',
      waves: [{ index: 0, lanes: shards.flatMap((s) => s.lanes), exclusive: false, shards, parallel: 2 }],
    } as unknown as PlanBundle['manifest'],
    budget: { legs_at_once: 2 } as PlanBundle['budget'],
  };
}

async function finish(store: FolderArtifactStore, lane: string, attempt: number, status: LaneRecord['status'] = 'completed') {
  const root = tmp();
  const rec = { ...newLaneRecord({ repo: 'acme/x', lane, wave: 0, branch: 'fleet/x', depends_on: [] }), status };
  await writeLaneResult(root, 'fleet-1', rec);
  await store.upload(laneArtifact(lane, attempt), [join(root, 'lanes', lane, 'result.json')], root);
}

/** A clock the sleeps advance, and a hook to finish lanes while the leg polls. */
function world(onSleep: (n: number) => Promise<void> | void = () => undefined) {
  let clock = 0;
  let sleeps = 0;
  return {
    now: () => clock,
    sleep: async (ms: number) => {
      clock += ms;
      await onSleep(++sleeps);
    },
    get sleeps() {
      return sleeps;
    },
  };
}

describe('the shard before a leg in its write slots', () => {
  it('is the one legs_at_once places earlier in the wave; the first legs have none and never wait', async () => {
    const b = bundle();
    expect(predecessorOf(b, 'w0-s3')?.id).toBe('w0-s1');
    expect(predecessorOf(b, 'w0-s1')).toBeUndefined();
    expect(predecessorOf({ ...b, budget: undefined }, 'w0-s3')).toBeUndefined();
    const w = world();
    await waitForPredecessor({ store: new FolderArtifactStore(tmp()), root: tmp(), bundle: b, shard: 'w0-s1', attempt: 1, ...w });
    expect(w.sleeps).toBe(0);
  });

  it('holds the leg until every lane of that shard has left its artifact in this attempt', async () => {
    const store = new FolderArtifactStore(tmp());
    await finish(store, 'l1a', 1);
    await finish(store, 'l3a', 1); // another shard's lane: not what w0-s3 waits for
    const lines: string[] = [];
    const w = world(async (n) => {
      if (n === 3) await finish(store, 'l1b', 1);
    });
    await waitForPredecessor({ store, root: tmp(), bundle: bundle(), shard: 'w0-s3', attempt: 1, ...w, log: (l) => lines.push(l), pollMs: 1000 });
    expect(w.sleeps).toBe(3);
    expect(lines[0]).toContain('waiting for shard w0-s1');
    expect(lines.at(-1)).toContain("shard w0-s1 finished; this leg's writes start (waited 3 s)");
  });

  it("does not take an earlier attempt's artifact for this attempt's", async () => {
    const store = new FolderArtifactStore(tmp());
    await finish(store, 'l0a', 1, 'failed');
    await finish(store, 'l0b', 1);
    // Attempt 2 re-runs w0-s0 (it failed): w0-s2 waits for its failed lane's new artifact, not for the completed one it keeps.
    const w = world(async (n) => {
      if (n === 2) await finish(store, 'l0a', 2);
    });
    await waitForPredecessor({ store, root: tmp(), bundle: bundle(1), shard: 'w0-s2', attempt: 2, ...w });
    expect(w.sleeps).toBe(2);
  });

  it('after "Re-run failed jobs", does not wait for a shard that did not fail: it does not run again', async () => {
    const store = new FolderArtifactStore(tmp());
    await finish(store, 'l0a', 1);
    await finish(store, 'l0b', 1, 'skipped');
    const w = world();
    await waitForPredecessor({ store, root: tmp(), bundle: bundle(1), shard: 'w0-s2', attempt: 2, ...w });
    expect(w.sleeps).toBe(0);
  });

  it("stops waiting when the run's jobs show that shard's job ended without its artifacts (a lost runner)", async () => {
    const store = new FolderArtifactStore(tmp());
    let asked = 0;
    const jobs = {
      list: async (): Promise<RunJob[]> => {
        asked++;
        return [{ name: 'wave 1 (w0-s1)', status: asked < 2 ? 'in_progress' : 'completed', conclusion: asked < 2 ? null : 'failure', html_url: null }];
      },
    };
    const lines: string[] = [];
    const w = world();
    await waitForPredecessor({
      store,
      root: tmp(),
      bundle: bundle(),
      shard: 'w0-s3',
      attempt: 1,
      jobs,
      jobsAfterMs: 10_000,
      pollMs: 1000,
      ...w,
      log: (l) => lines.push(l),
    });
    // Asked after 10 s, then (backing off) after 20 s: the second answer frees the slots.
    expect(asked).toBe(2);
    expect(w.now()).toBe(20_000);
    expect(lines.join('\n')).toContain('shard w0-s1 ended (failure) without the artifacts of l1a, l1b; its slots are free');
  });

  it('keeps waiting through a failed artifact listing, and says so: giving up would share the slots', async () => {
    const folder = new FolderArtifactStore(tmp());
    await finish(folder, 'l1a', 1);
    await finish(folder, 'l1b', 1);
    let calls = 0;
    const store = {
      upload: folder.upload.bind(folder),
      download: folder.download.bind(folder),
      list: async (prefix: string) => {
        if (++calls === 1) throw new Error('results service: 503');
        return folder.list(prefix);
      },
    };
    const lines: string[] = [];
    const w = world();
    await waitForPredecessor({ store, root: tmp(), bundle: bundle(), shard: 'w0-s3', attempt: 1, ...w, log: (l) => lines.push(l) });
    expect(calls).toBe(2);
    expect(lines[0]).toContain("listing the run's artifacts failed (results service: 503); trying again");
  });
});
