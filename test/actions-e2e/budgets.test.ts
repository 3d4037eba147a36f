/**
 * The fleet's cost ceiling through the reusable workflow: each wave is its own job on its own runners, so a lane that
 * reported a cost uploads it in an artifact's name (`fleet-spent-<lane>.u<micro-dollars>.a<attempt>`), and a leg of a
 * later wave adds up one listing of them before its lanes start. The agent is review-agent.mjs under the claude preset
 * (each run reports $0.01, as Claude Code's JSON result does).
 */
import { tempDir } from '../integration/helpers.js';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FAKE_AGENTS } from '../support/repos.js';
import type { RunSummary } from '../support/actions-runner/index.js';
import { artifactsOf, dispatchFleet, explain, reportArtifact, shardJobName, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World;
let runId: number;
let s: RunSummary;
let planDir: string;

beforeAll(async () => {
  // Read by the fake agents, which run as nobody where the suite runs as root: open to every user.
  planDir = tempDir('fleet-budget-plan-');
  const plan = join(planDir, 'plan.json');
  writeFileSync(plan, JSON.stringify({ write: { 'NOTES.md': 'spent\n' } }));
  w = await startWorld({
    fleetFile: {
      name: 'spend',
      forge: 'github',
      directive: 'Leave a note.',
      agent: { preset: 'claude', command: `node ${join(FAKE_AGENTS, 'review-agent.mjs')} --plan ${plan}`, install: false },
      max_retries: 0,
      budget: { fleet: { cost_usd: 0.02 } },
      targets: [{ repo: 'acme/a' }, { repo: 'acme/b', depends_on: ['a'] }, { repo: 'acme/c', depends_on: ['b'] }],
    },
  });
  for (const name of ['a', 'b', 'c']) await w.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
  const r = await dispatchFleet(w, { directive: 'Leave a note.' });
  runId = r.runId;
  s = r.s;
});
afterAll(async () => {
  await w?.close();
  rmSync(planDir, { recursive: true, force: true });
});

describe("the fleet's cost ceiling through the reusable workflow", () => {
  it('a later wave job counts what earlier ones spent: the lane past the ceiling does not start', () => {
    const { manifest, report } = reportArtifact(w, runId);
    expect(
      manifest.lanes.map((l) => [l.lane, l.status]),
      explain(s),
    ).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'skipped'],
    ]);
    expect(manifest.lanes[2]!.error).toEqual({ class: 'budget-exceeded', message: "not started: the fleet's cost ceiling of $0.02 is reached ($0.02 spent)" });
    expect(manifest.summary.usage).toMatchObject({ cost_usd: 0.02, turns: 4 });
    expect([...artifactsOf(w, runId).keys()].filter((n) => n.startsWith('fleet-spent-')).sort()).toEqual([
      'fleet-spent-a.u10000.a1',
      'fleet-spent-b.u10000.a1',
    ]);
    expect(s.jobs.find((j) => j.name === shardJobName(w, runId, 'c'))!.log).toContain('Budget: the fleet has spent $0.02 of its $0.02 ceiling before this leg');
    expect(report).toContain("Did not start (the fleet's cost ceiling was reached): `c`.");
    expect(w.emu.pullRequests('acme/c')).toEqual([]);
  });
});
