/** Markdown built from untrusted text, read back for a terminal (src/core/markdown.ts). */
import { describe, expect, it } from 'vitest';
import { codeCell, escapeCell, terminalText } from '../../src/core/markdown.js';

describe('terminalText', () => {
  it("reads escapeCell's escapes back, leaves code spans as they are but for a table's \\|, and keeps invisibles out", () => {
    const cell = escapeCell('added [.editorconfig] to a_b | *x* <b> &lt; \\n');
    expect(terminalText(`| ${cell} | ${codeCell('a|b')} |`)).toBe('| added [.editorconfig] to a_b | *x* <b> &lt; \\n | `a|b` |');
    expect(terminalText('`\\[kept\\]` and \\[undone\\]')).toBe('`\\[kept\\]` and [undone]');
    expect(terminalText(escapeCell('a\u001b[31mred'))).toBe('a[31mred');
    // Escaped backticks are text, not a code span, even beside a real one.
    expect(terminalText(`${escapeCell('a`b`c')} | ${codeCell('x')}`)).toBe('a`b`c | `x`');
  });
});
