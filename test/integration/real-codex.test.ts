/**
 * The real Codex CLI (the exact version pinned in package.json) in Fleet's lanes, as a user runs Fleet
 * (bin/fleet.js, a process of its own), against the model-API emulator's Responses API: its flags, its own sandbox
 * inside Fleet's, its tool editing the working copy, its JSON events read for spending, answers and failures.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  codexEnv,
  responsesText,
  reviewPanel,
  responsesToolResults,
  startModelApi,
  type ModelApi,
  type ResponsesRequest,
  type Turn,
} from '../support/model-api/index.js';
import { createRepo } from '../support/repos.js';
import { lane, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';

const BIN = resolve('bin/fleet.js');
const CODEX_VERSION = (JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[
  '@openai/codex'
];
const KEY = 'sk-emulated-openai';

let dir: string;
let api: ModelApi;
let home: string;
beforeEach(async () => {
  dir = tempDir('fleet-codex-');
  home = join(dir, 'home');
  mkdirSync(home);
  api = await startModelApi({ keys: [KEY] });
});
afterEach(async () => {
  await api.close();
  removeDir(dir);
});

/** `fleet run` as a process, the real `codex` first on PATH; awaited by its exit (the emulator answers meanwhile). */
function fleet(file: string, env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, ...runArgs(file, join(dir, 'ws'))], {
      cwd: dir,
      env: {
        PATH: `${resolve('node_modules/.bin')}:${process.env.PATH ?? ''}`,
        HOME: home,
        GIT_CONFIG_NOSYSTEM: '1',
        ...codexEnv(api, dir, { key: KEY, retries: 0 }),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b));
    child.stderr.on('data', (b: Buffer) => (out += b));
    child.on('exit', (code) => done({ code, out }));
  });
}

/** Codex's one tool: a shell command, run with `bash -lc` in the working copy (apply_patch goes through it too). */
const run = (cmd: string): Turn => ({ blocks: [{ tool: 'exec_command', input: { cmd } }] });

async function oneLane(spec: Record<string, unknown>, turns: Turn[]) {
  await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
  api.converse({ name: 'app', match: 'LANE-APP', turns });
  return writeFleetFile(dir, {
    name: 'codex',
    directive: 'Add a Support section to README.md. LANE-APP',
    agent: { preset: 'codex', install: false },
    targets: [{ repo: './app.git' }],
    ...spec,
  });
}

describe(`the real Codex ${CODEX_VERSION} in a lane`, () => {
  it("edits the working copy with its own tool inside its sandbox and Fleet's; the checks judge it; its spending is read from its events", async () => {
    const patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: README.md\n@@\n # app\n+\n+## Support\n+\n+Ask in #help.\n*** End Patch\nEOF\n";
    const file = await oneLane({ checks: ['grep -q "## Support" README.md'] }, [
      run(patch),
      run("printf 'Support section added.\\n' > NOTES.md"),
      { blocks: [{ text: 'Added a Support section.' }] },
    ]);
    const r = await fleet(file, { HTTPS_PROXY: api.url, HTTP_PROXY: api.url, NO_PROXY: '127.0.0.1' });
    expect(r.code, r.out).toBe(0);
    const l = lane(readManifest(join(dir, 'ws')), 'app');
    expect(l).toMatchObject({ status: 'completed', changed_files: ['NOTES.md', 'README.md'] });
    expect(spawnSync('git', ['-C', join(dir, 'app.git'), 'show', 'fleet/codex/app:README.md'], { encoding: 'utf8' }).stdout).toBe(
      '# app\n\n## Support\n\nAsk in #help.\n',
    );
    // One turn (codex counts a turn per prompt), its tokens summed over the turn's three requests.
    expect(l.usage).toMatchObject({ turns: 1, cost_usd: null });
    expect(l.usage!.input_tokens).toBeGreaterThan(0);
    const talk = api.of('app');
    expect(talk.map((q) => q.turn)).toEqual([0, 1, 2]);
    expect(responsesText(talk[0]!.responses!)).toContain('Add a Support section to README.md.');
    // What its tool returned, as the model saw it: the patch applied, then the command's exit.
    const results = responsesToolResults(talk[2]!.responses!).map((t) => t.text);
    expect(results).toEqual([
      expect.stringMatching(/Success\. Updated the following files:\s+M .*README\.md/),
      expect.stringMatching(/Exit code: 0|exited with code 0/),
    ]);
    // Only the model API: every other host it would call went through the emulator as its proxy, and there were none
    // (no plugin sync from github.com or chatgpt.com, no analytics).
    expect(new Set(api.requests.filter((q) => q.method === 'POST').map((q) => q.path))).toEqual(new Set(['/v1/responses']));
    expect(api.tunnels()).toEqual([]);
  });
});

describe('what the real Codex reports when a run fails', () => {
  it('a key the API refuses: the lane fails saying so, and is not retried', async () => {
    const file = await oneLane({ max_retries: 2 }, [{ blocks: [{ text: 'never reached' }] }]);
    const r = await fleet(file, { OPENAI_API_KEY: 'sk-not-this-one' });
    expect(r.code, r.out).toBe(1);
    const l = lane(readManifest(join(dir, 'ws')), 'app');
    expect(l).toMatchObject({ status: 'failed', retry_count: 0, error: { class: 'directive-failed' } });
    expect(l.error!.message).toMatch(/model API refused its credentials \(unexpected status 401/);
  });

  it('an API that fails every request: the attempt fails saying so, and is retried', async () => {
    const file = await oneLane({ max_retries: 1 }, [{ fail: { status: 500 }, times: Infinity }]);
    const r = await fleet(file);
    expect(r.code, r.out).toBe(1);
    const l = lane(readManifest(join(dir, 'ws')), 'app');
    expect(l).toMatchObject({ status: 'failed', retry_count: 1, error: { class: 'directive-failed' } });
    expect(l.error!.message).toMatch(/kept failing after the CLI's own retries/);
  });
});

describe('review with the real Codex: a lens, the dispositions and a fix round (docs/review.md)', () => {
  it("each run's answer is read from its last agent message: the lens's finding is accepted, fixed, and the next round is clear", async () => {
    await createRepo(dir, 'svc', { 'README.md': '# svc\n', 'src/app.js': 'export const value = 1;\n' }, { clone: false });
    const asked = (req: unknown) => responsesText(req as ResponsesRequest);
    const patch = (from: string, to: string) =>
      run(
        `apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/app.js\n@@\n-export const value = ${from};\n+export const value = ${to};\n*** End Patch\nEOF\n`,
      );
    // Registered first: every run's prompt quotes the directive, the worker's conversation matches it last.
    reviewPanel(api, asked);
    api.converse({ name: 'fix', match: '## Review findings to fix', turns: [patch('BUG', 'OK'), { blocks: [{ text: 'Fixed.' }] }] });
    api.converse({ name: 'worker', match: 'Set the value.', turns: [patch('1', 'BUG'), { blocks: [{ text: 'Done.' }] }] });
    const file = writeFleetFile(dir, {
      name: 'rev',
      directive: 'Set the value.',
      agent: { preset: 'codex', install: false },
      owns: ['src/**'],
      max_retries: 0,
      review: { lenses: ['correctness'], rounds: 2 },
      targets: [{ repo: './svc.git' }],
    });
    const r = await fleet(file);
    expect(r.code, r.out).toBe(0);
    const l = lane(readManifest(join(dir, 'ws')), 'svc');
    expect(l).toMatchObject({ status: 'completed', changed_files: ['src/app.js'] });
    expect(spawnSync('git', ['-C', join(dir, 'svc.git'), 'show', 'fleet/rev/svc:src/app.js'], { encoding: 'utf8' }).stdout).toBe('export const value = OK;\n');
    expect(l.review?.verdict).toBe('clear');
    expect(l.review?.rounds.map((x) => x.verdict)).toEqual(['fix', 'clear']);
    expect(l.review?.findings).toEqual([expect.objectContaining({ severity: 'high', file: 'src/app.js', disposition: 'ACCEPT', status: 'fixed' })]);
    expect(api.of('lens').length).toBe(2);
    expect(api.of('dispositions').length).toBe(1);
    // Codex reports tokens, not dollars: the panel's spending is its tokens.
    expect(l.review?.usage.input_tokens).toBeGreaterThan(0);
  });
});
