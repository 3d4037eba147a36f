/**
 * The one place Fleet builds its GitHub client: `@actions/github`'s
 * `getOctokit` (REST methods, pagination, the runner's proxy settings) plus
 * `@octokit/plugin-throttling` (GitHub's pacing rules for writes and search,
 * and a wait-and-retry on primary and secondary rate limits) and
 * `@octokit/plugin-retry` (5xx and network errors).
 *
 * A rate-limited request is retried after the `retry-after` (or the reset
 * time) the server names, up to `maxRetries` times, each time with a warning
 * in the log; when Fleet gives up, the request fails with GitHub's error, so
 * no request is ever lost silently.
 */
import * as core from '@actions/core';
import { getOctokit } from '@actions/github';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import Bottleneck from 'bottleneck/light.js';
import type { Logger } from '../ports.js';
import type { TokenCredential } from './credential.js';
import type { LegPace } from '../core/budget.js';
import { encodedForms, redact, registerSecret } from '../util/secrets.js';
import { secondaryLimitMessagePlugin, secondaryResetPlugin, WritePacer, writePacerPlugin } from './pacer.js';

export type FleetOctokit = ReturnType<typeof getOctokit>;

/** Pacing of the throttling plugin's queues, in milliseconds between requests (GitHub asks for ≥1 s between writes). */
export interface Pacing {
  /** Between writes and GraphQL queries (plugin default 1000). */
  writeMs: number;
  /** Between search requests (plugin default 2000: search allows 30 a minute). */
  searchMs: number;
  /** Between writes that notify people (PRs, reviews, merges; plugin default 3000). */
  notificationsMs: number;
}

export interface CreateOctokitOptions {
  token: string;
  /**
   * A credential that may change while the client lives (a GitHub App installation token Fleet renews): every
   * request sends its current token, renewed first when near its end, and a 401 renews it once and retries.
   * `token` is then its first token.
   */
  credential?: TokenCredential;
  /** REST base URL; default GITHUB_API_URL, else https://api.github.com. GHES: https://HOST/api/v3. */
  apiUrl?: string;
  /**
   * GraphQL endpoint. Default: GITHUB_GRAPHQL_URL when the REST URL also came
   * from the environment; otherwise derived from the REST URL
   * (`…/api/v3` → `…/api/graphql`, anything else → `<apiUrl>/graphql`).
   */
  graphqlUrl?: string;
  logger?: Logger;
  userAgent?: string;
  /** Retries after a primary or secondary rate limit (default 3). */
  maxRetries?: number;
  /** Give up (with the error) instead of waiting longer than this many seconds for a limit to pass (default 3600). */
  maxRetryAfterSeconds?: number;
  /** Retries of 5xx and network errors by plugin-retry (default 3). */
  serverErrorRetries?: number;
  /** Milliseconds per second of `retry-after` and of plugin-retry's back-off (default 1000; tests make it small). */
  retryAfterBaseValue?: number;
  /**
   * Own pacing queues for this client instead of the plugin's process-wide
   * ones (tests use short intervals; production keeps GitHub's recommended
   * defaults, shared by every client in the process).
   */
  pacing?: Partial<Pacing>;
  /** Replaces the HTTP client (default: @actions/github's, which honours the runner's proxy settings). */
  fetch?: typeof globalThis.fetch;
  /**
   * This leg's share of the fleet's write budget (the plan's, src/core/budget.ts): every content-creating
   * request waits for the leg's next write slot. Without it, only the throttling plugin's pacing applies.
   */
  writePace?: LegPace;
  /** Chooses the jitter added to a rate limit's wait (default Math.random: legs never retry in lockstep). */
  random?: () => number;
}

const stderrLogger: Logger = {
  info: () => {},
  warn: (m) => process.stderr.write(`${redact(m)}\n`),
  error: (m) => process.stderr.write(`${redact(m)}\n`),
};

/** The REST base URL the client uses for these options. */
export function resolveApiUrl(apiUrl?: string): string {
  return trimSlash(apiUrl ?? process.env.GITHUB_API_URL ?? 'https://api.github.com');
}

/**
 * The GraphQL endpoint for a REST base URL: GHES serves REST at /api/v3 and
 * GraphQL at /api/graphql; github.com and GHE.com at <api>/graphql.
 */
export function graphqlUrlFor(apiUrl: string): string {
  const base = trimSlash(apiUrl);
  return /\/api\/v3$/.test(base) ? base.replace(/\/api\/v3$/, '/api/graphql') : `${base}/graphql`;
}

/** The endpoint createOctokit sends GraphQL to for these options (see `CreateOctokitOptions.graphqlUrl`). */
export function resolveGraphqlUrl(opts: Pick<CreateOctokitOptions, 'apiUrl' | 'graphqlUrl'>): string {
  if (opts.graphqlUrl) return trimSlash(opts.graphqlUrl);
  // GITHUB_GRAPHQL_URL belongs with GITHUB_API_URL: an explicit REST URL (another
  // host, an emulator) must not send its GraphQL queries to the runner's GitHub.
  if (opts.apiUrl === undefined && process.env.GITHUB_GRAPHQL_URL) return trimSlash(process.env.GITHUB_GRAPHQL_URL);
  return graphqlUrlFor(resolveApiUrl(opts.apiUrl));
}

/**
 * The web (and git) URL for a REST base URL: https://api.github.com →
 * https://github.com, https://HOST/api/v3 → https://HOST, https://api.X.ghe.com →
 * https://X.ghe.com; anything else → its origin.
 */
export function serverUrlFor(apiUrl: string): string {
  const base = trimSlash(apiUrl);
  if (/\/api\/v3$/.test(base)) return base.replace(/\/api\/v3$/, '');
  try {
    const u = new URL(base);
    if (u.hostname === 'api.github.com') return `${u.protocol}//github.com`;
    if (/^api\.[^.]+\.ghe\.com$/.test(u.hostname)) return `${u.protocol}//${u.hostname.slice(4)}`;
    return u.origin;
  } catch {
    return base;
  }
}

/** The base64 `x-access-token:TOKEN` credential git sends (the form actions/checkout masks too). */
export function basicCredential(token: string): string {
  return Buffer.from(`x-access-token:${token}`, 'utf8').toString('base64');
}

const masked = new Set<string>();

/** Registers the token (and its basic-auth form) for redaction, and masks both in the Actions log (once per token). */
export function maskToken(token: string): void {
  const basic = basicCredential(token);
  registerSecret(token);
  registerSecret(basic);
  if (process.env.GITHUB_ACTIONS === 'true' && !masked.has(token)) {
    masked.add(token);
    // The runner masks what it is told, as it is told: each encoded form is a mask of its own.
    for (const form of new Set([...encodedForms(token), basic])) core.setSecret(form);
  }
}

/** Every 4xx status: answers, not transient failures. */
const CLIENT_ERRORS = Array.from({ length: 100 }, (_, i) => 400 + i);

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** `METHOD /path` of a request, with the route's `{params}` filled in from the options. */
function describe(options: { method?: string; url?: string; [k: string]: unknown }): string {
  let path = (options.url ?? '').replace(/\{([^}]+)\}/g, (whole, key: string) => {
    const v = options[key];
    return typeof v === 'string' || typeof v === 'number' ? encodeURIComponent(String(v)) : whole;
  });
  try {
    path = new URL(path, 'http://x').pathname;
  } catch {
    // keep the raw url
  }
  return redact(`${options.method ?? 'GET'} ${path}`);
}

/**
 * Logs every 5xx / network failure before plugin-retry decides on it (first plugin: innermost, sees each attempt),
 * with the attempt it was: plugin-retry sets `options.request.retryCount` before each retry and waits
 * (retryCount + 1)² back-off units after a failure, so the attempt number says which back-off follows.
 */
function attemptLogger(logger: Logger) {
  const plugin = (octokit: {
    hook: { wrap: (name: 'request', fn: (request: (o: never) => Promise<unknown>, options: never) => Promise<unknown>) => void };
  }) => {
    octokit.hook.wrap('request', async (request, options) => {
      try {
        return await request(options);
      } catch (err) {
        const status = (err as { status?: number }).status ?? 0;
        if (status >= 500 || status === 0) {
          const o = options as { method?: string; url?: string; request?: { retryCount?: number }; [k: string]: unknown };
          const attempt = (o.request?.retryCount ?? 0) + 1;
          logger.warn(
            `GitHub: ${describe(o)} failed on attempt ${attempt} (${status || 'network error'}: ${redact(String((err as Error).message ?? err)).slice(0, 200)})`,
          );
        }
        throw err;
      }
    });
    return {};
  };
  return plugin;
}

/**
 * An Octokit auth strategy over a TokenCredential: the token is read per request (renewed first when it has
 * less than the margin left), every answer's `date` header feeds the credential's estimate of GitHub's clock,
 * and a 401 Bad credentials renews the token once and sends the request again. It is Octokit's own auth hook
 * (innermost), so the throttling and retry plugins see one request.
 */
function renewingAuth(credential: TokenCredential) {
  const dateOf = (r: unknown) =>
    (r as { response?: { headers?: Record<string, string> }; headers?: Record<string, string> }).headers?.date ??
    (r as { response?: { headers?: Record<string, string> } }).response?.headers?.date;
  return () =>
    Object.assign(async () => ({ type: 'token', tokenType: 'installation', token: credential.current() }), {
      hook: async (
        request: ((o: unknown) => Promise<unknown>) & { endpoint: { merge(route: unknown, params?: unknown): { headers: Record<string, string> } } },
        route: unknown,
        parameters?: unknown,
      ) => {
        const endpoint = request.endpoint.merge(route, parameters);
        const send = async (token: string) => {
          endpoint.headers.authorization = `token ${token}`;
          try {
            const res = await request(endpoint);
            credential.observe(dateOf(res));
            return res;
          } catch (err) {
            credential.observe(dateOf(err));
            throw err;
          }
        };
        const token = await credential.fresh();
        try {
          return await send(token);
        } catch (err) {
          if ((err as { status?: number }).status !== 401) throw err;
          const renewed = await credential.renew(token);
          if (!renewed) throw err;
          return send(renewed);
        }
      },
    });
}

export function createOctokit(opts: CreateOctokitOptions): FleetOctokit {
  if (!opts.token) throw new Error('a GitHub token is required');
  maskToken(opts.token);
  const logger = opts.logger ?? stderrLogger;
  const baseUrl = resolveApiUrl(opts.apiUrl);
  const graphqlUrl = resolveGraphqlUrl(opts);
  const maxRetries = opts.maxRetries ?? 3;
  const maxWait = opts.maxRetryAfterSeconds ?? 3600;
  const base = opts.retryAfterBaseValue ?? 1000;

  const random = opts.random ?? Math.random;
  // Every leg refused in the same second is told the same retry-after: each waits a random part of it more
  // (at least one retry-after unit), so their retries spread out instead of arriving together again.
  const onLimit =
    (kind: 'primary' | 'secondary') =>
    async (retryAfter: number, options: { method?: string; url?: string; [k: string]: unknown }, _octokit: unknown, retryCount: number): Promise<boolean> => {
      const what = describe(options);
      if (retryCount >= maxRetries) {
        logger.warn(`GitHub ${kind} rate limit on ${what}: giving up after ${retryCount} ${retryCount === 1 ? 'retry' : 'retries'}`);
        return false;
      }
      if (retryAfter > maxWait) {
        logger.warn(`GitHub ${kind} rate limit on ${what}: GitHub asks to wait ${retryAfter}s, more than the ${maxWait}s Fleet may wait; giving up`);
        return false;
      }
      const jitterMs = Math.floor(random() * Math.max(base, (retryAfter * base) / 2));
      logger.warn(`GitHub ${kind} rate limit on ${what}: retry ${retryCount + 1}/${maxRetries} in ${retryAfter}s (+${jitterMs} ms jitter)`);
      await new Promise((r) => setTimeout(r, jitterMs));
      return true;
    };

  const pacing = opts.pacing;
  const groups = pacing
    ? {
        write: new Bottleneck.Group({ maxConcurrent: 1, minTime: pacing.writeMs ?? 1000 }),
        search: new Bottleneck.Group({ maxConcurrent: 1, minTime: pacing.searchMs ?? 2000 }),
        notifications: new Bottleneck.Group({ maxConcurrent: 1, minTime: pacing.notificationsMs ?? 3000 }),
      }
    : {};

  const octokit = getOctokit(
    opts.token,
    {
      ...(opts.credential ? { authStrategy: renewingAuth(opts.credential) } : {}),
      baseUrl,
      userAgent: opts.userAgent ?? 'fleet',
      ...(opts.fetch ? { request: { fetch: opts.fetch } } : {}),
      log: { debug: () => {}, info: () => {}, warn: (m: string) => logger.warn(redact(m)), error: (m: string) => logger.error(redact(m)) },
      throttle: {
        onRateLimit: onLimit('primary'),
        onSecondaryRateLimit: onLimit('secondary'),
        retryAfterBaseValue: base,
        ...groups,
      },
      // plugin-retry retries every status >= 400 it is not told to leave alone; a 4xx is an answer
      // (405 not mergeable, 409 head moved, …), and 403/429 rate limits belong to the throttling
      // plugin, which counts its own retries. So: 5xx and network errors only.
      retry: { retries: opts.serverErrorRetries ?? 3, retryAfterBaseValue: base, doNotRetry: CLIENT_ERRORS },
    },
    attemptLogger(logger) as never,
    secondaryResetPlugin() as never,
    // Inside throttling: a retried write waits for a write slot again.
    ...(opts.writePace
      ? [
          writePacerPlugin(
            new WritePacer(opts.writePace, undefined, undefined, opts.writePace.waitTurn, (err) =>
              logger.warn(`Write budget: waiting for this leg's slots failed (${err.message}); writing in them now`),
            ),
          ) as never,
        ]
      : []),
    throttling,
    retry,
    secondaryLimitMessagePlugin(maxRetries) as never,
  );
  // Every request gets its own `request` options object. Octokit hands each request the client's
  // default one by reference, and plugin-retry keeps its back-off counter there
  // (`options.request.retryCount`): shared, one request's retries lengthened every later request's
  // back-off (a 502 on one lane made other lanes' first retries wait 4 s instead of 1 s, and the
  // count never went back to 0). Hooks all receive the one options object of the call (whatever
  // a wrap passes on is ignored), so it is replaced in place, by the outermost wrap (registered last).
  octokit.hook.wrap('request', (request, options) => {
    options.request = { ...options.request };
    return request(options);
  });
  // @octokit/graphql derives <baseUrl>/graphql (and /api/graphql for a GHES /api/v3 base). Send to the
  // resolved endpoint instead, with the same hooks (auth, throttling, retry) as every REST request.
  if (graphqlUrl !== graphqlUrlFor(baseUrl)) {
    octokit.graphql = octokit.graphql.defaults({ baseUrl: graphqlUrl, url: graphqlUrl });
  }
  return octokit;
}

const scopesRead = new WeakMap<object, Promise<string[] | undefined>>();

/**
 * A classic PAT's scopes, from the `X-OAuth-Scopes` header GitHub sends with every answer to one (read from
 * GET /rate_limit, which costs no rate limit); undefined for any other token (an installation token, a fine-grained
 * PAT), which says nothing of what it grants. Asked once per client; a failed read is not kept and rejects with
 * GitHub's error (a 401: the token is refused).
 */
export function classicScopes(octokit: FleetOctokit): Promise<string[] | undefined> {
  let read = scopesRead.get(octokit);
  if (!read) {
    read = octokit.request('GET /rate_limit').then((res) => {
      const header = (res.headers as Record<string, string | undefined>)['x-oauth-scopes'];
      return header === undefined
        ? undefined
        : header
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean);
    });
    scopesRead.set(octokit, read);
    read.catch(() => scopesRead.delete(octokit));
  }
  return read;
}
