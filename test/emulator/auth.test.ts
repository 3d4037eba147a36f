/**
 * Tokens and permissions, on REST, GraphQL and git smart HTTP: unknown token
 * 401, writes without push permission 403, private repositories 404, git
 * asking for credentials (401 + WWW-Authenticate) and refusing pushes.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api, git, graphql, mustGit, pushFiles, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
const READER = 'ghs_reader0000000000000000000000000001';
const WRITER = 'ghs_writer0000000000000000000000000001';
const PAT = 'ghp_personal000000000000000000000000001';

beforeAll(async () => {
  emu = await startEmulator();
  work = await tempDir();
  emu.addToken(READER, { login: 'reader', default: 'none', permissions: { 'acme/api': 'pull', 'acme/private': 'pull' } });
  emu.addToken(WRITER, { login: 'writer', default: 'none', permissions: { 'acme/*': 'push' } });
  emu.addToken(PAT, { login: 'person', default: 'push', type: 'pat' });
  await emu.createRepo({ owner: 'acme', name: 'api' });
  await emu.createRepo({ owner: 'acme', name: 'private', visibility: 'private' });
  await emu.createRepo({ owner: 'acme', name: 'frozen', archived: true });
  await emu.createRepo({ owner: 'other', name: 'hidden', visibility: 'private' });
});

afterAll(async () => {
  await emu.close();
  await removeDir(work);
});

describe('REST', () => {
  it('accepts `token X`, `Bearer X` and Basic with the token as password', async () => {
    for (const authorization of [`token ${WRITER}`, `Bearer ${WRITER}`, `Basic ${Buffer.from(`x-access-token:${WRITER}`).toString('base64')}`]) {
      const r = await api(emu, 'GET', '/repos/acme/private', { token: null, headers: { authorization } });
      expect(r.status).toBe(200);
      expect(r.body.permissions.push).toBe(true);
    }
    expect(emu.find({ path: '/repos/acme/private' }).every((r) => r.login === 'writer')).toBe(true);
  });

  it('answers an unknown token 401 Bad credentials', async () => {
    const r = await api(emu, 'GET', '/repos/acme/api', { token: 'ghs_unknown' });
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ message: 'Bad credentials', documentation_url: expect.any(String) });
    expect((await graphql(emu, '{ viewer { login } }', undefined, 'ghs_unknown')).status).toBe(401);
  });

  it('answers a write without push permission 403 Resource not accessible by integration', async () => {
    const sha = await emu.branchSha('acme/api', 'main');
    const r = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { token: READER, body: { state: 'success', context: 'ci' } });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe('Resource not accessible by integration');
    expect(emu.statuses('acme/api')).toEqual([]);
    const ok = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { token: WRITER, body: { state: 'success', context: 'ci' } });
    expect(ok.status).toBe(201);
    expect(ok.body.creator.login).toBe('writer');
  });

  it('answers a repository the token cannot see 404, and anonymous writes 401', async () => {
    expect((await api(emu, 'GET', '/repos/other/hidden', { token: WRITER })).status).toBe(404);
    expect((await api(emu, 'GET', '/repos/other/hidden', { token: READER })).status).toBe(404);
    expect((await api(emu, 'GET', '/repos/acme/private', { token: READER })).status).toBe(200);
    const sha = await emu.branchSha('acme/api', 'main');
    const anon = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { token: null, body: { state: 'success' } });
    expect(anon.status).toBe(401);
    expect(anon.body.message).toBe('Requires authentication');
  });

  it('refuses writes to an archived repository (403 read-only)', async () => {
    const sha = await emu.branchSha('acme/frozen', 'main');
    const r = await api(emu, 'POST', `/repos/acme/frozen/statuses/${sha}`, { body: { state: 'success' } });
    expect(r.status).toBe(403);
    expect(r.body.message).toMatch(/archived/);
  });

  it('refuses check runs from a personal access token (GitHub Apps only)', async () => {
    const sha = await emu.branchSha('acme/api', 'main');
    const r = await api(emu, 'POST', '/repos/acme/api/check-runs', { token: PAT, body: { name: 'x', head_sha: sha } });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe('You must authenticate via a GitHub App.');
  });

  it('GraphQL requires a token and answers the viewer', async () => {
    const anon = await graphql(emu, '{ viewer { login } }', undefined, null);
    expect(anon.status).toBe(401);
    expect(anon.body.message).toBe('This endpoint requires you to be authenticated.');
    expect((await graphql(emu, '{ viewer { login } }', undefined, READER)).body).toEqual({ data: { viewer: { login: 'reader' } } });
  });
});

describe('git smart HTTP', () => {
  it('clones a public repository without credentials, and a private one only with them', async () => {
    expect(await mustGit(['ls-remote', emu.gitUrl('acme', 'api'), 'refs/heads/main'])).toMatch(/^[0-9a-f]{40}\trefs\/heads\/main$/);
    const noCreds = await git(['ls-remote', emu.gitUrl('acme', 'private')]);
    expect(noCreds.code).not.toBe(0);
    expect(noCreds.stderr).toMatch(/could not read Username|Authentication failed|terminal prompts disabled/);
    const ok = await git(['ls-remote', emu.gitUrl('acme', 'private')], { env: emu.gitEnv(READER) });
    expect(ok.code).toBe(0);
    const last = emu.find({ kind: 'git' }).at(-1)!;
    expect(last).toMatchObject({ login: 'reader', status: 200, operationId: 'git-upload-pack' });
    expect(emu.find({ kind: 'git', status: 401 }).length).toBeGreaterThan(0);
  });

  it('asks for credentials with 401 + WWW-Authenticate: Basic', async () => {
    const res = await fetch(`${emu.gitUrl('acme', 'private')}/info/refs?service=git-upload-pack`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic/);
    const push = await fetch(`${emu.gitUrl('acme', 'api')}/info/refs?service=git-receive-pack`);
    expect(push.status).toBe(401);
  });

  it('takes the token as Basic password (any user), in the URL, or as a bearer extra header', async () => {
    const viaUrl = await git(['ls-remote', emu.gitUrl('acme', 'private', { token: WRITER })]);
    expect(viaUrl.code).toBe(0);
    const anyUser = await git(['ls-remote', emu.gitUrl('acme', 'private').replace('http://', `http://someone:${WRITER}@`)]);
    expect(anyUser.code).toBe(0);
    const bearer = await git(['-c', `http.extraheader=Authorization: Bearer ${WRITER}`, 'ls-remote', emu.gitUrl('acme', 'private')]);
    expect(bearer.code).toBe(0);
    const wrong = await git(['ls-remote', emu.gitUrl('acme', 'private', { token: 'ghs_wrong' })]);
    expect(wrong.code).not.toBe(0);
  });

  it('refuses a push without push permission (403), to an archived repository, and to an unknown one', async () => {
    const dir = path.join(work, 'reader');
    await mustGit(['clone', '--quiet', emu.gitUrl('acme', 'api'), dir]);
    await mustGit(['commit', '--quiet', '--allow-empty', '-m', 'x'], { cwd: dir });
    const denied = await git(['push', 'origin', 'HEAD:refs/heads/denied'], { cwd: dir, env: emu.gitEnv(READER) });
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toMatch(/403/);
    expect(await emu.branchSha('acme/api', 'denied')).toBeNull();

    const frozen = path.join(work, 'frozen');
    await mustGit(['clone', '--quiet', emu.gitUrl('acme', 'frozen'), frozen]);
    await mustGit(['commit', '--quiet', '--allow-empty', '-m', 'x'], { cwd: frozen });
    const archived = await git(['push', 'origin', 'HEAD:refs/heads/x'], { cwd: frozen, env: emu.gitEnv() });
    expect(archived.code).not.toBe(0);

    const unknown = await git(['ls-remote', emu.gitUrl('acme', 'nope')], { env: emu.gitEnv() });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/not found/i);
  });

  it('a push with permission is real: the REST side sees the new branch', async () => {
    const sha = await pushFiles(emu, work, { owner: 'acme', repo: 'private', branch: 'fleet/w', files: { 'w.txt': 'w\n' }, token: WRITER });
    const r = await api(emu, 'GET', '/repos/acme/private/branches/fleet/w', { token: WRITER });
    expect(r.body.commit.sha).toBe(sha);
    expect(emu.find({ kind: 'git', operationId: 'git-receive-pack', method: 'POST' }).at(-1)).toMatchObject({ login: 'writer', status: 200 });
  });

  it('streams large packs both ways', async () => {
    await emu.createRepo({ owner: 'acme', name: 'big' });
    const big: Record<string, string> = {};
    // ~5 MB of incompressible-ish content in 20 files (several pack chunks each way).
    for (let i = 0; i < 20; i++)
      big[`blob-${i}.txt`] = Array.from({ length: 10_000 }, (_, j) => `${i}:${j}:${Math.random().toString(36)}${Math.random().toString(36)}`).join('\n');
    const sha = await pushFiles(emu, work, { owner: 'acme', repo: 'big', branch: 'main', files: big });
    expect(await emu.branchSha('acme/big', 'main')).toBe(sha);
    const clone = path.join(work, 'big-clone');
    await mustGit(['clone', '--quiet', emu.gitUrl('acme', 'big'), clone], { env: emu.gitEnv() });
    expect(await mustGit(['rev-parse', 'HEAD'], { cwd: clone })).toBe(sha);
    expect((await mustGit(['ls-files'], { cwd: clone })).split('\n')).toHaveLength(21);
  });
});
