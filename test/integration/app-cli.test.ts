/**
 * `fleet run` and `fleet plan` with GitHub App credentials (FLEET_APP_ID, FLEET_APP_PRIVATE_KEY, FLEET_APP_OWNER)
 * against the GitHub emulator: Fleet mints the installation token itself
 * (POST /app/installations/{id}/access_tokens,
 * https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app), `plan` asks for
 * read-only permissions, the PR is opened as the App's bot, and every token is revoked at the end
 * (DELETE /installation/token, https://docs.github.com/en/rest/apps/installations#revoke-an-installation-access-token).
 * The key and the tokens reach no directive, output or pushed file.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clearSecrets } from '../../src/util/secrets.js';
import { startEmulator, type AddedApp, type Emulator } from '../support/github-emulator/index.js';
import { fleet, lane, readManifest, removeDir, runArgs, tempDir, tsxLoader, writeFleetFile } from './helpers.js';
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { resolve } from 'node:path';
import { join } from 'node:path';
import { readRemoteFile } from '../support/repos.js';

let emu: Emulator;
let app: AddedApp;
let dir: string;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  await emu.createRepo({ owner: 'acme', name: 'api', ownerType: 'Organization', files: { 'README.md': '# api\n' } });
  app = emu.addApp({
    id: 4343,
    slug: 'fleet-cli',
    installations: [
      { account: 'acme', permissions: { contents: 'write', 'pull-requests': 'write', issues: 'write', checks: 'read', statuses: 'read', metadata: 'read' } },
    ],
  });
  dir = tempDir();
});
afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  removeDir(dir);
});
afterEach(() => clearSecrets());

const gh = () => ({
  GITHUB_API_URL: emu.url,
  GITHUB_GRAPHQL_URL: emu.graphqlUrl,
  GITHUB_SERVER_URL: `${emu.url}/git`,
  FLEET_GITHUB_PACING_MS: '0',
  FLEET_GITHUB_POLL_MS: '25',
  FLEET_GITHUB_TOKEN: undefined,
  GITHUB_TOKEN: undefined,
  GH_TOKEN: undefined,
});
// The directive writes its whole environment into the change it pushes: a leak would be in the PR.
const PRINT_ENV = 'env | sort > ENV.txt';

describe('fleet run with GitHub App credentials', () => {
  it('mints the installation token, opens the PR as the App, revokes the token, and leaks neither key nor token', async () => {
    const file = writeFleetFile(
      dir,
      { name: 'app-cli', forge: 'github', directive: 'print', run: PRINT_ENV, max_retries: 0, targets: [{ repo: 'acme/api' }] },
      'run.yml',
    );
    const ws = join(dir, 'ws');
    emu.resetLog();
    // FLEET_APP_OWNER unset: the targets' one owner is the App's account. GITHUB_TOKEN (another account's) is ignored.
    const r = await fleet(runArgs(file, ws), {
      cwd: dir,
      env: {
        ...gh(),
        GITHUB_TOKEN: 'ghp_someone_elses_token_000000000000000',
        FLEET_APP_ID: String(app.id),
        FLEET_APP_PRIVATE_KEY: app.privateKeyPem,
        COPY_OF_KEY: app.privateKeyPem,
      },
    });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(lane(readManifest(ws), 'api').status).toBe('completed');
    const mints = emu.requests.filter((q) => q.route === '/app/installations/{installation_id}/access_tokens' && q.status === 201);
    expect(mints).toHaveLength(1);
    const pr = emu.pullRequests('acme/api')[0]!;
    expect(pr.user).toBe('fleet-cli[bot]');
    expect(emu.requests.filter((q) => q.token === 'ghp_someone_elses_token_000000000000000')).toEqual([]);
    // Revoked at the end: DELETE /installation/token answered 204, with the token the fleet used.
    const revokes = emu.requests.filter((q) => q.method === 'DELETE' && q.path === '/installation/token');
    expect(revokes.map((q) => q.status)).toEqual([204]);
    const token = revokes[0]!.token!;
    expect(token).toMatch(/^ghs_/);
    const env = (await readRemoteFile(emu.repo('acme/api')!.gitDir, pr.headRef, 'ENV.txt')) ?? '';
    expect(env).toMatch(/^FLEET_LANE=api$/m); // the directive did print its environment
    const keyBody = app.privateKeyPem.split('\n')[1]!;
    for (const [where, text] of Object.entries({ env, stdout: r.stdout, stderr: r.stderr, body: pr.body ?? '' })) {
      expect(text.includes(token), `${where} holds the token`).toBe(false);
      expect(text.includes(keyBody), `${where} holds the key`).toBe(false);
    }
    expect(env).not.toMatch(/^(FLEET_APP_PRIVATE_KEY|COPY_OF_KEY)=/m);
  });

  it('fleet plan asks for a read-only token', async () => {
    const file = writeFleetFile(dir, { name: 'app-plan', forge: 'github', directive: 'd', run: 'true', targets: [{ repo: 'acme/api' }] }, 'plan.yml');
    emu.resetLog();
    const r = await fleet(['plan', file], {
      cwd: dir,
      env: { ...gh(), FLEET_APP_ID: String(app.id), FLEET_APP_PRIVATE_KEY: app.privateKeyPem, FLEET_APP_OWNER: 'acme' },
    });
    expect(r.code, r.stderr).toBe(0);
    const mint = emu.requests.find((q) => q.route === '/app/installations/{installation_id}/access_tokens')!;
    const asked = (mint.body as { permissions?: Record<string, string> }).permissions!;
    expect(asked).toMatchObject({ contents: 'read', pull_requests: 'read' });
    expect(Object.values(asked).every((level) => level === 'read')).toBe(true);
  });

  it('bad credentials: every problem at once, each naming its variable, exit 2, no key text and nothing minted', async () => {
    const file = writeFleetFile(
      dir,
      { name: 'app-bad', forge: 'github', directive: 'd', run: 'true', targets: [{ repo: 'acme/api' }, { repo: 'other/web' }] },
      'bad.yml',
    );
    emu.resetLog();
    const r = await fleet(['run', file], {
      cwd: dir,
      env: { ...gh(), FLEET_APP_ID: 'my-app', FLEET_APP_PRIVATE_KEY: 'not a key', FLEET_GITHUB_TOKEN: 'ghp_x' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("FLEET_APP_ID: must be the App's numeric id");
    expect(r.stderr).toContain('FLEET_APP_PRIVATE_KEY: the key is not a PEM private key');
    expect(r.stderr).toContain('FLEET_GITHUB_TOKEN and FLEET_APP_ID: give a token or GitHub App credentials, not both');
    expect(r.stderr).toContain('FLEET_APP_OWNER: the targets belong to acme, other');
    expect(r.stderr).not.toContain('not a key');
    expect(emu.requests.filter((q) => q.route?.startsWith('/app/'))).toEqual([]);

    const noKey = await fleet(['run', file], { cwd: dir, env: { ...gh(), FLEET_APP_ID: '4343', FLEET_APP_OWNER: 'acme' } });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain("FLEET_APP_PRIVATE_KEY: FLEET_APP_ID is set but the App's private key is empty");
  });

  it("an App not installed on the owner: exit 2 with GitHub's answer and what to do", async () => {
    const file = writeFleetFile(dir, { name: 'app-missing', forge: 'github', directive: 'd', run: 'true', targets: [{ repo: 'acme/api' }] }, 'missing.yml');
    const r = await fleet(['run', file], {
      cwd: dir,
      env: { ...gh(), FLEET_APP_ID: String(app.id), FLEET_APP_PRIVATE_KEY: app.privateKeyPem, FLEET_APP_OWNER: 'nobody' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/forge: .*not installed on nobody/);
  });

  it('the real CLI on a machine that cannot isolate directives: refused under isolation: auto before any token is minted', async () => {
    // A PATH with git and nothing else: no unshare, no sudo, so the sandbox probe finds no way in.
    const bin = join(dir, 'bin-no-unshare');
    mkdirSync(bin, { recursive: true });
    const git = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
    symlinkSync(git, join(bin, 'git'));
    const file = writeFleetFile(dir, { name: 'app-open', forge: 'github', directive: 'd', run: 'true', targets: [{ repo: 'acme/api' }] }, 'open.yml');
    emu.resetLog();
    const root = resolve(import.meta.dirname, '../..');
    const p = spawnSync(process.execPath, ['--import', tsxLoader(), join(root, 'src/cli/index.ts'), 'run', file, '--workspace', join(dir, 'ws-open')], {
      cwd: dir,
      env: {
        PATH: bin,
        HOME: dir,
        GITHUB_API_URL: emu.url,
        GITHUB_GRAPHQL_URL: emu.graphqlUrl,
        GITHUB_SERVER_URL: `${emu.url}/git`,
        FLEET_APP_ID: String(app.id),
        FLEET_APP_PRIVATE_KEY: app.privateKeyPem,
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(p.status, p.stderr).toBe(2);
    expect(p.stderr).toContain('isolation');
    expect(p.stderr).toMatch(/with GitHub App credentials directives must be isolated .* cannot be isolated here: /);
    expect(emu.requests.filter((q) => q.route?.startsWith('/app/'))).toEqual([]);
    expect(p.stderr.includes(app.privateKeyPem.split('\n')[1]!)).toBe(false);
  });
});
