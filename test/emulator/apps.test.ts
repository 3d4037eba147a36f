/**
 * GitHub Apps: an app authenticates with a JWT it signs with its private key,
 * finds its installation and mints installation tokens, as
 * actions/create-github-app-token does (GET /repos/{owner}/{repo}/installation,
 * POST /app/installations/{id}/access_tokens, DELETE /installation/token).
 *
 * Sources: GitHub's REST docs for Apps and Installations; "Generating a JSON
 * Web Token (JWT) for a GitHub App" (RS256, iss = app id or client id, iat
 * backdated 60 s, exp at most 10 minutes ahead); "An installation access
 * token expires after 1 hour" (actions/create-github-app-token#128); the
 * error messages users quote (see apps.ts).
 */
import path from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { getOctokit } from '@actions/github';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JWT_MESSAGES, signAppJwt, startEmulator, type AddedApp, type Emulator } from '../support/github-emulator/index.js';
import { api, git, graphql, mustGit, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
let app: AddedApp;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  work = await tempDir();
  for (const name of ['api', 'web']) await emu.createRepo({ owner: 'acme', name, ownerType: 'Organization' });
  await emu.createRepo({ owner: 'acme', name: 'vault', visibility: 'private' });
  await emu.createRepo({ owner: 'other', name: 'lib', ownerType: 'Organization' });
  await emu.createRepo({ owner: 'other', name: 'tools', ownerType: 'Organization' });
  app = emu.addApp({
    id: 4242,
    slug: 'fleet-app',
    installations: [
      { account: 'acme', permissions: { metadata: 'read', contents: 'write', 'pull-requests': 'write', checks: 'write', statuses: 'read' } },
      { account: 'other', repositories: ['lib'], permissions: { contents: 'read' } },
    ],
  });
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

const jwt = (claims: Parameters<typeof signAppJwt>[2] = {}): string => signAppJwt(app.id, app.privateKeyPem, { nowSec: emu.clock.nowSec(), ...claims });

/** What actions/create-github-app-token does for `owner`/`repositories`: look the installation up, then mint. */
async function createAppToken(
  repositories: string[],
  permissions?: Record<string, string>,
): Promise<{ token: string; expires_at: string; installationId: number; body: any }> {
  const octokit = getOctokit(jwt(), { baseUrl: emu.url });
  const inst = await octokit.rest.apps.getRepoInstallation({ owner: 'acme', repo: repositories[0]! });
  const res = await octokit.rest.apps.createInstallationAccessToken({ installation_id: inst.data.id, repositories, ...(permissions ? { permissions } : {}) });
  return { token: res.data.token, expires_at: res.data.expires_at, installationId: inst.data.id, body: res.data };
}

describe('app registration and JWT authentication', () => {
  it('addApp generates a PKCS#1 key pair and names its installations', () => {
    expect(app.privateKeyPem).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    expect(app.installationIds).toHaveLength(2);
    expect(app.clientId).toMatch(/^Iv23li/);
  });

  it('GET /app answers the app for a valid JWT (Octokit sends it as a bearer)', async () => {
    const octokit = getOctokit(jwt(), { baseUrl: emu.url });
    const me = await octokit.rest.apps.getAuthenticated();
    expect(me.data).toMatchObject({ id: 4242, slug: 'fleet-app', client_id: app.clientId, installations_count: 2 });
    expect(me.data!.permissions).toMatchObject({ contents: 'write', pull_requests: 'write', metadata: 'read' });
    expect(emu.find({ route: '/app' }).at(-1)!.login).toBe('fleet-app[bot]');
  });

  it('takes the client id as issuer, and a key the app brings', async () => {
    const own = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const b = emu.addApp({ id: 77, slug: 'own-key', clientId: 'Iv1.own', privateKey: own, installations: [{ account: 'acme' }] });
    expect(b.privateKeyPem).toBe(own);
    const r = await api(emu, 'GET', '/app', {
      token: null,
      headers: { authorization: `Bearer ${signAppJwt('Iv1.own', own, { nowSec: emu.clock.nowSec() })}` },
    });
    expect(r.status).toBe(200);
    expect(r.body.slug).toBe('own-key');
  });

  it('refuses JWTs as GitHub does: bad signature 401, unknown app 404, iat ahead beyond 60 s, exp passed, exp more than 10 minutes ahead', async () => {
    const now = emu.clock.nowSec();
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const cases: Array<[string, number, string]> = [
      [signAppJwt(app.id, otherKey, { nowSec: now }), 401, JWT_MESSAGES.undecodable],
      [signAppJwt(999, app.privateKeyPem, { nowSec: now }), 404, JWT_MESSAGES.unknownApp],
      [jwt({ iat: now + 120, exp: now + 300 }), 401, JWT_MESSAGES.iat],
      [jwt({ iat: now - 700, exp: now - 100 }), 401, JWT_MESSAGES.expired],
      [jwt({ iat: now, exp: now + 660 }), 401, JWT_MESSAGES.tooFar],
      // GitHub's own example (iat 60 s back, exp 10 minutes ahead) spans 11 minutes: refused too (github/docs#36558).
      [jwt({ iat: now - 60, exp: now + 600 }), 401, JWT_MESSAGES.tooFar],
      ['eyJhbGciOiJub25lIn0.eyJpc3MiOjQyNDJ9.', 401, JWT_MESSAGES.undecodable],
    ];
    for (const [token, status, message] of cases) {
      const r = await api(emu, 'GET', '/app', { token: null, headers: { authorization: `Bearer ${token}` } });
      expect([r.status, r.body]).toEqual([status, { message, documentation_url: 'https://docs.github.com/rest', status: String(status) }]);
    }
    // 60 s of drift on iat is allowed.
    expect((await api(emu, 'GET', '/app', { token: null, headers: { authorization: `Bearer ${jwt({ iat: now + 50, exp: now + 500 })}` } })).status).toBe(200);
  });

  it('a JWT expires on the emulator clock', async () => {
    const token = jwt();
    expect((await api(emu, 'GET', '/app', { token: null, headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    emu.clock.advance(11 * 60_000);
    const r = await api(emu, 'GET', '/app', { token: null, headers: { authorization: `Bearer ${token}` } });
    expect([r.status, r.body.message]).toEqual([401, JWT_MESSAGES.expired]);
  });

  it('the app endpoints take only a JWT (a token there: 401), and a JWT works only there (403 elsewhere)', async () => {
    const r = await api(emu, 'GET', '/app');
    expect([r.status, r.body.message]).toEqual([401, JWT_MESSAGES.undecodable]);
    const repo = await api(emu, 'GET', '/repos/acme/api', { token: null, headers: { authorization: `Bearer ${jwt()}` } });
    expect([repo.status, repo.body.message]).toEqual([403, 'Resource not accessible by integration']);
  });
});

describe('installations', () => {
  it('finds the installation of a repository, an organization and a user account; 404 where the app is not installed', async () => {
    const octokit = getOctokit(jwt(), { baseUrl: emu.url });
    const byRepo = await octokit.rest.apps.getRepoInstallation({ owner: 'acme', repo: 'web' });
    expect(byRepo.data).toMatchObject({
      id: app.installationIds[0],
      app_id: 4242,
      app_slug: 'fleet-app',
      repository_selection: 'all',
      target_type: 'Organization',
    });
    expect(byRepo.data.account).toMatchObject({ login: 'acme' });
    expect((await octokit.rest.apps.getOrgInstallation({ org: 'other' })).data).toMatchObject({ id: app.installationIds[1], repository_selection: 'selected' });
    expect((await octokit.rest.apps.getUserInstallation({ username: 'acme' })).data.id).toBe(app.installationIds[0]);
    // `other` selected only `lib`.
    await expect(octokit.rest.apps.getRepoInstallation({ owner: 'other', repo: 'tools' })).rejects.toMatchObject({ status: 404 });
    expect((await octokit.rest.apps.getRepoInstallation({ owner: 'other', repo: 'lib' })).data.id).toBe(app.installationIds[1]);
  });
});

describe('installation tokens', () => {
  it('mints a ghs_ token that expires in an hour on the emulator clock, narrowed to the repositories and permissions asked for', async () => {
    const before = emu.clock.now();
    const t = await createAppToken(['api'], { contents: 'write', pull_requests: 'write' });
    expect(t.token).toMatch(/^ghs_[A-Za-z0-9]{36}$/);
    const expires = Date.parse(t.expires_at);
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3_600_000);
    expect(expires).toBeLessThanOrEqual(emu.clock.now() + 3_600_000);
    expect(t.body).toMatchObject({ permissions: { contents: 'write', pull_requests: 'write', metadata: 'read' }, repository_selection: 'selected' });
    expect(t.body.repositories.map((r: { full_name: string }) => r.full_name)).toEqual(['acme/api']);

    const octokit = getOctokit(t.token, { baseUrl: emu.url });
    await octokit.rest.git.createRef({ owner: 'acme', repo: 'api', ref: 'refs/heads/app-made', sha: (await emu.branchSha('acme/api', 'main'))! });
    expect(emu.find({ route: '/repos/{owner}/{repo}/git/refs' }).at(-1)!.login).toBe('fleet-app[bot]');
    // Narrowed: not the other repository of the installation, and not a permission it did not ask for.
    await expect(
      octokit.rest.git.createRef({ owner: 'acme', repo: 'web', ref: 'refs/heads/x', sha: (await emu.branchSha('acme/web', 'main'))! }),
    ).rejects.toMatchObject({ status: 403 });
    const check = await api(emu, 'POST', '/repos/acme/api/check-runs', {
      token: t.token,
      body: { name: 'c', head_sha: (await emu.branchSha('acme/api', 'main'))! },
    });
    expect([check.status, check.headers.get('x-accepted-github-permissions')]).toEqual([403, 'checks=write']);
  });

  it("without narrowing, the token has the installation's repositories and permissions", async () => {
    const octokit = getOctokit(jwt(), { baseUrl: emu.url });
    const res = await octokit.rest.apps.createInstallationAccessToken({ installation_id: app.installationIds[0]! });
    expect(res.data.repository_selection).toBe('all');
    expect(res.data.repositories).toBeUndefined();
    expect(res.data.permissions).toEqual({ metadata: 'read', contents: 'write', pull_requests: 'write', checks: 'write', statuses: 'read' });
    expect((await api(emu, 'GET', '/repos/acme/web/branches', { token: res.data.token })).status).toBe(200);
  });

  it('never widens: a repository outside the installation or a permission it lacks is 422', async () => {
    const octokit = getOctokit(jwt(), { baseUrl: emu.url });
    const id = app.installationIds[1]!;
    await expect(octokit.rest.apps.createInstallationAccessToken({ installation_id: id, repositories: ['tools'] })).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(/^There is at least one repository that does not exist or is not accessible to the parent installation\./),
    });
    await expect(octokit.rest.apps.createInstallationAccessToken({ installation_id: id, permissions: { contents: 'write' } })).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(/^The permissions requested are not granted to this installation\./),
    });
    await expect(octokit.rest.apps.createInstallationAccessToken({ installation_id: 1 })).rejects.toMatchObject({ status: 404 });
    const lib = (await emu.repo('other/lib'))!.id;
    const ok = await octokit.rest.apps.createInstallationAccessToken({ installation_id: id, repository_ids: [lib], permissions: { contents: 'read' } });
    expect(ok.data.repositories?.map((r) => r.full_name)).toEqual(['other/lib']);
  });

  it('an expired installation token is Bad credentials on REST and GraphQL, and git fails with "Authentication failed"', async () => {
    // A private repository: git sends credentials only once the server asks for them.
    const t = await createAppToken(['vault']);
    expect((await api(emu, 'GET', '/repos/acme/vault', { token: t.token })).status).toBe(200);
    const dir = path.join(work, 'before-expiry');
    await mustGit(['clone', '--quiet', emu.gitUrl('acme', 'vault', { token: t.token }), dir]);
    emu.clock.advance(60 * 60_000);
    const r = await api(emu, 'GET', '/repos/acme/api', { token: t.token });
    expect([r.status, r.body.message]).toEqual([401, 'Bad credentials']);
    expect((await graphql(emu, '{ viewer { login } }', undefined, t.token)).status).toBe(401);
    const fetch = await git(['fetch', emu.gitUrl('acme', 'vault', { token: t.token })], { cwd: dir });
    expect(fetch.code).not.toBe(0);
    expect(fetch.stderr).toMatch(/Authentication failed/);
    const info = await fetch_(`${emu.gitUrl('acme', 'vault')}/info/refs?service=git-upload-pack`, t.token);
    expect([info.status, info.headers.get('www-authenticate')]).toEqual([401, 'Basic realm="GitHub"']);
  });

  it("DELETE /installation/token revokes the caller's token (204), after which it is Bad credentials", async () => {
    const t = await createAppToken(['api']);
    const octokit = getOctokit(t.token, { baseUrl: emu.url });
    expect((await octokit.rest.apps.revokeInstallationAccessToken()).status).toBe(204);
    const r = await api(emu, 'GET', '/repos/acme/api', { token: t.token });
    expect([r.status, r.body.message]).toEqual([401, 'Bad credentials']);
  });

  it('tokens of one installation share the secondary content limit; another installation has its own', async () => {
    emu.setContentLimit({ perMinute: 3 });
    try {
      const a = await createAppToken(['api']);
      const b = await createAppToken(['web']);
      const branch = async (token: string, repo: string, ref: string): Promise<number> =>
        (
          await api(emu, 'POST', `/repos/acme/${repo}/git/refs`, {
            token,
            body: { ref: `refs/heads/${ref}`, sha: (await emu.branchSha(`acme/${repo}`, 'main'))! },
          })
        ).status;
      expect([
        await branch(a.token, 'api', 'l1'),
        await branch(a.token, 'api', 'l2'),
        await branch(b.token, 'web', 'l3'),
        await branch(b.token, 'web', 'l4'),
      ]).toEqual([201, 201, 201, 403]);
      expect(emu.requests.at(-1)!.fault).toBe('content-limit');
      // A second app installed on the same organization counts on its own.
      const second = emu.addApp({ id: 5151, slug: 'second-app', installations: [{ account: 'acme' }] });
      const octokit = getOctokit(signAppJwt(second.id, second.privateKeyPem, { nowSec: emu.clock.nowSec() }), { baseUrl: emu.url });
      const t = await octokit.rest.apps.createInstallationAccessToken({ installation_id: second.installationIds[0]! });
      expect(await branch(t.data.token, 'web', 'l5')).toBe(201);
    } finally {
      emu.setContentLimit({ perMinute: 80, perHour: 500 });
    }
  });
});

function fetch_(url: string, token: string): Promise<Response> {
  return fetch(url, { headers: { authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}` } });
}
