/**
 * Failure isolation and rate limits on GitHub: one repository whose CI is
 * always red ends as a draft PR handed to a person while the others complete;
 * secondary rate limits and 5xx bursts slow the fleet but lose nothing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci } from '../support/github-emulator/index.js';
import { lane, readManifest } from '../integration/helpers.js';
import { actionRequired, createRepos, gitPushes, prsOpened, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

describe('failure isolation on GitHub', () => {
  it('a repository whose CI is always red ends as a draft PR (code-review-needed); the seven others complete; exit 1', async () => {
    flow = await startFlow();
    const { emu } = flow;
    const repos = await createRepos(emu, 'acme', 'app', 8);
    emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['build', 'test'], 20)));
    emu.setCi(
      'acme/app-5',
      ci.onBranches(/^fleet\//, {
        checks: [
          { name: 'build', conclusion: 'success' },
          { name: 'test', conclusion: 'failure', summary: '3 tests failed in app-5' },
        ],
      }),
    );

    const file = flow.fleetFile({
      name: 'bump',
      directive: 'Bump the version.',
      run: 'echo "version: $FLEET_ATTEMPT" > VERSION',
      max_retries: 1,
      ci: { wait: true, timeout_minutes: 1 },
      targets: repos.map((repo) => ({ repo })),
    });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(file, ws);
    expect(r.code, r.stderr).toBe(1);

    const m = readManifest(ws);
    expect(m.summary).toMatchObject({ total: 8, completed: 7, failed: 1 });
    const red = lane(m, 'app-5');
    expect(red).toMatchObject({ status: 'failed', phase: 'draft', merge_status: 'draft', ci_conclusion: 'failure', retry_count: 1 });
    expect(red.error?.class).toBe('code-review-needed');
    expect(red.error?.message).toMatch(/CI is still red after 2 attempts/);
    // On the forge: the PR exists, it is a draft now, and its head is the lane's last commit, red.
    const [pr, ...more] = emu.pullRequests('acme/app-5');
    expect(more).toHaveLength(0);
    expect(pr).toMatchObject({ state: 'open', draft: true, headSha: red.commit, number: red.pr_number });
    const headRuns = emu.checkRuns('acme/app-5').filter((c) => c.head_sha === red.commit);
    expect(headRuns.map((c) => [c.name, c.conclusion]).sort()).toEqual([
      ['build', 'success'],
      ['test', 'failure'],
    ]);
    // Both attempts were pushed: the retry ran after the first red CI.
    expect(gitPushes(emu, 'acme/app-5')).toBe(2);
    // The draft conversion went through GraphQL, once.
    expect(emu.find({ kind: 'graphql' }).filter((q) => q.graphqlFields?.includes('convertPullRequestToDraft'))).toHaveLength(1);

    for (const repo of repos.filter((x) => x !== 'acme/app-5')) {
      const rec = lane(m, repo.split('/')[1]!);
      expect(rec, repo).toMatchObject({ status: 'completed', ci_conclusion: 'success', retry_count: 0, error: null });
      const pulls = emu.pullRequests(repo);
      expect(pulls, repo).toHaveLength(1);
      expect(pulls[0]).toMatchObject({ draft: false, state: 'open', headSha: rec.commit });
      expect(gitPushes(emu, repo)).toBe(1);
    }
    expect(prsOpened(emu)).toBe(8);

    // The report names the one lane needing a person, in stdout and in report.md.
    const printed = actionRequired(r.stdout);
    expect(printed).toContain('`acme/app-5`');
    expect(printed).toContain('code-review-needed');
    expect(printed.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(1);
    const saved = readFileSync(join(ws, 'report.md'), 'utf8');
    expect(actionRequired(saved)).toBe(printed);
    emu.assertNoViolations();
  });
});

describe('rate limits on GitHub', () => {
  it('secondary rate limits on POST pulls and a 5xx burst on GETs slow the fleet but lose nothing', async () => {
    flow = await startFlow();
    const { emu } = flow;
    const repos = await createRepos(emu, 'acme', 'lib', 6);
    emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['test'])));
    const limited = emu.fault({ match: { method: 'POST', path: '/repos/{owner}/{repo}/pulls' }, kind: 'secondary-rate-limit', retryAfterSec: 1, times: 3 });
    // One 502 for each of four repositories' first GET: a burst shared by all could answer a retry too when the
    // lanes start staggered (a busy machine), and then no request would be sure to succeed on its first retry.
    const bursts = repos
      .slice(0, 4)
      .map((repo) => emu.fault({ match: { method: 'GET', kind: 'rest', path: new RegExp(`^/repos/${repo}/`) }, kind: '5xx', status: 502, times: 1 }));

    const file = flow.fleetFile({
      name: 'limits',
      directive: 'Touch a file.',
      run: 'echo "$FLEET_LANE" > LIMITS.md',
      max_retries: 0,
      ci: { wait: true, timeout_minutes: 1 },
      targets: repos.map((repo) => ({ repo })),
    });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(file, ws);
    expect(r.code, r.stderr).toBe(0);
    expect(limited.hits).toBe(3);
    for (const burst of bursts) expect(burst.hits).toBe(1);

    const m = readManifest(ws);
    expect(m.summary).toMatchObject({ total: 6, completed: 6, failed: 0 });
    for (const repo of repos) {
      const rec = lane(m, repo.split('/')[1]!);
      const pulls = emu.pullRequests(repo);
      expect(pulls, repo).toHaveLength(1);
      expect(pulls[0]).toMatchObject({ headSha: rec.commit, number: rec.pr_number, state: 'open' });
      expect(rec.evidence.head_matches).toBe(true);
    }
    // Six PRs, no duplicate: three POSTs were refused (403) and retried, every retry after the retry-after GitHub named.
    expect(prsOpened(emu)).toBe(6);
    const posts = emu.find({ route: '/repos/{owner}/{repo}/pulls', method: 'POST' });
    expect(posts.filter((p) => p.status === 403)).toHaveLength(3);
    expect(posts).toHaveLength(9);
    for (const refused of posts.filter((p) => p.status === 403)) {
      const retry = posts.find((p) => p.path === refused.path && p.id > refused.id);
      expect(retry, refused.path).toBeDefined();
      expect(retry!.time - refused.time).toBeGreaterThanOrEqual(950);
    }
    // Each 502 was answered by a retry of the same request, after the first back-off (1 s), not a longer one.
    const gets = emu.find({ method: 'GET', kind: 'rest' });
    for (const failed of gets.filter((g) => g.status === 502)) {
      const retry = gets.find((g) => g.id > failed.id && g.path === failed.path && g.query === failed.query);
      expect(retry?.status, failed.path).toBe(200);
      expect(retry!.time - failed.time, failed.path).toBeGreaterThanOrEqual(950);
    }
    // Each failed on its first attempt, so the back-off was the first one (1² s): a counter leaked from another
    // request shows as a later attempt, and a 4 s wait. (Read from the log: a wall-clock bound fails on a busy machine.)
    const attempts = [...r.stderr.matchAll(/ failed on attempt (\d+) \(502/g)].map((m) => m[1]);
    expect(attempts).toEqual(['1', '1', '1', '1']);
    expect(r.stderr).toMatch(/secondary rate limit/);

    emu.assertNoViolations();
  });
});
