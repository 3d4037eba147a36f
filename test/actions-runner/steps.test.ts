/**
 * Steps as the runner runs them: environment files and workflow commands
 * (https://docs.github.com/actions/reference/workflows-and-actions/workflow-commands),
 * masking, composite and local actions, what JavaScript actions get that
 * `run:` steps do not (actions/runner#3046), and loud failures for what the
 * runner does not know.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../support/actions-runner/index.js';
import { repoWith, startActions, type Actions } from './helpers.js';

// Workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

let a: Actions;
let s: RunSummary;
const job = (name: string) => s.jobs.find((j) => j.name === name)!;
const SECRET = 'hunter2-very-secret-value';

beforeAll(async () => {
  a = await startActions();
  await repoWith(a.emu, 'acme/app', {
    'tools/greet/action.yml': `
name: greet
description: a composite action
inputs:
  who: { description: who, required: true }
  punct: { description: p, default: '!' }
outputs:
  line:
    description: the line
    value: \${{ steps.say.outputs.line }}
runs:
  using: composite
  steps:
    - id: say
      shell: bash
      run: |
        echo "line=hello \${{ inputs.who }}\${{ inputs.punct }}" >> "$GITHUB_OUTPUT"
        echo "action path has action.yml: $(test -f "$GITHUB_ACTION_PATH/action.yml" && echo yes)"
        echo "runtime token in run step of composite: \${ACTIONS_RUNTIME_TOKEN:-none}"
`,
    'tools/js/action.yml': `
name: js
description: a JavaScript action
inputs:
  my-input: { description: x, default: dflt }
runs:
  using: node24
  main: main.mjs
  post: post.mjs
`,
    'tools/js/main.mjs': `
import { appendFileSync } from 'node:fs';
console.log('input=' + process.env['INPUT_MY-INPUT']);
console.log('runtime token present: ' + Boolean(process.env.ACTIONS_RUNTIME_TOKEN) + ', results url present: ' + Boolean(process.env.ACTIONS_RESULTS_URL));
appendFileSync(process.env.GITHUB_STATE, 'seen=from-main\\n');
`,
    'tools/js/post.mjs': `console.log('post sees state ' + process.env.STATE_seen);`,
    '.github/workflows/steps.yml': `
name: steps
on: workflow_dispatch
env:
  LEVEL: workflow
jobs:
  files:
    runs-on: ubuntu-latest
    env:
      LEVEL: job
    outputs:
      multi: \${{ steps.out.outputs.multi }}
      leak: \${{ steps.out.outputs.leak }}
    steps:
      - uses: actions/checkout@v6
      - id: out
        run: |
          {
            echo 'multi<<EOF'
            echo 'line one'
            echo 'line two'
            echo 'EOF'
          } >> "$GITHUB_OUTPUT"
          echo "leak=\${{ secrets.SECRET }}" >> "$GITHUB_OUTPUT"
          echo "FROM_ENV_FILE=set" >> "$GITHUB_ENV"
          mkdir -p "$RUNNER_TEMP/bin" && printf '#!/bin/sh\\necho tool-on-path\\n' > "$RUNNER_TEMP/bin/mytool" && chmod +x "$RUNNER_TEMP/bin/mytool"
          echo "$RUNNER_TEMP/bin" >> "$GITHUB_PATH"
          echo "the secret is \${{ secrets.SECRET }}"
          echo "::add-mask::masked-at-runtime"
          echo "now masked-at-runtime is hidden"
          echo "::error title=Bad thing::something went wrong"
          echo "level=$LEVEL"
          echo "# Summary of files" >> "$GITHUB_STEP_SUMMARY"
          echo "runtime token in run step: \${ACTIONS_RUNTIME_TOKEN:-none}"
      - run: |
          echo "env file: $FROM_ENV_FILE, step env wins: $LEVEL"
          mytool
        env:
          LEVEL: step
      - run: pwd
        working-directory: tools
      - id: greet
        uses: ./tools/greet
        with:
          who: fleet
      - run: echo "composite said $LINE"
        env:
          LINE: \${{ steps.greet.outputs.line }}
      - uses: ./tools/js
        with:
          my-input: given
      - run: echo "hash=\${{ hashFiles('tools/**/*.yml') }}"
      - run: exit 3
        continue-on-error: true
      - run: echo "still running after continue-on-error; outcome=\${{ steps.out.outcome }}"
      - run: head -c 1100000 /dev/zero | tr '\\0' 'x' >> "$GITHUB_STEP_SUMMARY"
  orphan:
    runs-on: ubuntu-latest
    steps:
      - run: |
          setsid sleep 300 </dev/null >/dev/null 2>&1 &
          echo "orphan=$!"
  big-output:
    runs-on: ubuntu-latest
    outputs:
      big: \${{ steps.b.outputs.big }}
    steps:
      - uses: actions/setup-node@v6
        with:
          node-version: ${process.versions.node.split('.')[0]}
      - id: b
        run: |
          node --version
          echo "big=$(head -c 1100000 /dev/zero | tr '\\0' 'y')" >> "$GITHUB_OUTPUT"
  after:
    needs: files
    runs-on: ubuntu-latest
    steps:
      - run: |
          echo "multi=\${{ needs.files.outputs.multi }}"
          echo "leak=[\${{ needs.files.outputs.leak }}]"
  bad-action:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v3
      - run: echo never
        if: success()
      - run: echo "cleanup runs"
        if: always()
`,
  });
  a.runner.setSecret('acme/app', 'SECRET', SECRET);
  const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/steps.yml' });
  s = await a.runner.finish(run);
});
afterAll(() => a?.close());

describe('environment files', () => {
  it('GITHUB_OUTPUT takes name=value and name<<DELIMITER blocks; GITHUB_ENV and GITHUB_PATH reach later steps; step env beats them', () => {
    const log = job('files').log;
    expect(job('after').log).toContain('multi=line one\nline two');
    expect(log).toContain('env file: set, step env wins: step');
    expect(log).toContain('tool-on-path');
    expect(log).toContain('level=job');
  });
  it("GITHUB_STATE: a JavaScript action's post step gets what its main step saved, as STATE_*", () => {
    expect(job('files').log).toContain('post sees state from-main');
  });
  it("GITHUB_STEP_SUMMARY: kept per step; over 1 MiB the runner drops that step's summary and says so", () => {
    expect(job('files').summary).toContain('# Summary of files');
    expect(job('files').summary).not.toContain('xxxx');
    expect(
      job('files')
        .annotations.map((x) => x.message)
        .join('\n'),
    ).toMatch(/\$GITHUB_STEP_SUMMARY upload aborted, supports content up to a size of 1024k, got 107\dk/);
  });
});

describe('the end of a job', () => {
  it('kills what its steps left running, even outside their process group (RUNNER_TRACKING_ID)', () => {
    const pid = Number(/orphan=(\d+)/.exec(job('orphan').log)![1]);
    // Gone, or a zombie left for an init that reaps late (state Z in /proc/<pid>/stat).
    let state = 'gone';
    try {
      state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[0]!;
    } catch {
      // gone
    }
    expect(['gone', 'Z']).toContain(state);
  });
});

describe('job outputs', () => {
  it('are limited to 1 MB per job: larger ones are dropped with an error', () => {
    const big = job('big-output');
    expect(big.outputs).toEqual({});
    expect(big.annotations.map((x) => x.message).join('\n')).toMatch(/a job's outputs are limited to 1 MB/);
  });
  it("setup-node puts the runner's Node.js on PATH", () => {
    expect(job('big-output').log).toContain(`v${process.versions.node}`);
  });
});

describe('workflow commands and masking', () => {
  it('secrets and ::add-mask:: values are *** in the log; ::error:: becomes an annotation', () => {
    const log = job('files').log;
    expect(log).not.toContain(SECRET);
    expect(log).toContain('the secret is ***');
    expect(log).toContain('now *** is hidden');
    expect(job('files').annotations).toContainEqual(expect.objectContaining({ level: 'error', message: 'something went wrong', title: 'Bad thing' }));
  });
  it('a job output that holds a secret is dropped ("Skip output … since it may contain secret")', () => {
    expect(job('after').log).toContain('leak=[]');
    expect(job('files').annotations.map((x) => x.message)).toContain("Skip output 'leak' since it may contain secret.");
  });
});

describe('actions', () => {
  it('a composite action: inputs with defaults, outputs from its steps, GITHUB_ACTION_PATH', () => {
    const log = job('files').log;
    expect(log).toContain('composite said hello fleet!');
    expect(log).toContain('action path has action.yml: yes');
  });
  it('JavaScript actions get ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL; run steps, also inside a composite, do not (actions/runner#3046)', () => {
    const log = job('files').log;
    expect(log).toContain('input=given');
    expect(log).toContain('runtime token present: true, results url present: true');
    expect(log).toContain('runtime token in run step: none');
    expect(log).toContain('runtime token in run step of composite: none');
  });
  it('working-directory is relative to the workspace; hashFiles hashes the matching files', () => {
    expect(job('files').log).toMatch(/\/tools\n/);
    expect(job('files').log).toMatch(/hash=[0-9a-f]{64}/);
  });
  it('continue-on-error: the step fails, the job goes on and succeeds', () => {
    expect(job('files').log).toContain('still running after continue-on-error');
    expect(job('files').steps.find((x) => x.name === 'Run exit 3')).toMatchObject({ outcome: 'failure', conclusion: 'success' });
    expect(job('files').conclusion).toBe('success');
  });
  it('an action version the runner does not know fails the step loudly; always() steps still run', () => {
    const bad = job('bad-action');
    expect(bad.conclusion).toBe('failure');
    expect(bad.annotations.map((x) => x.message).join('\n')).toContain('Unable to resolve action `actions/checkout@v3`');
    expect(bad.log).not.toContain('never');
    expect(bad.log).toContain('cleanup runs');
  });
});
