/**
 * Ctrl-C on `fleet run`: the running directives (in process groups of their
 * own, so the terminal's SIGINT never reaches them) are stopped, no lane starts
 * afterwards, and the manifest says what happened.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, remoteBranches } from '../support/repos.js';
import { fleet, lane, processWithEnv, readManifest, removeDir, runArgs, tempDir, writeFleetFile, tsxLoader } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('interrupting a run', () => {
  it('SIGINT stops the running directives and their children, starts nothing more, and leaves a final manifest', async () => {
    for (const n of ['hang', 'quick', 'later']) await createRepo(dir, n, { 'README.md': `# ${n}\n` }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'intr',
      directive: 'append',
      run: 'echo x >> README.md',
      max_retries: 2,
      targets: [{ repo: './hang.git', run: 'sleep 600 & sleep 600' }, { repo: './quick.git' }, { repo: './later.git', depends_on: ['hang'] }],
    });
    const ws = join(dir, 'ws');
    const root = resolve(import.meta.dirname, '../..');
    const loader = tsxLoader();
    const child = spawn(process.execPath, ['--import', loader, join(root, 'src/cli/index.ts'), ...runArgs(file, ws)], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
    try {
      // Wait until the hanging directive runs and the quick lane has ended (an interrupt now stops its git too).
      const deadline = Date.now() + 15_000;
      const events = join(ws, 'events.jsonl');
      const ready = () => {
        const text = existsSync(events) ? readFileSync(events, 'utf8') : '';
        return /"lane":"hang","from":"cloning","to":"running"/.test(text) && /"lane":"quick"[^\n]*"status":"completed"/.test(text);
      };
      while (Date.now() < deadline && !ready()) await sleep(50);
      await sleep(200);
      child.kill('SIGINT');
      // The directive sleeps 600 s: exiting on SIGINT is the event; the race only keeps a hang from outliving the test.
      const { code } = await Promise.race([exited, sleep(25_000).then(() => ({ code: -1, signal: null }))]);
      expect(code, out).toBe(130);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    expect(processWithEnv(ws)).toEqual([]);
    const m = readManifest(ws);
    expect(m.ended_at).not.toBeNull();
    const h = lane(m, 'hang');
    expect(h.status).toBe('failed');
    expect(h.error?.class).toBe('cancelled');
    expect(h.attempts).toHaveLength(1);
    expect(lane(m, 'quick').status).toBe('completed');
    const l = lane(m, 'later');
    expect(l.status).toBe('skipped');
    expect(l.error?.class).toBe('cancelled');
    expect(existsSync(join(ws, 'lanes', 'later', 'repo'))).toBe(false);
    expect(await remoteBranches(join(dir, 'hang.git'))).toEqual(['main']);
    expect(out).toMatch(/interrupted/i);
    // A line to paste (issue 27): the command as typed, with --resume and the manifest.
    expect(out).toContain(`Resume with:\n  fleet run ${file} --workspace ${ws} --quiet --resume ${join(ws, 'fleet-status.json')}\n`);

    // The interrupted run resumes: the cancelled lanes run, the completed one is kept.
    const quickCommit = lane(m, 'quick').commit;
    writeFleetFile(dir, {
      name: 'intr',
      directive: 'append',
      run: 'echo x >> README.md',
      max_retries: 0,
      targets: [{ repo: './hang.git' }, { repo: './quick.git' }, { repo: './later.git', depends_on: ['hang'] }],
    });
    const r = await fleet(['run', file, '--resume', join(ws, 'fleet-status.json'), '--quiet'], { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const m2 = readManifest(ws);
    expect(m2.fleet_id).toBe(m.fleet_id);
    expect(m2.summary).toMatchObject({ total: 3, completed: 3 });
    expect(lane(m2, 'quick').commit).toBe(quickCommit);
    expect(lane(m2, 'quick').started_at).toBe(lane(m, 'quick').started_at);
    expect(await remoteBranches(join(dir, 'later.git'))).toEqual(['fleet/intr/later', 'main']);
  });
});
