/**
 * The token policy of a session, the same for the CLI and the action: which credential Fleet sends to GitHub (a
 * GitHub App's installation token it mints itself, a token given as such, or the first of TOKEN_VARIABLES set), how
 * much it may do (read-only unless the session writes to the targets), and the revocation of every App token minted.
 */
import type { AppCredentials, AppInstallationToken } from '../github/app-token.js';
import { staticToken, type TokenCredential } from '../github/credential.js';
import type { Logger } from '../ports.js';

/** Where Fleet looks for its GitHub token, in order, when neither a token nor App credentials are given. */
export const TOKEN_VARIABLES = ['FLEET_GITHUB_TOKEN', 'GITHUB_TOKEN', 'GH_TOKEN'] as const;

export interface CredentialOptions {
  env: NodeJS.ProcessEnv;
  /** App credentials: Fleet mints the installation token at the first need and renews it while the session lasts. */
  app?: AppCredentials;
  /** A token given as such (the action's token input): sent as it is. */
  token?: string;
  /** Least privilege: a session that only reads the targets gets a read-only App token. */
  writes: boolean;
  /**
   * Where the App's tokens are announced (minted, renewed, revoked): the job's log. The CLI gives none: its
   * stderr is for problems, and stdout for the report.
   */
  logger?: Logger;
}

/** The session's credentials: one for its forge and clients, minted at most once, and every App token revoked at its close. */
export class Credentials {
  private readonly minted: AppInstallationToken[] = [];
  private main: Promise<TokenCredential> | undefined;

  constructor(private readonly opts: CredentialOptions) {}

  get app(): AppCredentials | undefined {
    return this.opts.app;
  }

  /**
   * The credential of the session: the App's installation token (read-only unless the session writes), or the token
   * given. A mint that fails rejects, naming why.
   */
  credential(): Promise<TokenCredential> {
    const { app, writes } = this.opts;
    this.main ??= app
      ? this.mint(writes ? app : { ...app, readOnly: true }, writes ? 'the lanes' : 'read-only')
      : Promise.resolve(staticToken(this.opts.token ?? ''));
    return this.main;
  }

  /** A credential with exactly `permissions` (an App token minted for them, `why` said in the log), or the token given. */
  narrowed(permissions: Record<string, 'read' | 'write'>, why: string): Promise<TokenCredential> {
    const { app } = this.opts;
    return app ? this.mint({ ...app, permissions }, why) : Promise.resolve(staticToken(this.opts.token ?? ''));
  }

  /** The token a forge on GitHub is given: the App's, the token given, or none (the forge then reads TOKEN_VARIABLES). */
  async forForge(): Promise<{ token?: string; credential?: TokenCredential }> {
    if (this.opts.app) {
      const credential = await this.credential();
      // A PAT goes to the client as it is; only an App token needs the renewing auth.
      return { token: credential.current(), credential };
    }
    // A token given, even an empty one, is the one: only a session given none reads TOKEN_VARIABLES.
    return this.opts.token === undefined ? {} : { token: this.opts.token };
  }

  /**
   * Revokes every App token minted so far (DELETE /installation/token), as create-github-app-token's post step
   * does: a token outliving its job is a token to steal. Each is revoked once, however often this is called.
   */
  async revoke(): Promise<{ revoked: number; failed: number }> {
    let revoked = 0;
    let failed = 0;
    for (const token of this.minted.splice(0)) {
      const r = await token.revoke().catch(() => ({ revoked: 0, failed: 1 }));
      this.opts.logger?.info(`GitHub App: ${r.revoked} installation token(s) revoked${r.failed ? `, ${r.failed} could not be` : ''}`);
      revoked += r.revoked;
      failed += r.failed;
    }
    return { revoked, failed };
  }

  /** The App code (and @octokit/auth-app) loads only in a session that has App credentials. */
  private async mint(app: AppCredentials, why: string): Promise<AppInstallationToken> {
    const { AppInstallationToken, resolveApiUrl } = await import('../github/app-token.js');
    const { env, logger } = this.opts;
    const token = await AppInstallationToken.start(app, { apiUrl: resolveApiUrl(env.GITHUB_API_URL), logger });
    this.minted.push(token);
    logger?.info(`GitHub App ${app.appId}: installation token minted for ${app.owner} (${why}); Fleet renews it while this job runs`);
    return token;
  }
}
