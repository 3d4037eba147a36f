/**
 * The credential Fleet sends to GitHub: a PAT as given, or a GitHub App's
 * installation token that Fleet mints itself and renews while a leg runs.
 *
 * An installation token lives one hour and cannot be extended
 * (https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-an-installation-access-token-for-a-github-app);
 * a matrix leg of agent lanes can run for hours. So with App credentials Fleet
 * keeps the key in its own process and mints a new token whenever the current
 * one has less than RENEW_MARGIN_MS left by GitHub's clock, which it estimates
 * from the `date` header of every answer (the runner's clock may be skewed);
 * and when a token is refused anyway (401 Bad credentials) it renews once and
 * the request is sent again.
 *
 * The JWT signing, the installation token request and the JWT's clock-skew
 * correction are @octokit/auth-app's (with universal-github-app-jwt): no
 * hand-written JWT code.
 */
import { defaults as actionsDefaults } from '@actions/github/lib/utils';
import { createAppAuth } from '@octokit/auth-app';
import { request as octokitRequest } from '@octokit/request';
import type { Logger } from '../ports.js';
import { redact } from '../util/secrets.js';
import { maskToken } from './octokit.js';
import { normalizePrivateKey } from './app-key.js';
import { RENEW_MARGIN_MS, type TokenCredential } from './credential.js';

export { RENEW_MARGIN_MS, staticToken, type TokenCredential } from './credential.js';
export { maskPrivateKey, normalizePrivateKey, privateKeyProblem } from './app-key.js';
// The CLI loads the App side with one import (one chunk of the bundle): the API URL it mints against comes with it.
export { resolveApiUrl } from './octokit.js';

const proxyFetch = (actionsDefaults.request as { fetch?: typeof globalThis.fetch } | undefined)?.fetch;

export interface AppCredentials {
  appId: string;
  /** The PEM (PKCS#1 or PKCS#8), newlines real or written as `\n`. */
  privateKey: string;
  /** The account the App is installed on (a user or an organization). */
  owner: string;
  /**
   * Each token gets the installation's permissions downgraded to read (the plan and report jobs only read the
   * targets: validation, branches, PRs, CI). A token may be narrower than its installation, never wider.
   */
  readOnly?: boolean;
  /** Exactly these permissions for every token (e.g. `{ actions: 'write' }` to dispatch a workflow); wins over readOnly. */
  permissions?: Record<string, 'read' | 'write'>;
}

export interface AppTokenOptions {
  /** REST base URL (GITHUB_API_URL). */
  apiUrl: string;
  logger?: Logger;
  /** The local clock (a test seam); GitHub's is this plus the skew seen in `date` headers. */
  now?: () => number;
  /** Called with each token minted (Fleet masks it). */
  onMint?: (token: string) => void;
  userAgent?: string;
}

interface Minted {
  token: string;
  /** expires_at, on GitHub's clock. */
  expiresAt: number;
}

/**
 * An App installation token, minted on `start` and renewed before it ends. `minted` lists every token this
 * process obtained, so the job can revoke them at its end (as create-github-app-token's post step does).
 */
export class AppInstallationToken implements TokenCredential {
  readonly minted: Minted[] = [];
  private skewMs = 0;
  private granted: Record<string, string> = {};
  private renewing: Promise<string> | null = null;
  private readonly now: () => number;
  private readonly request: typeof octokitRequest;

  private constructor(
    private readonly creds: AppCredentials,
    private readonly installationId: number,
    private readonly opts: AppTokenOptions,
    request: typeof octokitRequest,
    /** Asked of every mint (POST …/access_tokens `permissions`); undefined: the installation's own. */
    private readonly permissions?: Record<string, 'read' | 'write'>,
  ) {
    this.now = opts.now ?? Date.now;
    this.request = request;
  }

  /** Finds the App's installation on the owner and mints the first token. */
  static async start(creds: AppCredentials, opts: AppTokenOptions): Promise<AppInstallationToken> {
    let observed: AppInstallationToken | undefined;
    let skewMs = 0;
    const now = opts.now ?? Date.now;
    const request = octokitRequest.defaults({
      baseUrl: opts.apiUrl.replace(/\/+$/, ''),
      headers: { 'user-agent': opts.userAgent ?? 'fleet' },
      // Every answer to the App's own requests (the installation, each mint, a 401) tells GitHub's time too.
      request: {
        // @actions/github's fetch: the runner's proxy settings (HTTPS_PROXY, NO_PROXY) apply to the App's requests too.
        ...(proxyFetch ? { fetch: proxyFetch } : {}),
        hook: async (req: typeof octokitRequest, options: Parameters<typeof octokitRequest>[0]) => {
          try {
            const res = await req(options as never);
            noteDate(res.headers.date);
            return res;
          } catch (err) {
            noteDate((err as { response?: { headers?: Record<string, string> } }).response?.headers?.date);
            throw err;
          }
        },
      },
    }) as typeof octokitRequest;
    function noteDate(date: string | undefined) {
      if (observed) observed.observe(date);
      else if (date && Number.isFinite(Date.parse(date))) skewMs = Date.parse(date) - now();
    }
    const auth = appAuth(creds, request, 0, opts.logger);
    // The installation on the account (GET /users/{username}/installation answers for organizations as well), through
    // auth-app's hook: a JWT refused for its iat/exp is signed again with the skew from the refusal's `date` header.
    // https://docs.github.com/en/rest/apps/apps#get-a-user-installation-for-the-authenticated-app
    let data: { id: number; permissions?: Record<string, string> };
    try {
      ({ data } = (await auth.hook(request, 'GET /users/{username}/installation', { username: creds.owner })) as { data: typeof data });
    } catch (err) {
      const status = (err as { status?: number }).status;
      const hint =
        status === 404 && /Integration not found/i.test((err as Error).message)
          ? `GitHub knows no App with id ${creds.appId} (app-id is the App's id from its settings page)`
          : status === 404
            ? `the App is not installed on ${creds.owner} (install it there, or set app-owner to the account it is installed on)`
            : status === 401
              ? "GitHub refused the App's JWT (is app-id the id of the App this private key belongs to?)"
              : redact((err as Error).message);
      throw new Error(`GitHub App ${creds.appId}: could not find its installation on ${creds.owner} (${status ?? 'error'}): ${hint}`);
    }
    const token = new AppInstallationToken(creds, data.id, opts, request, creds.permissions ?? (creds.readOnly ? readOnly(data.permissions ?? {}) : undefined));
    token.skewMs = skewMs;
    token.granted = { ...(data.permissions ?? {}) };
    observed = token;
    await token.mint();
    return token;
  }

  current(): string {
    return this.minted[this.minted.length - 1]!.token;
  }

  installationPermissions(): Readonly<Record<string, string>> {
    return this.granted;
  }

  installationAccount(): string {
    return this.creds.owner;
  }

  /** GitHub's clock, as far as the last `date` header tells (second resolution). */
  githubNow(): number {
    return this.now() + this.skewMs;
  }

  /** Milliseconds the current token has left by GitHub's clock. */
  remainingMs(): number {
    return this.minted[this.minted.length - 1]!.expiresAt - this.githubNow();
  }

  observe(date: string | undefined): void {
    const t = date ? Date.parse(date) : NaN;
    if (Number.isFinite(t)) this.skewMs = t - this.now();
  }

  async fresh(): Promise<string> {
    if (this.renewing) return this.renewing;
    if (this.remainingMs() >= RENEW_MARGIN_MS) return this.current();
    this.opts.logger?.info(`GitHub App token: ${Math.max(0, Math.round(this.remainingMs() / 60_000))} min left by GitHub's clock; renewing it`);
    try {
      return await this.renewOnce();
    } catch (err) {
      // A renewal ahead of time that fails (GitHub answering 5xx for a moment) is tried again at the next request;
      // until then the current token, which still has time left, does.
      if (this.remainingMs() <= 60_000) throw err;
      this.opts.logger?.warn(`${(err as Error).message}; the current token has ${Math.round(this.remainingMs() / 60_000)} min left and is used meanwhile`);
      return this.current();
    }
  }

  async renew(rejected: string): Promise<string | null> {
    if (this.renewing) return this.renewing;
    if (rejected !== this.current()) return this.current();
    this.opts.logger?.warn('GitHub App token refused (401 Bad credentials) before its time; renewing it once');
    return this.renewOnce();
  }

  /** Revokes every token this process minted that has not expired (DELETE /installation/token). */
  async revoke(): Promise<{ revoked: number; failed: number }> {
    let revoked = 0;
    let failed = 0;
    for (const m of this.minted) {
      if (m.expiresAt <= this.githubNow()) continue;
      try {
        // https://docs.github.com/en/rest/apps/installations#revoke-an-installation-access-token
        await this.request('DELETE /installation/token', { headers: { authorization: `token ${m.token}` } });
        revoked++;
      } catch {
        failed++;
      }
    }
    return { revoked, failed };
  }

  private renewOnce(): Promise<string> {
    this.renewing ??= this.mint().finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }

  /**
   * POST /app/installations/{id}/access_tokens through auth-app (`refresh: true`: its cache keeps tokens by the
   * local clock, Fleet decides by GitHub's). The JWT is signed for GitHub's clock as Fleet estimates it; when the
   * estimate was stale (GitHub refuses the JWT's iat/exp), the refusal's `date` header corrects it for one retry.
   */
  private async mint(): Promise<string> {
    let data: { token: string; expiresAt: string };
    try {
      data = await this.requestToken();
    } catch (err) {
      if ((err as { status?: number }).status !== 401) throw this.mintError(err);
      data = await this.requestToken().catch((again: unknown) => {
        throw this.mintError(again);
      });
    }
    maskToken(data.token);
    this.opts.onMint?.(data.token);
    this.minted.push({ token: data.token, expiresAt: Date.parse(data.expiresAt) });
    return data.token;
  }

  private requestToken(): Promise<{ token: string; expiresAt: string }> {
    const auth = appAuth(this.creds, this.request, this.skewSeconds(), this.opts.logger);
    return auth({ type: 'installation', installationId: this.installationId, refresh: true, ...(this.permissions ? { permissions: this.permissions } : {}) });
  }

  private mintError(err: unknown): Error {
    const status = (err as { status?: number }).status;
    const hint = status === 422 ? ': the App lacks a permission this job asks for (see the permissions in docs/actions/tokens.md)' : '';
    return new Error(
      `GitHub App ${this.creds.appId}: minting an installation token on ${this.creds.owner} failed (${status ?? 'error'}: ${redact((err as Error).message)})${hint}`,
    );
  }

  private skewSeconds(): number {
    return Math.round(this.skewMs / 1000);
  }
}

/**
 * The installation's permissions, each at read: a token that can look at everything the App can, and change nothing.
 * `workflows` is left out: GitHub offers it at write only (it is what lets a push change workflow files), so there
 * is no read of it to ask for.
 */
function readOnly(granted: Record<string, string>): Record<string, 'read'> {
  return Object.fromEntries(
    Object.entries(granted)
      .filter(([name, level]) => name !== 'workflows' && (level === 'read' || level === 'write' || level === 'admin'))
      .map(([name]) => [name, 'read' as const]),
  );
}

function appAuth(creds: AppCredentials, request: typeof octokitRequest, timeDifference: number, logger?: Logger) {
  return createAppAuth({
    appId: creds.appId,
    privateKey: normalizePrivateKey(creds.privateKey),
    request,
    ...(timeDifference ? { timeDifference } : {}),
    log: { warn: (m: string) => logger?.warn(m) },
  } as Parameters<typeof createAppAuth>[0]);
}
