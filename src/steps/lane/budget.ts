/**
 * What a lane's agent runs spend, counted against the lane's caps and the fleet's ceiling: no attempt, lens or fix
 * round starts once either is reached, and each run is handed what is left of them.
 */
import type { FleetFile } from '../../core/fleet-file.js';
import type { AgentUsage } from '../../core/model.js';
import { addUsage, budgetStop, NO_USAGE, remaining, type LaneCaps } from '../../core/spend.js';

export class LaneBudget {
  /** What the lane's agent runs spent so far. */
  spent: AgentUsage = { ...NO_USAGE };
  /** The caps handed to the agent run going on (attempt or fix round). */
  given: LaneCaps = {};

  constructor(
    private readonly file: FleetFile,
    /** The fleet's spending, shared by its lanes (LaneContext.fleetSpend). */
    private readonly fleetSpend: { spent: number } | undefined,
  ) {}

  /** Counts an agent run's spending against the lane and the fleet. */
  charge(u: AgentUsage | null): void {
    if (!u) return;
    this.spent = addUsage(this.spent, u);
    if (this.fleetSpend && u.cost_usd) this.fleetSpend.spent += u.cost_usd;
  }

  private fleetCeiling(): { spent: number; ceiling: number } | null {
    const ceiling = this.file.budget?.fleet?.cost_usd;
    return ceiling !== undefined && this.fleetSpend ? { spent: this.fleetSpend.spent, ceiling } : null;
  }

  /** Why no further agent run of this lane may start (a cap or the fleet's ceiling reached), or null. */
  budgetStop(): string | null {
    return budgetStop(this.spent, this.file.budget?.lane, this.fleetCeiling());
  }

  /**
   * What is left of the caps for the next agent run, for an agent CLI that enforces them within a run; `share` runs
   * going at once (a panel of lenses) split it.
   */
  caps(share = 1): LaneCaps {
    const left = remaining(this.spent, this.file.budget?.lane, this.fleetCeiling());
    return {
      ...(left.turns !== undefined ? { turns: Math.max(1, Math.floor(left.turns / share)) } : {}),
      ...(left.cost_usd !== undefined ? { cost_usd: Math.max(0.01, Math.floor((left.cost_usd / share) * 100) / 100) } : {}),
    };
  }

  /**
   * Counts what an agent run reported, never more than the cost it was allowed (`given`): a run that prints a
   * made-up result line cannot spend the fleet's whole ceiling on paper and stop every other lane.
   */
  chargeRun(u: AgentUsage | null, given: LaneCaps): void {
    if (u && given.cost_usd !== undefined && u.cost_usd !== null && u.cost_usd > given.cost_usd) u = { ...u, cost_usd: given.cost_usd };
    this.charge(u);
  }
}

/** What a lane spent between two readings of its total (a fix round's share). */
export function subtractUsage(after: AgentUsage, before: AgentUsage): AgentUsage | null {
  const out = { ...after };
  for (const k of Object.keys(out) as (keyof AgentUsage)[]) out[k] = after[k] === null ? null : Math.max(0, (after[k] ?? 0) - (before[k] ?? 0));
  return Object.values(out).some((v) => v) ? out : null;
}
