/**
 * Markdown built from text Fleet does not control: repository and lane names,
 * changed files, error messages, a directive's output. Each helper keeps such
 * text to its place: on its line, inside its table cell or code span, opening
 * no HTML, link, emphasis, heading, quote or list of its own. Pure: no I/O.
 */
import { displayPath } from './text.js';

/**
 * Controls that have no business in a rendering (C0/C1 except whitespace) and
 * bidirectional overrides that make text read differently from what it is.
 */
// eslint-disable-next-line no-control-regex
const INVISIBLE = /[\u0000-\u0008\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** One line: invisibles dropped, every run of whitespace (line breaks included) one space, trimmed. */
export function oneLine(s: string): string {
  return s.replace(INVISIBLE, '').replace(/\s+/g, ' ').trim();
}

/**
 * Safe inside a markdown table cell and as inline text anywhere else: one line;
 * `|` escaped so it cannot end the cell; `<` `>` as entities so no HTML; backticks,
 * `*` `_` `~`, `[` `]` and `$` escaped so the text opens no code span, emphasis,
 * strikethrough, link or (on GitHub) math; a
 * backslash doubled where it would otherwise escape what follows; `&` escaped where
 * it would start an entity; an `@` kept from mentioning anyone, a `#123` from linking an issue.
 */
export function escapeCell(s: string): string {
  return (
    oneLine(s)
      .replace(/\\(?=[!-/:-@[-`{-~]|$)/g, '\\\\')
      .replace(/&(?=#?[A-Za-z0-9]+;)/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/[|`*[\]$~_]/g, (c) => `\\${c}`)
      // `#123`, `GH-123` or `owner/repo#123` in text Fleet did not write (an agent's finding, a file name) would link
      // that issue from a PR body or a check run, and leave a "mentioned this" on it; an @mention would notify that
      // user or team. A zero-width space keeps each text (as Renovate does), after every `#` before a digit: GitHub
      // links `user#5` and `;#5` too. The `#` first, so that the entity's own `#` is not taken for one.
      .replace(/#(?=\d)/g, '#&#8203;')
      .replace(/\b(GH)-(?=\d)/gi, '$1&#8203;-')
      .replace(/@(?=[A-Za-z0-9])/g, '@&#8203;')
  );
}

/**
 * An inline code span holding `s` verbatim on one line, fenced with more backticks
 * than `s` contains in a row. For lists and paragraphs; in a table use `codeCell`.
 */
export function codeSpan(s: string): string {
  const t = oneLine(s);
  if (t === '') return '—';
  let longest = 0;
  for (const run of t.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = '`'.repeat(longest + 1);
  const pad = t.startsWith('`') || t.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${t}${pad}${fence}`;
}

/** A code span inside a table cell: GFM splits cells before inline parsing, so `|` is escaped even here. */
export function codeCell(s: string): string {
  return codeSpan(s).replace(/\|/g, '\\|');
}

/** A mermaid quoted label: characters that mean something to mermaid or HTML become `#<code>;` entities. */
export function mermaidLabel(s: string): string {
  return oneLine(s).replace(/[#&"<>`\\]/g, (c) => `#${c.charCodeAt(0)};`);
}

/** A code span around text already on one line, kept exactly (spaces too), fenced with more backticks than it holds in a row. */
function fence(t: string): string {
  let longest = 0;
  for (const run of t.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const ticks = '`'.repeat(longest + 1);
  const pad = t.startsWith('`') || t.endsWith('`') || (t.startsWith(' ') && t.endsWith(' ')) ? ' ' : '';
  return `${ticks}${pad}${t}${pad}${ticks}`;
}

/**
 * A file path from a repository as inline code: exactly as it is when it prints
 * plainly, otherwise quoted with its line breaks and controls as escapes (as git
 * shows it), so a name holding "\n\n**Directive**" can never start a block.
 */
export function pathSpan(path: string): string {
  return path === '' ? '—' : fence(displayPath(path));
}

/** The largest run of backticks in `text`, plus one (at least three), so a code fence around it cannot be closed by it. */
export function fenceFor(text: string): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}

/**
 * Markdown Fleet rendered, as a terminal shows it: the escapes escapeCell and codeCell added (`\[`, `\|`, `&lt;`…)
 * read back as the characters they stand for, so `[.editorconfig]` is not printed `\[.editorconfig\]`. Code spans
 * keep their text (only the `\|` a table cell needs is undone). For a terminal only: the result is no longer safe
 * markdown, so it never goes where markdown is rendered (a job summary, a PR body). Invisibles stay out: escapeCell
 * and oneLine dropped them before.
 */
export function terminalText(md: string): string {
  return md
    .split('\n')
    .map((line) =>
      line
        // An escaped backtick (escapeCell's \`) opens no code span: it is text, read back below.
        .split(/(?<!\\)(`+)([\s\S]*?)\1/g)
        .map((part, i, arr) => {
          // split with two groups: [text, fence, code, text, fence, code, …]; the code keeps its fence
          if (i % 3 === 1) return part;
          if (i % 3 === 2) return `${part.replace(/\\\|/g, '|')}${arr[i - 1]}`;
          return part
            .replace(/\\([!-/:-@[-`{-~])/g, '$1')
            .replace(/&#8203;/g, '')
            .replace(/&lt;/g, '<')
            .replace(/&gt;/g, '>')
            .replace(/&amp;/g, '&');
        })
        .join(''),
    )
    .join('\n');
}
