/**
 * Reading what a repository or a remote holds, changing nothing: refs, HEAD and packed-refs read from the files
 * (Fleet asks these many times a lane, and a file read costs far less than a git process), and what only git can
 * answer (rev-parse, ls-remote, what a path is). Where a remote is: a URL, or a path on this machine.
 * The functions that run git take the Git to run it with (git.ts) as their first argument.
 */
import { closeSync, constants as fsConstants, existsSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { GitRunner } from './run.js';

// ---------------------------------------------------------------------------
// Remotes
// ---------------------------------------------------------------------------

/** True when git would treat `url` as a path on this machine (not `scheme://…` nor scp-like `host:path`). */
export function isLocalRemote(url: string): boolean {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return url.toLowerCase().startsWith('file://');
  if (url.startsWith('/') || url.startsWith('.') || url.startsWith('~')) return true;
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  return colon < 0 || (slash >= 0 && slash < colon);
}

/** Makes a local path absolute (expanding `~`), so git does not resolve it against its cwd; URLs are returned unchanged. */
export function normalizeRemote(url: string): string {
  if (!isLocalRemote(url) || /^file:\/\//i.test(url)) return url;
  if (url === '~' || url.startsWith('~/')) return path.join(os.homedir(), url.slice(1));
  return path.resolve(url);
}

/** A neutral cwd for commands that do not need a repository (ls-remote, clone). */
export function neutralCwd(): string {
  return os.tmpdir();
}

// ---------------------------------------------------------------------------
// Inspection
// ---------------------------------------------------------------------------

export type RepoKind = 'repo' | 'bare' | 'not-a-repository' | 'not-found';

/**
 * What `p` is: the top of a working tree ('repo'), a bare repository ('bare'),
 * an existing path that is neither ('not-a-repository'; a subdirectory of some
 * other repository counts as this), or nothing ('not-found').
 */
export async function isGitRepo(git: GitRunner, p: string): Promise<RepoKind> {
  let abs: string;
  try {
    abs = await realpath(p);
    if (!(await stat(abs)).isDirectory()) return 'not-a-repository';
  } catch {
    return 'not-found';
  }
  // The ceiling keeps git from discovering a repository above `abs`.
  const r = await git.run(['rev-parse', '--is-bare-repository', '--is-inside-work-tree', '--show-prefix'], {
    cwd: abs,
    env: { GIT_CEILING_DIRECTORIES: path.dirname(abs) },
    allowFail: true,
  });
  if (r.code !== 0) return 'not-a-repository';
  const [bare, inside, prefix = ''] = r.stdout.split('\n');
  if (bare === 'true') return 'bare';
  if (inside === 'true' && prefix === '') return 'repo';
  return 'not-a-repository';
}

/** True when the repository at `p` (bare or not) has at least one commit. */
export async function hasCommits(git: GitRunner, p: string): Promise<boolean> {
  const r = await git.run(['for-each-ref', '--count=1', '--format=%(objectname)', 'refs/heads'], { cwd: p, allowFail: true });
  if (r.code === 0 && r.stdout.trim() !== '') return true;
  const head = await git.run(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd: p, allowFail: true });
  return head.code === 0;
}

/** The branch HEAD of a remote (URL or path) points at, via `git ls-remote --symref <url> HEAD`; null for an empty repository or a detached HEAD. Throws a GitError when the remote cannot be read. */
export async function defaultBranch(git: GitRunner, remoteUrlOrPath: string): Promise<string | null> {
  return (await defaultBranchHead(git, remoteUrlOrPath))?.branch ?? null;
}

/** The same answer with the commit HEAD points at, which the one `ls-remote --symref` call also lists (`<sha>\tHEAD`). */
export async function defaultBranchHead(git: GitRunner, remoteUrlOrPath: string): Promise<{ branch: string; commit: string | null } | null> {
  const r = await git.network(['ls-remote', '--symref', '--', normalizeRemote(remoteUrlOrPath), 'HEAD'], { cwd: neutralCwd() });
  const m = /^ref: refs\/heads\/(\S.*)\tHEAD$/m.exec(r.stdout);
  if (!m) return null;
  const sha = /^([0-9a-f]{40}(?:[0-9a-f]{24})?)\tHEAD$/m.exec(r.stdout);
  return { branch: m[1]!, commit: sha ? sha[1]! : null };
}

/** The commit a remote branch points at, or null when it does not exist. Throws a GitError when the remote cannot be read. */
export async function lsRemoteBranch(git: GitRunner, url: string, branch: string): Promise<string | null> {
  const ref = `refs/heads/${branch}`;
  const r = await git.network(['ls-remote', '--', normalizeRemote(url), ref], { cwd: neutralCwd() });
  for (const line of r.stdout.split('\n')) {
    const [sha, name] = line.split('\t');
    if (name === ref && sha) return sha;
  }
  return null;
}

/** The full sha `rev` names in `dir`, or null when it names nothing. */
export async function revParse(git: GitRunner, dir: string, rev: string): Promise<string | null> {
  const r = await git.run(['rev-parse', '--verify', '--quiet', '--end-of-options', rev], { cwd: dir, allowFail: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

/**
 * A small file of git's metadata (HEAD, a ref, packed-refs), read with synchronous calls: from the page cache
 * they take microseconds, where each call through libuv's thread pool costs some 0.1 ms of CPU, and Fleet reads
 * these many times a lane. Opened without following a link and without blocking, and only when it is a regular
 * file: a FIFO or a device a directive left in .git neither stalls Fleet nor feeds it forever. Throws like fs does.
 */
export function readGitFile(file: string): string {
  const fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW);
  try {
    if (!fstatSync(fd).isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EFTYPE' });
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * The commit a ref points at, read from the repository's files (a loose ref,
 * else packed-refs) without starting git: Fleet asks this many times a lane.
 * `gitDir` is the .git folder (or the bare repository). Null when the ref
 * does not exist; undefined when the files cannot answer (then ask git).
 */
export function readRef(gitDir: string, ref: string): string | null | undefined {
  if (!/^refs\/[^\0\s~^:?*[\\]+$/.test(ref) || ref.includes('..')) return undefined;
  try {
    const loose = readGitFile(path.join(gitDir, ref)).trim();
    if (/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(loose)) return loose;
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return undefined;
  }
  let packed: string;
  try {
    packed = readGitFile(path.join(gitDir, 'packed-refs'));
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
  }
  for (const line of packed.split('\n')) {
    if (line.length > 41 && line.endsWith(ref) && line[line.length - ref.length - 1] === ' ') {
      const sha = line.slice(0, line.length - ref.length - 1);
      if (/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(sha)) return sha;
    }
  }
  return null;
}

/** The branch HEAD names and the commit it points at, read from the files; undefined when they cannot answer. */
export function readHead(gitDir: string): { ref: string; commit: string | null } | undefined {
  let head: string;
  try {
    head = readGitFile(path.join(gitDir, 'HEAD')).trim();
  } catch {
    return undefined;
  }
  const m = /^ref: (refs\/heads\/.+)$/.exec(head);
  if (!m) return undefined;
  const commit = readRef(gitDir, m[1]!);
  return commit === undefined ? undefined : { ref: m[1]!, commit };
}

/** The .git folder of a repository on disk: `<p>/.git` for a working copy, `p` itself for a bare one. */
export function gitDirOf(p: string): string {
  return existsSync(path.join(p, '.git')) ? path.join(p, '.git') : p;
}

/** The tree of a commit. */
export async function treeOf(git: GitRunner, dir: string, rev: string): Promise<string> {
  const r = await git.run(['rev-parse', '--verify', '--end-of-options', `${rev}^{tree}`], { cwd: dir });
  return r.stdout.trim();
}

/** The first parent of a commit; null for a root commit. */
export async function parentOf(git: GitRunner, dir: string, rev: string): Promise<string | null> {
  return revParse(git, dir, `${rev}^1^{commit}`);
}

/** Is `ancestor` reachable from `rev` (a lane's commit already merged into the integration)? */
export async function isAncestor(git: GitRunner, dir: string, ancestor: string, rev: string): Promise<boolean> {
  return (await git.run(['merge-base', '--is-ancestor', ancestor, rev], { cwd: dir, allowFail: true })).code === 0;
}
