/**
 * One session per `fleet` command and per action job, built here the same way for both (the model: multi-gitter's
 * single platform builder): the credentials and their policy, the forge the fleet file names, the workspace and
 * executor the lanes use, the commit setup, the environment a directive gets, and one close that revokes the App
 * tokens minted and, once no session is left open, ends the git launcher.
 */
import type { LegPace } from '../core/budget.js';
import type { FleetFile } from '../core/fleet-file.js';
import { appIsolationProblem } from '../core/isolation.js';
import { privateKeyParts, maskPrivateKey } from '../github/app-key.js';
import type { TokenCredential } from '../github/credential.js';
import type { Executor, Logger, Workspace } from '../ports.js';
import { directiveEnv } from '../util/directive-env.js';
import { adoptCommitSetup } from '../workspace/commit-setup.js';
import { closeGitLauncher } from '../workspace/launcher.js';
import { GitWorkspace } from '../workspace/workspace.js';
import { Credentials, type CredentialOptions } from './credentials.js';
import { setupForge, type ForgeSetup } from './forge.js';

/** What a fleet of this session needs besides the fleet file. */
export interface FleetNeeds {
  /** Where a local forge's relative paths start: the fleet file's folder. */
  baseDir: string;
  /** The folder of a local forge's repositories (`--repos-root`). */
  reposRoot?: string;
  /** This leg's share of the fleet's write budget (an action's lane job). */
  writePace?: LegPace;
  /** The forge's warnings and errors. */
  logger?: Logger;
  /** The folder of the object cache the lanes' clones borrow from (`_workspace/cache`); none when not given. */
  objectCache?: string;
  /** The session runs untrusted code (directives, checks): with App credentials, only under isolation. */
  runsCode: boolean;
  /** The session commits in the lanes' clones: the commit identity and signing are set up first. */
  commits: boolean;
  /** The commit setup decided (one line for a log, and its notes), said before any token is minted. */
  onCommits?(line: string, notes: string[]): void;
}

/** Why a session could not be connected, and which part of it failed. */
export interface SessionProblem {
  problem: string;
  /** isolation and sign_commits: the fleet file's field; credential: an App token could not be minted; forge: the forge's own. */
  part: 'isolation' | 'sign_commits' | 'credential' | 'forge';
}

/** A fleet connected: its forge (and discovery, issue queue), credential, workspace, executor and directive environment. */
export interface Connection extends ForgeSetup {
  credential?: TokenCredential;
  workspace: Workspace;
  exec: Executor;
  /** The environment a directive gets: Fleet's credentials withheld. */
  directiveEnv: Record<string, string>;
}

/** Sessions not closed yet: an interrupt closes them all. */
const open = new Set<Session>();

export class Session {
  readonly credentials: Credentials;
  private closing: Promise<{ revoked: number; failed: number }> | undefined;

  constructor(private readonly opts: CredentialOptions) {
    this.credentials = new Credentials(opts);
    // The key and each line of it go to Fleet's redactor; the action masks them in the log itself (runAction).
    if (opts.app) maskPrivateKey(opts.app.privateKey, () => undefined);
    open.add(this);
  }

  /** Sets up what the fleet file needs, checking in this order: isolation, commit setup, credential, forge. */
  async connect(file: FleetFile, needs: FleetNeeds): Promise<Connection | SessionProblem> {
    const { env } = this.opts;
    // One workspace per connection: its working-copy guard and its commits' author and signature are its own.
    const objectCache = needs.objectCache;
    let workspace = new GitWorkspace({ objectCache });
    if (needs.runsCode && this.credentials.app) {
      const iso = await workspace.executor.isolation(file.isolation);
      const why = appIsolationProblem(file.isolation, iso.kind, iso.detail);
      if (why) return { part: 'isolation', problem: why };
    }
    if (needs.commits) {
      const commits = await adoptCommitSetup(file, env);
      if (!commits.ok) return { part: 'sign_commits', problem: commits.problem };
      needs.onCommits?.(commits.line, commits.notes);
      workspace = new GitWorkspace({ commit: commits.commit, objectCache });
    }
    let given: { token?: string; credential?: TokenCredential } = {};
    if (file.forge === 'github') {
      try {
        given = await this.credentials.forForge();
      } catch (err) {
        return { part: 'credential', problem: (err as Error).message };
      }
    }
    const setup = await setupForge(file, {
      env,
      baseDir: needs.baseDir,
      reposRoot: needs.reposRoot,
      logger: needs.logger,
      writePace: needs.writePace,
      ...given,
    });
    if ('problem' in setup) return { part: 'forge', problem: setup.problem };
    return {
      ...setup,
      credential: given.credential,
      workspace,
      exec: workspace.executor,
      directiveEnv: withheldEnv(env, {
        tokenVariable: setup.tokenVariable,
        secrets: setup.secrets ?? [],
        privateKey: this.opts.app ? env.FLEET_APP_PRIVATE_KEY : undefined,
      }),
    };
  }

  /** Revokes the App tokens this session minted and, when it was the last open, ends the git launcher. Once. */
  close(): Promise<{ revoked: number; failed: number }> {
    this.closing ??= this.credentials.revoke().finally(async () => {
      open.delete(this);
      if (!open.size) await closeGitLauncher();
    });
    return this.closing;
  }
}

/** A session for one `fleet` command or one action job. */
export function openSession(opts: CredentialOptions): Session {
  return new Session(opts);
}

/** Closes every session still open, and the git launcher: at the end of the process, or on an interrupt. */
export async function closeSessions(): Promise<void> {
  for (const s of [...open]) await s.close();
  await closeGitLauncher();
}

/**
 * The environment a directive gets: the caller's, less Fleet's credentials, the variable the token came from, any
 * variable holding one of `secrets` (tokens, in every form they were given), and any holding a line of the App's key.
 */
export function withheldEnv(env: NodeJS.ProcessEnv, o: { tokenVariable?: string; secrets: readonly string[]; privateKey?: string }): Record<string, string> {
  const keyParts = o.privateKey?.trim() ? privateKeyParts(o.privateKey) : [];
  return directiveEnv(env, o.tokenVariable, [...o.secrets, ...keyParts]);
}
