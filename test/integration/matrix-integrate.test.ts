/**
 * Wave integration as Actions jobs (issue 9), each job a process with its own workspace and only the artifact store
 * in common: what happens when an integrate job left no record, and how the integration goes on in the next run of
 * a fleet deeper than the workflow's wave jobs. The whole story through the reusable workflow is
 * test/actions-e2e/integrate.test.ts.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FolderArtifactStore } from '../../src/local/artifacts.js';
import { LocalForge } from '../../src/local/forge.js';
import { localExecutor, localWorkspace } from '../../src/local/workspace.js';
import { systemClock } from '../../src/ports.js';
import { loadFleetFile } from '../../src/steps/load.js';
import { matrixContinue, matrixPlan, matrixReport, matrixShard, publishChain, loadPlanBundle } from '../../src/steps/matrix.js';
import { matrixIntegrate } from '../../src/steps/matrix-integrate.js';
import { exitCodeFor } from '../../src/steps/run.js';
import { createRepo, readRemoteFile } from '../support/repos.js';
import { removeDir, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const env = { PATH: process.env.PATH ?? '' };
const jobs = (forge: LocalForge, root: string) => ({ forge, workspace: localWorkspace, exec: localExecutor, clock: systemClock, env, root });

async function setup() {
  await createRepo(dir, 'mono', { 'README.md': '# mono\n' }, { clone: false });
  const file = writeFleetFile(dir, {
    name: 'mi',
    directive: 'Build it.',
    max_retries: 0,
    checks: ['test -f README.md'],
    integrate: {},
    targets: [
      { repo: './mono.git', lane: 'lib', owns: ['lib/**'], run: 'mkdir -p lib && echo v1 > lib/util.txt' },
      { repo: './mono.git', lane: 'svc', owns: ['svc/**'], depends_on: ['lib'], run: 'mkdir -p svc && echo "uses $(cat lib/util.txt)" > svc/main.txt' },
    ],
  });
  const loaded = await loadFleetFile(file);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  return { file, fleet: loaded.fleet, forge: new LocalForge({ baseDir: dir }), store: new FolderArtifactStore(join(dir, 'artifacts')) };
}

describe('integrate jobs', () => {
  it('an integrate job that left no record: the next wave does not start, and the report holds the lanes it should have merged', async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-1', waveJobs: 8 });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    expect(planned.outputs.integrate_jobs).toBe(2);
    await matrixShard({ shard: planned.outputs.waves[0]![0]!, store, ...jobs(forge, join(dir, 'w1')) });
    // integrate-1 died before it uploaded anything: wave 2 must not build on an integration it cannot see.
    const wave2 = await matrixShard({ shard: planned.outputs.waves[1]![0]!, store, ...jobs(forge, join(dir, 'w2')) });
    expect(wave2.map((r) => [r.lane, r.status, r.error?.class])).toEqual([['svc', 'skipped', 'checkpoint-unmet']]);
    expect(wave2[0]!.error!.message).toContain('the integration of wave 1 left no record');
    const m = await matrixReport({ store, root: join(dir, 'rep'), forge, clock: systemClock });
    expect(m.lanes.find((l) => l.lane === 'lib')!.integration).toMatchObject({ state: 'held', reason: expect.stringContaining('the integration of wave 1 left no record') });
    expect(exitCodeFor(m)).toBe(1);
  });

  it('a fleet deeper than the wave jobs: the next run goes on from the integration the last one verified, and cuts the release', async () => {
    const { file, fleet, forge, store } = await setup();
    // One wave job: each wave is a run of its own.
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-2', waveJobs: 1 });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    await matrixShard({ shard: planned.outputs.waves[0]![0]!, store, ...jobs(forge, join(dir, 'w1')) });
    const bundle = await loadPlanBundle(store, join(dir, 'i1'));
    const first = await matrixIntegrate({ bundle, waveJob: 1, store, ...jobs(forge, join(dir, 'i1')) });
    expect(first.lanes).toEqual({ lib: expect.objectContaining({ state: 'merged', wave: 0 }) });
    expect(first.records[0]!.release).toBeNull();
    const report1 = await matrixReport({ bundle, store, root: join(dir, 'rep1'), forge, clock: systemClock });
    expect(report1.integration![0]!.waves.map((x) => x.order)).toEqual([['lib']]);
    await publishChain(store, join(dir, 'rep1'), { fleet: bundle.fleet, manifest: report1, next_wave: 1 }, 1);

    // The next run: its own artifact store; the state comes from the chain.
    const store2 = new FolderArtifactStore(join(dir, 'artifacts-2'));
    const next = await matrixContinue({ previous: store, store: store2, root: join(dir, 'p2'), waveJobs: 1 });
    const [svc] = await matrixShard({ shard: next.outputs.waves[0]![0]!, store: store2, ...jobs(forge, join(dir, 'w2')) });
    expect(svc).toMatchObject({ status: 'completed', base_branch: 'fleet/mi/_integration' });
    expect(await readRemoteFile(join(dir, 'mono.git'), 'fleet/mi/svc', 'svc/main.txt')).toBe('uses v1\n');
    const bundle2 = await loadPlanBundle(store2, join(dir, 'i2'));
    const last = await matrixIntegrate({ bundle: bundle2, waveJob: 1, store: store2, ...jobs(forge, join(dir, 'i2')) });
    expect(last.records[0]!.waves.map((x) => x.order)).toEqual([['lib'], ['svc']]);
    expect(last.records[0]!.release).toMatchObject({ branch: 'fleet/mi/_release', ok: true });
    expect(await readRemoteFile(join(dir, 'mono.git'), 'fleet/mi/_release', 'svc/main.txt')).toBe('uses v1\n');
    const m = await matrixReport({ bundle: bundle2, store: store2, root: join(dir, 'rep2'), forge, clock: systemClock });
    expect(m.lanes.map((l) => [l.lane, l.status, l.integration?.state])).toEqual([
      ['lib', 'completed', 'merged'],
      ['svc', 'completed', 'merged'],
    ]);
    expect(m.integration![0]!.release?.commit).toBe(last.records[0]!.head);
    expect(exitCodeFor(m)).toBe(0);
  });

  it('an incremental sweep: a wave whose lanes are all unchanged has no leg, but its integrate job runs and the next wave starts from the integration', async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-3', waveJobs: 8 });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    const bundle = await loadPlanBundle(store, join(dir, 'b1'));
    for (const [i, shards] of planned.outputs.waves.entries()) {
      for (const shard of shards) await matrixShard({ shard, store, ...jobs(forge, join(dir, `w${i}-${shard}`)) });
      if (i < planned.outputs.integrate_jobs) await matrixIntegrate({ bundle, waveJob: i + 1, store, ...jobs(forge, join(dir, `i${i}`)) });
    }
    const swept = await matrixReport({ bundle, store, root: join(dir, 'rep1'), forge, clock: systemClock });
    expect(exitCodeFor(swept)).toBe(0);

    // The next sweep, with svc's directive changed: lib is unchanged, so wave 1 has no shard; svc runs.
    const store2 = new FolderArtifactStore(join(dir, 'artifacts-2'));
    const changed = { ...fleet, lanes: fleet.lanes.map((l) => (l.id === 'svc' ? { ...l, run: l.run!.replace('"uses', '"now uses') } : l)) };
    const next = await matrixPlan({ fleet: changed, file, forge, clock: systemClock, store: store2, root: join(dir, 'p2'), fleet_id: 'fleet-run-4', waveJobs: 8, since: swept });
    if (!next.ok) throw new Error(JSON.stringify(next.problems));
    expect(next.outputs.waves[0]).toEqual([]);
    expect(next.outputs.integrate_jobs).toBe(2);
    const bundle2 = await loadPlanBundle(store2, join(dir, 'b2'));
    const first = await matrixIntegrate({ bundle: bundle2, waveJob: 1, store: store2, ...jobs(forge, join(dir, 'j0')) });
    expect(first.lanes.lib).toMatchObject({ state: 'merged', reason: 'already in the integration branch' });
    const [svc] = await matrixShard({ shard: next.outputs.waves[1]![0]!, store: store2, ...jobs(forge, join(dir, 'v1')) });
    expect(svc).toMatchObject({ status: 'completed', base_branch: 'fleet/mi/_integration' });
    await matrixIntegrate({ bundle: bundle2, waveJob: 2, store: store2, ...jobs(forge, join(dir, 'j1')) });
    expect(await readRemoteFile(join(dir, 'mono.git'), 'fleet/mi/_release', 'svc/main.txt')).toBe('now uses v1\n');
    const m = await matrixReport({ bundle: bundle2, store: store2, root: join(dir, 'rep2'), forge, clock: systemClock });
    expect(m.lanes.map((l) => [l.lane, l.status, l.integration?.state])).toEqual([
      ['lib', 'unchanged', 'merged'],
      ['svc', 'completed', 'merged'],
    ]);
  });
});
