/**
 * Matrix expansion with GitHub's rules
 * (https://docs.github.com/actions/how-tos/write-workflows/choose-what-workflows-do/run-job-variations):
 * the cartesian product of the vectors, `exclude` removes every combination
 * an entry matches (partially), `include` extends each combination it does
 * not overwrite an original value of, else adds a combination of its own; an
 * empty vector and more than 256 legs are errors, worded as GitHub words them.
 */
import type { Json } from './expressions.js';

export const MATRIX_LIMIT = 256;

export class MatrixError extends Error {}

type Combo = Record<string, Json>;

function sameValue(a: Json, b: Json): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function product(vectors: Array<[string, Json[]]>): Combo[] {
  let combos: Combo[] = [{}];
  for (const [key, values] of vectors) combos = combos.flatMap((c) => values.map((v) => ({ ...c, [key]: v })));
  return combos;
}

function matches(combo: Combo, partial: Combo): boolean {
  return Object.entries(partial).every(([k, v]) => k in combo && sameValue(combo[k]!, v));
}

function applyIncludes(base: Combo[], includes: Combo[]): Combo[] {
  const originals = base.map((c) => ({ original: c, value: { ...c } }));
  const extra: Combo[] = [];
  for (const inc of includes) {
    let used = false;
    for (const entry of originals) {
      // An include may not overwrite a value of the original matrix; values added by an earlier include may be overwritten.
      const clashes = Object.entries(inc).some(([k, v]) => k in entry.original && !sameValue(entry.original[k]!, v));
      if (clashes) continue;
      Object.assign(entry.value, inc);
      used = true;
    }
    if (!used) extra.push({ ...inc });
  }
  return [...originals.map((e) => e.value), ...extra];
}

/** Expands an evaluated `strategy.matrix`; `where` names the job and file for the error, as GitHub's message does. */
export function expandMatrix(matrix: Json, where: string): Combo[] {
  if (matrix === null || matrix === undefined) return [{}];
  if (typeof matrix !== 'object' || Array.isArray(matrix))
    throw new MatrixError(`Error when evaluating 'strategy' for job ${where}: Unexpected value '${String(matrix)}'`);
  const vectors: Array<[string, Json[]]> = [];
  let include: Combo[] = [];
  let exclude: Combo[] = [];
  for (const [key, value] of Object.entries(matrix)) {
    if (key === 'include') include = asCombos(value, where, key);
    else if (key === 'exclude') exclude = asCombos(value, where, key);
    else {
      if (!Array.isArray(value)) throw new MatrixError(`Error when evaluating 'strategy' for job ${where}: Unexpected value for matrix vector '${key}'`);
      if (value.length === 0) throw new MatrixError(`Error when evaluating 'strategy' for job ${where}: Matrix vector '${key}' does not contain any values`);
      vectors.push([key, value]);
    }
  }
  if (!vectors.length && !include.length) throw new MatrixError(`Error when evaluating 'strategy' for job ${where}: Matrix must define at least one vector`);
  const base = vectors.length ? product(vectors).filter((c) => !exclude.some((e) => matches(c, e))) : [];
  const combos = applyIncludes(base, include);
  if (combos.length > MATRIX_LIMIT) {
    throw new MatrixError(
      `Error when evaluating 'strategy' for job ${where}: the matrix produces ${combos.length} jobs; a matrix can generate at most ${MATRIX_LIMIT} jobs per workflow run`,
    );
  }
  return combos;
}

function asCombos(value: Json, where: string, key: string): Combo[] {
  if (value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'object' || v === null || Array.isArray(v))) {
    throw new MatrixError(`Error when evaluating 'strategy' for job ${where}: matrix ${key} must be a list of mappings`);
  }
  return value as Combo[];
}

/** The name GitHub gives a matrix leg without a `name:`: `job (v1, v2)`, values in matrix order. */
export function legName(base: string, combo: Combo): string {
  const values = Object.values(combo).map((v) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)));
  return values.length ? `${base} (${values.join(', ')})` : base;
}
