/** Reads a fleet file from disk (YAML or JSON) and validates it, reporting every problem at once. */
import { readFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import { validateFleetFile, type Problem, type ResolvedFleet } from '../core/validate.js';

export type LoadResult = { ok: true; fleet: ResolvedFleet; path: string } | { ok: false; problems: Problem[] };

export function parseFleetText(text: string, file: string): { ok: true; value: unknown } | { ok: false; problems: Problem[] } {
  if (file.endsWith('.json')) {
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch (err) {
      return { ok: false, problems: [{ file, field: '(syntax)', message: `not valid JSON: ${(err as Error).message}` }] };
    }
  }
  // uniqueKeys catches the silent-overwrite mistake of a key written twice.
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true, strict: true });
  if (doc.errors.length) {
    return {
      ok: false,
      problems: doc.errors.map((e) => ({
        file,
        field: e.linePos?.[0] ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '(syntax)',
        message: `YAML: ${e.message.split('\n')[0]}`,
      })),
    };
  }
  const value = doc.toJS({ maxAliasCount: 100 });
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, problems: [{ file, field: '(top level)', message: 'a fleet file is a mapping with name, directive, run or agent, and targets' }] };
  }
  return { ok: true, value };
}

export async function loadFleetFile(path: string): Promise<LoadResult> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const message = code === 'ENOENT' ? 'no such file: check the path' : `cannot read it (${code ?? (err as Error).message})`;
    return { ok: false, problems: [{ file: path, field: '(file)', message }] };
  }
  const parsed = parseFleetText(text, path);
  if (!parsed.ok) return parsed;
  const v = validateFleetFile(parsed.value, path);
  return v.ok ? { ok: true, fleet: v.fleet, path } : v;
}
