/**
 * The live view while a fleet runs: on a terminal, a frame of the lanes redrawn in place (at most a few times a
 * second); elsewhere (CI logs, pipes), one line per lane transition so the log reads top to bottom.
 *
 * What a frame holds, and why it never wraps nor outgrows the terminal, is src/cli/live-frame.ts. Redrawing moves the
 * cursor up over the lines drawn last time and clears to the end of the screen; that is exact only because no line
 * wraps, so the terminal's size is read again for every frame.
 */
import type { LaneRecord, Manifest } from '../core/model.js';
import { showInvisibles } from '../core/text.js';
import type { FleetEvent } from '../steps/drivers/process.js';
import { laneCount } from '../core/report.js';
import { renderFrame, visibleWidth } from './live-frame.js';

interface Out {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
  /** A terminal stream says when its size changed ('resize'); the view redraws at once. */
  on?(event: 'resize', listener: () => void): unknown;
  off?(event: 'resize', listener: () => void): unknown;
}

const REDRAW_MS = 250;
/** A frame shows clocks (elapsed, the time left): drawn again this often even when no lane moved. */
const TICK_MS = 1000;
/** A terminal that does not say its size: the classic one. */
const DEFAULT_COLUMNS = 80;
const DEFAULT_ROWS = 24;

const UP = (n: number) => `\x1b[${n}A`;
const CLEAR_TO_END = '\x1b[0J';

export class LiveView {
  private manifest: Manifest | undefined;
  private lanes: ReadonlyMap<string, LaneRecord> = new Map();
  private timer: NodeJS.Timeout | undefined;
  /** The widths of the lines of the frame on screen, and the terminal width it was drawn for. */
  private drawn: number[] = [];
  private drawnColumns = 0;
  private lastDraw = 0;
  private dirty = false;
  private readonly onResize = () => {
    this.dirty = true;
    this.redraw();
  };

  constructor(private readonly out: Out) {}

  start(manifest: Manifest, root: string): void {
    this.manifest = manifest;
    const n = manifest.max_parallel;
    // The plan's and the report's own words for the count (laneCount), so the three never disagree.
    this.out.write(
      `Fleet ${manifest.fleet_id}: ${laneCount(manifest)}, up to ${n} directive${n === 1 ? '' : 's'} at once (the concurrency budget)\nWorkspace: ${root}\n`,
    );
    if (this.out.isTTY) {
      this.timer = setInterval(() => this.redraw(), REDRAW_MS);
      this.timer.unref();
      this.out.on?.('resize', this.onResize);
    }
  }

  event(e: FleetEvent, lanes: ReadonlyMap<string, LaneRecord>): void {
    this.lanes = lanes;
    if (this.out.isTTY) {
      this.dirty = true;
      return;
    }
    const clock = e.time.slice(11, 19);
    // A detail can quote a directive's output: its line breaks and terminal escapes are shown, never acted on.
    this.out.write(`${clock} ${showInvisibles(e.lane)}: ${e.from} → ${e.to}${e.detail ? ` (${showInvisibles(e.detail)})` : ''}\n`);
  }

  /**
   * How many lines up the frame on screen starts. Each line was drawn no wider than the terminal was, so it took one
   * row. A terminal made narrower since reflows a line wider than its new width onto several rows (most terminals
   * do; one that cuts lines instead has the cursor moved up over a line or two of what came before the frame, never
   * leaving a stale copy). One made shorter keeps the cursor on screen: moving up stops at the top row.
   */
  private rowsOnScreen(columns: number): number {
    if (columns >= this.drawnColumns) return this.drawn.length;
    return this.drawn.reduce((sum, w) => sum + Math.max(1, Math.ceil(w / columns)), 0);
  }

  private redraw(): void {
    if (!this.manifest) return;
    const now = Date.now();
    if (!this.dirty && now - this.lastDraw < TICK_MS) return;
    if (!this.drawn.length && !this.dirty) return;
    this.dirty = false;
    this.lastDraw = now;
    const columns = positive(this.out.columns) ?? DEFAULT_COLUMNS;
    const rows = positive(this.out.rows) ?? DEFAULT_ROWS;
    // The plan's order (wave, then lane): rows never move around as lanes change state.
    const lanes = this.manifest.lanes.map((l) => this.lanes.get(l.lane) ?? l);
    const started = Date.parse(this.manifest.started_at);
    const frame = renderFrame({
      fleetId: this.manifest.fleet_id,
      maxParallel: this.manifest.max_parallel,
      lanes,
      width: columns,
      height: rows,
      now,
      startedAt: Number.isNaN(started) ? now : started,
    });
    const up = this.drawn.length ? `${UP(this.rowsOnScreen(columns))}${CLEAR_TO_END}` : '';
    // One write: the terminal never shows a half-drawn frame for long.
    this.out.write(`${up}${frame.join('\n')}\n`);
    this.drawn = frame.map(visibleWidth);
    this.drawnColumns = columns;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.out.off?.('resize', this.onResize);
    this.dirty = true;
    if (this.out.isTTY) this.redraw();
  }
}

function positive(n: number | undefined): number | undefined {
  return typeof n === 'number' && Number.isFinite(n) && n >= 1 ? Math.floor(n) : undefined;
}
