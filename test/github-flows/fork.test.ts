/**
 * Fork mode (pr.fork, `fleet run --fork`) on GitHub, with a personal token that can only read the targets, as a
 * contributor outside the organization (or a platform team without write access) runs it: each target is forked once,
 * the lane branch is pushed to the fork, the PR opened from `owner:branch` into the target; the target's CI runs on it
 * (pull_request), the report verifies the lane in the fork, and a re-run updates the same PR. Without fork mode the
 * same token's push is refused.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci } from '../support/github-emulator/index.js';
import { fleet, readManifest } from '../integration/helpers.js';
import { startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

const READER = 'ghp_ReaderOnlyToken000000000000000000000';

describe('fork mode on GitHub', () => {
  it('forks each target once, pushes there, opens the PR from the fork, waits for the target CI, and re-runs into the same PR', async () => {
    flow = await startFlow();
    const { emu } = flow;
    emu.addToken(READER, { login: 'octo', type: 'pat', permissions: { 'acme/*': 'pull' } });
    for (const name of ['core', 'api']) await emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
    emu.setCi('*', ci.green(['test']));
    const spec = {
      name: 'note',
      directive: 'Add a note.',
      run: 'echo "note" > NOTE.md',
      max_retries: 0,
      ci: { wait: true, timeout_minutes: 1 },
      targets: [{ repo: 'acme/core' }, { repo: 'acme/api', depends_on: ['core'] }],
    };
    const env = { FLEET_GITHUB_TOKEN: READER };

    // Without fork mode every target is excluded up front, saying that fork mode would do.
    const refused = await flow.run(flow.fleetFile(spec), join(flow.dir, 'ws0'), [], env);
    expect(refused.code).toBe(2);
    expect(readManifest(join(flow.dir, 'ws0')).lanes[0]).toMatchObject({
      status: 'excluded',
      error: { message: expect.stringContaining('or fork mode (pr.fork: true, fleet run --fork)') },
    });

    const file = flow.fleetFile(spec);
    const ws = join(flow.dir, 'ws1');
    const r = await flow.run(file, ws, ['--fork'], env);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const m = readManifest(ws);
    for (const name of ['core', 'api']) {
      const lane = m.lanes.find((l) => l.lane === name)!;
      expect(lane, JSON.stringify([lane.error, lane.evidence.notes])).toMatchObject({
        status: 'completed',
        ci_conclusion: 'success',
        changed_files: ['NOTE.md'],
      });
      expect(lane.evidence).toMatchObject({ verified_by: 'github', head_matches: true, files_match: true, fence_ok: true });
      // The branch is in the fork, not in the target.
      expect(emu.repo(`octo/${name}`)).toMatchObject({ fork: true });
      expect(await emu.branchSha(`octo/${name}`, `fleet/note/${name}`)).toBe(lane.commit);
      expect(await emu.branchSha(`acme/${name}`, `fleet/note/${name}`)).toBeNull();
      const prs = emu.pullRequests(`acme/${name}`);
      expect(prs).toHaveLength(1);
      expect(prs[0]).toMatchObject({ headRef: `fleet/note/${name}`, headRepoKey: `octo/${name}`, state: 'open', user: 'octo', maintainer_can_modify: true });
      expect(lane.pr_number).toBe(prs[0]!.number);
    }

    // A re-run with a changed directive updates the same PRs from the same forks.
    const again = flow.fleetFile({ ...spec, run: 'echo "note, again" > NOTE.md' });
    const r2 = await flow.run(again, join(flow.dir, 'ws2'), ['--fork'], env);
    expect(r2.code, r2.stderr + r2.stdout).toBe(0);
    for (const name of ['core', 'api']) {
      expect(emu.pullRequests(`acme/${name}`)).toHaveLength(1);
      expect(emu.repo(`octo/${name}-1`)).toBeNull();
    }

    // fleet prs finds the PRs from the forks; closing them (as their author) deletes the branches in the forks.
    const list = await fleet(['prs', join(flow.dir, 'ws2'), '--fleet', again, '--json'], { cwd: flow.dir, env: { ...flow.env, ...env } });
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { rows: { lane: string; state: string }[] }).rows.map((row) => [row.lane, row.state]).sort()).toEqual([
      ['api', 'open'],
      ['core', 'open'],
    ]);
    // A manifest whose head_repo names a repository that is not the target's fork is not believed: nothing is closed.
    const manifestPath = join(flow.dir, 'ws2', 'fleet-status.json');
    const honest = readFileSync(manifestPath, 'utf8');
    const planted = JSON.parse(honest) as { lanes: { lane: string; head_repo?: string }[] };
    planted.lanes.find((l) => l.lane === 'core')!.head_repo = 'octo/api';
    writeFileSync(manifestPath, JSON.stringify(planted));
    const refusedClose = await fleet(['prs', 'close', join(flow.dir, 'ws2'), '--fleet', again], { cwd: flow.dir, env: { ...flow.env, ...env } });
    expect(refusedClose.stdout + refusedClose.stderr).toContain("octo/api, named by the lane's record, is not a fork of acme/core");
    expect(emu.pullRequests('acme/core')[0]).toMatchObject({ state: 'open' });
    expect(emu.pullRequests('acme/api')[0]).toMatchObject({ state: 'closed' });
    writeFileSync(manifestPath, honest);

    const closed = await fleet(['prs', 'close', join(flow.dir, 'ws2'), '--fleet', again], { cwd: flow.dir, env: { ...flow.env, ...env } });
    expect(closed.code, closed.stderr).toBe(0);
    for (const name of ['core', 'api']) {
      expect(emu.pullRequests(`acme/${name}`)[0]).toMatchObject({ state: 'closed' });
      expect(await emu.branchSha(`octo/${name}`, `fleet/note/${name}`)).toBeNull();
    }
    emu.assertNoViolations();
  }, 180_000);

  it('refuses fork mode where it cannot work: a local forge, an integration branch, the issue queue; pr.fork_owner alone', async () => {
    flow = await startFlow();
    const integrate = await flow.run(
      flow.fleetFile({
        name: 'x',
        directive: 'x',
        run: 'true',
        pr: { fork: true },
        integrate: { branch: 'fleet/x/integration' },
        targets: [{ repo: 'acme/core' }],
      }),
      join(flow.dir, 'ws'),
    );
    expect(integrate.code).toBe(2);
    expect(integrate.stderr).toContain('integrate: fork mode pushes lane branches to forks');
    const owner = await flow.run(
      flow.fleetFile({ name: 'x', directive: 'x', run: 'true', pr: { fork_owner: 'forkers' }, targets: [{ repo: 'acme/core' }] }),
      join(flow.dir, 'ws'),
    );
    expect(owner.code).toBe(2);
    expect(owner.stderr).toContain('pr.fork_owner: names where forks go, but pr.fork is false');
  });
});
