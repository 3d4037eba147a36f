/**
 * Checks with retries, idempotent re-runs, --resume and --dry-run: what ends up
 * on the remotes, read back with git.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitToRemote, createRepo, readRemoteFile, remoteBranches, remoteHead } from '../support/repos.js';
import {
  commitFiles,
  fleet,
  git,
  lane,
  readEvents,
  readLaneResult,
  readManifest,
  removeDir,
  revCount,
  runArgs,
  sq,
  tempDir,
  writeFleetFile,
} from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const files = { 'README.md': '# r\n', 'src/a.js': 'a\n' };

describe('checks', () => {
  it('a check that fails the first attempt and passes the second: completed with retry_count 1', async () => {
    const repo = await createRepo(dir, 'flaky', files, { clone: false });
    const state = join(dir, 'check-state');
    const file = writeFleetFile(dir, {
      name: 'chk',
      directive: 'append',
      run: 'echo "attempt $FLEET_ATTEMPT" >> README.md',
      checks: ['test -f README.md', `if [ -f ${sq(state)} ]; then exit 0; else touch ${sq(state)}; echo "check failed: first time" >&2; exit 1; fi`],
      max_retries: 2,
      targets: [{ repo: './flaky.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    const l = lane(readManifest(ws), 'flaky');
    expect(l).toMatchObject({ status: 'completed', phase: 'pushed', retry_count: 1, ci_conclusion: 'success', error: null });
    expect(l.attempts.map((a) => [a.n, a.failed_step, a.exit_code])).toEqual([
      [1, 'check', 1],
      [2, null, 0],
    ]);
    expect(readFileSync(join(ws, l.attempts[0]!.log), 'utf8')).toContain('check failed: first time');
    // The retry started from a clean base: the first attempt's edit is gone.
    expect(await readRemoteFile(repo.remote, 'fleet/chk/flaky', 'README.md')).toBe('# r\nattempt 2\n');
    expect(readManifest(ws).summary.retries).toBe(1);
  });

  it('a check that always fails: check-failed after max_retries, nothing pushed', async () => {
    const repo = await createRepo(dir, 'red', files, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'red',
      directive: 'append',
      run: 'echo x >> README.md',
      checks: ['echo "FAIL: tests are red" && exit 4'],
      max_retries: 1,
      targets: [{ repo: './red.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code).toBe(1);
    const l = lane(readManifest(ws), 'red');
    expect(l.error?.class).toBe('check-failed');
    expect(l.error?.message).toMatch(/exited with 4/);
    expect(l.retry_count).toBe(1);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });
});

describe('re-runs', () => {
  it('running the same fleet twice creates no new commits; a changed directive updates the one branch', async () => {
    const a = await createRepo(dir, 'a', files, { clone: false });
    const b = await createRepo(dir, 'b', files, { clone: false });
    const spec = (line: string) => ({
      name: 'idem',
      directive: 'append a line',
      run: `echo ${sq(line)} >> README.md`,
      max_retries: 0,
      targets: [{ repo: './a.git' }, { repo: './b.git', depends_on: ['a'] }],
    });
    const file = writeFleetFile(dir, spec('one'));
    const r1 = await fleet(runArgs(file, join(dir, 'ws1')), { cwd: dir });
    expect(r1.code, r1.stdout).toBe(0);
    const heads1 = [await remoteHead(a.remote, 'fleet/idem/a'), await remoteHead(b.remote, 'fleet/idem/b')];
    expect(heads1.every(Boolean)).toBe(true);

    const r2 = await fleet(runArgs(file, join(dir, 'ws2')), { cwd: dir });
    expect(r2.code, r2.stdout).toBe(0);
    const m2 = readManifest(join(dir, 'ws2'));
    expect([lane(m2, 'a').status, lane(m2, 'b').status]).toEqual(['completed', 'completed']);
    expect([lane(m2, 'a').commit, lane(m2, 'b').commit]).toEqual(heads1);
    expect([await remoteHead(a.remote, 'fleet/idem/a'), await remoteHead(b.remote, 'fleet/idem/b')]).toEqual(heads1);
    expect(lane(m2, 'a').evidence.head_matches).toBe(true);
    expect(readEvents(join(dir, 'ws2')).some((e) => e.lane === 'a' && /already up to date/.test(e.detail))).toBe(true);

    // Change the directive: the branch moves (forced, under a lease) and is still one commit on the base.
    writeFleetFile(dir, spec('two'));
    const r3 = await fleet(runArgs(file, join(dir, 'ws3')), { cwd: dir });
    expect(r3.code, r3.stdout).toBe(0);
    const m3 = readManifest(join(dir, 'ws3'));
    const headA = await remoteHead(a.remote, 'fleet/idem/a');
    expect(headA).toBe(lane(m3, 'a').commit);
    expect(headA).not.toBe(heads1[0]);
    expect(await readRemoteFile(a.remote, 'fleet/idem/a', 'README.md')).toBe('# r\ntwo\n');
    expect(git(a.remote, 'rev-parse', 'fleet/idem/a^')).toBe(a.commit);
    expect(revCount(a.remote, 'fleet/idem/a')).toBe(2);
    expect(commitFiles(a.remote, 'fleet/idem/a')).toEqual(['README.md']);
    expect(await remoteBranches(a.remote)).toEqual(['fleet/idem/a', 'main']);
    expect(await remoteBranches(b.remote)).toEqual(['fleet/idem/b', 'main']);

    // The base moves on: the same directive again puts the lane branch on the new base, still one commit.
    const moved = await commitToRemote(a.remote, 'main', { 'CHANGELOG.md': 'new\n' });
    const r4 = await fleet(runArgs(file, join(dir, 'ws4')), { cwd: dir });
    expect(r4.code, r4.stdout).toBe(0);
    expect(git(a.remote, 'rev-parse', 'fleet/idem/a^')).toBe(moved);
    expect(await readRemoteFile(a.remote, 'fleet/idem/a', 'CHANGELOG.md')).toBe('new\n');
    expect(commitFiles(a.remote, 'fleet/idem/a')).toEqual(['README.md']);
    expect(lane(readManifest(join(dir, 'ws4')), 'a').base_commit).toBe(moved);
  });

  it('running twice into the same workspace: the second run stands on its own', async () => {
    const a = await createRepo(dir, 'a', files, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'same',
      directive: 'append',
      run: 'echo one >> README.md',
      max_retries: 0,
      targets: [{ repo: './a.git' }],
    });
    const ws = join(dir, 'ws');
    const r1 = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r1.code).toBe(0);
    const m1 = readManifest(ws);
    const r2 = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r2.code, r2.stdout + r2.stderr).toBe(0);
    const m2 = readManifest(ws);
    expect(lane(m2, 'a')).toMatchObject({ status: 'completed', commit: lane(m1, 'a').commit });
    expect(await remoteHead(a.remote, 'fleet/same/a')).toBe(lane(m1, 'a').commit);
    // The events log of the workspace belongs to the run in the manifest.
    const events = readEvents(ws);
    expect(events.filter((e) => e.to === 'cloning')).toHaveLength(1);
  });
});

describe('--resume', () => {
  it('re-runs only the lanes that did not complete, under the same fleet id', async () => {
    for (const n of ['ok1', 'ok2', 'flaky', 'after']) await createRepo(dir, n, files, { clone: false });
    const marker = join(dir, 'condition-fixed');
    const file = writeFleetFile(dir, {
      name: 'resume',
      directive: 'append',
      run: 'echo "$FLEET_LANE" >> README.md',
      max_retries: 0,
      targets: [
        { repo: './ok1.git' },
        { repo: './ok2.git' },
        { repo: './flaky.git', run: `test -f ${sq(marker)} || { echo "error: the condition is not met" >&2; exit 1; }; echo flaky >> README.md` },
        { repo: './after.git', depends_on: ['flaky'] },
      ],
    });
    const ws = join(dir, 'ws');
    const r1 = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r1.code).toBe(1);
    const m1 = readManifest(ws);
    expect(lane(m1, 'flaky').status).toBe('failed');
    expect(lane(m1, 'after')).toMatchObject({ status: 'skipped' });
    expect(lane(m1, 'after').error?.class).toBe('dependency-failed');
    const ok1Before = readLaneResult(ws, 'ok1');
    const cloningBefore = readEvents(ws).filter((e) => e.to === 'cloning').length;
    expect(cloningBefore).toBe(3);

    writeFileSync(marker, '');
    const r2 = await fleet(['run', file, '--resume', join(ws, 'fleet-status.json'), '--quiet'], { cwd: dir });
    expect(r2.code, r2.stdout + r2.stderr).toBe(0);
    const m2 = readManifest(ws);
    expect(m2.fleet_id).toBe(m1.fleet_id);
    expect(m2.lanes.map((l) => [l.lane, l.status]).sort()).toEqual([
      ['after', 'completed'],
      ['flaky', 'completed'],
      ['ok1', 'completed'],
      ['ok2', 'completed'],
    ]);
    expect(m2.summary).toMatchObject({ total: 4, completed: 4, failed: 0, skipped: 0 });
    // The completed lanes were not run again: same record, no new clone in the events.
    expect(lane(m2, 'ok1').started_at).toBe(ok1Before.started_at);
    expect(lane(m2, 'ok1').attempts).toEqual(ok1Before.attempts);
    expect(lane(m2, 'ok1').commit).toBe(lane(m1, 'ok1').commit);
    const events = readEvents(ws);
    const clonedAgain = events
      .slice(events.findIndex((e) => e.detail === 'kept from the previous run'))
      .filter((e) => e.to === 'cloning')
      .map((e) => e.lane);
    expect(clonedAgain.sort()).toEqual(['after', 'flaky']);
    expect(
      events
        .filter((e) => e.detail === 'kept from the previous run')
        .map((e) => e.lane)
        .sort(),
    ).toEqual(['ok1', 'ok2']);
    expect(await readRemoteFile(join(dir, 'flaky.git'), 'fleet/resume/flaky', 'README.md')).toBe('# r\nflaky\n');
    expect(await readRemoteFile(join(dir, 'after.git'), 'fleet/resume/after', 'README.md')).toBe('# r\nafter\n');
    expect(await remoteHead(join(dir, 'ok1.git'), 'fleet/resume/ok1')).toBe(lane(m1, 'ok1').commit);
  });

  /** A run of lanes ok (completes) and bad (fails) in `ws`, to resume after something changed what it left. */
  async function okAndBadRun(name: string): Promise<{ file: string; ws: string }> {
    for (const n of ['ok', 'bad']) await createRepo(dir, n, files, { clone: false });
    const file = writeFleetFile(dir, {
      name: name,
      directive: 'append',
      run: 'echo "$FLEET_LANE" >> README.md',
      max_retries: 0,
      targets: [{ repo: './ok.git' }, { repo: './bad.git', run: 'exit 3' }],
    });
    const ws = join(dir, 'ws');
    expect((await fleet(runArgs(file, ws), { cwd: dir })).code).toBe(1);
    return { file, ws };
  }

  it('a lane whose result file says other than the sealed manifest (a PR it never opened) is not kept: it runs again', async () => {
    const { file, ws } = await okAndBadRun('forgedresult');
    // The lane's folder is not sealed: what another fleet's directive could write there, for a later `fleet prs merge`.
    const resultPath = join(ws, 'lanes', 'ok', 'result.json');
    const result = JSON.parse(readFileSync(resultPath, 'utf8'));
    result.lane = { ...result.lane, pr_number: 7, pr_url: 'https://github.com/acme/other/pull/7' };
    writeFileSync(resultPath, JSON.stringify(result));
    const r = await fleet(['run', file, '--resume', join(ws, 'fleet-status.json'), '--quiet'], { cwd: dir });
    expect(r.stderr).not.toMatch(/not believed/);
    expect(r.code, r.stderr).toBe(1);
    expect(readEvents(ws).some((e) => e.detail === 'kept from the previous run')).toBe(false);
    expect(lane(readManifest(ws), 'ok')).toMatchObject({ status: 'completed', pr_number: null });
  });

  it('a manifest changed after Fleet wrote it keeps no lane: every lane runs again (its seal no longer fits)', async () => {
    const { file, ws } = await okAndBadRun('tampered');
    // What another fleet's directive could do (docs/security.md): the failed lane made completed, changing nothing.
    const path = join(ws, 'fleet-status.json');
    const m1 = readManifest(ws);
    const forged = { ...m1, lanes: m1.lanes.map((l) => (l.lane === 'bad' ? { ...l, status: 'completed', phase: 'no-op', error: null } : l)) };
    writeFileSync(path, `${JSON.stringify(forged, null, 2)}\n`);
    const r = await fleet(['run', file, '--resume', path, '--quiet'], { cwd: dir });
    expect(r.stderr).toMatch(/every lane runs again: .*fleet-status\.json is not believed: its seal does not match/);
    expect(r.code, r.stderr).toBe(1);
    const m2 = readManifest(ws);
    expect(lane(m2, 'bad')).toMatchObject({ status: 'failed' });
    expect(readEvents(ws).some((e) => e.detail === 'kept from the previous run')).toBe(false);
  });

  it('a manifest of another fleet, or a missing one, is refused with exit 2', async () => {
    await createRepo(dir, 'a', files, { clone: false });
    const file = writeFleetFile(dir, { name: 'one', directive: 'x', run: 'true', max_retries: 0, targets: [{ repo: './a.git' }] });
    const other = writeFleetFile(dir, { name: 'two', directive: 'x', run: 'true', max_retries: 0, targets: [{ repo: './a.git' }] }, 'other.yml');
    const ws = join(dir, 'ws');
    expect((await fleet(runArgs(file, ws), { cwd: dir })).code).toBe(0);
    const wrong = await fleet(['run', other, '--resume', join(ws, 'fleet-status.json'), '--quiet'], { cwd: dir });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/of fleet "one", not "two"/);
    const missing = await fleet(['run', file, '--resume', join(dir, 'nope.json'), '--quiet'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(join(dir, 'nope.json'));
  });
});

describe('--dry-run', () => {
  it('resuming a dry run for real runs its lanes for real', async () => {
    const a = await createRepo(dir, 'a', files, { clone: false });
    const file = writeFleetFile(dir, { name: 'dry2', directive: 'append', run: 'echo real >> README.md', max_retries: 0, targets: [{ repo: './a.git' }] });
    const ws = join(dir, 'ws');
    expect((await fleet(runArgs(file, ws, '--dry-run'), { cwd: dir })).code).toBe(0);
    expect(await remoteBranches(a.remote)).toEqual(['main']);
    const r = await fleet(['run', file, '--resume', join(ws, 'fleet-status.json'), '--quiet'], { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    const m = readManifest(ws);
    expect(m.dry_run).toBe(false);
    expect(lane(m, 'a')).toMatchObject({ status: 'completed', phase: 'pushed' });
    expect(await remoteHead(a.remote, 'fleet/dry2/a')).toBe(lane(m, 'a').commit);
  });

  it('keeps the patch and pushes nothing', async () => {
    const a = await createRepo(dir, 'a', files, { clone: false });
    const b = await createRepo(dir, 'b', files, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'dry',
      directive: 'append',
      run: 'echo dry >> README.md',
      max_retries: 0,
      targets: [{ repo: './a.git' }, { repo: './b.git', depends_on: ['a'] }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws, '--dry-run'), { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    const m = readManifest(ws);
    expect(m.dry_run).toBe(true);
    for (const id of ['a', 'b']) {
      const l = lane(m, id);
      expect(l).toMatchObject({ status: 'completed', phase: 'dry-run', changed_files: ['README.md'] });
      expect(l.evidence.patch).toBe(`lanes/${id}/patch.diff`);
      const patch = readFileSync(join(ws, l.evidence.patch!), 'utf8');
      expect(patch).toContain('diff --git a/README.md b/README.md');
      expect(patch).toContain('+dry');
      // The patch applies to the base.
      const check = join(dir, `check-${id}`);
      git(dir, 'clone', '-q', join(dir, `${id}.git`), check);
      git(check, 'apply', '--check', join(ws, l.evidence.patch!));
    }
    expect(await remoteBranches(a.remote)).toEqual(['main']);
    expect(await remoteBranches(b.remote)).toEqual(['main']);
    // The report says where the changes are: the patch of each lane, under the workspace.
    const report = readFileSync(join(ws, 'report.md'), 'utf8');
    expect(report).toContain(`_Dry run: nothing was pushed, no pull request was opened; each lane's change is in \`${ws}/lanes/<lane>/patch.diff\`._`);
    for (const id of ['a', 'b']) expect(report).toContain(`| ${id} | ./${id}.git | ${id === 'a' ? 1 : 2} | dry-run | patch \`lanes/${id}/patch.diff\` |`);
    expect(r.stdout).toContain(`${ws}/lanes/<lane>/patch.diff`);
  });
});
