import { describe, expect, it } from 'vitest';
import { sweepKey, sweepKeyPrefix } from '../../src/actions/sweep-cache.js';

describe('sweep cache keys', () => {
  it("a fleet's prefix matches its own sweeps' keys and never another fleet's (names may hold '-', never '/')", () => {
    expect(sweepKey('web', 5, 1).startsWith(sweepKeyPrefix('web'))).toBe(true);
    expect(sweepKey('web-legacy', 6, 1).startsWith(sweepKeyPrefix('web'))).toBe(false);
    expect(sweepKey('web', 7, 2)).toBe('fleet-sweep/web/7-2');
  });
});
