/**
 * Text from outside (a repository, a directive's output, a user's file) made
 * safe to show: every character that would act rather than print, written as
 * an escape. Pure: no I/O.
 */

/**
 * C0 and C1 controls (line breaks included), DEL, and the invisible format
 * characters that change how text reads: bidirectional embeddings, overrides
 * and isolates ("Trojan Source"), zero-width marks, line and paragraph
 * separators, the byte order mark.
 */
// eslint-disable-next-line no-control-regex
const ACTIVE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `s` with each active character written as an escape (`\n`, `\t`, `\x01`, `\u202e`). */
export function showInvisibles(s: string): string {
  return s.replace(ACTIVE, (c) => {
    const named = NAMED[c];
    if (named) return named;
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** `s` in double quotes, `\` and `"` escaped, every active character as an escape: unambiguous and printable. */
export function quoted(s: string): string {
  return `"${showInvisibles(s.replace(/[\\"]/g, (c) => `\\${c}`))}"`;
}

/** A path as git shows one (core.quotePath): as it is when it prints plainly, quoted when it holds an active character. */
export function displayPath(p: string): string {
  ACTIVE.lastIndex = 0;
  return ACTIVE.test(p) ? quoted(p) : p;
}
