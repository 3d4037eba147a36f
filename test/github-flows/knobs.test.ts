/**
 * The environment knobs for GHES and tests (FLEET_GITHUB_PACING_MS,
 * FLEET_GITHUB_POLL_MS, FLEET_GITHUB_CI_GRACE_MS): a bad value is a set-up
 * problem named by its variable, before anything reaches GitHub.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fleet } from '../integration/helpers.js';
import { startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

describe('GitHub tuning knobs', () => {
  it('a value that is not a whole number of milliseconds stops the run with exit 2, naming the variable', async () => {
    flow = await startFlow();
    await flow.emu.createRepo({ owner: 'acme', name: 'one' });
    const file = flow.fleetFile({ name: 'knobs', directive: 'x', run: 'true', targets: [{ repo: 'acme/one' }] });
    for (const [name, value] of [
      ['FLEET_GITHUB_POLL_MS', '2s'],
      ['FLEET_GITHUB_PACING_MS', '-1'],
      ['FLEET_GITHUB_CI_GRACE_MS', '1.5'],
    ]) {
      const r = await fleet(['plan', file], { cwd: flow.dir, env: { ...flow.env, [name!]: value } });
      expect(r.code, name).toBe(2);
      expect(r.stderr).toContain(`${name} must be a whole number of milliseconds (0 to 3600000), got "${value}"`);
    }
    expect(flow.emu.requests).toEqual([]);
    // With valid values, the plan validates the target on the emulator.
    const ok = await fleet(['plan', file], { cwd: flow.dir, env: flow.env });
    expect(ok.code, ok.stderr).toBe(0);
    expect(flow.emu.count({ kind: 'graphql' })).toBe(1);
  });
});
