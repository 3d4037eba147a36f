/**
 * The live view while a fleet runs: on a terminal, the status table redrawn in
 * place (at most a few times a second); elsewhere (CI logs, pipes), one line per
 * lane transition so the log reads top to bottom.
 */
import type { LaneRecord, Manifest } from '../core/model.js';
import { summarize } from '../core/manifest.js';
import { renderStatusTable } from '../core/report.js';
import { showInvisibles } from '../core/text.js';
import type { FleetEvent } from '../steps/run.js';

interface Out {
  write(s: string): unknown;
  isTTY?: boolean;
}

const REDRAW_MS = 250;

export class LiveView {
  private manifest: Manifest | undefined;
  private lanes: ReadonlyMap<string, LaneRecord> = new Map();
  private timer: NodeJS.Timeout | undefined;
  private drawnLines = 0;
  private dirty = false;

  constructor(private readonly out: Out) {}

  start(manifest: Manifest, root: string): void {
    this.manifest = manifest;
    this.out.write(`Fleet ${manifest.fleet_id}: ${manifest.lanes.length} lanes in ${manifest.waves.length} wave(s), up to ${manifest.max_parallel} at once\nWorkspace: ${root}\n`);
    if (this.out.isTTY) {
      this.timer = setInterval(() => this.redraw(), REDRAW_MS);
      this.timer.unref();
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
    this.out.write(`${clock} ${e.lane}: ${e.from} → ${e.to}${e.detail ? ` (${showInvisibles(e.detail)})` : ''}\n`);
  }

  private redraw(): void {
    if (!this.dirty || !this.manifest) return;
    this.dirty = false;
    const lanes = this.manifest.lanes.map((l) => this.lanes.get(l.lane) ?? l);
    const now = new Date().toISOString();
    const m: Manifest = { ...this.manifest, lanes, summary: summarize(lanes, this.manifest.started_at, null) };
    const text = renderStatusTable(m, { now, maxRows: 30 });
    // Move up over the previous table and clear to the end of the screen.
    const up = this.drawnLines ? `\x1b[${this.drawnLines}A\x1b[0J` : '';
    this.out.write(`${up}${text}\n`);
    this.drawnLines = text.split('\n').length;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.dirty = true;
    if (this.out.isTTY) this.redraw();
  }
}
