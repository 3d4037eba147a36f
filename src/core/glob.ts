/**
 * Every glob in Fleet goes through here, so matching has one meaning everywhere:
 * gitignore-like, case-sensitive, `**` spans directories, dotfiles included.
 */
import { minimatch, Minimatch } from 'minimatch';

const OPTIONS = { dot: true, nocase: false, matchBase: false, nonegate: true, nocomment: true } as const;

const cache = new Map<string, Minimatch>();

function compiled(pattern: string): Minimatch {
  let m = cache.get(pattern);
  if (!m) {
    m = new Minimatch(pattern, OPTIONS);
    cache.set(pattern, m);
  }
  return m;
}

/** A reason the glob is unusable, or undefined when it is fine. */
export function globProblem(pattern: string): string | undefined {
  if (!pattern.trim()) return 'a glob cannot be empty';
  if (pattern.startsWith('/')) return `"${pattern}" is absolute: globs are relative to the repository root (drop the leading /)`;
  if (pattern.startsWith('!')) return `"${pattern}" is a negation: put the pattern in never: instead`;
  if (pattern.split('/').includes('..')) return `"${pattern}" climbs out of the repository with ..`;
  // Changed files are reported without a leading ./ and never end in /, so such a glob would match nothing.
  if (pattern.startsWith('./')) return `"${pattern}" starts with ./: globs are already relative to the repository root (drop the ./)`;
  if (pattern.endsWith('/')) return `"${pattern}" ends with /: it matches no file; write ${pattern}** for everything under it`;
  let depth = 0;
  let braces = 0;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      i++; // an escaped character is literal
      continue;
    }
    if (ch === '[') depth++;
    if (ch === ']') depth = Math.max(0, depth - 1);
    if (ch === '{') braces++;
    if (ch === '}') braces--;
  }
  if (depth !== 0) return `"${pattern}" has an unclosed [`;
  if (braces !== 0) return `"${pattern}" has unbalanced { }`;
  const m = new Minimatch(pattern, OPTIONS);
  if (m.set.length === 0) return `"${pattern}" is not a valid glob`;
  return undefined;
}

export function matchesGlob(path: string, pattern: string): boolean {
  return compiled(pattern).match(path);
}

export function matchesAny(path: string, patterns: readonly string[]): boolean {
  for (const p of patterns) if (compiled(p).match(path)) return true;
  return false;
}

const MAGIC = /[*?[\]{}()!+@]/;

function segmentsOverlap(a: string, b: string): boolean {
  const aMagic = MAGIC.test(a);
  const bMagic = MAGIC.test(b);
  if (!aMagic && !bMagic) return a === b;
  if (!aMagic) return minimatch(a, b, OPTIONS);
  if (!bMagic) return minimatch(b, a, OPTIONS);
  // Two wildcards in one segment: compare the literal text before and after them; if neither rules it out, assume overlap.
  const pre = (s: string) => s.slice(0, s.search(MAGIC));
  const post = (s: string) => {
    const m = /[*?[\]{}()!+@]([^*?[\]{}()!+@]*)$/.exec(s);
    return m ? m[1]! : '';
  };
  const [pa, pb] = [pre(a), pre(b)];
  const [sa, sb] = [post(a), post(b)];
  return (pa.startsWith(pb) || pb.startsWith(pa)) && (sa.endsWith(sb) || sb.endsWith(sa));
}

function overlapFrom(a: string[], i: number, b: string[], j: number, memo: Map<string, boolean>): boolean {
  const key = `${i},${j}`;
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  let out: boolean;
  if (i === a.length && j === b.length) out = true;
  else if (i < a.length && a[i] === '**') out = overlapFrom(a, i + 1, b, j, memo) || (j < b.length && overlapFrom(a, i, b, j + 1, memo));
  else if (j < b.length && b[j] === '**') out = overlapFrom(a, i, b, j + 1, memo) || (i < a.length && overlapFrom(a, i + 1, b, j, memo));
  else if (i === a.length || j === b.length) out = false;
  else out = segmentsOverlap(a[i]!, b[j]!) && overlapFrom(a, i + 1, b, j + 1, memo);
  memo.set(key, out);
  return out;
}

function expand(pattern: string): string[] {
  // Brace sets make several patterns; compare each alternative.
  return pattern.includes('{') ? minimatch.braceExpand(pattern) : [pattern];
}

/**
 * Can some path match both globs? Conservative: when unsure it says yes, because
 * a false "no" would let two lanes edit the same file in one wave.
 */
export function globsOverlap(a: string, b: string): boolean {
  for (const x of expand(a)) {
    for (const y of expand(b)) {
      if (overlapFrom(x.split('/').filter(Boolean), 0, y.split('/').filter(Boolean), 0, new Map())) return true;
    }
  }
  return false;
}

/**
 * Where two `owns` lists can touch the same file. An empty list owns the whole
 * repository. Returns the first overlapping pair, or undefined.
 */
export function scopesOverlap(a: readonly string[], b: readonly string[]): [string, string] | undefined {
  const as = a.length ? a : ['**'];
  const bs = b.length ? b : ['**'];
  for (const x of as) for (const y of bs) if (globsOverlap(x, y)) return [x, y];
  return undefined;
}
