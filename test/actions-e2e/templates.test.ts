/**
 * The starter workflows in workflows-templates/: each has its metadata file in
 * GitHub's format (checked by the rules of actions/starter-workflows and of
 * organization workflow templates: test/support/starter-workflows.ts), each
 * parses with GitHub's own workflow parser, and each is run end to end through
 * the workflow runner by some test (the App caller here).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadWorkflow } from '../support/actions-runner/workflow.js';
import { propertiesProblems } from '../support/starter-workflows.js';
import { CONTROL_REPO, explain, reportArtifact, startWorld, template, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

const DIR = join(import.meta.dirname, '..', '..', 'workflows-templates');
const TEMPLATES = readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f));

/** Which end-to-end test runs each template through the workflow runner. */
const RUN_BY: Record<string, string> = {
  'fleet-dispatch.yml': 'gate.test.ts',
  'fleet-scheduled.yml': 'sweeps.test.ts',
  'fleet-local.yml': 'local-template.test.ts',
  'fleet-app.yml': 'templates.test.ts',
  'fleet-queue.yml': 'queue.test.ts',
  'fleet-doctor.yml': 'templates.test.ts',
};

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

describe('the metadata of every starter workflow', () => {
  it('each template has a <name>.properties.json GitHub accepts, with a name no other template has', () => {
    expect(TEMPLATES.length).toBeGreaterThanOrEqual(4);
    const names = new Set<string>();
    const problems = TEMPLATES.flatMap((t) => propertiesProblems(DIR, t, 'Automation', names));
    expect(problems).toEqual([]);
    expect(names.size).toBe(TEMPLATES.length);
  });

  it('the check refuses what GitHub refuses, every problem at once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'templates-'));
    try {
      const write = (name: string, props: unknown) => {
        writeFileSync(join(dir, `${name}.yml`), 'on: workflow_dispatch\n');
        writeFileSync(join(dir, `${name}.properties.json`), typeof props === 'string' ? props : JSON.stringify(props));
      };
      write('ok', { name: 'Same', description: 'd', iconName: 'octicon stack', categories: ['Automation'] });
      write('bad', { name: 'Same', iconName: 'fleet-logo', categories: ['Deployment', 'Fleets'], filePatterns: ['fleet.(yml'], icon: 'x' });
      write('empty', { name: ' ', description: 'd', iconName: 'octicon ', categories: [] });
      write('broken', '{ "name": ');
      writeFileSync(join(dir, 'lonely.yml'), 'on: workflow_dispatch\n');
      const names = new Set<string>();
      const all = ['ok.yml', 'bad.yml', 'empty.yml', 'broken.yml', 'lonely.yml'].flatMap((t) => propertiesProblems(dir, t, 'Automation', names));
      expect(all).toEqual([
        'bad.properties.json: icon: not a property GitHub reads (name, description, creator, iconName, categories, filePatterns)',
        'bad.properties.json: name: "Same" is already the name of another template',
        'bad.properties.json: description: required, a string',
        'bad.properties.json: iconName: no icon named fleet-logo (no fleet-logo.svg beside the template)',
        'bad.properties.json: categories: the first category must be "Automation"',
        'bad.properties.json: categories: "Fleets" is not one of Continuous integration, Deployment, Code Scanning, Automation',
        expect.stringMatching(/^bad\.properties\.json: filePatterns: "fleet\.\(yml" is not a regular expression: /),
        'empty.properties.json: name: required, a non-empty string',
        'empty.properties.json: iconName: no icon named octicon ',
        'empty.properties.json: categories: required, a non-empty array of strings',
        expect.stringMatching(/^broken\.properties\.json: not JSON: /),
        'lonely.properties.json: missing (each template needs its metadata file beside it)',
      ]);
      // An SVG icon beside the template is accepted.
      writeFileSync(join(dir, 'fleet-logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
      expect(propertiesProblems(dir, 'bad.yml', 'Automation', new Set()).some((p) => p.includes(': iconName:'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('every starter workflow', () => {
  it("parses with GitHub's workflow parser", async () => {
    for (const t of TEMPLATES) {
      const wf = await loadWorkflow(
        { repo: 'acme/control', sha: '0'.repeat(40), ref: 'refs/heads/main', path: `.github/workflows/${t}` },
        readFileSync(join(DIR, t), 'utf8'),
      );
      expect(wf.jobs.length, t).toBeGreaterThan(0);
    }
  });

  it('is run end to end by a test', () => {
    expect(Object.keys(RUN_BY).sort()).toEqual([...TEMPLATES].sort());
    for (const [t, file] of Object.entries(RUN_BY)) {
      const text = readFileSync(join(import.meta.dirname, file), 'utf8');
      expect(text, `${file} runs ${t}`).toContain(t === 'fleet-local.yml' ? `'fleet-local.yml'` : `template('${t}')`);
    }
  });
});

describe('the GitHub App caller (fleet-app.yml)', () => {
  const APP_SCOPES = { contents: 'write', 'pull-requests': 'write', issues: 'write', checks: 'read', statuses: 'read', actions: 'read' } as const;

  it("runs the fleet with the App's tokens only, and its outcome job reads the counts and the report's name", async () => {
    w = await startWorld({
      caller: template('fleet-app.yml'),
      fleetFile: {
        name: 'app',
        forge: 'github',
        directive: 'x',
        run: 'if [ "$FLEET_LANE" = bad ]; then exit 3; fi; echo ok > OK',
        max_retries: 0,
        targets: [{ repo: 'acme/good' }, { repo: 'acme/bad' }],
      },
    });
    for (const name of ['good', 'bad']) await w.emu.createRepo({ owner: 'acme', name });
    const app = w.emu.addApp({ id: 5151, slug: 'fleet-app', installations: [{ account: 'acme', permissions: APP_SCOPES }] });
    w.runner.setVariable(CONTROL_REPO, 'FLEET_APP_ID', String(app.id));
    w.runner.setSecret(CONTROL_REPO, 'FLEET_APP_PRIVATE_KEY', app.privateKeyPem);
    const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { 'dry-run': false } });
    const s = await w.runner.finish(run);
    expect(s.conclusion).toBe('failure');
    expect(reportArtifact(w, run.id).manifest.summary, explain(s)).toMatchObject({ total: 2, completed: 1, failed: 1 });
    expect(w.emu.pullRequests('acme/good')[0]!.user).toBe('fleet-app[bot]');
    // One installation token per job of the fleet (plan, wave 1's two legs, report).
    expect(w.emu.find({ route: '/app/installations/{installation_id}/access_tokens', method: 'POST', status: 201 })).toHaveLength(4);
    const outcome = s.jobs.find((j) => j.name === 'outcome')!;
    expect(outcome.conclusion).toBe('success');
    expect(outcome.summary).toContain('1 of 2 lanes completed, 1 failed, 0 skipped, 0 excluded; the report is the `fleet-report.a1` artifact.');
    expect(outcome.annotations.map((a) => a.message)).toEqual(['1 lane(s) failed: see the fleet-report.a1 artifact']);
  });
});

describe('the set-up check (fleet-doctor.yml)', () => {
  const FULL = { contents: 'write', 'pull-requests': 'write', issues: 'write', checks: 'read', statuses: 'read', actions: 'read' } as const;

  it('fails on an App without Pull requests and a gate without its environment, each fix in the summary; passes once both are fixed', async () => {
    w = await startWorld({
      caller: template('fleet-doctor.yml'),
      fleetFile: { name: 'doc', forge: 'github', directive: 'x', run: 'true', targets: [{ repo: 'acme/one' }] },
    });
    await w.emu.createRepo({ owner: 'acme', name: 'one' });
    const { 'pull-requests': _, ...noPrs } = FULL;
    const first = w.emu.addApp({ id: 6161, slug: 'fleet-half', installations: [{ account: 'acme', permissions: noPrs }] });
    w.runner.setSecret(CONTROL_REPO, 'FLEET_TOKEN', '');
    w.runner.setVariable(CONTROL_REPO, 'FLEET_APP_ID', String(first.id));
    w.runner.setSecret(CONTROL_REPO, 'FLEET_APP_PRIVATE_KEY', first.privateKeyPem);
    const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: {} });
    const s = await w.runner.finish(run);
    expect(s.conclusion, explain(s)).toBe('failure');
    const job = s.jobs.find((j) => j.name === 'doctor')!;
    expect(job.summary).toContain('## Fleet doctor');
    expect(job.summary).toContain('FAIL  permissions: the GitHub App has no pull_requests permission');
    expect(job.summary).toContain('FAIL  approval gate: acme/control has no environment "fleet-approval"');
    expect(job.annotations.map((a) => a.message)).toContain('the set-up misses what this fleet needs: see the job summary for each fix');
    // Nothing was changed on GitHub: no branch, no PR, no environment made.
    expect(w.emu.pullRequests('acme/one')).toHaveLength(0);

    const fixed = w.emu.addApp({ id: 6262, slug: 'fleet-full', installations: [{ account: 'acme', permissions: FULL }] });
    w.runner.setVariable(CONTROL_REPO, 'FLEET_APP_ID', String(fixed.id));
    w.runner.setSecret(CONTROL_REPO, 'FLEET_APP_PRIVATE_KEY', fixed.privateKeyPem);
    w.runner.setEnvironment(CONTROL_REPO, 'fleet-approval', { reviewers: ['lead'] });
    const again = await w.runner.finish(await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: {} }));
    expect(again.conclusion, explain(again)).toBe('success');
    const ok = again.jobs.find((j) => j.name === 'doctor')!.summary;
    expect(ok).toContain('ok    approval gate: environment "fleet-approval" of acme/control holds each plan for lead');
    expect(ok).toContain('Nothing to fix');
  });
});
