/**
 * Limits GitHub enforces beyond the API description:
 *
 *  - The secondary limit on content-creating requests: "no more than 80
 *    content-generating requests per minute and no more than 500
 *    content-generating requests per hour" (GitHub's "Rate limits for the REST
 *    API", secondary rate limits). GitHub counts them per account (a user, or
 *    an app installation), not per token, so every token of one account shares
 *    the budget.
 *  - Check-run output: `summary` and `text` are each at most 65,535 *bytes*.
 *    The description's `maxLength: 65535` counts characters, so a summary of
 *    40,000 three-byte characters passes the description and GitHub still
 *    answers 422 "summary exceeds a maximum bytesize of 65535"
 *    (github/docs#35252, Nov 2024).
 */

export interface ContentWindow {
  max: number;
  windowMs: number;
}

/** `contentLimit` as EmulatorOptions takes it: the per-minute/per-hour form, the older one-window form, or false. */
export type ContentLimitOption = { perMinute?: number; perHour?: number } | { max: number; windowMs: number } | false;

export const DEFAULT_CONTENT_LIMIT: ContentWindow[] = [
  { max: 80, windowMs: 60_000 },
  { max: 500, windowMs: 3_600_000 },
];

/** The windows an option means (none when disabled); the older `{ max, windowMs }` form is one window. */
export function contentWindows(opt: ContentLimitOption | undefined): ContentWindow[] {
  if (opt === undefined) return DEFAULT_CONTENT_LIMIT.map((w) => ({ ...w }));
  if (opt === false) return [];
  if ('max' in opt) return [{ max: opt.max, windowMs: opt.windowMs }];
  const out: ContentWindow[] = [];
  if (opt.perMinute !== undefined) out.push({ max: opt.perMinute, windowMs: 60_000 });
  if (opt.perHour !== undefined) out.push({ max: opt.perHour, windowMs: 3_600_000 });
  return out;
}

/**
 * Sliding windows of content-creating requests per account. `take` counts a
 * request and returns null, or returns the seconds to wait when a window is
 * full (the request is then not counted, as GitHub does not count refused ones).
 */
export class ContentLimiter {
  private readonly byAccount = new Map<string, number[]>();

  constructor(private windows: ContentWindow[]) {}

  configure(windows: ContentWindow[]): void {
    this.windows = windows;
    this.byAccount.clear();
  }

  take(account: string, now: number): number | null {
    if (!this.windows.length) return null;
    const longest = Math.max(...this.windows.map((w) => w.windowMs));
    const times = (this.byAccount.get(account) ?? []).filter((t) => t > now - longest);
    this.byAccount.set(account, times);
    for (const w of this.windows) {
      const inWindow = times.filter((t) => t > now - w.windowMs);
      if (inWindow.length >= w.max) return Math.max(1, Math.ceil((inWindow[0]! + w.windowMs - now) / 1000));
    }
    times.push(now);
    return null;
  }
}

export const CHECK_OUTPUT_MAX_BYTES = 65_535;

/**
 * The field error GitHub answers for a check-run output over the byte limit
 * (the shape quoted in github/docs#35252), or null. `text` is assumed to be
 * worded like `summary`.
 */
export function checkOutputByteError(output: { summary?: unknown; text?: unknown } | undefined): Record<string, unknown> | null {
  for (const field of ['summary', 'text'] as const) {
    const v = output?.[field];
    if (typeof v === 'string' && Buffer.byteLength(v, 'utf8') > CHECK_OUTPUT_MAX_BYTES) {
      return { resource: 'CheckRun', code: 'custom', field, message: `${field} exceeds a maximum bytesize of ${CHECK_OUTPUT_MAX_BYTES}` };
    }
  }
  return null;
}

/**
 * GitHub's wording when a request breaks a `maxLength` or `maxItems` of the
 * Checks API's schema: "Invalid request.\n\nOnly 65535 characters are allowed;
 * 85289 were supplied." (zyborg/dotnet-tests-report#9, siddharthkp/bundlesize2#7)
 * and "Invalid request.\n\nNo more than 50 items are allowed; 53 were supplied."
 * (qiniu/reviewbot#258, dorny/test-reporter#194). Null for other errors.
 */
export function invalidRequestMessage(
  errors: Array<{ keyword: string; instancePath: string; params: Record<string, unknown> }> | null | undefined,
  body: unknown,
): string | null {
  for (const e of errors ?? []) {
    const data = at(body, e.instancePath);
    if (e.keyword === 'maxLength' && typeof data === 'string') {
      return `Invalid request.\n\nOnly ${String(e.params.limit)} characters are allowed; ${[...data].length} were supplied.`;
    }
    if (e.keyword === 'maxItems' && Array.isArray(data)) {
      return `Invalid request.\n\nNo more than ${String(e.params.limit)} items are allowed; ${data.length} were supplied.`;
    }
  }
  return null;
}

/** The value at a JSON pointer (Ajv's `instancePath`). */
function at(root: unknown, pointer: string): unknown {
  let node = root;
  for (const part of pointer.split('/').slice(1)) {
    if (!node || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}
