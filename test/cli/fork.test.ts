/**
 * `fleet run --push-only`, `fleet run --fork` and `fleet prs` as a user types them (bin/fleet.js as a process) against the GitHub emulator, with
 * a personal token that can only read the targets: the lane forks, pushes to its fork and opens the PR from there;
 * `fleet prs` on the same fleet file (which says nothing of forks) finds the PR through the manifest's head_repo.
 * The emulator runs in this process, so the CLI is spawned asynchronously (a blocking spawn would stall it).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { githubEnv } from '../github-flows/helpers.js';
import { removeDir, tempDir } from '../integration/helpers.js';
import { BIN } from './bin.js';

const READER = 'ghp_ReaderOnlyToken111111111111111111111';
let emu: Emulator;
let dir: string;

beforeEach(async () => {
  emu = await startEmulator();
  emu.addToken(READER, { login: 'octo', type: 'pat', permissions: { 'acme/*': 'pull' } });
  await emu.createRepo({ owner: 'acme', name: 'core', files: { 'README.md': '# core\n' } });
  dir = tempDir('fleet-cli-fork-');
  writeFileSync(join(dir, 'fleet.yml'), 'name: note\nforge: github\ndirective: Add a note.\nrun: echo note > NOTE.md\ntargets:\n  - repo: acme/core\n');
});
afterEach(async () => {
  await emu.close();
  removeDir(dir);
});

function fleet(args: string[], token = READER): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? '', HOME: dir, GIT_CONFIG_NOSYSTEM: '1', ...githubEnv(emu, token) };
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: dir,
    env: Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('fleet run --push-only', () => {
  it('pushes the lane branch to the target and opens no PR', async () => {
    const run = await fleet(['run', 'fleet.yml', '--push-only', '--json'], emu.token!);
    expect(run.code, run.stderr).toBe(0);
    const lane = (JSON.parse(run.stdout) as { lanes: Record<string, unknown>[] }).lanes[0]!;
    expect(lane).toMatchObject({ status: 'completed', phase: 'pushed', pr_number: null });
    expect(await emu.branchSha('acme/core', 'fleet/note/core')).toBe(lane.commit);
    expect(emu.pullRequests('acme/core')).toEqual([]);
  }, 120_000);
});

describe('fleet run --fork', () => {
  it('pushes to a fork and opens the PR from it; fleet prs finds it from the manifest and closes it', async () => {
    // A dry run makes no fork.
    const dry = await fleet(['run', 'fleet.yml', '--fork', '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(emu.repo('octo/core')).toBeNull();

    const run = await fleet(['run', 'fleet.yml', '--fork', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const lane = (JSON.parse(run.stdout) as { lanes: Record<string, unknown>[] }).lanes[0]!;
    expect(lane).toMatchObject({ status: 'completed', head_repo: 'octo/core', evidence: { head_matches: true, files_match: true } });
    expect(await emu.branchSha('octo/core', 'fleet/note/core')).toBe(lane.commit);
    expect(emu.pullRequests('acme/core')).toMatchObject([{ headRepoKey: 'octo/core', state: 'open' }]);

    const list = await fleet(['prs', 'fleet.yml', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { rows: { lane: string; state: string }[] }).rows).toMatchObject([{ lane: 'core', state: 'open' }]);
    const close = await fleet(['prs', 'close', 'fleet.yml']);
    expect(close.code, close.stderr).toBe(0);
    expect(emu.pullRequests('acme/core')).toMatchObject([{ state: 'closed' }]);
    expect(await emu.branchSha('octo/core', 'fleet/note/core')).toBeNull();
  }, 120_000);
});
