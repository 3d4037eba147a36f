/**
 * The fleet as Actions jobs: a plan job, one process per shard with its own
 * workspace (as separate runners would), and a report job; the jobs share only
 * an artifact store. Real git repositories, the local forge.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FolderArtifactStore } from '../../src/local/artifacts.js';
import { LocalForge } from '../../src/local/forge.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock } from '../../src/ports.js';
import { loadFleetFile } from '../../src/steps/load.js';
import { LANE_ARTIFACT_PREFIX, latestByAttempt, loadPlanBundle } from '../../src/steps/drivers/matrix-artifacts.js';
import { matrixPlan, matrixReport, matrixShard } from '../../src/steps/drivers/matrix.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

function writeFileAtomicSync(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
import { runAction, type CoreLike } from '../../src/actions/main.js';
import { createRepo, remoteHead } from '../support/repos.js';
import { removeDir, tempDir, writeFleetFile } from './helpers.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

async function setup() {
  for (const name of ['lib', 'api', 'web', 'tool']) await createRepo(dir, name, { 'README.md': `# ${name}\n` }, { clone: false });
  const file = writeFleetFile(dir, {
    name: 'matrix',
    directive: 'stamp',
    run: 'echo "$FLEET_LANE" >> README.md',
    max_retries: 0,
    missing_targets: 'exclude',
    targets: [
      { repo: './lib.git' },
      { repo: './api.git', depends_on: ['lib'] },
      { repo: './web.git', depends_on: ['api'] },
      { repo: './tool.git' },
      { repo: './missing.git' },
    ],
  });
  const loaded = await loadFleetFile(file);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  return { file, fleet: loaded.fleet, forge: new LocalForge({ baseDir: dir }), store: new FolderArtifactStore(join(dir, 'artifacts')) };
}

describe('matrix jobs', () => {
  it('plan, shards on separate runners, report: every lane accounted for and verified', async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'runner-plan'), fleet_id: 'fleet-run-42', waveJobs: 8 });
    expect(planned.ok).toBe(true);
    if (!planned.ok) return;
    expect(planned.outputs.wave_count).toBe(3);
    expect(planned.outputs.waves).toHaveLength(8);
    expect(planned.outputs.waves.slice(3)).toEqual([[], [], [], [], []]);
    expect(planned.manifest.excluded.map((e) => [e.lane, e.reason])).toEqual([['missing', 'not-found']]);

    // Each shard runs in a workspace of its own; dependencies come only from artifacts.
    for (const [i, shards] of planned.outputs.waves.entries()) {
      for (const shard of shards) {
        const recs = await matrixShard({
          shard,
          store,
          root: join(dir, `runner-w${i}-${shard}`),
          forge,
          workspace: localWorkspace,
          exec: localExecutor,
          clock: systemClock,
          env: { PATH: process.env.PATH ?? '' },
        });
        expect(
          recs.every((r) => r.status === 'completed'),
          JSON.stringify(recs.map((r) => r.error)),
        ).toBe(true);
      }
    }
    const lanes = (await store.list(LANE_ARTIFACT_PREFIX)).map((a) => a.name);
    expect(lanes).toEqual(['fleet-lane-api.a1', 'fleet-lane-lib.a1', 'fleet-lane-tool.a1', 'fleet-lane-web.a1']);

    const m = await matrixReport({ store, root: join(dir, 'runner-report'), forge, clock: systemClock });
    expect(m.summary).toMatchObject({ total: 5, completed: 4, failed: 0, excluded: 1 });
    for (const l of m.lanes.filter((x) => x.status === 'completed')) {
      expect(l.evidence.head_matches).toBe(true);
      expect(l.evidence.files_match).toBe(true);
      expect(await remoteHead(join(dir, `${l.lane}.git`), l.branch!)).toBe(l.commit);
    }
  });

  it("a shard whose job died leaves no artifact: the report names the cause from the run's jobs, and its dependent was skipped", async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-7', waveJobs: 8 });
    if (!planned.ok) throw new Error('plan failed');
    const libShard = planned.manifest.waves[0]!.shards.find((s) => s.lanes.includes('lib'))!.id;
    // Wave 1 runs every shard but lib's (its runner was cancelled); then wave 2 runs.
    for (const shard of planned.outputs.waves[0]!.filter((s) => s !== libShard)) {
      await matrixShard({
        shard,
        store,
        root: join(dir, `r-${shard}`),
        forge,
        workspace: localWorkspace,
        exec: localExecutor,
        clock: systemClock,
        env: { PATH: process.env.PATH ?? '' },
      });
    }
    for (const shard of planned.outputs.waves[1]!) {
      const recs = await matrixShard({
        shard,
        store,
        root: join(dir, `r-${shard}`),
        forge,
        workspace: localWorkspace,
        exec: localExecutor,
        clock: systemClock,
        env: { PATH: process.env.PATH ?? '' },
      });
      expect(recs.map((r) => [r.lane, r.status, r.error?.class])).toEqual([['api', 'skipped', 'checkpoint-unmet']]);
    }
    const jobs = {
      list: async () => [{ name: `wave 1 (${libShard})`, status: 'completed', conclusion: 'cancelled', html_url: 'https://github.example/run/7/job/1' }],
    };
    const m = await matrixReport({ store, root: join(dir, 'rep'), forge, clock: systemClock, jobs });
    const lib = m.lanes.find((l) => l.lane === 'lib')!;
    expect(lib.status).toBe('failed');
    expect(lib.error?.class).toBe('cancelled');
    expect(lib.error?.message).toContain(`wave 1 (${libShard})`);
    const web = m.lanes.find((l) => l.lane === 'web')!;
    expect(web.status).toBe('failed');
    expect(web.error?.class).toBe('no-result');
    expect(m.summary.total).toBe(m.summary.completed + m.summary.failed + m.summary.skipped + m.summary.excluded);
  });
});

describe('re-running a shard', () => {
  it('keeps the lanes an earlier attempt completed and runs only the others', async () => {
    const { file, fleet, forge, store } = await setup();
    const counter = join(dir, 'runs.txt');
    const counted = {
      ...fleet,
      file: { ...fleet.file },
      lanes: fleet.lanes.map((l) => ({ ...l, run: `echo "$FLEET_LANE" >> ${counter} && echo x >> README.md` })),
    };
    const planned = await matrixPlan({ fleet: counted, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-3', waveJobs: 8 });
    if (!planned.ok) throw new Error('plan failed');
    const shard = planned.outputs.waves[0]![0]!;
    const first = await matrixShard({
      shard,
      store,
      root: join(dir, 'attempt-1'),
      forge,
      workspace: localWorkspace,
      exec: localExecutor,
      clock: systemClock,
      env: { PATH: process.env.PATH ?? '' },
    });
    const again = await matrixShard({
      shard,
      store,
      root: join(dir, 'attempt-2'),
      forge,
      workspace: localWorkspace,
      exec: localExecutor,
      clock: systemClock,
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(again).toEqual(first);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(counter, 'utf8').trim().split('\n')).toEqual(first.map((r) => r.lane));
  });
});

describe('artifacts a directive might forge', () => {
  /** Writes an artifact into the store the way a job would upload it. */
  async function forge(store: FolderArtifactStore, name: string, files: Record<string, string>) {
    const root = join(dir, 'forged', name);
    for (const [f, text] of Object.entries(files)) writeFileAtomicSync(join(root, f), text);
    return store.upload(
      name,
      Object.keys(files).map((f) => join(root, f)),
      root,
    );
  }

  it("a name from a later attempt than the reader's is ignored: the forged fleet-lane-tool.a9 is not the report's", async () => {
    const { file, fleet, forge: gitForge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge: gitForge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-5', waveJobs: 8 });
    if (!planned.ok) throw new Error('plan failed');
    for (const shard of planned.outputs.waves.flat()) {
      await matrixShard({
        shard,
        store,
        root: join(dir, `r-${shard}`),
        forge: gitForge,
        workspace: localWorkspace,
        exec: localExecutor,
        clock: systemClock,
        env: { PATH: process.env.PATH ?? '' },
        attempt: 1,
      });
    }
    const real = JSON.parse(
      readFileSync(join(dir, `r-${planned.manifest.waves[0]!.shards.find((x) => x.lanes.includes('tool'))!.id}`, 'lanes', 'tool', 'result.json'), 'utf8'),
    );
    const lie = { ...real, lane: { ...real.lane, status: 'failed', phase: 'failed', error: { class: 'directive-failed', message: 'forged' } } };
    await forge(store, 'fleet-lane-tool.a9', { 'lanes/tool/result.json': JSON.stringify(lie) });
    expect(latestByAttempt(await store.list('fleet-lane-tool'), 1, 1).get('fleet-lane-tool')!.name).toBe('fleet-lane-tool.a1');
    const m = await matrixReport({ store, root: join(dir, 'rep'), forge: gitForge, clock: systemClock, attempt: 1 });
    expect(m.lanes.find((l) => l.lane === 'tool')).toMatchObject({ status: 'completed', error: null });
  });

  it("a plan other than the plan job's (by its digest output) is refused, whatever its name says", async () => {
    const { file, fleet, forge: gitForge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge: gitForge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-6', waveJobs: 8 });
    if (!planned.ok) throw new Error('plan failed');
    expect(planned.outputs.plan_digest).toMatch(/^[0-9a-f]{64}$/);
    const bundle = JSON.parse(readFileSync(join(dir, 'p', 'plan', 'fleet.json'), 'utf8'));
    bundle.fleet.file.merge = { policy: 'when-green', method: 'squash' };
    const forged = await forge(store, 'fleet-plan.a1-forged', { 'fleet.json': JSON.stringify(bundle) });
    await forge(store, 'fleet-plan.a2', { 'fleet.json': JSON.stringify(bundle) });
    // Pinned: the real plan, though the store holds a "later" one.
    const pinned = await loadPlanBundle(store, join(dir, 'pinned'), { digest: planned.outputs.plan_digest, attempt: 2 });
    expect(pinned.fleet.file.merge.policy).toBe('never');
    // Pinned to what no plan has: refused with a reason.
    await expect(loadPlanBundle(store, join(dir, 'nope'), { digest: 'sha256:' + '0'.repeat(64), attempt: 1 })).rejects.toThrow(
      /refusing to run a plan other than the one planned/,
    );
    expect(forged.digest).not.toBe(planned.outputs.plan_digest);
  });
});

describe('runAction', () => {
  function fakeCore() {
    const outputs: Record<string, string> = {};
    const summaries: string[] = [];
    const secrets: string[] = [];
    const failures: string[] = [];
    const core: CoreLike = {
      setOutput: (k, v) => void (outputs[k] = v),
      setFailed: (m) => void failures.push(m),
      setSecret: (s) => void secrets.push(s),
      info: () => undefined,
      warning: () => undefined,
      summary: { addRaw: (t) => ({ write: async () => void summaries.push(t) }) },
    };
    return { core, outputs, summaries, secrets, failures };
  }

  it('reports every bad input at once and exits 2', async () => {
    const c = fakeCore();
    const code = await runAction({
      env: { FLEET_MODE: 'lane', FLEET_WAVE_JOBS: 'many' },
      core: c.core,
      store: new FolderArtifactStore(join(dir, 'a')),
      clock: systemClock,
      workspace: localWorkspace,
      exec: localExecutor,
      setupForge: () => ({ forge: new LocalForge({ baseDir: dir }) }),
      api: () => ({ request: async () => ({ data: {} }) }),
      directiveEnv: {},
    });
    expect(code).toBe(2);
    expect(c.failures.join('\n')).toContain('input wave-jobs');
  });

  it('plan mode: shard lists as outputs, the plan in the job summary, the token masked', async () => {
    const { file } = await setup();
    const c = fakeCore();
    const code = await runAction({
      env: {
        FLEET_MODE: 'plan',
        FLEET_FILE: file,
        FLEET_TOKEN: 'ghs_0123456789abcdefghijABCDEFGHIJ',
        GITHUB_RUN_ID: '99',
        FLEET_WORKSPACE_DIR: join(dir, 'w'),
        FLEET_DIRECTIVE_OVERRIDE: 'stamp harder',
      },
      core: c.core,
      store: new FolderArtifactStore(join(dir, 'a')),
      clock: systemClock,
      workspace: localWorkspace,
      exec: localExecutor,
      setupForge: () => ({ forge: new LocalForge({ baseDir: dir }) }),
      api: () => ({ request: async () => ({ data: {} }) }),
      directiveEnv: {},
    });
    expect(code, c.failures.join('\n')).toBe(0);
    expect(c.secrets).toContain('ghs_0123456789abcdefghijABCDEFGHIJ');
    expect(c.outputs['fleet-id']).toBe('fleet-run-99');
    expect(JSON.parse(c.outputs['wave-1']!)).toHaveLength(2);
    expect(c.outputs['wave-4']).toBe('[]');
    expect(c.summaries[0]).toContain('## Fleet Plan — fleet-run-99');
  });
});
