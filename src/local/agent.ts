/**
 * The prompt a coding agent receives for one lane, and the shell command line
 * that runs the agent. Pure: no I/O.
 *
 * Presets (flags checked against the CLIs' documentation):
 * - claude: `claude -p "$(cat <prompt_file>)" --output-format json --permission-mode acceptEdits <args>`
 *   `-p/--print` is Claude Code's headless mode; `--output-format json` prints one
 *   result object. `acceptEdits` lets it edit files (and run mkdir/touch/mv/cp)
 *   without asking; in print mode anything else that would need approval is
 *   refused rather than waited for, so the run can neither hang nor run
 *   arbitrary commands. `--dangerously-skip-permissions` (= bypassPermissions)
 *   is documented for isolated containers only and is left to the user:
 *   widen with `args`, e.g. ["--allowedTools", "Bash(npm test)"].
 * - codex: `codex exec --sandbox workspace-write <args> -- "$(cat <prompt_file>)"`
 *   `codex exec` is Codex's non-interactive mode (read-only by default; it never
 *   asks for approvals). `--sandbox workspace-write` lets it edit the working
 *   directory. The older `--full-auto` alias was deprecated in codex 0.128 and
 *   later removed, so it is not used. stdin is redirected from /dev/null
 *   because `codex exec` reads a piped stdin as extra prompt input.
 * - command: the user's template; {prompt_file} {prompt} {repo} {lane} {branch}
 *   are replaced by values quoted for the position they appear in (a bare word,
 *   inside '…', inside "…", inside $(…) or `…`), so no value can inject shell
 *   syntax. A placeholder inside a here-document is refused.
 *
 * `spec.command` on a preset replaces the binary (`claude`, `codex`); it is
 * inserted as written (it is the user's own shell text, like a template).
 */
import type { AgentSpec } from '../core/fleet-file.js';

export interface AgentPromptInput {
  directive: string;
  repo: string;
  lane: string;
  branch: string;
  owns: string[];
  never: string[];
  personas: { name: string; prompt?: string; description?: string }[];
  /** Failure output of the previous attempt. */
  feedback?: string;
  title: string;
}

export interface AgentVars {
  prompt_file: string;
  prompt: string;
  repo: string;
  lane: string;
  branch: string;
}

/** Feedback is the tail of a log: keep the prompt well under the kernel's limit for one argument (128 KiB). */
export const MAX_FEEDBACK_CHARS = 16 * 1024;

/** The largest run of backticks in `text`, plus one, so a fence around it cannot be closed by it. */
function fenceFor(text: string): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}

function codeSpan(text: string): string {
  const ticks = fenceFor(text).length - 2; // at least one more than any run inside
  const t = '`'.repeat(Math.max(1, ticks));
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${t}${pad}${text}${pad}${t}`;
}

/** Renders the worker prompt: markdown, deterministic for the same input. */
export function renderWorkerPrompt(p: AgentPromptInput): string {
  const out: string[] = [];
  out.push(`# ${p.title.trim() || `${p.repo}: ${p.lane}`}`);
  out.push('');
  out.push('You are one lane of a Fleet: the same directive is applied to many repositories, one working copy each. Work only on this one.');
  out.push('');
  out.push('## Directive');
  out.push('');
  out.push(p.directive.trim());
  out.push('');
  out.push('## Repository');
  out.push('');
  out.push(`- Repository: ${codeSpan(p.repo)}`);
  out.push(`- Lane: ${codeSpan(p.lane)}`);
  out.push(`- Branch: ${codeSpan(p.branch)} (already checked out in the working directory)`);
  out.push('');
  out.push('## Scope');
  out.push('');
  if (p.owns.length > 0) {
    out.push('You may change only files matching these globs:');
    out.push('');
    for (const g of p.owns) out.push(`- ${codeSpan(g)}`);
  } else {
    out.push('You may change files anywhere in the whole repository.');
  }
  out.push('');
  out.push('You must never change:');
  out.push('');
  for (const g of p.never) out.push(`- ${codeSpan(g)}`);
  out.push(`- ${codeSpan('.git')} (the repository metadata)`);
  out.push('');
  out.push('A change outside this scope fails the lane.');
  if (p.personas.length > 0) {
    out.push('');
    out.push('## Personas');
    out.push('');
    out.push('Work with the expertise of:');
    for (const persona of p.personas) {
      out.push('');
      out.push(`### ${persona.name}`);
      if (persona.description?.trim()) {
        out.push('');
        out.push(persona.description.trim());
      }
      if (persona.prompt?.trim()) {
        out.push('');
        out.push(persona.prompt.trim());
      }
    }
  }
  if (p.feedback !== undefined && p.feedback.trim() !== '') {
    let feedback = p.feedback.trimEnd();
    if (feedback.length > MAX_FEEDBACK_CHARS) feedback = `[… earlier output cut …]\n${feedback.slice(-MAX_FEEDBACK_CHARS)}`;
    const fence = fenceFor(feedback);
    out.push('');
    out.push('## Previous attempt');
    out.push('');
    out.push('The previous attempt failed: fix the cause and complete the directive. Its output ended with:');
    out.push('');
    out.push(`${fence}text`);
    out.push(feedback);
    out.push(fence);
  }
  out.push('');
  out.push('## Ground rules');
  out.push('');
  out.push('- Edit files in the working directory only.');
  out.push('- Do not commit, push, create branches or open pull requests: Fleet commits and pushes your changes.');
  out.push('- Keep changes minimal: only what the directive asks, in the style of the surrounding code.');
  out.push('- If the task cannot be done, change nothing, explain why and exit with a non-zero status.');
  out.push('');
  return out.join('\n');
}

/** Quotes a value as one shell word: single quotes, with each ' written as '\''. */
export function shellQuote(value: string): string {
  if (value !== '' && /^[\w@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Escapes a value for the inside of a double-quoted shell string. */
function escapeDoubleQuoted(value: string): string {
  return value.replace(/[\\$`"]/g, (c) => `\\${c}`);
}

/** Escapes a value for the inside of a single-quoted shell string (closing, escaping and reopening around each '). */
function escapeSingleQuoted(value: string): string {
  return value.replace(/'/g, `'\\''`);
}

/** Inside `…` the shell first removes one level of \ before \ ` $: add it. */
function escapeForBackticks(text: string): string {
  return text.replace(/[\\`$]/g, (c) => `\\${c}`);
}

const PLACEHOLDER = /^\{(prompt_file|prompt|repo|lane|branch)\}/;

/** Quoting contexts of the template scanner: bare words, '…', "…", $(…), (…) and `…`. */
type Ctx = 'bare' | 'single' | 'double' | 'subst' | 'paren' | 'backtick';

/**
 * Replaces {prompt_file} {prompt} {repo} {lane} {branch} in a shell template,
 * quoting each value for where it stands: as a bare word (also inside $(…) or
 * `…`) → one single-quoted word; inside '…' → with ' escaped; inside "…" →
 * with \ $ ` " escaped. Unknown {…} are kept. A placeholder after a
 * here-document operator is refused (its body is not shell-quoted text).
 */
export function renderCommandTemplate(template: string, vars: AgentVars): string {
  let out = '';
  const stack: Ctx[] = ['bare'];
  let heredoc = false;
  const top = (): Ctx => stack[stack.length - 1]!;
  for (let i = 0; i < template.length; ) {
    const ch = template[i]!;
    const ctx = top();
    if (ch === '{') {
      const m = PLACEHOLDER.exec(template.slice(i));
      if (m) {
        if (heredoc) throw new Error(`agent command template: {${m[1]}} cannot be used in a here-document; use {prompt_file}`);
        const value = vars[m[1] as keyof AgentVars];
        let text = ctx === 'single' ? escapeSingleQuoted(value) : ctx === 'double' ? escapeDoubleQuoted(value) : shellQuote(value);
        // Each enclosing `…` strips one level of backslashes before the inner text is parsed.
        for (const c of stack) if (c === 'backtick') text = escapeForBackticks(text);
        out += text;
        i += m[0].length;
        continue;
      }
    }
    if (ctx === 'single') {
      if (ch === "'") stack.pop();
    } else if (ch === '\\') {
      out += template.slice(i, i + 2);
      i += 2;
      continue;
    } else if (ch === '$' && template[i + 1] === '(') {
      stack.push('subst');
      out += '$(';
      i += 2;
      continue;
    } else if (ch === '`') {
      if (ctx === 'backtick') stack.pop();
      else stack.push('backtick');
    } else if (ctx === 'double') {
      if (ch === '"') stack.pop();
    } else {
      // bare, subst, paren, backtick
      if (ch === "'") stack.push('single');
      else if (ch === '"') stack.push('double');
      else if (ch === '(') stack.push('paren');
      else if (ch === ')' && (ctx === 'subst' || ctx === 'paren')) stack.pop();
      else if (ch === '<' && template[i + 1] === '<' && template[i + 2] !== '<' && template[i - 1] !== '<') heredoc = true;
    }
    out += ch;
    i += 1;
  }
  return out;
}

/** The shell command line that runs the agent for one lane, in its working copy. */
export function agentCommand(spec: AgentSpec, vars: AgentVars): string {
  const args = (spec.args ?? []).map(shellQuote);
  const promptArg = `"$(cat ${shellQuote(vars.prompt_file)})"`;
  switch (spec.preset) {
    case 'claude': {
      const bin = spec.command ?? 'claude';
      return [bin, '-p', promptArg, '--output-format', 'json', '--permission-mode', 'acceptEdits', ...args].join(' ');
    }
    case 'codex': {
      const bin = spec.command ?? 'codex';
      return [bin, 'exec', '--sandbox', 'workspace-write', ...args, '--', promptArg, '</dev/null'].join(' ');
    }
    case 'command':
    default: {
      if (!spec.command) throw new Error('agent preset "command" needs a `command` template');
      const line = renderCommandTemplate(spec.command, vars);
      return args.length > 0 ? `${line} ${args.join(' ')}` : line;
    }
  }
}
