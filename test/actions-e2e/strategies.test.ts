/**
 * Speculative strategies through the reusable workflow: the plan keeps a target's strategies in one shard, so the
 * leg that runs them compares them once all have finished and only the pick opens a PR; a dependent in the next wave
 * job starts from the pick.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../support/actions-runner/index.js';
import { dispatchFleet, explain, planOf, reportArtifact, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World;
let runId: number;
let s: RunSummary;

beforeAll(async () => {
  w = await startWorld({
    fleetFile: {
      name: 'spec',
      forge: 'github',
      directive: 'Write the app.',
      run: 'true',
      max_retries: 0,
      // Many shards a wave: without the grouping, the strategies would land in different legs.
      max_parallel: 8,
      speculative: { pick: 'smallest-green-diff' },
      targets: [
        {
          repo: 'acme/svc',
          strategies: [
            { label: 'wide', run: 'printf "a\\nb\\nc\\n" > app.txt' },
            { label: 'narrow', run: 'echo a > app.txt' },
            { label: 'broken', run: 'exit 2' },
          ],
        },
        { repo: 'acme/app', depends_on: ['svc'], run: 'echo x > X.md' },
      ],
    },
  });
  for (const name of ['svc', 'app']) await w.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
  const r = await dispatchFleet(w, { directive: 'Write the app.' });
  runId = r.runId;
  s = r.s;
});
afterAll(async () => {
  await w?.close();
});

describe('strategies through the reusable workflow', () => {
  it("runs a target's strategies in one leg, opens a PR for the pick only, and starts the dependent from it", () => {
    const plan = planOf(w, runId).manifest;
    expect(plan.waves[0]!.shards.map((sh) => sh.lanes)).toEqual([['svc.broken', 'svc.narrow', 'svc.wide']]);
    const { manifest, report } = reportArtifact(w, runId);
    const byId = new Map(manifest.lanes.map((l) => [l.lane, l]));
    expect(byId.get('svc.narrow'), explain(s)).toMatchObject({ status: 'completed', phase: 'pr-open', strategy: { picked: true } });
    expect(byId.get('svc.wide')).toMatchObject({ status: 'completed', phase: 'pushed', strategy: { picked: false } });
    expect(byId.get('app')).toMatchObject({ status: 'completed', phase: 'pr-open' });
    expect(w.emu.pullRequests('acme/svc').map((p) => p.headRef)).toEqual(['fleet/spec/svc/narrow']);
    expect(report).toContain('### Strategies\n\n`svc`: smallest green diff: narrow changes 1 line in 1 file (2 of 3 green).');
    expect(s.jobs.find((j) => j.name === 'fleet / report')!.summary).toContain('### Strategies');
  });
});
