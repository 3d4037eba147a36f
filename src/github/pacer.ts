/**
 * A leg's share of the fleet's write budget (src/core/budget.ts), kept in
 * front of every content-creating request the leg's Octokit sends.
 *
 * GitHub's secondary limits count "content-creating" requests per account
 * (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits):
 * POST, PATCH, PUT and DELETE requests, and GraphQL mutations. Minting an
 * installation token creates no content (the throttling plugin, and the
 * emulator, leave those alone too).
 */
import { nextSlot, type LegPace } from '../core/budget.js';
import { redact } from '../util/secrets.js';

const WRITE_METHODS = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
/** Token endpoints (plugin-throttling's `isAuthRequest`): no content, and not to be held behind writes. */
const AUTH_PATHS = [/^\/applications\/[^/]+\/token(\/scoped)?$/, /^\/app\/installations\/[^/]+\/access_tokens$/, /^\/login\/oauth\/access_token$/];

interface RequestOptions {
  method?: string;
  url?: string;
  query?: unknown;
  [k: string]: unknown;
}

function pathOf(url: string | undefined): string {
  try {
    return new URL(url ?? '', 'http://github.test').pathname;
  } catch {
    return url ?? '';
  }
}

/** Whether GitHub counts this request against the account's content-creation limit. */
export function isContentCreating(options: RequestOptions): boolean {
  const method = (options.method ?? 'GET').toUpperCase();
  if (!WRITE_METHODS.has(method)) return false;
  const path = pathOf(options.url);
  if (AUTH_PATHS.some((re) => re.test(path))) return false;
  // GraphQL: every request is a POST; only mutations create content.
  if (/\/graphql$/.test(path)) return typeof options.query === 'string' && /^\s*(#[^\n]*\n\s*)*mutation\b/.test(options.query);
  return true;
}

/**
 * Hands out the leg's write slots one at a time: each write waits for the
 * leg's next slot (src/core/budget.ts nextSlot), so the leg never writes more
 * often than its share however many lanes or retries it has, and never in
 * another leg's slot.
 */
export class WritePacer {
  private last: number | undefined;
  private turn: Promise<void> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /** How many writes waited, for how long in all, and how many slots were let go because the leg woke too late for them (for the leg's log). */
  readonly stats = { writes: 0, waited_ms: 0, late: 0 };

  /**
   * `waitTurn`: resolves when the leg's slots are its own (the leg that had them before has finished), awaited once,
   * before the first write.
   */
  constructor(
    readonly pace: LegPace,
    private readonly now: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
    private readonly waitTurn?: () => Promise<void>,
    private readonly onTurnError?: (err: Error) => void,
  ) {
    if (!(pace.interval_ms > 0) || pace.phase_ms < 0) throw new Error(`a write pace needs a positive interval and a phase ≥ 0 (got ${JSON.stringify(pace)})`);
  }

  /** Resolves at the slot the next write may go in (its time). */
  take(): Promise<number> {
    const turn = this.queue.then(async () => {
      // waitForPredecessor retries its own failures; anything else escaping it must not stop every write of the leg.
      this.turn ??= (this.waitTurn?.() ?? Promise.resolve()).catch((err: Error) => void this.onTurnError?.(err));
      await this.turn;
      this.stats.writes++;
      for (;;) {
        const at = nextSlot(this.pace, this.now(), this.last);
        const wait = at - this.now();
        if (wait > 0) {
          this.stats.waited_ms += wait;
          await this.sleep(wait);
        }
        // A busy runner can wake a sleeper late: a write sent half a slot after its own slot lands in a neighbour's.
        if (this.now() - at <= this.tolerance()) {
          this.last = at;
          return at;
        }
        this.stats.late++;
      }
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private tolerance(): number {
    return (this.pace.slot_ms ?? this.pace.interval_ms) / 2;
  }
}

type Hook = { hook: { wrap: (name: 'request', fn: (request: (o: never) => Promise<unknown>, options: never) => Promise<unknown>) => void } };

/**
 * The pacer as an Octokit plugin. Registered inside the throttling plugin, so
 * a write that plugin retries after a rate limit waits for a slot of its own again.
 */
export function writePacerPlugin(pacer: WritePacer) {
  return (octokit: Hook) => {
    octokit.hook.wrap('request', async (request, options) => {
      if (isContentCreating(options as RequestOptions)) await pacer.take();
      return request(options);
    });
    return {};
  };
}

const SECONDARY = /\bsecondary rate\b/i;

/**
 * Inside the throttling plugin: a secondary-limit answer that names `x-ratelimit-reset` instead of `retry-after`
 * ("If the x-ratelimit-remaining header is 0, you should not retry your request until after the time, in UTC epoch
 * seconds, specified by the x-ratelimit-reset header", Rate limits for the REST API) gets the `retry-after` that
 * reset means. The plugin reads only `retry-after` for a secondary limit and otherwise waits its fixed 60 s,
 * which can be too early.
 */
export function secondaryResetPlugin(now: () => number = Date.now) {
  return (octokit: Hook) => {
    octokit.hook.wrap('request', async (request, options) => {
      try {
        return await request(options);
      } catch (err) {
        const headers = (err as { response?: { headers?: Record<string, string | undefined> } }).response?.headers;
        const e = err as { status?: number; message?: string };
        if (
          headers &&
          (e.status === 403 || e.status === 429) &&
          SECONDARY.test(String(e.message)) &&
          !headers['retry-after'] &&
          headers['x-ratelimit-remaining'] === '0'
        ) {
          const reset = Number(headers['x-ratelimit-reset']);
          if (Number.isFinite(reset) && reset > 0) headers['retry-after'] = String(Math.max(1, Math.ceil(reset - now() / 1000)));
        }
        throw err;
      }
    });
    return {};
  };
}

/**
 * Outside the throttling plugin: a write still refused by a secondary limit
 * after every retry fails with GitHub's words and what they mean for a fleet
 * (the forge puts this in the lane's error). The message is changed in place,
 * in the response's `message` too, which is where the forge reads GitHub's words.
 */
export function secondaryLimitMessagePlugin(retries: number) {
  return (octokit: Hook) => {
    octokit.hook.wrap('request', async (request, options) => {
      try {
        return await request(options);
      } catch (err) {
        const e = err as { status?: number; message?: string; request?: { url?: string }; response?: { data?: { message?: unknown } } };
        if ((e.status === 403 || e.status === 429) && SECONDARY.test(String(e.message)) && isContentCreating(options as RequestOptions)) {
          const o = options as RequestOptions;
          const why =
            // The error's request has the URL with its parameters filled in; the options still hold the route's template.
            ` (Fleet: ${redact(`${o.method ?? ''} ${pathOf(e.request?.url ?? o.url)}`)} was still refused by GitHub's secondary rate limit after ${retries} ` +
            `${retries === 1 ? 'retry' : 'retries'}, each after GitHub's retry-after plus jitter. The limit is per account and every leg of the fleet shares it: ` +
            'lower max_parallel, or check what else writes as this account)';
          const data = e.response?.data;
          if (data && typeof data.message === 'string' && !data.message.includes('(Fleet:')) data.message = `${data.message.split('\n')[0]}${why}`;
          if (typeof e.message === 'string' && !e.message.includes('(Fleet:')) e.message = `${e.message.split('\n')[0]}${why}`;
        }
        throw err;
      }
    });
    return {};
  };
}
