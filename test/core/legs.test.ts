/**
 * How many matrix legs a wave gets (src/core/legs.ts). GitHub starts a runner per job and bills each job rounded up
 * to a whole minute ("Billable job execution minutes … are rounded up to the next minute":
 * https://docs.github.com/en/actions/monitoring-and-troubleshooting-workflows/viewing-job-execution-time), and runs a
 * matrix at most max-parallel legs at a time: a wave's legs are max_parallel, or full rounds of it, never a leg per
 * lane by default.
 */
import { describe, expect, it } from 'vitest';
import { GITHUB_WRITE_LIMITS } from '../../src/core/budget.js';
import { cutByCost, LANE_SECONDS, laneSeconds, legCount, legSizing } from '../../src/core/legs.js';
import { buildPlan, shardWave } from '../../src/core/plan.js';
import { type ResolvedFleet, validateFleetFile } from '../../src/core/validate.js';

function fleetOf(n: number, extra: Record<string, unknown> = {}): ResolvedFleet {
  const targets = Array.from({ length: n }, (_, i) => ({ repo: `acme/t-${String(i).padStart(4, '0')}` }));
  const v = validateFleetFile({ name: 'legs', forge: 'github', directive: 'Stamp.', run: 'echo x > STAMP', targets, ...extra }, 'fleet.yml');
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  return v.fleet;
}

function wave1(fleet: ResolvedFleet, maxParallel: number, opts: Parameters<typeof legSizing>[3] = {}) {
  const sizing = legSizing(fleet.file, fleet.lanes, maxParallel, opts);
  const r = buildPlan(fleet, [], { maxParallel, maxWaves: 20, file: 'fleet.yml', sizing });
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.plan.waves[0]!;
}

describe('legs of a wave', () => {
  it('gives 300 script lanes at max_parallel 8 eight legs of 37 or 38 lanes, one round, in lane order', () => {
    const w = wave1(fleetOf(300, { pr: { open: false } }), 8);
    expect(w.shards).toHaveLength(8);
    expect(w.parallel).toBe(8);
    expect(new Set(w.shards.map((s) => s.lanes.length))).toEqual(new Set([37, 38]));
    expect(w.shards.flatMap((s) => s.lanes)).toEqual(w.lanes);
  });

  it('adds full rounds of max_parallel where a leg would not fit half of the wave job timeout', () => {
    // 300 lanes × 60 s = 5 h; half of a 120-minute timeout, less a leg's start, is 59 min: 6 legs' worth, so 8 (one round).
    expect(wave1(fleetOf(300, { pr: { open: false } }), 4).shards).toHaveLength(8);
    // At a 30-minute timeout each leg has 14 min: 22 legs' worth, so 24 (six rounds of 4).
    expect(wave1(fleetOf(300, { pr: { open: false } }), 4, { timeoutMinutes: 30 }).shards).toHaveLength(24);
  });

  it('keeps a leg per lane for an agent fleet by default, whose lanes would share the agent CLI the leg installs', () => {
    const agent = fleetOf(60, { run: undefined, agent: { preset: 'claude' } });
    expect(wave1(agent, 8).shards).toHaveLength(60);
    // One agent lane among script lanes (targets that override the agent with a command) is enough.
    const targets = Array.from({ length: 20 }, (_, i) => ({ repo: `acme/t-${i}`, ...(i ? { run: 'true' } : {}) }));
    expect(wave1(fleetOf(20, { run: undefined, agent: { preset: 'claude' }, targets }), 8).shards).toHaveLength(20);
    expect(wave1(fleetOf(20, { run: undefined, agent: { preset: 'claude' }, targets: targets.slice(1) }), 8).shards).toHaveLength(8);
  });

  it('sizes agent lanes larger than script lanes with legs: shared', () => {
    const agent = fleetOf(60, { run: undefined, agent: { preset: 'claude' }, legs: 'shared' });
    // 60 × 600 s = 10 h at 59 min a leg: 11 legs' worth, so 16 at max_parallel 8.
    expect(wave1(agent, 8).shards).toHaveLength(16);
    expect(laneSeconds(agent.lanes[0]!, agent.file, false)).toBe(LANE_SECONDS.agent);
  });

  it("counts each check and the wait for CI in a lane's expected time", () => {
    const checked = fleetOf(1, { checks: ['npm ci', 'npm test'], ci: { wait: true } });
    expect(laneSeconds(checked.lanes[0]!, checked.file, false)).toBe(LANE_SECONDS.script + 2 * LANE_SECONDS.check + LANE_SECONDS.ci);
    // A dry run waits for no CI.
    expect(laneSeconds(checked.lanes[0]!, checked.file, true)).toBe(LANE_SECONDS.script + 2 * LANE_SECONDS.check);
    // 300 such lanes (600 s each: 50 h in all) at 59 min a leg: 51 legs' worth, so 56.
    expect(wave1(fleetOf(300, { checks: ['npm ci', 'npm test'], ci: { wait: true }, pr: { open: false } }), 8).shards).toHaveLength(56);
  });

  it("counts each lane's wait for its write slots where writes are paced", () => {
    const fleet = fleetOf(600);
    const paced = legSizing(fleet.file, fleet.lanes, 8, { writeLimits: GITHUB_WRITE_LIMITS });
    const unpaced = legSizing(fleet.file, fleet.lanes, 8);
    if (paced.perLane || unpaced.perLane) throw new Error('sized per lane');
    const id = fleet.lanes[0]!.id;
    // 600 lanes × 1 write (the PR) pass the hourly share (450 of 500): a write every 8 s, a round of 8 legs × 1 write.
    expect(paced.seconds(id) - unpaced.seconds(id)).toBe(8 * 8);
    // 600 × (60 + 64) s at 59 min a leg: 22 legs' worth, so 24 (three rounds); unpaced 600 × 60 s: 11, so 16.
    expect(wave1(fleet, 8, { writeLimits: GITHUB_WRITE_LIMITS }).shards).toHaveLength(24);
    expect(wave1(fleet, 8).shards).toHaveLength(16);
  });

  it('never gives more legs than lanes, nor more than 256', () => {
    expect(wave1(fleetOf(3), 8).shards.map((s) => s.lanes.length)).toEqual([1, 1, 1]);
    expect(legCount(10_000, 10_000 * 600, 8, 3540, 256)).toBe(256);
    expect(legCount(5, 1, 8, 3540, 256)).toBe(5);
    expect(legCount(0, 0, 8, 3540, 256)).toBe(0);
  });

  it('keeps one lane per leg with legs: per-lane, up to 256', () => {
    const w = wave1(fleetOf(300, { legs: 'per-lane' }), 8);
    expect(w.shards).toHaveLength(256);
    expect(w.shards.filter((s) => s.lanes.length === 2)).toHaveLength(44);
  });

  it('cuts lanes by expected cost: a long lane gets a leg to itself', () => {
    const cost: Record<string, number> = { a: 10, b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, h: 1, i: 1, j: 1, k: 1 };
    expect(cutByCost(Object.keys(cost), (id) => cost[id]!, 2)).toEqual([['a'], ['b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k']]);
    // Every run keeps at least one lane, even where the cost would put two runs' ends together.
    expect(cutByCost(['a', 'b', 'c'], (id) => (id === 'c' ? 100 : 0), 3)).toEqual([['a'], ['b'], ['c']]);
    expect(cutByCost(['a', 'b'], () => 0, 2)).toEqual([['a'], ['b']]);
  });

  it('sizes the shards of a wave through shardWave, with parallel the legs that run at once', () => {
    const ids = Array.from({ length: 20 }, (_, i) => `l${String(i).padStart(2, '0')}`);
    const { shards, parallel } = shardWave(2, ids, 4, { sizing: { perLane: false, budgetS: 10_000, seconds: () => 60 } });
    expect(shards.map((s) => s.lanes.length)).toEqual([5, 5, 5, 5]);
    expect(shards.map((s) => s.id)).toEqual(['w2-s0', 'w2-s1', 'w2-s2', 'w2-s3']);
    expect(parallel).toBe(4);
  });

  it('gives the leg counts of the cost model in docs/actions/limits.md (How many legs), at max_parallel 8', () => {
    const legs = (n: number, extra: Record<string, unknown>, timeoutMinutes = 120) => {
      const fleet = fleetOf(n, extra);
      return wave1(fleet, 8, { writeLimits: GITHUB_WRITE_LIMITS, timeoutMinutes }).shards.map((x) => x.lanes.length);
    };
    const push = { pr: { open: false } };
    const agent = { run: undefined, agent: { preset: 'claude' }, legs: 'shared' };
    expect([300, 1000, 2000].map((n) => legs(n, push).length)).toEqual([8, 24, 40]);
    expect([300, 1000, 2000].map((n) => legs(n, {}).length)).toEqual([8, 40, 72]);
    expect([300, 1000].map((n) => legs(n, agent).length)).toEqual([56, 192]);
    // 1,000 targets writing 3 times a lane: 72 legs of about 14 lanes.
    const three = legs(1000, { pr: { labels: ['fleet'], reviewers: ['lead'] } });
    expect([three.length, three[0]]).toEqual([72, 14]);
    // A 360-minute wave job: the push-only 1,000 in one round of 8.
    expect(legs(1000, push, 360)).toHaveLength(8);
    // 2,000 agent lanes fill all 256 legs, 8 lanes each (about 81 min: past the budget, said in the docs).
    const many = legs(2000, { ...agent, ...push });
    expect([many.length, Math.max(...many)]).toEqual([256, 8]);
  });
});
