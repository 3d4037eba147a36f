/**
 * Fleet's GitHub App credential against the emulator (no mocks): it finds the
 * App's installation and mints an installation token with @octokit/auth-app,
 * renews it when it has less than 10 minutes left by GitHub's clock (read
 * from the `date` header, so a runner whose clock is hours off is handled),
 * renews once and retries after a 401 Bad credentials, gives git the current
 * token per call, and revokes what it minted.
 *
 * GitHub's documentation followed (and reproduced by the emulator):
 * - an installation token expires after one hour:
 *   https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-an-installation-access-token-for-a-github-app
 * - the JWT's iat/exp are checked against GitHub's clock (iat backdated 60 s, exp at most 10 min ahead):
 *   https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
 * - GET /users/{username}/installation: https://docs.github.com/en/rest/apps/apps#get-a-user-installation-for-the-authenticated-app
 * - POST /app/installations/{id}/access_tokens: https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app
 * - DELETE /installation/token: https://docs.github.com/en/rest/apps/installations#revoke-an-installation-access-token
 * - an expired token is 401 Bad credentials (REST) and "Authentication failed" (git).
 */
import { generateKeyPairSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AppInstallationToken, maskPrivateKey, privateKeyProblem, RENEW_MARGIN_MS, staticToken } from '../../src/github/app-token.js';
import { GitHubForge } from '../../src/github/forge.js';
import { createOctokit } from '../../src/github/octokit.js';
import { Git } from '../../src/workspace/git/git.js';
import { clearSecrets, redact } from '../../src/util/secrets.js';
import { signAppJwt, startEmulator, type AddedApp, type Emulator } from '../support/github-emulator/index.js';
import { NO_PACING } from './helpers.js';

const { run: git } = new Git();

let emu: Emulator;
let app: AddedApp;
const MINT = { route: '/app/installations/{installation_id}/access_tokens', method: 'POST' } as const;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  await emu.createRepo({ owner: 'acme', name: 'api', ownerType: 'Organization', visibility: 'private' });
  app = emu.addApp({ id: 4242, slug: 'fleet-app', installations: [{ account: 'acme', permissions: { contents: 'write', 'pull-requests': 'write' } }] });
});
afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
});
beforeEach(() => emu.resetLog());
afterEach(() => clearSecrets());

const creds = () => ({ appId: String(app.id), privateKey: app.privateKeyPem, owner: 'acme' });
const start = () => AppInstallationToken.start(creds(), { apiUrl: emu.url });
const octokitWith = (t: AppInstallationToken) =>
  createOctokit({ token: t.current(), credential: t, apiUrl: emu.url, pacing: NO_PACING, serverErrorRetries: 0 });
const readRepo = (o: ReturnType<typeof createOctokit>) => o.request('GET /repos/{owner}/{repo}', { owner: 'acme', repo: 'api' });

describe('an App installation token Fleet mints itself', () => {
  it('finds the installation on the owner and mints a token that acts as the App', async () => {
    const t = await start();
    expect(t.current()).toMatch(/^ghs_/);
    expect(t.minted).toHaveLength(1);
    expect(emu.find({ route: '/users/{username}/installation', method: 'GET' }).map((r) => r.status)).toEqual([200]);
    const res = await readRepo(octokitWith(t));
    expect(res.status).toBe(200);
    expect(emu.find({ route: '/repos/{owner}/{repo}' }).map((r) => r.login)).toEqual(['fleet-app[bot]']);
  });

  it("renews when less than 10 minutes are left by GitHub's clock, read from the date header", async () => {
    const t = await start();
    const octokit = octokitWith(t);
    const first = t.current();
    // GitHub's clock moves 52 minutes; this machine's does not. The next answer's date header says so…
    emu.clock.advance(52 * 60_000);
    await readRepo(octokit);
    expect(t.minted).toHaveLength(1);
    expect(t.remainingMs()).toBeLessThan(RENEW_MARGIN_MS);
    // … and the request after it goes out with a new token, minted before it.
    await readRepo(octokit);
    expect(t.minted).toHaveLength(2);
    expect(emu.find({ route: '/repos/{owner}/{repo}' }).map((r) => r.token)).toEqual([first, t.current()]);
    expect(t.current()).not.toBe(first);
  });

  it("handles a runner clock hours behind GitHub's: the JWT is corrected from the date header, the token renewed in time", async () => {
    emu.clock.advance(3 * 60 * 60_000);
    const t = await start();
    // auth-app's JWT was refused once for its time, then signed for GitHub's clock.
    const lookups = emu.find({ route: '/users/{username}/installation' }).map((r) => r.status);
    expect(lookups).toEqual([401, 200]);
    expect(emu.find(MINT).map((r) => r.status)).toEqual([201]);
    expect(Math.abs(t.githubNow() - emu.clock.now())).toBeLessThan(2_000);
    expect(t.remainingMs()).toBeGreaterThan(55 * 60_000);
    const octokit = octokitWith(t);
    emu.clock.advance(51 * 60_000);
    await readRepo(octokit);
    await readRepo(octokit);
    expect(t.minted).toHaveLength(2);
    expect(emu.find(MINT).map((r) => r.status)).toEqual([201, 201]);
  });

  it('after a 401 Bad credentials renews once and sends the request again', async () => {
    const t = await start();
    const octokit = octokitWith(t);
    const first = t.current();
    // Past the hour with no answer in between: Fleet still thinks the token fresh, GitHub refuses it.
    emu.clock.advance(61 * 60_000);
    const res = await readRepo(octokit);
    expect(res.status).toBe(200);
    expect(emu.find({ route: '/repos/{owner}/{repo}' }).map((r) => [r.status, r.token])).toEqual([
      [401, first],
      [200, t.current()],
    ]);
    // The mint's own JWT was signed for a clock an hour behind: refused for its exp, then signed again from the 401's date.
    expect(emu.find(MINT).map((r) => r.status)).toEqual([201, 201]);
  });

  it("renews by GitHub's clock even when no answer came in between: the JWT refusal corrects it", async () => {
    const t = await start();
    emu.clock.advance(2 * 60 * 60_000);
    const renewed = await t.renew(t.current());
    expect(renewed).toMatch(/^ghs_/);
    expect(emu.find(MINT).map((r) => r.status)).toEqual([201, 401, 201]);
  });

  it('a renewal ahead of time that GitHub fails (502) keeps the current token meanwhile and renews at the next request', async () => {
    const t = await start();
    const octokit = octokitWith(t);
    emu.clock.advance(52 * 60_000);
    await readRepo(octokit);
    emu.fault({ match: { method: 'POST', path: '/app/installations/{installation_id}/access_tokens' }, kind: '5xx', status: 502 });
    const first = t.current();
    await readRepo(octokit);
    expect(t.minted).toHaveLength(1);
    expect(emu.find({ route: '/repos/{owner}/{repo}' }).at(-1)).toMatchObject({ status: 200, token: first });
    await readRepo(octokit);
    expect(t.minted).toHaveLength(2);
    expect(emu.find(MINT).map((r) => r.status)).toEqual([201, 502, 201]);
  });

  it('shares one renewal between concurrent requests', async () => {
    const t = await start();
    const octokit = octokitWith(t);
    emu.clock.advance(61 * 60_000);
    await Promise.all([readRepo(octokit), readRepo(octokit), readRepo(octokit)]);
    expect(t.minted).toHaveLength(2);
  });

  it('gives git the current token per call: a clone after the hour works once the credential is renewed', async () => {
    const t = await start();
    const forge = new GitHubForge({ octokit: octokitWith(t), token: t.current(), credential: t, name: 'demo', serverUrl: emu.url });
    const lsRemote = () => git(['ls-remote', `${emu.url}/acme/api.git`], { cwd: tmpdir(), env: forge.gitEnv(), allowFail: true });
    expect((await lsRemote()).code).toBe(0);
    emu.clock.advance(61 * 60_000);
    const refused = await lsRemote();
    expect(refused.code).not.toBe(0);
    expect(await forge.refreshCredential(true)).toBe(true);
    expect((await lsRemote()).code).toBe(0);
    const gitCalls = emu.find({ kind: 'git' });
    expect(gitCalls.filter((r) => r.status === 401).length).toBeGreaterThan(0);
    expect(gitCalls.at(-1)).toMatchObject({ status: 200, token: t.current(), login: 'fleet-app[bot]' });
  });

  it('revokes every token it minted that is still alive (DELETE /installation/token)', async () => {
    const t = await start();
    await t.renew(t.current());
    const [a, b] = t.minted.map((m) => m.token);
    expect(await t.revoke()).toEqual({ revoked: 2, failed: 0 });
    expect(emu.find({ route: '/installation/token', method: 'DELETE' }).map((r) => [r.status, r.token])).toEqual([
      [204, a],
      [204, b],
    ]);
    const after = createOctokit({ token: b!, apiUrl: emu.url, pacing: NO_PACING });
    await expect(readRepo(after)).rejects.toMatchObject({ status: 401 });
  });

  it('narrows a token to read-only permissions when asked (the plan and report jobs): it cannot write', async () => {
    const t = await AppInstallationToken.start({ ...creds(), readOnly: true }, { apiUrl: emu.url });
    const octokit = octokitWith(t);
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/git/ref/{ref}', { owner: 'acme', repo: 'api', ref: 'heads/main' });
    await expect(
      octokit.request('POST /repos/{owner}/{repo}/git/refs', { owner: 'acme', repo: 'api', ref: 'refs/heads/x', sha: data.object.sha }),
    ).rejects.toMatchObject({ status: 403 });
    expect(emu.find(MINT)[0]!.body).toEqual({ permissions: { contents: 'read', pull_requests: 'read', metadata: 'read' } });
  });

  it('leaves workflows out of a read-only token (GitHub offers it at write only) and tells what the installation grants', async () => {
    const wf = emu.addApp({ id: 4646, slug: 'wf-app', installations: [{ account: 'acme', permissions: { contents: 'write', workflows: 'write' } }] });
    const wfCreds = () => ({ appId: String(wf.id), privateKey: wf.privateKeyPem, owner: 'acme' });
    // Asked for at read, as a plain "each at read" would, GitHub refuses the mint (its OpenAPI description:
    // permissions.workflows "must be one of: write"): the plan and report jobs would stop.
    const asRead = await fetch(`${emu.url}/app/installations/${wf.installationIds[0]}/access_tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${signAppJwt(wf.id, wf.privateKeyPem, { nowSec: emu.clock.nowSec() })}`, 'content-type': 'application/json' },
      body: JSON.stringify({ permissions: { contents: 'read', workflows: 'read' } }),
    });
    expect(asRead.status).toBe(422);
    expect(emu.violations.map((v) => v.errors)).toEqual([
      [expect.objectContaining({ field: 'permissions.workflows', message: 'permissions.workflows must be one of: write' })],
    ]);
    emu.resetViolations();
    emu.resetLog();
    const t = await AppInstallationToken.start({ ...wfCreds(), readOnly: true }, { apiUrl: emu.url });
    expect(emu.find(MINT)[0]!.body).toEqual({ permissions: { contents: 'read', metadata: 'read' } });
    expect(t.installationPermissions()).toMatchObject({ contents: 'write', workflows: 'write' });
  });

  it('names the owner when the App is not installed there, and the id when GitHub knows no such App', async () => {
    await expect(AppInstallationToken.start({ ...creds(), owner: 'nobody' }, { apiUrl: emu.url })).rejects.toThrow(
      /GitHub App 4242.*nobody.*not installed on nobody/,
    );
    await expect(AppInstallationToken.start({ ...creds(), appId: '999' }, { apiUrl: emu.url })).rejects.toThrow('GitHub knows no App with id 999');
  });
});

describe('a token Fleet was given (a PAT, a token minted by an earlier step)', () => {
  it('is sent as it is and never renewed: a 401 stays a 401', async () => {
    const given = emu.mintInstallationToken({ scopes: { contents: 'read' }, login: 'someone[bot]', expiresInMs: 60_000 });
    const octokit = createOctokit({ token: given, credential: staticToken(given), apiUrl: emu.url, pacing: NO_PACING });
    emu.clock.advance(2 * 60_000);
    await expect(readRepo(octokit)).rejects.toMatchObject({ status: 401 });
    expect(emu.find({ route: '/repos/{owner}/{repo}' })).toHaveLength(1);
    expect(emu.find(MINT)).toHaveLength(0);
  });
});

describe('the private key', () => {
  it('is checked without being quoted', () => {
    expect(privateKeyProblem(app.privateKeyPem)).toBeNull();
    expect(privateKeyProblem(app.privateKeyPem.replace(/\n/g, '\\n'))).toBeNull();
    const broken = app.privateKeyPem.slice(0, 200);
    const problem = privateKeyProblem(broken)!;
    expect(problem).toContain('not a PEM private key');
    expect(problem).not.toContain(broken.split('\n')[1]!);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(privateKeyProblem(ec)).toContain('RSA');
  });

  it('is registered with the redactor line by line (a log line holds one line of it)', () => {
    const masks: string[] = [];
    const line = app.privateKeyPem.split('\n')[3]!;
    maskPrivateKey(app.privateKeyPem, (s) => masks.push(s));
    expect(redact(`key line: ${line}`)).toBe('key line: ***');
    expect(redact(app.privateKeyPem)).not.toContain(line);
  });
});
