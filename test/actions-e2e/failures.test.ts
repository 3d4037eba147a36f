/**
 * Lane jobs that die: one whose runner is lost mid-run, one past the wave
 * job's timeout-minutes. Neither leaves a lane artifact; the report explains
 * each from the run's jobs and the annotations GitHub left on them. Reports
 * differ on how the jobs API concludes a timed-out job (`cancelled` with the
 * timeout annotation, or `timed_out`): Fleet must explain it under both.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../support/actions-runner/index.js';
import { CONTROL_REPO, explain, reportArtifact, shardJobName, startWorld, until, type World } from './world.js';

// Whole workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

describe.each(['cancelled', 'timed_out'] as const)('lane jobs that die, a timed-out job concluding %s', (timeoutConclusion) => {
  let w: World;
  let runId: number;
  let s: RunSummary;
  const lines = new Map<string, string[]>();

  beforeAll(async () => {
    w = await startWorld({
      runner: { timeoutConclusion, onLog: (job, line) => lines.set(job, [...(lines.get(job) ?? []), line]) },
      fleetFile: {
        name: 'dies',
        forge: 'github',
        directive: 'Stamp.',
        run: 'if [ "$FLEET_LANE" != fine ]; then sleep 60; fi; echo stamped > STAMP',
        max_retries: 0,
        targets: [{ repo: 'acme/doomed' }, { repo: 'acme/fine' }, { repo: 'acme/slow' }],
      },
    });
    for (const name of ['doomed', 'fine', 'slow']) await w.emu.createRepo({ owner: 'acme', name });
    const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { directive: 'Stamp.', 'dry-run': false } });
    runId = run.id;
    const running = (lane: string) => () => [...lines.values()].some((l) => l.includes(`${lane}: running (attempt 1 of 1)`));
    await until(running('doomed'), 'doomed to run its directive', 180_000);
    await until(running('slow'), 'slow to run its directive', 180_000);
    await until(
      () => w.emu.workflowRun(runId)!.jobs.some((j) => j.name === shardJobName(w, runId, 'fine') && j.status === 'completed'),
      'fine to finish',
      180_000,
    );
    expect(run.killJob(shardJobName(w, runId, 'doomed'))).toBe(true);
    // The wave jobs' timeout-minutes (120 by default) passes on the runner's clock while slow's directive still runs.
    w.runner.clock.advance(121 * 60_000);
    s = await w.runner.finish(run);
  });
  afterAll(() => w?.close());

  describe('the report', () => {
    it('the jobs end as GitHub ends them: the lost runner failed, the timed-out job stopped', () => {
      expect(s.jobs.find((j) => j.name === shardJobName(w, runId, 'doomed'))!.conclusion, explain(s)).toBe('failure');
      expect(s.jobs.find((j) => j.name === shardJobName(w, runId, 'slow'))!.conclusion).toBe('cancelled');
      expect(w.emu.workflowRun(runId)!.jobs.find((j) => j.name === shardJobName(w, runId, 'slow'))!.conclusion).toBe(timeoutConclusion);
      expect(s.jobs.find((j) => j.name === 'fleet / report')!.conclusion).toBe('failure');
    });

    it("the report explains each lane from the run's jobs and their annotations, and keeps the one that finished", () => {
      const { manifest } = reportArtifact(w, runId);
      const lane = (id: string) => manifest.lanes.find((l) => l.lane === id)!;
      expect(lane('fine').status).toBe('completed');
      expect(lane('doomed')).toMatchObject({ status: 'failed', error: { class: 'lane-crashed' } });
      expect(lane('doomed').error!.message).toContain(
        `job "${shardJobName(w, runId, 'doomed')}" lost its runner before the lane left a result: The runner has received a shutdown signal.`,
      );
      expect(lane('slow')).toMatchObject({ status: 'failed', error: { class: 'no-result' } });
      expect(lane('slow').error!.message).toContain(
        `job "${shardJobName(w, runId, 'slow')}" timed out after 120 minutes (the wave job's timeout-minutes) before the lane left a result`,
      );
    });
  });
});
