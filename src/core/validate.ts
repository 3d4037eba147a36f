/**
 * Turns a parsed fleet file into resolved lanes, collecting every problem at once.
 * Pure: the caller parses the file and hands over its text's value and its name.
 */
import type * as z from 'zod';
import {
  FleetFileSchema,
  REVIEW_DEFAULTS,
  TargetSchema,
  templateProblem,
  type FleetFile,
  type ReviewSpec,
  type StrategySpec,
  type TargetReviewSpec,
  type TargetSpec,
  LANE_ID_PATTERN,
} from './fleet-file.js';
import { BUILTIN_LENSES } from './review.js';
import type { LaneSpec, RepoKind, ResolvedReview } from './model.js';
import { globProblem, matchesAny } from './glob.js';
import { badOptionMessage, sizeMessage, unknownFieldMessage, wrongTypeMessage } from './suggest.js';
import { quoted, showInvisibles } from './text.js';

export interface Problem {
  /** The file the problem is in (or `<cli>` for flags). */
  file: string;
  /** Dotted path of the field, e.g. `targets[2].depends_on[0]`. */
  field: string;
  message: string;
}

/**
 * A lane's review: the target's fields over the fleet's (over the built-in defaults when only the target asks for
 * review). Null when neither asks, when the target says `review: false`, or when the lane is not run by the agent
 * (a lane's own `run:`: there is no worker to give dispositions or fix).
 */
export function resolveReview(fleet: ReviewSpec | undefined, target: TargetReviewSpec | undefined, agentLane: boolean): ResolvedReview | null {
  if (target === false || (!fleet && !target) || !agentLane) return null;
  const merged = { ...REVIEW_DEFAULTS, ...fleet, ...Object.fromEntries(Object.entries(target ?? {}).filter(([, v]) => v !== undefined)) };
  const lenses = merged.lenses.map((l) => (typeof l === 'string' ? { name: l, brief: BUILTIN_LENSES[l]! } : l));
  return { lenses: lenses.slice(0, merged.panel ?? lenses.length), rounds: merged.rounds, block: [...merged.block], label: merged.label };
}

/** Every problem of a `review:` block (the fleet's at `review`, a target's at `targets[i].review`). */
function reviewProblems(at: string, review: ReviewSpec | TargetReviewSpec | undefined, fleetLenses: number, p: (field: string, message: string) => void): void {
  if (!review) return;
  const seen = new Map<string, number>();
  review.lenses?.forEach((l, i) => {
    const name = typeof l === 'string' ? l : l.name;
    // Fleet names its own review files after lenses: these names would share a file with its other agent runs.
    if (name === 'dispositions' || name === 'fix' || name.endsWith('-again'))
      p(`${at}.lenses[${i}].name`, `"${name}" is a name Fleet keeps for its own review steps: name the lens otherwise`);
    const first = seen.get(name);
    if (first !== undefined) p(`${at}.lenses[${i}]`, `lens "${name}" is already in the panel at ${at}.lenses[${first}]: give a custom lens a name of its own`);
    else seen.set(name, i);
  });
  const available = review.lenses?.length ?? fleetLenses;
  if (review.panel !== undefined && review.panel > available) {
    p(
      `${at}.panel`,
      `a panel of ${review.panel} needs at least ${review.panel} lenses, and ${available} ${available === 1 ? 'is' : 'are'} listed: list more lenses or lower panel`,
    );
  }
}

export interface ResolvedFleet {
  file: FleetFile;
  lanes: LaneSpec[];
  /** Targets named in `exclude:`, accounted for but never run. */
  excluded: { repo: string; lane: string; reason: string }[];
  /** Things worth telling the user that are not errors (duplicates removed, …). */
  notes: string[];
}

export type ValidationResult = { ok: true; fleet: ResolvedFleet } | { ok: false; problems: Problem[] };

const GITHUB_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;
const URL_FORM = /^(?:https?:\/\/|ssh:\/\/|git:\/\/|file:\/\/|[\w.-]+@[\w.-]+:)/;

export function classifyRepo(repo: string): RepoKind | { problem: string } {
  if (URL_FORM.test(repo)) return 'url';
  if (repo.startsWith('.') || repo.startsWith('/') || repo.startsWith('~')) return 'path';
  if (GITHUB_NAME.test(repo)) {
    // The name alphabet allows dots, but GitHub reserves "." and "..".
    if (/\/\.{1,2}$/.test(repo)) return { problem: `"${repo}" is not a valid owner/repo name: "." and ".." cannot be repository names` };
    return 'github';
  }
  if (!repo.includes('/')) {
    return { problem: `"${repo}" is neither owner/repo nor a path: write owner/${repo} for GitHub or ./${repo} for a local folder` };
  }
  return { problem: `"${repo}" is not a valid owner/repo name, path (start it with ./ or /) or git URL` };
}

/** The default lane id: the repository's last path segment, without `.git`, lowercased to the lane alphabet. */
export function defaultLaneId(repo: string): string {
  const trimmed = repo.replace(/\/+$/, '').replace(/\.git$/, '');
  const last = trimmed.split(/[/:]/).pop() ?? trimmed;
  const slug = last
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 100);
  return slug || 'repo';
}

function fullSlug(repo: string): string {
  return (
    repo
      .replace(/\.git$/, '')
      .toLowerCase()
      .replace(/^[a-z]+:\/\//, '')
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[^a-z0-9]+/, '')
      .replace(/-+$/, '')
      .slice(-100)
      // Cutting to the last 100 characters can leave a leading "-" or ".".
      .replace(/^[^a-z0-9]+/, '') || 'repo'
  );
}

export function renderBranch(template: string, name: string, lane: string): string {
  return template.replaceAll('{name}', name).replaceAll('{lane}', lane);
}

/**
 * Why `branch` breaks a rule of `git check-ref-format --branch` (git-check-ref-format(1)),
 * or undefined. A branch starting with "-" would be read as an option by every git
 * command it is passed to; control characters would reach logs, PR pages and terminals.
 */
export function branchRuleBroken(branch: string): string | undefined {
  if (branch === '') return 'it is empty';
  if (branch.startsWith('-')) return 'it starts with "-", which git reads as an option';
  if (branch === 'HEAD') return '"HEAD" is reserved';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(branch)) return 'it contains a control character';
  if (branch.includes(' ')) return 'it contains a space';
  const bad = /[~^:?*[\\]/.exec(branch);
  if (bad) return `it contains "${bad[0]}"`;
  if (branch.includes('..')) return 'it contains ".."';
  if (branch.includes('@{')) return 'it contains "@{"';
  if (branch.startsWith('/') || branch.endsWith('/') || branch.includes('//')) return 'it has an empty part (a leading, trailing or doubled "/")';
  if (branch.endsWith('.')) return 'it ends with "."';
  for (const part of branch.split('/')) {
    if (part.startsWith('.')) return `its part "${part}" starts with "."`;
    if (part.endsWith('.lock')) return `its part "${part}" ends with ".lock"`;
  }
  return undefined;
}

function branchProblem(branch: string): string | undefined {
  const why = branchRuleBroken(branch);
  return why ? `${quoted(branch)} is not a valid git branch name: ${why}` : undefined;
}

function zodPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || '(top level)';
}

/**
 * The branch of a union to blame when none matched: the one that got furthest into the value (its issues' paths are
 * longest), else the first that did not fail on the value's type itself. Its issues say what to fix; the union's own
 * "Invalid input" does not.
 */
function likeliestBranch(branches: readonly (readonly z.core.$ZodIssue[])[]): readonly z.core.$ZodIssue[] {
  const depth = (b: readonly z.core.$ZodIssue[]) => Math.max(...b.map((i) => i.path.length + (i.code === 'invalid_type' ? 0 : 0.5)));
  return [...branches].sort((a, b) => depth(b) - depth(a))[0]!;
}

/** The value at `path` of the file as written, or undefined where there is none. */
function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let at = raw;
  for (const part of path) at = at !== null && typeof at === 'object' ? (at as Record<PropertyKey, unknown>)[part] : undefined;
  return at;
}

/** Zod's own wording, which says what failed but not what to write ("Invalid input: expected array, received string"). */
const ZOD_WORDING = /^(Invalid|Too small|Too big)\b/;

/**
 * One problem per schema issue, said with the user's value and the fix where one can be shown (suggest.ts). Messages the
 * schema sets itself ("a glob cannot be empty") are kept as they are.
 */
function zodProblems(file: string, issues: readonly z.core.$ZodIssue[], raw: unknown): Problem[] {
  const json = file.endsWith('.json');
  return issues.flatMap((issue): Problem[] => {
    if (issue.code === 'invalid_union' && issue.errors.length) {
      const branch = likeliestBranch(issue.errors);
      return zodProblems(
        file,
        branch.map((i) => ({ ...i, path: [...issue.path, ...i.path] })),
        raw,
      );
    }
    if (issue.code === 'unrecognized_keys') {
      // One problem per unknown field, named by its own path (`targets[0].ownz`).
      return issue.keys.map((key) => ({ file, field: zodPath([...issue.path, key]), message: unknownFieldMessage(issue.path, key) }));
    }
    const value = valueAt(raw, issue.path);
    let message = issue.message;
    if (ZOD_WORDING.test(message)) {
      if (issue.code === 'invalid_type') message = wrongTypeMessage(issue.expected, value, issue.path, json);
      else if (issue.code === 'invalid_value' && issue.values.length > 1) message = badOptionMessage(issue.values, value);
      else if (issue.code === 'too_small' || issue.code === 'too_big') message = sizeMessage(issue, value) ?? message;
    }
    return [{ file, field: zodPath(issue.path), message }];
  });
}

/** A copy of `raw` without the fields zod reported as unknown. */
function withoutUnknownKeys(raw: unknown, issues: readonly z.core.$ZodIssue[]): unknown {
  let copy: unknown;
  try {
    copy = structuredClone(raw);
  } catch {
    return undefined; // not plain data: skip the second pass
  }
  for (const issue of issues) {
    if (issue.code !== 'unrecognized_keys') continue;
    let at: unknown = copy;
    for (const part of issue.path) at = at !== null && typeof at === 'object' ? (at as Record<PropertyKey, unknown>)[part] : undefined;
    if (at === null || typeof at !== 'object') continue;
    for (const key of issue.keys) delete (at as Record<string, unknown>)[key];
  }
  return copy;
}

/** Canonical JSON (sorted keys), to tell a repeated target from a different one. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/**
 * Checks a parsed fleet file and resolves its lanes, reporting every problem at once. A file that does not fit the
 * schema (a missing `repo:`, a list written as text) is still checked: the schema's problems come first, then the
 * problems the checks find in the parts that did fit (see salvage), so fixing one does not uncover the next.
 */
export function validateFleetFile(raw: unknown, file: string): ValidationResult {
  const parsed = FleetFileSchema.safeParse(raw);
  if (parsed.success) return resolveFleet(parsed.data, file);
  const problems = zodProblems(file, parsed.error.issues, raw);
  const salvaged = salvage(raw, parsed.error.issues);
  if (!salvaged) return { ok: false, problems };
  const rest = resolveFleet(salvaged.ff, file, salvaged.unread);
  // One problem per field: where the schema already named a field, its problem is the one to fix first.
  const named = new Set(problems.map((p) => p.field));
  if (!rest.ok) problems.push(...rest.problems.filter((p) => !named.has(p.field)));
  return { ok: false, problems };
}

/**
 * A stand-in for a required field that did not parse (`name`, `directive`, a target's `repo`: all text). It is never
 * reported or run: the checks that would read such a field skip it, as they are told by `unread`.
 */
const UNREAD = 'unread';

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Each field of `value` parsed on its own by its schema in `shape`. A field that does not parse takes its default
 * (UNREAD when it has none) and its name (`at` + key) goes into `unread`.
 */
function fieldByField(shape: Record<string, z.ZodType>, value: Record<string, unknown>, at: string, unread: Set<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(shape)) {
    const parsed = schema.safeParse(value[key]);
    if (parsed.success) {
      out[key] = parsed.data;
      continue;
    }
    unread.add(at ? `${at}.${key}` : key);
    const fallback = schema.safeParse(undefined);
    out[key] = fallback.success ? fallback.data : UNREAD;
  }
  return out;
}

/**
 * What a file that does not fit the schema still says, for the checks of resolveFleet: the top-level fields and each
 * target's fields parsed one by one, so one bad value does not hide the rest of the file. A field that did not parse
 * falls back to its default and is named in `unread` (`agent`, `targets[0].repo`, or `targets[1]` for a target that is
 * not a mapping), so the checks that would read it are skipped rather than report a consequence of the fallback.
 * Undefined when the file is not a mapping at all.
 */
function salvage(raw: unknown, issues: readonly z.core.$ZodIssue[]): { ff: FleetFile; unread: ReadonlySet<string> } | undefined {
  // Unknown fields are reported already; the fields beside them are checked as if they were not there.
  const clean = withoutUnknownKeys(raw, issues);
  if (!isMapping(clean)) return undefined;
  const unread = new Set<string>();
  const { targets, ...top } = clean;
  const fleet = fieldByField(FleetFileSchema.shape, top, '', unread);
  const listed = Array.isArray(targets) ? targets : [];
  if (targets !== undefined && !Array.isArray(targets)) unread.add('targets');
  const specs = listed.map((t, i) => {
    if (isMapping(t)) return fieldByField(TargetSchema.shape, t, `targets[${i}]`, unread);
    unread.add(`targets[${i}]`);
    return TargetSchema.parse({ repo: UNREAD });
  });
  return { ff: { ...fleet, targets: specs } as FleetFile, unread };
}

/** An issue queue reads GitHub, and its lanes' branches and labels are Fleet's: what would make them clash is refused. */
function issueSourceProblems(ff: FleetFile, p: (field: string, message: string) => void, forgeRead: boolean): void {
  const q = ff.source!.issues!;
  if (forgeRead && ff.forge !== 'github') p('source.issues', 'an issue queue needs GitHub: set forge: github');
  if (!GITHUB_NAME.test(q.repo)) p('source.issues.repo', `"${q.repo}" is not owner/name of a GitHub repository`);
  q.spec.patterns.forEach((pattern, i) => {
    try {
      new RegExp(pattern, 'im');
    } catch (err) {
      p(`source.issues.spec.patterns[${i}]`, `not a regular expression: ${(err as Error).message}`);
    }
  });
  const labels = [q.label, q.labels.in_flight, q.labels.blocked, q.labels.needs_person].map((l) => l.toLowerCase());
  if (new Set(labels).size !== labels.length) p('source.issues.labels', 'the ready, in-flight, blocked and needs-person labels must be four different labels');
  // GitHub's issue listing reads labels=a,b as two labels.
  if (q.label.includes(',')) p('source.issues.label', `"${q.label}" has a comma: GitHub's issue filter would read it as two labels`);
  if (ff.integrate) p('integrate', 'an issue queue opens one PR per issue, and integration one PR per repository: use one or the other');
  if (ff.pr.draft && ff.merge.policy === 'when-green')
    p('pr.draft', 'the queue merges green PRs, and a draft never merges: set pr.draft: false, or merge.policy: never');
  if (ff.targets.some((t) => /^issue-\d+/.test(t.lane ?? ''))) p('targets', 'lane ids "issue-<n>…" belong to the issue queue: rename the target\'s lane');
}

/** Push-only mode (pr.open: false) with what needs a PR: merging, an integration PR, the issue queue. */
function pushOnlyProblems(ff: FleetFile, p: (field: string, message: string) => void, read: (field: string) => boolean): void {
  const why = 'pr.open is false (push-only: no PR is opened)';
  if (read('merge') && ff.merge.policy === 'when-green') p('merge.policy', `${why}, and when-green merges PRs: set merge.policy: never, or let PRs open`);
  if (read('integrate') && ff.integrate) p('integrate', `${why}, and integration opens one PR per repository: drop one of the two`);
  if (read('source') && ff.source?.issues) p('source.issues', `${why}, and the issue queue follows each issue through its PR: drop one of the two`);
}

/** Fork mode (pr.fork) with what it cannot do: a local forge, an integration branch, the issue queue. */
function forkProblems(ff: FleetFile, p: (field: string, message: string) => void, read: (field: string) => boolean): void {
  if (!ff.pr.fork) p('pr.fork_owner', 'names where forks go, but pr.fork is false: set pr.fork: true, or drop pr.fork_owner');
  else if (ff.forge !== 'github') p('pr.fork', 'forks are made on GitHub: set forge: github, or drop pr.fork');
  if (!ff.pr.fork) return;
  if (read('integrate') && ff.integrate)
    p('integrate', 'fork mode pushes lane branches to forks, and integration builds a branch in each target: drop one of the two');
  if (read('source') && ff.source?.issues)
    p('source.issues', "fork mode pushes to forks, and the issue queue keeps the target's own branches and labels: drop one of the two");
}

/** The lists of globs in a fleet file, as a negation message names them. */
type GlobList = 'owns' | 'never' | 'github.include' | 'github.exclude' | 'applies_to';

/** What a list of globs holds, and what to write instead of a negated glob (`rest`: the glob without its "!"). */
const NEGATION: Record<GlobList, { holds: string; fix: (rest: string) => string }> = {
  owns: { holds: 'files the lane may change', fix: (rest) => `to keep the lane out of ${rest}, put ${quoted(rest)} in never: instead` },
  // "never: everything but docs" is owns: [docs/**]; an exception inside another never: glob is that glob, narrowed.
  never: {
    holds: 'files no lane may change (even inside owns)',
    fix: (rest) => `to keep lanes to ${rest}, write owns: [${quoted(rest)}]; to let them change ${rest} inside another never: glob, narrow that glob`,
  },
  'github.include': { holds: 'repositories to keep', fix: (rest) => `to leave out ${rest}, put ${quoted(rest)} in github.exclude instead` },
  'github.exclude': { holds: 'repositories to leave out', fix: (rest) => `to keep ${rest}, narrow the github.exclude glob that covers it` },
  applies_to: { holds: 'files that select the persona', fix: (rest) => `list those files only, leaving ${rest} out` },
};

/**
 * Why a glob of `list` is unusable. Fleet has no negated globs (glob.ts matches "!" as a plain character, and
 * validation refuses a leading one), so the fix for a "!" depends on the list: in owns: it means never:, but in
 * never: itself there is nowhere to move it.
 */
function listGlobProblem(list: GlobList, pattern: string): string | undefined {
  if (pattern.length > 1 && pattern.startsWith('!')) {
    const { holds, fix } = NEGATION[list];
    return `${quoted(pattern)} is a negation, and ${list}: has none: it only lists ${holds}; ${fix(pattern.slice(1))}`;
  }
  return globProblem(pattern);
}

/**
 * The checks beyond the schema, and the lanes. `unread` names the fields that did not fit the schema (see salvage):
 * they hold a stand-in, so every check that would read one is skipped, and only true problems are reported.
 */
function resolveFleet(ff: FleetFile, file: string, unread: ReadonlySet<string> = new Set()): ValidationResult {
  const problems: Problem[] = [];
  const notes: string[] = [];
  const p = (field: string, message: string) => problems.push({ file, field, message });
  const read = (field: string) => !unread.has(field);
  const targetRead = (index: number, key: string) => read(`targets[${index}]`) && read(`targets[${index}].${key}`);

  if (!ff.directive.trim()) p('directive', 'the directive is empty: say what every lane should do');
  if (ff.targets.length === 0 && ff.github.discover.length === 0 && !ff.source?.issues && read('targets') && read('github') && read('source')) {
    p(
      'targets',
      'a fleet needs at least one target: list them under targets:, let github.discover find them, or take them from an issue queue (source.issues)',
    );
  }
  if (ff.source?.issues) issueSourceProblems(ff, p, read('forge'));
  if (read('forge') && ff.forge === 'local' && ff.github.discover.length) {
    p('github.discover', 'discovery needs GitHub: set forge: github (the local forge only runs the targets listed)');
  }
  (['include', 'exclude'] as const).forEach((key) =>
    ff.github[key].forEach((g, i) => {
      const why = listGlobProblem(`github.${key}`, g);
      if (why) p(`github.${key}[${i}]`, why);
    }),
  );
  // Whether a lane has a way to run is only known when every run: and agent: was read.
  const runsRead = read('run') && read('agent') && ff.targets.every((_, i) => targetRead(i, 'run'));
  const noRunAnywhere = runsRead && ff.run === undefined && ff.agent === undefined && ff.targets.every((t) => t.run === undefined);
  if (noRunAnywhere) {
    p('run', 'say how the directive runs: set `run:` (a shell command) or `agent:` (a coding agent)');
  }
  // Written both, even when one of them did not fit the schema.
  if ((ff.run !== undefined || !read('run')) && (ff.agent !== undefined || !read('agent'))) p('agent', 'set either `run:` or `agent:`, not both');
  const fleetLenses = ff.review?.lenses.length ?? REVIEW_DEFAULTS.lenses.length;
  reviewProblems('review', ff.review, fleetLenses, p);
  if (ff.review && !ff.agent && read('agent'))
    p('review', 'review needs agent: the lenses, the dispositions and the fix rounds are agent runs (a `run:` command cannot answer findings)');
  if (ff.agent?.preset === 'command' && !ff.agent.command) {
    p('agent.command', 'preset "command" needs a command template, e.g. "my-agent --prompt-file {prompt_file}"');
  }
  const templateWhy = ff.agent?.preset === 'command' && ff.agent.command ? templateProblem(ff.agent.command) : undefined;
  if (templateWhy) p('agent.command', templateWhy);
  if (ff.agent?.fallback && !ff.agent.personas.some((x) => x.name === ff.agent?.fallback)) {
    p('agent.fallback', `fallback "${ff.agent.fallback}" is not one of agent.personas`);
  }
  const personaAt = new Map<string, number>();
  ff.agent?.personas.forEach((persona, i) => {
    const first = personaAt.get(persona.name);
    if (first !== undefined) p(`agent.personas[${i}].name`, `persona "${persona.name}" is already defined by agent.personas[${first}]`);
    else personaAt.set(persona.name, i);
    persona.applies_to.forEach((g, j) => {
      const why = listGlobProblem('applies_to', g);
      if (why) p(`agent.personas[${i}].applies_to[${j}]`, why);
    });
  });
  ff.owns.forEach((g, i) => {
    const why = listGlobProblem('owns', g);
    if (why) p(`owns[${i}]`, why);
  });
  ff.never.forEach((g, i) => {
    const why = listGlobProblem('never', g);
    if (why) p(`never[${i}]`, why);
  });
  if (!ff.branch.includes('{lane}')) p('branch', 'the branch template must contain {lane} so every lane gets its own branch');
  if (!ff.pr.open && read('pr')) pushOnlyProblems(ff, p, read);
  if ((ff.pr.fork || ff.pr.fork_owner) && read('pr')) forkProblems(ff, p, read);

  // Lane ids: explicit ids first; default ids fall back to a fuller slug when two repositories share a name.
  const basenameCount = new Map<string, number>();
  for (const [i, t] of ff.targets.entries()) {
    if (t.lane || !targetRead(i, 'repo')) continue;
    const id = defaultLaneId(t.repo);
    basenameCount.set(`${id}\u0000${t.repo}`, 1);
  }
  const repoForBase = new Map<string, Set<string>>();
  for (const key of basenameCount.keys()) {
    const [id, repo] = key.split('\u0000') as [string, string];
    if (!repoForBase.has(id)) repoForBase.set(id, new Set());
    repoForBase.get(id)!.add(repo);
  }

  const lanes: LaneSpec[] = [];
  const byId = new Map<string, LaneSpec>();
  const seenRepoLane = new Map<string, number>();
  const branchProblems = new Set<string>();
  // Lanes of targets whose repo: or lane: did not fit the schema: their ids where written, else only that there are some.
  const unreadLaneIds = new Set<string>();
  const unknownLaneIds: number[] = [];
  ff.targets.forEach((t: TargetSpec, index) => {
    const at = `targets[${index}]`;
    if (!read(at)) {
      // Not a mapping at all: nothing of it to check, and its lane id cannot be known.
      unknownLaneIds.push(index);
      return;
    }
    // Checks that do not depend on the lane id come first, so a bad repository does not hide them.
    if (t.directive !== undefined && !t.directive.trim()) p(`${at}.directive`, 'the lane directive is empty');
    t.owns.forEach((g, j) => {
      const why = listGlobProblem('owns', g);
      if (why) p(`${at}.owns[${j}]`, why);
    });
    t.never.forEach((g, j) => {
      const why = listGlobProblem('never', g);
      if (why) p(`${at}.never[${j}]`, why);
    });
    reviewProblems(`${at}.review`, t.review === false ? undefined : t.review, fleetLenses, p);
    if (t.review && ((!ff.agent && read('agent')) || t.run !== undefined)) {
      p(
        `${at}.review`,
        `review needs the lane to be run by agent: (${t.run !== undefined ? 'this target has its own run:' : 'the fleet has no agent:'}); remove review: here or the run:`,
      );
    }
    if (runsRead && !noRunAnywhere && ff.run === undefined && ff.agent === undefined && t.run === undefined) {
      p(`${at}.run`, 'this lane has no way to run: set run: here or at the top level, or agent:');
    }
    if (!targetRead(index, 'repo') || !targetRead(index, 'lane')) {
      // The lane id comes from lane: or repo:; without them the lane, its branch and its clashes cannot be checked.
      if (targetRead(index, 'lane') && t.lane) unreadLaneIds.add(t.lane);
      else unknownLaneIds.push(index);
      return;
    }
    const kind = classifyRepo(t.repo);
    if (read('forge') && ff.forge === 'github' && kind !== 'github' && typeof kind === 'string') {
      p(`${at}.repo`, `"${t.repo}" is not an owner/repo name; with forge: github every target is a GitHub repository`);
    }
    if (typeof kind !== 'string') {
      p(`${at}.repo`, kind.problem);
      return;
    }
    let id = t.lane;
    if (!id) {
      const base = defaultLaneId(t.repo);
      id = (repoForBase.get(base)?.size ?? 1) > 1 ? fullSlug(t.repo) : base;
    }
    if (!LANE_ID_PATTERN.test(id)) {
      p(`${at}.lane`, `derived lane id "${id}" is not usable: set lane: explicitly`);
      return;
    }
    const repoLane = `${t.repo}\u0000${id}`;
    const sameLane = seenRepoLane.get(repoLane);
    if (sameLane !== undefined) {
      if (canonical({ ...ff.targets[sameLane], lane: id }) === canonical({ ...t, lane: id })) {
        notes.push(`${file}: ${at} repeats ${t.repo} (lane ${id}); the duplicate was removed`);
      } else {
        // Two different specs for one lane: dropping either would silently lose work.
        p(`${at}.lane`, `targets[${sameLane}] already runs lane "${id}" in ${t.repo} with different settings: give one of them a distinct lane:`);
      }
      return;
    }
    seenRepoLane.set(repoLane, index);
    const clash = byId.get(id);
    if (clash) {
      p(`${at}.lane`, `lane id "${id}" is already used by targets[${clash.index}] (${clash.repo}): give one of them a distinct lane:`);
      return;
    }
    const directive = t.directive ?? ff.directive;
    const branch = renderBranch(ff.branch, ff.name, id);
    const bp = branchProblem(branch);
    if (bp) branchProblems.add(bp);
    const lane: LaneSpec = {
      id,
      repo: t.repo,
      repo_kind: kind,
      title: t.title ?? `${ff.name}: ${id}`,
      directive,
      run: t.run ?? ff.run,
      checks: t.checks ?? ff.checks,
      depends_on: [...new Set(t.depends_on)],
      owns: t.owns.length ? t.owns : ff.owns,
      never: [...new Set([...ff.never, ...t.never])],
      exclusive: t.exclusive,
      branch,
      base: t.base,
      index,
      review: resolveReview(ff.review, t.review, ff.agent !== undefined && t.run === undefined),
      ...(t.soft_depends_on.length ? { soft_depends_on: [...new Set(t.soft_depends_on)] } : {}),
    };
    lanes.push(lane);
    byId.set(id, lane);
  });

  // A bad template usually breaks every lane's branch the same way: report the first only.
  const [firstBranchProblem] = branchProblems;
  if (firstBranchProblem) {
    p(
      'branch',
      firstBranchProblem + (branchProblems.size > 1 ? ` (and ${branchProblems.size - 1} more lane branch${branchProblems.size > 2 ? 'es' : ''})` : ''),
    );
  }

  // A dependency on a lane this file does not name is reported even while some target's lane id cannot be read (its
  // repo: or lane: is broken): it is said then that it may be that target's lane, so no problem waits for another.
  const mayBeALane = (dep: string) => unreadLaneIds.has(dep);
  const unless = unknownLaneIds.length
    ? `; unless it is the lane of ${unknownLaneIds
        .slice(0, 3)
        .map((i) => `targets[${i}]`)
        .join(', ')}${unknownLaneIds.length > 3 ? ', …' : ''}, whose lane id cannot be read until its repo: is fixed`
    : '';
  for (const lane of lanes) {
    // Index the file's own list, not the de-duplicated one, so the field points at the right entry.
    const written = ff.targets[lane.index]?.depends_on ?? lane.depends_on;
    written.forEach((dep, j) => {
      if (written.indexOf(dep) !== j) return;
      if (dep === lane.id) p(`targets[${lane.index}].depends_on[${j}]`, `lane "${lane.id}" cannot depend on itself`);
      else if (!byId.has(dep) && !mayBeALane(dep)) {
        const known = [...byId.keys()].slice(0, 10).join(', ');
        // Discovered lanes are found when the plan runs, after this file is read: a dependency can name listed targets only.
        const found = ff.github.discover.length
          ? ': depends_on names listed targets only, since github.discover finds its lanes when the plan runs; to depend on a repository it finds, list it under targets: too'
          : '';
        p(`targets[${lane.index}].depends_on[${j}]`, `"${dep}" is not a lane of this fleet (lanes: ${known}${byId.size > 10 ? ', …' : ''})${found}${unless}`);
      }
    });
  }

  for (const lane of lanes) {
    (lane.soft_depends_on ?? []).forEach((dep, j) => {
      const at = `targets[${lane.index}].soft_depends_on[${j}]`;
      const other = byId.get(dep);
      if (!ff.integrate) {
        if (read('integrate')) p(at, 'a soft edge is a seam checked on the integrated tree: it needs integrate: (or use depends_on:)');
      } else if (dep === lane.id) p(at, `lane "${lane.id}" cannot have a soft edge to itself`);
      else if (!other) {
        if (!mayBeALane(dep)) p(at, `"${dep}" is not a lane of this fleet${unless}`);
      } else if (other.repo !== lane.repo)
        p(at, `"${dep}" is a lane of ${other.repo}, not of ${lane.repo}: seams are checked on one repository's integrated tree`);
    });
  }
  if (ff.integrate) {
    const names = { branch: ff.integrate.branch.replaceAll('{name}', ff.name), release: ff.integrate.release.replaceAll('{name}', ff.name) };
    const laneBranches = lanes.map((l) => l.branch);
    for (const key of ['branch', 'release'] as const) {
      const why = branchProblem(names[key]);
      if (why) p(`integrate.${key}`, why);
      // Fleet pushes these: they must be its own, never a base branch (main) nor a lane's.
      else if (!ff.integrate[key].includes('{name}'))
        p(
          `integrate.${key}`,
          `"${ff.integrate[key]}" must contain {name}: Fleet force-moves this branch, so it must be the fleet's own (never a base branch such as main)`,
        );
      else if (laneBranches.some((b) => b === names[key] || b.startsWith(`${names[key]}/`) || names[key].startsWith(`${b}/`)))
        p(`integrate.${key}`, `"${names[key]}" is, or holds, a lane's branch: give it a name of its own`);
    }
    if (names.branch === names.release) p('integrate.release', 'the release branch must differ from the integration branch');
    // One integration branch per repository, so one base: lanes that name different bases cannot be merged into it.
    // (A lane without base: starts from the default branch, which only the forge knows: the integration holds such a
    // lane if that is not the others' base.)
    const bases = new Map<string, Map<string, string[]>>();
    for (const l of lanes) {
      if (l.base === undefined) continue;
      const byBase = bases.get(l.repo) ?? new Map<string, string[]>();
      bases.set(l.repo, byBase.set(l.base, [...(byBase.get(l.base) ?? []), l.id]));
    }
    for (const [repo, byBase] of bases) {
      if (byBase.size < 2) continue;
      const first = lanes.find((l) => l.repo === repo && l.base !== undefined)!;
      p(
        `targets[${first.index}].base`,
        `the lanes of ${repo} name different bases (${[...byBase].map(([b, ids]) => `${b}: ${ids.join(', ')}`).join('; ')}): its integration branch has one base, so give every lane of ${repo} the same base:`,
      );
    }
    if (ff.checkpoint === 'merged')
      p(
        'checkpoint',
        'checkpoint: merged waits for a lane to reach its base branch, which integrated lanes reach only through the one PR at the end: use pushed or green with integrate:',
      );
    if (ff.speculative?.pick === 'person')
      p('speculative.pick', 'with integrate:, a person cannot pick between strategies before the next wave builds on one: choose a rule');
  }

  const expanded = expandStrategies(lanes, ff, p);

  const excluded: ResolvedFleet['excluded'] = [];
  ff.exclude.forEach((e, i) => {
    const kind = classifyRepo(e.repo);
    if (typeof kind !== 'string') p(`exclude[${i}].repo`, kind.problem);
    const lane = defaultLaneId(e.repo);
    if (expanded.some((l) => l.repo === e.repo)) {
      // Excluding a target that is also listed: the exclusion wins, and the lane is accounted for as excluded.
      for (const l of expanded.filter((x) => x.repo === e.repo)) excluded.push({ repo: l.repo, lane: l.id, reason: e.reason });
    } else {
      excluded.push({ repo: e.repo, lane: byId.has(lane) ? fullSlug(e.repo) : lane, reason: e.reason });
    }
  });
  if (problems.length) return { ok: false, problems };
  // Excluded lanes stay in the lane list so the planner can skip their dependents with a reason.
  return { ok: true, fleet: { file: ff, lanes: expanded, excluded, notes } };
}

/**
 * The strategies a lane is tried with: its target's, else the fleet's (`speculative.strategies`), else `count` copies
 * of its own directive (`s1`, `s2`, …), else none.
 */
function strategiesOf(ff: FleetFile, target: TargetSpec | undefined): StrategySpec[] {
  if (target?.strategies) return target.strategies;
  if (ff.speculative?.strategies) return ff.speculative.strategies;
  const count = ff.speculative?.count ?? 0;
  return Array.from({ length: count }, (_, i) => ({ label: `s${i + 1}` }));
}

/**
 * Each lane tried several ways becomes one lane per strategy (`<lane>.<label>` on `fleet/<name>/<lane>/<label>`), and
 * a dependency on it becomes a dependency on all of them (the runner then waits for the group's pick).
 */
function expandStrategies(lanes: readonly LaneSpec[], ff: FleetFile, p: (field: string, message: string) => void): LaneSpec[] {
  const out: LaneSpec[] = [];
  const groups = new Map<string, string[]>();
  const taken = new Set(lanes.map((l) => l.id));
  for (const lane of lanes) {
    const target = lane.index >= 0 ? ff.targets[lane.index] : undefined;
    const strategies = strategiesOf(ff, target);
    if (!strategies.length) {
      out.push(lane);
      continue;
    }
    const at = target?.strategies ? `targets[${lane.index}].strategies` : 'speculative';
    const members: string[] = [];
    strategies.forEach((st, j) => {
      const id = `${lane.id}.${st.label}`;
      if (strategies.findIndex((x) => x.label === st.label) !== j) {
        p(`${at}[${j}].label`, `strategy "${st.label}" is listed twice for lane "${lane.id}": give each strategy a label of its own`);
        return;
      }
      if (!LANE_ID_PATTERN.test(id) || taken.has(id)) {
        p(
          `${at}[${j}].label`,
          taken.has(id)
            ? `strategy lane "${id}" is already a lane of this fleet: choose another label`
            : `strategy lane id "${id}" is longer than 100 characters: shorten the lane or the label`,
        );
        return;
      }
      taken.add(id);
      members.push(id);
      out.push({
        ...lane,
        id,
        title: `${lane.title} (${st.label})`,
        directive: st.directive ?? lane.directive,
        run: st.run ?? lane.run,
        branch: renderBranch(ff.branch, ff.name, `${lane.id}/${st.label}`),
        strategy: { group: lane.id, label: st.label },
      });
    });
    groups.set(lane.id, members);
  }
  if (!groups.size) return out;
  return out.map((l) => ({ ...l, depends_on: [...new Set(l.depends_on.flatMap((d) => groups.get(d) ?? [d]))] }));
}

/**
 * Adds the repositories discovery found (owner/repo names) as lanes with the
 * fleet's defaults, after the explicit targets. A repository already listed
 * keeps its explicit lane; one matching github.exclude (or missing
 * github.include) is accounted for as excluded, never silently dropped.
 */
export function addDiscoveredLanes(fleet: ResolvedFleet, repos: readonly string[]): ResolvedFleet {
  const ff = fleet.file;
  const explicit = new Set(fleet.lanes.map((l) => l.repo.toLowerCase()));
  // A target tried several ways keeps its own id too (its strategies are <id>.<label>): no discovered lane takes it.
  const ids = new Set([
    ...fleet.lanes.map((l) => l.id),
    ...fleet.lanes.flatMap((l) => (l.strategy ? [l.strategy.group] : [])),
    ...fleet.excluded.map((e) => e.lane),
  ]);
  const lanes = [...fleet.lanes];
  const excluded = [...fleet.excluded];
  const notes = [...fleet.notes];
  const seen = new Set<string>();
  const baseCount = new Map<string, number>();
  // Each repository counts once, however many discovery sources found it: its lane id (and so its branch) must not
  // depend on how the sources overlap this time.
  const distinct = new Map(repos.map((r) => [r.toLowerCase(), r]));
  for (const r of distinct.values()) baseCount.set(defaultLaneId(r), (baseCount.get(defaultLaneId(r)) ?? 0) + 1);
  for (const repo of repos) {
    const key = repo.toLowerCase();
    if (explicit.has(key) || seen.has(key)) continue;
    seen.add(key);
    let id = (baseCount.get(defaultLaneId(repo)) ?? 0) > 1 || ids.has(defaultLaneId(repo)) ? fullSlug(repo) : defaultLaneId(repo);
    for (let n = 2; ids.has(id); n++) id = `${fullSlug(repo).slice(0, 95)}-${n}`;
    ids.add(id);
    const included = ff.github.include.length === 0 || matchesAny(repo, ff.github.include);
    if (!included || matchesAny(repo, ff.github.exclude)) {
      excluded.push({ repo, lane: id, reason: 'excluded-by-pattern' });
      continue;
    }
    lanes.push({
      id,
      repo,
      repo_kind: 'github',
      title: `${ff.name}: ${id}`,
      directive: ff.directive,
      run: ff.run,
      checks: ff.checks,
      depends_on: [],
      owns: ff.owns,
      never: [...new Set(ff.never)],
      exclusive: false,
      branch: renderBranch(ff.branch, ff.name, id),
      base: undefined,
      index: -1,
      review: resolveReview(ff.review, undefined, ff.agent !== undefined && ff.run === undefined),
    });
  }
  if (repos.length) notes.push(`discovery found ${seen.size} repositor${seen.size === 1 ? 'y' : 'ies'} beyond the listed targets`);
  // Discovered lanes are tried the fleet's way too (speculative:); the listed ones were expanded when validated.
  const found = lanes.slice(fleet.lanes.length);
  const expanded = expandStrategies(found, ff, (field, message) => notes.push(`${field}: ${message}`));
  return { file: ff, lanes: [...fleet.lanes, ...expanded], excluded, notes };
}

/** The name an ad-hoc fleet's in-memory file has: it sits in the current folder (its paths resolve there), but is no file. */
export const COMMAND_LINE = '(command line)';

/** A fleet file's path as messages show it: an ad-hoc fleet's is `(command line)`, never a path that does not exist. */
export function shownFile(file: string): string {
  return file === COMMAND_LINE || file.endsWith(`/${COMMAND_LINE}`) ? COMMAND_LINE : file;
}

export function formatProblems(problems: Problem[]): string {
  // Each problem on its own line, whatever a path or a value quoted in it holds.
  const lines = problems.map((x) => `  ${showInvisibles(`${shownFile(x.file)}: ${x.field}: ${x.message}`)}`);
  return `${problems.length} problem${problems.length === 1 ? '' : 's'} found:\n${lines.join('\n')}`;
}
