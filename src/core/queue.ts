/**
 * The issue queue: which ready-labelled issues of a repository a scheduled run starts, and why each of the others
 * waits. Pure: the GitHub adapter (src/github/queue.ts) reads the facts and carries out the decision.
 *
 * Each issue gets exactly one state, with the reason quoted from the issue:
 * - NO_SPEC: the body says nothing about what done looks like (the fleet file's `spec.patterns`), a `Spec:` file
 *   that is not on the base branch, or a `## Parallel plan` that cannot be read;
 * - BLOCKED_PERSON: a `Gate:` line not ticked, the needs-person label, or a PR of it closed without merging;
 * - BLOCKED_WORK: a `Depends on #N` whose issue was not closed by a merged PR;
 * - IN_FLIGHT: a PR of it is open, or its branch is being resumed;
 * - READY: nothing stands in its way (started now when a slot of the budget is free).
 */
import { matchesAny } from './glob.js';

export const ISSUE_STATES = ['READY', 'IN_FLIGHT', 'BLOCKED_WORK', 'BLOCKED_PERSON', 'NO_SPEC'] as const;
export type IssueState = (typeof ISSUE_STATES)[number];

/** Lines a body says done with unless the fleet file sets its own (`source.issues.spec.patterns`). */
export const DEFAULT_SPEC_PATTERNS = [
  '^#{1,6}[ \\t]*(acceptance criteria|definition of done|done when|expected behaviou?r|steps to reproduce)\\b',
  '^[ \\t]*(acceptance criteria|done when|definition of done)[ \\t]*:',
  '^[ \\t]*[-*][ \\t]+\\[[ xX]\\][ \\t]+\\S',
];

/** An issue body is read up to this many characters (GitHub allows 65,536). */
export const BODY_MAX_CHARS = 65_536;
/** A plan table's problems named in a reason, at most. */
const PLAN_PROBLEMS_SHOWN = 5;

export const DEFAULT_PRIORITY_LABELS = ['priority: critical', 'priority: high', 'priority: medium'];

export interface QueueIssue {
  number: number;
  title: string;
  body: string;
  labels: string[];
  created_at: string;
  html_url: string;
}

export interface PlanSlot {
  slot: string;
  touches: string[];
  depends_on: string[];
}

export interface ParsedIssue {
  /** `Depends on #N` numbers, in order of appearance. */
  depends: number[];
  /** `Depends on` references Fleet cannot follow (another repository's issue, a URL). */
  foreign_depends: string[];
  /** Gate lines not ticked, quoted. */
  gates: string[];
  /** The file a `Spec:` line points to, or null. */
  spec_file: string | null;
  /** The `## Parallel plan` slots, null without one; a table that cannot be read is a problem. */
  plan: PlanSlot[] | null;
  plan_problem: string | null;
}

// Per line, and [ \t] rather than \s: a \s* at a line start would run on over blank lines, quadratic in the body.
const DEPENDS = /^[ \t]*(?:[-*][ \t]+)?depends[ \t]+on[ \t]*:?[ \t]*(.+)$/i;
const GATE = /^[ \t]*(?:[-*][ \t]+(?:\[( |x|X)\][ \t]+)?)?gate[ \t]*:[ \t]*(.+)$/i;
const SPEC_LINE = /^[ \t]*spec[ \t]*:[ \t]*`?([^\s`]+)`?[ \t]*$/i;

function lines(body: string): string[] {
  return body.slice(0, BODY_MAX_CHARS).split(/\r?\n/);
}

/** The body of an issue, read for the lines the queue acts on. */
export function parseIssue(body: string): ParsedIssue {
  const depends: number[] = [];
  const foreign: string[] = [];
  const gates: string[] = [];
  let spec: RegExpExecArray | null = null;
  for (const line of lines(body)) {
    const d = DEPENDS.exec(line);
    if (d) {
      for (const ref of d[1]!.matchAll(/(?:^|[^\w/])#(\d+)\b/g)) {
        const n = Number(ref[1]);
        if (!depends.includes(n)) depends.push(n);
      }
      // A dependency Fleet cannot read (another repository's issue, a URL) must not be ignored silently.
      for (const ref of d[1]!.matchAll(/[\w.-]+\/[\w.-]+#\d+|https?:\/\/\S+/g)) foreign.push(ref[0]);
    }
    const g = GATE.exec(line);
    if (g && (!g[1] || g[1] === ' ')) gates.push(oneLine(g[2]!));
    spec ??= SPEC_LINE.exec(line);
  }
  const plan = parsePlan(body);
  return {
    depends,
    foreign_depends: foreign,
    gates,
    spec_file: spec ? spec[1]! : null,
    plan: 'slots' in plan ? plan.slots : null,
    plan_problem: 'problem' in plan ? plan.problem : null,
  };
}

function oneLine(s: string): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > 200 ? `${t.slice(0, 199)}…` : t;
}

/** A slot name becomes part of a lane id and a branch. */
export function slotId(name: string): string {
  return name
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 30);
}

/** `## Parallel plan` and the markdown table under it: columns slot, touches (or owns), depends on. */
export function parsePlan(body: string): { slots: PlanSlot[] } | { problem: string } | { none: true } {
  const all = lines(body);
  const start = all.findIndex((l) => /^#{2,3}\s*parallel plan\s*$/i.test(l.trim()));
  if (start < 0) return { none: true };
  const rows: string[][] = [];
  for (const line of all.slice(start + 1)) {
    const t = line.trim();
    if (/^#{1,6}\s/.test(t)) break;
    if (!t.startsWith('|')) {
      if (rows.length && t === '') break;
      continue;
    }
    rows.push(
      t
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((c) => c.trim()),
    );
  }
  if (rows.length < 3) return { problem: 'the "## Parallel plan" section has no table with a header and at least one slot' };
  const header = rows[0]!.map((h) => h.toLowerCase().replace(/[`*]/g, ''));
  const col = (...names: string[]) => header.findIndex((h) => names.some((n) => h === n || h.startsWith(n)));
  const slotCol = col('slot');
  const touchCol = col('touches', 'owns', 'what it touches');
  const depCol = col('depends on', 'depends');
  if (slotCol < 0 || touchCol < 0) return { problem: 'the "## Parallel plan" table needs the columns "slot" and "touches" (and optionally "depends on")' };
  const slots: PlanSlot[] = [];
  const problems: string[] = [];
  for (const row of rows.slice(1)) {
    if (row.every((c) => /^:?-+:?$/.test(c) || c === '')) continue;
    const slot = slotId(row[slotCol] ?? '');
    if (!slot) {
      problems.push(`a row has no slot name ("${oneLine(row.join(' | ')).slice(0, 80)}")`);
      continue;
    }
    if (slots.some((s) => s.slot === slot)) problems.push(`slot "${slot}" is listed twice`);
    const touches = cells(row[touchCol] ?? '');
    if (!touches.length) problems.push(`slot "${slot}" says nothing it touches`);
    for (const t of touches) {
      const why = touchProblem(t);
      if (why) problems.push(`slot "${slot}" touches "${t.slice(0, 80)}": ${why}`);
    }
    const deps =
      depCol < 0
        ? []
        : cells(row[depCol] ?? '')
            .filter((d) => !/^(—|–|-|none|n\/a)$/i.test(d))
            .map(slotId);
    slots.push({ slot, touches, depends_on: deps });
  }
  for (const s of slots)
    for (const d of s.depends_on) if (!slots.some((o) => o.slot === d)) problems.push(`slot "${s.slot}" depends on "${d}", which the table does not list`);
  const cycle = planCycle(slots);
  if (cycle) problems.push(`the slots depend on each other in a circle (${cycle.join(' → ')})`);
  if (problems.length) {
    const more = problems.length > PLAN_PROBLEMS_SHOWN ? `; and ${problems.length - PLAN_PROBLEMS_SHOWN} more` : '';
    return { problem: `the "## Parallel plan" table: ${problems.slice(0, PLAN_PROBLEMS_SHOWN).join('; ')}${more}` };
  }
  return { slots };
}

/** A circle of slot dependencies (its slots in order, the first repeated at the end), or null. */
function planCycle(slots: PlanSlot[]): string[] | null {
  const deps = new Map(slots.map((s) => [s.slot, s.depends_on]));
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (slot: string): string[] | null => {
    if (state.get(slot) === 'done') return null;
    if (state.get(slot) === 'open') return [...path.slice(path.indexOf(slot)), slot];
    state.set(slot, 'open');
    path.push(slot);
    for (const d of deps.get(slot) ?? []) {
      const found = visit(d);
      if (found) return found;
    }
    path.pop();
    state.set(slot, 'done');
    return null;
  };
  for (const s of slots) {
    const found = visit(s.slot);
    if (found) return found;
  }
  return null;
}

/**
 * Why a slot's "touches" cannot be its fence. The table is written in an issue, so it may narrow what a lane may
 * change, never widen it: a pattern must start with a folder or file name (not `**`), stay in the repository, and
 * have no braces (whose expansion is exponential).
 */
export function touchProblem(t: string): string | undefined {
  if (/^[*?[{!/]/.test(t)) return 'a fence from an issue must start with a folder or file name (e.g. src/api/**)';
  if (/(^|\/)\.\.(\/|$)/.test(t)) return 'a fence cannot leave the repository';
  if (/[{}]/.test(t)) return 'braces are not allowed in a fence from an issue';
  if (t.length > 200) return 'longer than 200 characters';
  return undefined;
}

/**
 * Whether a slot's touches lie inside the fleet's `owns` (everything, when it has none): a file name must match,
 * and a folder pattern must have a file directly in its folder match. Conservative: a pattern it cannot place is
 * outside, and the issue says so.
 */
export function insideOwns(touch: string, owns: readonly string[]): boolean {
  if (!owns.length) return true;
  const p = staticPrefix(touch);
  if (p === touch) return matchesAny(touch, owns);
  const folder = p.endsWith('/') ? p : p.slice(0, p.lastIndexOf('/') + 1);
  return matchesAny(`${folder}fleet-probe`, owns);
}

/** The part of a glob before its first wildcard: `src/api/**` → `src/api/`. */
export function staticPrefix(glob: string): string {
  const i = glob.search(/[*?[]/);
  return i < 0 ? glob : glob.slice(0, i);
}

function cells(text: string): string[] {
  return text
    .split(/[,\s]+/)
    .map((c) => c.replace(/^`|`$/g, '').trim())
    .filter((c) => c && !/^(—|–)$/.test(c));
}

/** Whether a body says what done looks like: some line matches one of `patterns` (case-insensitive, per line). */
export function hasSpec(body: string, patterns: readonly string[]): boolean {
  const res = patterns.map((p) => new RegExp(p, 'i'));
  return lines(body).some((line) => res.some((re) => re.test(line)));
}

/**
 * An issue title as a commit subject and PR title: a title such as "Fix #42" would close #42 when the squash
 * commit reaches the default branch, so issue references become plain words.
 */
export function neutralTitle(title: string): string {
  return oneLine(title)
    .replace(/https?:\/\/\S+?\/(?:issues|pull)\/(\d+)\S*/gi, 'issue $1')
    .replace(/#(\d+)/g, 'issue $1')
    .slice(0, 200);
}

/** What the forge says about a dependency: done only when closed by a merged PR. */
export interface DependencyFact {
  done: boolean;
  /** Why not, in a few words ("#3 is open", "#4 was closed without a merged PR"). */
  why: string;
}

/** A work item of an issue: the whole issue, or one slot of its parallel plan. */
export interface ItemFacts {
  /** Its branch on the forge, or null. */
  branch: string | null;
  pr: { number: number; state: 'open' | 'merged' | 'closed'; url: string; created_at: string } | null;
  /** A person removed the needs-person label after the PR was closed unmerged: the item may start again. */
  cleared?: boolean;
}

export interface IssueFacts {
  issue: QueueIssue;
  /** A person reopened the issue: Fleet never closes it again by itself. */
  reopened?: boolean;
  parsed: ParsedIssue;
  /** The spec file's text, `missing` when the `Spec:` file is not on the base branch, null without a `Spec:` line. */
  spec_text: string | 'missing' | null;
  deps: Map<number, DependencyFact>;
  /** Keyed by slot ('' for an issue without a plan). */
  items: Map<string, ItemFacts>;
}

export interface QueueSettings {
  name: string;
  /** The fleet's `owns`: a slot's touches must lie inside it (empty: the whole repository). */
  owns: readonly string[];
  label: string;
  priority: readonly string[];
  spec_patterns: readonly string[];
  needs_person: string;
  budget: number;
  base: string;
}

export type ItemState = 'merged' | 'open-pr' | 'closed-pr' | 'resume' | 'ready' | 'waiting';

export interface BoardItem {
  slot: string | null;
  state: ItemState;
  branch: string | null;
  pr: ItemFacts['pr'];
  owns: string[];
  depends_on: string[];
}

export interface BoardRow {
  issue: number;
  title: string;
  url: string;
  state: IssueState;
  reason: string;
  /** Work items: one for a plain issue, one per slot of a parallel plan. */
  items: BoardItem[];
  /** The lanes this run starts for it (resumed or new). */
  started: string[];
  priority: number;
  created_at: string;
}

export interface StartItem {
  issue: number;
  slot: string | null;
  lane: string;
  branch: string;
  resume: boolean;
  owns: string[];
}

export interface QueueDecision {
  board: BoardRow[];
  start: StartItem[];
  /** Issues whose every slot's PR merged: closed by this run. */
  close: number[];
}

/** Fleet's link from a PR to its issue: a closing keyword for a whole issue; a slot is `Part of` (Fleet closes the issue when every slot has merged). */
export function issueLink(issue: number, slot: string | null): string {
  return slot ? `Part of #${issue} (slot \`${slot}\` of its parallel plan).` : `Closes #${issue}`;
}

/** The issue as a lane reads it (FLEET_ISSUE_FILE, and the agent prompt): title, link, body and spec file. */
export function issueMarkdown(issue: {
  number: number;
  slot: string | null;
  url: string;
  title: string;
  body: string;
  spec: { path: string; text: string } | null;
}): string {
  return [
    `# #${issue.number}: ${issue.title}`,
    '',
    issue.url,
    ...(issue.slot ? ['', `This lane is slot \`${issue.slot}\` of the issue's parallel plan: do that slot's part only.`] : []),
    '',
    issue.body.trimEnd(),
    ...(issue.spec ? ['', `## Spec: ${issue.spec.path}`, '', issue.spec.text.trimEnd()] : []),
    '',
  ].join('\n');
}

/** The lane id of an issue's work item: `issue-<n>` or `issue-<n>.<slot>`. */
export function itemLane(issue: number, slot: string | null): string {
  return slot ? `issue-${issue}.${slot}` : `issue-${issue}`;
}

/** `fleet/<name>/issue-<n>-<slug>` (`issue-<n>.<slot>-<slug>` for a slot): the prefix finds it whatever the title becomes. */
export function itemBranchPrefix(name: string, issue: number, slot: string | null): string {
  return `fleet/${name}/${itemLane(issue, slot)}-`;
}

export function titleSlug(title: string): string {
  const s = title
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return s || 'work';
}

export function itemBranch(name: string, issue: QueueIssue, slot: string | null): string {
  return `${itemBranchPrefix(name, issue.number, slot)}${titleSlug(issue.title)}`;
}

/** 0 for the first priority label, …; the count of labels for none (sorts last). */
export function priorityOf(labels: readonly string[], priority: readonly string[]): number {
  const lower = labels.map((l) => l.toLowerCase());
  const i = priority.findIndex((p) => lower.includes(p.toLowerCase()));
  return i < 0 ? priority.length : i;
}

function quote(s: string): string {
  return `"${s}"`;
}

function itemState(f: ItemFacts | undefined, slot: PlanSlot | null, all: Map<string, ItemFacts>): ItemState {
  if (f?.pr?.state === 'merged') return 'merged';
  if (f?.pr?.state === 'open') return 'open-pr';
  if (f?.pr?.state === 'closed' && !f.cleared) return 'closed-pr';
  // A branch with no PR: the worker that pushed it died before publishing (or a dry run left it): resume it.
  if (f?.branch) return 'resume';
  if (slot?.depends_on.some((d) => all.get(d)?.pr?.state !== 'merged')) return 'waiting';
  return 'ready';
}

/** One issue's state and work items, before the budget decides what starts. */
export function classify(f: IssueFacts, s: QueueSettings): Omit<BoardRow, 'started'> {
  const { issue, parsed } = f;
  const slots: Array<PlanSlot | null> = parsed.plan ?? [null];
  const items: BoardItem[] = slots.map((slot) => {
    const facts = f.items.get(slot?.slot ?? '');
    return {
      slot: slot?.slot ?? null,
      state: itemState(facts, slot, f.items),
      branch: facts?.branch ?? null,
      pr: facts?.pr ?? null,
      owns: slot?.touches ?? [],
      depends_on: slot?.depends_on ?? [],
    };
  });
  const row = {
    issue: issue.number,
    title: issue.title,
    url: issue.html_url,
    items,
    priority: priorityOf(issue.labels, s.priority),
    created_at: issue.created_at,
  };
  const at = (state: IssueState, reason: string) => ({ ...row, state, reason });

  // Only a PR is work on the forge; a bare branch (a worker that died, or anyone's push) is resumed only once the
  // issue passes every check below.
  const underway = items.filter((i) => i.state === 'open-pr' || i.state === 'merged');
  // Work already on the forge is never dropped: an issue whose spec changed under an open PR is still in flight.
  if (!underway.length) {
    if (parsed.plan_problem) return at('NO_SPEC', parsed.plan_problem);
    const outside = (parsed.plan ?? []).flatMap((sl) => sl.touches.filter((t) => !insideOwns(t, s.owns)).map((t) => `slot ${sl.slot} touches ${t}`));
    if (outside.length) return at('NO_SPEC', `the parallel plan reaches outside the fleet's owns: ${outside.slice(0, PLAN_PROBLEMS_SHOWN).join('; ')}`);
    if (parsed.foreign_depends.length)
      return at('NO_SPEC', `"Depends on ${parsed.foreign_depends[0]!.slice(0, 80)}": Fleet follows only #N of this repository`);
    if (f.spec_text === 'missing')
      return at('NO_SPEC', `the issue points to ${quote(`Spec: ${parsed.spec_file}`)}, and ${parsed.spec_file} is not on ${s.base}`);
    if (f.spec_text === null && !hasSpec(issue.body, s.spec_patterns)) {
      return at('NO_SPEC', 'the body does not say what done looks like (no acceptance criteria, "Done when", checklist or steps to reproduce)');
    }
  }
  const closed = items.find((i) => i.state === 'closed-pr');
  if (closed) return at('BLOCKED_PERSON', `PR #${closed.pr!.number} was closed without merging: a person decides what happens next`);
  if (parsed.gates.length) return at('BLOCKED_PERSON', parsed.gates.map((g) => quote(`Gate: ${g}`)).join('; '));
  if (issue.labels.some((l) => l.toLowerCase() === s.needs_person.toLowerCase())) return at('BLOCKED_PERSON', `labelled ${quote(s.needs_person)}`);
  const blocking = parsed.depends.map((n) => ({ n, fact: f.deps.get(n) })).filter((d) => !d.fact?.done);
  if (blocking.length && !underway.length) {
    return at('BLOCKED_WORK', blocking.map((d) => `${quote(`Depends on #${d.n}`)}: ${d.fact?.why ?? `#${d.n} could not be read`}`).join('; '));
  }
  const open = items.filter((i) => i.state === 'open-pr');
  const resume = items.filter((i) => i.state === 'resume');
  const ready = items.filter((i) => i.state === 'ready');
  const waiting = items.filter((i) => i.state === 'waiting');
  const describe = (i: BoardItem) => (i.slot ? `slot ${i.slot}` : 'the issue');
  if (open.length || resume.length) {
    const parts = [
      ...open.map((i) => `${describe(i)}: PR #${i.pr!.number} open`),
      ...resume.map((i) => `${describe(i)}: branch ${i.branch} has no PR and no live run: resumed when a slot is free`),
      ...waiting.map((i) => `slot ${i.slot} waits for ${i.depends_on.join(', ')} to merge`),
    ];
    return at(ready.length ? 'READY' : 'IN_FLIGHT', parts.join('; '));
  }
  if (ready.length) return at('READY', items.length > 1 ? `${ready.map(describe).join(', ')} ready` : 'every dependency merged, no gate');
  if (waiting.length) return at('BLOCKED_WORK', waiting.map((i) => `slot ${i.slot} waits for ${i.depends_on.join(', ')} to merge`).join('; '));
  if (f.reopened) return at('BLOCKED_PERSON', 'a person reopened the issue after every PR of it merged: a person decides what is left');
  return at('IN_FLIGHT', 'every PR merged; the issue is closed by this run');
}

/**
 * The whole queue: each issue's state, then what starts. Resumed branches go first (work is never dropped), then
 * ready items by priority label, then lowest issue number, slots in table order; the budget is `budget` minus the
 * items with an open PR.
 */
export function decideQueue(facts: readonly IssueFacts[], s: QueueSettings): QueueDecision {
  const rows = facts.map((f) => classify(f, s));
  const order = [...rows].sort((a, b) => a.priority - b.priority || a.issue - b.issue);
  // Every open PR of the queue holds a slot, whatever its issue's state now (a gate added later does not free it).
  const occupied = rows.reduce((n, r) => n + r.items.filter((i) => i.state === 'open-pr').length, 0);
  let free = Math.max(0, s.budget - occupied);
  const start: StartItem[] = [];
  const byIssue = new Map(facts.map((f) => [f.issue.number, f]));
  const take = (row: (typeof rows)[number], item: BoardItem, resume: boolean) => {
    const issue = byIssue.get(row.issue)!.issue;
    start.push({
      issue: row.issue,
      slot: item.slot,
      lane: itemLane(row.issue, item.slot),
      branch: item.branch ?? itemBranch(s.name, issue, item.slot),
      resume,
      owns: item.owns,
    });
    free--;
  };
  const runnable = (r: (typeof rows)[number]) => r.state === 'READY' || r.state === 'IN_FLIGHT';
  for (const row of order) if (runnable(row)) for (const item of row.items) if (item.state === 'resume' && free > 0) take(row, item, true);
  for (const row of order) if (row.state === 'READY') for (const item of row.items) if (item.state === 'ready' && free > 0) take(row, item, false);
  const close = rows.filter((r) => r.items.every((i) => i.state === 'merged') && !byIssue.get(r.issue)!.reopened).map((r) => r.issue);
  const board: BoardRow[] = rows.map((r) => {
    const started = start.filter((x) => x.issue === r.issue).map((x) => x.lane);
    const unstarted = r.items.filter((i) => i.state === 'ready' && !started.includes(itemLane(r.issue, i.slot))).length;
    if (r.state !== 'READY') return { ...r, started };
    if (started.length)
      return {
        ...r,
        state: 'IN_FLIGHT' as const,
        reason: `started ${started.join(', ')}${unstarted ? `; ${unstarted} more wait for a free slot` : ''}${r.reason.includes('PR #') ? `; ${r.reason}` : ''}`,
        started,
      };
    return { ...r, reason: `${r.reason}; waits for a free slot (all ${s.budget} of max_parallel are in use)`, started };
  });
  return { board, start, close };
}
