/** Ready-made CI policies for `emu.setCi(repo, policy)`. */
import type { CheckConclusion, CiContext, CiGate, CiPlan, CiPolicy } from './types.js';

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
  held(policy: CiPolicy, opts?: { until?: 'start' | 'finish' }): HeldCi;
} = {
  /** Every push: each named check succeeds. */
  green: (names: string[] = ['test'], delayMs?: number): CiPlan => checks(names, 'success', delayMs),
  /** Every push: each named check fails. */
  red: (names: string[] = ['test'], delayMs?: number): CiPlan => checks(names, 'failure', delayMs),
  /** The first push of each branch fails, every later push succeeds. */
  flakyOnce:
    (names: string[] = ['test'], delayMs?: number): CiPolicy =>
    (ctx) =>
      checks(names, ctx.pushCount === 1 ? 'failure' : 'success', delayMs),
  /** Fails the first `n` pushes of each branch, then succeeds. */
  failFirst:
    (n: number, names: string[] = ['test'], delayMs?: number): CiPolicy =>
    (ctx) =>
      checks(names, ctx.pushCount <= n ? 'failure' : 'success', delayMs),
  /** Checks that start and never finish. */
  hanging: (names: string[] = ['test']): CiPlan => ({ checks: names.map((name) => ({ name, conclusion: 'success' as const, hang: true })) }),
  /** Only pushes to branches matching `pattern` get `policy`'s checks (e.g. not the default branch). */
  onBranches:
    (pattern: RegExp, policy: CiPolicy): CiPolicy =>
    async (ctx) =>
      pattern.test(ctx.branch) ? (typeof policy === 'function' ? policy(ctx) : policy) : null,
  late: (startDelayMs, policy) => late(startDelayMs, policy),
  /** `policy`, held until the test calls `release()`: CI that starts (or finishes) exactly when the test says. */
  held: (policy, opts) => held(policy, opts?.until ?? 'start'),
};

/** A CI policy held at a gate (`ci.held`): pass it to `emu.setCi`, then `release()` it. */
export type HeldCi = ((ctx: CiContext) => Promise<CiPlan | null | undefined>) & {
  /** Opens the gate: every held check and status starts (or concludes) before this returns; later pushes are not held. */
  release(): void;
  readonly released: boolean;
};

/**
 * `policy` behind a gate: with `until: 'start'` (default) each push's commit has
 * no check run and no status at all until `release()`; with `until: 'finish'`
 * its checks run `in_progress` (statuses `pending`) until `release()`, then
 * conclude. Event-driven, unlike `late`: a test asserts what Fleet does while
 * CI has not reported, then lets it report.
 */
function held(policy: CiPolicy, stage: 'start' | 'finish'): HeldCi {
  let open = false;
  const waiting: Array<() => void> = [];
  const gate: CiGate = {
    get released() {
      return open;
    },
    when(fn) {
      if (open) fn();
      else waiting.push(fn);
    },
  };
  const fn = (async (ctx: CiContext) => {
    const plan = typeof policy === 'function' ? await policy(ctx) : policy;
    return plan ? { ...plan, gate: { stage, gate } } : plan;
  }) as HeldCi;
  Object.defineProperty(fn, 'released', { get: () => open });
  fn.release = () => {
    open = true;
    for (const w of waiting.splice(0)) w();
  };
  return fn;
}

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
