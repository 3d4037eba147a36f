/**
 * The committed CLI bundle (dist/cli) keeps the GitHub side (Octokit, undici) in a chunk of its own, loaded only
 * by fleets on GitHub: a local fleet starts without parsing it (docs/bench.md, "Cost per lane").
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRepo } from '../support/repos.js';
import { removeDir, tempDir, writeFleetFile } from '../integration/helpers.js';

const dist = resolve('dist/cli');
let dir: string | undefined;
afterEach(() => removeDir(dir));

/** dist/cli's entry alone, without its chunks, in a folder of its own. */
function entryWithoutChunks(root: string): string {
  const cli = join(root, 'cli');
  mkdirSync(cli, { recursive: true });
  copyFileSync(join(dist, 'index.js'), join(cli, 'index.js'));
  copyFileSync(resolve('dist/package.json'), join(root, 'package.json'));
  return join(cli, 'index.js');
}

describe('the CLI bundle', () => {
  it('has the GitHub side in chunks beside the entry', () => {
    const chunks = readdirSync(dist).filter((f) => /^\d+\.index\.js$/.test(f));
    expect(chunks.length).toBeGreaterThan(0);
    expect(execFileSync('grep', ['-l', 'class GitHubForge', ...chunks.map((c) => join(dist, c))], { encoding: 'utf8' }).trim()).not.toBe('');
    expect(spawnSync('grep', ['-q', 'class GitHubForge', join(dist, 'index.js')]).status).toBe(1);
  });

  it("lists the licenses of every chunk's packages, not only the last chunk's (ncc writes one file per chunk)", () => {
    for (const bundle of ['cli', 'action']) {
      const licenses = execFileSync('cat', [resolve('dist', bundle, 'licenses.txt')], { encoding: 'utf8' });
      // @octokit/core is bundled in a chunk in the CLI and in the entry of the action; zod in the entry of both.
      expect(licenses, bundle).toMatch(/^@octokit\/core$/m);
      expect(licenses, bundle).toMatch(/^zod$/m);
      expect(
        readdirSync(resolve('dist', bundle)).filter((f) => f.endsWith('.licenses.txt')),
        bundle,
      ).toEqual([]);
    }
  });

  it('plans a local fleet without its chunks, and needs them for a fleet on GitHub', async () => {
    dir = tempDir();
    const entry = entryWithoutChunks(join(dir, 'dist'));
    await createRepo(dir, 'one', { 'README.md': '# one\n' }, { clone: false });
    const local = writeFleetFile(dir, { name: 'local', directive: 'x', run: 'true', targets: [{ repo: './one.git' }] }, 'local.yml');
    const env = { PATH: process.env.PATH ?? '', HOME: dir };
    const planned = spawnSync(process.execPath, [entry, 'plan', local], { cwd: dir, env, encoding: 'utf8' });
    expect(planned.status, planned.stderr).toBe(0);
    expect(planned.stdout).toContain('one');

    const github = writeFleetFile(dir, { name: 'gh', directive: 'x', run: 'true', forge: 'github', targets: [{ repo: 'octo/one' }] }, 'github.yml');
    const refused = spawnSync(process.execPath, [entry, 'plan', github], {
      cwd: dir,
      env: { ...env, GITHUB_TOKEN: 'ghp_test', GITHUB_API_URL: 'http://127.0.0.1:9' },
      encoding: 'utf8',
    });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/Cannot find module|ERR_MODULE_NOT_FOUND/);
  });
});
