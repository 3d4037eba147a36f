/**
 * Markdown rendered from a manifest: the live status table, the final report, the
 * plan an approver reads, and a mermaid graph of the lanes. Deterministic: the same
 * manifest and the same `now` give the same bytes (no clock, no locale).
 *
 * Every string that comes from a user, a repository or a tool (lane ids, repo names,
 * messages, the directive, paths) goes through `escapeCell`, `codeSpan` or
 * `mermaidLabel`, so it stays on its line and inside its cell and cannot open HTML,
 * links or code spans of its own.
 */
import type { IntegrationRecord, LaneRecord, LaneStatus, Manifest } from './model.js';
import { ciRed, durationSeconds, isDraft, needsAction, parseTime, summarize } from './manifest.js';
import { codeCell, codeSpan, escapeCell, mermaidLabel, oneLine } from './markdown.js';
import { hasUsage, money } from './spend.js';

export { codeSpan, escapeCell, mermaidLabel, oneLine } from './markdown.js';

export interface ReportOptions {
  /** The time the report is rendered at (ISO); "Last update … ago" and a running fleet's elapsed time count to it. */
  now: string;
  /** The fleet workspace, shown as the prefix of log and manifest paths. */
  workspace?: string;
  /** Status table: row cap (default 50). Report: caps the lanes table and the excluded list when given. */
  maxRows?: number;
}

const DASH = '—';
const ELLIPSIS = '…';
const DEFAULT_STATUS_ROWS = 50;
const PLAN_WAVE_LANES = 20;
const PLAN_LIST_LIMIT = 100;
const NOTE_CHARS = 120;
const MESSAGE_CHARS = 200;
const DIRECTIVE_CHARS = 200;
/** Mermaid's default `maxEdges`: a graph with more edges fails to render on GitHub. */
const MERMAID_MAX_EDGES = 500;

/** At most `max` code points, with an ellipsis when cut. */
function truncate(s: string, max: number): string {
  const cps = Array.from(s);
  if (cps.length <= max) return s;
  return (
    cps
      .slice(0, Math.max(0, max - 1))
      .join('')
      .trimEnd() + ELLIPSIS
  );
}

/** The first non-blank line, at most `max` code points; an ellipsis marks anything left out. */
function firstLine(s: string, max: number): string {
  const lines = s.split(/\r\n|\r|\n|\u2028|\u2029/);
  const i = lines.findIndex((l) => l.trim() !== '');
  if (i < 0) return '';
  const line = oneLine(lines[i]!);
  const rest = lines.slice(i + 1).some((l) => l.trim() !== '');
  const cut = truncate(line, max);
  return rest && !cut.endsWith(ELLIPSIS) ? `${cut} ${ELLIPSIS}` : cut;
}

// ---------------------------------------------------------------------------
// Small formatters

/** HH:MM:SS (hours grow past 99 when they must); negative counts as zero. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(h)}:${pad(m)}:${pad(s % 60)}`;
}

function durationCell(seconds: number | null): string {
  return seconds == null ? DASH : formatDuration(seconds);
}

/** Waves are 0-based in the manifest and 1-based wherever a person reads them. */
function waveLabel(wave: number | null): string {
  return wave == null ? DASH : String(wave + 1);
}

function orDash(s: string | null | undefined): string {
  return s == null || s === '' ? DASH : escapeCell(s);
}

function joinPath(workspace: string | undefined, path: string): string {
  if (!workspace || path.startsWith('/')) return path;
  return `${workspace.replace(/\/+$/, '')}/${path.replace(/^\.\//, '')}`;
}

const SAFE_URL = /^https?:\/\/[^\s<>()[\]|`"'\\]+$/;

/** `[#12](url)` when the URL is plainly safe, `#12` without one; ` (draft)` for a draft PR. */
function prCell(l: LaneRecord): string {
  const label = l.pr_number != null ? `#${l.pr_number}` : 'PR';
  let s: string;
  if (l.pr_url && SAFE_URL.test(l.pr_url)) s = `[${label}](${l.pr_url})`;
  else if (l.pr_number != null) s = label;
  else if (l.pr_url) s = escapeCell(l.pr_url);
  else return DASH;
  return isDraft(l) ? `${s} (draft)` : s;
}

/** How many whole seconds ago `updated_at` was, as "HH:MM:SS ago". */
function agoCell(updated_at: string | null, now: string): string {
  const s = durationSeconds(updated_at, now);
  return s == null ? DASH : `${formatDuration(s)} ago`;
}

/** The order rows are shown in when a table is capped: what needs eyes first. */
const STATUS_RANK: Record<LaneStatus, number> = { running: 0, failed: 1, completed: 2, skipped: 3, queued: 4, excluded: 5, unchanged: 6 };
const STATUS_ORDER = (Object.keys(STATUS_RANK) as LaneStatus[]).sort((a, b) => STATUS_RANK[a] - STATUS_RANK[b]);

function rowCap(maxRows: number | undefined, fallback: number): number {
  if (maxRows === undefined || Number.isNaN(maxRows)) return fallback;
  return Math.max(0, Math.floor(maxRows));
}

/** "… and 12 more (10 queued, 2 excluded)"; no-op lanes are counted apart from the completed ones, as in the counts above. */
function moreLine(hidden: LaneRecord[]): string {
  const counts = new Map<LaneStatus, number>();
  let noOp = 0;
  for (const l of hidden) {
    if (l.status === 'completed' && l.phase === 'no-op') noOp++;
    else counts.set(l.status, (counts.get(l.status) ?? 0) + 1);
  }
  const parts: string[] = [];
  for (const s of STATUS_ORDER) {
    if (counts.has(s)) parts.push(`${counts.get(s)} ${s}`);
    if (s === 'completed' && noOp) parts.push(`${noOp} no-op`);
  }
  return `${ELLIPSIS} and ${hidden.length} more (${parts.join(', ')})`;
}

function table(header: string[], align: ('l' | 'r')[], rows: string[][]): string[] {
  const out = [`| ${header.join(' | ')} |`, `|${align.map((a) => (a === 'r' ? '---:' : '---')).join('|')}|`];
  for (const r of rows) out.push(`| ${r.join(' | ')} |`);
  return out;
}

function finish(lines: string[]): string {
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}

// ---------------------------------------------------------------------------
// Status table

export function renderStatusTable(m: Manifest, opts: ReportOptions): string {
  const s = summarize(m.lanes, m.started_at, m.ended_at);
  const elapsed = durationSeconds(m.started_at, m.ended_at ?? opts.now);
  // A lane waiting for a slot in the concurrency budget has started but holds no slot: counted apart, so Active never
  // reads more than max_parallel (issue 27: "Active: 2 / 1").
  const waiting = m.lanes.filter((l) => l.status === 'running' && l.phase === 'waiting').length;
  const lines = [
    `## Fleet Status — ${escapeCell(m.fleet_id)}`,
    '',
    `Elapsed: ${durationCell(elapsed)} | Active: ${s.running - waiting} / ${m.max_parallel}${waiting ? ` | Waiting for a slot: ${waiting}` : ''} | Queued: ${s.queued} | Completed: ${s.completed - s.no_op} | No-op: ${s.no_op} | Failed: ${s.failed} | Skipped: ${s.skipped} | Excluded: ${s.excluded}${s.unchanged ? ` | Unchanged: ${s.unchanged}` : ''}`,
    '',
  ];
  if (m.lanes.length === 0) {
    lines.push('No lanes.');
    return finish(lines);
  }
  // Stable sort: within a status, manifest order (wave, lane) holds.
  const ordered = m.lanes.slice().sort((a, b) => STATUS_RANK[a.status] - STATUS_RANK[b.status]);
  const max = rowCap(opts.maxRows, DEFAULT_STATUS_ROWS);
  const shown = ordered.slice(0, max);
  const hidden = ordered.slice(max);
  const rows = shown.map((l, i) => [
    String(i + 1),
    escapeCell(l.repo),
    escapeCell(l.lane),
    waveLabel(l.wave),
    escapeCell(l.phase),
    prCell(l),
    ciCell(m, l),
    orDash(l.merge_status),
    String(l.retry_count),
    agoCell(l.updated_at, opts.now),
  ]);
  if (rows.length > 0) {
    lines.push(
      ...table(
        ['#', 'Repo', 'Lane', 'Wave', 'Phase', 'PR', ciHeader(m), 'Merge', 'Retries', 'Last update'],
        ['r', 'l', 'l', 'r', 'l', 'l', 'l', 'l', 'r', 'r'],
        rows,
      ),
    );
  }
  if (hidden.length > 0) lines.push('', moreLine(hidden));
  return finish(lines);
}

// ---------------------------------------------------------------------------
// Final report

/** One word for how a lane ended. A drafted PR is reported as `draft` even when its lane failed: a person takes it from there. */
export function laneResult(l: LaneRecord): string {
  if (l.status === 'excluded') return 'excluded';
  if (l.status === 'skipped') return 'skipped';
  if (l.status === 'unchanged') return 'unchanged';
  if (isDraft(l)) return 'draft';
  if (l.status === 'failed') return 'failed';
  if (l.phase === 'no-op') return 'no-op';
  if (l.merge_status === 'merged' || l.phase === 'merged') return 'merged';
  if (l.phase === 'dry-run') return 'dry-run';
  return l.status; // completed, or queued/running in a report rendered before the fleet ended
}

function notesCell(l: LaneRecord, result: string): string {
  const parts: string[] = [];
  if (l.error) {
    const msg = firstLine(l.error.message, NOTE_CHARS);
    // "excluded: archived: …" says excluded twice; the Result column already does.
    if (l.error.class === result) parts.push(msg || l.error.class);
    else parts.push(msg ? `${l.error.class}: ${msg}` : l.error.class);
  }
  if (l.retry_count > 0) parts.push(`${parts.length ? 'retried' : 'Retried'} ${l.retry_count}×`);
  return parts.length ? escapeCell(parts.join(' · ')) : DASH;
}

function branchPrCell(l: LaneRecord): string {
  const parts: string[] = [];
  // The branch only means something once the lane pushed to it (a dry run commits but never pushes).
  const pushed = l.phase !== 'dry-run' && (l.commit != null || l.pr_url != null || l.pr_number != null);
  if (l.branch && pushed) parts.push(codeCell(l.branch));
  // A dry run's change is its patch: say where it is.
  if (l.phase === 'dry-run' && l.evidence.patch) parts.push(`patch ${codeCell(l.evidence.patch)}`);
  const pr = prCell(l);
  if (pr !== DASH) parts.push(pr);
  return parts.length ? parts.join(' · ') : DASH;
}

function sentence(escaped: string): string {
  return /[.!?…]$/.test(escaped) ? escaped : `${escaped}.`;
}

function actionLine(l: LaneRecord, workspace: string | undefined): string {
  const red = !l.error && !isDraft(l) && ciRed(l);
  const cls = l.error?.class ?? (isDraft(l) ? 'draft' : red ? 'ci-failed' : l.status);
  const msg = l.error
    ? firstLine(l.error.message, MESSAGE_CHARS)
    : isDraft(l)
      ? 'the pull request was left as a draft for review'
      : red
        ? `CI is ${l.ci_conclusion} on the pushed commit${l.pr_url ? ` (${l.pr_url})` : ''}: the change is not good to merge`
        : '';
  let line = `- ${codeSpan(l.repo)} (lane ${codeSpan(l.lane)}) — ${escapeCell(cls)}`;
  line += msg ? `: ${sentence(escapeCell(msg))}` : '.';
  if (l.log) line += ` Log: ${codeSpan(joinPath(workspace, l.log))}`;
  return line;
}

function exclusionLine(x: Manifest['excluded'][number]): string {
  const detail = x.detail ? firstLine(x.detail, MESSAGE_CHARS) : '';
  return `- ${codeSpan(x.repo)} — ${escapeCell(x.reason)}${detail ? `: ${escapeCell(detail)}` : ''}`;
}

function directiveLine(m: Manifest): string {
  const d = firstLine(m.directive, DIRECTIVE_CHARS);
  return `Directive: ${d ? escapeCell(d) : DASH}`;
}

/**
 * Said once, above the tables: lanes whose directives ran where they could
 * see Fleet's processes (and read its credentials from /proc).
 */
function isolationLine(m: Manifest): string[] {
  const open = m.lanes.filter((l) => l.isolation?.kind === 'none');
  if (open.length === 0) return [];
  const why = oneLine(open[0]!.isolation!.detail);
  return [
    '',
    `_Not isolated: the directives of ${open.length} lane${open.length > 1 ? 's' : ''} ran where they could see Fleet's processes (${escapeCell(why)}); see docs/security.md._`,
  ];
}

/** What an approver must know before saying yes: which repositories get a branch pushed and a pull request opened. */
function pullRequestLines(m: Manifest): string[] {
  // A dry run says so at the top; the local forge opens no pull request; no lane, no section.
  const scheduled = m.lanes.filter((l) => l.wave != null);
  if (m.forge !== 'github' || m.dry_run || scheduled.length === 0) return [];
  const line = (l: LaneRecord) => `- ${codeSpan(l.repo)} ← ${l.branch ? codeSpan(l.branch) : DASH} (lane ${codeSpan(l.lane)}, wave ${waveLabel(l.wave!)})`;
  return [
    '',
    '### Pull requests',
    '',
    scheduled.length === 1
      ? '1 lane pushes its branch and opens (or updates) a pull request when it changes something:'
      : `${scheduled.length} lanes push their branches and open (or update) a pull request each when they change something:`,
    '',
    ...capped(scheduled, PLAN_LIST_LIMIT, line, 'lanes'),
  ];
}

function dryRunLine(m: Manifest): string[] {
  return m.dry_run ? ['', '_Dry run: nothing is pushed, no pull request is opened._'] : [];
}

/** A dry run's report: what it did not do, and where its changes are (each lane's patch, in the lanes table too). */
function dryRunPatchLines(m: Manifest, workspace: string | undefined): string[] {
  if (!m.dry_run) return [];
  if (!m.lanes.some((l) => l.phase === 'dry-run'))
    return ['', '_Dry run: nothing was pushed, no pull request was opened; no lane made a change, so there is no patch._'];
  const where = workspace
    ? codeSpan(joinPath(workspace, 'lanes/<lane>/patch.diff'))
    : // Rendered without a workspace (the reusable workflow's report job): the patches travel in the lane artifacts.
      `its ${codeSpan('patch.diff')} (${codeSpan('lanes/<lane>/patch.diff')} in the fleet workspace; on GitHub Actions, in the lane's ${codeSpan('fleet-lane-<lane>.a<attempt>')} artifact)`;
  return ['', `_Dry run: nothing was pushed, no pull request was opened; each lane's change is in ${where}._`];
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * How many lanes a fleet has and where they are, in the same words wherever a header counts them (the plan, the
 * report; the live view should too): "5 lanes in 3 waves", or "8 lanes: 6 in 3 waves, 1 skipped at plan time,
 * 1 excluded". Every lane of the manifest counts, excluded targets included, as the report's Lanes row does.
 */
export function laneCount(m: Manifest): string {
  const total = m.lanes.length;
  const scheduled = m.lanes.filter((l) => l.wave != null).length;
  const unchanged = m.lanes.filter((l) => l.wave != null && l.status === 'unchanged').length;
  const planSkipped = m.lanes.filter((l) => l.wave == null && l.status === 'skipped').length;
  const excluded = m.lanes.filter((l) => l.wave == null && l.status === 'excluded').length;
  const waves = `in ${plural(m.waves.length, 'wave')}${unchanged ? ` (${unchanged} unchanged, not run)` : ''}`;
  if (scheduled === total) return `${plural(total, 'lane')} ${waves}`;
  const parts = [`${scheduled} ${waves}`];
  if (planSkipped) parts.push(`${planSkipped} skipped at plan time`);
  if (excluded) parts.push(`${excluded} excluded`);
  return `${plural(total, 'lane')}: ${parts.join(', ')}`;
}

/** A local fleet has no CI: the lane's own `checks:` are shown as checks, never as a CI verdict. */
function ciHeader(m: Manifest): string {
  return m.forge === 'local' ? 'Checks' : 'CI';
}

/**
 * The CI column, or for a local fleet the checks column. Locally the record's `ci_conclusion` stands for the
 * lane's own checks (success: they ran and passed; none: the lane has none), so it is shown as what it is.
 */
function ciCell(m: Manifest, l: LaneRecord): string {
  if (m.forge !== 'local') return orDash(l.ci_conclusion);
  if (l.error?.class === 'check-failed') return 'failed';
  if (l.ci_conclusion === 'success') return 'passed';
  if (l.ci_conclusion === 'none') return 'no checks';
  return DASH;
}

/** Unchanged lanes beyond this many are counted in one line instead of a row each. */
const UNCHANGED_ROWS = 10;

function unchangedLine(n: number): string {
  return `${n} lane${n === 1 ? '' : 's'} unchanged since their last outcome (same base commit, same digest): not run, their branches and PRs left as they were; see the manifest.`;
}

/** Which lanes a capped report table shows: those a person must see first; they are then shown in manifest order. */
function reportRank(l: LaneRecord): number {
  if (l.status === 'failed' || isDraft(l)) return 0;
  if (l.status === 'running') return 1;
  if (l.status === 'skipped') return 2;
  if (l.status === 'completed') return 3;
  if (l.status === 'queued') return 4;
  return 5;
}

/**
 * A fleet deeper than the workflow's wave jobs ran in several workflow runs: each, with its waves. The last run listed
 * is the one whose report this is; a fleet that goes on says so.
 */
function runsLines(m: Manifest): string[] {
  const runs = m.runs ?? [];
  if (runs.length === 0) return [];
  const last = runs.at(-1)!;
  const more = last.last_wave + 1 < m.waves.length;
  if (runs.length === 1 && !more) return [];
  const link = (r: (typeof runs)[number]) => (r.url ? `[run ${r.run_id}](${r.url})` : `run ${r.run_id}`);
  const out = [
    '',
    `Ran in ${runs.length} workflow run${runs.length > 1 ? 's' : ''}${more ? ' so far' : ''}: ${runs.map((r) => `${link(r)} (waves ${r.first_wave + 1}–${r.last_wave + 1})`).join(', ')}.`,
  ];
  if (more) out.push(`Waves ${last.last_wave + 2}–${m.waves.length} go on in a new run of the workflow; its report covers the whole fleet.`);
  return out;
}

export function renderReport(m: Manifest, opts: ReportOptions): string {
  const s = summarize(m.lanes, m.started_at, m.ended_at ?? opts.now);
  const lines = [
    `## Fleet Report — ${escapeCell(m.fleet_id)}`,
    '',
    directiveLine(m),
    ...dryRunPatchLines(m, opts.workspace),
    ...isolationLine(m),
    ...runsLines(m),
    '',
    `${laneCount(m)}.`,
    '',
  ];

  const metrics: [string, string][] = [
    ['Lanes', String(s.total)],
    // Completed lanes that changed something; the ones that had nothing to change are the next row, not in this one.
    ['Completed', String(s.completed - s.no_op)],
    ['No-op', String(s.no_op)],
    ['Failed', String(s.failed)],
    ['Skipped', String(s.skipped)],
    ['Excluded', String(s.excluded)],
  ];
  // Only a report rendered before the fleet ended has these.
  if (s.running > 0) metrics.push(['Running', String(s.running)]);
  if (s.queued > 0) metrics.push(['Queued', String(s.queued)]);
  // Only an incremental sweep has these.
  if (s.unchanged > 0) metrics.push(['Unchanged', String(s.unchanged)]);
  if (s.usage?.cost_usd != null) metrics.push(['Agent cost', `$${money(s.usage.cost_usd)}`]);
  metrics.push(
    ['Merged', String(s.merged)],
    ['Draft', String(s.draft)],
    ['Retries', String(s.retries)],
    ['Duration', `${durationCell(s.duration_seconds)}${m.ended_at == null ? ' (running)' : ''}`],
  );
  lines.push(...table(['Metric', 'Value'], ['l', 'r'], metrics), '', '### Lanes', '');

  // A sweep over thousands of targets where few changed: the unchanged ones are one line, not a row each.
  const unchanged = m.lanes.filter((l) => l.status === 'unchanged');
  const folded = unchanged.length > UNCHANGED_ROWS;
  const listed = folded ? m.lanes.filter((l) => l.status !== 'unchanged') : m.lanes;
  if (m.lanes.length === 0) {
    lines.push('No lanes.');
  } else if (listed.length === 0) {
    lines.push(unchangedLine(unchanged.length));
  } else {
    const max = rowCap(opts.maxRows, Number.POSITIVE_INFINITY);
    let shown = listed;
    let hidden: LaneRecord[] = [];
    if (listed.length > max) {
      const order = listed.map((l, i) => ({ l, i })).sort((a, b) => reportRank(a.l) - reportRank(b.l));
      const keep = new Set(order.slice(0, max).map((x) => x.i));
      shown = listed.filter((_, i) => keep.has(i));
      hidden = listed.filter((_, i) => !keep.has(i));
    }
    const rows = shown.map((l) => {
      const result = laneResult(l);
      return [escapeCell(l.lane), escapeCell(l.repo), waveLabel(l.wave), result, branchPrCell(l), ciCell(m, l), notesCell(l, result)];
    });
    if (rows.length > 0)
      lines.push(...table(['Lane', 'Repo', 'Wave', 'Result', 'Branch / PR', ciHeader(m), 'Notes'], ['l', 'l', 'r', 'l', 'l', 'l', 'l'], rows));
    if (hidden.length > 0) lines.push('', `${moreLine(hidden)}: see the manifest`);
    if (folded) lines.push('', unchangedLine(unchanged.length));
  }

  if (m.excluded.length > 0) {
    const max = rowCap(opts.maxRows, Number.POSITIVE_INFINITY);
    lines.push('', '### Excluded', '', ...m.excluded.slice(0, max).map(exclusionLine));
    if (m.excluded.length > max) lines.push('', `${ELLIPSIS} and ${m.excluded.length - max} more excluded: see the manifest`);
  }

  lines.push(...queueLines(m));
  lines.push(...strategyLines(m));
  lines.push(...integrationLines(m));
  lines.push(...reviewLines(m, opts));
  lines.push(...relayLines(m));
  lines.push(...spendingLines(m, s, opts));

  const action = needsAction(m);
  lines.push('', '### Action required', '');
  if (action.length === 0) lines.push('Nothing needs action.');
  else lines.push(...action.map((l) => actionLine(l, opts.workspace)));

  if (opts.workspace) lines.push('', `Manifest: ${codeSpan(joinPath(opts.workspace, 'fleet-status.json'))}`);
  return finish(lines);
}

const REVIEW_OPEN_LIMIT = 50;
const SEVERITY_ORDER = ['critical', 'high', 'medium', 'low'] as const;

/** "2 high · 1 low": counts in severity order, the ones that are 0 left out. */
function severityCounts(findings: readonly { severity: string }[]): string {
  const parts = SEVERITY_ORDER.map((sev) => [sev, findings.filter((f) => f.severity === sev).length] as const).filter(([, n]) => n > 0);
  return parts.length ? parts.map(([sev, n]) => `${n} ${sev}`).join(' · ') : DASH;
}

/** "correctness 2 · security 1": how many findings each lens raised (a finding raised by two lenses counts for both). */
function lensCounts(findings: readonly { lenses: string[] }[]): string {
  const count = new Map<string, number>();
  for (const f of findings) for (const l of f.lenses) count.set(l, (count.get(l) ?? 0) + 1);
  return count.size ? [...count].map(([l, n]) => `${escapeCell(l)} ${n}`).join(' · ') : DASH;
}

function findingWhere(f: { file: string | null; line: number | null }): string {
  return f.file ? codeSpan(`${f.file}${f.line ? `:${f.line}` : ''}`) : '(no file)';
}

/** The review section: per reviewed lane, its rounds, findings by severity and by lens, open and follow-up; then every open finding. */
function reviewLines(m: Manifest, opts: ReportOptions): string[] {
  const reviewed = m.lanes.filter((l) => l.review);
  if (!reviewed.length) return [];
  const max = rowCap(opts.maxRows, Number.POSITIVE_INFINITY);
  const rows = reviewed.slice(0, max).map((l) => {
    const r = l.review!;
    const failed = new Set(r.rounds.flatMap((x) => x.lenses.filter((y) => y.outcome === 'failed').map((y) => y.lens)));
    return [
      escapeCell(l.lane),
      String(r.rounds.length),
      r.verdict,
      severityCounts(r.findings),
      lensCounts(r.findings),
      String(r.open),
      String(r.findings.filter((f) => f.status === 'follow-up').length),
      failed.size ? [...failed].map(escapeCell).join(', ') : DASH,
    ];
  });
  const out = [
    '',
    '### Review',
    '',
    ...table(['Lane', 'Rounds', 'Verdict', 'Findings', 'By lens', 'Open', 'Follow-up', 'Failed lenses'], ['l', 'r', 'l', 'l', 'l', 'r', 'r', 'l'], rows),
  ];
  if (reviewed.length > max) out.push('', `${ELLIPSIS} and ${reviewed.length - max} more reviewed lanes: see the manifest`);
  const open = reviewed.flatMap((l) => l.review!.findings.filter((f) => f.status === 'open').map((f) => ({ l, f })));
  if (open.length) {
    out.push('', 'Open findings (ACCEPT, not fixed by the round cap):', '');
    for (const { l, f } of open.slice(0, REVIEW_OPEN_LIMIT)) {
      out.push(
        `- ${codeSpan(l.lane)} ${f.id} (${f.severity}; ${f.lenses.map(escapeCell).join('+')}) ${findingWhere(f)}: ${sentence(escapeCell(firstLine(f.finding, MESSAGE_CHARS)))}`,
      );
    }
    if (open.length > REVIEW_OPEN_LIMIT) out.push(`- ${ELLIPSIS} and ${open.length - REVIEW_OPEN_LIMIT} more: see the manifest`);
  }
  return out;
}

/** The board's states, in the order a person reads them: what moves first, then what waits on whom. */
const QUEUE_ORDER = ['IN_FLIGHT', 'READY', 'BLOCKED_WORK', 'BLOCKED_PERSON', 'NO_SPEC'] as const;
const QUEUE_ROWS = 100;

/** How long since `since`, in the largest whole unit (minutes, hours, days). */
export function waited(since: string | null, now: string): string {
  const a = parseTime(since);
  const b = parseTime(now);
  if (a === null || b === null || b < a) return DASH;
  const min = Math.floor((b - a) / 60_000);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  return h < 48 ? `${h} h` : `${Math.floor(h / 24)} d`;
}

/**
 * The issue queue's board: its issues by state, each with the reason quoted from it, its PRs and how long it has
 * waited; the counts first, and what this run did to the queue after.
 */
export function queueLines(m: Manifest): string[] {
  const q = m.queue;
  if (!q) return [];
  const counts = QUEUE_ORDER.map((st) => `${st} ${q.rows.filter((r) => r.state === st).length}`).join(' · ');
  const lines = [
    '',
    '### Issue queue',
    '',
    `${codeSpan(q.repo)}, label ${codeSpan(q.label)}, budget ${q.budget}${q.dry_run ? ' (read only: nothing on GitHub was changed)' : ''}: ${counts}`,
    '',
  ];
  if (!q.rows.length) lines.push('No open issue carries the ready label.');
  else {
    const rows = [...q.rows]
      .sort((a, b) => QUEUE_ORDER.indexOf(a.state) - QUEUE_ORDER.indexOf(b.state) || a.priority - b.priority || a.issue - b.issue)
      .slice(0, QUEUE_ROWS)
      .map((r) => {
        const prs = r.items.filter((i) => i.pr).map((i) => `#${i.pr!.number}${i.pr!.state === 'open' ? '' : ` (${i.pr!.state})`}`);
        return [
          `#${r.issue}`,
          escapeCell(truncate(oneLine(r.title), 60)),
          r.state,
          escapeCell(truncate(oneLine(r.reason), MESSAGE_CHARS)),
          prs.length ? prs.join(', ') : DASH,
          waited(r.waiting_since, q.read_at),
        ];
      });
    lines.push(...table(['Issue', 'Title', 'State', 'Reason', 'PR', 'Waiting'], ['l', 'l', 'l', 'l', 'l', 'r'], rows));
    if (q.rows.length > QUEUE_ROWS) lines.push('', `${ELLIPSIS} and ${q.rows.length - QUEUE_ROWS} more: see the manifest`);
  }
  if (q.actions.length)
    lines.push('', 'This run, before its lanes:', '', ...q.actions.slice(0, 30).map((a) => `- ${escapeCell(truncate(oneLine(a), MESSAGE_CHARS))}`));
  return lines;
}

/** The integration of each repository: per wave, the merge order, held lanes with their conflicts, the seams; then the release. */
function integrationLines(m: Manifest): string[] {
  if (!m.integration?.length) return [];
  return ['', '### Integration', ...integrationRecordLines(m.integration)];
}

/** An integrate job's summary: what it merged and held, wave by wave, and the release if it cut one. */
export function renderIntegration(wave: number, records: readonly IntegrationRecord[]): string {
  const lines = [`## Fleet integration after wave ${wave + 1}`];
  if (records.length) lines.push(...integrationRecordLines(records));
  else lines.push('', 'No lane of this wave was ready to integrate.');
  return finish(lines);
}

function integrationRecordLines(records: readonly IntegrationRecord[]): string[] {
  const out: string[] = [];
  for (const r of records) {
    out.push('', `${codeSpan(r.repo)} into ${codeSpan(r.branch)}:`, '');
    for (const w of r.waves) {
      const parts = [`merged ${w.order.length ? w.order.map(codeSpan).join(' → ') : 'nothing'}`];
      if (w.already.length) parts.push(`already in: ${w.already.map(codeSpan).join(', ')}`);
      for (const h of w.held) parts.push(`held ${codeSpan(h.lane)}: ${escapeCell(firstLine(h.reason, MESSAGE_CHARS))}`);
      const seams = w.seams.filter((x) => x.lanes.length === 2);
      if (seams.length) parts.push(`seams ${seams.map((x) => `${x.lanes.map(codeSpan).join('↔')} ${x.ok ? 'passed' : 'failed'}`).join(', ')}`);
      out.push(`- Wave ${w.wave + 1}: ${parts.join('; ')}.`);
    }
    const rel = r.release;
    if (rel) {
      const gate = rel.gate.length ? rel.gate.map((g) => `${codeSpan(g.check)} ${g.ok ? 'passed' : 'failed'}`).join(', ') : 'no checks';
      out.push(
        `- Release ${codeSpan(rel.branch)}${rel.commit ? ` at ${codeSpan(rel.commit.slice(0, 12))}` : ''}: global seam gate ${rel.ok ? 'passed' : 'failed'} (${gate})${rel.pr_url ? `; PR ${prLink(rel.pr_url, rel.pr_number)}` : ''}.`,
      );
    }
  }
  return out;
}

function prLink(url: string, n: number | null): string {
  return /^https?:\/\/[^\s()<>]+$/.test(url) ? `[#${n ?? '?'}](${url})` : codeSpan(url);
}

/** The comparison of each target tried several ways: its strategies side by side, and which one was picked and why. */
function strategyLines(m: Manifest): string[] {
  const groups = new Map<string, LaneRecord[]>();
  for (const l of m.lanes) if (l.strategy) groups.set(l.strategy.group, [...(groups.get(l.strategy.group) ?? []), l]);
  if (!groups.size) return [];
  const out = ['', '### Strategies'];
  for (const [group, members] of groups) {
    const reason = members.find((x) => x.strategy!.reason)?.strategy?.reason;
    out.push('', `${codeSpan(group)}: ${reason ? sentence(escapeCell(reason)) : 'not settled.'}`, '');
    const rows = members.map((l) => [
      `${escapeCell(l.strategy!.label)}${l.strategy!.picked ? ' ✅' : ''}`,
      laneResult(l),
      l.status === 'completed' && l.phase !== 'dry-run' ? 'passed' : l.error?.class === 'check-failed' ? 'failed' : DASH,
      // A local forge has no CI: what the lane's record calls its CI there is its own checks, in the column before.
      m.forge === 'local' ? DASH : orDash(l.ci_conclusion),
      l.review ? String(l.review.open) : DASH,
      countCell(l.strategy!.diff_lines),
      l.changed_files.length ? String(l.changed_files.length) : DASH,
      durationCell(l.timings.total_ms == null ? null : Math.round(l.timings.total_ms / 1000)),
      costCell(l.usage?.cost_usd),
      branchPrCell(l),
    ]);
    out.push(
      ...table(
        ['Strategy', 'Result', 'Checks', 'CI', 'Open findings', 'Diff lines', 'Files', 'Duration', 'Cost', 'Branch / PR'],
        ['l', 'l', 'l', 'l', 'r', 'r', 'r', 'r', 'r', 'l'],
        rows,
      ),
    );
  }
  return out;
}

function countCell(v: number | null | undefined): string {
  return v == null ? DASH : String(v);
}

function costCell(v: number | null | undefined): string {
  return v == null ? DASH : `$${money(v)}`;
}

/**
 * The spending section: per lane that reported any, its agent turns, tokens and cost (and the review's share), the
 * fleet's total, and the lanes a budget stopped.
 */
function spendingLines(m: Manifest, s: ReturnType<typeof summarize>, opts: ReportOptions): string[] {
  const spent = m.lanes.filter((l) => hasUsage(l.usage));
  const stopped = m.lanes.filter((l) => l.error?.class === 'budget-exceeded');
  if (!spent.length && !stopped.length) return [];
  const out = ['', '### Spending', ''];
  if (spent.length) {
    const max = rowCap(opts.maxRows, Number.POSITIVE_INFINITY);
    const rows = spent
      .slice(0, max)
      .map((l) => [
        escapeCell(l.lane),
        countCell(l.usage!.turns),
        countCell(l.usage!.input_tokens),
        countCell(l.usage!.output_tokens),
        costCell(l.usage!.cost_usd),
        costCell(l.review?.usage.cost_usd),
      ]);
    const t = s.usage;
    rows.push([
      '**Fleet**',
      countCell(t?.turns),
      countCell(t?.input_tokens),
      countCell(t?.output_tokens),
      costCell(t?.cost_usd),
      costCell(spent.reduce<number | null>((sum, l) => (l.review?.usage.cost_usd == null ? sum : (sum ?? 0) + l.review.usage.cost_usd), null)),
    ]);
    out.push(...table(['Lane', 'Turns', 'Tokens in', 'Tokens out', 'Cost', 'Of which review'], ['l', 'r', 'r', 'r', 'r', 'r'], rows));
    if (spent.length > max) out.push('', `${ELLIPSIS} and ${spent.length - max} more lanes: see the manifest`);
    out.push('', 'As the agent CLIs reported it (Claude Code reports cost, turns and tokens; Codex tokens with `--json`); — where an agent reported nothing.');
  }
  if (stopped.length) {
    const notRun = stopped.filter((l) => l.status === 'skipped');
    const cut = stopped.filter((l) => l.status !== 'skipped');
    if (notRun.length)
      out.push(
        '',
        `Did not start (the fleet's cost ceiling was reached): ${notRun
          .slice(0, RELAY_LIST_LIMIT)
          .map((l) => codeSpan(l.lane))
          .join(', ')}${notRun.length > RELAY_LIST_LIMIT ? `, and ${notRun.length - RELAY_LIST_LIMIT} more` : ''}.`,
      );
    if (cut.length)
      out.push(
        '',
        `Stopped by a budget while running: ${cut
          .slice(0, RELAY_LIST_LIMIT)
          .map((l) => codeSpan(l.lane))
          .join(', ')}${cut.length > RELAY_LIST_LIMIT ? `, and ${cut.length - RELAY_LIST_LIMIT} more` : ''}.`,
      );
  }
  return out;
}

const RELAY_LIST_LIMIT = 20;

/** The relay section: per wave, what its lanes found (deduplicated) and which later lanes received it. */
function relayLines(m: Manifest): string[] {
  const waves = [...new Set(m.lanes.filter((l) => l.discoveries?.length && l.wave !== null).map((l) => l.wave!))].sort((a, b) => a - b);
  if (!waves.length) return [];
  const out = ['', '### Relay', ''];
  for (const wave of waves) {
    const lanes = m.lanes.filter((l) => l.wave === wave && l.discoveries?.length);
    const found = new Map<string, string[]>();
    for (const l of lanes) for (const d of l.discoveries!) found.set(d, [...(found.get(d) ?? []), l.lane]);
    const names = new Set(lanes.map((l) => l.lane));
    const receivers = m.lanes.filter((l) => l.relay?.from.some((f) => names.has(f))).map((l) => l.lane);
    out.push(
      `Wave ${wave + 1} learned ${found.size} thing${found.size === 1 ? '' : 's'}; ${receivers.length ? `received by ${receivers.length} lane${receivers.length === 1 ? '' : 's'}: ${receivers.slice(0, RELAY_LIST_LIMIT).map(codeSpan).join(', ')}${receivers.length > RELAY_LIST_LIMIT ? ', …' : ''}` : 'no later lane received it'}.`,
      '',
    );
    for (const [text, from] of [...found].slice(0, RELAY_LIST_LIMIT))
      out.push(`- ${escapeCell(firstLine(text, MESSAGE_CHARS))} (${from.map(codeSpan).join(', ')})`);
    if (found.size > RELAY_LIST_LIMIT) out.push(`- ${ELLIPSIS} and ${found.size - RELAY_LIST_LIMIT} more: see the manifest`);
    out.push('');
  }
  out.pop();
  return out;
}

/** The PR body's review section: what the panel found, the follow-up work (FIX_LATER), what is noted and what is open. */
export function reviewBodyLines(review: NonNullable<LaneRecord['review']>): string[] {
  const line = (f: (typeof review.findings)[number]) =>
    `- ${findingWhere(f)} (${f.severity}; ${f.lenses.map(escapeCell).join('+')}): ${sentence(escapeCell(firstLine(f.finding, MESSAGE_CHARS)))}${f.suggested_fix ? ` Suggested: ${sentence(escapeCell(firstLine(f.suggested_fix, MESSAGE_CHARS)))}` : ''}`;
  const lenses = [...new Set(review.rounds.flatMap((r) => r.lenses.map((l) => l.lens)))];
  const out = [
    '',
    `**Review** (${review.rounds.length} round${review.rounds.length > 1 ? 's' : ''}, lenses ${lenses.map(escapeCell).join(', ')}): ${review.verdict === 'clear' ? 'no finding it must fix is open' : '**findings are still open: this PR needs a person**'}; ${severityCounts(review.findings)} found, ${review.findings.filter((f) => f.status === 'fixed').length} fixed.`,
  ];
  const section = (title: string, status: string) => {
    const items = review.findings.filter((f) => f.status === status);
    if (items.length) out.push('', `**${title}** (${items.length})`, '', ...items.slice(0, REVIEW_OPEN_LIMIT).map(line));
  };
  section('Open findings', 'open');
  section('Follow-up work', 'follow-up');
  section('Noted', 'deferred');
  return out;
}

// ---------------------------------------------------------------------------
// Plan

function capped<T>(items: T[], limit: number, render: (t: T) => string, noun: string): string[] {
  const out = items.slice(0, limit).map(render);
  if (items.length > limit) out.push(`- ${ELLIPSIS} and ${items.length - limit} more ${noun}: see the plan artifact`);
  return out;
}

export function renderPlan(m: Manifest): string {
  const skipped = m.lanes.filter((l) => l.status === 'skipped');
  const lines = [`## Fleet Plan — ${escapeCell(m.fleet_id)}`, '', directiveLine(m), ...dryRunLine(m), ''];
  lines.push(
    `${laneCount(m)} · Max parallel: ${m.max_parallel} · Retries: ${m.max_retries} · Checkpoint: ${escapeCell(m.checkpoint)} · Merge: ${escapeCell(m.merge_policy)}`,
    '',
    '### Waves',
    '',
  );

  if (m.waves.length === 0) {
    lines.push('No waves: nothing to run.');
  } else {
    const waves = m.waves.slice().sort((a, b) => a.index - b.index);
    const rows = waves.map((w) => {
      const ids = w.lanes.slice(0, PLAN_WAVE_LANES).join(', ');
      const more = w.lanes.length > PLAN_WAVE_LANES ? ` ${ELLIPSIS} +${w.lanes.length - PLAN_WAVE_LANES}` : '';
      return [waveLabel(w.index), (ids ? escapeCell(ids) : DASH) + more, String(w.shards.length), String(w.parallel), w.exclusive ? 'yes' : 'no'];
    });
    lines.push(...table(['Wave', 'Lanes', 'Shards', 'Parallel', 'Exclusive'], ['r', 'l', 'r', 'r', 'l'], rows));
  }

  lines.push('', '### Contention', '');
  if (m.contention.length === 0) {
    lines.push('No contention.');
  } else {
    const rows = m.contention
      .slice(0, PLAN_LIST_LIMIT)
      .map((c) => [escapeCell(c.lane), escapeCell(c.repo), `${waveLabel(c.wanted_wave)} → ${waveLabel(c.wave)}`, escapeCell(c.because_of), orDash(c.reason)]);
    lines.push(...table(['Lane', 'Repo', 'Wave', 'Because of', 'Reason'], ['l', 'l', 'l', 'l', 'l'], rows));
    if (m.contention.length > PLAN_LIST_LIMIT) lines.push('', `${ELLIPSIS} and ${m.contention.length - PLAN_LIST_LIMIT} more: see the plan artifact`);
  }

  if (m.excluded.length > 0) {
    lines.push('', '### Excluded', '', ...capped(m.excluded, PLAN_LIST_LIMIT, exclusionLine, 'excluded'));
  }
  if (skipped.length > 0) {
    const line = (l: LaneRecord) => `- ${codeSpan(l.repo)} (lane ${codeSpan(l.lane)}) — ${orDash(l.error ? firstLine(l.error.message, MESSAGE_CHARS) : null)}`;
    lines.push('', '### Skipped', '', ...capped(skipped, PLAN_LIST_LIMIT, line, 'skipped'));
  }

  lines.push(...queueLines(m));
  lines.push(...pullRequestLines(m));
  lines.push('', '### Graph', '', renderMermaid(m));
  return finish(lines);
}

// ---------------------------------------------------------------------------
// Mermaid

const CLASS_DEFS: Partial<Record<LaneStatus, string>> = {
  failed: 'fill:#fde2e1,stroke:#cf222e,color:#82071e',
  skipped: 'fill:#fff8c5,stroke:#9a6700,color:#4d2d00,stroke-dasharray: 5 5',
  excluded: 'fill:#eaeef2,stroke:#8c959f,color:#57606a,stroke-dasharray: 5 5',
  unchanged: 'fill:#f6f8fa,stroke:#8c959f,color:#57606a',
};

/**
 * The lane graph: one subgraph per wave, unscheduled (skipped, excluded) lanes in
 * their own, edges from a dependency to its dependent. Node ids are derived from
 * lane ids (`n_` + [A-Za-z0-9_]), made unique with a suffix when two collide.
 */
export function renderMermaid(m: Manifest, maxNodes = 300): string {
  const n = m.lanes.length;
  if (n === 0) return '_No lanes._';
  if (n > maxNodes) return `_graph omitted: ${n} lanes (limit ${maxNodes})_`;

  const ids = new Map<string, string>();
  const used = new Set<string>();
  for (const l of m.lanes) {
    const base = `n_${l.lane.replace(/[^A-Za-z0-9_]/g, '_')}`;
    let id = base;
    for (let k = 2; used.has(id); k++) id = `${base}_${k}`;
    used.add(id);
    ids.set(l.lane, id);
  }

  const edges: string[] = [];
  const seen = new Set<string>();
  for (const l of m.lanes) {
    for (const dep of l.depends_on) {
      const from = ids.get(dep);
      if (from === undefined) continue; // not in the manifest: the planner reports it, the graph cannot draw it
      const edge = `${from} --> ${ids.get(l.lane)!}`;
      if (!seen.has(edge)) {
        seen.add(edge);
        edges.push(edge);
      }
    }
  }
  if (edges.length > MERMAID_MAX_EDGES) return `_graph omitted: ${edges.length} edges (limit ${MERMAID_MAX_EDGES})_`;

  const groups = new Map<number | null, LaneRecord[]>();
  for (const l of m.lanes) {
    const g = groups.get(l.wave);
    if (g) g.push(l);
    else groups.set(l.wave, [l]);
  }
  const keys = [...groups.keys()].sort((a, b) => (a ?? Number.POSITIVE_INFINITY) - (b ?? Number.POSITIVE_INFINITY));

  const out = ['```mermaid', 'graph LR'];
  for (const w of keys) {
    out.push(w == null ? '  subgraph unscheduled ["Not scheduled"]' : `  subgraph wave_${w + 1} ["Wave ${w + 1}"]`);
    for (const l of groups.get(w)!) out.push(`    ${ids.get(l.lane)!}["${mermaidLabel(l.lane)}"]`);
    out.push('  end');
  }
  for (const e of edges) out.push(`  ${e}`);
  for (const status of Object.keys(CLASS_DEFS) as LaneStatus[]) {
    const members = m.lanes.filter((l) => l.status === status).map((l) => ids.get(l.lane)!);
    if (members.length === 0) continue;
    out.push(`  classDef ${status} ${CLASS_DEFS[status]!}`, `  class ${members.join(',')} ${status}`);
  }
  out.push('```');
  return out.join('\n');
}

// ---------------------------------------------------------------------------
// Fitting a report into a check run

/** A check run's `output.summary` and `output.text` each hold at most 65,535 bytes (github/docs#35252). */
export const CHECK_RUN_TEXT_LIMIT = 65_535;

/**
 * Cut a markdown report to fit a check run field, at a line boundary, closing
 * an open code fence, and ending with a pointer to where the whole report is.
 * Returns the text unchanged when it fits.
 */
export function fitCheckRunText(markdown: string, pointer: string, limit = CHECK_RUN_TEXT_LIMIT): string {
  const size = utf8Bytes(markdown);
  if (size <= limit) return markdown;
  const tail = `\n\n… report truncated to fit a check run (${size} bytes, limit ${limit}). ${pointer}\n`;
  const budget = limit - utf8Bytes(tail) - 8;
  const end = charsWithin(markdown, budget);
  let cut = markdown.lastIndexOf('\n', end);
  if (cut <= 0) cut = end;
  let head = markdown.slice(0, cut);
  // An odd number of fences means the cut fell inside a code block: close it so the rest renders.
  if ((head.match(/^```/gm)?.length ?? 0) % 2 === 1) head += '\n```';
  return head + tail;
}

const encoder = new TextEncoder();

/** GitHub counts a check run's summary and text in bytes of UTF-8 (a ✓ is 3, an emoji 4). */
export function utf8Bytes(text: string): number {
  return encoder.encode(text).length;
}

/** The longest prefix of `text` (in UTF-16 units, never splitting a surrogate pair) within `bytes` bytes of UTF-8. */
function charsWithin(text: string, bytes: number): number {
  let used = 0;
  let i = 0;
  while (i < text.length) {
    const code = text.codePointAt(i)!;
    const width = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (used + width > bytes) break;
    used += width;
    i += code >= 0x10000 ? 2 : 1;
  }
  return i;
}

/** The check run conclusion a fleet earns: failure when any lane failed or was skipped (as the CLI's exit code), success otherwise. */
export function checkRunConclusion(m: Manifest): 'success' | 'failure' | 'neutral' {
  if (m.lanes.some((l) => l.status === 'failed' || l.status === 'skipped')) return 'failure';
  // A run of a chain whose fleet goes on in the next run: not done, not failed.
  if (m.lanes.some((l) => l.status === 'queued')) return 'neutral';
  if (m.lanes.every((l) => l.status === 'excluded')) return 'neutral';
  return 'success';
}

// ---------------------------------------------------------------------------
// A wave leg's summary and the check run's annotations

/** What one matrix leg did: its lanes, each with how it ended, its branch and PR, and why when it failed. */
export function renderShard(shard: string, lanes: LaneRecord[]): string {
  const rows = lanes.map((l) => {
    const result = laneResult(l);
    return [codeCell(l.lane), codeCell(l.repo), escapeCell(result), branchPrCell(l), notesCell(l, result)];
  });
  const lines = [`## Fleet shard ${escapeCell(shard)}`, ''];
  if (rows.length === 0) lines.push('No lanes in this shard.');
  else lines.push(...table(['Lane', 'Repo', 'Result', 'Branch / PR', 'Notes'], ['l', 'l', 'l', 'l', 'l'], rows));
  return finish(lines);
}

/** A check run annotation (https://docs.github.com/rest/checks/runs#create-a-check-run: output.annotations). */
export interface CheckAnnotation {
  path: string;
  start_line: number;
  end_line: number;
  annotation_level: 'notice' | 'warning' | 'failure';
  title: string;
  message: string;
}

/** GitHub takes at most 50 annotations per create or update request; further ones go in further updates. */
export const ANNOTATIONS_PER_REQUEST = 50;

/**
 * One annotation per lane that needs a person (the report's "Action required": failed lanes and drafted PRs), on the
 * fleet file (`path`, in the repository the check run is on): a failure for a failed lane, a warning for a draft.
 */
export function laneAnnotations(m: Manifest, path: string): CheckAnnotation[] {
  return needsAction(m).map((l) => {
    const result = laneResult(l);
    const why = l.error ? `${l.error.class}: ${firstLine(l.error.message, 1_000)}` : isDraft(l) ? 'the pull request was left as a draft for review' : result;
    const pr = l.pr_url ? ` ${l.pr_url}` : '';
    return {
      path,
      start_line: 1,
      end_line: 1,
      annotation_level: result === 'failed' ? 'failure' : 'warning',
      title: `${l.lane} (${l.repo}): ${result}`,
      message: `${why}${pr}`,
    };
  });
}
