/**
 * The knobs of Fleet's GitHub client read from the environment: pacing, poll intervals and the write budget. Every
 * entrypoint's client and forge (src/github/setup.ts) read them here.
 */
import { GITHUB_WRITE_LIMITS, type WriteWindow } from '../core/budget.js';
import type { GitHubForgeOptions } from './forge.js';
import type { Pacing } from './octokit.js';

/**
 * Tuning knobs for GitHub Enterprise Server and for tests against an emulator,
 * read from the environment. Unset, Fleet keeps GitHub's recommended pacing
 * and its production poll intervals.
 *
 * - `FLEET_GITHUB_PACING_MS`: milliseconds between writes (and GraphQL
 *   queries, searches and PR-creating writes) in queues of this process's own,
 *   instead of the throttling plugin's shared defaults (1 s between writes,
 *   2 s between searches, 3 s between writes that notify people). `0` turns
 *   pacing off: for an emulator, or a GHES instance without secondary limits.
 * - `FLEET_GITHUB_POLL_MS`: the first interval between CI reads (default
 *   10 s; it grows by half each time up to 6× this, default 60 s) and the
 *   interval between reads of a PR's `mergeable` (default 2 s).
 * - `FLEET_GITHUB_CI_GRACE_MS`: how long "no CI at all" on a pushed commit is
 *   read as "CI has not started yet" when the repository shows signs of CI
 *   (default 2 min).
 * - `FLEET_GITHUB_WRITE_BUDGET`: the account's secondary limits the plan
 *   divides among the legs (src/core/budget.ts), as `MAX/WINDOW_MS` pairs
 *   separated by commas, or `off`. Unset: GitHub's 80 a minute and 500 an
 *   hour, or none when FLEET_GITHUB_PACING_MS is 0 (pacing off). Tests and the
 *   bench give an emulator compressed windows (`8/6000`) and Fleet the same:
 *   the same algorithm in less time.
 */
export const TUNING_VARIABLES = ['FLEET_GITHUB_PACING_MS', 'FLEET_GITHUB_POLL_MS', 'FLEET_GITHUB_CI_GRACE_MS', 'FLEET_GITHUB_WRITE_BUDGET'] as const;

export interface GitHubTuning {
  pacing?: Pacing;
  forge: Pick<GitHubForgeOptions, 'pollMs' | 'ciPollMs' | 'ciMaxPollMs' | 'ciStartGraceMs'>;
  /** The limits a plan divides among its legs; empty: no write budget. */
  writeLimits: WriteWindow[];
}

/** FLEET_GITHUB_WRITE_BUDGET (see TUNING_VARIABLES), or a problem naming it. */
export function writeLimitsFrom(raw: string | undefined, pacingOff: boolean): WriteWindow[] | { problem: string } {
  const text = raw?.trim();
  if (!text) return pacingOff ? [] : GITHUB_WRITE_LIMITS.map((w) => ({ ...w }));
  if (text === 'off') return [];
  const out: WriteWindow[] = [];
  for (const part of text.split(',')) {
    const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(part);
    const max = Number(m?.[1]);
    const window_ms = Number(m?.[2]);
    if (!m || max < 1 || window_ms < 100 || window_ms > 86_400_000) {
      return {
        problem: `FLEET_GITHUB_WRITE_BUDGET must be "off" or MAX/WINDOW_MS pairs separated by commas (e.g. "80/60000,500/3600000"; MAX ≥ 1, WINDOW_MS from 100 to 86400000), got "${text}"`,
      };
    }
    out.push({ max, window_ms });
  }
  return out;
}

/** The knobs of TUNING_VARIABLES, or the first that is not a whole number of milliseconds. */
export function githubTuning(env: NodeJS.ProcessEnv): GitHubTuning | { problem: string } {
  const read = (name: (typeof TUNING_VARIABLES)[number]): number | undefined | string => {
    const raw = env[name]?.trim();
    if (!raw) return undefined;
    const n = Number(raw);
    return Number.isInteger(n) && n >= 0 && n <= 3_600_000 ? n : `${name} must be a whole number of milliseconds (0 to 3600000), got "${raw}"`;
  };
  const pacing = read('FLEET_GITHUB_PACING_MS');
  const poll = read('FLEET_GITHUB_POLL_MS');
  const grace = read('FLEET_GITHUB_CI_GRACE_MS');
  for (const v of [pacing, poll, grace]) if (typeof v === 'string') return { problem: v };
  const writeLimits = writeLimitsFrom(env.FLEET_GITHUB_WRITE_BUDGET, pacing === 0);
  if ('problem' in writeLimits) return writeLimits;
  const tuning: GitHubTuning = { forge: {}, writeLimits };
  if (typeof pacing === 'number') tuning.pacing = { writeMs: pacing, searchMs: pacing, notificationsMs: pacing };
  if (typeof poll === 'number') tuning.forge = { pollMs: poll, ciPollMs: poll, ciMaxPollMs: Math.min(60_000, Math.max(poll, poll * 6)) };
  if (typeof grace === 'number') tuning.forge = { ...tuning.forge, ciStartGraceMs: grace };
  return tuning;
}
