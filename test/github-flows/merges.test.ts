/**
 * `merge: when-green` against CI that starts late, as GitHub Actions does (a
 * push event is queued, a runner is picked, and for a while the commit has no
 * check run and no status at all). The start grace Fleet gives "no CI yet"
 * (FLEET_GITHUB_CI_GRACE_MS, 250 ms here) is much shorter than that delay, so
 * only what Fleet knows of the repository keeps it from merging early: the
 * base branch's required checks, and the workflows it has.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci } from '../support/github-emulator/index.js';
import { lane, readManifest } from '../integration/helpers.js';
import { startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

/** CI starts this long after each push of a lane branch: far past the flows' 250 ms start grace. */
const LATE_MS = 3_000;

function mergeFile(f: Flow, repos: string[], wait: boolean): string {
  return f.fleetFile({
    name: 'late',
    directive: 'Add a marker file.',
    run: 'echo "$FLEET_LANE" > MARKER.md',
    max_retries: 0,
    targets: repos.map((repo) => ({ repo })),
    ci: { wait, timeout_minutes: 1 },
    merge: { policy: 'when-green', method: 'squash' },
  });
}

describe('merge: when-green with CI that starts seconds after the push', () => {
  it('waits for the required check past the start grace, and merges only after it succeeded', async () => {
    flow = await startFlow();
    const { emu } = flow;
    await emu.createRepo({ owner: 'acme', name: 'svc', files: { 'README.md': '# svc\n' } });
    // The flows' token is an admin, and classic protection does not hold admins to it by default: GitHub itself would merge early.
    emu.protectBranch('acme/svc', 'main', { requiredChecks: ['test'] });
    emu.setCi('acme/svc', ci.onBranches(/^fleet\//, ci.late(LATE_MS, ci.green(['test'], 200))));
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(mergeFile(flow, ['acme/svc'], true), ws);
    expect(r.code, r.stderr).toBe(0);

    const rec = lane(readManifest(ws), 'svc');
    expect(rec).toMatchObject({ status: 'completed', phase: 'merged', merge_status: 'merged', ci_conclusion: 'success' });
    const [put, ...more] = emu.find({ route: '/repos/{owner}/{repo}/pulls/{pull_number}/merge', method: 'PUT' });
    expect(more).toHaveLength(0);
    expect(put!.status).toBe(200);
    const [check] = emu.checkRuns('acme/svc').filter((c) => c.head_sha === rec.commit);
    expect(check).toMatchObject({ name: 'test', status: 'completed', conclusion: 'success' });
    expect(put!.time).toBeGreaterThanOrEqual(check!.concludedAtMs!);
    // Fleet read the check runs while nothing had reported, and kept reading (it did not take "none" for an answer).
    const pushed = emu.find({ kind: 'git', method: 'POST', status: 200 }).find((q) => q.path === '/git/acme/svc.git/git-receive-pack')!;
    const reads = emu.find({ route: '/repos/{owner}/{repo}/commits/{ref}/check-runs', method: 'GET' }).filter((q) => q.id > pushed.id && q.id < put!.id);
    expect(reads.length).toBeGreaterThan(1);
    emu.assertNoViolations();
  }, 90_000);

  it('without ci.wait, never merges a fresh push whose required check or workflow has not reported yet', async () => {
    flow = await startFlow();
    const { emu } = flow;
    await emu.createRepo({ owner: 'acme', name: 'guarded', files: { 'README.md': '# guarded\n' } });
    emu.protectBranch('acme/guarded', 'main', { requiredChecks: ['test'], via: 'ruleset' });
    // No required checks, but a workflow that runs on pull requests.
    await emu.createRepo({
      owner: 'acme',
      name: 'actions',
      files: { 'README.md': '# actions\n', '.github/workflows/ci.yml': 'on: [pull_request]\njobs: {}\n' },
    });
    // No CI, no protection: nothing to wait for.
    await emu.createRepo({ owner: 'acme', name: 'bare', files: { 'README.md': '# bare\n' } });
    // CI that starts long after this run has ended: whatever the machine's load, nothing has reported when Fleet decides.
    emu.setCi('acme/guarded', ci.onBranches(/^fleet\//, ci.late(10 * 60_000, ci.green(['test']))));
    emu.setCi('acme/actions', ci.onBranches(/^fleet\//, ci.late(10 * 60_000, ci.green(['build']))));
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(mergeFile(flow, ['acme/guarded', 'acme/actions', 'acme/bare'], false), ws);
    expect(r.code, r.stderr).toBe(0);

    const m = readManifest(ws);
    for (const id of ['guarded', 'actions']) {
      const rec = lane(m, id);
      expect(rec, id).toMatchObject({ status: 'completed', phase: 'pr-open', merge_status: 'pending' });
      expect(emu.pullRequests(`acme/${id}`)[0]!.merged_at, id).toBeNull();
    }
    // The required check counts in the CI verdict itself: pending, so the lane does not even try.
    expect(lane(m, 'guarded').ci_conclusion).toBe('pending');
    expect(lane(m, 'guarded').evidence.notes).toContain('not merged: CI is pending');
    // The workflow is only a sign of CI to come: the verdict is none, and the forge's last check before merging refuses.
    expect(lane(m, 'actions').ci_conclusion).toBe('none');
    expect(lane(m, 'actions').evidence.notes.join('\n')).toMatch(/merge pending: #1 not merged: no CI has reported on [0-9a-f]{12} yet/);
    expect(lane(m, 'bare')).toMatchObject({ phase: 'merged', merge_status: 'merged', ci_conclusion: 'none' });
    const merges = emu.find({ route: '/repos/{owner}/{repo}/pulls/{pull_number}/merge', method: 'PUT' });
    expect(merges.map((q) => q.path)).toEqual(['/repos/acme/bare/pulls/1/merge']);
    emu.assertNoViolations();
  }, 90_000);
});
