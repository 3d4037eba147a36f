/**
 * Where the runner follows GitHub's own runner (actions/runner) rather than
 * the language service's stricter reading (issue 24). Each test names the
 * source it follows: a file of actions/runner's C# source or a page of
 * GitHub's documentation.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WorkflowFileError, type RunSummary } from '../support/actions-runner/index.js';
import { repoWith, startActions, type Actions } from './helpers.js';

// Workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

const WORKFLOWS: Record<string, string> = {
  'metadata.yml': `
on: workflow_dispatch
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - uses: acme/plain@main
`,
  'step-if-env.yml': `
on: workflow_dispatch
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - run: echo "FROM_FILE=yes" >> "$GITHUB_ENV"
      - if: env.FROM_FILE == 'yes'
        run: echo "if saw GITHUB_ENV"
      - if: env.OWN == 'mine'
        env: { OWN: mine }
        run: echo "if saw its own env"
`,
  'post-fails.yml': `
on: workflow_dispatch
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - uses: acme/post-fails@main
      - run: echo "main steps pass"
`,
  'defaults-expr.yml': `
on: workflow_dispatch
jobs:
  a:
    runs-on: ubuntu-latest
    env:
      MY_SHELL: env SHELL_MARK=from-default bash -e {0}
      MY_DIR: sub
    defaults:
      run:
        shell: \${{ env.MY_SHELL }}
        working-directory: \${{ env.MY_DIR }}
    steps:
      - run: echo "mark=\${SHELL_MARK:-none} dir=\${PWD##*/}"
`,
  'block-scalars.yml': `
on: workflow_dispatch
jobs:
  b:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        n: >-
          \${{ fromJSON('[1, 2]') }}
    steps:
      - run: echo "leg=\${{ matrix.n }}"
  r:
    runs-on: ubuntu-latest
    steps:
      - run: |
          echo "joined=\${{ join(fromJSON('["a",
            "b"]'), '+') }}"
`,
  'unravel.yml': `
on: workflow_dispatch
jobs:
  u:
    runs-on: ubuntu-latest
    env:
      PLAIN: p
      \${{ insert }}: \${{ fromJSON('{"INSERTED":"job"}') }}
    strategy:
      matrix:
        n:
          - 0
          - \${{ fromJSON('[1,2]') }}
    steps:
      - run: echo "leg=\${{ matrix.n }} plain=$PLAIN inserted=$INSERTED step=$STEP_INSERTED"
        env:
          \${{ insert }}: \${{ fromJSON('{"STEP_INSERTED":"step"}') }}
`,
  'unsecure.yml': `
on: workflow_dispatch
jobs:
  allowed:
    runs-on: ubuntu-latest
    env: { ACTIONS_ALLOW_UNSECURE_COMMANDS: true }
    steps:
      - run: |
          mkdir -p "$RUNNER_TEMP/legacy" && printf '#!/bin/sh\\necho legacy-tool\\n' > "$RUNNER_TEMP/legacy/legacytool" && chmod +x "$RUNNER_TEMP/legacy/legacytool"
          echo "::set-env name=LEGACY::set-by-command"
          echo "::add-path::$RUNNER_TEMP/legacy"
      - run: |
          echo "legacy=$LEGACY"
          legacytool
  refused:
    runs-on: ubuntu-latest
    steps:
      - run: echo "::set-env name=LEGACY::x"
`,
  'no-ref.yml': `
on: workflow_dispatch
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - run: echo "never runs"
      - uses: actions/checkout
`,
  'bad-call.yml': `
on: workflow_dispatch
jobs:
  good:
    uses: acme/shared/.github/workflows/called.yml@main
    with: { target: t }
    secrets: { token: x }
  bad:
    uses: acme/shared/.github/workflows/called.yml@main
    secrets: { token: x, nope: y }
`,
};

let a: Actions;
const runs = new Map<string, Promise<RunSummary>>();

/** The finished run of one workflow above; every run starts in beforeAll, so they run side by side. */
function result(file: string): Promise<RunSummary> {
  return runs.get(file)!;
}

beforeAll(async () => {
  a = await startActions();
  await repoWith(a.emu, 'acme/plain', {
    // No name, no description: GitHub's runner reads action.yml with the non-strict "action-root".
    'action.yml': `
runs:
  using: composite
  steps:
    - run: echo "plain action ran"
      shell: bash
`,
  });
  await repoWith(a.emu, 'acme/post-fails', {
    'action.yml': `
name: post-fails
description: its post step fails
runs:
  using: node24
  main: main.mjs
  post: post.mjs
`,
    'main.mjs': `console.log('main ok');`,
    'post.mjs': `console.log('post fails'); process.exit(4);`,
  });
  await repoWith(a.emu, 'acme/shared', {
    '.github/workflows/called.yml': `
on:
  workflow_call:
    inputs: { target: { type: string, required: true } }
    secrets: { token: { required: true } }
jobs:
  j: { runs-on: ubuntu-latest, steps: [ { run: echo called } ] }
`,
  });
  await repoWith(a.emu, 'acme/app', Object.fromEntries(Object.entries(WORKFLOWS).map(([f, text]) => [`.github/workflows/${f}`, text])));
  for (const file of Object.keys(WORKFLOWS)) {
    const done = a.runner.dispatch({ repo: 'acme/app', workflow: `.github/workflows/${file}` }).then((run) => a.runner.finish(run));
    done.catch(() => undefined); // awaited by its test
    runs.set(file, done);
  }
});
afterAll(() => a?.close());

describe('action metadata', () => {
  it('an action.yml without name or description runs (ActionManifestManager.cs reads "action-root", where both are optional)', async () => {
    const s = await result('metadata.yml');
    expect(s.jobs[0]!.annotations).toEqual([]);
    expect(s.jobs[0]!.log).toContain('plain action ran');
    expect(s.conclusion).toBe('success');
  });
});

describe('steps', () => {
  it("a step's if: sees GITHUB_ENV from earlier steps and its own env: (StepsRunner.cs merges both into env before the condition)", async () => {
    const log = (await result('step-if-env.yml')).jobs[0]!.log;
    expect(log).toContain('if saw GITHUB_ENV');
    expect(log).toContain('if saw its own env');
  });

  it('a failing post step fails the job (StepsRunner.cs runs post steps as job steps and merges their result)', async () => {
    const s = await result('post-fails.yml');
    const job = s.jobs[0]!;
    expect(job.log).toContain('post fails');
    expect(job.steps.find((x) => x.name === 'Post Run acme/post-fails@main')).toMatchObject({ conclusion: 'failure' });
    expect(job.conclusion).toBe('failure');
    expect(s.conclusion).toBe('failure');
  });

  it('job defaults.run shell and working-directory may be expressions (JobExtension.cs evaluates them at job start, with the job env)', async () => {
    const s = await result('defaults-expr.yml');
    expect(s.jobs[0]!.log).toContain('mark=from-default dir=sub');
  });
});

describe('refused at start', () => {
  it('uses: without @ref makes the whole file invalid (WorkflowTemplateConverter.cs: "Expected format {org}/{repo}[/path]@ref")', async () => {
    await expect(result('no-ref.yml')).rejects.toThrow(WorkflowFileError);
    await expect(result('no-ref.yml')).rejects.toThrow("Expected format {org}/{repo}[/path]@ref. Actual 'actions/checkout'");
  });

  it('a call passing an undeclared secret or missing a required input fails the run at start; no call runs (WorkflowTemplateConverter.cs ValidateWorkflowJobTrigger)', async () => {
    const s = await result('bad-call.yml');
    expect(s.conclusion).toBe('failure');
    expect(s.jobs).toEqual([]);
    expect(s.startupFailure).toContain('Invalid secret, nope is not defined in the referenced workflow.');
    expect(s.startupFailure).toContain('Input target is required, but not provided while calling.');
  });
});

describe('workflow commands', () => {
  it('::set-env:: and ::add-path:: are honoured with ACTIONS_ALLOW_UNSECURE_COMMANDS=true, refused (failing the step) without it (ActionCommandManager.cs)', async () => {
    const s = await result('unsecure.yml');
    const allowed = s.jobs.find((j) => j.name === 'allowed')!;
    expect(allowed.log).toContain('legacy=set-by-command');
    expect(allowed.log).toContain('legacy-tool');
    expect(allowed.conclusion).toBe('success');
    const refused = s.jobs.find((j) => j.name === 'refused')!;
    expect(refused.conclusion).toBe('failure');
    expect(refused.annotations.map((x) => x.message)).toContain("Unable to process command '::set-env name=LEGACY::x' successfully.");
    expect(refused.annotations.map((x) => x.message).join('\n')).toContain('The `set-env` command is disabled.');
  });
});

describe('expressions in templates', () => {
  it("a block scalar's value is what is parsed: an expression may span lines, and one that is the whole value keeps its type (TemplateReader.cs ParseScalar)", async () => {
    const s = await result('block-scalars.yml');
    expect(s.jobs.find((j) => j.name === 'r')!.log).toContain('joined=a+b');
    expect(s.jobs.map((j) => j.name).sort()).toEqual(['b (1)', 'b (2)', 'r']);
  });

  it('${{ insert }} merges a mapping into its parent; a sequence item that yields a sequence is spliced into it (TemplateUnraveler.cs)', async () => {
    const s = await result('unravel.yml');
    expect(s.jobs.map((j) => j.name).sort()).toEqual(['u (0)', 'u (1)', 'u (2)']);
    expect(s.jobs[0]!.log).toMatch(/leg=\d plain=p inserted=job step=step/);
  });
});
