/** The CLI's live view prints what lanes report, which can quote a directive's output. */
import { describe, expect, it } from 'vitest';
import { LiveView } from '../../src/cli/live.js';

describe('the live view', () => {
  it("prints a directive's output in an event detail as one line, its terminal escapes shown, not sent", () => {
    let out = '';
    const view = new LiveView({ write: (s: string) => (out += s), isTTY: false });
    view.event(
      { time: '2026-01-01T00:00:07.000Z', lane: 'a', from: 'running', to: 'failed', status: 'failed', detail: 'exited 1: \u001b]52;c;ZXZpbA==\u0007\u001b[2J\n::warning::fake' },
      new Map(),
    );
    expect(out).toBe('00:00:07 a: running → failed (exited 1: \\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\n::warning::fake)\n');
  });
});
