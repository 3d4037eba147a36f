/**
 * Real git repositories for tests, in temp dirs. Independent of src/workspace/git/
 * (they drive git directly), so they can check what the code under test did.
 *
 * Commits are written with `git fast-import` straight into a bare repository:
 * one process per commit, no working copy.
 */
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export const FAKE_AGENTS = path.join(path.dirname(new URL(import.meta.url).pathname), 'fake-agents');

const TEST_ENV: NodeJS.ProcessEnv = (() => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_COMMON_DIR', 'GIT_NAMESPACE']) delete env[k];
  return {
    ...env,
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'Test Author',
    GIT_AUTHOR_EMAIL: 'test@example.com',
    GIT_COMMITTER_NAME: 'Test Author',
    GIT_COMMITTER_EMAIL: 'test@example.com',
  };
})();

/** Runs git for a test helper; rejects with stderr on failure. */
export function tgit(
  args: string[],
  opts: { cwd?: string; input?: string | Buffer; allowFail?: boolean } = {},
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve, reject) => {
    // safe.directory: where the suite runs as root, the working copies Fleet's directives ran in are nobody's.
    const child = spawn('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'commit.gpgsign=false', '-c', 'safe.directory=*', ...args], {
      cwd: opts.cwd ?? os.tmpdir(),
      env: TEST_ENV,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      const r = { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), code: code ?? -1 };
      if (r.code !== 0 && !opts.allowFail) reject(new Error(`git ${args.join(' ')} → ${r.code}: ${r.stderr}`));
      else resolve(r);
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

/** A fresh temp dir (real path, so comparisons with git's output hold), open to every user as tempDir in test/integration/helpers.ts says why. */
export async function makeTempDir(prefix = 'fleet-test-'): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
  await chmod(dir, 0o777);
  return dir;
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

export type FileMap = Record<string, string | Buffer | null>;

function quotePath(p: string): string {
  return `"${p.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

let clock = 1_700_000_000;

/**
 * Writes one commit on `ref` of a bare repository with fast-import: `files`
 * maps paths to content (null deletes the path); `from` is the parent (a rev);
 * `replace` starts from an empty tree instead of the parent's.
 */
async function fastImportCommit(
  gitDir: string,
  ref: string,
  files: FileMap,
  opts: { message: string; from?: string | null; replace?: boolean },
): Promise<string> {
  const chunks: Buffer[] = [];
  const w = (s: string | Buffer): void => {
    chunks.push(typeof s === 'string' ? Buffer.from(s, 'utf8') : s);
  };
  const t = clock++;
  const msg = Buffer.from(opts.message, 'utf8');
  w(`commit ${ref}\n`);
  w(`author Test Author <test@example.com> ${t} +0000\n`);
  w(`committer Test Author <test@example.com> ${t} +0000\n`);
  w(`data ${msg.length}\n`);
  w(msg);
  w('\n');
  if (opts.from) w(`from ${opts.from}\n`);
  if (opts.replace) w('deleteall\n');
  for (const [p, content] of Object.entries(files)) {
    if (content === null) {
      w(`D ${quotePath(p)}\n`);
      continue;
    }
    const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    w(`M 100644 inline ${quotePath(p)}\n`);
    w(`data ${data.length}\n`);
    w(data);
    w('\n');
  }
  w('\n');
  await tgit(['--git-dir', gitDir, 'fast-import', '--quiet'], { input: Buffer.concat(chunks) });
  return (await tgit(['--git-dir', gitDir, 'rev-parse', ref])).stdout.trim();
}

export interface CreatedRepo {
  /** The bare repository (the "remote"), `<dir>/<name>.git`; the repository itself when `bare: false`. */
  remote: string;
  /** A working clone `<dir>/<name>` with `origin` = remote (the repository itself when `bare: false`). */
  dir: string;
  /** The initial commit. */
  commit: string;
}

/**
 * Creates `<dir>/<name>.git`, a bare "remote" whose default branch (`main`
 * unless `branch`) holds one commit of `files`, and a working clone of it at
 * `<dir>/<name>` (skip it with `clone: false`). With `bare: false` there is
 * only a non-bare repository at `<dir>/<name>` with the commit checked out.
 */
export async function createRepo(
  dir: string,
  name: string,
  files: FileMap,
  opts: { bare?: boolean; branch?: string; clone?: boolean; message?: string } = {},
): Promise<CreatedRepo> {
  const branch = opts.branch ?? 'main';
  const message = opts.message ?? 'initial commit\n';
  if (opts.bare === false) {
    const work = path.join(dir, name);
    await tgit(['init', '--quiet', `--initial-branch=${branch}`, '--template=', work]);
    const commit = await fastImportCommit(path.join(work, '.git'), `refs/heads/${branch}`, files, { message });
    await tgit(['reset', '--quiet', '--hard', branch], { cwd: work });
    return { remote: work, dir: work, commit };
  }
  const remote = path.join(dir, `${name}.git`);
  await tgit(['init', '--quiet', '--bare', `--initial-branch=${branch}`, '--template=', remote]);
  const commit = await fastImportCommit(remote, `refs/heads/${branch}`, files, { message });
  const work = path.join(dir, name);
  if (opts.clone !== false) await tgit(['clone', '--quiet', '--template=', remote, work]);
  return { remote, dir: work, commit };
}

/** Creates an empty bare repository (no commits) at `<dir>/<name>.git`. */
export async function createEmptyRemote(dir: string, name: string, branch = 'main'): Promise<string> {
  const remote = path.join(dir, `${name}.git`);
  await tgit(['init', '--quiet', '--bare', `--initial-branch=${branch}`, '--template=', remote]);
  return remote;
}

/**
 * Commits `files` (null deletes) on `branch` of a bare repository, as someone
 * else pushing would; the branch is created from `from` (default: the
 * current value of `branch`, else `main`). Returns the new commit.
 */
export async function commitToRemote(remote: string, branch: string, files: FileMap, opts: { message?: string; from?: string } = {}): Promise<string> {
  const current = await remoteHead(remote, branch);
  const from = opts.from ?? current ?? (await remoteHead(remote, 'main'));
  return fastImportCommit(remote, `refs/heads/${branch}`, files, { message: opts.message ?? `update ${branch}\n`, from });
}

/** The content of `file` at the tip of `branch` in a (bare) repository, or null when absent. */
export async function readRemoteFile(remote: string, branch: string, file: string): Promise<string | null> {
  const r = await tgit(['-C', remote, 'cat-file', 'blob', `refs/heads/${branch}:${file}`], { allowFail: true });
  return r.code === 0 ? r.stdout : null;
}

/** Branch names of a (bare) repository, sorted. */
export async function remoteBranches(remote: string): Promise<string[]> {
  const r = await tgit(['-C', remote, 'for-each-ref', '--format=%(refname:strip=2)', 'refs/heads']);
  return r.stdout.split('\n').filter(Boolean).sort();
}

/** The commit a branch of a (bare) repository points at, or null. */
export async function remoteHead(remote: string, branch: string): Promise<string | null> {
  const r = await tgit(['-C', remote, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { allowFail: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

/** Paths in the tree of `branch`, sorted. */
export async function remoteFiles(remote: string, branch: string): Promise<string[]> {
  const r = await tgit(['-C', remote, '-c', 'core.quotePath=false', 'ls-tree', '-r', '-z', '--name-only', `refs/heads/${branch}`]);
  return r.stdout.split('\0').filter(Boolean).sort();
}

/** execFile as a promise, for tests that run a program directly. */
export function run(
  file: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: opts.cwd, env: opts.env ?? process.env, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as NodeJS.ErrnoException & { code?: unknown }).code === 'number' ? (err as unknown as { code: number }).code : 1) : 0;
      resolve({ stdout, stderr, code });
    });
  });
}
