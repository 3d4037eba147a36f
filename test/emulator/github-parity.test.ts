/**
 * Where the emulator answers as api.github.com does beyond what the OpenAPI description checks (issue 24):
 * `Location` on creates, the raw media type and the root folder of contents, `Link` URLs by repository id (and
 * those URLs answering), the `status` of error bodies, and fields the description names on issues and
 * repositories. Each test names its source; recordings are in fixtures/octokit-fixtures (see its README.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getOctokit } from '@actions/github';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api } from './helpers.js';

let emu: Emulator;
let headSha: string;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  const created = await emu.createRepo({ owner: 'acme', name: 'api', files: { 'README.md': '# api\n', 'src/a.ts': 'export const å = "ü";\n' } });
  headSha = created.headSha!;
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
});

describe('Location on 201 (octokit/fixtures recordings: paginate-issues, labels, create-status, git-refs)', () => {
  it('names the new issue, label, commit status and ref by their API URL', async () => {
    const issue = await api(emu, 'POST', '/repos/acme/api/issues', { body: { title: 'Issue without a label' } });
    expect([issue.status, issue.headers.get('location')]).toEqual([201, `${emu.url}/repos/acme/api/issues/${issue.body.number}`]);
    const label = await api(emu, 'POST', '/repos/acme/api/labels', { body: { name: 'test label', color: '663399' } });
    expect([label.status, label.headers.get('location')]).toEqual([201, `${emu.url}/repos/acme/api/labels/test%20label`]);
    // A status is located by its commit, not by its id, as recorded.
    const status = await api(emu, 'POST', `/repos/acme/api/statuses/${headSha}`, { body: { state: 'failure', context: 'example' } });
    expect([status.status, status.headers.get('location')]).toEqual([201, `${emu.url}/repos/acme/api/statuses/${headSha}`]);
    const ref = await api(emu, 'POST', '/repos/acme/api/git/refs', { body: { ref: 'refs/heads/test', sha: headSha } });
    expect([ref.status, ref.headers.get('location')]).toEqual([201, `${emu.url}/repos/acme/api/git/refs/heads/test`]);
    for (const r of [issue, label, status, ref]) expect(r.headers.get('location')).toBe(r.body.url);
  });
});

describe('contents (https://docs.github.com/rest/repos/contents#get-repository-content; octokit/fixtures get-content)', () => {
  it('answers Accept: application/vnd.github.raw and …v3.raw with the bytes and the raw media type', async () => {
    const raw = Buffer.from('export const å = "ü";\n');
    for (const accept of ['application/vnd.github.raw', 'application/vnd.github.v3.raw', 'application/vnd.github.raw+json']) {
      const res = await fetch(`${emu.url}/repos/acme/api/contents/src/a.ts`, { headers: { accept, authorization: `token ${emu.token}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(`${accept}; charset=utf-8`);
      expect(res.headers.get('x-github-media-type')).toBe('github.v3; param=raw');
      expect(Buffer.from(await res.arrayBuffer())).toEqual(raw);
    }
    // Octokit asks for it with mediaType.format, and gets the text as data.
    const octokit = getOctokit(emu.token!, { baseUrl: emu.url });
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/contents/{path}', {
      owner: 'acme',
      repo: 'api',
      path: 'README.md',
      mediaType: { format: 'raw' },
    });
    expect(data).toBe('# api\n');
  });

  it('lists the root folder for …/contents/ and …/contents, and any folder by its path', async () => {
    const main = await emu.branchSha('acme/api', 'main');
    for (const p of ['/repos/acme/api/contents/', '/repos/acme/api/contents']) {
      const res = await api(emu, 'GET', p);
      expect(res.status).toBe(200);
      expect(res.body.map((e: { name: string; type: string }) => [e.name, e.type])).toEqual([
        ['README.md', 'file'],
        ['src', 'dir'],
      ]);
      expect(res.body[0]).toMatchObject({ path: 'README.md', size: 6, url: `${emu.url}/repos/acme/api/contents/README.md?ref=main` });
      expect(res.body[0]).not.toHaveProperty('content');
      expect(res.body[1]).toMatchObject({ size: 0, download_url: null, git_url: expect.stringMatching(/\/git\/trees\/[0-9a-f]{40}$/) });
    }
    const src = await api(emu, 'GET', `/repos/acme/api/contents/src?ref=${main}`);
    expect(src.body.map((e: { path: string }) => e.path)).toEqual(['src/a.ts']);
    // A folder has no raw form: the listing again ("Directories and submodules do not support custom media types").
    const rawDir = await api(emu, 'GET', '/repos/acme/api/contents/', { headers: { accept: 'application/vnd.github.raw' } });
    expect(Array.isArray(rawDir.body)).toBe(true);
    expect((await api(emu, 'GET', '/repos/acme/api/contents/nope')).status).toBe(404);
  });
});

describe('Link by repository id (octokit/fixtures paginate-issues)', () => {
  it('writes next/last as /repositories/{id}/… with the request query and the page, and answers those URLs', async () => {
    await emu.createRepo({ owner: 'acme', name: 'paged', files: { 'README.md': '# p\n' } });
    for (let i = 0; i < 7; i++) emu.createIssue('acme/paged', { title: `issue ${i}` });
    emu.createIssue('acme/paged', { title: 'labelled', labels: Array.from({ length: 31 }, (_, i) => `l${i}`) });
    const id = emu.repo('acme/paged')!.id;
    const first = await api(emu, 'GET', '/repos/acme/paged/issues?per_page=3');
    expect(first.headers.get('link')).toBe(
      `<${emu.url}/repositories/${id}/issues?per_page=3&page=2>; rel="next", <${emu.url}/repositories/${id}/issues?per_page=3&page=3>; rel="last"`,
    );
    // Without per_page GitHub writes only the page (30 a page).
    expect((await api(emu, 'GET', '/repos/acme/paged/labels')).headers.get('link')).toBe(
      `<${emu.url}/repositories/${id}/labels?page=2>; rel="next", <${emu.url}/repositories/${id}/labels?page=2>; rel="last"`,
    );
    const second = await api(emu, 'GET', `/repositories/${id}/issues?per_page=3&page=2`);
    expect(second.status).toBe(200);
    expect(second.headers.get('link')).toContain(`<${emu.url}/repositories/${id}/issues?per_page=3&page=1>; rel="prev"`);
    expect(emu.find({ path: `/repositories/${id}/issues` })[0]?.route).toBe('/repos/{owner}/{repo}/issues');
    // Octokit's paginate follows the Link URL as given.
    const octokit = getOctokit(emu.token!, { baseUrl: emu.url });
    const all = await octokit.paginate('GET /repos/{owner}/{repo}/issues', { owner: 'acme', repo: 'paged', per_page: 3 });
    expect(all).toHaveLength(8);
    const labels = await octokit.paginate('GET /repos/{owner}/{repo}/labels', { owner: 'acme', repo: 'paged', per_page: 10 });
    expect(labels).toHaveLength(31);
    expect((await api(emu, 'GET', '/repositories/999999999/issues')).status).toBe(404);
    expect(emu.violations.filter((v) => v.path === '/repositories/999999999/issues')).toHaveLength(1);
    emu.resetViolations();
  });
});

describe('error bodies (github/rest-api-description#3726, 2024: message, documentation_url and status "404")', () => {
  it('carry status as a string beside message and documentation_url, whatever refuses', async () => {
    const bad = getOctokit('nope', { baseUrl: emu.url });
    const answers = [
      await api(emu, 'GET', '/repos/acme/missing'),
      await api(emu, 'GET', '/repos/acme/api/labels/missing'),
      await api(emu, 'POST', '/repos/acme/api/labels', { body: { name: 'foo', color: 'invalid' } }),
      await api(emu, 'POST', '/repos/acme/api/labels', { rawBody: '{', headers: { 'content-type': 'application/json' } }),
      await api(emu, 'GET', '/repos/acme/api/git/ref/heads/missing'),
      await api(emu, 'GET', '/no/such/path'),
    ];
    for (const r of answers) {
      expect(r.body).toMatchObject({
        message: expect.any(String),
        documentation_url: expect.stringMatching(/^https:\/\/docs\.github\.com\//),
        status: String(r.status),
      });
    }
    expect(answers.map((r) => r.status)).toEqual([404, 404, 422, 400, 404, 404]);
    await expect(bad.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'api' })).rejects.toMatchObject({
      status: 401,
      response: { data: { status: '401' } },
    });
    emu.resetViolations();
  });
});

describe('fields the description names (@octokit/openapi 23 `issue`, `full-repository`; octokit/fixtures add-labels-to-issue, get-repository, paginate-issues)', () => {
  it('issues carry reactions, timeline_url, performed_via_github_app and closed_by; a PR listed as an issue too', async () => {
    const issue = emu.createIssue('acme/api', { title: 'fields' });
    const one = (await api(emu, 'GET', `/repos/acme/api/issues/${issue.number}`)).body;
    expect(one).toMatchObject({
      timeline_url: `${emu.url}/repos/acme/api/issues/${issue.number}/timeline`,
      performed_via_github_app: null,
      closed_by: null,
      reactions: {
        url: `${emu.url}/repos/acme/api/issues/${issue.number}/reactions`,
        total_count: 0,
        '+1': 0,
        '-1': 0,
        laugh: 0,
        hooray: 0,
        confused: 0,
        heart: 0,
        rocket: 0,
        eyes: 0,
      },
    });
    const closed = await api(emu, 'PATCH', `/repos/acme/api/issues/${issue.number}`, { body: { state: 'closed' } });
    expect(closed.body.closed_by.login).toBe(emu.login);
    await emu.commit({ owner: 'acme', repo: 'api', branch: 'feature', files: { 'f.txt': 'f\n' } });
    await api(emu, 'POST', '/repos/acme/api/pulls', { body: { head: 'feature', base: 'main', title: 'a PR' } });
    const listed = (await api(emu, 'GET', '/repos/acme/api/issues?state=all')).body as Array<Record<string, unknown>>;
    expect(listed.some((i) => i.pull_request !== undefined)).toBe(true);
    for (const i of listed) expect(Object.keys(i)).toEqual(expect.arrayContaining(['reactions', 'timeline_url', 'performed_via_github_app']));
    // GitHub sends closed_by on one issue only, not in a listing (octokit/fixtures paginate-issues; hub4j/github-api#60).
    for (const i of listed) expect(i).not.toHaveProperty('closed_by');
  });

  it('GET of a repository carries temp_clone_token', async () => {
    const repo = (await api(emu, 'GET', '/repos/acme/api')).body;
    expect(repo.temp_clone_token).toBe('');
  });
});
