/**
 * The plan step with target discovery, against the local forge on real repositories: what discovery finds is
 * planned with the listed targets, its problems stop the plan, and a forge that cannot discover says so.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateFleetFile, type ResolvedFleet } from '../../src/core/validate.js';
import { LocalForge } from '../../src/local/forge.js';
import { systemClock } from '../../src/ports.js';
import { planStep } from '../../src/steps/plan.js';
import { removeDir, tempDir } from '../integration/helpers.js';

const FILE = 'fleet.yml';
let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-plan-step-');
});
afterEach(() => removeDir(dir));

function githubFleet(extra: Record<string, unknown> = {}): ResolvedFleet {
  const v = validateFleetFile({ name: 'found', directive: 'd', run: 'true', forge: 'github', github: { discover: [{ org: 'acme' }] }, ...extra }, FILE);
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  return v.fleet;
}

describe('planStep with github.discover', () => {
  it('refuses, naming the field and the fix, when the forge it is given cannot discover', async () => {
    const r = await planStep(githubFleet(), new LocalForge({ baseDir: dir }), systemClock, { file: FILE });
    expect(r).toEqual({ ok: false, problems: [{ file: FILE, field: 'github.discover', message: 'this forge cannot discover targets: set forge: github' }] });
  });

  it('stops the plan on every problem discovery reports, each at github.discover', async () => {
    const r = await planStep(githubFleet(), new LocalForge({ baseDir: dir }), systemClock, {
      file: FILE,
      discover: async () => ({ repos: ['acme/a'], problems: ['org acme: 404 Not Found', 'search: rate limited'] }),
    });
    expect(r).toEqual({
      ok: false,
      problems: [
        { file: FILE, field: 'github.discover', message: 'org acme: 404 Not Found' },
        { file: FILE, field: 'github.discover', message: 'search: rate limited' },
      ],
    });
  });

  it('accounts for every target discovery found, and hands discovery the fleet as listed', async () => {
    const fleet = githubFleet();
    let asked: ResolvedFleet | undefined;
    const r = await planStep(fleet, new LocalForge({ baseDir: dir }), systemClock, {
      file: FILE,
      discover: async (f) => ((asked = f), { repos: ['acme/found', 'acme/other'], problems: [] }),
    });
    expect(asked).toBe(fleet);
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    expect(r.fleet.lanes.map((l) => [l.id, l.repo])).toEqual([
      ['found', 'acme/found'],
      ['other', 'acme/other'],
    ]);
    // Not repositories the local forge can reach: excluded with its reason, never silently dropped.
    expect(r.manifest.excluded.map((e) => e.lane)).toEqual(['found', 'other']);
    expect(r.plan.lanes).toEqual([]);
  });
});
