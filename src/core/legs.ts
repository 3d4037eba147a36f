/**
 * How many matrix legs a wave of a fleet on GitHub Actions gets, and which lanes each leg runs.
 *
 * A leg is a job. Before its first lane it pays GitHub's start of a runner and the job's set-up, two checkouts,
 * Node's start and the plan's and dependencies' downloads (`action_job_overhead_s` in `npm run bench`), and GitHub
 * bills it rounded up to a whole minute. A wave's legs run `max_parallel` (P) at a time, so S legs take ⌈S / P⌉
 * rounds and pay that start-up once per round on the wave's wall time, and S times on the bill. Lanes in one leg run
 * one after another, each in a clone and sandbox of its own, so a failed lane never stops the next.
 *
 * So a wave of n lanes gets P legs (one round) unless a leg would then run longer than its budget (half the wave
 * job's timeout-minutes: the estimates below are rough), and then the smallest multiple of P whose legs fit: full
 * rounds, since a round started for one leg costs the wave as much wall time as a round of P. Never more legs than
 * lanes, nor than 256 (GitHub's matrix limit). Within that count the wave's lanes, in id order, are cut into
 * contiguous runs of near-equal expected cost. docs/actions/limits.md ("How many legs") has the cost model.
 *
 * `legs: per-lane` in the fleet file keeps one lane per leg (a runner of its own for every lane, up to 256 a wave):
 * more isolation between lanes (a directive that writes the runner user's HOME reaches only its own lane), at one
 * runner start per lane. `auto` does the same for a fleet with agent lanes: a leg installs its agent CLI under the
 * runner user's home, where a lane's directive or check can replace it for the lanes after it (docs/security.md),
 * and an agent lane's minutes make a runner's start a small part of it anyway. `legs: shared` sizes an agent fleet's
 * legs as a script fleet's, for a fleet whose repositories are trusted.
 *
 * Pure: no clock, no I/O.
 */
import { publishWrites, type WriteWindow, writeBudget, writesPerLane } from './budget.js';
import type { FleetFile } from './fleet-file.js';
import type { LaneSpec } from './model.js';

/**
 * What a lane is expected to take inside its leg, in seconds. Assumptions, not measurements of GitHub (which
 * publishes none): a script lane's clone, directive, push and PR on a hosted runner take about a minute; each check
 * (a build, a test suite) a couple more; a coding agent's attempt some minutes; each review lens some more; waiting for
 * the target's CI some more again.
 */
export const LANE_SECONDS = { script: 60, check: 120, agent: 600, lens: 180, ci: 300 } as const;

/** The part of the wave job's timeout a leg's lanes are planned to fill: the rest is for estimates that were low. */
export const LEG_BUDGET_SHARE = 0.5;
/** The reusable workflow's default `lane-timeout-minutes`: each wave job's timeout. */
export const DEFAULT_LEG_TIMEOUT_MINUTES = 120;
/** A leg's own start before its first lane (checkouts, Node, downloads): taken off its budget. */
export const LEG_START_SECONDS = 60;

export interface LegOptions {
  /** Each wave job's timeout-minutes (the reusable workflow's `lane-timeout-minutes`); default 120. */
  timeoutMinutes?: number;
  /** The account's write limits, where the legs' writes are paced to a share of them (GitHub). */
  writeLimits?: readonly WriteWindow[];
  dryRun?: boolean;
}

/** How a plan sizes its legs: one lane each, or by expected cost within a time budget. */
export type LegSizing = { perLane: true } | { perLane: false; budgetS: number; seconds: (lane: string) => number };

/** A lane's expected seconds in its leg, not counting the wait for its write slots. */
export function laneSeconds(spec: Pick<LaneSpec, 'run' | 'review' | 'checks'>, file: Pick<FleetFile, 'ci'>, dryRun: boolean): number {
  const after = spec.checks.length * LANE_SECONDS.check + (file.ci.wait && !dryRun ? LANE_SECONDS.ci : 0);
  if (spec.run !== undefined) return LANE_SECONDS.script + after;
  const lenses = spec.review ? spec.review.lenses.length * spec.review.rounds : 0;
  return LANE_SECONDS.agent + lenses * LANE_SECONDS.lens + after;
}

/**
 * The sizing of a fleet's legs. Where writes are paced, a leg writes at most once a round of the write budget (its
 * `leg_interval_ms`: every leg at once takes its turn), so each lane that publishes is expected to wait up to that
 * long besides its own work.
 */
export function legSizing(
  file: Pick<FleetFile, 'legs' | 'ci' | 'pr' | 'merge'>,
  lanes: readonly LaneSpec[],
  maxParallel: number,
  opts: LegOptions = {},
): LegSizing {
  if (file.legs === 'per-lane' || (file.legs === 'auto' && lanes.some((l) => l.run === undefined))) return { perLane: true };
  const dryRun = opts.dryRun ?? false;
  const writes = writesPerLane(file, dryRun);
  const round =
    opts.writeLimits?.length && writes > 0
      ? writeBudget({
          limits: opts.writeLimits,
          legsAtOnce: Math.min(maxParallel, Math.max(1, lanes.length)),
          lanes: lanes.length,
          writesPerLane: writes,
          burst: publishWrites(file, dryRun),
        }).leg_interval_ms / 1000
      : 0;
  const seconds = new Map(lanes.map((l) => [l.id, laneSeconds(l, file, dryRun) + round]));
  const timeout = opts.timeoutMinutes ?? DEFAULT_LEG_TIMEOUT_MINUTES;
  const budgetS = Math.max(LANE_SECONDS.script, timeout * 60 * LEG_BUDGET_SHARE - LEG_START_SECONDS);
  return { perLane: false, budgetS, seconds: (id) => seconds.get(id) ?? LANE_SECONDS.script };
}

/**
 * The number of legs for `n` lanes expected to take `totalS` seconds in all: P, or the smallest multiple of P whose
 * legs each fit `budgetS`, at most n and `maxLegs`.
 */
export function legCount(n: number, totalS: number, maxParallel: number, budgetS: number, maxLegs: number): number {
  if (n <= 0) return 0;
  const p = Math.max(1, Math.floor(maxParallel));
  const needed = Math.max(1, Math.ceil(totalS / Math.max(1, budgetS)));
  return Math.max(1, Math.min(n, Math.floor(maxLegs), p * Math.ceil(needed / p)));
}

/**
 * `ids` cut, in order, into `count` non-empty runs of near-equal total `seconds`: run j ends where the running total
 * first reaches (j + 1) / count of the whole. With equal costs the runs' sizes differ by at most one.
 */
export function cutByCost(ids: readonly string[], seconds: (id: string) => number, count: number): string[][] {
  const n = ids.length;
  const k = Math.max(0, Math.min(n, Math.floor(count)));
  if (k === 0) return [];
  const costs = ids.map((id) => Math.max(0, seconds(id)));
  const total = costs.reduce((a, b) => a + b, 0);
  const out: string[][] = [];
  let at = 0;
  let sum = 0;
  for (let j = 0; j < k; j++) {
    const left = k - j - 1; // runs still to fill after this one, one lane each at least
    const target = total > 0 ? (total * (j + 1)) / k : ((j + 1) * n) / k;
    let end = at + 1;
    sum += total > 0 ? costs[at]! : 1;
    while (end < n - left && (left === 0 || sum < target - 1e-9)) {
      sum += total > 0 ? costs[end]! : 1;
      end++;
    }
    out.push(ids.slice(at, end));
    at = end;
  }
  return out;
}
