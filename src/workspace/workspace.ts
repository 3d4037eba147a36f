/**
 * The git working copies and command execution every lane uses, local or on a
 * GitHub runner: the Workspace and Executor ports over git.ts and exec.ts.
 */
import { lstatSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Executor, Workspace } from '../ports.js';
import { runCommand } from './exec.js';
import { privateTmp } from './private-tmp.js';
import { sandboxFor } from './sandbox.js';
import {
  changedFiles,
  cloneForLane,
  commitAll,
  commitsBetween,
  committedChange,
  fetchBranch,
  git,
  isAncestor,
  mergeCommit,
  parentOf,
  pushBranch,
  readGitFile,
  readHead,
  replayCommits,
  treeOf,
} from './git.js';

/**
 * The repository configuration Fleet cloned, per working copy. A directive (or a
 * check) runs with the working copy's .git in reach: it could set `core.fsmonitor`
 * or a clean filter (programs git then runs for Fleet, with Fleet's environment),
 * or `remote.origin.pushurl` / `url.*.insteadOf` (Fleet's push, with its
 * credentials, going elsewhere), or a `commondir` (refs and objects of another
 * repository). Every git call Fleet makes after the directive starts puts the
 * configuration back as cloned and removes those files first.
 */
const clonedConfig = new Map<string, string>();
const FOREIGN_GIT_FILES = ['commondir', 'config.worktree', join('info', 'attributes'), join('info', 'grafts'), join('objects', 'info', 'alternates')];

/**
 * A symbolic link anywhere in the repository's own metadata (the .git folder,
 * its top-level entries, refs/ and logs/, objects/ and its info/ and pack/),
 * or null. Through one, git (and Fleet's config guard) would write into some
 * other repository: `.git -> ../../outer/.git`, `.git/refs -> …`.
 */
function linkInGitDir(gitDir: string): string | null {
  const top = lstatSync(gitDir, { throwIfNoEntry: false });
  if (!top || top.isSymbolicLink() || !top.isDirectory()) return gitDir;
  // Synchronous: a fresh clone's metadata is a few dozen entries in the page cache, read in microseconds, where
  // each call through libuv's thread pool would cost some 0.1 ms of CPU.
  const walk = (d: string, deep: boolean): string | null => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isSymbolicLink()) return p;
      if (e.isDirectory() && (deep || ['refs', 'logs', 'objects', 'info'].includes(e.name))) {
        // objects/xx folders are many and hold only object files git reads by hash: look at objects/info and objects/pack only.
        const found = walk(p, deep || e.name === 'refs' || e.name === 'logs' || (d.endsWith('objects') && (e.name === 'info' || e.name === 'pack')));
        if (found) return found;
      }
    }
    return null;
  };
  return walk(gitDir, false);
}

/**
 * Working copies no foreign code has touched since they were last checked. Only
 * a directive or a check (run through localExecutor) can plant anything, so the
 * guard's walk runs once after each of them, not before every git call.
 */
const checked = new Set<string>();

/** Where each working copy really was when cloned (every link in its path resolved). */
const clonedAt = new Map<string, string>();

/** True when `dir` still resolves to the folder that was cloned there (no component of its path swapped for a link). */
function sameFolder(dir: string): boolean {
  const at = clonedAt.get(resolve(dir));
  if (at === undefined) return true;
  try {
    return realpathSync(dir) === at;
  } catch {
    return false;
  }
}

function guard(dir: string): void {
  const key = resolve(dir);
  if (!clonedConfig.has(key) || checked.has(key)) return;
  if (!sameFolder(dir)) throw new Error(`the working copy ${dir} is no longer the folder Fleet cloned (a link to another folder?); refusing to run git in it`);
  const link = linkInGitDir(join(dir, '.git'));
  if (link) throw new Error(`the working copy's git metadata holds a symbolic link (${link}); refusing to run git in it`);
  restore(dir);
}

/**
 * Puts the configuration back as cloned and removes the files that would bend git elsewhere, once the walk
 * found no link. What the directive left as it was (the usual case) is only read, not written again.
 */
function restore(dir: string): void {
  const key = resolve(dir);
  const config = clonedConfig.get(key);
  if (config === undefined) return;
  const gitDir = join(dir, '.git');
  const configFile = join(gitDir, 'config');
  let same = false;
  try {
    same = readGitFile(configFile) === config;
  } catch {
    // gone, a folder, a FIFO: written again below
  }
  if (!same) {
    // Remove first, then create: writing through a symlinked config would rewrite whatever it points at.
    rmSync(configFile, { force: true, recursive: true });
    writeFileSync(configFile, config, { flag: 'wx' });
  }
  for (const f of FOREIGN_GIT_FILES) {
    const p = join(gitDir, f);
    if (lstatSync(p, { throwIfNoEntry: false })) rmSync(p, { force: true, recursive: true });
  }
  checked.add(key);
}

/**
 * What git's discovery requires of a .git folder before it uses it (setup.c, is_git_directory): a HEAD that
 * names a ref under refs/ or holds an object id, an objects folder and a refs folder.
 */
function isGitDir(gitDir: string): boolean {
  try {
    const head = readGitFile(join(gitDir, 'HEAD')).trim();
    if (!/^ref:\s*refs\//.test(head) && !/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(head)) return false;
    return (
      !!statSync(join(gitDir, 'objects'), { throwIfNoEntry: false })?.isDirectory() &&
      !!statSync(join(gitDir, 'refs'), { throwIfNoEntry: false })?.isDirectory()
    );
  } catch {
    return false;
  }
}

export const localWorkspace: Workspace = {
  async clone(url, dir, opts) {
    clonedConfig.delete(resolve(dir));
    checked.delete(resolve(dir));
    const r = await cloneForLane(url, dir, opts);
    clonedConfig.set(resolve(dir), readGitFile(join(dir, '.git', 'config')));
    clonedAt.set(resolve(dir), realpathSync(dir));
    checked.add(resolve(dir));
    return r;
  },

  async intact(dir) {
    // The working copy must still be where it was cloned: a directive can write its lane's folder, and a
    // `repo` it turned into a link to another lane's working copy would have Fleet's git commit and push there.
    if (!sameFolder(dir)) return false;
    // .git must still be the folder Fleet cloned, not a link or a `gitdir:` file naming another repository.
    const gitDir = join(dir, '.git');
    if (linkInGitDir(gitDir)) return false;
    // And git must still take it for a repository (else it would look further up, or at the working tree itself):
    // the test git's discovery makes, read from the files instead of asking a git process.
    if (!isGitDir(gitDir)) return false;
    // The walk just done is the guard's: put the configuration back now, and the next git call needs no walk.
    restore(dir);
    return true;
  },

  async settle(dir, branch, base) {
    guard(dir);
    // The usual case (the directive left HEAD alone) costs a file read instead of two writes.
    const head = readHead(join(dir, '.git'));
    if (head?.ref === `refs/heads/${branch}` && head.commit === base) return;
    // Whatever the directive did with branches and commits, the lane branch ends at base with all of it uncommitted.
    await git(['update-ref', `refs/heads/${branch}`, base], { cwd: dir });
    await git(['symbolic-ref', 'HEAD', `refs/heads/${branch}`], { cwd: dir });
  },

  async reset(dir, base) {
    guard(dir);
    await git(['reset', '--quiet', '--hard', base], { cwd: dir });
    await git(['clean', '--quiet', '-ffdx'], { cwd: dir });
  },

  async changedFiles(dir) {
    guard(dir);
    const c = await changedFiles(dir);
    return [...new Set([...c.files, ...c.renamed_from])].sort();
  },

  async commit(dir, message) {
    guard(dir);
    return commitAll(dir, message, { staged: true });
  },
  async commitEverything(dir, message) {
    guard(dir);
    return commitAll(dir, message, { allowEmpty: true });
  },
  async committed(dir, from, to) {
    guard(dir);
    const c = await committedChange(dir, from, to);
    return { files: [...new Set([...c.files, ...c.renamed_from])].sort(), patch: c.patch.toString('utf8') };
  },
  tree: (dir, rev) => treeOf(dir, rev),
  parent: (dir, rev) => parentOf(dir, rev),

  async push(dir, branch, commit, expected, env, timeoutMs) {
    guard(dir);
    const r = await pushBranch(dir, branch, { commit, expected, env, timeoutMs });
    return r.ok ? { ok: true } : r;
  },

  async listFiles(dir) {
    guard(dir);
    const r = await git(['ls-files', '-z'], { cwd: dir });
    return r.stdout.split('\0').filter(Boolean);
  },

  async fetchBranch(dir, url, branch, env, timeoutMs) {
    guard(dir);
    return fetchBranch(dir, url, branch, env, timeoutMs);
  },

  async isAncestor(dir, ancestor, rev) {
    guard(dir);
    return isAncestor(dir, ancestor, rev);
  },

  async commitMessages(dir, rev, max) {
    guard(dir);
    const r = await git(['log', '--first-parent', `--max-count=${max}`, '--format=%B%x00', rev], { cwd: dir });
    return r.stdout
      .split('\0')
      .map((m) => m.trim())
      .filter(Boolean);
  },

  async branchCommits(dir, base, head, max) {
    guard(dir);
    return commitsBetween(dir, base, head, max);
  },

  async replay(dir, commits) {
    guard(dir);
    return replayCommits(dir, commits);
  },

  async merge(dir, commit, message) {
    guard(dir);
    return mergeCommit(dir, commit, message);
  },

  async copyAt(dir, rev, dest) {
    guard(dir);
    rmSync(dest, { recursive: true, force: true });
    // --no-hardlinks: a local clone would otherwise link the object files, and a rewrite through a link reaches dir.
    await git(['clone', '--quiet', '--no-hardlinks', '--no-checkout', resolve(dir), resolve(dest)], { cwd: resolve(dir) });
    await git(['checkout', '--quiet', '--detach', rev], { cwd: dest });
    // Nothing in the copy points back at dir: not even a push to origin reaches it.
    await git(['remote', 'remove', 'origin'], { cwd: dest });
  },
};

export const localExecutor: Executor = {
  run: (command, opts) => {
    // Whatever runs here may rewrite the working copy's .git: the next git call checks it again.
    checked.delete(resolve(opts.cwd));
    const sandbox = sandboxFor(opts.isolation ?? 'off');
    if (opts.isolation === 'required' && sandbox.kind === 'none') {
      return Promise.resolve({
        exitCode: 125,
        signal: null,
        timedOut: false,
        durationMs: 0,
        tail: `fleet: isolation is required but unavailable: ${sandbox.detail}`,
      });
    }
    if (sandbox.kind === 'none') return runCommand(command, { ...opts, wrap: undefined });
    // Hidden from the command: Fleet's private temporary folder (its git's output for every lane), and the
    // workspace but for the lane's own folder: two masks and a mount back, however many lanes the fleet has.
    const hide = [privateTmp()];
    const keep: string[] = [];
    if (opts.confine) {
      hide.push(opts.confine.workspace);
      keep.push(opts.confine.lane);
    }
    // The fleet file's folder (templates, scripts the directive runs): where root's commands run as nobody, kept
    // reachable through folders nobody cannot pass.
    const reach = opts.env.FLEET_FILE_DIR ? [opts.env.FLEET_FILE_DIR] : [];
    return sandbox.prepare({ cwd: opts.cwd, keep }).then(
      () => runCommand(command, { ...opts, wrap: (file, args, env, { cwd }) => sandbox.wrap(file, args, env, { cwd, hide, keep, reach }) }),
      (err: Error) => ({ exitCode: 125, signal: null, timedOut: false, durationMs: 0, tail: `fleet: the sandbox could not be prepared: ${err.message}` }),
    );
  },
  isolation: (setting) => {
    const { kind, detail } = sandboxFor(setting);
    return { kind, detail };
  },
};
