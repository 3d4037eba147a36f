/**
 * Re-running a finished fleet on GitHub: the PRs are found again by their
 * head branch, so no PR is opened twice; when the directive makes the same
 * change, nothing is pushed and the branches do not move.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci } from '../support/github-emulator/index.js';
import { lane, readEvents, readManifest } from '../integration/helpers.js';
import { commitsAhead, createRepos, prsOpened, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

describe('re-running a finished fleet on GitHub', () => {
  it('opens no new PR and pushes nothing when the change is identical', async () => {
    flow = await startFlow();
    const { emu } = flow;
    const repos = await createRepos(emu, 'acme', 'web', 5);
    emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['test'])));
    const file = flow.fleetFile({
      name: 'license',
      directive: 'Add the MIT license.',
      run: 'printf "MIT License\\n" > LICENSE',
      max_retries: 0,
      ci: { wait: true, timeout_minutes: 1 },
      pr: { labels: ['fleet', 'license'] },
      targets: repos.map((repo) => ({ repo })),
    });

    const first = await flow.run(file, join(flow.dir, 'ws1'));
    expect(first.code, first.stderr).toBe(0);
    const m1 = readManifest(join(flow.dir, 'ws1'));
    expect(m1.summary.completed).toBe(5);
    const opened = prsOpened(emu);
    expect(opened).toBe(5);
    const before = new Map<string, { head: string | null; pulls: ReturnType<typeof emu.pullRequests> }>();
    for (const repo of repos) before.set(repo, { head: await emu.branchSha(repo, `fleet/license/${repo.split('/')[1]}`), pulls: emu.pullRequests(repo) });
    const pushesBefore = emu.count({ kind: 'git', method: 'POST', operationId: 'git-receive-pack' });
    expect(pushesBefore).toBe(5);
    const mark = emu.requests.length;

    const second = await flow.run(file, join(flow.dir, 'ws2'));
    expect(second.code, second.stderr).toBe(0);
    const m2 = readManifest(join(flow.dir, 'ws2'));
    expect(m2.summary).toMatchObject({ total: 5, completed: 5, failed: 0 });
    expect(m2.fleet_id).not.toBe(m1.fleet_id);

    // No PR opened, nothing pushed (not even a no-op push), no PR edited: the forge is as the first run left it.
    expect(prsOpened(emu)).toBe(opened);
    const later = emu.requests.slice(mark);
    expect(later.filter((q) => q.method === 'POST' && q.route === '/repos/{owner}/{repo}/pulls')).toEqual([]);
    expect(later.filter((q) => q.kind === 'git' && q.operationId === 'git-receive-pack')).toEqual([]);
    expect(later.filter((q) => q.method === 'PATCH')).toEqual([]);
    // Labels already there are not added again.
    expect(later.filter((q) => q.route === '/repos/{owner}/{repo}/issues/{issue_number}/labels')).toEqual([]);
    const events = readEvents(join(flow.dir, 'ws2'));
    for (const repo of repos) {
      const id = repo.split('/')[1]!;
      const rec1 = lane(m1, id);
      const rec2 = lane(m2, id);
      const was = before.get(repo)!;
      expect(rec2.commit, id).toBe(rec1.commit);
      expect(rec2.pr_number, id).toBe(rec1.pr_number);
      expect(rec2.pr_url, id).toBe(rec1.pr_url);
      expect(rec2.ci_conclusion, id).toBe('success');
      expect(rec2.timings.push_ms, id).toBe(0);
      expect(await emu.branchSha(repo, rec2.branch!), id).toBe(was.head);
      expect(commitsAhead(emu, repo, 'main', rec2.branch!)).toEqual([rec1.commit]);
      const pulls = emu.pullRequests(repo);
      expect(pulls, id).toHaveLength(1);
      expect(pulls[0]).toEqual(was.pulls[0]);
      expect(pulls[0]!.labels).toEqual(['fleet', 'license']);
      expect(
        events.some((e) => e.lane === id && e.to === 'pushed' && /already up to date/.test(e.detail)),
        id,
      ).toBe(true);
      expect(
        events.some((e) => e.lane === id && /^updated /.test(e.detail)),
        id,
      ).toBe(true);
    }
    emu.assertNoViolations();
  });
});
