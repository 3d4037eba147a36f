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
    await w.commitControl({
      'fleets/weekly-sweep.yml': stringify({
        name: 'sweep',
        forge: 'github',
        directive: 'Weekly stamp.',
        run: 'date -u +%G-W%V > WEEK',
        targets: [{ repo: 'acme/svc' }],
      }),
    });
    const run = await w.runner.schedule({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', cron: '17 6 * * 1' });
    const s = await w.runner.finish(run);
    expect(s.conclusion, explain(s)).toBe('success');
    expect(reportArtifact(w, run.id).manifest).toMatchObject({ name: 'sweep', summary: { completed: 1 } });
    expect(w.emu.pullRequests('acme/svc')).toHaveLength(1);
  });
});

describe('an incremental sweep (the scheduled template, incremental: true)', () => {
  // Outcomes travel between sweeps in the Actions cache (one immutable key per sweep, restored by prefix):
  // https://docs.github.com/en/actions/reference/workflows-and-actions/dependency-caching (cache key matching,
  // restrictions for accessing a cache). The base commits come from the validation query's `target { oid }`.
  it('a second sweep over unchanged targets runs no leg and clones nothing; a target whose branch moved runs again', async () => {
    w = await startWorld({ caller: template('fleet-scheduled.yml') });
    const repos = ['s0', 's1', 's2'];
    for (const name of repos) await w.emu.createRepo({ owner: 'acme', name });
    await w.commitControl({
      'fleets/weekly-sweep.yml': stringify({
        name: 'sweep',
        forge: 'github',
        directive: 'Stamp.',
        run: 'echo stamped > STAMP',
        targets: repos.map((r) => ({ repo: `acme/${r}` })),
      }),
    });
    const sweep = async () => {
      w!.emu.resetLog();
      const run = await w!.runner.schedule({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', cron: '17 6 * * 1' });
      const s = await w!.runner.finish(run);
      expect(s.conclusion, explain(s)).toBe('success');
      const fleetRequests = w!.emu.requests.filter((r) => r.token === PAT);
      const clones = (repo: string) =>
        w!.emu.requests.filter((r) => r.operationId === 'git-upload-pack' && r.path.startsWith(`/${repo}.git/`) && r.method === 'POST').length;
      return {
        s,
        manifest: reportArtifact(w!, run.id).manifest,
        report: reportArtifact(w!, run.id).report,
        fleetRequests,
        clones,
        legs: s.jobs.filter((j) => / \/ wave \d/.test(j.name)),
      };
    };

    const first = await sweep();
    expect(first.manifest.summary).toMatchObject({ completed: 3, unchanged: 0 });
    expect(first.legs.length).toBeGreaterThan(0);
    for (const r of repos) expect(first.clones(`acme/${r}`), r).toBeGreaterThan(0);
    const prs = repos.map((r) => w!.emu.pullRequests(`acme/${r}`)[0]!);

    // Nothing moved: no wave leg starts, no target is cloned, the PRs are left as they are.
    const second = await sweep();
    expect(second.manifest.summary).toMatchObject({ total: 3, unchanged: 3, completed: 0, failed: 0 });
    expect(second.manifest.lanes.map((l) => l.pr_number)).toEqual(prs.map((p) => p.number));
    expect(second.legs).toEqual([]);
    for (const r of repos) expect(second.clones(`acme/${r}`), r).toBe(0);
    // The fleet token's requests: the one validation query (it reads the base commits too), nothing per target.
    expect(second.fleetRequests.map((r) => r.route)).toEqual(['/graphql']);
    expect(second.report).toContain('| Unchanged | 3 |');
    for (const r of repos) expect(w.emu.pullRequests(`acme/${r}`)).toHaveLength(1);

    // s1's default branch moves: s1 alone runs again (one leg, one clone), s0 and s2 stay unchanged.
    await w.emu.commit({ owner: 'acme', repo: 's1', branch: 'main', files: { 'NEWS.md': 'moved\n' } });
    const third = await sweep();
    expect(third.manifest.lanes.map((l) => [l.lane, l.status]).sort()).toEqual([
      ['s0', 'unchanged'],
      ['s1', 'completed'],
      ['s2', 'unchanged'],
    ]);
    expect(third.legs).toHaveLength(1);
    expect(third.clones('acme/s1')).toBeGreaterThan(0);
    expect(third.clones('acme/s0') + third.clones('acme/s2')).toBe(0);
    // The cache holds one entry per sweep, all of this fleet's prefix.
    const keys = w.services.caches({ repo: CONTROL_REPO }).map((c) => c.key);
    expect(keys).toHaveLength(3);
    for (const k of keys) expect(k).toMatch(/^fleet-sweep\/sweep\/\d+-1$/);
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
    const withoutPermissions = template('fleet-dispatch.yml').replace(/\npermissions:\n( {2}.*\n)+/, '\n');
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
