/**
 * One run per workspace, unique fleet ids, and a remote's own refusal in the
 * lane's error: faults that used to corrupt a run or hide why it failed.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fleetIdFor } from '../../src/steps/plan.js';
import { LOCK_FILE, processStart } from '../../src/util/lock.js';
import { createRepo, remoteBranches } from '../support/repos.js';
import { fleet, lane, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A pid no process has now: one that just ran and was reaped. */
function deadPid(): number {
  const r = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' });
  return Number(r.stdout.trim());
}

describe('the workspace lock', () => {
  it('refuses a second run on a workspace in use, naming the holder, with exit 2; the first run is untouched', async () => {
    await createRepo(dir, 'svc', { 'README.md': '# svc\n' }, { clone: false });
    const gate = join(dir, 'go');
    const file = writeFleetFile(dir, {
      name: 'lock',
      directive: 'wait, then append',
      run: `touch ${join(dir, 'started')}; while [ ! -f ${gate} ]; do sleep 0.05; done; echo x >> README.md`,
      max_retries: 0,
      targets: [{ repo: './svc.git' }],
    });
    const ws = join(dir, 'ws');
    const first = fleet(runArgs(file, ws), { cwd: dir });
    try {
      while (!existsSync(join(dir, 'started'))) await sleep(25);
      const second = await fleet(runArgs(file, ws), { cwd: dir });
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(join(ws, LOCK_FILE));
      expect(second.stderr).toMatch(new RegExp(`another fleet run holds this workspace \\(pid ${process.pid} on ${hostname()}, since [^,]+, fleet fleet-`));
      expect(second.stderr).toMatch(/give this run another --workspace/);
    } finally {
      writeFileSync(gate, '');
    }
    const r = await first;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(lane(readManifest(ws), 'svc').status).toBe('completed');
    expect(existsSync(join(ws, LOCK_FILE))).toBe(false);
    expect(await remoteBranches(join(dir, 'svc.git'))).toEqual(['fleet/lock/svc', 'main']);
  });

  it('takes over the lock of a run that died (a dead pid, or a live pid that is another process now) with a note', async () => {
    await createRepo(dir, 'svc', { 'README.md': '# svc\n' }, { clone: false });
    const file = writeFleetFile(dir, { name: 'stale', directive: 'append', run: 'echo x >> README.md', max_retries: 0, targets: [{ repo: './svc.git' }] });
    const ws = join(dir, 'ws');
    mkdirSync(ws, { recursive: true });
    const dead = deadPid();
    const holder = { pid: dead, process_start: '1', host: hostname(), since: '2026-01-01T00:00:00.000Z', fleet_id: 'fleet-old' };
    writeFileSync(join(ws, LOCK_FILE), JSON.stringify(holder));
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).toContain(
      `note: took over the lock of pid ${dead} on ${hostname()}, since 2026-01-01T00:00:00.000Z, fleet fleet-old: that process is no longer running`,
    );

    // This very process, but with another start time: the pid was reused, the run that wrote the lock is gone.
    const reused = { ...holder, pid: process.pid, process_start: String(Number(processStart(process.pid)) - 1) };
    writeFileSync(join(ws, LOCK_FILE), JSON.stringify(reused));
    const again = await fleet(runArgs(file, ws), { cwd: dir });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stderr).toContain(`took over the lock of pid ${process.pid}`);
    expect(existsSync(join(ws, LOCK_FILE))).toBe(false);
  });
});

describe('the workspace lock of another host', () => {
  it('is never taken over, even with a pid that is dead here: whether it runs there cannot be known', async () => {
    await createRepo(dir, 'svc', { 'README.md': '# svc\n' }, { clone: false });
    const file = writeFleetFile(dir, { name: 'remote', directive: 'append', run: 'echo x >> README.md', max_retries: 0, targets: [{ repo: './svc.git' }] });
    const ws = join(dir, 'ws');
    mkdirSync(ws, { recursive: true });
    const holder = { pid: deadPid(), process_start: '1', host: `not-${hostname()}`, since: '2026-01-01T00:00:00.000Z', fleet_id: 'fleet-there' };
    writeFileSync(join(ws, LOCK_FILE), JSON.stringify(holder));
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain(`on not-${hostname()}`);
    expect(JSON.parse(readFileSync(join(ws, LOCK_FILE), 'utf8'))).toEqual(holder);
  });
});

describe('fleet ids', () => {
  it('differ for runs started in the same second', () => {
    const t = new Date('2026-04-20T07:15:00.500Z');
    const ids = new Set(Array.from({ length: 50 }, () => fleetIdFor(t)));
    expect(ids.size).toBe(50);
    for (const id of ids) expect(id).toMatch(/^fleet-20260420-071500-[0-9a-f]{6}$/);
  });
});

describe('a remote that refuses a push', () => {
  it("puts the pre-receive hook's own words in the lane's error", async () => {
    const { remote } = await createRepo(dir, 'guarded', { 'README.md': '# guarded\n' }, { clone: false });
    mkdirSync(join(remote, 'hooks'), { recursive: true });
    const hook = join(remote, 'hooks', 'pre-receive');
    writeFileSync(hook, '#!/bin/sh\necho "Pushes to this repository need a ticket number (PLAT-123) in the subject." >&2\nexit 1\n');
    chmodSync(hook, 0o755);
    const file = writeFleetFile(dir, { name: 'hooked', directive: 'append', run: 'echo x >> README.md', max_retries: 0, targets: [{ repo: './guarded.git' }] });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code).toBe(1);
    const l = lane(readManifest(ws), 'guarded');
    expect(l.error?.class).toBe('push-rejected');
    expect(l.error?.message).toContain('(pre-receive hook declined): Pushes to this repository need a ticket number (PLAT-123) in the subject.');
    expect(readFileSync(join(ws, 'report.md'), 'utf8')).toContain('need a ticket number (PLAT-123)');
  });
});
