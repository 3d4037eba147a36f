/**
 * When a lane may start (dependencyBlock), read on real repositories through the local forge: a dependency must
 * have completed, and its checkpoint must hold on the forge, whatever its record says; and the run's exit code.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LaneRecord, Manifest } from '../../src/core/model.js';
import { validateFleetFile } from '../../src/core/validate.js';
import type { LaneSpec } from '../../src/core/model.js';
import { LocalForge } from '../../src/local/forge.js';
import { systemClock } from '../../src/ports.js';
import { planStep } from '../../src/steps/plan.js';
import { dependencyBlock } from '../../src/steps/admission.js';
import { exitCodeFor } from '../../src/steps/outcome.js';
import { resumeCheck } from '../../src/steps/drivers/process-resume.js';
import { initManifest } from '../../src/core/manifest.js';
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
  const v = validateFleetFile(
    { name: 'deps', directive: 'stamp', run: 'true', targets: [{ repo: './lib.git' }, { repo: './app.git', depends_on: ['lib'] }] },
    FILE,
  );
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

  it("checkpoint green: locally, the dependency's own checks are its CI", async () => {
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
    expect((await dependencyBlock(app, new Map([['lib', { ...libRec, branch: 'fleet/deps/gone' }]]), specs, forge, 'green', false))?.class).toBe(
      'checkpoint-unmet',
    );
  });

  it("checkpoint merged: the dependency's commit must be in its base branch on the forge", async () => {
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
    const { specs, app, libRec } = await fleetOfTwo();
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

describe('resumeCheck: a fleet file changed since the run that is resumed (issue 11)', () => {
  const manifestOf = (lanes: Array<Partial<LaneRecord> & { lane: string }>, over: Partial<Manifest> = {}): Manifest => {
    const m = initManifest({
      fleet_id: 'fleet-1',
      name: 'f',
      forge: 'local',
      started_at: '2026-12-01T00:00:00Z',
      directive: 'd',
      max_parallel: 4,
      max_retries: 0,
      checkpoint: 'pushed',
      merge_policy: 'never',
      dry_run: false,
      waves: [],
      contention: [],
      excluded: [],
      lanes: lanes.map((l) => ({ repo: `./${l.lane}.git`, lane: l.lane, wave: 0, branch: `fleet/f/${l.lane}`, depends_on: [] })),
      skipped: [],
    });
    const byId = new Map(lanes.map((l) => [l.lane, l]));
    return { ...m, ...over, lanes: m.lanes.map((l) => ({ ...l, ...byId.get(l.lane) })) };
  };
  const input = (lane: Record<string, unknown>) => ({
    fleet_version: '0.1.0',
    fleet: { name: 'f', pr: {} },
    lane: { id: 'x', run: 'true', checks: [], ...lane },
  });
  const check = (previous: Manifest, manifest: Manifest, prev: Record<string, unknown> | null, now: Record<string, unknown>, dryRun = false) =>
    resumeCheck({
      file: FILE,
      previous,
      previousInputs: prev ? { lanes: prev } : null,
      manifest,
      inputs: { lanes: now },
      dryRun,
      previousPath: '/ws/fleet-status.json',
    });

  it('accepts a resume with nothing changed, in silence', () => {
    const prev = manifestOf([{ lane: 'a', status: 'completed', phase: 'pushed', digest: 'sha256:1' }]);
    const now = manifestOf([{ lane: 'a', digest: 'sha256:1' }]);
    expect(check(prev, now, { a: input({}) }, { a: input({}) })).toEqual({ problems: [], notes: [] });
  });

  it('refuses a change to a completed lane, naming the fields; without the inputs file, saying it cannot name them', () => {
    const prev = manifestOf([
      { lane: 'a', status: 'completed', phase: 'pushed', digest: 'sha256:1' },
      { lane: 'b', status: 'completed', phase: 'no-op', digest: 'sha256:2' },
    ]);
    const now = manifestOf([
      { lane: 'a', digest: 'sha256:1b' },
      { lane: 'b', digest: 'sha256:2b' },
    ]);
    const named = check(prev, now, { a: input({}), b: input({}) }, { a: input({ run: 'false', checks: ['x'] }), b: input({ run: 'false', checks: ['x'] }) });
    expect(named.problems).toHaveLength(1);
    expect(named.problems[0]).toMatchObject({ file: FILE, field: '--resume' });
    expect(named.problems[0]!.message).toMatch(
      /^the fleet file changed since run fleet-1: checks, run \(lanes "a", "b"\)\. Those lanes completed in run fleet-1 .* Start a new run without --resume .* --since \/ws\/fleet-status\.json/,
    );
    const unnamed = check(prev, now, null, { a: input({}), b: input({}) });
    expect(unnamed.problems[0]!.message).toContain('fields that decide the result (this workspace has no lane-inputs.json to say which) (lanes "a", "b")');
  });

  it('goes on with notes when only lanes that run again changed, and names new and removed lanes and changed settings', () => {
    const prev = manifestOf(
      [
        { lane: 'a', status: 'completed', phase: 'pushed', digest: 'sha256:1' },
        { lane: 'b', status: 'failed', phase: 'failed', digest: 'sha256:2' },
        { lane: 'gone', status: 'completed', phase: 'pushed', digest: 'sha256:3' },
        // A dry run's lane runs again in a real resume: a change to it is no lie.
        { lane: 'dry', status: 'completed', phase: 'dry-run', digest: 'sha256:4' },
      ],
      { max_retries: 2 },
    );
    const now = manifestOf([
      { lane: 'a', digest: 'sha256:1' },
      { lane: 'b', digest: 'sha256:2b' },
      { lane: 'dry', digest: 'sha256:4b' },
      { lane: 'new', digest: 'sha256:5' },
    ]);
    const out = check(prev, now, { b: input({}), dry: input({}) }, { b: input({ checks: ['npm test'] }), dry: input({ directive: 'other' }) });
    expect(out.problems).toEqual([]);
    expect(out.notes).toEqual([
      'the fleet file changed since run fleet-1 for lanes that run again: checks (lane "b"); directive (lane "dry"); they run with the fleet file as it is now',
      'lane "new" is new since run fleet-1: it runs',
      'lane "gone" of run fleet-1 is no longer in the fleet file: left out of this run\'s manifest (what "gone" pushed stays on the forge); its files are in lanes/<lane>/previous/',
      'max_retries is 0 now, 2 in run fleet-1: the lanes kept from it ran with 2',
    ]);
  });

  it('refuses a dry resume of a run whose lanes pushed, and allows one of a run that pushed nothing', () => {
    const pushed = manifestOf([{ lane: 'a', status: 'completed', phase: 'pushed', digest: 'sha256:1' }]);
    const now = manifestOf([{ lane: 'a', digest: 'sha256:1' }], { dry_run: true });
    expect(check(pushed, now, null, {}, true).problems).toEqual([
      expect.objectContaining({ field: '--dry-run', message: expect.stringMatching(/^run fleet-1 was not a dry run, and lane "a" pushed its change/) }),
    ]);
    const nothing = manifestOf([{ lane: 'a', status: 'failed', phase: 'failed', digest: 'sha256:1' }]);
    expect(check(nothing, now, null, {}, true).problems).toEqual([]);
  });
});
