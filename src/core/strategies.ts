/**
 * Speculative strategies, pure (issue 9): when every strategy of a target has finished, which one is the pick. The
 * rules look only at what the lanes left behind, as their records say after verification: their status, their CI,
 * their review, the size of their diff, when they ended.
 */
import type { PickRule } from './fleet-file.js';
import type { LaneRecord } from './model.js';

/** A strategy that may be picked: it completed with a change, its CI is not red, its review is clear. */
export function isGreen(l: LaneRecord): boolean {
  if (l.status !== 'completed' || l.phase === 'no-op' || l.phase === 'dry-run') return false;
  // `pending` is not red: a strategy has no PR yet, so checks that run only on pull requests cannot report on its
  // branch. The pick's PR runs them; `ci.wait` on the PR (or the merge policy) judges it there.
  if (l.ci_conclusion !== null && l.ci_conclusion !== 'success' && l.ci_conclusion !== 'none' && l.ci_conclusion !== 'pending') return false;
  return !l.review || l.review.verdict === 'clear';
}

export interface Pick {
  /** The picked lane, or null (a person picks, or no strategy is green). */
  pick: string | null;
  reason: string;
}

const ended = (l: LaneRecord) => l.ended_at ?? '';
const openFindings = (l: LaneRecord) => l.review?.open ?? 0;
const diff = (l: LaneRecord) => l.strategy?.diff_lines ?? Number.POSITIVE_INFINITY;

/** The pick among one target's strategies under `rule`; ties go to the one that ended first, then the label. */
export function pickStrategy(rule: PickRule, members: readonly LaneRecord[]): Pick {
  if (rule === 'person') return { pick: null, reason: 'a person picks: every strategy with a change opened a draft PR' };
  const green = members.filter(isGreen);
  if (!green.length)
    return {
      pick: null,
      reason: `no strategy ended green (${members.map((m) => `${m.strategy?.label ?? m.lane}: ${m.status}${m.error ? ` ${m.error.class}` : m.phase === 'no-op' ? ' no-op' : ''}`).join(', ')})`,
    };
  const byEnd = (a: LaneRecord, b: LaneRecord) => (ended(a) < ended(b) ? -1 : ended(a) > ended(b) ? 1 : a.lane < b.lane ? -1 : 1);
  const label = (l: LaneRecord) => l.strategy?.label ?? l.lane;
  switch (rule) {
    case 'smallest-green-diff': {
      const best = [...green].sort((a, b) => diff(a) - diff(b) || a.changed_files.length - b.changed_files.length || byEnd(a, b))[0]!;
      return {
        pick: best.lane,
        reason: `smallest green diff: ${label(best)} changes ${best.strategy?.diff_lines ?? '?'} line${best.strategy?.diff_lines === 1 ? '' : 's'} in ${best.changed_files.length} file${best.changed_files.length === 1 ? '' : 's'} (${green.length} of ${members.length} green)`,
      };
    }
    case 'fewest-open-findings': {
      const best = [...green].sort((a, b) => openFindings(a) - openFindings(b) || diff(a) - diff(b) || byEnd(a, b))[0]!;
      return {
        pick: best.lane,
        reason: `fewest open findings: ${label(best)} has ${openFindings(best)}, ${best.review?.findings.length ?? 0} raised (${green.length} of ${members.length} green)`,
      };
    }
    default: {
      const best = [...green].sort(byEnd)[0]!;
      return { pick: best.lane, reason: `first green: ${label(best)} ended green first (${green.length} of ${members.length} green)` };
    }
  }
}

/** Lines added and removed in a unified diff (file headers not counted). */
export function diffLines(patch: string): number {
  let n = 0;
  for (const line of patch.split('\n')) if ((line.startsWith('+') && !line.startsWith('+++')) || (line.startsWith('-') && !line.startsWith('---'))) n++;
  return n;
}
