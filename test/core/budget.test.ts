/**
 * The fleet's write budget (src/core/budget.ts): GitHub's secondary limits on
 * content creation — "no more than 80 content-generating requests per minute
 * and no more than 500 content-generating requests per hour"
 * (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits)
 * — divided among the legs that run at once, and the slots each leg writes in.
 */
import { describe, expect, it } from 'vitest';
import {
  GITHUB_WRITE_LIMITS,
  legPace,
  nextSlot,
  predecessorIndex,
  publishWrites,
  renderWriteBudget,
  writeBudget,
  writesPerLane,
  type LegPace,
} from '../../src/core/budget.js';
import { ContentLimiter } from '../support/github-emulator/limits.js';

const pr = {
  labels: [] as string[],
  reviewers: [] as string[],
  team_reviewers: [] as string[],
  assignees: [] as string[],
  draft: false,
  open: true,
  fork: false,
};

describe('writes a lane makes', () => {
  it('counts the PR, then labels, a review request, assignees and a merge when the fleet file asks for them', () => {
    expect(writesPerLane({ pr, merge: { policy: 'never', method: 'squash' } }, false)).toBe(1);
    expect(
      writesPerLane(
        { pr: { ...pr, labels: ['a', 'b'], team_reviewers: ['acme/t'], assignees: ['x'] }, merge: { policy: 'when-green', method: 'squash' } },
        false,
      ),
    ).toBe(5);
    expect(writesPerLane({ pr: { ...pr, labels: ['a'] }, merge: { policy: 'when-green', method: 'squash' } }, true)).toBe(0);
    // Fork mode asks for the fork first, push-only too; a dry run makes none.
    expect(writesPerLane({ pr: { ...pr, fork: true }, merge: { policy: 'never', method: 'squash' } }, false)).toBe(2);
    expect(writesPerLane({ pr: { ...pr, fork: true, open: false }, merge: { policy: 'never', method: 'squash' } }, false)).toBe(1);
    expect(writesPerLane({ pr: { ...pr, fork: true }, merge: { policy: 'never', method: 'squash' } }, true)).toBe(0);
  });

  it('counts as back to back only the publishing writes: a merge waits for CI', () => {
    expect(
      publishWrites(
        { pr: { ...pr, labels: ['a', 'b'], team_reviewers: ['acme/t'], assignees: ['x'] }, merge: { policy: 'when-green', method: 'squash' } },
        false,
      ),
    ).toBe(4);
    expect(publishWrites({ pr, merge: { policy: 'never', method: 'squash' } }, false)).toBe(1);
    expect(publishWrites({ pr, merge: { policy: 'never', method: 'squash' } }, true)).toBe(0);
    // Push-only: no PR, so nothing to publish.
    expect(publishWrites({ pr: { ...pr, labels: ['a'], open: false }, merge: { policy: 'never', method: 'squash' } }, false)).toBe(0);
    expect(publishWrites({ pr: { ...pr, fork: true }, merge: { policy: 'never', method: 'squash' } }, false)).toBe(1);
  });
});

describe('shares of the budget', () => {
  it('with writes that fit under the hourly limit, only the per-minute limit binds: 72 a minute for the fleet, split between the legs', () => {
    const b = writeBudget({ limits: GITHUB_WRITE_LIMITS, legsAtOnce: 256, lanes: 256, writesPerLane: 1 });
    expect(b.binding).toEqual({ max: 80, window_ms: 60_000 });
    expect(b.slot_ms).toBe(834); // 60 s / 72, rounded up
    expect(b.leg_interval_ms).toBe(256 * 834);
    expect(b.leg_share[0]!.writes).toBeCloseTo(60_000 / (256 * 834), 3);
    expect(b.writes_ms).toBe(256 * 834);
    expect(renderWriteBudget(b)).toContain('GitHub allows this account 80 a minute and 500 an hour content-creating requests');
    expect(renderWriteBudget(b)).toContain('only the per-minute limit sets the pace (the writes alone take about 3 min 34 s)');
  });

  it('with more writes than the hour allows, the hourly limit sets the pace and the summary says how long the writes take', () => {
    const b = writeBudget({ limits: GITHUB_WRITE_LIMITS, legsAtOnce: 64, lanes: 1000, writesPerLane: 3 });
    expect(b.binding).toEqual({ max: 500, window_ms: 3_600_000 });
    expect(b.slot_ms).toBe(8000); // 3600 s / 450
    expect(b.writes_ms).toBe(3000 * 8000); // 6 h 40 min
    expect(renderWriteBudget(b)).toContain('**The writes do not fit under the hourly limit of 500**: at that limit they take about 6 h 40 min');
    // 450 writes fit: the hour does not bind, 451 do not.
    expect(writeBudget({ limits: GITHUB_WRITE_LIMITS, legsAtOnce: 8, lanes: 450, writesPerLane: 1 }).binding.window_ms).toBe(60_000);
    expect(writeBudget({ limits: GITHUB_WRITE_LIMITS, legsAtOnce: 8, lanes: 451, writesPerLane: 1 }).binding.window_ms).toBe(3_600_000);
  });

  it("the legs' shares add up to at most 90% of every limit, unless all the fleet's writes fit under it", () => {
    for (const legs of [1, 3, 32, 256]) {
      for (const lanes of [10, 100, 1000]) {
        const b = writeBudget({ limits: GITHUB_WRITE_LIMITS, legsAtOnce: legs, lanes, writesPerLane: 2 });
        for (const [i, w] of b.limits.entries()) {
          const share = b.leg_share[i]!;
          expect(share.fits).toBe(lanes * 2 <= Math.floor(w.max * 0.9));
          if (!share.fits) expect(share.writes * legs).toBeLessThanOrEqual(w.max * 0.9 + 1e-9);
        }
      }
    }
  });
});

describe('pacer schedule', () => {
  it('puts a leg on its own slots: phase from its index, one interval apart, never earlier than asked', () => {
    const b = writeBudget({ limits: [{ max: 8, window_ms: 6000 }], legsAtOnce: 4, lanes: 4, writesPerLane: 1 });
    expect(b.slot_ms).toBe(858); // 6000 / 7
    const p = legPace(b, 6);
    expect(p).toEqual({ interval_ms: 4 * 858, phase_ms: 2 * 858, slot_ms: 858, burst: 1, gap_ms: 4 * 858 });
    expect(nextSlot(p, 0)).toBe(2 * 858);
    expect(nextSlot(p, 2 * 858)).toBe(2 * 858);
    expect(nextSlot(p, 2 * 858 + 1)).toBe(6 * 858);
    // The next write waits a full interval after the last, even when asked for at once.
    expect(nextSlot(p, 6 * 858 + 5, 6 * 858)).toBe(10 * 858);
  });

  it('gives a leg several slots a round when its lanes publish several writes back to back, 2.5 s apart so the next is ready', () => {
    const b = writeBudget({ limits: [{ max: 8, window_ms: 6000 }], legsAtOnce: 4, lanes: 4, writesPerLane: 3, burst: 2 });
    expect(b.leg_interval_ms).toBe(4 * 2 * 858);
    expect(b.leg_share[0]!.writes).toBeCloseTo((6000 * 2) / (8 * 858), 3);
    // Blocks of at least 3 legs (3 × 858 ms ≥ 2.5 s), the leftover leg joining the last: one block of 4, leg j owning slots j and j + 4.
    const p = legPace(b, 5); // position 1 of 4
    expect(p).toMatchObject({ phase_ms: 858, gap_ms: 4 * 858, burst: 2 });
    expect(nextSlot(p, 0)).toBe(858);
    expect(nextSlot(p, 858, 858)).toBe(5 * 858); // its second slot of the round
    expect(nextSlot(p, 858 + 1)).toBe(5 * 858); // ready just after the first: the second is still its own
    expect(nextSlot(p, 5 * 858 + 1)).toBe(9 * 858); // missed both: the next round's first
    expect(nextSlot(p, 5 * 858, 5 * 858)).toBe(9 * 858); // a third write waits for the next round
    expect(legPace(b, 3)).toMatchObject({ phase_ms: 3 * 858, gap_ms: 4 * 858 });
    expect(renderWriteBudget(b)).toContain("each leg writes at most 2 times (a lane's PR and what follows it) every 7 s");
    // The legs' slots tile the round: no two share one.
    const slots = [0, 1, 2, 3].flatMap((leg) => {
      const q = legPace(b, leg);
      const first = nextSlot(q, 100_000 * 8 * 858);
      return [first, nextSlot(q, first, first)].map((t) => (t / 858) % 8);
    });
    expect(slots.sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it("tiles every round without overlap for any number of legs and writes, at GitHub's pace and the hourly one", () => {
    for (const limits of [GITHUB_WRITE_LIMITS, [{ max: 500, window_ms: 3_600_000 }]]) {
      for (const legs of [1, 2, 3, 5, 64, 100]) {
        for (const burst of [1, 2, 3, 4]) {
          const b = writeBudget({ limits, legsAtOnce: legs, lanes: limits.length > 1 ? legs : 1000, writesPerLane: burst, burst });
          const round = legs * burst;
          const seen = new Set<number>();
          for (let leg = 0; leg < legs; leg++) {
            const q = legPace(b, leg);
            let t = nextSlot(q, 10 * b.leg_interval_ms);
            for (let i = 0; i < burst; i++) {
              const slot = Math.round(t / b.slot_ms) % round;
              expect(seen.has(slot), `legs ${legs}, burst ${burst}: slot ${slot} twice`).toBe(false);
              seen.add(slot);
              t = nextSlot(q, t, t);
            }
            if (burst > 1 && legs >= 3 && b.slot_ms < 2500) expect(q.gap_ms!, `legs ${legs}`).toBeGreaterThanOrEqual(2500);
          }
          expect(seen.size).toBe(round);
        }
      }
    }
  });

  it('names the shard whose slots a later shard of the wave takes over', () => {
    const b = { legs_at_once: 64 };
    expect(predecessorIndex(b, 63)).toBeUndefined();
    expect(predecessorIndex(b, 64)).toBe(0);
    expect(predecessorIndex(b, 200)).toBe(136);
  });

  it("keeps 48 legs that start together, each writing whenever it is ready, under a limit of 8 in 6 s (the emulator's counter refuses none)", () => {
    const limiter = new ContentLimiter([{ max: 8, windowMs: 6000 }]);
    const b = writeBudget({ limits: [{ max: 8, window_ms: 6000 }], legsAtOnce: 48, lanes: 48, writesPerLane: 3 });
    // Deterministic "random" readiness: each leg is ready for a write at an odd time after its last one.
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const writes: number[] = [];
    for (let leg = 0; leg < 48; leg++) {
      const pace: LegPace = legPace(b, leg);
      let now = 1_000_000 + rand() * 3000;
      let last: number | undefined;
      for (let k = 0; k < 3; k++) {
        last = nextSlot(pace, now, last);
        writes.push(last);
        now = last + rand() * 2000;
      }
    }
    writes.sort((x, y) => x - y);
    expect(new Set(writes).size).toBe(writes.length); // no two legs in one slot
    expect(writes.map((t) => limiter.take('fleet', t)).filter((r) => r !== null)).toEqual([]);
    // Without the schedule (each leg writes as soon as it is ready, no more than once per its interval), they are refused.
    const eager = new ContentLimiter([{ max: 8, windowMs: 6000 }]);
    seed = 7;
    const unpaced: number[] = [];
    for (let leg = 0; leg < 48; leg++) {
      let now = 1_000_000 + rand() * 3000;
      for (let k = 0; k < 3; k++) {
        unpaced.push(now);
        now += rand() * 2000;
      }
    }
    unpaced.sort((x, y) => x - y);
    expect(unpaced.map((t) => eager.take('fleet', t)).filter((r) => r !== null).length).toBeGreaterThan(0);
  });
});
