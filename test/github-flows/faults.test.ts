/**
 * Faults end cleanly: a remote that stalls or fails mid-transfer, and an
 * interrupt while lanes are inside git, inside a forge call, or inside a
 * directive that ignores SIGTERM. The CLI runs as a child process (the real
 * signal handling), against the emulator's real git over HTTP.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { LaneSpec } from '../../src/core/model.js';
import { GitHubForge } from '../../src/github/forge.js';
import { basicCredential, createOctokit } from '../../src/github/octokit.js';
import { git, lane, processWithEnv, readManifest, runArgs } from '../integration/helpers.js';
import { gitPushes, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
    await sleep(25);
  }
}

/** `fleet <argv>` as a child process, the way a user or a CI job runs it. */
function cli(argv: string[], cwd: string, env: Record<string, string | undefined>) {
  const root = resolve(import.meta.dirname, '../..');
  const loader = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = v;
  }
  const child = spawn(process.execPath, ['--import', loader, join(root, 'src/cli/index.ts'), ...argv], {
    cwd,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, exited, output: () => out };
}

describe('an interrupt while lanes are outside a directive', () => {
  it("SIGTERM during a stalled clone and a directive that ignores TERM: exit 130, a final manifest and report, no git of Fleet's left", async () => {
    // A token of this test's own: the check below looks at every process on the machine, and other test files
    // running beside this one hold the shared flow token in their own gits.
    flow = await startFlow({ token: `ghs_${randomBytes(18).toString('hex')}` });
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'stalled', files: { 'README.md': '# stalled\n' } });
    await emu.createRepo({ owner: 'acme', name: 'stubborn', files: { 'README.md': '# stubborn\n' } });
    // The clone of acme/stalled reads the refs, asks for the pack, and never gets it.
    const stall = emu.fault({ match: { kind: 'git', method: 'POST', path: '/git/acme/stalled.git/git-upload-pack' }, kind: 'stall', times: Infinity });
    const file = flow.fleetFile({
      name: 'term',
      directive: 'touch a file',
      run: 'echo x >> README.md',
      max_retries: 0,
      targets: [{ repo: 'acme/stalled' }, { repo: 'acme/stubborn', run: "trap '' TERM; sleep 600" }],
    });
    const ws = join(dir, 'ws');
    const marker = `FLEET_TEST_MARKER_${process.pid}_${Date.now()}`;
    const run = cli(runArgs(file, ws), dir, { ...flow.env, [marker]: '1' });
    try {
      const events = join(ws, 'events.jsonl');
      await until(
        'the clone stalls and the stubborn directive runs',
        () => stall.hits > 0 && existsSync(events) && /"lane":"stubborn","from":"cloning","to":"running"/.test(readFileSync(events, 'utf8')),
      );
      // The stalled clone is a git of Fleet's holding the credential header.
      expect(processWithEnv(basicCredential(flow.token)).length).toBeGreaterThan(0);
      run.child.kill('SIGTERM');
      expect(await run.exited, run.output()).toBe(130);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
    // A process SIGKILLed as Fleet exits may take a moment to leave /proc; none may stay.
    await until("no process of Fleet's is left", () => processWithEnv(marker).length === 0, 5_000).catch(() => undefined);
    expect(processWithEnv(marker), 'processes of Fleet left running').toEqual([]);
    expect(processWithEnv(basicCredential(flow.token)), 'processes holding the credential').toEqual([]);

    const m = readManifest(ws);
    expect(m.ended_at).not.toBeNull();
    expect(m.lanes.every((l) => l.status === 'failed' || l.status === 'completed' || l.status === 'skipped')).toBe(true);
    const stalled = lane(m, 'stalled');
    expect(stalled.status).toBe('failed');
    expect(stalled.error?.class).toBe('cancelled');
    expect(stalled.error?.message).toMatch(/interrupted while this lane was cloning; nothing was pushed/);
    const stubborn = lane(m, 'stubborn');
    expect(stubborn.status).toBe('failed');
    expect(stubborn.error?.class).toBe('cancelled');
    const report = readFileSync(join(ws, 'report.md'), 'utf8');
    expect(report).toMatch(/stalled/);
    expect(run.output()).toContain(`--resume ${join(ws, 'fleet-status.json')}`);
  });

  it('a second SIGTERM exits at once, still with a manifest and report as they stood and no process left', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'one', files: { 'README.md': '# one\n' } });
    await emu.createRepo({ owner: 'acme', name: 'two', files: { 'README.md': '# two\n' } });
    // Both lanes push, then wait on a PR request that never returns: the run cannot end by itself for 10 s.
    const stall = emu.fault({ match: { kind: 'rest', method: 'POST', path: '/repos/{owner}/{repo}/pulls' }, kind: 'stall', times: Infinity });
    const file = flow.fleetFile({
      name: 'twice',
      directive: 'append',
      run: 'echo x >> README.md',
      max_retries: 0,
      targets: [{ repo: 'acme/one' }, { repo: 'acme/two' }],
    });
    const ws = join(dir, 'ws');
    const marker = `FLEET_TEST_MARKER_${process.pid}_${Date.now()}`;
    const run = cli(runArgs(file, ws), dir, { ...flow.env, [marker]: '1' });
    try {
      await until('both PR requests hang', () => stall.hits >= 2);
      run.child.kill('SIGTERM');
      await until('the first interrupt is taken', () => /stopping the running lanes/.test(run.output()));
      run.child.kill('SIGTERM');
      expect(await run.exited, run.output()).toBe(130);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
    expect(run.output()).toContain(`fleet: stopped at once; the manifest and report as they stood are in ${ws}`);
    await until("no process of Fleet's is left", () => processWithEnv(marker).length === 0, 5_000).catch(() => undefined);
    expect(processWithEnv(marker)).toEqual([]);
    const m = readManifest(ws);
    expect(m.ended_at).not.toBeNull();
    for (const l of m.lanes) {
      expect(l.status).toBe('failed');
      expect(l.error?.class).toBe('cancelled');
      expect(l.error?.message).toMatch(/stopped at once \(a second interrupt/);
    }
    expect(existsSync(join(ws, 'report.md'))).toBe(true);
    expect(existsSync(join(ws, '.fleet.lock'))).toBe(false);
  });

  it('a lane stuck in a forge call that never answers is recorded as cancelled after the grace, and the run ends with its report', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'api', files: { 'README.md': '# api\n' } });
    const stall = emu.fault({ match: { kind: 'rest', method: 'POST', path: '/repos/{owner}/{repo}/pulls' }, kind: 'stall', times: Infinity });
    const file = flow.fleetFile({ name: 'stuck', directive: 'append', run: 'echo x >> README.md', max_retries: 0, targets: [{ repo: 'acme/api' }] });
    const ws = join(dir, 'ws');
    const controller = new AbortController();
    let stdout = '';
    let stderr = '';
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const [k, v] of Object.entries(flow.env)) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    const done = main(runArgs(file, ws), {
      stdout: { write: (s: string) => ((stdout += s), true) },
      stderr: { write: (s: string) => ((stderr += s), true) },
      env,
      cwd: dir,
      signal: controller.signal,
      interruptGraceMs: 200,
    });
    await until('the PR request hangs', () => stall.hits > 0);
    controller.abort();
    expect(await done, stdout + stderr).toBe(130);
    const m = readManifest(ws);
    expect(m.ended_at).not.toBeNull();
    const api = lane(m, 'api');
    expect(api.status).toBe('failed');
    expect(api.error?.class).toBe('cancelled');
    expect(api.error?.message).toMatch(/interrupted while this lane was pushed, and the lane did not stop/);
    expect(api.error?.message).toMatch(/what it pushed stays on the forge/);
    expect(existsSync(join(ws, 'report.md'))).toBe(true);
    expect(gitPushes(emu, 'acme/api')).toBe(1);
  });
});

describe('git against a remote that stalls or fails', () => {
  it('a clone that stalls is cut off at git_timeout_minutes and tried again; a 5xx and a dropped push are retried', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'flaky', files: { 'README.md': '# flaky\n' } });
    const stall = emu.fault({ match: { kind: 'git', method: 'POST', path: '/git/acme/flaky.git/git-upload-pack' }, kind: 'stall', times: 1 });
    const fiveHundred = emu.fault({ match: { kind: 'git', method: 'GET', path: '/git/acme/flaky.git/info/refs' }, kind: '5xx', status: 502, times: 1 });
    const dropped = emu.fault({ match: { kind: 'git', method: 'POST', path: '/git/acme/flaky.git/git-receive-pack' }, kind: 'drop', times: 1 });
    // 0.02 min: 1.2 s per try.
    const file = flow.fleetFile({
      name: 'flaky',
      directive: 'append',
      run: 'echo x >> README.md',
      max_retries: 0,
      git_timeout_minutes: 0.02,
      targets: [{ repo: 'acme/flaky' }],
    });
    const r = await flow.run(file, join(dir, 'ws'));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect([fiveHundred.hits, stall.hits, dropped.hits]).toEqual([1, 1, 1]);
    const m = readManifest(join(dir, 'ws'));
    expect(lane(m, 'flaky').status).toBe('completed');
    expect(lane(m, 'flaky').evidence.head_matches).toBe(true);
    expect(gitPushes(emu, 'acme/flaky')).toBe(1);
  });

  it('a remote that never answers fails the lane after three tries, with the timeout in its error', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'dead', files: { 'README.md': '# dead\n' } });
    const stall = emu.fault({ match: { kind: 'git', method: 'POST', path: '/git/acme/dead.git/git-upload-pack' }, kind: 'stall', times: Infinity });
    const file = flow.fleetFile({
      name: 'dead',
      directive: 'append',
      run: 'echo x >> README.md',
      max_retries: 0,
      git_timeout_minutes: 0.01,
      targets: [{ repo: 'acme/dead' }],
    });
    const r = await flow.run(file, join(dir, 'ws'));
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(stall.hits).toBe(3);
    const dead = lane(readManifest(join(dir, 'ws')), 'dead');
    expect(dead.error?.class).toBe('clone-failed');
    expect(dead.error?.message).toMatch(/timed out after 600 ms/);
  });
});

describe('verifying a lane of any size', () => {
  // GitHub's compare lists 300 files and a commit 3,000 (test/emulator/listing-limits.test.ts); trees have no such cap.
  const many =
    'mkdir -p gen && for d in 0 1 2 3 4 5 6; do mkdir -p gen/$d; for i in $(seq 1 500); do echo $d-$i > gen/$d/f$i.txt; done; done; git mv README.md README.txt; git rm -q old/gone.txt; echo 1 > keep/same.txt';

  it('a lane changing 3,500 files, with a rename and a deletion, is confirmed by the forge and completes', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'mono', files: { 'README.md': '# mono\n', 'old/gone.txt': 'bye\n', 'keep/same.txt': '1\n' } });
    const file = flow.fleetFile({ name: 'big', directive: 'generate', run: many, max_retries: 0, targets: [{ repo: 'acme/mono' }] });
    const r = await flow.run(file, join(dir, 'ws'));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const l = lane(readManifest(join(dir, 'ws')), 'mono');
    expect(l.status).toBe('completed');
    expect(l.changed_files).toHaveLength(3503);
    expect(l.changed_files).toEqual(expect.arrayContaining(['README.md', 'README.txt', 'old/gone.txt', 'gen/6/f500.txt']));
    expect(l.changed_files).not.toContain('keep/same.txt');
    expect(l.evidence).toMatchObject({ head_matches: true, files_match: true, fence_ok: true });
    expect(l.pr_number).not.toBeNull();

    // The list is the forge's own, not the lane's word: one more file on the branch among the 3,500 shows.
    const forged = await emu.commit({
      owner: 'acme',
      repo: 'mono',
      branch: 'fleet/big/mono',
      files: { '.github/workflows/evil.yml': 'on: push\n' },
      from: l.commit!,
    });
    const octokit = createOctokit({ token: flow.token, apiUrl: emu.url, graphqlUrl: emu.graphqlUrl, pacing: { writeMs: 0, searchMs: 0, notificationsMs: 0 } });
    const forge = new GitHubForge({ octokit, token: flow.token, name: 'big', serverUrl: `${emu.url}/git` });
    const seen = await forge.changedFiles({ repo: 'acme/mono', repo_kind: 'github' } as LaneSpec, l.base_commit!, forged);
    expect(seen).toHaveLength(3504);
    expect(seen).toContain('.github/workflows/evil.yml');
  });

  it('where a whole tree is too big to list, only the folders that differ are read, one level at a time', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    const files: Record<string, string> = { 'README.md': '# mono\n', 'old/gone.txt': 'bye\n', 'keep/same.txt': '1\n' };
    for (let i = 0; i < 200; i++) files[`vendor/lib${i % 20}/f${i}.txt`] = `${i}\n`;
    await emu.createRepo({ owner: 'acme', name: 'mono', files });
    emu.setTreeEntryLimit(1000);
    const file = flow.fleetFile({ name: 'big', directive: 'generate', run: many, max_retries: 0, targets: [{ repo: 'acme/mono' }] });
    const r = await flow.run(file, join(dir, 'ws'));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const l = lane(readManifest(join(dir, 'ws')), 'mono');
    expect(l.evidence).toMatchObject({ head_matches: true, files_match: true, fence_ok: true });
    const trees = emu.find({ route: '/repos/{owner}/{repo}/git/trees/{tree_sha}' }).map((q) => q.path);
    // The root is too big to list whole, so it is read one level down; the unchanged vendor/ folder is never read.
    const vendor = git(emu.repo('acme/mono')!.gitDir, 'rev-parse', 'main:vendor');
    expect(trees.some((t) => t.endsWith(vendor))).toBe(false);
    expect(trees.some((t) => t.endsWith(git(emu.repo('acme/mono')!.gitDir, 'rev-parse', 'fleet/big/mono:gen')))).toBe(true);
  });
});
