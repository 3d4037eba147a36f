/**
 * The other ways in: a scheduled sweep from a committed fleet file (the
 * scheduled template), a dry run (nothing pushed, and a hostile directive
 * finds no token in the job's checkouts or environment), a DAG deeper than
 * max_waves (refused at plan time with an error a user can act on; one deeper
 * than the workflow's wave jobs goes on in new runs: chain.test.ts), and a
 * caller that grants no permissions (refused by GitHub at start).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { artifactFile, artifactsOf, CONTROL_REPO, dispatchFleet, explain, PAT, reportArtifact, startWorld, template, type World } from './world.js';

// Whole workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

describe('a scheduled sweep', () => {
  it('runs the committed fleet file from the scheduled template on the default branch', async () => {
    w = await startWorld({ caller: template('fleet-scheduled.yml') });
    await w.emu.createRepo({ owner: 'acme', name: 'svc' });
    await w.commitControl({ 'fleets/weekly-sweep.yml': stringify({ name: 'sweep', forge: 'github', directive: 'Weekly stamp.', run: 'date -u +%G-W%V > WEEK', targets: [{ repo: 'acme/svc' }] }) });
    const run = await w.runner.schedule({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', cron: '17 6 * * 1' });
    const s = await w.runner.finish(run);
    expect(s.conclusion, explain(s)).toBe('success');
    expect(reportArtifact(w, run.id).manifest).toMatchObject({ name: 'sweep', summary: { completed: 1 } });
    expect(w.emu.pullRequests('acme/svc')).toHaveLength(1);
  });
});

describe('a dry run', () => {
  it('pushes nothing; the directive finds no token in the checkouts or its environment', async () => {
    w = await startWorld({
      fleetFile: {
        name: 'probe',
        forge: 'github',
        directive: 'Probe.',
        // What a hostile directive would try: the checkouts' git config and its own environment.
        run: 'for f in "$GITHUB_WORKSPACE"/source/.git/config "$GITHUB_WORKSPACE"/.fleet/.git/config; do echo "== $f"; cat "$f"; done > PROBE.txt; env | sort >> PROBE.txt',
        targets: [{ repo: 'acme/svc' }],
      },
    });
    await w.emu.createRepo({ owner: 'acme', name: 'svc' });
    const { runId, s } = await dispatchFleet(w, { 'dry-run': true });
    expect(s.conclusion, explain(s)).toBe('success');
    expect(await w.emu.branchSha('acme/svc', 'fleet/probe/svc')).toBeNull();
    expect(w.emu.pullRequests('acme/svc')).toHaveLength(0);
    expect(reportArtifact(w, runId).manifest.lanes[0]).toMatchObject({ status: 'completed', phase: 'dry-run' });
    const lane = artifactsOf(w, runId).get('fleet-lane-svc.a1')!;
    const patch = artifactFile(w, lane, 'lanes/svc/patch.diff');
    expect(patch).toContain('PROBE.txt');
    expect(patch).toContain('== ');
    expect(patch).not.toMatch(/extraheader/i);
    expect(patch).not.toContain('AUTHORIZATION');
    expect(patch).not.toContain(PAT);
    expect(patch).not.toMatch(/ACTIONS_RUNTIME_TOKEN|ghs_[A-Za-z0-9]{36}/);
  });
});

describe('refused before any lane runs', () => {
  it('a DAG deeper than max_waves: the plan job says which chain and what to do', async () => {
    const chain = Array.from({ length: 9 }, (_, i) => ({ repo: `acme/r${i}`, ...(i ? { depends_on: [`r${i - 1}`] } : {}) }));
    w = await startWorld({ fleetFile: { name: 'deep', forge: 'github', directive: 'x', run: 'true', max_waves: 8, targets: chain } });
    for (let i = 0; i < 9; i++) await w.emu.createRepo({ owner: 'acme', name: `r${i}` });
    const { s } = await dispatchFleet(w);
    expect(s.conclusion).toBe('failure');
    const plan = s.jobs.find((j) => j.name === 'fleet / plan')!;
    expect(plan.conclusion).toBe('failure');
    const said = plan.annotations.map((a) => a.message).join('\n');
    expect(said).toContain('r0 → r1 → r2 → r3 → r4 → r5 → r6 → r7 → r8');
    expect(said).toContain('max_waves is 8');
    expect(said).toContain('this workflow has 8 wave jobs: a deeper DAG continues in a new run of it every 8 waves');
    expect(s.jobs.map((j) => j.name)).toEqual(['fleet / plan']);
    expect(artifactsOf(w, s.id).size).toBe(0);
  });

  it('a caller without a permissions block, on a repository whose default token is read-only: GitHub refuses the run at start', async () => {
    const withoutPermissions = template('fleet-dispatch.yml').replace(/\npermissions:\n(  .*\n)+/, '\n');
    expect(withoutPermissions).not.toMatch(/^permissions:/m);
    w = await startWorld({ caller: withoutPermissions });
    const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { directive: 'x' } });
    const s = await w.runner.finish(run);
    expect(s.conclusion).toBe('failure');
    expect(s.jobs).toEqual([]);
    expect(s.startupFailure).toContain("The nested job 'report' is requesting 'checks: write', but is only allowed 'checks: none'.");
    expect(s.startupFailure).toContain("The nested job 'wave-1' is requesting 'actions: read', but is only allowed 'actions: none'.");
  });
});

describe('the docs', () => {
  it('every caller example in docs/github-actions.md grants the permissions the reusable workflow needs', () => {
    const doc = readFileSync(join(import.meta.dirname, '../../docs/github-actions.md'), 'utf8');
    const callers = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((y) => /uses: .*\/\.github\/workflows\/fleet\.yml@/.test(y));
    expect(callers.length).toBeGreaterThan(0);
    for (const y of callers) expect(y).toMatch(/permissions:\n\s+contents: read\n\s+actions: read\n\s+checks: write/);
  });
});
