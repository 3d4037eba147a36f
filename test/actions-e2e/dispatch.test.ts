/**
 * The real chain, end to end: the dispatch template → Fleet's reusable
 * workflow → action.yml → dist/ → the GitHub emulator, through the workflow
 * runner. What Fleet reports (check run, job summaries, the report artifact)
 * is checked against what the emulator holds (branches, PRs, CI), and
 * "Re-run failed jobs" after the cause is fixed finishes the fleet without
 * running completed lanes again or opening a second PR.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../support/actions-runner/index.js';
import { ci } from '../support/github-emulator/index.js';
import { artifactsOf, CONTROL_REPO, explain, PAT, reportArtifact, startWorld, type World } from './world.js';

// Whole workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World;
let runId: number;
let first: RunSummary;
const SERVICES = ['svc-1', 'svc-2', 'svc-3', 'svc-4', 'svc-5', 'svc-6', 'svc-7'];

beforeAll(async () => {
  w = await startWorld({
    fleetFile: {
      name: 'codeowners',
      forge: 'github',
      directive: 'Add CODEOWNERS.',
      // flaky is not ready until someone adds READY: its lane fails, then passes on the re-run.
      run: 'if [ "$FLEET_LANE" = flaky ] && [ ! -f READY ]; then echo "flaky is not ready" >&2; exit 3; fi; echo "* @acme/$FLEET_LANE" > CODEOWNERS',
      max_retries: 0,
      ci: { wait: true, timeout_minutes: 1 },
      targets: [
        { repo: 'acme/core' },
        { repo: 'acme/api', depends_on: ['core'] },
        { repo: 'acme/web', depends_on: ['api'] },
        ...SERVICES.map((s) => ({ repo: `acme/${s}` })),
        { repo: 'acme/flaky' },
        { repo: 'acme/legacy' },
      ],
    },
  });
  for (const name of ['core', 'api', 'web', 'flaky', ...SERVICES]) await w.emu.createRepo({ owner: 'acme', name });
  await w.emu.createRepo({ owner: 'acme', name: 'legacy', archived: true });
  w.emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['test'])));
  const run = await w.runner.dispatch({
    repo: CONTROL_REPO,
    workflow: '.github/workflows/fleet.yml',
    inputs: { directive: 'Add CODEOWNERS.', 'dry-run': false },
  });
  runId = run.id;
  first = await w.runner.finish(run);
});
afterAll(() => w?.close());

describe('a dispatched fleet of 12 targets', () => {
  it('runs plan, three waves of shards and the report as the workflow says', () => {
    const names = first.jobs.map((j) => j.name);
    expect(names).toContain('fleet / plan');
    expect(names).toContain('fleet / report');
    // Nine lanes in wave 1 on max_parallel (8) legs, one round (core/legs.ts): the first leg runs core and flaky.
    expect(names.filter((n) => n.startsWith('fleet / wave 1 ('))).toHaveLength(8);
    expect(names.filter((n) => n.startsWith('fleet / wave 2 ('))).toHaveLength(1);
    expect(names.filter((n) => n.startsWith('fleet / wave 3 ('))).toHaveLength(1);
    // The shard holding flaky failed its job, so "Re-run failed jobs" has something to re-run; the run fails.
    expect(first.conclusion, explain(first)).toBe('failure');
    expect(first.jobs.filter((j) => j.conclusion === 'failure').map((j) => j.name)).toEqual([expect.stringMatching(/^fleet \/ wave 1 \(/), 'fleet / report']);
  });

  it('the report artifact agrees with the emulator: every completed lane has its branch and one open PR whose head is the lane commit, CI green', async () => {
    const { manifest } = reportArtifact(w, runId);
    expect(manifest.summary).toMatchObject({ total: 12, completed: 10, failed: 1, excluded: 1 });
    for (const lane of manifest.lanes.filter((l) => l.status === 'completed')) {
      const repo = `acme/${lane.lane}`;
      expect(await w.emu.branchSha(repo, lane.branch!)).toBe(lane.commit);
      const prs = w.emu.pullRequests(repo);
      expect(prs).toHaveLength(1);
      expect(prs[0]).toMatchObject({ number: lane.pr_number, headRef: lane.branch, headSha: lane.commit, state: 'open' });
      expect(lane.ci_conclusion).toBe('success');
      expect(
        w.emu
          .checkRuns(repo)
          .filter((c) => c.head_sha === lane.commit)
          .map((c) => c.conclusion),
      ).toEqual(['success']);
    }
    const flaky = manifest.lanes.find((l) => l.lane === 'flaky')!;
    expect(flaky).toMatchObject({ status: 'failed', error: { class: 'directive-failed' } });
    expect(w.emu.pullRequests('acme/flaky')).toHaveLength(0);
    expect(manifest.excluded).toEqual([expect.objectContaining({ lane: 'legacy', reason: 'archived' })]);
    // The chain ran in order: web's lane started after api's ended, which started after core's.
    const at = (l: string) => manifest.lanes.find((x) => x.lane === l)!;
    expect(Date.parse(at('api').started_at!)).toBeGreaterThanOrEqual(Date.parse(at('core').ended_at!));
    expect(Date.parse(at('web').started_at!)).toBeGreaterThanOrEqual(Date.parse(at('api').ended_at!));
  });

  it('the check run on the calling commit and the job summaries say the same', () => {
    const checks = w.emu.checkRuns(CONTROL_REPO);
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({
      name: 'Fleet: codeowners',
      conclusion: 'failure',
      output: { title: '10 completed, 1 failed, 0 skipped, 1 excluded of 12' },
    });
    const { report } = reportArtifact(w, runId);
    const summary = first.jobs.find((j) => j.name === 'fleet / report')!.summary.trim();
    expect(summary).toBe(report.trim());
    expect(checks[0]!.output.summary!.trim()).toBe(report.trim());
    // One annotation on the check run per lane that needs action, on the fleet file: flaky failed.
    expect(checks[0]!.annotations).toEqual([expect.objectContaining({ path: 'fleet.yml', annotation_level: 'failure', title: 'flaky (acme/flaky): failed' })]);
    // Each wave leg's summary shows its lanes' outcomes.
    const leg = first.jobs.find((j) => j.name === 'fleet / wave 2 (w1-s0)')!.summary;
    expect(leg).toContain('## Fleet shard w1-s0');
    expect(leg).toMatch(/\| `api` \| `acme\/api` \| completed \| `fleet\/codeowners\/api` · \[#\d+\]/);
    // The approver reads the plan in the plan job's summary.
    const plan = first.jobs.find((j) => j.name === 'fleet / plan')!.summary;
    expect(plan).toContain('mermaid');
    expect(plan).toContain('### Pull requests');
    expect(plan).toContain('- `acme/web` ← `fleet/codeowners/web` (lane `web`, wave 3)');
    expect(plan).toMatch(/legacy.*archived/s);
  });

  it('uses no action that targets Node.js 20 (GitHub forces those onto Node 24 with a warning on every job)', () => {
    const warnings = first.jobs.flatMap((j) => j.annotations.map((a) => a.message)).filter((m) => m.includes('Node.js 20'));
    expect(warnings).toEqual([]);
  });

  it('no token reaches a log, a job summary, an artifact or a PR body', () => {
    const texts = [...first.jobs.flatMap((j) => [j.log, j.summary]), reportArtifact(w, runId).report, JSON.stringify(reportArtifact(w, runId).manifest)];
    for (const repo of ['core', 'api', 'web']) texts.push(...w.emu.pullRequests(`acme/${repo}`).map((p) => `${p.title}\n${p.body}`));
    const encoded = [PAT, Buffer.from(PAT).toString('base64'), Buffer.from(`x-access-token:${PAT}`).toString('base64'), encodeURIComponent(PAT)];
    for (const text of texts) for (const secret of encoded) expect(text).not.toContain(secret);
  });

  it('"Re-run failed jobs" after the cause is fixed: the failed lane completes in attempt 2, completed lanes are kept, no second PR', async () => {
    await w.emu.commit({ owner: 'acme', repo: 'flaky', branch: 'main', files: { READY: 'yes\n' } });
    const prsBefore = new Map(['core', 'api', 'web', ...SERVICES].map((r) => [r, w.emu.pullRequests(`acme/${r}`).map((p) => p.number)]));
    w.runner.rerunFailed(runId);
    const second = await w.runner.finish(w.runner.runs.get(runId)!);
    expect(second.conclusion, explain(second)).toBe('success');
    expect(second.attempt).toBe(2);
    const { manifest } = reportArtifact(w, runId, 2);
    expect(manifest.summary).toMatchObject({ total: 12, completed: 11, failed: 0, excluded: 1 });
    expect(w.emu.pullRequests('acme/flaky')).toHaveLength(1);
    for (const [repo, numbers] of prsBefore) expect(w.emu.pullRequests(`acme/${repo}`).map((p) => p.number)).toEqual(numbers);
    // Only flaky's shard and the jobs after it ran again; the lanes of later waves were read back, not run.
    const rerun = second.jobs.filter((j) => j.attempt === 2).map((j) => j.name);
    expect(rerun).toEqual(expect.arrayContaining(['fleet / report', 'fleet / wave 2 (w1-s0)', 'fleet / wave 3 (w2-s0)']));
    expect(rerun.filter((n) => n.startsWith('fleet / wave 1'))).toHaveLength(1);
    expect(second.jobs.find((j) => j.name === 'fleet / wave 2 (w1-s0)')!.log).toContain('api: completed in an earlier attempt of this run; kept');
    // Attempt 2 uploaded its own artifacts beside attempt 1's, never over them.
    const names = [...artifactsOf(w, runId).keys()];
    expect(names).toEqual(expect.arrayContaining(['fleet-plan.a1', 'fleet-lane-flaky.a1', 'fleet-lane-flaky.a2', 'fleet-report.a1', 'fleet-report.a2']));
    expect(names).not.toContain('fleet-plan.a2');
  });
});
