import { describe, expect, it } from 'vitest';
import { buildPlan, dependentsOf, findCycle, findCycles, shardWave, type Plan, type PlanOptions } from '../../src/core/plan.js';
import { validateFleetFile, type ResolvedFleet } from '../../src/core/validate.js';
import { scopesOverlap } from '../../src/core/glob.js';
import type { Exclusion } from '../../src/core/model.js';
import { scale } from '../support/scale.js';

type Target = {
  repo: string;
  lane?: string;
  depends_on?: string[];
  owns?: string[];
  exclusive?: boolean;
};

const FILE = 'fleet.yml';

function fleetOf(targets: Target[], extra: Record<string, unknown> = {}): ResolvedFleet {
  const v = validateFleetFile({ name: 'test', directive: 'do the thing', run: 'true', targets, ...extra }, FILE);
  if (!v.ok) throw new Error(`fleet did not validate: ${JSON.stringify(v.problems)}`);
  return v.fleet;
}

const OPTS: PlanOptions = { maxParallel: 8, maxWaves: 20, file: FILE };

function plan(targets: Target[], exclusions: Exclusion[] = [], opts: Partial<PlanOptions> = {}, extra: Record<string, unknown> = {}): Plan {
  const r = buildPlan(fleetOf(targets, extra), exclusions, { ...OPTS, ...opts });
  if (!r.ok) throw new Error(`plan failed: ${JSON.stringify(r.problems)}`);
  return r.plan;
}

function waveMap(p: Plan): Record<string, number> {
  return Object.fromEntries(p.lanes.map((l) => [l.spec.id, l.wave]));
}

/** Lanes on one repository each: `o/<id>`. */
function t(id: string, depends_on: string[] = [], more: Partial<Target> = {}): Target {
  return { repo: `o/${id}`, lane: id, depends_on, ...more };
}

describe('waves by longest path', () => {
  it('puts a linear chain one lane per wave', () => {
    const p = plan([t('c', ['b']), t('a'), t('b', ['a'])]);
    expect(waveMap(p)).toEqual({ a: 0, b: 1, c: 2 });
    expect(p.waves.map((w) => w.lanes)).toEqual([['a'], ['b'], ['c']]);
    expect(p.waves.map((w) => w.index)).toEqual([0, 1, 2]);
    expect(p.contention).toEqual([]);
    expect(p.excluded).toEqual([]);
    expect(p.skipped).toEqual([]);
  });

  it('layers a diamond: the join waits for the longer branch', () => {
    // a → b → d, a → c → e → d (d depends on b and e)
    const p = plan([t('a'), t('b', ['a']), t('c', ['a']), t('e', ['c']), t('d', ['b', 'e'])]);
    expect(waveMap(p)).toEqual({ a: 0, b: 1, c: 1, e: 2, d: 3 });
    expect(p.waves[1]!.lanes).toEqual(['b', 'c']);
  });

  it('puts independent lanes in one wave, lanes sorted by id, plan lanes sorted by (wave, id)', () => {
    const p = plan([t('z'), t('m'), t('a'), t('k', ['z'])]);
    expect(p.waves.map((w) => w.lanes)).toEqual([['a', 'm', 'z'], ['k']]);
    expect(p.lanes.map((l) => `${l.wave}:${l.spec.id}`)).toEqual(['0:a', '0:m', '0:z', '1:k']);
    expect(p.waves[0]!.exclusive).toBe(false);
  });

  it('gives the same plan whatever the order of the targets', () => {
    const targets = [
      t('a'),
      t('b', ['a']),
      t('c', ['a']),
      t('d', ['b', 'c']),
      { repo: 'o/x', lane: 'x1', owns: ['src/**'] },
      { repo: 'o/x', lane: 'x2', owns: ['src/api/**'] },
    ];
    const strip = (p: Plan) => ({ ...p, lanes: p.lanes.map((l) => [l.spec.id, l.wave]) });
    expect(strip(plan(targets))).toEqual(strip(plan([...targets].reverse())));
  });
});

describe('cycles', () => {
  it('names the path of a cycle of three, on the depends_on field of a lane in it', () => {
    const fleet = fleetOf([t('x'), t('a', ['b']), t('b', ['c']), t('c', ['a'])]);
    const r = buildPlan(fleet, [], OPTS);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toHaveLength(1);
    const [problem] = r.problems;
    expect(problem!.file).toBe(FILE);
    expect(problem!.field).toBe('targets[1].depends_on'); // lane a is targets[1]
    expect(problem!.message).toContain('a → b → c → a');
  });

  it('reports two separate cycles, not only the first', () => {
    const fleet = fleetOf([t('a', ['b']), t('b', ['a']), t('ok'), t('p', ['q']), t('q', ['r']), t('r', ['p'])]);
    const r = buildPlan(fleet, [], OPTS);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const messages = r.problems.map((x) => x.message);
    expect(messages.some((m) => m.includes('a → b → a'))).toBe(true);
    expect(messages.some((m) => m.includes('p → q → r → p'))).toBe(true);
    expect(r.problems.map((x) => x.field).sort()).toEqual(['targets[0].depends_on', 'targets[3].depends_on']);
  });

  it('reports both loops of a figure eight sharing one lane', () => {
    expect(
      findCycles([
        { id: 'a', depends_on: ['b', 'c'] },
        { id: 'b', depends_on: ['a'] },
        { id: 'c', depends_on: ['a'] },
      ]),
    ).toEqual([
      ['a', 'b', 'a'],
      ['a', 'c', 'a'],
    ]);
  });

  it('detects cycles through excluded lanes too', () => {
    const fleet = fleetOf([t('a', ['b']), t('b', ['a'])]);
    const r = buildPlan(fleet, [{ repo: 'o/a', lane: 'a', reason: 'archived', detail: null }], OPTS);
    expect(r.ok).toBe(false);
  });

  it('findCycle returns one cycle path or undefined', () => {
    expect(
      findCycle([
        { id: 'a', depends_on: [] },
        { id: 'b', depends_on: ['a'] },
      ]),
    ).toBeUndefined();
    expect(
      findCycle([
        { id: 'c', depends_on: ['a'] },
        { id: 'b', depends_on: ['c'] },
        { id: 'a', depends_on: ['b'] },
      ]),
    ).toEqual(['a', 'b', 'c', 'a']);
    expect(findCycle([{ id: 's', depends_on: ['s'] }])).toEqual(['s', 's']);
    // unknown dependencies are validate.ts's business: ignored here
    expect(findCycle([{ id: 'a', depends_on: ['ghost'] }])).toBeUndefined();
  });

  it('finds a cycle at the end of a 10,000-lane chain without recursion', () => {
    const n = scale(10_000, 500);
    const lanes = Array.from({ length: n }, (_, i) => ({ id: `l${String(i).padStart(5, '0')}`, depends_on: i ? [`l${String(i - 1).padStart(5, '0')}`] : [] }));
    expect(findCycle(lanes)).toBeUndefined();
    lanes[0]!.depends_on = [lanes[n - 1]!.id];
    const cycle = findCycle(lanes)!;
    expect(cycle).toHaveLength(n + 1);
    expect(cycle[0]).toBe('l00000');
    expect(cycle[1]).toBe(lanes[n - 1]!.id);
  });
});

describe('contention', () => {
  it('pushes a same-repository lane with overlapping owns into a later wave and records why', () => {
    const p = plan([
      { repo: 'o/r', lane: 'api', owns: ['src/api/**'] },
      { repo: 'o/r', lane: 'core', owns: ['src/**'] },
    ]);
    expect(waveMap(p)).toEqual({ api: 0, core: 1 });
    expect(p.contention).toEqual([
      {
        lane: 'core',
        repo: 'o/r',
        wanted_wave: 0,
        wave: 1,
        because_of: 'api',
        reason: 'owns "src/**" overlaps "src/api/**" of lane "api" in the same repository',
      },
    ]);
  });

  it('keeps disjoint owns of one repository in one wave', () => {
    const p = plan([
      { repo: 'o/r', lane: 'docs', owns: ['docs/**'] },
      { repo: 'o/r', lane: 'code', owns: ['src/**'] },
    ]);
    expect(p.waves.map((w) => w.lanes)).toEqual([['code', 'docs']]);
    expect(p.contention).toEqual([]);
  });

  it('never makes lanes of different repositories contend', () => {
    const p = plan([
      { repo: 'o/one', lane: 'one' },
      { repo: 'o/two', lane: 'two' },
      { repo: 'o/three', lane: 'three', owns: ['src/**'] },
      { repo: 'o/four', lane: 'four', owns: ['src/**'] },
    ]);
    expect(p.waves).toHaveLength(1);
    expect(p.contention).toEqual([]);
  });

  it('makes two whole-repository lanes (no owns) contend', () => {
    const p = plan([
      { repo: 'o/r', lane: 'a' },
      { repo: 'o/r', lane: 'b' },
      { repo: 'o/r', lane: 'c', owns: ['docs/**'] },
    ]);
    expect(waveMap(p)).toEqual({ a: 0, b: 1, c: 2 });
    expect(p.contention.map((c) => [c.lane, c.wanted_wave, c.wave, c.because_of])).toEqual([
      ['b', 0, 1, 'a'],
      ['c', 0, 2, 'a'],
    ]);
    expect(p.contention[0]!.reason).toContain('whole repository');
  });

  it('lets dependents of a pushed lane use its pushed wave', () => {
    const p = plan([
      { repo: 'o/r', lane: 'a' },
      { repo: 'o/r', lane: 'b' },
      { repo: 'o/other', lane: 'after-b', depends_on: ['b'] },
    ]);
    expect(waveMap(p)).toEqual({ a: 0, b: 1, 'after-b': 2 });
    expect(p.contention).toHaveLength(1); // after-b was not pushed: its dependency placed it
  });

  it('puts a pushed lane in the first wave that fits, not always a new one', () => {
    const p = plan([
      { repo: 'o/r', lane: 'a', owns: ['src/**'] },
      { repo: 'o/x', lane: 'x1' },
      { repo: 'o/x', lane: 'x2', depends_on: ['x1'] },
      { repo: 'o/x', lane: 'x3', depends_on: ['x2'] },
      { repo: 'o/r', lane: 'b', owns: ['src/*.ts'] },
    ]);
    expect(waveMap(p)).toEqual({ a: 0, b: 1, x1: 0, x2: 1, x3: 2 });
    expect(p.waves).toHaveLength(3);
  });

  it('gives an exclusive lane a wave of its own and places its dependents after it', () => {
    const p = plan([t('a'), t('b'), t('solo', [], { exclusive: true }), t('c', ['solo']), t('d')]);
    const w = waveMap(p);
    expect(w).toEqual({ a: 0, b: 0, d: 0, solo: 1, c: 2 });
    expect(p.waves[1]).toMatchObject({ lanes: ['solo'], exclusive: true });
    expect(p.waves[0]!.exclusive).toBe(false);
    expect(p.contention).toEqual([
      { lane: 'solo', repo: 'o/solo', wanted_wave: 0, wave: 1, because_of: 'a', reason: 'exclusive lane needs a wave of its own' },
    ]);
  });

  it('pushes other lanes out of an exclusive lane’s wave', () => {
    // 'a-solo' sorts first at level 0, takes wave 0; b and c go to wave 1.
    const p = plan([t('a-solo', [], { exclusive: true }), t('b'), t('c')]);
    expect(waveMap(p)).toEqual({ 'a-solo': 0, b: 1, c: 1 });
    expect(p.contention.map((c) => [c.lane, c.because_of, c.reason])).toEqual([
      ['b', 'a-solo', 'lane "a-solo" is exclusive'],
      ['c', 'a-solo', 'lane "a-solo" is exclusive'],
    ]);
  });
});

describe('exclusions', () => {
  const graph = [t('base'), t('mid', ['base']), t('top', ['mid']), t('other'), t('uses-other', ['other'])];

  it('skips dependents of an excluded lane transitively, with the reason and root, and leaves the rest alone', () => {
    const p = plan(graph, [{ repo: 'o/base', lane: 'base', reason: 'archived', detail: 'archived on 2024-01-01' }]);
    expect(p.excluded).toEqual([{ repo: 'o/base', lane: 'base', reason: 'archived', detail: 'archived on 2024-01-01' }]);
    expect(p.skipped).toEqual([
      { lane: 'mid', repo: 'o/mid', reason: 'dependency "base" was excluded (archived)', because_of: 'base' },
      { lane: 'top', repo: 'o/top', reason: 'dependency "base" was excluded (archived), reached through "mid"', because_of: 'base' },
    ]);
    expect(waveMap(p)).toEqual({ other: 0, 'uses-other': 1 });
  });

  it('takes exclusions from the fleet file exclude: as well, and dedupes', () => {
    const p = plan(
      graph,
      [
        { repo: 'o/other', lane: 'other', reason: 'not-found', detail: null },
        { repo: 'o/other', lane: 'other', reason: 'not-found', detail: null },
        { repo: 'o/mid', lane: 'mid', reason: 'archived', detail: null },
      ],
      {},
      { exclude: [{ repo: 'o/mid' }, { repo: 'o/gone', reason: 'archived' }] },
    );
    expect(p.excluded).toEqual([
      { repo: 'o/gone', lane: 'gone', reason: 'archived', detail: null },
      { repo: 'o/mid', lane: 'mid', reason: 'excluded-by-config', detail: null },
      { repo: 'o/other', lane: 'other', reason: 'not-found', detail: null },
    ]);
    expect(p.skipped.map((s) => [s.lane, s.because_of])).toEqual([
      ['top', 'mid'],
      ['uses-other', 'other'],
    ]);
    expect(waveMap(p)).toEqual({ base: 0 });
  });

  it('excludes every lane of a repository named by a repository-level exclusion', () => {
    const p = plan(
      [
        { repo: 'o/r', lane: 'r1', owns: ['a/**'] },
        { repo: 'o/r', lane: 'r2', owns: ['b/**'] },
        { repo: 'o/s', lane: 's', depends_on: ['r2'] },
      ],
      [{ repo: 'o/r', lane: 'r', reason: 'archived', detail: null }],
    );
    expect(p.excluded.map((e) => e.lane)).toEqual(['r1', 'r2']);
    expect(p.skipped).toEqual([{ lane: 's', repo: 'o/s', reason: 'dependency "r2" was excluded (archived)', because_of: 'r2' }]);
    expect(p.lanes).toEqual([]);
    expect(p.waves).toEqual([]);
  });

  it('names the nearest excluded root when a lane hangs off two', () => {
    const p = plan(
      [t('a'), t('b'), t('c', ['a']), t('d', ['c', 'b'])],
      [
        { repo: 'o/a', lane: 'a', reason: 'archived', detail: null },
        { repo: 'o/b', lane: 'b', reason: 'fork', detail: null },
      ],
    );
    expect(p.skipped.map((s) => [s.lane, s.because_of])).toEqual([
      ['c', 'a'],
      ['d', 'b'],
    ]);
  });

  it('accounts for every lane exactly once', () => {
    const p = plan(graph, [{ repo: 'o/mid', lane: 'mid', reason: 'archived', detail: null }]);
    const ids = [...p.lanes.map((l) => l.spec.id), ...p.excluded.map((e) => e.lane), ...p.skipped.map((s) => s.lane)].sort();
    expect(ids).toEqual(graph.map((x) => x.lane!).sort());
  });

  it('dependentsOf lists transitive dependents, sorted, without the lane itself', () => {
    const lanes = graph.map((x) => ({ id: x.lane!, depends_on: x.depends_on ?? [] }));
    expect(dependentsOf(lanes, 'base')).toEqual(['mid', 'top']);
    expect(dependentsOf(lanes, 'top')).toEqual([]);
    expect(
      dependentsOf(
        [
          { id: 'a', depends_on: ['b'] },
          { id: 'b', depends_on: ['a'] },
        ],
        'a',
      ),
    ).toEqual(['b']);
  });
});

describe('max_waves', () => {
  it('refuses a plan deeper than max_waves, naming the count, the chain and the fix', () => {
    const chain = Array.from({ length: 6 }, (_, i) => t(`s${i}`, i ? [`s${i - 1}`] : []));
    const r = buildPlan(fleetOf([...chain, t('loose')]), [], { ...OPTS, maxWaves: 4 });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toHaveLength(1);
    const [problem] = r.problems;
    expect(problem!.field).toBe('max_waves');
    expect(problem!.message).toContain('needs 6 waves but max_waves is 4');
    expect(problem!.message).toContain('s0 → s1 → s2 → s3 → s4 → s5');
    expect(problem!.message).toMatch(/raise max_waves/i);
    expect(problem!.message).toContain('depends_on');
  });

  it('says when contention, not the dependencies, made the plan too deep', () => {
    const r = buildPlan(
      fleetOf([
        { repo: 'o/r', lane: 'a' },
        { repo: 'o/r', lane: 'b' },
        { repo: 'o/r', lane: 'c' },
      ]),
      [],
      { ...OPTS, maxWaves: 2 },
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems[0]!.message).toContain('needs 3 waves');
    expect(r.problems[0]!.message).toContain('contention and exclusive lanes add 2');
  });

  it('accepts exactly max_waves', () => {
    const chain = Array.from({ length: 4 }, (_, i) => t(`s${i}`, i ? [`s${i - 1}`] : []));
    expect(buildPlan(fleetOf(chain), [], { ...OPTS, maxWaves: 4 }).ok).toBe(true);
  });
});

describe('sharding', () => {
  it('splits 600 lanes into 256 contiguous shards of 2 or 3', () => {
    const ids = Array.from({ length: 600 }, (_, i) => `l${String(i).padStart(3, '0')}`);
    const { shards, parallel } = shardWave(3, ids, 20);
    expect(shards).toHaveLength(256);
    expect(parallel).toBe(20);
    const sizes = shards.map((s) => s.lanes.length);
    expect(new Set(sizes)).toEqual(new Set([2, 3]));
    expect(sizes.filter((x) => x === 3)).toHaveLength(600 - 2 * 256);
    expect(shards.flatMap((s) => s.lanes)).toEqual(ids);
    expect(shards[0]!.id).toBe('w3-s0');
    expect(shards[255]!.id).toBe('w3-s255');
    expect(shards.every((s) => s.wave === 3)).toBe(true);
  });

  it('gives 5 lanes 5 shards, 2 at a time', () => {
    const { shards, parallel } = shardWave(0, ['a', 'b', 'c', 'd', 'e'], 2);
    expect(shards.map((s) => s.lanes)).toEqual([['a'], ['b'], ['c'], ['d'], ['e']]);
    expect(parallel).toBe(2);
  });

  it('honours a smaller maxShards and an empty wave', () => {
    expect(shardWave(1, ['a', 'b', 'c', 'd', 'e'], 8, { maxShards: 2 }).shards.map((s) => s.lanes)).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e'],
    ]);
    expect(shardWave(1, ['a', 'b', 'c', 'd', 'e'], 8, { maxShards: 2 }).parallel).toBe(2);
    expect(shardWave(2, [], 8)).toEqual({ shards: [], parallel: 0 });
  });

  it('shards every wave of a plan with the plan options', () => {
    const targets = Array.from({ length: 7 }, (_, i) => t(`l${i}`));
    const p = plan(targets, [], { maxParallel: 2, maxShards: 3 });
    expect(p.waves[0]!.shards.map((s) => s.lanes.length)).toEqual([3, 2, 2]);
    expect(p.waves[0]!.parallel).toBe(2);
  });
});

/** mulberry32: a tiny seeded PRNG so the big graph is the same every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

describe('a 10,000-lane random DAG', () => {
  const N = scale(10_000, 600);
  const EDGES = 2 * N;
  const REPOS = scale(100, 10);
  const rand = rng(42);
  const id = (i: number) => `l${String(i).padStart(5, '0')}`;
  const deps: Set<number>[] = Array.from({ length: N }, () => new Set());
  let edges = 0;
  while (edges < EDGES) {
    const a = Math.floor(rand() * N);
    const b = Math.floor(rand() * N);
    if (a === b) continue;
    const [lo, hi] = a < b ? [a, b] : [b, a];
    if (deps[hi]!.has(lo)) continue;
    deps[hi]!.add(lo);
    edges++;
  }
  const scopes = [['docs/**'], ['src/api/**'], ['src/**'], ['packages/a/**', 'packages/b/**'], ['packages/*/package.json'], ['test/**'], ['*.md']];
  const targets: Target[] = Array.from({ length: N }, (_, i) => {
    const target: Target = { repo: `org/repo-${i % REPOS}`, lane: id(i), depends_on: [...deps[i]!].map(id) };
    const r = rand();
    if (r < 0.85) target.owns = scopes[Math.floor(rand() * scopes.length)]!;
    if (rand() < 5 / N) target.exclusive = true; // 5 exclusive lanes expected, at any size
    return target;
  });
  const excludedAt = [17, Math.floor(N * 0.4242), Math.floor(N * 0.9001)];
  const exclusions: Exclusion[] = excludedAt.map((i) => ({ repo: `org/repo-${i % REPOS}`, lane: id(i), reason: 'archived', detail: null }));
  const fleet = fleetOf(targets);
  const opts: PlanOptions = { maxParallel: 16, maxWaves: 1000, file: FILE };

  it('builds a plan that keeps every invariant', () => {
    const r = buildPlan(fleet, exclusions, opts);
    if (!r.ok) throw new Error(JSON.stringify(r.problems.slice(0, 3)));
    const p = r.plan;
    const waveOf = new Map(p.lanes.map((l) => [l.spec.id, l.wave]));
    const spec = new Map(fleet.lanes.map((l) => [l.id, l]));

    // Every lane accounted for exactly once.
    const accounted = [...p.lanes.map((l) => l.spec.id), ...p.excluded.map((e) => e.lane), ...p.skipped.map((s) => s.lane)];
    expect(accounted).toHaveLength(N);
    expect(new Set(accounted).size).toBe(N);
    expect(p.excluded.map((e) => e.lane)).toEqual(excludedAt.map(id));
    expect(p.skipped.length).toBeGreaterThan(0);
    for (const s of p.skipped) expect(dependentsOf(fleet.lanes, s.because_of)).toContain(s.lane);

    // Every dependency runs in an earlier wave.
    for (const l of p.lanes) for (const d of l.spec.depends_on) expect(waveOf.get(d)!).toBeLessThan(l.wave);

    // Contention entries match the plan; lanes without one sit exactly where their dependencies put them.
    const pushed = new Map(p.contention.map((c) => [c.lane, c]));
    expect(pushed.size).toBe(p.contention.length);
    for (const l of p.lanes) {
      const wanted = l.spec.depends_on.reduce((m, d) => Math.max(m, waveOf.get(d)! + 1), 0);
      const c = pushed.get(l.spec.id);
      if (c) {
        expect(c.wanted_wave).toBe(wanted);
        expect(c.wave).toBe(l.wave);
        expect(c.wave).toBeGreaterThan(c.wanted_wave);
      } else expect(l.wave).toBe(wanted);
    }
    expect(p.contention.some((c) => c.reason.includes('overlaps'))).toBe(true);

    // Waves contiguous, none empty, lanes sorted, shards cover each wave exactly; exclusive lanes alone.
    expect(p.waves.map((w) => w.index)).toEqual(p.waves.map((_, i) => i));
    let exclusiveWaves = 0;
    for (const w of p.waves) {
      expect(w.lanes.length).toBeGreaterThan(0);
      expect(w.lanes).toEqual([...w.lanes].sort());
      expect(w.shards.flatMap((s) => s.lanes)).toEqual(w.lanes);
      expect(w.shards.length).toBeLessThanOrEqual(256);
      expect(w.parallel).toBe(Math.min(16, w.shards.length));
      for (const x of w.lanes) expect(waveOf.get(x)).toBe(w.index);
      if (w.lanes.some((x) => spec.get(x)!.exclusive)) {
        exclusiveWaves++;
        expect(w.lanes).toHaveLength(1);
        expect(w.exclusive).toBe(true);
      } else expect(w.exclusive).toBe(false);

      // No two lanes of one repository with overlapping owns share a wave.
      const byRepo = new Map<string, string[][]>();
      for (const x of w.lanes) {
        const s = spec.get(x)!;
        const list = byRepo.get(s.repo) ?? [];
        for (const other of list) expect(scopesOverlap(other, s.owns)).toBeUndefined();
        list.push(s.owns);
        byRepo.set(s.repo, list);
      }
    }
    expect(exclusiveWaves).toBe(fleet.lanes.filter((l) => l.exclusive && waveOf.has(l.id)).length);
    expect(p.lanes.map((l) => [l.wave, l.spec.id])).toEqual(
      [...p.lanes.map((l) => [l.wave, l.spec.id] as const)].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1)),
    );
  });

  it('is deterministic', () => {
    const a = buildPlan(fleet, exclusions, opts);
    const b = buildPlan(fleet, exclusions, opts);
    expect(a).toEqual(b);
  });
});

/**
 * The rules, written the slow and obvious way: every lane against every lane of its wave.
 * The planner indexes scopes and skips full waves; it must place every lane where this does.
 */
function referenceWaves(fleet: ResolvedFleet): Map<string, { wave: number; wanted: number }> {
  const lanes = fleet.lanes;
  const level = new Map<string, number>();
  const levelOf = (id: string): number => {
    const known = level.get(id);
    if (known !== undefined) return known;
    const l = lanes.find((x) => x.id === id)!;
    const v = l.depends_on.length ? 1 + Math.max(...l.depends_on.map(levelOf)) : 0;
    level.set(id, v);
    return v;
  };
  const order = [...lanes].sort((a, b) => levelOf(a.id) - levelOf(b.id) || (a.id < b.id ? -1 : 1));
  const placed: { lane: (typeof lanes)[number]; wave: number }[] = [];
  const out = new Map<string, { wave: number; wanted: number }>();
  for (const lane of order) {
    const wanted = lane.depends_on.reduce((m, d) => Math.max(m, out.get(d)!.wave + 1), 0);
    let w = wanted;
    for (; ; w++) {
      const inWave = placed.filter((p) => p.wave === w);
      if (inWave.some((p) => p.lane.exclusive)) continue;
      if (lane.exclusive && inWave.length) continue;
      if (inWave.some((p) => p.lane.repo === lane.repo && scopesOverlap(p.lane.owns, lane.owns))) continue;
      break;
    }
    placed.push({ lane, wave: w });
    out.set(lane.id, { wave: w, wanted });
  }
  return out;
}

describe('agrees with the plain rules', () => {
  const globs = [
    'src/**',
    'src/api/**',
    'src/*.ts',
    'docs/**',
    '**/*.md',
    '*.md',
    'README.md',
    '{docs,src}/**',
    'src/api/*.ts',
    'test/**/*.spec.ts',
    'packages/*/package.json',
    'packages/a/**',
  ];

  it('places every lane as a pairwise check would, on 300 random fleets', () => {
    const rand = rng(7);
    for (let round = 0; round < scale(300, 60); round++) {
      const n = 2 + Math.floor(rand() * 25);
      const repos = 1 + Math.floor(rand() * 3);
      const targets: Target[] = Array.from({ length: n }, (_, i) => {
        const target: Target = { repo: `o/r${Math.floor(rand() * repos)}`, lane: `l${String(i).padStart(2, '0')}` };
        if (rand() < 0.8) target.owns = Array.from({ length: 1 + Math.floor(rand() * 2) }, () => globs[Math.floor(rand() * globs.length)]!);
        if (rand() < 0.05) target.exclusive = true;
        target.depends_on = [];
        for (let j = 0; j < i; j++) if (rand() < 0.08) target.depends_on.push(`l${String(j).padStart(2, '0')}`);
        return target;
      });
      const fleet = fleetOf(targets);
      const r = buildPlan(fleet, [], { ...OPTS, maxWaves: 1000 });
      if (!r.ok) throw new Error(JSON.stringify(r.problems));
      const expected = referenceWaves(fleet);
      const got = new Map(r.plan.lanes.map((l) => [l.spec.id, l.wave]));
      const spec = new Map(fleet.lanes.map((l) => [l.id, l]));
      for (const [id, e] of expected) expect({ round, id, wave: got.get(id) }).toEqual({ round, id, wave: e.wave });
      const pushed = [...expected]
        .filter(([, e]) => e.wave > e.wanted)
        .map(([id, e]) => [id, e.wanted, e.wave])
        .sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
      expect(r.plan.contention.map((c) => [c.lane, c.wanted_wave, c.wave])).toEqual(pushed);
      // The named culprit really is in the wanted wave and really blocks.
      for (const c of r.plan.contention) {
        const by = spec.get(c.because_of)!;
        const me = spec.get(c.lane)!;
        expect(got.get(by.id)).toBe(c.wanted_wave);
        expect(by.exclusive || me.exclusive || (by.repo === me.repo && scopesOverlap(by.owns, me.owns) !== undefined)).toBe(true);
      }
    }
  });

  it('tells apart globs that share a directory but not a file', () => {
    const p = plan([
      { repo: 'o/r', lane: 'ts', owns: ['src/*.ts'] },
      { repo: 'o/r', lane: 'api', owns: ['src/api/**'] },
      { repo: 'o/r', lane: 'md', owns: ['**/*.md'] },
      { repo: 'o/r', lane: 'docs', owns: ['docs/**'] },
    ]);
    expect(waveMap(p)).toEqual({ api: 0, docs: 0, ts: 0, md: 1 });
    expect(p.contention).toEqual([
      {
        lane: 'md',
        repo: 'o/r',
        wanted_wave: 0,
        wave: 1,
        because_of: 'docs',
        reason: 'owns "**/*.md" overlaps "docs/**" of lane "docs" in the same repository',
      },
    ]);
  });

  it('copes with 10,000 lanes in one repository', () => {
    const n = scale(10_000, 600);
    const disjoint = plan(
      Array.from({ length: n }, (_, i) => ({ repo: 'o/mono', lane: `l${i}`, owns: [`pkg${i}/**`] })),
      [],
      { maxWaves: n },
    );
    expect(disjoint.waves).toHaveLength(1);
    expect(disjoint.waves[0]!.shards).toHaveLength(256);
    const whole = plan(
      Array.from({ length: n }, (_, i) => ({ repo: 'o/mono', lane: `l${i}` })),
      [],
      { maxWaves: n },
    );
    expect(whole.waves).toHaveLength(n);
    expect(whole.waves.every((w) => w.lanes.length === 1)).toBe(true);
    expect(whole.contention).toHaveLength(n - 1);
  });
});

describe('defensive checks', () => {
  it('reports an unknown dependency in a hand-built fleet instead of planning it', () => {
    const fleet = fleetOf([t('a'), t('b', ['a'])]);
    fleet.lanes[1]!.depends_on = ['a', 'ghost'];
    const r = buildPlan(fleet, [], OPTS);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([{ file: FILE, field: 'targets[1].depends_on[1]', message: '"ghost" is not a lane of this fleet' }]);
  });

  it('plans an empty set of runnable lanes', () => {
    const p = plan([t('a')], [{ repo: 'o/a', lane: 'a', reason: 'archived', detail: null }]);
    expect(p).toEqual({ lanes: [], waves: [], contention: [], excluded: [{ repo: 'o/a', lane: 'a', reason: 'archived', detail: null }], skipped: [] });
  });
});

describe('messages a person acts on', () => {
  function problemsOf(r: ReturnType<typeof buildPlan>) {
    if (r.ok) throw new Error('expected the plan to be refused');
    return r.problems;
  }

  it('a lane that depends on itself is told to drop itself from its depends_on', () => {
    const fleet = fleetOf([t('a'), t('b')]);
    fleet.lanes[1]!.depends_on = ['b'];
    expect(problemsOf(buildPlan(fleet, [], OPTS))).toEqual([
      { file: FILE, field: 'targets[1].depends_on', message: 'lane "b" depends on itself: remove "b" from its depends_on' },
    ]);
  });

  it('a cycle names one edge to remove', () => {
    const [p] = problemsOf(buildPlan(fleetOf([t('a', ['b']), t('b', ['a'])]), [], OPTS));
    expect(p!.message).toBe('dependency cycle a → b → a: no lane in it can ever start; remove one of these depends_on entries (e.g. "b" from lane "a")');
  });

  it('lists at most 50 cycles and then says there are more', () => {
    const id = (c: string, i: number) => `${c}${String(i).padStart(2, '0')}`;
    const pairs = Array.from({ length: 51 }, (_, i) => [t(id('a', i), [id('b', i)]), t(id('b', i), [id('a', i)])]).flat();
    const problems = problemsOf(buildPlan(fleetOf(pairs), [], OPTS));
    expect(problems.filter((p) => p.message.startsWith('dependency cycle'))).toHaveLength(50);
    expect(problems.at(-1)).toEqual({
      file: FILE,
      field: 'targets',
      message: 'more dependency cycles were found than the 50 listed; fix these and plan again',
    });
    expect(problems).toHaveLength(51);
    // Exactly 50 cycles: all listed, no "more".
    expect(problemsOf(buildPlan(fleetOf(pairs.slice(0, 100)), [], OPTS))).toHaveLength(50);
  });

  it('a lane id used twice in a hand-built fleet names both targets', () => {
    const fleet = fleetOf([t('a'), t('b')]);
    fleet.lanes[1]!.id = 'a';
    expect(problemsOf(buildPlan(fleet, [], OPTS))).toEqual([
      { file: FILE, field: 'targets[1].lane', message: 'lane id "a" is already used by targets[0] (o/a): give one of them a distinct lane:' },
    ]);
  });

  it('max_waves: a long chain is shortened to its ends, and counts are worded in the singular or plural', () => {
    const ids = Array.from({ length: 14 }, (_, i) => `s${String(i).padStart(2, '0')}`);
    const chain = ids.map((id, i) => t(id, i ? [ids[i - 1]!] : []));
    const [deep] = problemsOf(buildPlan(fleetOf(chain), [], { ...OPTS, maxWaves: 3 }));
    expect(deep!.message).toBe(
      'the plan needs 14 waves but max_waves is 3. ' +
        'Longest dependency chain (14 lanes): s00 → s01 → s02 → s03 → s04 → … (4 more) … → s09 → s10 → s11 → s12 → s13. ' +
        'Raise max_waves to at least 14, or flatten the graph: drop depends_on entries that are not needed, ' +
        'give lanes of one repository disjoint owns:, or mark fewer lanes exclusive.',
    );
    // Exactly 12 lanes are shown whole.
    const [twelve] = problemsOf(buildPlan(fleetOf(chain.slice(0, 12)), [], { ...OPTS, maxWaves: 3 }));
    expect(twelve!.message).toContain(`(12 lanes): ${ids.slice(0, 12).join(' → ')}.`);

    const [one] = problemsOf(
      buildPlan(
        fleetOf([
          { repo: 'o/r', lane: 'a' },
          { repo: 'o/r', lane: 'b' },
        ]),
        [],
        { ...OPTS, maxWaves: 1 },
      ),
    );
    expect(one!.message).toBe(
      'the plan needs 2 waves but max_waves is 1; the dependencies alone need 1, contention and exclusive lanes add 1 (1 lane pushed). ' +
        'Longest dependency chain (1 lane): a. ' +
        'Raise max_waves to at least 2, or flatten the graph: drop depends_on entries that are not needed, ' +
        'give lanes of one repository disjoint owns:, or mark fewer lanes exclusive.',
    );
  });

  it('the longest chain named is the first by lane id among equally long ones, followed through its first dependency', () => {
    const fleet = fleetOf([
      t('z1'),
      t('z2', ['z1']),
      t('a1'),
      t('a2', ['a1']),
      t('m', ['a2', 'z2']),
      { repo: 'o/x', lane: 'x1' },
      { repo: 'o/x', lane: 'x2' },
      { repo: 'o/x', lane: 'x3' },
      { repo: 'o/x', lane: 'x4' },
    ]);
    const [p] = problemsOf(buildPlan(fleet, [], { ...OPTS, maxWaves: 3 }));
    expect(p!.message).toContain('Longest dependency chain (3 lanes): a1 → a2 → m.');
    expect(p!.message).toContain('the dependencies alone need 3, contention and exclusive lanes add 1 (3 lanes pushed)');
  });
});

describe('exclusions, matched to lanes', () => {
  it('keeps a missing detail as null, not undefined, in every form of exclusion', () => {
    const p = plan(
      [t('a'), { repo: 'o/r', lane: 'r1', owns: ['x/**'] }],
      [
        { repo: 'o/a', lane: 'a', reason: 'archived' } as unknown as Exclusion,
        { repo: 'o/r', lane: 'r', reason: 'fork' } as unknown as Exclusion,
        { repo: 'o/gone', lane: 'gone', reason: 'not-found' } as unknown as Exclusion,
      ],
    );
    expect(p.excluded).toEqual([
      { repo: 'o/a', lane: 'a', reason: 'archived', detail: null },
      { repo: 'o/gone', lane: 'gone', reason: 'not-found', detail: null },
      { repo: 'o/r', lane: 'r1', reason: 'fork', detail: null },
    ]);
  });

  it('the first reason given for a lane wins; later ones for it are dropped', () => {
    const p = plan(
      [t('a'), t('b', ['a'])],
      [
        { repo: 'o/a', lane: 'a', reason: 'archived', detail: 'first' },
        { repo: 'o/a', lane: 'a', reason: 'fork', detail: 'second' },
      ],
    );
    expect(p.excluded).toEqual([{ repo: 'o/a', lane: 'a', reason: 'archived', detail: 'first' }]);
    expect(p.skipped).toEqual([{ lane: 'b', repo: 'o/b', reason: 'dependency "a" was excluded (archived)', because_of: 'a' }]);
  });

  it('skipped lanes come sorted by id whatever the order of the targets', () => {
    const p = plan(
      [t('root'), t('zeta', ['root']), t('alpha', ['root']), t('mu', ['zeta'])],
      [{ repo: 'o/root', lane: 'root', reason: 'archived', detail: null }],
    );
    expect(p.skipped.map((s) => s.lane)).toEqual(['alpha', 'mu', 'zeta']);
  });
});
