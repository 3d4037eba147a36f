/**
 * Incremental sweeps through the real CLI (`fleet run --since <manifest>`) over real git repositories: a second
 * sweep over targets that did not move clones nothing and ends every lane `unchanged`; a target whose base
 * moved, or a changed directive, runs again. Clones are counted with a `git` on PATH that logs its subcommand.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pathToFileURL } from 'node:url';
import { commitToRemote, createRepo, remoteHead } from '../support/repos.js';
import { LocalForge } from '../../src/local/forge.js';
import type { LaneSpec } from '../../src/core/model.js';
import { fleet, lane, readEvents, readManifest, removeDir, tempDir, writeFleetFile } from './helpers.js';
import { unpinPrograms } from '../../src/workspace/processes.js';

let dir: string;
let savedPath: string | undefined;
let log: string;
let shimmed: string;
beforeEach(() => {
  dir = tempDir();
  savedPath = process.env.PATH;
  log = join(dir, 'git.log');
  writeFileSync(log, '');
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  const bin = join(dir, 'shim');
  mkdirSync(bin);
  // Logs git's subcommand (after any -c options), then runs the real git.
  writeFileSync(
    join(bin, 'git'),
    `#!/bin/sh\nfor a in "$@"; do if [ "$skip" = 1 ]; then skip=; continue; fi; case "$a" in -c) skip=1;; *) echo "$a" >> '${log}'; exec '${real}' "$@";; esac; done\nexec '${real}' "$@"\n`,
  );
  chmodSync(join(bin, 'git'), 0o755);
  shimmed = `${bin}:${savedPath ?? ''}`;
});
afterEach(() => {
  process.env.PATH = savedPath;
  unpinPrograms();
  removeDir(dir);
});

/** One `fleet run`, with the git calls it made counted; returns the exit code, output, workspace and clone count. */
async function sweep(file: string, ws: string, ...extra: string[]) {
  writeFileSync(log, '');
  process.env.PATH = shimmed;
  unpinPrograms();
  try {
    const r = await fleet(['run', file, '--workspace', join(dir, ws), '--quiet', ...extra], { cwd: dir, env: { PATH: shimmed } });
    const clones = readFileSync(log, 'utf8')
      .split('\n')
      .filter((c) => c === 'clone').length;
    return { ...r, ws: join(dir, ws), clones, manifest: join(dir, ws, 'fleet-status.json') };
  } finally {
    process.env.PATH = savedPath;
    unpinPrograms();
  }
}

const spec = (run: string) => ({
  name: 'sweep',
  directive: 'write the marker',
  run,
  isolation: 'off',
  targets: [{ repo: './a.git' }, { repo: './b.git' }, { repo: './c.git', depends_on: ['b'] }, { repo: './d.git', run: 'true' }],
});

describe('fleet run --since', () => {
  it('a second sweep over unchanged targets clones nothing; a moved base and a changed directive run again', async () => {
    for (const r of ['a', 'b', 'c', 'd']) await createRepo(dir, r, { 'README.md': `# ${r}\n` }, { clone: false });
    const file = writeFleetFile(dir, spec('echo x > f.txt'));

    const first = await sweep(file, 'ws1');
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.clones).toBe(4);
    const m1 = readManifest(first.ws);
    expect(m1.lanes.map((l) => [l.lane, l.status, l.phase])).toEqual([
      ['a', 'completed', 'pushed'],
      ['b', 'completed', 'pushed'],
      ['d', 'completed', 'no-op'],
      ['c', 'completed', 'pushed'],
    ]);
    // Every lane records what it ran on and what decided its result.
    for (const l of m1.lanes) expect(l.digest).toMatch(/^sha256:/);
    expect(lane(m1, 'a').base_commit).toMatch(/^[0-9a-f]{40}$/);

    // Nothing moved: nothing is cloned, every lane is unchanged, the run succeeds.
    const second = await sweep(file, 'ws2', '--since', first.manifest);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.clones).toBe(0);
    const m2 = readManifest(second.ws);
    expect(m2.lanes.every((l) => l.status === 'unchanged' && l.phase === 'unchanged')).toBe(true);
    expect(m2.summary).toMatchObject({ total: 4, unchanged: 4, completed: 0, failed: 0 });
    expect(lane(m2, 'a')).toMatchObject({ commit: lane(m1, 'a').commit, base_commit: lane(m1, 'a').base_commit, unchanged_since: m1.fleet_id });
    for (const id of ['a', 'b', 'c', 'd']) expect(existsSync(join(second.ws, 'lanes', id, 'repo')), id).toBe(false);
    expect(
      readEvents(second.ws)
        .filter((e) => e.status === 'unchanged')
        .map((e) => e.lane)
        .sort(),
    ).toEqual(['a', 'b', 'c', 'd']);
    expect(second.stdout).toMatch(/\| Unchanged \| 4 \|/);
    expect(second.stderr).toMatch(/4 of 4 lanes unchanged since/);

    // b's base moves: b runs again, and c, which depends on b, runs too; a and d stay unchanged.
    await commitToRemote(join(dir, 'b.git'), 'main', { 'NEWS.md': 'moved\n' });
    const third = await sweep(file, 'ws3', '--since', second.manifest);
    expect(third.code, third.stdout + third.stderr).toBe(0);
    expect(third.clones).toBe(2);
    const m3 = readManifest(third.ws);
    expect(m3.lanes.map((l) => [l.lane, l.status]).sort()).toEqual([
      ['a', 'unchanged'],
      ['b', 'completed'],
      ['c', 'completed'],
      ['d', 'unchanged'],
    ]);
    // The outcome an unchanged lane carries still names the run that really ran it.
    expect(lane(m3, 'a').unchanged_since).toBe(m1.fleet_id);

    // c's own base moves while b is unchanged: c runs, and its unchanged dependency is a met checkpoint.
    await commitToRemote(join(dir, 'c.git'), 'main', { 'NEWS.md': 'moved\n' });
    const fourth = await sweep(file, 'ws4', '--since', third.manifest);
    expect(fourth.code, fourth.stdout + fourth.stderr).toBe(0);
    expect(fourth.clones).toBe(1);
    const m4 = readManifest(fourth.ws);
    expect(lane(m4, 'b').status).toBe('unchanged');
    expect(lane(m4, 'c')).toMatchObject({ status: 'completed', phase: 'pushed' });

    // A changed run command changes the digest of the lanes that use it: d has its own and stays unchanged.
    const newRun = writeFleetFile(dir, spec('echo y > f.txt'));
    const byRun = await sweep(newRun, 'ws4b', '--since', fourth.manifest);
    expect(byRun.clones).toBe(3);
    expect(lane(readManifest(byRun.ws), 'd').status).toBe('unchanged');

    // A changed directive changes every digest: every lane runs.
    const changed = writeFleetFile(dir, { ...spec('echo y > f.txt'), directive: 'write another marker' });
    const fifth = await sweep(changed, 'ws5', '--since', fourth.manifest);
    expect(fifth.code, fifth.stdout + fifth.stderr).toBe(0);
    expect(fifth.clones).toBe(4);
    expect(readManifest(fifth.ws).summary).toMatchObject({ unchanged: 0, completed: 4 });
  });

  it('any doubt runs the lane: a dry run, a failed lane, a manifest of another fleet version', async () => {
    for (const r of ['a', 'b']) await createRepo(dir, r, { 'README.md': `# ${r}\n` }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'sweep',
      directive: 'd',
      run: 'test -f FAIL && exit 1; echo x > f.txt',
      isolation: 'off',
      max_retries: 0,
      targets: [{ repo: './a.git' }, { repo: './b.git' }],
    });
    await commitToRemote(join(dir, 'b.git'), 'main', { FAIL: '1\n' });
    const first = await sweep(file, 'ws1');
    expect(first.code).toBe(1);
    expect(readManifest(first.ws).lanes.map((l) => [l.lane, l.status])).toEqual([
      ['a', 'completed'],
      ['b', 'failed'],
    ]);

    // The failed lane runs again, the completed one does not.
    const second = await sweep(file, 'ws2', '--since', first.manifest);
    expect(second.clones).toBe(1);
    expect(readManifest(second.ws).lanes.map((l) => [l.lane, l.status])).toEqual([
      ['a', 'unchanged'],
      ['b', 'failed'],
    ]);

    // A dry run shows every patch: nothing is unchanged.
    const dry = await sweep(file, 'ws3', '--since', first.manifest, '--dry-run');
    expect(dry.clones).toBe(2);
    expect(readManifest(dry.ws).summary.unchanged).toBe(0);
    // … and a dry run's outcomes are no basis for the next sweep.
    const afterDry = await sweep(file, 'ws4', '--since', dry.manifest);
    expect(afterDry.clones).toBe(2);
    expect(afterDry.stderr).toMatch(/dry run/);

    // A manifest an older Fleet wrote: every lane runs, and the run says why.
    const old = JSON.parse(readFileSync(first.manifest, 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'old.json'), JSON.stringify({ ...old, schema_version: '1.0.0' }));
    const fromOld = await sweep(file, 'ws5', '--since', join(dir, 'old.json'));
    expect(fromOld.clones).toBe(2);
    expect(fromOld.stderr).toMatch(/note: every lane runs: .*manifest version 1\.0\.0/);
  });

  it("bad input: a missing manifest, another fleet's, or --since with --resume exit 2", async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const file = writeFleetFile(dir, { name: 'sweep', directive: 'd', run: 'true', isolation: 'off', targets: [{ repo: './a.git' }] });
    const missing = await sweep(file, 'ws1', '--since', join(dir, 'nope.json'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/nope\.json.*no such file/);
    const first = await sweep(file, 'ws2');
    const other = writeFleetFile(dir, { name: 'other', directive: 'd', run: 'true', isolation: 'off', targets: [{ repo: './a.git' }] }, 'other.yml');
    const wrong = await sweep(other, 'ws3', '--since', first.manifest);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/fleet "sweep", not "other"/);
    const both = await sweep(file, 'ws4', '--since', first.manifest, '--resume', first.manifest);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--since and --resume cannot be used together/);
  });

  it("the local forge reads each target's base commit in its one check: from the files, from ls-remote, for a base: branch", async () => {
    const a = await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const dev = await commitToRemote(a.remote, 'develop', { 'DEV.md': 'dev\n' });
    const spec = (id: string, repo: string, repo_kind: LaneSpec['repo_kind'], base?: string): LaneSpec => ({
      id,
      repo,
      repo_kind,
      title: id,
      directive: 'd',
      run: 'true',
      checks: [],
      depends_on: [],
      owns: [],
      never: [],
      exclusive: false,
      branch: `fleet/x/${id}`,
      base,
      index: 0,
      review: null,
    });
    const checks = await new LocalForge({ baseDir: dir }).checkTargets([
      spec('files', './a.git', 'path'),
      spec('url', pathToFileURL(a.remote).href, 'url'),
      spec('based', './a.git', 'path', 'develop'),
      spec('based-url', pathToFileURL(a.remote).href, 'url', 'develop'),
    ]);
    const main = await remoteHead(a.remote, 'main');
    expect(checks.map((c) => (c.ok ? c.base_commit : c.reason))).toEqual([main, main, dev, dev]);
  });
});
