/**
 * The GitHub forge's publish path where it meets GitHub's refusals and races: a pull request another run opened
 * first, a repository without drafts, a PR whose base moved, and the notes a refused label, review request or
 * assignment leaves (the PR exists; the lane does not fail). Against the emulator, as forge.test.ts.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LaneRecord } from '../../src/core/model.js';
import type { LaneSpec } from '../../src/core/model.js';
import { GitHubForgeError, markerFor } from '../../src/github/forge.js';
import { harness, lane, publishInput, pushLaneCommit, type Harness } from './helpers.js';

let h: Harness;
let tmp: string;
let n = 0;

beforeAll(async () => {
  h = await harness();
  tmp = await mkdtemp(path.join(os.tmpdir(), 'fleet-github-publish-'));
});

afterAll(async () => {
  expect(h.emu.violations).toEqual([]);
  expect(h.emu.errors).toEqual([]);
  await h.emu.idle();
  await h.emu.close();
  await rm(tmp, { recursive: true, force: true });
});

beforeEach(() => {
  h.log.length = 0;
  h.emu.clearFaults();
});

/** A fresh repository (with a `develop` branch beside `main`), a lane on it, and the lane's commit pushed. */
async function pushedLane(): Promise<{ l: LaneSpec; rec: LaneRecord; owner: string; repo: string }> {
  const name = `pub-${++n}`;
  await h.emu.createRepo({ owner: 'acme', name, files: { 'README.md': '# x\n' }, branches: { develop: { 'README.md': '# x\n' } } });
  const l = lane(`acme/${name}`, { id: name, branch: `fleet/demo/${name}` });
  const dir = path.join(tmp, name);
  const rec = await pushLaneCommit(h, l, dir, (d) => writeFile(path.join(d, 'x.txt'), 'x\n'));
  return { l, rec, owner: 'acme', repo: name };
}

const input = publishInput;

const PULLS = '/repos/{owner}/{repo}/pulls';

describe('opening the pull request', () => {
  it('adopts the pull request another run opened between its look and its write', async () => {
    const { l, rec, owner, repo } = await pushedLane();
    // The other run's POST lands just before ours: GitHub answers ours 422 "A pull request already exists".
    let raced = false;
    const racing: typeof fetch = async (url, init) => {
      if (!raced && init?.method === 'POST' && String(url).endsWith(`/repos/${owner}/${repo}/pulls`)) {
        raced = true;
        await h.octokit.request('POST /repos/{owner}/{repo}/pulls', {
          owner,
          repo,
          title: 'the other run',
          head: l.branch,
          base: 'main',
          body: 'no marker yet',
        });
      }
      return fetch(url, init);
    };
    const forge = h.makeForge({ octokit: h.client({ fetch: racing }) });
    h.emu.resetLog();
    const r = await forge.publish(input(l, rec, { labels: ['fleet'] }));
    expect(raced).toBe(true);
    expect(r).toMatchObject({ pr_number: 1, updated: true, notes: [] });
    expect(h.emu.find({ method: 'POST', route: PULLS }).map((q) => q.status)).toEqual([201, 422]);
    const [pr, ...others] = h.emu.pullRequests(`${owner}/${repo}`);
    expect(others).toEqual([]);
    // Adopted as a re-run adopts: title and marker set, labels added.
    expect(pr).toMatchObject({ title: `demo: ${l.id}`, labels: ['fleet'] });
    expect(pr!.body).toContain(markerFor('demo', l.id));
  });

  it('fails with GitHub’s words when it refuses the pull request for another reason', async () => {
    const { l, rec, owner, repo } = await pushedLane();
    // A lane branch with no commit beyond its base: "No commits between …" (422).
    await h.octokit.request('POST /repos/{owner}/{repo}/git/refs', {
      owner,
      repo,
      ref: 'refs/heads/same',
      sha: (await h.emu.branchSha(`${owner}/${repo}`, 'main'))!,
    });
    h.emu.resetLog();
    const err = await h.forge.publish(input(l, { ...rec, branch: 'same' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitHubForgeError);
    expect((err as Error).message).toBe(`${l.repo}: opening a pull request from same failed (422): Validation Failed: No commits between main and same`);
    // Only "already exists" sends it looking for the pull request again.
    expect(h.emu.count({ method: 'GET', route: PULLS })).toBe(1);
    expect(h.emu.pullRequests(`${owner}/${repo}`)).toEqual([]);
  });

  it('needs the lane’s branch and base branch, and asks GitHub nothing without them', async () => {
    const { l, rec } = await pushedLane();
    h.emu.resetLog();
    for (const record of [
      { ...rec, base_branch: null },
      { ...rec, branch: '' },
    ]) {
      const err = await h.forge.publish(input(l, record)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GitHubForgeError);
      expect((err as Error).message).toBe(`${l.repo}: opening a pull request failed: the lane has no branch or base branch`);
    }
    expect(h.emu.count({})).toBe(0);
  });

  // A private repository on GitHub Free cannot have drafts: 422 "Draft pull requests are not supported in this repository."
  it('opens a regular pull request, with a note, when the repository does not allow drafts', async () => {
    const { l, rec, owner, repo } = await pushedLane();
    const noDrafts: typeof fetch = async (url, init) => {
      if (init?.method === 'POST' && String(url).endsWith(`/repos/${owner}/${repo}/pulls`) && JSON.parse(String(init.body)).draft === true) {
        const body = {
          message: 'Validation Failed',
          errors: [{ resource: 'PullRequest', code: 'custom', message: 'Draft pull requests are not supported in this repository.' }],
          documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
          status: '422',
        };
        return new Response(JSON.stringify(body), { status: 422, headers: { 'content-type': 'application/json; charset=utf-8' } });
      }
      return fetch(url, init);
    };
    const forge = h.makeForge({ octokit: h.client({ fetch: noDrafts }) });
    const r = await forge.publish(input(l, rec, { draft: true }));
    expect(r.notes).toEqual([
      'opened as a regular PR: the repository does not allow drafts (Validation Failed: Draft pull requests are not supported in this repository.)',
    ]);
    expect(h.emu.pullRequests(`${owner}/${repo}`)).toMatchObject([{ number: r.pr_number, draft: false }]);
    expect(h.log).toContain(`${l.repo}#${r.pr_number}: ${r.notes[0]}`);
    // Any other refusal of a draft is not taken for that one.
    const l2 = await pushedLane();
    h.emu.fault({ kind: '5xx', status: 422, match: { method: 'POST', path: PULLS } });
    h.emu.resetLog();
    const err = await h.forge.publish(input(l2.l, l2.rec, { draft: true })).catch((e: unknown) => e);
    expect((err as Error).message).toBe(`${l2.l.repo}: opening a pull request from ${l2.l.branch} failed (422): Server Error`);
    expect(h.emu.count({ method: 'POST', route: PULLS })).toBe(1);
    expect(h.emu.count({ method: 'GET', route: PULLS })).toBe(1);
  });
});

describe('a pull request that exists', () => {
  it('moves it to the lane’s base when the base changed, and changes nothing else', async () => {
    const { l, rec, owner, repo } = await pushedLane();
    const first = await h.forge.publish(input(l, rec));
    h.emu.resetLog();
    const again = await h.forge.publish(input(l, { ...rec, base_branch: 'develop' }));
    expect(again).toMatchObject({ pr_number: first.pr_number, updated: true });
    expect(h.emu.find({ method: 'PATCH' }).map((q) => q.body)).toEqual([{ base: 'develop' }]);
    expect(h.emu.pullRequests(`${owner}/${repo}`)[0]).toMatchObject({ baseRef: 'develop' });
  });

  it('prefers the pull request into the lane’s base, then its own marker, then the oldest', async () => {
    const { l, rec, owner, repo } = await pushedLane();
    const open = (base: string, body: string) =>
      h.octokit.request('POST /repos/{owner}/{repo}/pulls', { owner, repo, title: base, head: l.branch, base, body });
    // Two PRs from the lane branch, neither into main: #1 unmarked into develop, #2 ours into release.
    await h.octokit.request('POST /repos/{owner}/{repo}/git/refs', {
      owner,
      repo,
      ref: 'refs/heads/release',
      sha: (await h.emu.branchSha(`${owner}/${repo}`, 'main'))!,
    });
    await open('develop', 'by hand');
    await open('release', `${markerFor('demo', l.id)}\nours`);
    h.emu.resetLog();
    const r = await h.forge.publish(input(l, rec));
    expect(r).toMatchObject({ pr_number: 2, updated: true });
    expect(h.emu.find({ method: 'PATCH' }).map((q) => [q.path, (q.body as { base?: string }).base])).toEqual([[`/repos/${owner}/${repo}/pulls/2`, 'main']]);
    // Now #2 is into main and stays the lane's pull request.
    h.emu.resetLog();
    const again = await h.forge.publish(input(l, rec));
    expect(again.pr_number).toBe(2);
    expect(h.emu.count({ method: 'PATCH' })).toBe(0);
  });

  it('refuses a pull request marked for another lane of this fleet, or for this lane id in another fleet', async () => {
    for (const [fleet, laneId] of [
      ['demo', 'another-lane'],
      ['other', null],
    ] as const) {
      const { l, rec, owner, repo } = await pushedLane();
      const id = laneId ?? l.id;
      await h.octokit.request('POST /repos/{owner}/{repo}/pulls', {
        owner,
        repo,
        title: 'theirs',
        head: l.branch,
        base: 'main',
        body: `${markerFor(fleet, id)}\ntheirs`,
      });
      const err = await h.forge.publish(input(l, rec)).catch((e: unknown) => e);
      expect((err as Error).message, `${fleet}:${id}`).toBe(
        `${l.repo}: publishing failed: pull request #1 from ${l.branch} belongs to fleet ${fleet} lane ${id}; give this fleet another name or branch template`,
      );
      expect(h.emu.pullRequests(`${owner}/${repo}`)[0]!.title).toBe('theirs');
    }
  });

  it('prefers the pull request into the lane’s base to one carrying its marker into another base, older or newer', async () => {
    for (const order of [
      ['main', 'develop'],
      ['develop', 'main'],
    ] as const) {
      const { l, rec, owner, repo } = await pushedLane();
      for (const base of order) {
        await h.octokit.request('POST /repos/{owner}/{repo}/pulls', {
          owner,
          repo,
          title: base,
          head: l.branch,
          base,
          body: base === 'main' ? 'by hand' : `${markerFor('demo', l.id)}\nours`,
        });
      }
      const r = await h.forge.publish(input(l, rec));
      expect(r.pr_number, order.join(',')).toBe(order.indexOf('main') + 1);
    }
  });

  it('takes the older of two pull requests that are equally the lane’s', async () => {
    const { l, rec, owner, repo } = await pushedLane();
    await h.octokit.request('POST /repos/{owner}/{repo}/git/refs', {
      owner,
      repo,
      ref: 'refs/heads/release',
      sha: (await h.emu.branchSha(`${owner}/${repo}`, 'main'))!,
    });
    for (const base of ['develop', 'release'])
      await h.octokit.request('POST /repos/{owner}/{repo}/pulls', { owner, repo, title: base, head: l.branch, base, body: 'by hand' });
    const r = await h.forge.publish(input(l, rec));
    expect(r.pr_number).toBe(1);
  });

  it('fails naming what it was doing when GitHub will not list or update pull requests', async () => {
    const { l, rec } = await pushedLane();
    const forge = h.makeForge({ octokit: h.client({ serverErrorRetries: 0 }) });
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: PULLS } });
    await expect(forge.publish(input(l, rec))).rejects.toThrow(
      new GitHubForgeError(l.repo, `looking for the pull request of ${l.branch}`, 502, 'Server Error'),
    );
    const first = await forge.publish(input(l, rec));
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'PATCH', path: '/repos/{owner}/{repo}/pulls/{pull_number}' } });
    await expect(forge.publish(input(l, rec, { title: 'a new title' }))).rejects.toThrow(
      new GitHubForgeError(l.repo, `updating pull request #${first.pr_number}`, 502, 'Server Error'),
    );
  });
});

describe('labels, reviewers and assignees', () => {
  it('asks once for a label or a person named twice in different case', async () => {
    const { l, rec } = await pushedLane();
    h.emu.resetLog();
    await h.forge.publish(
      input(l, rec, {
        labels: ['fleet', 'Fleet'],
        reviewers: ['octocat', 'OctoCat'],
        team_reviewers: ['acme/platform', 'Platform'],
        assignees: ['hubot', 'HUBOT'],
      }),
    );
    expect(h.emu.find({ method: 'POST', route: '/repos/{owner}/{repo}/issues/{issue_number}/labels' }).map((q) => q.body)).toEqual([{ labels: ['fleet'] }]);
    expect(h.emu.find({ method: 'POST', route: '/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers' }).map((q) => q.body)).toEqual([
      { reviewers: ['octocat'], team_reviewers: ['platform'] },
    ]);
    expect(h.emu.find({ method: 'POST', route: '/repos/{owner}/{repo}/issues/{issue_number}/assignees' }).map((q) => q.body)).toEqual([
      { assignees: ['hubot'] },
    ]);
  });

  it('asks only for teams when no person is missing, and for no one when nobody is', async () => {
    const { l, rec } = await pushedLane();
    await h.forge.publish(input(l, rec, { reviewers: ['octocat'] }));
    h.emu.resetLog();
    await h.forge.publish(input(l, rec, { reviewers: ['octocat'], team_reviewers: ['platform'] }));
    expect(h.emu.find({ method: 'POST', route: '/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers' }).map((q) => q.body)).toEqual([
      { team_reviewers: ['platform'] },
    ]);
    h.emu.resetLog();
    await h.forge.publish(input(l, rec, { reviewers: ['octocat'], team_reviewers: ['platform'] }));
    expect(h.emu.count({ method: 'POST' })).toBe(0);
    // Nobody to ask on a re-run: the reviews are not even read.
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/pulls/{pull_number}/reviews' })).toBe(0);
  });

  // GitHub assigns up to 10 people and silently leaves out the rest.
  it('names every assignee GitHub left out', async () => {
    const { l, rec } = await pushedLane();
    const people = Array.from({ length: 12 }, (_, i) => `dev${String(i).padStart(2, '0')}`);
    const r = await h.forge.publish(input(l, rec, { assignees: people }));
    expect(r.notes).toEqual(['GitHub did not assign dev10, dev11 (no access to the repository?)']);
  });

  it('notes each refusal and still returns the pull request', async () => {
    const { l, rec, owner, repo } = await pushedLane();
    const refuse = (method: string, route: string) => h.emu.fault({ kind: '5xx', status: 422, match: { method, path: route } });
    refuse('POST', '/repos/{owner}/{repo}/issues/{issue_number}/labels');
    refuse('POST', '/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers');
    refuse('POST', '/repos/{owner}/{repo}/issues/{issue_number}/assignees');
    const r = await h.forge.publish(
      input(l, rec, { labels: ['fleet', 'deps'], reviewers: ['octocat', 'monalisa'], team_reviewers: ['platform'], assignees: ['hubot', 'dev01'] }),
    );
    expect(r.pr_number).toBe(1);
    expect(r.notes).toEqual([
      'labels fleet, deps not added: Server Error',
      'review not requested from octocat, monalisa, team platform: Server Error',
      'assignees hubot, dev01 not added: Server Error',
    ]);
    for (const note of r.notes) expect(h.log).toContain(`${l.repo}#1: ${note}`);
    // On a re-run the reviews cannot be read: noted, and the people are asked all the same.
    h.emu.fault({ kind: '5xx', status: 422, match: { method: 'GET', path: '/repos/{owner}/{repo}/pulls/{pull_number}/reviews' } });
    h.emu.resetLog();
    const again = await h.forge.publish(input(l, rec, { reviewers: ['octocat'] }));
    expect(again.notes).toEqual(['could not read the reviews: Server Error']);
    expect(h.emu.pullRequests(`${owner}/${repo}`)[0]!.requested_reviewers).toEqual(['octocat']);
  });
});

describe('the requests a fresh lane costs (issue 27, part 3)', () => {
  it('opens the PR of a branch its push just created without listing pull requests first', async () => {
    const { l, rec, owner, repo } = await pushedLane();
    h.emu.resetLog();
    const r = await h.makeForge().publish({ ...input(l, rec), branchCreated: true });
    expect(r).toMatchObject({ pr_number: 1, updated: false });
    expect(h.emu.find({ route: PULLS }).map((q) => `${q.method} ${q.status}`)).toEqual(['POST 201']);
    expect(h.emu.pullRequests(`${owner}/${repo}`)).toHaveLength(1);
  });

  it('still adopts an open PR of that branch if GitHub says one exists (a created branch is normally the head of none)', async () => {
    // GitHub closes the PRs of a head branch that is deleted (Mergify's docs of delete_head_branch say so), so a
    // branch a push created has no open PR; if that ever does not hold, the 422 "already exists" adopts it.
    const { l, rec, owner, repo } = await pushedLane();
    await h.octokit.request('POST /repos/{owner}/{repo}/pulls', { owner, repo, title: 'a person', head: l.branch, base: 'main', body: 'mine' });
    h.emu.resetLog();
    const r = await h.makeForge().publish({ ...input(l, rec), branchCreated: true });
    expect(r).toMatchObject({ pr_number: 1, updated: true });
    expect(h.emu.find({ route: PULLS }).map((q) => `${q.method} ${q.status}`)).toEqual(['POST 422', 'GET 200']);
    expect(h.emu.pullRequests(`${owner}/${repo}`)).toHaveLength(1);
  });

  it('reads the branch head and its files in one compare, and leaves the reads one at a time to a branch that is not there', async () => {
    const { l, rec } = await pushedLane();
    const forge = h.makeForge();
    h.emu.resetLog();
    expect(await forge.branchChanges(l, rec.base_commit!, rec.branch!)).toEqual({ head: rec.commit, files: ['x.txt'] });
    expect(h.emu.find({}).map((q) => q.route)).toEqual(['/repos/{owner}/{repo}/compare/{basehead}']);
    expect(await forge.branchChanges(l, rec.base_commit!, 'fleet/demo/no-such-branch')).toBeUndefined();
    // A record's branch that names another repository's (owner:branch) or a range is never compared: nothing is asked.
    h.emu.resetLog();
    expect(await forge.branchChanges(l, rec.base_commit!, `acme:${rec.branch!}`)).toBeUndefined();
    expect(await forge.branchChanges(l, rec.base_commit!, `main...${rec.branch!}`)).toBeUndefined();
    expect(await forge.branchChanges(l, `acme:${rec.base_commit!}`, rec.branch!)).toBeUndefined();
    expect(h.emu.find({})).toEqual([]);
  });
});
