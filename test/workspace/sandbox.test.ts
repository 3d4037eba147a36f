/**
 * The sandbox directives run in: a PID namespace whose /proc shows only the
 * directive, where nothing it leaves running outlives it, and where the
 * runner's command files are hidden. Real namespaces, real processes: as root
 * (how Fleet runs in this suite and on a root runner) and as an unprivileged
 * user (through a user namespace), each checked from inside.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/workspace/exec.js';
import {
  cgroupFolders,
  detectSandbox,
  initArgs,
  laneUser,
  makeOwn,
  pinsFor,
  planLayers,
  runnerCommandFolders,
  sandboxFor,
  strategies,
  works,
} from '../../src/workspace/sandbox.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleet-sandbox-'));
  chmodSync(dir, 0o777);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const isRoot = process.getuid?.() === 0;

/**
 * A workspace of two lanes and a private folder beside it, as Fleet lays them out: what a command in lane `a`
 * reports of them (`WrapOptions` hiding the workspace but for lane a's folder, and the private folder). `report`
 * is shell text run from a's working copy, its lines marked.
 */
function laneLayout(): { ws: string; own: string; priv: string; runner: string; opts: { hide: string[]; keep: string[] }; report: string } {
  // A space and a `#` in the path: the folders reach mount(8) through a table, where both must be escaped.
  const ws = join(dir, 'work space #1');
  const own = join(ws, 'lanes', 'a');
  const priv = join(dir, 'fleet-git-x');
  const runner = join(dir, '_runner_file_commands');
  mkdirSync(join(own, 'repo'), { recursive: true });
  mkdirSync(join(ws, 'lanes', 'b', 'repo'), { recursive: true });
  mkdirSync(join(priv, 'sh-1'), { recursive: true });
  mkdirSync(runner);
  writeFileSync(join(ws, 'lanes', 'b', 'repo', 'f'), 'B');
  writeFileSync(join(ws, 'fleet-status.json'), '{}');
  writeFileSync(join(own, 'repo', 'f'), 'A');
  writeFileSync(join(priv, 'sh-1', '1.out'), 'git output');
  writeFileSync(join(runner, 'set_env_1'), '');
  // Every user may reach them (the unprivileged cases run as nobody); the hiding is the mounts' alone.
  for (const d of [ws, join(ws, 'lanes'), own, join(own, 'repo'), join(ws, 'lanes', 'b'), join(ws, 'lanes', 'b', 'repo'), priv, join(priv, 'sh-1'), runner])
    chmodSync(d, 0o777);
  const q = (p: string) => `"${p}"`;
  const report = [
    `echo "WS=[$(ls -A ${q(ws)} | tr "\\n" " ")]"`,
    'echo "LANES=[$(ls -A ../.. | tr "\\n" " ")]"',
    `echo "B=[$(cat ../../b/repo/f ${q(join(ws, 'lanes', 'b', 'repo', 'f'))} 2>/dev/null)]"`,
    `echo "PRIV=[$(ls -A ${q(priv)})]"`,
    'echo "OWN=[$(cat f)]"',
    'echo mine > f2 && echo OWN-WRITTEN',
    `{ echo x > ${q(join(ws, 'planted'))}; } 2>/dev/null && echo WS-WRITTEN`,
    `{ echo x > ${q(join(priv, 'planted'))}; } 2>/dev/null && echo PRIV-WRITTEN`,
    `umount ${q(priv)} 2>/dev/null && echo UNMOUNTED`,
    // In a user and mount namespace of its own, where it holds every capability: the masks came from a more
    // privileged namespace and are locked to what they cover.
    `echo "NESTED=[$(unshare --user --map-root-user --mount sh -c 'echo in; umount ${q(priv)} || umount -l ${q(priv)}; mount -o remount,bind,rw ${q(ws)}; ls -A ${q(priv)}; echo x > ${q(join(ws, 'planted'))} && echo WS-WRITTEN' 2>/dev/null)]"`,
    'true',
  ].join('; ');
  return { ws, own, priv, runner, opts: { hide: [ws, priv], keep: [own] }, report };
}

function expectOnlyOwnLane(tail: string, l: ReturnType<typeof laneLayout>): void {
  expect(tail).toContain('WS=[lanes ]');
  expect(tail).toContain('LANES=[a ]');
  expect(tail).toContain('B=[]');
  expect(tail).toContain('PRIV=[]');
  expect(tail).toContain('OWN=[A]');
  expect(tail).toContain('OWN-WRITTEN');
  expect(tail).not.toContain('WS-WRITTEN');
  expect(tail).not.toContain('PRIV-WRITTEN');
  expect(tail).not.toContain('UNMOUNTED');
  // Where the command may make namespaces of its own (a user namespace needs no privilege): it did, and got nothing.
  expect(tail).toMatch(/NESTED=\[(in)?\]/);
  expect(readFileSync(join(l.own, 'repo', 'f2'), 'utf8')).toBe('mine\n');
  expect(existsSync(join(l.ws, 'planted'))).toBe(false);
  expect(existsSync(join(l.priv, 'planted'))).toBe(false);
}

async function inside(script: string, masks: string[] = [], opts: { cwd?: string; hide?: string[]; keep?: string[]; env?: Record<string, string> } = {}) {
  const sandbox = await detectSandbox({ masks });
  await sandbox.prepare({ cwd: opts.cwd ?? dir, keep: opts.keep });
  const r = await runCommand(script, {
    cwd: opts.cwd ?? dir,
    env: { PATH: process.env.PATH!, SECRET_OF_NOBODY: 'x', ...opts.env },
    timeoutMs: 20_000,
    logFile: join(dir, 'log'),
    wrap: (file, args, env, { cwd }) => sandbox.wrap(file, args, env, { cwd, hide: opts.hide, keep: opts.keep }),
  });
  return { sandbox, r };
}

/**
 * Runs `body` (a module body that may use `sandbox` and `runCommand` from the sources, and ends by printing one
 * JSON line) as the unprivileged user nobody, and returns that line parsed.
 */
function asNobody(name: string, body: string, node = process.execPath): Record<string, unknown> & { tail: string; code: number | null } {
  const probe = join(dir, `${name}.mjs`);
  const sandboxUrl = new URL('../../src/workspace/sandbox.ts', import.meta.url).href;
  const execUrl = new URL('../../src/workspace/exec.ts', import.meta.url).href;
  writeFileSync(probe, `import * as sandbox from ${JSON.stringify(sandboxUrl)};\nimport { runCommand } from ${JSON.stringify(execUrl)};\n${body}`);
  const tsx = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
  const p = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', node, '--import', tsx, probe], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir },
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(p.status, p.stderr).toBe(0);
  return JSON.parse(p.stdout.trim().split('\n').at(-1)!);
}

describe('cgroupFolders', () => {
  it("names Fleet's cgroups and every folder above them to their hierarchy's root: v1, v2, and v2 beside v1", () => {
    // The sandbox hides /sys/fs/cgroup where one of these is the command's user's to write (a delegated cgroup).
    expect(cgroupFolders('0::/user.slice/user-1000.slice/user@1000.service/app.slice/fleet.scope\n', '/cg').sort()).toEqual(
      [
        '/cg',
        '/cg/user.slice',
        '/cg/user.slice/user-1000.slice',
        '/cg/user.slice/user-1000.slice/user@1000.service',
        '/cg/user.slice/user-1000.slice/user@1000.service/app.slice',
        '/cg/user.slice/user-1000.slice/user@1000.service/app.slice/fleet.scope',
        '/cg/unified',
        '/cg/unified/user.slice',
        '/cg/unified/user.slice/user-1000.slice',
        '/cg/unified/user.slice/user-1000.slice/user@1000.service',
        '/cg/unified/user.slice/user-1000.slice/user@1000.service/app.slice',
        '/cg/unified/user.slice/user-1000.slice/user@1000.service/app.slice/fleet.scope',
      ].sort(),
    );
    expect(cgroupFolders('6:freezer:/fleet\n9:name=systemd:/\n2:cpu,cpuacct:/a/b\n', '/cg').sort()).toEqual(
      ['/cg/cpu,cpuacct', '/cg/cpu,cpuacct/a', '/cg/cpu,cpuacct/a/b', '/cg/freezer', '/cg/freezer/fleet', '/cg/systemd'].sort(),
    );
    // A path that climbs out of its hierarchy names nothing.
    expect(cgroupFolders('6:freezer:/../../etc\n', '/cg')).toEqual([]);
  });
});

describe('the sandbox', () => {
  it.runIf(isRoot)("as root: the directive is the first child of its own namespace's init, sees no other process and holds no capability", async () => {
    const { sandbox, r } = await inside(
      `echo "pid=$$ ppid=$PPID"; ls /proc | grep -c '^[0-9]' ; test -e /proc/${process.pid} && echo SEES-FLEET; grep CapEff /proc/self/status; mount -t tmpfs x /mnt 2>/dev/null && echo MOUNTED; true`,
    );
    expect(sandbox).toMatchObject({ kind: 'pid-namespace', detail: 'unshare as root, each lane as a user of its own' });
    expect(r.exitCode, r.tail).toBe(0);
    // The directive is init's own child (what mount -a started before it took the pids below).
    expect(r.tail).toMatch(/ppid=1\n/);
    expect(r.tail).not.toContain('SEES-FLEET');
    expect(r.tail).toMatch(/CapEff:\s+0+\n/);
    expect(r.tail).not.toContain('MOUNTED');
  });

  it.runIf(isRoot)("as root: the command runs as its lane's own user, in a HOME and TMPDIR of its own, and writes no program of root's", async () => {
    const programs = join(dir, 'programs');
    mkdirSync(programs, { mode: 0o755 });
    writeFileSync(join(programs, 'git'), '#!/bin/sh\n', { mode: 0o755 });
    // Root's HOME and a TMPDIR nobody may not write, both holding what root keeps there.
    const home = join(dir, 'root-home');
    const tmp = join(dir, 'root-tmp');
    for (const d of [home, tmp]) {
      mkdirSync(d, { mode: 0o700 });
      writeFileSync(join(d, 'kept'), 'root');
    }
    const { r } = await inside(
      [
        'echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"',
        `echo evil > ${join(programs, 'git')} 2>/dev/null && echo WROTE-PROGRAM`,
        `touch ${join(programs, 'new')} 2>/dev/null && echo ADDED-PROGRAM`,
        'echo "home=[$(ls -A "$HOME")] tmp=[$(ls -A "$TMPDIR")]"',
        'echo mine > "$HOME/mine" && echo mine > "$TMPDIR/mine" && echo WROTE-OWN',
        'true',
      ].join('; '),
      [],
      { env: { HOME: home, TMPDIR: tmp } },
    );
    expect(r.exitCode, r.tail).toBe(0);
    // Without a kept folder, the lane is its working folder: the user is the one laneUser gives it, nobody's on this machine.
    const { uid } = laneUser(dir);
    expect(uid).toBeGreaterThanOrEqual(2 ** 30);
    expect(r.tail).toContain(`uid=${uid} gid=${uid} groups=${uid}`);
    expect(r.tail).not.toContain('WROTE-PROGRAM');
    expect(r.tail).not.toContain('ADDED-PROGRAM');
    expect(r.tail).toContain('home=[] tmp=[]');
    expect(r.tail).toContain('WROTE-OWN');
    expect(readFileSync(join(programs, 'git'), 'utf8')).toBe('#!/bin/sh\n');
    for (const d of [home, tmp]) expect(readdirSync(d)).toEqual(['kept']);
  });

  it.runIf(isRoot)(
    "as root: a lane's folder is made its user's and closed to others, but never a file through a link or a file with a second name",
    async () => {
      const lane = join(dir, 'lane');
      const victim = join(dir, 'root-file');
      writeFileSync(victim, 'root');
      mkdirSync(join(lane, 'repo', '.git'), { recursive: true });
      writeFileSync(join(lane, 'repo', 'README.md'), '# x');
      writeFileSync(join(lane, 'prompt-1.md'), 'prompt');
      symlinkSync(victim, join(lane, 'repo', 'link'));
      linkSync(victim, join(lane, 'repo', 'hard'));
      const who = laneUser(lane);
      await makeOwn(lane, who);
      const owner = (p: string) => lstatSync(p).uid;
      for (const p of [lane, join(lane, 'repo'), join(lane, 'repo', '.git'), join(lane, 'repo', 'README.md'), join(lane, 'prompt-1.md')])
        expect(owner(p), p).toBe(who.uid);
      // Closed to every other user: another lane's process handed a descriptor of it can do nothing with it.
      expect(lstatSync(lane).mode & 0o777).toBe(0o700);
      expect(owner(victim)).toBe(0);
      expect(owner(join(lane, 'repo', 'link'))).toBe(0);
    },
  );

  it.runIf(isRoot)("hides the runner's command files under an empty folder the directive cannot unmount", async () => {
    const files = join(dir, '_runner_file_commands');
    mkdirSync(files);
    writeFileSync(join(files, 'set_env_1234'), '');
    const { r } = await inside(
      `echo "LIST:[$(ls -A ${files})]"; echo 'NODE_OPTIONS=--require /tmp/evil.js' >> ${files}/set_env_1234 || echo DENIED; umount ${files} 2>/dev/null && echo UNMOUNTED; true`,
      [files],
    );
    expect(r.exitCode, r.tail).toBe(0);
    expect(r.tail).toContain('LIST:[]');
    expect(r.tail).toContain('DENIED');
    expect(r.tail).not.toContain('UNMOUNTED');
    expect(readFileSync(join(files, 'set_env_1234'), 'utf8')).toBe('');
  });

  it.runIf(isRoot)("as root: a lane's command sees of the workspace only its own lane's folder, and nothing of Fleet's private folder", async () => {
    const l = laneLayout();
    // With the runner's command files masked too, as on a runner: every mask in the one table.
    const { r } = await inside(`${l.report}; echo "RUNNER=[$(ls -A "${l.runner}")]"`, [l.runner], { cwd: join(l.own, 'repo'), ...l.opts });
    expect(r.exitCode, r.tail).toBe(0);
    expectOnlyOwnLane(r.tail, l);
    expect(r.tail).toContain('RUNNER=[]');
  });

  it.runIf(isRoot)('a folder to keep that is gone, or a working folder that is hidden, stops the command before it runs', async () => {
    const l = laneLayout();
    const gone = await inside('echo RAN', [], { cwd: join(l.own, 'repo'), hide: [l.ws], keep: [join(l.ws, 'lanes', 'gone')] });
    expect(gone.r.exitCode).toBe(125);
    expect(gone.r.tail).not.toContain('RAN');
    const hidden = await inside('echo RAN', [], { cwd: join(l.ws, 'lanes', 'b', 'repo'), ...l.opts });
    expect(hidden.r.exitCode).toBe(125);
    expect(hidden.r.tail).not.toContain('RAN');
  });

  it.runIf(isRoot)('the probe refuses a way in whose init isolates processes but hides no folder', async () => {
    const real = strategies({ unshare: '/usr/bin/unshare', setpriv: '/usr/bin/setpriv', sudo: null, uid: 0, gid: 0, masks: [] })[0]!;
    expect(await works(real, [])).toBe(true);
    // The same namespaces, under an init (PID 1, named as Fleet's) that skips its mount arguments and runs the command.
    const init = real.prefix.indexOf('fleet-sandbox') - 1;
    const blind = { ...real, prefix: [...real.prefix.slice(0, init), 'while [ "$1" != -- ]; do shift; done; shift; "$@"', 'fleet-sandbox'] };
    expect(await works(blind, [])).toBe(false);
  });

  it.runIf(isRoot)('a process the directive leaves in a session of its own dies with it', async () => {
    const marker = join(dir, 'later');
    const { r } = await inside(`setsid sh -c 'sleep 1; echo alive > ${marker}' </dev/null >/dev/null 2>&1 & echo started`);
    expect(r.exitCode).toBe(0);
    await new Promise((res) => setTimeout(res, 1500));
    expect(existsSync(marker)).toBe(false);
  });

  it.runIf(isRoot)("as an unprivileged user, through a user namespace: the same isolation, and files written stay the user's", () => {
    const l = laneLayout();
    // A real unprivileged process: this very check, run as nobody.
    const out = asNobody(
      'probe-userns',
      `const s = await sandbox.detectSandbox({ masks: [] });
const r = await runCommand('echo "pid=$$"; test -e /proc/' + process.ppid + ' && echo SEES-PARENT; id -u; touch written', { cwd: ${JSON.stringify(dir)}, env: { PATH: process.env.PATH }, timeoutMs: 20000, logFile: ${JSON.stringify(join(dir, 'log-nobody'))}, wrap: s.wrap });
const lanes = await runCommand(${JSON.stringify(l.report)}, { cwd: ${JSON.stringify(join(l.own, 'repo'))}, env: { PATH: process.env.PATH }, timeoutMs: 20000, logFile: ${JSON.stringify(join(dir, 'log-nobody-lanes'))}, wrap: (f, a, e, o) => s.wrap(f, a, e, { ...o, ...${JSON.stringify(l.opts)} }) });
console.log(JSON.stringify({ kind: s.kind, detail: s.detail, tail: r.tail, code: r.exitCode, lanes: lanes.tail, lanesCode: lanes.exitCode }));`,
    );
    expect(out.lanesCode, String(out.lanes)).toBe(0);
    expectOnlyOwnLane(String(out.lanes), l);
    expect(out).toMatchObject({ kind: 'pid-namespace', detail: 'unshare in a user namespace', code: 0 });
    expect(out.tail).toMatch(/pid=[23]\n/);
    expect(out.tail).not.toContain('SEES-PARENT');
    expect(out.tail).toContain('65534');
    expect(spawnSync('stat', ['-c', '%u', join(dir, 'written')], { encoding: 'utf8' }).stdout.trim()).toBe('65534');
  });

  /**
   * A folder the command's user may write, above its masked workspace (a fleet file's folder, its `_workspace`): moved
   * aside, masks and all, and made anew, it would give Fleet, which goes on by path, a workspace of the command's
   * making (issue 28, second pass: one lane pushed a repository of its choosing as another's). Each such folder is
   * mounted onto itself, and a mount point cannot be renamed.
   */
  function renameLayout(): { opts: { hide: string[]; keep: string[] }; script: string; fleetDir: string; ws: string } {
    const fleetDir = join(dir, 'fleets');
    const ws = join(fleetDir, '_workspace', 'fleet', 'f-1');
    const own = join(ws, 'lanes', 'a');
    mkdirSync(join(own, 'repo'), { recursive: true });
    for (const d of [fleetDir, join(fleetDir, '_workspace'), join(fleetDir, '_workspace', 'fleet'), ws, join(ws, 'lanes'), own, join(own, 'repo')])
      chmodSync(d, 0o777);
    const q = (p: string) => `"${p}"`;
    // rename(2) itself: mv would fall back to copying and removing, which removes nothing it could not remove anyway.
    const mv = (from: string, to: string) => `perl -e 'rename($ARGV[0], $ARGV[1]) or exit 1' ${q(from)} ${q(to)}`;
    const script = [
      `${mv(join(fleetDir, '_workspace'), join(fleetDir, '_moved'))} && echo MOVED-WORKSPACES`,
      `${mv(join(fleetDir, '_workspace', 'fleet'), join(fleetDir, '_moved-fleet'))} && echo MOVED-FLEET`,
      `${mv(join(fleetDir, '_workspace', 'fleet'), join(fleetDir, '_workspace', 'fleet-moved'))} && echo MOVED-FLEET-BESIDE`,
      `${mv(join(ws, 'lanes'), join(ws, 'lanes-moved'))} && echo MOVED-LANES`,
      `${mv(own, `${own}-moved`)} && echo MOVED-OWN`,
      'echo mine > f && echo OWN-WRITTEN',
      'true',
    ].join('; ');
    return { opts: { hide: [ws], keep: [own] }, script, fleetDir, ws };
  }

  it.runIf(isRoot)('as root: a command cannot rename a folder above its masked workspace, and still writes its own', async () => {
    const l = renameLayout();
    const { r } = await inside(l.script, [], { cwd: join(l.opts.keep[0]!, 'repo'), ...l.opts });
    expect(r.exitCode, r.tail).toBe(0);
    expect(r.tail, r.tail).not.toMatch(/MOVED/);
    expect(r.tail).toContain('OWN-WRITTEN');
    expect(readdirSync(l.fleetDir)).toEqual(['_workspace']);
    expect(existsSync(join(l.ws, 'lanes', 'a', 'repo'))).toBe(true);
  });

  it.runIf(isRoot)('through a user namespace, as the same user as Fleet: the same', () => {
    const l = renameLayout();
    const out = asNobody(
      'probe-rename',
      `const s = await sandbox.detectSandbox({ masks: [] });
const r = await runCommand(${JSON.stringify(l.script)}, { cwd: ${JSON.stringify(join(l.opts.keep[0]!, 'repo'))}, env: { PATH: process.env.PATH }, timeoutMs: 20000, logFile: ${JSON.stringify(join(dir, 'log-rename'))}, wrap: (f, a, e, o) => s.wrap(f, a, e, { ...o, ...${JSON.stringify(l.opts)} }) });
console.log(JSON.stringify({ kind: s.kind, detail: s.detail, tail: r.tail, code: r.exitCode }));`,
    );
    expect(out).toMatchObject({ detail: 'unshare in a user namespace', code: 0 });
    expect(out.tail).not.toMatch(/MOVED/);
    expect(out.tail).toContain('OWN-WRITTEN');
    expect(readdirSync(l.fleetDir)).toEqual(['_workspace']);
  });

  it.runIf(isRoot)('as root under a umask of 027 or 077: still isolates (the way made inside a mask stays passable)', () => {
    // Issue 28, second pass: the mounts made the way down to the lane's folder with Fleet's umask, which the lane's
    // user could not pass: the probe failed, and with isolation: auto every directive ran as root, unisolated.
    const probe = join(dir, 'umask-probe.mjs');
    const sandboxUrl = new URL('../../src/workspace/sandbox.ts', import.meta.url).href;
    writeFileSync(probe, `import { detectSandbox } from ${JSON.stringify(sandboxUrl)};\nconst s = await detectSandbox({ masks: [] });\nconsole.log(s.kind);\n`);
    const tsx = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
    for (const umask of ['027', '077']) {
      const p = spawnSync('sh', ['-c', `umask ${umask}; exec "$0" --import "$1" "$2"`, process.execPath, tsx, probe], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(p.stdout.trim(), `${umask}: ${p.stderr}`).toBe('pid-namespace');
    }
  });

  it('pins the folders above a view that its user could rename, and no other', () => {
    const fleetDir = join(dir, 'fleets');
    const ws = join(fleetDir, '_workspace', 'fleet', 'f-1');
    mkdirSync(join(ws, 'lanes', 'a'), { recursive: true });
    chmodSync(fleetDir, 0o755);
    const me = { uid: process.getuid!(), gid: process.getgid!() };
    const other = { uid: 4242, gid: 4242 };
    const layers = [
      { kind: 'hide' as const, path: ws },
      { kind: 'keep' as const, path: join(ws, 'lanes', 'a') },
    ];
    // Fleet's user owns every folder from the test's folder down: each one in a folder it may write is pinned, and
    // nothing off the way to the view.
    const mine = pinsFor(layers, me).map((p) => p.path);
    expect(mine).toEqual(expect.arrayContaining([join(ws, 'lanes'), ws, join(fleetDir, '_workspace', 'fleet'), join(fleetDir, '_workspace'), fleetDir, dir]));
    for (const p of mine) expect(join(ws, 'lanes', 'a').startsWith(`${p}/`), p).toBe(true);
    // Another user writes none of the folders below fleetDir (the test's own folders are open to all, as is /tmp).
    for (const p of pinsFor(layers, other).map((l) => l.path)) expect([fleetDir, dir, tmpdir()], p).toContain(p);
    // Planned: pins before the mask, none inside it.
    const plan = planLayers([...layers, ...pinsFor(layers, me)]).map(({ layer }) => `${layer.kind} ${layer.path}`);
    expect(plan).toContain(`pin ${fleetDir}`);
    expect(plan).not.toContain(`pin ${join(ws, 'lanes')}`);
    expect(plan.indexOf(`pin ${fleetDir}`)).toBeLessThan(plan.indexOf(`hide ${ws}`));
    // Each pin is the folder bound onto itself, with what is mounted below it.
    const args = initArgs(pinsFor(layers, me), dir);
    expect(readFileSync(args[args.indexOf('-t') + 1]!, 'utf8')).toContain(`${fleetDir} ${fleetDir} none rbind 0 0`);
  });

  /**
   * GitHub's hosted runners: an unprivileged user whom AppArmor refuses user
   * namespaces, with passwordless sudo. The sudo way in, run as an unprivileged
   * user with a sudoers entry like the runner's; sudo's secure_path must not
   * change the directive's PATH. Needs sudo installed (CI installs it).
   */
  it.runIf(isRoot && existsSync('/usr/bin/sudo'))(
    "through sudo, as on GitHub's runners: the same isolation, back as the user, with the user's PATH and HOME",
    () => {
      const sudoers = '/etc/sudoers.d/zz-fleet-sandbox-test';
      writeFileSync(sudoers, 'nobody ALL=(ALL:ALL) NOPASSWD: ALL\n', { mode: 0o440 });
      const l = laneLayout();
      try {
        const out = asNobody(
          'probe-sudo',
          `const way = sandbox.strategies({ unshare: '/usr/bin/unshare', setpriv: '/usr/bin/setpriv', sudo: '/usr/bin/sudo', uid: 65534, gid: 65534, masks: [] }).find((s) => s.via === 'sudo unshare');
const s = sandbox.sandboxOf(way);
const probed = await sandbox.works(way, []);
const r = await runCommand('echo "pid=$$"; sudo -n umount /proc 2>/dev/null && echo UNMOUNTED-PROC; sudo -n true 2>/dev/null && echo ROOT-AGAIN; test -e /proc/' + process.pid + ' && echo SEES-FLEET; echo "uid=$(id -u)"; echo "groups=$(id -G)"; echo "path=$PATH"; echo "home=$HOME"; grep CapEff /proc/self/status; touch written', { cwd: ${JSON.stringify(dir)}, env: { PATH: '/opt/fleet-test/bin:' + process.env.PATH, HOME: ${JSON.stringify(dir)} }, timeoutMs: 20000, logFile: ${JSON.stringify(join(dir, 'log-sudo'))}, wrap: s.wrap });
const lanes = await runCommand(${JSON.stringify(l.report)}, { cwd: ${JSON.stringify(join(l.own, 'repo'))}, env: { PATH: process.env.PATH }, timeoutMs: 20000, logFile: ${JSON.stringify(join(dir, 'log-sudo-lanes'))}, wrap: (f, a, e, o) => s.wrap(f, a, e, { ...o, ...${JSON.stringify(l.opts)} }) });
console.log(JSON.stringify({ probed, tail: r.tail, code: r.exitCode, lanes: lanes.tail, lanesCode: lanes.exitCode }));`,
        );
        // The probe Fleet decides by takes this way in (on the runners, where it is the only one).
        expect(out.probed).toBe(true);
        expect(out.lanesCode, String(out.lanes)).toBe(0);
        expectOnlyOwnLane(String(out.lanes), l);
        expect(out.code, out.tail).toBe(0);
        expect(out.tail).toMatch(/pid=[23]\n/);
        expect(out.tail).not.toContain('SEES-FLEET');
        // The runner user's passwordless sudo does not make the directive root again (it would unmount its /proc).
        expect(out.tail).not.toContain('UNMOUNTED-PROC');
        expect(out.tail).not.toContain('ROOT-AGAIN');
        expect(out.tail).toContain('groups=65534\n');
        expect(out.tail).toContain('uid=65534');
        expect(out.tail).toContain(`path=/opt/fleet-test/bin:${process.env.PATH}`);
        expect(out.tail).toContain(`home=${dir}`);
        expect(out.tail).toMatch(/CapEff:\s+0+\n/);
        expect(spawnSync('stat', ['-c', '%u', join(dir, 'written')], { encoding: 'utf8' }).stdout.trim()).toBe('65534');
      } finally {
        rmSync(sudoers, { force: true });
      }
    },
  );

  it.runIf(isRoot)("as a user who owns the Node Fleet runs on (nvm, a runner's own node): the command cannot replace it", () => {
    // Later steps of a runner's job run that node too, with the job's tokens in their environment.
    const prefix = join(dir, 'node');
    mkdirSync(join(prefix, 'bin'), { recursive: true });
    copyFileSync(process.execPath, join(prefix, 'bin', 'node'));
    chmodSync(join(prefix, 'bin', 'node'), 0o755);
    spawnSync('chown', ['-R', '65534:65534', prefix]);
    const node = join(prefix, 'bin', 'node');
    const out = asNobody(
      'probe-node',
      `const s = await sandbox.detectSandbox({ masks: [] });
const r = await runCommand('echo evil >> ${node} || echo REFUSED; touch ${join(prefix, 'bin', 'npx')} || echo REFUSED-NEW; true', { cwd: ${JSON.stringify(dir)}, env: { PATH: process.env.PATH }, timeoutMs: 20000, logFile: ${JSON.stringify(join(dir, 'log-node'))}, wrap: s.wrap });
console.log(JSON.stringify({ detail: s.detail, tail: r.tail, code: r.exitCode }));`,
      node,
    );
    expect(out).toMatchObject({ detail: 'unshare in a user namespace', code: 0 });
    expect(out.tail).toMatch(/Read-only file system/);
    expect(out.tail).toContain('REFUSED\n');
    expect(out.tail).toContain('REFUSED-NEW');
    expect(readFileSync(node).equals(readFileSync(process.execPath))).toBe(true);
  });

  it('plans the mounts of a view: shallower first, nothing made twice, a kept folder only where it would not be seen', () => {
    const plan = (layers: Parameters<typeof planLayers>[0]) =>
      planLayers(layers).map(({ layer, mkdir, holds }) => `${layer.kind} ${layer.path}${mkdir ? ' mkdir' : ''}${holds ? ' holds' : ''}`);
    expect(
      plan([
        { kind: 'keep', path: '/w/ws/lanes/a' },
        { kind: 'hide', path: '/w/ws' },
        { kind: 'hide', path: '/w' },
        { kind: 'ro', path: '/w/fleet' },
        { kind: 'ro', path: '/usr' },
        { kind: 'ro', path: '/usr/lib/git-core' },
        { kind: 'keep', path: '/srv/shown' },
        { kind: 'hide', path: '/root' },
        { kind: 'keep', path: '/root' },
        { kind: 'hide', path: '/home/x' },
        { kind: 'keep', path: '/home/x/fleets' },
        { kind: 'hide', path: '/home/x/fleets/ws' },
        { kind: 'keep', path: '/home/x/fleets/ws/lanes/b' },
      ]),
    ).toEqual([
      // A mask with something mounted inside stays writable until it is (then remounted read-only); a mask or a
      // read-only folder inside a mask adds nothing; a kept folder nothing hides is seen anyway.
      'ro /usr',
      'hide /w holds',
      // At one path, a kept folder over a mask: as if neither were there.
      'hide /home/x holds',
      'keep /home/x/fleets mkdir',
      // A mask inside a kept folder inside a mask: the kept folder's own content, hidden again.
      'hide /home/x/fleets/ws holds',
      'keep /w/ws/lanes/a mkdir',
      'keep /home/x/fleets/ws/lanes/b mkdir',
    ]);
    // At one path: read-only over writable; a kept folder inside a read-only one is mounted back writable.
    expect(
      plan([
        { kind: 'keep', path: '/opt/fleet' },
        { kind: 'ro', path: '/opt/fleet' },
        { kind: 'keep', path: '/opt/fleet/ws/lanes/a' },
      ]),
    ).toEqual(['ro /opt/fleet', 'keep /opt/fleet/ws/lanes/a']);
  });

  it('isolation: off runs commands as they are, and says so', async () => {
    expect(await sandboxFor('off')).toMatchObject({ kind: 'none', detail: 'turned off in the fleet file (isolation: off)' });
  });

  it("finds the folders of the runner's command files from the environment, those that exist only", () => {
    const files = join(dir, '_runner_file_commands');
    mkdirSync(files);
    expect(
      runnerCommandFolders({
        GITHUB_ENV: join(files, 'set_env_1'),
        GITHUB_OUTPUT: join(files, 'set_output_1'),
        GITHUB_PATH: '/nowhere/add_path_1',
        GITHUB_STATE: 'relative/x',
      }),
    ).toEqual([files]);
  });
});
