/**
 * Red CI is never reported as success (issue 27). With `ci.wait` off a lane reads its PR's CI right after the push,
 * when it has rarely concluded; the report reads it again as it stands when the report is written, lists a red PR
 * under Action required, and the run exits 1.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci } from '../support/github-emulator/index.js';
import { fleet, lane, readManifest } from '../integration/helpers.js';
import { actionRequired, createRepos, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

describe('CI at the report, without waiting for it', () => {
  it('a PR whose CI turns red after its lane pushed is reported red, under Action required, and the run exits 1', async () => {
    flow = await startFlow();
    const { emu } = flow;
    await createRepos(emu, 'acme', 'svc', 2);
    // svc-1's check starts with the push and concludes red only when the fleet pushes to svc-2, whose lane depends on
    // svc-1's: after svc-1's lane has read its CI (in progress, so pending) and completed. An event, not a delay.
    const held = ci.held(ci.onBranches(/^fleet\//, ci.red(['test'])), { until: 'finish' });
    emu.setCi('acme/svc-1', held);
    emu.setCi('acme/svc-2', ci.onBranches(/^fleet\//, ci.green(['test'])));
    const stop = emu.onPush((e) => {
      if (`${e.owner}/${e.repo}` === 'acme/svc-2' && e.source === 'git') held.release();
    });
    const file = flow.fleetFile({
      name: 'red',
      directive: 'Stamp it.',
      run: 'echo stamped > STAMP',
      max_retries: 0,
      targets: [{ repo: 'acme/svc-1' }, { repo: 'acme/svc-2', depends_on: ['svc-1'] }],
    });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(file, ws);
    stop();
    expect(held.released, 'the fleet reached svc-2').toBe(true);
    expect(r.code, r.stderr + r.stdout).toBe(1);

    const m = readManifest(ws);
    const red = lane(m, 'svc-1');
    // The lane did its work (its PR is open); its CI, read again at the report, is red.
    expect(red).toMatchObject({ status: 'completed', ci_conclusion: 'failure' });
    expect(red.pr_number).not.toBeNull();
    expect(red.evidence.notes).toContain('CI read again at the report: failure (it was pending when the lane pushed)');
    expect(lane(m, 'svc-2')).toMatchObject({ status: 'completed', ci_conclusion: 'success' });

    const action = actionRequired(r.stdout);
    expect(action).toContain('`acme/svc-1` (lane `svc-1`) — ci-failed: CI is failure on the pushed commit');
    expect(action).not.toContain('svc-2');
    expect(r.stdout).not.toContain('Nothing needs action.');
    // fleet report of the run says the same and exits as the run did.
    const again = await fleet(['report', ws], { cwd: flow.dir, env: flow.env });
    expect(again.code, again.stderr).toBe(1);
    expect(actionRequired(again.stdout)).toContain('`acme/svc-1` (lane `svc-1`) — ci-failed');
  });
});
