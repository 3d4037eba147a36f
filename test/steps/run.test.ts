/**
 * When a lane may start (dependencyBlock), read on real repositories through the local forge: a dependency must
 * have completed, and its checkpoint must hold on the forge, whatever its record says; and the run's exit code.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LaneRecord, Manifest } from '../../src/core/model.js';
import { validateFleetFile, type LaneSpec } from '../../src/core/validate.js';
import { LocalForge } from '../../src/local/forge.js';
import { systemClock } from '../../src/ports.js';
import { planStep } from '../../src/steps/plan.js';
import { dependencyBlock, exitCodeFor } from '../../src/steps/run.js';
import { commitToRemote, createRepo } from '../support/repos.js';
import { removeDir, tempDir } from '../integration/helpers.js';

const FILE = 'fleet.yml';
let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-run-step-');
});
afterEach(() => removeDir(dir));

/**
 * Lanes lib and app (app depends on lib) on two repositories; lib pushed a commit to its branch. Returns the specs,
 * lib's record as completed and pushed, and the forge.
 */
async function fleetOfTwo() {
  const lib = await createRepo(dir, 'lib', { 'README.md': '# lib\n' }, { clone: false });
  await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
  const commit = await commitToRemote(lib.remote, 'fleet/deps/lib', { 'README.md': '# lib, stamped\n' }, { from: lib.commit });
  const v = validateFleetFile({ name: 'deps', directive: 'stamp', run: 'true', targets: [{ repo: './lib.git' }, { repo: './app.git', depends_on: ['lib'] }] }, FILE);
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const forge = new LocalForge({ baseDir: dir });
  const planned = await planStep(v.fleet, forge, systemClock, { file: FILE });
  if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
  const specs = new Map(planned.fleet.lanes.map((l) => [l.id, l]));
  const libRec: LaneRecord = {
    ...planned.manifest.lanes.find((l) => l.lane === 'lib')!,
    status: 'completed',
    phase: 'pushed',
    base_branch: 'main',
    base_commit: lib.commit,
    commit,
    changed_files: ['README.md'],
    ci_conclusion: 'none',
  };
  return { lib, commit, forge, specs, app: specs.get('app')!, libRec };
}

describe('dependencyBlock', () => {
  it('lets a lane start when its dependency completed and its branch is where it said on the forge', async () => {
    const { forge, specs, app, libRec } = await fleetOfTwo();
    expect(await dependencyBlock(app, new Map([['lib', libRec]]), specs, forge, 'pushed', false)).toBeUndefined();
  });

  it('a dependency with no record, or one still running: checkpoint-unmet', async () => {
    const { forge, specs, app, libRec } = await fleetOfTwo();
    const want = { class: 'checkpoint-unmet', message: 'dependency "lib" had not finished when this lane\'s wave started' };
    expect(await dependencyBlock(app, new Map(), specs, forge, 'pushed', false)).toEqual(want);
    expect(await dependencyBlock(app, new Map([['lib', { ...libRec, status: 'running' as const }]]), specs, forge, 'pushed', false)).toEqual(want);
  });

  it('a dependency that failed or was skipped: dependency-failed, with its error class when it has one', async () => {
    const { forge, specs, app, libRec } = await fleetOfTwo();
    const failed = { ...libRec, status: 'failed' as const, phase: 'failed' as const, error: { class: 'check-failed' as const, message: 'x' } };
    expect(await dependencyBlock(app, new Map([['lib', failed]]), specs, forge, 'pushed', false)).toEqual({
      class: 'dependency-failed',
      message: 'dependency "lib" failed (check-failed); this lane was not run against a missing checkpoint',
    });
    const skipped = { ...libRec, status: 'skipped' as const, phase: 'skipped' as const, error: null };
    expect((await dependencyBlock(app, new Map([['lib', skipped]]), specs, forge, 'pushed', false))?.message).toBe(
      'dependency "lib" skipped; this lane was not run against a missing checkpoint',
    );
  });

  it('a branch that moved on the forge, or is gone: checkpoint-unmet, naming both commits', async () => {
    const { lib, forge, specs, app, libRec, commit } = await fleetOfTwo();
    const moved = await commitToRemote(lib.remote, 'fleet/deps/lib', { 'OTHER.md': 'x\n' });
    expect(await dependencyBlock(app, new Map([['lib', libRec]]), specs, forge, 'pushed', false)).toEqual({
      class: 'checkpoint-unmet',
      message: `dependency "lib": fleet/deps/lib is at ${moved.slice(0, 12)} on the forge, not ${commit.slice(0, 12)}`,
    });
    const gone = { ...libRec, branch: 'fleet/deps/gone' };
    expect((await dependencyBlock(app, new Map([['lib', gone]]), specs, forge, 'pushed', false))?.message).toBe(
      `dependency "lib": fleet/deps/gone is at nothing on the forge, not ${commit.slice(0, 12)}`,
    );
  });

  it('a dependency that changed nothing, or a dry run, is not looked for on the forge', async () => {
    const { forge, specs, app, libRec } = await fleetOfTwo();
    const gone = { ...libRec, branch: 'fleet/deps/gone' };
    expect(await dependencyBlock(app, new Map([['lib', { ...gone, phase: 'no-op' as const }]]), specs, forge, 'pushed', false)).toBeUndefined();
    expect(await dependencyBlock(app, new Map([['lib', gone]]), specs, forge, 'pushed', true)).toBeUndefined();
    expect(await dependencyBlock(app, new Map([['lib', gone]]), specs, forge, 'merged', true)).toBeUndefined();
  });

  it('checkpoint pushed does not look at CI', async () => {
    const { forge, specs, app, libRec } = await fleetOfTwo();
    expect(await dependencyBlock(app, new Map([['lib', { ...libRec, ci_conclusion: 'failure' }]]), specs, forge, 'pushed', false)).toBeUndefined();
  });

  it('checkpoint green: locally, the dependency\'s own checks are its CI', async () => {
    const { forge, specs, app, libRec } = await fleetOfTwo();
    for (const ci of ['success', 'none'] as const) {
      expect(await dependencyBlock(app, new Map([['lib', { ...libRec, ci_conclusion: ci }]]), specs, forge, 'green', false)).toBeUndefined();
    }
    expect(await dependencyBlock(app, new Map([['lib', { ...libRec, ci_conclusion: 'failure' }]]), specs, forge, 'green', false)).toEqual({
      class: 'checkpoint-unmet',
      message: 'dependency "lib" CI is failure (checkpoint: green)',
    });
    expect((await dependencyBlock(app, new Map([['lib', { ...libRec, ci_conclusion: null }]]), specs, forge, 'green', false))?.message).toBe(
      'dependency "lib" CI is unknown (checkpoint: green)',
    );
    // Green CI does not excuse a branch that moved.
    expect((await dependencyBlock(app, new Map([['lib', { ...libRec, branch: 'fleet/deps/gone' }]]), specs, forge, 'green', false))?.class).toBe('checkpoint-unmet');
  });

  it('checkpoint merged: the dependency\'s commit must be in its base branch on the forge', async () => {
    const { lib, forge, specs, app, libRec, commit } = await fleetOfTwo();
    expect(await dependencyBlock(app, new Map([['lib', libRec]]), specs, forge, 'merged', false)).toEqual({
      class: 'checkpoint-unmet',
      message: 'dependency "lib" is not merged (checkpoint: merged)',
    });
    // Merged (main fast-forwarded to the lane's commit, then moved on): the lane may start, wherever the lane branch is now.
    await commitToRemote(lib.remote, 'main', { 'LATER.md': 'x\n' }, { from: commit });
    expect(await dependencyBlock(app, new Map([['lib', { ...libRec, branch: 'fleet/deps/deleted' }]]), specs, forge, 'merged', false)).toBeUndefined();
  });

  it('a forge that cannot be asked: checkpoint-unmet, saying what it was asked', async () => {
    const { forge, specs, app, libRec } = await fleetOfTwo();
    // A GitHub name on a local forge without --repos-root: the forge cannot find the repository to ask.
    const lost = new Map(specs);
    lost.set('lib', { ...specs.get('lib')!, repo: 'acme/lib', repo_kind: 'github' });
    const branch = await dependencyBlock(app, new Map([['lib', libRec]]), lost, new LocalForge({ baseDir: dir }), 'pushed', false);
    expect(branch?.class).toBe('checkpoint-unmet');
    expect(branch?.message).toMatch(/^dependency "lib": the forge could not be asked where fleet\/deps\/lib is \(acme\/lib: .+\)$/);
    const merged = await dependencyBlock(app, new Map([['lib', libRec]]), lost, new LocalForge({ baseDir: dir }), 'merged', false);
    expect(merged?.message).toMatch(/^dependency "lib": the forge could not be asked whether it is merged \(/);
  });

  it('looks at every dependency: the first that blocks is the reason', async () => {
    const { forge, specs, libRec } = await fleetOfTwo();
    const both: LaneSpec = { ...specs.get('app')!, depends_on: ['lib', 'other'] };
    expect((await dependencyBlock(both, new Map([['lib', libRec]]), specs, forge, 'pushed', false))?.message).toBe(
      'dependency "other" had not finished when this lane\'s wave started',
    );
  });
});

describe('exitCodeFor', () => {
  const lanes = (...statuses: LaneRecord['status'][]) => ({ lanes: statuses.map((status) => ({ status })) }) as unknown as Manifest;

  it('0 when every lane completed or was excluded; 1 when any failed or was skipped', () => {
    expect(exitCodeFor(lanes())).toBe(0);
    expect(exitCodeFor(lanes('completed', 'excluded'))).toBe(0);
    expect(exitCodeFor(lanes('completed', 'failed'))).toBe(1);
    expect(exitCodeFor(lanes('skipped', 'completed'))).toBe(1);
  });

  it('2 when the fleet had targets and every one was excluded: no lane ran (issue 11); none at all is 0', () => {
    expect(exitCodeFor(lanes('excluded', 'excluded'))).toBe(2);
    expect(exitCodeFor(lanes())).toBe(0);
  });
});
