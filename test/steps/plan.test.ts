/**
 * The plan step with target discovery, against the local forge on real repositories: what discovery finds is
 * planned with the listed targets, its problems stop the plan, and a forge that cannot discover says so.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateFleetFile, type ResolvedFleet } from '../../src/core/validate.js';
import { LocalForge } from '../../src/local/forge.js';
import { systemClock } from '../../src/ports.js';
import { fleetIdFor, planStep } from '../../src/steps/plan.js';
import { createRepo } from '../support/repos.js';
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

describe('fleetIdFor', () => {
  it('is fleet-YYYYMMDD-HHMMSS-<random> in UTC, every field padded to two digits', () => {
    expect(fleetIdFor(new Date('2026-01-02T03:04:05.600Z'), 'a1b2c3')).toBe('fleet-20260102-030405-a1b2c3');
    expect(fleetIdFor(new Date('2026-12-31T23:59:58Z'), 'ffffff')).toBe('fleet-20261231-235958-ffffff');
  });
});

describe('planStep on local repositories', () => {
  const clock = { now: () => new Date('2026-03-04T05:06:07.000Z') };

  function localFleet(spec: Record<string, unknown>): ResolvedFleet {
    const v = validateFleetFile({ name: 'steps', directive: 'Do the thing.', run: 'true', ...spec }, FILE);
    if (!v.ok) throw new Error(JSON.stringify(v.problems));
    return v.fleet;
  }

  it('makes the manifest of the fleet: its settings, each lane with its wave, branch and dependencies', async () => {
    await createRepo(dir, 'core', { 'README.md': '# core\n' }, { clone: false });
    await createRepo(dir, 'api', { 'README.md': '# api\n' }, { clone: false, branch: 'trunk' });
    const fleet = localFleet({
      max_parallel: 3,
      max_retries: 1,
      checkpoint: 'green',
      merge: { policy: 'when-green' },
      targets: [{ repo: './core.git' }, { repo: './api.git', depends_on: ['core'] }],
    });
    const r = await planStep(fleet, new LocalForge({ baseDir: dir }), clock, { file: FILE, fleet_id: 'fleet-given' });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    const m = r.manifest;
    expect(m).toMatchObject({
      fleet_id: 'fleet-given',
      name: 'steps',
      forge: 'local',
      started_at: '2026-03-04T05:06:07.000Z',
      directive: 'Do the thing.',
      max_parallel: 3,
      max_retries: 1,
      checkpoint: 'green',
      merge_policy: 'when-green',
      dry_run: false,
    });
    expect(m.lanes.map((l) => [l.lane, l.wave, l.branch, l.depends_on, l.status])).toEqual([
      ['core', 0, 'fleet/steps/core', [], 'queued'],
      ['api', 1, 'fleet/steps/api', ['core'], 'queued'],
    ]);
    // Each lane starts from its repository's default branch.
    expect([...r.base_branches]).toEqual([
      ['core', 'main'],
      ['api', 'trunk'],
    ]);
    expect(r.plan.waves).toHaveLength(2);
  });

  it('takes --max-parallel and --dry-run over the file, and names a fleet from the clock when not told', async () => {
    await createRepo(dir, 'core', { 'README.md': '# core\n' }, { clone: false });
    const r = await planStep(localFleet({ targets: [{ repo: './core.git' }] }), new LocalForge({ baseDir: dir }), clock, {
      file: FILE,
      maxParallel: 5,
      dryRun: true,
    });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    expect(r.manifest).toMatchObject({ max_parallel: 5, dry_run: true });
    expect(r.manifest.fleet_id).toMatch(/^fleet-20260304-050607-[0-9a-f]{6}$/);
  });

  it("checks each repository and base once, and excludes each lane of one that fails with the forge's reason", async () => {
    await createRepo(dir, 'mono', { 'web/a': 'a\n', 'api/b': 'b\n' }, { clone: false });
    const fleet = localFleet({
      missing_targets: 'exclude',
      targets: [
        { repo: './mono.git', lane: 'web', owns: ['web/**'] },
        { repo: './mono.git', lane: 'api', owns: ['api/**'] },
        { repo: './mono.git', lane: 'old', owns: ['old/**'], base: 'legacy' },
        { repo: './gone.git', lane: 'gone' },
        { repo: './gone.git', lane: 'gone-too', owns: ['x/**'] },
      ],
    });
    const r = await planStep(fleet, new LocalForge({ baseDir: dir }), clock, { file: FILE });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    expect(r.plan.lanes.map((l) => l.spec.id).sort()).toEqual(['api', 'web']);
    expect(Object.fromEntries(r.base_branches)).toEqual({ web: 'main', api: 'main' });
    const excluded = Object.fromEntries(r.manifest.excluded.map((e) => [e.lane, [e.reason, e.detail]]));
    expect(Object.keys(excluded).sort()).toEqual(['gone', 'gone-too', 'old']);
    expect(excluded.old![0]).toBe('no-base-branch');
    expect(excluded.old![1]).toContain('has no branch legacy');
    expect(excluded.gone![0]).toBe(excluded['gone-too']![0]);
    expect(excluded.gone![1]).toBe(excluded['gone-too']![1]);
    expect(excluded.gone![1]).toContain('gone.git');
  });

  it('does not ask the forge about a target the file excludes, and skips its dependents naming their dependencies', async () => {
    await createRepo(dir, 'core', { 'README.md': '# core\n' }, { clone: false });
    // Its repository is there: had it been checked, it would have a base branch.
    await createRepo(dir, 'legacy', { 'README.md': '# legacy\n' }, { clone: false });
    const fleet = localFleet({
      targets: [{ repo: './legacy.git' }, { repo: './core.git', depends_on: ['legacy'] }],
      exclude: [{ repo: './legacy.git', reason: 'frozen until Q3' }],
    });
    const r = await planStep(fleet, new LocalForge({ baseDir: dir }), clock, { file: FILE });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    expect(r.manifest.excluded).toEqual([expect.objectContaining({ lane: 'legacy', reason: 'frozen until Q3' })]);
    const core = r.manifest.lanes.find((l) => l.lane === 'core')!;
    expect(core).toMatchObject({ status: 'skipped', depends_on: ['legacy'] });
    expect(r.base_branches.has('legacy')).toBe(false);
  });

  it('refuses a lane whose branch is its base branch, at `branch` or at the lane when the template names the fleet', async () => {
    await createRepo(dir, 'svc', { 'README.md': '# svc\n' }, { clone: false, branch: 'steps-main' });
    const plain = await planStep(
      localFleet({ branch: '{lane}', targets: [{ repo: './svc.git', lane: 'steps-main' }] }),
      new LocalForge({ baseDir: dir }),
      clock,
      { file: FILE },
    );
    expect(plain).toEqual({
      ok: false,
      problems: [
        {
          file: FILE,
          field: 'branch',
          message:
            'lane "steps-main" would work on branch "steps-main", which is the base branch of ./svc.git: Fleet never commits straight onto a base branch; change `branch:` or the lane id',
        },
      ],
    });
    const named = await planStep(
      localFleet({ branch: '{name}-{lane}', targets: [{ repo: './other.git' }, { repo: './svc.git', lane: 'main' }] }),
      new LocalForge({ baseDir: dir }),
      clock,
      { file: FILE },
    );
    expect(named.ok).toBe(false);
    if (named.ok) return;
    // ./other.git is not there either: both problems at once (issue 27).
    expect(named.problems.map((p) => p.field)).toEqual(['targets[0].repo', 'targets[1].lane']);
  });

  it("reports the planner's problems and the base-branch ones together", async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false, branch: 'a' });
    await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const fleet = localFleet({ branch: '{lane}', max_waves: 1, targets: [{ repo: './a.git' }, { repo: './b.git', depends_on: ['a'] }] });
    const r = await planStep(fleet, new LocalForge({ baseDir: dir }), clock, { file: FILE });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.field)).toEqual(['max_waves', 'branch']);
  });
});
