/**
 * Runs and their attempts, as GitHub documents them: re-running
 * (https://docs.github.com/actions/how-tos/manage-workflow-runs/re-run-workflows-and-jobs),
 * cancelling, environments with required reviewers
 * (https://docs.github.com/actions/how-tos/deploy/configure-and-manage-deployments/review-deployments),
 * workflow concurrency
 * (https://docs.github.com/actions/how-tos/write-workflows/choose-when-workflows-run/control-workflow-concurrency),
 * scheduled runs, and reusable workflows called from another repository
 * (https://docs.github.com/actions/how-tos/reuse-automations/reuse-workflows) — driven through the
 * emulator's REST endpoints where a user would use them.
 */
import { getOctokit } from '@actions/github';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { repoWith, startActions, type Actions } from './helpers.js';

// Workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

let a: Actions | undefined;
afterEach(async () => {
  await a?.close();
  a = undefined;
});

const until = async (cond: () => boolean, what: string) => {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
};

function octokit(actions: Actions) {
  return getOctokit(actions.emu.token!, { baseUrl: actions.emu.url });
}

describe('re-running a run', () => {
  it('"Re-run failed jobs": the failed leg and its dependents run again in attempt 2; the rest keep their results and outputs', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `
on: workflow_dispatch
jobs:
  prep:
    runs-on: ubuntu-latest
    outputs: { stamp: "\${{ steps.s.outputs.stamp }}" }
    steps: [ { id: s, run: 'echo "stamp=attempt-\${{ github.run_attempt }}" >> "$GITHUB_OUTPUT"' } ]
  legs:
    needs: prep
    runs-on: ubuntu-latest
    strategy: { fail-fast: false, matrix: { n: [1, 2] } }
    steps:
      - run: |
          echo "leg \${{ matrix.n }} of attempt \${{ github.run_attempt }} sees \${{ needs.prep.outputs.stamp }}"
          if [ "\${{ matrix.n }}" = 2 ] && [ "\${{ github.run_attempt }}" = 1 ]; then exit 1; fi
  after:
    needs: legs
    runs-on: ubuntu-latest
    steps: [ { run: "echo after in attempt \${{ github.run_attempt }}" } ]
`,
    });
    const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' });
    const first = await a.runner.finish(run);
    expect(first.conclusion).toBe('failure');
    const gh = octokit(a);
    await gh.request('POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs', { owner: 'acme', repo: 'app', run_id: run.id });
    const second = await a.runner.finish(run);
    expect(second.conclusion).toBe('success');
    const byName = new Map(second.jobs.map((j) => [j.name, j]));
    expect(byName.get('prep')!.attempt).toBe(1);
    expect(byName.get('legs (1)')!.attempt).toBe(1);
    expect(byName.get('legs (2)')!.attempt).toBe(2);
    expect(byName.get('legs (2)')!.log).toContain('leg 2 of attempt 2 sees attempt-1');
    expect(byName.get('after')!.attempt).toBe(2);

    const latest = await gh.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs', { owner: 'acme', repo: 'app', run_id: run.id });
    expect(latest.data.jobs.map((j) => `${j.name}#${j.run_attempt}:${j.conclusion}`).sort()).toEqual([
      'after#2:success',
      'legs (1)#1:success',
      'legs (2)#2:success',
      'prep#1:success',
    ]);
    const all = await gh.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs', { owner: 'acme', repo: 'app', run_id: run.id, filter: 'all' });
    expect(all.data.total_count).toBe(6);
    const runView = await gh.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}', { owner: 'acme', repo: 'app', run_id: run.id });
    expect(runView.data.run_attempt).toBe(2);
    a.emu.assertNoViolations();
  });

  it('"Re-run all jobs" runs everything again in a new attempt; a run still in progress cannot be re-run', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `on: workflow_dispatch\njobs:\n  one: { runs-on: ubuntu-latest, steps: [ { run: "echo attempt \${{ github.run_attempt }}; sleep 0.5" } ] }\n`,
    });
    const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' });
    await expect(
      octokit(a).request('POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun', { owner: 'acme', repo: 'app', run_id: run.id }),
    ).rejects.toMatchObject({ status: 403 });
    await a.runner.finish(run);
    a.runner.rerunAll(run.id);
    const s = await a.runner.finish(run);
    expect(s.attempt).toBe(2);
    expect(s.jobs[0]!.log).toContain('attempt 2');
  });
});

describe('cancelling and losing a runner', () => {
  it('cancel stops running jobs; jobs not started are cancelled; the run concludes cancelled', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `
on: workflow_dispatch
jobs:
  long: { runs-on: ubuntu-latest, steps: [ { run: "echo begun; sleep 30" } ] }
  later: { needs: long, runs-on: ubuntu-latest, steps: [ { run: echo later } ] }
`,
    });
    const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' });
    await until(() => run.runningJobs().includes('long'), 'the job to start');
    await octokit(a).request('POST /repos/{owner}/{repo}/actions/runs/{run_id}/cancel', { owner: 'acme', repo: 'app', run_id: run.id });
    const s = await a.runner.finish(run);
    expect(s.conclusion).toBe('cancelled');
    expect(s.jobs.find((j) => j.name === 'long')!.conclusion).toBe('cancelled');
    expect(s.jobs.find((j) => j.name === 'later')).toBeUndefined();
  });

  it('a runner lost mid-job fails the job at once, with the annotation GitHub gives it', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `on: workflow_dispatch\njobs:\n  work: { runs-on: ubuntu-latest, steps: [ { run: "echo begun; sleep 30" }, { if: always(), run: echo cleanup } ] }\n`,
    });
    const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' });
    await until(() => run.runningJobs().includes('work'), 'the job to start');
    await new Promise((r) => setTimeout(r, 200));
    expect(run.killJob('work')).toBe(true);
    const s = await a.runner.finish(run);
    const job = s.jobs[0]!;
    expect(job.conclusion).toBe('failure');
    expect(job.log).not.toContain('cleanup');
    expect(job.annotations.map((x) => x.message)).toContain(
      'The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled.',
    );
  });
});

describe('environments with required reviewers', () => {
  const workflow = `
on: workflow_dispatch
jobs:
  gate:
    runs-on: ubuntu-latest
    environment: production
    steps: [ { run: echo deploying } ]
  after:
    needs: gate
    if: "!cancelled()"
    runs-on: ubuntu-latest
    steps: [ { run: "echo gate was \${{ needs.gate.result }}" } ]
`;
  it('the job waits; a reviewer approves it over REST and it runs', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', { '.github/workflows/w.yml': workflow });
    a.emu.addToken('ghp_alice_reviewer_token_0123456789abcdef', { login: 'alice', type: 'pat' });
    a.runner.setEnvironment('acme/app', 'production', { reviewers: ['alice'] });
    const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' });
    await until(() => run.waitingEnvironments().includes('production'), 'the gate');
    const alice = getOctokit('ghp_alice_reviewer_token_0123456789abcdef', { baseUrl: a.emu.url });
    const pending = await alice.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments', { owner: 'acme', repo: 'app', run_id: run.id });
    expect(pending.data[0]!.environment.name).toBe('production');
    expect(pending.data[0]!.current_user_can_approve).toBe(true);
    expect(a.emu.workflowRun(run.id)!.jobs.find((j) => j.name === 'gate')!.status).toBe('waiting');
    await alice.request('POST /repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments', {
      owner: 'acme',
      repo: 'app',
      run_id: run.id,
      environment_ids: [Number(pending.data[0]!.environment.id)],
      state: 'approved',
      comment: 'ship it',
    });
    const s = await a.runner.finish(run);
    expect(s.conclusion).toBe('success');
    expect(s.jobs.find((j) => j.name === 'gate')!.log).toContain('deploying');
  });

  it('a rejection fails the job without running it; the review is listed by GET …/approvals', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', { '.github/workflows/w.yml': workflow });
    a.runner.setEnvironment('acme/app', 'production', { reviewers: ['alice'] });
    const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' });
    await until(() => run.waitingEnvironments().includes('production'), 'the gate');
    a.runner.review(run.id, 'production', 'rejected', 'alice', 'not on a Friday');
    const s = await a.runner.finish(run);
    expect(s.conclusion).toBe('failure');
    expect(s.jobs.find((j) => j.name === 'after')!.log).toContain('gate was failure');
    const reviews = await octokit(a).request('GET /repos/{owner}/{repo}/actions/runs/{run_id}/approvals', { owner: 'acme', repo: 'app', run_id: run.id });
    expect(reviews.data).toMatchObject([{ state: 'rejected', comment: 'not on a Friday', user: { login: 'alice' } }]);
  });

  it("left waiting, the job fails after 30 days of the runner's clock", async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', { '.github/workflows/w.yml': workflow });
    a.runner.setEnvironment('acme/app', 'production', { reviewers: ['alice'] });
    const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' });
    await until(() => run.waitingEnvironments().includes('production'), 'the gate');
    a.runner.clock.advance(29 * 24 * 3_600_000);
    await new Promise((r) => setTimeout(r, 150));
    expect(run.waitingEnvironments()).toContain('production');
    a.runner.clock.advance(2 * 24 * 3_600_000);
    const s = await a.runner.finish(run);
    expect(s.conclusion).toBe('failure');
  });
});

describe('GET …/environments/{name} (https://docs.github.com/rest/deployments/environments#get-an-environment)', () => {
  it("answers from the runner's environments in GitHub's shape: required reviewers as a protection rule, 404 for a missing one", async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': 'on: workflow_dispatch\njobs:\n  j: { runs-on: ubuntu-latest, steps: [ { run: "true" } ] }\n',
    });
    a.runner.setEnvironment('acme/app', 'production', { reviewers: ['alice'] });
    a.runner.setEnvironment('acme/app', 'staging', { reviewers: [] });
    const get = (name: string) =>
      octokit(a!).request('GET /repos/{owner}/{repo}/environments/{environment_name}', { owner: 'acme', repo: 'app', environment_name: name });
    const prod = (await get('production')).data;
    expect(prod).toMatchObject({
      name: 'production',
      protection_rules: [{ type: 'required_reviewers', prevent_self_review: false, reviewers: [{ type: 'User', reviewer: { login: 'alice' } }] }],
    });
    expect((await get('staging')).data.protection_rules).toEqual([]);
    await expect(get('nowhere')).rejects.toMatchObject({ status: 404 });
    a.emu.assertNoViolations();
  });

  it('a job that names a missing environment creates it, with no rules; a GITHUB_TOKEN reads it with actions: read only', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `
on: workflow_dispatch
jobs:
  gate:
    runs-on: ubuntu-latest
    environment: fresh
    steps: [ { run: echo ran } ]
  read:
    needs: gate
    runs-on: ubuntu-latest
    permissions: { actions: read }
    steps:
      - run: |
          curl -sS -o /dev/null -w "%{http_code}\\n" -H "Authorization: Bearer $T" "\${{ github.api_url }}/repos/\${{ github.repository }}/environments/fresh"
        env: { T: "\${{ github.token }}" }
  denied:
    needs: gate
    runs-on: ubuntu-latest
    permissions: { contents: read }
    steps:
      - run: |
          curl -sS -o /dev/null -w "%{http_code}\\n" -H "Authorization: Bearer $T" "\${{ github.api_url }}/repos/\${{ github.repository }}/environments/fresh"
        env: { T: "\${{ github.token }}" }
`,
    });
    const s = await a.runner.finish(await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' }));
    expect(s.jobs.find((j) => j.name === 'gate')!.log).toContain('ran');
    expect(s.jobs.find((j) => j.name === 'read')!.log).toMatch(/^200$/m);
    expect(s.jobs.find((j) => j.name === 'denied')!.log).toMatch(/^403$/m);
    const fresh = await octokit(a).request('GET /repos/{owner}/{repo}/environments/{environment_name}', {
      owner: 'acme',
      repo: 'app',
      environment_name: 'fresh',
    });
    expect(fresh.data.protection_rules).toEqual([]);
  });
});

describe('concurrency and schedules', () => {
  it('one run per group: a newer run waits, and replaces an older waiting one', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/sweep.yml': `
on:
  schedule: [ { cron: "17 6 * * 1" } ]
  workflow_dispatch:
concurrency: { group: sweep, cancel-in-progress: false }
jobs:
  one: { runs-on: ubuntu-latest, steps: [ { run: "echo \${{ github.event_name }} \${{ github.event.schedule }}; sleep 3" } ] }
`,
    });
    const first = await a.runner.schedule({ repo: 'acme/app', workflow: '.github/workflows/sweep.yml' });
    const second = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/sweep.yml' });
    const third = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/sweep.yml' });
    const [s1, s2, s3] = await Promise.all([a.runner.finish(first), a.runner.finish(second), a.runner.finish(third)]);
    expect(s1.jobs[0]!.log).toContain('schedule 17 6 * * 1');
    expect(s2.conclusion).toBe('cancelled');
    expect(s2.startupFailure).toContain("Canceling since a higher priority waiting request for 'sweep' exists");
    expect(s3.conclusion).toBe('success');
    expect(a.emu.workflowRun(second.id)!.conclusion).toBe('cancelled');
  });
});

describe("concurrency of a called workflow (taken by the calling job, in the caller's run)", () => {
  const called = (queue = '') => `
on:
  workflow_call:
    inputs: { lane: { type: string, default: main } }
concurrency:
  group: lib-\${{ github.repository }}-\${{ inputs.lane }}
  cancel-in-progress: false
${queue}
jobs:
  hold:
    runs-on: ubuntu-latest
    environment: hold
    steps: [ { run: "echo held by run \${{ github.run_id }}" } ]
`;
  const caller = (top = '') => `
on: workflow_dispatch
${top}
jobs:
  call: { uses: acme/shared/.github/workflows/lib.yml@main }
`;

  async function world(queue = '', top = '') {
    a = await startActions();
    await repoWith(a.emu, 'acme/shared', { '.github/workflows/lib.yml': called(queue) });
    await repoWith(a.emu, 'acme/app', { '.github/workflows/w.yml': caller(top) });
    a.runner.setEnvironment('acme/app', 'hold', { reviewers: ['alice'] });
    return a;
  }
  const dispatch = () => a!.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' });
  const jobsOf = (id: number) => a!.emu.workflowRun(id)!.jobs.map((j) => j.name);

  it("a second run's call waits until the first run's called jobs are done; the first is never cancelled", async () => {
    await world();
    const first = await dispatch();
    await until(() => first.waitingEnvironments().includes('hold'), 'the first run at its gate');
    const second = await dispatch();
    await until(() => a!.runner.waitingForConcurrency(second.id).includes('lib-acme/app-main'), 'the second run in the queue');
    expect(jobsOf(second.id)).toEqual([]);
    a!.runner.review(first.id, 'hold', 'approved', 'alice');
    expect((await a!.runner.finish(first)).conclusion).toBe('success');
    await until(() => second.waitingEnvironments().includes('hold'), 'the second run at its gate');
    a!.runner.review(second.id, 'hold', 'approved', 'alice');
    expect((await a!.runner.finish(second)).conclusion).toBe('success');
  });

  it('queue: single (the default): a third run replaces the waiting second; queue: max keeps both, in order', async () => {
    for (const queue of ['', '  queue: max']) {
      await world(queue);
      const first = await dispatch();
      await until(() => first.waitingEnvironments().includes('hold'), 'the first run at its gate');
      // Waiters are served in the order they reached the group (not of dispatch): the second is in the queue first.
      const second = await dispatch();
      await until(() => a!.runner.waitingForConcurrency(second.id).length > 0, 'the second run in the queue');
      const third = await dispatch();
      await until(
        () => a!.runner.waitingForConcurrency(third.id).length > 0 || a!.emu.workflowRun(second.id)!.conclusion === 'cancelled',
        'the third run in the queue',
      );
      a!.runner.review(first.id, 'hold', 'approved', 'alice');
      await a!.runner.finish(first);
      if (!queue) {
        await a!.runner.finish(second);
        const job = a!.emu.workflowRun(second.id)!.jobs.find((j) => j.name === 'call')!;
        expect(job.conclusion).toBe('cancelled');
        const notes = await octokit(a!).request('GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations', {
          owner: 'acme',
          repo: 'app',
          check_run_id: job.id,
        });
        expect(notes.data[0]!.message).toContain("Canceling since a higher priority waiting request for 'lib-acme/app-main' exists");
      } else {
        await until(() => second.waitingEnvironments().includes('hold'), 'the second run at its gate');
        expect(jobsOf(third.id)).toEqual([]);
        a!.runner.review(second.id, 'hold', 'approved', 'alice');
        expect((await a!.runner.finish(second)).conclusion).toBe('success');
      }
      await until(() => third.waitingEnvironments().includes('hold'), 'the third run at its gate');
      a!.runner.review(third.id, 'hold', 'approved', 'alice');
      expect((await a!.runner.finish(third)).conclusion).toBe('success');
      await a!.close();
      a = undefined;
    }
  });

  it('the caller holding the same group at its top level: the call is cancelled as a deadlock', async () => {
    await world('', 'concurrency: { group: "lib-${{ github.repository }}-main" }');
    const s = await a!.runner.finish(await dispatch());
    expect(s.conclusion).toBe('failure');
    const job = a!.emu.workflowRun(s.id)!.jobs.find((j) => j.name === 'call')!;
    const notes = await octokit(a!).request('GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations', {
      owner: 'acme',
      repo: 'app',
      check_run_id: job.id,
    });
    expect(notes.data[0]!.message).toBe(
      "Canceling since a deadlock was detected for concurrency group: 'lib-acme/app-main' between a top level workflow and 'call'",
    );
  });
});

describe('a reusable workflow called from another repository', () => {
  it('typed inputs with defaults, declared secrets, outputs mapped from its jobs; its jobs are named "caller / job"', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/shared', {
      '.github/workflows/build.yml': `
on:
  workflow_call:
    inputs:
      target: { type: string, required: true }
      retries: { type: number, default: 3 }
      verbose: { type: boolean, default: false }
    secrets:
      deploy-key: { required: true }
    outputs:
      artifact: { value: "\${{ jobs.make.outputs.artifact }}" }
jobs:
  make:
    runs-on: ubuntu-latest
    outputs: { artifact: "\${{ steps.m.outputs.artifact }}" }
    steps:
      - id: m
        run: |
          echo "target=\${{ inputs.target }} retries=\${{ inputs.retries }} verbose=\${{ inputs.verbose }} key=\${{ secrets.deploy-key }}"
          echo "repository=\${{ github.repository }} workflow_repository=\${{ job.workflow_repository }}"
          echo "artifact=\${{ inputs.target }}.tgz" >> "$GITHUB_OUTPUT"
`,
    });
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `
on: workflow_dispatch
jobs:
  build:
    uses: acme/shared/.github/workflows/build.yml@main
    with: { target: web, verbose: true }
    secrets: { deploy-key: "\${{ secrets.DEPLOY_KEY }}" }
  use:
    needs: build
    runs-on: ubuntu-latest
    steps: [ { run: "echo got \${{ needs.build.outputs.artifact }}" } ]
`,
    });
    a.runner.setSecret('acme/app', 'DEPLOY_KEY', 'k3y-s3cr3t-value');
    const s = await a.runner.finish(await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' }));
    expect(s.conclusion).toBe('success');
    const make = s.jobs.find((j) => j.name === 'build / make')!;
    expect(make.log).toContain('target=web retries=3 verbose=true key=***');
    expect(make.log).toContain('repository=acme/app workflow_repository=acme/shared');
    expect(s.jobs.find((j) => j.name === 'use')!.log).toContain('got web.tgz');
  });
});
