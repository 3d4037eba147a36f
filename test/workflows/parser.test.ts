// Every workflow we ship (CI, the reusable workflow, the templates users copy) and the action itself go through
// GitHub's own parser (@actions/workflow-parser) without an error, as the workflow runner reads them.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAction, loadWorkflow, WorkflowFileError } from '../support/actions-runner/workflow.js';

const files = ['.github/workflows', 'workflows-templates'].flatMap((d) =>
  readdirSync(d)
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => join(d, f)),
);

describe("GitHub's workflow parser", () => {
  it.each(files)('accepts %s', async (path) => {
    const wf = await loadWorkflow({ repo: 'acme/fleet', sha: 'a'.repeat(40), ref: 'refs/heads/main', path }, readFileSync(path, 'utf8'));
    expect(wf.jobs.length).toBeGreaterThan(0);
  });

  it('accepts action.yml as a composite action', () => {
    const action = loadAction('action.yml', readFileSync('action.yml', 'utf8'));
    expect(action.template.runs.using).toBe('composite');
  });

  it('refuses what GitHub refuses, so a pass above means something', async () => {
    const broken = 'on: push\njobs:\n  a:\n    runs-on: x\n    steps: [ { run: "echo ${{ github" } ]\n    bogus: 1\n';
    await expect(loadWorkflow({ repo: 'a/b', sha: 'a'.repeat(40), ref: 'refs/heads/main', path: 'x.yml' }, broken)).rejects.toBeInstanceOf(WorkflowFileError);
  });
});
