/**
 * Repositories: real bare repositories on disk, metadata and permissions in
 * the REST shapes, listings with pagination, search qualifiers, branches,
 * refs and compare read from git.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api, git, mustGit, pushFiles, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
const PULL_ONLY = 'ghs_pullOnly000000000000000000000001';

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  work = await tempDir();
  emu.addToken(PULL_ONLY, { login: 'reader', default: 'pull' });
  await emu.createRepo({
    owner: 'acme',
    name: 'api',
    files: { 'README.md': '# api\n', 'src/index.ts': 'export {};\n', 'src/lib/util.ts': 'export const u = 1;\n' },
    topics: ['service', 'node'],
    description: 'The API',
  });
  await emu.createRepo({ owner: 'acme', name: 'web', topics: ['service'] });
  await emu.createRepo({ owner: 'acme', name: 'old', archived: true, topics: ['service'] });
  await emu.createRepo({ owner: 'acme', name: 'fork-of-x', fork: true, topics: ['service'] });
  await emu.createRepo({ owner: 'acme', name: 'secret', visibility: 'private' });
  await emu.createRepo({ owner: 'acme', name: 'blank', empty: true });
  await emu.createRepo({ owner: 'acme', name: 'off', disabled: true });
  await emu.createRepo({ owner: 'octocat', name: 'hello', ownerType: 'User' });
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

describe('repositories', () => {
  it('creates a real bare repository with an initial commit of the files on main (git fsck clean)', async () => {
    const r = emu.repo('acme/api')!;
    expect(await mustGit(['--git-dir', r.gitDir, 'ls-tree', '-r', '--name-only', 'main'])).toBe('README.md\nsrc/index.ts\nsrc/lib/util.ts');
    expect(await mustGit(['--git-dir', r.gitDir, 'show', 'main:src/lib/util.ts'])).toBe('export const u = 1;');
    expect((await git(['--git-dir', r.gitDir, 'fsck', '--strict', '--no-dangling'])).code).toBe(0);
    expect(await mustGit(['--git-dir', r.gitDir, 'symbolic-ref', 'HEAD'])).toBe('refs/heads/main');
  });

  it("GET /repos/{owner}/{repo} answers the full repository with this token's permissions", async () => {
    const r = await api(emu, 'GET', '/repos/acme/api');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      name: 'api',
      full_name: 'acme/api',
      owner: { login: 'acme', type: 'Organization' },
      private: false,
      visibility: 'public',
      default_branch: 'main',
      archived: false,
      disabled: false,
      fork: false,
      topics: ['service', 'node'],
      description: 'The API',
      permissions: { admin: true, maintain: true, push: true, triage: true, pull: true },
      clone_url: emu.gitUrl('acme', 'api'),
    });
    expect(r.body.node_id).toMatch(/^R_/);
    const reader = await api(emu, 'GET', '/repos/acme/api', { token: PULL_ONLY });
    expect(reader.body.permissions).toEqual({ admin: false, maintain: false, push: false, triage: false, pull: true });
    const anonymous = await api(emu, 'GET', '/repos/ACME/API', { token: null });
    expect(anonymous.status).toBe(200);
    expect(anonymous.body.permissions).toBeUndefined();
    expect(anonymous.body.full_name).toBe('acme/api');
  });

  it('reports archived, fork, disabled, empty and user-owned repositories as GitHub does', async () => {
    expect((await api(emu, 'GET', '/repos/acme/old')).body).toMatchObject({ archived: true });
    expect((await api(emu, 'GET', '/repos/acme/fork-of-x')).body).toMatchObject({ fork: true });
    expect((await api(emu, 'GET', '/repos/acme/off')).body).toMatchObject({ disabled: true });
    expect((await api(emu, 'GET', '/repos/acme/blank')).body).toMatchObject({ size: 0 });
    expect((await api(emu, 'GET', '/repos/acme/blank/branches/main')).status).toBe(404);
    expect((await api(emu, 'GET', '/repos/acme/blank/git/ref/heads/main')).status).toBe(409);
    expect((await api(emu, 'GET', '/repos/octocat/hello')).body.owner).toMatchObject({ login: 'octocat', type: 'User' });
  });

  it('hides a private repository from a token without access (404) and an anonymous caller', async () => {
    const none = 'ghs_noAccess0000000000000000000000001';
    emu.addToken(none, { login: 'stranger', default: 'none' });
    expect((await api(emu, 'GET', '/repos/acme/secret', { token: none })).status).toBe(404);
    expect((await api(emu, 'GET', '/repos/acme/secret', { token: null })).status).toBe(404);
    expect((await api(emu, 'GET', '/repos/acme/secret')).body).toMatchObject({ private: true, visibility: 'private' });
    // A public repository stays readable with `default: 'none'`.
    expect((await api(emu, 'GET', '/repos/acme/api', { token: none })).body.permissions).toMatchObject({ pull: true, push: false });
  });

  it('updateRepo changes what the API reports', async () => {
    await emu.createRepo({ owner: 'acme', name: 'soon-archived' });
    emu.updateRepo('acme/soon-archived', { archived: true, topics: ['x'] });
    expect((await api(emu, 'GET', '/repos/acme/soon-archived')).body).toMatchObject({ archived: true, topics: ['x'] });
  });
});

describe('listings', () => {
  it("lists an organization's repositories with per_page and Link headers", async () => {
    const page1 = await api(emu, 'GET', '/orgs/acme/repos?per_page=3');
    expect(page1.status).toBe(200);
    expect(page1.body.map((r: { name: string }) => r.name)).toEqual(['api', 'blank', 'fork-of-x']);
    const link = page1.headers.get('link')!;
    expect(link).toMatch(/<http:\/\/127\.0\.0\.1:\d+\/orgs\/acme\/repos\?per_page=3&page=2>; rel="next"/);
    expect(link).toMatch(/page=3>; rel="last"/);
    const next = /<([^>]+)>; rel="next"/.exec(link)![1]!;
    const page2 = await api(emu, 'GET', next.slice(emu.url.length));
    expect(page2.body.map((r: { name: string }) => r.name)).toEqual(['off', 'old', 'secret']);
    expect(page2.headers.get('link')).toMatch(/rel="prev"/);
    const all = await api(emu, 'GET', '/orgs/acme/repos?per_page=100');
    expect(all.headers.get('link')).toBeNull();
    expect(all.body).toHaveLength(8);
  });

  it('filters by type and hides private repositories a token cannot see', async () => {
    expect((await api(emu, 'GET', '/orgs/acme/repos?type=forks')).body.map((r: { name: string }) => r.name)).toEqual(['fork-of-x']);
    const reader = 'ghs_onlyPublic00000000000000000000001';
    emu.addToken(reader, { login: 'outsider', default: 'none' });
    const names = (await api(emu, 'GET', '/orgs/acme/repos?per_page=100', { token: reader })).body.map((r: { name: string }) => r.name);
    expect(names).not.toContain('secret');
    expect(names).toContain('api');
  });

  it("lists a user's repositories; /orgs/{user}/repos is 404", async () => {
    expect((await api(emu, 'GET', '/users/octocat/repos')).body.map((r: { full_name: string }) => r.full_name)).toEqual(['octocat/hello']);
    expect((await api(emu, 'GET', '/orgs/octocat/repos')).status).toBe(404);
    expect((await api(emu, 'GET', '/orgs/nobody/repos')).status).toBe(404);
  });

  it('searches with org:, user:, topic:, archived:, fork: qualifiers and a name term', async () => {
    const search = async (q: string): Promise<string[]> => {
      const r = await api(emu, 'GET', `/search/repositories?q=${encodeURIComponent(q)}&per_page=100`);
      expect(r.status).toBe(200);
      expect(r.body.total_count).toBe(r.body.items.length);
      expect(r.headers.get('x-ratelimit-resource')).toBe('search');
      return r.body.items.map((i: { full_name: string }) => i.full_name);
    };
    expect(await search('org:acme topic:service')).toEqual(['acme/api', 'acme/old', 'acme/web']);
    expect(await search('org:acme topic:service archived:false')).toEqual(['acme/api', 'acme/web']);
    expect(await search('org:acme topic:service fork:true')).toEqual(['acme/api', 'acme/fork-of-x', 'acme/old', 'acme/web']);
    expect(await search('org:acme fork:only')).toEqual(['acme/fork-of-x']);
    expect(await search('user:octocat')).toEqual(['octocat/hello']);
    expect(await search('we org:acme')).toEqual(['acme/web']);
    expect(await search('org:acme is:private')).toEqual(['acme/secret']);
  });
});

describe('branches, refs and compare', () => {
  it('reads a branch, a ref and its deletion from the bare repository', async () => {
    const sha = await pushFiles(emu, work, { owner: 'acme', repo: 'web', branch: 'fleet/x/web', files: { 'new.txt': 'n\n' } });
    const b = await api(emu, 'GET', '/repos/acme/web/branches/fleet%2Fx%2Fweb');
    expect(b.status).toBe(200);
    expect(b.body).toMatchObject({ name: 'fleet/x/web', commit: { sha, commit: { message: 'change new.txt' } }, protected: false });
    expect((await api(emu, 'GET', '/repos/acme/web/branches/fleet/x/web')).body.commit.sha).toBe(sha);
    const ref = await api(emu, 'GET', '/repos/acme/web/git/ref/heads/fleet/x/web');
    expect(ref.body).toMatchObject({ ref: 'refs/heads/fleet/x/web', object: { type: 'commit', sha } });
    expect((await api(emu, 'GET', '/repos/acme/web/git/ref/heads/nope')).status).toBe(404);
    expect((await api(emu, 'DELETE', '/repos/acme/web/git/refs/heads/fleet/x/web')).status).toBe(204);
    expect(await emu.branchSha('acme/web', 'fleet/x/web')).toBeNull();
    const again = await api(emu, 'DELETE', '/repos/acme/web/git/refs/heads/fleet/x/web');
    expect(again.status).toBe(422);
    expect(again.body.message).toBe('Reference does not exist');
  });

  it('compares two refs with git: status, counts, commits and files', async () => {
    const sha = await pushFiles(emu, work, {
      owner: 'acme',
      repo: 'api',
      branch: 'lane',
      files: { 'src/index.ts': 'export const x = 1;\n', 'docs/new.md': 'new\n' },
    });
    const r = await api(emu, 'GET', '/repos/acme/api/compare/main...lane');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'ahead', ahead_by: 1, behind_by: 0, total_commits: 1 });
    expect(r.body.commits.map((c: { sha: string }) => c.sha)).toEqual([sha]);
    expect(
      r.body.files.map((f: { filename: string; status: string; additions: number; deletions: number }) => [f.filename, f.status, f.additions, f.deletions]),
    ).toEqual([
      ['docs/new.md', 'added', 1, 0],
      ['src/index.ts', 'modified', 1, 1],
    ]);
    expect(r.body.files[1].patch).toBe('@@ -1 +1 @@\n-export {};\n+export const x = 1;');
    const mainSha = await emu.branchSha('acme/api', 'main');
    const bySha = await api(emu, 'GET', `/repos/acme/api/compare/${mainSha}...acme:lane`);
    expect(bySha.body.files).toHaveLength(2);
    expect((await api(emu, 'GET', '/repos/acme/api/compare/lane...main')).body).toMatchObject({ status: 'behind', ahead_by: 0, behind_by: 1 });
    expect((await api(emu, 'GET', '/repos/acme/api/compare/main...nope')).status).toBe(404);
  });

  it('reports renames and deletions with both paths', async () => {
    const dir = path.join(work, 'rename');
    const env = emu.gitEnv();
    await mustGit(['clone', '--quiet', emu.gitUrl('acme', 'api'), dir], { env });
    await mustGit(['checkout', '--quiet', '-b', 'rename'], { cwd: dir });
    await mustGit(['mv', 'src/lib/util.ts', 'src/lib/helpers.ts'], { cwd: dir });
    await mustGit(['rm', '--quiet', 'README.md'], { cwd: dir });
    await mustGit(['commit', '--quiet', '-m', 'rename'], { cwd: dir });
    await mustGit(['push', '--quiet', 'origin', 'rename'], { cwd: dir, env });
    const r = await api(emu, 'GET', '/repos/acme/api/compare/main...rename');
    expect(r.body.files.map((f: { filename: string; status: string; previous_filename?: string }) => [f.filename, f.status, f.previous_filename])).toEqual([
      ['README.md', 'removed', undefined],
      ['src/lib/helpers.ts', 'renamed', 'src/lib/util.ts'],
    ]);
  });

  it("lists the emulator's state helpers consistently with the API", async () => {
    const created = await emu.createRepo({ owner: 'acme', name: 'helpers', branches: { dev: { 'x.txt': 'x\n', 'README.md': null } } });
    expect(created).toMatchObject({ fullName: 'acme/helpers', defaultBranch: 'main', cloneUrl: emu.gitUrl('acme', 'helpers') });
    expect(await emu.branchSha('acme/helpers', 'main')).toBe(created.headSha);
    const dev = await api(emu, 'GET', '/repos/acme/helpers/compare/main...dev');
    expect(dev.body.files.map((f: { filename: string; status: string }) => `${f.status} ${f.filename}`)).toEqual(['removed README.md', 'added x.txt']);
    const sha = await emu.commit({ owner: 'acme', repo: 'helpers', branch: 'dev', files: { 'y.txt': 'y\n' }, message: 'server-side' });
    expect((await api(emu, 'GET', '/repos/acme/helpers/branches/dev')).body.commit).toMatchObject({ sha, commit: { message: 'server-side' } });
  });
});
