/**
 * The action's inputs as a user sets them, end to end on the local forge: runAction wired exactly as
 * src/actions/index.ts wires it (actionDeps), a plan job, one lane job per shard, each on a workspace of its
 * own, and the report job, sharing only an artifact store. What is asserted is what the inputs change in the
 * pushed branches, the job's exit code, its outputs and its failure message.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { actionDeps } from '../../src/actions/deps.js';
import { runAction, type CoreLike } from '../../src/actions/main.js';
import { Manifest } from '../../src/core/model.js';
import { FolderArtifactStore } from '../../src/local/artifacts.js';
import { readFileSync } from 'node:fs';
import { createRepo, readRemoteFile } from '../support/repos.js';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { removeDir, tempDir, writeFleetFile } from '../integration/helpers.js';

const TOKEN = 'ghs_ActionInputsToken0123456789abcdefGH';

let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-action-');
});
afterEach(() => removeDir(dir));

function fakeCore() {
  const outputs: Record<string, string> = {};
  const summaries: string[] = [];
  const failures: string[] = [];
  const warnings: string[] = [];
  const infos: string[] = [];
  const secrets: string[] = [];
  const core: CoreLike = {
    setOutput: (k, v) => void (outputs[k] = v),
    setFailed: (m) => void failures.push(m),
    setSecret: (x) => void secrets.push(x),
    info: (m) => void infos.push(m),
    warning: (m) => void warnings.push(m),
    summary: { addRaw: (t) => ({ write: async () => void summaries.push(t) }) },
  };
  return { core, outputs, summaries, failures, warnings, infos, secrets };
}

/** A workflow run on the local forge: the jobs' environment, and a job runner that shares one artifact store. */
function workflow(file: string, inputs: Record<string, string> = {}) {
  const store = new FolderArtifactStore(join(dir, 'artifacts'));
  const job = async (mode: 'plan' | 'lane' | 'report', runner: string, extra: Record<string, string> = {}) => {
    const c = fakeCore();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      FLEET_MODE: mode,
      FLEET_FILE: file,
      FLEET_TOKEN: TOKEN,
      GITHUB_RUN_ID: '77',
      FLEET_WORKSPACE_DIR: join(dir, 'runners', runner),
      ...inputs,
      ...extra,
    };
    const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
    const code = await runAction(actionDeps(env, c.core, store, logger));
    return { code, ...c };
  };
  return {
    job,
    /** plan, then every shard of every wave in order; returns the plan job and the lane jobs. */
    async planAndLanes() {
      const plan = await job('plan', 'plan');
      expect(plan.code, plan.failures.join('\n')).toBe(0);
      const lanes = [];
      for (let w = 1; plan.outputs[`wave-${w}`] !== undefined; w++) {
        for (const shard of JSON.parse(plan.outputs[`wave-${w}`]!) as string[]) {
          lanes.push(await job('lane', shard, { FLEET_SHARD: shard, FLEET_PLAN_DIGEST: plan.outputs['plan-digest']! }));
        }
      }
      return { plan, lanes, digest: plan.outputs['plan-digest']! };
    },
  };
}

async function repos(...names: string[]) {
  for (const name of names) await createRepo(dir, name, { 'README.md': `# ${name}\n` }, { clone: false });
}

describe('the directive input (workflow_dispatch)', () => {
  it("replaces the fleet file's directive in every lane that inherits it, and not in a lane that sets its own", async () => {
    await repos('api', 'web');
    const file = writeFleetFile(dir, {
      name: 'dispatch',
      directive: 'the directive in the file',
      run: 'printf "%s\\n" "$FLEET_DIRECTIVE" > DIRECTIVE.txt',
      max_retries: 0,
      targets: [{ repo: './api.git' }, { repo: './web.git', directive: 'web keeps its own' }],
    });
    const wf = workflow(file, { FLEET_DIRECTIVE_OVERRIDE: '  the directive typed into the dispatch form  ' });
    const { plan, lanes } = await wf.planAndLanes();
    expect(lanes.map((l) => [l.code, l.failures])).toEqual([
      [0, []],
      [0, []],
    ]);
    expect(plan.summaries[0]).toContain('the directive typed into the dispatch form');
    expect(plan.summaries[0]).not.toContain('the directive in the file');
    expect(await readRemoteFile(join(dir, 'api.git'), 'fleet/dispatch/api', 'DIRECTIVE.txt')).toBe('the directive typed into the dispatch form\n');
    expect(await readRemoteFile(join(dir, 'web.git'), 'fleet/dispatch/web', 'DIRECTIVE.txt')).toBe('web keeps its own\n');
  });

  it("left empty (or blank), keeps the fleet file's directive", async () => {
    await repos('api');
    const file = writeFleetFile(dir, {
      name: 'dispatch',
      directive: 'the directive in the file',
      run: 'printf "%s\\n" "$FLEET_DIRECTIVE" > DIRECTIVE.txt',
      max_retries: 0,
      targets: [{ repo: './api.git' }],
    });
    const { lanes } = await workflow(file, { FLEET_DIRECTIVE_OVERRIDE: '   ' }).planAndLanes();
    expect(lanes.map((l) => l.code)).toEqual([0]);
    expect(await readRemoteFile(join(dir, 'api.git'), 'fleet/dispatch/api', 'DIRECTIVE.txt')).toBe('the directive in the file\n');
  });
});

describe('the plan job', () => {
  it('gives the shard lists and counts as outputs, one wave-N per wave job, and says what it planned', async () => {
    await repos('lib', 'api', 'web');
    const file = writeFleetFile(dir, {
      name: 'outs',
      directive: 'stamp',
      run: 'echo x >> README.md',
      missing_targets: 'exclude',
      targets: [{ repo: './lib.git' }, { repo: './api.git', depends_on: ['lib'] }, { repo: './web.git' }, { repo: './gone.git' }],
    });
    const plan = await workflow(file, { FLEET_WAVE_JOBS: '3', FLEET_MAX_PARALLEL: '5' }).job('plan', 'plan');
    expect(plan.code, plan.failures.join('\n')).toBe(0);
    expect(plan.outputs).toEqual({
      'fleet-id': 'fleet-run-77',
      'wave-count': '2',
      'max-parallel': '5',
      'lane-count': '3',
      'plan-digest': expect.stringMatching(/^[0-9a-f]{64}$/),
      'wave-1': expect.any(String),
      'wave-2': expect.any(String),
      'wave-3': '[]',
      'integrate-jobs': '0',
      // No approval-environment: the approve job does not run.
      gated: 'false',
    });
    expect(JSON.parse(plan.outputs['wave-1']!)).toHaveLength(2);
    expect(JSON.parse(plan.outputs['wave-2']!)).toHaveLength(1);
    expect(plan.infos).toContain('Planned 3 lanes in 2 wave(s); 1 excluded.');
    expect(plan.summaries).toHaveLength(1);
    expect(plan.summaries[0]).toContain('## Fleet Plan — fleet-run-77');
  });

  it('without a run id (not on a runner), names the fleet by the clock', async () => {
    await repos('lib');
    const file = writeFleetFile(dir, { name: 'outs', directive: 'stamp', run: 'true', targets: [{ repo: './lib.git' }] });
    const plan = await workflow(file, { GITHUB_RUN_ID: '' }).job('plan', 'plan');
    expect(plan.outputs['fleet-id']).toMatch(/^fleet-\d{13}$/);
  });

  it('a fleet file with problems fails the plan job with every problem, file and field named', async () => {
    const file = writeFleetFile(dir, { name: 'Bad Name', directive: 'x', run: 'true', retries: 3, targets: [{ repo: './a.git' }] });
    const plan = await workflow(file).job('plan', 'plan');
    expect(plan.code).toBe(2);
    expect(plan.failures).toHaveLength(1);
    expect(plan.failures[0]).toContain(`${file}: name:`);
    expect(plan.failures[0]).toContain('2 problems found');
    expect(plan.failures[0]).toMatch(/retries/);
    expect(plan.outputs).toEqual({});
  });
});

describe('set-up failures', () => {
  it("masks the fleet's token and the run's token, each once", async () => {
    await repos('api');
    const file = writeFleetFile(dir, { name: 'mask', directive: 'd', run: 'true', targets: [{ repo: './api.git' }] });
    expect((await workflow(file).job('plan', 'plan')).secrets).toEqual([TOKEN]);
    expect((await workflow(file, { FLEET_RUN_TOKEN: 'ghs_OtherRunToken' }).job('plan', 'plan')).secrets).toEqual([TOKEN, 'ghs_OtherRunToken']);
  });

  it("a GitHub setting the forge refuses fails the plan job with exit 2 and the forge's message", async () => {
    const file = writeFleetFile(dir, { name: 'gh', directive: 'd', run: 'true', forge: 'github', targets: [{ repo: 'acme/api' }] });
    const plan = await workflow(file, { FLEET_GITHUB_PACING_MS: 'fast' }).job('plan', 'plan');
    expect(plan.code).toBe(2);
    expect(plan.failures).toEqual(['FLEET_GITHUB_PACING_MS must be a whole number of milliseconds (0 to 3600000), got "fast"']);
    expect(plan.outputs).toEqual({});
  });

  it('a lane job without a plan to read fails with exit 2, naming its mode', async () => {
    const file = writeFleetFile(dir, { name: 'np', directive: 'd', run: 'true', targets: [{ repo: './api.git' }] });
    const lane = await workflow(file).job('lane', 'w0-s0', { FLEET_SHARD: 'w0-s0' });
    expect(lane.code).toBe(2);
    expect(lane.failures).toHaveLength(1);
    expect(lane.failures[0]).toMatch(/^Fleet lane failed: /);
  });

  it('the lane and report jobs refuse a plan whose forge set-up fails, with exit 2', async () => {
    const file = writeFleetFile(dir, { name: 'gh', directive: 'd', run: 'true', forge: 'github', targets: [{ repo: 'acme/api' }] });
    const emu = await startEmulator({ token: TOKEN });
    try {
      await emu.createRepo({ owner: 'acme', name: 'api', files: { 'README.md': '# api\n' } });
      const gh = { GITHUB_API_URL: emu.url, GITHUB_GRAPHQL_URL: emu.graphqlUrl, GITHUB_SERVER_URL: `${emu.url}/git`, FLEET_GITHUB_PACING_MS: '0' };
      const plan = await workflow(file, gh).job('plan', 'plan');
      expect(plan.code, plan.failures.join('\n')).toBe(0);
      const shard = (JSON.parse(plan.outputs['wave-1']!) as string[])[0]!;
      const lane = await workflow(file, { ...gh, FLEET_GITHUB_POLL_MS: '-1' }).job('lane', shard, {
        FLEET_SHARD: shard,
        FLEET_PLAN_DIGEST: plan.outputs['plan-digest']!,
      });
      expect(lane.code).toBe(2);
      expect(lane.failures).toEqual(['FLEET_GITHUB_POLL_MS must be a whole number of milliseconds (0 to 3600000), got "-1"']);
    } finally {
      await emu.close();
    }
  });
});

describe('what a directive sees in a lane job', () => {
  it("no variable holding the fleet's token, the run's token or their git credential form", async () => {
    await repos('api');
    const file = writeFleetFile(dir, { name: 'env', directive: 'd', run: 'env > ENV.txt', max_retries: 0, targets: [{ repo: './api.git' }] });
    const run = 'ghs_RunTokenSeenByNoDirective0123456';
    const { basicCredential } = await import('../../src/github/octokit.js');
    // Copies a workflow might set: `env: { MY_TOKEN: secrets.FLEET_TOKEN }`, or a credential for git.
    const wf = workflow(file, { FLEET_RUN_TOKEN: run, MY_TOKEN: TOKEN, MY_RUN: run, GIT_AUTH: basicCredential(TOKEN), KEEP_ME: 'visible' });
    const { lanes } = await wf.planAndLanes();
    expect(lanes.map((l) => l.code)).toEqual([0]);
    const seen = (await readRemoteFile(join(dir, 'api.git'), 'fleet/env/api', 'ENV.txt'))!;
    expect(seen).toContain('KEEP_ME=visible');
    for (const secret of [TOKEN, run, basicCredential(TOKEN), basicCredential(run)]) expect(seen.includes(secret), secret).toBe(false);
  });
});

describe('dry-run', () => {
  it('the lane jobs push nothing and the report says it was a dry run', async () => {
    await repos('api');
    const file = writeFleetFile(dir, { name: 'dry', directive: 'stamp', run: 'echo x >> README.md', max_retries: 0, targets: [{ repo: './api.git' }] });
    const wf = workflow(file, { FLEET_DRY_RUN: 'true' });
    const { lanes, digest } = await wf.planAndLanes();
    expect(lanes.map((l) => l.code)).toEqual([0]);
    expect(await readRemoteFile(join(dir, 'api.git'), 'fleet/dry/api', 'README.md')).toBeNull();
    const report = await wf.job('report', 'report', { FLEET_PLAN_DIGEST: digest });
    expect(report.code).toBe(0);
    const m = Manifest.parse(JSON.parse(readFileSync(report.outputs.manifest!, 'utf8')));
    expect(m.dry_run).toBe(true);
  });
});

describe('fail-on-lane-failure', () => {
  async function fleetWithAFailedLane() {
    await repos('good', 'bad');
    return writeFleetFile(dir, {
      name: 'mixed',
      directive: 'stamp',
      run: 'echo stamped >> README.md',
      max_retries: 0,
      targets: [{ repo: './good.git' }, { repo: './bad.git', run: 'echo "bad lane says no" >&2; exit 3' }],
    });
  }

  it('true (the default): the lane job and the report job fail, naming the lanes, and the report is still written', async () => {
    const wf = workflow(await fleetWithAFailedLane());
    const { lanes, digest } = await wf.planAndLanes();
    // The lane job fails whatever the input says: "Re-run failed jobs" must find exactly its shard.
    const failedLanes = lanes.filter((l) => l.code !== 0);
    expect(failedLanes.map((l) => [l.code, l.failures.length])).toEqual([[1, 1]]);
    expect(failedLanes[0]!.failures[0]).toMatch(/^1 lane\(s\) of shard w0-s\d+ failed: bad$/);
    expect(failedLanes[0]!.warnings).toEqual([expect.stringMatching(/^bad: failed \(\w[\w-]*\) — directive-failed: the directive exited with 3/)]);
    // A lane that completed is information, not a warning.
    const good = lanes.find((l) => l.code === 0)!;
    expect(good.warnings).toEqual([]);
    // Its progress reaches the job's log as it happens, then its verdict.
    expect(good.infos).toContain('good: cloning (./good.git)');
    expect(good.infos.at(-1)).toBe('good: completed (pushed)');

    const report = await wf.job('report', 'report', { FLEET_PLAN_DIGEST: digest });
    expect(report.code).toBe(1);
    expect(report.failures).toEqual(['1 lane(s) failed: see the report']);
    expect(report.outputs.failed).toBe('1');
    const m = Manifest.parse(JSON.parse(readFileSync(report.outputs.manifest!, 'utf8')));
    expect(m.summary).toMatchObject({ total: 2, completed: 1, failed: 1 });
  });

  it('false: the report job succeeds with the same report and outputs, so a workflow can read them and decide', async () => {
    const wf = workflow(await fleetWithAFailedLane(), { FLEET_FAIL_ON_LANE_FAILURE: 'false' });
    const { digest } = await wf.planAndLanes();
    const report = await wf.job('report', 'report', { FLEET_PLAN_DIGEST: digest });
    expect(report.code).toBe(0);
    expect(report.failures).toEqual([]);
    expect(report.outputs.failed).toBe('1');
    const m = Manifest.parse(JSON.parse(readFileSync(report.outputs.manifest!, 'utf8')));
    expect(m.summary).toMatchObject({ total: 2, completed: 1, failed: 1 });
    expect(report.summaries[0]).toContain('## Fleet Report');
  });

  it("anything but true or false is refused with the input's name, before any work", async () => {
    const file = await fleetWithAFailedLane();
    const plan = await workflow(file, { FLEET_FAIL_ON_LANE_FAILURE: 'no', FLEET_WAVE_JOBS: '0' }).job('plan', 'plan');
    expect(plan.code).toBe(2);
    expect(plan.failures).toHaveLength(1);
    expect(plan.failures[0]).toContain('2 problem(s) with the inputs');
    expect(plan.failures[0]).toContain('input fail-on-lane-failure:');
    expect(plan.failures[0]).toContain('input wave-jobs: must be a whole number from 1 to 64, got "0"');
    expect(plan.outputs).toEqual({});
  });
});

describe("the report job on the run's own repository", () => {
  const RUN_TOKEN = 'ghs_RunsOwnToken0123456789abcdefghijKL';
  let emu: Emulator | undefined;
  afterEach(async () => {
    await emu?.close();
    emu = undefined;
  });

  /** A fleet of two lanes (one fails) run as jobs; the run, on acme/control in the emulator, lists the jobs given. */
  async function runWithJobs(jobs: Array<{ name: string; conclusion: 'success' | 'failure' | 'cancelled' }>, inputs: Record<string, string> = {}) {
    emu = await startEmulator({ token: RUN_TOKEN });
    const control = await emu.createRepo({ owner: 'acme', name: 'control', files: { 'fleet.yml': '# here\n' } });
    await repos('good', 'bad');
    const file = writeFleetFile(dir, {
      name: 'mixed',
      directive: 'stamp',
      run: 'echo stamped >> README.md',
      max_retries: 0,
      targets: [{ repo: './good.git' }, { repo: './bad.git', run: 'exit 3' }],
    });
    const run = await emu.addWorkflowRun({
      owner: 'acme',
      repo: 'control',
      name: 'Fleet',
      event: 'workflow_dispatch',
      status: 'in_progress',
      conclusion: null,
      jobs,
    });
    const wf = workflow(file, {
      GITHUB_REPOSITORY: 'acme/control',
      GITHUB_SHA: control.headSha!,
      GITHUB_RUN_ID: String(run.id),
      GITHUB_SERVER_URL: 'https://github.example',
      GITHUB_API_URL: emu.url,
      FLEET_RUN_TOKEN: RUN_TOKEN,
      FLEET_GITHUB_PACING_MS: '0',
      ...inputs,
    });
    return { wf, run, control };
  }

  it("posts one check run on the run's commit with the run's token: named, concluded, titled, linked to the run", async () => {
    const { wf, run, control } = await runWithJobs([{ name: 'fleet / plan', conclusion: 'success' }], { FLEET_CHECK_NAME: 'Platform fleet' });
    const { digest } = await wf.planAndLanes();
    const report = await wf.job('report', 'report', { FLEET_PLAN_DIGEST: digest });
    expect(report.code).toBe(1);
    const checks = emu!.checkRuns('acme/control');
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({
      name: 'Platform fleet: mixed',
      head_sha: control.headSha,
      status: 'completed',
      conclusion: 'failure',
      details_url: `https://github.example/acme/control/actions/runs/${run.id}`,
    });
    expect(checks[0]!.output.title).toBe('1 completed, 1 failed, 0 skipped, 0 excluded of 2');
    expect(checks[0]!.output.summary).toContain('## Fleet Report');
    expect(emu!.find({ route: '/repos/{owner}/{repo}/check-runs', method: 'POST' }).map((q) => [q.status, q.token])).toEqual([[201, RUN_TOKEN]]);
    emu!.assertNoViolations();
  });

  it("explains a shard whose job was cancelled from the run's jobs", async () => {
    const { wf } = await runWithJobs([]);
    const plan = await wf.job('plan', 'plan');
    const shards = JSON.parse(plan.outputs['wave-1']!) as string[];
    // Only the first shard's job ran; the other was cancelled before it started.
    await wf.job('lane', shards[0]!, { FLEET_SHARD: shards[0]!, FLEET_PLAN_DIGEST: plan.outputs['plan-digest']! });
    const run2 = await emu!.addWorkflowRun({
      owner: 'acme',
      repo: 'control',
      name: 'Fleet',
      status: 'in_progress',
      conclusion: null,
      // The jobs that matter come after a first page of 100 others: every page is read.
      jobs: [
        ...Array.from({ length: 120 }, (_, i) => ({ name: `other / job ${i}`, conclusion: 'success' as const })),
        ...shards.map((s, i) => ({ name: `fleet / wave 1 (${s})`, conclusion: i === 0 ? ('success' as const) : ('cancelled' as const) })),
      ],
    });
    const report = await wf.job('report', 'report', { FLEET_PLAN_DIGEST: plan.outputs['plan-digest']!, GITHUB_RUN_ID: String(run2.id) });
    const m = Manifest.parse(JSON.parse(readFileSync(report.outputs.manifest!, 'utf8')));
    const never = m.lanes.find((l) => l.status === 'failed' && l.error?.class === 'cancelled');
    expect(never?.error?.message).toContain(`"fleet / wave 1 (${shards[1]})" was cancelled`);
  });

  it('a check run GitHub refuses is a warning naming the permission, and the job still reports the lanes', async () => {
    const { wf } = await runWithJobs([]);
    // The run's token without `checks: write`, as a workflow that forgot the permission has it.
    const readOnly = 'ghs_RunTokenWithoutChecksWrite0123456789';
    emu!.addToken(readOnly, { login: 'github-actions[bot]', scopes: { checks: 'read', actions: 'read', contents: 'read' } });
    const { digest } = await wf.planAndLanes();
    const report = await wf.job('report', 'report', { FLEET_PLAN_DIGEST: digest, FLEET_FAIL_ON_LANE_FAILURE: 'false', FLEET_RUN_TOKEN: readOnly });
    expect(report.code).toBe(0);
    expect(report.failures).toEqual([]);
    expect(report.outputs.failed).toBe('1');
    expect(report.warnings).toHaveLength(1);
    expect(report.warnings[0]).toMatch(
      /^The report's check run could not be posted \(403: Resource not accessible by integration.*\); the job summary and the report artifact have the full report\. The report job needs `permissions: checks: write`/,
    );
    expect(report.summaries[0]).toContain('## Fleet Report');
    expect(emu!.checkRuns('acme/control')).toEqual([]);
  });
});

describe('GitHub App credentials as inputs', () => {
  it('a token as well, an id without a key, a key that is not one: exit 2 with one message listing every problem, no key text', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const broken = pem.slice(0, 400);
    const file = writeFleetFile(dir, { name: 'app', forge: 'github', directive: 'd', run: 'true', targets: [{ repo: 'acme/api' }] });
    const plan = await workflow(file, { FLEET_APP_ID: '4242', FLEET_APP_PRIVATE_KEY: broken }).job('plan', 'plan');
    expect(plan.code).toBe(2);
    expect(plan.failures).toHaveLength(1);
    expect(plan.failures[0]).toContain('2 problem(s) with the inputs');
    expect(plan.failures[0]).toContain('inputs token and app-id/app-private-key: give a token or GitHub App credentials, not both');
    expect(plan.failures[0]).toContain('input app-private-key: the key is not a PEM private key');
    for (const line of broken.split('\n').filter((l) => l.length > 8 && !l.startsWith('-----'))) expect(plan.failures[0]).not.toContain(line.slice(0, 16));
    const noKey = await workflow(file, { FLEET_TOKEN: '', FLEET_APP_ID: '4242' }).job('plan', 'plan');
    expect(noKey.code).toBe(2);
    expect(noKey.failures[0]).toContain("input app-private-key: app-id is set but the App's private key is empty");
    expect(noKey.outputs).toEqual({});
  });

  it('a lane job withholds the App key from the directive, by name and by value (a copy under another name too)', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const { directiveEnv } = actionDeps(
      { FLEET_APP_PRIVATE_KEY: pem, MY_KEY: pem, ONE_LINE: pem.split('\n')[3]!, ESCAPED: pem.replace(/\n/g, '\\n'), KEEP_ME: 'visible' },
      fakeCore().core,
      new FolderArtifactStore(join(dir, 'a')),
      { info: () => {}, warn: () => {}, error: () => {} },
    );
    expect(directiveEnv).toEqual({ KEEP_ME: 'visible' });
  });
});
