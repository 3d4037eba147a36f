/**
 * Fleet's git, as an object that carries its configuration: the identity its commits are by, their signing, and the
 * launcher shells its processes start from, all given when it is built (as actions/checkout's GitCommandManager
 * does), never settings of the process a later call could change. A run builds one for its lanes with the commit
 * set-up it decided (commit-setup.ts, then workspace.ts); the local forge has its own, with the defaults.
 *
 * Every operation is one of operations.ts, push.ts or refs.ts run on this git; each is bound, so
 * `const { run } = git` works.
 */
import { gitLauncher, type GitLauncher } from '../launcher.js';
import { DEFAULT_GIT_IDENTITY, signConfig, type GitIdentity, type GitSigning } from './identity.js';
import {
  changedBetween,
  changedFiles,
  cloneForLane,
  commitAll,
  commitsBetween,
  committedChange,
  diffPatch,
  diffPatchBuffer,
  fetchBranch,
  mergeCommit,
  replayCommits,
} from './operations.js';
import { pushBranch, pushFastForward } from './push.js';
import { defaultBranch, defaultBranchHead, hasCommits, isAncestor, isGitRepo, lsRemoteBranch, parentOf, revParse, treeOf } from './refs.js';
import { execGit, networkGit, type GitOptions, type GitResult, type GitRunner, type NetworkOptions, type RawResult } from './run.js';

export interface GitSetup {
  /** Author and committer of every commit this git makes; Fleet's default ("Fleet") when not given. */
  identity?: Partial<GitIdentity>;
  /** How its commits are signed (identity.ts pinSigning); unsigned when not given. */
  signing?: GitSigning | null;
  /**
   * The launcher shells to start git from; null: spawn each git from Node. Not given: the process's own
   * (launcher.ts gitLauncher), looked up at each call, since closeGitLauncher ends them and the next call starts anew.
   */
  launcher?: GitLauncher | null;
}

/** `op`, run on `git`: a method of it. */
function on<A extends unknown[], R>(git: GitRunner, op: (git: GitRunner, ...args: A) => R): (...args: A) => R {
  return (...args) => op(git, ...args);
}

export class Git implements GitRunner {
  readonly identity: Readonly<GitIdentity>;
  readonly signing: Readonly<GitSigning> | null;
  readonly #launcher: GitLauncher | null | undefined;

  constructor(setup: GitSetup = {}) {
    this.identity = { name: setup.identity?.name ?? DEFAULT_GIT_IDENTITY.name, email: setup.identity?.email ?? DEFAULT_GIT_IDENTITY.email };
    this.signing = setup.signing ?? null;
    this.#launcher = setup.launcher;
  }

  /** Runs `git <args>` in `cwd`. Throws a `GitError` on a non-zero exit unless `allowFail`. stderr is returned as git wrote it (callers that log it should `redact` it). */
  readonly run = async (args: string[], opts: GitOptions): Promise<GitResult> => {
    const r = await this.bytes(args, opts);
    return { stdout: r.stdout.toString('utf8'), stderr: r.stderr, code: r.code };
  };

  /** `run`, with stdout byte for byte. */
  readonly bytes = (args: readonly string[], opts: GitOptions): Promise<RawResult> =>
    execGit(args, opts, { identity: this.identity, launcher: this.#launcher === undefined ? gitLauncher() : this.#launcher });

  /** A network call (clone, fetch, ls-remote): its timeout, and retries of transient failures. */
  readonly network = (args: string[], opts: NetworkOptions): Promise<GitResult> => networkGit(this, args, opts);

  readonly signConfig = (): string[] => signConfig(this.signing);

  // A lane's working copy (operations.ts)
  readonly cloneForLane = on(this, cloneForLane);
  readonly changedFiles = on(this, changedFiles);
  readonly changedBetween = on(this, changedBetween);
  readonly committedChange = on(this, committedChange);
  readonly commitAll = on(this, commitAll);
  readonly diffPatch = on(this, diffPatch);
  readonly diffPatchBuffer = on(this, diffPatchBuffer);
  readonly mergeCommit = on(this, mergeCommit);
  readonly commitsBetween = on(this, commitsBetween);
  readonly replayCommits = on(this, replayCommits);
  readonly fetchBranch = on(this, fetchBranch);

  // Pushing (push.ts)
  readonly pushBranch = on(this, pushBranch);
  readonly pushFastForward = on(this, pushFastForward);

  // Reading (refs.ts)
  readonly isGitRepo = on(this, isGitRepo);
  readonly hasCommits = on(this, hasCommits);
  readonly defaultBranch = on(this, defaultBranch);
  readonly defaultBranchHead = on(this, defaultBranchHead);
  readonly lsRemoteBranch = on(this, lsRemoteBranch);
  readonly revParse = on(this, revParse);
  readonly treeOf = on(this, treeOf);
  readonly parentOf = on(this, parentOf);
  readonly isAncestor = on(this, isAncestor);
}
