/** Agent spending, pure (src/core/spend.ts): read from what the agent CLIs print, summed, and checked against caps. */
import { describe, expect, it } from 'vitest';
import { addUsage, budgetStop, money, NO_USAGE, remaining, usageFromOutput } from '../../src/core/spend.js';
import { agentAnswer } from '../../src/core/agent.js';

describe('what an agent run spent', () => {
  it("Claude Code: its last result object's cost, turns and tokens, whatever is printed around it", () => {
    const out = [
      '== fleet: running ==',
      JSON.stringify({
        type: 'result',
        subtype: 'success',
        result: 'ok',
        total_cost_usd: 0.1234,
        num_turns: 7,
        usage: { input_tokens: 900, output_tokens: 120 },
      }),
      '== exit 0 ==',
    ].join('\n');
    expect(usageFromOutput('claude', out)).toEqual({ cost_usd: 0.1234, turns: 7, input_tokens: 900, output_tokens: 120 });
    expect(usageFromOutput('claude', 'no json here')).toBeNull();
    // A run Claude Code stopped at its own cap reports no `result`, but it spent: counted all the same.
    const capped = JSON.stringify({
      type: 'result',
      subtype: 'error_max_budget_usd',
      is_error: true,
      total_cost_usd: 0.5,
      num_turns: 9,
      usage: { input_tokens: 1, output_tokens: 2 },
    });
    expect(usageFromOutput('claude', capped)).toEqual({ cost_usd: 0.5, turns: 9, input_tokens: 1, output_tokens: 2 });
    expect(agentAnswer('claude', `${capped}\n== exit 1 ==`)).toEqual({ text: '', usage: { cost_usd: 0.5, turns: 9, input_tokens: 1, output_tokens: 2 } });
  });

  it('Codex --json: the sum of its turn.completed events, a turn each, no cost', () => {
    const ev = (u: object) => JSON.stringify({ type: 'turn.completed', usage: u });
    const out = [
      JSON.stringify({ type: 'thread.started', thread_id: 't' }),
      ev({ input_tokens: 100, cached_input_tokens: 50, output_tokens: 10 }),
      'noise',
      ev({ input_tokens: 30, output_tokens: 5 }),
    ].join('\n');
    expect(usageFromOutput('codex', out)).toEqual({ cost_usd: null, turns: 2, input_tokens: 130, output_tokens: 15 });
  });

  it('a command agent reports nothing; a field nobody reported stays null when summed', () => {
    expect(usageFromOutput('command', JSON.stringify({ type: 'result', total_cost_usd: 1 }))).toBeNull();
    expect(addUsage({ ...NO_USAGE, turns: 2 }, { ...NO_USAGE, turns: 3, cost_usd: 0.1 + 0.2 })).toEqual({
      cost_usd: 0.3,
      turns: 5,
      input_tokens: null,
      output_tokens: null,
    });
  });
});

describe('caps', () => {
  it('stops at the fleet ceiling first, then the lane cost cap, then the turn cap', () => {
    const spent = { ...NO_USAGE, cost_usd: 1, turns: 10 };
    expect(budgetStop(spent, { cost_usd: 1 }, { spent: 5, ceiling: 5 })).toBe("the fleet's cost ceiling of $5.00 is reached ($5.00 spent)");
    expect(budgetStop(spent, { cost_usd: 1, turns: 5 }, { spent: 4, ceiling: 5 })).toBe("the lane's cost cap of $1.00 is reached ($1.00 spent)");
    expect(budgetStop(spent, { turns: 10 }, null)).toBe("the lane's cap of 10 agent turns is reached (10 taken)");
    expect(budgetStop(spent, { turns: 11, cost_usd: 2 }, { spent: 1, ceiling: 5 })).toBeNull();
  });

  it('hands the next run what is left, the fleet ceiling bounding the cost too, never nothing', () => {
    const spent = { ...NO_USAGE, cost_usd: 0.5, turns: 4 };
    expect(remaining(spent, { turns: 10, cost_usd: 2 }, { spent: 9, ceiling: 10 })).toEqual({ turns: 6, cost_usd: 1 });
    expect(remaining(spent, { cost_usd: 0.5 }, null)).toEqual({ cost_usd: 0.01 });
    expect(remaining(spent, undefined, null)).toEqual({});
    expect(money(0.004)).toBe('0.0040');
    expect(money(12.345)).toBe('12.35');
  });
});
