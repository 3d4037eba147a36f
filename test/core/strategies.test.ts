/** Speculative strategies, pure: the pick rules (src/core/strategies.ts) and the planner keeping a group in one shard. */
import { describe, expect, it } from 'vitest';
import { newLaneRecord, type LaneRecord } from '../../src/core/model.js';
import { diffLines, isGreen, pickStrategy } from '../../src/core/strategies.js';
import { keepGroupsTogether } from '../../src/core/plan.js';

function member(label: string, over: Partial<LaneRecord> & { diff?: number; open?: number } = {}): LaneRecord {
  const { diff = 10, open, ...rest } = over;
  const rec = newLaneRecord({ repo: 'acme/svc', lane: `svc.${label}`, wave: 0, branch: `fleet/x/svc/${label}`, depends_on: [] });
  return {
    ...rec,
    status: 'completed',
    phase: 'pushed',
    ci_conclusion: 'success',
    changed_files: ['a.ts'],
    ended_at: '2026-01-01T00:00:10Z',
    strategy: { group: 'svc', label, picked: null, reason: null, diff_lines: diff },
    ...(open === undefined
      ? {}
      : { review: { verdict: 'clear', rounds: [], findings: [], open, usage: { cost_usd: null, turns: null, input_tokens: null, output_tokens: null } } }),
    ...rest,
  };
}

describe('the pick', () => {
  it('first green: the green strategy that ended first; a red CI, a no-op, a failure or an open review is not green', () => {
    const members = [
      member('late', { ended_at: '2026-01-01T00:00:30Z' }),
      member('red', { ended_at: '2026-01-01T00:00:01Z', ci_conclusion: 'failure' }),
      member('noop', { ended_at: '2026-01-01T00:00:02Z', phase: 'no-op' }),
      member('early', { ended_at: '2026-01-01T00:00:20Z' }),
    ];
    expect(members.map(isGreen)).toEqual([true, false, false, true]);
    expect(pickStrategy('first-green', members)).toEqual({ pick: 'svc.early', reason: 'first green: early ended green first (2 of 4 green)' });
  });

  it('smallest green diff, then fewer files; fewest open findings, then the smaller diff', () => {
    const members = [
      member('a', { diff: 30 }),
      member('b', { diff: 12, changed_files: ['a', 'b'] }),
      member('c', { diff: 12 }),
      member('d', { diff: 2, status: 'failed' }),
    ];
    expect(pickStrategy('smallest-green-diff', members).pick).toBe('svc.c');
    const reviewed = [member('a', { open: 0, diff: 50 }), member('b', { open: 0, diff: 5 }), member('c', { open: 1, diff: 1 })];
    // An open finding keeps a review from clearing: only strategies whose review is clear are green at all.
    reviewed[2]!.review!.verdict = 'needs-person';
    expect(pickStrategy('fewest-open-findings', reviewed)).toEqual({ pick: 'svc.b', reason: 'fewest open findings: b has 0, 0 raised (2 of 3 green)' });
  });

  it('no green strategy, or a person picks: no pick, and why', () => {
    expect(pickStrategy('first-green', [member('a', { status: 'failed', error: { class: 'check-failed', message: 'x' } })])).toEqual({
      pick: null,
      reason: 'no strategy ended green (a: failed check-failed)',
    });
    expect(pickStrategy('person', [member('a')]).pick).toBeNull();
  });

  it('counts the lines a patch adds and removes, not its file headers', () => {
    expect(diffLines('diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-old\n+new\n+more\n context\n')).toBe(3);
  });
});

describe('keepGroupsTogether', () => {
  it("moves every strategy into its group's first shard and drops shards left empty, renumbering them", () => {
    const specs = new Map([
      ['svc.a', { strategy: { group: 'svc' } }],
      ['svc.b', { strategy: { group: 'svc' } }],
      ['z', {}],
    ]);
    const shards = [
      { id: 'w0-s0', wave: 0, lanes: ['svc.a'] },
      { id: 'w0-s1', wave: 0, lanes: ['svc.b'] },
      { id: 'w0-s2', wave: 0, lanes: ['z'] },
    ];
    expect(keepGroupsTogether(shards, specs)).toEqual([
      { id: 'w0-s0', wave: 0, lanes: ['svc.a', 'svc.b'] },
      { id: 'w0-s1', wave: 0, lanes: ['z'] },
    ]);
  });
});
