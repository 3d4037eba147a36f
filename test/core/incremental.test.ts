import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  FLEET_VERSION,
  canonicalJson,
  laneDigest,
  outcomesOf,
  outcomesProblem,
  unchangedLanes,
  unchangedRecord,
  type Outcomes,
  type PreviousOutcome,
} from '../../src/core/incremental.js';
import { initManifest, summarize } from '../../src/core/manifest.js';
import { SCHEMA_VERSION, newLaneRecord, type LaneRecord } from '../../src/core/model.js';
import { validateFleetFile, type ResolvedFleet } from '../../src/core/validate.js';
import type { LaneSpec } from '../../src/core/model.js';

function fleet(extra: Record<string, unknown> = {}, target: Record<string, unknown> = {}): ResolvedFleet {
  const r = validateFleetFile({ name: 'sweep', directive: 'bump it', run: 'make bump', targets: [{ repo: 'acme/api', ...target }], ...extra }, 'fleet.yml');
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.fleet;
}

const digestOf = (f: ResolvedFleet, version = FLEET_VERSION) => laneDigest(f.file, f.lanes[0]!, version);
const base = digestOf(fleet());

describe('the lane digest', () => {
  it('is stable: the same fleet gives the same digest, whatever order its keys were written in', () => {
    expect(digestOf(fleet())).toBe(base);
    expect(base).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 2 }], c: null } })).toBe(canonicalJson({ a: { c: null, d: [2, { x: 2, y: 1 }] }, b: 1 }));
  });

  it('changes with everything that decides the lane result', () => {
    const changed: Array<[string, ResolvedFleet]> = [
      ['directive', fleet({ directive: 'bump it twice' })],
      ['run command', fleet({ run: 'make bump2' })],
      ['agent instead of run', fleet({ run: undefined, agent: { preset: 'claude' } })],
      ['checks', fleet({ checks: ['npm test'] })],
      ['owns', fleet({ owns: ['src/**'] })],
      ['never', fleet({ never: ['secrets/**'] })],
      ['base', fleet({}, { base: 'develop' })],
      ['branch naming', fleet({ branch: 'sweeps/{lane}' })],
      ['fleet name', fleet({ name: 'sweep2' })],
      ['PR settings', fleet({ pr: { labels: ['deps'] } })],
      ['PR draft', fleet({ pr: { draft: true } })],
      ['merge policy', fleet({ merge: { policy: 'when-green' } })],
      ['merge method', fleet({ merge: { method: 'rebase' } })],
      ['checkpoint', fleet({ checkpoint: 'merged' })],
      ['CI waiting', fleet({ ci: { wait: true } })],
      ['commit message', fleet({ commit_message: 'chore: bump' })],
      ['isolation', fleet({ isolation: 'off' })],
      ['lane title', fleet({}, { title: 'Bump api' })],
      ["lane's own directive", fleet({}, { directive: 'something else' })],
      ["lane's own run", fleet({}, { run: 'make other' })],
      ["lane's owns", fleet({}, { owns: ['lib/**'] })],
    ];
    for (const [what, f] of changed) expect(digestOf(f), what).not.toBe(base);
    expect(digestOf(fleet(), '0.2.0'), "Fleet's version").not.toBe(base);
  });

  it('does not change with scheduling and the other targets', () => {
    const same: Array<[string, ResolvedFleet]> = [
      ['max_parallel', fleet({ max_parallel: 3 })],
      ['max_waves', fleet({ max_waves: 5 })],
      ['max_retries', fleet({ max_retries: 0 })],
      ['timeout_minutes', fleet({ timeout_minutes: 5 })],
      ['git_timeout_minutes', fleet({ git_timeout_minutes: 3 })],
      ['exclude', fleet({ exclude: [{ repo: 'acme/old' }] })],
      ['discovery filters', fleet({ github: { include: ['acme/*'] } })],
    ];
    for (const [what, f] of same) expect(digestOf(f), what).toBe(base);
    // Another target beside this one leaves this lane's digest alone.
    const two = validateFleetFile(
      { name: 'sweep', directive: 'bump it', run: 'make bump', targets: [{ repo: 'acme/api' }, { repo: 'acme/web' }] },
      'fleet.yml',
    );
    if (!two.ok) throw new Error('invalid');
    expect(laneDigest(two.fleet.file, two.fleet.lanes.find((l) => l.repo === 'acme/api')!)).toBe(base);
  });

  it("Fleet's version is package.json's", () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(FLEET_VERSION).toBe(pkg.version);
  });
});

const SHA = (c: string) => c.repeat(40);

function outcome(lane: string, extra: Partial<PreviousOutcome> = {}): PreviousOutcome {
  return {
    lane,
    repo: `acme/${lane}`,
    status: 'completed',
    phase: 'pr-open',
    digest: `d-${lane}`,
    base_branch: 'main',
    base_commit: SHA('a'),
    branch: `fleet/sweep/${lane}`,
    commit: SHA('c'),
    changed_files: ['f.txt'],
    pr_url: `https://github.com/acme/${lane}/pull/1`,
    pr_number: 1,
    merge_status: 'not-requested',
    ci_conclusion: null,
    ran_in: 'fleet-1',
    ended_at: '2026-01-01T00:00:00Z',
    ...extra,
  };
}

function spec(id: string, depends_on: string[] = []): LaneSpec {
  return {
    id,
    repo: `acme/${id}`,
    repo_kind: 'github',
    title: id,
    directive: 'd',
    run: 'true',
    checks: [],
    depends_on,
    owns: [],
    never: [],
    exclusive: false,
    branch: `fleet/sweep/${id}`,
    base: undefined,
    index: 0,
    review: null,
  };
}

function prev(lanes: PreviousOutcome[]): Outcomes {
  return { schema_version: SCHEMA_VERSION, name: 'sweep', fleet_id: 'fleet-1', dry_run: false, lanes };
}

function decide(lanes: LaneSpec[], previous: PreviousOutcome[], over: { digests?: Record<string, string>; bases?: Record<string, string> } = {}): string[] {
  const digests = new Map(lanes.map((l) => [l.id, over.digests?.[l.id] ?? `d-${l.id}`]));
  const baseCommits = new Map(lanes.map((l) => [l.id, over.bases?.[l.id] ?? SHA('a')]));
  return [...unchangedLanes({ lanes, digests, baseCommits, previous: prev(previous) }).keys()];
}

describe('which lanes are unchanged', () => {
  it('same digest, same base commit, completed or a no-op last time: unchanged', () => {
    expect(
      decide(
        [spec('a'), spec('b'), spec('c')],
        [outcome('a'), outcome('b', { phase: 'no-op', commit: null }), outcome('c', { status: 'unchanged', phase: 'unchanged' })],
      ),
    ).toEqual(['a', 'b', 'c']);
  });

  it('any doubt runs the lane', () => {
    const lanes = [spec('a')];
    expect(decide(lanes, []), 'no previous outcome').toEqual([]);
    expect(decide(lanes, [outcome('a', { digest: null })]), 'no previous digest').toEqual([]);
    expect(decide(lanes, [outcome('a')], { digests: { a: 'other' } }), 'digest differs').toEqual([]);
    expect(decide(lanes, [outcome('a')], { bases: { a: SHA('b') } }), 'base moved').toEqual([]);
    expect(decide(lanes, [outcome('a', { base_commit: null })]), 'no previous base').toEqual([]);
    const noBase = unchangedLanes({ lanes, digests: new Map([['a', 'd-a']]), baseCommits: new Map(), previous: prev([outcome('a')]) });
    expect(noBase.size, 'the forge did not give the base commit').toBe(0);
    expect(decide(lanes, [outcome('a', { status: 'failed', phase: 'failed' })]), 'failed').toEqual([]);
    expect(decide(lanes, [outcome('a', { status: 'skipped', phase: 'skipped' })]), 'skipped').toEqual([]);
    expect(decide(lanes, [outcome('a', { phase: 'dry-run' })]), 'a dry run').toEqual([]);
    expect(decide(lanes, [outcome('a', { phase: 'draft', merge_status: 'draft' })]), 'handed over as a draft').toEqual([]);
    expect(decide(lanes, [outcome('a', { repo: 'acme/other' })]), 'the lane id now names another repository').toEqual([]);
  });

  it('a lane whose dependency runs again runs too', () => {
    const lanes = [spec('a'), spec('b', ['a']), spec('c', ['b'])];
    const all = [outcome('a'), outcome('b'), outcome('c')];
    expect(decide(lanes, all)).toEqual(['a', 'b', 'c']);
    expect(decide(lanes, all, { bases: { a: SHA('f') } })).toEqual([]);
    expect(decide(lanes, all, { digests: { b: 'new' } })).toEqual(['a']);
  });

  it('outcomes of another fleet, a dry run, or another manifest version are not used', () => {
    expect(outcomesProblem(prev([]), 'sweep', false)).toBeNull();
    expect(outcomesProblem(prev([]), 'other', false)).toMatch(/fleet "sweep"/);
    expect(outcomesProblem({ ...prev([]), dry_run: true }, 'sweep', false)).toMatch(/dry run/);
    expect(outcomesProblem(prev([]), 'sweep', true)).toMatch(/dry run/);
    expect(outcomesProblem({ ...prev([]), schema_version: '1.0.0' }, 'sweep', false)).toMatch(/manifest version/);
  });
});

describe('outcomes carried forward', () => {
  it('an unchanged lane keeps its PR and base, and names the run it last ran in; the next sweep reads that back', () => {
    const planned: LaneRecord = { ...newLaneRecord({ repo: 'acme/a', lane: 'a', wave: 0, branch: 'fleet/sweep/a', depends_on: [] }), digest: 'd-a' };
    const rec = unchangedRecord(planned, outcome('a', { ran_in: 'fleet-0' }), 'd-a', '2026-02-01T00:00:00Z');
    expect(rec).toMatchObject({
      status: 'unchanged',
      phase: 'unchanged',
      pr_number: 1,
      base_commit: SHA('a'),
      commit: SHA('c'),
      digest: 'd-a',
      unchanged_since: 'fleet-0',
    });
    const m = initManifest({
      fleet_id: 'fleet-2',
      name: 'sweep',
      forge: 'github',
      started_at: '2026-02-01T00:00:00Z',
      directive: 'd',
      max_parallel: 1,
      max_retries: 0,
      checkpoint: 'pushed',
      merge_policy: 'never',
      dry_run: false,
      waves: [],
      contention: [],
      excluded: [],
      lanes: [
        { repo: 'acme/a', lane: 'a', wave: 0, branch: 'fleet/sweep/a', depends_on: [] },
        { repo: 'acme/b', lane: 'b', wave: 0, branch: 'fleet/sweep/b', depends_on: [] },
      ],
      skipped: [],
    });
    const lanes = [rec, { ...m.lanes[1]!, status: 'failed' as const, phase: 'failed' as const }];
    const out = outcomesOf({ ...m, lanes, summary: summarize(lanes, m.started_at, null) });
    expect(out.lanes.map((l) => [l.lane, l.status, l.ran_in])).toEqual([['a', 'unchanged', 'fleet-0']]);
    expect(summarize(lanes, m.started_at, null)).toMatchObject({ unchanged: 1, failed: 1, completed: 0 });
  });
});
