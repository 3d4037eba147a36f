/**
 * What Fleet runs after a directive stays what it was: the git it commits and pushes with, its own installation,
 * and the logs it opens in the lane's folder. Each attack is a hostile directive run for real, through a real CLI
 * process (docs/security.md, "Fleet's own programs" and "Faults end cleanly").
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { laneUser, processSandbox } from '../../src/workspace/sandbox.js';
import { plainEnv } from '../cli/bin.js';
import { createRepo } from '../support/repos.js';
import { lane, readManifest, removeDir, runArgs, tempDir, tsxLoader, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-programs-');
  // Reachable by every user, as a fleet's folder usually is: the attacks below must be refused by who the directive
  // runs as and what is mounted, never by a folder on the way it could not pass.
  chmodSync(dir, 0o755);
});
afterEach(() => removeDir(dir));

const isRoot = process.getuid?.() === 0;
const isolated = process.platform === 'linux' && (await processSandbox()).kind !== 'none';

/** A process awaited by its exit: a Fleet that stalls fails the test by its timeout (and is killed after it). */
function run(argv: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b));
    child.stderr.on('data', (b: Buffer) => (out += b));
    running.add(child);
    child.on('exit', (code) => {
      running.delete(child);
      done({ code, out });
    });
  });
}

/** The real CLI, from the sources, as a process of its own. */
const cli = (args: string[], env: NodeJS.ProcessEnv, cwd: string) =>
  run([process.execPath, '--import', tsxLoader(), resolve('src/cli/index.ts'), ...args], env, cwd);
const running = new Set<ReturnType<typeof spawn>>();
afterEach(() => {
  for (const c of running) c.kill('SIGKILL');
  running.clear();
});

describe.runIf(isRoot && isolated)('Fleet as root: a directive cannot replace the programs Fleet runs after it', () => {
  /**
   * The attack of issue 28: as root without capabilities a directive still owns every file root owns, /usr/bin/git
   * among them, and Fleet's own commit and push ran the wrapper it left there, credential header in its environment.
   * Here the git Fleet pins is a root-owned program in a root-owned folder first on PATH (the system's own is not
   * put at stake by a test that could fail).
   */
  it("a directive's wrapper over the git Fleet pinned is refused; Fleet's commit and push run the git it started with", async () => {
    const bin = join(dir, 'bin');
    mkdirSync(bin, { mode: 0o755 });
    const realGit = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
    const gitText = `#!/bin/sh\nexec ${realGit} "$@"\n`;
    writeFileSync(join(bin, 'git'), gitText, { mode: 0o755 });
    const marker = join(dir, 'wrapper-ran');
    await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    const wrapper = `#!/bin/sh\\nenv > ${marker}\\nexec ${realGit} "$@"\\n`;
    const file = writeFleetFile(dir, {
      name: 'replace',
      directive: 'Replace git.',
      isolation: 'required',
      run: [
        `echo "uid=$(id -u)"`,
        `printf '${wrapper}' > ${bin}/git 2>/dev/null && echo REPLACED-GIT`,
        `printf 'x' >> ${bin}/git 2>/dev/null && echo APPENDED-GIT`,
        `mv ${bin}/git ${bin}/git.old 2>/dev/null && echo MOVED-GIT`,
        'echo x > STAMP',
      ].join('\n'),
      targets: [{ repo: './app.git' }],
    });
    const ws = join(dir, 'ws');
    const home = join(dir, 'home');
    mkdirSync(home);
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: home, PATH: `${bin}:${process.env.PATH ?? ''}` }, dir);
    expect(r.code, r.out).toBe(0);
    expect(lane(readManifest(ws), 'app')).toMatchObject({ status: 'completed', isolation: { kind: 'pid-namespace' } });
    const log = readFileSync(join(ws, 'lanes', 'app', 'attempt-1.log'), 'utf8');
    expect(log).toContain(`uid=${laneUser(join(ws, 'lanes', 'app')).uid}`);
    for (const done of ['REPLACED-GIT', 'APPENDED-GIT', 'MOVED-GIT']) expect(log).not.toMatch(new RegExp(`^${done}$`, 'm'));
    expect(readFileSync(join(bin, 'git'), 'utf8')).toBe(gitText);
    expect(existsSync(marker)).toBe(false);
    // The lane's branch was pushed by Fleet's git all the same, with the directive's change.
    expect(spawnSync('git', ['-C', join(dir, 'app.git'), 'show', 'fleet/replace/app:STAMP'], { encoding: 'utf8' }).stdout).toBe('x\n');
  });

  it("a directive writes its working copy and a HOME of its own, never root's HOME nor another lane's", async () => {
    await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    await createRepo(dir, 'next', { 'README.md': '# next\n' }, { clone: false });
    const home = join(dir, 'home');
    mkdirSync(home, { mode: 0o700 });
    writeFileSync(join(home, '.gitconfig'), '[user]\n\tname = Root\n');
    const file = writeFleetFile(dir, {
      name: 'home',
      directive: 'Write home.',
      isolation: 'required',
      run: [
        'echo "home=[$(ls -A "$HOME" | tr "\\n" " ")]"',
        'echo "[core]\n\tfsmonitor = /tmp/evil" >> "$HOME/.gitconfig" && echo HOME-WRITTEN',
        'echo mine > "$HOME/.npmrc" && cat "$HOME/.npmrc"',
        'echo changed >> README.md',
      ].join('\n'),
      checks: ['test -w README.md && touch "$HOME/from-check"'],
      targets: [
        { repo: './app.git' },
        { repo: './next.git', depends_on: ['app'], run: 'echo "home=[$(ls -A "$HOME" | tr "\\n" " ")]"; echo x >> README.md', checks: [] },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: home }, dir);
    expect(r.code, r.out).toBe(0);
    expect(lane(readManifest(ws), 'app')).toMatchObject({ status: 'completed' });
    const log = readFileSync(join(ws, 'lanes', 'app', 'attempt-1.log'), 'utf8');
    // A private, empty HOME the directive can write: the agent CLI's config, npm's cache.
    expect(log).toContain('home=[]');
    expect(log).toContain('HOME-WRITTEN');
    expect(log).toContain('mine');
    expect(readFileSync(join(home, '.gitconfig'), 'utf8')).toBe('[user]\n\tname = Root\n');
    expect(existsSync(join(home, '.npmrc'))).toBe(false);
    expect(existsSync(join(home, 'from-check'))).toBe(false);
    // The check wrote the lane's HOME (else the lane would have failed); the next lane starts with an empty one.
    expect(readFileSync(join(ws, 'lanes', 'next', 'attempt-1.log'), 'utf8')).toContain('home=[]');
  });
});

/**
 * A process of one lane that hands a descriptor of its folder to another lane's, over a unix socket (which needs no
 * path, so no mask stops it): with one user for every lane, the other could change the folder while Fleet, as root,
 * walks it to make it the lane's, and turn that walk onto a program of root's (found by attacking this very change).
 * Each lane's user is its own, and its folder closed to every other.
 */
const PASS_FD = `
import os, socket, sys, time
name = b"\\0fleet-pass-" + sys.argv[2].encode()
if sys.argv[1] == "send":
    fd = os.open(os.environ["FLEET_LANE_DIR"], os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(400):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(name); break
        except OSError:
            time.sleep(0.05)
    socket.send_fds(s, [b"x"], [fd]); s.recv(1)
else:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); srv.bind(name); srv.listen(1)
    c, _ = srv.accept()
    _, fds, _, _ = socket.recv_fds(c, 1, 1)
    d = "/proc/self/fd/%d" % fds[0]
    try:
        print("LISTED:" + ",".join(sorted(os.listdir(d))))
    except OSError as e:
        print("LIST-REFUSED:" + e.strerror)
    try:
        open(d + "/planted", "w").write("x"); print("WROTE-INTO-OTHER-LANE")
    except OSError as e:
        print("WRITE-REFUSED:" + e.strerror)
    c.send(b"k")
`;

describe.runIf(isRoot && isolated)('Fleet as root: one lane against another', () => {
  it("a descriptor of one lane's folder handed to another lane's process opens nothing there", async () => {
    writeFileSync(join(dir, 'pass.py'), PASS_FD);
    await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    await createRepo(dir, 'next', { 'README.md': '# next\n' }, { clone: false });
    const tag = String(process.pid);
    const file = writeFleetFile(dir, {
      name: 'pass',
      directive: 'Pass a descriptor.',
      isolation: 'required',
      max_parallel: 2,
      targets: [
        { repo: './app.git', run: `/usr/bin/python3 ${join(dir, 'pass.py')} send ${tag}; echo a >> README.md` },
        { repo: './next.git', run: `/usr/bin/python3 ${join(dir, 'pass.py')} receive ${tag}; echo n >> README.md` },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: dir }, dir);
    expect(r.code, r.out).toBe(0);
    const log = readFileSync(join(ws, 'lanes', 'next', 'attempt-1.log'), 'utf8');
    expect(log).toMatch(/^LIST-REFUSED:Permission denied$/m);
    expect(log).toMatch(/^WRITE-REFUSED:Permission denied$/m);
    expect(log).not.toMatch(/^WROTE-INTO-OTHER-LANE$/m);
    expect(existsSync(join(ws, 'lanes', 'app', 'planted'))).toBe(false);
  });

  it('a check that swaps its working copy for a link to a folder closed to it does not get the next check in', async () => {
    // Root entered the working folder before dropping to the lane's user: through the link, into the closed folder.
    const closed = join(dir, 'closed');
    mkdirSync(join(closed, 'sub'), { recursive: true, mode: 0o755 });
    chmodSync(closed, 0o700);
    writeFileSync(join(closed, 'sub', 'secret.txt'), 'TOPSECRET\n');
    await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'swap',
      directive: 'Swap.',
      isolation: 'required',
      max_retries: 0,
      run: 'echo x >> README.md',
      checks: [`cd .. && mv repo repo.real && ln -s ${join(closed, 'sub')} repo`, 'echo "secret=[$(cat secret.txt 2>/dev/null)]"'],
      targets: [{ repo: './app.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: dir }, dir);
    expect(r.code, r.out).toBe(1);
    const log = readFileSync(join(ws, 'lanes', 'app', 'attempt-1.log'), 'utf8');
    expect(log).not.toContain('TOPSECRET');
    expect(lane(readManifest(ws), 'app')).toMatchObject({ status: 'failed' });
  });
});

describe.runIf(isRoot && isolated)('Fleet as root: the folders on the way to a lane', () => {
  it("a fleet kept under a folder closed to other users (as /root is): the directive reaches its lane and the fleet file's folder, and nothing else there", async () => {
    const closed = join(dir, 'closed');
    mkdirSync(closed, { mode: 0o700 });
    writeFileSync(join(closed, 'secret.txt'), 'SECRET\n');
    const fleets = join(closed, 'fleets');
    mkdirSync(fleets, { mode: 0o755 });
    writeFileSync(join(fleets, 'template.txt'), 'TEMPLATE\n');
    await createRepo(fleets, 'app', { 'README.md': '# app\n' }, { clone: false });
    const file = writeFleetFile(fleets, {
      name: 'closed',
      directive: 'Copy the template.',
      isolation: 'required',
      run: [
        `echo "closed=[$(ls -A ${closed} | tr '\n' ' ')]"`,
        `echo "secret=[$(cat ${join(closed, 'secret.txt')} 2>/dev/null)]"`,
        'cp "$FLEET_FILE_DIR/template.txt" T.txt',
      ].join('\n'),
      targets: [{ repo: './app.git' }],
    });
    const ws = join(fleets, 'ws');
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: dir }, fleets);
    expect(r.code, r.out).toBe(0);
    const log = readFileSync(join(ws, 'lanes', 'app', 'attempt-1.log'), 'utf8');
    expect(log).toContain('closed=[fleets ]');
    expect(log).toContain('secret=[]');
    expect(spawnSync('git', ['-C', join(fleets, 'app.git'), 'show', 'fleet/closed/app:T.txt'], { encoding: 'utf8' }).stdout).toBe('TEMPLATE\n');
  });
});

describe.runIf(isRoot && isolated)('Fleet as root: programs installed in a closed folder', () => {
  it("a tool on the directive's PATH under root's home (the agent CLI a leg installed, pyenv) runs; the rest of that home stays out of sight", async () => {
    const rootHome = join(dir, 'roothome');
    const bin = join(rootHome, '.tools', 'bin');
    mkdirSync(bin, { recursive: true });
    chmodSync(rootHome, 0o700);
    writeFileSync(join(rootHome, 'secret.txt'), 'SECRET\n');
    writeFileSync(join(bin, 'hello-tool'), '#!/bin/sh\necho "hello from the tool"\n', { mode: 0o755 });
    await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'tools',
      directive: 'Run a tool.',
      isolation: 'required',
      run: [
        `hello-tool > HELLO.txt`,
        `echo "home=[$(ls -A ${rootHome} | tr '\n' ' ')]"`,
        `echo "secret=[$(cat ${join(rootHome, 'secret.txt')} 2>/dev/null)]"`,
      ].join('\n'),
      targets: [{ repo: './app.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: rootHome, PATH: `${bin}:${process.env.PATH ?? ''}` }, dir);
    expect(r.code, r.out).toBe(0);
    const log = readFileSync(join(ws, 'lanes', 'app', 'attempt-1.log'), 'utf8');
    expect(log).toContain('home=[.tools ]');
    expect(log).toContain('secret=[]');
    expect(spawnSync('git', ['-C', join(dir, 'app.git'), 'show', 'fleet/tools/app:HELLO.txt'], { encoding: 'utf8' }).stdout).toBe('hello from the tool\n');
  });
});

/**
 * A persistent installation of Fleet (a global npm install, the npx cache, a runner's tool folder) holds the code the
 * next run executes with the next fleet's token: a directive that appends to it would own every later run. The copy
 * here is installed as npm installs a package: bin/, dist/ and package.json.
 */

/** `argv` run as `uid` (its group the same number), without supplementary groups. */
const asUser = (uid: number, argv: string[]) => ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', ...argv];

/**
 * Fleet as an ordinary user (uid 65534) runs it: installed as that user's own (a user-wide npm install), a HOME of
 * its own. `own()` gives the test's folder, and all in it, to the user once the test has written its files; `fleet`
 * runs the installed CLI as the user, `via` before it (a command that sets the process up, then execs it).
 */
function ordinaryUser() {
  const uid = 65534;
  const inst = install(uid);
  const home = join(dir, 'home');
  mkdirSync(home);
  return {
    uid,
    home,
    own(): void {
      spawnSync('chown', ['-R', `${uid}:${uid}`, dir]);
      chmodSync(dir, 0o755);
    },
    fleet: (args: string[], opts: { env?: NodeJS.ProcessEnv; via?: string[] } = {}) =>
      run([...(opts.via ?? []), ...asUser(uid, [process.execPath, join(inst.root, 'bin', 'fleet.js'), ...args])], { ...plainEnv(home), ...opts.env }, dir),
  };
}

function install(owner?: number): { root: string; bundle: string; text: string } {
  const root = join(dir, 'install', 'fleet');
  mkdirSync(root, { recursive: true });
  for (const part of ['bin', 'dist', 'package.json']) cpSync(resolve(part), join(root, part), { recursive: true });
  if (owner !== undefined) spawnSync('chown', ['-R', `${owner}:${owner}`, join(dir, 'install')]);
  const bundle = join(root, 'dist', 'cli', 'index.js');
  return { root, bundle, text: readFileSync(bundle, 'utf8') };
}

async function rewriteInstall(as: 'root' | 'user'): Promise<{ log: string; bundle: string; text: string; code: number | null; out: string }> {
  const uid = as === 'user' ? 65534 : undefined;
  const inst = install(uid);
  await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
  const home = join(dir, 'home');
  mkdirSync(home);
  const file = writeFleetFile(dir, {
    name: 'rewrite',
    directive: 'Rewrite Fleet.',
    isolation: 'required',
    run: [
      `echo 'process.exit(99);' >> ${inst.bundle} && echo REWROTE-FLEET`,
      `mv ${inst.root}/dist ${inst.root}/dist.old 2>/dev/null && echo MOVED-FLEET`,
      'echo x > STAMP',
    ].join('\n'),
    targets: [{ repo: './app.git' }],
  });
  const ws = join(dir, 'ws');
  if (uid !== undefined) {
    for (const p of [dir, join(dir, 'app.git'), home, file]) spawnSync('chown', ['-R', `${uid}:${uid}`, p]);
    chmodSync(dir, 0o755);
  }
  const env = plainEnv(home);
  const node = [process.execPath, join(inst.root, 'bin', 'fleet.js'), ...runArgs(file, ws)];
  const argv = uid === undefined ? node : asUser(uid, node);
  const r = await run(argv, env, dir);
  const log = existsSync(join(ws, 'lanes', 'app', 'attempt-1.log')) ? readFileSync(join(ws, 'lanes', 'app', 'attempt-1.log'), 'utf8') : '';
  return { log, bundle: inst.bundle, text: inst.text, ...r };
}

describe.runIf(isolated && isRoot)("Fleet's own installation is read-only to every directive", () => {
  it('as an ordinary user who owns the installation (a user-wide npm install): the directive cannot append to it or move it', async () => {
    const r = await rewriteInstall('user');
    expect(r.code, r.out + r.log).toBe(0);
    expect(r.log).toMatch(/Read-only file system/);
    expect(r.log).not.toMatch(/^REWROTE-FLEET$/m);
    expect(r.log).not.toMatch(/^MOVED-FLEET$/m);
    expect(readFileSync(r.bundle, 'utf8')).toBe(r.text);
  });

  it('as root: the same', async () => {
    const r = await rewriteInstall('root');
    expect(r.code, r.out + r.log).toBe(0);
    expect(r.log).not.toMatch(/^REWROTE-FLEET$/m);
    expect(r.log).not.toMatch(/^MOVED-FLEET$/m);
    expect(readFileSync(r.bundle, 'utf8')).toBe(r.text);
  });
});

describe.runIf(process.platform === 'linux')('descriptors Fleet inherited', () => {
  /**
   * Issue 28, second pass: a descriptor Fleet's process inherits open across exec (a shell's `20>>file`, a parent's
   * stray pipe) passed to every directive, whatever its sandbox hid: a descriptor needs no path. Started as root with
   * a root-only file open for writing on 20 and for reading on 21, the directive (isolated: the lane's own user) wrote
   * the one and read the other.
   */
  for (const isolation of ['auto', 'off'] as const) {
    it(`are closed before any child runs (isolation: ${isolation})`, async () => {
      const target = join(dir, 'written-by-fd');
      const secret = join(dir, 'read-by-fd');
      writeFileSync(target, 'untouched\n', { mode: 0o600 });
      writeFileSync(secret, 'ROOT-ONLY-SECRET\n', { mode: 0o600 });
      await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
      const file = writeFleetFile(dir, {
        name: 'fds',
        directive: 'x',
        isolation,
        targets: [
          {
            repo: './a.git',
            run: `bash -c 'echo FROM-DIRECTIVE >&20' 2>/dev/null && echo WROTE-20; bash -c 'cat <&21' 2>/dev/null; echo x > STAMP`,
          },
        ],
      });
      const ws = join(dir, 'ws');
      // As bash hands them on (`20>>file 21<file`; dash takes one digit only): open across exec, as Node's own spawn would not leave them.
      const child = spawn('bash', ['-c', 'exec "$@" 20>>"$T" 21<"$S"', 'bash', process.execPath, resolve('bin/fleet.js'), ...runArgs(file, ws)], {
        cwd: dir,
        env: { ...process.env, HOME: dir, T: target, S: secret },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      running.add(child);
      let out = '';
      child.stdout!.on('data', (b: Buffer) => (out += b));
      child.stderr!.on('data', (b: Buffer) => (out += b));
      const code = await new Promise<number | null>((done) => child.on('exit', done));
      running.delete(child);
      expect(code, out).toBe(0);
      const log = readFileSync(join(ws, 'lanes', 'a', 'attempt-1.log'), 'utf8');
      expect(log, log).not.toMatch(/^WROTE-20$/m);
      expect(log).not.toContain('ROOT-ONLY-SECRET');
      expect(readFileSync(target, 'utf8')).toBe('untouched\n');
    });
  }
});

describe.runIf(process.platform === 'linux')('a flood of directive output', () => {
  it("is cut in the lane's log to its first 8 MiB and last 1 MiB, saying how much was left out", async () => {
    // Issue 28, second pass: 256 MiB of output went whole into the attempt's log, and from there into the artifact.
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'flood',
      directive: 'x',
      max_retries: 0,
      targets: [{ repo: './a.git', run: 'echo FIRST-LINE; yes 0123456789abcdef | head -c 40000000; echo; echo LAST-LINE; echo x > STAMP' }],
    });
    const ws = join(dir, 'ws');
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: dir }, dir);
    expect(r.code, r.out).toBe(0);
    const log = readFileSync(join(ws, 'lanes', 'a', 'attempt-1.log'), 'utf8');
    expect(log.length).toBeLessThan(9.5 * 1024 * 1024);
    expect(log).toMatch(/^FIRST-LINE$/m);
    expect(log).toMatch(/^LAST-LINE$/m);
    expect(log).toMatch(/^=== \d+ bytes of output left out here: a log keeps the first 8388608 bytes and the last 1048576 ===$/m);
  });
});

/** A cgroup hierarchy the suite may make a cgroup in (as root): v2's root, else v1's freezer; null where neither. */
const cgroupTop = (() => {
  if (!isRoot || process.platform !== 'linux') return null;
  for (const top of ['/sys/fs/cgroup', '/sys/fs/cgroup/freezer']) {
    const probe = join(top, `fleet-probe-${process.pid}`);
    if (spawnSync('mkdir', [probe]).status === 0) {
      spawnSync('rmdir', [probe]);
      if (top === '/sys/fs/cgroup' && !existsSync(join(top, 'cgroup.controllers'))) continue; // a tmpfs, not a hierarchy
      return top;
    }
  }
  return null;
})();

describe.runIf(isolated && isRoot && cgroupTop !== null)("a directive cannot write Fleet's cgroup", () => {
  /**
   * Issue 28, second pass (a): where the machine delegates Fleet's cgroup to Fleet's user (a systemd user session), a
   * directive running as that user could write it: freeze Fleet (`cgroup.freeze`, v1's `freezer.state`), timeouts and
   * interrupt handler with it, or kill it (`cgroup.kill`). Here the suite delegates one by hand: a cgroup of uid
   * 65534's, Fleet started in it as that user. The directive makes a cgroup inside it, which proves it could write
   * the rest (freezing it would stall this test). Now the sandbox hides /sys/fs/cgroup where Fleet's cgroup is the
   * command's user's to write.
   */
  const cg = join(cgroupTop ?? '/nonexistent', `fleet-test-${process.pid}`);
  afterEach(() => {
    spawnSync('rmdir', [join(cg, 'evil')]);
    spawnSync('rmdir', [cg]);
  });

  it('as an ordinary user whose cgroup Fleet runs in: the directive does not see it, and its lane completes', async () => {
    const user = ordinaryUser();
    mkdirSync(cg);
    spawnSync('chown', ['-R', `${user.uid}:${user.uid}`, cg]);
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'cgroup',
      directive: 'x',
      max_retries: 0,
      isolation: 'required',
      targets: [
        {
          repo: './a.git',
          run: [
            `mkdir ${JSON.stringify(join(cg, 'evil'))} 2>/dev/null && echo CGROUP-WRITTEN`,
            'ls -A /sys/fs/cgroup | grep -q . && echo CGROUP-SEEN',
            'echo a > A.txt',
          ].join('\n'),
        },
      ],
    });
    user.own();
    // Fleet moved into the cgroup before it drops to the user: as systemd starts a user's session in its own.
    const r = await user.fleet(['run', file, '--workspace', join(dir, 'ws'), '--quiet'], { via: ['sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cg] });
    expect(r.code, r.out).toBe(0);
    const log = readFileSync(join(dir, 'ws', 'lanes', 'a', 'attempt-1.log'), 'utf8');
    expect(log, log).not.toMatch(/^CGROUP-WRITTEN$/m);
    expect(log).not.toMatch(/^CGROUP-SEEN$/m);
    expect(existsSync(join(cg, 'evil'))).toBe(false);
  });
});

describe.runIf(isolated && isRoot)("a directive cannot reach the user's own services", () => {
  /**
   * Issue 28, second pass (review): a command running as Fleet's own user could talk to the services of that user's
   * session in `$XDG_RUNTIME_DIR`: `systemd-run --user` starts a process outside every namespace (where Fleet's seal
   * key, its private folder and /proc/<fleet>/environ are in reach), `systemctl --user freeze` stops Fleet's unit.
   * The suite has no session: a socket of the user's at the place the session bus keeps one stands for them.
   */
  it('as an ordinary user: the runtime folder shows nothing, its socket out of reach, and the lane completes', async () => {
    const user = ordinaryUser();
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const runtime = join(dir, 'run');
    mkdirSync(runtime, { mode: 0o700 });
    const bus = createServer((s) => s.end('BUS-ANSWERED\n'));
    await new Promise<void>((done) => bus.listen(join(runtime, 'bus'), done));
    try {
      const file = writeFleetFile(dir, {
        name: 'session',
        directive: 'x',
        max_retries: 0,
        isolation: 'required',
        targets: [
          {
            repo: './a.git',
            run: ['ls -A "$XDG_RUNTIME_DIR" | grep -q . && echo RUNTIME-SEEN', 'test -S "$XDG_RUNTIME_DIR/bus" && echo BUS-SEEN', 'echo a > A.txt'].join('\n'),
          },
        ],
      });
      user.own();
      const r = await user.fleet(['run', file, '--workspace', join(dir, 'ws'), '--quiet'], { env: { XDG_RUNTIME_DIR: runtime } });
      expect(r.code, r.out).toBe(0);
      const log = readFileSync(join(dir, 'ws', 'lanes', 'a', 'attempt-1.log'), 'utf8');
      expect(log, log).not.toMatch(/^RUNTIME-SEEN$/m);
      expect(log).not.toMatch(/^BUS-SEEN$/m);
    } finally {
      await new Promise((done) => bus.close(done));
    }
  });
});

describe.runIf(process.platform === 'linux')('a huge patch', () => {
  it('over 64 MiB fails its lane (fence-violation) without being read into memory; nothing is pushed, no patch kept, the other lane completes', async () => {
    // Issue 28, second pass (e): a lane's patch was read whole into memory, handled as text and pushed (240 MiB made Fleet
    // an 853 MB process). Now git's output over the limit is never read: the launcher asks its size, a spawned git is ended.
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'huge',
      directive: 'x',
      max_retries: 0,
      targets: [
        // 70 MB of text: 2.6 million lines of 27 bytes, one new file (a patch of 69 MiB).
        { repo: './a.git', run: 'yes 0123456789abcdef0123456789 | head -n 2600000 > BIG.txt' },
        { repo: './b.git', run: 'echo b > STAMP' },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: dir }, dir);
    const m = readManifest(ws);
    expect(r.code, JSON.stringify(lane(m, 'a'), null, 1)).toBe(1);
    expect(lane(m, 'a')).toMatchObject({ status: 'failed', commit: null });
    expect(lane(m, 'a').error).toMatchObject({ class: 'fence-violation' });
    expect(lane(m, 'a').error?.message).toMatch(/^the change's patch is 6\d\.\d MiB, over Fleet's limit of 64 MiB for one lane; nothing was pushed/);
    expect(existsSync(join(ws, 'lanes', 'a', 'patch.diff'))).toBe(false);
    expect(spawnSync('git', ['--git-dir', join(dir, 'a.git'), 'branch', '--list', 'fleet/huge/a'], { encoding: 'utf8' }).stdout.trim()).toBe('');
    expect(lane(m, 'b')).toMatchObject({ status: 'completed' });
  });
});

describe.runIf(isolated && isRoot)('a directive cannot move the workspace aside', () => {
  /**
   * Issue 28, second pass: Fleet not root, isolated through a user namespace (the directive runs as Fleet's own uid).
   * The masks stay on the folders they were put on, wherever those go: a directive that renamed the folder above its
   * workspace and made another at its path had Fleet, which goes on by path, commit and push in a working copy of the
   * directive's making as another lane's. Now each folder above the view the user could rename is a mount point, which
   * cannot be renamed; and the guard knows a working copy by its inode as well as its path.
   */
  it("as an ordinary user: lane a renames the folder above the workspace; lane b's push is b's own change", async () => {
    const user = ordinaryUser();
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'aside',
      directive: 'x',
      max_retries: 0,
      isolation: 'required',
      targets: [
        {
          repo: './a.git',
          run: [
            // Once b's directive runs: the run's folder moved aside with _workspace, and one of a's making in its place.
            'until [ -e "$FLEET_FILE_DIR/b-started" ]; do sleep 0.05; done',
            'W="$FLEET_WORKSPACE"; top="$(dirname "$(dirname "$W")")"',
            'mv "$top" "$top.aside" 2>/dev/null && echo MOVED-ASIDE',
            'mkdir -p "$W/lanes/b" && git clone -q "$FLEET_FILE_DIR/b.git" "$W/lanes/b/repo" && echo planted > "$W/lanes/b/repo/INJECTED.txt" && echo PLANTED',
            'touch "$FLEET_FILE_DIR/a-done"; echo a > A.txt',
          ].join('\n'),
        },
        { repo: './b.git', run: 'touch "$FLEET_FILE_DIR/b-started"; until [ -e "$FLEET_FILE_DIR/a-done" ]; do sleep 0.05; done; echo honest >> README.md' },
      ],
    });
    user.own();
    // The default workspace, _workspace/fleet/<fleet_id> beside the fleet file: _workspace is the folder a moves.
    const r = await user.fleet(['run', file, '--quiet']);
    expect(r.code, r.out).toBe(0);
    expect(existsSync(join(dir, '_workspace.aside'))).toBe(false);
    const ids = spawnSync('ls', [join(dir, '_workspace', 'fleet')], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n');
    expect(ids).toHaveLength(1);
    const ws = join(dir, '_workspace', 'fleet', ids[0]!);
    const log = readFileSync(join(ws, 'lanes', 'a', 'attempt-1.log'), 'utf8');
    expect(log, log).not.toMatch(/^MOVED-ASIDE$/m);
    expect(log).not.toMatch(/^PLANTED$/m);
    const m = readManifest(ws);
    expect(lane(m, 'b')).toMatchObject({ status: 'completed' });
    const changed = spawnSync('git', ['--git-dir', join(dir, 'b.git'), 'diff', '--name-only', 'main', 'fleet/aside/b'], { encoding: 'utf8' });
    expect(changed.stdout.trim()).toBe('README.md');
  });
});

describe.runIf(isolated && isRoot)("another fleet's directive cannot forge an earlier run's manifest", () => {
  /**
   * Issue 28, second pass (g): a run's workspace is hidden from its own fleet's directives, not from another fleet's.
   * As an ordinary user (the directive is Fleet's own uid in a user namespace), fleet "other"'s directive rewrote
   * fleet "sweep"'s manifest, its failed lane b made completed; `fleet run --since` that manifest then took b as
   * unchanged, ran nothing and exited 0, with no branch of b anywhere. Now the CLI seals its manifests with a key of
   * the user's own, in a folder no isolated command sees (util/manifest-seal.ts), and believes only what is sealed.
   */
  it('as an ordinary user: the forged manifest is not believed, the failed lane runs again and fails (exit 1); the key stays out of sight', async () => {
    const user = ordinaryUser();
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'sweep',
      directive: 'x',
      max_retries: 0,
      isolation: 'required',
      targets: [
        { repo: './a.git', run: 'echo a > A.txt' },
        { repo: './b.git', run: 'exit 3' },
      ],
    });
    const otherDir = join(dir, 'other');
    mkdirSync(otherDir);
    await createRepo(otherDir, 'c', { 'README.md': '# c\n' }, { clone: false });
    writeFileSync(
      join(otherDir, 'forge.cjs'),
      [
        "const fs = require('node:fs');",
        'const f = process.argv[2];',
        "const m = JSON.parse(fs.readFileSync(f, 'utf8'));",
        "for (const l of m.lanes) if (l.lane === 'b') Object.assign(l, { status: 'completed', phase: 'no-op', error: null, changed_files: [] });",
        "fs.writeFileSync(f, JSON.stringify(m, null, 2) + '\\n');",
        "console.log('FORGED');",
      ].join('\n'),
    );
    const key = join(user.home, '.local', 'state', 'fleet');
    const other = writeFleetFile(otherDir, {
      name: 'other',
      directive: 'x',
      max_retries: 0,
      isolation: 'required',
      targets: [
        {
          repo: './c.git',
          run: [
            `node "$FLEET_FILE_DIR/forge.cjs" "$(cat "$FLEET_FILE_DIR/target")"`,
            `cat ${JSON.stringify(join(key, 'manifest-seal.key'))} >/dev/null 2>&1 && echo KEY-READ`,
            `ls -A ${JSON.stringify(key)} 2>/dev/null | grep -q . && echo KEY-SEEN`,
            'echo c > C.txt',
          ].join('\n'),
        },
      ],
    });
    user.own();
    const fleetAs = (args: string[]) => user.fleet(args);

    const first = await fleetAs(['run', file, '--workspace', join(dir, 'ws1'), '--quiet']);
    expect(first.code, first.out).toBe(1);
    // Sealed, and believed: a is unchanged, b runs again.
    const second = await fleetAs(['run', file, '--workspace', join(dir, 'ws2'), '--since', join(dir, 'ws1', 'fleet-status.json'), '--quiet']);
    expect(second.code, second.out).toBe(1);
    expect(second.out).not.toMatch(/not believed/);
    expect(lane(readManifest(join(dir, 'ws2')), 'a')).toMatchObject({ status: 'unchanged' });

    writeFileSync(join(otherDir, 'target'), join(dir, 'ws2', 'fleet-status.json'));
    spawnSync('chown', [`${user.uid}:${user.uid}`, join(otherDir, 'target')]);
    const attack = await fleetAs(['run', other, '--workspace', join(dir, 'ws-other'), '--quiet']);
    expect(attack.code, attack.out).toBe(0);
    const log = readFileSync(join(dir, 'ws-other', 'lanes', 'c', 'attempt-1.log'), 'utf8');
    expect(log, log).toMatch(/^FORGED$/m);
    expect(log).not.toMatch(/^KEY-READ$/m);
    expect(log).not.toMatch(/^KEY-SEEN$/m);
    expect(lane(readManifest(join(dir, 'ws2')), 'b')).toMatchObject({ status: 'completed' });

    const third = await fleetAs(['run', file, '--workspace', join(dir, 'ws3'), '--since', join(dir, 'ws2', 'fleet-status.json'), '--quiet']);
    expect(third.out).toMatch(/every lane runs: .*ws2\/fleet-status\.json is not believed: its seal does not match/);
    expect(third.code, third.out).toBe(1);
    const m3 = readManifest(join(dir, 'ws3'));
    expect(lane(m3, 'b')).toMatchObject({ status: 'failed' });
    expect(lane(m3, 'a').status).not.toBe('unchanged');
  });
});

describe.runIf(process.platform === 'linux')("what a directive plants at the next attempt's log", () => {
  /**
   * Issue 28: with a FIFO there, Fleet's main thread blocked in open() for as long as nobody wrote to it: every lane
   * stopped, no timeout fired, SIGINT went unheard. Now the next attempt runs and logs to a file of its own.
   */
  for (const isolation of ['auto', 'off'] as const) {
    it(`a FIFO does not stall Fleet: the next attempt runs and logs to a file of Fleet's (isolation: ${isolation})`, async () => {
      await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
      await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
      const file = writeFleetFile(dir, {
        name: 'fifo',
        directive: 'x',
        max_retries: 1,
        isolation,
        targets: [
          {
            repo: './a.git',
            run: `if [ -e "$FLEET_LANE_DIR/attempt-2.log" ]; then echo SECOND-ATTEMPT; else mkfifo "$FLEET_LANE_DIR/attempt-2.log"; fi; exit 1`,
          },
          { repo: './b.git', run: 'echo b >> README.md' },
        ],
      });
      const ws = join(dir, 'ws');
      const r = await cli(runArgs(file, ws), { ...process.env, HOME: dir }, dir);
      expect(r.code, r.out).toBe(1);
      const m = readManifest(ws);
      expect(lane(m, 'a')).toMatchObject({ status: 'failed', retry_count: 1 });
      expect(lane(m, 'b')).toMatchObject({ status: 'completed' });
      const second = join(ws, 'lanes', 'a', 'attempt-2.log');
      expect(lstatSync(second).isFile()).toBe(true);
      expect(readFileSync(second, 'utf8')).toContain('SECOND-ATTEMPT');
    });
  }

  it.runIf(isRoot)("a hard link to a file of root's is not appended to", async () => {
    // Where the kernel lets a user link a file it does not own (fs.protected_hardlinks=0), or as root with isolation
    // off: Fleet, as root, would append the directive's output to the file the link names.
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'untouched\n');
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'hardlink',
      directive: 'x',
      max_retries: 1,
      isolation: 'off',
      targets: [
        {
          repo: './a.git',
          run: `[ -e "$FLEET_LANE_DIR/attempt-2.log" ] || ln ${victim} "$FLEET_LANE_DIR/attempt-2.log"; echo OUTPUT-OF-THE-DIRECTIVE; exit 1`,
        },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: dir }, dir);
    expect(r.code, r.out).toBe(1);
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
    expect(readFileSync(join(ws, 'lanes', 'a', 'attempt-2.log'), 'utf8')).toContain('OUTPUT-OF-THE-DIRECTIVE');
  });
});
