/**
 * agent_install_cached_s (`--only agent-install`): what a wave leg of an agent fleet spends getting its agent CLI,
 * installed with npm (the first leg) or restored from the Actions cache (every later leg), through the workflow
 * runner with the real @actions/cache client against the emulated cache service.
 *
 * Each repetition packs a new version of the fake agent package (so its first run misses the cache), dispatches a
 * one-lane agent fleet twice, and reads the leg's own account of the install ("installed with npm in X s",
 * "restored from the Actions cache … in Y s"). The package is a small local tarball: the uncached figure is npm's
 * fixed cost, not the tens of megabytes Claude Code or Codex download, so the real saving is larger.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { packFakeClaude } from '../../test/support/fake-agents/pack.js';

export interface AgentInstallRun {
  reps: number;
  uncached_s: number[];
  cached_s: number[];
}

const INSTALLED = /Agent CLI \S+: installed with npm in ([\d.]+) s/;
const RESTORED = /Agent CLI \S+: restored from the Actions cache \(\S+\) in ([\d.]+) s/;

export async function agentInstall(opts: { reps: number; log: (s: string) => void }): Promise<AgentInstallRun> {
  const { startWorld, dispatchFleet, explain, CONTROL_REPO } = await import('../../test/actions-e2e/world.js');
  const out: AgentInstallRun = { reps: opts.reps, uncached_s: [], cached_s: [] };
  for (let r = 0; r < opts.reps; r++) {
    const tarball = packFakeClaude(`1.0.${r}`);
    const w = await startWorld({
      fleetFile: { name: 'agent-bench', forge: 'github', directive: 'Mention the fleet.', agent: { preset: 'claude', install: `file:${tarball}` }, max_retries: 0, targets: [{ repo: 'acme/one' }] },
    });
    try {
      await w.emu.createRepo({ owner: 'acme', name: 'one', files: { 'README.md': '# one\n' } });
      w.runner.setSecret(CONTROL_REPO, 'ANTHROPIC_API_KEY', 'sk-ant-bench-0123456789abcdef');
      for (const [i, pattern, into] of [[1, INSTALLED, out.uncached_s], [2, RESTORED, out.cached_s]] as const) {
        const { s } = await dispatchFleet(w, { directive: 'Mention the fleet.' });
        const leg = s.jobs.find((j) => j.name.startsWith('fleet / wave 1 ('));
        const m = leg ? pattern.exec(leg.log) : null;
        if (s.conclusion !== 'success' || !m) throw new Error(`agent install bench: run ${i} of repetition ${r + 1} did not ${i === 1 ? 'install' : 'restore'} the agent CLI\n${explain(s)}`);
        into.push(Number(m[1]));
      }
      opts.log(`  repetition ${r + 1}: npm ${out.uncached_s.at(-1)} s, cache ${out.cached_s.at(-1)} s`);
    } finally {
      await w.close();
      rmSync(dirname(tarball), { recursive: true, force: true });
    }
  }
  return out;
}
