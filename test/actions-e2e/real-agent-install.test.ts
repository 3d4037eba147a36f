/**
 * The real Claude Code package on a wave leg: installed by the leg with npm from the registry npm is configured with
 * (here the runner machine's `npm_config_registry`, a local registry holding the registry's own tarballs of the
 * version pinned in package.json, test/support/npm-registry/), saved to the emulated Actions cache, and restored
 * from it by the next run's leg without touching the registry; in both runs the installed CLI does the lane's work
 * against the model-API emulator. The same install with a small fake package is test/actions-e2e/agents.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startModelApi, workingDirectory, type MessagesRequest, type ModelApi } from '../support/model-api/index.js';
import { packFromNpmCache, startNpmRegistry, type NpmRegistry, type PackageManifest } from '../support/npm-registry/index.js';
import { tempDir } from '../integration/helpers.js';
import type { RunSummary } from '../support/actions-runner/index.js';
import { CONTROL_REPO, dispatchFleet, explain, KNOBS, reportArtifact, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 600_000 });

const NAME = '@anthropic-ai/claude-code';
const VERSION = (JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[NAME]!;
const NATIVE = `${NAME}-${process.platform}-${process.arch}`;

let dir: string;
let registry: NpmRegistry;
let api: ModelApi;
let w: World;
const runs: { runId: number; s: RunSummary }[] = [];

/** The platform packages Claude Code lists as optional, as package-lock.json records them: known by manifest, not held. */
function otherPlatforms(): PackageManifest[] {
  const lock = JSON.parse(readFileSync(resolve('package-lock.json'), 'utf8')) as { packages: Record<string, Record<string, unknown>> };
  return Object.entries(lock.packages)
    .filter(([path]) => path.startsWith(`node_modules/${NAME}-`) && path !== `node_modules/${NATIVE}`)
    .map(([path, p]) => ({
      name: path.slice('node_modules/'.length),
      version: String(p.version),
      ...(p.os ? { os: p.os } : {}),
      ...(p.cpu ? { cpu: p.cpu } : {}),
      ...(p.libc ? { libc: p.libc } : {}),
    }));
}

beforeAll(async () => {
  dir = tempDir('fleet-real-install-');
  registry = await startNpmRegistry({ tarballs: packFromNpmCache([`${NAME}@${VERSION}`, `${NATIVE}@${VERSION}`], dir), manifests: otherPlatforms() });
  api = await startModelApi();
  api.converse({
    name: 'worker',
    match: 'Add a Support section',
    turns: [
      (req: MessagesRequest) => ({ blocks: [{ tool: 'Write', input: { file_path: `${workingDirectory(req)}/SUPPORT.md`, content: '# Support\n' } }] }),
      { blocks: [{ text: 'Done.' }] },
    ],
  });
  w = await startWorld({
    // The runner machine's npm configuration, as a self-hosted runner's environment or image would give it.
    runner: { extraEnv: { ...KNOBS, npm_config_registry: registry.url } },
    fleetFile: {
      name: 'install',
      forge: 'github',
      directive: 'Add a Support section.',
      agent: { preset: 'claude', install: `${NAME}@${VERSION}`, env: { ANTHROPIC_BASE_URL: api.url } },
      max_retries: 0,
      targets: [{ repo: 'acme/one' }],
    },
  });
  await w.emu.createRepo({ owner: 'acme', name: 'one', files: { 'README.md': '# one\n' } });
  w.runner.setSecret(CONTROL_REPO, 'ANTHROPIC_API_KEY', api.key);
  for (let i = 0; i < 2; i++) runs.push(await dispatchFleet(w, { directive: 'Add a Support section.' }));
});
afterAll(async () => {
  await w?.close();
  await api?.close();
  await registry?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const legLog = (s: RunSummary) => s.jobs.find((j) => j.name.startsWith('fleet / wave 1 ('))!.log;

describe(`the real ${NAME} ${VERSION} installed on a wave leg`, () => {
  it('the first leg installs it from the configured registry with npm and saves it to the Actions cache; its agent does the work', () => {
    const { s, runId } = runs[0]!;
    expect(legLog(s), explain(s)).toMatch(
      new RegExp(
        `Agent CLI ${NAME}@${VERSION}: installed with npm in [\\d.]+ s and saved to the Actions cache as fleet-agent-${process.platform}-${process.arch}-[0-9a-f]{20}`,
      ),
    );
    expect(reportArtifact(w, runId).manifest.lanes[0]).toMatchObject({ status: 'completed', changed_files: ['SUPPORT.md'] });
    // The registry's own bytes: npm checked each tarball against the integrity the registry gave.
    expect(registry.downloads(NAME)).toBe(1);
    expect(registry.downloads(NATIVE)).toBe(1);
    expect(registry.requests.filter((r) => r.path.includes('not-held'))).toEqual([]);
  });

  it("the next run's leg restores it from the cache, asks the registry for no tarball, and the restored CLI does the work", () => {
    const { s, runId } = runs[1]!;
    expect(legLog(s), explain(s)).toMatch(new RegExp(`Agent CLI ${NAME}@${VERSION}: restored from the Actions cache \\(fleet-agent-\\S+\\) in [\\d.]+ s`));
    expect(reportArtifact(w, runId).manifest.lanes[0]).toMatchObject({ status: 'completed' });
    expect(registry.downloads(NAME)).toBe(1);
    expect(registry.downloads(NATIVE)).toBe(1);
    // Both runs' agents were the real CLI: each conversation reached the model API with the secret as its key.
    expect(api.of('worker').filter((r) => r.headers['x-api-key'] === '<the key>').length).toBeGreaterThanOrEqual(4);
    expect(execFileSync('git', ['--git-dir', join(w.emu.reposDir, 'acme/one.git'), 'show', 'fleet/install/one:SUPPORT.md'], { encoding: 'utf8' })).toBe(
      '# Support\n',
    );
  });
});
