import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, type ExecOptions } from '../../src/workspace/exec.js';
import { clearSecrets, registerSecret } from '../../src/util/secrets.js';
import { makeTempDir, removeDir } from '../support/repos.js';

let tmp: string;
let n = 0;
const BASE_ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

function opts(extra: Partial<ExecOptions> = {}): ExecOptions {
  return { cwd: tmp, env: BASE_ENV, timeoutMs: 10_000, logFile: path.join(tmp, 'logs', `run-${++n}.log`), ...extra };
}

/** Running (a zombie waiting for a slow PID 1 to reap it counts as dead). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return process.platform !== 'linux';
  }
}

async function pidFrom(file: string): Promise<number> {
  return Number((await readFile(file, 'utf8')).trim());
}

/** Waits until `pid` is gone (it may be a zombie for a moment before init reaps it). */
async function gone(pid: number, ms = 1000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return !alive(pid);
}

beforeAll(async () => {
  tmp = await makeTempDir('fleet-exec-');
});
afterAll(async () => {
  await removeDir(tmp);
});
afterEach(() => clearSecrets());

describe('runCommand', () => {
  it('reports the exit code and writes output between a header and a footer', async () => {
    const o = opts({ logFile: path.join(tmp, 'deep', 'er', 'lane.log') });
    const r = await runCommand('echo hello; echo oops >&2; exit 3', o);
    expect(r).toMatchObject({ exitCode: 3, signal: null, timedOut: false });
    expect(r.tail).toContain('hello\n');
    expect(r.tail).toContain('oops\n');
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    const log = await readFile(o.logFile, 'utf8');
    const lines = log.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^=== \d{4}-\d\d-\d\dT.*Z \$ echo hello; echo oops >&2; exit 3$/);
    expect(lines[1]).toBe(`=== cwd: ${tmp}`);
    expect(lines.at(-1)).toMatch(/^=== exit=3 signal=null duration=\d+ms$/);

    // Appends: a second run goes below the first.
    await runCommand('echo second', o);
    const log2 = await readFile(o.logFile, 'utf8');
    expect(log2.startsWith(log)).toBe(true);
    expect(log2.slice(log.length)).toContain('second\n');
  });

  it('interleaves stdout and stderr in the order they come', async () => {
    const o = opts();
    await runCommand('echo one; sleep 0.05; echo two >&2; sleep 0.05; echo three', o);
    const log = await readFile(o.logFile, 'utf8');
    const body = log.split('\n').filter((l) => !l.startsWith('==='));
    expect(body.filter(Boolean)).toEqual(['one', 'two', 'three']);
  });

  it('reports a signal', async () => {
    const r = await runCommand('kill -TERM $$', opts());
    expect(r).toMatchObject({ exitCode: null, signal: 'SIGTERM', timedOut: false });
  });

  it('kills a hanging command and its grandchildren on timeout', async () => {
    const pidFile = path.join(tmp, 'grandchild.pid');
    const o = opts({ timeoutMs: 300, killGraceMs: 500 });
    // Left alone, the command sleeps 1000 s: that it returned (within the test's timeout) is the kill's event.
    const r = await runCommand(`sleep 1000 & echo $! > '${pidFile}'; echo started; sleep 1000`, o);
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    expect(r.signal).toBe('SIGTERM');
    expect(r.tail).toContain('started');
    expect(await gone(await pidFrom(pidFile))).toBe(true);
    expect(await readFile(o.logFile, 'utf8')).toMatch(/=== exit=null signal=SIGTERM timed-out-after=300ms duration=\d+ms\n$/);
  });

  it('SIGKILLs a command that ignores SIGTERM after the grace period', async () => {
    const pidFile = path.join(tmp, 'stubborn.pid');
    const r = await runCommand(
      `trap '' TERM; (trap '' TERM; sleep 1000) & echo $! > '${pidFile}'; while :; do sleep 0.05; done`,
      opts({ timeoutMs: 200, killGraceMs: 300 }),
    );
    expect(r.timedOut).toBe(true);
    expect(r.signal).toBe('SIGKILL');
    expect(await gone(await pidFrom(pidFile))).toBe(true);
  });

  it('leaves no background process behind when the command exits by itself', async () => {
    const pidFile = path.join(tmp, 'background.pid');
    // It returns once the shell exits (the test's timeout would catch a wait on the background sleep).
    const r = await runCommand(`sleep 1000 & echo $! > '${pidFile}'; echo done`, opts({ killGraceMs: 500 }));
    expect(r).toMatchObject({ exitCode: 0, signal: null, timedOut: false });
    expect(await gone(await pidFrom(pidFile))).toBe(true);

    const pidFile2 = path.join(tmp, 'silent.pid');
    const r2 = await runCommand(`sleep 1000 >/dev/null 2>&1 & echo $! > '${pidFile2}'`, opts({ killGraceMs: 500 }));
    expect(r2.exitCode).toBe(0);
    expect(await gone(await pidFrom(pidFile2))).toBe(true);
  });

  it('never throws: a missing program or directory is a 127 result with the error in the tail', async () => {
    const o = opts();
    const r = await runCommand(['/nonexistent/agent', '--flag'], o);
    expect(r).toMatchObject({ exitCode: 127, signal: null, timedOut: false });
    expect(r.tail).toMatch(/ENOENT/);
    expect(await readFile(o.logFile, 'utf8')).toMatch(/could not start[\s\S]*=== exit=127/);

    const r2 = await runCommand('echo hi', opts({ cwd: path.join(tmp, 'no-such-dir') }));
    expect(r2.exitCode).toBe(127);
    expect(r2.tail).toMatch(/ENOENT/);

    const r3 = await runCommand('no-such-command-xyz', opts());
    expect(r3.exitCode).toBe(127); // the shell's own "not found"
    expect(r3.tail).toMatch(/not found/);
  });

  it('uses exactly the env it is given, plus PATH', async () => {
    process.env.FLEET_TEST_LEAK = 'leaked';
    try {
      const r = await runCommand('echo "[$FOO][$FLEET_TEST_LEAK][${PATH:+path}]"', opts({ env: { FOO: 'bar' } }));
      expect(r.tail.trim()).toBe('[bar][][path]');
    } finally {
      delete process.env.FLEET_TEST_LEAK;
    }
  });

  it('runs an argv without a shell, and passes input on stdin', async () => {
    const r = await runCommand(['printf', '%s|', 'a b', '$(echo no)', "'q'"], opts());
    expect(r.tail).toBe("a b|$(echo no)|'q'|");
    const r2 = await runCommand('tr a-z A-Z', opts({ input: 'shout\n' }));
    expect(r2.tail).toBe('SHOUT\n');
    const r3 = await runCommand('cat; echo end', opts()); // no input: stdin is /dev/null, cat ends at once
    expect(r3.tail).toBe('end\n');
  });

  it('keeps only the last ~4 KB in the tail, the full output in the log', async () => {
    const o = opts();
    const r = await runCommand('i=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done', o);
    expect(r.tail.length).toBeLessThanOrEqual(4096);
    expect(r.tail.length).toBeGreaterThan(3000);
    expect(r.tail.endsWith('line 2999\n')).toBe(true);
    const log = await readFile(o.logFile, 'utf8');
    expect(log).toContain('line 0\n');
    expect(log).toContain('line 2999\n');
  });

  it('keeps the first and the last of a flood of output in the log, saying how much was left out between', async () => {
    // Issue 28, second pass: a directive's gigabytes of output went whole into its log (and the lane's artifact).
    const o = { ...opts(), logLimits: { head: 100_000, tail: 20_000 } };
    const r = await runCommand('seq 1 200000', o);
    expect(r.exitCode).toBe(0);
    const log = await readFile(o.logFile, 'utf8');
    expect(log.length).toBeLessThan(125_000);
    expect(log).toMatch(/^1\n2\n3\n/m);
    expect(log).toMatch(/\n200000\n=== exit=0 /);
    const left = /=== (\d+) bytes of output left out here: a log keeps the first 100000 bytes and the last 20000 ===/.exec(log);
    expect(left).not.toBeNull();
    // What was left out, plus what was kept, is all of it: seq 1 200000 prints 1,288,895 bytes.
    const body = log.slice(log.indexOf('\n', log.indexOf('=== cwd:')) + 1, log.lastIndexOf('=== exit='));
    expect(Buffer.byteLength(body.replace(left![0], '').replace(/^\n/m, '')) + Number(left![1])).toBeGreaterThanOrEqual(1_288_895);
  });

  it('redacts secrets in the tail and the log', async () => {
    registerSecret('hunter2-very-secret');
    const o = opts();
    const r = await runCommand('echo "token=hunter2-very-secret"; echo "https://x-access-token:abc123@github.com/o/r" >&2', o);
    expect(r.tail).not.toContain('hunter2-very-secret');
    expect(r.tail).not.toContain('abc123');
    expect(r.tail).toContain('token=***');
    const log = await readFile(o.logFile, 'utf8');
    expect(log).not.toContain('hunter2-very-secret');
    expect(log).not.toContain('abc123');
  });

  it('keeps multi-byte characters split across chunks intact', async () => {
    const file = path.join(tmp, 'utf8.txt');
    await writeFile(file, 'é'.repeat(50_000) + '\n');
    const r = await runCommand(`cat '${file}'`, opts());
    expect(r.tail).toMatch(/^é+\n$/);
  });
});
