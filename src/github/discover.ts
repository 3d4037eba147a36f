/**
 * Target discovery: the repositories of an organization or a user, those of
 * an owner carrying a topic, or a repository search. Every source is read to
 * its end (paginated); what a source cannot give (unknown owner, the search
 * API's 1,000-result cap, a timed-out search) comes back as a problem, never
 * as a silently shorter list.
 */
import type { DiscoverSourceSchema } from '../core/fleet-file.js';
import type * as z from 'zod';
import { redact } from '../util/secrets.js';
import type { FleetOctokit } from './octokit.js';

export type DiscoverSource = z.output<typeof DiscoverSourceSchema>;

export interface DiscoveryResult {
  /** owner/repo names, deduplicated (case-insensitively) and sorted. */
  repos: string[];
  problems: string[];
}

/** GitHub's search API returns at most this many results for one query, whatever total_count says. */
export const SEARCH_CAP = 1000;

export type DiscoveryRequest =
  | { kind: 'list'; route: 'GET /orgs/{org}/repos'; params: { org: string; type: 'all'; per_page: 100 } }
  | { kind: 'list'; route: 'GET /users/{username}/repos'; params: { username: string; type: 'owner'; per_page: 100 } }
  | { kind: 'list'; route: 'GET /user/repos'; params: { affiliation: 'owner'; visibility: 'all'; per_page: 100 } }
  | { kind: 'search'; q: string };

/** The search query for `{topic, owner}`: `topic:T org:OWNER` for an organization, `topic:T user:OWNER` otherwise. */
export function topicQuery(topic: string, owner: string, ownerType: 'Organization' | 'User' | 'unknown', includeForks = false): string {
  const qualifier = ownerType === 'Organization' ? 'org' : 'user';
  return [`topic:${quoteTerm(topic)}`, `${qualifier}:${owner}`, ...(includeForks ? ['fork:true'] : [])].join(' ');
}

function quoteTerm(term: string): string {
  return /[\s"]/.test(term) ? `"${term.replace(/"/g, '')}"` : term;
}

function describeSource(source: DiscoverSource): string {
  if ('org' in source) return `org ${source.org}`;
  if ('user' in source) return `user ${source.user}`;
  if ('topic' in source) return `topic ${source.topic} of ${source.owner}`;
  return `search "${source.search}"`;
}

function status(err: unknown): number {
  return (err as { status?: number }).status ?? 0;
}

function message(err: unknown): string {
  return redact(String((err as Error).message ?? err))
    .split('\n')[0]!
    .slice(0, 300);
}

interface Ctx {
  octokit: FleetOctokit;
  includeForks: boolean;
  viewer: Promise<string | null> | undefined;
}

/** The login behind the token, or null (an App installation token has no user). */
function viewerLogin(ctx: Ctx): Promise<string | null> {
  ctx.viewer ??= ctx.octokit
    .request('GET /user')
    .then((r) => r.data.login)
    .catch(() => null);
  return ctx.viewer;
}

async function ownerType(ctx: Ctx, owner: string): Promise<'Organization' | 'User' | 'unknown' | 'missing'> {
  try {
    const r = await ctx.octokit.request('GET /users/{username}', { username: owner });
    return r.data.type === 'Organization' ? 'Organization' : 'User';
  } catch (err) {
    return status(err) === 404 ? 'missing' : 'unknown';
  }
}

async function listAll(ctx: Ctx, req: Extract<DiscoveryRequest, { kind: 'list' }>): Promise<string[]> {
  const names: string[] = [];
  for await (const page of ctx.octokit.paginate.iterator(req.route as 'GET /orgs/{org}/repos', req.params as never)) {
    for (const r of page.data as Array<{ full_name: string }>) names.push(r.full_name);
  }
  return names;
}

async function searchAll(ctx: Ctx, q: string, problems: string[], label: string): Promise<string[]> {
  const names: string[] = [];
  let total = 0;
  let incomplete = false;
  for (let page = 1; page <= SEARCH_CAP / 100; page++) {
    const r = await ctx.octokit.request('GET /search/repositories', { q, per_page: 100, page });
    total = r.data.total_count;
    incomplete ||= r.data.incomplete_results;
    for (const item of r.data.items) names.push(item.full_name);
    if (r.data.items.length < 100 || page * 100 >= Math.min(total, SEARCH_CAP)) break;
  }
  if (total > SEARCH_CAP) {
    problems.push(
      `${label}: ${total} repositories match but GitHub's search returns only the first ${SEARCH_CAP}; ` +
        `${total - Math.min(names.length, SEARCH_CAP)} were not discovered — narrow the query or split it (by topic, language, created:…)`,
    );
  }
  if (incomplete) problems.push(`${label}: GitHub's search timed out and returned incomplete results; run the plan again or narrow the query`);
  return names;
}

async function discoverOne(ctx: Ctx, source: DiscoverSource, problems: string[]): Promise<string[]> {
  const label = `github.discover ${describeSource(source)}`;
  try {
    if ('org' in source) {
      try {
        return await listAll(ctx, { kind: 'list', route: 'GET /orgs/{org}/repos', params: { org: source.org, type: 'all', per_page: 100 } });
      } catch (err) {
        if (status(err) !== 404) throw err;
        problems.push(
          `${label}: no organization "${source.org}" (or the token cannot see it)${(await ownerType(ctx, source.org)) === 'User' ? `; ${source.org} is a user: write {user: ${source.org}}` : ''}`,
        );
        return [];
      }
    }
    if ('user' in source) {
      // /users/{u}/repos lists public repositories only; the token's own user sees its private ones through /user/repos.
      const me = await viewerLogin(ctx);
      if (me && me.toLowerCase() === source.user.toLowerCase()) {
        const own = await listAll(ctx, { kind: 'list', route: 'GET /user/repos', params: { affiliation: 'owner', visibility: 'all', per_page: 100 } });
        // affiliation=owner already means "owned by the user"; the filter keeps that true whatever the server does.
        return own.filter((n) => n.toLowerCase().startsWith(`${me.toLowerCase()}/`));
      }
      try {
        return await listAll(ctx, { kind: 'list', route: 'GET /users/{username}/repos', params: { username: source.user, type: 'owner', per_page: 100 } });
      } catch (err) {
        if (status(err) !== 404) throw err;
        problems.push(`${label}: no user "${source.user}"`);
        return [];
      }
    }
    if ('topic' in source) {
      const type = await ownerType(ctx, source.owner);
      if (type === 'missing') {
        problems.push(`${label}: no user or organization "${source.owner}"`);
        return [];
      }
      return await searchAll(ctx, topicQuery(source.topic, source.owner, type, ctx.includeForks), problems, label);
    }
    return await searchAll(ctx, source.search, problems, label);
  } catch (err) {
    const s = status(err);
    const hint = s === 422 ? ' (GitHub rejected the query)' : s === 401 ? ' (the token is not valid)' : s === 403 ? ' (forbidden or rate limited)' : '';
    problems.push(`${label}: ${message(err)}${hint}`);
    return [];
  }
}

/**
 * Reads every source (sequentially: the search API allows 30 requests a minute)
 * and returns the owner/repo names, deduplicated case-insensitively (first
 * spelling kept) and sorted.
 */
export async function discoverRepos(octokit: FleetOctokit, sources: readonly DiscoverSource[], opts: { allowForks?: boolean } = {}): Promise<DiscoveryResult> {
  const ctx: Ctx = { octokit, includeForks: opts.allowForks ?? false, viewer: undefined };
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const source of sources) {
    for (const name of await discoverOne(ctx, source, problems)) {
      const key = name.toLowerCase();
      if (!seen.has(key)) seen.set(key, name);
    }
  }
  const repos = [...seen.values()].sort((a, b) => {
    const x = a.toLowerCase();
    const y = b.toLowerCase();
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return { repos, problems };
}
