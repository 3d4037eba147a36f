/**
 * Injected faults and GitHub's limits: secondary rate limit with retry-after,
 * an exhausted primary limit, 5xx, slow answers, `mergeable: null` for N
 * reads, and the 80-a-minute content-creation limit per token. Also checked
 * with a real Octokit (@actions/github + @octokit/plugin-throttling), which
 * must recognise the answers as GitHub's.
 */
import { getOctokit } from '@actions/github';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api, git, graphql, pushFiles, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;

beforeAll(async () => {
  emu = await startEmulator({ contentLimit: { max: 80, windowMs: 60_000 } });
  work = await tempDir();
  await emu.createRepo({ owner: 'acme', name: 'api' });
});

afterEach(() => {
  emu.clearFaults();
  emu.setMergeableNullReads(0);
  emu.setContentLimit({ max: 80, windowMs: 60_000 });
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

describe('rate-limit headers', () => {
  it('are on every response, counting down per token, with the resource', async () => {
    const a = await api(emu, 'GET', '/repos/acme/api');
    const b = await api(emu, 'GET', '/repos/acme/api');
    for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-ratelimit-used', 'x-ratelimit-resource'])
      expect(a.headers.get(h)).not.toBeNull();
    expect(a.headers.get('x-ratelimit-limit')).toBe('5000');
    expect(Number(b.headers.get('x-ratelimit-remaining'))).toBe(Number(a.headers.get('x-ratelimit-remaining')) - 1);
    expect(a.headers.get('x-ratelimit-resource')).toBe('core');
    expect(Number(a.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    const anon = await api(emu, 'GET', '/repos/acme/api', { token: null });
    expect(anon.headers.get('x-ratelimit-limit')).toBe('60');
    const rl = await api(emu, 'GET', '/rate_limit');
    expect(rl.body.resources.core).toMatchObject({ limit: 5000, used: Number(b.headers.get('x-ratelimit-used')) });
    expect(rl.body.rate).toEqual(rl.body.resources.core);
  });

  it('a token with a small primary limit runs out: 403 with remaining 0', async () => {
    const t = 'ghs_tiny00000000000000000000000000000001';
    emu.addToken(t, { login: 'tiny', rateLimit: 2 });
    expect((await api(emu, 'GET', '/repos/acme/api', { token: t })).status).toBe(200);
    expect((await api(emu, 'GET', '/repos/acme/api', { token: t })).status).toBe(200);
    const third = await api(emu, 'GET', '/repos/acme/api', { token: t });
    expect(third.status).toBe(403);
    expect(third.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(third.body.message).toMatch(/^API rate limit exceeded/);
  });
});

describe('faults', () => {
  it("secondary-rate-limit: 403 with retry-after and GitHub's message, `times` times", async () => {
    const f = emu.fault({ kind: 'secondary-rate-limit', match: { method: 'GET', path: '/repos/{owner}/{repo}' }, times: 2, retryAfterSec: 7 });
    const r1 = await api(emu, 'GET', '/repos/acme/api');
    expect(r1.status).toBe(403);
    expect(r1.headers.get('retry-after')).toBe('7');
    expect(r1.body.message).toMatch(/^You have exceeded a secondary rate limit/);
    expect((await api(emu, 'GET', '/repos/acme/api')).status).toBe(403);
    expect((await api(emu, 'GET', '/repos/acme/api')).status).toBe(200);
    expect(f.hits).toBe(2);
    expect(f.remaining).toBe(0);
    expect(emu.count({ fault: 'secondary-rate-limit' })).toBe(2);
  });

  it('5xx then success; faults match by RegExp, method and kind', async () => {
    emu.fault({ kind: '5xx', status: 503, match: { path: /\/pulls$/ } });
    const r = await api(emu, 'GET', '/repos/acme/api/pulls');
    expect(r.status).toBe(503);
    expect((await api(emu, 'GET', '/repos/acme/api/pulls')).status).toBe(200);
    emu.fault({ kind: '5xx', match: { kind: 'graphql' } });
    expect((await graphql(emu, '{ viewer { login } }')).status).toBe(502);
    expect((await graphql(emu, '{ viewer { login } }')).status).toBe(200);
    emu.fault({ kind: '5xx', match: { kind: 'git' } });
    expect((await git(['ls-remote', emu.gitUrl('acme', 'api')])).code).not.toBe(0);
    expect((await git(['ls-remote', emu.gitUrl('acme', 'api')])).code).toBe(0);
  });

  it('a malformed request answered by a fault is still checked and recorded as a violation (REST and GraphQL)', async () => {
    const f = emu.fault({ kind: '5xx', match: { method: 'POST', path: '/repos/{owner}/{repo}/pulls' } });
    // No `head` and no `base`: GitHub's description requires both.
    const r = await api(emu, 'POST', '/repos/acme/api/pulls', { body: { title: 'no head, no base' } });
    expect(r.status).toBe(502);
    expect(f.hits).toBe(1);
    emu.fault({ kind: 'secondary-rate-limit', match: { kind: 'graphql' } });
    expect((await graphql(emu, '{ viewer { loginx } }')).status).toBe(403);
    expect(emu.violations.map((v) => [v.kind, v.method, v.path])).toEqual([
      ['body', 'POST', '/repos/acme/api/pulls'],
      ['graphql', 'POST', '/graphql'],
    ]);
    // The fault still answered: the log says so.
    expect(emu.find({ path: '/repos/acme/api/pulls', method: 'POST' }).map((q) => q.fault)).toEqual(['5xx']);
    emu.resetViolations();
  });

  it('slow: answers after the delay, then normally', async () => {
    const slow = emu.fault({ kind: 'slow', delayMs: 300, match: { path: '/repos/acme/api' } });
    const t0 = Date.now();
    expect((await api(emu, 'GET', '/repos/acme/api')).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(slow.hits).toBe(1);
    // "Then normally": the fault is spent, so the next request is not held (asserted by the fault's count, not a
    // time bound a busy machine could break).
    expect((await api(emu, 'GET', '/repos/acme/api')).status).toBe(200);
    expect(slow.hits).toBe(1);
  });

  it('primary-exhausted: 403, remaining 0 and a reset time (REST and GraphQL)', async () => {
    emu.fault({ kind: 'primary-exhausted', resetInSec: 30 });
    const r = await api(emu, 'GET', '/repos/acme/api');
    expect(r.status).toBe(403);
    expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) + 29);
    expect(r.body.message).toMatch(/API rate limit exceeded/);
  });

  it('mergeable is null for N reads after each change of the head', async () => {
    await pushFiles(emu, work, { owner: 'acme', repo: 'api', branch: 'lane', files: { 'x.txt': 'x\n' } });
    const pr = (await api(emu, 'POST', '/repos/acme/api/pulls', { body: { head: 'acme:lane', base: 'main', title: 't' } })).body;
    emu.setMergeableNullReads(2);
    const read = async (): Promise<[boolean | null, string]> => {
      const b = (await api(emu, 'GET', `/repos/acme/api/pulls/${pr.number}`)).body;
      return [b.mergeable, b.mergeable_state];
    };
    expect(await read()).toEqual([null, 'unknown']);
    expect(await read()).toEqual([null, 'unknown']);
    expect(await read()).toEqual([true, 'clean']);
    await pushFiles(emu, work, { owner: 'acme', repo: 'api', branch: 'lane', files: { 'y.txt': 'y\n' } });
    expect(await read()).toEqual([null, 'unknown']);
    expect(await read()).toEqual([null, 'unknown']);
    expect(await read()).toEqual([true, 'clean']);
    // One PR only:
    emu.setMergeableNullReads(0);
    emu.setMergeableNullReads(1, { owner: 'acme', repo: 'api', number: pr.number });
    expect(await read()).toEqual([null, 'unknown']);
    expect(await read()).toEqual([true, 'clean']);
  });
});

describe('content-creation limit', () => {
  it('answers the 81st content-creating request in a minute with the secondary limit, per token', async () => {
    const sha = (await emu.branchSha('acme/api', 'main'))!;
    const codes: number[] = [];
    for (let i = 0; i < 81; i++)
      codes.push((await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'success', context: `c${i}` } })).status);
    expect(codes.slice(0, 80).every((c) => c === 201)).toBe(true);
    expect(codes[80]).toBe(403);
    const last = emu.requests.at(-1)!;
    expect(last.fault).toBe('content-limit');
    const r = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'success', context: 'late' } });
    expect(r.body.message).toMatch(/secondary rate limit/);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    // Reads are not limited; another token has its own budget.
    expect((await api(emu, 'GET', '/repos/acme/api')).status).toBe(200);
    const other = 'ghs_other0000000000000000000000000000001';
    emu.addToken(other, { login: 'other' });
    expect((await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { token: other, body: { state: 'success', context: 'other' } })).status).toBe(201);
    expect(emu.statuses('acme/api')).toHaveLength(81);
  });

  it('has a configurable window: after it passes, writes go through again', async () => {
    // The window runs on the emulator clock: advanced past it, not waited for (a loaded machine cannot stretch it).
    emu.setContentLimit({ max: 3, windowMs: 60_000 });
    const sha = (await emu.branchSha('acme/api', 'main'))!;
    const post = async (): Promise<number> => (await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'pending', context: 'w' } })).status;
    expect([await post(), await post(), await post(), await post()]).toEqual([201, 201, 201, 403]);
    emu.clock.advance(60_001);
    expect(await post()).toBe(201);
  });
});

describe('with a real Octokit', () => {
  it('@octokit/plugin-throttling sees the secondary limit and retries after retry-after', async () => {
    emu.fault({ kind: 'secondary-rate-limit', match: { path: '/repos/{owner}/{repo}/pulls' }, times: 1, retryAfterSec: 1 });
    const seen: string[] = [];
    const octokit = getOctokit(
      emu.token!,
      {
        baseUrl: emu.url,
        throttle: {
          onRateLimit: () => false,
          onSecondaryRateLimit: (after: number, options: { method: string; url: string }) => {
            seen.push(`${options.method} ${options.url} after ${after}s`);
            return true;
          },
        },
      },
      throttling,
    );
    const t0 = Date.now();
    const res = await octokit.rest.pulls.list({ owner: 'acme', repo: 'api', state: 'all' });
    expect(res.status).toBe(200);
    expect(seen).toEqual(['GET /repos/{owner}/{repo}/pulls after 1s']);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
    expect(emu.count({ route: '/repos/{owner}/{repo}/pulls', method: 'GET' })).toBeGreaterThanOrEqual(2);
  });

  it('@octokit/plugin-retry retries a 502, and paginate follows the Link headers', async () => {
    for (let i = 0; i < 5; i++) await emu.createRepo({ owner: 'paged', name: `r${i}` });
    emu.fault({ kind: '5xx', match: { path: '/orgs/paged/repos' }, times: 1 });
    const octokit = getOctokit(emu.token!, { baseUrl: emu.url, request: { retryAfter: 0 } }, retry);
    emu.resetLog();
    const repos = await octokit.paginate(octokit.rest.repos.listForOrg, { org: 'paged', per_page: 2 });
    expect(repos.map((r) => r.name)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4']);
    expect(emu.count({ route: '/orgs/{org}/repos', status: 200 })).toBe(3);
    expect(emu.count({ route: '/orgs/{org}/repos', status: 502 })).toBe(1);
  });
});
