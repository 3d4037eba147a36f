/**
 * The CLI's live view: on a pipe, one line per transition; on a terminal, a frame redrawn in place that never wraps,
 * never outgrows the screen, keeps its rows in plan order, says what the budget counts and how far the fleet is.
 * What it prints can quote lane ids from user files and a directive's output: nothing of it acts on the terminal.
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LiveView } from '../../src/cli/live.js';
import { initManifest } from '../../src/core/manifest.js';
import type { LaneRecord, Manifest } from '../../src/core/model.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (s: number) => new Date(T0 + s * 1000).toISOString();

/** A fleet of `ids` (plan order is their order: wave 1 for the first half, wave 2 for the rest). */
function fleet(ids: string[], maxParallel = 2): Manifest {
  const half = Math.ceil(ids.length / 2);
  return initManifest({
    fleet_id: 'fleet-20260101-000000-abc123',
    name: 't',
    forge: 'local',
    started_at: iso(0),
    directive: 'x',
    max_parallel: maxParallel,
    max_retries: 0,
    checkpoint: 'pushed',
    merge_policy: 'never',
    dry_run: false,
    waves: [],
    contention: [],
    excluded: [],
    lanes: ids.map((id, i) => ({ repo: `acme/${id}`, lane: id, wave: i < half ? 0 : 1, branch: `fleet/t/${id}`, depends_on: [] })),
    skipped: [],
  });
}

const ids = (n: number, prefix = 'service') => Array.from({ length: n }, (_, i) => `${prefix}-${String(i + 1).padStart(2, '0')}`);

/** A terminal as the view sees one: its size can change, and it says so ('resize'). */
class Term extends EventEmitter {
  readonly isTTY = true;
  readonly writes: string[] = [];
  constructor(
    public columns: number,
    public rows: number,
  ) {
    super();
  }
  write(s: string): boolean {
    this.writes.push(s);
    return true;
  }
  /** Every frame drawn (the writes after the banner): how far up it moved first, and its lines. */
  frames(): { up: number; lines: string[] }[] {
    return this.writes.slice(1).map((w) => {
      const m = /^\x1b\[(\d+)A\x1b\[0J/.exec(w);
      const body = w.slice(m ? m[0].length : 0);
      expect(body.endsWith('\n')).toBe(true);
      return { up: m ? Number(m[1]) : 0, lines: body.slice(0, -1).split('\n') };
    });
  }
  last(): string[] {
    return this.frames().at(-1)!.lines;
  }
}

/** Columns a line takes (the tests' own count: CJK ideographs two, anything else here one). */
function columnsOf(line: string): number {
  let w = 0;
  for (const ch of line) w += /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60\uffe0-\uffe6]/.test(ch) ? 2 : 1;
  return w;
}

/** Drives a LiveView as the runner does: lanes change, events arrive, the redraw timer fires. */
class Run {
  readonly lanes = new Map<string, LaneRecord>();
  readonly view: LiveView;
  constructor(
    readonly manifest: Manifest,
    readonly term: Term,
  ) {
    for (const l of manifest.lanes) this.lanes.set(l.lane, l);
    this.view = new LiveView(term);
    this.view.start(manifest, '/ws');
  }
  set(id: string, patch: Partial<LaneRecord>, detail = ''): void {
    const before = this.lanes.get(id)!;
    const rec = { ...before, updated_at: new Date().toISOString(), ...patch };
    this.lanes.set(id, rec);
    this.view.event({ time: new Date().toISOString(), lane: id, from: before.phase, to: rec.phase, status: rec.status, detail }, this.lanes);
  }
  tick(): void {
    vi.advanceTimersByTime(250);
  }
}

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(T0 + 300_000);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the live view on a pipe', () => {
  it("prints a directive's output in an event detail as one line, its terminal escapes shown, not sent", () => {
    let out = '';
    const view = new LiveView({ write: (s: string) => (out += s), isTTY: false });
    view.event(
      {
        time: '2026-01-01T00:00:07.000Z',
        lane: 'a',
        from: 'running',
        to: 'failed',
        status: 'failed',
        detail: 'exited 1: \u001b]52;c;ZXZpbA==\u0007\u001b[2J\n::warning::fake',
      },
      new Map(),
    );
    expect(out).toBe('00:00:07 a: running → failed (exited 1: \\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\n::warning::fake)\n');
  });

  it('shows the escapes in a lane id too, and draws no frame', () => {
    let out = '';
    const view = new LiveView({ write: (s: string) => (out += s), isTTY: false, columns: 80, rows: 24 });
    view.start(fleet(['a']), '/ws');
    view.event({ time: '2026-01-01T00:00:07.000Z', lane: 'a\u001b[2J\r', from: 'queued', to: 'cloning', status: 'running', detail: 'cloning' }, new Map());
    vi.advanceTimersByTime(5000);
    view.stop();
    expect(out).toContain('00:00:07 a\\x1b[2J\\r: queued → cloning (cloning)\n');
    expect(out).not.toContain('\u001b');
    expect(out.split('\n')).toHaveLength(4); // banner (2 lines), the transition, and nothing more
  });
});

describe('the live view on a terminal', () => {
  it('never draws a line wider than a narrow terminal, long lane ids, wide characters and messages included', () => {
    const term = new Term(36, 40);
    const names = [...ids(8, 'payments-service-with-a-rather-long-name'), '決済サービス-日本語の長いレーン名', 'z'];
    const run = new Run(fleet(names), term);
    run.set(names[0]!, { status: 'running', phase: 'running', started_at: iso(10) });
    run.set(names[1]!, {
      status: 'failed',
      phase: 'failed',
      started_at: iso(10),
      ended_at: iso(90),
      error: { class: 'check-failed', message: 'check `npm test` exited with 1: '.padEnd(200, 'x') },
    });
    run.set(names[8]!, { status: 'running', phase: 'ci', started_at: iso(20), pr_number: 1234 });
    run.tick();
    term.columns = 20;
    run.set(names[2]!, { status: 'running', phase: 'cloning', started_at: iso(30) });
    run.tick();
    const frames = term.frames();
    expect(frames).toHaveLength(2);
    for (const [i, f] of frames.entries()) {
      const width = i === 0 ? 36 : 20;
      for (const line of f.lines) expect(columnsOf(line), line).toBeLessThanOrEqual(width);
    }
    // Cut lines say so.
    expect(frames[0]!.lines.some((l) => l.endsWith('…'))).toBe(true);
  });

  it('fits a short terminal: at most rows - 1 lines, the counters first, the lanes that matter, a line for the rest', () => {
    const term = new Term(80, 12);
    const run = new Run(fleet(ids(20)), term);
    for (let i = 0; i < 6; i++)
      run.set(ids(20)[i]!, { status: 'completed', phase: 'pr-open', started_at: iso(i * 20), ended_at: iso(i * 20 + 150), pr_number: 100 + i });
    run.set('service-07', {
      status: 'failed',
      phase: 'failed',
      started_at: iso(100),
      ended_at: iso(200),
      error: { class: 'check-failed', message: 'check failed' },
    });
    run.set('service-08', { status: 'running', phase: 'running', started_at: iso(200) });
    run.set('service-09', { status: 'running', phase: 'checking', started_at: iso(210) });
    run.set('service-10', { status: 'running', phase: 'ci', started_at: iso(220) });
    run.tick();
    const lines = term.last();
    expect(lines.length).toBeLessThanOrEqual(11);
    expect(lines[0]).toMatch(/^Fleet fleet-20260101-000000-abc123 · 00:05:00 elapsed$/);
    expect(lines.join('\n')).toContain('directives/checks running 2 / 2 (the budget)');
    expect(lines.join('\n')).toMatch(/7\/20 lanes done \(6 completed, 1 failed\)/);
    // Running and failed lanes are shown before any finished one; a line counts what is left out.
    const shown = lines.filter((l) => /^w\d/.test(l)).map((l) => l.split(/\s+/)[1]);
    expect(shown).toEqual(expect.arrayContaining(['service-07', 'service-08', 'service-09', 'service-10']));
    expect(shown).not.toContain('service-01');
    expect(lines.at(-1)).toMatch(/^… \d+ more lanes \((\d+ not started, )?\d+ completed\)$/);
    const hidden = Number(/^… (\d+) more/.exec(lines.at(-1)!)![1]);
    expect(shown.length + hidden).toBe(20);
  });

  it('redraws in place: each frame moves up exactly the lines the one before drew, then clears to the end', () => {
    const term = new Term(80, 40);
    const run = new Run(fleet(ids(5)), term);
    run.set('service-01', { status: 'running', phase: 'cloning', started_at: iso(1) });
    run.tick();
    run.set('service-02', { status: 'running', phase: 'cloning', started_at: iso(2) });
    run.tick();
    term.rows = 8; // fewer rows now: fewer lines drawn, and the next frame moves up over exactly those
    run.set('service-03', { status: 'running', phase: 'cloning', started_at: iso(3) });
    run.tick();
    run.set('service-03', { status: 'running', phase: 'running' });
    run.tick();
    const frames = term.frames();
    expect(frames).toHaveLength(4);
    expect(frames[0]!.up).toBe(0);
    for (let i = 1; i < frames.length; i++) expect(frames[i]!.up).toBe(frames[i - 1]!.lines.length);
    expect(frames[2]!.lines.length).toBeLessThanOrEqual(7);
    expect(term.writes.slice(2).every((w) => w.startsWith(`\x1b[`) && /^\x1b\[\d+A\x1b\[0J/.test(w))).toBe(true);
  });

  it('keeps the rows in plan order while lanes change state', () => {
    const term = new Term(100, 40);
    const plan = ids(6);
    const run = new Run(fleet(plan), term);
    const steps: [string, Partial<LaneRecord>][] = [
      ['service-05', { status: 'running', phase: 'cloning', started_at: iso(1) }],
      ['service-02', { status: 'failed', phase: 'failed', started_at: iso(1), ended_at: iso(5), error: { class: 'clone-failed', message: 'no such repo' } }],
      ['service-06', { status: 'completed', phase: 'no-op', started_at: iso(1), ended_at: iso(9) }],
      ['service-01', { status: 'running', phase: 'running', started_at: iso(2) }],
      ['service-05', { status: 'running', phase: 'ci' }],
      ['service-03', { status: 'skipped', phase: 'skipped', error: { class: 'dependency-failed', message: 'a dependency failed' } }],
    ];
    for (const [id, patch] of steps) {
      run.set(id, patch);
      run.tick();
    }
    const frames = term.frames();
    expect(frames).toHaveLength(steps.length);
    for (const f of frames) {
      const text = f.lines.join('\n');
      expect(plan.slice().sort((a, b) => text.indexOf(a) - text.indexOf(b))).toEqual(plan);
    }
  });

  it('counts against the budget only what holds a slot, and never more than it has', () => {
    const term = new Term(120, 40);
    const run = new Run(fleet(ids(8), 2), term);
    // Three lanes say "running" (a review's fix round says so before it has its slot), two clone, one waits for CI.
    run.set('service-01', { status: 'running', phase: 'running', started_at: iso(1) });
    run.set('service-02', { status: 'running', phase: 'checking', started_at: iso(1) });
    run.set('service-03', { status: 'running', phase: 'running', started_at: iso(1) });
    run.set('service-04', { status: 'running', phase: 'cloning', started_at: iso(1) });
    run.set('service-05', { status: 'running', phase: 'pushing', started_at: iso(1) });
    run.set('service-06', { status: 'running', phase: 'ci', started_at: iso(1) });
    run.set('service-07', { status: 'running', phase: 'waiting', started_at: iso(1) });
    run.tick();
    const text = term.last().join('\n');
    expect(text).toContain('directives/checks running 2 / 2 (the budget) · 2 waiting for a slot');
    expect(text).toContain('outside the budget: 2 cloning/pushing · 1 waiting for CI');
    // No count reads as more than the budget.
    for (const m of text.matchAll(/(\d+) ?\/ ?2\b(?! lanes)/g)) expect(Number(m[1])).toBeLessThanOrEqual(2);
    expect(text).not.toMatch(/Active/);
  });

  it('shows progress and, once a lane has finished, the time left from the mean lane and the budget', () => {
    const term = new Term(100, 40);
    const run = new Run(fleet(ids(6), 2), term);
    run.set('service-01', { status: 'running', phase: 'running', started_at: iso(0) });
    run.tick();
    expect(term.last().join('\n')).toContain('0/6 lanes done · 1 under way · estimating…');
    // Two lanes took 60 s and 120 s: a mean of 90 s; four lanes are left, two at a time: about 180 s.
    run.set('service-01', { status: 'completed', phase: 'pr-open', ended_at: iso(60) });
    run.set('service-02', { status: 'completed', phase: 'no-op', started_at: iso(0), ended_at: iso(120) });
    run.set('service-03', { status: 'running', phase: 'cloning', started_at: iso(120) });
    run.tick();
    expect(term.last().join('\n')).toContain('2/6 lanes done (1 completed, 1 no-op) · 1 under way · about 3m left');
    // The last lane left: at least one mean lane, not a fraction of one.
    for (const id of ['service-03', 'service-04', 'service-05'])
      run.set(id, { status: 'failed', phase: 'failed', started_at: iso(0), ended_at: iso(90), error: { class: 'directive-failed', message: 'exit 1' } });
    run.tick();
    expect(term.last().join('\n')).toContain('5/6 lanes done (1 completed, 1 no-op, 3 failed) · about 90s left');
  });

  it('sends nothing from a lane id, repo or message to the terminal but printable text', () => {
    const term = new Term(200, 40);
    const evil = 'evil\u001b]52;c;ZXZpbA==\u0007\u001b[2J\u202egnp.exe';
    const run = new Run(fleet([evil, 'ok']), term);
    run.set(evil, {
      status: 'failed',
      phase: 'failed',
      started_at: iso(0),
      ended_at: iso(5),
      repo: 'acme/\u001b[31mred',
      error: { class: 'directive-failed', message: 'exited 1:\r\u001b[1A\u001b[2Kfake line\u009b2J' },
    });
    run.tick();
    run.view.stop();
    const sent = term.writes
      .slice(1)
      .join('')
      .replace(/\x1b\[\d+A\x1b\[0J/g, '');
    expect(sent).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/);
    expect(sent).toContain('evil\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\u202egnp.exe');
    expect(sent).toContain('exited 1:\\r\\x1b[1A\\x1b[2Kfake line\\x9b2J');
  });

  it('redraws at once when the terminal is resized, moving up over the lines as the narrower terminal reflowed them', () => {
    const term = new Term(100, 40);
    const run = new Run(fleet(ids(4).map((id) => `${id}-with-a-name-long-enough-to-reflow`)), term);
    run.set(run.manifest.lanes[0]!.lane, { status: 'running', phase: 'running', started_at: iso(1) });
    run.tick();
    const before = term.last();
    term.columns = 30;
    term.emit('resize');
    const frames = term.frames();
    expect(frames).toHaveLength(2);
    // A line of 31 to 60 columns now takes two rows of 30, and so on.
    expect(frames[1]!.up).toBe(before.reduce((sum, l) => sum + Math.max(1, Math.ceil(columnsOf(l) / 30)), 0));
    expect(frames[1]!.up).toBeGreaterThan(before.length);
    for (const l of frames[1]!.lines) expect(columnsOf(l)).toBeLessThanOrEqual(30);
    // Wider again: nothing wraps, the frame is as many rows as lines.
    term.columns = 120;
    term.emit('resize');
    expect(term.frames()[2]!.up).toBe(frames[1]!.lines.length);
    run.view.stop();
    expect(term.listenerCount('resize')).toBe(0);
  });

  it('on a terminal of very few rows, draws one progress line', () => {
    const term = new Term(80, 4);
    const run = new Run(fleet(ids(10)), term);
    run.set('service-01', { status: 'running', phase: 'running', started_at: iso(0) });
    run.tick();
    run.set('service-01', { status: 'completed', phase: 'pr-open', ended_at: iso(60) });
    run.tick();
    const frames = term.frames();
    expect(frames.map((f) => f.lines.length)).toEqual([1, 1]);
    expect(frames[1]!.up).toBe(1);
    expect(frames[1]!.lines[0]).toBe('1/10 lanes done · about 5m left · directives 0 / 2 (budget)');
  });

  it('keeps the clocks moving while no lane changes, and draws the final state on stop', () => {
    const term = new Term(80, 30);
    const run = new Run(fleet(ids(2)), term);
    run.set('service-01', { status: 'running', phase: 'running', started_at: iso(0) });
    run.tick();
    expect(term.last()[0]).toContain('00:05:00 elapsed');
    vi.advanceTimersByTime(2000);
    expect(term.last()[0]).toContain('00:05:02 elapsed');
    run.set('service-01', { status: 'completed', phase: 'no-op', ended_at: iso(302) });
    run.view.stop();
    expect(term.last().join('\n')).toContain('1/2 lanes done (1 no-op)');
  });
});
