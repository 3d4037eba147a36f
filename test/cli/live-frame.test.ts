/** One frame of the live view, pure: widths in terminal columns, what fits, what is counted, what is estimated. */
import { describe, expect, it } from 'vitest';
import { budgetCounts, clip, pack, pickRows, progress, renderFrame, visibleWidth } from '../../src/cli/live-frame.js';
import { newLaneRecord, type LaneRecord } from '../../src/core/model.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (s: number) => new Date(T0 + s * 1000).toISOString();

function lane(id: string, wave: number, patch: Partial<LaneRecord> = {}): LaneRecord {
  return { ...newLaneRecord({ repo: `acme/${id}`, lane: id, wave, branch: `fleet/x/${id}`, depends_on: [] }), ...patch };
}

/** 20 lanes in two waves: 6 done (one a no-op), one failed, five under way, eight not started. */
function twenty(): LaneRecord[] {
  const lanes = Array.from({ length: 20 }, (_, i) => lane(`service-${String(i + 1).padStart(2, '0')}`, i < 12 ? 0 : 1));
  const set = (i: number, p: Partial<LaneRecord>) => (lanes[i] = { ...lanes[i]!, ...p });
  for (let i = 0; i < 6; i++)
    set(i, { status: 'completed', phase: 'pr-open', started_at: iso(i * 20), ended_at: iso(i * 20 + 150), pr_number: 100 + i, ci_conclusion: 'success' });
  set(3, { phase: 'no-op', pr_number: null, ci_conclusion: null });
  set(6, {
    status: 'failed',
    phase: 'failed',
    started_at: iso(100),
    ended_at: iso(200),
    error: { class: 'check-failed', message: 'check `npm test` exited with 1: 3 tests failed' },
  });
  set(7, { status: 'running', phase: 'running', started_at: iso(200) });
  set(8, { status: 'running', phase: 'checking', started_at: iso(210), retry_count: 1 });
  set(9, { status: 'running', phase: 'ci', started_at: iso(220), pr_number: 109 });
  set(10, { status: 'running', phase: 'cloning', started_at: iso(280) });
  set(11, { status: 'running', phase: 'waiting', started_at: iso(270) });
  return lanes;
}

const frame = (lanes: LaneRecord[], width: number, height: number) =>
  renderFrame({ fleetId: 'fleet-20260101-000000-abc123', maxParallel: 2, lanes, width, height, now: T0 + 300_000, startedAt: T0 });

describe('terminal width', () => {
  it('counts wide characters two columns, combining marks none, and clips to the columns', () => {
    expect(visibleWidth('abc')).toBe(3);
    expect(visibleWidth('日本')).toBe(4);
    expect(visibleWidth('e\u0301')).toBe(1);
    expect(visibleWidth('🙂')).toBe(2);
    expect(visibleWidth('\u2764\ufe0f')).toBe(2);
    for (let w = 1; w <= 12; w++) {
      const c = clip('日本語のレーン名🙂abc', w);
      expect(visibleWidth(c)).toBeLessThanOrEqual(w);
      expect(c.endsWith('…')).toBe(true);
    }
    expect(clip('short', 10)).toBe('short');
  });

  it('writes control characters as escapes before measuring', () => {
    expect(clip('a\u001b[2Jb\n', 80)).toBe('a\\x1b[2Jb\\n');
    expect(clip('a\u001b[2Jb', 5)).toBe('a\\x1…');
  });

  it('packs segments onto as few lines as fit, breaking between them', () => {
    expect(pack(['one two', 'three', 'four'], 20)).toEqual(['one two · three', 'four']);
    expect(pack(['a segment wider than the line'], 10)).toEqual(['a segment…']);
  });
});

describe('a frame', () => {
  it('on an 80x12 terminal with 20 lanes: the counters, the lanes under way and failed, in plan order, and the rest counted', () => {
    expect(frame(twenty(), 80, 12)).toEqual([
      'Fleet fleet-20260101-000000-abc123 · 00:05:00 elapsed',
      'directives/checks running 2 / 2 (the budget) · 1 waiting for a slot',
      'outside the budget: 1 cloning/pushing · 1 waiting for CI',
      '7/20 lanes done (5 completed, 1 no-op, 1 failed) · 5 under way · about 15m left',
      'w1  service-07  FAILED         00:01:40  check `npm test` exited with 1: 3 test…',
      'w1  service-08  directive      00:01:40  acme/service-08',
      'w1  service-09  checks         00:01:30  retry 1 · acme/service-09',
      'w1  service-10  waiting CI     00:01:20  #109 · acme/service-10',
      'w1  service-11  cloning        00:00:20  acme/service-11',
      'w1  service-12  waiting slot   00:00:30  acme/service-12',
      '… 14 more lanes (8 not started, 6 completed)',
    ]);
  });

  it('is never taller than rows - 1 nor wider than the columns, whatever the size', () => {
    for (const width of [1, 10, 24, 40, 80, 200]) {
      for (const height of [1, 2, 4, 5, 6, 8, 12, 24, 60]) {
        const lines = frame(twenty(), width, height);
        expect(lines.length).toBeGreaterThanOrEqual(1);
        expect(lines.length).toBeLessThanOrEqual(Math.max(1, height - 1));
        for (const l of lines) expect(visibleWidth(l), `${width}x${height}: ${l}`).toBeLessThanOrEqual(width);
      }
    }
  });

  it('shows every lane in plan order when they fit', () => {
    const lines = frame(twenty(), 100, 40);
    expect(lines.filter((l) => /^w\d/.test(l)).map((l) => l.split(/\s+/)[1])).toEqual(twenty().map((l) => l.lane));
    expect(lines.some((l) => l.startsWith('…'))).toBe(false);
  });

  it('is one line below five rows', () => {
    expect(frame(twenty(), 120, 4)).toEqual(['7/20 lanes done · 1 failed · about 15m left · directives 2 / 2 (budget)']);
  });
});

describe('which rows are shown', () => {
  it('running first, then failed, then waiting, then the most recently finished; shown in plan order', () => {
    const lanes = [
      lane('a', 0, { status: 'completed', phase: 'pr-open', ended_at: iso(10) }),
      lane('b', 0, { status: 'queued' }),
      lane('c', 0, { status: 'completed', phase: 'pr-open', ended_at: iso(50) }),
      lane('d', 0, { status: 'failed', phase: 'failed' }),
      lane('e', 1, { status: 'running', phase: 'waiting' }),
      lane('f', 1, { status: 'running', phase: 'ci' }),
    ];
    expect(pickRows(lanes, 1)).toEqual([5]);
    expect(pickRows(lanes, 2)).toEqual([3, 5]);
    expect(pickRows(lanes, 4)).toEqual([1, 3, 4, 5]);
    expect(pickRows(lanes, 5)).toEqual([1, 2, 3, 4, 5]);
    expect(pickRows(lanes, 9)).toEqual([0, 1, 2, 3, 4, 5]);
  });
});

describe('the counters', () => {
  it('count directives and checks against the budget, never beyond it, and the rest outside it', () => {
    const lanes = [
      lane('a', 0, { status: 'running', phase: 'running' }),
      lane('b', 0, { status: 'running', phase: 'checking' }),
      lane('c', 0, { status: 'running', phase: 'running' }),
      lane('d', 0, { status: 'running', phase: 'reviewing' }),
      lane('e', 0, { status: 'running', phase: 'pr-open' }),
      lane('f', 0, { status: 'running', phase: 'committing' }),
      lane('g', 0, { status: 'completed', phase: 'running' }),
    ];
    expect(budgetCounts(lanes, 2)).toEqual({ holding: 2, maxParallel: 2, waiting: 1, reviewing: 1, git: 1, publishing: 1, ci: 0 });
  });

  it('estimate the time left as the mean finished lane times the lanes left over the budget, at least one mean', () => {
    const done = (id: string, secs: number, status: 'completed' | 'failed' = 'completed') =>
      lane(id, 0, { status, phase: status === 'failed' ? 'failed' : 'pr-open', started_at: iso(0), ended_at: iso(secs) });
    const queued = (id: string) => lane(id, 0);
    expect(progress([queued('a'), queued('b')], 2).estimate).toBe('estimating…');
    // A skipped lane did not run: it says nothing about how long a lane takes.
    expect(progress([lane('s', 0, { status: 'skipped', phase: 'skipped', started_at: iso(0), ended_at: iso(9000) }), queued('a')], 2).estimate).toBe(
      'estimating…',
    );
    // mean 300 s; 8 left, 2 at a time: 1200 s.
    expect(progress([done('a', 200), done('b', 400, 'failed'), ...'cdefghij'.split('').map(queued)], 2).estimate).toBe('about 20m left');
    // one left: one mean, not half of one.
    expect(progress([done('a', 60), queued('b')], 4).estimate).toBe('about 60s left');
    expect(progress([done('a', 3 * 3600), ...'bcdefg'.split('').map(queued)], 3).estimate).toBe('about 6h 0m left');
    expect(progress([done('a', 60)], 2).estimate).toBe('');
  });
});
