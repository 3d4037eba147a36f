/**
 * The fence: a lane may change only files inside its `owns` globs (empty = the
 * whole repository) and never a file matching a `never` glob. The `.git`
 * directory is always fenced off. Pure.
 */
import { matchesAny } from './glob.js';
import { displayPath, quoted } from './text.js';

export interface FenceVerdict {
  ok: boolean;
  /** Changed files that match none of the `owns` globs. */
  outside_owns: string[];
  /** Changed files that match a `never` glob (or lie in `.git`). */
  in_never: string[];
  /** One line naming the offending files and the rules they break; undefined when ok. */
  message: string | undefined;
}

/** The rule shown for paths in the `.git` directory. */
export const GIT_DIR_RULE = '.git';
/** How many offending files a message names before it says "…". */
export const MESSAGE_FILE_LIMIT = 10;

/**
 * A path inside a `.git` directory. Git refuses a `.git` component anywhere in a
 * path (case-insensitively on the file systems that fold case), so any such
 * component counts, not only the top-level one.
 */
export function isGitPath(path: string): boolean {
  return path.split('/').some((segment) => segment.toLowerCase() === '.git');
}

/**
 * A glob without a wildcard (or an escape): it matches the one path it spells and nothing else. Changed files are
 * files, so such a glob naming a folder (`packages/web`) matches none of the files in it; `packages/web/**` does.
 */
export function isLiteralGlob(pattern: string): boolean {
  return !/[*?[\]{}()!+@\\]/.test(pattern);
}

/** The folder whose files GitHub lets a push change only with the Workflows permission (the `workflow` scope). */
export const WORKFLOW_DIR = '.github/workflows/';

/**
 * A fence that holds workflow files only: every `owns` glob lies under `.github/workflows/` before its first wildcard
 * (`.github/workflows/*.yml`, `.github/workflows/ci.yml`). Such a lane can only change files GitHub refuses to take
 * from a credential without the Workflows permission; an empty `owns` (the whole repository) is not one.
 */
export function ownsOnlyWorkflows(owns: readonly string[]): boolean {
  return owns.length > 0 && owns.every((g) => literalPrefix(g.replace(/^\.\//, '')).startsWith(WORKFLOW_DIR));
}

function literalPrefix(glob: string): string {
  const i = glob.search(/[*?[\]{}()!+@\\]/);
  return i < 0 ? glob : glob.slice(0, i);
}

/**
 * Why files under a folder were found outside owns when owns names the folder itself (`packages/web` for
 * `packages/web/index.ts`), with the glob that says what was meant; '' when no owns glob is such a folder name.
 */
function folderHint(outside: readonly string[], owns: readonly string[]): string {
  const folders = owns.filter((g) => isLiteralGlob(g) && outside.some((f) => f.startsWith(`${g.replace(/\/+$/, '')}/`)));
  return folders
    .map(
      (g) =>
        ` (${quoted(g)} matches only a file of that exact path, not the files in a folder of that name: write ${quoted(`${g.replace(/\/+$/, '')}/**`)} for everything under it)`,
    )
    .join('');
}

function plural(n: number): string {
  return `${n} file${n === 1 ? '' : 's'}`;
}

function names(files: readonly string[]): string {
  // Quoted and escaped when a name holds a line break or a control: a message is one line wherever it is shown.
  const shown = files.slice(0, MESSAGE_FILE_LIMIT).map(displayPath).join(', ');
  return files.length > MESSAGE_FILE_LIMIT ? `${shown}, … (${files.length - MESSAGE_FILE_LIMIT} more)` : shown;
}

/**
 * Checks every changed file against the lane's scope. For a rename, pass both
 * the old and the new path: moving a file out of (or into) the fence is a change
 * to both places.
 */
export function checkFence(changed_files: string[], owns: string[], never: string[]): FenceVerdict {
  const files = [...new Set(changed_files)]; // a rename can repeat a path
  const outside_owns = owns.length ? files.filter((f) => !matchesAny(f, owns)) : [];
  const in_never = files.filter((f) => isGitPath(f) || matchesAny(f, never));

  if (outside_owns.length === 0 && in_never.length === 0) {
    return { ok: true, outside_owns, in_never, message: undefined };
  }
  const parts: string[] = [];
  if (outside_owns.length) {
    parts.push(`${plural(outside_owns.length)} outside owns [${owns.join(', ')}]: ${names(outside_owns)}${folderHint(outside_owns, owns)}`);
  }
  if (in_never.length) {
    // Name the rules that were broken, not every never glob of the lane.
    const rules = never.filter((g) => in_never.some((f) => matchesAny(f, [g])));
    if (in_never.some(isGitPath)) rules.push(GIT_DIR_RULE);
    parts.push(`${plural(in_never.length)} in never [${[...new Set(rules)].join(', ')}]: ${names(in_never)}`);
  }
  return { ok: false, outside_owns, in_never, message: parts.join('; ') };
}
