/**
 * A whole fleet on GitHub through `fleet run`: eight repositories, CI waited
 * for, one repository's CI flaky once. Every lane ends with a green PR; the
 * flaky one was retried with a second commit; no PR was opened twice.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci, type Emulator } from '../support/github-emulator/index.js';
import { lane, readEvents, readManifest } from '../integration/helpers.js';
import { commitsAhead, createRepos, gitPushes, prsOpened, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;

/** The CI app's token, which finishes svc-8's check run. */
const CI_APP_TOKEN = 'ghs_ContinuousIntegrationApp0123456789ab';

/**
 * Acts as the CI app of `repo`: once the forge has read the check runs of the
 * lane commit (and found them in_progress), completes them green through the
 * REST API. Resolves true when it did, false if no read came within 75 s (on a loaded 2-core machine the lanes have
 * taken over 20 s to reach their CI).
 */
async function finishAfterFirstRead(emu: Emulator, repo: string): Promise<boolean> {
  emu.addToken(CI_APP_TOKEN, { login: 'ci-app[bot]', default: 'push' });
  const deadline = Date.now() + 75_000;
  while (Date.now() < deadline) {
    const read = emu.find({ route: '/repos/{owner}/{repo}/commits/{ref}/check-runs', method: 'GET' }).some((q) => q.path.startsWith(`/repos/${repo}/`));
    if (read) {
      for (const run of emu.checkRuns(repo).filter((c) => c.status !== 'completed')) {
        const res = await fetch(`${emu.url}/repos/${repo}/check-runs/${run.id}`, {
          method: 'PATCH',
          headers: { authorization: `token ${CI_APP_TOKEN}`, 'content-type': 'application/json', accept: 'application/vnd.github+json' },
          body: JSON.stringify({ status: 'completed', conclusion: 'success', output: { title: 'test', summary: 'all tests passed' } }),
        });
        if (!res.ok) throw new Error(`finishing check run ${run.id}: ${res.status} ${await res.text()}`);
      }
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return false;
}
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

describe('a fleet of 8 repositories on GitHub', () => {
  it('every lane ends with a green PR; the flaky CI is retried once with a second commit; exactly 8 PRs', async () => {
    flow = await startFlow();
    const { emu } = flow;
    const repos = await createRepos(emu, 'acme', 'svc', 8);
    // CI runs on lane branches only. It concludes before the push returns (the emulator runs CI while it answers the push),
    // except on svc-8, whose check is still in_progress when the lane first reads it: the CI app finishes it only then,
    // so the forge must poll (FLEET_GITHUB_POLL_MS) to see it green.
    emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['test'])));
    emu.setCi('acme/svc-3', ci.onBranches(/^fleet\//, ci.flakyOnce(['test'])));
    emu.setCi('acme/svc-8', ci.onBranches(/^fleet\//, ci.hanging(['test'])));
    const finisher = finishAfterFirstRead(emu, 'acme/svc-8');

    const file = flow.fleetFile({
      name: 'stamp',
      directive: 'Add a FLEET.md naming the lane.',
      run: 'echo "fleet: $FLEET_LANE (attempt $FLEET_ATTEMPT)" > FLEET.md',
      max_retries: 1,
      max_parallel: 8,
      ci: { wait: true, timeout_minutes: 1 },
      pr: { labels: ['fleet'] },
      targets: repos.map((repo) => ({ repo })),
    });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(file, ws);
    expect(await finisher).toBe(true);
    expect(r.code, r.stderr + r.stdout).toBe(0);

    const m = readManifest(ws);
    expect(m.forge).toBe('github');
    expect(m.summary).toMatchObject({ total: 8, completed: 8, failed: 0, skipped: 0, excluded: 0 });
    expect(prsOpened(emu)).toBe(8);
    expect(emu.count({ route: '/repos/{owner}/{repo}/pulls', method: 'POST' })).toBe(8);

    for (const repo of repos) {
      const id = repo.split('/')[1]!;
      const rec = lane(m, id);
      expect(rec, id).toMatchObject({ status: 'completed', ci_conclusion: 'success', merge_status: 'not-requested', branch: `fleet/stamp/${id}` });
      expect(rec.evidence).toMatchObject({ verified_by: 'github', head_matches: true, files_match: true, fence_ok: true });
      expect(rec.changed_files).toEqual(['FLEET.md']);

      // The forge's state, not the lane's word: one open PR, its head is the lane's commit, not a draft, labelled.
      const pulls = emu.pullRequests(repo);
      expect(pulls, repo).toHaveLength(1);
      const pr = pulls[0]!;
      expect(pr).toMatchObject({ state: 'open', draft: false, headRef: rec.branch, baseRef: 'main', headSha: rec.commit, number: rec.pr_number });
      expect(pr.labels).toEqual(['fleet']);
      expect(pr.body).toContain(`<!-- fleet:stamp:${id} -->`);
      expect(await emu.branchSha(repo, rec.branch!)).toBe(rec.commit);
      // The lane branch is the base plus exactly one lane commit.
      expect(commitsAhead(emu, repo, 'main', rec.branch!)).toEqual([rec.commit]);
      // CI on the PR's head is green on the forge.
      const runs = emu.checkRuns(repo).filter((c) => c.head_sha === rec.commit);
      expect(runs.map((c) => [c.name, c.status, c.conclusion])).toEqual([['test', 'completed', 'success']]);
    }

    // svc-8's CI was still running when the lane first read it: the forge read it again until it concluded.
    const slow = lane(m, 'svc-8');
    const ciReads = emu
      .find({ route: '/repos/{owner}/{repo}/commits/{ref}/check-runs', method: 'GET' })
      .filter((x) => x.path === `/repos/acme/svc-8/commits/${slow.commit}/check-runs`);
    expect(ciReads.length).toBeGreaterThan(1);
    const finished = emu.find({ route: '/repos/{owner}/{repo}/check-runs/{check_run_id}', method: 'PATCH', status: 200 });
    expect(finished).toHaveLength(1);
    expect(ciReads[0]!.id).toBeLessThan(finished[0]!.id);
    expect(ciReads.at(-1)!.id).toBeGreaterThan(finished[0]!.id);
    expect(emu.checkRuns('acme/svc-8').map((c) => [c.head_sha, c.conclusion])).toEqual([[slow.commit, 'success']]);

    const steady = repos.filter((x) => x !== 'acme/svc-3').map((x) => lane(m, x.split('/')[1]!));
    for (const rec of steady) {
      expect(rec.retry_count, rec.lane).toBe(0);
      expect(gitPushes(emu, rec.repo), rec.lane).toBe(1);
    }

    // The flaky one: red on the first push, a retry from the base with a second commit, green on the second push.
    const flaky = lane(m, 'svc-3');
    expect(flaky.retry_count).toBe(1);
    expect(flaky.attempts.map((a) => [a.n, a.failed_step])).toEqual([
      [1, null],
      [1, 'ci'],
      [2, null],
    ]);
    expect(gitPushes(emu, 'acme/svc-3')).toBe(2);
    expect(emu.repo('acme/svc-3')!.pushCounts.get(flaky.branch!)).toBe(2);
    const runs = emu.checkRuns('acme/svc-3').sort((a, b) => a.id - b.id);
    expect(runs.map((c) => c.conclusion)).toEqual(['failure', 'success']);
    const [red, green] = runs;
    expect(green!.head_sha).toBe(flaky.commit);
    expect(red!.head_sha).not.toBe(flaky.commit);
    // The red commit was replaced (pushed with a lease), not stacked: the branch holds only the green one.
    expect(commitsAhead(emu, 'acme/svc-3', 'main', flaky.branch!)).toEqual([flaky.commit]);
    // One PR for the lane: the second push updated it.
    expect(prsOpened(emu, 'acme/svc-3')).toBe(1);
    const events = readEvents(ws)
      .filter((e) => e.lane === 'svc-3')
      .map((e) => e.detail);
    expect(events.some((d) => /retry 1 of 1/.test(d))).toBe(true);

    emu.assertNoViolations();
  });
});
