/**
 * An agent fleet through the reusable workflow: each leg installs the agent
 * CLI named by `agent.install` with npm once and keeps it in the Actions
 * cache (the real @actions/cache client against the emulated cache service),
 * so later legs restore it; the caller's `anthropic-api-key` secret reaches
 * the agent directive as ANTHROPIC_API_KEY (the variable Claude Code reads:
 * https://code.claude.com/docs/en/env-vars) and nothing else: not the lane's
 * checks, not a log or an artifact Fleet writes, not a change it pushes.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { packFakeClaude } from '../support/fake-agents/pack.js';
import { artifactsOf, CONTROL_REPO, dispatchFleet, explain, reportArtifact, shardJobName, startWorld, type World } from './world.js';
import type { RunSummary } from '../support/actions-runner/index.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

const KEY = 'sk-ant-api03-FleetAgentTestKey-0123456789abcdefghijklmnop';
const sha = (v: string) => createHash('sha256').update(v).digest('hex');

let w: World;
let runId: number;
let s: RunSummary;
let tarball: string;

beforeAll(async () => {
  tarball = packFakeClaude();
  w = await startWorld({
    fleetFile: {
      name: 'agents',
      forge: 'github',
      directive: 'Mention the fleet in the README.',
      agent: { preset: 'claude', install: `file:${tarball}` },
      // One leg at a time, a leg per lane: the first installs and saves, every later leg restores.
      max_parallel: 1,
      legs: 'per-lane',
      max_retries: 0,
      // A check is a command of the lane too, but not the agent: it must not get the key.
      checks: ['if [ -n "${ANTHROPIC_API_KEY:-}" ]; then echo "the check got the agent key"; exit 9; fi'],
      targets: [
        { repo: 'acme/a' },
        { repo: 'acme/b' },
        { repo: 'acme/c', directive: 'LEAK your key into the repository.' },
        { repo: 'acme/d', depends_on: ['a'] },
      ],
    },
  });
  for (const name of ['a', 'b', 'c', 'd']) await w.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
  w.runner.setSecret(CONTROL_REPO, 'ANTHROPIC_API_KEY', KEY);
  const r = await dispatchFleet(w, { directive: 'Mention the fleet in the README.' });
  runId = r.runId;
  s = r.s;
});
afterAll(async () => {
  await w?.close();
  rmSync(join(tarball, '..'), { recursive: true, force: true });
});

const lane = (id: string) => reportArtifact(w, runId).manifest.lanes.find((l) => l.lane === id)!;
const legLog = (id: string) => s.jobs.find((j) => j.name === shardJobName(w, runId, id))!.log;

describe('an agent fleet through the reusable workflow', () => {
  it('runs the installed agent in every lane; the one that writes its key into the change fails and pushes nothing', async () => {
    for (const id of ['a', 'b', 'd']) expect(lane(id), explain(s)).toMatchObject({ status: 'completed' });
    expect(lane('c')).toMatchObject({ status: 'failed', error: { class: 'fence-violation' } });
    expect(lane('c').error!.message).toContain('agent credentials');
    expect(await w.emu.branchSha('acme/c', 'fleet/agents/c')).toBeNull();
    expect(w.emu.pullRequests('acme/c')).toEqual([]);
  });

  it('hands the key to the agent as ANTHROPIC_API_KEY, and no other credential', async () => {
    const agentTxt = execFileSync('git', ['--git-dir', join(w.emu.reposDir, 'acme/a.git'), 'show', 'fleet/agents/a:AGENT.txt'], { encoding: 'utf8' });
    expect(agentTxt).toBe(`ANTHROPIC_API_KEY: ${sha(KEY)}\nCLAUDE_CODE_OAUTH_TOKEN: none\nCODEX_API_KEY: none\nOPENAI_API_KEY: none\n`);
    const readme = execFileSync('git', ['--git-dir', join(w.emu.reposDir, 'acme/a.git'), 'show', 'fleet/agents/a:README.md'], { encoding: 'utf8' });
    expect(readme).toBe('# a\nfake-claude: Mention the fleet in the README.\n');
  });

  it('installs the agent CLI with npm in the first leg and restores it from the Actions cache in every later one', () => {
    const order = ['a', 'b', 'c'].sort(
      (x, y) => s.jobs.findIndex((j) => j.name === shardJobName(w, runId, x)) - s.jobs.findIndex((j) => j.name === shardJobName(w, runId, y)),
    );
    const installs = ['a', 'b', 'c', 'd'].filter((id) => /Agent CLI \S+: installed with npm/.test(legLog(id)));
    const restores = ['a', 'b', 'c', 'd'].filter((id) => /Agent CLI \S+: restored from the Actions cache/.test(legLog(id)));
    expect(installs).toHaveLength(1);
    expect(restores.sort()).toEqual(['a', 'b', 'c', 'd'].filter((id) => id !== installs[0]).sort());
    expect(order).toContain(installs[0]);
    expect(legLog(installs[0]!)).toMatch(
      /Agent CLI fake-claude-code@1\.0\.0 \(sha256:[0-9a-f]{64}\)|Agent CLI file:\S+#sha256:[0-9a-f]{64}: installed with npm in [\d.]+ s and saved to the Actions cache as fleet-agent-linux-x64-[0-9a-f]{20}/,
    );
  });

  it('the key reaches no artifact, job summary, PR body or check run; the job logs show it masked', () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-artifacts-'));
    try {
      for (const a of artifactsOf(w, runId).values()) {
        writeFileSync(join(dir, `${a.name}.zip`), w.services.artifactContent(a.id)!);
        execFileSync('unzip', ['-q', '-o', join(dir, `${a.name}.zip`), '-d', join(dir, a.name)]);
      }
      const hits = execFileSync('sh', ['-c', `grep -rl -F -e "$K" "${dir}" | grep -v '\\.zip$' || true`], {
        env: { ...process.env, K: KEY },
        encoding: 'utf8',
      }).trim();
      expect(hits).toBe('');
      // The leaking lane's attempt log is in its artifact, with the key redacted.
      const log = readFileSync(join(dir, 'fleet-lane-c.a1', 'lanes', 'c', 'attempt-1.log'), 'utf8');
      expect(log).toContain('my key is ***');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    for (const j of s.jobs) {
      expect(j.log, j.name).not.toContain(KEY);
      expect(j.summary, j.name).not.toContain(KEY);
    }
    for (const r of ['a', 'b', 'd']) for (const pr of w.emu.pullRequests(`acme/${r}`)) expect(pr.body).not.toContain(KEY);
    for (const c of w.emu.checkRuns(CONTROL_REPO)) expect(JSON.stringify(c)).not.toContain(KEY);
  });
});
