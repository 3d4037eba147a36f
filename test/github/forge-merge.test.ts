/**
 * The GitHub forge's merge gate, GitHub's answers to a merge, and the reads behind CI verdicts (the base branch,
 * its required checks, every page of a commit's statuses), against the emulator as forge.test.ts: what Fleet
 * says, word for word, when it does not merge, and what it reads once and what afresh.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LaneRecord } from '../../src/core/model.js';
import type { LaneSpec } from '../../src/core/model.js';
import { GitHubForgeError, type GitHubForge } from '../../src/github/forge.js';
import { ci, type CiPolicy } from '../support/github-emulator/index.js';
import { harness, lane, publishInput, pushLaneCommit, type Harness } from './helpers.js';

let h: Harness;
let tmp: string;
let n = 0;
/** A client that does not retry 5xx answers: a fault is answered once, at once. */
let direct: GitHubForge;

beforeAll(async () => {
  h = await harness();
  tmp = await mkdtemp(path.join(os.tmpdir(), 'fleet-github-merge-'));
  direct = h.makeForge({ octokit: h.client({ serverErrorRetries: 0 }) });
});

afterAll(async () => {
  expect(h.emu.violations.filter((v) => !(v.kind === 'unimplemented' && v.operationId === 'actions/list-repo-workflows'))).toEqual([]);
  expect(h.emu.errors).toEqual([]);
  await h.emu.idle();
  await h.emu.close();
  await rm(tmp, { recursive: true, force: true });
});

beforeEach(() => {
  h.log.length = 0;
  h.emu.clearFaults();
});

interface Pushed {
  l: LaneSpec;
  rec: LaneRecord;
  short: string;
}

/** A fresh repository with `ci` (if any), a lane commit pushed, and (unless told not to) its pull request. */
async function lanePr(opts: { ci?: CiPolicy; files?: Record<string, string>; publish?: boolean; laneExtra?: Partial<LaneSpec> } = {}): Promise<Pushed> {
  const name = `m-${++n}`;
  await h.emu.createRepo({ owner: 'acme', name, files: opts.files ?? { 'README.md': '# x\n' }, branches: { develop: { 'README.md': '# x\n' } } });
  if (opts.ci) h.emu.setCi(`acme/${name}`, opts.ci);
  const l = lane(`acme/${name}`, { id: name, branch: `fleet/demo/${name}`, ...opts.laneExtra });
  const dir = path.join(tmp, name);
  let rec = await pushLaneCommit(h, l, dir, (d) => writeFile(path.join(d, 'x.txt'), 'x\n'));
  const commit = rec.commit!;
  if (opts.publish !== false) {
    const pub = await h.forge.publish(publishInput(l, rec));
    rec = { ...rec, pr_number: pub.pr_number };
  }
  return { l, rec, short: commit.slice(0, 12) };
}

const MERGE = '/repos/{owner}/{repo}/pulls/{pull_number}/merge';

describe('the merge gate', () => {
  it('blocks on red CI, naming the first failure', async () => {
    const { l, rec, short } = await lanePr({ ci: ci.red(['test']) });
    h.emu.resetLog();
    const m = await h.forge.merge(l, rec, 'squash');
    expect(m).toEqual({ status: 'blocked', detail: `#1 not merged: CI failed on ${short}: ✗ test: failure` });
    expect(h.emu.count({ method: 'PUT' })).toBe(0);
  });

  it('waits while CI runs, saying what runs', async () => {
    const { l, rec, short } = await lanePr({ ci: ci.hanging(['e2e']) });
    const m = await h.forge.merge(l, rec, 'squash');
    expect(m).toEqual({ status: 'pending', detail: `#1 not merged: CI is still running on ${short} (still running: e2e (in_progress))` });
    expect(h.emu.pullRequests(l.repo)[0]!.merged_at).toBeNull();
  });

  it('names every required check that has not reported', async () => {
    const { l, rec, short } = await lanePr();
    h.emu.protectBranch(l.repo, 'main', { requiredChecks: ['test', 'build'] });
    const m = await h.forge.merge(l, rec, 'squash');
    expect(m).toEqual({ status: 'pending', detail: `#1 not merged: required checks build, test of main have not reported on ${short}` });
  });

  it('does not merge when it cannot read the required checks (it fails closed)', async () => {
    const { l, rec } = await lanePr();
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: '/repos/{owner}/{repo}/branches/{branch}' } });
    const m = await direct.merge(l, rec, 'squash');
    expect(m).toEqual({
      status: 'pending',
      detail: `#1 not merged: could not read its CI and the required checks of main (${l.repo}: reading the protection of main failed (502): Server Error)`,
    });
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: '/repos/{owner}/{repo}/rules/branches/{branch}' } });
    await expect(direct.requiredChecks(l, 'main')).rejects.toThrow(new GitHubForgeError(l.repo, 'reading the rules of main', 502, 'Server Error'));
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: '/repos/{owner}/{repo}/commits/{ref}/check-runs' } });
    expect((await direct.merge(l, rec, 'squash')).detail).toBe(
      `#1 not merged: could not read its CI and the required checks of main (${l.repo}: reading the check runs of ${rec.commit!.slice(0, 12)} failed (502): Server Error)`,
    );
    expect(h.emu.pullRequests(l.repo)[0]!.merged_at).toBeNull();
  });

  it('merges on green CI in a repository with workflows: only no CI at all makes it ask whether CI may come', async () => {
    const { l, rec } = await lanePr({ ci: ci.green(['test']), files: { 'README.md': '# x\n', '.github/workflows/ci.yml': 'on: [push]\njobs: {}\n' } });
    h.emu.resetLog();
    expect((await h.forge.merge(l, rec, 'squash')).status).toBe('merged');
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/actions/workflows' })).toBe(0);
  });

  it('waits for CI that has not started when the parent commit had CI, or when it cannot tell', async () => {
    const { l, rec, short } = await lanePr({ publish: false });
    const [owner, repo] = l.repo.split('/') as [string, string];
    // The base commit (the lane commit's parent) carries a status: this repository has CI.
    await h.octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', { owner, repo, sha: rec.base_commit!, state: 'success', context: 'ci/legacy' });
    const pub = await h.forge.publish({
      lane: l,
      record: rec,
      title: 't',
      body: 'b',
      draft: false,
      labels: [],
      reviewers: [],
      team_reviewers: [],
      assignees: [],
    });
    const m = await h.forge.merge(l, { ...rec, pr_number: pub.pr_number }, 'squash');
    expect(m).toEqual({
      status: 'pending',
      detail: `#1 not merged: no CI has reported on ${short} yet, and the repository has workflows or CI on earlier commits`,
    });

    // No sign of CI, but GitHub does not answer the question: assume CI may come.
    const quiet = await lanePr();
    expect((await h.forge.merge(quiet.l, { ...quiet.rec, commit: quiet.rec.commit }, 'squash')).status).toBe('merged');
    const other = await lanePr();
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: '/repos/{owner}/{repo}/actions/workflows' } });
    h.emu.resetLog();
    const unsure = await h.forge.merge(other.l, other.rec, 'squash');
    expect(unsure.status).toBe('pending');
    expect(unsure.detail).toContain('no CI has reported');
    // A guess, not a verdict: asked once, not retried.
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/actions/workflows' })).toBe(1);
  });
});

describe('GitHub’s answer to a merge', () => {
  it('is blocked when the head moved (409) or the method is refused (422), and failed on anything else', async () => {
    const { l, rec } = await lanePr();
    for (const [status, result] of [
      [409, { status: 'blocked', detail: "#1's head moved while merging (409): Server Error" }],
      [422, { status: 'blocked', detail: 'GitHub cannot merge #1 by rebase (422): Server Error' }],
      [502, { status: 'failed', detail: `${l.repo}: merging #1 failed (502): Server Error` }],
    ] as const) {
      h.emu.fault({ kind: '5xx', status, match: { method: 'PUT', path: MERGE } });
      expect(await direct.merge(l, rec, 'rebase'), String(status)).toEqual(result);
    }
    expect(h.emu.pullRequests(l.repo)[0]!.merged_at).toBeNull();
    const m = await direct.merge(l, rec, 'rebase');
    expect(m.detail).toMatch(/^#1 merged \(rebase\) as [0-9a-f]{12}$/);
    const sha = h.emu.pullRequests(l.repo)[0]!.merge_commit_sha!;
    expect(await direct.merge(l, rec, 'rebase')).toEqual({ status: 'merged', detail: `#1 was already merged as ${sha.slice(0, 12)}` });
  });

  it('fails a fast-forward GitHub cannot answer, and is blocked on a conflict (409)', async () => {
    const { l, rec } = await lanePr();
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'PATCH', path: '/repos/{owner}/{repo}/git/refs/{ref}' } });
    expect(await direct.merge(l, rec, 'fast-forward')).toEqual({ status: 'failed', detail: `${l.repo}: fast-forwarding main failed (502): Server Error` });
    h.emu.fault({ kind: '5xx', status: 409, match: { method: 'PATCH', path: '/repos/{owner}/{repo}/git/refs/{ref}' } });
    expect(await direct.merge(l, rec, 'fast-forward')).toEqual({
      status: 'blocked',
      detail: `main cannot be fast-forwarded to ${rec.commit!.slice(0, 12)}: Server Error`,
    });
    expect(await direct.merge(l, rec, 'fast-forward')).toEqual({ status: 'merged', detail: `main fast-forwarded to ${rec.commit!.slice(0, 12)} (#1)` });
  });

  it('says how long it waited for mergeable, on its own clock, reading every poll', async () => {
    const { l, rec } = await lanePr();
    h.emu.setMergeableNullReads(1_000, { owner: 'acme', repo: l.repo.split('/')[1]!, number: 1 });
    let t = 0;
    // The defaults: a read every 2 s for up to a minute.
    const forge = h.makeForge({ mergeableWaitMs: undefined, pollMs: undefined, now: () => t, sleep: async (ms) => void (t += ms) });
    h.emu.resetLog();
    expect(await forge.merge(l, rec, 'merge')).toEqual({ status: 'pending', detail: 'GitHub had not worked out whether #1 can merge after 60s' });
    // Reads at 0, 2 s, … 60 s: the last one at the deadline.
    expect(h.emu.count({ method: 'GET', route: '/repos/{owner}/{repo}/pulls/{pull_number}' })).toBe(31);
    expect(t).toBe(60_000);
  });

  it('names the conflict and its mergeable_state', async () => {
    const { l, rec } = await lanePr();
    const [owner, repo] = l.repo.split('/') as [string, string];
    await h.emu.commit({ owner, repo, branch: 'main', files: { 'x.txt': 'theirs\n' } });
    expect(await h.forge.merge(l, rec, 'merge')).toEqual({ status: 'blocked', detail: '#1 conflicts with main (mergeable_state: dirty)' });
  });

  it('says whose commit the head is when someone else pushed, and fails on a pull request it cannot read', async () => {
    const { l, rec, short } = await lanePr();
    const [owner, repo] = l.repo.split('/') as [string, string];
    const theirs = await h.emu.commit({ owner, repo, branch: l.branch, files: { 'y.txt': 'y\n' } });
    expect(await h.forge.merge(l, rec, 'merge')).toEqual({
      status: 'blocked',
      detail: `#1's head is ${theirs.slice(0, 12)}, not the lane's ${short}: someone pushed to ${l.branch}`,
    });
    expect(await h.forge.merge(l, { ...rec, pr_number: 99 }, 'merge')).toEqual({
      status: 'failed',
      detail: `${l.repo}: reading pull request #99 failed (404): Not Found`,
    });
  });

  it('finds no pull request to merge without a number or a base branch', async () => {
    const { l, rec } = await lanePr();
    h.emu.resetLog();
    expect(await h.forge.merge(l, { ...rec, pr_number: null, base_branch: null }, 'merge')).toEqual({
      status: 'blocked',
      detail: `no open pull request from ${l.branch}`,
    });
    expect(h.emu.count({})).toBe(0);
    await expect(h.forge.merge(lane('./here', { repo_kind: 'url' }), rec, 'merge')).rejects.toThrow('./here is not an owner/repo name');
  });
});

describe('what CI verdicts read', () => {
  it('reads the default branch and its required checks once per repository, and again after a failure', async () => {
    const { l, rec } = await lanePr({ publish: false });
    h.emu.protectBranch(l.repo, 'main', { requiredChecks: ['test'] });
    const forge = h.makeForge({ octokit: h.client({ serverErrorRetries: 0 }) });
    h.emu.resetLog();
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: '/repos/{owner}/{repo}' } });
    await expect(forge.ciConclusion(l, rec.commit!)).rejects.toThrow(new GitHubForgeError(l.repo, 'reading the default branch', 502, 'Server Error'));
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: '/repos/{owner}/{repo}/branches/{branch}' } });
    await expect(forge.ciConclusion(l, rec.commit!)).rejects.toThrow(new GitHubForgeError(l.repo, 'reading the protection of main', 502, 'Server Error'));
    // Each failure was read again: the default branch twice (failed, then read), the protection once (failed).
    expect(h.emu.count({ route: '/repos/{owner}/{repo}' })).toBe(2);
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/branches/{branch}' })).toBe(1);
    expect(await forge.ciConclusion(l, rec.commit!)).toBe('pending');
    expect(await forge.ciConclusion(l, rec.commit!)).toBe('pending');
    expect(h.emu.count({ route: '/repos/{owner}/{repo}' })).toBe(2);
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/branches/{branch}' })).toBe(2);
    // Another lane of the same repository shares them.
    await forge.ciConclusion({ ...l, id: 'other' }, rec.commit!);
    expect(h.emu.count({ route: '/repos/{owner}/{repo}' })).toBe(2);
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/branches/{branch}' })).toBe(2);
  });

  it('judges against the base the fleet file names, without asking for the default branch', async () => {
    const { l, rec } = await lanePr({ publish: false, laneExtra: { base: 'develop' } });
    h.emu.protectBranch(l.repo, 'develop', { requiredChecks: ['test'], via: 'ruleset' });
    h.emu.resetLog();
    expect(await h.forge.ciConclusion(l, rec.commit!)).toBe('pending');
    expect(h.emu.count({ route: '/repos/{owner}/{repo}' })).toBe(0);
    expect(await h.forge.ciConclusion({ ...l, base: undefined }, rec.commit!)).toBe('none');
  });

  it('reads every page of the commit statuses, and no page more', async () => {
    const statuses = (k: number, failing?: number) =>
      Array.from({ length: k }, (_, i) => ({
        context: `ci/${String(i).padStart(3, '0')}`,
        state: i === failing ? ('failure' as const) : ('success' as const),
      }));
    const full = await lanePr({ ci: { statuses: statuses(100) }, publish: false });
    h.emu.resetLog();
    expect(await h.forge.ciConclusion(full.l, full.rec.commit!)).toBe('success');
    // The verdict is one GraphQL read (Status.contexts is a list, not a page); the REST reads are the wait's.
    expect([h.emu.count({ route: '/graphql' }), h.emu.count({ route: '/repos/{owner}/{repo}/commits/{ref}/status' })]).toEqual([1, 0]);
    expect(await h.forge.readCi(full.l, full.rec.commit!).then((r) => r.statuses.length)).toBe(100);
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/commits/{ref}/status' })).toBe(1);
    const more = await lanePr({ ci: { statuses: statuses(130, 120) }, publish: false });
    h.emu.resetLog();
    const verdict = await h.forge.waitForCi(more.l, more.rec.commit!, 0);
    expect(verdict.conclusion).toBe('failure');
    expect(verdict.failures).toContain('✗ ci/120: failure');
    expect(h.emu.count({ route: '/repos/{owner}/{repo}/commits/{ref}/status' })).toBe(2);
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: '/repos/{owner}/{repo}/commits/{ref}/status' } });
    await expect(direct.readCi(more.l, more.rec.commit!)).rejects.toThrow(
      new GitHubForgeError(more.l.repo, `reading the commit status of ${more.rec.commit!.slice(0, 12)}`, 502, 'Server Error'),
    );
  });
});

describe('the CI wait, on the forge’s own clock', () => {
  /** A lane commit whose parent has a check run (so no CI yet is "not started") and that never gets CI itself. */
  async function quietLane(): Promise<Pushed> {
    const p = await lanePr({ publish: false });
    const [owner, repo] = p.l.repo.split('/') as [string, string];
    await h.octokit.request('POST /repos/{owner}/{repo}/check-runs', {
      owner,
      repo,
      name: 'test',
      head_sha: p.rec.base_commit!,
      status: 'completed',
      conclusion: 'success',
    });
    return p;
  }

  /** A forge whose clock starts at `t0` and moves only when it sleeps. */
  function clocked(t0: number, opts: Parameters<Harness['makeForge']>[0] = {}) {
    let t = t0;
    const sleeps: number[] = [];
    const forge = h.makeForge({
      ciPollMs: undefined,
      ciMaxPollMs: undefined,
      ciStartGraceMs: undefined,
      ...opts,
      now: () => t,
      sleep: async (ms) => void (sleeps.push(ms), (t += ms)),
    });
    return { forge, sleeps, elapsed: () => t - t0 };
  }

  it('polls every 10 s, half as long again each time up to a minute, and reads none after two minutes, by default', async () => {
    const { l, rec } = await quietLane();
    const c = clocked(1_700_000_000_000);
    expect(await c.forge.waitForCi(l, rec.commit!, 60 * 60_000)).toEqual({ conclusion: 'none', failures: '' });
    expect(c.sleeps).toEqual([10_000, 15_000, 22_500, 33_750, 50_625]);
    const long = clocked(0, { ciStartGraceMs: 10 * 60_000 });
    await long.forge.waitForCi(l, rec.commit!, 60 * 60_000);
    expect(Math.max(...long.sleeps)).toBe(60_000);
  });

  it('reads none the moment the start grace has passed, counted from when it began waiting', async () => {
    const { l, rec } = await quietLane();
    const c = clocked(5_000_000, { ciPollMs: 1_000, ciMaxPollMs: 2_000, ciStartGraceMs: 4_500 });
    expect(await c.forge.waitForCi(l, rec.commit!, 60 * 60_000)).toEqual({ conclusion: 'none', failures: '' });
    // 0, 1 s, 2.5 s, 4.5 s: the fourth read is at the grace exactly.
    expect(c.sleeps).toEqual([1_000, 1_500, 2_000]);
    expect(c.elapsed()).toBe(4_500);
  });
});
