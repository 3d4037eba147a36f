/**
 * What a step says to the runner: environment files (GITHUB_OUTPUT,
 * GITHUB_ENV, GITHUB_PATH, GITHUB_STATE, GITHUB_STEP_SUMMARY) and workflow
 * commands on stdout (`::add-mask::`, `::error::`, `::group::` …), parsed as
 * the runner parses them
 * (https://docs.github.com/actions/reference/workflows-and-actions/workflow-commands),
 * and the masker every log line goes through.
 */

/** GitHub's limit for one step's summary: the runner drops a larger one and says so. */
export const STEP_SUMMARY_LIMIT = 1024 * 1024;

export class FileCommandError extends Error {}

/** `name=value` lines and `name<<DELIMITER` … `DELIMITER` blocks. */
export function parseKeyValueFile(text: string, file: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const heredoc = /^([^=]+?)<<(.+)$/.exec(line);
    const eq = line.indexOf('=');
    if (heredoc && (eq < 0 || heredoc[1]!.length < eq)) {
      const [, name, delimiter] = heredoc;
      const body: string[] = [];
      let closed = false;
      for (i++; i < lines.length; i++) {
        if (lines[i] === delimiter) {
          closed = true;
          break;
        }
        body.push(lines[i]!);
      }
      if (!closed) throw new FileCommandError(`Unable to process file command '${file}' successfully. Matching delimiter not found '${delimiter}'`);
      out.push([name!, body.join('\n')]);
    } else if (eq > 0) {
      out.push([line.slice(0, eq), line.slice(eq + 1)]);
    } else {
      throw new FileCommandError(`Unable to process file command '${file}' successfully. Invalid format '${line}'`);
    }
  }
  return out;
}

export interface WorkflowCommand {
  name: string;
  properties: Record<string, string>;
  message: string;
}

function unescapeData(s: string): string {
  return s.replace(/%0D/gi, '\r').replace(/%0A/gi, '\n').replace(/%25/g, '%');
}

function unescapeProperty(s: string): string {
  return unescapeData(s).replace(/%3A/gi, ':').replace(/%2C/gi, ',');
}

/** One stdout line as a workflow command, or null for plain output. */
export function parseCommand(line: string): WorkflowCommand | null {
  const m = /^::([A-Za-z-]+)(?:\s+([^:]*))?::(.*)$/.exec(line);
  if (!m) return null;
  const properties: Record<string, string> = {};
  for (const part of (m[2] ?? '').split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) properties[part.slice(0, eq).trim()] = unescapeProperty(part.slice(eq + 1));
  }
  return { name: m[1]!.toLowerCase(), properties, message: unescapeData(m[3] ?? '') };
}

/** Replaces every registered secret and mask with `***`, as the runner does in logs. */
export class Masker {
  private readonly values = new Set<string>();

  add(value: string | undefined): void {
    if (!value) return;
    // A multi-line secret is masked line by line (the runner registers each line).
    for (const part of value.split(/\r?\n/)) if (part.trim().length > 0) this.values.add(part);
  }

  get secrets(): string[] {
    return [...this.values];
  }

  mask(text: string): string {
    let out = text;
    // Longest first, so a secret that contains another is masked whole.
    for (const v of [...this.values].sort((a, b) => b.length - a.length)) out = out.split(v).join('***');
    return out;
  }

  /** True when the text holds a registered secret (the runner then refuses to pass it as a job output). */
  contains(text: string): boolean {
    return [...this.values].some((v) => text.includes(v));
  }
}
