/**
 * The fleet as Actions jobs: a plan job, one process per shard with its own
 * workspace (as separate runners would), and a report job; the jobs share only
 * an artifact store. Real git repositories, the local forge.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FolderArtifactStore } from '../../src/local/artifacts.js';
import { LocalForge } from '../../src/local/forge.js';
import { localExecutor, localWorkspace } from '../../src/local/workspace.js';
import { systemClock } from '../../src/ports.js';
import { loadFleetFile } from '../../src/steps/load.js';
import { LANE_ARTIFACT_PREFIX, matrixPlan, matrixReport, matrixShard } from '../../src/steps/matrix.js';
import { runAction, type CoreLike } from '../../src/actions/main.js';
import { createRepo, remoteHead } from '../support/repos.js';
import { removeDir, tempDir, writeFleetFile } from './helpers.js';

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
        const recs = await matrixShard({ shard, store, root: join(dir, `runner-w${i}-${shard}`), forge, workspace: localWorkspace, exec: localExecutor, clock: systemClock, env: { PATH: process.env.PATH ?? '' } });
        expect(recs.every((r) => r.status === 'completed'), JSON.stringify(recs.map((r) => r.error))).toBe(true);
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

  it('a shard whose job died leaves no artifact: the report names the cause from the run\'s jobs, and its dependent was skipped', async () => {
    const { file, fleet, forge, store } = await setup();
    const planned = await matrixPlan({ fleet, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-7', waveJobs: 8 });
    if (!planned.ok) throw new Error('plan failed');
    const libShard = planned.manifest.waves[0]!.shards.find((s) => s.lanes.includes('lib'))!.id;
    // Wave 1 runs every shard but lib's (its runner was cancelled); then wave 2 runs.
    for (const shard of planned.outputs.waves[0]!.filter((s) => s !== libShard)) {
      await matrixShard({ shard, store, root: join(dir, `r-${shard}`), forge, workspace: localWorkspace, exec: localExecutor, clock: systemClock, env: { PATH: process.env.PATH ?? '' } });
    }
    for (const shard of planned.outputs.waves[1]!) {
      const recs = await matrixShard({ shard, store, root: join(dir, `r-${shard}`), forge, workspace: localWorkspace, exec: localExecutor, clock: systemClock, env: { PATH: process.env.PATH ?? '' } });
      expect(recs.map((r) => [r.lane, r.status, r.error?.class])).toEqual([['api', 'skipped', 'checkpoint-unmet']]);
    }
    const jobs = { list: async () => [{ name: `wave 1 (${libShard})`, status: 'completed', conclusion: 'cancelled', html_url: 'https://github.example/run/7/job/1' }] };
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
    const counted = { ...fleet, file: { ...fleet.file }, lanes: fleet.lanes.map((l) => ({ ...l, run: `echo "$FLEET_LANE" >> ${counter} && echo x >> README.md` })) };
    const planned = await matrixPlan({ fleet: counted, file, forge, clock: systemClock, store, root: join(dir, 'p'), fleet_id: 'fleet-run-3', waveJobs: 8 });
    if (!planned.ok) throw new Error('plan failed');
    const shard = planned.outputs.waves[0]![0]!;
    const first = await matrixShard({ shard, store, root: join(dir, 'attempt-1'), forge, workspace: localWorkspace, exec: localExecutor, clock: systemClock, env: { PATH: process.env.PATH ?? '' } });
    const again = await matrixShard({ shard, store, root: join(dir, 'attempt-2'), forge, workspace: localWorkspace, exec: localExecutor, clock: systemClock, env: { PATH: process.env.PATH ?? '' } });
    expect(again).toEqual(first);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(counter, 'utf8').trim().split('\n')).toEqual(first.map((r) => r.lane));
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
      env: { FLEET_MODE: 'plan', FLEET_FILE: file, FLEET_TOKEN: 'ghs_0123456789abcdefghijABCDEFGHIJ', GITHUB_RUN_ID: '99', FLEET_WORKSPACE_DIR: join(dir, 'w'), FLEET_DIRECTIVE_OVERRIDE: 'stamp harder' },
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
