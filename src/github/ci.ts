/**
 * CI verdicts from what GitHub holds for a commit: its check runs (the latest
 * per name) and its combined commit status. Pure: the forge fetches, this decides.
 */
import type { CiConclusion } from '../core/model.js';

export interface CheckRunLike {
  id: number;
  name: string;
  status: string;
  conclusion: string | null;
  started_at?: string | null;
  completed_at?: string | null;
  details_url?: string | null;
  html_url?: string | null;
  output?: { title?: string | null; summary?: string | null; text?: string | null } | null;
  app?: { slug?: string | null; name?: string | null } | null;
}

export interface StatusLike {
  context: string;
  state: string;
  description?: string | null;
  target_url?: string | null;
  updated_at?: string | null;
  id?: number;
}

/** Check-run conclusions that mean red. `stale` (GitHub gave up on an unfinished run) and `action_required` are not green either. */
const FAILED_CONCLUSIONS = new Set(['failure', 'cancelled', 'timed_out', 'action_required', 'startup_failure', 'stale']);
const GREEN_CONCLUSIONS = new Set(['success', 'neutral', 'skipped']);

/** The latest run per name (by start time, then id: a re-run gets a higher id). */
export function latestPerName<T extends CheckRunLike>(runs: readonly T[]): T[] {
  const byName = new Map<string, T>();
  for (const run of runs) {
    const prev = byName.get(run.name);
    if (!prev || newer(run, prev)) byName.set(run.name, run);
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function newer(a: CheckRunLike, b: CheckRunLike): boolean {
  const ta = a.started_at ? Date.parse(a.started_at) : NaN;
  const tb = b.started_at ? Date.parse(b.started_at) : NaN;
  if (!Number.isNaN(ta) && !Number.isNaN(tb) && ta !== tb) return ta > tb;
  return a.id > b.id;
}

/** The latest status per context (GitHub's combined status already gives one per context; a raw list may not). */
export function latestPerContext<T extends StatusLike>(statuses: readonly T[]): T[] {
  const byContext = new Map<string, T>();
  for (const s of statuses) {
    const prev = byContext.get(s.context);
    if (!prev) {
      byContext.set(s.context, s);
      continue;
    }
    const ts = s.updated_at ? Date.parse(s.updated_at) : 0;
    const tp = prev.updated_at ? Date.parse(prev.updated_at) : 0;
    if (ts > tp || (ts === tp && (s.id ?? 0) > (prev.id ?? 0))) byContext.set(s.context, s);
  }
  return [...byContext.values()];
}

export type Signal = 'failure' | 'pending' | 'success';

export function runSignal(run: CheckRunLike): Signal {
  if (run.status !== 'completed') return 'pending';
  const c = run.conclusion ?? '';
  if (GREEN_CONCLUSIONS.has(c)) return 'success';
  if (FAILED_CONCLUSIONS.has(c)) return 'failure';
  // A completed run without a conclusion we know: not green.
  return c ? 'failure' : 'pending';
}

export function statusSignal(status: StatusLike): Signal {
  if (status.state === 'success') return 'success';
  if (status.state === 'failure' || status.state === 'error') return 'failure';
  return 'pending';
}

/**
 * Any red → failure; else anything unfinished → pending; else all green →
 * success; nothing at all → none.
 */
export function combineCi(runs: readonly CheckRunLike[], statuses: readonly StatusLike[]): CiConclusion {
  const signals = [...latestPerName(runs).map(runSignal), ...latestPerContext(statuses).map(statusSignal)];
  if (signals.length === 0) return 'none';
  if (signals.includes('failure')) return 'failure';
  if (signals.includes('pending')) return 'pending';
  return 'success';
}

/**
 * Required checks (by check-run name or status context) that have not
 * reported on the commit at all: GitHub blocks a merge until each of them has
 * succeeded, so "nothing reported yet" is never green for them.
 */
export function missingRequired(runs: readonly CheckRunLike[], statuses: readonly StatusLike[], required: readonly string[]): string[] {
  const seen = new Set([...runs.map((r) => r.name), ...statuses.map((s) => s.context)]);
  return [...new Set(required)].filter((name) => !seen.has(name));
}

/**
 * `combineCi`, with the base branch's required checks: a required check that
 * has not reported makes an otherwise green (or empty) CI `pending`.
 */
export function combineRequired(runs: readonly CheckRunLike[], statuses: readonly StatusLike[], required: readonly string[]): CiConclusion {
  const conclusion = combineCi(runs, statuses);
  if (conclusion === 'failure') return conclusion;
  return missingRequired(runs, statuses, required).length ? 'pending' : conclusion;
}

function clip(text: string | null | undefined, maxLines: number, maxChars: number): string {
  if (!text) return '';
  const lines = text
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim());
  let out = lines.slice(0, maxLines).join('\n');
  if (out.length > maxChars) out = `${out.slice(0, maxChars - 1)}…`;
  else if (lines.length > maxLines) out += '\n…';
  return out;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}

/**
 * What failed, a few lines per check: name and conclusion, the output's title
 * and summary, and where to look. Fed back to an agent on a retry, so it is
 * kept short (`maxChars` in all).
 */
export function describeFailures(runs: readonly CheckRunLike[], statuses: readonly StatusLike[], maxChars = 4000): string {
  const blocks: string[] = [];
  for (const run of latestPerName(runs)) {
    if (runSignal(run) !== 'failure') continue;
    const lines = [`✗ ${run.name}: ${run.conclusion ?? run.status}`];
    const title = clip(run.output?.title, 1, 200);
    const summary = clip(run.output?.summary, 6, 600);
    if (title) lines.push(indent(title));
    if (summary && summary !== title) lines.push(indent(summary));
    const url = run.details_url || run.html_url;
    if (url) lines.push(indent(url));
    blocks.push(lines.join('\n'));
  }
  for (const s of latestPerContext(statuses)) {
    if (statusSignal(s) !== 'failure') continue;
    const lines = [`✗ ${s.context}: ${s.state}`];
    const desc = clip(s.description, 2, 300);
    if (desc) lines.push(indent(desc));
    if (s.target_url) lines.push(indent(s.target_url));
    blocks.push(lines.join('\n'));
  }
  let out = '';
  for (const [i, block] of blocks.entries()) {
    const next = out ? `${out}\n${block}` : block;
    if (next.length > maxChars) {
      out += `${out ? '\n' : ''}… and ${blocks.length - i} more failing check${blocks.length - i === 1 ? '' : 's'}`;
      break;
    }
    out = next;
  }
  return out;
}

/** The names of checks still running (and required checks not reported yet), for a `pending` verdict. */
export function describePending(runs: readonly CheckRunLike[], statuses: readonly StatusLike[], required: readonly string[] = []): string {
  const names = [
    ...latestPerName(runs)
      .filter((r) => runSignal(r) === 'pending')
      .map((r) => `${r.name} (${r.status})`),
    ...latestPerContext(statuses)
      .filter((s) => statusSignal(s) === 'pending')
      .map((s) => `${s.context} (pending)`),
    ...missingRequired(runs, statuses, required).map((name) => `${name} (required, not reported)`),
  ];
  if (!names.length) return '';
  const shown = names.slice(0, 10).join(', ');
  return `still running: ${shown}${names.length > 10 ? ` and ${names.length - 10} more` : ''}`;
}
