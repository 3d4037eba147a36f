/**
 * One lane on GitHub, run on its own (as a matrix job runs it): the pull request, CI, the merge policy and the
 * draft hand-off, against the GitHub emulator (real HTTP, real git; pacing 0, CI polled every few ms). What is
 * asserted is the lane's record and what the emulator holds afterwards.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LaneRecord } from '../../src/core/model.js';
import { runLane } from '../../src/steps/lane/index.js';
import { ci } from '../support/github-emulator/index.js';
import { harness, type Harness } from '../github/helpers.js';
import { removeDir, tempDir } from '../integration/helpers.js';
import { readRemoteFile, tgit } from '../support/repos.js';
import { planLane } from './lane-support.js';

let h: Harness;
beforeAll(async () => {
  // No retries of 5xx: a fault answers at once, so a forge call that fails is seen failing.
  h = await harness({}, { serverErrorRetries: 0 });
});
afterAll(async () => {
  await h.emu.close();
});

let dir: string;
let n = 0;
beforeEach(() => {
  dir = tempDir('fleet-lane-gh-');
});
afterEach(() => {
  h.emu.clearFaults();
  removeDir(dir);
});

/** A fresh repository acme/svc-<n> as the one target of the fleet `spec` (named `lanes`). */
async function laneOf(spec: Record<string, unknown>) {
  const name = `svc-${++n}`;
  const repo = `acme/${name}`;
  await h.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
  const planned = await planLane(dir, h.makeForge({ name: 'lanes' }), { forge: 'github', ...spec }, { repo });
  return { repo, name, ...planned };
}

const steps = (rec: LaneRecord) => rec.attempts.map((a) => [a.n, a.exit_code, a.failed_step]);
const readyMutations = () => h.emu.find({ kind: 'graphql' }).filter((q) => q.graphqlFields?.includes('markPullRequestReadyForReview')).length;

describe('the pull request', () => {
  it('is opened for a pushed lane, then updated (not opened again) by a re-run', async () => {
    const { ctx, spec, start, events, repo } = await laneOf({ run: 'echo x >> README.md' });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'pr-open', ci_conclusion: 'none', merge_status: 'not-requested' });
    expect(rec.pr_number).toBeTypeOf('number');
    expect(rec.pr_url).toMatch(new RegExp(`/${repo}/pull/${rec.pr_number}$`));
    expect(events.slice(-3)).toEqual([`pushed: ${spec.branch} at ${rec.commit!.slice(0, 12)}`, `pr-open: opened ${rec.pr_url}`, 'pr-open: completed']);
    const prs = h.emu.pullRequests(repo);
    expect(prs).toMatchObject([{ number: rec.pr_number, draft: false, state: 'open', headSha: rec.commit }]);
    expect(prs[0]!.body).toContain('<!-- fleet:lanes:svc-');
    expect(prs[0]!.body).toContain('**Files changed** (1)');

    events.length = 0;
    const again = await runLane(ctx, spec, start);
    expect(again).toMatchObject({ status: 'completed', phase: 'pr-open', pr_number: rec.pr_number, commit: rec.commit });
    expect(events).toContain(`pr-open: updated ${rec.pr_url}`);
    expect(h.emu.pullRequests(repo)).toHaveLength(1);
  });

  it('what GitHub would not do for the PR (its own author as a reviewer) is noted, not failed', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md', pr: { reviewers: [h.emu.login] } });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'pr-open' });
    expect(rec.evidence.notes).toContain(`${h.emu.login} opened the PR and cannot review it`);
    expect(h.emu.pullRequests(repo)).toHaveLength(1);
  });

  it('opened as a draft when the fleet says pr.draft', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md', pr: { draft: true } });
    const rec = await runLane(ctx, spec, start);
    expect(rec.status).toBe('completed');
    expect(h.emu.pullRequests(repo)).toMatchObject([{ number: rec.pr_number, draft: true }]);
  });

  it("that cannot be opened: pr-failed, with the step and GitHub's answer; the branch stays pushed", async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md' });
    h.emu.fault({ match: { method: 'POST', path: '/repos/{owner}/{repo}/pulls' }, kind: '5xx', status: 502, times: Infinity });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'failed', phase: 'failed', pr_number: null, error: { class: 'pr-failed' } });
    expect(rec.error!.message).toMatch(/^opening or updating the pull request failed: .*502/);
    expect(await h.emu.branchSha(repo, spec.branch)).toBe(rec.commit);
  });

  it('an interrupt after the push: cancelled, and what was pushed stays on the forge', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md' });
    h.emu.fault({ match: { method: 'POST', path: '/repos/{owner}/{repo}/pulls' }, kind: '5xx', status: 502, times: Infinity });
    const stop = new AbortController();
    const rec = await runLane(
      {
        ...ctx,
        signal: stop.signal,
        onUpdate: (r, d) => {
          ctx.onUpdate(r, d);
          if (r.phase === 'pushed') stop.abort();
        },
      },
      spec,
      start,
    );
    expect(rec.error?.class).toBe('cancelled');
    expect(rec.error?.message).toMatch(
      /^the run was interrupted while this lane was pushed; what it pushed stays on the forge; a resumed run checks it again \(opening or updating the pull request failed: .*\)$/s,
    );
    expect(await h.emu.branchSha(repo, spec.branch)).toBe(rec.commit);
  });
});

describe('CI', () => {
  it('without ci.wait, the verdict is read once: a red CI is recorded, the lane still completes', async () => {
    const { ctx, spec, start, repo, events } = await laneOf({ run: 'echo x >> README.md' });
    h.emu.setCi(repo, ci.red(['test']));
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'pr-open', ci_conclusion: 'failure', merge_status: 'not-requested' });
    expect(events.some((e) => e.startsWith('ci:'))).toBe(false);
  });

  it('with ci.wait, the lane waits for a green CI and says on which commit', async () => {
    const { ctx, spec, start, repo, events } = await laneOf({ run: 'echo x >> README.md', ci: { wait: true, timeout_minutes: 1 } });
    // CI that takes a while: the lane waits for it within ci.timeout_minutes.
    h.emu.setCi(repo, ci.green(['test'], 1500));
    const rec = await runLane(ctx, spec, start);
    // Once CI has answered the lane is back where it was, its PR open: a finished lane never reads as waiting for CI.
    expect(rec).toMatchObject({ status: 'completed', phase: 'pr-open', ci_conclusion: 'success', attempts: [{ n: 1, failed_step: null }] });
    expect(events.slice(-3)).toEqual([`ci: waiting for CI on ${rec.commit!.slice(0, 12)}`, 'pr-open: CI success', 'pr-open: completed']);
    // Not a draft to begin with: nothing to mark ready.
    expect(h.emu.pullRequests(repo)).toMatchObject([{ draft: false }]);
  });

  it('CI that does not conclude within ci.timeout_minutes: pending, the lane completes', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md', ci: { wait: true, timeout_minutes: 0.005 } });
    h.emu.setCi(repo, ci.hanging(['test']));
    const rec = await runLane(ctx, spec, start);
    // Ended, with CI still pending: the lane's phase is where it ended (its PR open), the CI column says pending.
    expect(rec).toMatchObject({ status: 'completed', phase: 'pr-open', ci_conclusion: 'pending', merge_status: 'not-requested' });
  });

  it('a red CI with a retry left: the directive runs again with the failure, and the new commit goes to the same PR', async () => {
    const { ctx, spec, start, repo } = await laneOf({
      max_retries: 1,
      run: 'printf "%s\\n" "$FLEET_ATTEMPT" >> attempts.txt; printf "%s" "$FLEET_FEEDBACK" > feedback.txt',
      ci: { wait: true, timeout_minutes: 1 },
    });
    h.emu.setCi(repo, ci.flakyOnce(['unit-tests']));
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', ci_conclusion: 'success', retry_count: 1 });
    expect(steps(rec)).toEqual([
      [1, 0, null],
      [1, null, 'ci'],
      [2, 0, null],
    ]);
    const { name } = { name: repo.split('/')[1]! };
    expect(rec.attempts[1]).toMatchObject({ duration_ms: 0, exit_code: null, signal: null, timed_out: false, log: `lanes/${name}/attempt-1.log` });
    const remote = join(h.emu.reposDir, `${repo}.git`);
    expect(await readRemoteFile(remote, spec.branch, 'attempts.txt')).toBe('2\n');
    const feedback = (await readRemoteFile(remote, spec.branch, 'feedback.txt'))!;
    expect(feedback.startsWith('CI failed on the pushed change:\n')).toBe(true);
    expect(feedback).toContain('unit-tests');
    // One PR, at the second commit, which says it is the second attempt.
    expect(h.emu.pullRequests(repo)).toMatchObject([{ number: rec.pr_number, headSha: rec.commit, draft: false }]);
    expect((await tgit(['--git-dir', remote, 'log', '-1', '--format=%B', spec.branch])).stdout).toContain('Fleet-Attempt: 2');
    expect(rec.timings.push_ms).toBeGreaterThanOrEqual(0);
    expect(rec.timings.wait_ms).toBeGreaterThanOrEqual(0);
  });

  it('a red CI with no retry left: the PR becomes a draft, the lane fails asking for a review', async () => {
    const { ctx, spec, start, repo, events } = await laneOf({ run: 'echo x >> README.md', ci: { wait: true, timeout_minutes: 1 } });
    h.emu.setCi(repo, ci.red(['lint']));
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'failed', phase: 'draft', merge_status: 'draft', ci_conclusion: 'failure', error: { class: 'code-review-needed' } });
    expect(rec.error!.message).toMatch(/^CI is still red after 1 attempt: http\S+$/);
    expect(rec.ended_at).not.toBeNull();
    expect(events.at(-1)).toBe('draft: CI red, retries exhausted: handed to a person');
    expect(h.emu.pullRequests(repo)).toMatchObject([{ number: rec.pr_number, draft: true, state: 'open' }]);
    expect(steps(rec)).toEqual([
      [1, 0, null],
      [1, null, 'ci'],
    ]);
  });

  it('a CI retry whose directive makes the same change still pushes a new commit, and CI runs on it', async () => {
    const { ctx, spec, start, repo } = await laneOf({ max_retries: 1, run: 'echo x >> README.md', ci: { wait: true, timeout_minutes: 1 } });
    h.emu.setCi(repo, ci.flakyOnce(['test']));
    const first: string[] = [];
    const rec = await runLane({ ...ctx, onUpdate: (r, d) => (ctx.onUpdate(r, d), d.startsWith('waiting for CI') && first.push(r.commit!)) }, spec, start);
    expect(rec).toMatchObject({ status: 'completed', ci_conclusion: 'success', retry_count: 1 });
    expect(first).toHaveLength(2);
    expect(first[1]).not.toBe(first[0]);
    expect(rec.commit).toBe(first[1]);
    expect(h.emu.pullRequests(repo)).toMatchObject([{ headSha: rec.commit }]);
  });

  it('red after every retry: "after 2 attempts"', async () => {
    const { ctx, spec, start, repo } = await laneOf({ max_retries: 1, run: 'echo "$FLEET_ATTEMPT" >> README.md', ci: { wait: true, timeout_minutes: 1 } });
    h.emu.setCi(repo, ci.red(['lint']));
    const rec = await runLane(ctx, spec, start);
    expect(rec.error?.class).toBe('code-review-needed');
    expect(rec.error?.message).toMatch(/^CI is still red after 2 attempts: /);
    expect(steps(rec)).toEqual([
      [1, 0, null],
      [1, null, 'ci'],
      [2, 0, null],
      [2, null, 'ci'],
    ]);
  });

  it('a drafted PR is marked ready again when a later run turns CI green', async () => {
    const fix = join(dir, 'fix.txt');
    writeFileSync(fix, 'broken\n');
    const { ctx, spec, start, repo } = await laneOf({ run: `cat ${JSON.stringify(fix)} > BUILD`, ci: { wait: true, timeout_minutes: 1 } });
    h.emu.setCi(repo, ci.red(['test']));
    const red = await runLane(ctx, spec, start);
    expect(h.emu.pullRequests(repo)).toMatchObject([{ number: red.pr_number, draft: true }]);
    writeFileSync(fix, 'fixed\n');
    h.emu.setCi(repo, ci.green(['test']));
    const before = readyMutations();
    const green = await runLane(ctx, spec, start);
    expect(green).toMatchObject({ status: 'completed', ci_conclusion: 'success', pr_number: red.pr_number });
    expect(h.emu.pullRequests(repo)).toMatchObject([{ number: red.pr_number, draft: false, headSha: green.commit }]);
    expect(readyMutations() - before).toBe(1);
  });

  it('a PR the fleet opens as a draft stays one when CI is green', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md', pr: { draft: true }, ci: { wait: true, timeout_minutes: 1 } });
    h.emu.setCi(repo, ci.green(['test']));
    const before = readyMutations();
    expect(await runLane(ctx, spec, start)).toMatchObject({ status: 'completed', ci_conclusion: 'success' });
    expect(h.emu.pullRequests(repo)).toMatchObject([{ draft: true }]);
    expect(readyMutations()).toBe(before);
  });

  it('CI that cannot be read: ci-failed, saying whether it was read or waited for', async () => {
    const once = await laneOf({ run: 'echo x >> README.md' });
    h.emu.fault({ match: { method: 'GET', path: '/repos/{owner}/{repo}/commits/{ref}/check-runs' }, kind: '5xx', status: 503, times: Infinity });
    // The read is one GraphQL query first, the REST reads when it cannot answer: both fail here.
    const gql = h.emu.fault({ match: { method: 'POST', path: '/graphql' }, kind: '5xx', status: 503, times: Infinity });
    const read = await runLane(once.ctx, once.spec, once.start);
    gql.cancel();
    expect(read).toMatchObject({ status: 'failed', error: { class: 'ci-failed' } });
    expect(read.error!.message).toMatch(/^reading CI failed: /);
    const waited = await laneOf({ run: 'echo x >> README.md', ci: { wait: true, timeout_minutes: 1 } });
    const rec = await runLane(waited.ctx, waited.spec, waited.start);
    expect(rec.error?.class).toBe('ci-failed');
    expect(rec.error!.message).toMatch(/^waiting for CI failed: /);
  });
});

describe('the merge policy', () => {
  it('when-green with no CI: merged, the base branch holds the change', async () => {
    const { ctx, spec, start, repo, events } = await laneOf({ run: 'echo merged >> README.md', merge: { policy: 'when-green', method: 'merge' } });
    const base = await h.emu.branchSha(repo, 'main');
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'merged', merge_status: 'merged', ci_conclusion: 'none' });
    expect(events.slice(-2)).toEqual(['merging: the policy is when-green', 'merged: completed']);
    expect(await h.emu.branchSha(repo, 'main')).not.toBe(base);
    expect(h.emu.pullRequests(repo)).toMatchObject([{ number: rec.pr_number, state: 'closed', merged_at: expect.any(String) }]);
  });

  it('when-green, but GitHub will not merge (a draft): the lane ends with its PR open, the reason noted', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md', pr: { draft: true }, merge: { policy: 'when-green' } });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'pr-open', merge_status: 'blocked' });
    expect(rec.evidence.notes).toContain(`merge blocked: #${rec.pr_number} is a draft`);
    expect(h.emu.pullRequests(repo)).toMatchObject([{ merged_at: null, state: 'open' }]);
  });

  it('when-green with CI red: not merged, blocked; with CI still running: pending', async () => {
    const red = await laneOf({ run: 'echo x >> README.md', merge: { policy: 'when-green' } });
    h.emu.setCi(red.repo, ci.red(['test']));
    const blocked = await runLane(red.ctx, red.spec, red.start);
    expect(blocked).toMatchObject({ status: 'completed', phase: 'pr-open', ci_conclusion: 'failure', merge_status: 'blocked' });
    expect(blocked.evidence.notes).toContain('not merged: CI is failure');
    expect(red.events.some((e) => e.startsWith('merging'))).toBe(false);

    const running = await laneOf({ run: 'echo x >> README.md', merge: { policy: 'when-green' } });
    h.emu.setCi(running.repo, ci.hanging(['test']));
    const pending = await runLane(running.ctx, running.spec, running.start);
    expect(pending).toMatchObject({ status: 'completed', ci_conclusion: 'pending', merge_status: 'pending' });
    expect(pending.evidence.notes).toContain('not merged: CI is pending');
    expect(h.emu.pullRequests(running.repo)).toMatchObject([{ merged_at: null }]);
  });

  it('when-green after waiting for a green CI: merged', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md', ci: { wait: true, timeout_minutes: 1 }, merge: { policy: 'when-green' } });
    h.emu.setCi(repo, ci.green(['test']));
    expect(await runLane(ctx, spec, start)).toMatchObject({ status: 'completed', phase: 'merged', merge_status: 'merged', ci_conclusion: 'success' });
  });
});

describe('the draft hand-off', () => {
  it('a PR that cannot be turned into a draft: pr-failed, saying CI stayed red, not a crash of Fleet', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md', ci: { wait: true, timeout_minutes: 1 } });
    h.emu.setCi(repo, ci.red(['lint']));
    h.emu.fault({ match: { kind: 'graphql' }, kind: '5xx', status: 502, times: Infinity });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'failed', phase: 'failed', ci_conclusion: 'failure', error: { class: 'pr-failed' } });
    expect(rec.error!.message).toMatch(/^turning the pull request into a draft after CI stayed red failed: .*502/);
    expect(h.emu.pullRequests(repo)).toMatchObject([{ number: rec.pr_number, draft: false }]);
  });
});

describe('a lane whose directive outlives its GitHub App token', () => {
  it("has its push refused once (401), renews the token and pushes again; the PR is the App's", async () => {
    const { AppInstallationToken } = await import('../../src/github/app-token.js');
    const { createOctokit } = await import('../../src/github/octokit.js');
    const { localExecutor } = await import('./lane-support.js');
    const app = h.emu.addApp({
      id: 777,
      slug: 'long-lanes',
      installations: [{ account: 'acme', permissions: { contents: 'write', 'pull-requests': 'write', issues: 'write', checks: 'read', statuses: 'read' } }],
    });
    const token = await AppInstallationToken.start({ appId: String(app.id), privateKey: app.privateKeyPem, owner: 'acme' }, { apiUrl: h.emu.url });
    const octokit = createOctokit({
      token: token.current(),
      credential: token,
      apiUrl: h.emu.url,
      pacing: { writeMs: 0, searchMs: 0, notificationsMs: 0 },
      serverErrorRetries: 0,
    });
    const forge = h.makeForge({ octokit, token: token.current(), credential: token, name: 'lanes' });
    const name = `svc-${++n}`;
    await h.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
    const { ctx, spec, start } = await planLane(dir, forge, { forge: 'github', run: 'echo x >> README.md' }, { repo: `acme/${name}` });
    // The directive runs for 61 minutes of GitHub's clock: with no answer in between, Fleet still thinks the token fresh.
    ctx.exec = {
      ...localExecutor,
      run: async (command, opts) => {
        const r = await localExecutor.run(command, opts);
        h.emu.clock.advance(61 * 60_000);
        return r;
      },
    };
    h.emu.resetLog();
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'pr-open' });
    const pushes = h.emu.find({ kind: 'git', operationId: 'git-receive-pack' });
    expect(pushes.map((r) => r.status)).toContain(401);
    expect(pushes.at(-1)).toMatchObject({ status: 200, login: 'long-lanes[bot]', token: token.current() });
    expect(token.minted).toHaveLength(2);
    expect(h.emu.pullRequests(`acme/${name}`)[0]!.user).toBe('long-lanes[bot]');
  });
});
