/**
 * Budgets and cost, locally (issue 9): a lane's caps on agent turns and cost, handed to Claude Code as what is left
 * (--max-turns, --max-budget-usd) and checked by Fleet before every agent run; the fleet's cost ceiling, after which
 * no lane starts; and the spending per lane, per lens panel and for the fleet in the manifest and the report. The agent
 * is review-agent.mjs under the claude preset: every run reports $0.01 and 2 turns, as Claude Code's JSON result does.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, FAKE_AGENTS } from '../support/repos.js';
import { fleet, lane, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

async function spend(plan: Record<string, unknown>, extra: Record<string, unknown>, names = ['svc']) {
  for (const name of names) await createRepo(dir, name, { 'README.md': `# ${name}\n`, 'src/app.js': 'export const value = 1;\n' }, { clone: false });
  const planFile = join(dir, 'plan.json');
  writeFileSync(planFile, JSON.stringify({ record: join(dir, 'run'), write: { 'src/app.js': 'export const value = 2;\n' }, ...plan }));
  const file = writeFleetFile(dir, {
    name: 'spend',
    directive: 'Set the value.',
    agent: { preset: 'claude', command: `node ${join(FAKE_AGENTS, 'review-agent.mjs')} --plan ${planFile}` },
    owns: ['src/**'],
    max_parallel: 1,
    targets: names.map((n) => ({ repo: `./${n}.git` })),
    ...extra,
  });
  const ws = join(dir, 'ws');
  const r = await fleet(runArgs(file, ws), { cwd: dir });
  return { r, m: readManifest(ws), report: readFileSync(join(ws, 'report.md'), 'utf8') };
}

const argvOf = (id: string) =>
  readFileSync(join(dir, `run-${id}.argv.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as string[]);
const flag = (argv: string[], name: string) => argv[argv.indexOf(name) + 1];

describe('budgets', () => {
  it("a lane's cost cap: Claude Code gets what is left each attempt, and no attempt starts once it is spent", async () => {
    const { r, m } = await spend({ worker: 'fail' }, { max_retries: 5, budget: { lane: { cost_usd: 0.03, turns: 100 } } });
    expect(r.code).toBe(1);
    const l = lane(m, 'svc');
    expect(l.attempts).toHaveLength(3);
    expect(l.error).toEqual({ class: 'budget-exceeded', message: "the lane's cost cap of $0.03 is reached ($0.03 spent): attempt 4 did not start" });
    expect(l.usage).toEqual({ cost_usd: 0.03, turns: 6, input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    expect(argvOf('svc').map((a) => [flag(a, '--max-turns'), flag(a, '--max-budget-usd')])).toEqual([
      ['100', '0.03'],
      ['98', '0.02'],
      ['96', '0.01'],
    ]);
  });

  it("the fleet's ceiling reached mid-fleet: the lanes after it do not start, and the report says which and why", async () => {
    // One directive at a time (max_parallel 1): each lane's spending is counted before the next one's first agent run.
    const { r, m, report } = await spend({}, { budget: { fleet: { cost_usd: 0.02 } } }, ['a', 'b', 'c', 'd']);
    // Not every lane completed: the fleet did not do its work (exit 1).
    expect(r.code).toBe(1);
    expect(m.lanes.map((l) => [l.lane, l.status])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'skipped'],
      ['d', 'skipped'],
    ]);
    expect(lane(m, 'a').usage).toMatchObject({ cost_usd: 0.01, turns: 2 });
    for (const id of ['c', 'd'])
      expect(lane(m, id).error).toEqual({ class: 'budget-exceeded', message: "not started: the fleet's cost ceiling of $0.02 is reached ($0.02 spent)" });
    expect(m.summary.usage).toMatchObject({ cost_usd: 0.02, turns: 4 });
    expect(report).toContain('| Agent cost | $0.02 |');
    expect(report).toMatch(
      /### Spending\n\n\| Lane \| Turns \| Tokens in \| Tokens out \| Cost \| Of which review \|\n[^\n]+\n\| a \| 2 \| \d+ \| \d+ \| \$0\.01 \| — \|/,
    );
    expect(report).toMatch(/\| \*\*Fleet\*\* \| 4 \| \d+ \| \d+ \| \$0\.02 \| — \|/);
    expect(report).toContain("Did not start (the fleet's cost ceiling was reached): `c`, `d`.");
  });

  it('a cap reached during review stops it: the change goes to a person, saying the budget stopped the review', async () => {
    const { r, m, report } = await spend(
      { write: { 'src/app.js': 'export const value = BUG;\n' }, lenses: { correctness: 'marker', security: 'refute' }, dispositions: { high: 'ACCEPT' } },
      { budget: { lane: { cost_usd: 0.04 } }, review: { lenses: ['correctness', 'security'], rounds: 3 } },
    );
    expect(r.code).toBe(1);
    const l = lane(m, 'svc');
    expect(l).toMatchObject({ status: 'failed', phase: 'draft', error: { class: 'budget-exceeded' } });
    expect(l.error!.message).toMatch(
      /^the review stopped after 1 round: the lane's cost cap of \$0\.04 is reached \(\$0\.04 spent\), with 1 ACCEPT finding open/,
    );
    expect(l.review).toMatchObject({ verdict: 'needs-person', stopped: "the lane's cost cap of $0.04 is reached ($0.04 spent)" });
    // The two lenses ran at once: each was handed half of the $0.03 left after the worker's run (cut to the cent).
    const lensRuns = readFileSync(join(dir, 'run-svc.runs.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { role: string; argv: string[] });
    expect(lensRuns.filter((r) => r.role === 'correctness' || r.role === 'security').map((r) => flag(r.argv, '--max-budget-usd'))).toEqual(['0.01', '0.01']);
    expect(flag(lensRuns.find((r) => r.role === 'worker')!.argv, '--max-budget-usd')).toBe('0.04');
    // The lane's spending holds its panel's: the worker's run, then two lenses and the disposition step.
    expect(l.usage).toMatchObject({ cost_usd: 0.04, turns: 8 });
    expect(l.review!.usage).toMatchObject({ cost_usd: 0.03, turns: 6 });
    expect(report).toMatch(/\| svc \| 8 \| \d+ \| \d+ \| \$0\.04 \| \$0\.03 \|/);
    expect(report).toContain('Stopped by a budget while running: `svc`.');
  });

  it('a run is never charged more than the cost it was handed: a made-up result line cannot spend the budget on paper', async () => {
    // The agent claims $5 a run; the lane had $0.02 left, and that is what Fleet counts.
    const { r, m } = await spend({ worker: 'fail', cost: 5 }, { max_retries: 3, budget: { lane: { cost_usd: 0.04 }, fleet: { cost_usd: 100 } } });
    expect(r.code).toBe(1);
    const l = lane(m, 'svc');
    expect(l.attempts).toHaveLength(1);
    expect(l.usage).toMatchObject({ cost_usd: 0.04 });
    expect(l.error).toEqual({ class: 'budget-exceeded', message: "the lane's cost cap of $0.04 is reached ($0.04 spent): attempt 2 did not start" });
    expect(m.summary.usage).toMatchObject({ cost_usd: 0.04 });
  });
});
