/**
 * A wave with more lanes than GitHub's matrix allows: 300 lanes in two waves
 * through the real reusable workflow. The plan shards wave 1 into exactly 256
 * legs (44 of them with two lanes), GitHub's expression and matrix rules take
 * its output, and every leg is listed, queued, with its shard's name. The run
 * is cancelled once the matrix has expanded: running all 300 legs takes
 * minutes on two cores, and is measured by `npm run bench`
 * (simulated_fleet_300_s) instead.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CONTROL_REPO, planOf, startWorld, until, type World } from './world.js';

// Whole workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World;
let runId: number;
const N = 300;

beforeAll(async () => {
  const names = Array.from({ length: N }, (_, i) => `t-${String(i).padStart(3, '0')}`);
  w = await startWorld({
    fleetFile: {
      name: 'wide',
      forge: 'github',
      directive: 'Stamp.',
      run: 'echo stamped > STAMP',
      max_parallel: 32,
      // One lane per leg: what GitHub's matrix limit bounds (by default the plan gives this wave 32 legs).
      legs: 'per-lane',
      // 290 lanes in wave 1, and 10 that wait for t-000 in wave 2.
      targets: names.map((n, i) => ({ repo: `acme/${n}`, ...(i >= 290 ? { depends_on: ['t-000'] } : {}) })),
    },
  });
  for (const name of names) await w.emu.createRepo({ owner: 'acme', name });
  const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { directive: 'Stamp.', 'dry-run': true } });
  runId = run.id;
  const legs = () => w.emu.workflowRun(runId)!.jobs.filter((j) => j.name.startsWith('fleet / wave 1 ('));
  await until(() => legs().length >= 256, 'wave 1 to expand', 240_000);
  run.cancel();
  await w.runner.finish(run);
});
afterAll(() => w?.close());

describe('a wave past the 256-leg matrix limit', () => {
  it('is planned as 256 shards (the first 34 with two lanes) and a second wave of 10 lanes', () => {
    const { manifest } = planOf(w, runId);
    expect(manifest.waves.map((x) => x.lanes.length)).toEqual([290, 10]);
    const shards = manifest.waves[0]!.shards;
    expect(shards).toHaveLength(256);
    expect(shards.filter((s) => s.lanes.length === 2)).toHaveLength(34);
    expect(shards.flatMap((s) => s.lanes).sort()).toEqual(manifest.waves[0]!.lanes.slice().sort());
    expect(manifest.waves[1]!.shards).toHaveLength(10);
  });

  it("expands through the workflow into exactly 256 legs, each named after its shard, with the fleet's budget as the plan's max-parallel output", () => {
    const jobs = w.emu.workflowRun(runId)!.jobs;
    const wave1 = jobs.filter((j) => j.name.startsWith('fleet / wave 1 ('));
    expect(wave1).toHaveLength(256);
    expect(new Set(wave1.map((j) => j.name)).size).toBe(256);
    expect(wave1.map((j) => j.name)).toContain('fleet / wave 1 (w0-s255)');
    expect(jobs.some((j) => j.name.startsWith('fleet / wave 2 ('))).toBe(false);
    const { manifest } = planOf(w, runId);
    expect(manifest.max_parallel).toBe(32);
  });
});
