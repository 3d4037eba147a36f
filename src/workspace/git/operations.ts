/**
 * What Fleet does to a lane's working copy with git: the clone a lane starts from, the changes a directive made,
 * the commit that holds them, the patch between two commits, and the integration's merge, replay and fetch. Each
 * takes the Git to run with (git.ts) as its first argument: the identity a commit is by and its signing are that
 * Git's. Pushing is push.ts's; reading refs, refs.ts's.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { gitDirOf, isLocalRemote, normalizeRemote, readHead, readRef, revParse, treeOf } from './refs.js';
import type { Borrowing } from './object-cache.js';
import { GitError, type GitRunner, isTransientGitFailure } from './run.js';

// ---------------------------------------------------------------------------
// A lane's working copy
// ---------------------------------------------------------------------------

export interface CloneForLaneOptions {
  /** The branch to start from; defaults to the remote's default branch (its HEAD). */
  base?: string;
  /** The lane branch created locally at the base commit. */
  branch: string;
  /** Shallow clone depth, for network remotes only (git ignores depth for local paths). */
  depth?: number;
  /** Extra environment for the network calls (a forge's credentials as an extra header). */
  env?: Record<string, string>;
  /** How long the clone (and the fetch) may take, each try; default DEFAULT_GIT_TIMEOUT_MS. */
  timeoutMs?: number;
  /**
   * Where the lane branch lives when not in the cloned repository (a fork): `origin` then points there, so the lane
   * branch's state is read from it and the push goes to it, while the base came from `url`.
   */
  headUrl?: string;
  /**
   * What the object cache lends (object-cache.ts): the repository to clone with `--reference` (none: a plain clone),
   * and what to do with the clone right after git's clone, before anything reads it (keep its packs, cut its link).
   * A clone that fails while borrowing is tried once plainly.
   */
  borrow?: Borrowing;
}

export interface CloneForLaneResult {
  base_branch: string;
  base_commit: string;
  /** Where the lane branch already is on the remote (a previous run), or null; the lease for `pushBranch`. */
  remote_branch_commit: string | null;
}

/** What git says when the remote or the network refused the clone: a plain clone would meet it the same way. */
const SAME_WITHOUT_CACHE =
  /Authentication failed|could not read Username|The requested URL returned error|not found|Could not resolve host|Failed to connect|Connection (?:refused|reset|timed out)/i;

/**
 * Clones one branch of `url` into `dir` (hard-linking objects for a local
 * path), learns where the lane branch already is on the remote (fetched into
 * refs/remotes/origin/<branch> so its tree can be compared), and checks out
 * the lane branch at the base commit.
 */
export async function cloneForLane(git: GitRunner, url: string, dir: string, opts: CloneForLaneOptions): Promise<CloneForLaneResult> {
  const src = normalizeRemote(url);
  const target = path.resolve(dir);
  await mkdir(path.dirname(target), { recursive: true });
  const args = ['clone', '--quiet', '--no-tags', '--single-branch', '--template=', '-c', 'core.quotePath=false'];
  if (opts.base) args.push('--branch', opts.base);
  if (opts.depth !== undefined && opts.depth > 0 && !isLocalRemote(src)) args.push('--depth', String(opts.depth));
  // A try that was killed or cut off leaves a partial working copy behind: the next starts from nothing.
  const clean = () => rm(target, { recursive: true, force: true });
  const cloneFrom = (borrowed: string[]) =>
    git.network([...args, ...borrowed, '--', src, target], { cwd: path.dirname(target), env: opts.env, timeoutMs: opts.timeoutMs, before: clean });
  const borrow = isLocalRemote(src) ? undefined : opts.borrow;
  const gitDir = path.join(target, '.git');
  const plain = async () => {
    await cloneFrom([]);
    await borrow?.cloned(gitDir);
  };
  // Borrowed: nothing is checked out until every object is the clone's own and checked (object-cache.ts); then the
  // base is read from those. False when the cache could not lend (a broken or planted cache: an optimisation lost,
  // not a lane). What a plain clone would meet the same way (an interrupt, a timeout, a refused credential, a
  // missing repository) is thrown, not tried twice.
  const borrowed = async (reference: string): Promise<boolean> => {
    try {
      await cloneFrom(['--reference', reference, '--no-checkout']);
    } catch (err) {
      // Judged by what git said, not by the message, which names the URL and the folders (a lane named fix-404).
      const e = err as GitError;
      const said = e.stderr ?? '';
      if (e.killedBy || /timed out after/.test(e.message) || SAME_WITHOUT_CACHE.test(said) || isTransientGitFailure(said)) throw err;
      return false;
    }
    try {
      await borrow!.cloned(gitDir);
      await git.run(['reset', '--hard', '--quiet'], { cwd: target });
      return true;
    } catch {
      return false;
    }
  };
  if (borrow?.reference) {
    if (!(await borrowed(borrow.reference))) {
      await clean();
      await borrow.discard();
      await plain();
    }
  } else {
    await plain();
  }

  // The lane branch's remote state is fetched while HEAD is read and the lane
  // branch checked out: they touch different refs, and fetch not the index.
  // On a remote on disk, a lane branch that does not exist yet (the usual first run) needs no fetch at all.
  if (opts.headUrl) await git.run(['remote', 'set-url', 'origin', normalizeRemote(opts.headUrl)], { cwd: target });
  const wanted = opts.base === undefined || opts.branch !== opts.base;
  const onDisk = wanted && !opts.headUrl && isLocalRemote(src) && !/^file:/i.test(src);
  let exists = wanted;
  if (onDisk) {
    const onRemote = readRef(gitDirOf(src), `refs/heads/${opts.branch}`);
    exists =
      onRemote === undefined
        ? (
            await git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${opts.branch}`], {
              cwd: src,
              env: { GIT_CEILING_DIRECTORIES: path.dirname(src) },
              allowFail: true,
            })
          ).code === 0
        : onRemote !== null;
  }
  const fetching = exists
    ? git.network(['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', 'origin', `+refs/heads/${opts.branch}:refs/remotes/origin/${opts.branch}`], {
        cwd: target,
        allowFail: true,
        env: opts.env,
        timeoutMs: opts.timeoutMs,
      })
    : null;
  const checkingOut = (async () => {
    // The commit and the branch HEAD points at: from the files when they say, else one call ("HEAD" when detached, e.g. a tag as base).
    const fromFiles = readHead(path.join(target, '.git'));
    const head = fromFiles?.commit
      ? { code: 0, stdout: `${fromFiles.commit}\n${fromFiles.ref.slice('refs/heads/'.length)}\n`, stderr: '' }
      : await git.run(['rev-parse', 'HEAD', '--abbrev-ref', 'HEAD'], { cwd: target, allowFail: true });
    const [commit, abbrev] = head.stdout.trim().split('\n');
    if (head.code !== 0 || !commit || !abbrev) {
      throw new GitError(['clone', '--', src, target], 128, head.stderr, 'the remote repository has no commits (empty repository)');
    }
    if (!startBranch(path.join(target, '.git'), opts.branch, commit)) {
      await git.run(['checkout', '--quiet', '-B', opts.branch, commit], { cwd: target });
    }
    return { base_commit: commit, base_branch: abbrev === 'HEAD' ? (opts.base ?? 'HEAD') : abbrev };
  })();
  const [fetch, checkedOut] = await Promise.allSettled([fetching ?? Promise.resolve(null), checkingOut]);
  if (checkedOut.status === 'rejected') throw checkedOut.reason;
  if (fetch.status === 'rejected') throw fetch.reason;
  const { base_commit, base_branch } = checkedOut.value;

  let remote_branch_commit: string | null = null;
  if (opts.branch === base_branch) {
    remote_branch_commit = base_commit;
  } else if (fetch.value && fetch.value.code === 0) {
    remote_branch_commit = await revParse(git, target, `refs/remotes/origin/${opts.branch}`);
  } else if (fetch.value && !/couldn't find remote ref|could not find remote ref/i.test(fetch.value.stderr)) {
    throw new GitError(['fetch', 'origin', `refs/heads/${opts.branch}`], fetch.value.code, fetch.value.stderr);
  }
  return { base_branch, base_commit, remote_branch_commit };
}

/**
 * A branch name whose ref Fleet writes as a plain file: components of letters, digits, `.`, `_` and `-` that
 * start with neither `.` nor `-`, end with neither `.` nor `.lock`, no `..`. Git accepts every such name;
 * any other is left to git, which knows all of its rules.
 */
const PLAIN_BRANCH = /^(?:[A-Za-z0-9_][A-Za-z0-9._-]*\/)*[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/**
 * Creates refs/heads/<branch> at `commit` and points HEAD at it, by writing the two files as
 * `git checkout -B <branch> <commit>` would, when the working tree and the index already are `commit`'s (just
 * cloned): a git process less per lane. False, having changed nothing git would mind (at most an empty folder
 * under refs/heads), when the name is not plain or the ref already exists in any form: then git does it.
 */
function startBranch(gitDir: string, branch: string, commit: string): boolean {
  if (!PLAIN_BRANCH.test(branch) || branch.includes('..') || /(?:\.|\.lock)(?:\/|$)/.test(branch)) return false;
  const ref = `refs/heads/${branch}`;
  if (readRef(gitDir, ref) !== null) return false;
  const file = path.join(gitDir, ref);
  const lock = path.join(gitDir, 'HEAD.lock');
  // Synchronous, as readRef: two small files in a fresh clone, written in microseconds.
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    // 'wx': a ref that appeared meanwhile (or a folder of that name, for a longer branch) is git's to sort out.
    writeFileSync(file, `${commit}\n`, { flag: 'wx' });
  } catch {
    return false;
  }
  let locked = false;
  try {
    // As git does it: HEAD is replaced whole through HEAD.lock, never seen half-written.
    writeFileSync(lock, `ref: ${ref}\n`, { flag: 'wx' });
    locked = true;
    renameSync(lock, path.join(gitDir, 'HEAD'));
    return true;
  } catch {
    if (locked) rmSync(lock, { force: true });
    return false; // the branch exists now; `checkout -B` resets it and moves HEAD
  }
}

export interface ChangedEntry {
  /** A (added), M (modified), D (deleted), R (renamed), C (copied), T (type changed). */
  status: string;
  path: string;
  /** The old path of a rename or copy. */
  from?: string;
}

export interface ChangedFiles {
  /** Every path the directive added, modified or deleted (the new path of a rename), sorted. */
  files: string[];
  /** The old paths of renamed files, sorted. They no longer exist: a fence must check them too. */
  renamed_from: string[];
  entries: ChangedEntry[];
}

/**
 * Stages everything (`git add -A`: untracked files not ignored, deletions,
 * renames) and lists the staged changes against HEAD. Paths come out exactly
 * (NUL-separated, no quoting), spaces and unicode included.
 */
export async function changedFiles(git: GitRunner, dir: string): Promise<ChangedFiles> {
  await git.run(['add', '--all'], { cwd: dir });
  const r = await git.bytes(['diff', '--cached', '--name-status', '-z', '-M', '--no-ext-diff', 'HEAD', '--'], { cwd: dir });
  return parseNameStatus(r.stdout);
}

/**
 * What changed between two commits, read from their trees (replace refs
 * ignored, as on every call): the files a push of `to` would change on a
 * branch at `from`, whatever the index or the working tree say.
 */
export async function changedBetween(git: GitRunner, dir: string, from: string, to: string): Promise<ChangedFiles> {
  const r = await git.bytes(['diff-tree', '-r', '--name-status', '-z', '-M', '--no-ext-diff', '--end-of-options', from, to, '--'], { cwd: dir });
  return parseNameStatus(r.stdout);
}

export interface CommittedChange extends ChangedFiles {
  /** `git diff --binary -M from to`, byte for byte. */
  patch: Buffer;
}

/**
 * `changedBetween` and `diffPatchBuffer` from one git process: `diff-tree --raw -z -p` writes the listing
 * (exact paths), an empty field, then the same patch `git diff --binary` writes (the options that shape it are
 * all given, and Fleet's git reads no diff configuration but the clone's own).
 */
export async function committedChange(git: GitRunner, dir: string, from: string, to: string, opts: { maxBytes?: number } = {}): Promise<CommittedChange> {
  const r = await git.bytes(
    [
      'diff-tree',
      '-r',
      '-z',
      '--raw',
      '-p',
      '-M',
      '--binary',
      '--no-color',
      '--no-ext-diff',
      '--no-textconv',
      '--src-prefix=a/',
      '--dst-prefix=b/',
      '--end-of-options',
      from,
      to,
      '--',
    ],
    { cwd: dir, maxStdoutBytes: opts.maxBytes },
  );
  return parseRawThenPatch(r.stdout);
}

/** `--raw -z -p` output: `:<modes> <ids> <status>`, one path (two for a rename or copy), each NUL-terminated; then an empty field and the patch. */
function parseRawThenPatch(out: Buffer): CommittedChange {
  let at = 0;
  const field = (): string => {
    const end = out.indexOf(0, at);
    if (end < 0) throw new GitError(['diff-tree'], 0, '', 'diff-tree wrote a listing Fleet cannot read (a field without its NUL)');
    const text = out.toString('utf8', at, end);
    at = end + 1;
    return text;
  };
  const entries: ChangedEntry[] = [];
  while (at < out.length) {
    const head = field();
    if (head === '') break; // the separator: the patch follows
    if (!head.startsWith(':')) throw new GitError(['diff-tree'], 0, '', `diff-tree wrote a listing Fleet cannot read (${JSON.stringify(head.slice(0, 40))})`);
    const status = head.slice(head.lastIndexOf(' ') + 1)[0] ?? '';
    if (status === 'R' || status === 'C') {
      const from = field();
      entries.push({ status, path: field(), from });
    } else {
      entries.push({ status, path: field() });
    }
  }
  return { ...changedFromEntries(entries), patch: out.subarray(at) };
}

/** `--name-status -z` output: a status, then one path (two for a rename or copy), each NUL-terminated. */
function parseNameStatus(out: Buffer): ChangedFiles {
  const parts = out.toString('utf8').split('\0');
  const entries: ChangedEntry[] = [];
  for (let i = 0; i < parts.length; ) {
    const code = parts[i++];
    if (!code) continue;
    const status = code[0]!;
    if (status === 'R' || status === 'C') {
      const from = parts[i++]!;
      const to = parts[i++]!;
      entries.push({ status, path: to, from });
    } else {
      entries.push({ status, path: parts[i++]! });
    }
  }
  return changedFromEntries(entries);
}

function changedFromEntries(entries: ChangedEntry[]): ChangedFiles {
  const files = [...new Set(entries.map((e) => e.path))].sort();
  const renamed_from = [...new Set(entries.filter((e) => e.status === 'R' && e.from !== undefined).map((e) => e.from!))].sort();
  return { files, renamed_from, entries };
}

export interface CommitOptions {
  /** Skip `git add -A` because `changedFiles` just staged everything. */
  staged?: boolean;
  /** Commit even when nothing is staged (the caller reads the commit's change to learn whether there was one). */
  allowEmpty?: boolean;
}

/** Commits everything (staging it first unless `staged`) with `message` kept verbatim apart from surrounding blank lines; returns the commit sha. No hooks; signed when the Git signs. */
export async function commitAll(git: GitRunner, dir: string, message: string, opts: CommitOptions = {}): Promise<string> {
  if (!opts.staged) await git.run(['add', '--all'], { cwd: dir });
  const empty = opts.allowEmpty ? ['--allow-empty'] : [];
  await git.run([...git.signConfig(), 'commit', '--quiet', '--no-verify', '--cleanup=whitespace', ...empty, '--file=-'], { cwd: dir, input: message });
  const head = readHead(path.join(dir, '.git'));
  if (head?.commit) return head.commit;
  const r = await git.run(['rev-parse', 'HEAD'], { cwd: dir });
  return r.stdout.trim();
}

/** A binary-safe patch from `fromRev` to `toRev` (`git diff --binary`), as UTF-8 text. Use `diffPatchBuffer` for byte-exact output when files are not UTF-8. */
export async function diffPatch(git: GitRunner, dir: string, fromRev: string, toRev: string): Promise<string> {
  return (await diffPatchBuffer(git, dir, fromRev, toRev)).toString('utf8');
}

export async function diffPatchBuffer(git: GitRunner, dir: string, fromRev: string, toRev: string): Promise<Buffer> {
  const r = await git.bytes(
    ['diff', '--binary', '--no-color', '--no-ext-diff', '--no-textconv', '--src-prefix=a/', '--dst-prefix=b/', '-M', fromRev, toRev, '--'],
    { cwd: dir },
  );
  return r.stdout;
}

export type MergeOutcome = { ok: true; commit: string } | { ok: false; conflicts: string[] };

/**
 * Merges `commit` into the checked-out branch with a merge commit of its own (`--no-ff`: the integration keeps which
 * lane brought what). A conflict is aborted, the branch left as it was, and the conflicting paths returned.
 */
export async function mergeCommit(git: GitRunner, dir: string, commit: string, message: string): Promise<MergeOutcome> {
  const r = await git.run([...git.signConfig(), 'merge', '--quiet', '--no-ff', '--no-verify', '--no-edit', '-m', message, commit], {
    cwd: dir,
    allowFail: true,
  });
  if (r.code === 0) return { ok: true, commit: (await git.run(['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim() };
  const unmerged = await git.run(['diff', '--name-only', '-z', '--diff-filter=U'], { cwd: dir, allowFail: true });
  await git.run(['merge', '--abort'], { cwd: dir, allowFail: true });
  const conflicts = unmerged.stdout.split('\0').filter(Boolean).sort();
  if (!conflicts.length) throw new GitError(['merge', commit], r.code, r.stderr);
  return { ok: false, conflicts };
}

/** A commit on a branch beyond its base (see src/core/branch-conflict.ts). */
export interface BranchCommitInfo {
  commit: string;
  parents: string[];
  author: string;
  message: string;
  cleanMerge?: boolean;
}

/** The commits `head` holds that `base` lacks, oldest first: at most `max` (the newest `max` when there are more). */
export async function commitsBetween(git: GitRunner, dir: string, base: string, head: string, max: number): Promise<BranchCommitInfo[]> {
  // Four fields a commit, each ended by a NUL: none can hold one (git prints a message up to its first NUL, and an
  // author with one as no author), whereas a message or an author may hold any other byte a separator could be.
  const r = await git.run(['log', '--topo-order', `--max-count=${max}`, '--format=%H%x00%P%x00%an <%ae>%x00%B%x00', `${base}..${head}`, '--'], {
    cwd: dir,
  });
  const fields = r.stdout.split('\0');
  const out: BranchCommitInfo[] = [];
  for (let i = 0; i + 3 < fields.length; i += 4) {
    // Each commit after the first starts on a line of its own (the format's terminator).
    const commit = fields[i]!.replace(/^\n/, '');
    if (!/^[0-9a-f]{40,64}$/.test(commit))
      throw new GitError(['log'], 0, '', `git log wrote a listing Fleet cannot read (${JSON.stringify(commit.slice(0, 40))})`);
    out.push({ commit, parents: fields[i + 1]!.split(' ').filter(Boolean), author: fields[i + 2]!, message: fields[i + 3]!.trim() });
  }
  // A merge is Fleet's to redo only when it changed nothing beyond merging (merge-tree needs git 2.38; older: not clean).
  for (const c of out) {
    if (c.parents.length !== 2) continue;
    const merged = await git.run(['merge-tree', '--write-tree', '--', c.parents[0]!, c.parents[1]!], { cwd: dir, allowFail: true });
    c.cleanMerge = merged.code === 0 && merged.stdout.split('\n', 1)[0] === (await treeOf(git, dir, c.commit));
  }
  return out.reverse();
}

/**
 * Puts `commits` (oldest first) on the checked-out branch: a commit whose first parent is the branch's head already is
 * taken as it is (fast-forward), any other is cherry-picked (a merge as its change against its first parent), one
 * whose change the branch already holds is dropped. A conflict is aborted, the branch left where it was before that
 * commit, and the commit and its paths returned. Replayed commits are never signed (see identity.ts signConfig).
 */
export async function replayCommits(
  git: GitRunner,
  dir: string,
  commits: readonly BranchCommitInfo[],
): Promise<{ ok: true; head: string } | { ok: false; commit: string; conflicts: string[] }> {
  let head = (await git.run(['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim();
  for (const c of commits) {
    if (c.parents[0] === head && c.parents.length === 1) {
      await git.run(['reset', '--quiet', '--hard', c.commit], { cwd: dir });
      head = c.commit;
      continue;
    }
    // Not signed: the commit is someone else's work, which Fleet's key should not vouch for.
    const args = ['cherry-pick', '--allow-empty', ...(c.parents.length > 1 ? ['-m', '1'] : []), c.commit];
    const r = await git.run(args, { cwd: dir, allowFail: true });
    if (r.code !== 0) {
      const unmerged = await git.run(['diff', '--name-only', '-z', '--diff-filter=U'], { cwd: dir, allowFail: true });
      const conflicts = unmerged.stdout.split('\0').filter(Boolean).sort();
      if (conflicts.length) {
        await git.run(['cherry-pick', '--abort'], { cwd: dir, allowFail: true });
        return { ok: false, commit: c.commit, conflicts };
      }
      // --allow-empty keeps a commit that was empty to begin with; one whose change the base took meanwhile stops
      // the cherry-pick as "now empty": dropped.
      const empty = (await git.run(['diff', '--cached', '--quiet', 'HEAD'], { cwd: dir, allowFail: true })).code === 0;
      if (!empty) throw new GitError(args, r.code, r.stderr);
      await git.run(['cherry-pick', '--skip'], { cwd: dir, allowFail: true });
      await git.run(['reset', '--quiet', '--hard', head], { cwd: dir });
      continue;
    }
    head = (await git.run(['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim();
  }
  return { ok: true, head };
}

/** Fetches `branch` of `url` into refs/remotes/fleet/<branch>; its commit, or null when the remote has no such branch. */
export async function fetchBranch(
  git: GitRunner,
  dir: string,
  url: string,
  branch: string,
  env?: Record<string, string>,
  timeoutMs?: number,
): Promise<string | null> {
  const r = await git.network(
    ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', normalizeRemote(url), `+refs/heads/${branch}:refs/remotes/fleet/${branch}`],
    { cwd: dir, env, timeoutMs, allowFail: true },
  );
  if (r.code !== 0) {
    if (/couldn't find remote ref|could not find remote ref/i.test(r.stderr)) return null;
    throw new GitError(['fetch', url, branch], r.code, r.stderr);
  }
  return revParse(git, dir, `refs/remotes/fleet/${branch}`);
}
