/**
 * claudeOutcome reads Claude Code's result object. The shapes of each failure it names (a refused key, no key, the
 * turn and cost caps, an overloaded API) come from the real CLI in test/integration/real-claude.test.ts; here, what
 * that test cannot make the real CLI print.
 */
import { describe, expect, it } from 'vitest';
import { claudeOutcome, codexOutcome, lastCodexMessage } from '../../src/core/agent-outcome.js';

const line = (r: Record<string, unknown>) => JSON.stringify({ type: 'result', ...r });

describe('claudeOutcome', () => {
  it('is null for a run that succeeded, for no result object, and for a result line that is not JSON', () => {
    expect(claudeOutcome(`${line({ is_error: false, subtype: 'success', result: 'Done.' })}\n=== exit=0`)).toBeNull();
    expect(claudeOutcome('some output\n=== exit=1')).toBeNull();
    expect(claudeOutcome('{"type":"result", not json')).toBeNull();
  });

  it('reads the last result object: an error after a success is the outcome', () => {
    const out = [line({ is_error: false, subtype: 'success' }), line({ is_error: true, subtype: 'error_during_execution', errors: ['tool crashed'] })].join(
      '\n',
    );
    expect(claudeOutcome(out)).toEqual({
      class: 'directive-failed',
      message: 'the agent stopped on an error (error_during_execution: tool crashed)',
      final: false,
    });
  });

  it('an error with no words of its own still says what kind it was, on one line', () => {
    expect(claudeOutcome(line({ is_error: true, terminal_reason: 'aborted', result: 'line one\nline two' }))!.message).toBe(
      'the agent stopped on an error (aborted: line one line two)',
    );
    expect(claudeOutcome(line({ is_error: true }))!.message).toBe('the agent stopped on an error (error: no message)');
  });
});

describe('codexOutcome and lastCodexMessage', () => {
  // The event shapes are the real CLI's (test/integration/real-codex.test.ts); here, what that test does not make it print.
  const ev = (e: Record<string, unknown>) => JSON.stringify(e);
  it('a run that completed is no failure; its answer is the last agent_message, whatever else it printed', () => {
    const out = [
      '=== header',
      ev({ type: 'item.completed', item: { type: 'agent_message', text: 'first' } }),
      ev({ type: 'item.completed', item: { type: 'command_execution' } }),
      ev({ type: 'item.completed', item: { type: 'agent_message', text: '[{"severity":"low"}]' } }),
      ev({ type: 'turn.completed', usage: {} }),
    ].join('\n');
    expect(codexOutcome(out)).toBeNull();
    expect(lastCodexMessage(out)).toBe('[{"severity":"low"}]');
    expect(lastCodexMessage('plain text, no events')).toBeNull();
  });

  it("names a quota, and an error it cannot place, in the CLI's words", () => {
    expect(codexOutcome(ev({ type: 'turn.failed', error: { message: 'Quota exceeded. Check your plan and billing details.' } }))).toEqual({
      class: 'directive-failed',
      message: "the agent's model API account is out of quota (Quota exceeded. Check your plan and billing details.)",
      final: true,
    });
    expect(codexOutcome(ev({ type: 'turn.failed', error: {} }))!.message).toBe('the agent stopped on an error (no message)');
  });
});
