/**
 * Discovery against the GitHub emulator (real HTTP): organizations, users,
 * topics, searches, and the fleet file's include/exclude over what was found.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

afterAll(async () => {
  h.emu.assertNoViolations();
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
    await mapLimit(Array.from({ length: 105 }, (_, i) => i), 8, (i) => h.emu.createRepo({ owner: 'paged', name: `svc-${String(i).padStart(3, '0')}`, empty: true }));
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

  it('deduplicates across sources and sorts', async () => {
    const { repos } = await discoverRepos(h.octokit, [{ search: 'topic:terraform' }, { org: 'acme' }, { topic: 'service', owner: 'acme' }]);
    expect(repos).toEqual(['acme/api', 'acme/forked-module', 'acme/infra', 'acme/legacy-billing', 'acme/web', 'octocat/dotfiles', 'other/tool']);
  });

  it('reports an unknown owner as a problem and keeps the other sources', async () => {
    const { repos, problems } = await discoverRepos(h.octokit, [{ org: 'nope' }, { topic: 'x', owner: 'nobody' }, { user: 'ghost-user' }, { org: 'octocat' }, { org: 'acme' }]);
    expect(repos).toHaveLength(5);
    expect(problems).toEqual([
      'github.discover org nope: no organization "nope" (or the token cannot see it)',
      'github.discover topic x of nobody: no user or organization "nobody"',
      'github.discover user ghost-user: no user "ghost-user"',
      'github.discover org octocat: no organization "octocat" (or the token cannot see it); octocat is a user: write {user: octocat}',
    ]);
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

