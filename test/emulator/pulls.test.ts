/**
 * Pull requests over real git: create, list by head, update, files, merge
 * (merge commit, squash, rebase) performed in the bare repository, the head
 * sha following pushes, and the 405/409 refusals.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api, mustGit, pushFiles, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
let n = 0;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  work = await tempDir();
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

/** A fresh repository with a lane branch pushed over HTTP. */
async function repoWithBranch(files: Record<string, string> = { 'lane.txt': 'lane\n' }): Promise<{ repo: string; sha: string; branch: string }> {
  const repo = `svc-${++n}`;
  await emu.createRepo({ owner: 'acme', name: repo, files: { 'README.md': '# svc\n', 'src/a.ts': 'export const a = 1;\n' } });
  const branch = `fleet/demo/${repo}`;
  const sha = await pushFiles(emu, work, { owner: 'acme', repo, branch, files });
  return { repo, sha, branch };
}

async function openPr(repo: string, branch: string, extra: Record<string, unknown> = {}): Promise<any> {
  const r = await api(emu, 'POST', `/repos/acme/${repo}/pulls`, {
    body: { head: `acme:${branch}`, base: 'main', title: `Fleet: ${repo}`, body: 'made by fleet', ...extra },
  });
  expect(r.status).toBe(201);
  return r.body;
}

describe('pull requests', () => {
  it("creates a PR shaped like GitHub's, with the pushed head", async () => {
    const { repo, sha, branch } = await repoWithBranch();
    const pr = await openPr(repo, branch, { draft: true });
    expect(pr).toMatchObject({
      number: 1,
      state: 'open',
      draft: true,
      merged: false,
      mergeable: null,
      title: `Fleet: ${repo}`,
      body: 'made by fleet',
      user: { login: 'fleet-bot' },
      head: { ref: branch, sha, label: `acme:${branch}`, repo: { full_name: `acme/${repo}` } },
      base: { ref: 'main', sha: await emu.branchSha(`acme/${repo}`, 'main') },
      html_url: `${emu.url}/acme/${repo}/pull/1`,
      url: `${emu.url}/repos/acme/${repo}/pulls/1`,
      commits: 1,
      changed_files: 1,
      additions: 1,
      deletions: 0,
    });
    expect(pr.node_id).toMatch(/^PR_/);
  });

  it('refuses a duplicate, a missing branch and a branch with no commits (422, not violations)', async () => {
    const { repo, branch } = await repoWithBranch();
    await openPr(repo, branch);
    const dup = await api(emu, 'POST', `/repos/acme/${repo}/pulls`, { body: { head: branch, base: 'main', title: 'again' } });
    expect(dup.status).toBe(422);
    expect(dup.body.errors[0].message).toBe(`A pull request already exists for acme:${branch}.`);
    const missing = await api(emu, 'POST', `/repos/acme/${repo}/pulls`, { body: { head: 'nope', base: 'main', title: 'x' } });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual([{ resource: 'PullRequest', field: 'head', code: 'invalid' }]);
    await emu.commit({ owner: 'acme', repo, branch: 'same', files: {}, from: (await emu.branchSha(`acme/${repo}`, 'main'))! });
    const none = await api(emu, 'POST', `/repos/acme/${repo}/pulls`, { body: { head: 'acme:main', base: 'main', title: 'x' } });
    expect(none.status).toBe(422);
    expect(none.body.errors[0].message).toBe('No commits between main and main');
    expect(emu.violations).toEqual([]);
  });

  it('lists PRs by head=owner:branch and state', async () => {
    const { repo, branch } = await repoWithBranch();
    const other = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'other', files: { 'o.txt': 'o\n' } });
    expect(other).toMatch(/^[0-9a-f]{40}$/);
    const pr = await openPr(repo, branch);
    await openPr(repo, 'other');
    const byHead = await api(emu, 'GET', `/repos/acme/${repo}/pulls?head=${encodeURIComponent(`acme:${branch}`)}&state=all`);
    expect(byHead.body.map((p: { number: number }) => p.number)).toEqual([pr.number]);
    expect(byHead.body[0]).toMatchObject({ head: { ref: branch }, draft: false });
    expect((await api(emu, 'GET', `/repos/acme/${repo}/pulls?head=someone-else:${branch}`)).body).toEqual([]);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/pulls`)).body.map((p: { number: number }) => p.number)).toEqual([2, 1]);
    await api(emu, 'PATCH', `/repos/acme/${repo}/pulls/${pr.number}`, { body: { state: 'closed' } });
    expect((await api(emu, 'GET', `/repos/acme/${repo}/pulls?head=acme:${branch}`)).body).toEqual([]);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/pulls?head=acme:${branch}&state=closed`)).body).toHaveLength(1);
  });

  it('updates title, body, base and state', async () => {
    const { repo, branch } = await repoWithBranch();
    await emu.commit({ owner: 'acme', repo, branch: 'release', files: { 'r.txt': 'r\n' } });
    const pr = await openPr(repo, branch);
    const r = await api(emu, 'PATCH', `/repos/acme/${repo}/pulls/${pr.number}`, { body: { title: 'New title', body: 'New body', base: 'release' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ title: 'New title', body: 'New body', base: { ref: 'release', sha: await emu.branchSha(`acme/${repo}`, 'release') } });
    const badBase = await api(emu, 'PATCH', `/repos/acme/${repo}/pulls/${pr.number}`, { body: { base: 'nope' } });
    expect(badBase.status).toBe(422);
    expect((await api(emu, 'PATCH', `/repos/acme/${repo}/pulls/${pr.number}`, { body: { state: 'closed' } })).body.state).toBe('closed');
    expect((await api(emu, 'PATCH', `/repos/acme/${repo}/pulls/${pr.number}`, { body: { state: 'open' } })).body.state).toBe('open');
  });

  it('a push over HTTP moves the PR head sha; the files follow', async () => {
    const { repo, sha, branch } = await repoWithBranch();
    const pr = await openPr(repo, branch);
    expect(pr.head.sha).toBe(sha);
    const second = await pushFiles(emu, work, { owner: 'acme', repo, branch, files: { 'src/a.ts': 'export const a = 2;\n' } });
    const now = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}`);
    expect(now.body.head.sha).toBe(second);
    expect(now.body.commits).toBe(2);
    const files = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}/files`);
    expect(files.body.map((f: { filename: string; status: string }) => `${f.status} ${f.filename}`)).toEqual(['added lane.txt', 'modified src/a.ts']);
    expect(files.body[1]).toMatchObject({ additions: 1, deletions: 1, changes: 2, sha: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect(emu.pullRequests(`acme/${repo}`)[0]!.headSha).toBe(second);
    // A force-push back is seen too.
    const forced = await pushFiles(emu, work, { owner: 'acme', repo, branch: 'tmp', files: { 'z.txt': 'z\n' } });
    const dir = `${work}/force-${repo}`;
    await mustGit(['clone', '--quiet', emu.gitUrl('acme', repo), dir], { env: emu.gitEnv() });
    await mustGit(['push', '--quiet', '--force', 'origin', `${forced}:refs/heads/${branch}`], { cwd: dir, env: emu.gitEnv() });
    expect((await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}`)).body.head.sha).toBe(forced);
  });

  it('deleting the head branch closes the PR and keeps its last head sha', async () => {
    const { repo, sha, branch } = await repoWithBranch();
    const pr = await openPr(repo, branch);
    expect((await api(emu, 'DELETE', `/repos/acme/${repo}/git/refs/heads/${branch}`)).status).toBe(204);
    const after = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}`);
    expect(after.body).toMatchObject({ state: 'closed', merged: false, head: { sha } });
    const reopen = await api(emu, 'PATCH', `/repos/acme/${repo}/pulls/${pr.number}`, { body: { state: 'open' } });
    expect(reopen.status).toBe(422);
  });

  it('requests reviewers and teams, adds labels and assignees', async () => {
    const { repo, branch } = await repoWithBranch();
    const pr = await openPr(repo, branch);
    const rr = await api(emu, 'POST', `/repos/acme/${repo}/pulls/${pr.number}/requested_reviewers`, {
      body: { reviewers: ['octocat'], team_reviewers: ['platform'] },
    });
    expect(rr.status).toBe(201);
    expect(rr.body.requested_reviewers.map((u: { login: string }) => u.login)).toEqual(['octocat']);
    expect(rr.body.requested_teams.map((t: { slug: string }) => t.slug)).toEqual(['platform']);
    const self = await api(emu, 'POST', `/repos/acme/${repo}/pulls/${pr.number}/requested_reviewers`, { body: { reviewers: ['fleet-bot'] } });
    expect(self.status).toBe(422);
    expect(self.body.message).toBe('Review cannot be requested from pull request author.');
    const labels = await api(emu, 'POST', `/repos/acme/${repo}/issues/${pr.number}/labels`, { body: { labels: ['fleet', 'automated'] } });
    expect(labels.status).toBe(200);
    expect(labels.body.map((l: { name: string }) => l.name)).toEqual(['fleet', 'automated']);
    const more = await api(emu, 'POST', `/repos/acme/${repo}/issues/${pr.number}/labels`, { body: { labels: ['fleet', { name: 'deps' }] } });
    expect(more.body.map((l: { name: string }) => l.name)).toEqual(['fleet', 'automated', 'deps']);
    const assignees = await api(emu, 'POST', `/repos/acme/${repo}/issues/${pr.number}/assignees`, { body: { assignees: ['hubot'] } });
    expect(assignees.status).toBe(201);
    expect(assignees.body).toMatchObject({ number: pr.number, assignees: [{ login: 'hubot' }], pull_request: { url: expect.any(String) } });
    const again = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}`);
    expect(again.body).toMatchObject({
      labels: [{ name: 'fleet' }, { name: 'automated' }, { name: 'deps' }],
      assignee: { login: 'hubot' },
      requested_reviewers: [{ login: 'octocat' }],
    });
  });
});

describe('reviews', () => {
  const OCTOCAT = 'ghs_emulatorOctocatReviewerToken000001';
  beforeAll(() => emu.addToken(OCTOCAT, { login: 'octocat', default: 'pull' }));

  it("lists and creates reviews; a submitted review answers the request, a pending one is its author's only", async () => {
    const { repo, branch, sha } = await repoWithBranch();
    const pr = await openPr(repo, branch);
    await api(emu, 'POST', `/repos/acme/${repo}/pulls/${pr.number}/requested_reviewers`, {
      body: { reviewers: ['octocat', 'hubot'], team_reviewers: ['platform'] },
    });
    const requested = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}/requested_reviewers`);
    expect(requested.status).toBe(200);
    expect(requested.body.users.map((u: { login: string }) => u.login)).toEqual(['octocat', 'hubot']);
    expect(requested.body.teams.map((t: { slug: string }) => t.slug)).toEqual(['platform']);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}/reviews`)).body).toEqual([]);

    const approved = await api(emu, 'POST', `/repos/acme/${repo}/pulls/${pr.number}/reviews`, { token: OCTOCAT, body: { event: 'APPROVE' } });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ user: { login: 'octocat' }, state: 'APPROVED', commit_id: sha, submitted_at: expect.any(String) });
    // GitHub drops a reviewer from requested_reviewers once they have reviewed; the team stays requested.
    const after = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}`);
    expect(after.body.requested_reviewers.map((u: { login: string }) => u.login)).toEqual(['hubot']);
    expect(after.body.requested_teams.map((t: { slug: string }) => t.slug)).toEqual(['platform']);

    // A review without an event stays PENDING and only its author sees it.
    const pending = await api(emu, 'POST', `/repos/acme/${repo}/pulls/${pr.number}/reviews`, { body: { body: 'draft notes' } });
    expect(pending.body.state).toBe('PENDING');
    expect(pending.body.submitted_at).toBeUndefined();
    const mine = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}/reviews`);
    expect(mine.body.map((r: { state: string }) => r.state)).toEqual(['APPROVED', 'PENDING']);
    const theirs = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}/reviews`, { token: OCTOCAT });
    expect(theirs.body.map((r: { state: string }) => r.state)).toEqual(['APPROVED']);

    // The author cannot approve their own PR; REQUEST_CHANGES and COMMENT need a body.
    const own = await api(emu, 'POST', `/repos/acme/${repo}/pulls/${pr.number}/reviews`, { body: { event: 'APPROVE' } });
    expect(own.status).toBe(422);
    expect(own.body.errors).toEqual(['Review Can not approve your own pull request']);
    const bare = await api(emu, 'POST', `/repos/acme/${repo}/pulls/${pr.number}/reviews`, { token: OCTOCAT, body: { event: 'REQUEST_CHANGES' } });
    expect(bare.status).toBe(422);
    // An unknown event is not GitHub's API: refused and recorded.
    const bad = await api(emu, 'POST', `/repos/acme/${repo}/pulls/${pr.number}/reviews`, { token: OCTOCAT, body: { event: 'LGTM' } });
    expect(bad.status).toBe(422);
    expect(emu.violations.map((v) => v.kind)).toEqual(['body']);
    emu.resetViolations();
  });
});

describe('required status checks', () => {
  const PUSHER = 'ghs_emulatorPushOnlyToken0000000000001';
  beforeAll(() => emu.addToken(PUSHER, { login: 'pusher', default: 'push' }));

  it('classic protection: shown on the branch, read in full by admins only, and a missing check refuses the merge (405)', async () => {
    const { repo, branch, sha } = await repoWithBranch();
    expect((await api(emu, 'GET', `/repos/acme/${repo}/branches/main/protection`)).body.message).toBe('Branch not protected');
    emu.protectBranch(`acme/${repo}`, 'main', { requiredChecks: ['test', 'ci/legacy'], enforceAdmins: true });
    const b = await api(emu, 'GET', `/repos/acme/${repo}/branches/main`, { token: PUSHER });
    expect(b.body).toMatchObject({ protected: true, protection: { enabled: true, required_status_checks: { contexts: ['test', 'ci/legacy'] } } });
    const full = await api(emu, 'GET', `/repos/acme/${repo}/branches/main/protection`);
    expect(full.status).toBe(200);
    expect(full.body).toMatchObject({ required_status_checks: { contexts: ['test', 'ci/legacy'] }, enforce_admins: { enabled: true } });
    expect((await api(emu, 'GET', `/repos/acme/${repo}/branches/main/protection/required_status_checks`)).body.contexts).toEqual(['test', 'ci/legacy']);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/branches/main/protection`, { token: PUSHER })).status).toBe(403);
    // Rulesets hold none of them.
    expect((await api(emu, 'GET', `/repos/acme/${repo}/rules/branches/main`, { token: PUSHER })).body).toEqual([]);

    const pr = await openPr(repo, branch);
    await api(emu, 'POST', `/repos/acme/${repo}/check-runs`, { body: { name: 'test', head_sha: sha, conclusion: 'success' } });
    const refused = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: { sha } });
    expect(refused.status).toBe(405);
    expect(refused.body.message).toBe('Required status check "ci/legacy" is expected.');
    await api(emu, 'POST', `/repos/acme/${repo}/statuses/${sha}`, { body: { context: 'ci/legacy', state: 'success' } });
    expect((await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: { sha } })).status).toBe(200);
  });

  it('an admin bypasses classic protection by default (enforce_admins off); nobody bypasses a ruleset here', async () => {
    const { repo, branch } = await repoWithBranch();
    emu.protectBranch(`acme/${repo}`, 'main', { requiredChecks: ['test'] });
    expect((await api(emu, 'GET', `/repos/acme/${repo}/branches/main/protection`)).body.enforce_admins.enabled).toBe(false);
    const pr = await openPr(repo, branch);
    const asPusher = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { token: PUSHER, body: {} });
    expect(asPusher.status).toBe(405);
    expect((await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: {} })).status).toBe(200);

    const r2 = await repoWithBranch();
    emu.protectBranch(`acme/${r2.repo}`, 'main', { requiredChecks: ['build'], via: 'ruleset' });
    const rules = await api(emu, 'GET', `/repos/acme/${r2.repo}/rules/branches/main`, { token: PUSHER });
    expect(rules.status).toBe(200);
    expect(rules.body).toMatchObject([
      { type: 'required_status_checks', parameters: { required_status_checks: [{ context: 'build' }] }, ruleset_source_type: 'Repository' },
    ]);
    // A ruleset does not show as classic protection.
    expect((await api(emu, 'GET', `/repos/acme/${r2.repo}/branches/main`)).body.protected).toBe(false);
    const pr2 = await openPr(r2.repo, r2.branch);
    expect((await api(emu, 'GET', `/repos/acme/${r2.repo}/pulls/${pr2.number}`)).body.mergeable_state).toBe('blocked');
    const refused = await api(emu, 'PUT', `/repos/acme/${r2.repo}/pulls/${pr2.number}/merge`, { body: {} });
    expect(refused.status).toBe(405);
    expect(refused.body.message).toBe('Required status check "build" is expected.');
  });
});

describe('merging', () => {
  it('merge: a real merge commit with both parents on the base branch', async () => {
    const { repo, sha, branch } = await repoWithBranch();
    const base = (await emu.branchSha(`acme/${repo}`, 'main'))!;
    // Move main so the merge is a true merge (not a fast-forward).
    const mainMoved = await emu.commit({ owner: 'acme', repo, branch: 'main', files: { 'other.txt': 'o\n' } });
    expect(mainMoved).not.toBe(base);
    const pr = await openPr(repo, branch);
    const m = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: { merge_method: 'merge', sha } });
    expect(m.status).toBe(200);
    expect(m.body).toMatchObject({ merged: true, message: 'Pull Request successfully merged', sha: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const gitDir = emu.repo(`acme/${repo}`)!.gitDir;
    expect(await emu.branchSha(`acme/${repo}`, 'main')).toBe(m.body.sha);
    expect(await mustGit(['--git-dir', gitDir, 'show', '-s', '--format=%P', m.body.sha])).toBe(`${mainMoved} ${sha}`);
    expect(await mustGit(['--git-dir', gitDir, 'show', '-s', '--format=%s', m.body.sha])).toBe(`Merge pull request #${pr.number} from acme/${branch}`);
    expect(await mustGit(['--git-dir', gitDir, 'ls-tree', '--name-only', 'main'])).toBe('README.md\nlane.txt\nother.txt\nsrc');
    const after = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}`);
    expect(after.body).toMatchObject({ state: 'closed', merged: true, merge_commit_sha: m.body.sha, merged_by: { login: 'fleet-bot' } });
    expect((await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}/merge`)).status).toBe(204);
    const twice = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: {} });
    expect(twice.status).toBe(405);
  });

  it('squash: one commit with the PR title, one parent', async () => {
    const { repo, branch } = await repoWithBranch();
    await pushFiles(emu, work, { owner: 'acme', repo, branch, files: { 'second.txt': '2\n' } });
    const pr = await openPr(repo, branch);
    const base = await emu.branchSha(`acme/${repo}`, 'main');
    const m = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: { merge_method: 'squash' } });
    expect(m.status).toBe(200);
    const gitDir = emu.repo(`acme/${repo}`)!.gitDir;
    expect(await mustGit(['--git-dir', gitDir, 'show', '-s', '--format=%P', m.body.sha])).toBe(base);
    expect(await mustGit(['--git-dir', gitDir, 'show', '-s', '--format=%s', m.body.sha])).toBe(`Fleet: ${repo} (#${pr.number})`);
    expect(await mustGit(['--git-dir', gitDir, 'ls-tree', '--name-only', 'main'])).toBe('README.md\nlane.txt\nsecond.txt\nsrc');
  });

  it('rebase: the commits replayed on the base, new shas, linear history', async () => {
    const { repo, sha, branch } = await repoWithBranch();
    const moved = await emu.commit({ owner: 'acme', repo, branch: 'main', files: { 'main.txt': 'm\n' } });
    const pr = await openPr(repo, branch);
    const m = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: { merge_method: 'rebase' } });
    expect(m.status).toBe(200);
    expect(m.body.sha).not.toBe(sha);
    const gitDir = emu.repo(`acme/${repo}`)!.gitDir;
    expect(await mustGit(['--git-dir', gitDir, 'show', '-s', '--format=%P', m.body.sha])).toBe(moved);
    expect(await mustGit(['--git-dir', gitDir, 'show', 'main:lane.txt'])).toBe('lane');
    expect(await mustGit(['--git-dir', gitDir, 'worktree', 'list'])).not.toContain('emu-rebase');
  });

  it('refuses with 409 when the given sha is not the head, and 405 on conflicts', async () => {
    const { repo, sha, branch } = await repoWithBranch({ 'README.md': 'lane version\n' });
    const pr = await openPr(repo, branch);
    const stale = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: { sha: 'f'.repeat(40) } });
    expect(stale.status).toBe(409);
    expect(stale.body.message).toBe('Head branch was modified. Review and try the merge again.');
    await emu.commit({ owner: 'acme', repo, branch: 'main', files: { 'README.md': 'someone else\n' } });
    const got = await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}`);
    expect(got.body).toMatchObject({ mergeable: false, mergeable_state: 'dirty' });
    const conflict = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: { sha } });
    expect(conflict.status).toBe(405);
    expect(conflict.body.message).toBe('Pull Request is not mergeable');
    expect(emu.pullRequests(`acme/${repo}`)[0]!.merged_at).toBeNull();
  });

  it('refuses a draft, and a base branch with required checks that are not green (blocked)', async () => {
    const { repo, branch } = await repoWithBranch();
    const pr = await openPr(repo, branch, { draft: true });
    expect((await api(emu, 'GET', `/repos/acme/${repo}/pulls/${pr.number}`)).body.mergeable_state).toBe('draft');
    expect((await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr.number}/merge`, { body: {} })).status).toBe(405);
    await api(emu, 'PATCH', `/repos/acme/${repo}/pulls/${pr.number}`, { body: { title: 'ready' } });
    emu.pullRequests(`acme/${repo}`); // snapshot only: no effect
    const { repo: r2, branch: b2, sha } = await repoWithBranch();
    emu.protectBranch(`acme/${r2}`, 'main', { requiredChecks: ['test'], enforceAdmins: true });
    const pr2 = await openPr(r2, b2);
    expect((await api(emu, 'GET', `/repos/acme/${r2}/pulls/${pr2.number}`)).body.mergeable_state).toBe('blocked');
    const refused = await api(emu, 'PUT', `/repos/acme/${r2}/pulls/${pr2.number}/merge`, { body: {} });
    expect(refused.status).toBe(405);
    expect(refused.body.message).toBe('Required status check "test" is expected.');
    await api(emu, 'POST', `/repos/acme/${r2}/check-runs`, { body: { name: 'test', head_sha: sha, conclusion: 'success' } });
    expect((await api(emu, 'GET', `/repos/acme/${r2}/pulls/${pr2.number}`)).body.mergeable_state).toBe('clean');
    expect((await api(emu, 'PUT', `/repos/acme/${r2}/pulls/${pr2.number}/merge`, { body: {} })).status).toBe(200);
  });
});
