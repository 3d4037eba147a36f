/**
 * A PR handed to a person as a draft (CI red, retries exhausted) is not a dead end: when a later run's change
 * makes CI green, the same PR is marked ready for review again, not left a draft that looks abandoned.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci } from '../support/github-emulator/index.js';
import { lane, readManifest } from '../integration/helpers.js';
import { prsOpened, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

describe('a drafted PR on GitHub', () => {
  it('is marked ready for review again when a re-run turns its CI green', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'svc', files: { 'README.md': '# svc\n' } });
    // The directive writes what the fix file says; CI is red until the change is right.
    const fix = join(dir, 'fix.txt');
    writeFileSync(fix, 'broken\n');
    emu.setCi('acme/svc', ci.onBranches(/^fleet\//, ci.red(['test'])));
    const file = flow.fleetFile({
      name: 'fix',
      directive: 'Fix the build.',
      run: `cat ${JSON.stringify(fix)} > BUILD`,
      max_retries: 0,
      ci: { wait: true, timeout_minutes: 1 },
      targets: [{ repo: 'acme/svc' }],
    });

    const first = await flow.run(file, join(dir, 'ws1'));
    expect(first.code, first.stderr).toBe(1);
    const red = lane(readManifest(join(dir, 'ws1')), 'svc');
    expect(red).toMatchObject({ status: 'failed', phase: 'draft', merge_status: 'draft' });
    expect(emu.pullRequests('acme/svc')).toMatchObject([{ number: red.pr_number, draft: true, state: 'open' }]);

    writeFileSync(fix, 'fixed\n');
    emu.setCi('acme/svc', ci.onBranches(/^fleet\//, ci.green(['test'])));
    const second = await flow.run(file, join(dir, 'ws2'));
    expect(second.code, second.stderr).toBe(0);
    const green = lane(readManifest(join(dir, 'ws2')), 'svc');
    expect(green).toMatchObject({ status: 'completed', ci_conclusion: 'success', pr_number: red.pr_number });
    // The same PR, now at the green commit, and ready for review: marked through GraphQL, once.
    expect(emu.pullRequests('acme/svc')).toMatchObject([{ number: red.pr_number, draft: false, state: 'open', headSha: green.commit }]);
    expect(prsOpened(emu)).toBe(1);
    expect(emu.find({ kind: 'graphql' }).filter((q) => q.graphqlFields?.includes('markPullRequestReadyForReview'))).toHaveLength(1);
    emu.assertNoViolations();
  });

  it('stays a draft when the fleet opens every PR as a draft (pr.draft), even with CI green', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'svc', files: { 'README.md': '# svc\n' } });
    emu.setCi('acme/svc', ci.onBranches(/^fleet\//, ci.green(['test'])));
    const file = flow.fleetFile({
      name: 'wip',
      directive: 'Start the migration.',
      run: 'echo started > MIGRATION',
      max_retries: 0,
      pr: { draft: true },
      ci: { wait: true, timeout_minutes: 1 },
      targets: [{ repo: 'acme/svc' }],
    });
    const r = await flow.run(file, join(dir, 'ws'));
    expect(r.code, r.stderr).toBe(0);
    const rec = lane(readManifest(join(dir, 'ws')), 'svc');
    expect(rec).toMatchObject({ status: 'completed', ci_conclusion: 'success' });
    expect(emu.pullRequests('acme/svc')).toMatchObject([{ number: rec.pr_number, draft: true, state: 'open' }]);
    expect(emu.find({ kind: 'graphql' }).filter((q) => q.graphqlFields?.includes('markPullRequestReadyForReview'))).toHaveLength(0);
    emu.assertNoViolations();
  });
});
