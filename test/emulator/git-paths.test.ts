/**
 * git at GitHub's own paths: `${url}/owner/repo.git/…` and `${url}/owner/repo/…`
 * (actions/checkout builds `${GITHUB_SERVER_URL}/${owner}/${repo}`), beside
 * the emulator's `/git/owner/repo.git`. With GITHUB_SERVER_URL=emu.url, or
 * `http://github.localhost:PORT` (curl resolves *.localhost to loopback),
 * clone URLs look like GitHub's.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api, git, mustGit, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;

beforeAll(async () => {
  emu = await startEmulator();
  work = await tempDir();
  await emu.createRepo({ owner: 'acme', name: 'api' });
  await emu.createRepo({ owner: 'acme', name: 'private', visibility: 'private' });
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

describe("git at GitHub's paths", () => {
  it('clones and pushes at ${url}/owner/repo.git and at ${url}/owner/repo; REST sees the push', async () => {
    const dir = path.join(work, 'dotgit');
    await mustGit(['clone', '--quiet', `${emu.url}/acme/api.git`, dir], { env: emu.gitEnv() });
    await mustGit(['commit', '--quiet', '--allow-empty', '-m', 'via github path'], { cwd: dir });
    await mustGit(['push', '--quiet', 'origin', 'HEAD:refs/heads/github-path'], { cwd: dir, env: emu.gitEnv() });
    const sha = await mustGit(['rev-parse', 'HEAD'], { cwd: dir });
    expect((await api(emu, 'GET', '/repos/acme/api/branches/github-path')).body.commit.sha).toBe(sha);

    const bare = path.join(work, 'bare-path');
    await mustGit(['clone', '--quiet', `${emu.url}/acme/api`, bare], { env: emu.gitEnv() });
    expect(await mustGit(['rev-parse', 'origin/github-path'], { cwd: bare })).toBe(sha);
    expect(emu.find({ kind: 'git', path: '/acme/api/info/refs' }).length).toBeGreaterThan(0);
    expect(emu.find({ kind: 'git', path: '/acme/api.git/git-receive-pack', method: 'POST' })).toHaveLength(1);
  });

  it('asks for credentials the same way (401 + WWW-Authenticate) and keeps /git/… working', async () => {
    const res = await fetch(`${emu.url}/acme/private.git/info/refs?service=git-upload-pack`);
    expect([res.status, res.headers.get('www-authenticate')]).toEqual([401, 'Basic realm="GitHub"']);
    expect((await git(['ls-remote', `${emu.url}/acme/private`], { env: emu.gitEnv() })).code).toBe(0);
    expect((await git(['ls-remote', emu.gitUrl('acme', 'private')], { env: emu.gitEnv() })).code).toBe(0);
  });

  it('answers at http://github.localhost:PORT (git resolves *.localhost to 127.0.0.1)', async () => {
    const host = emu.url.replace('127.0.0.1', 'github.localhost');
    const r = await git(['ls-remote', `${host}/acme/api`, 'refs/heads/main']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${await emu.branchSha('acme/api', 'main')}\trefs/heads/main`);
  });

  it('does not take REST paths for git', async () => {
    expect((await api(emu, 'GET', '/orgs/acme/repos')).status).toBe(200);
    expect((await api(emu, 'GET', '/repos/acme/api')).status).toBe(200);
  });
});
