/**
 * The metadata file of a starter workflow (workflow template), checked by the
 * rules GitHub publishes and enforces:
 *
 * - actions/starter-workflows `script/validate-data/index.ts`: `name` a
 *   non-empty string, unique among the templates; `description` a string;
 *   `creator` an optional string; `iconName` a string, either
 *   `octicon <name>` or an SVG icon that exists; `categories` an array of
 *   strings, not empty, whose first entry is the folder's general category.
 * - `script/validate-categories`: every category is a general one
 *   ("Continuous integration", "Deployment", "Code Scanning", "Automation"),
 *   a Linguist language or a tech stack.
 * - Organization templates ("Creating workflow templates for your organization",
 *   https://docs.github.com/actions/how-tos/reuse-automations/create-workflow-templates):
 *   the metadata sits beside the workflow as `<name>.properties.json`, an SVG
 *   icon is `<iconName>.svg` in the same folder, and `filePatterns` is an
 *   optional array of regular expressions matched against files in the
 *   repository's root.
 *
 * Stricter than GitHub in two ways, both to catch typos: a key GitHub does not
 * read is refused, and only the general categories are accepted (Linguist's
 * and the tech stacks' lists are not here to check against).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const GENERAL_CATEGORIES = ['Continuous integration', 'Deployment', 'Code Scanning', 'Automation'];
const KEYS = new Set(['name', 'description', 'creator', 'iconName', 'categories', 'filePatterns']);

/** Problems with one template's properties, as `<file>: <field>: <what is wrong>`; `dir` holds the template and its icons. */
export function propertiesProblems(dir: string, template: string, folderCategory: string, seenNames: Set<string>): string[] {
  const base = template.replace(/\.ya?ml$/, '');
  const file = `${base}.properties.json`;
  const path = join(dir, file);
  if (!existsSync(path)) return [`${file}: missing (each template needs its metadata file beside it)`];
  let p: Record<string, unknown>;
  try {
    p = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    return [`${file}: not JSON: ${(err as Error).message}`];
  }
  if (!p || typeof p !== 'object' || Array.isArray(p)) return [`${file}: must be a JSON object`];
  const problems: string[] = [];
  const bad = (field: string, what: string) => problems.push(`${file}: ${field}: ${what}`);
  for (const k of Object.keys(p)) if (!KEYS.has(k)) bad(k, `not a property GitHub reads (${[...KEYS].join(', ')})`);
  if (typeof p.name !== 'string' || !p.name.trim()) bad('name', 'required, a non-empty string');
  else if (seenNames.has(p.name)) bad('name', `"${p.name}" is already the name of another template`);
  else seenNames.add(p.name);
  if (typeof p.description !== 'string') bad('description', 'required, a string');
  if (p.creator !== undefined && typeof p.creator !== 'string') bad('creator', 'a string when present');
  if (typeof p.iconName !== 'string') bad('iconName', 'required, a string ("octicon <name>" or an SVG icon beside the template)');
  else if (/^octicon\s+/.test(p.iconName)) {
    if (!/^octicon\s+([^.\s]+)/.test(p.iconName)) bad('iconName', `no icon named ${p.iconName}`);
  } else if (!existsSync(join(dir, `${p.iconName}.svg`))) bad('iconName', `no icon named ${p.iconName} (no ${p.iconName}.svg beside the template)`);
  if (!Array.isArray(p.categories) || p.categories.length === 0) bad('categories', 'required, a non-empty array of strings');
  else {
    if (p.categories.some((c) => typeof c !== 'string')) bad('categories', 'every category is a string');
    else if (String(p.categories[0]).toLowerCase() !== folderCategory.toLowerCase()) bad('categories', `the first category must be "${folderCategory}"`);
    for (const c of p.categories)
      if (typeof c === 'string' && !GENERAL_CATEGORIES.includes(c)) bad('categories', `"${c}" is not one of ${GENERAL_CATEGORIES.join(', ')}`);
  }
  if (p.filePatterns !== undefined) {
    if (!Array.isArray(p.filePatterns) || p.filePatterns.some((x) => typeof x !== 'string')) bad('filePatterns', 'an array of regular expressions (strings)');
    else {
      for (const x of p.filePatterns as string[]) {
        try {
          new RegExp(x);
        } catch (err) {
          bad('filePatterns', `"${x}" is not a regular expression: ${(err as Error).message}`);
        }
      }
    }
  }
  return problems;
}
