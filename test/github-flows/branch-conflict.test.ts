/**
 * A lane's PR branch that a person pushed a fix to, met by the next run on GitHub (branch_conflict): by default the
 * lane fails before running and the PR is left as the person left it; with rebase, their commit is kept under Fleet's
 * new one, the same PR is updated and says so, and the report verifies the lane's own change through GitHub's compare.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readManifest } from '../integration/helpers.js';
import { startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

describe('a PR branch someone else pushed to, on GitHub', () => {
  it('fails the lane by default, then keeps their commit under a rebased one in the same PR', async () => {
    flow = await startFlow();
    const { emu } = flow;
    await emu.createRepo({ owner: 'acme', name: 'core', files: { 'README.md': '# core\n', 'NOTES.md': 'notes\n' } });
    const file = flow.fleetFile({
      name: 'note',
      directive: 'Add a note.',
      run: 'echo "note $FLEET_ATTEMPT" > NOTE.md',
      max_retries: 0,
      owns: ['NOTE.md'],
      targets: [{ repo: 'acme/core' }],
    });
    const first = await flow.run(file, join(flow.dir, 'ws1'));
    expect(first.code, first.stderr).toBe(0);
    const [pr] = emu.pullRequests('acme/core');
    expect(pr).toBeDefined();

    // A reviewer fixes something outside the lane's fence, on the PR branch, through the web editor.
    const theirs = await emu.commit({
      owner: 'acme',
      repo: 'core',
      branch: 'fleet/note/core',
      files: { 'NOTES.md': 'fixed by a reviewer\n' },
      message: 'Fix the notes',
    });
    await emu.commit({ owner: 'acme', repo: 'core', branch: 'main', files: { 'README.md': '# core, moved on\n' }, message: 'main moves' });

    const refused = await flow.run(file, join(flow.dir, 'ws2'));
    expect(refused.code).toBe(1);
    expect(readManifest(join(flow.dir, 'ws2')).lanes[0]).toMatchObject({ status: 'failed', error: { class: 'branch-conflict' } });
    expect(await emu.branchSha('acme/core', 'fleet/note/core')).toBe(theirs);

    const ws = join(flow.dir, 'ws3');
    const rebased = await flow.run(file, ws, ['--branch-conflict', 'rebase']);
    expect(rebased.code, rebased.stderr).toBe(0);
    const lane = readManifest(ws).lanes[0]!;
    expect(lane).toMatchObject({
      status: 'completed',
      pr_number: pr!.number,
      changed_files: ['NOTE.md'],
      branch_conflict: { strategy: 'rebase', commits: [theirs] },
    });
    // Verified on GitHub: the lane's own change (NOTE.md, inside its fence) on top of what it kept (NOTES.md, outside).
    expect(lane.evidence).toMatchObject({ verified_by: 'github', head_matches: true, files_match: true, fence_ok: true });
    const prs = emu.pullRequests('acme/core');
    expect(prs).toHaveLength(1);
    expect(prs[0]!.body).toMatch(/\*\*Kept\*\* 1 commit others pushed to this branch/);
    const head = (await emu.branchSha('acme/core', 'fleet/note/core'))!;
    expect(head).toBe(lane.commit);
    expect(lane.branch_conflict!.start).not.toBe(theirs);
    emu.assertNoViolations();
  }, 120_000);
});
