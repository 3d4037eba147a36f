/**
 * The guard of a workspace's working copies against what a directive (or a check) can plant in them. Foreign code
 * runs with the working copy's .git in reach: it could set `core.fsmonitor` or a clean filter (programs git then
 * runs for Fleet, with Fleet's environment), or `remote.origin.pushurl` / `url.*.insteadOf` (Fleet's push, with
 * its credentials, going elsewhere), or a `commondir` (refs and objects of another repository), or swap the folder
 * or a part of .git for a link. Before Fleet's next git call in a working copy a command touched, the guard walks
 * its metadata for links, puts the configuration back as cloned and removes those files.
 *
 * State of one workspace (GitWorkspace, workspace.ts), shared by every lane of its run and by its executor, which
 * marks a working copy `touched` whenever a command runs there.
 */
import { lstatSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readGitFile } from './git/refs.js';

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

export class WorkingCopyGuard {
  /** The repository configuration Fleet cloned, per working copy. */
  private readonly clonedConfig = new Map<string, string>();
  /**
   * Working copies no foreign code has touched since they were last checked. Only
   * a directive or a check (run through the workspace's executor) can plant anything, so the
   * guard's walk runs once after each of them, not before every git call.
   */
  private readonly checked = new Set<string>();
  /** Where each working copy really was when cloned (every link in its path resolved), and which folder it was. */
  private readonly clonedAt = new Map<string, { real: string; dev: number; ino: number }>();

  /** `dir` is about to be cloned again: nothing known of it holds any more. */
  forget(dir: string): void {
    this.clonedConfig.delete(resolve(dir));
    this.checked.delete(resolve(dir));
  }

  /** `dir` was just cloned: its configuration and real place are what later checks compare with. */
  cloned(dir: string): void {
    this.clonedConfig.set(resolve(dir), readGitFile(join(dir, '.git', 'config')));
    const st = statSync(dir);
    this.clonedAt.set(resolve(dir), { real: realpathSync(dir), dev: st.dev, ino: st.ino });
    this.checked.add(resolve(dir));
  }

  /** Foreign code is about to run in `dir`: the next git call there checks it again. */
  touched(dir: string): void {
    this.checked.delete(resolve(dir));
  }

  /**
   * True when `dir` still resolves to the folder that was cloned there: no component of its path swapped for a link,
   * and the same folder, not another made at its path (a folder above it renamed aside and made anew).
   */
  sameFolder(dir: string): boolean {
    const at = this.clonedAt.get(resolve(dir));
    if (at === undefined) return true;
    try {
      const st = statSync(dir);
      return realpathSync(dir) === at.real && st.dev === at.dev && st.ino === at.ino;
    } catch {
      return false;
    }
  }

  /** Before a git call in `dir`: throws when it cannot be made safe, else leaves it as cloned. */
  check(dir: string): void {
    const key = resolve(dir);
    if (!this.clonedConfig.has(key) || this.checked.has(key)) return;
    if (!this.sameFolder(dir))
      throw new Error(`the working copy ${dir} is no longer the folder Fleet cloned (a link to another folder?); refusing to run git in it`);
    const link = linkInGitDir(join(dir, '.git'));
    if (link) throw new Error(`the working copy's git metadata holds a symbolic link (${link}); refusing to run git in it`);
    this.restore(dir);
  }

  /** Is `dir` still the working copy Fleet cloned, one git takes for a repository? Left as cloned when it is. */
  intact(dir: string): boolean {
    // The working copy must still be where it was cloned: a directive can write its lane's folder, and a
    // `repo` it turned into a link to another lane's working copy would have Fleet's git commit and push there.
    if (!this.sameFolder(dir)) return false;
    // .git must still be the folder Fleet cloned, not a link or a `gitdir:` file naming another repository.
    const gitDir = join(dir, '.git');
    if (linkInGitDir(gitDir)) return false;
    // And git must still take it for a repository (else it would look further up, or at the working tree itself):
    // the test git's discovery makes, read from the files instead of asking a git process.
    if (!isGitDir(gitDir)) return false;
    // The walk just done is the guard's: put the configuration back now, and the next git call needs no walk.
    this.restore(dir);
    return true;
  }

  /**
   * Puts the configuration back as cloned and removes the files that would bend git elsewhere, once the walk
   * found no link. What the directive left as it was (the usual case) is only read, not written again.
   */
  private restore(dir: string): void {
    const key = resolve(dir);
    const config = this.clonedConfig.get(key);
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
    this.checked.add(key);
  }
}
