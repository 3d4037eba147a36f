/**
 * The discovery relay, pure (src/core/relay.ts): what a lane left, read from its file or its answer, and the relay a
 * later lane receives.
 */
import { describe, expect, it } from 'vitest';
import { answerDiscoveries, buildRelay, parseDiscoveries, renderRelay, type DiscoveryEntry } from '../../src/core/relay.js';

describe('what a lane left', () => {
  it('one discovery per line, list markers dropped, blank and # lines skipped, duplicates once, each cut to the item size', () => {
    const text =
      '# notes\n- `src/util/retry.ts` already has a backoff helper\n\n* The CI config is in .ci/run.\n1. the ci config is in .ci/run\n' + 'x'.repeat(500);
    expect(parseDiscoveries(text, 100)).toEqual(['`src/util/retry.ts` already has a backoff helper', 'The CI config is in .ci/run.', `${'x'.repeat(99)}…`]);
  });

  it('keeps a control character or a line break from splitting a discovery, and at most per-lane many', () => {
    expect(parseDiscoveries('a\u0007b\tc\n', 300)).toEqual(['a b c']);
    expect(parseDiscoveries(Array.from({ length: 30 }, (_, i) => `fact ${i}`).join('\n'), 300, 5)).toHaveLength(5);
  });

  it('reads the last "Discoveries" list of an answer, up to the next heading or prose', () => {
    const answer = 'Done.\n\n## Discoveries\n- The repo pins Node 18 in .nvmrc.\n- Tests need TZ=UTC.\n\nThat is all.\n';
    expect(answerDiscoveries(answer)).toEqual(['The repo pins Node 18 in .nvmrc.', 'Tests need TZ=UTC.']);
    expect(answerDiscoveries('**Discoveries:**\n* one\n## Next\n- not this')).toEqual(['one']);
    expect(answerDiscoveries('No such section here.\n- a list item')).toEqual([]);
  });
});

describe('the relay a lane receives', () => {
  const e = (lane: string, wave: number, discoveries: string[], repo = 'acme/a', ended_at: string | null = null): DiscoveryEntry => ({
    lane,
    repo,
    wave,
    ended_at,
    discoveries,
  });
  const limits = { max_chars: 4000, scope: 'fleet' as const };

  it('only earlier waves; most-cited first, then the newest wave; every lane that left it kept', () => {
    const entries = [e('a', 0, ['old fact', 'shared']), e('b', 1, ['new fact', 'Shared.']), e('c', 1, ['later']), e('d', 2, ['too late'])];
    const relay = buildRelay(entries, 2, 'acme/x', limits);
    expect(relay).toEqual([
      { text: 'shared', lanes: ['a', 'b'], wave: 1 },
      { text: 'new fact', lanes: ['b'], wave: 1 },
      { text: 'later', lanes: ['c'], wave: 1 },
      { text: 'old fact', lanes: ['a'], wave: 0 },
    ]);
    expect(renderRelay(relay)).toBe('- shared (from a, b)\n- new fact (from b)\n- later (from c)\n- old fact (from a)');
    expect(buildRelay(entries, 0, 'acme/x', limits)).toEqual([]);
  });

  it('within the budget: a discovery that does not fit is left out and the next tried', () => {
    const entries = [e('a', 0, ['x'.repeat(60), 'y'.repeat(50), 'z'.repeat(30)])];
    expect(buildRelay(entries, 1, 'acme/a', { max_chars: 95, scope: 'fleet' }).map((i) => i.text[0])).toEqual(['x', 'z']);
  });

  it('scope repository: only what lanes of the same repository found', () => {
    const entries = [e('a', 0, ['from a'], 'acme/a'), e('b', 0, ['from b'], 'acme/b')];
    expect(buildRelay(entries, 1, 'acme/b', { max_chars: 4000, scope: 'repository' }).map((i) => i.text)).toEqual(['from b']);
  });

  it('among discoveries cited as often in one wave, the lane that ended later comes first', () => {
    const entries = [e('a', 0, ['early'], 'acme/a', '2026-01-01T00:00:00Z'), e('b', 0, ['late'], 'acme/a', '2026-01-01T00:05:00Z')];
    expect(buildRelay(entries, 1, 'acme/a', limits).map((i) => i.text)).toEqual(['late', 'early']);
  });
});
