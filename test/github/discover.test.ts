/**
 * Discovery against the GitHub emulator (real HTTP): organizations, users,
 * topics, searches, and the fleet file's include/exclude over what was found.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addDiscoveredLanes, validateFleetFile } from '../../src/core/validate.js';
import { discoverRepos } from '../../src/github/discover.js';
import { createOctokit } from '../../src/github/octokit.js';
import { mapLimit } from '../../src/util/pool.js';
import { harness, NO_PACING, type Harness } from './helpers.js';

let h: Harness;

beforeAll(async () => {
  h = await harness();
  const { emu } = h;
  await emu.createRepo({ owner: 'acme', name: 'api', topics: ['service'] });
  await emu.createRepo({ owner: 'acme', name: 'web', topics: ['service', 'frontend'] });
  await emu.createRepo({ owner: 'acme', name: 'infra', topics: ['terraform'] });
  await emu.createRepo({ owner: 'acme', name: 'legacy-billing', topics: ['terraform'], archived: true });
  await emu.createRepo({ owner: 'acme', name: 'forked-module', topics: ['terraform'], fork: true });
  await emu.createRepo({ owner: 'octocat', name: 'dotfiles', ownerType: 'User', topics: ['terraform'] });
  await emu.createRepo({ owner: 'octocat', name: 'hello-world', ownerType: 'User' });
  await emu.createRepo({ owner: 'other', name: 'tool', topics: ['terraform'] });
});

// Each test's requests must be ones GitHub's API description allows (a malformed parameter fails the test that sent it).
afterEach(() => h.emu.assertNoViolations());

afterAll(async () => {
  await h.emu.close();
});

describe('discoverRepos', () => {
  it('lists every repository of an organization, paginated', async () => {
    const client = h.client();
    h.emu.resetLog();
    const { repos, problems } = await discoverRepos(client, [{ org: 'acme' }]);
    expect(problems).toEqual([]);
    expect(repos).toEqual(['acme/api', 'acme/forked-module', 'acme/infra', 'acme/legacy-billing', 'acme/web']);
    expect(h.emu.count({ route: '/orgs/{org}/repos' })).toBe(1);
  });

  it('follows the Link header across pages', async () => {
    await mapLimit(
      Array.from({ length: 105 }, (_, i) => i),
      8,
      (i) => h.emu.createRepo({ owner: 'paged', name: `svc-${String(i).padStart(3, '0')}`, empty: true }),
    );
    h.emu.resetLog();
    const { repos, problems } = await discoverRepos(h.octokit, [{ org: 'paged' }]);
    expect(problems).toEqual([]);
    expect(repos).toHaveLength(105);
    expect(h.emu.count({ route: '/orgs/{org}/repos' })).toBe(2);
  });

  it("lists a user's repositories", async () => {
    const { repos, problems } = await discoverRepos(h.octokit, [{ user: 'octocat' }]);
    expect(problems).toEqual([]);
    expect(repos).toEqual(['octocat/dotfiles', 'octocat/hello-world']);
  });

  it("lists the token's own user's repositories through /user/repos (private ones included)", async () => {
    const token = 'ghp_meTokenForDiscovery000000000001';
    h.emu.addToken(token, { login: 'me', default: 'none', permissions: { 'me/*': 'admin' }, type: 'pat' });
    await h.emu.createRepo({ owner: 'me', name: 'private-notes', ownerType: 'User', visibility: 'private' });
    h.emu.resetLog();
    const client = createOctokit({ token, apiUrl: h.emu.url, pacing: NO_PACING });
    const { repos } = await discoverRepos(client, [{ user: 'me' }]);
    expect(repos).toEqual(['me/private-notes']);
    expect(h.emu.count({ route: '/user/repos' })).toBeGreaterThan(0);
    expect(h.emu.count({ route: '/users/{username}/repos' })).toBe(0);
  });

  it('finds repositories of an owner by topic with org: or user: (forks only when allowed)', async () => {
    h.emu.resetLog();
    const org = await discoverRepos(h.octokit, [{ topic: 'terraform', owner: 'acme' }]);
    expect(org).toEqual({ repos: ['acme/infra', 'acme/legacy-billing'], problems: [] });
    const q = h.emu.find({ route: '/search/repositories' }).map((r) => new URLSearchParams(r.query).get('q'));
    expect(q).toEqual(['topic:terraform org:acme']);

    const user = await discoverRepos(h.octokit, [{ topic: 'terraform', owner: 'octocat' }]);
    expect(user.repos).toEqual(['octocat/dotfiles']);
    const withForks = await discoverRepos(h.octokit, [{ topic: 'terraform', owner: 'acme' }], { allowForks: true });
    expect(withForks.repos).toEqual(['acme/forked-module', 'acme/infra', 'acme/legacy-billing']);
  });

  it('runs a repository search', async () => {
    const { repos, problems } = await discoverRepos(h.octokit, [{ search: 'org:acme topic:service' }]);
    expect(problems).toEqual([]);
    expect(repos).toEqual(['acme/api', 'acme/web']);
  });

  it('stops paging a search at total_count: a full last page is not followed by an empty one', async () => {
    await mapLimit(
      Array.from({ length: 200 }, (_, i) => i),
      8,
      (i) => h.emu.createRepo({ owner: 'bulk', name: `m-${String(i).padStart(3, '0')}`, empty: true, topics: ['bulk'] }),
    );
    h.emu.resetLog();
    const { repos, problems } = await discoverRepos(h.octokit, [{ search: 'topic:bulk' }]);
    expect(problems).toEqual([]);
    expect(repos).toHaveLength(200);
    expect(h.emu.find({ route: '/search/repositories' }).map((r) => new URLSearchParams(r.query).get('page'))).toEqual(['1', '2']);
  });

  it('deduplicates across sources and sorts', async () => {
    const { repos } = await discoverRepos(h.octokit, [{ search: 'topic:terraform' }, { org: 'acme' }, { topic: 'service', owner: 'acme' }]);
    expect(repos).toEqual(['acme/api', 'acme/forked-module', 'acme/infra', 'acme/legacy-billing', 'acme/web', 'octocat/dotfiles', 'other/tool']);
  });

  it('reports an unknown owner as a problem and keeps the other sources', async () => {
    const { repos, problems } = await discoverRepos(h.octokit, [
      { org: 'nope' },
      { topic: 'x', owner: 'nobody' },
      { user: 'ghost-user' },
      { org: 'octocat' },
      { org: 'acme' },
    ]);
    expect(repos).toHaveLength(5);
    expect(problems).toEqual([
      'github.discover org nope: no organization "nope" (or the token cannot see it)',
      'github.discover topic x of nobody: no user or organization "nobody"',
      'github.discover user ghost-user: no user "ghost-user"',
      'github.discover org octocat: no organization "octocat" (or the token cannot see it); octocat is a user: write {user: octocat}',
    ]);
  });
});

describe('discovery that GitHub refuses', () => {
  it("reports each source the token cannot read with GitHub's message, and still reads a topic as user: when the owner type is unknown", async () => {
    // An unknown token: GitHub answers 401 "Bad credentials" to every request (https://docs.github.com/en/rest/authentication/authenticating-to-the-rest-api#failed-login-limit).
    const client = createOctokit({ token: 'ghp_notATokenGitHubKnows00000000001', apiUrl: h.emu.url, pacing: NO_PACING });
    h.emu.resetLog();
    const { repos, problems } = await discoverRepos(client, [
      { org: 'acme' },
      { user: 'octocat' },
      { topic: 'terraform', owner: 'acme' },
      { search: 'topic:service' },
    ]);
    expect(repos).toEqual([]);
    expect(problems).toEqual([
      'github.discover org acme: Bad credentials - https://docs.github.com/rest (the token is not valid)',
      'github.discover user octocat: Bad credentials - https://docs.github.com/rest (the token is not valid)',
      'github.discover topic terraform of acme: Bad credentials - https://docs.github.com/rest (the token is not valid)',
      'github.discover search "topic:service": Bad credentials - https://docs.github.com/rest (the token is not valid)',
    ]);
    // The owner's type could not be read (401, not 404): the topic is still searched, with user:.
    expect(h.emu.find({ route: '/search/repositories' }).map((r) => new URLSearchParams(r.query).get('q'))).toEqual([
      'topic:terraform user:acme',
      'topic:service',
    ]);
  });

  it('says when GitHub rejected a search (422) or refused it for a rate limit (403)', async () => {
    // Search answers 422 "Validation failed, or the endpoint has been spammed" (https://docs.github.com/en/rest/search/search#search-repositories).
    h.emu.fault({ kind: '5xx', status: 422, match: { method: 'GET', path: '/search/repositories' }, times: 1 });
    const rejected = await discoverRepos(h.octokit, [{ search: 'topic:service' }]);
    expect(rejected).toEqual({ repos: [], problems: ['github.discover search "topic:service": Server Error (GitHub rejected the query)'] });
    // A secondary rate limit is a 403 (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits); with no retries left it is the source's problem.
    h.emu.fault({ kind: 'secondary-rate-limit', match: { method: 'GET', path: '/orgs/{org}/repos' }, times: 1 });
    const limited = await discoverRepos(h.client({ maxRetries: 0 }), [{ org: 'acme' }, { user: 'octocat' }]);
    expect(limited.repos).toEqual(['octocat/dotfiles', 'octocat/hello-world']);
    expect(limited.problems).toEqual([
      expect.stringMatching(/^github\.discover org acme: You have exceeded a secondary rate limit.* \(forbidden or rate limited\)$/),
    ]);
    // Any other failure (a server error once retries are spent) is GitHub's message alone.
    h.emu.fault({ kind: '5xx', status: 502, match: { method: 'GET', path: '/search/repositories' }, times: 1 });
    const failed = await discoverRepos(h.client({ serverErrorRetries: 0 }), [{ search: 'topic:service' }]);
    expect(failed).toEqual({ repos: [], problems: ['github.discover search "topic:service": Server Error'] });
    h.emu.clearFaults();
  });
});

describe('discovery through the fleet file', () => {
  it('adds discovered repositories as lanes; include and exclude account for the rest', async () => {
    const raw = {
      name: 'tf',
      directive: 'Pin the provider.',
      run: 'true',
      forge: 'github',
      targets: [{ repo: 'acme/infra', lane: 'infra-explicit', owns: ['main.tf'] }],
      github: { discover: [{ org: 'acme' }, { user: 'octocat' }], include: ['acme/*'], exclude: ['acme/legacy-*'] },
    };
    const v = validateFleetFile(raw, 'fleet.yml');
    if (!v.ok) throw new Error(JSON.stringify(v.problems));
    const { repos, problems } = await discoverRepos(h.octokit, v.fleet.file.github.discover);
    expect(problems).toEqual([]);
    const fleet = addDiscoveredLanes(v.fleet, repos);
    expect(fleet.lanes.map((l) => [l.id, l.repo])).toEqual([
      ['infra-explicit', 'acme/infra'],
      ['api', 'acme/api'],
      ['forked-module', 'acme/forked-module'],
      ['web', 'acme/web'],
    ]);
    expect(fleet.excluded.map((e) => [e.repo, e.reason])).toEqual([
      ['acme/legacy-billing', 'excluded-by-pattern'],
      ['octocat/dotfiles', 'excluded-by-pattern'],
      ['octocat/hello-world', 'excluded-by-pattern'],
    ]);
  });
});
