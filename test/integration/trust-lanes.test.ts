/**
 * What an isolated directive (and a check) sees of the fleet: its own lane's folder, and nothing of the other
 * lanes (their working copies, logs, patches), the manifest, the events log, nor Fleet's private folder where its
 * git writes its output. A hostile directive run for real, through the real CLI; the same directive with
 * isolation off reads everything, so the test can fail.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo } from '../support/repos.js';
import { fleet, git, lane, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';
import { processSandbox } from '../../src/workspace/sandbox.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

// Fleet's private temporary folder (its git's output) is made in the OS temp folder on first use, once per process:
// a folder of this file's own, so the directive can be pointed at exactly this process's folders. Set as the file
// loads, before anything of Fleet's runs (the sandbox's probe below, as the tests are collected).
const savedTmp = process.env.TMPDIR;
const tmp = tempDir('fleet-trust-lanes-tmp-');
process.env.TMPDIR = tmp;
afterAll(() => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
  removeDir(tmp);
});

const B_FILE = 'B-WORKING-COPY-SECRET';
const B_LOG = 'B-LOG-SECRET';

/**
 * A probe of everything a lane must not see, written to `out` in the lane's own folder: each line is `NAME:` and
 * what the directive got. Run in lane a, after lane b (a depends on b) has finished and left its files.
 */
function probe(out: string): string {
  return [
    `o="$FLEET_LANE_DIR/${out}"; W="$FLEET_WORKSPACE"; : > "$o"`,
    `echo "WS:[$(ls -A "$W" 2>/dev/null | tr '\\n' ' ')]" >> "$o"`,
    `echo "LANES:[$(ls -A "$W/lanes" 2>/dev/null | tr '\\n' ' ')]" >> "$o"`,
    `echo "B-FILE:[$(cat "$W/lanes/b/repo/secret.txt" 2>/dev/null)]" >> "$o"`,
    // From the working folder itself, not through the workspace's path.
    `echo "B-FILE-UP:[$(cat ../../b/repo/secret.txt 2>/dev/null)]" >> "$o"`,
    `echo "B-LOG:[$(cat "$W"/lanes/b/attempt-*.log 2>/dev/null | grep -c ${B_LOG})]" >> "$o"`,
    `echo "B-PATCH:[$(cat "$W/lanes/b/patch.diff" 2>/dev/null)]" >> "$o"`,
    `echo "MANIFEST:[$(cat "$W/fleet-status.json" 2>/dev/null | head -c 40)]" >> "$o"`,
    `echo "EVENTS:[$(cat "$W/events.jsonl" 2>/dev/null | head -c 40)]" >> "$o"`,
    `echo pwned >> "$W/lanes/b/repo/secret.txt" 2>/dev/null && echo "B-WRITTEN" >> "$o"`,
    `echo x > "$W/planted" 2>/dev/null && echo "WS-WRITTEN" >> "$o"`,
    // Fleet's git output folders, in the temp folder every directive shares.
    `for d in "$TMPDIR"/fleet-git-*; do [ -e "$d" ] || continue; echo "GIT-FOLDER:[$(ls -A "$d" 2>/dev/null | tr '\\n' ' ')]" >> "$o"; echo x > "$d/planted" 2>/dev/null && echo "GIT-WRITTEN" >> "$o"; done`,
    // What the lane may use: its working copy, its folder, HOME and the temp folders.
    `echo "OWN:[$(head -n 1 README.md)]" >> "$o"`,
    `echo mine > "$HOME/h-${out}" && echo mine > "/tmp/fleet-trust-lanes-$$" && echo mine > "$TMPDIR/t-${out}" && echo "WRITES-OK" >> "$o"; rm -f "/tmp/fleet-trust-lanes-$$"`,
  ].join('\n');
}

async function run(isolation: 'auto' | 'off') {
  await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
  await createRepo(dir, 'b', { 'README.md': '# b\n', 'secret.txt': `${B_FILE}\n` }, { clone: false });
  const home = join(dir, 'home');
  mkdirSync(home);
  const file = writeFleetFile(dir, {
    name: 'lanes',
    directive: 'x',
    max_retries: 0,
    isolation,
    targets: [
      { repo: './b.git', run: `echo ${B_LOG}; echo b >> README.md` },
      { repo: './a.git', depends_on: ['b'], run: `${probe('directive.txt')}\necho a >> README.md`, checks: [probe('check.txt')] },
    ],
  });
  const ws = join(dir, 'ws');
  const r = await fleet(runArgs(file, ws), { cwd: dir, env: { HOME: home } });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  expect(lane(readManifest(ws), 'a')).toMatchObject({ status: 'completed' });
  const read = (name: string) => readFileSync(join(ws, 'lanes', 'a', name), 'utf8');
  return { ws, home, directive: read('directive.txt'), check: read('check.txt') };
}

/** Every file under `d` (a folder a test made), for the planted ones. */
function filesUnder(d: string): string[] {
  return readdirSync(d, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(join(d, f)).isFile());
}

describe.runIf(process.platform === 'linux' && (await processSandbox()).kind !== 'none')('an isolated lane sees only its own folder of the fleet', () => {
  it("a directive and a check in one lane get nothing of another lane, the manifest, the events log or Fleet's git output, and keep their own folders", async () => {
    const { ws, home, directive, check } = await run('auto');
    for (const [who, out] of Object.entries({ directive, check })) {
      // The workspace shows only the way to the lane's own folder.
      expect(out, who).toContain('WS:[lanes ]');
      expect(out, who).toContain('LANES:[a ]');
      for (const name of ['B-FILE', 'B-FILE-UP', 'B-PATCH', 'MANIFEST', 'EVENTS']) expect(out, `${who}: ${name}`).toContain(`${name}:[]`);
      expect(out, who).toContain('B-LOG:[0]');
      expect(out, who).not.toContain('B-WRITTEN');
      expect(out, who).not.toContain('WS-WRITTEN');
      // Fleet's private folder is there, as an empty folder nothing can be written to; as root, but for the way down
      // to the lane's own HOME there (test/integration/trust-programs.test.ts).
      const folders = out.match(/^GIT-FOLDER:\[.*\]$/gm) ?? [];
      expect(folders.length, `${who}: ${out}`).toBeGreaterThan(0);
      const empty = process.getuid?.() === 0 ? 'GIT-FOLDER:[homes ]' : 'GIT-FOLDER:[]';
      expect(
        folders.every((f) => f === empty),
        `${who}: ${out}`,
      ).toBe(true);
      expect(out, who).not.toContain('GIT-WRITTEN');
      // Its own working copy, folder, HOME and temp folders as before.
      expect(out, who).toContain('OWN:[# a]');
      expect(out, who).toContain('WRITES-OK');
    }
    expect(readFileSync(join(ws, 'lanes', 'b', 'repo', 'secret.txt'), 'utf8')).toBe(`${B_FILE}\n`);
    expect(existsSync(join(ws, 'planted'))).toBe(false);
    expect(filesUnder(tmp).filter((f) => f.endsWith('planted'))).toEqual([]);
    // As root the directive runs as nobody, in a HOME of its own (test/integration/trust-programs.test.ts); else in Fleet's.
    if (process.getuid?.() === 0) expect(existsSync(join(home, 'h-directive.txt'))).toBe(false);
    else expect(readFileSync(join(home, 'h-directive.txt'), 'utf8')).toBe('mine\n');
    expect(readFileSync(join(tmp, 't-check.txt'), 'utf8')).toBe('mine\n');
  });
});

describe.runIf(process.platform === 'linux')('with isolation off', () => {
  it("the same directive reads the other lane, the manifest and Fleet's git output folder, as docs/security.md says", async () => {
    const { directive, check } = await run('off');
    for (const out of [directive, check]) {
      expect(out).toContain(`B-FILE:[${B_FILE}`);
      expect(out).toContain(`B-FILE-UP:[${B_FILE}`);
      expect(out).toMatch(/B-LOG:\[[1-9]/);
      expect(out).toMatch(/MANIFEST:\[\{/);
      expect(out).toContain('GIT-WRITTEN');
    }
  });
});

describe.runIf(process.platform === 'linux')("links planted in the lane's own folder", () => {
  it("a working copy swapped for a link to another lane's is refused: nothing committed, pushed or reset there", async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(dir, 'b', { 'README.md': '# b\n', 'secret.txt': `${B_FILE}\n` }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'lanes',
      directive: 'x',
      max_retries: 0,
      targets: [
        { repo: './b.git', run: 'echo b >> README.md' },
        // In lane a, after b: its `repo` becomes a link to b's working copy, with a change in it for Fleet to commit.
        {
          repo: './a.git',
          depends_on: ['b'],
          run: 'cd .. && mv repo repo.old && ln -s "$FLEET_WORKSPACE/lanes/b/repo" repo && echo stolen >> repo/secret.txt',
        },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir, env: { HOME: dir } });
    const m = readManifest(ws);
    expect(lane(m, 'b')).toMatchObject({ status: 'completed' });
    // The directive can write its lane's folder (in the sandbox too: it holds its working copy): the swap happened, and is refused.
    expect(existsSync(join(ws, 'lanes', 'a', 'repo.old'))).toBe(true);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(lane(m, 'a')).toMatchObject({ status: 'failed', error: { class: 'workspace-corrupted' } });
    expect(git(join(dir, 'a.git'), 'branch', '--list').trim()).toBe('* main');
    // b's working copy keeps its own commit, with the directive's write left uncommitted in it.
    expect(git(join(ws, 'lanes', 'b', 'repo'), 'log', '--format=%s', '-1')).not.toMatch(/\ba\b/);
    expect(git(join(ws, 'lanes', 'b', 'repo'), 'rev-parse', 'HEAD').trim()).toBe(lane(m, 'b').commit);
  });

  it("a link planted at the next attempt's log is not written through", async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'untouched\n');
    const file = writeFleetFile(dir, {
      name: 'logs',
      directive: 'x',
      max_retries: 1,
      isolation: 'off',
      targets: [
        {
          repo: './a.git',
          run: `[ -e "$FLEET_LANE_DIR/attempt-2.log" ] || ln -s ${victim} "$FLEET_LANE_DIR/attempt-2.log"; echo OUTPUT-OF-THE-DIRECTIVE; exit 1`,
        },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir, env: { HOME: dir } });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(lane(readManifest(ws), 'a')).toMatchObject({ status: 'failed', retry_count: 1 });
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
  });
});

describe("a git a directive plants on Fleet's PATH", () => {
  /**
   * GitHub's runner images put `~/.local/bin` before `/usr/bin` on PATH, and a directive can write its HOME. Fleet's
   * own git calls (commit, push: with the credential header, outside the sandbox) must not run what it put there.
   */
  it("is never what Fleet's own git calls run: git and setsid are pinned by path at their first use", async () => {
    const home = join(dir, 'home');
    const bin = join(home, '.local', 'bin');
    mkdirSync(bin, { recursive: true });
    const marker = join(dir, 'planted-git-ran');
    const { createRepo } = await import('../support/repos.js');
    await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    const plant = (name: string) =>
      `printf '#!/bin/sh\\necho "%s $*" >> "%s"\\nexec /usr/bin/${name} "$@"\\n' ${name} '${marker}' > "$HOME/.local/bin/${name}"; chmod +x "$HOME/.local/bin/${name}"`;
    // isolation: off: the directive writes Fleet's own HOME, as it can wherever Fleet does not run as root (as root it
    // gets a HOME of its own, test/integration/trust-programs.test.ts).
    const file = writeFleetFile(dir, {
      name: 'pin',
      directive: 'Plant a git.',
      isolation: 'off',
      run: `${plant('git')}; ${plant('setsid')}; echo x > STAMP`,
      targets: [{ repo: './app.git' }],
    });
    const { spawnSync } = await import('node:child_process');
    const { resolve } = await import('node:path');
    const { tsxLoader } = await import('./helpers.js');
    // A CLI process of its own, started with the planted folder first on PATH, as on a runner.
    const r = spawnSync(process.execPath, ['--import', tsxLoader(), resolve('src/cli/index.ts'), ...runArgs(file, join(dir, 'ws'))], {
      cwd: dir,
      env: { ...process.env, HOME: home, PATH: `${bin}:${process.env.PATH ?? ''}` },
      encoding: 'utf8',
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(existsSync(join(bin, 'git'))).toBe(true);
    expect(lane(readManifest(join(dir, 'ws')), 'app')).toMatchObject({ status: 'completed' });
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe('');
  });
});
