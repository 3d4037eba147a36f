/**
 * The git working copies and command execution every lane uses, local or on a
 * GitHub runner: the Workspace and Executor ports over git.ts and exec.ts.
 */
import { lstat, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Executor, Workspace } from '../ports.js';
import { runCommand } from './exec.js';
import { sandboxFor } from './sandbox.js';
import { changedBetween, changedFiles, cloneForLane, commitAll, diffPatch, git, parentOf, pushBranch, readHead, treeOf } from './git.js';

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
async function linkInGitDir(gitDir: string): Promise<string | null> {
  const top = await lstat(gitDir).catch(() => null);
  if (!top || top.isSymbolicLink() || !top.isDirectory()) return gitDir;
  const walk = async (d: string, deep: boolean): Promise<string | null> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isSymbolicLink()) return p;
      if (e.isDirectory() && (deep || ['refs', 'logs', 'objects', 'info'].includes(e.name))) {
        // objects/xx folders are many and hold only object files git reads by hash: look at objects/info and objects/pack only.
        const found = await walk(p, deep || e.name === 'refs' || e.name === 'logs' || (d.endsWith('objects') && (e.name === 'info' || e.name === 'pack')));
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

async function guard(dir: string): Promise<void> {
  const key = resolve(dir);
  const config = clonedConfig.get(key);
  if (config === undefined || checked.has(key)) return;
  const gitDir = join(dir, '.git');
  const link = await linkInGitDir(gitDir);
  if (link) throw new Error(`the working copy's git metadata holds a symbolic link (${link}); refusing to run git in it`);
  // Remove first, then create: writing through a symlinked config would rewrite whatever it points at.
  await rm(join(gitDir, 'config'), { force: true, recursive: true });
  await writeFile(join(gitDir, 'config'), config, { flag: 'wx' });
  await Promise.all(FOREIGN_GIT_FILES.map((f) => rm(join(gitDir, f), { force: true, recursive: true })));
  checked.add(key);
}

export const localWorkspace: Workspace = {
  async clone(url, dir, opts) {
    clonedConfig.delete(resolve(dir));
    checked.delete(resolve(dir));
    const r = await cloneForLane(url, dir, opts);
    clonedConfig.set(resolve(dir), await readFile(join(dir, '.git', 'config'), 'utf8'));
    checked.add(resolve(dir));
    return r;
  },

  async intact(dir) {
    // .git must still be the folder Fleet cloned, not a link or a `gitdir:` file naming another repository.
    if (await linkInGitDir(join(dir, '.git'))) return false;
    // A ceiling at the working copy's parent stops git from finding an enclosing repository when .git is gone.
    const r = await git(['rev-parse', '--absolute-git-dir'], { cwd: dir, env: { GIT_CEILING_DIRECTORIES: dirname(dir) }, allowFail: true });
    if (r.code !== 0) return false;
    try {
      return (await realpath(r.stdout.trim())) === (await realpath(join(dir, '.git')));
    } catch {
      return false;
    }
  },

  async settle(dir, branch, base) {
    await guard(dir);
    // The usual case (the directive left HEAD alone) costs a file read instead of two writes.
    const head = await readHead(join(dir, '.git'));
    if (head?.ref === `refs/heads/${branch}` && head.commit === base) return;
    // Whatever the directive did with branches and commits, the lane branch ends at base with all of it uncommitted.
    await git(['update-ref', `refs/heads/${branch}`, base], { cwd: dir });
    await git(['symbolic-ref', 'HEAD', `refs/heads/${branch}`], { cwd: dir });
  },

  async reset(dir, base) {
    await guard(dir);
    await git(['reset', '--quiet', '--hard', base], { cwd: dir });
    await git(['clean', '--quiet', '-ffdx'], { cwd: dir });
  },

  async changedFiles(dir) {
    await guard(dir);
    const c = await changedFiles(dir);
    return [...new Set([...c.files, ...c.renamed_from])].sort();
  },

  async commit(dir, message) {
    await guard(dir);
    return commitAll(dir, message, { staged: true });
  },
  async committedFiles(dir, from, to) {
    await guard(dir);
    const c = await changedBetween(dir, from, to);
    return [...new Set([...c.files, ...c.renamed_from])].sort();
  },
  tree: (dir, rev) => treeOf(dir, rev),
  parent: (dir, rev) => parentOf(dir, rev),

  async push(dir, branch, expected, env, timeoutMs) {
    await guard(dir);
    const r = await pushBranch(dir, branch, { expected, env, timeoutMs });
    return r.ok ? { ok: true } : r;
  },

  async patch(dir, from, to) {
    await guard(dir);
    return diffPatch(dir, from, to);
  },

  async listFiles(dir) {
    await guard(dir);
    const r = await git(['ls-files', '-z'], { cwd: dir });
    return r.stdout.split('\0').filter(Boolean);
  },
};

export const localExecutor: Executor = {
  run: (command, opts) => {
    // Whatever runs here may rewrite the working copy's .git: the next git call checks it again.
    checked.delete(resolve(opts.cwd));
    const sandbox = sandboxFor(opts.isolation ?? 'off');
    if (opts.isolation === 'required' && sandbox.kind === 'none') {
      return Promise.resolve({ exitCode: 125, signal: null, timedOut: false, durationMs: 0, tail: `fleet: isolation is required but unavailable: ${sandbox.detail}` });
    }
    return runCommand(command, { ...opts, wrap: sandbox.kind === 'none' ? undefined : sandbox.wrap });
  },
  isolation: (setting) => {
    const { kind, detail } = sandboxFor(setting);
    return { kind, detail };
  },
};
