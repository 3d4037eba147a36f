/**
 * Helpers for the integration tests: drive the real `fleet` CLI in-process
 * through `main(argv, io)` with a captured io, and read back what a run left
 * behind (manifest, events, lane results, remotes) with real git.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { main } from '../../src/cli/main.js';
import { LaneResult, Manifest, type LaneRecord } from '../../src/core/model.js';
import type { FleetEvent } from '../../src/steps/drivers/process.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Where this worker's Fleets keep their manifest seal key (never the HOME of whoever runs the suite): set for the
 * whole worker, so a CLI a test starts as a process of its own and one run in-process seal alike.
 */
if (!process.env.XDG_STATE_HOME) {
  const made = mkdtempSync(join(tmpdir(), 'fleet-state-'));
  process.on('exit', () => rmSync(made, { recursive: true, force: true }));
  process.env.XDG_STATE_HOME = made;
}

/** Runs `fleet <argv>` in-process with captured output. `env` is added to (and overrides) process.env. */
export async function fleet(argv: string[], opts: { cwd: string; env?: Record<string, string | undefined>; tty?: boolean }): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env };
  for (const [k, v] of Object.entries(opts.env ?? {})) if (v === undefined) delete env[k];
  const code = await main(argv, {
    stdout: { write: (s: string) => ((stdout += s), true), isTTY: opts.tty ?? false, columns: 120 },
    stderr: { write: (s: string) => ((stderr += s), true) },
    env,
    cwd: opts.cwd,
  });
  return { code, stdout, stderr };
}

/**
 * The URL of tsx's loader (`node --import <it> src/….ts`), found the way Node finds it from here: in a
 * copy of the project without its own node_modules (Stryker's sandbox) it is further up.
 */
export function tsxLoader(): string {
  return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
}

/**
 * A fresh temporary folder (realpath'd, so paths compare equal on macOS too), open to every user: where the suite
 * runs as root, Fleet runs directives as nobody (docs/security.md), and the tests' directives and fake agents read
 * and write files of the test's here, as a user's directives do in a folder they share.
 */
export function tempDir(prefix = 'fleet-it-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  chmodSync(dir, 0o777);
  return dir;
}

export function removeDir(dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}

/**
 * Lets a test's directives write `path` (a remote they push to as someone else would): where the suite runs as root,
 * they run as nobody. Their git then needs TRUST_REPOS for a repository of root's.
 */
export function openToDirectives(path: string): void {
  execFileSync('chmod', ['-R', 'a+rwX', path]);
}

/**
 * Shell text a test's directive starts with to use a repository of the test's with its own git: where the suite runs
 * as root the directive runs as nobody, and git refuses a repository of someone else's unless told in its global
 * configuration (a `-c` does not reach the git on the other side of a local clone or push).
 */
export const TRUST_REPOS = 'export GIT_CONFIG_GLOBAL="$FLEET_LANE_DIR/test.gitconfig"; git config --global safe.directory "*"';

/**
 * An empty file every lane's directive may write (a trace, what a fake agent received): where the suite runs as root,
 * each lane runs as a user of its own, and a file one lane made would be closed to the next.
 */
export function sharedFile(path: string): string {
  writeFileSync(path, '');
  chmodSync(path, 0o666);
  return path;
}

/** Writes a fleet file as YAML and returns its path. */
export function writeFleetFile(dir: string, spec: Record<string, unknown>, name = 'fleet.yml'): string {
  const path = join(dir, name);
  writeFileSync(path, name.endsWith('.json') ? JSON.stringify(spec, null, 2) : stringify(spec));
  return path;
}

/** git with a fixed identity and no inherited repository variables. */
export function git(cwd: string, ...args: string[]): string {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_AUTHOR_NAME: 'Test',
    GIT_AUTHOR_EMAIL: 'test@example.invalid',
    GIT_COMMITTER_NAME: 'Test',
    GIT_COMMITTER_EMAIL: 'test@example.invalid',
  };
  for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_CEILING_DIRECTORIES']) delete env[k];
  // safe.directory: where the suite runs as root, the working copies Fleet's directives ran in are nobody's.
  return execFileSync('git', ['-c', 'commit.gpgsign=false', '-c', 'init.defaultBranch=main', '-c', 'safe.directory=*', ...args], {
    cwd,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();
}

/** The commit a branch of a (bare) repository points at, or null. */
export function branchHead(repo: string, branch: string): string | null {
  try {
    return git(repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`) || null;
  } catch {
    return null;
  }
}

/** Every branch of a repository. */
export function branches(repo: string): string[] {
  const out = git(repo, 'for-each-ref', '--format=%(refname:short)', 'refs/heads');
  return out ? out.split('\n').sort() : [];
}

/** A file's content at a revision of a (bare) repository. */
export function showFile(repo: string, rev: string, path: string): string {
  return git(repo, 'show', `${rev}:${path}`);
}

/** Files a commit changes against its first parent. */
export function commitFiles(repo: string, rev: string): string[] {
  return git(repo, 'diff', '--name-only', `${rev}^`, rev).split('\n').filter(Boolean).sort();
}

export function revCount(repo: string, rev: string): number {
  return Number(git(repo, 'rev-list', '--count', rev));
}

export function readManifest(workspace: string): Manifest {
  const raw = JSON.parse(readFileSync(join(workspace, 'fleet-status.json'), 'utf8'));
  return Manifest.parse(raw);
}

export function readEvents(workspace: string): FleetEvent[] {
  const text = readFileSync(join(workspace, 'events.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as FleetEvent);
}

export function readLaneResult(workspace: string, lane: string): LaneRecord {
  return LaneResult.parse(JSON.parse(readFileSync(join(workspace, 'lanes', lane, 'result.json'), 'utf8'))).lane;
}

export function lane(m: Manifest, id: string): LaneRecord {
  const l = m.lanes.find((x) => x.lane === id);
  if (!l) throw new Error(`no lane ${id} in the manifest (lanes: ${m.lanes.map((x) => x.lane).join(', ')})`);
  return l;
}

/** Every file under a folder (relative paths), following no symlinks. */
export function walkFiles(dir: string): string[] {
  const out: string[] = [];
  const visit = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) visit(p);
      else if (entry.isFile()) out.push(relative(dir, p));
    }
  };
  if (existsSync(dir)) visit(dir);
  return out.sort();
}

/** Processes whose environment mentions `marker` (e.g. a fleet workspace path: every directive gets FLEET_WORKSPACE). */
export function processWithEnv(marker: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8');
      if (env.includes(marker)) out.push(`${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')}`);
    } catch {
      /* gone, or not ours */
    }
  }
  return out;
}

/** Processes whose command line contains `marker`. */
export function processWithMarker(marker: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmd.includes(marker)) out.push(`${pid}: ${cmd}`);
    } catch {
      /* gone */
    }
  }
  return out;
}

export function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** A shell-quoted word. */
export function sq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Paths in the tree of a revision of a (bare) repository, sorted. */
export function filesAt(repo: string, rev: string): string[] {
  return git(repo, 'ls-tree', '-r', '--name-only', rev).split('\n').filter(Boolean).sort();
}

/** The standard invocation of a run: quiet, an explicit workspace. */
export function runArgs(file: string, ws: string, ...extra: string[]): string[] {
  return ['run', file, '--workspace', ws, '--quiet', ...extra];
}
