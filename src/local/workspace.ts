/**
 * The git working copies and command execution every lane uses, local or on a
 * GitHub runner: the Workspace and Executor ports over git.ts and exec.ts.
 */
import { realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Executor, Workspace } from '../ports.js';
import { runCommand } from './exec.js';
import { changedFiles, cloneForLane, commitAll, diffPatch, git, parentOf, pushBranch, treeOf } from './git.js';

export const localWorkspace: Workspace = {
  clone: (url, dir, opts) => cloneForLane(url, dir, opts),

  async intact(dir) {
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
    // Whatever the directive did with branches and commits, the lane branch ends at base with all of it uncommitted.
    await git(['update-ref', `refs/heads/${branch}`, base], { cwd: dir });
    await git(['symbolic-ref', 'HEAD', `refs/heads/${branch}`], { cwd: dir });
  },

  async reset(dir, base) {
    await git(['reset', '--quiet', '--hard', base], { cwd: dir });
    await git(['clean', '--quiet', '-ffdx'], { cwd: dir });
  },

  async changedFiles(dir) {
    const c = await changedFiles(dir);
    return [...new Set([...c.files, ...c.renamed_from])].sort();
  },

  commit: (dir, message) => commitAll(dir, message, { staged: true }),
  tree: (dir, rev) => treeOf(dir, rev),
  parent: (dir, rev) => parentOf(dir, rev),

  async push(dir, branch, expected, env) {
    const r = await pushBranch(dir, branch, { expected, env });
    return r.ok ? { ok: true } : r;
  },

  patch: (dir, from, to) => diffPatch(dir, from, to),

  async listFiles(dir) {
    const r = await git(['ls-files', '-z'], { cwd: dir });
    return r.stdout.split('\0').filter(Boolean);
  },
};

export const localExecutor: Executor = {
  run: (command, opts) => runCommand(command, opts),
};
