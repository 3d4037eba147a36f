/**
 * `fleet clean` keeps `_workspace/` from growing without end (issue 27: 120 MB after a dozen runs over three small
 * repositories): each fleet's newest run stays without its lanes' clones, older runs go whole, a run still going is
 * never touched, and `_workspace/` ignores itself in git.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lockWorkspace } from '../../src/util/lock.js';
import { createRepo } from '../support/repos.js';
import { fleet, removeDir, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const runsOf = () => readdirSync(join(dir, '_workspace', 'fleet')).sort();
const clones = (run: string) =>
  readdirSync(join(dir, '_workspace', 'fleet', run, 'lanes')).filter((l) => existsSync(join(dir, '_workspace', 'fleet', run, 'lanes', l, 'repo')));

describe('fleet clean', () => {
  it("keeps each fleet's newest run without its clones, removes the older ones, and leaves a running one alone", async () => {
    await createRepo(dir, 'api', { 'README.md': '# api\n' }, { clone: false });
    const a = writeFleetFile(dir, { name: 'alpha', directive: 'x', run: 'date +%s%N > STAMP', targets: [{ repo: './api.git' }] }, 'alpha.yml');
    const b = writeFleetFile(dir, { name: 'beta', directive: 'x', run: 'date +%s%N > B', targets: [{ repo: './api.git' }] }, 'beta.yml');
    // Without --workspace: each run in its own folder of _workspace/fleet/ beside the fleet file.
    for (const f of [a, a, a, b]) expect((await fleet(['run', f, '--quiet'], { cwd: dir })).code).toBe(0);
    const before = runsOf();
    expect(before).toHaveLength(4);
    expect(readFileSync(join(dir, '_workspace', '.gitignore'), 'utf8')).toMatch(/^\*$/m);

    const dry = await fleet(['clean', '--dry-run'], { cwd: dir });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout.match(/^would remove /gm)).toHaveLength(2);
    expect(dry.stdout.match(/^would trim /gm)).toHaveLength(2);
    expect(runsOf()).toEqual(before);

    // A run still going holds its lock: clean leaves it whole.
    const status = (f: string) => fleet(['status', f, '--json'], { cwd: dir }).then((r) => JSON.parse(r.stdout) as { fleet_id: string });
    const busy = join(dir, '_workspace', 'fleet', (await status(b)).fleet_id);
    const lock = await lockWorkspace(busy, 'still-running');
    expect(lock.ok).toBe(true);
    const done = await fleet(['clean', '--json'], { cwd: dir });
    if (lock.ok) await lock.release();
    const r = JSON.parse(done.stdout) as { removed: string[]; trimmed: string[]; busy: Array<{ dir: string }>; freed_bytes: number };
    expect(r.removed).toHaveLength(2);
    expect(r.trimmed).toEqual([join(dir, '_workspace', 'fleet', (await status(a)).fleet_id)]);
    expect(r.busy.map((x) => x.dir)).toEqual([busy]);
    expect(r.freed_bytes).toBeGreaterThan(0);
    expect(runsOf()).toHaveLength(2);
    expect(clones((await status(a)).fleet_id)).toEqual([]);
    expect(clones((await status(b)).fleet_id)).toEqual(['api']);
    // What stays still answers: the newest run's report.
    expect((await fleet(['report', a], { cwd: dir })).code).toBe(0);

    const all = await fleet(['clean', '--all'], { cwd: dir });
    expect(all.code).toBe(0);
    expect(runsOf()).toEqual([]);
  });

  it('follows no link a directive left, and a planted manifest chooses nothing', async () => {
    await createRepo(dir, 'api', { 'README.md': '# api\n' }, { clone: false });
    const a = writeFleetFile(dir, { name: 'alpha', directive: 'x', run: 'date +%s%N > STAMP', targets: [{ repo: './api.git' }] }, 'alpha.yml');
    for (const f of [a, a]) expect((await fleet(['run', f, '--quiet'], { cwd: dir })).code).toBe(0);
    const newer = (JSON.parse((await fleet(['status', a, '--json'], { cwd: dir })).stdout) as { fleet_id: string }).fleet_id;
    const older = readdirSync(join(dir, '_workspace', 'fleet')).find((d) => d !== newer);
    // Outside _workspace: a folder that must survive, reached through a link where a lane's folder was.
    const victim = join(dir, 'victim');
    mkdirSync(join(victim, 'x', 'repo'), { recursive: true });
    writeFileSync(join(victim, 'x', 'repo', 'keep.txt'), 'keep\n');
    rmSync(join(dir, '_workspace', 'fleet', newer!, 'lanes'), { recursive: true });
    symlinkSync(victim, join(dir, '_workspace', 'fleet', newer!, 'lanes'));
    // A folder whose manifest claims to be alpha's newest run, with a fleet id that is not its name and a start to come.
    const planted = join(dir, '_workspace', 'fleet', 'planted');
    mkdirSync(planted);
    writeFileSync(join(planted, 'fleet-status.json'), JSON.stringify({ name: 'alpha', fleet_id: 'other', started_at: '2999-01-01T00:00:00Z' }));
    const r = JSON.parse((await fleet(['clean', '--json'], { cwd: dir })).stdout) as { removed: string[]; trimmed: string[]; left: Array<{ dir: string }> };
    expect(existsSync(join(victim, 'x', 'repo', 'keep.txt'))).toBe(true);
    expect(r.trimmed).toEqual([join(dir, '_workspace', 'fleet', newer!)]);
    expect(r.removed).toEqual([join(dir, '_workspace', 'fleet', older!)]);
    expect(r.left.map((x) => x.dir)).toEqual([planted]);
  });

  it('says there is nothing to clean where there is no workspace, and refuses a bad --keep', async () => {
    expect((await fleet(['clean'], { cwd: dir })).stdout).toContain('nothing to clean');
    const bad = await fleet(['clean', '--keep', 'two'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--keep takes a whole number of runs (0 or more), not "two"');
  });
});
