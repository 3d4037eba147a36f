/**
 * One write budget across every leg, through the real reusable workflow.
 *
 * GitHub counts content-creating requests per account, about 80 a minute and 500 an hour
 * (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits),
 * and every leg of a fleet writes as one account. Here the emulator enforces a compressed window (16 writes in any
 * 12 s) and Fleet is told the same limits (FLEET_GITHUB_WRITE_BUDGET, a test knob): the plan divides them among
 * the legs, and 24 legs that start together, each opening a PR and labelling it, are never refused.
 *
 * A narrower run has more legs than run at once: a leg that takes over another's write slots writes only after
 * that leg has finished, whatever order the legs end in.
 *
 * Then a secondary-limit refusal is injected on two legs' PRs: each is retried after GitHub's retry-after
 * ("you should not retry your request until after that many seconds has elapsed",
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit)
 * plus a jitter of its own, and the lanes complete.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { WriteBudget } from '../../src/core/budget.js';
import type { RunSummary } from '../support/actions-runner/index.js';
import { artifactFile, artifactsOf, dispatchFleet, explain, KNOBS, reportArtifact, startWorld, type World } from './world.js';

// Whole workflow runs of 24 legs: a loaded 2-core machine takes minutes.
vi.setConfig({ testTimeout: 420_000, hookTimeout: 600_000 });

const LEGS = 24;
// GitHub's pace (80 a minute, 72 planned: a write every 834 ms) is kept close (14 planned in 12 s: one every 858 ms) with
// a window 5× shorter; a window of 16 leaves 2 writes of slack, as GitHub's 80 leave 8, for a loaded machine's delays.
const WINDOW = { max: 16, windowMs: 12_000 };
let w: World;
let wide: { runId: number; s: RunSummary };
let narrow: { runId: number; s: RunSummary };
let narrowWrites: Array<{ time: number; path: string; fault?: string }>;
let faulted: { runId: number; s: RunSummary };
let retried: Array<{ time: number; repo: string }>;
let refusedAt: number[];

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);
const fleetFile = (targets: string[], maxParallel: number) => ({
  name: 'budget',
  forge: 'github',
  directive: 'Stamp.',
  run: 'echo stamped > STAMP',
  max_retries: 0,
  max_parallel: maxParallel,
  pr: { labels: ['fleet'] },
  targets: targets.map((n) => ({ repo: `acme/${n}` })),
});

function bundleOf(runId: number): { budget?: WriteBudget } {
  const a = artifactsOf(w, runId).get('fleet-plan.a1');
  if (!a) throw new Error(`run ${runId} has no plan`);
  return JSON.parse(artifactFile(w, a, 'fleet.json')) as { budget?: WriteBudget };
}

beforeAll(async () => {
  const wideTargets = names('wide', LEGS);
  w = await startWorld({
    emulator: { contentLimit: WINDOW },
    // Every leg at once, as GitHub runs a matrix up to its max-parallel; Fleet knows the emulator's compressed window.
    runner: { maxConcurrentJobs: LEGS + 2, extraEnv: { ...KNOBS, FLEET_GITHUB_WRITE_BUDGET: `${WINDOW.max}/${WINDOW.windowMs}` } },
    fleetFile: fleetFile(wideTargets, LEGS),
  });
  for (const name of wideTargets) await w.emu.createRepo({ owner: 'acme', name });
  w.emu.resetLog();
  wide = await dispatchFleet(w);

  const narrowTargets = names('narrow', 12);
  for (const name of narrowTargets) await w.emu.createRepo({ owner: 'acme', name });
  // The first leg is slow: the legs after the other three start while it runs, and the one that takes over its slots waits.
  // One lane per leg (legs: per-lane): by default 4 legs would run all 12 lanes in one round, and no leg would take over another's slots.
  const slowFirst = { ...fleetFile(narrowTargets, 4), legs: 'per-lane' };
  slowFirst.targets[0] = { ...slowFirst.targets[0]!, run: 'sleep 20 && echo stamped > STAMP' } as (typeof slowFirst.targets)[number];
  await w.commitControl({ 'fleet.yml': (await import('yaml')).stringify(slowFirst) });
  w.emu.resetLog();
  narrow = await dispatchFleet(w);
  narrowWrites = w.emu.requests.filter((q) => q.kind === 'rest' && q.method === 'POST' && /\/repos\/acme\/narrow-/.test(q.path));

  const few = names('few', 4);
  for (const name of few) await w.emu.createRepo({ owner: 'acme', name });
  await w.commitControl({ 'fleet.yml': (await import('yaml')).stringify(fleetFile(few, 4)) });
  // The first two PRs the legs open are refused (a secondary limit, retry-after: 1 s), at about the same time.
  const fault = w.emu.fault({ kind: 'secondary-rate-limit', match: { method: 'POST', path: '/repos/{owner}/{repo}/pulls' }, times: 2, retryAfterSec: 1 });
  w.emu.resetLog();
  faulted = await dispatchFleet(w);
  expect(fault.hits).toBe(2);
  const pulls = w.emu.requests.filter((q) => q.method === 'POST' && q.route === '/repos/{owner}/{repo}/pulls');
  refusedAt = pulls.filter((q) => q.status === 403).map((q) => q.time);
  const refusedRepos = new Set(pulls.filter((q) => q.status === 403).map((q) => q.path.split('/').slice(2, 4).join('/')));
  retried = pulls.filter((q) => q.status === 201 && refusedRepos.has(q.path.split('/').slice(2, 4).join('/'))).map((q) => ({ time: q.time, repo: q.path }));
});
afterAll(() => w?.close());

describe(`${LEGS} legs opening PRs at once under a compressed secondary limit (${WINDOW.max} writes in ${WINDOW.windowMs / 1000} s)`, () => {
  it('plans a share per leg: the fleet paces 14 writes a window (90%), each leg its PR and label in its 2 slots of every 48, in the digest-pinned plan', () => {
    const { budget } = bundleOf(wide.runId);
    expect(budget).toMatchObject({
      legs_at_once: LEGS,
      writes_per_lane: 2,
      burst: 2,
      total_writes: 2 * LEGS,
      slot_ms: Math.ceil(12_000 / 14),
      binding: { max: 16, window_ms: 12_000 },
    });
    expect(budget!.leg_interval_ms).toBe(LEGS * 2 * budget!.slot_ms);
  });

  it('completes every lane, each PR opened and labelled, and the emulator refused no write', () => {
    expect(wide.s.conclusion, explain(wide.s)).toBe('success');
    const { manifest } = reportArtifact(w, wide.runId);
    expect(manifest.summary).toMatchObject({ total: LEGS, completed: LEGS, failed: 0 });
    for (const name of names('wide', LEGS)) {
      const prs = w.emu.pullRequests(`acme/${name}`);
      expect(prs, name).toHaveLength(1);
      expect(prs[0]!.labels).toEqual(['fleet']);
    }
    expect(w.emu.requests.filter((q) => q.fault === 'content-limit' || q.status === 429)).toEqual([]);
    // Each leg said what it keeps to.
    const legLog = wide.s.jobs.find((j) => j.name.startsWith('fleet / wave 1 ('))!.log;
    expect(legLog).toMatch(/Write budget: this leg writes at most 2 times, \d+ ms apart, every \d+ ms, in its own slots/);
  });

  it('the plan summary tells the approver how the budget is shared', () => {
    const plan = wide.s.jobs.find((j) => j.name === 'fleet / plan')!;
    expect(plan.summary ?? '').toMatch(/### Write budget/);
  });
});

describe('12 legs, 4 at once, under the same limit', () => {
  it('each leg writes only after the leg whose slots it takes over has written its last, and no write is refused', () => {
    expect(narrow.s.conclusion, explain(narrow.s)).toBe('success');
    const { manifest } = reportArtifact(w, narrow.runId);
    expect(manifest.summary).toMatchObject({ total: 12, completed: 12 });
    expect(narrowWrites.filter((q) => q.fault === 'content-limit')).toEqual([]);
    const repoOf = new Map(manifest.lanes.map((l) => [l.lane, l.repo]));
    const shards = manifest.waves[0]!.shards;
    const times = (shard: number) =>
      narrowWrites.filter((q) => shards[shard]!.lanes.some((l) => q.path.startsWith(`/repos/${repoOf.get(l)}/`))).map((q) => q.time);
    for (let k = 4; k < shards.length; k++) {
      expect(times(k).length, shards[k]!.id).toBe(2);
      expect(Math.min(...times(k)), `${shards[k]!.id} after ${shards[k - 4]!.id}`).toBeGreaterThan(Math.max(...times(k - 4)));
    }
    const waited = narrow.s.jobs.map((j) => j.log).join('\n');
    expect(waited).toMatch(/Write budget: waiting for shard w0-s0, which holds these write slots until it finishes/);
  });
});

describe('a write refused by a secondary limit', () => {
  it('is retried after retry-after plus jitter, two legs not at the same instant, and the lanes complete', () => {
    expect(faulted.s.conclusion, explain(faulted.s)).toBe('success');
    expect(reportArtifact(w, faulted.runId).manifest.summary).toMatchObject({ total: 4, completed: 4, failed: 0 });
    expect(refusedAt).toHaveLength(2);
    expect(retried).toHaveLength(2);
    // Not before GitHub's retry-after (1 s) had passed since the refusal …
    for (const r of retried) expect(r.time - Math.min(...refusedAt)).toBeGreaterThanOrEqual(1000);
    // … and not in lockstep.
    expect(Math.abs(retried[0]!.time - retried[1]!.time)).toBeGreaterThan(50);
    const logs = faulted.s.jobs.map((j) => j.log).join('\n');
    const jitters = [...logs.matchAll(/secondary rate limit on POST \/repos\/acme\/few-\d+\/pulls: retry 1\/3 in 1s \(\+(\d+) ms jitter\)/g)].map((m) => m[1]);
    expect(jitters).toHaveLength(2);
  });
});
