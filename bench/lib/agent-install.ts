/**
 * agent_install_cached_s (`--only agent-install`): what a wave leg of an agent fleet spends getting its agent CLI,
 * installed with npm (the first leg) or restored from the Actions cache (every later leg), through the workflow
 * runner with the real @actions/cache client against the emulated cache service.
 *
 * The package is the real Claude Code at the version package.json pins (its 186 MB native package included), served
 * by a local npm registry from the registry's own tarballs (test/support/npm-registry/): the leg's npm reaches it
 * through the runner machine's npm_config_registry, as it would reach registry.npmjs.org, minus the network's time.
 * Each repetition starts a new world (an empty Actions cache), dispatches a one-lane agent fleet twice, and reads the
 * leg's own account of the install ("installed with npm in X s", "restored from the Actions cache … in Y s").
 * The lane's agent answers "Done." from the model-API emulator at once: the install is what is timed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startModelApi, type ModelApi } from '../../test/support/model-api/index.js';
import { packFromNpmCache, startNpmRegistry } from '../../test/support/npm-registry/index.js';

const NAME = '@anthropic-ai/claude-code';

export interface AgentInstallRun {
  reps: number;
  uncached_s: number[];
  cached_s: number[];
}

const INSTALLED = /Agent CLI \S+: installed with npm in ([\d.]+) s/;
const RESTORED = /Agent CLI \S+: restored from the Actions cache \(\S+\) in ([\d.]+) s/;

export async function agentInstall(opts: { reps: number; log: (s: string) => void }): Promise<AgentInstallRun> {
  const version = (JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[NAME]!;
  const dir = mkdtempSync(join(tmpdir(), 'bench-agent-install-'));
  const registry = await startNpmRegistry({
    tarballs: packFromNpmCache([`${NAME}@${version}`, `${NAME}-${process.platform}-${process.arch}@${version}`], dir),
  });
  // A model API that answers "Done." at once: the lane ends as soon as the CLI it installed has run.
  const api = await startModelApi();
  try {
    const out: AgentInstallRun = { reps: opts.reps, uncached_s: [], cached_s: [] };
    for (let r = 0; r < opts.reps; r++) await repetition(r, `${NAME}@${version}`, registry.url, api, out, opts.log);
    return out;
  } finally {
    await api.close();
    await registry.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A new world (an empty Actions cache): the first dispatch installs with npm, the second restores. */
async function repetition(r: number, spec: string, registry: string, api: ModelApi, out: AgentInstallRun, log: (s: string) => void): Promise<void> {
  const { startWorld, dispatchFleet, explain, CONTROL_REPO, KNOBS } = await import('../../test/actions-e2e/world.js');
  const w = await startWorld({
    runner: { extraEnv: { ...KNOBS, npm_config_registry: registry } },
    fleetFile: {
      name: 'agent-bench',
      forge: 'github',
      directive: 'Mention the fleet.',
      agent: { preset: 'claude', install: spec, env: { ANTHROPIC_BASE_URL: api.url } },
      max_retries: 0,
      targets: [{ repo: 'acme/one' }],
    },
  });
  try {
    await w.emu.createRepo({ owner: 'acme', name: 'one', files: { 'README.md': '# one\n' } });
    w.runner.setSecret(CONTROL_REPO, 'ANTHROPIC_API_KEY', api.key);
    for (const [i, pattern, into] of [
      [1, INSTALLED, out.uncached_s],
      [2, RESTORED, out.cached_s],
    ] as const) {
      const { s } = await dispatchFleet(w, { directive: 'Mention the fleet.' });
      const leg = s.jobs.find((j) => j.name.startsWith('fleet / wave 1 ('));
      const m = leg ? pattern.exec(leg.log) : null;
      if (!m) throw new Error(`agent install bench: run ${i} of repetition ${r + 1} did not ${i === 1 ? 'install' : 'restore'} the agent CLI\n${explain(s)}`);
      into.push(Number(m[1]));
    }
    log(`  repetition ${r + 1}: npm ${out.uncached_s.at(-1)} s, cache ${out.cached_s.at(-1)} s`);
  } finally {
    await w.close();
  }
}
