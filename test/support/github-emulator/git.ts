/**
 * Git plumbing over the emulator's bare repositories. Every call is one git
 * process with a clean environment (no inherited GIT_DIR & co., no hooks, no
 * prompts), so the emulator behaves the same inside a git hook or a CI job.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir as mkdirFs, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';

export const GIT_ENV: NodeJS.ProcessEnv = (() => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('GIT_')) delete env[k];
  return {
    ...env,
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'GitHub',
    GIT_AUTHOR_EMAIL: 'noreply@github.com',
    GIT_COMMITTER_NAME: 'GitHub',
    GIT_COMMITTER_EMAIL: 'noreply@github.com',
  };
})();

export interface GitResult {
  stdout: string;
  stderr: string;
  code: number;
}

export function git(
  gitDir: string | null,
  args: string[],
  opts: { input?: string | Buffer; allowFail?: boolean; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<GitResult> {
  const full = ['-c', 'core.hooksPath=/dev/null', '-c', 'commit.gpgsign=false', '-c', 'core.quotePath=false'];
  if (gitDir) full.push('--git-dir', gitDir);
  full.push(...args);
  return new Promise((resolve, reject) => {
    const child = spawn('git', full, {
      cwd: opts.cwd ?? os.tmpdir(),
      env: { ...GIT_ENV, ...opts.env },
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      const r = { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), code: code ?? -1 };
      if (r.code !== 0 && !opts.allowFail) reject(new Error(`git ${args.join(' ')} → ${r.code}: ${r.stderr.trim()}`));
      else resolve(r);
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

export async function initBare(dir: string, branch: string): Promise<void> {
  await git(null, ['init', '--quiet', '--bare', `--initial-branch=${branch}`, '--template=', dir]);
  await git(dir, ['config', 'http.receivepack', 'true']);
  await git(dir, ['config', 'uploadpack.allowAnySHA1InWant', 'true']);
  await git(dir, ['config', 'receive.denyDeleteCurrent', 'false']);
}

function quotePath(p: string): string {
  return `"${p.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

let clock = Math.floor(Date.now() / 1000);

/** One commit on `ref` through fast-import; `files` maps paths to content, null deletes. Returns the commit sha. */
export async function commitFiles(
  gitDir: string,
  ref: string,
  files: Record<string, string | Buffer | null>,
  opts: { message: string; from?: string | null; author?: { name: string; email: string } },
): Promise<string> {
  const chunks: Buffer[] = [];
  const w = (s: string | Buffer): void => {
    chunks.push(typeof s === 'string' ? Buffer.from(s, 'utf8') : s);
  };
  const t = Math.max(clock++, Math.floor(Date.now() / 1000));
  const who = opts.author ?? { name: 'GitHub', email: 'noreply@github.com' };
  const msg = Buffer.from(opts.message.endsWith('\n') ? opts.message : `${opts.message}\n`, 'utf8');
  w(`commit ${ref}\n`);
  w(`author ${who.name} <${who.email}> ${t} +0000\n`);
  w(`committer ${who.name} <${who.email}> ${t} +0000\n`);
  w(`data ${msg.length}\n`);
  w(msg);
  w('\n');
  if (opts.from) w(`from ${opts.from}\n`);
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
  await git(gitDir, ['fast-import', '--quiet', '--force'], { input: Buffer.concat(chunks) });
  return (await readRefFs(gitDir, ref)) ?? (await git(gitDir, ['rev-parse', ref])).stdout.trim();
}

/**
 * Every ref of the repository: refname → sha, as `git for-each-ref` lists them, read from the repository's files
 * (packed-refs, then the loose refs over them): the emulator lists refs on most requests, and a git process per
 * request is most of what a test's worker forks. A ref file that is not a plain object id (a symbolic ref, a write
 * under way) sends the listing to git itself.
 */
export async function listRefs(gitDir: string, prefix = 'refs/'): Promise<Map<string, string>> {
  const read = await listRefsFs(gitDir, prefix);
  if (read) return read;
  const r = await git(gitDir, ['for-each-ref', '--format=%(objectname) %(refname)', prefix]);
  const m = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    if (!line) continue;
    const i = line.indexOf(' ');
    m.set(line.slice(i + 1), line.slice(0, i));
  }
  return m;
}

async function listRefsFs(gitDir: string, prefix: string): Promise<Map<string, string> | null> {
  // A pattern with wildcards is for-each-ref's fnmatch: left to git.
  if (!prefix.startsWith('refs/') || /[*?[\\]/.test(prefix)) return null;
  const m = new Map<string, string>();
  try {
    const packed = await readFile(path.join(gitDir, 'packed-refs'), 'utf8');
    for (const line of packed.split('\n')) {
      if (line.length > 41 && line[40] === ' ' && /^[0-9a-f]{40}$/.test(line.slice(0, 40))) m.set(line.slice(41), line.slice(0, 40));
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return null;
  }
  let plain = true;
  const walk = async (dir: string, ref: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') plain = false;
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) await walk(path.join(dir, e.name), `${ref}${e.name}/`);
      else if (e.isFile() && !e.name.endsWith('.lock')) {
        const v = (await readFile(path.join(dir, e.name), 'utf8').catch(() => '')).trim();
        if (/^[0-9a-f]{40}$/.test(v)) m.set(`${ref}${e.name}`, v);
        else plain = false;
      } else if (!e.isFile()) plain = false;
    }
  };
  await walk(path.join(gitDir, 'refs'), 'refs/');
  if (!plain) return null;
  // for-each-ref's order: by refname, bytewise; only the refs under the prefix (a pattern naming a folder, or a ref).
  const p = prefix.endsWith('/') ? prefix : `${prefix}/`;
  const under = [...m.keys()].filter((k) => k.startsWith(p) || k === prefix).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return new Map(under.map((k) => [k, m.get(k)!]));
}

export async function revParse(gitDir: string, rev: string): Promise<string | null> {
  const r = await git(gitDir, ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`], { allowFail: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

export async function mergeBase(gitDir: string, a: string, b: string): Promise<string | null> {
  const r = await git(gitDir, ['merge-base', a, b], { allowFail: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

export async function countCommits(gitDir: string, range: string): Promise<number> {
  const r = await git(gitDir, ['rev-list', '--count', range]);
  return Number(r.stdout.trim());
}

export interface CommitInfo {
  sha: string;
  tree: string;
  parents: string[];
  author: { name: string; email: string; date: string };
  committer: { name: string; email: string; date: string };
  message: string;
}

const LOG_FORMAT = '%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B%x00%x01';

function parseLog(out: string): CommitInfo[] {
  const res: CommitInfo[] = [];
  for (const rec of out.split('\x00\x01')) {
    const body = rec.replace(/^\n/, '');
    if (!body) continue;
    const f = body.split('\x00');
    if (f.length < 10) continue;
    res.push({
      sha: f[0]!,
      tree: f[1]!,
      parents: f[2] ? f[2].split(' ') : [],
      author: { name: f[3]!, email: f[4]!, date: toZ(f[5]!) },
      committer: { name: f[6]!, email: f[7]!, date: toZ(f[8]!) },
      message: f[9]!.replace(/\n+$/, ''),
    });
  }
  return res;
}

function toZ(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export async function readCommit(gitDir: string, rev: string): Promise<CommitInfo | null> {
  const r = await git(gitDir, ['log', '-1', `--format=${LOG_FORMAT}`, `${rev}^{commit}`, '--'], { allowFail: true });
  if (r.code !== 0) return null;
  return parseLog(r.stdout)[0] ?? null;
}

/** Commits in `range` (e.g. `base..head`), oldest first. */
export async function logRange(gitDir: string, range: string, limit = 250): Promise<CommitInfo[]> {
  const r = await git(gitDir, ['log', '--reverse', `--max-count=${limit}`, `--format=${LOG_FORMAT}`, range, '--']);
  return parseLog(r.stdout);
}

export interface DiffFile {
  filename: string;
  previous_filename?: string;
  status: 'added' | 'removed' | 'modified' | 'renamed' | 'copied' | 'changed' | 'unchanged';
  sha: string | null;
  additions: number;
  deletions: number;
  changes: number;
  patch?: string;
  binary: boolean;
}

/** Files changed from `a` to `b` (both commits), with line counts and patches, like GitHub's diff entries. */
export async function diffFiles(gitDir: string, a: string, b: string): Promise<DiffFile[]> {
  const raw = await git(gitDir, ['diff-tree', '-r', '-z', '-M', '--raw', '--no-commit-id', a, b]);
  const num = await git(gitDir, ['diff-tree', '-r', '-z', '-M', '--numstat', '--no-commit-id', a, b]);
  const files: DiffFile[] = [];
  const f = raw.stdout.split('\0');
  for (let i = 0; i < f.length; ) {
    const meta = f[i++];
    if (!meta?.startsWith(':')) continue;
    const parts = meta.slice(1).split(' ');
    const dstSha = parts[3]!;
    const code = parts[4]![0]!;
    const p1 = f[i++]!;
    let p2: string | undefined;
    if (code === 'R' || code === 'C') p2 = f[i++]!;
    const status: DiffFile['status'] =
      code === 'A' ? 'added' : code === 'D' ? 'removed' : code === 'R' ? 'renamed' : code === 'C' ? 'copied' : code === 'M' ? 'modified' : 'changed';
    const file: DiffFile = {
      filename: p2 ?? p1,
      status,
      sha: status === 'removed' ? null : dstSha,
      additions: 0,
      deletions: 0,
      changes: 0,
      binary: false,
    };
    if (p2 !== undefined) file.previous_filename = p1;
    if (status === 'removed') file.sha = parts[2]!;
    files.push(file);
  }
  // numstat -z: "add\tdel\tpath\0" or "add\tdel\t\0old\0new\0" for renames.
  const n = num.stdout.split('\0');
  const counts = new Map<string, { add: number; del: number; binary: boolean }>();
  for (let i = 0; i < n.length; ) {
    const rec = n[i++];
    if (!rec) continue;
    const [add, del, p] = rec.split('\t');
    let name = p ?? '';
    if (name === '') {
      i++; // old path
      name = n[i++] ?? '';
    }
    const binary = add === '-';
    counts.set(name, { add: binary ? 0 : Number(add), del: binary ? 0 : Number(del), binary });
  }
  for (const file of files) {
    const c = counts.get(file.filename);
    if (c) {
      file.additions = c.add;
      file.deletions = c.del;
      file.changes = c.add + c.del;
      file.binary = c.binary;
    }
  }
  // Patches: one `git diff` split per file (GitHub's `patch` is the hunks only).
  const patch = await git(gitDir, ['diff', '-M', '--no-color', '--no-ext-diff', a, b, '--']);
  const byFile = new Map<string, string>();
  let current: string | null = null;
  let hunks: string[] = [];
  const flush = (): void => {
    if (current !== null && hunks.length) byFile.set(current, hunks.join('\n'));
  };
  for (const line of patch.stdout.split('\n')) {
    if (line.startsWith('diff --git ')) {
      flush();
      current = null;
      hunks = [];
      continue;
    }
    if (hunks.length === 0 && line.startsWith('+++ ')) {
      if (line !== '+++ /dev/null') current = unquoteDiffPath(line.slice(4)).replace(/^b\//, '');
      continue;
    }
    if (hunks.length === 0 && line.startsWith('--- ')) {
      const old = line === '--- /dev/null' ? null : unquoteDiffPath(line.slice(4)).replace(/^a\//, '');
      current = old;
      continue;
    }
    if (line.startsWith('@@') || hunks.length) hunks.push(line);
  }
  flush();
  for (const file of files) {
    const p = byFile.get(file.filename);
    if (p !== undefined) file.patch = p.replace(/\n$/, '');
  }
  return files;
}

function unquoteDiffPath(s: string): string {
  if (!s.startsWith('"')) return s.replace(/\t$/, '');
  try {
    return JSON.parse(s) as string;
  } catch {
    return s;
  }
}

/** `git merge-tree --write-tree`: the merged tree, or null on conflict. */
export async function mergeTree(gitDir: string, ours: string, theirs: string): Promise<{ tree: string | null; conflicts: string[] }> {
  const r = await git(gitDir, ['merge-tree', '--write-tree', '--name-only', '--no-messages', ours, theirs], { allowFail: true });
  const lines = r.stdout.split('\n').filter(Boolean);
  if (r.code === 0) return { tree: lines[0]!, conflicts: [] };
  if (r.code === 1) return { tree: null, conflicts: lines.slice(1) };
  throw new Error(`git merge-tree failed: ${r.stderr}`);
}

export async function commitTree(gitDir: string, tree: string, parents: string[], message: string, who?: { name: string; email: string }): Promise<string> {
  const args = ['commit-tree', tree];
  for (const p of parents) args.push('-p', p);
  const env: NodeJS.ProcessEnv = who ? { GIT_AUTHOR_NAME: who.name, GIT_AUTHOR_EMAIL: who.email } : {};
  const r = await git(gitDir, args, { input: message.endsWith('\n') ? message : `${message}\n`, env });
  return r.stdout.trim();
}

/** Moves `ref` from `expected` (null: must not exist) to `value`; false when it moved meanwhile. */
export async function updateRef(gitDir: string, ref: string, value: string, expected: string | null): Promise<boolean> {
  const r = await git(gitDir, ['update-ref', ref, value, expected ?? '0000000000000000000000000000000000000000'], { allowFail: true });
  return r.code === 0;
}

export async function deleteRef(gitDir: string, ref: string): Promise<boolean> {
  const r = await git(gitDir, ['update-ref', '-d', ref], { allowFail: true });
  return r.code === 0;
}

/**
 * Replays the commits of `base..head` onto `onto` (a rebase merge) in a
 * temporary worktree of the bare repository; returns the new tip, or null
 * when a commit does not apply.
 */
export async function replayCommits(gitDir: string, onto: string, base: string, head: string): Promise<string | null> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'emu-rebase-'));
  const wt = path.join(tmp, 'wt');
  try {
    await git(gitDir, ['worktree', 'add', '--quiet', '--detach', wt, onto]);
    const r = await git(null, ['cherry-pick', '--allow-empty', '--keep-redundant-commits', `${base}..${head}`], { cwd: wt, allowFail: true });
    if (r.code !== 0) {
      await git(null, ['cherry-pick', '--abort'], { cwd: wt, allowFail: true });
      return null;
    }
    return (await git(null, ['rev-parse', 'HEAD'], { cwd: wt })).stdout.trim();
  } finally {
    await git(gitDir, ['worktree', 'remove', '--force', wt], { allowFail: true });
    await rm(tmp, { recursive: true, force: true });
    await git(gitDir, ['worktree', 'prune'], { allowFail: true });
  }
}

export async function objectExists(gitDir: string, sha: string): Promise<boolean> {
  const r = await git(gitDir, ['cat-file', '-e', `${sha}^{commit}`], { allowFail: true });
  return r.code === 0;
}

// ---------------------------------------------------------------- without a git process
// Repository creation and ref reads are on every test's hot path (a test of
// 1,000 targets creates 1,000 repositories): they are done with the file
// system, writing loose objects exactly as git does.

async function writeObject(gitDir: string, type: 'blob' | 'tree' | 'commit', content: Buffer): Promise<string> {
  const data = Buffer.concat([Buffer.from(`${type} ${content.length}\0`), content]);
  const sha = createHash('sha1').update(data).digest('hex');
  const dir = path.join(gitDir, 'objects', sha.slice(0, 2));
  await mkdirFs(dir, { recursive: true });
  await writeFile(path.join(dir, sha.slice(2)), deflateSync(data), { flag: 'w' });
  return sha;
}

type TreeNode = Map<string, Buffer | TreeNode>;

async function writeTree(gitDir: string, node: TreeNode): Promise<string> {
  const entries: Array<{ name: string; mode: string; sha: string; dir: boolean }> = [];
  for (const [name, v] of node) {
    if (Buffer.isBuffer(v)) entries.push({ name, mode: '100644', sha: await writeObject(gitDir, 'blob', v), dir: false });
    else entries.push({ name, mode: '40000', sha: await writeTree(gitDir, v), dir: true });
  }
  // git orders tree entries by name, a directory sorting as if its name ended in '/'.
  entries.sort((a, b) => Buffer.compare(Buffer.from(a.dir ? `${a.name}/` : a.name), Buffer.from(b.dir ? `${b.name}/` : b.name)));
  const parts: Buffer[] = [];
  for (const e of entries) parts.push(Buffer.from(`${e.mode} ${e.name}\0`), Buffer.from(e.sha, 'hex'));
  return writeObject(gitDir, 'tree', Buffer.concat(parts));
}

function buildTree(files: Record<string, string | Buffer | null>): TreeNode {
  const root: TreeNode = new Map();
  for (const [p, content] of Object.entries(files)) {
    if (content === null) continue;
    const parts = p.split('/').filter(Boolean);
    if (parts.length === 0 || parts.some((x) => x === '.' || x === '..' || x === '.git')) throw new Error(`bad path ${p}`);
    let node = root;
    for (const dir of parts.slice(0, -1)) {
      let next = node.get(dir);
      if (next === undefined || Buffer.isBuffer(next)) {
        next = new Map();
        node.set(dir, next);
      }
      node = next;
    }
    node.set(parts[parts.length - 1]!, Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8'));
  }
  return root;
}

/** A bare repository skeleton (what `git init --bare` leaves), configured for smart HTTP. */
export async function initBareFs(gitDir: string, branch: string): Promise<void> {
  for (const d of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags', 'info']) await mkdirFs(path.join(gitDir, d), { recursive: true });
  await writeFile(path.join(gitDir, 'HEAD'), `ref: refs/heads/${branch}\n`);
  await writeFile(
    path.join(gitDir, 'config'),
    '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n[http]\n\treceivepack = true\n[uploadpack]\n\tallowAnySHA1InWant = true\n[receive]\n\tdenyDeleteCurrent = false\n',
  );
  await writeFile(path.join(gitDir, 'description'), 'github emulator repository\n');
}

/** Writes one commit of exactly `files` (a full tree) on `ref`, with loose objects; returns its sha. */
export async function writeCommitFs(
  gitDir: string,
  ref: string,
  files: Record<string, string | Buffer | null>,
  opts: { message: string; parent?: string | null; time?: number },
): Promise<string> {
  const tree = await writeTree(gitDir, buildTree(files));
  const t = opts.time ?? Math.floor(Date.now() / 1000);
  const who = `GitHub <noreply@github.com> ${t} +0000`;
  const msg = opts.message.endsWith('\n') ? opts.message : `${opts.message}\n`;
  const body = `tree ${tree}\n${opts.parent ? `parent ${opts.parent}\n` : ''}author ${who}\ncommitter ${who}\n\n${msg}`;
  const sha = await writeObject(gitDir, 'commit', Buffer.from(body, 'utf8'));
  const refPath = path.join(gitDir, ref);
  await mkdirFs(path.dirname(refPath), { recursive: true });
  await writeFile(refPath, `${sha}\n`);
  return sha;
}

const SAFE_REF = /^refs\/(?!.*\.\.)(?!.*\/\.)(?!.*\.lock(\/|$))[^\s~^:?*[\\\x00-\x1f\x7f]+$/;

/** Reads a ref straight from the repository files (loose, then packed-refs); null when absent. */
export async function readRefFs(gitDir: string, ref: string): Promise<string | null> {
  if (!SAFE_REF.test(ref) || ref.endsWith('/')) return null;
  try {
    const v = (await readFile(path.join(gitDir, ref), 'utf8')).trim();
    if (/^[0-9a-f]{40}$/.test(v)) return v;
    if (v.startsWith('ref: ')) return readRefFs(gitDir, v.slice(5));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'EISDIR') throw e;
  }
  try {
    const packed = await readFile(path.join(gitDir, 'packed-refs'), 'utf8');
    for (const line of packed.split('\n')) {
      if (line.length > 41 && line[40] === ' ' && line.slice(41) === ref) return line.slice(0, 40);
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  return null;
}

/** Whether the repository has any branch (loose or packed). */
export async function hasBranchesFs(gitDir: string): Promise<boolean> {
  const walk = async (dir: string): Promise<boolean> => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return false;
    }
    for (const e of entries) {
      if (e.isFile() && !e.name.endsWith('.lock')) return true;
      if (e.isDirectory() && (await walk(path.join(dir, e.name)))) return true;
    }
    return false;
  };
  if (await walk(path.join(gitDir, 'refs', 'heads'))) return true;
  try {
    const packed = await readFile(path.join(gitDir, 'packed-refs'), 'utf8');
    return /^[0-9a-f]{40} refs\/heads\//m.test(packed);
  } catch {
    return false;
  }
}

/** A file's blob at `rev` as raw bytes, or null when `path` is not a file there (missing, a folder, a submodule). */
export async function readBlobAt(gitDir: string, rev: string, path: string): Promise<{ sha: string; content: Buffer } | null> {
  const ls = await git(gitDir, ['ls-tree', '-z', rev, '--', path], { allowFail: true });
  const entry = ls.stdout.split('\0').find((e) => e.endsWith(`\t${path}`));
  if (ls.code !== 0 || !entry) return null;
  const [mode, type, sha] = entry.split('\t')[0]!.split(' ');
  if (type !== 'blob' || mode === '120000') return null;
  const out: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    const child = spawn('git', ['--git-dir', gitDir, 'cat-file', 'blob', sha!], { stdio: ['ignore', 'pipe', 'ignore'] });
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git cat-file blob ${sha} → ${code}`))));
  });
  return { sha: sha!, content: Buffer.concat(out) };
}

export interface FolderEntry {
  /** GitHub's contents type: a submodule (a gitlink) is `submodule`, a symlink (mode 120000) `symlink`. */
  type: 'file' | 'dir' | 'symlink' | 'submodule';
  sha: string;
  size: number;
  path: string;
}

/** The entries of the folder `path` ('' for the root) at `rev`, in git's order; null when it is no folder there. */
export async function readFolderAt(gitDir: string, rev: string, path: string): Promise<FolderEntry[] | null> {
  const ls = await git(gitDir, ['ls-tree', '-z', '-l', rev, '--', ...(path ? [`${path}/`] : [])], { allowFail: true });
  if (ls.code !== 0) return null;
  const entries = ls.stdout
    .split('\0')
    .filter(Boolean)
    .map((line) => {
      const tab = line.indexOf('\t');
      const [mode, kind, sha, size] = line.slice(0, tab).split(/ +/);
      const type = kind === 'tree' ? 'dir' : kind === 'commit' ? 'submodule' : mode === '120000' ? 'symlink' : 'file';
      return { type, sha: sha!, size: type === 'file' || type === 'symlink' ? Number(size) : 0, path: line.slice(tab + 1) } as FolderEntry;
    });
  // git has no empty folders: nothing listed under `path/` means a file or nothing there.
  return entries.length || !path ? entries : null;
}
