/**
 * The sandbox directives run in: a PID namespace whose /proc shows only the
 * directive, where nothing it leaves running outlives it, and where the
 * runner's command files are hidden. Real namespaces, real processes: as root
 * (how Fleet runs in this suite and on a root runner) and as an unprivileged
 * user (through a user namespace), each checked from inside.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/local/exec.js';
import { detectSandbox, runnerCommandFolders, sandboxFor } from '../../src/local/sandbox.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleet-sandbox-'));
  chmodSync(dir, 0o777);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const isRoot = process.getuid?.() === 0;

async function inside(script: string, masks: string[] = []) {
  const sandbox = detectSandbox({ masks });
  const r = await runCommand(script, { cwd: dir, env: { PATH: process.env.PATH!, SECRET_OF_NOBODY: 'x' }, timeoutMs: 20_000, logFile: join(dir, 'log'), wrap: sandbox.wrap });
  return { sandbox, r };
}

/**
 * Runs `body` (a module body that may use `sandbox` and `runCommand` from the sources, and ends by printing one
 * JSON line) as the unprivileged user nobody, and returns that line parsed.
 */
function asNobody(name: string, body: string): Record<string, unknown> & { tail: string; code: number | null } {
  const probe = join(dir, `${name}.mjs`);
  const sandboxUrl = new URL('../../src/local/sandbox.ts', import.meta.url).href;
  const execUrl = new URL('../../src/local/exec.ts', import.meta.url).href;
  writeFileSync(probe, `import * as sandbox from ${JSON.stringify(sandboxUrl)};\nimport { runCommand } from ${JSON.stringify(execUrl)};\n${body}`);
  const tsx = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
  const p = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', process.execPath, '--import', tsx, probe], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir },
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(p.status, p.stderr).toBe(0);
  return JSON.parse(p.stdout.trim().split('\n').at(-1)!);
}

describe('the sandbox', () => {
  it.runIf(isRoot)("as root: the directive is the first child of its own namespace's init, sees no other process and holds no capability", async () => {
    const { sandbox, r } = await inside(`echo "pid=$$"; ls /proc | grep -c '^[0-9]' ; test -e /proc/${process.pid} && echo SEES-FLEET; grep CapEff /proc/self/status; mount -t tmpfs x /mnt 2>/dev/null && echo MOUNTED; true`);
    expect(sandbox).toMatchObject({ kind: 'pid-namespace', detail: 'unshare as root' });
    expect(r.exitCode, r.tail).toBe(0);
    expect(r.tail).toMatch(/pid=[23]\n/);
    expect(r.tail).not.toContain('SEES-FLEET');
    expect(r.tail).toMatch(/CapEff:\s+0+\n/);
    expect(r.tail).not.toContain('MOUNTED');
  });

  it.runIf(isRoot)("hides the runner's command files under an empty folder the directive cannot unmount", async () => {
    const files = join(dir, '_runner_file_commands');
    mkdirSync(files);
    writeFileSync(join(files, 'set_env_1234'), '');
    const { r } = await inside(`echo "LIST:[$(ls -A ${files})]"; echo 'NODE_OPTIONS=--require /tmp/evil.js' >> ${files}/set_env_1234 || echo DENIED; umount ${files} 2>/dev/null && echo UNMOUNTED; true`, [files]);
    expect(r.exitCode, r.tail).toBe(0);
    expect(r.tail).toContain('LIST:[]');
    expect(r.tail).toContain('DENIED');
    expect(r.tail).not.toContain('UNMOUNTED');
    expect(readFileSync(join(files, 'set_env_1234'), 'utf8')).toBe('');
  });

  it.runIf(isRoot)('a process the directive leaves in a session of its own dies with it', async () => {
    const marker = join(dir, 'later');
    const { r } = await inside(`setsid sh -c 'sleep 1; echo alive > ${marker}' </dev/null >/dev/null 2>&1 & echo started`);
    expect(r.exitCode).toBe(0);
    await new Promise((res) => setTimeout(res, 1500));
    expect(existsSync(marker)).toBe(false);
  });

  it.runIf(isRoot)('as an unprivileged user, through a user namespace: the same isolation, and files written stay the user\'s', () => {
    // A real unprivileged process: this very check, run as nobody.
    const out = asNobody(
      'probe-userns',
      `const s = sandbox.detectSandbox({ masks: [] });
const r = await runCommand('echo "pid=$$"; test -e /proc/' + process.ppid + ' && echo SEES-PARENT; id -u; touch written', { cwd: ${JSON.stringify(dir)}, env: { PATH: process.env.PATH }, timeoutMs: 20000, logFile: ${JSON.stringify(join(dir, 'log-nobody'))}, wrap: s.wrap });
console.log(JSON.stringify({ kind: s.kind, detail: s.detail, tail: r.tail, code: r.exitCode }));`,
    );
    expect(out).toMatchObject({ kind: 'pid-namespace', detail: 'unshare in a user namespace', code: 0 });
    expect(out.tail).toMatch(/pid=[23]\n/);
    expect(out.tail).not.toContain('SEES-PARENT');
    expect(out.tail).toContain('65534');
    expect(spawnSync('stat', ['-c', '%u', join(dir, 'written')], { encoding: 'utf8' }).stdout.trim()).toBe('65534');
  });

  /**
   * GitHub's hosted runners: an unprivileged user whom AppArmor refuses user
   * namespaces, with passwordless sudo. The sudo way in, run as an unprivileged
   * user with a sudoers entry like the runner's; sudo's secure_path must not
   * change the directive's PATH. Needs sudo installed (CI installs it).
   */
  it.runIf(isRoot && existsSync('/usr/bin/sudo'))('through sudo, as on GitHub\'s runners: the same isolation, back as the user, with the user\'s PATH and HOME', () => {
    const sudoers = '/etc/sudoers.d/zz-fleet-sandbox-test';
    writeFileSync(sudoers, 'nobody ALL=(ALL:ALL) NOPASSWD: ALL\n', { mode: 0o440 });
    try {
      const out = asNobody(
        'probe-sudo',
        `const way = sandbox.strategies({ unshare: '/usr/bin/unshare', setpriv: '/usr/bin/setpriv', sudo: '/usr/bin/sudo', uid: 65534, gid: 65534, masks: [] }).find((s) => s.via === 'sudo unshare');
const s = sandbox.sandboxOf(way);
const r = await runCommand('echo "pid=$$"; test -e /proc/' + process.pid + ' && echo SEES-FLEET; echo "uid=$(id -u)"; echo "path=$PATH"; echo "home=$HOME"; grep CapEff /proc/self/status; touch written', { cwd: ${JSON.stringify(dir)}, env: { PATH: '/opt/fleet-test/bin:' + process.env.PATH, HOME: ${JSON.stringify(dir)} }, timeoutMs: 20000, logFile: ${JSON.stringify(join(dir, 'log-sudo'))}, wrap: s.wrap });
console.log(JSON.stringify({ tail: r.tail, code: r.exitCode }));`,
      );
      expect(out.code, out.tail).toBe(0);
      expect(out.tail).toMatch(/pid=[23]\n/);
      expect(out.tail).not.toContain('SEES-FLEET');
      expect(out.tail).toContain('uid=65534');
      expect(out.tail).toContain(`path=/opt/fleet-test/bin:${process.env.PATH}`);
      expect(out.tail).toContain(`home=${dir}`);
      expect(out.tail).toMatch(/CapEff:\s+0+\n/);
      expect(spawnSync('stat', ['-c', '%u', join(dir, 'written')], { encoding: 'utf8' }).stdout.trim()).toBe('65534');
    } finally {
      rmSync(sudoers, { force: true });
    }
  });

  it('isolation: off runs commands as they are, and says so', () => {
    expect(sandboxFor('off')).toMatchObject({ kind: 'none', detail: 'turned off in the fleet file (isolation: off)' });
  });

  it('finds the folders of the runner\'s command files from the environment, those that exist only', () => {
    const files = join(dir, '_runner_file_commands');
    mkdirSync(files);
    expect(runnerCommandFolders({ GITHUB_ENV: join(files, 'set_env_1'), GITHUB_OUTPUT: join(files, 'set_output_1'), GITHUB_PATH: '/nowhere/add_path_1', GITHUB_STATE: 'relative/x' })).toEqual([files]);
  });
});
