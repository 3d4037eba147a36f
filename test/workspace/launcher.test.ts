/**
 * The git launcher (src/workspace/launcher.ts): long-lived shells that start Fleet's git instead of a fork of Node.
 * What it must keep from a direct spawn: arguments and environment exactly as given (no shell ever interprets
 * them), a process group per command, per-call credentials never in an argv nor in a shell's own environment,
 * clear errors for a missing folder or program, and no shell left behind.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { GitLauncher, gitLauncher } from '../../src/workspace/launcher.js';
import { privateTmp } from '../../src/workspace/private-tmp.js';
import { Git } from '../../src/workspace/git/git.js';
import { GitOutputTooLarge } from '../../src/workspace/git/run.js';
import { killGroup } from '../../src/workspace/processes.js';
import { tsxLoader } from '../integration/helpers.js';
import { spawnSync } from 'node:child_process';

const { run: git } = new Git();

const tmp = mkdtempSync(path.join(os.tmpdir(), 'fleet-launcher-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let launcher: GitLauncher | undefined;
afterEach(async () => {
  await launcher?.closeAndWait();
  launcher = undefined;
});

const PATH = process.env.PATH ?? '/usr/bin:/bin';

/** Every process whose parent is this one or one of its descendants, with its command line and environment. */
function descendants(): { pid: number; cmdline: string; environ: string }[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone already
    }
  }
  const mine = new Set([process.pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of parents) if (mine.has(ppid) && !mine.has(pid)) mine.add(pid), (grew = true);
  }
  mine.delete(process.pid);
  const out = [];
  for (const pid of mine) {
    try {
      out.push({ pid, cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8'), environ: readFileSync(`/proc/${pid}/environ`, 'utf8') });
    } catch {
      // gone already
    }
  }
  return out;
}

describe.skipIf(process.platform !== 'linux' || !gitLauncher())('git launcher', () => {
  it('passes arguments and environment values through untouched: quotes, $(…), backticks, newlines, globs', async () => {
    launcher = new GitLauncher();
    const hostile = [`it's`, `"q"`, '$(touch pwned)', '`touch pwned2`', 'a\nb', '*', '; touch pwned3', '$HOME', '\\', ''];
    const out = await launcher.launch({ file: 'printf', args: ['%s|', ...hostile], cwd: tmp, env: { PATH } }).result;
    expect(out.status).toBe(0);
    expect(out.stdout.toString('utf8')).toBe(hostile.map((h) => `${h}|`).join(''));
    const env = await launcher.launch({ file: 'env', args: [], cwd: tmp, env: { PATH, FLEET_V: hostile.join(' ') } }).result;
    expect(env.stdout.toString('utf8')).toContain(`FLEET_V=${hostile.join(' ')}\n`);
    for (const f of ['pwned', 'pwned2', 'pwned3']) expect(existsSync(path.join(tmp, f)), f).toBe(false);
  });

  it('runs each command in the folder given, with exactly the environment given (unset what the shell started with)', async () => {
    launcher = new GitLauncher();
    const first = await launcher.launch({
      file: 'env',
      args: [],
      cwd: tmp,
      env: { PATH, KEEP: '1', DROP: '1' },
      sharedEnv: () => ({ PATH, KEEP: '1', DROP: '1' }),
    }).result;
    expect(first.stdout.toString('utf8')).toMatch(/^DROP=1$/m);
    // The same shell, a request without DROP: it must not leak from the shell's own environment.
    const second = await launcher.launch({ file: 'sh', args: ['-c', 'pwd; env'], cwd: path.join(tmp), env: { PATH, KEEP: '2' } }).result;
    const text = second.stdout.toString('utf8');
    expect(text.split('\n')[0]).toBe(tmp);
    expect(text).toMatch(/^KEEP=2$/m);
    expect(text).not.toMatch(/^DROP=/m);
  });

  it('never puts a per-call variable (a credential header) in any argv or in a shell’s own environment', async () => {
    launcher = new GitLauncher();
    const secret = 'AUTHORIZATION: basic c2VjcmV0LWxhdW5jaGVyLXRva2Vu';
    const running = launcher.launch({ file: 'sleep', args: ['1'], cwd: tmp, env: { PATH, GIT_CONFIG_VALUE_0: secret }, sharedEnv: () => ({ PATH }) });
    await running.pgid;
    // The pid is known as soon as the shell has forked; wait until that fork has become `sleep`.
    let seen = descendants();
    while (!seen.some((p) => p.cmdline.startsWith('sleep\0'))) {
      await new Promise((r) => setTimeout(r, 10));
      seen = descendants();
    }
    // The command itself has it (as git has, from a direct spawn too); nothing else does, and no argv anywhere.
    const holders = seen.filter((p) => p.environ.includes(secret));
    expect(holders.map((p) => p.cmdline.split('\0')[0])).toEqual(['sleep']);
    for (const p of seen) expect(p.cmdline, String(p.pid)).not.toContain('c2VjcmV0');
    // Nor in a file: the shells' folders hold only the commands' output.
    const files = launcher.folders().flatMap((d) => readdirSync(d).map((n) => path.join(d, n)));
    for (const f of files) expect(readFileSync(f, 'utf8'), f).not.toContain('c2VjcmV0');
    await running.result;
    for (const p of descendants()) expect(p.environ, p.cmdline).not.toContain('c2VjcmV0');
  });

  it('starts each command as the leader of a process group of its own', async () => {
    launcher = new GitLauncher();
    const l = launcher.launch({ file: 'sh', args: ['-c', 'cut -d " " -f 5 /proc/$$/stat'], cwd: tmp, env: { PATH } });
    const pgid = await l.pgid;
    const r = await l.result;
    expect(Number(r.stdout.toString('utf8').trim())).toBe(pgid);
  });

  it('says when the folder or the program does not exist', async () => {
    launcher = new GitLauncher();
    const noDir = await launcher.launch({ file: 'git', args: ['status'], cwd: path.join(tmp, 'nope'), env: { PATH } }).result;
    expect(noDir).toMatchObject({ status: -1, startError: `${path.join(tmp, 'nope')} does not exist` });
    const noProgram = await launcher.launch({ file: 'git', args: ['status'], cwd: tmp, env: { PATH: path.join(tmp, 'empty') } }).result;
    expect(noProgram).toMatchObject({ status: -1, startError: 'git is not installed or not on PATH' });
  });

  it('fails the command of a shell that dies, and starts a new shell for the next', async () => {
    launcher = new GitLauncher();
    const l = launcher.launch({ file: 'sleep', args: ['5'], cwd: tmp, env: { PATH } });
    const pgid = (await l.pgid)!;
    const shell = descendants().find((p) => p.cmdline.startsWith('/bin/sh\0-s'))!;
    process.kill(shell.pid, 'SIGKILL');
    killGroup(pgid, 'SIGKILL');
    expect(await l.result).toMatchObject({ status: -1, startError: 'the shell that starts git ended unexpectedly' });
    const next = await launcher.launch({ file: 'printf', args: ['ok'], cwd: tmp, env: { PATH } }).result;
    expect(next).toMatchObject({ status: 0 });
    expect(next.stdout.toString('utf8')).toBe('ok');
  });

  it('drops a shell that died while idle and runs the next command in a new one', async () => {
    launcher = new GitLauncher();
    await launcher.launch({ file: 'true', args: [], cwd: tmp, env: { PATH } }).result;
    const idle = descendants().find((p) => p.cmdline.startsWith('/bin/sh\0-s'))!;
    process.kill(idle.pid, 'SIGKILL');
    while (descendants().some((p) => p.pid === idle.pid && p.cmdline !== '')) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 50)); // Node learns of the exit on its next turn
    const next = await launcher.launch({ file: 'printf', args: ['ok'], cwd: tmp, env: { PATH } }).result;
    expect(next).toMatchObject({ status: 0 });
    expect(next.stdout.toString('utf8')).toBe('ok');
  });

  it('keeps its shells out of Fleet’s process group (a terminal’s Ctrl-C does not end them) and refuses a NUL byte', async () => {
    launcher = new GitLauncher();
    await launcher.launch({ file: 'true', args: [], cwd: tmp, env: { PATH } }).result;
    const shell = descendants().find((p) => p.cmdline.startsWith('/bin/sh\0-s'))!;
    const pgidOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]);
    expect(pgidOf(shell.pid)).not.toBe(pgidOf(process.pid));
    expect(() => launcher!.launch({ file: 'printf', args: ['a\0b'], cwd: tmp, env: { PATH } })).toThrow(/NUL byte/);
  });

  it('removes each shell’s output folder when the shell ends; Fleet’s private folder that holds them all stays while Fleet runs', async () => {
    launcher = new GitLauncher();
    await Promise.all([1, 2].map(() => launcher!.launch({ file: 'printf', args: ['x'], cwd: tmp, env: { PATH } }).result));
    const made = launcher.folders();
    expect(made.length).toBeGreaterThanOrEqual(1);
    for (const f of made) expect(existsSync(f), f).toBe(true);
    // One parent for every shell, private to Fleet's user: the one folder an isolated directive gets hidden.
    for (const f of made) expect(path.dirname(f)).toBe(privateTmp());
    expect(statSync(privateTmp()).mode & 0o777).toBe(0o700);
    await launcher.closeAndWait();
    launcher = undefined;
    for (const f of made) expect(existsSync(f), f).toBe(false);
    // A mask on it in a running directive's sandbox would go with it, and a folder made again there would show.
    expect(existsSync(privateTmp())).toBe(true);
  });

  it('removes the output folder even when Fleet is killed outright (SIGKILL, no exit event)', async () => {
    const script = [
      `import { GitLauncher } from ${JSON.stringify(path.resolve('src/workspace/launcher.ts'))};`,
      'const l = new GitLauncher();',
      `await l.launch({ file: 'true', args: [], cwd: ${JSON.stringify(tmp)}, env: { PATH: ${JSON.stringify(PATH)} } }).result;`,
      'process.stdout.write(JSON.stringify(l.folders()) + "\\n");',
      "process.kill(process.pid, 'SIGKILL');",
    ].join('\n');
    const r = spawnSync(process.execPath, ['--import', tsxLoader(), '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.signal, r.stderr).toBe('SIGKILL');
    const folders = JSON.parse(r.stdout.trim()) as string[];
    expect(folders.length).toBe(1);
    // The shell sees the end of its input and its EXIT trap removes the folder, and Fleet's private folder around it.
    const parents = [...new Set(folders.map((f) => path.dirname(f)))];
    for (let i = 0; i < 200 && [...folders, ...parents].some((f) => existsSync(f)); i++) await new Promise((res) => setTimeout(res, 25));
    for (const f of [...folders, ...parents]) expect(existsSync(f), f).toBe(false);
  });

  it('leaves no shell behind once closed', async () => {
    launcher = new GitLauncher();
    await Promise.all([1, 2, 3].map(() => launcher!.launch({ file: 'true', args: [], cwd: tmp, env: { PATH } }).result));
    expect(descendants().filter((p) => p.cmdline.startsWith('/bin/sh\0-s')).length).toBeGreaterThanOrEqual(1);
    await launcher.closeAndWait();
    launcher = undefined;
    expect(descendants().filter((p) => p.cmdline.startsWith('/bin/sh\0-s'))).toEqual([]);
  });

  it('through git/run.ts: a usage error (exit 129) is an exit code, not a signal', async () => {
    const r = await git(['--no-such-option'], { cwd: tmp, allowFail: true });
    expect(r.code).toBe(129);
    await expect(git(['--no-such-option'], { cwd: tmp })).rejects.toThrow(/failed \(exit 129\)/);
  });

  it.each([
    ['a launcher shell', undefined],
    ['a spawned git', null],
  ] as const)('through git/run.ts from %s: output over maxStdoutBytes is not read, and the call fails saying how large it was', async (_, launcher) => {
    const g = new Git({ launcher });
    // An alias that runs a shell command: 3 MB on git's stdout.
    const args = ['-c', 'alias.big=!yes 0123456789 | head -c 3000000', 'big'];
    await expect(g.bytes(args, { cwd: tmp, maxStdoutBytes: 1_000_000 })).rejects.toMatchObject({
      bytes: launcher === null ? expect.any(Number) : 3_000_000,
      limit: 1_000_000,
    });
    await expect(g.bytes(args, { cwd: tmp, maxStdoutBytes: 1_000_000 })).rejects.toBeInstanceOf(GitOutputTooLarge);
    const whole = await g.bytes(args, { cwd: tmp, maxStdoutBytes: 3_000_000 });
    expect(whole.stdout.length).toBe(3_000_000);
  });
});
