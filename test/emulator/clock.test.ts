/**
 * The emulator's clock: real time until a test advances it. Token expiry, app
 * JWT checks, the secondary-limit windows and the `date` header follow it, so
 * "the token expired after an hour" is a test of milliseconds.
 *
 * GITHUB_TOKEN "expires when a job finishes or after a maximum of 24 hours"
 * (GitHub's "Automatic token authentication"); an expired token is refused
 * like an unknown one: REST and GraphQL 401 "Bad credentials", git 401 with
 * WWW-Authenticate.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmulatorClock, startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api, git, graphql, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  work = await tempDir();
  await emu.createRepo({ owner: 'acme', name: 'api', visibility: 'private' });
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

describe('EmulatorClock', () => {
  it('starts at real time, moves forward on advance, never backwards', () => {
    const c = new EmulatorClock();
    // Bracketed by real readings taken before and after: no bound on how long a busy machine takes between them.
    const between = (read: () => number): [number, number, number] => {
      const before = Date.now();
      const t = read();
      return [before, t, Date.now()];
    };
    const [b0, t0, a0] = between(() => c.now());
    expect(t0).toBeGreaterThanOrEqual(b0);
    expect(t0).toBeLessThanOrEqual(a0);
    c.advance(3_600_000);
    const [b1, t1, a1] = between(() => c.now());
    expect(t1).toBeGreaterThanOrEqual(b1 + 3_600_000);
    expect(t1).toBeLessThanOrEqual(a1 + 3_600_000);
    expect(c.iso()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(() => c.advance(-1)).toThrow(/non-negative/);
  });

  it("the emulator answers with the clock's time in the date header (what @octokit/auth-app corrects JWT skew from)", async () => {
    const before = Date.parse((await api(emu, 'GET', '/rate_limit')).headers.get('date')!);
    emu.clock.advance(2 * 3_600_000);
    const after = Date.parse((await api(emu, 'GET', '/rate_limit')).headers.get('date')!);
    expect(after - before).toBeGreaterThanOrEqual(2 * 3_600_000 - 1000);
  });
});

describe("a job's GITHUB_TOKEN (emu.mintInstallationToken) expires on the clock", () => {
  it('works until expiresInMs has passed, then REST and GraphQL answer 401 Bad credentials and git asks for credentials', async () => {
    const token = emu.mintInstallationToken({ repositories: ['acme/api'], scopes: { contents: 'read', metadata: 'read' }, expiresInMs: 30 * 60_000 });
    expect((await api(emu, 'GET', '/repos/acme/api', { token })).status).toBe(200);
    expect((await graphql(emu, '{ viewer { login } }', undefined, token)).body.data.viewer.login).toBe('github-actions[bot]');
    expect((await git(['ls-remote', emu.gitUrl('acme', 'api', { token })])).code).toBe(0);

    emu.clock.advance(30 * 60_000);
    const rest = await api(emu, 'GET', '/repos/acme/api', { token });
    expect([rest.status, rest.body]).toEqual([401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' }]);
    expect((await graphql(emu, '{ viewer { login } }', undefined, token)).body.message).toBe('Bad credentials');
    const ls = await git(['ls-remote', emu.gitUrl('acme', 'api', { token })]);
    expect(ls.code).not.toBe(0);
    expect(ls.stderr).toMatch(/Authentication failed/);
  });

  it('defaults to 24 hours, and removeToken ends it when the job ends', async () => {
    const token = emu.mintInstallationToken({ repositories: ['acme/api'], scopes: { contents: 'read' } });
    emu.clock.advance(23 * 3_600_000);
    expect((await api(emu, 'GET', '/repos/acme/api', { token })).status).toBe(200);
    emu.clock.advance(3_600_000);
    expect((await api(emu, 'GET', '/repos/acme/api', { token })).status).toBe(401);
    const job = emu.mintInstallationToken({ repositories: ['acme/api'], scopes: { contents: 'read' } });
    emu.removeToken(job);
    expect((await api(emu, 'GET', '/repos/acme/api', { token: job })).status).toBe(401);
  });
});
