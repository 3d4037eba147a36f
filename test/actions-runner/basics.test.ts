import { afterEach, describe, expect, it, vi } from 'vitest';
import { repoWith, startActions, type Actions } from './helpers.js';

// Workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

let a: Actions | undefined;
afterEach(async () => {
  await a?.close();
  a = undefined;
});

describe('the workflow runner', () => {
  it('runs a dispatched workflow: inputs, needs, outputs, a matrix and github-script', async () => {
    a = await startActions();
    await repoWith(a.emu, 'acme/app', {
      '.github/workflows/ci.yml': `
name: CI
on:
  workflow_dispatch:
    inputs:
      who: { description: who, required: true }
      loud: { type: boolean, default: false }
jobs:
  first:
    runs-on: ubuntu-latest
    outputs:
      greeting: \${{ steps.say.outputs.greeting }}
      list: \${{ steps.say.outputs.list }}
    steps:
      - id: say
        run: |
          echo "greeting=hello \${{ inputs.who }}" >> "$GITHUB_OUTPUT"
          echo 'list=["a","b"]' >> "$GITHUB_OUTPUT"
          echo "loud=\${{ inputs.loud }}"
  second:
    needs: first
    runs-on: ubuntu-latest
    strategy:
      matrix:
        letter: \${{ fromJSON(needs.first.outputs.list) }}
    steps:
      - uses: actions/github-script@v9
        id: gs
        with:
          script: |
            core.info(\`leg \${process.env.LETTER} says \${process.env.GREETING}\`);
            return { repo: context.repo.repo, runId: context.runId };
        env:
          LETTER: \${{ matrix.letter }}
          GREETING: \${{ needs.first.outputs.greeting }}
      - run: echo "result=$RESULT"
        env:
          RESULT: \${{ steps.gs.outputs.result }}
`,
    });
    const run = await a.runner.dispatch({ repo: 'acme/app', workflow: '.github/workflows/ci.yml', inputs: { who: 'fleet' } });
    const s = await a.runner.finish(run);
    const logs = s.jobs.map((j) => `${j.name}: ${j.conclusion}\n${j.log}`).join('\n----\n');
    expect(s.conclusion, logs).toBe('success');
    expect(s.jobs.map((j) => j.name).sort()).toEqual(['first', 'second (a)', 'second (b)']);
    expect(logs).toContain('leg a says hello fleet');
    expect(logs).toContain('loud=false');
    expect(logs).toMatch(/result=\{"repo":"app","runId":\d+\}/);
    a.emu.assertNoViolations();
  });
});
