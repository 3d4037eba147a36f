import { describe, expect, it } from 'vitest';
import {
  applyLaneRecord,
  finalizeManifest,
  initManifest,
  mergeLaneRecords,
  needsAction,
  resumableLanes,
  summarize,
  type ManifestInit,
} from '../../src/core/manifest.js';
import { Manifest, newLaneRecord, type LaneRecord } from '../../src/core/model.js';
import { scale } from '../support/scale.js';

const T0 = '2026-04-20T07:15:00Z';
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000).toISOString();

function init(over: Partial<ManifestInit> = {}): ManifestInit {
  return {
    fleet_id: 'fleet-20260420-071500',
    name: 'lodash-bump',
    forge: 'github',
    started_at: T0,
    directive: 'Bump lodash',
    max_parallel: 4,
    max_retries: 3,
    checkpoint: 'green',
    merge_policy: 'when-green',
    dry_run: false,
    waves: [
      { index: 0, lanes: ['core', 'docs'], exclusive: false, shards: [{ id: 'w0-s0', wave: 0, lanes: ['core', 'docs'] }], parallel: 1 },
      { index: 1, lanes: ['api', 'web'], exclusive: false, shards: [{ id: 'w1-s0', wave: 1, lanes: ['api', 'web'] }], parallel: 1 },
      { index: 2, lanes: ['cli'], exclusive: false, shards: [{ id: 'w2-s0', wave: 2, lanes: ['cli'] }], parallel: 1 },
    ],
    contention: [],
    excluded: [{ repo: 'acme/old-lib', lane: 'old-lib', reason: 'archived', detail: 'repository is archived' }],
    // Deliberately out of order: initManifest sorts.
    lanes: [
      { repo: 'acme/cli', lane: 'cli', wave: 2, branch: 'fleet/lodash-bump/cli', depends_on: ['api'] },
      { repo: 'acme/web', lane: 'web', wave: 1, branch: 'fleet/lodash-bump/web', depends_on: ['core'] },
      { repo: 'acme/api', lane: 'api', wave: 1, branch: 'fleet/lodash-bump/api', depends_on: ['core'] },
      { repo: 'acme/docs', lane: 'docs', wave: 0, branch: 'fleet/lodash-bump/docs', depends_on: [] },
      { repo: 'acme/core', lane: 'core', wave: 0, branch: 'fleet/lodash-bump/core', depends_on: [] },
    ],
    skipped: [{ repo: 'acme/legacy', lane: 'legacy', reason: 'depends on excluded lane old-lib', depends_on: ['old-lib'] }],
    ...over,
  };
}

/** A lane record as a lane would report it: newLaneRecord for the lane, then what happened. */
function rec(m: Manifest, lane: string, patch: Partial<LaneRecord>): LaneRecord {
  const cur = m.lanes.find((l) => l.lane === lane);
  if (!cur) throw new Error(`test fixture: no lane ${lane}`);
  return { ...newLaneRecord({ repo: cur.repo, lane, wave: cur.wave, branch: cur.branch, depends_on: cur.depends_on }), ...patch };
}

function finished(): Manifest {
  const m = initManifest(init());
  const merged = mergeLaneRecords(m, [
    rec(m, 'core', { status: 'completed', phase: 'merged', updated_at: at(300), merge_status: 'merged', ci_conclusion: 'success', pr_number: 12 }),
    rec(m, 'docs', { status: 'completed', phase: 'no-op', updated_at: at(120) }),
    rec(m, 'api', {
      status: 'failed',
      phase: 'failed',
      updated_at: at(1500),
      retry_count: 2,
      ci_conclusion: 'failure',
      error: { class: 'ci-failed', message: 'CI failed' },
    }),
    rec(m, 'web', {
      status: 'failed',
      phase: 'draft',
      updated_at: at(1400),
      retry_count: 3,
      merge_status: 'draft',
      error: { class: 'code-review-needed', message: 'type errors remain' },
    }),
    rec(m, 'cli', { status: 'skipped', phase: 'skipped', updated_at: at(1510), error: { class: 'dependency-failed', message: 'dependency api failed' } }),
  ]);
  return finalizeManifest(merged, at(1634.9));
}

describe('initManifest', () => {
  it('queues runnable lanes, accounts for skipped and excluded targets, sorts by (wave, lane)', () => {
    const m = initManifest(init());
    expect(Manifest.parse(m)).toEqual(m); // the contract holds
    expect(m.lanes.map((l) => [l.lane, l.wave, l.status])).toEqual([
      ['core', 0, 'queued'],
      ['docs', 0, 'queued'],
      ['api', 1, 'queued'],
      ['web', 1, 'queued'],
      ['cli', 2, 'queued'],
      ['legacy', null, 'skipped'],
      ['old-lib', null, 'excluded'],
    ]);
    const legacy = m.lanes.find((l) => l.lane === 'legacy')!;
    expect(legacy).toMatchObject({
      phase: 'skipped',
      depends_on: ['old-lib'],
      error: { class: 'dependency-failed', message: 'depends on excluded lane old-lib' },
    });
    const oldLib = m.lanes.find((l) => l.lane === 'old-lib')!;
    expect(oldLib).toMatchObject({ phase: 'excluded', wave: null, branch: null, error: { class: 'excluded', message: 'archived: repository is archived' } });
    expect(m.ended_at).toBeNull();
    expect(m.summary).toMatchObject({ total: 7, queued: 5, skipped: 1, excluded: 1, completed: 0, duration_seconds: null });
  });

  it('uses the bare reason when an exclusion has no detail', () => {
    const m = initManifest(init({ excluded: [{ repo: 'acme/x', lane: 'x', reason: 'fork', detail: null }] }));
    expect(m.lanes.find((l) => l.lane === 'x')!.error).toEqual({ class: 'excluded', message: 'fork' });
  });

  it('refuses a lane id used twice', () => {
    expect(() => initManifest(init({ excluded: [{ repo: 'acme/core', lane: 'core', reason: 'archived', detail: null }] }))).toThrow(/duplicate lane id "core"/);
  });
});

describe('summarize', () => {
  it('counts every lane once and adds up retries', () => {
    const m = finished();
    expect(m.summary).toEqual({
      total: 7,
      completed: 2, // core and docs: the no-op counts as completed
      no_op: 1,
      failed: 2, // api, and web whose PR is a draft
      skipped: 2, // cli at run time, legacy at plan time
      excluded: 1,
      unchanged: 0,
      queued: 0,
      running: 0,
      merged: 1,
      draft: 1,
      retries: 5,
      duration_seconds: 1634, // whole seconds, rounded down
    });
    const s = m.summary;
    expect(s.completed + s.failed + s.skipped + s.excluded + s.unchanged + s.queued + s.running).toBe(s.total);
  });

  it('counts a draft by phase or by merge status', () => {
    const base = newLaneRecord({ repo: 'r', lane: 'a', wave: 0, branch: 'b', depends_on: [] });
    const lanes: LaneRecord[] = [
      { ...base, lane: 'a', phase: 'draft' },
      { ...base, lane: 'b', merge_status: 'draft' },
      { ...base, lane: 'c', phase: 'draft', merge_status: 'draft' },
      { ...base, lane: 'd', status: 'completed', phase: 'merged', merge_status: 'merged' },
    ];
    expect(summarize(lanes, T0, null)).toMatchObject({ draft: 3, merged: 1, total: 4, queued: 3, completed: 1, duration_seconds: null });
  });

  it('has no duration without an end and never a negative one', () => {
    expect(summarize([], T0, null).duration_seconds).toBeNull();
    expect(summarize([], T0, at(-5)).duration_seconds).toBe(0);
    expect(summarize([], T0, 'not a time').duration_seconds).toBeNull();
    expect(summarize([], T0, at(3600)).duration_seconds).toBe(3600);
  });
});

describe('applyLaneRecord', () => {
  it('replaces the lane and recomputes the summary without touching its input', () => {
    const m = initManifest(init());
    const before = structuredClone(m);
    const next = applyLaneRecord(m, rec(m, 'core', { status: 'running', phase: 'cloning', updated_at: at(10) }));
    expect(m).toEqual(before);
    expect(next).not.toBe(m);
    expect(next.lanes.find((l) => l.lane === 'core')).toMatchObject({ status: 'running', phase: 'cloning' });
    expect(next.summary.running).toBe(1);
    expect(next.summary.queued).toBe(4);
    expect(next.lanes.map((l) => l.lane)).toEqual(m.lanes.map((l) => l.lane)); // position kept
  });

  it('ignores a stale record: a late result never overwrites a newer one', () => {
    const m0 = initManifest(init());
    const done = applyLaneRecord(m0, rec(m0, 'api', { status: 'completed', phase: 'merged', updated_at: at(900) }));
    const late = applyLaneRecord(done, rec(m0, 'api', { status: 'running', phase: 'ci', updated_at: at(600) }));
    expect(late.lanes.find((l) => l.lane === 'api')).toMatchObject({ status: 'completed', phase: 'merged' });
    expect(late.summary).toEqual(done.summary);
    // An undated record is older than any dated one.
    const undated = applyLaneRecord(done, rec(m0, 'api', { status: 'failed', updated_at: null }));
    expect(undated.lanes.find((l) => l.lane === 'api')!.status).toBe('completed');
    // The same time: the later write wins.
    const same = applyLaneRecord(done, rec(m0, 'api', { status: 'failed', phase: 'failed', updated_at: at(900) }));
    expect(same.lanes.find((l) => l.lane === 'api')!.status).toBe('failed');
    // Times in other offsets compare as instants, not strings.
    const offset = applyLaneRecord(done, rec(m0, 'api', { status: 'failed', updated_at: '2026-04-20T09:29:00+02:00' })); // 07:29 UTC, before 07:30
    expect(offset.lanes.find((l) => l.lane === 'api')!.status).toBe('completed');
  });

  it('throws on an unknown lane, naming it', () => {
    const m = initManifest(init());
    const stranger = newLaneRecord({ repo: 'acme/nope', lane: 'nope', wave: 0, branch: null, depends_on: [] });
    expect(() => applyLaneRecord(m, stranger)).toThrow(/unknown lane "nope"/);
    expect(() => mergeLaneRecords(m, [rec(m, 'core', {}), stranger, { ...stranger, lane: 'other' }])).toThrow(/"nope", "other"/);
  });
});

describe('mergeLaneRecords', () => {
  it('takes several records for one lane in order, newest wins', () => {
    const m = initManifest(init());
    const next = mergeLaneRecords(m, [
      rec(m, 'core', { status: 'running', phase: 'ci', updated_at: at(100) }),
      rec(m, 'core', { status: 'completed', phase: 'merged', updated_at: at(200) }),
      rec(m, 'core', { status: 'running', phase: 'pr', updated_at: at(150) }),
    ]);
    expect(next.lanes.find((l) => l.lane === 'core')).toMatchObject({ status: 'completed', phase: 'merged' });
  });

  it('merges 10,000 lanes in one pass', () => {
    const N = scale(10_000, 500);
    const ids = Array.from({ length: N }, (_, i) => `lane-${String(i).padStart(5, '0')}`);
    const m = initManifest(
      init({
        waves: [],
        excluded: [],
        skipped: [],
        lanes: ids.map((id, i) => ({ repo: `acme/${id}`, lane: id, wave: i % 5, branch: `fleet/x/${id}`, depends_on: [] })),
      }),
    );
    const byId = new Map(m.lanes.map((l) => [l.lane, l]));
    const fresh = (id: string, patch: Partial<LaneRecord>): LaneRecord => {
      const cur = byId.get(id)!;
      return { ...newLaneRecord({ repo: cur.repo, lane: id, wave: cur.wave, branch: cur.branch, depends_on: cur.depends_on }), ...patch };
    };
    // Work is counted, not timed (a shared machine makes any time bound flaky): every field read of every
    // record, the manifest's and the incoming ones. One pass reads each a few times; quadratic work
    // (applyLaneRecord in a loop, a find per record, a summary per record) reads them N times over.
    let reads = 0;
    const counted = <T extends object>(o: T): T => new Proxy(o, { get: (t, k, r) => (reads++, Reflect.get(t, k, r)) });
    const base = { ...m, lanes: m.lanes.map(counted) };
    const recs = [...ids]
      .reverse()
      .map((id, i) =>
        counted(fresh(id, { status: i % 10 === 0 ? 'failed' : 'completed', phase: i % 10 === 0 ? 'failed' : 'pushed', updated_at: at(60), retry_count: 1 })),
      );
    // Every tenth lane also gets a stale record that must lose.
    const stale = ids.filter((_, i) => i % 10 === 0).map((id) => counted(fresh(id, { status: 'running', updated_at: at(30) })));
    reads = 0;
    const out = mergeLaneRecords(base, [...recs, ...stale]);
    expect(out.summary).toMatchObject({ total: N, completed: N - N / 10, failed: N / 10, running: 0, queued: 0, retries: N });
    expect(out.lanes.map((l) => l.lane)).toEqual(m.lanes.map((l) => l.lane));
    expect(reads).toBeLessThan(40 * N);
  });
});

describe('finalizeManifest', () => {
  it('sets ended_at and the summary', () => {
    const m = initManifest(init());
    const f = finalizeManifest(m, at(90));
    expect(m.ended_at).toBeNull();
    expect(f.ended_at).toBe(at(90));
    expect(f.summary.duration_seconds).toBe(90);
    expect(Manifest.parse(f)).toEqual(f);
  });
});

describe('needsAction and resumableLanes', () => {
  it('lists failed and draft lanes by lane id', () => {
    const m = finished();
    expect(needsAction(m).map((l) => l.lane)).toEqual(['api', 'web']);
    // A draft whose lane completed still needs a person.
    const drafted = applyLaneRecord(m, rec(m, 'core', { status: 'completed', phase: 'draft', merge_status: 'draft', updated_at: at(1600) }));
    expect(needsAction(drafted).map((l) => l.lane)).toEqual(['api', 'core', 'web']);
  });

  it('resumes everything that did not complete and was not excluded', () => {
    expect(resumableLanes(finished())).toEqual(['api', 'cli', 'legacy', 'web']);
    expect(resumableLanes(initManifest(init()))).toEqual(['api', 'cli', 'core', 'docs', 'legacy', 'web']);
  });
});

/** What mutation testing found unasserted in the merge (npm run mutate -- src/core/manifest.ts). */
describe('merging records, in detail', () => {
  const stranger = (lane: string): LaneRecord => ({ ...newLaneRecord({ repo: `acme/${lane}`, lane, wave: 0, branch: null, depends_on: [] }) });

  it('names one unknown lane in the singular, several in the plural, and at most ten', () => {
    const m = initManifest(init());
    expect(() => mergeLaneRecords(m, [stranger('x1')])).toThrow(/^unknown lane "x1": fleet fleet-20260420-071500 has no lane with that id$/);
    expect(() => mergeLaneRecords(m, [stranger('x1'), stranger('x2'), stranger('x1')])).toThrow(
      /^unknown lanes "x1", "x2": fleet fleet-20260420-071500 has no lanes with those ids$/,
    );
    const twelve = Array.from({ length: 12 }, (_, i) => stranger(`x${i}`));
    const message = (() => {
      try {
        mergeLaneRecords(m, [rec(m, 'core', { status: 'running' }), ...twelve]);
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(message).toBe(
      `unknown lanes ${twelve
        .slice(0, 10)
        .map((r) => `"${r.lane}"`)
        .join(', ')} and 2 more: fleet fleet-20260420-071500 has no lanes with those ids`,
    );
    // Nothing was merged: the known record came with unknown ones.
    expect(m.lanes.find((l) => l.lane === 'core')!.status).toBe('queued');
  });

  it('compares times it cannot parse as text, and a parsable time with an unparsable one as text too', () => {
    const m0 = initManifest(init());
    const base = applyLaneRecord(m0, rec(m0, 'api', { status: 'running', phase: 'ci', updated_at: 'b-later' }));
    expect(applyLaneRecord(base, rec(m0, 'api', { status: 'failed', updated_at: 'a-earlier' })).lanes.find((l) => l.lane === 'api')!.status).toBe('running');
    expect(applyLaneRecord(base, rec(m0, 'api', { status: 'failed', updated_at: 'c-latest' })).lanes.find((l) => l.lane === 'api')!.status).toBe('failed');
    // An ISO time ("2…") sorts before "b-later" as text: older, ignored.
    expect(applyLaneRecord(base, rec(m0, 'api', { status: 'completed', updated_at: at(5) })).lanes.find((l) => l.lane === 'api')!.status).toBe('running');
    const dated = applyLaneRecord(m0, rec(m0, 'api', { status: 'running', updated_at: at(60) }));
    // "z…" sorts after any ISO time as text: newer, taken.
    expect(applyLaneRecord(dated, rec(m0, 'api', { status: 'failed', updated_at: 'zz' })).lanes.find((l) => l.lane === 'api')!.status).toBe('failed');
  });
});
