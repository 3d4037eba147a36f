/** Ready-made CI policies for `emu.setCi(repo, policy)`. */
import type { CheckConclusion, CiPlan, CiPolicy } from './types.js';

const checks = (names: string[], conclusion: CheckConclusion, delayMs?: number): CiPlan => ({
  checks: names.map((name) => ({ name, conclusion })),
  ...(delayMs !== undefined ? { delayMs } : {}),
});

export const ci = {
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
};
