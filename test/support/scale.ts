/**
 * Sizes for the tests that check behaviour at scale (10,000 lanes and the like).
 *
 * Under mutation testing (`npm run mutate`, which sets FLEET_MUTATE) every such test runs once per mutant it
 * covers, with Stryker's instrumentation making each expression slower: at full size the core alone would take
 * hours on two cores. There the same tests run smaller, so they still kill what breaks their invariants;
 * `npm test` always runs them at full size.
 */
export const underMutation = process.env.FLEET_MUTATE !== undefined;

/** `full` in the suite, `small` under mutation testing. */
export function scale(full: number, small: number): number {
  return underMutation ? small : full;
}
