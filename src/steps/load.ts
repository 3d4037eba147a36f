/** Reads a fleet file from disk (YAML or JSON) and validates it, reporting every problem at once. */
import { existsSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { LineCounter, parseDocument, visit, type Document } from 'yaml';
import { isLiteralGlob } from '../core/fence.js';
import { globProblem } from '../core/glob.js';
import { duplicateJsonKeys } from '../core/json-keys.js';
import { MAX_FLEET_FILE_BYTES, MAX_TARGETS_FILE_BYTES } from '../core/limits.js';
import { findCycles } from '../core/plan.js';
import { classifyRepo, defaultLaneId, validateFleetFile, type Problem, type ResolvedFleet } from '../core/validate.js';
import { quoted } from '../core/text.js';
import { readTextFile } from '../util/fs.js';

/** The yaml package's guard against alias bombs: aliases may expand to at most this many times their anchors' size. */
const MAX_YAML_ALIAS_COUNT = 100;

export type LoadResult = { ok: true; fleet: ResolvedFleet; path: string } | { ok: false; problems: Problem[] };

export function parseFleetText(text: string, file: string): { ok: true; value: unknown } | { ok: false; problems: Problem[] } {
  const parsed = readFleetText(text, file);
  if (!parsed.ok) return parsed;
  return parsed.problems.length ? { ok: false, problems: parsed.problems } : { ok: true, value: parsed.value };
}

/**
 * A parse that could read a value, and the problems of the text that still let it: keys written twice. Those are
 * errors, but the value the parser kept (the last) is still worth checking, so they hide no other problem.
 */
type Read = { ok: true; value: unknown; problems: Problem[] } | { ok: false; problems: Problem[] };

/** The fleet file's mapping and its keys written twice, or why no mapping could be read. */
function readFleetText(text: string, file: string): { ok: true; value: Record<string, unknown>; problems: Problem[] } | { ok: false; problems: Problem[] } {
  const parsed = file.endsWith('.json') ? parseJson(text, file) : parseYaml(text, file);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const notMapping = { file, field: '(top level)', message: 'a fleet file is a mapping with name, directive, run or agent, and targets' };
    return { ok: false, problems: parsed.problems.length ? parsed.problems : [notMapping] };
  }
  return { ok: true, value: value as Record<string, unknown>, problems: parsed.problems };
}

function parseJson(text: string, file: string): Read {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, problems: [{ file, field: '(syntax)', message: `not valid JSON: ${(err as Error).message}` }] };
  }
  // JSON.parse keeps the last of a key written twice: a dropped `owns` would widen the fence without a word.
  const dups = duplicateJsonKeys(text).map((d) => ({
    file,
    field: d.path ? `${d.path}.${d.key}` : d.key,
    message: `written twice (lines ${d.first_line} and ${d.line}); JSON would keep only the last: remove one`,
  }));
  return { ok: true, value, problems: dups };
}

function parseYaml(text: string, file: string): Read {
  const lineCounter = new LineCounter();
  // uniqueKeys catches the silent-overwrite mistake of a key written twice.
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true, strict: true, lineCounter });
  const problems = doc.errors.map((e) => ({
    file,
    field: e.linePos?.[0] ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '(syntax)',
    message: `YAML: ${e.message.split('\n')[0]!.replace(/\s+at line \d+, column \d+:?$/, '')}`,
  }));
  // A key written twice still leaves a document (the parser keeps the last); any other error leaves none to check.
  if (doc.errors.some((e) => e.code !== 'DUPLICATE_KEY')) return { ok: false, problems };
  try {
    return { ok: true, value: doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT }), problems };
  } catch (err) {
    // The yaml package refuses aliases that expand to far more than the text (a "billion laughs") with a ReferenceError.
    const at = firstAlias(doc, lineCounter);
    return {
      ok: false,
      problems: [
        ...problems,
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
 * with the file so a bad one is reported like any other field; or the file's whole text.
 */
export async function loadFleetFile(
  path: string,
  overrides: { speculative?: number; pushOnly?: boolean; fork?: boolean; text?: string; fields?: Record<string, string | undefined> } = {},
): Promise<LoadResult> {
  // `text`: a fleet file built in memory (`fleet run --repo … -- CMD`); `path` then only names it and its folder.
  const read = overrides.text !== undefined ? { ok: true as const, text: overrides.text } : await readTextFile(path, MAX_FLEET_FILE_BYTES, 'a fleet file');
  if (!read.ok) {
    const hint = read.message.includes('limit') ? ': list many targets in a targets_file, or find them with github.discover' : '';
    return { ok: false, problems: [{ file: path, field: '(file)', message: read.message + hint }] };
  }
  const parsed = readFleetText(read.text, path);
  if (!parsed.ok) return parsed;
  const raw = parsed.value;
  if (overrides.speculative !== undefined && raw && typeof raw === 'object') {
    const given = raw.speculative && typeof raw.speculative === 'object' ? (raw.speculative as Record<string, unknown>) : {};
    raw.speculative = { ...given, count: overrides.speculative };
  }
  if ((overrides.pushOnly || overrides.fork) && raw && typeof raw === 'object') {
    const given = raw.pr && typeof raw.pr === 'object' ? (raw.pr as Record<string, unknown>) : {};
    raw.pr = { ...given, ...(overrides.pushOnly ? { open: false } : {}), ...(overrides.fork ? { fork: true } : {}) };
  }
  // Top-level fields a flag sets (`--branch-conflict`, `--author`): over the file's, validated with it.
  for (const [field, value] of Object.entries(overrides.fields ?? {})) if (value !== undefined && raw && typeof raw === 'object') raw[field] = value;
  const listed = await withTargetsFile(raw, path);
  if (!listed.ok) return listed;
  const v = validateFleetFile(listed.value, path);
  // Read from the file as written, so they are found whether or not the rest of it is valid.
  const folders = await folderGlobProblems(listed.value, path);
  if (v.ok && !folders.length && !parsed.problems.length) return { ok: true, fleet: v.fleet, path };
  // Keys written twice first: they say which of two values the rest was checked with.
  const problems = [...parsed.problems, ...[...(v.ok ? [] : v.problems), ...folders].map((p) => listed.where(p))];
  // The planner finds cycles only in a valid file; find them here too, so every problem shows at once.
  return { ok: false, problems: [...problems, ...cycleProblems(listed.value, path, problems)] };
}

/** Text entries of a list as written, with their indexes (a list that is not one, or an entry that is not text, is validation's to report). */
function textEntries(list: unknown): [string, number][] {
  return Array.isArray(list) ? list.flatMap((g, i): [string, number][] => (typeof g === 'string' ? [[g, i]] : [])) : [];
}

/**
 * owns and never globs without a wildcard that name a folder of a target (`owns: [packages/web]`). Globs are matched
 * against changed files (fence.ts), and a glob without a wildcard matches only the file of exactly that path: such an
 * owns lets the lane change nothing in the folder, such a never fences nothing in it off. Only seeing the folder
 * makes that certain (`Makefile` or `LICENSE` are files, and fine), so this looks where it can before any lane runs:
 * in the working copies of local targets (a path repo:, with forge local). Elsewhere the fence says it when a lane's
 * files are refused (fence.ts). A folder seen there is an error: the fix is certain, and the lane would fail or,
 * for never, be fenced less than the file says.
 */
async function folderGlobProblems(raw: Record<string, unknown>, path: string): Promise<Problem[]> {
  if (raw.forge !== undefined && raw.forge !== 'local') return [];
  const targets = Array.isArray(raw.targets) ? raw.targets : [];
  const fleetOwns = textEntries(raw.owns);
  const fleetNever = textEntries(raw.never);
  const candidate = (g: string) => isLiteralGlob(g) && !globProblem(g);
  if (![fleetOwns, fleetNever, ...targets.flatMap((t) => [textEntries(t?.owns), textEntries(t?.never)])].some((list) => list.some(([g]) => candidate(g))))
    return [];

  // A fleet-wide glob is reported once, at its own field, naming the first target where it is a folder.
  const found = new Map<string, { list: 'owns' | 'never'; glob: string; repo: string; more: number }>();
  const note = (field: string, list: 'owns' | 'never', glob: string, repo: string) => {
    const seen = found.get(field);
    if (seen) seen.more++;
    else found.set(field, { list, glob, repo, more: 0 });
  };
  for (const [index, t] of targets.entries()) {
    if (t === null || typeof t !== 'object' || typeof t.repo !== 'string' || classifyRepo(t.repo) !== 'path') continue;
    const dir = localPath(t.repo, dirname(path));
    // A bare repository has no working copy to look into (and folders of its own, such as hooks).
    if (!existsSync(join(dir, '.git'))) continue;
    // A lane's own owns, when it lists any, replaces the fleet's; never adds to it (validate.ts).
    const ownOwns = Array.isArray(t.owns) && t.owns.length > 0;
    const lists: [string, 'owns' | 'never', [string, number][]][] = [
      ownOwns ? [`targets[${index}].owns`, 'owns', textEntries(t.owns)] : ['owns', 'owns', t.owns === undefined || Array.isArray(t.owns) ? fleetOwns : []],
      [`targets[${index}].never`, 'never', textEntries(t.never)],
      ['never', 'never', fleetNever],
    ];
    for (const [at, list, globs] of lists) {
      for (const [glob, j] of globs) {
        if (candidate(glob) && (await isFolder(join(dir, glob)))) note(`${at}[${j}]`, list, glob, t.repo);
      }
    }
  }
  return [...found].map(([field, f]) => ({
    file: path,
    field,
    message:
      `${quoted(f.glob)} is a folder in ${f.repo}${f.more ? ` (and ${f.more} more target${f.more === 1 ? '' : 's'})` : ''}, and a glob without a wildcard matches only a file of exactly that path: ` +
      `${f.list === 'owns' ? 'the lane could change nothing in it' : 'nothing in it would be fenced off'}; write ${quoted(`${f.glob}/**`)} for everything under it`,
  }));
}

/** A path target's folder, found as the local forge finds it: relative to the fleet file, `~` for the home folder. */
function localPath(repo: string, baseDir: string): string {
  const raw = repo.startsWith('~') ? join(homedir(), repo.slice(1)) : repo;
  return isAbsolute(raw) ? raw : resolve(baseDir, raw);
}

/** A real folder (not a link to one: git keeps a link as a file, which the glob does match). */
async function isFolder(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isDirectory();
  } catch {
    return false;
  }
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
