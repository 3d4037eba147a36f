/**
 * The git working copies and command execution every lane uses, local or on a
 * GitHub runner: the Workspace and Executor ports over a Git (git/git.ts) and exec.ts.
 *
 * One GitWorkspace serves a whole run: every lane of it, and its executor, share its
 * Git (the commit identity and signing the run decided) and its guard (guard.ts).
 */
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Executor, Workspace } from '../ports.js';
import { runCommand } from './exec.js';
import { ChangeTooLarge, MAX_PATCH_BYTES } from '../core/limits.js';
import { Git } from './git/git.js';
import { GitOutputTooLarge } from './git/run.js';
import type { CommitSettings } from './git/identity.js';
import { ObjectCache } from './git/object-cache.js';
import { isLocalRemote, readHead } from './git/refs.js';
import { WorkingCopyGuard } from './guard.js';
import type { GitLauncher } from './launcher.js';
import { manifestSealFolder } from '../util/manifest-seal.js';
import { privateTmp } from './private-tmp.js';
import { type Sandbox, sandboxFor } from './sandbox.js';

export interface GitWorkspaceOptions {
  /** Who the lanes' commits are by and how they are signed (adoptCommitSetup); Fleet's default, unsigned, when not given. */
  commit?: CommitSettings;
  /** The launcher shells Fleet's git starts from (git/git.ts GitSetup); the process's own when not given. */
  launcher?: GitLauncher | null;
  /**
   * The folder of the object cache lanes borrow from (git/object-cache.ts), hidden from every isolated command; none
   * when not given (an action's job starts on a fresh runner, where nothing would be there to borrow).
   */
  objectCache?: string;
}

export class GitWorkspace implements Workspace {
  readonly git: Git;
  /** Runs the directives and checks in this workspace's working copies: each marks its working copy for the guard. */
  readonly executor: Executor;
  private readonly guard = new WorkingCopyGuard();
  private readonly cache: ObjectCache | undefined;

  constructor(opts: GitWorkspaceOptions = {}) {
    this.git = new Git({ ...opts.commit, launcher: opts.launcher });
    this.cache = opts.objectCache ? new ObjectCache(opts.objectCache) : undefined;
    this.executor = localExecutor(this.guard, this.cache);
  }

  async clone(url: string, dir: string, opts: Parameters<Workspace['clone']>[2]): ReturnType<Workspace['clone']> {
    this.guard.forget(dir);
    // A remote on disk is hard-linked by the clone itself; a network remote's objects come from the cache where it has them.
    const r =
      this.cache && !isLocalRemote(url)
        ? await this.cache.lend(this.git, url, opts.base, (borrow) => this.git.cloneForLane(url, dir, { ...opts, borrow }))
        : await this.git.cloneForLane(url, dir, opts);
    this.guard.cloned(dir);
    return r;
  }

  async intact(dir: string): Promise<boolean> {
    return this.guard.intact(dir);
  }

  async settle(dir: string, branch: string, base: string): Promise<void> {
    this.guard.check(dir);
    // The usual case (the directive left HEAD alone) costs a file read instead of two writes.
    const head = readHead(join(dir, '.git'));
    if (head?.ref === `refs/heads/${branch}` && head.commit === base) return;
    // Whatever the directive did with branches and commits, the lane branch ends at base with all of it uncommitted.
    await this.git.run(['update-ref', `refs/heads/${branch}`, base], { cwd: dir });
    await this.git.run(['symbolic-ref', 'HEAD', `refs/heads/${branch}`], { cwd: dir });
  }

  async reset(dir: string, base: string): Promise<void> {
    this.guard.check(dir);
    await this.git.run(['reset', '--quiet', '--hard', base], { cwd: dir });
    await this.git.run(['clean', '--quiet', '-ffdx'], { cwd: dir });
  }

  async changedFiles(dir: string): Promise<string[]> {
    this.guard.check(dir);
    const c = await this.git.changedFiles(dir);
    return [...new Set([...c.files, ...c.renamed_from])].sort();
  }

  async commit(dir: string, message: string): Promise<string> {
    this.guard.check(dir);
    return this.git.commitAll(dir, message, { staged: true });
  }

  async commitEverything(dir: string, message: string): Promise<string> {
    this.guard.check(dir);
    return this.git.commitAll(dir, message, { allowEmpty: true });
  }

  async committed(dir: string, from: string, to: string): ReturnType<Workspace['committed']> {
    this.guard.check(dir);
    let c: Awaited<ReturnType<Git['committedChange']>>;
    try {
      // Never read whole when over the limit (the listing that comes with it is counted too: a few bytes a file).
      c = await this.git.committedChange(dir, from, to, { maxBytes: MAX_PATCH_BYTES });
    } catch (err) {
      if (err instanceof GitOutputTooLarge) throw new ChangeTooLarge(err.bytes);
      throw err;
    }
    return { files: [...new Set([...c.files, ...c.renamed_from])].sort(), patch: c.patch.toString('utf8') };
  }

  tree(dir: string, rev: string): Promise<string> {
    return this.git.treeOf(dir, rev);
  }

  parent(dir: string, rev: string): Promise<string | null> {
    return this.git.parentOf(dir, rev);
  }

  async push(
    dir: string,
    branch: string,
    commit: string,
    expected: string | null,
    env?: Record<string, string>,
    timeoutMs?: number,
  ): ReturnType<Workspace['push']> {
    this.guard.check(dir);
    const r = await this.git.pushBranch(dir, branch, { commit, expected, env, timeoutMs });
    return r.ok ? { ok: true } : r;
  }

  async listFiles(dir: string): Promise<string[]> {
    this.guard.check(dir);
    const r = await this.git.run(['ls-files', '-z'], { cwd: dir });
    return r.stdout.split('\0').filter(Boolean);
  }

  async fetchBranch(dir: string, url: string, branch: string, env?: Record<string, string>, timeoutMs?: number): Promise<string | null> {
    this.guard.check(dir);
    return this.git.fetchBranch(dir, url, branch, env, timeoutMs);
  }

  async isAncestor(dir: string, ancestor: string, rev: string): Promise<boolean> {
    this.guard.check(dir);
    return this.git.isAncestor(dir, ancestor, rev);
  }

  async commitMessages(dir: string, rev: string, max: number): Promise<string[]> {
    this.guard.check(dir);
    const r = await this.git.run(['log', '--first-parent', `--max-count=${max}`, '--format=%B%x00', rev], { cwd: dir });
    return r.stdout
      .split('\0')
      .map((m) => m.trim())
      .filter(Boolean);
  }

  async branchCommits(dir: string, base: string, head: string, max: number): ReturnType<Workspace['branchCommits']> {
    this.guard.check(dir);
    return this.git.commitsBetween(dir, base, head, max);
  }

  async replay(dir: string, commits: Parameters<Workspace['replay']>[1]): ReturnType<Workspace['replay']> {
    this.guard.check(dir);
    return this.git.replayCommits(dir, commits);
  }

  async merge(dir: string, commit: string, message: string): ReturnType<Workspace['merge']> {
    this.guard.check(dir);
    return this.git.mergeCommit(dir, commit, message);
  }

  async copyAt(dir: string, rev: string, dest: string): Promise<void> {
    this.guard.check(dir);
    rmSync(dest, { recursive: true, force: true });
    // --no-hardlinks: a local clone would otherwise link the object files, and a rewrite through a link reaches dir.
    await this.git.run(['clone', '--quiet', '--no-hardlinks', '--no-checkout', resolve(dir), resolve(dest)], { cwd: resolve(dir) });
    await this.git.run(['checkout', '--quiet', '--detach', rev], { cwd: dest });
    // Nothing in the copy points back at dir: not even a push to origin reaches it.
    await this.git.run(['remote', 'remove', 'origin'], { cwd: dest });
  }
}

/**
 * Directives and checks, run in a sandbox where the fleet file asks for one. A plain object (callers and tests
 * spread it to replace a part); `guard` learns of every command, which may rewrite its working copy's .git.
 */
function localExecutor(guard: WorkingCopyGuard, cache: ObjectCache | undefined): Executor {
  return {
    run: (command, opts) => {
      // Whatever runs here may rewrite the working copy's .git: the next git call checks it again.
      guard.touched(opts.cwd);
      // The cache is made before any command runs, so that it is hidden from the first (a mask needs its folder) and
      // no command can make it first and fill it.
      cache?.ensureRoot();
      return sandboxFor(opts.isolation ?? 'off').then((sandbox) => runIn(sandbox, command, opts, cache?.root));
    },
    isolation: async (setting) => {
      const { kind, detail } = await sandboxFor(setting);
      return { kind, detail };
    },
  };
}

/** One command in `sandbox` (or refused, where isolation is required and there is none). */
function runIn(sandbox: Sandbox, command: string, opts: Parameters<Executor['run']>[1], cache?: string): ReturnType<Executor['run']> {
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
  // Hidden from the command: Fleet's private temporary folder (its git's output for every lane), the object cache, the
  // key that seals the CLI's manifests (a directive that read it could vouch for a manifest it forged: util/manifest-
  // seal.ts), and the workspace but for the lane's own folder: a few masks and a mount back, however many lanes.
  const seal = manifestSealFolder();
  const hide = [privateTmp(), ...(cache ? [cache] : []), ...(seal ? [seal] : [])];
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
}
