/**
 * What Fleet opens in a lane's folder after a directive stays what it was: the next attempt's log. Each attack is a
 * hostile directive run for real, through a real CLI process (docs/security.md, "Links a directive plants").
 */
import { spawn } from 'node:child_process';
import { chmodSync, lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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

/** A real CLI process (from the sources), awaited by its exit: a Fleet that stalls fails the test by its timeout. */
function cli(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', tsxLoader(), resolve('src/cli/index.ts'), ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
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
const running = new Set<ReturnType<typeof spawn>>();
afterEach(() => {
  for (const c of running) c.kill('SIGKILL');
  running.clear();
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
          { repo: './a.git', run: `if [ -e "$FLEET_LANE_DIR/attempt-2.log" ]; then echo SECOND-ATTEMPT; else mkfifo "$FLEET_LANE_DIR/attempt-2.log"; fi; exit 1` },
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
      targets: [{ repo: './a.git', run: `[ -e "$FLEET_LANE_DIR/attempt-2.log" ] || ln ${victim} "$FLEET_LANE_DIR/attempt-2.log"; echo OUTPUT-OF-THE-DIRECTIVE; exit 1` }],
    });
    const ws = join(dir, 'ws');
    const r = await cli(runArgs(file, ws), { ...process.env, HOME: dir }, dir);
    expect(r.code, r.out).toBe(1);
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
    expect(readFileSync(join(ws, 'lanes', 'a', 'attempt-2.log'), 'utf8')).toContain('OUTPUT-OF-THE-DIRECTIVE');
  });
});
