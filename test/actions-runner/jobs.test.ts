/**
 * Jobs as GitHub schedules them: `needs` and `if` with the status functions
 * (https://docs.github.com/actions/reference/workflows-and-actions/expressions#status-check-functions),
 * matrices with fail-fast and max-parallel, timeout-minutes on the runner's
 * clock, and the GITHUB_TOKEN each job gets with its `permissions`
 * (https://docs.github.com/actions/reference/security/secure-use#github_token-permissions).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WorkflowFileError } from '../support/actions-runner/index.js';
import { repoWith, startActions, type Actions } from './helpers.js';

// Workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

let a: Actions | undefined;
afterEach(async () => {
  await a?.close();
  a = undefined;
});

async function runWorkflow(workflow: string, opts: { inputs?: Record<string, string | boolean>; files?: Record<string, string> } = {}) {
  a ??= await startActions();
  await repoWith(a.emu, 'acme/app', { '.github/workflows/w.yml': workflow, ...opts.files });
  const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml', ...(opts.inputs ? { inputs: opts.inputs } : {}) });
  const s = await a.runner.finish(run);
  const job = (name: string) => s.jobs.find((j) => j.name === name);
  return { run, s, job };
}

describe('needs and if', () => {
  it('a failed job skips its dependents unless they ask for failure() or always(); success() is the default', async () => {
    const { s, job } = await runWorkflow(`
on: workflow_dispatch
jobs:
  build: { runs-on: ubuntu-latest, steps: [ { run: exit 1 } ] }
  deploy: { needs: build, runs-on: ubuntu-latest, steps: [ { run: echo deploy } ] }
  after-deploy: { needs: deploy, if: always(), runs-on: ubuntu-latest, steps: [ { run: "echo deploy was \${{ needs.deploy.result }}" } ] }
  on-failure: { needs: build, if: failure(), runs-on: ubuntu-latest, steps: [ { run: echo cleaning up } ] }
  not-cancelled: { needs: build, if: "!cancelled()", runs-on: ubuntu-latest, steps: [ { run: "echo build was \${{ needs.build.result }}" } ] }
`);
    expect(s.conclusion).toBe('failure');
    expect(job('deploy')).toBeUndefined();
    expect(job('after-deploy')!.log).toContain('deploy was skipped');
    expect(job('on-failure')!.log).toContain('cleaning up');
    expect(job('not-cancelled')!.log).toContain('build was failure');
    // Skipped jobs are listed by the jobs API, as on GitHub.
    const listed = a!.emu.workflowRun(s.id)!.jobs.map((j) => [j.name, j.conclusion]);
    expect(listed).toContainEqual(['deploy', 'skipped']);
  });

  it('a job whose need was skipped is skipped too (success() needs every need to have succeeded)', async () => {
    const { job } = await runWorkflow(`
on: workflow_dispatch
jobs:
  maybe: { if: "\${{ false }}", runs-on: ubuntu-latest, steps: [ { run: echo no } ] }
  next: { needs: maybe, runs-on: ubuntu-latest, steps: [ { run: echo next } ] }
  guarded: { needs: maybe, if: "\${{ !cancelled() && needs.maybe.result == 'skipped' }}", runs-on: ubuntu-latest, steps: [ { run: echo guarded } ] }
`);
    expect(job('next')).toBeUndefined();
    expect(job('guarded')!.log).toContain('guarded');
  });
});

describe('matrices', () => {
  it('fail-fast (the default) cancels the legs still running when one fails; job outputs come from the legs', async () => {
    const { s, job } = await runWorkflow(`
on: workflow_dispatch
jobs:
  m:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        n: [1, 2]
    steps:
      - run: if [ "\${{ matrix.n }}" = 1 ]; then exit 1; else sleep 20; fi
`);
    expect(s.conclusion).toBe('failure');
    expect(job('m (1)')!.conclusion).toBe('failure');
    expect(job('m (2)')!.conclusion).toBe('cancelled');
  });

  it('fail-fast false lets every leg finish; max-parallel bounds the legs running at once', async () => {
    const { job } = await runWorkflow(`
on: workflow_dispatch
jobs:
  m:
    runs-on: ubuntu-latest
    strategy:
      fail-fast: false
      max-parallel: 1
      matrix:
        n: [1, 2, 3]
    steps:
      - run: |
          mkdir -p /tmp/\${{ github.run_id }}
          ls /tmp/\${{ github.run_id }} | wc -l | xargs echo "running beside me:"
          touch /tmp/\${{ github.run_id }}/\${{ matrix.n }}; sleep 0.3; rm /tmp/\${{ github.run_id }}/\${{ matrix.n }}
          [ "\${{ matrix.n }}" != 1 ]
`);
    expect(job('m (1)')!.conclusion).toBe('failure');
    expect(job('m (2)')!.conclusion).toBe('success');
    expect(job('m (3)')!.conclusion).toBe('success');
    for (const n of [1, 2, 3]) expect(job(`m (${n})`)!.log).toContain('running beside me: 0');
  });

  it("an empty matrix fails the job before any leg runs, with GitHub's message", async () => {
    const { s } = await runWorkflow(`
on: workflow_dispatch
jobs:
  m:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        shard: \${{ fromJSON('[]') }}
    steps: [ { run: echo never } ]
`);
    expect(s.conclusion).toBe('failure');
    const job = a!.emu.workflowRun(s.id)!.jobs.find((j) => j.name === 'm')!;
    const { data } = await fetch(`${a!.emu.url}/repos/acme/app/check-runs/${job.id}/annotations`, { headers: { authorization: `token ${a!.emu.token}` } }).then(
      async (r) => ({ data: (await r.json()) as Array<{ message: string }> }),
    );
    expect(data[0]!.message).toMatch(
      /Error when evaluating 'strategy' for job 'm'\. acme\/app\/\.github\/workflows\/w\.yml@refs\/heads\/main: Matrix vector 'shard' does not contain any values/,
    );
  });
});

describe('timeout-minutes', () => {
  it("a job past its timeout on the runner's clock is killed; GitHub annotates it and lists it cancelled", async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `
on: workflow_dispatch
jobs:
  slow:
    runs-on: ubuntu-latest
    timeout-minutes: 5
    steps:
      - run: echo started; sleep 30; echo finished
      - run: echo after
`,
    });
    const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' });
    while (!run.runningJobs().includes('slow')) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    a.runner.clock.advance(6 * 60_000);
    const s = await a.runner.finish(run);
    const slow = s.jobs.find((j) => j.name === 'slow')!;
    expect(slow.conclusion).toBe('cancelled');
    expect(slow.log).toContain('started');
    expect(slow.log.split('\n')).not.toContain('finished');
    expect(slow.annotations.map((x) => x.message)).toContain(
      'The job running on runner ' + slow.log.match(/on runner (GitHub Actions \d+)/)![1] + ' has exceeded the maximum execution time of 5 minutes.',
    );
  });
});

describe('GITHUB_TOKEN', () => {
  it("has the job's permissions: checks: write may post a check run; without it GitHub answers 403", async () => {
    const { job } = await runWorkflow(`
on: workflow_dispatch
permissions:
  contents: read
jobs:
  allowed:
    runs-on: ubuntu-latest
    permissions:
      checks: write
    steps:
      - uses: actions/github-script@v9
        with:
          script: |
            const r = await github.rest.checks.create({ ...context.repo, name: 'from-job', head_sha: context.sha, status: 'completed', conclusion: 'success' });
            core.info('created ' + r.status);
  refused:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/github-script@v9
        with:
          script: |
            await github.rest.checks.create({ ...context.repo, name: 'from-job', head_sha: context.sha, status: 'completed', conclusion: 'success' });
`);
    expect(job('allowed')!.log).toContain('created 201');
    expect(job('refused')!.conclusion).toBe('failure');
    expect(job('refused')!.log).toContain('Resource not accessible by integration');
  });

  it("a reusable workflow cannot ask for more than its caller grants: the run fails at start, in GitHub's words", async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/shared', {
      '.github/workflows/reusable.yml': `
on: { workflow_call: {} }
jobs:
  report:
    runs-on: ubuntu-latest
    permissions: { checks: write }
    steps: [ { run: echo hi } ]
`,
    });
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `
on: workflow_dispatch
jobs:
  call:
    uses: acme/shared/.github/workflows/reusable.yml@main
`,
    });
    const s = await a.runner.finish(await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' }));
    expect(s.conclusion).toBe('failure');
    expect(s.jobs).toEqual([]);
    expect(s.startupFailure).toContain("The nested job 'report' is requesting 'checks: write', but is only allowed 'checks: none'.");
  });
});

describe('workflow files and the dispatch form', () => {
  it("a file GitHub would refuse fails with the parser's messages", async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `
on: workflow_dispatch
jobs:
  a:
    runs-on: ubuntu-latest
    steps: [ { run: "echo \${{ github.event.inputs.x" } ]
    bogus: 1
`,
      '.github/workflows/needs.yml': `
on: workflow_dispatch
jobs:
  first: { runs-on: ubuntu-latest, steps: [ { run: echo } ] }
  a: { runs-on: ubuntu-latest, needs: nope, steps: [ { run: echo } ] }
`,
    });
    const err = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFileError);
    const text = (err as Error).message;
    expect(text).toContain("Unexpected value 'bogus'");
    expect(text).toContain('The expression is not closed');
    await expect(a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/needs.yml' })).rejects.toThrow(/nope/);
  });

  it('typed inputs: a missing required input and an unknown one are refused as GitHub answers the dispatch (422)', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/w.yml': `
on:
  workflow_dispatch:
    inputs:
      who: { description: who, required: true }
      level: { description: l, type: choice, options: [low, high], default: low }
      loud: { description: b, type: boolean, default: false }
jobs:
  a: { runs-on: ubuntu-latest, steps: [ { run: "echo \${{ inputs.who }} \${{ inputs.level }} \${{ inputs.loud }} \${{ github.event.inputs.loud }}" } ] }
`,
    });
    await expect(a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml' })).rejects.toThrow("Required input 'who' not provided");
    await expect(a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml', inputs: { who: 'x', extra: '1' } })).rejects.toThrow(
      'Unexpected inputs provided: ["extra"]',
    );
    await expect(a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml', inputs: { who: 'x', level: 'mid' } })).rejects.toThrow(
      "Provided value 'mid' for input 'level' not in the list of allowed values",
    );
    const s = await a.runner.finish(await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/w.yml', inputs: { who: 'fleet', loud: true } }));
    // The inputs context keeps booleans; github.event.inputs holds strings.
    expect(s.jobs[0]!.log).toContain('fleet low true true');
  });
});
