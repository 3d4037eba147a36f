/**
 * The search API's 1,000-result cap. Creating 1,001 repositories in the
 * emulator costs ~25 s, so this drives the real client stack (throttling,
 * retry, pagination) over a scripted HTTP layer that answers like GitHub.
 */
import { describe, expect, it } from 'vitest';
import { discoverRepos } from '../../src/github/discover.js';
import { createOctokit } from '../../src/github/octokit.js';
import { NO_PACING } from './helpers.js';

function searchServer(total: number, opts: { incompleteOnPage?: number } = {}) {
  const pages: number[] = [];
  const fetch = (async (input: string | URL | Request) => {
    const url = new URL(String(input));
    if (url.pathname === '/users/huge') return json({ login: 'huge', type: 'Organization' });
    if (url.pathname !== '/search/repositories') return json({ message: 'Not Found' }, 404);
    const page = Number(url.searchParams.get('page') ?? 1);
    const per = Number(url.searchParams.get('per_page') ?? 30);
    pages.push(page);
    if (page > 10) return json({ message: 'Only the first 1000 search results are available' }, 422);
    const start = (page - 1) * per;
    const n = Math.max(0, Math.min(per, Math.min(total, 1000) - start));
    const items = Array.from({ length: n }, (_, i) => ({ full_name: `huge/r-${String(start + i).padStart(5, '0')}` }));
    return json({ total_count: total, incomplete_results: page === opts.incompleteOnPage, items });
  }) as typeof globalThis.fetch;
  return { fetch, pages };
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

describe('search discovery', () => {
  it('reads at most 10 pages and reports the repositories past the cap as a problem', async () => {
    const server = searchServer(4321);
    const octokit = createOctokit({ token: 'ghs_capTestToken000000000000000001', apiUrl: 'https://api.example.test', pacing: NO_PACING, fetch: server.fetch });
    const { repos, problems } = await discoverRepos(octokit, [{ topic: 'svc', owner: 'huge' }]);
    expect(repos).toHaveLength(1000);
    expect(server.pages).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(problems).toEqual([
      "github.discover topic svc of huge: 4321 repositories match but GitHub's search returns only the first 1000; 3321 were not discovered — narrow the query or split it (by topic, language, created:…)",
    ]);
  });

  it('reports nothing missing when exactly 1,000 repositories match', async () => {
    const server = searchServer(1000);
    const octokit = createOctokit({ token: 'ghs_capTestToken000000000000000001', apiUrl: 'https://api.example.test', pacing: NO_PACING, fetch: server.fetch });
    const { repos, problems } = await discoverRepos(octokit, [{ topic: 'svc', owner: 'huge' }]);
    expect(repos).toHaveLength(1000);
    expect(server.pages).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(problems).toEqual([]);
  });

  it('stops at the last page under the cap, and says when GitHub gave incomplete results', async () => {
    const server = searchServer(250, { incompleteOnPage: 2 });
    const octokit = createOctokit({ token: 'ghs_capTestToken000000000000000001', apiUrl: 'https://api.example.test', pacing: NO_PACING, fetch: server.fetch });
    const { repos, problems } = await discoverRepos(octokit, [{ search: 'org:huge' }]);
    expect(repos).toHaveLength(250);
    expect(server.pages).toEqual([1, 2, 3]);
    expect(problems).toEqual([
      'github.discover search "org:huge": GitHub\'s search timed out and returned incomplete results; run the plan again or narrow the query',
    ]);
  });
});
