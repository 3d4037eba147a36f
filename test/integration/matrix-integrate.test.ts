/**
 * Wave integration as Actions jobs (issue 9), each job a process with its own workspace and only the artifact store
 * in common: what happens when an integrate job left no record, and how the integration goes on in the next run of
 * a fleet deeper than the workflow's wave jobs. The whole story through the reusable workflow is
 * test/actions-e2e/integrate.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FolderArtifactStore } from '../../src/local/artifacts.js';
import { LocalForge } from '../../src/local/forge.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock } from '../../src/ports.js';
import { loadFleetFile } from '../../src/steps/load.js';
import { matrixContinue, matrixPlan, matrixReport, matrixShard, publishChain } from '../../src/steps/drivers/matrix.js';
import { loadPlanBundle } from '../../src/steps/drivers/matrix-artifacts.js';
import { matrixIntegrate } from '../../src/steps/drivers/matrix-integrate.js';
import { exitCodeFor } from '../../src/steps/outcome.js';
import { commitToRemote, createRepo, readRemoteFile } from '../support/repos.js';
import { removeDir, tempDir, writeFleetFile } from './helpers.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

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
    expect(m.lanes.find((l) => l.lane === 'lib')!.integration).toMatchObject({
      state: 'held',
      reason: expect.stringContaining('the integration of wave 1 left no record'),
    });
    expect(exitCodeFor(m)).toBe(1);
  });

  it("a record that names another branch is not this fleet's: the next wave does not start from it", async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-5', waveJobs: 8 });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    await matrixShard({ shard: planned.outputs.waves[0]![0]!, store, ...jobs(forge, join(dir, 'w1')) });
    // Shaped like the integrate job's record, with main as "the integration": svc would build on (and claim) main.
    const forged = {
      fleet_id: 'fleet-run-5',
      wave: 0,
      records: [{ repo: './mono.git', branch: 'main', base_branch: 'main', base_commit: 'a'.repeat(40), head: 'b'.repeat(40), waves: [], release: null }],
      lanes: {},
    };
    mkdirSync(join(dir, 'forged', 'integration'), { recursive: true });
    writeFileSync(join(dir, 'forged', 'integration', 'w0.json'), JSON.stringify(forged));
    await store.upload('fleet-integration-w0.a1', [join(dir, 'forged', 'integration', 'w0.json')], join(dir, 'forged'));
    const wave2 = await matrixShard({ shard: planned.outputs.waves[1]![0]!, store, ...jobs(forge, join(dir, 'w2')) });
    expect(wave2.map((r) => [r.lane, r.status, r.error?.class])).toEqual([['svc', 'skipped', 'checkpoint-unmet']]);
    expect(wave2[0]!.error!.message).toContain("fleet-integration-w0.a1 is not a record of this fleet's integration of wave 1");
  });

  it('a fleet deeper than the wave jobs: the next run goes on from the integration the last one verified, and cuts the release', async () => {
    const { file, fleet, forge, store } = await setup();
    // One wave job: each wave is a run of its own.
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-2', waveJobs: 1 });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    await matrixShard({ shard: planned.outputs.waves[0]![0]!, store, ...jobs(forge, join(dir, 'w1')) });
    const bundle = await loadPlanBundle(store, join(dir, 'i1'));
    const { state: first } = await matrixIntegrate({ bundle, waveJob: 1, store, ...jobs(forge, join(dir, 'i1')) });
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
    const { state: last } = await matrixIntegrate({ bundle: bundle2, waveJob: 1, store: store2, ...jobs(forge, join(dir, 'i2')) });
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
    const next = await matrixPlan({
      fleet: changed,
      file,
      forge,
      clock: systemClock,
      store: store2,
      root: join(dir, 'p2'),
      fleet_id: 'fleet-run-4',
      waveJobs: 8,
      since: swept,
    });
    if (!next.ok) throw new Error(JSON.stringify(next.problems));
    expect(next.outputs.waves[0]).toEqual([]);
    expect(next.outputs.integrate_jobs).toBe(2);
    const bundle2 = await loadPlanBundle(store2, join(dir, 'b2'));
    const { state: first } = await matrixIntegrate({ bundle: bundle2, waveJob: 1, store: store2, ...jobs(forge, join(dir, 'j0')) });
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

  it('the job after the last wave releases every repository the integration moved, also those with no lane in that wave', async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'mr',
      directive: 'd',
      max_retries: 0,
      integrate: {},
      targets: [
        { repo: './a.git', lane: 'a1', run: 'echo a > a.txt' },
        { repo: './b.git', lane: 'b1', run: 'echo b > b.txt' },
        // The last wave has b2 only, and it fails: b's integration stands at wave 1, a's too.
        { repo: './b.git', lane: 'b2', owns: ['c.txt'], depends_on: ['b1'], run: 'exit 3' },
      ],
    });
    const loaded = await loadFleetFile(file);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const forge = new LocalForge({ baseDir: dir });
    const store = new FolderArtifactStore(join(dir, 'artifacts'));
    const planned = await matrixPlan({
      fleet: loaded.fleet,
      file,
      forge,
      clock: systemClock,
      store,
      root: join(dir, 'p'),
      fleet_id: 'fleet-run-6',
      waveJobs: 8,
    });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    const bundle = await loadPlanBundle(store, join(dir, 'b'));
    for (const [i, shards] of planned.outputs.waves.entries()) {
      for (const shard of shards) await matrixShard({ shard, store, ...jobs(forge, join(dir, `w${i}-${shard}`)) });
      if (i < planned.outputs.integrate_jobs) await matrixIntegrate({ bundle, waveJob: i + 1, store, ...jobs(forge, join(dir, `i${i}`)) });
    }
    const m = await matrixReport({ bundle, store, root: join(dir, 'rep'), forge, clock: systemClock });
    expect(m.integration!.map((r) => [r.repo, r.release?.branch, r.release?.ok])).toEqual([
      ['./a.git', 'fleet/mr/_release', true],
      ['./b.git', 'fleet/mr/_release', true],
    ]);
    expect(await readRemoteFile(join(dir, 'a.git'), 'fleet/mr/_release', 'a.txt')).toBe('a\n');
    expect(await readRemoteFile(join(dir, 'b.git'), 'fleet/mr/_release', 'b.txt')).toBe('b\n');
  });

  it('after "Re-run failed jobs", a later wave\'s record older than the redone integration before it is not read', async () => {
    const { file, fleet, forge, store } = await setup();
    const marker = join(dir, 'pass-now');
    // lib fails in attempt 1; svc (wave 2) runs in attempt 1 only as a skipped lane; app (wave 3) needs svc's file.
    const three = {
      ...fleet,
      lanes: [
        ...fleet.lanes.map((l) => (l.id === 'lib' ? { ...l, run: `test -f ${marker} && ${l.run!}` } : l)),
        {
          ...fleet.lanes.find((l) => l.id === 'svc')!,
          id: 'app',
          owns: ['app/**'],
          depends_on: ['svc'],
          branch: 'fleet/mi/app',
          run: 'mkdir -p app && cp svc/main.txt app/main.txt',
        },
      ],
    };
    const planned = await matrixPlan({ fleet: three, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-7', waveJobs: 8 });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    const bundle = await loadPlanBundle(store, join(dir, 'b'));
    const W = planned.outputs.waves;
    for (let i = 0; i < 3; i++) {
      for (const shard of W[i]!) await matrixShard({ shard, store, attempt: 1, ...jobs(forge, join(dir, `a1w${i}`)) });
      await matrixIntegrate({ bundle, waveJob: i + 1, store, attempt: 1, ...jobs(forge, join(dir, `a1i${i}`)) });
    }
    writeFileSync(marker, '');
    // Attempt 2 re-runs the failed leg and every job after it; integrate-2 dies before it uploads.
    for (const shard of W[0]!) await matrixShard({ shard, store, attempt: 2, ...jobs(forge, join(dir, 'a2w0')) });
    await matrixIntegrate({ bundle, waveJob: 1, store, attempt: 2, ...jobs(forge, join(dir, 'a2i0')) });
    for (const shard of W[1]!) await matrixShard({ shard, store, attempt: 2, ...jobs(forge, join(dir, 'a2w1')) });
    const [app] = await matrixShard({ shard: W[2]![0]!, store, attempt: 2, ...jobs(forge, join(dir, 'a2w2')) });
    expect(app).toMatchObject({ status: 'skipped', error: { class: 'checkpoint-unmet' } });
    expect(app!.error!.message).toContain('fleet-integration-w1.a1 is older than fleet-integration-w0.a2');
    const m = await matrixReport({ bundle, store, root: join(dir, 'rep'), forge, clock: systemClock, attempt: 2 });
    expect(m.lanes.find((l) => l.lane === 'svc')!.integration).toMatchObject({ state: 'held', reason: expect.stringContaining('left no record') });
  });

  it('a dry run has no integrate job', async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({
      fleet,
      file,
      forge,
      clock: systemClock,
      store,
      root: join(dir, 'p'),
      fleet_id: 'fleet-run-8',
      waveJobs: 8,
      dryRun: true,
    });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    expect(planned.outputs.integrate_jobs).toBe(0);
  });

  it('an integration branch someone pushed to between the jobs is not built on: the next integrate job holds its lanes and fails', async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-9', waveJobs: 8 });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    const bundle = await loadPlanBundle(store, join(dir, 'b'));
    await matrixShard({ shard: planned.outputs.waves[0]![0]!, store, ...jobs(forge, join(dir, 'w0')) });
    await matrixIntegrate({ bundle, waveJob: 1, store, ...jobs(forge, join(dir, 'i0')) });
    // A commit nobody verified, pushed onto the integration after wave 1's job verified it.
    await commitToRemote(join(dir, 'mono.git'), 'fleet/mi/_integration', { '.github/workflows/x.yml': 'on: push\n' });
    await matrixShard({ shard: planned.outputs.waves[1]![0]!, store, ...jobs(forge, join(dir, 'w1')) });
    const { state, problems } = await matrixIntegrate({ bundle, waveJob: 2, store, ...jobs(forge, join(dir, 'i1')) });
    expect(state.lanes.svc).toMatchObject({ state: 'held', reason: expect.stringContaining('someone pushed to it') });
    expect(problems).toHaveLength(1);
    expect(await readRemoteFile(join(dir, 'mono.git'), 'fleet/mi/_release', '.github/workflows/x.yml')).toBeNull();
  });

  it("pinned to the integrate jobs' outputs, a leg reads no record but theirs, however well it is made", async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-10', waveJobs: 8 });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    const bundle = await loadPlanBundle(store, join(dir, 'b'));
    await matrixShard({ shard: planned.outputs.waves[0]![0]!, store, ...jobs(forge, join(dir, 'w0')) });
    const { digest } = await matrixIntegrate({ bundle, waveJob: 1, store, ...jobs(forge, join(dir, 'i0')) });
    expect(digest).toBeTruthy();
    // Something else in the run uploads a record of its own, as a later attempt's: it says lib was held.
    const real = (await store.list('fleet-integration-w0')).find((a) => a.name === 'fleet-integration-w0.a1')!;
    await store.download(real, join(dir, 'real'));
    const state = JSON.parse(readFileSync(join(dir, 'real', 'integration', 'w0.json'), 'utf8')) as { lanes: Record<string, { state: string }> };
    state.lanes.lib!.state = 'held';
    mkdirSync(join(dir, 'forged', 'integration'), { recursive: true });
    writeFileSync(join(dir, 'forged', 'integration', 'w0.json'), JSON.stringify(state));
    await store.upload('fleet-integration-w0.a2', [join(dir, 'forged', 'integration', 'w0.json')], join(dir, 'forged'));
    // Unpinned (a local run of the jobs), the latest by name is read: the pin is what keeps the forgery out.
    const unpinned = await matrixShard({ shard: planned.outputs.waves[1]![0]!, store, attempt: 2, ...jobs(forge, join(dir, 'w1')) });
    expect(unpinned[0]).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    const pinned = await matrixShard({ shard: planned.outputs.waves[1]![0]!, store, attempt: 3, integrationPins: [digest!], ...jobs(forge, join(dir, 'w1b')) });
    expect(pinned[0]).toMatchObject({ status: 'completed', base_branch: 'fleet/mi/_integration' });
  });

  it('a lane that started from a commit pushed onto the integration branch, since put back, is held: its base was never verified', async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-11', waveJobs: 8 });
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    const bundle = await loadPlanBundle(store, join(dir, 'b'));
    await matrixShard({ shard: planned.outputs.waves[0]![0]!, store, ...jobs(forge, join(dir, 'w0')) });
    const { state: first } = await matrixIntegrate({ bundle, waveJob: 1, store, ...jobs(forge, join(dir, 'i0')) });
    const remote = join(dir, 'mono.git');
    await commitToRemote(remote, 'fleet/mi/_integration', { 'lib/util.txt': 'v0\n' });
    const [svc] = await matrixShard({ shard: planned.outputs.waves[1]![0]!, store, ...jobs(forge, join(dir, 'w1')) });
    expect(svc).toMatchObject({ status: 'completed', base_branch: 'fleet/mi/_integration' });
    // The branch is put back where the integration left it before the next job looks.
    execFileSync('git', ['--git-dir', remote, 'update-ref', 'refs/heads/fleet/mi/_integration', first.records[0]!.head!]);
    const { state } = await matrixIntegrate({ bundle, waveJob: 2, store, ...jobs(forge, join(dir, 'i1')) });
    expect(state.lanes.svc).toMatchObject({
      state: 'held',
      reason: expect.stringContaining(`not from the verified integration ${first.records[0]!.head!.slice(0, 12)}`),
    });
  });
});
