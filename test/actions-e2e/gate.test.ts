/**
 * The approval gate of the reusable workflow: an environment with required
 * reviewers holds every wave until the plan is approved; a rejection runs no
 * lane and the report says who rejected it and why. A gate that would not
 * hold (no such environment, or one without required reviewers) is refused
 * by the plan job before anything runs, with how to set it up. The run's
 * artifacts outlive the 30 days a gate may wait. And a check run GitHub
 * refuses does not fail a report whose summary and artifact are written.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { artifactsOf, CONTROL_REPO, dispatchFleet, explain, planOf, reportArtifact, startWorld, template, until, type World } from './world.js';

// Whole workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const FLEET = {
  name: 'gate',
  forge: 'github',
  directive: 'Stamp.',
  run: 'echo stamped > STAMP',
  max_retries: 0,
  targets: [{ repo: 'acme/one' }, { repo: 'acme/two', depends_on: ['one'] }],
};

const DAY = 86_400_000;

/** The dispatch template as shipped (approval-environment: fleet-approval); `reviewers` null: no such environment. */
async function world(reviewers: string[] | null = ['lead'], fleetFile: Record<string, unknown> = FLEET): Promise<World> {
  const world = await startWorld({ fleetFile, caller: template('fleet-dispatch.yml') });
  for (const name of ['one', 'two']) await world.emu.createRepo({ owner: 'acme', name });
  if (reviewers) world.runner.setEnvironment(CONTROL_REPO, 'fleet-approval', { reviewers });
  return world;
}

/** A plan refused at the gate check: the plan job failed with `why` and the how-to, in its annotation and its summary; nothing else ran. */
function expectRefused(s: Awaited<ReturnType<typeof dispatchFleet>>['s'], why: string): void {
  expect(s.conclusion).toBe('failure');
  expect(s.jobs.map((j) => j.name)).toEqual(['fleet / plan']);
  const plan = s.jobs[0]!;
  const said = plan.annotations.map((a) => a.message).join('\n');
  for (const text of [said, plan.summary]) {
    expect(text).toContain(why);
    expect(text).toContain('Settings → Environments');
    expect(text).toContain('Required reviewers');
    expect(text).toContain('https://docs.github.com/actions/how-tos/deploy/configure-and-manage-deployments/manage-environments');
  }
  expect(plan.summary).toContain('## Fleet plan refused');
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
    const planJob = run.summary().jobs.find((j) => j.name === 'fleet / plan')!;
    expect(planJob.summary).toContain('are kept 90 days');
    expect(planJob.annotations.filter((a) => a.level === 'warning')).toEqual([]);
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

describe('no gate, by choice', () => {
  it('the shipped dispatch template with FLEET_APPROVAL_ENVIRONMENT=none: no environment is read or named, the plan says there is no gate, the lanes run', async () => {
    // A control repository on a plan without required reviewers for private repositories: no environment at all.
    w = await world(null);
    w.runner.setVariable(CONTROL_REPO, 'FLEET_APPROVAL_ENVIRONMENT', 'None'); // any case: the plan and the approve job read it alike
    const { runId, s } = await dispatchFleet(w, { directive: 'Stamp.' });
    expect(s.conclusion, explain(s)).toBe('success');
    expect(s.jobs.map((j) => j.name)).not.toContain('fleet / approve');
    const planJob = s.jobs.find((j) => j.name === 'fleet / plan')!;
    expect(planJob.summary).toContain('**No approval gate**: approval-environment is `none`');
    expect(w.emu.count({ route: '/repos/{owner}/{repo}/environments/{environment_name}', method: 'GET' })).toBe(0);
    expect(reportArtifact(w, runId).manifest.summary).toMatchObject({ total: 2, completed: 2 });
  });
});

// https://docs.github.com/rest/deployments/environments#get-an-environment (404 when missing; protection_rules with
// type required_reviewers), read by the plan job's GITHUB_TOKEN with actions: read.
describe('a gate that would not hold is refused before any lane runs', () => {
  it('no such environment (GitHub would create it without rules when the approve job names it): the plan says how to set it up', async () => {
    w = await world(null);
    const { runId, s } = await dispatchFleet(w, { directive: 'Stamp.' });
    expectRefused(s, 'acme/control has no environment "fleet-approval"');
    expect(artifactsOf(w, runId).size).toBe(0);
    expect(w.emu.pullRequests('acme/one')).toHaveLength(0);
    expect(w.emu.count({ route: '/repos/{owner}/{repo}/environments/{environment_name}', method: 'GET' })).toBe(1);
  });

  it('an environment without required reviewers: refused the same way', async () => {
    w = await world([]);
    const { s } = await dispatchFleet(w, { directive: 'Stamp.' });
    expectRefused(s, 'environment "fleet-approval" of acme/control has no required reviewers, so the gate would open at once');
  });
});

describe('artifacts live as long as a gate may wait', () => {
  it('approved after 29 days, a lane failed; "Re-run failed jobs" 3 days later still reads the plan and the lanes of attempt 1', async () => {
    const flaky = { ...FLEET, run: 'if [ "$FLEET_LANE" = two ] && [ ! -f READY ]; then exit 3; fi; echo stamped > STAMP' };
    w = await world(['lead'], flaky);
    const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { directive: 'Stamp.', 'dry-run': false } });
    await until(() => run.waitingEnvironments().includes('fleet-approval'), 'the approval gate');
    const plan = artifactsOf(w, run.id).get('fleet-plan.a1')!;
    // Fleet asks for 90 days (the repository allows 90 here): more than the 35 days a gated run can last.
    expect((Date.parse(plan.expiresAt) - Date.parse(plan.createdAt)) / DAY).toBeGreaterThan(89);
    w.runner.clock.advance(29 * DAY);
    w.runner.review(run.id, 'fleet-approval', 'approved', 'lead');
    const first = await w.runner.finish(run);
    expect(reportArtifact(w, run.id).manifest.summary, explain(first)).toMatchObject({ completed: 1, failed: 1 });
    w.runner.clock.advance(3 * DAY);
    await w.emu.commit({ owner: 'acme', repo: 'two', branch: 'main', files: { READY: 'yes\n' } });
    w.runner.rerunFailed(run.id);
    const second = await w.runner.finish(run);
    expect(second.conclusion, explain(second)).toBe('success');
    expect(reportArtifact(w, run.id, 2).manifest.summary).toMatchObject({ total: 2, completed: 2 });
  });

  it('a repository that keeps artifacts fewer days than a gate can wait: the plan warns and tells the approver the deadline', async () => {
    w = await world();
    w.runner.setRetentionDays(CONTROL_REPO, 20);
    const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { directive: 'Stamp.', 'dry-run': false } });
    await until(() => run.waitingEnvironments().includes('fleet-approval'), 'the approval gate');
    const s = run.summary();
    const planJob = s.jobs.find((j) => j.name === 'fleet / plan')!;
    // @actions/artifact capped the 90 days Fleet asked for to the repository's 20 (GITHUB_RETENTION_DAYS).
    const plan = artifactsOf(w, run.id).get('fleet-plan.a1')!;
    expect(Math.round((Date.parse(plan.expiresAt) - Date.parse(plan.createdAt)) / DAY)).toBe(20);
    const warnings = planJob.annotations.filter((a) => a.level === 'warning').map((a) => a.message);
    expect(warnings).toContainEqual(expect.stringContaining('This repository keeps artifacts 20 days'));
    expect(warnings.join('\n')).toContain('Raise the retention to at least 35 days');
    expect(planJob.summary).toMatch(/kept 20 days, until \d{4}-\d{2}-\d{2}\. \*\*Approve before \d{4}-\d{2}-\d{2}\*\*/);
    expect(planOf(w, run.id).manifest.lanes).toHaveLength(2);
    w.runner.review(run.id, 'fleet-approval', 'approved', 'lead');
    expect((await w.runner.finish(run)).conclusion).toBe('success');
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
    expect(report.annotations.map((a) => a.message).join('\n')).toMatch(
      /The report's check run could not be posted \(422: .*\); the job summary and the report artifact have the full report\./,
    );
    expect(reportArtifact(w, runId).manifest.summary.completed).toBe(1);
  });
});
