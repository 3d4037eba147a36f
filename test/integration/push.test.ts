/**
 * Pushing: lanes of one repository push their own branches side by side, and a
 * lane whose branch moved on the remote while it ran never overwrites it.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitToRemote, createRepo, readRemoteFile, remoteBranches, remoteHead } from '../support/repos.js';
import {
  commitFiles,
  fleet,
  lane,
  openToDirectives,
  readEvents,
  TRUST_REPOS,
  readManifest,
  removeDir,
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

const files = { 'README.md': '# r\n', 'src/a.js': 'a\n', 'docs/guide.md': 'guide\n' };

/** A directive step that pushes a commit to `branch` of `remote` from a clone of its own, as someone else would. */
function foreignPush(remote: string, branch: string, from: 'base' | 'branch'): string {
  const clone = `"$FLEET_LANE_DIR/foreign"`;
  return [
    TRUST_REPOS,
    `git clone -q ${sq(remote)} ${clone}`,
    `cd ${clone}`,
    from === 'branch' ? `git checkout -q -B ${sq(branch)} origin/${sq(branch)}` : `git checkout -q -b ${sq(branch)}`,
    'echo foreign > FOREIGN.md',
    'git add FOREIGN.md',
    'git -c user.name=Someone -c user.email=someone@example.invalid commit -q -m "foreign commit"',
    `git push -q origin ${sq(branch)}`,
    'cd - >/dev/null',
  ].join(' && ');
}

describe('pushing', () => {
  it('two lanes of one repository with disjoint owns run in one wave and push their own branches', async () => {
    const repo = await createRepo(dir, 'mono', files, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'split',
      directive: 'edit',
      max_retries: 0,
      targets: [
        { repo: './mono.git', lane: 'code', owns: ['src/**'], run: 'sleep 0.3; echo changed >> src/a.js' },
        { repo: './mono.git', lane: 'docs', owns: ['docs/**'], run: 'sleep 0.3; echo changed >> docs/guide.md' },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    const m = readManifest(ws);
    expect(m.waves).toHaveLength(1);
    expect(m.contention).toEqual([]);
    expect([lane(m, 'code').wave, lane(m, 'docs').wave]).toEqual([0, 0]);
    // They really ran side by side: each started before the other ended.
    const ev = readEvents(ws);
    const first = (id: string, to: string) => ev.find((e) => e.lane === id && e.to === to)!.time;
    expect(first('code', 'running') < first('docs', 'pushed')).toBe(true);
    expect(first('docs', 'running') < first('code', 'pushed')).toBe(true);

    expect(await remoteBranches(repo.remote)).toEqual(['fleet/split/code', 'fleet/split/docs', 'main']);
    expect(await remoteHead(repo.remote, 'fleet/split/code')).toBe(lane(m, 'code').commit);
    expect(await remoteHead(repo.remote, 'fleet/split/docs')).toBe(lane(m, 'docs').commit);
    expect(commitFiles(repo.remote, 'fleet/split/code')).toEqual(['src/a.js']);
    expect(commitFiles(repo.remote, 'fleet/split/docs')).toEqual(['docs/guide.md']);
    expect(await readRemoteFile(repo.remote, 'fleet/split/docs', 'docs/guide.md')).toBe('guide\nchanged\n');
    expect(await remoteHead(repo.remote, 'main')).toBe(repo.commit);
  });

  it('overlapping owns in one repository are pushed into separate waves', async () => {
    const repo = await createRepo(dir, 'mono', files, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'overlap',
      directive: 'edit',
      max_retries: 0,
      targets: [
        { repo: './mono.git', lane: 'all', run: 'echo 1 >> src/a.js' },
        { repo: './mono.git', lane: 'src', owns: ['src/**'], run: 'echo 2 >> src/a.js' },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    const m = readManifest(ws);
    expect(m.waves.map((w) => w.lanes)).toEqual([['all'], ['src']]);
    expect(m.contention).toEqual([expect.objectContaining({ lane: 'src', wanted_wave: 0, wave: 1, because_of: 'all' })]);
    expect(await remoteBranches(repo.remote)).toEqual(['fleet/overlap/all', 'fleet/overlap/src', 'main']);
  });

  it('a lane branch created on the remote by someone else while the directive ran: push-rejected, the foreign commit kept', async () => {
    const repo = await createRepo(dir, 'race', files, { clone: false });
    const branch = 'fleet/race/race';
    openToDirectives(repo.remote);
    const file = writeFleetFile(dir, {
      name: 'race',
      directive: 'edit',
      max_retries: 1,
      targets: [{ repo: './race.git', run: `echo mine >> README.md && ${foreignPush(repo.remote, branch, 'base')}` }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(1);
    const l = lane(readManifest(ws), 'race');
    expect(l.error?.class).toBe('push-rejected');
    expect(l.error?.message).toMatch(/moved on the remote/);
    expect(l.retry_count).toBe(0);
    const head = await remoteHead(repo.remote, branch);
    expect(head).not.toBeNull();
    expect(head).not.toBe(l.commit);
    expect(await readRemoteFile(repo.remote, branch, 'FOREIGN.md')).toBe('foreign\n');
    expect(await readRemoteFile(repo.remote, branch, 'README.md')).toBe('# r\n');
  });

  it('a lane branch moved on the remote (after an earlier run) while the directive ran: push-rejected, the foreign commit kept', async () => {
    const repo = await createRepo(dir, 'race', files, { clone: false });
    const branch = 'fleet/race2/race';
    // An earlier run left the branch (its commit carries the lane's trailers); someone then pushes on top of it during this run.
    const earlier = await commitToRemote(
      repo.remote,
      branch,
      { 'README.md': '# r\nold\n' },
      { from: repo.commit, message: 'edit\n\nedit\n\nFleet-Id: race2\nFleet-Lane: race\n' },
    );
    openToDirectives(repo.remote);
    const file = writeFleetFile(dir, {
      name: 'race2',
      directive: 'edit',
      max_retries: 0,
      targets: [{ repo: './race.git', run: `echo mine >> README.md && ${foreignPush(repo.remote, branch, 'branch')}` }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(1);
    const l = lane(readManifest(ws), 'race');
    expect(l.error?.class).toBe('push-rejected');
    const head = (await remoteHead(repo.remote, branch))!;
    expect(head).not.toBe(earlier);
    expect(head).not.toBe(l.commit);
    expect(await readRemoteFile(repo.remote, branch, 'FOREIGN.md')).toBe('foreign\n');
    expect(await readRemoteFile(repo.remote, branch, 'README.md')).toBe('# r\nold\n');
  });
});
