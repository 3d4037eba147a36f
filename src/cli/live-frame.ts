/**
 * One frame of the live view on a terminal, as lines: pure (the lanes, the terminal's size and the time in, lines
 * out), so the rules below are tested without a terminal.
 *
 * - No line is wider than the terminal: a line that wrapped would make the next redraw move the cursor up too few
 *   lines and leave stacked copies. Widths are measured in terminal columns (a CJK character or an emoji takes two,
 *   a combining mark none), and every character that would act rather than print (escapes, line breaks, bidi
 *   overrides) is written as an escape first: lane ids, repos and messages come from user files and tools.
 * - The frame is at most `height - 1` lines (the cursor ends on the line below it, which must stay on screen too).
 *   When the lanes do not fit, the header, the counters and the progress line come first, then the rows that matter
 *   most (running, then failed, then waiting, then finished), then a line counting the rest.
 * - Rows are shown in the plan's order (wave, then lane): which rows are shown changes with the lanes' states, where
 *   a row sits does not.
 * - The counters say what the concurrency budget counts. `max_parallel` slots are held while a directive or its
 *   checks run (src/steps/lane/attempts.ts produceInBudget) and while a review agent runs (src/steps/lane/review.ts); cloning,
 *   committing, pushing, opening the PR and waiting for CI hold none. So only directives and checks are counted
 *   against the budget, and never more of them than it has slots.
 */
import type { LaneRecord, LaneStatus } from '../core/model.js';
import { showInvisibles } from '../core/text.js';

export interface FrameInput {
  fleetId: string;
  /** The concurrency budget: how many directives (and their checks) run at once. */
  maxParallel: number;
  /** Every lane, in the plan's order (wave, then lane). */
  lanes: readonly LaneRecord[];
  /** The terminal's size, in columns and rows. */
  width: number;
  height: number;
  /** Milliseconds since the epoch: now, and when the fleet started. */
  now: number;
  startedAt: number;
}

/** Below this many terminal rows the view is one progress line, redrawn in place. */
export const MIN_TABLE_ROWS = 5;

const ELLIPSIS = '…';
const SEP = ' · ';

// ---------------------------------------------------------------------------
// Terminal width of text

/**
 * Code points a terminal draws two columns wide: East Asian Wide and Fullwidth (the ranges Node's own readline
 * uses), plus emoji shown as pictures. East Asian Ambiguous characters count as one, as in every non-CJK locale.
 */
function isWide(cp: number): boolean {
  return (
    cp >= 0x1100 &&
    (cp <= 0x115f ||
      cp === 0x2329 ||
      cp === 0x232a ||
      (cp >= 0x2e80 && cp <= 0x3247 && cp !== 0x303f) ||
      (cp >= 0x3250 && cp <= 0x4dbf) ||
      (cp >= 0x4e00 && cp <= 0xa4c6) ||
      (cp >= 0xa960 && cp <= 0xa97c) ||
      (cp >= 0xac00 && cp <= 0xd7a3) ||
      (cp >= 0xf900 && cp <= 0xfaff) ||
      (cp >= 0xfe10 && cp <= 0xfe19) ||
      (cp >= 0xfe30 && cp <= 0xfe6b) ||
      (cp >= 0xff01 && cp <= 0xff60) ||
      (cp >= 0xffe0 && cp <= 0xffe6) ||
      (cp >= 0x1b000 && cp <= 0x1b001) ||
      (cp >= 0x1f200 && cp <= 0x1f251) ||
      (cp >= 0x1f300 && cp <= 0x1f64f) ||
      (cp >= 0x1f900 && cp <= 0x1f9ff) ||
      (cp >= 0x20000 && cp <= 0x3fffd))
  );
}

// Format characters (Cf) are not here: some terminals draw them a column wide, and counting a column too many only
// clips a line early, where one too few would wrap it. VS16 (U+FE0F) counts one for the same reason: it can turn a
// one-column symbol into a two-column emoji.
const ZERO_WIDTH = /^[\p{Mn}\p{Me}]$/u;
const EMOJI = /^\p{Emoji_Presentation}$/u;

function charWidth(ch: string): number {
  if (ch === '\ufe0f') return 1;
  if (ZERO_WIDTH.test(ch)) return 0;
  const cp = ch.codePointAt(0)!;
  return isWide(cp) || EMOJI.test(ch) ? 2 : 1;
}

/** The columns `s` takes on a terminal, for text without control characters (see `printable`). */
export function visibleWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += charWidth(ch);
  return w;
}

/** `s` with every character that would act on a terminal written as an escape (`\x1b`, `\n`, `\u202e`). */
export function printable(s: string): string {
  return showInvisibles(s);
}

/** At most `width` columns of `s`, an ellipsis marking a cut. `s` is made printable first. */
export function clip(s: string, width: number): string {
  const text = printable(s);
  if (width <= 0) return '';
  if (visibleWidth(text) <= width) return text;
  let out = '';
  let w = 0;
  for (const ch of text) {
    const cw = charWidth(ch);
    if (w + cw > width - 1) break;
    out += ch;
    w += cw;
  }
  return out + ELLIPSIS;
}

/** `s` clipped to `width` columns and padded with spaces to exactly `width`. */
function cell(s: string, width: number): string {
  const c = clip(s, width);
  return c + ' '.repeat(Math.max(0, width - visibleWidth(c)));
}

/**
 * Segments joined with " · " into as few lines of at most `width` columns as they fit; a segment wider than a line
 * has a line of its own, clipped. Counters wrap between segments instead of being cut off at the edge.
 */
export function pack(segments: readonly string[], width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const raw of segments) {
    const seg = printable(raw);
    if (line && visibleWidth(line) + SEP.length + visibleWidth(seg) <= width) line += SEP + seg;
    else {
      if (line) lines.push(line);
      line = seg;
    }
  }
  if (line) lines.push(line);
  return lines.map((l) => clip(l, width));
}

// ---------------------------------------------------------------------------
// Times

/** HH:MM:SS; hours grow past 99 when they must. */
export function clock(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
}

/** "about 40s", "about 4m", "about 1h 20m". */
function roughly(ms: number): string {
  const s = Math.max(1, Math.round(ms / 1000));
  if (s < 120) return `about ${s}s`;
  const m = Math.round(s / 60);
  if (m < 60) return `about ${m}m`;
  return `about ${Math.floor(m / 60)}h ${m % 60}m`;
}

function time(t: string | null | undefined): number | null {
  if (t == null) return null;
  const v = Date.parse(t);
  return Number.isNaN(v) ? null : v;
}

// ---------------------------------------------------------------------------
// Counters

/** What the running lanes are doing, as the concurrency budget sees it. */
export interface BudgetCounts {
  /** Lanes running a directive or its checks: each holds a slot; never more than the budget has. */
  holding: number;
  maxParallel: number;
  /** Lanes waiting for a slot. */
  waiting: number;
  /** Lanes in review: each review agent holds a slot while it runs. */
  reviewing: number;
  /** Outside the budget: cloning, committing or pushing (git work, limited by the machine's cores). */
  git: number;
  /** Outside the budget: opening or updating the PR, merging. */
  publishing: number;
  /** Outside the budget: waiting for CI. */
  ci: number;
}

export function budgetCounts(lanes: readonly LaneRecord[], maxParallel: number): BudgetCounts {
  let directives = 0;
  const c: BudgetCounts = { holding: 0, maxParallel, waiting: 0, reviewing: 0, git: 0, publishing: 0, ci: 0 };
  for (const l of lanes) {
    if (l.status !== 'running') continue;
    switch (l.phase) {
      case 'running':
      case 'checking':
        directives++;
        break;
      case 'waiting':
        c.waiting++;
        break;
      case 'reviewing':
        c.reviewing++;
        break;
      case 'queued': // started, about to clone
      case 'cloning':
      case 'committing':
      case 'pushing':
        c.git++;
        break;
      case 'ci':
        c.ci++;
        break;
      default:
        c.publishing++;
    }
  }
  // The budget has maxParallel slots and never lends more (src/util/pool.ts). A review's fix round says "running"
  // before it has its slot: a lane beyond the slots is one waiting for a slot, and is counted so.
  c.holding = Math.min(directives, maxParallel);
  c.waiting += directives - c.holding;
  return c;
}

/**
 * Two groups of segments, each packed on lines of its own: "directives/checks running 2 / 2 (the budget) · 1 waiting
 * for a slot", then (when anything runs outside it) "outside the budget: 3 cloning/pushing · 1 waiting for CI".
 */
export function budgetSegments(c: BudgetCounts): string[][] {
  const inBudget = [`directives/checks running ${c.holding} / ${c.maxParallel} (the budget)`];
  if (c.waiting) inBudget.push(`${c.waiting} waiting for a slot`);
  if (c.reviewing) inBudget.push(`${c.reviewing} in review (review agents take slots too)`);
  const outside = [
    c.git ? `${c.git} cloning/pushing` : '',
    c.publishing ? `${c.publishing} opening PR/merging` : '',
    c.ci ? `${c.ci} waiting for CI` : '',
  ].filter(Boolean);
  if (!outside.length) return [inBudget];
  outside[0] = `outside the budget: ${outside[0]}`;
  return [inBudget, outside];
}

interface Progress {
  done: number;
  total: number;
  /** "10 completed, 1 no-op, 1 failed" */
  breakdown: string;
  /** Lanes started and not finished, whatever their step. */
  inProgress: number;
  failed: number;
  /** "about 4m left", "estimating…", or '' when every lane is done. */
  estimate: string;
}

const FINISHED: ReadonlySet<LaneStatus> = new Set(['completed', 'failed', 'skipped', 'excluded', 'unchanged']);

export function progress(lanes: readonly LaneRecord[], maxParallel: number): Progress {
  const n = { completed: 0, noop: 0, failed: 0, skipped: 0, excluded: 0, unchanged: 0, running: 0, queued: 0 };
  const durations: number[] = [];
  for (const l of lanes) {
    if (l.status === 'completed' && l.phase === 'no-op') n.noop++;
    else n[l.status]++;
    if (l.status === 'completed' || l.status === 'failed') {
      const a = time(l.started_at);
      const b = time(l.ended_at);
      if (a != null && b != null && b >= a) durations.push(b - a);
    }
  }
  const done = lanes.filter((l) => FINISHED.has(l.status)).length;
  const breakdown = (
    [
      [n.completed, 'completed'],
      [n.noop, 'no-op'],
      [n.failed, 'failed'],
      [n.skipped, 'skipped'],
      [n.excluded, 'excluded'],
      [n.unchanged, 'unchanged'],
    ] as const
  )
    .filter(([c]) => c > 0)
    .map(([c, what]) => `${c} ${what}`)
    .join(', ');
  const left = lanes.length - done;
  let estimate = '';
  if (left > 0 && durations.length === 0) estimate = `estimating${ELLIPSIS}`;
  else if (left > 0) {
    // The lanes left (running or not started) take, each, as long as the lanes that ran took on average, and go
    // through the budget maxParallel at a time: time left ≈ mean × left / maxParallel, and at least one mean while a
    // lane is left. Simple on purpose: it ignores how far the running lanes are, waves, and CI waits outside the budget.
    const mean = durations.reduce((a, b) => a + b, 0) / durations.length;
    estimate = `${roughly(mean * Math.max(1, left / Math.max(1, maxParallel)))} left`;
  }
  return { done, total: lanes.length, breakdown, inProgress: n.running, failed: n.failed, estimate };
}

function progressSegments(p: Progress): string[] {
  const segs = [`${p.done}/${p.total} lanes done${p.breakdown ? ` (${p.breakdown})` : ''}`];
  if (p.inProgress) segs.push(`${p.inProgress} under way`);
  if (p.estimate) segs.push(p.estimate);
  return segs;
}

// ---------------------------------------------------------------------------
// Rows

const RUNNING_LABEL: Partial<Record<LaneRecord['phase'], string>> = {
  queued: 'starting',
  waiting: 'waiting slot',
  cloning: 'cloning',
  running: 'directive',
  checking: 'checks',
  reviewing: 'reviewing',
  committing: 'committing',
  pushing: 'pushing',
  pushed: 'pushed',
  pr: 'opening PR',
  'pr-open': 'PR opened',
  ci: 'waiting CI',
  merging: 'merging',
};

const DONE_LABEL: Partial<Record<LaneRecord['phase'], string>> = {
  'no-op': 'done: no-op',
  'dry-run': 'done: dry run',
  merged: 'done: merged',
  'pr-open': 'done: PR open',
  pushed: 'done: pushed',
  draft: 'done: draft',
};

/** The state column: a running lane's step, a finished lane's outcome. */
export function stateLabel(l: LaneRecord): string {
  switch (l.status) {
    case 'running':
      return RUNNING_LABEL[l.phase] ?? l.phase;
    case 'completed':
      return DONE_LABEL[l.phase] ?? 'done';
    case 'failed':
      return l.phase === 'draft' ? 'failed: draft' : 'FAILED';
    case 'queued':
      return 'not started';
    default:
      return l.status;
  }
}

const STATE_WIDTH = 13;

/** Which rows matter most when not all fit: 0 first. */
function relevance(l: LaneRecord): number {
  if (l.status === 'running') return l.phase === 'waiting' ? 2 : 0;
  if (l.status === 'failed') return 1;
  if (l.status === 'queued') return 2;
  return 3;
}

/**
 * The lanes to show, `room` of them, in plan order: the most relevant first (see `relevance`); among finished lanes
 * the most recently ended; ties in plan order.
 */
export function pickRows(lanes: readonly LaneRecord[], room: number): number[] {
  const ranked = lanes
    .map((l, i) => ({ i, r: relevance(l), ended: time(l.ended_at) ?? time(l.updated_at) ?? 0 }))
    .sort((a, b) => a.r - b.r || (a.r === 3 ? b.ended - a.ended : 0) || a.i - b.i);
  return ranked
    .slice(0, Math.max(0, room))
    .map((x) => x.i)
    .sort((a, b) => a - b);
}

/** The first non-blank line of a message (a lone CR stays, to be shown as an escape), an ellipsis for the rest. */
function firstLine(message: string): string {
  const lines = message.split(/\r?\n/);
  const i = lines.findIndex((s) => s.trim() !== '');
  if (i < 0) return '';
  return lines.slice(i + 1).some((s) => s.trim() !== '') ? `${lines[i]!.trim()} ${ELLIPSIS}` : lines[i]!.trim();
}

function details(l: LaneRecord): string {
  const parts: string[] = [];
  if ((l.status === 'failed' || l.status === 'skipped') && l.error) parts.push(firstLine(l.error.message));
  if (l.pr_number != null) parts.push(`#${l.pr_number}`);
  if (l.ci_conclusion && l.ci_conclusion !== 'none') parts.push(`CI ${l.ci_conclusion}`);
  if (l.retry_count > 0) parts.push(`retry ${l.retry_count}`);
  if (l.repo !== l.lane) parts.push(l.repo);
  return parts.filter(Boolean).join(SEP);
}

function laneTime(l: LaneRecord, now: number): string {
  const a = time(l.started_at);
  if (a == null || l.status === 'queued') return '';
  const b = FINISHED.has(l.status) ? time(l.ended_at) : now;
  return b == null ? '' : clock(b - a);
}

interface Layout {
  wave: number;
  lane: number;
}

/** Column widths from every lane, not only the shown ones, so columns do not jump between redraws. */
function layout(lanes: readonly LaneRecord[], width: number): Layout {
  let wave = 1;
  let lane = 4;
  for (const l of lanes) {
    wave = Math.max(wave, l.wave == null ? 1 : `w${l.wave + 1}`.length);
    lane = Math.max(lane, visibleWidth(printable(l.lane)));
  }
  return { wave, lane: Math.min(lane, Math.max(10, Math.floor(width / 3))) };
}

function row(l: LaneRecord, cols: Layout, now: number, width: number): string {
  const wave = l.wave == null ? '-' : `w${l.wave + 1}`;
  const line = [cell(wave, cols.wave), cell(l.lane, cols.lane), cell(stateLabel(l), STATE_WIDTH), cell(laneTime(l, now), 8), printable(details(l))].join('  ');
  return clip(line.trimEnd(), width);
}

const HIDDEN_ORDER: readonly [LaneStatus, string][] = [
  ['running', 'in progress'],
  ['failed', 'failed'],
  ['queued', 'not started'],
  ['completed', 'completed'],
  ['skipped', 'skipped'],
  ['excluded', 'excluded'],
  ['unchanged', 'unchanged'],
];

/** "… 14 more lanes (10 completed, 4 not started)" */
function moreLine(hidden: readonly LaneRecord[], all: boolean): string {
  const counts = new Map<LaneStatus, number>();
  for (const l of hidden) counts.set(l.status, (counts.get(l.status) ?? 0) + 1);
  const parts = HIDDEN_ORDER.filter(([s]) => counts.has(s)).map(([s, word]) => `${counts.get(s)} ${word}`);
  return `${ELLIPSIS} ${hidden.length} ${all ? '' : 'more '}lane${hidden.length === 1 ? '' : 's'} (${parts.join(', ')})`;
}

// ---------------------------------------------------------------------------
// The frame

/** The one-line view for a terminal too short for the table: progress, the budget, the estimate. */
export function progressLine(input: FrameInput): string {
  const p = progress(input.lanes, input.maxParallel);
  const c = budgetCounts(input.lanes, input.maxParallel);
  const segs = [
    `${p.done}/${p.total} lanes done`,
    p.failed ? `${p.failed} failed` : '',
    p.estimate,
    `directives ${c.holding} / ${c.maxParallel} (budget)`,
  ].filter(Boolean);
  return clip(segs.join(SEP), input.width);
}

/** The lines of one frame; each at most `width` columns, at most `height - 1` of them (at least one). */
export function renderFrame(input: FrameInput): string[] {
  const width = Math.max(1, Math.floor(input.width));
  const maxLines = Math.max(1, Math.floor(input.height) - 1);
  if (input.height < MIN_TABLE_ROWS) return [progressLine({ ...input, width })];

  const header = [
    clip(`Fleet ${input.fleetId}${SEP}${clock(input.now - input.startedAt)} elapsed`, width),
    ...budgetSegments(budgetCounts(input.lanes, input.maxParallel)).flatMap((group) => pack(group, width)),
    ...pack(progressSegments(progress(input.lanes, input.maxParallel)), width),
  ].slice(0, maxLines);
  const room = maxLines - header.length;
  const lanes = input.lanes;
  if (room <= 0 || lanes.length === 0) return header;

  const cols = layout(lanes, width);
  if (lanes.length <= room) return [...header, ...lanes.map((l) => row(l, cols, input.now, width))];
  // One line goes to counting the lanes left out.
  const shown = pickRows(lanes, room - 1);
  const shownSet = new Set(shown);
  const hidden = lanes.filter((_, i) => !shownSet.has(i));
  return [...header, ...shown.map((i) => row(lanes[i]!, cols, input.now, width)), clip(moreLine(hidden, shown.length === 0), width)];
}
