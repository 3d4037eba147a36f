/**
 * Review lenses on GitHub: the PR body carries the review (follow-up work, open findings), and a lane whose review
 * reached its round cap hands its PR to a person as a draft labelled for one — a PR an earlier run opened ready is
 * turned into a draft too (opening it again would not).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FAKE_AGENTS } from '../support/repos.js';
import { lane, readManifest } from '../integration/helpers.js';
import { prsOpened, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

describe('a reviewed lane on GitHub', () => {
  it('lists follow-up work in its PR; at the round cap its open PR becomes a draft labelled for a person', async () => {
    flow = await startFlow();
    const { emu, dir } = flow;
    await emu.createRepo({ owner: 'acme', name: 'svc', files: { 'README.md': '# svc\n', 'src/app.js': 'export const value = 1;\n' } });
    const plan = join(dir, 'plan.json');
    const file = flow.fleetFile({
      name: 'rev',
      directive: 'Set the value.',
      agent: { preset: 'command', command: `node ${join(FAKE_AGENTS, 'review-agent.mjs')} --plan ${plan} --prompt-file {prompt_file}` },
      owns: ['src/**'],
      max_retries: 0,
      review: { lenses: ['correctness', 'completeness'], rounds: 2 },
      targets: [{ repo: 'acme/svc' }],
    });

    // Run 1: the worker fixes the BUG it accepted; the nitpick is follow-up work.
    writeFileSync(
      plan,
      JSON.stringify({
        write: { 'src/app.js': 'export const value = BUG;\n' },
        lenses: { correctness: 'marker', completeness: 'nitpick' },
        dispositions: { high: 'ACCEPT', low: 'FIX_LATER' },
        fix: 'fix',
      }),
    );
    const first = await flow.run(file, join(dir, 'ws1'));
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const ready = lane(readManifest(join(dir, 'ws1')), 'svc');
    expect(ready).toMatchObject({ status: 'completed', phase: 'pr-open' });
    const [pr] = emu.pullRequests('acme/svc');
    expect(pr).toMatchObject({ draft: false, labels: [] });
    expect(pr!.body).toContain('**Review** (2 rounds, lenses correctness, completeness): no finding it must fix is open; 1 high · 1 low found, 1 fixed.');
    expect(pr!.body).toContain('**Follow-up work** (1)\n\n- `src/app.js:1` (low; completeness): The name could say more. Suggested: Rename it.');
    expect(pr!.body).not.toContain('Open findings');

    // Run 2: a new change the worker cannot fix: the same PR, now a draft labelled for a person, the finding in its body.
    writeFileSync(plan, JSON.stringify({ write: { 'src/app.js': 'export const value = BUG + 1;\n' }, lenses: { correctness: 'marker' }, fix: 'cannot' }));
    const second = await flow.run(file, join(dir, 'ws2'));
    expect(second.code).toBe(1);
    const held = lane(readManifest(join(dir, 'ws2')), 'svc');
    expect(held).toMatchObject({ status: 'failed', phase: 'draft', merge_status: 'draft', error: { class: 'code-review-needed' }, pr_number: pr!.number });
    expect(held.error!.message).toContain(`PR #${pr!.number} is a draft labelled fleet:needs-person`);
    const [after] = emu.pullRequests('acme/svc');
    expect(after).toMatchObject({ number: pr!.number, draft: true, labels: ['fleet:needs-person'] });
    expect(after!.body).toContain(
      '**Open findings** (1)\n\n- `src/app.js:1` (high; correctness): A BUG marker is left in the code. Suggested: Replace BUG by OK.',
    );
    expect(prsOpened(emu)).toBe(1);
    emu.assertNoViolations();
  });
});
