/**
 * What Fleet authenticates to GitHub with: a token that may change while a job runs (a GitHub App installation
 * token Fleet renews, src/github/app-token.ts) or one that never does (a PAT). No dependencies, so the forge and
 * the CLI's GitHub chunk do not load the App code.
 */

/** Renew when the token has less than this left by GitHub's clock. */
export const RENEW_MARGIN_MS = 10 * 60_000;

/** What Fleet authenticates with: the token to send now, and how to get a fresh one. */
export interface TokenCredential {
  /** The token to send now (git's extra header is built from it for each git command). */
  current(): string;
  /** A token with at least RENEW_MARGIN_MS left by GitHub's clock: renews first when the current one has less. */
  fresh(): Promise<string>;
  /**
   * A new token after `rejected` got 401 Bad credentials; null when there is none to be had (a PAT cannot be
   * renewed). Concurrent callers share one renewal, and a caller whose token was already replaced gets the new one.
   */
  renew(rejected: string): Promise<string | null>;
  /** Reads an answer's `date` header: GitHub's clock, for the expiry estimate. */
  observe(date: string | undefined): void;
  /**
   * The permissions of the GitHub App installation the tokens are minted from (`workflows: 'write'`…), as GitHub
   * answered when Fleet found it; undefined for a token Fleet did not mint (a PAT).
   */
  installationPermissions?(): Readonly<Record<string, string>>;
  /** The account the App's installation is on (app-owner); undefined for a PAT. */
  installationAccount?(): string;
}

/** A PAT or a token minted elsewhere: sent as it is, never renewed. */
export function staticToken(token: string): TokenCredential {
  return { current: () => token, fresh: async () => token, renew: async () => null, observe: () => {} };
}
