/**
 * The fleet as GitHub Actions jobs against the emulator, through `runAction`
 * wired as src/actions/index.ts wires it (the adapters' forge and client, the
 * directive environment): a plan job, one lane job per shard, each in a
 * workspace of its own, sharing only an artifact store, then the report job,
 * which reads the run's jobs to explain a shard that never ran and posts a
 * check run on the run's own repository.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getOctokit } from '@actions/github';
import { afterEach, describe, expect, it } from 'vitest';
import { actionDeps } from '../../src/actions/deps.js';
import { basicCredential } from '../../src/github/octokit.js';
import { runAction, type CoreLike } from '../../src/actions/main.js';
import { Manifest } from '../../src/core/model.js';
import { FolderArtifactStore } from '../../src/local/artifacts.js';
import { ci } from '../support/github-emulator/index.js';
import { walkFiles } from '../integration/helpers.js';
import { githubEnv, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

/** The fleet's token: a PAT (which GitHub does not let create check runs); the run's own token is an installation token. */
const PAT = 'ghp_FleetActionsPat0123456789abcdefghijKL';

function fakeCore() {
  const outputs: Record<string, string> = {};
  const summaries: string[] = [];
  const failures: string[] = [];
  const secrets: string[] = [];
  const log: string[] = [];
  const core: CoreLike = {
    setOutput: (k, v) => void (outputs[k] = v),
    setFailed: (m) => void failures.push(m),
    setSecret: (s) => void secrets.push(s),
    info: (m) => void log.push(m),
    warning: (m) => void log.push(`warning: ${m}`),
    summary: { addRaw: (t) => ({ write: async () => void summaries.push(t) }) },
  };
  return { core, outputs, summaries, failures, secrets, log };
}

/** One job: runAction with the runner's environment for that job, wired as index.ts wires it. */
async function job(env: NodeJS.ProcessEnv, store: FolderArtifactStore) {
  const c = fakeCore();
  const logger = { info: () => undefined, warn: (m: string) => c.log.push(`warn: ${m}`), error: (m: string) => c.log.push(`error: ${m}`) };
  const code = await runAction(actionDeps(env, c.core, store, logger));
  return { code, ...c };
}

describe('the fleet as Actions jobs against GitHub', () => {
  it("plan → a lane job per shard → report: PRs on the targets, a cancelled shard explained from the run's jobs, a check run on the run's commit", async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    const runToken = flow.token; // the run's GITHUB_TOKEN: an installation token
    emu.addToken(PAT, { login: 'platform-bot', type: 'pat', default: 'push' });
    for (const name of ['core', 'tool', 'docs', 'api']) await emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
    const control = await emu.createRepo({ owner: 'acme', name: 'control', files: { 'fleet.yml': '# the fleet lives here\n' } });
    emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['test'])));

    // Many retired repositories, accounted for as excluded: the report outgrows a check run's 65,535 characters.
    const retired = Array.from({ length: 300 }, (_, i) => ({
      repo: `acme/legacy-${String(i).padStart(3, '0')}`,
      reason: `retired-${i}: moved into the monorepo in 2023 and kept read-only for audit; do not touch (ticket PLAT-${1000 + i})`,
    }));
    const file = flow.fleetFile({
      name: 'codeowners',
      directive: 'Add CODEOWNERS.',
      run: 'echo "* @acme/$FLEET_LANE" > CODEOWNERS',
      max_retries: 0,
      ci: { wait: true, timeout_minutes: 1 },
      targets: [{ repo: 'acme/core' }, { repo: 'acme/tool' }, { repo: 'acme/docs' }, { repo: 'acme/api', depends_on: ['core'] }],
      exclude: retired,
    });

    // The workflow run this all happens in. Wave 1's lanes are sorted by id, one per shard (core w0-s0, docs w0-s1,
    // tool w0-s2; shard ids count waves from 0): the job of docs' shard was cancelled before it ran.
    const run = await emu.addWorkflowRun({
      owner: 'acme',
      repo: 'control',
      name: 'Fleet',
      path: '.github/workflows/fleet.yml',
      event: 'workflow_dispatch',
      status: 'in_progress',
      conclusion: null,
      jobs: [
        // A full fleet has more jobs than the 2,000 a 20-page read saw (8 waves × 256 legs): the shard that
        // matters comes after them, on the 21st page.
        ...Array.from({ length: 2_050 }, (_, i) => ({ name: `fleet / wave 8 (w7-s${i})`, conclusion: 'success' as const })),
        { name: 'fleet / plan', conclusion: 'success' },
        { name: 'fleet / wave 1 (w0-s0)', conclusion: 'success' },
        { name: 'fleet / wave 1 (w0-s1)', conclusion: 'cancelled' },
        { name: 'fleet / wave 1 (w0-s2)', conclusion: 'success' },
        { name: 'fleet / wave 2 (w1-s0)', conclusion: 'success' },
        { name: 'fleet / report', status: 'in_progress', conclusion: null },
      ],
    });
    const store = new FolderArtifactStore(join(dir, 'artifacts'));
    const base = {
      ...process.env,
      ...githubEnv(emu, PAT),
      FLEET_GITHUB_TOKEN: undefined,
      FLEET_TOKEN: PAT,
      FLEET_RUN_TOKEN: runToken,
      FLEET_FILE: file,
      GITHUB_REPOSITORY: 'acme/control',
      GITHUB_SHA: control.headSha!,
      GITHUB_RUN_ID: String(run.id),
    };
    const envFor = (mode: string, workspace: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
      const env: NodeJS.ProcessEnv = { ...base, FLEET_MODE: mode, FLEET_WORKSPACE_DIR: join(dir, 'runners', workspace), ...extra };
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      return env;
    };

    // plan
    const plan = await job(envFor('plan', 'plan'), store);
    expect(plan.code, plan.failures.join('\n')).toBe(0);
    expect(plan.outputs['fleet-id']).toBe(`fleet-run-${run.id}`);
    expect(JSON.parse(plan.outputs['wave-1']!)).toEqual(['w0-s0', 'w0-s1', 'w0-s2']);
    expect(JSON.parse(plan.outputs['wave-2']!)).toEqual(['w1-s0']);
    expect(plan.outputs['wave-3']).toBe('[]');
    const planned = Manifest.parse(JSON.parse(readFileSync(join(dir, 'runners', 'plan', 'plan', 'fleet.json'), 'utf8')).manifest);
    expect(planned.waves[0]!.shards.map((x) => [x.id, x.lanes])).toEqual([
      ['w0-s0', ['core']],
      ['w0-s1', ['docs']],
      ['w0-s2', ['tool']],
    ]);
    expect(plan.secrets).toEqual([PAT, runToken]);
    expect(plan.summaries[0]).toContain(`## Fleet Plan — fleet-run-${run.id}`);
    // One GraphQL query validated the four targets (the excluded ones are never asked about).
    expect(emu.find({ kind: 'graphql' }).map((q) => q.graphqlFields!.filter((f) => f === 'repository').length)).toEqual([4]);

    // wave 1: every shard but w0-s1 (its job was cancelled), each on a runner of its own; then wave 2.
    for (const shard of ['w0-s0', 'w0-s2', 'w1-s0']) {
      const leg = await job(envFor('lane', shard, { FLEET_SHARD: shard }), store);
      expect(leg.code, `${shard}: ${leg.failures.join('\n')}`).toBe(0);
      expect(
        leg.log.filter((l) => l.startsWith('warning:')),
        shard,
      ).toEqual([]);
      // The leg's job summary: its lanes and how each ended.
      expect(leg.summaries).toEqual([expect.stringContaining(`## Fleet shard ${shard}\n`)]);
      expect(leg.summaries[0]).toMatch(/\| Lane \| Repo \| Result \| Branch \/ PR \| Notes \|/);
      expect(leg.summaries[0]).toMatch(shard === 'w1-s0' ? /\| `api` \| `acme\/api` \| completed \| `fleet\/codeowners\/api` · \[#1\]/ : /\| completed \|/);
    }
    // The lane of wave 2 read its dependency's result from the artifact, and its checkpoint from GitHub.
    expect(existsSync(join(dir, 'runners', 'w1-s0', 'lanes', 'core', 'result.json'))).toBe(true);
    expect(emu.find({ route: '/repos/{owner}/{repo}/git/ref/{ref}', method: 'GET' }).some((q) => q.path.startsWith('/repos/acme/core/'))).toBe(true);

    // report
    const report = await job(envFor('report', 'report'), store);
    expect(report.code).toBe(1);
    expect(report.failures).toEqual(['1 lane(s) failed: see the report']);
    const m = Manifest.parse(JSON.parse(readFileSync(join(dir, 'runners', 'report', 'fleet-status.json'), 'utf8')));
    expect(report.outputs.manifest).toBe(join(dir, 'runners', 'report', 'fleet-status.json'));
    expect(report.outputs.failed).toBe('1');
    expect(m.summary).toMatchObject({ total: 304, completed: 3, failed: 1, excluded: 300 });
    const byId = new Map(m.lanes.map((l) => [l.lane, l]));
    for (const id of ['core', 'tool', 'api']) {
      const rec = byId.get(id)!;
      expect(rec, id).toMatchObject({ status: 'completed', ci_conclusion: 'success' });
      expect(rec.evidence).toMatchObject({ verified_by: 'github', head_matches: true, files_match: true });
      const [pr, ...more] = emu.pullRequests(`acme/${id}`);
      expect(more).toHaveLength(0);
      expect(pr).toMatchObject({ headSha: rec.commit, number: rec.pr_number, user: 'platform-bot', state: 'open', draft: false });
    }
    // The shard that never ran: explained from the run's jobs, read from GitHub with the run's token.
    const docs = byId.get('docs')!;
    expect(docs.status).toBe('failed');
    expect(docs.error?.class).toBe('cancelled');
    expect(docs.error?.message).toContain('"fleet / wave 1 (w0-s1)" was cancelled');
    expect(emu.pullRequests('acme/docs')).toEqual([]);
    const jobReads = emu.find({ route: '/repos/{owner}/{repo}/actions/runs/{run_id}/jobs', method: 'GET' });
    expect(jobReads.map((q) => [q.path, q.status, q.token])).toEqual(
      Array.from({ length: 21 }, () => [`/repos/acme/control/actions/runs/${run.id}/jobs`, 200, runToken]),
    );

    // The check run on the run's commit: failure, its summary the report cut to fit, with a pointer to the artifact.
    const text = readFileSync(join(dir, 'runners', 'report', 'report.md'), 'utf8');
    expect(text.length).toBeGreaterThan(65_535);
    const checks = emu.checkRuns('acme/control');
    expect(checks).toHaveLength(1);
    const check = checks[0]!;
    expect(check).toMatchObject({ name: 'Fleet: codeowners', head_sha: control.headSha, status: 'completed', conclusion: 'failure' });
    expect(check.output.title).toBe('3 completed, 1 failed, 0 skipped, 300 excluded of 304');
    const summary = check.output.summary!;
    expect(summary.length).toBeLessThanOrEqual(65_535);
    expect(summary.length).toBeGreaterThan(60_000);
    const cut = summary.indexOf('\n\n… report truncated to fit a check run');
    expect(cut).toBeGreaterThan(60_000);
    expect(text.startsWith(summary.slice(0, cut))).toBe(true);
    expect(summary).toContain(`The full report is the \`fleet-report.a1\` artifact of ${emu.url}/git/acme/control/actions/runs/${run.id}.`);
    const created = emu.find({ route: '/repos/{owner}/{repo}/check-runs', method: 'POST' });
    expect(created.map((q) => [q.status, q.token])).toEqual([[201, runToken]]);
    // The job summary is the whole report (a step summary holds 1 MiB).
    expect(report.summaries).toEqual([text.slice(0, -1)]);

    // Every job left only what it should in the artifact store.
    expect((await store.list('fleet-')).map((a) => a.name)).toEqual([
      'fleet-lane-api.a1',
      'fleet-lane-core.a1',
      'fleet-lane-tool.a1',
      'fleet-plan.a1',
      'fleet-report.a1',
    ]);
    for (const f of walkFiles(join(dir, 'artifacts'))) {
      const content = readFileSync(join(dir, 'artifacts', f), 'latin1');
      for (const secret of [PAT, runToken, basicCredential(PAT)]) expect(content.includes(secret), f).toBe(false);
    }
    emu.assertNoViolations();
  });

  // https://docs.github.com/rest/checks/runs#update-a-check-run: "The Checks API limits the number of annotations to a
  // maximum of 50 per API request. To create more than 50 annotations, you have to make multiple requests to the Update
  // a check run endpoint. Each time you update the check run, annotations are appended".
  it("the report's check run carries one annotation per lane that needs action: 50 with the create, the rest appended by updates", async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    const runToken = flow.token;
    emu.addToken(PAT, { login: 'platform-bot', type: 'pat', default: 'push' });
    const names = Array.from({ length: 53 }, (_, i) => `svc-${String(i).padStart(2, '0')}`);
    for (const name of [...names, 'fine']) await emu.createRepo({ owner: 'acme', name });
    const control = await emu.createRepo({ owner: 'acme', name: 'control', files: { 'fleet.yml': '# the fleet lives here\n' } });
    // A leg per lane (legs: per-lane), so that only `fine` runs when only its leg does.
    const file = flow.fleetFile({
      name: 'many',
      directive: 'x',
      run: 'true',
      max_retries: 0,
      legs: 'per-lane',
      targets: [...names, 'fine'].map((n) => ({ repo: `acme/${n}` })),
    });
    // Only the shard of `fine` ran: the other 53 lanes are failures the report explains from the run's jobs.
    const run = await emu.addWorkflowRun({
      owner: 'acme',
      repo: 'control',
      name: 'Fleet',
      path: '.github/workflows/fleet.yml',
      event: 'workflow_dispatch',
      status: 'in_progress',
      conclusion: null,
      jobs: [{ name: 'fleet / plan', conclusion: 'success' }],
    });
    const store = new FolderArtifactStore(join(dir, 'artifacts'));
    const env = (mode: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
      const e: NodeJS.ProcessEnv = {
        ...process.env,
        ...githubEnv(emu, PAT),
        FLEET_GITHUB_TOKEN: undefined,
        FLEET_TOKEN: PAT,
        FLEET_RUN_TOKEN: runToken,
        FLEET_FILE: file,
        GITHUB_REPOSITORY: 'acme/control',
        GITHUB_SHA: control.headSha!,
        GITHUB_RUN_ID: String(run.id),
        FLEET_MODE: mode,
        FLEET_WORKSPACE_DIR: join(dir, 'runners', mode),
        ...extra,
      };
      for (const [k, v] of Object.entries(e)) if (v === undefined) delete e[k];
      return e;
    };
    const plan = await job(env('plan'), store);
    expect(plan.code, plan.failures.join('\n')).toBe(0);
    const planned = Manifest.parse(JSON.parse(readFileSync(join(dir, 'runners', 'plan', 'plan', 'fleet.json'), 'utf8')).manifest);
    const fineShard = planned.waves[0]!.shards.find((x) => x.lanes.includes('fine'))!.id;
    // The run was cancelled after the plan: every other shard's job ended before it ran.
    for (const shard of planned.waves[0]!.shards)
      if (shard.id !== fineShard)
        emu.addWorkflowJob(run.id, { name: `fleet / wave 1 (${shard.id})`, attempt: 1, status: 'completed', conclusion: 'cancelled' });
    expect((await job(env('lane', { FLEET_SHARD: fineShard, FLEET_WORKSPACE_DIR: join(dir, 'runners', 'leg') }), store)).code).toBe(0);
    const report = await job(env('report'), store);
    expect(report.code, report.failures.join('\n')).toBe(1);

    const [check] = emu.checkRuns('acme/control');
    expect(check!.output.annotations_count).toBe(53);
    const create = emu.find({ route: '/repos/{owner}/{repo}/check-runs', method: 'POST' });
    const updates = emu.find({ route: '/repos/{owner}/{repo}/check-runs/{check_run_id}', method: 'PATCH' });
    expect(create.map((q) => q.status)).toEqual([201]);
    expect(updates.map((q) => q.status)).toEqual([200]);
    // Read back as a person would: every failed lane once, on the fleet file, as a failure; the completed lane has none.
    const listed = await getOctokit(runToken, { baseUrl: emu.url }).paginate('GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations', {
      owner: 'acme',
      repo: 'control',
      check_run_id: check!.id,
      per_page: 100,
    });
    expect(listed).toHaveLength(53);
    expect(listed.map((a) => a.title).sort()).toEqual(names.map((n) => `${n} (acme/${n}): failed`));
    for (const a of listed) {
      expect(a).toMatchObject({ path: file, start_line: 1, annotation_level: 'failure' });
      expect(a.message).toMatch(/^cancelled: .*"fleet \/ wave 1 \(w0-s\d+\)" was cancelled/);
    }
    emu.assertNoViolations();
  });
});
