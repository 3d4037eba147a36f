/**
 * The issue-queue template (workflows-templates/fleet-queue.yml) through the workflow runner: scheduled runs of the
 * reusable workflow read the control repository's ready issues, start lanes while slots are free, merge the green
 * PRs on the next run (which closes their issues and makes a dependent ready), and post the board as the report's
 * check run and job summary. The queue's own rules are tested on the CLI in test/github-flows/issue-queue.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { ci } from '../support/github-emulator/index.js';
import { CONTROL_REPO, explain, reportArtifact, startWorld, template, type World } from './world.js';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const SPEC = '## Acceptance criteria\n- [ ] the file exists\n';

describe('the issue-queue template', () => {
  it('keeps the queue moving over scheduled runs and posts the board', async () => {
    w = await startWorld({ caller: template('fleet-queue.yml') });
    await w.commitControl({
      'fleets/issue-queue.yml': stringify({
        name: 'queue',
        forge: 'github',
        directive: 'Work on the issue.',
        run: 'mkdir -p work && cp "$FLEET_ISSUE_FILE" "work/issue-$FLEET_ISSUE.md"',
        source: { issues: { repo: CONTROL_REPO } },
        max_parallel: 2,
        merge: { policy: 'when-green', method: 'squash' },
      }),
    });
    // The first run's CI is still running when its lanes end (held until the test lets it finish): their PRs merge at
    // the start of the next scheduled run, which closes their issues and makes the dependent ready.
    const held = ci.held(ci.green(['test']), { until: 'finish' });
    w.emu.setCi(CONTROL_REPO, held);
    const make = (title: string, body: string, labels: string[] = []) =>
      w!.emu.createIssue(CONTROL_REPO, { title, body, labels: ['fleet:ready', ...labels] }).number;
    const first = make('First', SPEC);
    const second = make('Second', `${SPEC}Depends on #${first}\n`);
    const urgent = make('Urgent', SPEC, ['priority: high']);
    const vague = make('Vague', 'please improve');

    const scheduled = async () => {
      const run = await w!.runner.schedule({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', cron: '*/30 * * * *' });
      const s = await w!.runner.finish(run);
      expect(s.conclusion, explain(s)).toBe('success');
      await w!.emu.idle();
      return { s, ...reportArtifact(w!, run.id) };
    };

    const one = await scheduled();
    // Two slots: the high-priority issue and the lowest-numbered other one; the dependent and the vague one wait.
    expect(one.manifest.queue!.rows.flatMap((r) => r.started).sort()).toEqual([`issue-${first}`, `issue-${urgent}`].sort());
    expect(one.manifest.queue!.rows.find((r) => r.issue === second)).toMatchObject({
      state: 'BLOCKED_WORK',
      reason: `"Depends on #${first}": #${first} is open`,
    });
    expect(one.report).toContain('### Issue queue');
    const report = one.s.jobs.find((j) => /report/i.test(j.name))!;
    expect(report.summary).toMatch(new RegExp(`\\| #${vague} +\\| Vague +\\| NO_SPEC`));
    const check = w.emu.checkRuns(CONTROL_REPO).find((c) => c.output.summary?.includes('### Issue queue'));
    expect(check, 'the check run carries the board').toBeDefined();

    held.release();
    const two = await scheduled();
    expect(two.manifest.queue!.actions.filter((a) => a.includes('merged (squash)'))).toHaveLength(2);
    expect(two.manifest.queue!.rows.flatMap((r) => r.started)).toEqual([`issue-${second}`]);

    const three = await scheduled();
    expect(three.manifest.queue!.rows.map((r) => [r.issue, r.state])).toEqual([[vague, 'NO_SPEC']]);
    const open = w.emu
      .issues(CONTROL_REPO)
      .filter((i) => i.state === 'open')
      .map((i) => i.number);
    expect(open).toEqual([vague]);
    expect(w.emu.issues(CONTROL_REPO).find((i) => i.number === vague)!.comments).toHaveLength(1);
    expect(w.emu.pullRequests(CONTROL_REPO).filter((p) => p.merged_at)).toHaveLength(3);
  });
});
