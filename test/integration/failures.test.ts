/**
 * Lanes that fail in every way a directive can make them fail: each ends as a
 * failed lane with its error class, and never takes the others down.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, readRemoteFile, remoteBranches, remoteHead, tgit } from '../support/repos.js';
import {
  fleet,
  git,
  isDir,
  lane,
  processWithEnv,
  processWithMarker,
  readManifest,
  removeDir,
  runArgs,
  sq,
  tempDir,
  walkFiles,
  writeFleetFile,
} from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const readme = { 'README.md': '# r\n', 'src/index.js': 'export {};\n' };

describe('failing lanes', () => {
  it('a directive that exits non-zero: directive-failed after every retry, logs kept; its dependent is skipped and never cloned', async () => {
    const bad = await createRepo(dir, 'bad', readme, { clone: false });
    const good = await createRepo(dir, 'good', readme, { clone: false });
    const dep = await createRepo(dir, 'dep', readme, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'fail',
      directive: 'append',
      run: 'echo fleet >> README.md',
      max_retries: 1,
      targets: [
        { repo: './bad.git', run: 'echo "error: cannot do it (attempt $FLEET_ATTEMPT)" >&2; exit 3' },
        { repo: './good.git' },
        { repo: './dep.git', depends_on: ['bad'] },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(1);
    const m = readManifest(ws);

    const b = lane(m, 'bad');
    expect(b).toMatchObject({ status: 'failed', phase: 'failed', retry_count: 1, commit: null });
    expect(b.error?.class).toBe('directive-failed');
    expect(b.error?.message).toMatch(/exited with 3: error: cannot do it \(attempt 2\)/);
    expect(b.retry_count).toBe(m.max_retries);
    expect(b.attempts.map((a) => [a.n, a.exit_code, a.failed_step, a.timed_out])).toEqual([
      [1, 3, 'directive', false],
      [2, 3, 'directive', false],
    ]);
    for (const a of b.attempts) {
      const log = readFileSync(join(ws, a.log), 'utf8');
      expect(log).toContain(`error: cannot do it (attempt ${a.n})`);
      expect(log).toMatch(/exit=3/);
    }
    expect(b.log).toBe(b.attempts[1]!.log);
    expect(await remoteBranches(bad.remote)).toEqual(['main']);

    expect(lane(m, 'good')).toMatchObject({ status: 'completed', phase: 'pushed', retry_count: 0 });
    expect(await remoteBranches(good.remote)).toEqual(['fleet/fail/good', 'main']);

    const d = lane(m, 'dep');
    expect(d).toMatchObject({ status: 'skipped', phase: 'skipped' });
    expect(d.error?.class).toBe('dependency-failed');
    expect(d.error?.message).toMatch(/dependency "bad" failed \(directive-failed\)/);
    expect(d.attempts).toEqual([]);
    expect(isDir(join(ws, 'lanes', 'dep', 'repo'))).toBe(false);
    expect(await remoteBranches(dep.remote)).toEqual(['main']);
    expect(m.summary).toMatchObject({ total: 3, completed: 1, failed: 1, skipped: 1, retries: 1 });
    expect(r.stdout).toMatch(/### Action required/);
  });

  it('a directive that hangs past timeout_minutes is killed with its grandchildren: directive-timeout', async () => {
    await createRepo(dir, 'slow', readme, { clone: false });
    await createRepo(dir, 'fast', readme, { clone: false });
    const marker = `fleet-hang-marker-${process.pid}-${Date.now()}`;
    const file = writeFleetFile(dir, {
      name: 'hang',
      directive: 'hang',
      run: 'echo fleet >> README.md',
      max_retries: 0,
      timeout_minutes: 0.02,
      targets: [
        // A background grandchild with the marker, then a foreground sleep: both must die.
        { repo: './slow.git', run: `node -e "setTimeout(() => {}, 600000)" ${marker} & sleep 600` },
        { repo: './fast.git' },
      ],
    });
    const ws = join(dir, 'ws');
    // The directive sleeps 600 s: the run ending (within the test's timeout) is the kill's event, not a time bound.
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(1);
    const s = lane(readManifest(ws), 'slow');
    expect(s).toMatchObject({ status: 'failed', retry_count: 0 });
    expect(s.error?.class).toBe('directive-timeout');
    expect(s.error?.message).toMatch(/past its timeout of 0\.02 min/);
    expect(s.attempts).toHaveLength(1);
    expect(s.attempts[0]).toMatchObject({ timed_out: true, failed_step: 'directive' });
    expect(s.attempts[0]!.duration_ms).toBeGreaterThanOrEqual(1_100);
    expect(lane(readManifest(ws), 'fast').status).toBe('completed');
    expect(processWithMarker(marker)).toEqual([]);
    expect(processWithEnv(ws)).toEqual([]);
  });

  it('a directive writing outside owns, or into never: fence-violation, nothing pushed', async () => {
    const outside = await createRepo(dir, 'outside', readme, { clone: false });
    const never = await createRepo(dir, 'never', { ...readme, 'src/gen/out.js': '1\n' }, { clone: false });
    const inside = await createRepo(dir, 'inside', readme, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'fence',
      directive: 'edit src',
      owns: ['src/**'],
      never: ['src/gen/**'],
      run: 'echo "// x" >> src/index.js',
      max_retries: 2,
      targets: [
        { repo: './outside.git', run: 'echo "// x" >> src/index.js && echo more >> README.md' },
        { repo: './never.git', run: 'echo 2 > src/gen/out.js' },
        { repo: './inside.git' },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code).toBe(1);
    const m = readManifest(ws);
    const o = lane(m, 'outside');
    expect(o.error?.class).toBe('fence-violation');
    expect(o.error?.message).toContain('README.md');
    // A shell command does the same thing every time: no retries for a fence violation.
    expect(o.retry_count).toBe(0);
    expect(o.attempts.map((a) => a.failed_step)).toEqual(['fence']);
    const n = lane(m, 'never');
    expect(n.error?.class).toBe('fence-violation');
    expect(n.error?.message).toContain('src/gen/out.js');
    expect(await remoteBranches(outside.remote)).toEqual(['main']);
    expect(await remoteBranches(never.remote)).toEqual(['main']);
    expect(lane(m, 'inside')).toMatchObject({ status: 'completed', changed_files: ['src/index.js'] });
    expect(await remoteBranches(inside.remote)).toEqual(['fleet/fence/inside', 'main']);
  });

  it('a directive that deletes .git: workspace-corrupted, no retry, and no git command reaches the enclosing repository', async () => {
    // The whole test folder is a git repository with a commit and a dirty index: the fleet workspace lives inside it.
    const outer = dir;
    git(outer, 'init', '-q');
    writeFileSync(join(outer, 'outer.txt'), 'outer\n');
    git(outer, 'add', 'outer.txt');
    git(outer, 'commit', '-q', '-m', 'outer');
    writeFileSync(join(outer, 'staged.txt'), 'staged\n');
    git(outer, 'add', 'staged.txt');
    const snapshot = () => ({
      head: git(outer, 'rev-parse', 'HEAD'),
      branches: git(outer, 'for-each-ref', '--format=%(refname) %(objectname)'),
      index: readFileSync(join(outer, '.git', 'index')).toString('hex'),
      status: git(outer, 'status', '--porcelain=v1', '--untracked-files=no'),
      stash: git(outer, 'stash', 'list'),
      log: git(outer, 'log', '--all', '--oneline'),
      config: readFileSync(join(outer, '.git', 'config'), 'utf8'),
    });
    const remotes = join(outer, 'remotes');
    const victim = await createRepo(remotes, 'victim', readme, { clone: false });
    await createRepo(remotes, 'bystander', readme, { clone: false });
    const before = snapshot();
    const file = writeFleetFile(outer, {
      name: 'corrupt',
      directive: 'break it',
      run: 'echo fleet >> README.md',
      max_retries: 2,
      targets: [{ repo: './remotes/victim.git', run: 'rm -rf .git && echo changed >> README.md' }, { repo: './remotes/bystander.git' }],
    });
    const ws = join(outer, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: outer });
    expect(r.code, r.stdout).toBe(1);
    const m = readManifest(ws);
    const v = lane(m, 'victim');
    expect(v).toMatchObject({ status: 'failed', retry_count: 0, commit: null });
    expect(v.error?.class).toBe('workspace-corrupted');
    expect(v.attempts).toHaveLength(1);
    expect(await remoteBranches(victim.remote)).toEqual(['main']);
    expect(lane(m, 'bystander').status).toBe('completed');
    expect(snapshot()).toEqual(before);
  });

  it('a directive that breaks .git without deleting it, or leaves HEAD on another branch, does not escape either', async () => {
    const outer = dir;
    git(outer, 'init', '-q');
    writeFileSync(join(outer, 'outer.txt'), 'outer\n');
    git(outer, 'add', 'outer.txt');
    git(outer, 'commit', '-q', '-m', 'outer');
    const head = git(outer, 'rev-parse', 'HEAD');
    const remotes = join(outer, 'remotes');
    const a = await createRepo(remotes, 'a', readme, { clone: false });
    const b = await createRepo(remotes, 'b', readme, { clone: false });
    // What git needs to take .git for a repository (HEAD, objects/, refs/) is read from the files: each missing part counts.
    const c = await createRepo(remotes, 'c', readme, { clone: false });
    const d = await createRepo(remotes, 'd', readme, { clone: false });
    const _e = await createRepo(remotes, 'e', readme, { clone: false });
    const file = writeFleetFile(outer, {
      name: 'corrupt2',
      directive: 'break it',
      max_retries: 0,
      targets: [
        { repo: './remotes/a.git', run: 'echo x >> README.md && rm -rf .git/objects .git/HEAD' },
        { repo: './remotes/c.git', run: 'echo x >> README.md && rm -rf .git/refs' },
        { repo: './remotes/d.git', run: 'echo x >> README.md && echo "not a ref" > .git/HEAD' },
        { repo: './remotes/e.git', run: 'git checkout -q --detach && echo z >> README.md' },
        { repo: './remotes/b.git', run: 'git checkout -q -b elsewhere && echo y >> README.md && git -c user.name=x -c user.email=x@x commit -qam wip' },
      ],
    });
    const ws = join(outer, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: outer });
    const m = readManifest(ws);
    for (const [id, repo] of [
      ['a', a],
      ['c', c],
      ['d', d],
    ] as const) {
      expect(lane(m, id).error?.class, id).toBe('workspace-corrupted');
      expect(await remoteBranches(repo.remote)).toEqual(['main']);
    }
    // A detached HEAD is still a repository: the lane puts its branch back and completes.
    expect(lane(m, 'e')).toMatchObject({ status: 'completed', changed_files: ['README.md'] });
    // A directive's own commits and branches are folded into the lane's one commit on its branch.
    expect(lane(m, 'b')).toMatchObject({ status: 'completed', changed_files: ['README.md'] });
    expect(await remoteBranches(b.remote)).toEqual(['fleet/corrupt2/b', 'main']);
    expect(git(b.remote, 'rev-parse', 'fleet/corrupt2/b^')).toBe(b.commit);
    expect(r.code).toBe(1);
    expect(git(outer, 'rev-parse', 'HEAD')).toBe(head);
    expect(git(outer, 'status', '--porcelain', '--untracked-files=no')).toBe('');
    expect(git(outer, 'for-each-ref', '--format=%(refname)')).toBe('refs/heads/main');
  });

  it('a directive that swaps .git for a link to (or a gitdir file naming) the enclosing repository: workspace-corrupted, the outer repository untouched', async () => {
    const outer = dir;
    git(outer, 'init', '-q');
    writeFileSync(join(outer, 'outer.txt'), 'outer\n');
    git(outer, 'add', 'outer.txt');
    git(outer, 'commit', '-q', '-m', 'outer');
    const snapshot = () => [
      git(outer, 'for-each-ref', '--format=%(refname) %(objectname)'),
      git(outer, 'rev-parse', 'HEAD'),
      git(outer, 'symbolic-ref', 'HEAD'),
      git(outer, 'status', '--porcelain', '--untracked-files=no'),
      readFileSync(join(outer, '.git', 'index')).toString('hex'),
      readFileSync(join(outer, '.git', 'config'), 'utf8'),
    ];
    const remotes = join(outer, 'remotes');
    const link = await createRepo(remotes, 'link', readme, { clone: false });
    const gitfile = await createRepo(remotes, 'gitfile', readme, { clone: false });
    const cfg = await createRepo(remotes, 'cfg', readme, { clone: false });
    const refs = await createRepo(remotes, 'refs', readme, { clone: false });
    const before = snapshot();
    const file = writeFleetFile(outer, {
      name: 'swap',
      directive: 'swap',
      max_retries: 0,
      targets: [
        { repo: './remotes/link.git', run: `rm -rf .git && ln -s ${sq(join(outer, '.git'))} .git && echo x >> README.md` },
        { repo: './remotes/gitfile.git', run: `rm -rf .git && echo "gitdir: ${join(outer, '.git')}" > .git && echo x >> README.md` },
        // Links inside .git: Fleet's own writes (the config it restores, the refs it moves) would land in the outer repository.
        { repo: './remotes/cfg.git', run: `rm .git/config && ln -s ${sq(join(outer, '.git', 'config'))} .git/config && echo x >> README.md` },
        { repo: './remotes/refs.git', run: `rm -rf .git/refs && ln -s ${sq(join(outer, '.git', 'refs'))} .git/refs && echo x >> README.md` },
      ],
    });
    const ws = join(outer, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: outer });
    expect(r.code).toBe(1);
    const m = readManifest(ws);
    expect(lane(m, 'link').error?.class).toBe('workspace-corrupted');
    expect(lane(m, 'gitfile').error?.class).toBe('workspace-corrupted');
    expect(await remoteBranches(link.remote)).toEqual(['main']);
    expect(await remoteBranches(gitfile.remote)).toEqual(['main']);
    for (const [id, repo] of [
      ['cfg', cfg],
      ['refs', refs],
    ] as const) {
      expect(lane(m, id).error?.class, id).toBe('workspace-corrupted');
      expect(await remoteBranches(repo.remote)).toEqual(['main']);
    }
    expect(snapshot()).toEqual(before);
  });

  it('a check that breaks .git: workspace-corrupted, nothing pushed', async () => {
    const repo = await createRepo(dir, 'chk', readme, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'chkgit',
      directive: 'edit',
      run: 'echo x >> README.md',
      checks: ['rm -rf .git/refs && ln -s /tmp .git/refs'],
      max_retries: 1,
      targets: [{ repo: './chk.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code).toBe(1);
    const l = lane(readManifest(ws), 'chk');
    expect(l.error?.class).toBe('workspace-corrupted');
    expect(l.retry_count).toBe(0);
    expect(l.attempts.map((a) => a.failed_step)).toEqual(['check']);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it("run from inside a git hook (GIT_DIR, GIT_INDEX_FILE… set): the directive's own git commands stay in its working copy", async () => {
    const outer = dir;
    git(outer, 'init', '-q');
    writeFileSync(join(outer, 'outer.txt'), 'outer\n');
    git(outer, 'add', 'outer.txt');
    git(outer, 'commit', '-q', '-m', 'outer');
    const before = [git(outer, 'for-each-ref'), readFileSync(join(outer, '.git', 'index')).toString('hex'), git(outer, 'symbolic-ref', 'HEAD')];
    const repo = await createRepo(join(outer, 'remotes'), 'hooked', readme, { clone: false });
    const file = writeFleetFile(outer, {
      name: 'hooked',
      directive: 'edit and commit',
      max_retries: 0,
      run: 'echo x >> README.md && git add -A && git -c user.name=d -c user.email=d@d commit -qm "directive commit" && git checkout -q -b side',
      targets: [{ repo: './remotes/hooked.git' }],
    });
    const ws = join(outer, 'ws');
    const gitDir = join(outer, '.git');
    const r = await fleet(runArgs(file, ws), {
      cwd: outer,
      env: {
        GIT_DIR: gitDir,
        GIT_WORK_TREE: outer,
        GIT_INDEX_FILE: join(gitDir, 'index'),
        GIT_PREFIX: '',
        GIT_CONFIG_PARAMETERS: "'core.hookspath'='/nonexistent'",
      },
    });
    expect(r.code, r.stdout).toBe(0);
    const l = lane(readManifest(ws), 'hooked');
    expect(l).toMatchObject({ status: 'completed', changed_files: ['README.md'] });
    expect(await readRemoteFile(repo.remote, 'fleet/hooked/hooked', 'README.md')).toBe('# r\nx\n');
    expect([git(outer, 'for-each-ref'), readFileSync(join(outer, '.git', 'index')).toString('hex'), git(outer, 'symbolic-ref', 'HEAD')]).toEqual(before);
  });

  it('a rename that carries a file out of owns is a fence violation (the old path counts)', async () => {
    const repo = await createRepo(dir, 'ren', readme, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'ren',
      directive: 'move',
      owns: ['src/**'],
      max_retries: 0,
      run: 'git mv README.md src/README.md',
      targets: [{ repo: './ren.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code).toBe(1);
    const l = lane(readManifest(ws), 'ren');
    expect(l.error?.class).toBe('fence-violation');
    expect(l.error?.message).toContain('README.md');
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it('failure isolation: 8 lanes, one killed hard, one hanging, one failing, the rest complete; every lane accounted for', async () => {
    const names = ['l1', 'l2', 'l3', 'l4', 'l5', 'crash', 'hang', 'fail'];
    for (const n of names) await createRepo(dir, n, readme, { clone: false });
    const marker = `fleet-iso-marker-${process.pid}-${Date.now()}`;
    const file = writeFleetFile(dir, {
      name: 'iso',
      directive: 'append',
      run: 'echo "$FLEET_LANE" >> README.md',
      max_retries: 0,
      timeout_minutes: 0.02,
      max_parallel: 8,
      targets: names.map((n) => ({
        repo: `./${n}.git`,
        ...(n === 'crash' ? { run: 'echo half >> README.md; kill -9 $$' } : {}),
        ...(n === 'hang' ? { run: `sleep 600 & node -e "setTimeout(() => {}, 600000)" ${marker}` } : {}),
        ...(n === 'fail' ? { run: 'exit 1' } : {}),
      })),
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code).toBe(1);
    const m = readManifest(ws);
    expect(m.lanes).toHaveLength(8);
    expect(lane(m, 'crash').error?.class).toBe('directive-failed');
    expect(lane(m, 'crash').attempts[0]).toMatchObject({ exit_code: null, signal: 'SIGKILL' });
    expect(lane(m, 'crash').error?.message).toMatch(/SIGKILL/);
    expect(lane(m, 'hang').error?.class).toBe('directive-timeout');
    expect(lane(m, 'fail').error?.class).toBe('directive-failed');
    for (const n of names.filter((x) => x.startsWith('l'))) {
      expect(lane(m, n).status, n).toBe('completed');
      expect(await remoteHead(join(dir, `${n}.git`), `fleet/iso/${n}`), n).toBe(lane(m, n).commit);
    }
    for (const n of ['crash', 'hang', 'fail']) expect(await remoteBranches(join(dir, `${n}.git`))).toEqual(['main']);
    const s = m.summary;
    expect(s).toMatchObject({ total: 8, completed: 5, failed: 3, skipped: 0, excluded: 0, queued: 0, running: 0 });
    expect(s.total).toBe(s.completed + s.failed + s.skipped + s.excluded);
    expect(processWithMarker(marker)).toEqual([]);
    expect(processWithEnv(ws)).toEqual([]);
    // Each lane wrote its own result file.
    for (const n of names) expect(existsSync(join(ws, 'lanes', n, 'result.json')), n).toBe(true);
    expect(walkFiles(ws).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    void tgit;
  });
});
