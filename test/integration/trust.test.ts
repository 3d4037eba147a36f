/**
 * What a directive (or a check) cannot do to Fleet's own git: get a file
 * outside its fence committed by staging it after the fence looked, hide a
 * change behind a replace ref, or steer Fleet's push through the git
 * configuration it can write (~/.gitconfig, XDG): Fleet's git reads only
 * configuration Fleet wrote. Real repositories, the real CLI.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, remoteBranches, tgit } from '../support/repos.js';
import { fleet, lane, readManifest, removeDir, runArgs, sq, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const files = { 'README.md': '# r\n', 'src/a.js': 'a\n', 'ci/deploy.yml': 'deploy: prod\n' };

describe('the fence holds on what is committed', () => {
  it('a check that stages a file outside owns fails the lane and nothing is pushed', async () => {
    const repo = await createRepo(dir, 'app', files, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'fmt',
      directive: 'edit src',
      max_retries: 0,
      targets: [{ repo: './app.git', owns: ['src/**'] }],
      run: 'echo b >> src/a.js',
      // A formatter or lint-staged run as a check: it rewrites and stages a file the lane does not own.
      checks: ['echo "deploy: attacker" > ci/deploy.yml && git add ci/deploy.yml'],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const l = lane(readManifest(ws), 'app');
    expect(l.error?.class).toBe('fence-violation');
    expect(l.error?.message).toContain('a check changed files outside the fence');
    expect(l.error?.message).toContain('ci/deploy.yml');
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it('a check that reformats an owned file gets its change committed, inside the fence', async () => {
    const repo = await createRepo(dir, 'app', files, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'fmt',
      directive: 'edit src',
      max_retries: 0,
      targets: [{ repo: './app.git', owns: ['src/**'] }],
      run: 'echo b >> src/a.js',
      checks: ['echo formatted > src/a.js'],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const l = lane(readManifest(ws), 'app');
    expect(l.changed_files).toEqual(['src/a.js']);
    expect(await remoteBranches(repo.remote)).toEqual(['fleet/fmt/app', 'main']);
  });

  it('a replace ref that hides a change outside owns from the diff does not get it past the fence', async () => {
    const repo = await createRepo(dir, 'app', files, { clone: false });
    // The directive stages the outside change, then replaces the base tree by the staged one: a diff of the index
    // against HEAD that honours replace refs shows only the owned file.
    const hide = [
      'echo "deploy: attacker" > ci/deploy.yml',
      'git add ci/deploy.yml',
      'T=$(git write-tree)',
      'git replace -f "$(git rev-parse HEAD^{tree})" "$T"',
      'echo b >> src/a.js',
    ].join(' && ');
    const file = writeFleetFile(dir, {
      name: 'hide',
      directive: 'edit src',
      max_retries: 0,
      targets: [{ repo: './app.git', owns: ['src/**'] }],
      run: hide,
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const l = lane(readManifest(ws), 'app');
    expect(l.error?.class).toBe('fence-violation');
    expect(l.error?.message).toContain('ci/deploy.yml');
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });
});

describe("Fleet's git reads only configuration Fleet wrote", () => {
  let home: string | undefined;
  let xdg: string | undefined;
  beforeEach(() => {
    home = process.env.HOME;
    xdg = process.env.XDG_CONFIG_HOME;
  });
  afterEach(() => {
    process.env.HOME = home;
    if (xdg === undefined) delete process.env.XDG_CONFIG_HOME;
    else process.env.XDG_CONFIG_HOME = xdg;
  });

  it("a directive that writes ~/.gitconfig and the XDG config runs nothing in Fleet's git and cannot redirect its push", async () => {
    const repo = await createRepo(dir, 'app', files, { clone: false });
    const decoy = await createRepo(dir, 'decoy', { 'README.md': '# decoy\n' }, { clone: false });
    const fakeHome = join(dir, 'home');
    mkdirSync(join(fakeHome, '.config'), { recursive: true });
    process.env.HOME = fakeHome;
    process.env.XDG_CONFIG_HOME = join(fakeHome, '.config');
    const evidence = join(dir, 'fsmonitor-ran.txt');
    const spy = join(dir, 'spy.sh');
    writeFileSync(spy, `#!/bin/sh\nenv > ${sq(evidence)}\nexit 1\n`, { mode: 0o755 });
    // Every place git looks for user configuration, each with a program git would run and a push redirect.
    const config = [
      '[core]',
      `\tfsmonitor = ${spy}`,
      `\tsshCommand = ${spy}`,
      `[url "${decoy.remote}"]`,
      `\tpushInsteadOf = ${repo.remote}`,
      `\tinsteadOf = ${repo.remote}`,
      '[protocol]',
      '\tallow = always',
    ].join('\n');
    const write = [
      `printf '%s\\n' ${sq(config)} > "$HOME/.gitconfig"`,
      'mkdir -p "$XDG_CONFIG_HOME/git"',
      `printf '%s\\n' ${sq(config)} > "$XDG_CONFIG_HOME/git/config"`,
      'echo b >> src/a.js',
    ].join(' && ');
    // isolation: off: the directive writes Fleet's own HOME, as it can wherever Fleet does not run as root (as root it
    // gets a HOME of its own). What is under test is Fleet's git, which reads none of the user's configuration.
    const file = writeFleetFile(dir, { name: 'cfg', directive: 'edit', max_retries: 0, isolation: 'off', targets: [{ repo: './app.git' }], run: write });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(existsSync(join(fakeHome, '.gitconfig'))).toBe(true);
    expect(existsSync(evidence)).toBe(false);
    expect(await remoteBranches(repo.remote)).toEqual(['fleet/cfg/app', 'main']);
    expect(await remoteBranches(decoy.remote)).toEqual(['main']);
    expect(lane(readManifest(ws), 'app').status).toBe('completed');
  });
});

describe('files a directive plants in .git', () => {
  it('commondir, config.worktree, info/grafts and objects/info/alternates are removed before Fleet runs git: only the lane’s change is pushed', async () => {
    const repo = await createRepo(dir, 'app', files, { clone: false });
    const other = await createRepo(dir, 'other', { 'x.txt': 'x\n' }, { clone: false });
    const plant = [
      'echo b >> src/a.js',
      `echo ${sq(other.remote)} > .git/commondir`,
      'printf "[core]\\n\\thooksPath = /tmp\\n" > .git/config.worktree',
      'mkdir -p .git/info .git/objects/info',
      'echo 0000000000000000000000000000000000000000 > .git/info/grafts',
      `echo ${sq(join(other.remote, 'objects'))} > .git/objects/info/alternates`,
    ].join(' && ');
    const file = writeFleetFile(dir, { name: 'plant', directive: 'edit src', max_retries: 0, targets: [{ repo: './app.git', owns: ['src/**'] }], run: plant });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(lane(readManifest(ws), 'app')).toMatchObject({ status: 'completed', phase: 'pushed', changed_files: ['src/a.js'] });
    const clone = join(ws, 'lanes', 'app', 'repo', '.git');
    expect(existsSync(join(clone, 'HEAD'))).toBe(true);
    for (const f of ['commondir', 'config.worktree', join('info', 'grafts'), join('objects', 'info', 'alternates')])
      expect(existsSync(join(clone, f)), f).toBe(false);
    expect(await remoteBranches(repo.remote)).toEqual(['fleet/plant/app', 'main']);
  });

  it('a FIFO in place of .git/HEAD neither stalls Fleet nor is read: the lane fails as a broken working copy, nothing pushed', async () => {
    const repo = await createRepo(dir, 'app', files, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'fifo',
      directive: 'edit src',
      max_retries: 0,
      targets: [{ repo: './app.git' }],
      run: 'echo b >> src/a.js && rm .git/HEAD && mkfifo .git/HEAD',
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(lane(readManifest(ws), 'app').error?.class).toBe('workspace-corrupted');
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });
});

describe('targets whose history is of their own making', () => {
  /** A bare repository `<name>.git` whose `main` is what the fast-import stream writes. */
  async function imported(name: string, stream: string): Promise<string> {
    const remote = join(dir, `${name}.git`);
    await tgit(['init', '--quiet', '--bare', '--initial-branch=main', '--template=', remote]);
    // --depth=1: fast-import deltifies each commit against the one before, and chains of thousands cost it seconds.
    await tgit(['fast-import', '--quiet', '--depth=1'], { cwd: remote, input: stream });
    return remote;
  }
  const commitOf = (i: number, files: string) =>
    `commit refs/heads/main\ncommitter T <t@example.com> ${1_700_000_000 + i} +0000\ndata 3\nc${String(i % 10)}\n${i ? '' : 'deleteall\n'}${files}\n`;

  it('a history of 10,000 commits: the lane runs and pushes as for any other', async () => {
    const parts = [commitOf(0, 'M 100644 inline README.md\ndata 4\n# r\n')];
    for (let i = 1; i < 10_000; i++) parts.push(commitOf(i, ''));
    await imported('deep', parts.join(''));
    const file = writeFleetFile(dir, { name: 'deep', directive: 'x', max_retries: 0, targets: [{ repo: './deep.git', run: 'echo done > DONE.md' }] });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(lane(readManifest(join(dir, 'ws')), 'deep')).toMatchObject({ status: 'completed', changed_files: ['DONE.md'] });
  });

  it('a tree with a .git entry (written past git own checks): that lane fails cleanly as a clone failure, the other completes', async () => {
    // git refuses to check out `.git/…` (it would be the working copy's own repository); fast-import does not check paths.
    const pwned = join(dir, 'pwned');
    const config = `[core]\n\tfsmonitor = touch ${pwned}\n`;
    await imported('dotgit', commitOf(0, `M 100644 inline README.md\ndata 4\n# r\nM 100644 inline .git/config\ndata ${Buffer.byteLength(config)}\n${config}`));
    await createRepo(dir, 'fine', { 'README.md': '# r\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'dotgit',
      directive: 'x',
      max_retries: 0,
      targets: [
        { repo: './dotgit.git', run: 'echo x > X.md' },
        { repo: './fine.git', run: 'echo x > X.md' },
      ],
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    const m = readManifest(join(dir, 'ws'));
    expect(lane(m, 'dotgit').error, JSON.stringify(lane(m, 'dotgit'))).toMatchObject({ class: 'clone-failed' });
    expect(lane(m, 'dotgit').error?.message).toMatch(/\.git\/config/);
    expect(lane(m, 'fine')).toMatchObject({ status: 'completed' });
    expect(await remoteBranches(join(dir, 'dotgit.git'))).toEqual(['main']);
    // The planted configuration never ran.
    expect(existsSync(pwned)).toBe(false);
  });
});
