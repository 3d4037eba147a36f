/**
 * claudeOutcome reads Claude Code's result object. The shapes of each failure it names (a refused key, no key, the
 * turn and cost caps, an overloaded API) come from the real CLI in test/integration/real-claude.test.ts; here, what
 * that test cannot make the real CLI print.
 */
import { describe, expect, it } from 'vitest';
import { claudeOutcome } from '../../src/core/agent-outcome.js';

const line = (r: Record<string, unknown>) => JSON.stringify({ type: 'result', ...r });

describe('claudeOutcome', () => {
  it('is null for a run that succeeded, for no result object, and for a result line that is not JSON', () => {
    expect(claudeOutcome(`${line({ is_error: false, subtype: 'success', result: 'Done.' })}\n=== exit=0`)).toBeNull();
    expect(claudeOutcome('some output\n=== exit=1')).toBeNull();
    expect(claudeOutcome('{"type":"result", not json')).toBeNull();
  });

  it('reads the last result object: an error after a success is the outcome', () => {
    const out = [line({ is_error: false, subtype: 'success' }), line({ is_error: true, subtype: 'error_during_execution', errors: ['tool crashed'] })].join('\n');
    expect(claudeOutcome(out)).toEqual({ class: 'directive-failed', message: 'the agent stopped on an error (error_during_execution: tool crashed)', final: false });
  });

  it('an error with no words of its own still says what kind it was, on one line', () => {
    expect(claudeOutcome(line({ is_error: true, terminal_reason: 'aborted', result: 'line one\nline two' }))!.message).toBe('the agent stopped on an error (aborted: line one line two)');
    expect(claudeOutcome(line({ is_error: true }))!.message).toBe('the agent stopped on an error (error: no message)');
  });
});
