/**
 * What a lane costs in git processes: every check a lane makes (the target check, the working copy's
 * integrity, the fence, the committed tree, the push, the forge's own view) stays, and the ones that can be
 * answered from the repository's files or from one git call do not start one each. Counted with a `git` on
 * PATH that logs its arguments and runs the real git.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo } from '../support/repos.js';
import { fleet, git, lane, readManifest, removeDir, tempDir, tsxLoader, writeFleetFile } from './helpers.js';
import { unpinPrograms } from '../../src/workspace/processes.js';

let dir: string;
let savedPath: string | undefined;
beforeEach(() => {
  dir = tempDir();
  savedPath = process.env.PATH;
});
afterEach(() => {
  process.env.PATH = savedPath;
  unpinPrograms();
  removeDir(dir);
});

/** A `git` that appends its subcommand (after Fleet's `-c` options) to `log`, then runs the real one. */
function gitShim(log: string): string {
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  const bin = join(dir, 'shim');
  mkdirSync(bin);
  writeFileSync(
    join(bin, 'git'),
    `#!/bin/sh\nfor a in "$@"; do if [ "$skip" = 1 ]; then skip=; continue; fi; case "$a" in -c) skip=1;; *) echo "$a" >> '${log}'; exec '${real}' "$@";; esac; done\nexec '${real}' "$@"\n`,
  );
  chmodSync(join(bin, 'git'), 0o755);
  return bin;
}

/** Runs a one-target fleet with `git` replaced by the shim; returns the workspace and the git subcommands, in order. */
async function countedRun(repo: string, fields: Record<string, unknown>): Promise<{ ws: string; calls: string[] }> {
  await createRepo(dir, repo, { 'README.md': `# ${repo}\n` }, { clone: false });
  const file = writeFleetFile(dir, {
    name: 'cost',
    directive: 'add a file',
    run: 'echo x > f.txt',
    isolation: 'off',
    ...fields,
    targets: [{ repo: `./${repo}.git` }],
  });
  const log = join(dir, 'git.log');
  writeFileSync(log, '');
  const path = `${gitShim(log)}:${savedPath ?? ''}`;
  process.env.PATH = path;
  unpinPrograms();
  const ws = join(dir, 'ws');
  const r = await fleet(['run', file, '--workspace', ws, '--quiet'], { cwd: dir, env: { PATH: path } });
  process.env.PATH = savedPath;
  unpinPrograms();
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return { ws, calls: readFileSync(log, 'utf8').trim().split('\n') };
}

describe('the cost of a lane', () => {
  it('a lane that clones, changes, commits and pushes starts 6 git processes, every check included', async () => {
    const { ws, calls } = await countedRun('one', {});
    const m = readManifest(ws);
    expect(lane(m, 'one')).toMatchObject({ status: 'completed', phase: 'pushed', changed_files: ['f.txt'] });
    expect(lane(m, 'one').evidence).toMatchObject({ head_matches: true, files_match: true, fence_ok: true });
    // plan: the target is read from its files; clone (the lane branch is written as files); the directive;
    // add + commit; diff-tree (the committed tree, which the fence judges, and the patch at once); push (confirmed
    // by reading the remote's ref); diff in the remote (the forge's own view of the lane). Once per run, not per lane,
    // before it all: config (the user's identity and signing, src/workspace/commit-setup.ts).
    expect(calls).toEqual(['config', 'clone', 'add', 'commit', 'diff-tree', 'push', 'diff']);
    expect(git(join(dir, 'one.git'), 'diff', '--name-only', 'main', 'fleet/cost/one').trim()).toBe('f.txt');
    expect(readFileSync(join(ws, 'lanes', 'one', 'patch.diff'), 'utf8').trim()).toBe(
      git(join(dir, 'one.git'), 'diff', '--binary', '--no-color', '--src-prefix=a/', '--dst-prefix=b/', '-M', 'main', 'fleet/cost/one'),
    );
  });

  it('with checks, the fence also looks at the staged change before they run and again after: 9 git processes', async () => {
    const { ws, calls } = await countedRun('two', { checks: ['test -f f.txt'] });
    expect(lane(readManifest(ws), 'two')).toMatchObject({ status: 'completed', phase: 'pushed', changed_files: ['f.txt'] });
    expect(calls).toEqual(['config', 'clone', 'add', 'diff', 'add', 'diff', 'commit', 'diff-tree', 'push', 'diff']);
  });
});

describe("who starts Fleet's git", () => {
  /** A `git` that logs the name of the process that started it, then runs the real one. */
  function parentShim(log: string): string {
    const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    const bin = join(dir, 'parent-shim');
    mkdirSync(bin);
    writeFileSync(join(bin, 'git'), `#!/bin/sh\ncat /proc/$PPID/comm >> '${log}'\nexec '${real}' "$@"\n`);
    chmodSync(join(bin, 'git'), 0o755);
    return bin;
  }

  async function parents(extraEnv: Record<string, string>): Promise<string[]> {
    await createRepo(dir, 'p', { 'README.md': '# p\n' }, { clone: false });
    const file = writeFleetFile(dir, { name: 'who', directive: 'x', run: 'echo x > f.txt', isolation: 'off', targets: [{ repo: './p.git' }] });
    const log = join(dir, 'parents.log');
    writeFileSync(log, '');
    const path = `${parentShim(log)}:${savedPath ?? ''}`;
    // A CLI process of its own: the launcher is chosen once per process, from that process's environment.
    const r = spawnSync(process.execPath, ['--import', tsxLoader(), resolve('src/cli/index.ts'), 'run', file, '--workspace', join(dir, 'ws'), '--quiet'], {
      cwd: dir,
      env: { ...process.env, PATH: path, ...extraEnv },
      encoding: 'utf8',
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    return [...new Set(readFileSync(log, 'utf8').trim().split('\n'))];
  }

  it.runIf(process.platform === 'linux')('a launcher shell by default (docs/bench.md, "Cost per lane")', async () => {
    expect(await parents({})).toEqual(['sh']);
  });

  it.runIf(process.platform === 'linux')('Node itself with FLEET_GIT_LAUNCHER=off', async () => {
    expect(await parents({ FLEET_GIT_LAUNCHER: 'off' })).toEqual(['node']);
  });
});
