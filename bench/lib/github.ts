/**
 * Helpers of the GitHub bench: the repositories it makes in the emulator, the
 * instrumented forge (which Fleet method sent which request), and the
 * attribution of logged requests to lanes.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { CreateRepoSpec, TokenSpec } from '../../test/support/github-emulator/index.js';
import type { FleetOctokit } from '../../src/github/octokit.js';
import type { Forge } from '../../src/ports.js';
import type { LoggedRequest } from './emulator-client.js';
import { median } from './stats.js';

// ---------------------------------------------------------------------------
// The 1,000-target mix

/** What each slot of every hundred targets is; the rest (85 of each 100) are ordinary repositories. */
const MIX: Record<number, { kind: string; expect: string }> = {
  0: { kind: 'missing', expect: 'not-found' },
  1: { kind: 'missing', expect: 'not-found' },
  2: { kind: 'missing', expect: 'not-found' },
  3: { kind: 'missing', expect: 'not-found' },
  4: { kind: 'archived', expect: 'archived' },
  5: { kind: 'archived', expect: 'archived' },
  6: { kind: 'archived', expect: 'archived' },
  7: { kind: 'disabled', expect: 'disabled' },
  8: { kind: 'fork', expect: 'fork' },
  9: { kind: 'empty', expect: 'empty' },
  10: { kind: 'read-only', expect: 'no-push-permission' },
  11: { kind: 'read-only', expect: 'no-push-permission' },
  12: { kind: 'private-no-access', expect: 'not-found' },
  13: { kind: 'base-develop', expect: 'ok' },
  14: { kind: 'base-missing', expect: 'no-base-branch' },
};

export interface TargetMix {
  targets: Array<{ repo: string; base?: string }>;
  repos: CreateRepoSpec[];
  /** Per-repository permissions of the bench token (read-only and invisible ones). */
  permissions: NonNullable<TokenSpec['permissions']>;
  /** The verdict each lane must get (lane id → ok or reason code). */
  expected: Map<string, string>;
  /** How many targets of each kind. */
  kinds: Record<string, number>;
}

/** `n` targets of `owner`: 85 % ordinary, the rest missing, archived, disabled, forks, empty, read-only, invisible, or with a base branch. */
export function targetMix(owner: string, n: number): TargetMix {
  const out: TargetMix = { targets: [], repos: [], permissions: {}, expected: new Map(), kinds: {} };
  const files = { 'README.md': '# svc\n', 'package.json': '{ "name": "svc", "version": "1.0.0" }\n' };
  for (let i = 0; i < n; i++) {
    const name = `svc-${String(i).padStart(String(n - 1).length, '0')}`;
    const full = `${owner}/${name}`;
    const slot = MIX[i % 100] ?? { kind: 'ok', expect: 'ok' };
    out.kinds[slot.kind] = (out.kinds[slot.kind] ?? 0) + 1;
    out.expected.set(name, slot.expect);
    const spec: CreateRepoSpec = { owner, name, files };
    switch (slot.kind) {
      case 'missing':
        out.targets.push({ repo: full });
        continue;
      case 'archived':
        spec.archived = true;
        break;
      case 'disabled':
        spec.disabled = true;
        break;
      case 'fork':
        spec.fork = true;
        break;
      case 'empty':
        spec.empty = true;
        break;
      case 'read-only':
        out.permissions[full] = 'pull';
        break;
      case 'private-no-access':
        spec.visibility = 'private';
        out.permissions[full] = 'none';
        break;
      case 'base-develop':
        spec.branches = { develop: { 'DEVELOP.md': 'develop\n' } };
        out.targets.push({ repo: full, base: 'develop' });
        out.repos.push(spec);
        continue;
      case 'base-missing':
        out.targets.push({ repo: full, base: 'release-9' });
        out.repos.push(spec);
        continue;
    }
    out.targets.push({ repo: full });
    out.repos.push(spec);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Which Fleet method sent which request

export interface ClientCall {
  /** The Forge method on the stack when the request was sent ('(none)' outside one). */
  op: string;
  method: string;
  /** The path as sent (no query), as the emulator logs it. */
  path: string;
}

/**
 * Wraps a forge so every request its Octokit sends is tagged with the Forge
 * method it was sent from (publish, ciConclusion, branchHead, …). Nothing of
 * the forge changes: the proxy only runs each method inside an async context.
 */
export function instrument<F extends Forge>(forge: F, octokit: FleetOctokit): { forge: F; calls: ClientCall[] } {
  const ctx = new AsyncLocalStorage<string>();
  const calls: ClientCall[] = [];
  octokit.hook.before('request', (options) => {
    const sent = octokit.request.endpoint.parse(options as never);
    calls.push({ op: ctx.getStore() ?? '(none)', method: sent.method, path: new URL(sent.url, 'http://x').pathname });
  });
  const proxy = new Proxy(forge, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function' || prop === 'constructor') return value;
      return (...args: unknown[]) => ctx.run(String(prop), () => (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
  return { forge: proxy, calls };
}

// ---------------------------------------------------------------------------
// Attribution of logged requests to lanes

const REST_REPO = /^\/repos\/([^/]+)\/([^/]+)(?:\/|$)/;
const GIT_REPO = /^\/git\/([^/]+)\/([^/]+?)(?:\.git)?\//;

/** owner/repo (lowercase) a request was about, from its path; null for /graphql, /user, … */
export function repoOfRequest(r: Pick<LoggedRequest, 'kind' | 'path'>): string | null {
  const m = (r.kind === 'git' ? GIT_REPO : REST_REPO).exec(r.path);
  return m ? `${decodeURIComponent(m[1]!)}/${decodeURIComponent(m[2]!)}`.toLowerCase() : null;
}

export const CONTENT_METHODS = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

export function routeKey(r: Pick<LoggedRequest, 'method' | 'route' | 'path'>): string {
  return `${r.method} ${r.route ?? r.path}`;
}

export interface LaneCalls {
  rest: number;
  content: number;
  git: number;
  /** `METHOD route` → count. */
  byRoute: Map<string, number>;
}

export interface Attribution {
  lanes: Map<string, LaneCalls>;
  /** Requests of no lane's repository (GraphQL, /user, …). */
  other: LoggedRequest[];
  /** `METHOD route` → the Forge methods that sent it (REST and GraphQL; from the client-side tags). */
  sentBy: Map<string, Set<string>>;
  /** Server-logged requests no client call accounts for (retries), and client calls the server never logged. */
  untagged: number;
  unlogged: number;
}

/**
 * The requests of each repository (one lane per repository in the bench),
 * REST and git, each REST request joined to the client call that sent it.
 */
export function attribute(requests: readonly LoggedRequest[], repos: readonly string[], calls: readonly ClientCall[]): Attribution {
  const lanes = new Map<string, LaneCalls>(repos.map((r) => [r.toLowerCase(), { rest: 0, content: 0, git: 0, byRoute: new Map() }]));
  const other: LoggedRequest[] = [];
  const sentBy = new Map<string, Set<string>>();
  const pending = new Map<string, string[]>();
  for (const c of calls) {
    const k = `${c.method} ${c.path}`;
    if (!pending.has(k)) pending.set(k, []);
    pending.get(k)!.push(c.op);
  }
  let untagged = 0;
  for (const r of requests) {
    const key = routeKey(r);
    if (r.kind !== 'git') {
      const op = pending.get(`${r.method} ${r.path}`)?.shift();
      if (op === undefined) untagged++;
      if (!sentBy.has(key)) sentBy.set(key, new Set());
      sentBy.get(key)!.add(op ?? '(untagged)');
    }
    const repo = r.kind === 'graphql' ? null : repoOfRequest(r);
    const lane = repo ? lanes.get(repo) : undefined;
    if (!lane) {
      other.push(r);
      continue;
    }
    if (r.kind === 'git') lane.git++;
    else {
      lane.rest++;
      if (CONTENT_METHODS.has(r.method)) lane.content++;
    }
    lane.byRoute.set(key, (lane.byRoute.get(key) ?? 0) + 1);
  }
  const unlogged = [...pending.values()].reduce((n, ops) => n + ops.length, 0);
  return { lanes, other, sentBy, untagged, unlogged };
}

export interface RouteRow {
  route: string;
  kind: 'rest' | 'git';
  content: boolean;
  /** Median, min and max count per lane. */
  median: number;
  min: number;
  max: number;
  total: number;
  /** The Forge methods that sent it (REST only). */
  sent_by: string[];
}

/** One row per route: how often a lane sent it, and from which Forge method. */
export function routeTable(lanes: Iterable<LaneCalls>, sentBy: ReadonlyMap<string, ReadonlySet<string>>): RouteRow[] {
  const all = [...lanes];
  const keys = new Set<string>();
  for (const l of all) for (const k of l.byRoute.keys()) keys.add(k);
  const rows = [...keys].map((k): RouteRow => {
    const counts = all.map((l) => l.byRoute.get(k) ?? 0);
    const git = k.includes(' git:');
    return {
      route: k,
      kind: git ? 'git' : 'rest',
      content: !git && CONTENT_METHODS.has(k.split(' ')[0]!),
      median: median(counts),
      min: Math.min(...counts),
      max: Math.max(...counts),
      total: counts.reduce((a, b) => a + b, 0),
      sent_by: [...(sentBy.get(k) ?? [])].sort(),
    };
  });
  return rows.sort((a, b) => (a.kind === b.kind ? b.total - a.total || a.route.localeCompare(b.route) : a.kind === 'rest' ? -1 : 1));
}
