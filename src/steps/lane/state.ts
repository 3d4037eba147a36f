/**
 * The state a lane's phases share while it runs: its record, its folders, what the clone found, the attempt going on
 * and the feedback it was given, its budget. Each phase module takes the run and moves it on; nothing outside the
 * lane's phases writes it (the review sees the lane through a narrow handle: review-phase.ts).
 */
import { join } from 'node:path';
import type { LaneRecord, LaneSpec } from '../../core/model.js';
import type { Routing } from '../../core/routing.js';
import type { CloneResult } from '../../ports.js';
import { LaneBudget } from './budget.js';
import type { LaneContext } from './context.js';
import { laneDir } from './layout.js';

export class LaneRun {
  /** Replaced on every update: read it as `run.rec`, never keep it. */
  rec: LaneRecord;
  readonly t0: number;
  readonly dir: string;
  readonly repoDir: string;
  cloned!: CloneResult;
  routing: Routing | null = null;
  /** The directive attempt running or last run (1-based). */
  n = 0;
  feedback: string | undefined;
  directiveMs = 0;
  checksMs = 0;
  /**
   * The commit a lane without checks made as soon as its directive ended (see `stageForFence`), kept for the push;
   * null when the commit is still to be made (a lane with checks, or a reviewed change: from what is staged).
   */
  made: { commit: string; committed: { files: string[]; patch: string } } | null = null;
  /**
   * This lane's push created its branch (pushed with a lease that the branch did not exist): no open PR can have it as
   * head yet, so publishing may open one without looking for it first.
   */
  branchCreated = false;
  /** The relay of earlier waves as this lane received it (markdown), or empty. */
  relayText = '';
  readonly budget: LaneBudget;

  constructor(
    readonly ctx: LaneContext,
    readonly lane: LaneSpec,
    start: LaneRecord,
  ) {
    this.t0 = ctx.clock.now().getTime();
    this.dir = laneDir(ctx.root, lane.id);
    this.repoDir = join(this.dir, 'repo');
    this.budget = new LaneBudget(ctx.file, ctx.fleetSpend);
    this.rec = { ...start, status: 'running', started_at: ctx.clock.now().toISOString(), attempts: [], error: null, retry_count: 0 };
    if (lane.strategy) this.rec.strategy = { group: lane.strategy.group, label: lane.strategy.label, picked: null, reason: null, diff_lines: null };
  }

  update(patch: Partial<LaneRecord>, detail: string): void {
    this.rec = { ...this.rec, ...patch, updated_at: this.ctx.clock.now().toISOString() };
    this.ctx.onUpdate(this.rec, detail);
  }

  /** A path as the lane records it: relative to the fleet workspace. */
  rel(p: string): string {
    return p.slice(this.ctx.root.length + 1);
  }

  /** The commit the lane's change is made on: the base, or the commits of others it kept on top (branch_conflict: rebase). */
  get base(): string {
    return this.rec.branch_conflict?.start ?? this.cloned.base_commit;
  }

  addNote(note: string): void {
    this.rec.evidence = { ...this.rec.evidence, notes: [...this.rec.evidence.notes, note] };
  }
}
