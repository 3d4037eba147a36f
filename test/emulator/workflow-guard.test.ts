/**
 * GitHub refuses a push whose new commits create, change or delete a file under `.github/workflows/` unless the token
 * may: a GitHub App's token needs the `workflows` permission, a classic PAT the `workflow` scope. The refusal is the
 * ref's own status line (peter-evans/create-pull-request#1234: "! [remote rejected] HEAD -> actions/prettier
 * (refusing to allow a GitHub App to create or update workflow `.github/workflows/formatter.yml` without `workflows`
 * permission)"; flashcatcloud/categraf#34 for a PAT's "without `workflow` scope"); only commits the repository did not
 * have count (ocaml-opam/opam-publish#180), and any file in the folder does (intersystems/iknow#58: a `.sh` there).
 * A classic PAT's scopes come back in `X-OAuth-Scopes` (epicweb-dev/epicshop#642 reads them there).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { git, mustGit, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
let n = 0;

beforeAll(async () => {
  emu = await startEmulator();
  work = await tempDir();
  await emu.createRepo({ owner: 'acme', name: 'api', files: { 'README.md': 'api\n', '.github/workflows/ci.yml': 'on: push\n' } });
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

/** Clones acme/api, writes `files`, commits, and pushes to a new branch with `token`: git's porcelain line for it. */
async function pushWith(token: string, files: Record<string, string | null>, branch = `b${++n}`): Promise<{ code: number; line: string; branch: string }> {
  const dir = path.join(work, `clone-${++n}`);
  await mustGit(['clone', '--quiet', `${emu.url}/acme/api.git`, dir], { env: emu.gitEnv() });
  const { rm, writeFile, mkdir } = await import('node:fs/promises');
  for (const [f, content] of Object.entries(files)) {
    if (content === null) await rm(path.join(dir, f));
    else {
      await mkdir(path.dirname(path.join(dir, f)), { recursive: true });
      await writeFile(path.join(dir, f), content);
    }
  }
  await mustGit(['add', '-A'], { cwd: dir });
  await mustGit(['commit', '--quiet', '-m', 'change'], { cwd: dir });
  const r = await git(['push', '--porcelain', 'origin', `HEAD:refs/heads/${branch}`], { cwd: dir, env: emu.gitEnv(token) });
  return { code: r.code, line: r.stdout.split('\n').find((l) => l.includes(`refs/heads/${branch}`)) ?? '', branch };
}

const APP = { contents: 'write', metadata: 'read' } as const;

describe('a push touching workflow files', () => {
  it("is refused for an App token without the workflows permission, in the ref's status line, and nothing lands", async () => {
    const token = emu.mintInstallationToken({ scopes: APP, login: 'fleet-app[bot]' });
    const r = await pushWith(token, { '.github/workflows/ci.yml': 'on: [push, pull_request]\n' });
    expect(r.code).toBe(1);
    expect(r.line).toBe(
      `!\tHEAD:refs/heads/${r.branch}\t[remote rejected] (refusing to allow a GitHub App to create or update workflow \`.github/workflows/ci.yml\` without \`workflows\` permission)`,
    );
    expect(await emu.branchSha('acme/api', r.branch)).toBeNull();
  });

  it('counts any file under the folder, and a deletion', async () => {
    const token = emu.mintInstallationToken({ scopes: APP, login: 'fleet-app[bot]' });
    expect((await pushWith(token, { '.github/workflows/deps.sh': 'echo\n' })).line).toContain('workflow `.github/workflows/deps.sh` without');
    expect((await pushWith(token, { '.github/workflows/ci.yml': null })).line).toContain('workflow `.github/workflows/ci.yml` without');
  });

  it('lets the same token push other files, with a lease, and an App token with workflows: write push workflow files', async () => {
    const token = emu.mintInstallationToken({ scopes: APP, login: 'fleet-app[bot]' });
    const plain = await pushWith(token, { 'src/a.ts': 'a\n', '.github/dependabot.yml': 'version: 2\n' });
    expect([plain.code, plain.line.startsWith('*\t')]).toEqual([0, true]);
    expect(await emu.branchSha('acme/api', plain.branch)).not.toBeNull();
    const granted = emu.mintInstallationToken({ scopes: { ...APP, workflows: 'write' }, login: 'fleet-app[bot]' });
    const wf = await pushWith(granted, { '.github/workflows/ci.yml': 'on: [push]\n' });
    expect([wf.code, wf.line.startsWith('*\t')]).toEqual([0, true]);
  });

  it('refuses a classic PAT without the workflow scope in its own words, and says its scopes in X-OAuth-Scopes', async () => {
    emu.addToken('ghp_repo_only', { login: 'octocat', type: 'pat', oauthScopes: ['repo'] });
    emu.addToken('ghp_with_workflow', { login: 'octocat', type: 'pat', oauthScopes: ['repo', 'workflow'] });
    const refused = await pushWith('ghp_repo_only', { '.github/workflows/new.yml': 'on: push\n' });
    expect(refused.line).toContain(
      '[remote rejected] (refusing to allow a Personal Access Token to create or update workflow `.github/workflows/new.yml` without `workflow` scope)',
    );
    expect((await pushWith('ghp_with_workflow', { '.github/workflows/new.yml': 'on: push\n' })).code).toBe(0);
    const res = await fetch(`${emu.url}/repos/acme/api`, { headers: { authorization: 'token ghp_repo_only' } });
    expect(res.headers.get('x-oauth-scopes')).toBe('repo');
    const app = await fetch(`${emu.url}/repos/acme/api`, { headers: { authorization: `token ${emu.mintInstallationToken({ scopes: APP })}` } });
    expect(app.headers.get('x-oauth-scopes')).toBeNull();
  });

  it('checks only commits the repository did not have: a branch from one that changed a workflow file is accepted', async () => {
    const granted = emu.mintInstallationToken({ scopes: { ...APP, workflows: 'write' }, login: 'fleet-app[bot]' });
    const first = await pushWith(granted, { '.github/workflows/ci.yml': 'on: [workflow_dispatch]\n' });
    expect(first.code).toBe(0);
    const dir = path.join(work, 'from-first');
    await mustGit(['clone', '--quiet', '--branch', first.branch, `${emu.url}/acme/api.git`, dir], { env: emu.gitEnv() });
    await mustGit(['commit', '--quiet', '--allow-empty', '-m', 'on top'], { cwd: dir });
    const token = emu.mintInstallationToken({ scopes: APP, login: 'fleet-app[bot]' });
    const r = await git(['push', '--porcelain', 'origin', 'HEAD:refs/heads/on-top'], { cwd: dir, env: emu.gitEnv(token) });
    expect(r.code).toBe(0);
  });
});
