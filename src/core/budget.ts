/**
 * One write budget for a whole fleet. GitHub's secondary limits count
 * content-creating requests per account — about 80 a minute and 500 an hour
 * ("Rate limits for the REST API", secondary rate limits:
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits)
 * — and every matrix leg of a fleet writes as the same account. Legs cannot
 * talk to each other, so the plan divides the budget: the fleet's writes are
 * spaced `slot_ms` apart, in rounds of `legs_at_once` × `burst` slots, and each
 * of the `legs_at_once` legs that run together owns `burst` slots of every
 * round, a couple of seconds apart (legPace). Slots are counted from the Unix epoch, so
 * legs on different runners agree on them without a coordinator: however the
 * legs' work lines up, no two of them write in the same slot, and no window
 * holds more writes than its share of the limit (give or take a write that
 * network delay moves across a window's edge: the 10% margin is for that).
 *
 * Why several slots a round: a lane's publishing writes (the PR, its labels, reviewers,
 * assignees) follow one another within a second, so they go in one round. A
 * leg that spread them one a round would live a round longer per write, and a
 * phase stays idle whenever the next leg of the matrix takes longer to start
 * and get ready than a round lasts (on GitHub: a runner, the job's set-up, the
 * clone). Longer rounds leave the next leg that time.
 *
 * When a wave has more shards than `legs_at_once`, shard k + legs_at_once
 * takes shard k's slots after it (GitHub starts matrix legs in order as others
 * end); the leg waits for shard k to finish before its first write
 * (`predecessorIndex`, waited for in src/steps/drivers/matrix-pace.ts), so two legs never
 * hold the same slots at once even when legs end out of order.
 *
 * Pure: no clock, no I/O. The pacer (src/github/pacer.ts) reads the time and sleeps.
 */
import type { FleetFile } from './fleet-file.js';

/** A secondary limit: at most `max` content-creating requests in any `window_ms`. */
export interface WriteWindow {
  max: number;
  window_ms: number;
}

/** GitHub's secondary limits on content creation, per account. */
export const GITHUB_WRITE_LIMITS: readonly WriteWindow[] = [
  { max: 80, window_ms: 60_000 },
  { max: 500, window_ms: 3_600_000 },
];

/**
 * The part of each limit a fleet plans to use. The rest absorbs what the plan
 * cannot see: clocks of different runners a little apart, network delay that
 * moves a write towards its neighbour, the report job's check run, and people
 * or other tools writing as the same account.
 */
export const BUDGET_SHARE = 0.9;

export interface WriteBudget {
  /** The account's limits the plan divided. */
  limits: WriteWindow[];
  /** Matrix legs that run at once (the workflow's max-parallel, at most the widest wave's shards). */
  legs_at_once: number;
  /** Content-creating requests a lane is expected to make (see writesPerLane). */
  writes_per_lane: number;
  /** The slots a leg owns in each round: a lane's publishing writes (see publishWrites). Absent in plans before it: 1. */
  burst?: number;
  lanes: number;
  /** lanes × writes_per_lane. */
  total_writes: number;
  /** The limit that sets the pace: the shortest window, or a longer one the fleet's writes do not fit under. */
  binding: WriteWindow;
  /** The fleet's writes are at least this far apart. */
  slot_ms: number;
  /** A round: each leg writes at most `burst` times per this (legs_at_once × burst × slot_ms). */
  leg_interval_ms: number;
  /**
   * What each leg may write in each window of `limits` at its pace; `fits`: the
   * fleet's writes all fit under that limit, so the window cannot fill however they fall.
   */
  leg_share: Array<{ window_ms: number; writes: number; fits: boolean }>;
  /** How long the fleet's writes take at this pace, back to back. */
  writes_ms: number;
}

/**
 * The schedule one leg keeps: its writes fall on `phase_ms + n × interval_ms + i × gap_ms` after the epoch,
 * for i below `burst` (a plan without bursts: `burst` 1, and `gap_ms` unused).
 */
export interface LegPace {
  interval_ms: number;
  phase_ms: number;
  slot_ms?: number;
  burst?: number;
  /** Between the leg's slots within a round (default slot_ms). */
  gap_ms?: number;
  /**
   * Set by the leg, not the plan: resolves when the slots are the leg's own (the shard that held them before
   * has finished). The pacer awaits it once, before the first write.
   */
  waitTurn?: () => Promise<void>;
}

/**
 * The content-creating requests of one lane on the way to a completed lane:
 * the PR (created, or updated on a re-run), its labels, its review request,
 * its assignees, and the merge when the policy merges. A red-CI hand-off to a
 * draft, or a ready-again, adds one; the pacer holds every write to the leg's
 * share whatever the count, so this only decides which limit binds.
 */
export function writesPerLane(file: Pick<FleetFile, 'pr' | 'merge'>, dryRun: boolean): number {
  // A dry run writes nothing (it makes no fork either); push-only opens no PR (and merges none: validation refuses
  // when-green there). Fork mode asks for the fork first (POST …/forks answers with an existing one too).
  if (dryRun) return 0;
  const fork = file.pr.fork ? 1 : 0;
  if (!file.pr.open) return fork;
  const { pr } = file;
  return (
    fork +
    1 +
    (pr.labels.length ? 1 : 0) +
    (pr.reviewers.length || pr.team_reviewers.length ? 1 : 0) +
    (pr.assignees.length ? 1 : 0) +
    (file.merge.policy === 'when-green' ? 1 : 0)
  );
}

/**
 * The writes a lane makes back to back when it publishes: the PR, then its labels, review request and assignees, each
 * sent as soon as the one before is answered. A merge waits for CI, so it takes a later round.
 */
export function publishWrites(file: Pick<FleetFile, 'pr' | 'merge'>, dryRun: boolean): number {
  if (dryRun) return 0;
  // The fork is asked for before the clone, long before the PR.
  return writesPerLane(file, dryRun) - (file.merge.policy === 'when-green' ? 1 : 0) - (file.pr.fork ? 1 : 0);
}

/** The writes a window allows the fleet: BUDGET_SHARE of it, at least one. */
export function usable(w: WriteWindow): number {
  return Math.max(1, Math.floor(w.max * BUDGET_SHARE));
}

/**
 * Divides `limits` among `legs_at_once` legs. The shortest window always
 * binds (legs that start together would burst through it); a longer one binds
 * only when the fleet's writes do not fit under it, and then the pace is the
 * one that spreads them evenly over it.
 */
export function writeBudget(input: { limits: readonly WriteWindow[]; legsAtOnce: number; lanes: number; writesPerLane: number; burst?: number }): WriteBudget {
  if (!input.limits.length) throw new Error('writeBudget needs at least one limit');
  const legs = Math.max(1, Math.floor(input.legsAtOnce));
  const total = input.lanes * input.writesPerLane;
  const byLength = [...input.limits].sort((a, b) => a.window_ms - b.window_ms);
  let binding = byLength[0]!;
  let slot = binding.window_ms / usable(binding);
  for (const w of byLength.slice(1)) {
    if (total <= usable(w)) continue;
    const s = w.window_ms / usable(w);
    if (s > slot) {
      slot = s;
      binding = w;
    }
  }
  const slot_ms = Math.ceil(slot);
  const burst = Math.max(1, Math.floor(input.burst ?? 1));
  const leg_interval_ms = legs * burst * slot_ms;
  return {
    limits: input.limits.map((w) => ({ ...w })),
    legs_at_once: legs,
    writes_per_lane: input.writesPerLane,
    burst,
    lanes: input.lanes,
    total_writes: total,
    binding: { ...binding },
    slot_ms,
    leg_interval_ms,
    leg_share: input.limits.map((w) => ({
      window_ms: w.window_ms,
      writes: Math.floor(((w.window_ms * burst) / leg_interval_ms) * 1000) / 1000,
      fits: total <= usable(w),
    })),
    writes_ms: total * slot_ms,
  };
}

/**
 * How far apart a leg's back-to-back writes are, in slots: GitHub answers a PR creation in about a second, and the
 * next write must be ready by its slot, so a leg's slots are at least this far apart (2.5 s at GitHub's 834 ms).
 */
export const MIN_WRITE_GAP_MS = 2_500;

/**
 * Leg `index` of a wave (its shard's position) takes `burst` slots of every round. The legs of a round are taken in
 * blocks of g (g × slot ≥ MIN_WRITE_GAP_MS; the last block also takes the legs left over); within a block of n legs
 * and n × burst slots, leg j owns slots j, j + n, j + 2n, …: the blocks tile the round, so no two legs share a slot.
 */
export function legPace(budget: Pick<WriteBudget, 'slot_ms' | 'leg_interval_ms' | 'legs_at_once' | 'burst'>, index: number): LegPace {
  const burst = budget.burst ?? 1;
  const legs = budget.legs_at_once;
  const p = index % legs;
  const g = Math.min(legs, Math.max(1, Math.ceil(MIN_WRITE_GAP_MS / budget.slot_ms)));
  // The legs left over join the last block (a smaller block would put its legs' slots closer together).
  const blocks = Math.max(1, Math.floor(legs / g));
  const block = Math.min(Math.floor(p / g), blocks - 1);
  const inBlock = block === blocks - 1 ? legs - block * g : g;
  const phase = block * g * burst + (p - block * g);
  return { interval_ms: budget.leg_interval_ms, phase_ms: phase * budget.slot_ms, slot_ms: budget.slot_ms, burst, gap_ms: inBlock * budget.slot_ms };
}

/**
 * The shard whose slots shard `index` of its wave takes over (`index − legs_at_once`), or none for the first
 * `legs_at_once` shards.
 */
export function predecessorIndex(budget: Pick<WriteBudget, 'legs_at_once'>, index: number): number | undefined {
  return index >= budget.legs_at_once ? index - budget.legs_at_once : undefined;
}

/**
 * When the next write may go: the first of the leg's slots at or after `now`
 * and after the leg's previous write (`last`, a slot).
 */
export function nextSlot(pace: LegPace, now: number, last?: number): number {
  const burst = pace.burst ?? 1;
  const gap = pace.gap_ms ?? pace.slot_ms ?? pace.interval_ms;
  const earliest = last === undefined ? now : Math.max(now, last + 1);
  // The round whose first own slot is at or before `earliest`: its next own slot, else the next round's first.
  const round = Math.floor((earliest - pace.phase_ms) / pace.interval_ms);
  const start = round * pace.interval_ms + pace.phase_ms;
  const i = Math.ceil((earliest - start) / gap);
  return burst > 1 && i < burst ? start + i * gap : i === 0 ? start : start + pace.interval_ms;
}

/** "1 h 12 min", "4 min 10 s", "40 s". */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
}

const per = (ms: number) => (ms === 60_000 ? 'a minute' : ms === 3_600_000 ? 'an hour' : `per ${formatDuration(ms)}`);
const named = (ms: number) => (ms === 60_000 ? 'per-minute' : ms === 3_600_000 ? 'hourly' : `${formatDuration(ms)}`);

/** The plan summary's paragraph on the budget: the approver sees how long the writes take at GitHub's limit. */
export function renderWriteBudget(b: WriteBudget): string {
  const limits = b.limits.map((w) => `${w.max} ${per(w.window_ms)}`).join(' and ');
  const lines = [
    '### Write budget',
    '',
    `GitHub allows this account ${limits} content-creating requests; the fleet plans ${Math.round(BUDGET_SHARE * 100)}% of that, shared by ${b.legs_at_once} leg(s) at once.`,
    `${b.lanes} lane(s) × about ${b.writes_per_lane} write(s) = ${b.total_writes} write(s); each leg writes at most ${(b.burst ?? 1) > 1 ? `${b.burst} times (a lane's PR and what follows it)` : 'once'} every ${formatDuration(b.leg_interval_ms)}, the fleet once every ${formatDuration(b.slot_ms)}.`,
  ];
  const shortest = Math.min(...b.limits.map((w) => w.window_ms));
  if (b.binding.window_ms === shortest) {
    lines.push(
      `The writes fit under every longer limit: only the ${named(b.binding.window_ms)} limit sets the pace (the writes alone take about ${formatDuration(b.writes_ms)}).`,
    );
  } else {
    lines.push(
      `**The writes do not fit under the ${named(b.binding.window_ms)} limit of ${b.binding.max}**: at that limit they take about ${formatDuration(b.writes_ms)}. Make sure the legs' \`lane-timeout-minutes\` covers their share of that, or split the fleet.`,
    );
  }
  return lines.join('\n');
}
