/**
 * Reading workflow files and actions out of the GitHub emulator's
 * repositories, the way GitHub resolves `uses:` refs: a branch, a tag or a
 * full commit SHA, in a repository that exists.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export class RepoFiles {
  constructor(private readonly reposDir: string) {}

  gitDir(repo: string): string {
    return join(this.reposDir, `${repo}.git`);
  }

  exists(repo: string): boolean {
    return existsSync(this.gitDir(repo));
  }

  /** The commit a ref names (`main`, `v1`, `refs/heads/x`, a SHA), or null. */
  async resolve(repo: string, ref: string): Promise<string | null> {
    if (!this.exists(repo)) return null;
    for (const candidate of [ref, `refs/heads/${ref}`, `refs/tags/${ref}`]) {
      try {
        const { stdout } = await run('git', ['--git-dir', this.gitDir(repo), 'rev-parse', '--verify', '--quiet', `${candidate}^{commit}`]);
        const sha = stdout.trim();
        if (sha) return sha;
      } catch {
        // try the next spelling
      }
    }
    return null;
  }

  async defaultBranch(repo: string): Promise<string> {
    const { stdout } = await run('git', ['--git-dir', this.gitDir(repo), 'symbolic-ref', '--short', 'HEAD']);
    return stdout.trim();
  }

  /** A file's text at a commit, or null when the commit has no such file. */
  async read(repo: string, sha: string, path: string): Promise<string | null> {
    try {
      const { stdout } = await run('git', ['--git-dir', this.gitDir(repo), 'show', `${sha}:${path}`], { maxBuffer: 64 * 1024 * 1024 });
      return stdout;
    } catch {
      return null;
    }
  }

  /** Writes the tree of a commit (or a folder of it) into `dest`, as the runner unpacks an action's tarball. */
  async export(repo: string, sha: string, dest: string): Promise<void> {
    await run('mkdir', ['-p', dest]);
    await run('sh', ['-c', 'git --git-dir "$1" archive --format=tar "$2" | tar -x -C "$3"', 'export', this.gitDir(repo), sha, dest], {
      maxBuffer: 64 * 1024 * 1024,
    });
  }
}
