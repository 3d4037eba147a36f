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

describe('escapeCell', () => {
  it('keeps an @mention from notifying anyone (a zero-width space after the @), and the terminal shows it as written', () => {
    // Issue 28, second pass: a file name or an agent's finding with @octocat or @acme/security in a PR body or a check
    // run would notify them.
    const cell = escapeCell('ping @octocat and @acme/security, mail a@b.example');
    expect(cell).toBe('ping @&#8203;octocat and @&#8203;acme/security, mail a@&#8203;b.example');
    expect(cell).not.toMatch(/@[A-Za-z0-9]/);
    expect(terminalText(cell)).toBe('ping @octocat and @acme/security, mail a@b.example');
    // What the input itself wrote as an entity stays text.
    expect(terminalText(escapeCell('&#8203;'))).toBe('&#8203;');
  });

  it('keeps #123, GH-123 and owner/repo#123 from linking an issue (and leaving a "mentioned this" on it), as Renovate does', () => {
    const cell = escapeCell('fixes #12, see GH-7, acme/api#3, acme#4, <#5> and ;#6; the C# code and #heading stay');
    expect(cell).toBe('fixes #&#8203;12, see GH&#8203;-7, acme/api#&#8203;3, acme#&#8203;4, &lt;#&#8203;5&gt; and ;#&#8203;6; the C# code and #heading stay');
    expect(cell.replace(/&#8203;/g, '\u200b')).not.toMatch(/#\d|GH-\d/i);
    expect(terminalText(cell)).toBe('fixes #12, see GH-7, acme/api#3, acme#4, <#5> and ;#6; the C# code and #heading stay');
  });
});
