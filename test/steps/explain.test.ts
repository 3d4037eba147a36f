/**
 * Why a lane of an Actions fleet left no result, read from the run itself: the run's jobs, their annotations and
 * the approval gate's review, served by the GitHub emulator and read by the action's own reader (runJobs).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJobs } from '../../src/github/actions-run.js';
import { githubClient } from '../../src/github/setup.js';
import type { RunJob } from '../../src/ports.js';
import { jobOfShard, MissingResultExplainer } from '../../src/steps/explain.js';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import type { RunReviewRecord } from '../support/github-emulator/actions-runs.js';

const TOKEN = 'ghs_ExplainMissingResults0123456789abcd';
let emu: Emulator;
/** Reviews of the approval gate per run, as the runner that holds them answers the emulator. */
const reviews = new Map<number, RunReviewRecord[]>();

beforeAll(async () => {
  emu = await startEmulator({ token: TOKEN });
  await emu.createRepo({ owner: 'acme', name: 'control', files: { 'fleet.yml': '# here\n' } });
  const none = () => {
    throw new Error('not part of these tests');
  };
  emu.onRunControl({
    rerun: none,
    cancel: none,
    dispatch: none,
    pendingDeployments: () => [],
    review: none,
    reviews: (id) => reviews.get(id) ?? [],
    environment: () => undefined,
  });
});
afterAll(async () => {
  await emu.close();
});

type JobSpec = {
  name: string;
  status?: 'queued' | 'in_progress' | 'completed';
  conclusion?: 'success' | 'failure' | 'cancelled' | 'timed_out' | null;
  notes?: string[];
};

/** A run of acme/control with these jobs (and their annotations); the explainer reads it over REST. */
async function explainerFor(jobs: JobSpec[], rejected?: RunReviewRecord[], token = TOKEN) {
  const run = await emu.addWorkflowRun({
    owner: 'acme',
    repo: 'control',
    name: 'Fleet',
    status: 'in_progress',
    conclusion: null,
    jobs: jobs.map(({ notes: _notes, ...j }) => j),
  });
  jobs.forEach((j, i) => {
    if (j.notes)
      emu.setJobAnnotations(
        run.jobIds[i]!,
        j.notes.map((message) => ({ level: 'error' as const, message })),
      );
  });
  if (rejected) reviews.set(run.id, rejected);
  const api = githubClient({ GITHUB_API_URL: emu.url, FLEET_GITHUB_PACING_MS: '0' }, token);
  if ('problem' in api) throw new Error(api.problem);
  const url = (i: number) => `${emu.url}/acme/control/actions/runs/${run.id}/job/${run.jobIds[i]}`;
  return { explainer: new MissingResultExplainer(runJobs(api, { owner: 'acme', repo: 'control' }, run.id)), url, run };
}

describe('jobOfShard', () => {
  const job = (name: string): RunJob => ({ name, status: 'completed', conclusion: 'success', html_url: null });

  it('takes the matrix leg named after the shard, not one whose shard id only starts the same', () => {
    const jobs = [job('fleet / wave 1 (w0-s10)'), job('fleet / wave 1 (w0-s1)')];
    expect(jobOfShard(jobs, 'w0-s1')?.name).toBe('fleet / wave 1 (w0-s1)');
    expect(jobOfShard(jobs, 'w0-s10')?.name).toBe('fleet / wave 1 (w0-s10)');
  });

  it('prefers a leg that ends with the shard over one that only mentions it', () => {
    const jobs = [job('fleet / wave 1 (w0-s2) / post'), job('fleet / wave 1 (w0-s2)')];
    expect(jobOfShard(jobs, 'w0-s2')?.name).toBe('fleet / wave 1 (w0-s2)');
  });

  it('falls back to a leg that mentions the shard in parentheses, or ends with its bare id', () => {
    expect(jobOfShard([job('other'), job('fleet / wave 1 (w0-s2) / post')], 'w0-s2')?.name).toBe('fleet / wave 1 (w0-s2) / post');
    expect(jobOfShard([job('other'), job('lane w0-s2')], 'w0-s2')?.name).toBe('lane w0-s2');
    expect(jobOfShard([job('lane w0-s2 done'), job('other')], 'w0-s2')).toBeUndefined();
  });
});

describe('MissingResultExplainer', () => {
  it('a job GitHub killed at its timeout-minutes: no-result, with the minutes from its annotation and a link', async () => {
    const { explainer, url } = await explainerFor([
      { name: 'fleet / plan', conclusion: 'success' },
      {
        name: 'fleet / wave 1 (w0-s1)',
        conclusion: 'failure',
        notes: ['The job running on runner GitHub Actions 3 has exceeded the maximum execution time of 45 minutes.'],
      },
    ]);
    expect(await explainer.explain('w0-s1')).toEqual({
      status: 'failed',
      error: {
        class: 'no-result',
        message: `job "fleet / wave 1 (w0-s1)" timed out after 45 minutes (the wave job's timeout-minutes) before the lane left a result (${url(1)})`,
      },
    });
  });

  it('a job concluded timed_out without the annotation: no-result, without inventing the minutes', async () => {
    const { explainer, url } = await explainerFor([{ name: 'fleet / wave 1 (w0-s1)', conclusion: 'timed_out' }]);
    expect(await explainer.explain('w0-s1')).toEqual({
      status: 'failed',
      error: { class: 'no-result', message: `job "fleet / wave 1 (w0-s1)" timed out before the lane left a result (${url(0)})` },
    });
  });

  it("a job whose runner went away: lane-crashed, quoting GitHub's annotation", async () => {
    const lost = 'The runner has received a shutdown signal. This can happen when the runner service is stopped.';
    const { explainer, url } = await explainerFor([
      { name: 'fleet / wave 1 (w0-s1)', conclusion: 'failure', notes: ['Process completed with exit code 1.', lost] },
    ]);
    expect(await explainer.explain('w0-s1')).toEqual({
      status: 'failed',
      error: { class: 'lane-crashed', message: `job "fleet / wave 1 (w0-s1)" lost its runner before the lane left a result: ${lost} (${url(0)})` },
    });
  });

  it('a cancelled job: cancelled', async () => {
    const { explainer, url } = await explainerFor([{ name: 'fleet / wave 1 (w0-s1)', conclusion: 'cancelled' }]);
    expect(await explainer.explain('w0-s1')).toEqual({
      status: 'failed',
      error: { class: 'cancelled', message: `job "fleet / wave 1 (w0-s1)" was cancelled before the lane left a result (${url(0)})` },
    });
  });

  it('a job still running: no-result, saying it is still running', async () => {
    const { explainer, url } = await explainerFor([{ name: 'fleet / wave 1 (w0-s1)', status: 'in_progress', conclusion: null }]);
    expect(await explainer.explain('w0-s1')).toEqual({
      status: 'failed',
      error: { class: 'no-result', message: `job "fleet / wave 1 (w0-s1)" is still in_progress (${url(0)})` },
    });
  });

  it('a job that failed otherwise: no-result, with its conclusion and its first annotation', async () => {
    const { explainer, url } = await explainerFor([
      { name: 'fleet / wave 1 (w0-s1)', conclusion: 'failure', notes: ['Unable to download artifact', 'second note'] },
      { name: 'fleet / wave 1 (w0-s2)', conclusion: 'failure' },
    ]);
    expect(await explainer.explain('w0-s1')).toEqual({
      status: 'failed',
      error: {
        class: 'no-result',
        message: `job "fleet / wave 1 (w0-s1)" ended failure before uploading the lane result: Unable to download artifact (${url(0)})`,
      },
    });
    expect((await explainer.explain('w0-s2')).error.message).toBe(`job "fleet / wave 1 (w0-s2)" ended failure before uploading the lane result (${url(1)})`);
  });

  it('a successful job is not asked for annotations: what it says is not why a lane is missing', async () => {
    const { explainer, url } = await explainerFor([
      { name: 'fleet / wave 1 (w0-s1)', conclusion: 'success', notes: ['exceeded the maximum execution time of 5 minutes'] },
    ]);
    const asked = () => emu.find({ route: '/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations' }).length;
    const before = asked();
    expect(await explainer.explain('w0-s1')).toEqual({
      status: 'failed',
      error: { class: 'no-result', message: `job "fleet / wave 1 (w0-s1)" ended success before uploading the lane result (${url(0)})` },
    });
    expect(asked()).toBe(before);
  });

  it('a token that may not read annotations still explains the job, from its conclusion alone', async () => {
    const noChecks = 'ghs_RunTokenWithoutChecksRead0123456789';
    emu.addToken(noChecks, { login: 'github-actions[bot]', scopes: { actions: 'read', contents: 'read' } });
    const { explainer, url } = await explainerFor(
      [{ name: 'fleet / wave 1 (w0-s1)', conclusion: 'failure', notes: ['Unable to download artifact'] }],
      undefined,
      noChecks,
    );
    expect(await explainer.explain('w0-s1')).toEqual({
      status: 'failed',
      error: { class: 'no-result', message: `job "fleet / wave 1 (w0-s1)" ended failure before uploading the lane result (${url(0)})` },
    });
  });

  it("reads the run's jobs once, and each job's annotations once, however many lanes it explains", async () => {
    const { explainer } = await explainerFor([{ name: 'fleet / wave 1 (w0-s1)', conclusion: 'failure', notes: ['boom'] }]);
    const jobsRoute = '/repos/{owner}/{repo}/actions/runs/{run_id}/jobs';
    const notesRoute = '/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations';
    const before = { jobs: emu.find({ route: jobsRoute }).length, notes: emu.find({ route: notesRoute }).length };
    for (let i = 0; i < 3; i++) expect((await explainer.explain('w0-s1')).error.message).toContain(': boom');
    expect(emu.find({ route: jobsRoute }).length - before.jobs).toBe(1);
    expect(emu.find({ route: notesRoute }).length - before.notes).toBe(1);
  });

  it('a shard no job ran: no-result naming the shard (a lane without a shard says so too)', async () => {
    const { explainer } = await explainerFor([{ name: 'fleet / wave 1 (w0-s1)', conclusion: 'success' }]);
    expect(await explainer.explain('w1-s0')).toEqual({
      status: 'failed',
      error: { class: 'no-result', message: 'no job ran shard w1-s0 (its wave job was skipped or never started)' },
    });
    expect((await explainer.explain(undefined)).error.message).toBe('no job ran shard ? (its wave job was skipped or never started)');
  });

  it('a plan rejected at the approval gate: every lane skipped as cancelled, naming the environment, reviewer and comment', async () => {
    const { explainer } = await explainerFor(
      [{ name: 'fleet / plan', conclusion: 'success' }],
      [
        { state: 'approved', comment: 'fine by me', environments: [{ id: 1, name: 'staging' }], reviewer: 'alice' },
        { state: 'rejected', comment: 'not this week', environments: [{ id: 2, name: 'fleet-approval' }], reviewer: 'bob' },
      ],
    );
    const want = {
      status: 'skipped',
      error: { class: 'cancelled', message: 'the plan was rejected at the approval gate (environment fleet-approval) by bob: "not this week"; no lane ran' },
    };
    expect(await explainer.explain('w0-s1')).toEqual(want);
    expect(await explainer.explain('w0-s2')).toEqual(want);
  });

  it('a rejection without a comment ends after the reviewer', async () => {
    const { explainer } = await explainerFor([], [{ state: 'rejected', comment: '', environments: [{ id: 2, name: 'fleet-approval' }], reviewer: 'bob' }]);
    expect((await explainer.explain('w0-s1')).error.message).toBe(
      'the plan was rejected at the approval gate (environment fleet-approval) by bob; no lane ran',
    );
  });
});
