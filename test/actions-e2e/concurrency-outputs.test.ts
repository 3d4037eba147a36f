/**
 * What a caller sees around a fleet: one run of a fleet at a time (the
 * reusable workflow's `concurrency`, a group per fleet file and calling
 * repository: a later dispatch waits, the running one is never cancelled, and
 * with `queue: max` a third waits too instead of replacing the second:
 * https://docs.github.com/actions/how-tos/write-workflows/choose-when-workflows-run/control-workflow-concurrency,
 * https://github.blog/changelog/2026-05-07-github-actions-concurrency-groups-now-allow-larger-queues), and the
 * fleet's counts and report artifact as workflow outputs for a job that `needs:` it
 * (https://docs.github.com/actions/how-tos/reuse-automations/reuse-workflows#using-outputs-from-a-reusable-workflow).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CONTROL_REPO, explain, reportArtifact, startWorld, template, ungated, until, type World } from './world.js';

// Whole workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 400_000, hookTimeout: 300_000 });

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const dispatch = (world: World, directive: string) =>
  world.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { directive, 'dry-run': false } });

describe('one run of a fleet at a time', () => {
  it('a second and a third dispatch wait, in order, while the first waits at its gate and runs; none is cancelled', async () => {
    w = await startWorld({
      caller: template('fleet-dispatch.yml'),
      fleetFile: { name: 'serial', forge: 'github', directive: 'x', run: 'echo "$FLEET_DIRECTIVE" >> LOG', targets: [{ repo: 'acme/one' }] },
    });
    await w.emu.createRepo({ owner: 'acme', name: 'one' });
    w.runner.setEnvironment(CONTROL_REPO, 'fleet-approval', { reviewers: ['lead'] });
    const world = w;
    const jobsOf = (id: number) => world.emu.workflowRun(id)!.jobs.map((j) => j.name);

    const first = await dispatch(w, 'First.');
    await until(() => first.waitingEnvironments().includes('fleet-approval'), 'the first run at its gate');
    // Runs waiting in a group are served in the order they reached it (not of dispatch): the second gets there first.
    const group = 'fleet-acme/control-fleet.yml';
    const second = await dispatch(w, 'Second.');
    await until(() => world.runner.waitingForConcurrency(second.id).includes(group), 'the second run in the fleet group');
    const third = await dispatch(w, 'Third.');
    await until(() => world.runner.waitingForConcurrency(third.id).includes(group), 'the third run in the fleet group');
    // The later runs started, but their fleet job waits for the group: no job of theirs has run.
    expect(jobsOf(second.id)).toEqual([]);
    expect(jobsOf(third.id)).toEqual([]);

    w.runner.review(first.id, 'fleet-approval', 'approved', 'lead');
    const s1 = await w.runner.finish(first);
    expect(s1.conclusion, explain(s1)).toBe('success');
    expect(s1.jobs.filter((j) => j.conclusion === 'cancelled')).toEqual([]);

    await until(() => second.waitingEnvironments().includes('fleet-approval'), 'the second run at its gate', 120_000);
    expect(jobsOf(third.id)).toEqual([]);
    w.runner.review(second.id, 'fleet-approval', 'approved', 'lead');
    expect((await w.runner.finish(second)).conclusion).toBe('success');

    await until(() => third.waitingEnvironments().includes('fleet-approval'), 'the third run at its gate', 120_000);
    w.runner.review(third.id, 'fleet-approval', 'approved', 'lead');
    expect((await w.runner.finish(third)).conclusion).toBe('success');
    // Each run's lane pushed in turn, on the branch the one before left.
    expect(reportArtifact(w, third.id).manifest.summary).toMatchObject({ completed: 1 });
    expect(await w.emu.branchSha('acme/one', 'fleet/serial/one')).not.toBeNull();
  });
});

describe('outputs for a caller that chains work after the fleet', () => {
  it("a job that needs the fleet reads its counts and the report artifact's name, also when a lane failed", async () => {
    const caller = `${ungated(template('fleet-dispatch.yml'))}
  after:
    needs: fleet
    if: \${{ !cancelled() }}
    runs-on: ubuntu-latest
    steps:
      - run: echo "total=$TOTAL completed=$COMPLETED failed=$FAILED skipped=$SKIPPED excluded=$EXCLUDED report=$REPORT"
        env:
          TOTAL: \${{ needs.fleet.outputs.total }}
          COMPLETED: \${{ needs.fleet.outputs.completed }}
          FAILED: \${{ needs.fleet.outputs.failed }}
          SKIPPED: \${{ needs.fleet.outputs.skipped }}
          EXCLUDED: \${{ needs.fleet.outputs.excluded }}
          REPORT: \${{ needs.fleet.outputs.report-artifact }}
`;
    w = await startWorld({
      caller,
      fleetFile: {
        name: 'chain',
        forge: 'github',
        directive: 'x',
        run: 'if [ "$FLEET_LANE" = bad ]; then exit 3; fi; echo ok > OK',
        max_retries: 0,
        targets: [{ repo: 'acme/good' }, { repo: 'acme/bad' }, { repo: 'acme/old' }],
      },
    });
    for (const name of ['good', 'bad']) await w.emu.createRepo({ owner: 'acme', name });
    await w.emu.createRepo({ owner: 'acme', name: 'old', archived: true });
    const run = await dispatch(w, 'Chain.');
    const s = await w.runner.finish(run);
    expect(s.conclusion).toBe('failure');
    const after = s.jobs.find((j) => j.name === 'after')!;
    expect(after.conclusion, explain(s)).toBe('success');
    expect(after.log).toContain('total=3 completed=1 failed=1 skipped=0 excluded=1 report=fleet-report.a1');
    expect(reportArtifact(w, run.id).manifest.summary).toMatchObject({ total: 3, completed: 1, failed: 1, excluded: 1 });
  });
});
