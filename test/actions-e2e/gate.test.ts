/**
 * The approval gate of the reusable workflow: an environment with required
 * reviewers holds every wave until the plan is approved; a rejection runs no
 * lane and the report says who rejected it and why. And a check run GitHub
 * refuses does not fail a report whose summary and artifact are written.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CONTROL_REPO, dispatchFleet, explain, reportArtifact, startWorld, until, type World } from './world.js';

// Whole workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const FLEET = { name: 'gate', forge: 'github', directive: 'Stamp.', run: 'echo stamped > STAMP', max_retries: 0, targets: [{ repo: 'acme/one' }, { repo: 'acme/two', depends_on: ['one'] }] };

async function world(): Promise<World> {
  const world = await startWorld({ fleetFile: FLEET });
  for (const name of ['one', 'two']) await world.emu.createRepo({ owner: 'acme', name });
  world.runner.setEnvironment(CONTROL_REPO, 'fleet-approval', { reviewers: ['lead'] });
  return world;
}

describe('the approval gate', () => {
  it('waves wait for the reviewer; after approval every lane runs', async () => {
    w = await world();
    const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { directive: 'Stamp.', 'dry-run': false } });
    await until(() => run.waitingEnvironments().includes('fleet-approval'), 'the approval gate');
    // Nothing ran past the plan while the gate was closed.
    expect(w.emu.workflowRun(run.id)!.jobs.map((j) => [j.name, j.status])).toEqual([
      ['fleet / plan', 'completed'],
      ['fleet / approve', 'waiting'],
    ]);
    expect(w.emu.pullRequests('acme/one')).toHaveLength(0);
    w.runner.review(run.id, 'fleet-approval', 'approved', 'lead', 'looks right');
    const s = await w.runner.finish(run);
    expect(s.conclusion, explain(s)).toBe('success');
    expect(reportArtifact(w, run.id).manifest.summary).toMatchObject({ total: 2, completed: 2 });
  });

  it('a rejection runs no lane; the report says who rejected the plan and why', async () => {
    w = await world();
    const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { directive: 'Stamp.', 'dry-run': false } });
    await until(() => run.waitingEnvironments().includes('fleet-approval'), 'the approval gate');
    w.runner.review(run.id, 'fleet-approval', 'rejected', 'lead', 'not during the freeze');
    const s = await w.runner.finish(run);
    expect(s.jobs.map((j) => j.name).filter((n) => n.includes('wave'))).toEqual([]);
    const { manifest, report } = reportArtifact(w, run.id);
    expect(manifest.summary).toMatchObject({ total: 2, completed: 0, skipped: 2 });
    for (const lane of manifest.lanes) {
      expect(lane.status).toBe('skipped');
      expect(lane.error?.message).toBe('the plan was rejected at the approval gate (environment fleet-approval) by lead: "not during the freeze"; no lane ran');
    }
    expect(report).toContain('rejected at the approval gate');
    expect(w.emu.pullRequests('acme/one')).toHaveLength(0);
  });
});

describe('the report job', () => {
  it('a check run GitHub refuses is a warning: the summary and the report artifact are written, the job still reports the lanes', async () => {
    w = await startWorld({ fleetFile: { ...FLEET, targets: [{ repo: 'acme/one' }] } });
    await w.emu.createRepo({ owner: 'acme', name: 'one' });
    w.emu.fault({ match: { method: 'POST', path: '/repos/{owner}/{repo}/check-runs' }, kind: '5xx', status: 422, times: Infinity });
    const { runId, s } = await dispatchFleet(w);
    const report = s.jobs.find((j) => j.name === 'fleet / report')!;
    expect(report.conclusion, explain(s)).toBe('success');
    expect(report.summary).toContain('## Fleet Report');
    expect(report.annotations.map((a) => a.message).join('\n')).toMatch(/The report's check run could not be posted \(422: .*\); the job summary and the report artifact have the full report\./);
    expect(reportArtifact(w, runId).manifest.summary.completed).toBe(1);
  });
});
