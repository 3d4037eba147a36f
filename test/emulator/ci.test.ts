/**
 * CI after a push (policies per pushed commit and push count), check runs and
 * commit statuses through the API, workflow runs and jobs, push hooks, and
 * the request log that tests count calls with.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ci, startEmulator, type Emulator, type PushEvent } from '../support/github-emulator/index.js';
import { api, pushFiles, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
let n = 0;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  work = await tempDir();
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.idle();
  await emu.close();
  await removeDir(work);
});

async function newRepo(): Promise<string> {
  const name = `ci-${++n}`;
  await emu.createRepo({ owner: 'acme', name });
  return name;
}

const checksOf = async (repo: string, ref: string): Promise<Array<[string, string, string | null]>> => {
  const r = await api(emu, 'GET', `/repos/acme/${repo}/commits/${encodeURIComponent(ref)}/check-runs`);
  expect(r.status).toBe(200);
  return r.body.check_runs.map((c: { name: string; status: string; conclusion: string | null }) => [c.name, c.status, c.conclusion]);
};

describe('CI policies', () => {
  it('flaky once: the first push of a branch fails, the next succeeds', async () => {
    const repo = await newRepo();
    emu.setCi(`acme/${repo}`, ci.flakyOnce(['test', 'lint']));
    const first = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'lane', files: { 'a.txt': '1\n' } });
    expect(await checksOf(repo, first)).toEqual([
      ['lint', 'completed', 'failure'],
      ['test', 'completed', 'failure'],
    ]);
    const second = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'lane', files: { 'a.txt': '2\n' } });
    expect(await checksOf(repo, second)).toEqual([
      ['lint', 'completed', 'success'],
      ['test', 'completed', 'success'],
    ]);
    // By branch name, the latest commit's checks.
    expect((await checksOf(repo, 'lane')).map((c) => c[2])).toEqual(['success', 'success']);
  });

  it('always red, per repository; a function policy sees branch, sha and push count', async () => {
    const red = await newRepo();
    emu.setCi(`acme/${red}`, ci.red());
    const sha = await pushFiles(emu, work, { owner: 'acme', repo: red, branch: 'x', files: { 'x.txt': 'x\n' } });
    expect(await checksOf(red, sha)).toEqual([['test', 'completed', 'failure']]);

    const seen: string[] = [];
    const fn = await newRepo();
    emu.setCi(`acme/${fn}`, (ctx) => {
      seen.push(`${ctx.branch}@${ctx.sha.slice(0, 7)}#${ctx.pushCount}:${ctx.source}`);
      return ctx.branch === 'main' ? null : { statuses: [{ context: 'ci/legacy', state: ctx.pushCount > 1 ? 'success' : 'error' }] };
    });
    const s1 = await pushFiles(emu, work, { owner: 'acme', repo: fn, branch: 'b', files: { 'b.txt': '1\n' } });
    const s2 = await pushFiles(emu, work, { owner: 'acme', repo: fn, branch: 'b', files: { 'b.txt': '2\n' } });
    expect(seen).toEqual([`b@${s1.slice(0, 7)}#1:git`, `b@${s2.slice(0, 7)}#2:git`]);
    expect((await api(emu, 'GET', `/repos/acme/${fn}/commits/${s1}/status`)).body).toMatchObject({ state: 'failure', total_count: 1 });
    expect((await api(emu, 'GET', `/repos/acme/${fn}/commits/${s2}/status`)).body).toMatchObject({
      state: 'success',
      statuses: [{ context: 'ci/legacy', state: 'success' }],
    });
  });

  it('with a delay, checks run in_progress first and conclude later', async () => {
    const repo = await newRepo();
    emu.setCi(`acme/${repo}`, { checks: [{ name: 'test', conclusion: 'success' }], statuses: [{ context: 'deploy', state: 'success' }], delayMs: 3_000 });
    const sha = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'slow', files: { 's.txt': 's\n' } });
    expect(await checksOf(repo, sha)).toEqual([['test', 'in_progress', null]]);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/status`)).body.state).toBe('pending');
    await emu.idle();
    expect(await checksOf(repo, sha)).toEqual([['test', 'completed', 'success']]);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/status`)).body.state).toBe('success');
  });

  it('late CI: until its start delay the commit has no check run and no status at all, then they run and conclude', async () => {
    const repo = await newRepo();
    emu.setCi(
      `acme/${repo}`,
      ci.late(1000, { checks: [{ name: 'test', conclusion: 'success' }], statuses: [{ context: 'ci/legacy', state: 'success' }], delayMs: 50 }),
    );
    const sha = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'lane', files: { 'a.txt': '1\n' } });
    // The push has returned: GitHub has queued the workflow, nothing has reported yet.
    expect(await checksOf(repo, sha)).toEqual([]);
    const combined = await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/status`);
    expect(combined.body).toMatchObject({ state: 'pending', total_count: 0, statuses: [] });
    await emu.idle();
    expect(await checksOf(repo, sha)).toEqual([['test', 'completed', 'success']]);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/status`)).body).toMatchObject({ state: 'success', total_count: 1 });
    // Started but never finishing: after the start it is in_progress, not absent.
    const hung = await newRepo();
    emu.setCi(`acme/${hung}`, ci.late(500, ci.hanging(['e2e'])));
    const sha2 = await pushFiles(emu, work, { owner: 'acme', repo: hung, branch: 'lane', files: { 'a.txt': '1\n' } });
    expect(await checksOf(hung, sha2)).toEqual([]);
    await emu.idle();
    expect(await checksOf(hung, sha2)).toEqual([['e2e', 'in_progress', null]]);
  });

  it('held CI: nothing until the test releases it, or checks in progress until it does; idle() does not wait for a gate', async () => {
    const repo = await newRepo();
    const start = ci.held({ checks: [{ name: 'test', conclusion: 'success' }], statuses: [{ context: 'ci/legacy', state: 'failure' }] });
    emu.setCi(`acme/${repo}`, start);
    const sha = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'lane', files: { 'a.txt': '1\n' } });
    await emu.idle();
    expect(start.released).toBe(false);
    expect(await checksOf(repo, sha)).toEqual([]);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/status`)).body).toMatchObject({ state: 'pending', total_count: 0 });
    start.release();
    // Synchronously: the checks exist as soon as release() returns.
    expect(await checksOf(repo, sha)).toEqual([['test', 'completed', 'success']]);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/status`)).body).toMatchObject({ state: 'failure', total_count: 1 });
    // Released: a later push is not held.
    const sha2 = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'lane', files: { 'a.txt': '2\n' } });
    expect(await checksOf(repo, sha2)).toEqual([['test', 'completed', 'success']]);

    const slow = await newRepo();
    const finish = ci.held({ checks: [{ name: 'test', conclusion: 'failure' }], statuses: [{ context: 'deploy', state: 'success' }] }, { until: 'finish' });
    emu.setCi(`acme/${slow}`, finish);
    const sha3 = await pushFiles(emu, work, { owner: 'acme', repo: slow, branch: 'lane', files: { 'a.txt': '1\n' } });
    await emu.idle();
    expect(await checksOf(slow, sha3)).toEqual([['test', 'in_progress', null]]);
    expect((await api(emu, 'GET', `/repos/acme/${slow}/commits/${sha3}/status`)).body).toMatchObject({ state: 'pending', total_count: 1 });
    finish.release();
    expect(await checksOf(slow, sha3)).toEqual([['test', 'completed', 'failure']]);
    expect((await api(emu, 'GET', `/repos/acme/${slow}/commits/${sha3}/status`)).body).toMatchObject({ state: 'success', total_count: 1 });
  });

  it('a hanging check never concludes; `*` applies to every repository', async () => {
    emu.setCi('*', ci.hanging(['e2e']));
    const repo = await newRepo();
    const sha = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'h', files: { 'h.txt': 'h\n' } });
    expect(await checksOf(repo, sha)).toEqual([['e2e', 'in_progress', null]]);
    emu.setCi('*', null);
  });

  it('a merge and an API commit fire CI on the base branch too', async () => {
    const repo = await newRepo();
    const sources: string[] = [];
    emu.setCi(`acme/${repo}`, (ctx) => {
      sources.push(`${ctx.branch}:${ctx.source}`);
      return ci.green();
    });
    await pushFiles(emu, work, { owner: 'acme', repo, branch: 'lane', files: { 'l.txt': 'l\n' } });
    const pr = (await api(emu, 'POST', `/repos/acme/${repo}/pulls`, { body: { head: 'lane', base: 'main', title: 't' } })).body;
    expect((await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}`)).body.mergeable_state).toBe('clean');
    const m = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: {} });
    await emu.commit({ owner: 'acme', repo, branch: 'main', files: { 'after.txt': 'a\n' } });
    expect(sources).toEqual(['lane:git', 'main:merge', 'main:api']);
    expect(await checksOf(repo, m.body.sha)).toEqual([['test', 'completed', 'success']]);
  });
});

describe('push hooks', () => {
  it('onPush sees every ref change of a push, with before/after, and can be removed', async () => {
    const repo = await newRepo();
    const events: PushEvent[] = [];
    const off = emu.onPush((e) => {
      if (e.repo === repo) events.push(e);
    });
    const sha = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'feature', files: { 'f.txt': 'f\n' } });
    await api(emu, 'DELETE', `/repos/acme/${repo}/git/refs/heads/feature`);
    off();
    await pushFiles(emu, work, { owner: 'acme', repo, branch: 'ignored', files: { 'i.txt': 'i\n' } });
    expect(events).toEqual([
      expect.objectContaining({
        ref: 'refs/heads/feature',
        branch: 'feature',
        before: null,
        after: sha,
        created: true,
        deleted: false,
        source: 'git',
        pusher: 'fleet-bot',
      }),
      expect.objectContaining({ ref: 'refs/heads/feature', before: sha, after: null, deleted: true, source: 'api' }),
    ]);
  });
});

describe('concurrent pushes', () => {
  it('parallel pushes to one repository each fire exactly their own event and CI', async () => {
    const repo = await newRepo();
    const events: string[] = [];
    const off = emu.onPush((e) => {
      if (e.repo === repo) events.push(`${e.branch}:${e.created}`);
    });
    emu.setCi(`acme/${repo}`, ci.green(['build']));
    const shas = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => pushFiles(emu, work, { owner: 'acme', repo, branch: `p${i}`, files: { [`p${i}.txt`]: `${i}\n` } })),
    );
    off();
    expect(events.sort()).toEqual(['p1:true', 'p2:true', 'p3:true', 'p4:true', 'p5:true']);
    for (const sha of shas) expect(await checksOf(repo, sha)).toEqual([['build', 'completed', 'success']]);
    expect(emu.checkRuns(`acme/${repo}`)).toHaveLength(5);
  });
});

describe('check runs and statuses through the API', () => {
  it('creates, updates and reads a check run; lists the latest per name', async () => {
    const repo = await newRepo();
    const sha = (await emu.branchSha(`acme/${repo}`, 'main'))!;
    const created = await api(emu, 'POST', `/repos/acme/${repo}/check-runs`, {
      body: { name: 'fleet', head_sha: sha, status: 'in_progress', output: { title: 'Fleet', summary: 'running' } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'fleet',
      head_sha: sha,
      status: 'in_progress',
      conclusion: null,
      output: { summary: 'running' },
      app: { slug: 'github-actions' },
    });
    const id = created.body.id;
    const updated = await api(emu, 'PATCH', `/repos/acme/${repo}/check-runs/${id}`, {
      body: { conclusion: 'success', output: { title: 'Fleet', summary: 'done', text: 'all good' } },
    });
    expect(updated.body).toMatchObject({ status: 'completed', conclusion: 'success', output: { summary: 'done', text: 'all good' } });
    expect(updated.body.completed_at).toMatch(/Z$/);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/check-runs/${id}`)).body.conclusion).toBe('success');
    // completed without a conclusion is refused (GitHub's rule, beyond the schema for create).
    const bad = await api(emu, 'POST', `/repos/acme/${repo}/check-runs`, { body: { name: 'x', head_sha: sha, status: 'completed' } });
    expect(bad.status).toBe(422);
    const noCommit = await api(emu, 'POST', `/repos/acme/${repo}/check-runs`, { body: { name: 'x', head_sha: '1'.repeat(40) } });
    expect(noCommit.status).toBe(422);
    // A re-run of the same name replaces it in the default (latest) listing.
    await api(emu, 'POST', `/repos/acme/${repo}/check-runs`, { body: { name: 'fleet', head_sha: sha, conclusion: 'failure' } });
    expect(await checksOf(repo, sha)).toEqual([['fleet', 'completed', 'failure']]);
    const all = await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/check-runs?filter=all&check_name=fleet`);
    expect(all.body.total_count).toBe(2);
    expect(emu.checkRuns(`acme/${repo}`)).toHaveLength(2);
  });

  it('combines statuses: latest per context; failure over pending over success; none is pending', async () => {
    const repo = await newRepo();
    const sha = (await emu.branchSha(`acme/${repo}`, 'main'))!;
    expect((await api(emu, 'GET', `/repos/acme/${repo}/commits/main/status`)).body).toMatchObject({ state: 'pending', total_count: 0, sha });
    const post = (context: string, state: string): Promise<unknown> => api(emu, 'POST', `/repos/acme/${repo}/statuses/${sha}`, { body: { state, context } });
    await post('a', 'pending');
    await post('b', 'success');
    expect((await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/status`)).body.state).toBe('pending');
    await post('a', 'success');
    expect((await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/status`)).body).toMatchObject({ state: 'success', total_count: 2 });
    await post('c', 'error');
    expect((await api(emu, 'GET', `/repos/acme/${repo}/commits/${sha}/status`)).body.state).toBe('failure');
    expect((await api(emu, 'POST', `/repos/acme/${repo}/statuses/${'e'.repeat(40)}`, { body: { state: 'success' } })).status).toBe(422);
  });
});

describe('workflow runs and jobs', () => {
  it('serves seeded runs, their jobs with steps, single jobs and the workflow list', async () => {
    const repo = await newRepo();
    const { id, jobIds } = await emu.addWorkflowRun({
      owner: 'acme',
      repo,
      name: 'Fleet',
      path: '.github/workflows/fleet.yml',
      jobs: [
        { name: 'plan', conclusion: 'success', steps: [{ name: 'Set up job' }, { name: 'Plan', conclusion: 'success' }] },
        { name: 'lane (api)', conclusion: 'failure', steps: [{ name: 'Run lane', conclusion: 'failure' }] },
        { name: 'report', status: 'queued' },
      ],
    });
    const run = await api(emu, 'GET', `/repos/acme/${repo}/actions/runs/${id}`);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ id, name: 'Fleet', status: 'in_progress', conclusion: null, head_branch: 'main', path: '.github/workflows/fleet.yml' });
    const jobs = await api(emu, 'GET', `/repos/acme/${repo}/actions/runs/${id}/jobs`);
    expect(jobs.body.total_count).toBe(3);
    expect(jobs.body.jobs.map((j: { name: string; status: string; conclusion: string | null }) => [j.name, j.status, j.conclusion])).toEqual([
      ['plan', 'completed', 'success'],
      ['lane (api)', 'completed', 'failure'],
      ['report', 'queued', null],
    ]);
    expect(jobs.body.jobs[1].steps).toEqual([expect.objectContaining({ name: 'Run lane', conclusion: 'failure', number: 1 })]);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/actions/jobs/${jobIds[1]}`)).body.name).toBe('lane (api)');
    expect((await api(emu, 'GET', `/repos/acme/${repo}/actions/runs/999`)).status).toBe(404);
    const wf = await api(emu, 'GET', `/repos/acme/${repo}/actions/workflows`);
    expect(wf.body).toMatchObject({ total_count: 1, workflows: [{ name: 'Fleet', path: '.github/workflows/fleet.yml', id: run.body.workflow_id }] });
  });

  it('lists workflow files found on the default branch', async () => {
    await emu.createRepo({
      owner: 'acme',
      name: 'with-ci',
      files: { '.github/workflows/ci.yml': 'on: push\n', '.github/workflows/release.yaml': 'on: push\n', 'README.md': 'x' },
    });
    const wf = await api(emu, 'GET', '/repos/acme/with-ci/actions/workflows');
    expect(wf.body.workflows.map((w: { path: string }) => w.path)).toEqual(['.github/workflows/ci.yml', '.github/workflows/release.yaml']);
  });
});

describe('request log', () => {
  it('records kind, route, operationId, status, token and body, and counts them', async () => {
    const repo = await newRepo();
    emu.resetLog();
    await api(emu, 'GET', `/repos/acme/${repo}`);
    await api(emu, 'GET', `/repos/acme/${repo}/pulls?state=all`);
    await api(emu, 'GET', `/repos/acme/${repo}/pulls`);
    await api(emu, 'POST', '/graphql', { body: { query: '{ rateLimit { cost } }' } });
    await pushFiles(emu, work, { owner: 'acme', repo, branch: 'x', files: { 'x.txt': 'x\n' } });
    await api(emu, 'POST', `/repos/acme/${repo}/pulls`, { body: { head: 'x', base: 'main', title: 'T' } });
    expect(emu.count({ route: '/repos/{owner}/{repo}/pulls' })).toBe(3);
    expect(emu.count({ route: '/repos/{owner}/{repo}/pulls', method: 'GET' })).toBe(2);
    expect(emu.count({ operationId: 'pulls/create', status: 201 })).toBe(1);
    expect(emu.count({ kind: 'graphql' })).toBe(1);
    expect(emu.count({ kind: 'git', operationId: 'git-receive-pack' })).toBe(2);
    expect(emu.count({ kind: 'git' })).toBeGreaterThanOrEqual(4);
    expect(emu.count({ path: /\/pulls$/ })).toBe(3);
    const create = emu.find({ operationId: 'pulls/create' })[0]!;
    expect(create).toMatchObject({
      kind: 'rest',
      method: 'POST',
      path: `/repos/acme/${repo}/pulls`,
      token: emu.token,
      login: 'fleet-bot',
      body: { head: 'x', base: 'main', title: 'T' },
    });
    expect(create.time).toBeLessThanOrEqual(Date.now());
    expect(create.durationMs).toBeGreaterThanOrEqual(0);
    expect(emu.find({ route: '/repos/{owner}/{repo}/pulls', method: 'GET' }).map((r) => r.query)).toEqual(['state=all', '']);
    emu.resetLog();
    expect(emu.requests).toEqual([]);
  });
});
