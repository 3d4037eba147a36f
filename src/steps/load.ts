/** Reads a fleet file from disk (YAML or JSON) and validates it, reporting every problem at once. */
import { dirname, resolve } from 'node:path';
import { LineCounter, parseDocument, visit, type Document } from 'yaml';
import { duplicateJsonKeys } from '../core/json-keys.js';
import { MAX_FLEET_FILE_BYTES, MAX_TARGETS_FILE_BYTES } from '../core/limits.js';
import { findCycles } from '../core/plan.js';
import { defaultLaneId, validateFleetFile, type Problem, type ResolvedFleet } from '../core/validate.js';
import { readTextFile } from '../util/fs.js';

/** The yaml package's guard against alias bombs: aliases may expand to at most this many times their anchors' size. */
const MAX_YAML_ALIAS_COUNT = 100;

export type LoadResult = { ok: true; fleet: ResolvedFleet; path: string } | { ok: false; problems: Problem[] };

export function parseFleetText(text: string, file: string): { ok: true; value: unknown } | { ok: false; problems: Problem[] } {
  const parsed = file.endsWith('.json') ? parseJson(text, file) : parseYaml(text, file);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, problems: [{ file, field: '(top level)', message: 'a fleet file is a mapping with name, directive, run or agent, and targets' }] };
  }
  return { ok: true, value };
}

function parseJson(text: string, file: string): { ok: true; value: unknown } | { ok: false; problems: Problem[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, problems: [{ file, field: '(syntax)', message: `not valid JSON: ${(err as Error).message}` }] };
  }
  // JSON.parse keeps the last of a key written twice: a dropped `owns` would widen the fence without a word.
  const dups = duplicateJsonKeys(text);
  if (dups.length) {
    return {
      ok: false,
      problems: dups.map((d) => ({
        file,
        field: d.path ? `${d.path}.${d.key}` : d.key,
        message: `written twice (lines ${d.first_line} and ${d.line}); JSON would keep only the last: remove one`,
      })),
    };
  }
  return { ok: true, value };
}

function parseYaml(text: string, file: string): { ok: true; value: unknown } | { ok: false; problems: Problem[] } {
  const lineCounter = new LineCounter();
  // uniqueKeys catches the silent-overwrite mistake of a key written twice.
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true, strict: true, lineCounter });
  if (doc.errors.length) {
    return {
      ok: false,
      problems: doc.errors.map((e) => ({
        file,
        field: e.linePos?.[0] ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '(syntax)',
        message: `YAML: ${e.message.split('\n')[0]!.replace(/\s+at line \d+, column \d+:?$/, '')}`,
      })),
    };
  }
  try {
    return { ok: true, value: doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT }) };
  } catch (err) {
    // The yaml package refuses aliases that expand to far more than the text (a "billion laughs") with a ReferenceError.
    const at = firstAlias(doc, lineCounter);
    return {
      ok: false,
      problems: [
        {
          file,
          field: at ? `line ${at.line}, column ${at.col}` : '(aliases)',
          message: `YAML: ${/alias/i.test((err as Error).message) ? 'its aliases (*name) expand to far more data than the file holds (an alias bomb?): write the values out, or use fewer aliases' : (err as Error).message}`,
        },
      ],
    };
  }
}

/** Where the first alias of a document is, to point at. */
function firstAlias(doc: Document, lines: LineCounter): { line: number; col: number } | undefined {
  let at: number | undefined;
  visit(doc, {
    Alias(_key, node) {
      at = node.range?.[0];
      return visit.BREAK;
    },
  });
  return at === undefined ? undefined : lines.linePos(at);
}

/**
 * `overrides`: fields the command line sets over the file's (`--speculative N` sets `speculative.count`), validated
 * with the file so a bad one is reported like any other field.
 */
export async function loadFleetFile(path: string, overrides: { speculative?: number } = {}): Promise<LoadResult> {
  const read = await readTextFile(path, MAX_FLEET_FILE_BYTES, 'a fleet file');
  if (!read.ok) {
    const hint = read.message.includes('limit') ? ': list many targets in a targets_file, or find them with github.discover' : '';
    return { ok: false, problems: [{ file: path, field: '(file)', message: read.message + hint }] };
  }
  const parsed = parseFleetText(read.text, path);
  if (!parsed.ok) return parsed;
  const raw = parsed.value as Record<string, unknown>;
  if (overrides.speculative !== undefined && raw && typeof raw === 'object') {
    const given = raw.speculative && typeof raw.speculative === 'object' ? (raw.speculative as Record<string, unknown>) : {};
    raw.speculative = { ...given, count: overrides.speculative };
  }
  const listed = await withTargetsFile(raw, path);
  if (!listed.ok) return listed;
  const v = validateFleetFile(listed.value, path);
  if (v.ok) return { ok: true, fleet: v.fleet, path };
  const problems = v.problems.map((p) => listed.where(p));
  // The planner finds cycles only in a valid file; find them here too, so every problem shows at once.
  return { ok: false, problems: [...problems, ...cycleProblems(listed.value, path, problems)] };
}

/**
 * `targets_file:` names a plain list of targets, one per line (`#` starts a
 * comment), read relative to the fleet file and appended to `targets` with the
 * fleet's defaults. A problem in one of them is reported at its line.
 */
async function withTargetsFile(
  raw: Record<string, unknown>,
  path: string,
): Promise<{ ok: true; value: Record<string, unknown>; where(p: Problem): Problem } | { ok: false; problems: Problem[] }> {
  const name = raw.targets_file;
  if (name === undefined) return { ok: true, value: raw, where: (p) => p };
  if (typeof name !== 'string' || !name.trim()) {
    return { ok: false, problems: [{ file: path, field: 'targets_file', message: 'give the path of a file with one target per line' }] };
  }
  const listPath = resolve(dirname(path), name);
  const read = await readTextFile(listPath, MAX_TARGETS_FILE_BYTES, 'a targets_file');
  if (!read.ok) {
    const hint = read.message.includes('limit') ? ': split the list across fleets, or find the targets with github.discover' : '';
    return { ok: false, problems: [{ file: path, field: 'targets_file', message: `${listPath}: ${read.message}${hint}` }] };
  }
  const text = read.text;
  const explicit = Array.isArray(raw.targets) ? raw.targets : [];
  const lines: number[] = [];
  const extra: { repo: string }[] = [];
  // Windows line endings too: a \r left at the end would keep `#` from starting a comment and end up in a path.
  text.split(/\r\n|\r|\n/).forEach((line, i) => {
    const repo = line.replace(/#.*$/, '').trim();
    if (!repo) return;
    lines.push(i + 1);
    extra.push({ repo });
  });
  const { targets_file: _ignored, ...rest } = raw;
  return {
    ok: true,
    value: { ...rest, targets: [...explicit, ...extra] },
    where: (p) => {
      const m = /^targets\[(\d+)\](.*)$/.exec(p.field);
      const k = m ? Number(m[1]) - explicit.length : -1;
      return k >= 0 && m ? { file: listPath, field: `line ${lines[k]}${m[2] ? ` (${m[2].replace(/^\./, '')})` : ''}`, message: p.message } : p;
    },
  };
}

/** Dependency cycles among the targets of a file that failed validation, best effort (lane ids as written or derived). */
function cycleProblems(raw: unknown, file: string, already: readonly Problem[]): Problem[] {
  const targets = (raw as { targets?: unknown }).targets;
  if (!Array.isArray(targets)) return [];
  const lanes: { id: string; depends_on: string[]; index: number }[] = [];
  const seen = new Set<string>();
  targets.forEach((t: unknown, index) => {
    if (t === null || typeof t !== 'object') return;
    const { repo, lane, depends_on } = t as { repo?: unknown; lane?: unknown; depends_on?: unknown };
    const id = typeof lane === 'string' ? lane : typeof repo === 'string' ? defaultLaneId(repo) : undefined;
    if (!id || seen.has(id)) return;
    seen.add(id);
    lanes.push({ id, index, depends_on: Array.isArray(depends_on) ? depends_on.filter((d): d is string => typeof d === 'string') : [] });
  });
  const byId = new Map(lanes.map((l) => [l.id, l]));
  const out: Problem[] = [];
  for (const cycle of findCycles(lanes, 50)) {
    const first = byId.get(cycle[0]!)!;
    const field = `targets[${first.index}].depends_on`;
    // A lane depending on itself is already reported by validation.
    if (cycle.length === 2 && already.some((p) => p.field.startsWith(field))) continue;
    out.push({
      file,
      field,
      message:
        cycle.length === 2
          ? `lane "${first.id}" depends on itself: remove "${first.id}" from its depends_on`
          : `dependency cycle ${cycle.join(' → ')}: no lane in it can ever start; remove one of these depends_on entries (e.g. "${cycle[1]}" from lane "${first.id}")`,
    });
  }
  return out;
}
