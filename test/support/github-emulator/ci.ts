/** Ready-made CI policies for `emu.setCi(repo, policy)`. */
import type { CheckConclusion, CiPlan, CiPolicy } from './types.js';

const checks = (names: string[], conclusion: CheckConclusion, delayMs?: number): CiPlan => ({
  checks: names.map((name) => ({ name, conclusion })),
  ...(delayMs !== undefined ? { delayMs } : {}),
});

export const ci: {
  green(names?: string[], delayMs?: number): CiPlan;
  red(names?: string[], delayMs?: number): CiPlan;
  flakyOnce(names?: string[], delayMs?: number): CiPolicy;
  failFirst(n: number, names?: string[], delayMs?: number): CiPolicy;
  hanging(names?: string[]): CiPlan;
  onBranches(pattern: RegExp, policy: CiPolicy): CiPolicy;
  late(startDelayMs: number, policy: CiPolicy): CiPolicy;
} = {
  /** Every push: each named check succeeds. */
  green: (names: string[] = ['test'], delayMs?: number): CiPlan => checks(names, 'success', delayMs),
  /** Every push: each named check fails. */
  red: (names: string[] = ['test'], delayMs?: number): CiPlan => checks(names, 'failure', delayMs),
  /** The first push of each branch fails, every later push succeeds. */
  flakyOnce: (names: string[] = ['test'], delayMs?: number): CiPolicy => (ctx) => checks(names, ctx.pushCount === 1 ? 'failure' : 'success', delayMs),
  /** Fails the first `n` pushes of each branch, then succeeds. */
  failFirst: (n: number, names: string[] = ['test'], delayMs?: number): CiPolicy => (ctx) => checks(names, ctx.pushCount <= n ? 'failure' : 'success', delayMs),
  /** Checks that start and never finish. */
  hanging: (names: string[] = ['test']): CiPlan => ({ checks: names.map((name) => ({ name, conclusion: 'success' as const, hang: true })) }),
  /** Only pushes to branches matching `pattern` get `policy`'s checks (e.g. not the default branch). */
  onBranches: (pattern: RegExp, policy: CiPolicy): CiPolicy => async (ctx) => (pattern.test(ctx.branch) ? (typeof policy === 'function' ? policy(ctx) : policy) : null),
  late: (startDelayMs, policy) => late(startDelayMs, policy),
};

/**
 * `policy`, started late: for `startDelayMs` after each push its commit has no
 * check run and no status at all (a queued workflow, a busy runner), then the
 * checks appear and run as `policy` says.
 */
export function late(startDelayMs: number, policy: CiPolicy): CiPolicy {
  return async (ctx) => {
    const plan = typeof policy === 'function' ? await policy(ctx) : policy;
    return plan ? { ...plan, startDelayMs } : plan;
  };
}
