/**
 * The GitHub forge against the emulator: real HTTP, real git pushes (through
 * the local workspace with the forge's git environment), real check runs and
 * statuses created by the emulator's CI after a push.
 */
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { newLaneRecord, type LaneRecord } from '../../src/core/model.js';
import type { LaneSpec } from '../../src/core/model.js';
import { GitHubForgeError, markerFor, type GitHubForgeOptions } from '../../src/github/forge.js';
import { basicCredential, createOctokit } from '../../src/github/octokit.js';
import { ci } from '../support/github-emulator/index.js';
import { harness, lane, NO_PACING, publishInput, pushLaneCommit, type Harness } from './helpers.js';

let h: Harness;
let tmp: string;
let n = 0;

beforeAll(async () => {
  h = await harness();
  tmp = await mkdtemp(path.join(os.tmpdir(), 'fleet-github-forge-'));
});

/** Routes Fleet calls that the emulator does not implement yet (reported; each answers 501 and is logged as a violation). */
const NOT_EMULATED = new Set(['actions/list-repo-workflows']);

afterAll(async () => {
  const violations = h.emu.violations.filter((v) => !(v.kind === 'unimplemented' && NOT_EMULATED.has(v.operationId ?? '')));
  expect(violations).toEqual([]);
  expect(h.emu.errors).toEqual([]);
  await h.emu.idle();
  await h.emu.close();
  await rm(tmp, { recursive: true, force: true });
});

beforeEach(() => {
  h.log.length = 0;
  h.emu.clearFaults();
});

/** A fresh repository and a lane on it. */
async function repoWithLane(files: Record<string, string> = { 'README.md': '# x\n', 'src/a.ts': 'export const a = 1;\n' }): Promise<LaneSpec> {
  const name = `repo-${++n}`;
  await h.emu.createRepo({ owner: 'acme', name, files });
  return lane(`acme/${name}`, { id: name, branch: `fleet/demo/${name}` });
}

/**
 * What a lane does up to its push: clone through the forge's URL and git
 * environment, change files, commit, push with a lease. Returns the record.
 */
async function pushLane(l: LaneSpec, change: (dir: string) => Promise<void>, previous?: LaneRecord): Promise<LaneRecord> {
  const dir = path.join(tmp, `${l.id}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  const rec = await pushLaneCommit(h, l, dir, change, previous);
  const config = await readFile(path.join(dir, '.git', 'config'), 'utf8');
  expect(config).not.toContain(h.token);
  expect(config).not.toContain(basicCredential(h.token));
  expect(config.toLowerCase()).not.toContain('extraheader');
  return rec;
}

const edit = (file: string, text: string) => async (dir: string) => {
  await writeFile(path.join(dir, file), text);
};

describe('git access', () => {
  it('clones and pushes with the token only in the environment, and reads the branch back', async () => {
    const l = await repoWithLane();
    expect(h.forge.cloneUrl(l)).toBe(`${h.emu.url}/git/${l.repo}.git`);
    expect(await h.forge.branchHead(l, l.branch)).toBeNull();
    const rec = await pushLane(l, edit('src/a.ts', 'export const a = 2;\n'));
    expect(await h.forge.branchHead(l, l.branch)).toBe(rec.commit);
    expect(await h.emu.branchSha(l.repo, l.branch)).toBe(rec.commit);
    expect(await h.forge.branchHead(l, 'no/such/branch')).toBeNull();
  });

  it('replaces an extra header inherited from git configuration (a persisted checkout credential)', async () => {
    const l = await repoWithLane();
    const config = path.join(tmp, 'stale-gitconfig');
    const stale = Buffer.from('x-access-token:ghs_expiredTokenFromAnotherStep0001').toString('base64');
    await writeFile(config, `[http "${new URL(h.emu.url).origin}/"]\n\textraheader = AUTHORIZATION: basic ${stale}\n`);
    vi.stubEnv('GIT_CONFIG_GLOBAL', config);
    try {
      const rec = await pushLane(l, edit('x.txt', 'x\n'));
      expect(await h.forge.branchHead(l, l.branch)).toBe(rec.commit);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('lists the changed files from GitHub, with both paths of a rename', async () => {
    const l = await repoWithLane({ 'README.md': '# x\n', 'docs/old-name.md': 'some words that stay the same\n'.repeat(20), 'src/keep.ts': 'k\n' });
    const rec = await pushLane(l, async (dir) => {
      await rename(path.join(dir, 'docs/old-name.md'), path.join(dir, 'docs/new-name.md'));
      await writeFile(path.join(dir, 'src/added.ts'), 'new\n');
      await rm(path.join(dir, 'src/keep.ts'));
    });
    h.emu.resetLog();
    const files = await h.forge.changedFiles(l, rec.base_commit!, rec.commit!);
    expect(files).toEqual(['docs/new-name.md', 'docs/old-name.md', 'src/added.ts', 'src/keep.ts']);
    // The same list the lane computed from its working copy, from one compare: under 300 files no tree is read.
    expect(files).toEqual([...rec.changed_files].sort());
    expect(h.emu.count({})).toBe(1);
    // A commit GitHub does not have: null, and a warning that names the two commits.
    expect(await h.forge.changedFiles(l, rec.base_commit!, '0'.repeat(40))).toBeNull();
    expect(h.log).toEqual([expect.stringMatching(new RegExp(`^${l.repo}: cannot compare ${rec.base_commit!.slice(0, 12)}\\.\\.\\.000000000000: \\S`))]);
  });

  it('fails, naming the commits, when GitHub cannot answer a compare', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const forge = h.makeForge({ octokit: h.client({ serverErrorRetries: 0 }) });
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: '/repos/{owner}/{repo}/compare/{basehead}' }, times: 1 });
    const err = await forge.changedFiles(l, rec.base_commit!, rec.commit!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitHubForgeError);
    expect((err as Error).message).toBe(`${l.repo}: comparing ${rec.base_commit!.slice(0, 12)}...${rec.commit!.slice(0, 12)} failed (502): Server Error`);
  });

  // An empty repository has no refs: GitHub answers 409 "Git Repository is empty." (https://docs.github.com/en/rest/git/refs#get-a-reference lists 409).
  it('reads no branch head in an empty repository', async () => {
    const name = `empty-${++n}`;
    await h.emu.createRepo({ owner: 'acme', name, empty: true });
    h.emu.resetLog();
    expect(await h.forge.branchHead(lane(`acme/${name}`), 'main')).toBeNull();
    expect(h.emu.find({ route: '/repos/{owner}/{repo}/git/ref/{ref}' }).map((r) => r.status)).toEqual([409]);
  });

  it('reads a lane commit of more than 300 files from the git trees (compare lists only 300)', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, async (dir) => {
      for (let i = 0; i < 320; i++) await writeFile(path.join(dir, `gen-${String(i).padStart(3, '0')}.txt`), `${i}\n`);
    });
    h.emu.resetLog();
    const files = await h.forge.changedFiles(l, rec.base_commit!, rec.commit!);
    expect(files).toHaveLength(320);
    // One compare, the two commits, and their two trees listed whole: five requests for any size up to 100,000 entries.
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/git/trees/{tree_sha}' })).toBe(2);
    expect(h.emu.count({})).toBe(5);
  });
});

describe('publish', () => {
  it('opens one PR per lane; a re-run updates it and never opens another', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('src/a.ts', 'export const a = 3;\n'));
    h.emu.resetLog();
    const first = await h.forge.publish(
      publishInput(l, rec, { labels: ['fleet', 'automated'], reviewers: ['octocat'], team_reviewers: ['acme/platform'], assignees: ['hubot'] }),
    );
    expect(first).toMatchObject({ pr_number: 1, updated: false, notes: [] });
    expect(first.pr_url).toBe(`${h.emu.url}/${l.repo}/pull/1`);

    const again = await pushLane(l, edit('src/a.ts', 'export const a = 4;\n'), rec);
    const second = await h.forge.publish(
      publishInput(l, again, {
        title: `demo: ${l.id} (again)`,
        labels: ['fleet', 'automated'],
        reviewers: ['octocat'],
        team_reviewers: ['acme/platform'],
        assignees: ['hubot'],
      }),
    );
    expect(second).toMatchObject({ pr_number: 1, pr_url: first.pr_url, updated: true });

    expect(h.emu.count({ method: 'POST', route: '/repos/{owner}/{repo}/pulls' })).toBe(1);
    // Labels, reviewers and assignees were applied once: the re-run found nothing missing.
    expect(h.emu.count({ method: 'POST', route: '/repos/{owner}/{repo}/issues/{issue_number}/labels' })).toBe(1);
    expect(h.emu.count({ method: 'POST', route: '/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers' })).toBe(1);
    expect(h.emu.count({ method: 'POST', route: '/repos/{owner}/{repo}/issues/{issue_number}/assignees' })).toBe(1);
    const [pr] = h.emu.pullRequests(l.repo);
    expect(pr).toMatchObject({
      title: `demo: ${l.id} (again)`,
      headRef: l.branch,
      baseRef: 'main',
      headSha: again.commit,
      labels: ['fleet', 'automated'],
      requested_reviewers: ['octocat'],
      requested_teams: ['platform'],
      assignees: ['hubot'],
      draft: false,
    });
    expect(pr!.body).toContain(markerFor('demo', l.id));
    h.emu.assertNoViolations();
  });

  it('does not ask a team again on a re-run: it is still in requested_teams', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    await h.forge.publish(publishInput(l, rec, { team_reviewers: ['acme/platform', 'security'] }));
    h.emu.resetLog();
    const again = await h.forge.publish(publishInput(l, rec, { team_reviewers: ['platform', 'acme/Security', 'docs'] }));
    expect(again.notes).toEqual([]);
    // Only the team not asked before is asked now.
    const asked = h.emu.find({ method: 'POST', route: '/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers' });
    expect(asked.map((q) => q.body)).toEqual([{ team_reviewers: ['docs'] }]);
    expect(h.emu.pullRequests(l.repo)[0]!.requested_teams).toEqual(['platform', 'security', 'docs']);
    h.emu.assertNoViolations();
  });

  it('does not ask again people who already reviewed (GitHub dropped them from requested_reviewers)', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec, { reviewers: ['octocat', 'hubot'] }));
    // octocat reviews through the API with their own token: the request is answered.
    const octocat = 'ghs_octocatReviewsForFleetTests000001';
    h.emu.addToken(octocat, { login: 'octocat', default: 'pull' });
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h
      .client({ token: octocat })
      .request('POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews', { owner, repo, pull_number: pub.pr_number!, event: 'COMMENT', body: 'one question' });
    expect(h.emu.pullRequests(l.repo)[0]!.requested_reviewers).toEqual(['hubot']);

    const again = await pushLane(l, edit('x.txt', 'y\n'), rec);
    h.emu.resetLog();
    const second = await h.forge.publish(publishInput(l, again, { reviewers: ['octocat', 'hubot'] }));
    expect(second).toMatchObject({ pr_number: pub.pr_number, updated: true, notes: [] });
    expect(h.emu.count({ method: 'GET', route: '/repos/{owner}/{repo}/pulls/{pull_number}/reviews' })).toBe(1);
    expect(h.emu.count({ method: 'POST', route: '/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers' })).toBe(0);
    expect(h.emu.pullRequests(l.repo)[0]!.requested_reviewers).toEqual(['hubot']);
    // Someone new is still asked.
    await h.forge.publish(publishInput(l, again, { reviewers: ['octocat', 'hubot', 'monalisa'] }));
    expect(h.emu.find({ method: 'POST', route: '/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers' }).map((q) => q.body)).toEqual([
      { reviewers: ['monalisa'] },
    ]);
    h.emu.assertNoViolations();
  });

  it('adds only the labels that are missing, and leaves an unchanged PR alone', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    await h.forge.publish(publishInput(l, rec, { labels: ['fleet'] }));
    h.emu.resetLog();
    const r = await h.forge.publish(publishInput(l, rec, { labels: ['Fleet', 'deps'] }));
    expect(r.updated).toBe(true);
    expect(h.emu.count({ method: 'PATCH' })).toBe(0);
    const adds = h.emu.find({ method: 'POST', route: '/repos/{owner}/{repo}/issues/{issue_number}/labels' });
    expect(adds.map((a) => a.body)).toEqual([{ labels: ['deps'] }]);
  });

  it('notes (without failing) what GitHub refuses, such as the author as reviewer', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const r = await h.forge.publish(publishInput(l, rec, { reviewers: [h.emu.login, 'octocat'] }));
    expect(r.pr_number).toBe(1);
    expect(r.notes).toEqual([`${h.emu.login} opened the PR and cannot review it`]);
    expect(h.emu.pullRequests(l.repo)[0]!.requested_reviewers).toEqual(['octocat']);
  });

  // "Adds up to 10 assignees to an issue": https://docs.github.com/en/rest/issues/assignees#add-assignees-to-an-issue; GitHub answers 201 and leaves the rest out.
  it('notes the assignees GitHub silently left out', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const people = Array.from({ length: 11 }, (_, i) => `dev${String(i).padStart(2, '0')}`);
    const r = await h.forge.publish(publishInput(l, rec, { assignees: people }));
    expect(r.notes).toEqual(['GitHub did not assign dev10 (no access to the repository?)']);
    expect(h.emu.pullRequests(l.repo)[0]!.assignees).toEqual(people.slice(0, 10));
    expect(h.log).toContain(`${l.repo}#${r.pr_number}: GitHub did not assign dev10 (no access to the repository?)`);
  });

  it('opens drafts, and turns a PR into a draft and back with GraphQL', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const r = await h.forge.publish(publishInput(l, rec, { draft: true }));
    expect(h.emu.pullRequests(l.repo)[0]!.draft).toBe(true);
    h.emu.resetLog();
    await h.forge.setDraft(l, r.pr_number!, false);
    expect(h.emu.pullRequests(l.repo)[0]!.draft).toBe(false);
    await h.forge.setDraft(l, r.pr_number!, true);
    expect(h.emu.pullRequests(l.repo)[0]!.draft).toBe(true);
    // Already a draft: nothing to do.
    await h.forge.setDraft(l, r.pr_number!, true);
    expect(h.emu.count({ kind: 'graphql' })).toBe(2);
    h.emu.assertNoViolations();
  });

  it('leaves a closed pull request alone, and says which one it could not read', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const r = await h.forge.publish(publishInput(l, rec, { draft: true }));
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h.octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: r.pr_number!, state: 'closed' });
    h.emu.resetLog();
    await h.forge.setDraft(l, r.pr_number!, false);
    expect(h.emu.count({ kind: 'graphql' })).toBe(0);
    expect(h.emu.pullRequests(l.repo)[0]!.draft).toBe(true);
    await expect(h.forge.setDraft(l, 99, true)).rejects.toThrow(new GitHubForgeError(l.repo, 'reading pull request #99', 404, 'Not Found'));
    await expect(h.forge.isMerged(l, { ...rec, pr_number: 99 })).rejects.toThrow(new GitHubForgeError(l.repo, 'reading pull request #99', 404, 'Not Found'));
    // A token that may read the pull request but not write it: GitHub refuses the GraphQL mutation.
    const reader = 'ghs_readerOfDraftsForFleetTests00001';
    h.emu.addToken(reader, { login: 'reader', default: 'pull' });
    const readOnly = h.makeForge({ octokit: h.client({ token: reader }), token: reader });
    await h.octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: r.pr_number!, state: 'open' });
    const err = await readOnly.setDraft(l, r.pr_number!, false).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitHubForgeError);
    expect((err as Error).message).toMatch(new RegExp(`^${l.repo}: marking pull request #${r.pr_number} ready for review failed: \\S`));
    expect(h.emu.pullRequests(l.repo)[0]!.draft).toBe(true);
    // Without a pull request number there is nothing to ask GitHub.
    h.emu.resetLog();
    expect(await h.forge.isMerged(l, { ...rec, pr_number: null })).toBe(false);
    expect(h.emu.count({})).toBe(0);
  });
});

describe('CI', () => {
  it('is green from the check runs and statuses the CI made for the pushed commit', async () => {
    const l = await repoWithLane();
    h.emu.setCi(l.repo, {
      checks: [
        { name: 'test', conclusion: 'success' },
        { name: 'lint', conclusion: 'skipped' },
      ],
      statuses: [{ context: 'ci/legacy', state: 'success' }],
    });
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    await h.emu.idle();
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('success');
    expect(await h.forge.waitForCi(l, rec.commit!, 5_000)).toEqual({ conclusion: 'success', failures: '' });
  });

  it('is red when any check or status fails, and says what failed', async () => {
    const l = await repoWithLane();
    h.emu.setCi(l.repo, {
      checks: [
        { name: 'test', conclusion: 'failure', summary: 'FAIL src/a.test.ts\nexpected 1 to be 2' },
        { name: 'lint', conclusion: 'success' },
      ],
      statuses: [{ context: 'ci/deploy-preview', state: 'error', description: 'preview build failed' }],
    });
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    await h.emu.idle();
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('failure');
    const verdict = await h.forge.waitForCi(l, rec.commit!, 5_000);
    expect(verdict.conclusion).toBe('failure');
    expect(verdict.failures).toContain('✗ test: failure');
    expect(verdict.failures).toContain('FAIL src/a.test.ts');
    expect(verdict.failures).toContain('✗ ci/deploy-preview: error');
    expect(verdict.failures).toContain('preview build failed');
    expect(verdict.failures).not.toContain('lint');
  });

  it('waits for CI that takes a while, polling with back-off', async () => {
    const l = await repoWithLane();
    const running = ci.held(ci.green(['test', 'build']), { until: 'finish' });
    h.emu.setCi(l.repo, running);
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('pending');
    h.emu.resetLog();
    // The checks conclude during the forge's third wait.
    const c = clockedForge(async (n) => {
      if (n === 3) running.release();
    });
    const verdict = await c.forge.waitForCi(l, rec.commit!, 30 * 60_000);
    expect(verdict).toEqual({ conclusion: 'success', failures: '' });
    // Each wait half as long again as the one before (from ciPollMs 10 s).
    expect(c.sleeps).toEqual([10_000, 15_000, 22_500]);
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/commits/{ref}/check-runs' })).toBe(4);
  });

  it('gives up at the timeout with pending and what is still running', async () => {
    const l = await repoWithLane();
    h.emu.setCi(l.repo, ci.hanging(['e2e']));
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    await h.emu.idle();
    // On the forge's own clock: it polls until the deadline and not a moment past it.
    const c = clockedForge(async () => undefined);
    const verdict = await c.forge.waitForCi(l, rec.commit!, 300_000);
    expect(verdict).toEqual({ conclusion: 'pending', failures: 'still running: e2e (in_progress)' });
    expect(c.elapsed()).toBe(300_000);
    expect(c.sleeps.length).toBeGreaterThan(2);
  });

  it('judges the latest run of each check: a re-run that passed replaces the failure', async () => {
    const l = await repoWithLane();
    h.emu.setCi(l.repo, ci.red(['test']));
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    await h.emu.idle();
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('failure');
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h.octokit.request('POST /repos/{owner}/{repo}/check-runs', {
      owner,
      repo,
      name: 'test',
      head_sha: rec.commit!,
      status: 'completed',
      conclusion: 'success',
    });
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('success');
  });

  it('waits for a required check that starts late, whatever the start grace (classic protection or a ruleset)', async () => {
    for (const via of ['protection', 'ruleset'] as const) {
      const l = await repoWithLane();
      h.emu.protectBranch(l.repo, 'main', { requiredChecks: ['test'], via });
      const late = ci.held(ci.green(['test']));
      h.emu.setCi(l.repo, late);
      const rec = await pushLane(l, edit('x.txt', 'x\n'));
      // No workflows, no checks on the parent: without the required check this would be `none` at once.
      expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('pending');
      // No start grace at all; CI starts during the forge's second wait.
      const c = clockedForge(
        async (n) => {
          if (n === 2) late.release();
        },
        { ciStartGraceMs: 0 },
      );
      const verdict = await c.forge.waitForCi(l, rec.commit!, 30 * 60_000);
      expect(verdict, via).toEqual({ conclusion: 'success', failures: '' });
      expect(c.sleeps, via).toHaveLength(2);
      expect(h.emu.checkRuns(l.repo).map((c) => [c.name, c.status])).toEqual([['test', 'completed']]);
    }
  });

  it('reads "no CI yet" as "not started" for the start grace in a repository with workflows, and gets the late verdict', async () => {
    const l = await repoWithLane({ 'README.md': '# x\n', '.github/workflows/ci.yml': 'on: [push]\njobs: {}\n' });
    const late = ci.held(ci.red(['test']));
    h.emu.setCi(l.repo, late);
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('none');
    // CI starts during the second wait, inside the start grace.
    const c = clockedForge(async (n) => {
      if (n === 2) late.release();
    });
    const verdict = await c.forge.waitForCi(l, rec.commit!, 30 * 60_000);
    expect(verdict.conclusion).toBe('failure');
    expect(verdict.failures).toContain('✗ test: failure');
    expect(c.sleeps).toHaveLength(2);
  });

  it('is pending, not green, while a required check has not reported beside green ones', async () => {
    const l = await repoWithLane();
    h.emu.protectBranch(l.repo, 'main', { requiredChecks: ['test'], via: 'ruleset' });
    // `test` has not started (it never does here); `lint` is green.
    h.emu.setCi(l.repo, ci.green(['lint']));
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('pending');
    const c = clockedForge(async () => undefined);
    const verdict = await c.forge.waitForCi(l, rec.commit!, 60_000);
    expect(verdict).toEqual({ conclusion: 'pending', failures: 'still running: test (required, not reported)' });
    expect(c.elapsed()).toBe(60_000);
  });

  it("reads the base's required checks only when CI is green or empty, and never asks for the default branch of a lane on a named base", async () => {
    // Required checks can only turn green or empty CI into pending: red CI is red whatever they are (issue 27, part 3).
    const l = await repoWithLane();
    h.emu.protectBranch(l.repo, 'main', { requiredChecks: ['test'], via: 'ruleset' });
    h.emu.setCi(l.repo, ci.red(['lint']));
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const forge = h.makeForge();
    h.emu.resetLog();
    expect(await forge.ciConclusion({ ...l, base: 'main' }, rec.commit!)).toBe('failure');
    const routes = () => h.emu.find({}).map((r) => r.route);
    // Check runs and statuses in one GraphQL read of the commit (issue 27, part 3: one request where REST takes two).
    expect(routes()).toEqual(['/graphql']);
    h.emu.setCi(l.repo, ci.green(['lint']));
    const green = await pushLane(l, edit('y.txt', 'y\n'), rec);
    h.emu.resetLog();
    expect(await forge.ciConclusion({ ...l, base: 'main' }, green.commit!)).toBe('pending');
    expect(routes()).toEqual(['/graphql', '/repos/{owner}/{repo}/branches/{branch}', '/repos/{owner}/{repo}/rules/branches/{branch}']);
  });

  it('reads CI in one GraphQL read, falls back to the REST reads where it cannot answer for certain, and batches the report 20 commits a query', async () => {
    const l = await repoWithLane();
    const forge = h.makeForge();
    const routes = () => h.emu.find({}).map((r) => r.route);
    // More runs in a suite than the read's page (50): the REST reads answer, every page of them.
    h.emu.setCi(l.repo, ci.green(Array.from({ length: 51 }, (_, i) => `check-${i}`)));
    const many = await pushLane(l, edit('x.txt', 'x\n'));
    h.emu.resetLog();
    expect(await forge.ciConclusion({ ...l, base: 'main' }, many.commit!)).toBe('success');
    expect(routes().slice(0, 3)).toEqual(['/graphql', '/repos/{owner}/{repo}/commits/{ref}/check-runs', '/repos/{owner}/{repo}/commits/{ref}/status']);
    // A token that may read check runs but not statuses: GitHub answers the status FORBIDDEN, and REST is asked.
    h.emu.setCi(l.repo, ci.red(['test']));
    const red = await pushLane(l, edit('y.txt', 'y\n'), many);
    const scoped = h.emu.mintInstallationToken({ scopes: { contents: 'read', checks: 'read', statuses: 'read', metadata: 'read' } });
    const narrow = h.emu.mintInstallationToken({ scopes: { contents: 'read', checks: 'read', metadata: 'read' } });
    for (const [token, expected] of [
      [scoped, ['/graphql']],
      [narrow, ['/graphql', '/repos/{owner}/{repo}/commits/{ref}/check-runs', '/repos/{owner}/{repo}/commits/{ref}/status']],
    ] as const) {
      const f = h.makeForge({ octokit: createOctokit({ token, apiUrl: h.emu.url, pacing: NO_PACING }), token });
      h.emu.resetLog();
      const verdict = await f.ciConclusion({ ...l, base: 'main' }, red.commit!).catch((e: Error) => e.message);
      expect(routes(), token).toEqual(expected);
      // With statuses refused over REST as well, the read fails as it always did, naming what could not be read.
      if (token === narrow) expect(verdict).toContain('reading the commit status of');
      else expect(verdict).toBe('failure');
    }
    // The report's second read: 25 pending lanes in two queries, each verdict as ciConclusion gives it.
    h.emu.resetLog();
    const items = Array.from({ length: 25 }, (_, i) => ({ lane: { ...l, id: `l${i}`, base: 'main' }, commit: i % 2 ? red.commit! : many.commit! }));
    const verdicts = await forge.ciConclusions(items);
    expect(verdicts).toEqual(items.map((_, i) => (i % 2 ? 'failure' : 'success')));
    // Two queries; the 13 commits with a suite too big for the page were read over REST by the batch itself.
    expect(h.emu.count({ route: '/graphql' })).toBe(2);
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/commits/{ref}/check-runs' })).toBe(13);
    // One repository GitHub does not find: its alias is null with NOT_FOUND; the others' answers stand.
    h.emu.resetLog();
    const partial = await forge.ciConclusions([
      { lane: { ...l, id: 'gone', repo: 'acme/not-there', base: 'main' }, commit: red.commit! },
      { lane: { ...l, base: 'main' }, commit: red.commit! },
    ]);
    expect(partial).toEqual([undefined, 'failure']);
    expect(routes().filter((r) => r === '/graphql')).toHaveLength(1);
  });

  /**
   * A forge on a clock of its own: time moves only when the forge sleeps, and `onSleep` runs at each sleep,
   * so "CI starts between two polls" is an event, not a race with the machine's speed.
   */
  function clockedForge(onSleep: (slept: number) => Promise<void>, opts: Partial<GitHubForgeOptions> = {}) {
    let t = 0;
    const sleeps: number[] = [];
    const forge = h.makeForge({
      ciStartGraceMs: 120_000,
      ciPollMs: 10_000,
      ciMaxPollMs: 60_000,
      ...opts,
      now: () => t,
      sleep: async (ms) => {
        t += ms;
        sleeps.push(ms);
        await onSleep(sleeps.length);
      },
    });
    return { forge, sleeps, elapsed: () => t };
  }

  /** A repository whose default branch has had CI: the fresh commit's parent carries a check run. */
  async function repoWithCiHistory(): Promise<LaneSpec> {
    const l = await repoWithLane();
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h.octokit.request('POST /repos/{owner}/{repo}/check-runs', {
      owner,
      repo,
      name: 'test',
      head_sha: (await h.emu.branchSha(l.repo, 'main'))!,
      status: 'completed',
      conclusion: 'success',
    });
    return l;
  }

  it('waits through the start grace for CI that starts after the push: no CI yet is not "no CI"', async () => {
    const l = await repoWithCiHistory();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    await h.emu.idle();
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('none');
    const [owner, repo] = l.repo.split('/') as [string, string];
    // CI starts during the second wait (tens of seconds after the push on the forge's clock), and fails.
    const c = clockedForge(async (n) => {
      if (n === 2)
        await h.octokit.request('POST /repos/{owner}/{repo}/check-runs', {
          owner,
          repo,
          name: 'test',
          head_sha: rec.commit!,
          status: 'completed',
          conclusion: 'failure',
        });
    });
    const verdict = await c.forge.waitForCi(l, rec.commit!, 30 * 60_000);
    expect(verdict.conclusion).toBe('failure');
    expect(verdict.failures).toContain('✗ test: failure');
    expect(c.sleeps).toHaveLength(2);
    expect(c.elapsed()).toBeLessThan(120_000);
  });

  it('reads "none" once the start grace has passed without any CI, well before the timeout', async () => {
    const l = await repoWithCiHistory();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    await h.emu.idle();
    const c = clockedForge(async () => undefined);
    const verdict = await c.forge.waitForCi(l, rec.commit!, 30 * 60_000);
    expect(verdict).toEqual({ conclusion: 'none', failures: '' });
    expect(c.elapsed()).toBeGreaterThanOrEqual(120_000);
    expect(c.elapsed()).toBeLessThan(120_000 + 60_000);
  });

  it('is none when the repository has no CI at all', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('none');
    expect((await h.forge.waitForCi(l, rec.commit!, 5_000)).conclusion).toBe('none');
  });
});

describe('merge', () => {
  it('waits while GitHub computes mergeable, then merges at the lane commit', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    h.emu.setMergeableNullReads(3, { owner: 'acme', repo: l.repo.split('/')[1]!, number: pub.pr_number! });
    h.emu.resetLog();
    const m = await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash');
    expect(m.status).toBe('merged');
    expect(m.detail).toMatch(/^#1 merged \(squash\) as [0-9a-f]{12}$/);
    expect(h.emu.count({ method: 'GET', route: '/repos/{owner}/{repo}/pulls/{pull_number}' })).toBe(4);
    const put = h.emu.find({ method: 'PUT' });
    expect(put.map((p) => p.body)).toEqual([{ merge_method: 'squash', sha: rec.commit }]);
    expect(h.emu.pullRequests(l.repo)[0]!.merged_at).not.toBeNull();
    // Merging again is not an error: it already is.
    expect((await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash')).status).toBe('merged');
  });

  it('reports pending when mergeable stays unknown past the wait', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    h.emu.setMergeableNullReads(1_000, { owner: 'acme', repo: l.repo.split('/')[1]!, number: pub.pr_number! });
    const m = await h.makeForge({ mergeableWaitMs: 100 }).merge(l, { ...rec, pr_number: pub.pr_number }, 'merge');
    expect(m.status).toBe('pending');
    expect(h.emu.pullRequests(l.repo)[0]!.merged_at).toBeNull();
  });

  it('refuses when the PR head is not the lane commit', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h.emu.commit({ owner, repo, branch: l.branch, files: { 'someone-else.txt': 'y\n' } });
    h.emu.resetLog();
    const m = await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash');
    expect(m.status).toBe('blocked');
    expect(m.detail).toContain("not the lane's");
    expect(h.emu.count({ method: 'PUT' })).toBe(0);
  });

  it('is blocked, with a clear detail, when the PR conflicts or GitHub refuses (405)', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('README.md', 'lane version\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h.emu.commit({ owner, repo, branch: 'main', files: { 'README.md': 'someone else\n' } });
    const conflict = await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'merge');
    expect(conflict).toMatchObject({ status: 'blocked' });
    expect(conflict.detail).toMatch(/conflicts with main/);

    // GitHub's own refusal (a required check Fleet cannot see: the protection changed after Fleet read it).
    const l2 = await repoWithLane();
    h.emu.setCi(l2.repo, ci.green(['test']));
    const rec2 = await pushLane(l2, edit('x.txt', 'x\n'));
    const pub2 = await h.forge.publish(publishInput(l2, rec2));
    h.emu.fault({ kind: '5xx', status: 404, match: { method: 'GET', path: '/repos/{owner}/{repo}/branches/{branch}' } });
    h.emu.protectBranch(l2.repo, 'main', { requiredChecks: ['build'], enforceAdmins: true });
    const refused = await h.forge.merge(l2, { ...rec2, pr_number: pub2.pr_number }, 'squash');
    expect(refused.status).toBe('blocked');
    expect(refused.detail).toMatch(/405/);
    expect(refused.detail).toMatch(/Required status check "build"/);
  });

  it('never merges while a required check has not reported, even with an admin token GitHub would let bypass it', async () => {
    const l = await repoWithLane();
    // Classic protection does not hold admins to it by default: GitHub itself would merge for this token.
    h.emu.protectBranch(l.repo, 'main', { requiredChecks: ['test'] });
    const late = ci.held(ci.green(['test', 'lint']));
    h.emu.setCi(l.repo, late);
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    h.emu.resetLog();
    const early = await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash');
    expect(early).toEqual({
      status: 'pending',
      detail: `#${pub.pr_number} not merged: required check test of main has not reported on ${rec.commit!.slice(0, 12)}`,
    });
    expect(h.emu.count({ method: 'PUT' })).toBe(0);
    expect(h.emu.pullRequests(l.repo)[0]!.merged_at).toBeNull();
    // Now CI reports, green.
    late.release();
    expect((await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash')).status).toBe('merged');
  });

  it('never reads "no CI yet" as green in a repository with workflows', async () => {
    const l = await repoWithLane({ 'README.md': '# x\n', '.github/workflows/ci.yml': 'on: [pull_request]\njobs: {}\n' });
    // The workflow has not started (no CI policy: nothing ever reports).
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    const m = await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash');
    expect(m.status).toBe('pending');
    expect(m.detail).toContain('no CI has reported');
    expect(h.emu.pullRequests(l.repo)[0]!.merged_at).toBeNull();
  });

  it('merges a repository with no CI at all and no required checks', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    expect((await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash')).status).toBe('merged');
  });

  it('blocks a draft and finds the PR by its branch when the record has no number', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    await h.forge.publish(publishInput(l, rec, { draft: true }));
    const m = await h.forge.merge(l, rec, 'squash');
    expect(m).toEqual({ status: 'blocked', detail: '#1 is a draft' });
  });

  it('fast-forwards the base branch for merge.method fast-forward', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    const m = await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'fast-forward');
    expect(m.status).toBe('merged');
    expect(await h.emu.branchSha(l.repo, 'main')).toBe(rec.commit);
  });
});

describe('merge refusals', () => {
  it('fails without a commit or with a merge method GitHub does not have, before any request', async () => {
    const l = await repoWithLane();
    const rec = newLaneRecord({ repo: l.repo, lane: l.id, wave: 0, branch: l.branch, depends_on: [] });
    h.emu.resetLog();
    expect(await h.forge.merge(l, rec, 'squash')).toEqual({ status: 'failed', detail: 'nothing to merge: the lane has no commit' });
    expect(await h.forge.merge(l, { ...rec, commit: 'a'.repeat(40) }, 'octopus')).toEqual({
      status: 'failed',
      detail: 'unknown merge method octopus (merge, squash, rebase or fast-forward)',
    });
    expect(h.emu.count({})).toBe(0);
  });

  it('is blocked when the lane has no open pull request, or its pull request was closed', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    expect(await h.forge.merge(l, rec, 'squash')).toEqual({ status: 'blocked', detail: `no open pull request from ${l.branch}` });
    const pub = await h.forge.publish(publishInput(l, rec));
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h.octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: pub.pr_number!, state: 'closed' });
    h.emu.resetLog();
    expect(await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash')).toEqual({ status: 'blocked', detail: `#${pub.pr_number} is closed` });
    expect(h.emu.count({ method: 'PUT' })).toBe(0);
    expect(await h.forge.isMerged(l, { ...rec, pr_number: pub.pr_number })).toBe(false);
  });

  it('says a pull request merged at another commit is not the lane merged', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    const [owner, repo] = l.repo.split('/') as [string, string];
    const moved = await h.emu.commit({ owner, repo, branch: l.branch, files: { 'someone-else.txt': 'y\n' } });
    await h.octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', { owner, repo, pull_number: pub.pr_number!, merge_method: 'merge' });
    const m = await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash');
    expect(m).toEqual({ status: 'blocked', detail: `#${pub.pr_number} was merged at ${moved.slice(0, 12)}, not at the lane's ${rec.commit!.slice(0, 12)}` });
    // The pull request is merged all the same: isMerged reads GitHub's answer, not the lane's commit.
    expect(await h.forge.isMerged(l, { ...rec, pr_number: pub.pr_number })).toBe(true);
    expect(await h.forge.isMerged(l, { ...rec, pr_number: null })).toBe(false);
  });

  // https://docs.github.com/en/rest/git/refs#update-a-reference: with force false, a move that is not a fast-forward is refused (422).
  it('is blocked when the base moved and a fast-forward is no longer possible', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const pub = await h.forge.publish(publishInput(l, rec));
    const [owner, repo] = l.repo.split('/') as [string, string];
    const main = await h.emu.commit({ owner, repo, branch: 'main', files: { 'other.txt': 'z\n' } });
    const m = await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'fast-forward');
    expect(m.status).toBe('blocked');
    expect(m.detail).toMatch(new RegExp(`^main cannot be fast-forwarded to ${rec.commit!.slice(0, 12)}: Update is not a fast forward`));
    expect(await h.emu.branchSha(l.repo, 'main')).toBe(main);
  });
});

describe('the pull request of a lane', () => {
  it("refuses to adopt another fleet's pull request from the same branch", async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h.octokit.request('POST /repos/{owner}/{repo}/pulls', {
      owner,
      repo,
      title: 'theirs',
      head: l.branch,
      base: 'main',
      body: `${markerFor('other', 'api')}\nanother fleet`,
    });
    const err = await h.forge.publish(publishInput(l, rec)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitHubForgeError);
    expect((err as Error).message).toBe(
      `${l.repo}: publishing failed: pull request #1 from ${l.branch} belongs to fleet other lane api; give this fleet another name or branch template`,
    );
    expect(h.emu.pullRequests(l.repo)).toHaveLength(1);
  });

  it('adopts a pull request of the branch without a marker, and puts the marker in its body', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h.octokit.request('POST /repos/{owner}/{repo}/pulls', { owner, repo, title: 'by hand', head: l.branch, base: 'main', body: 'opened by hand' });
    const r = await h.forge.publish(publishInput(l, rec, { body: 'This change was made by the Fleet **demo**.' }));
    expect(r).toMatchObject({ pr_number: 1, updated: true });
    const [pr] = h.emu.pullRequests(l.repo);
    expect(pr!.title).toBe(`demo: ${l.id}`);
    expect(pr!.body).toBe(`${markerFor('demo', l.id)}\nThis change was made by the Fleet **demo**.`);
  });
});

describe('limits and failures', () => {
  it('slows down on a secondary rate limit but loses nothing', async () => {
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    // `retry-after: 7` at 20 ms a second (retryAfterBaseValue): the waits are 140 ms each, not 7 s.
    const forge = h.makeForge({ octokit: h.client({ retryAfterBaseValue: 20 }) });
    const fault = h.emu.fault({ kind: 'secondary-rate-limit', match: { method: 'POST', path: '/repos/{owner}/{repo}/pulls' }, times: 2, retryAfterSec: 7 });
    h.emu.resetLog();
    const t0 = Date.now();
    const r = await forge.publish(publishInput(l, rec, { labels: ['fleet'] }));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2 * 7 * 20);
    expect(fault.hits).toBe(2);
    expect(r).toMatchObject({ pr_number: 1, updated: false });
    expect(h.emu.pullRequests(l.repo)).toHaveLength(1);
    expect(h.emu.count({ method: 'POST', route: '/repos/{owner}/{repo}/pulls' })).toBe(3);
    expect(h.emu.count({ method: 'POST', route: '/repos/{owner}/{repo}/pulls', status: 201 })).toBe(1);
    expect(h.log.filter((m) => /secondary rate limit on POST \/repos\/acme\/repo-\d+\/pulls: retry \d\/3 in 7s/.test(m))).toHaveLength(2);
  });

  it('waits for the primary limit to reset (GraphQL and REST)', async () => {
    const l = await repoWithLane();
    // The reset is a second away, waited at 10 ms a second (retryAfterBaseValue).
    const forge = h.makeForge({ octokit: h.client({ retryAfterBaseValue: 10 }) });
    h.emu.fault({ kind: 'primary-exhausted', match: { kind: 'graphql' }, times: 1, resetInSec: 1 });
    h.emu.fault({ kind: 'primary-exhausted', match: { method: 'GET', path: /\/git\/ref\// }, times: 1, resetInSec: 1 });
    const checks = await forge.checkTargets([l]);
    expect(checks[0]).toMatchObject({ ok: true });
    expect(await forge.branchHead(l, 'main')).toMatch(/^[0-9a-f]{40}$/);
    expect(h.log.filter((m) => /primary rate limit/.test(m))).toHaveLength(2);
  });

  it('gives up after the configured retries with GitHub’s error, logged, and no token in it', async () => {
    const l = await repoWithLane();
    const client = h.client({ maxRetries: 1, retryAfterBaseValue: 10 });
    const forge = h.makeForge({ octokit: client });
    h.emu.fault({ kind: 'secondary-rate-limit', match: { method: 'GET', path: /\/git\/ref\// }, times: Infinity, retryAfterSec: 1 });
    const err = await forge.branchHead(l, 'main').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitHubForgeError);
    expect((err as Error).message).toMatch(new RegExp(`^${l.repo}: reading branch main failed \\(403\\): You have exceeded a secondary rate limit`));
    expect(h.emu.count({ path: new RegExp(`/repos/${l.repo}/git/ref/`) })).toBe(2);
    expect(h.log.some((m) => /giving up after 1 retry/.test(m))).toBe(true);
  });

  it('refuses a wait longer than the cap instead of sleeping through it', async () => {
    const l = await repoWithLane();
    const forge = h.makeForge({ octokit: h.client({ maxRetryAfterSeconds: 5 }) });
    h.emu.fault({ kind: 'secondary-rate-limit', match: { method: 'GET', path: /\/git\/ref\// }, times: 1, retryAfterSec: 600 });
    await expect(forge.branchHead(l, 'main')).rejects.toThrow(/secondary rate limit/);
    // One request, no retry: it did not wait out the 600 s (the test's own timeout would say so first).
    expect(h.emu.count({ path: new RegExp(`/repos/${l.repo}/git/ref/`) })).toBe(1);
    expect(h.log.some((m) => /asks to wait 600s, more than the 5s/.test(m))).toBe(true);
  });

  it('retries server errors', async () => {
    const l = await repoWithLane();
    const forge = h.makeForge({ octokit: h.client({ retryAfterBaseValue: 10 }) });
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: /\/git\/ref\// }, times: 2 });
    expect(await forge.branchHead(l, 'main')).toMatch(/^[0-9a-f]{40}$/);
    // Two failed attempts in a row of one request: the first, then its first retry.
    expect(h.log.filter((m) => / failed on attempt \d \(502/.test(m)).map((m) => / attempt (\d)/.exec(m)![1])).toEqual(['1', '2']);
  });

  it('never puts the token in an error', async () => {
    const token = 'ghs_readOnlyTokenThatMustNotLeak0001';
    h.emu.addToken(token, { login: 'reader', default: 'pull' });
    const client = createOctokit({ token, apiUrl: h.emu.url, pacing: NO_PACING, logger: h.logger });
    const forge = h.makeForge({ octokit: client, token });
    const l = await repoWithLane();
    const rec = await pushLane(l, edit('x.txt', 'x\n'));
    const errors: string[] = [];
    const grab = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (e) {
        errors.push(String((e as Error).message), JSON.stringify(e), String((e as Error).stack));
      }
    };
    await grab(forge.publish(publishInput(l, rec)));
    await grab(forge.setDraft(l, 99, true));
    await grab(forge.branchHead(lane('acme/x', { repo_kind: 'url', repo: `https://x-access-token:${token}@example.com/a/b.git` }), 'main'));
    const gone = createOctokit({ token: 'ghs_revokedTokenThatMustNotLeak0002', apiUrl: h.emu.url, pacing: NO_PACING });
    await grab(h.makeForge({ octokit: gone, token: 'ghs_revokedTokenThatMustNotLeak0002' }).ciConclusion(l, rec.commit!));
    const merged = await forge.merge(l, { ...rec, pr_number: 1 }, 'squash');
    errors.push(merged.detail);
    expect(errors.length).toBeGreaterThan(6);
    expect(errors.join('\n')).toMatch(/acme\/repo-\d+: opening a pull request from fleet\/demo\/repo-\d+ failed \(403\)/);
    expect(errors.join('\n')).toMatch(/acme\/repo-\d+: reading the check runs of [0-9a-f]{12} failed \(401\)/);
    for (const secret of [token, basicCredential(token), 'ghs_revokedTokenThatMustNotLeak0002']) {
      expect(errors.join('\n')).not.toContain(secret);
      expect(h.log.join('\n')).not.toContain(secret);
    }
  });
});
