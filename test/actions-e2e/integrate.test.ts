/**
 * Wave integration through the reusable workflow (issue 9): eight lanes of one repository over three wave jobs, each
 * followed by its integrate job, which merges the wave's lanes into the integration branch one at a time. The legs of
 * the next wave job start from the integration and skip a lane whose dependency was held; the integrate job after the
 * last wave cuts the release branch and opens the one PR; the report job puts the integration in the manifest. The
 * same fleet as the local runner's test (test/integration/integrate.test.ts), so both runners are held to one story.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../support/actions-runner/index.js';
import { readRemoteFile, remoteBranches } from '../support/repos.js';
import { artifactsOf, dispatchFleet, explain, reportArtifact, startWorld, type World } from './world.js';
import type { Manifest } from '../../src/core/model.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 400_000 });

const w8 = (path: string, text: string) => `mkdir -p "$(dirname ${path})" && printf '%s\\n' "${text}" > ${path}`;

const FLEET = {
  name: 'int',
  forge: 'github',
  directive: 'Build the feature.',
  run: 'true',
  checks: ['test -f README.md'],
  max_retries: 0,
  max_parallel: 4,
  integrate: { seam_checks: ['! grep -rq INCOMPATIBLE src/cli'] },
  targets: [
    // Wave 1: api and ui share src/routes.txt but a soft edge lets them run side by side; their merges conflict.
    { repo: 'acme/mono', lane: 'api', owns: ['src/api/**', 'src/routes.txt'], run: `${w8('src/api/index.txt', 'api')} && echo api >> src/routes.txt` },
    {
      repo: 'acme/mono',
      lane: 'ui',
      owns: ['src/ui/**', 'src/routes.txt'],
      soft_depends_on: ['api'],
      run: `${w8('src/ui/index.txt', 'ui')} && echo ui >> src/routes.txt`,
    },
    { repo: 'acme/mono', lane: 'docs', owns: ['docs/**'], run: w8('docs/guide.md', 'guide') },
    { repo: 'acme/mono', lane: 'lib', owns: ['src/lib/**'], run: w8('src/lib/util.txt', 'v1') },
    // Wave 2: svc builds on lib (it reads lib's file from the integration); cli's seam with svc fails; widget waits for ui.
    {
      repo: 'acme/mono',
      lane: 'svc',
      owns: ['src/svc/**'],
      depends_on: ['lib'],
      run: 'mkdir -p src/svc && echo "uses $(cat src/lib/util.txt)" > src/svc/main.txt',
    },
    { repo: 'acme/mono', lane: 'cli', owns: ['src/cli/**'], depends_on: ['lib'], soft_depends_on: ['svc'], run: w8('src/cli/main.txt', 'INCOMPATIBLE') },
    { repo: 'acme/mono', lane: 'widget', owns: ['src/widget/**'], depends_on: ['ui'], run: w8('src/widget/w.txt', 'w') },
    // Wave 3: app builds on svc.
    { repo: 'acme/mono', lane: 'app', owns: ['src/app/**'], depends_on: ['svc'], run: 'mkdir -p src/app && cp src/svc/main.txt src/app/main.txt' },
  ],
};

let w: World;
let runId: number;
let s: RunSummary;
let m: Manifest;
let report: string;

beforeAll(async () => {
  w = await startWorld({ fleetFile: FLEET });
  await w.emu.createRepo({ owner: 'acme', name: 'mono', files: { 'README.md': '# mono\n', 'src/routes.txt': 'home\n' } });
  ({ runId, s } = await dispatchFleet(w, { directive: 'Build the feature.' }));
  ({ manifest: m, report } = reportArtifact(w, runId));
});
afterAll(async () => {
  await w?.close();
});

const lane = (id: string) => m.lanes.find((l) => l.lane === id)!;
const remote = () => join(w.emu.reposDir, 'acme/mono.git');

describe('wave integration through the reusable workflow', () => {
  it('runs an integrate job after each wave job that had lanes, and none after the empty ones', () => {
    const integrateJobs = s.jobs.filter((j) => j.name.startsWith('fleet / integrate wave'));
    expect(
      integrateJobs.map((j) => [j.name, j.conclusion]),
      explain(s),
    ).toEqual([
      ['fleet / integrate wave 1', 'success'],
      ['fleet / integrate wave 2', 'success'],
      ['fleet / integrate wave 3', 'success'],
    ]);
    expect(
      w.emu
        .workflowRun(runId)!
        .jobs.filter((j) => j.name === 'fleet / integrate wave 4')
        .map((j) => j.conclusion),
    ).toEqual(['skipped']);
    // Each integrate job leaves its record, cumulative, for the legs after it and the report.
    expect([...artifactsOf(w, runId).keys()].filter((n) => n.startsWith('fleet-integration-')).sort()).toEqual([
      'fleet-integration-w0.a1',
      'fleet-integration-w1.a1',
      'fleet-integration-w2.a1',
    ]);
    expect(s.jobs.find((j) => j.name === 'fleet / integrate wave 2')!.summary).toContain('## Fleet integration after wave 2');
  });

  it('merges wave by wave, holds a conflict and a failed seam, and later waves build on the integration', async () => {
    expect(m.waves.map((x) => x.lanes)).toEqual([['api', 'docs', 'lib', 'ui'], ['cli', 'svc', 'widget'], ['app']]);
    const integ = m.integration![0]!;
    expect(integ.branch).toBe('fleet/int/_integration');
    expect(integ.waves[0]).toMatchObject({ wave: 0, order: ['api', 'docs', 'lib'], held: [{ lane: 'ui', conflicts: ['src/routes.txt'] }] });
    expect(lane('ui').integration).toMatchObject({ state: 'held', conflicts: ['src/routes.txt'] });
    // The leg of wave 2 read the record of wave 1's integration: widget's dependency was held.
    expect(lane('widget')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    expect(lane('widget').error!.message).toContain('dependency "ui" is held out of the integration');
    expect(integ.waves[1]!.order).toEqual(['svc']);
    expect(integ.waves[1]!.held).toEqual([
      { lane: 'cli', conflicts: [], reason: expect.stringContaining('the seam with svc fails `! grep -rq INCOMPATIBLE src/cli`') },
    ]);
    expect(integ.waves[2]!.order).toEqual(['app']);
    expect(lane('app').integration).toMatchObject({ state: 'merged', wave: 2 });
    // svc started from the integration (lib's file was there), and app from svc's.
    expect(lane('svc').base_branch).toBe('fleet/int/_integration');
    expect(await readRemoteFile(remote(), 'fleet/int/svc', 'src/svc/main.txt')).toBe('uses v1\n');
    expect(await readRemoteFile(remote(), 'fleet/int/app', 'src/app/main.txt')).toBe('uses v1\n');
    expect(report).toContain('- Wave 1: merged `api` → `docs` → `lib`; held `ui`: merging it into fleet/int/\\_integration conflicts in src/routes.txt.');
  });

  it('ends with the release branch through the global gate and one PR for the whole fleet; the held lanes fail the run', async () => {
    const integ = m.integration![0]!;
    expect(integ.release).toMatchObject({ branch: 'fleet/int/_release', ok: true, gate: [{ check: 'test -f README.md', ok: true }] });
    expect(integ.release!.commit).toBe(integ.head);
    expect(await remoteBranches(remote())).toEqual(expect.arrayContaining(['fleet/int/_integration', 'fleet/int/_release']));
    // Integrated lanes open no PR of their own: one PR carries the fleet, with a section per integrated lane.
    const prs = w.emu.pullRequests('acme/mono');
    expect(prs.map((p) => [p.headRef, p.draft])).toEqual([['fleet/int/_release', false]]);
    for (const id of ['api', 'docs', 'lib', 'svc', 'app']) expect(prs[0]!.body).toContain(`### \`${id}\``);
    expect(prs[0]!.body).toContain('**Held out** (2)');
    expect(integ.release!.pr_number).toBe(prs[0]!.number);
    expect(report).toMatch(/- Release `fleet\/int\/_release` at `[0-9a-f]{12}`: global seam gate passed/);
    // A held lane is an outcome, not a crash of the integrate job: the report job fails the run for it (exit 1).
    expect(m.summary).toMatchObject({ completed: 7, skipped: 1 });
    expect(s.jobs.find((j) => j.name === 'fleet / report')!.conclusion).toBe('failure');
  });
});
