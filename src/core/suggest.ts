/**
 * What to write instead, for a fleet file that does not fit the schema: the known field a misspelt one most likely
 * meant, and a value written in the form its field takes (`checks: npm test` → `checks: ["npm test"]`). Each message
 * shows the user's own value, so the fix can be copied. Pure: no I/O.
 */
import * as z from 'zod';
import { descriptionAt, fieldHomes, fieldsAt, schemasAt } from './fleet-file.js';
import { quoted } from './text.js';

/**
 * How many edits (insert, delete or change a letter, or swap two neighbours) turn `a` into `b`: the optimal string
 * alignment distance. Swaps count as one edit because `onws` for `owns` is one slip of the fingers, not two.
 */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** A name with case, `_` and `-` ignored: `maxParallel`, `max-parallel` and `max_parallel` are one name. */
function squashed(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}

/**
 * The known name that `word` most likely meant, or undefined when none is close enough to be worth saying. In order:
 * the same name written with other case or separators (`maxParallel`); the nearest by edit distance when at most a
 * third of its letters differ (`ownz`, `directiv`; a wider net would suggest `run` for `foo`); a name that has `word`
 * as one of its `_`-separated words (`retries` → `max_retries`), the shortest such.
 */
export function nearest(word: string, known: readonly string[]): string | undefined {
  const same = known.find((k) => squashed(k) === squashed(word));
  if (same) return same;
  const lower = word.toLowerCase();
  const limit = Math.max(1, Math.floor(word.length / 3));
  let best: { name: string; distance: number } | undefined;
  for (const k of known) {
    const distance = editDistance(lower, k.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { name: k, distance };
  }
  if (best) return best.name;
  if (lower.length < 4) return undefined; // `on` is a word of depends_on, and says nothing
  const containing = known.filter((k) => k.toLowerCase().split('_').includes(lower));
  return containing.sort((a, b) => a.length - b.length)[0];
}

/** The field path as problems name it: `targets[2].owns`. */
function named(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)), '');
}

/** Why `key` is not a field of the mapping at `path`, and what was probably meant. */
export function unknownFieldMessage(path: readonly PropertyKey[], key: string): string {
  const start = `unknown field "${key}"`;
  // A field written one level off is the commonest shape mistake: say where it belongs rather than guess a spelling.
  const inTarget = path.length === 2 && path[0] === 'targets' && typeof path[1] === 'number';
  if (path.length === 0 && !fieldsAt([]).includes(key) && fieldsAt(['targets', 0]).includes(key)) {
    return `${start} at the top level: it is a field of each target (targets: [{ ${key === 'repo' ? 'repo: …' : `repo: …, ${key}: …`} }])`;
  }
  if (inTarget && fieldsAt([]).includes(key)) return `${start} in a target: it is a setting of the whole fleet; write it at the top level`;
  const known = fieldsAt(path);
  const guess = nearest(key, known);
  if (guess) return `${start}: did you mean ${guess}?`;
  // A field of another mapping (`wait` is ci's, `labels` is pr's): say which, at most three of them.
  const homes = fieldHomes(key).filter((h) => h !== '' && h !== 'targets[]');
  if (homes.length) return `${start} here: it is a field of ${homes.slice(0, 3).join(', ')}${homes.length > 3 ? ', …' : ''}`;
  // A small mapping (merge, ci, a lens): its few fields say more than a pointer to the reference.
  if (known.length && known.length <= 8) return `${start}: the fields of ${named(path) || 'this mapping'} are ${known.join(', ')}`;
  return `${start}: check the spelling against the fleet file reference (docs/fleet-file.md)`;
}

/** A value as a message names it: `the text "npm test"`, `the number 8`, `a list`. Long text is cut. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (typeof value === 'string') return `the text ${shown(value)}`;
  if (typeof value === 'number' || typeof value === 'bigint') return `the number ${String(value)}`;
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a mapping' : `a ${typeof value}`;
}

const SHOWN_CHARS = 60;

/** Text quoted for a message, cut past SHOWN_CHARS so one long directive does not fill the screen. */
function shown(text: string): string {
  return quoted(text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text);
}

/** What a type is called in a message. */
const NOUNS: Record<string, string> = {
  array: 'a list',
  object: 'a mapping',
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
};

/** `key: value` as the file would hold it: YAML, or JSON for a .json file; `- value` for an entry of a list. */
function written(path: readonly PropertyKey[], value: string, json: boolean): string {
  const last = path[path.length - 1];
  if (typeof last !== 'string') return json ? value : `- ${value}`;
  return json ? `${JSON.stringify(last)}: ${value}` : `${last}: ${value}`;
}

/** A mapping written inline: `{ repo: "./b" }`, or `{"repo": "./b"}` in JSON. */
function inlineMapping(key: string, value: string, json: boolean): string {
  return json ? `{${JSON.stringify(key)}: ${value}}` : `{ ${key}: ${value} }`;
}

/** Whether the list at `path` takes text entries (so `[value]` is a form it accepts). */
function listOfText(path: readonly PropertyKey[]): boolean {
  return schemasAt([...path, 0]).some((s) => s instanceof z.ZodString || s instanceof z.ZodEnum);
}

/**
 * The field a mapping at `path` would put a lone text value in: its one required field (a target's `repo`), else a
 * field whose options include the value (`agent: claude` → `preset`). Undefined when neither is clear.
 */
function fieldForText(path: readonly PropertyKey[], text: string): string | undefined {
  for (const s of schemasAt(path)) {
    if (!(s instanceof z.ZodObject)) continue;
    const shape = s.shape as Record<string, z.ZodType>;
    const required = Object.keys(shape).filter((k) => !(shape[k] instanceof z.ZodOptional || shape[k] instanceof z.ZodDefault));
    if (required.length === 1) return required[0];
    const byOption = Object.keys(shape).find((k) => schemasAt([k], s).some((f) => f instanceof z.ZodEnum && (f.options as unknown[]).includes(text)));
    if (byOption) return byOption;
  }
  return undefined;
}

/** The reference's words on a field, as a parenthesis to end a message with. */
function described(path: readonly PropertyKey[]): string {
  const d = descriptionAt(path);
  return d ? ` (${d.replace(/\.$/, '')})` : '';
}

/**
 * A value of the wrong type, and the form its field takes, written with the user's own value where one can be:
 * `expected a list, not the text "npm test": write it as a list: checks: ["npm test"]`. A missing value says the
 * field is required and what it holds. `json`: show the form in JSON (a .json file) rather than YAML.
 */
export function wrongTypeMessage(expected: string, value: unknown, path: readonly PropertyKey[], json: boolean): string {
  const last = path[path.length - 1];
  const field = typeof last === 'string' ? last : undefined;
  const noun = NOUNS[expected] ?? expected;
  if (value === undefined && field) return `missing: add ${field}:${described(path)}`;
  // `repo:` with nothing after it reads as null in YAML.
  if (value === null) return `empty: give ${field ? `${field}: ` : 'it '}${expected === 'string' ? 'a value' : noun}${described(path)}`;
  const not = `expected ${noun}, not ${describeValue(value)}`;
  const scalar = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
  if (expected === 'array' && scalar) {
    if (!listOfText(path)) return `${not}: write a list of ${describeEntries(path)}${described(path)}`;
    return `${not}: write it as a list: ${written(path, `[${typeof value === 'string' ? shown(value) : quoted(String(value))}]`, json)}`;
  }
  if (expected === 'object' && typeof value === 'string') {
    const key = fieldForText(path, value);
    return key ? `${not}: write it as a mapping: ${written(path, inlineMapping(key, shown(value), json), json)}` : `${not}${described(path)}`;
  }
  if ((expected === 'number' || expected === 'int') && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) {
    return `${not}: write it without quotes: ${written(path, String(Number(value)), json)}`;
  }
  if (expected === 'int' && typeof value === 'number') return `expected a whole number, not ${value}`;
  if (expected === 'boolean' && typeof value === 'string' && /^(true|false|yes|no|on|off)$/i.test(value)) {
    const b = /^(true|yes|on)$/i.test(value);
    return `${not}: write ${written(path, String(b), json)} (without quotes)`;
  }
  if (expected === 'string' && (typeof value === 'number' || typeof value === 'boolean')) {
    return `${not}: quote it: ${written(path, quoted(String(value)), json)}`;
  }
  return `${not}${described(path)}`;
}

/** What the entries of the list at `path` are, for a message: `mappings` or the like. */
function describeEntries(path: readonly PropertyKey[]): string {
  const entries = schemasAt([...path, 0]);
  if (entries.some((s) => s instanceof z.ZodObject)) return 'mappings';
  return 'values';
}

/** A value that is not one of the options its field allows, with the nearest option when one is close. */
export function badOptionMessage(options: readonly unknown[], value: unknown): string {
  const names = options.map((o) => (typeof o === 'string' ? o : JSON.stringify(o)));
  const start = `${typeof value === 'string' ? shown(value) : describeValue(value)} is not one of ${names.join(', ')}`;
  const guess = typeof value === 'string' ? nearest(value, names) : undefined;
  return guess ? `${start}: did you mean ${guess}?` : start;
}

/** Zod's own words for a size limit ("Too small: expected string to have >=1 characters"), said the way a person would. */
export function sizeMessage(
  issue: { code: 'too_small' | 'too_big'; origin: string; inclusive?: boolean; minimum?: unknown; maximum?: unknown },
  value: unknown,
): string | undefined {
  const small = issue.code === 'too_small';
  const bound = Number(small ? issue.minimum : issue.maximum);
  if (issue.origin === 'string' && small && bound === 1) return 'is empty: give it a value, or leave the field out';
  if (issue.origin === 'number') {
    const rule = small ? (issue.inclusive ? `at least ${bound}` : `more than ${bound}`) : issue.inclusive ? `at most ${bound}` : `less than ${bound}`;
    return `must be ${rule}${typeof value === 'number' ? `, not ${value}` : ''}`;
  }
  if (issue.origin === 'array') {
    const count = Array.isArray(value) ? ` (${value.length} listed)` : '';
    return `list ${small ? 'at least' : 'at most'} ${bound} entr${bound === 1 ? 'y' : 'ies'}${count}`;
  }
  if (issue.origin === 'string') return `${small ? 'at least' : 'at most'} ${bound} characters`;
  return undefined;
}
