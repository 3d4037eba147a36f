/**
 * Forks and pull requests from them, as a contributor without write access works:
 * - POST /repos/{owner}/{repo}/forks answers 202 with the fork, under the token's user or the organization named,
 *   and with the existing fork when there is one (https://docs.github.com/rest/repos/forks#create-a-fork);
 * - GET of a fork names its `parent` and `source` (https://docs.github.com/rest/repos/repos#get-a-repository);
 * - a PR's `head` is `owner:branch` for a branch of a fork, and `head=owner:branch` filters the list by the fork's
 *   owner (https://docs.github.com/rest/pulls/pulls#create-a-pull-request, #list-pull-requests);
 * - the base repository runs its CI on the fork's head commit (pull_request), and Actions is off in a fork
 *   (https://docs.github.com/actions/managing-workflow-runs-and-deployments/managing-workflow-runs/approving-workflow-runs-from-public-forks);
 * - the PR's author edits and closes it without write access to the base.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ci, startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api, pushFiles, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
const OUTSIDER = 'ghp_outsider000000000000000000000000000';

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  work = await tempDir();
  // A contributor who can read acme's repositories and write only their own.
  emu.addToken(OUTSIDER, { login: 'octo', type: 'pat', permissions: { 'acme/*': 'pull' } });
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

describe('forks', () => {
  it('forks under the token user, once; the fork names its parent; pushing to the parent is refused', async () => {
    await emu.createRepo({ owner: 'acme', name: 'core', files: { 'README.md': '# core\n' } });
    const created = await api(emu, 'POST', '/repos/acme/core/forks', { token: OUTSIDER, body: { default_branch_only: true } });
    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({ full_name: 'octo/core', fork: true, default_branch: 'main' });
    const again = await api(emu, 'POST', '/repos/acme/core/forks', { token: OUTSIDER, body: {} });
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(created.body.id);
    const read = await api(emu, 'GET', '/repos/octo/core', { token: OUTSIDER });
    expect(read.body).toMatchObject({ fork: true, parent: { full_name: 'acme/core' }, source: { full_name: 'acme/core' } });
    expect(await emu.branchSha('octo/core', 'main')).toBe(await emu.branchSha('acme/core', 'main'));
    await expect(pushFiles(emu, work, { owner: 'acme', repo: 'core', branch: 'x', files: { 'x.txt': 'x\n' }, token: OUTSIDER })).rejects.toThrow(
      /403|denied|not accessible/i,
    );
  });

  it('opens a PR from owner:branch of the fork, lists it by that head, runs the base CI on it and follows pushes', async () => {
    await emu.createRepo({ owner: 'acme', name: 'api', files: { 'README.md': '# api\n' } });
    emu.setCi('acme/api', ci.green(['test']));
    await api(emu, 'POST', '/repos/acme/api/forks', { token: OUTSIDER, body: {} });
    const first = await pushFiles(emu, work, { owner: 'octo', repo: 'api', branch: 'fix', files: { 'fix.txt': '1\n' }, token: OUTSIDER });
    // No PR yet, and Actions is off in a fork: no CI on the fork's push.
    expect((await api(emu, 'GET', `/repos/octo/api/commits/${first}/check-runs`, { token: OUTSIDER })).body.total_count).toBe(0);

    const bad = await api(emu, 'POST', '/repos/acme/api/pulls', { token: OUTSIDER, body: { head: 'nobody:fix', base: 'main', title: 'x' } });
    expect(bad.status).toBe(422);
    const pr = await api(emu, 'POST', '/repos/acme/api/pulls', {
      token: OUTSIDER,
      body: { head: 'octo:fix', base: 'main', title: 'Fix', maintainer_can_modify: true },
    });
    expect(pr.status).toBe(201);
    expect(pr.body).toMatchObject({
      head: { label: 'octo:fix', ref: 'fix', sha: first, repo: { full_name: 'octo/api' } },
      base: { repo: { full_name: 'acme/api' } },
      commits: 1,
      changed_files: 1,
    });
    const listed = await api(emu, 'GET', '/repos/acme/api/pulls?head=octo:fix', { token: OUTSIDER });
    expect(listed.body.map((p: { number: number }) => p.number)).toEqual([pr.body.number]);
    expect((await api(emu, 'GET', '/repos/acme/api/pulls?head=acme:fix', { token: OUTSIDER })).body).toEqual([]);
    const checks = await api(emu, 'GET', `/repos/acme/api/commits/${first}/check-runs`, { token: OUTSIDER });
    expect(checks.body.check_runs.map((r: { name: string; conclusion: string }) => [r.name, r.conclusion])).toEqual([['test', 'success']]);

    const second = await pushFiles(emu, work, { owner: 'octo', repo: 'api', branch: 'fix', files: { 'fix.txt': '2\n' }, token: OUTSIDER });
    const now = await api(emu, 'GET', `/repos/acme/api/pulls/${pr.body.number}`, { token: OUTSIDER });
    expect(now.body.head.sha).toBe(second);
    expect(
      (await api(emu, 'GET', `/repos/acme/api/compare/main...${second}`, { token: OUTSIDER })).body.files.map((f: { filename: string }) => f.filename),
    ).toEqual(['fix.txt']);
    expect((await api(emu, 'GET', `/repos/acme/api/commits/${second}/check-runs`, { token: OUTSIDER })).body.total_count).toBe(1);

    // Its author edits it without write access; a maintainer merges it.
    const edited = await api(emu, 'PATCH', `/repos/acme/api/pulls/${pr.body.number}`, { token: OUTSIDER, body: { body: 'edited' } });
    expect(edited.status).toBe(200);
    const merged = await api(emu, 'PUT', `/repos/acme/api/pulls/${pr.body.number}/merge`, { body: { merge_method: 'squash' } });
    expect(merged.status).toBe(200);
    expect((await api(emu, 'GET', '/repos/acme/api/contents/fix.txt?ref=main')).status).toBe(200);
  });

  it('forks into an organization named, and refuses a name that is not one', async () => {
    await emu.createRepo({ owner: 'acme', name: 'web', files: { 'README.md': '# web\n' } });
    const refused = await api(emu, 'POST', '/repos/acme/web/forks', { token: OUTSIDER, body: { organization: 'octo' } });
    expect(refused.status).toBe(422);
    await emu.createRepo({ owner: 'forkers', name: 'placeholder', ownerType: 'Organization' });
    const forked = await api(emu, 'POST', '/repos/acme/web/forks', { token: OUTSIDER, body: { organization: 'forkers' } });
    expect(forked.status).toBe(202);
    expect(forked.body).toMatchObject({ full_name: 'forkers/web', fork: true });
  });
});
