/**
 * Agent spending, pure (issue 9, "Budgets and cost"): what an agent run spent, read from what its CLI printed, summed
 * per lane and per fleet, and whether a lane or the fleet may start another agent run.
 *
 * Where the numbers come from:
 * - Claude Code (`--output-format json`) prints one result object with `total_cost_usd`, `num_turns` and `usage`
 *   (input and output tokens). It also enforces `--max-turns` and `--max-budget-usd` itself, so Fleet hands each run
 *   what is left of the lane's caps.
 * - Codex (`codex exec --json`, when `--json` is in `agent.args`) prints JSONL events; each `turn.completed` carries
 *   `usage` (input, cached input and output tokens). Codex reports no cost.
 * - Other agents report nothing: their spending is unknown (null), and only the caps Fleet can check apply.
 */
import type { AgentUsage } from './model.js';

export const NO_USAGE: AgentUsage = { cost_usd: null, turns: null, input_tokens: null, output_tokens: null };

/** Sums usages field by field; a field stays null only when no usage reported it. */
export function addUsage(a: AgentUsage | null | undefined, b: AgentUsage | null | undefined): AgentUsage {
  const out: AgentUsage = { ...NO_USAGE };
  for (const k of Object.keys(out) as (keyof AgentUsage)[]) {
    const x = a?.[k] ?? null;
    const y = b?.[k] ?? null;
    out[k] = x === null && y === null ? null : round((x ?? 0) + (y ?? 0), k);
  }
  return out;
}

function round(v: number, k: keyof AgentUsage): number {
  // Dollars to a millionth (no float dust in the manifest), counts to whole numbers.
  return k === 'cost_usd' ? Math.round(v * 1e6) / 1e6 : Math.round(v);
}

export function hasUsage(u: AgentUsage | null | undefined): u is AgentUsage {
  return !!u && Object.values(u).some((v) => v !== null);
}

/**
 * What one agent run spent, from its output (a log holding stdout). Claude Code: its last result object. Codex: the
 * sum of its `turn.completed` events (a turn each). Null when the output says nothing.
 */
export function usageFromOutput(preset: 'claude' | 'codex' | 'command', output: string): AgentUsage | null {
  const lines = output.split('\n');
  if (preset === 'claude') {
    for (let i = lines.length - 1; i >= 0; i--) {
      const r = jsonLine(lines[i]!);
      if (r?.type !== 'result') continue;
      const usage = (r.usage ?? {}) as Record<string, unknown>;
      return { cost_usd: num(r.total_cost_usd), turns: int(r.num_turns), input_tokens: int(usage.input_tokens), output_tokens: int(usage.output_tokens) };
    }
    return null;
  }
  if (preset === 'codex') {
    let total: AgentUsage | null = null;
    for (const line of lines) {
      const r = jsonLine(line);
      if (r?.type !== 'turn.completed' || !r.usage || typeof r.usage !== 'object') continue;
      const u = r.usage as Record<string, unknown>;
      total = addUsage(total, { cost_usd: null, turns: 1, input_tokens: int(u.input_tokens), output_tokens: int(u.output_tokens) });
    }
    return total;
  }
  return null;
}

function jsonLine(line: string): Record<string, unknown> | null {
  const t = line.trim();
  if (!t.startsWith('{')) return null;
  try {
    const v = JSON.parse(t) as unknown;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);
const int = (v: unknown) => (num(v) === null ? null : Math.round(v as number));

export interface LaneCaps {
  turns?: number;
  cost_usd?: number;
}

/**
 * Why a lane may not start another agent run, or null: its own caps (what it spent so far, where reported) and the
 * fleet's ceiling (what the whole fleet spent, as this process knows it).
 */
export function budgetStop(spent: AgentUsage, caps: LaneCaps | undefined, fleet: { spent: number; ceiling: number } | null): string | null {
  if (fleet && fleet.spent >= fleet.ceiling) return `the fleet's cost ceiling of $${money(fleet.ceiling)} is reached ($${money(fleet.spent)} spent)`;
  if (caps?.cost_usd !== undefined && (spent.cost_usd ?? 0) >= caps.cost_usd)
    return `the lane's cost cap of $${money(caps.cost_usd)} is reached ($${money(spent.cost_usd ?? 0)} spent)`;
  if (caps?.turns !== undefined && (spent.turns ?? 0) >= caps.turns) return `the lane's cap of ${caps.turns} agent turns is reached (${spent.turns} taken)`;
  return null;
}

/**
 * What is left of the lane's caps for the next run (and of the fleet's ceiling, which also bounds cost), for an agent
 * CLI that enforces them itself. Undefined fields: no cap.
 */
export function remaining(spent: AgentUsage, caps: LaneCaps | undefined, fleet: { spent: number; ceiling: number } | null): LaneCaps {
  const out: LaneCaps = {};
  if (caps?.turns !== undefined) out.turns = Math.max(1, caps.turns - (spent.turns ?? 0));
  const costs = [caps?.cost_usd !== undefined ? caps.cost_usd - (spent.cost_usd ?? 0) : Infinity, fleet ? fleet.ceiling - fleet.spent : Infinity];
  const left = Math.min(...costs);
  if (Number.isFinite(left)) out.cost_usd = Math.max(0.01, Math.round(left * 100) / 100);
  return out;
}

/** Dollars as the report shows them: two decimals, four under a cent. */
export function money(v: number): string {
  return v > 0 && v < 0.01 ? v.toFixed(4) : v.toFixed(2);
}
