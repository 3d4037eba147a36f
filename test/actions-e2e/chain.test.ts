/**
 * A DAG deeper than the reusable workflow's 8 wave jobs. A reusable workflow
 * cannot loop, so the report job of each run leaves the fleet's state as an
 * artifact and dispatches the calling workflow again (the REST "Create a
 * workflow dispatch event": https://docs.github.com/rest/actions/workflows#create-a-workflow-dispatch-event),
 * with its own inputs and `fleet-continue` naming the run; the next run's
 * plan job reads that state through the REST artifact endpoints of the
 * earlier run, and its wave jobs run the next 8 waves. A chain of 20 waves
 * takes three runs; the last run's report covers every lane and links the runs.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../support/actions-runner/index.js';
import { CONTROL_REPO, dispatchFleet, explain, reportArtifact, startWorld, until, type World } from './world.js';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 900_000 });

const N = 20;
const names = Array.from({ length: N }, (_, i) => `c${String(i + 1).padStart(2, '0')}`);
let w: World;
const runs: Array<{ id: number; s: RunSummary }> = [];

beforeAll(async () => {
  w = await startWorld({
    fleetFile: {
      name: 'chain',
      forge: 'github',
      directive: 'Stamp.',
      run: 'echo "$FLEET_LANE" > STAMP',
      max_retries: 0,
      // c01 → c02 → … → c20: twenty waves of one lane each.
      targets: names.map((n, i) => ({ repo: `acme/${n}`, ...(i > 0 ? { depends_on: [names[i - 1]!] } : {}) })),
    },
  });
  for (const n of names) await w.emu.createRepo({ owner: 'acme', name: n });
  const first = await dispatchFleet(w, { directive: 'Stamp.' });
  runs.push({ id: first.runId, s: first.s });
  // Each run's report job dispatches the next: wait for runs 2 and 3, each to its end.
  for (let k = 2; k <= 3; k++) {
    await until(() => w.runner.runs.size >= k, `run ${k} of the chain to be dispatched`, 300_000);
    const run = [...w.runner.runs.values()].sort((a, b) => a.id - b.id)[k - 1]!;
    runs.push({ id: run.id, s: await w.runner.finish(run) });
  }
});
afterAll(() => w?.close());

describe('a chain of 20 waves through the reusable workflow', () => {
  it('runs in three runs of the calling workflow: waves 1–8, 9–16 and 17–20, every run succeeding', () => {
    for (const r of runs) expect(r.s.conclusion, explain(r.s)).toBe('success');
    const legs = (s: RunSummary) => s.jobs.filter((j) => / wave \d+ \(/.test(j.name) && j.conclusion === 'success').length;
    expect(runs.map((r) => legs(r.s))).toEqual([8, 8, 4]);
    // Only the first run was dispatched by a person; the others by Fleet, with the same inputs and fleet-continue.
    expect(w.runner.runs.size).toBe(3);
    const dispatches = w.emu.find({ route: '/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches', method: 'POST' });
    expect(dispatches.map((d) => d.status)).toEqual([204, 204]);
    expect(dispatches.map((d) => (d.body as { inputs: Record<string, string> }).inputs)).toEqual([
      { directive: 'Stamp.', 'dry-run': 'false', 'fleet-file': 'fleet.yml', 'fleet-continue': String(runs[0]!.id) },
      { directive: 'Stamp.', 'dry-run': 'false', 'fleet-file': 'fleet.yml', 'fleet-continue': String(runs[1]!.id) },
    ]);
  });

  it("the last run's report covers every lane of the chain, verified, and links the three runs", async () => {
    const { manifest, report } = reportArtifact(w, runs[2]!.id);
    expect(manifest.summary).toMatchObject({ total: N, completed: N, failed: 0, skipped: 0, queued: 0 });
    expect(manifest.lanes.every((l) => l.evidence.head_matches === true)).toBe(true);
    expect(manifest.runs!.map((r) => [r.run_id, r.first_wave, r.last_wave])).toEqual([
      [runs[0]!.id, 0, 7],
      [runs[1]!.id, 8, 15],
      [runs[2]!.id, 16, 19],
    ]);
    expect(report).toContain(`Ran in 3 workflow runs: [run ${runs[0]!.id}](`);
    for (const n of names) expect(w.emu.pullRequests(`acme/${n}`)).toHaveLength(1);
    // The first run's report says what it ran and that the fleet goes on; its check run is neutral, not green.
    const first = reportArtifact(w, runs[0]!.id);
    expect(first.manifest.summary).toMatchObject({ completed: 8, queued: 12 });
    expect(first.report).toContain('Waves 9–20 go on in a new run of the workflow');
    const checks = w.emu.checkRuns(CONTROL_REPO).map((c) => c.conclusion);
    expect(checks).toEqual(['neutral', 'neutral', 'success']);
  });
});

describe('a chain whose caller cannot be dispatched again', () => {
  let v: World;
  afterAll(() => v?.close());

  it('skips the later waves with a reason that says how to fix the caller; the waves it ran stand', async () => {
    // A caller copied before the fleet-continue input existed: GitHub refuses the unknown input with 422.
    const { template, ungated } = await import('./world.js');
    const old = ungated(template('fleet-dispatch.yml'))
      .replace(/ {6}fleet-continue:\n( {8}.*\n)+/, '')
      .replace(/ {6}continue-run: .*\n/, '');
    expect(old).not.toContain('fleet-continue');
    const deep = names.slice(0, 9);
    v = await startWorld({
      caller: old,
      fleetFile: {
        name: 'chain',
        forge: 'github',
        directive: 'Stamp.',
        run: 'echo x > STAMP',
        max_retries: 0,
        targets: deep.map((n, i) => ({ repo: `acme/${n}`, ...(i > 0 ? { depends_on: [deep[i - 1]!] } : {}) })),
      },
    });
    for (const n of deep) await v.emu.createRepo({ owner: 'acme', name: n });
    const { runId, s } = await dispatchFleet(v, { directive: 'Stamp.' });
    expect(s.conclusion).toBe('failure');
    expect(v.runner.runs.size).toBe(1);
    const { manifest } = reportArtifact(v, runId);
    expect(manifest.summary).toMatchObject({ completed: 8, skipped: 1, queued: 0 });
    const last = manifest.lanes.find((l) => l.lane === 'c09')!;
    expect(last).toMatchObject({ status: 'skipped', error: { class: 'no-result' } });
    expect(last.error!.message).toContain('the fleet could not continue in a new run of the workflow after wave 8: dispatching the next run failed (422');
    expect(last.error!.message).toContain('needs a workflow_dispatch input named fleet-continue');
    const report = s.jobs.find((j) => j.name === 'fleet / report')!;
    expect(report.annotations.map((a) => a.message).join('\n')).toContain('could not continue');
  });
});

describe('a continue-run that names a run Fleet must not trust', () => {
  let v: World;
  afterAll(() => v?.close());

  it('is refused by the plan job when that run of the same workflow came from a pull_request event', async () => {
    // A pull_request run runs the workflow file as the PR wrote it, and could have uploaded any fleet-chain it liked.
    v = await startWorld({ fleetFile: { name: 'chain', forge: 'github', directive: 'Stamp.', run: 'true', targets: [{ repo: 'acme/c01' }] } });
    await v.emu.createRepo({ owner: 'acme', name: 'c01' });
    const forged = await v.emu.addWorkflowRun({
      owner: 'acme',
      repo: 'control',
      path: '.github/workflows/fleet.yml',
      event: 'pull_request',
      jobs: [{ name: 'upload', status: 'completed', conclusion: 'success' }],
    });
    const { s } = await dispatchFleet(v, { directive: 'Stamp.', 'fleet-continue': String(forged.id) });
    const plan = s.jobs.find((j) => j.name === 'fleet / plan')!;
    expect(plan.conclusion).toBe('failure');
    expect(plan.annotations.map((a) => a.message).join('\n')).toContain(`input continue-run: run ${forged.id} was started by a pull_request event`);
    expect(s.jobs.filter((j) => / wave \d+ /.test(j.name) && j.conclusion === 'success')).toEqual([]);
  });
});
