/**
 * Review lenses and dispositions, locally (issue 9): a panel of lenses reviews each agent lane's change after its
 * checks pass, the worker gives each finding a disposition, ACCEPT findings go back to the worker for a fix round,
 * and at the round cap the lane goes to a person. The agent is test/support/fake-agents/review-agent.mjs, whose plan
 * says what the worker, each lens and the disposition step answer.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, FAKE_AGENTS, readRemoteFile } from '../support/repos.js';
import { fleet, lane, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const AGENT = join(FAKE_AGENTS, 'review-agent.mjs');

/** A fleet of one agent lane over a fresh repository, reviewed as `review` says; the agent follows `plan`. */
async function reviewed(plan: Record<string, unknown>, review: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const repo = await createRepo(dir, 'svc', { 'README.md': '# svc\n', 'src/app.js': 'export const value = 1;\n' }, { clone: false });
  const planFile = join(dir, 'plan.json');
  writeFileSync(planFile, JSON.stringify(plan));
  const file = writeFleetFile(dir, {
    name: 'rev',
    directive: 'Set the value.',
    agent: { preset: 'command', command: `node ${AGENT} --plan ${planFile} --prompt-file {prompt_file}` },
    owns: ['src/**'],
    max_retries: 0,
    max_parallel: 4,
    review,
    targets: [{ repo: './svc.git' }],
    ...extra,
  });
  const ws = join(dir, 'ws');
  const r = await fleet(runArgs(file, ws), { cwd: dir });
  const m = readManifest(ws);
  return { repo, r, m, ws, l: lane(m, 'svc'), report: readFileSync(join(ws, 'report.md'), 'utf8') };
}

const BUGGY = { 'src/app.js': 'export const value = BUG;\n' };

describe('review lenses', () => {
  it('lenses that find, refute, disagree and return garbage; the worker fixes what it accepted; follow-ups stay listed', async () => {
    const { repo, r, l, report, ws } = await reviewed(
      {
        write: BUGGY,
        lenses: { correctness: 'marker', security: 'marker-medium', 'edge-cases': 'refute', consistency: 'garbage-once', completeness: 'nitpick' },
        dispositions: { high: 'ACCEPT', low: 'FIX_LATER' },
        fix: 'fix',
      },
      { rounds: 3 },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(l).toMatchObject({ status: 'completed', phase: 'pushed', changed_files: ['src/app.js'] });
    // The branch holds the fixed change, not the one the lenses found wrong.
    expect(await readRemoteFile(repo.remote, 'fleet/rev/svc', 'src/app.js')).toBe('export const value = OK;\n');
    const review = l.review!;
    expect(review.verdict).toBe('clear');
    expect(review.rounds.map((x) => x.verdict)).toEqual(['fix', 'clear']);
    // Three lenses raised the BUG line (one said medium): one finding, every lens kept, the gravest severity.
    expect(review.findings).toEqual([
      expect.objectContaining({
        id: 'f1',
        severity: 'high',
        file: 'src/app.js',
        line: 1,
        lenses: ['correctness', 'security', 'consistency'],
        disposition: 'ACCEPT',
        status: 'fixed',
        rounds: [1],
      }),
      expect.objectContaining({
        id: 'f2',
        severity: 'low',
        lenses: ['completeness'],
        disposition: 'FIX_LATER',
        reason: 'planned for low',
        status: 'follow-up',
        rounds: [1, 2],
      }),
    ]);
    expect(review.open).toBe(0);
    const first = review.rounds[0]!;
    expect(first.lenses.map((x) => [x.lens, x.outcome, x.asked_again])).toEqual([
      ['correctness', 'findings', false],
      ['completeness', 'findings', false],
      ['security', 'findings', false],
      ['edge-cases', 'refuted', false],
      ['consistency', 'findings', true],
    ]);
    expect(first.fix).toMatchObject({ ok: true });
    // Round 2 saw the fixed change: the marker lenses refuted it, the nitpick stayed a follow-up.
    expect(review.rounds[1]!.lenses.filter((x) => x.outcome === 'refuted').map((x) => x.lens)).toEqual([
      'correctness',
      'security',
      'edge-cases',
      'consistency',
    ]);
    // Each lens had its own prompt with the diff; the fix round had the findings it accepted.
    expect(readFileSync(join(ws, 'lanes/svc/review/a1-r1-correctness.md'), 'utf8')).toContain('+export const value = BUG;');
    expect(readFileSync(join(ws, 'lanes/svc/review/a1-r1-fix.md'), 'utf8')).toMatch(
      /## Review findings to fix[\s\S]*f1 src\/app\.js:1: A BUG marker is left in the code\./,
    );
    expect(report).toContain('### Review');
    expect(report).toMatch(/\| svc \| 2 \| clear \| 1 high · 1 low \| correctness 1 · security 1 · consistency 1 · completeness 1 \| 0 \| 1 \| — \|/);
  });

  it('a lens that never answers in the schema is a failed lens, never "no findings": the lane goes to a person', async () => {
    const { r, l, report } = await reviewed({ write: BUGGY, lenses: { correctness: 'garbage' } }, { lenses: ['correctness'], rounds: 2 });
    expect(r.code).toBe(1);
    expect(l).toMatchObject({ status: 'failed', phase: 'draft', error: { class: 'code-review-needed' } });
    expect(l.error!.message).toContain('lens correctness gave no readable answer');
    expect(l.review!.rounds.map((x) => x.verdict)).toEqual(['review-again', 'needs-person']);
    expect(l.review!.rounds[0]!.lenses[0]).toMatchObject({ outcome: 'failed', asked_again: true, problem: 'the answer holds no JSON list of findings' });
    expect(report).toMatch(/\| svc \| 2 \| needs-person \| — \| — \| 0 \| 0 \| correctness \|/);
    expect(report).toMatch(/### Action required\n\n- `\.\/svc\.git` \(lane `svc`\) — code-review-needed: review reached its cap of 2 rounds/);
  });

  it('a worker that cannot fix: at the round cap the change is pushed for a person with its finding open', async () => {
    const { repo, r, l, report } = await reviewed(
      { write: BUGGY, lenses: { correctness: 'marker' }, fix: 'cannot' },
      { lenses: ['correctness', 'security'], rounds: 2 },
    );
    expect(r.code).toBe(1);
    expect(l).toMatchObject({ status: 'failed', phase: 'draft', merge_status: 'draft', error: { class: 'code-review-needed' } });
    expect(l.error!.message).toMatch(
      /review reached its cap of 2 rounds with 1 ACCEPT finding open \(f1 src\/app\.js:1 A BUG marker is left in the code\.\); the branch fleet\/rev\/svc is pushed/,
    );
    expect(l.review!.findings).toEqual([expect.objectContaining({ id: 'f1', status: 'open', rounds: [1, 2] })]);
    expect(await readRemoteFile(repo.remote, 'fleet/rev/svc', 'src/app.js')).toBe('export const value = BUG;\n');
    expect(report).toContain(
      'Open findings (ACCEPT, not fixed by the round cap):\n\n- `svc` f1 (high; correctness) `src/app.js:1`: A BUG marker is left in the code.',
    );
  });

  it('a blocking severity is ACCEPT whatever the worker says; a lower one it may defer', async () => {
    const { l } = await reviewed(
      { write: BUGGY, lenses: { correctness: 'marker', completeness: 'nitpick' }, dispositions: { high: 'DEFER', low: 'DEFER' }, fix: 'fix' },
      { lenses: ['correctness', 'completeness'], block: ['high'], rounds: 2 },
    );
    expect(l.status).toBe('completed');
    expect(l.review!.findings).toEqual([
      expect.objectContaining({ severity: 'high', disposition: 'ACCEPT', forced: true, reason: 'planned for high', status: 'fixed' }),
      expect.objectContaining({ severity: 'low', disposition: 'DEFER', forced: false, status: 'deferred' }),
    ]);
  });

  it("unreadable dispositions count as ACCEPT: only the worker's word lets a finding pass unfixed", async () => {
    const { l } = await reviewed(
      { write: BUGGY, lenses: { completeness: 'nitpick' }, dispositions: 'garbage', fix: 'cannot' },
      { lenses: ['completeness'], rounds: 2 },
    );
    expect(l.status).toBe('failed');
    expect(l.review!.rounds[0]!.dispositions_problem).toBe('the answer holds no JSON list of dispositions');
    expect(l.review!.findings[0]).toMatchObject({ severity: 'low', disposition: 'ACCEPT', status: 'open' });
  });

  it('a fix round outside the fence is undone and the change before it kept; a lens that edits has its edit undone', async () => {
    const { repo, r, l } = await reviewed(
      { write: BUGGY, lenses: { correctness: 'marker', security: 'edit' }, fix: 'outside' },
      { lenses: ['correctness', 'security'], rounds: 2 },
    );
    expect(r.code).toBe(1);
    expect(l.review!.rounds[0]!.fix).toMatchObject({ ok: false, detail: expect.stringContaining('OUTSIDE.txt') });
    expect(l.review!.rounds[0]!.fix!.detail).toContain('the change before this fix round was kept');
    expect(l.changed_files).toEqual(['src/app.js']);
    expect(await readRemoteFile(repo.remote, 'fleet/rev/svc', 'OUTSIDE.txt')).toBeNull();
    expect(await readRemoteFile(repo.remote, 'fleet/rev/svc', 'README.md')).toBe('# svc\n');
    expect(l.evidence.notes).toContain('a lens of review round 1 changed the working copy, which it was told not to do; its changes were undone');
  });

  it("reads Claude Code's JSON result: the lens answer is its `result`, and the panel's cost and turns are summed", async () => {
    const { r, l } = await reviewed(
      { write: BUGGY, lenses: { correctness: 'marker' }, dispositions: { high: 'ACCEPT' }, fix: 'fix' },
      { lenses: ['correctness', 'security'], rounds: 2 },
      { agent: { preset: 'claude', command: `node ${AGENT} --plan ${join(dir, 'plan.json')}` } },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(l.review!.rounds.map((x) => x.verdict)).toEqual(['fix', 'clear']);
    // Round 1: two lenses, the dispositions and the fix round; round 2: two lenses. The lane's own spending adds the worker's first run.
    expect(l.review!.usage).toMatchObject({ turns: 12, cost_usd: 0.06 });
    expect(l.usage).toMatchObject({ turns: 14, cost_usd: 0.07 });
  });

  it('a lane with review: false, and a lane whose own run: is a script, are not reviewed', async () => {
    await createRepo(dir, 'other', { 'README.md': '# other\n' }, { clone: false });
    const { l, m } = await reviewed(
      { write: BUGGY, lenses: { correctness: 'marker' } },
      { lenses: ['correctness'] },
      {
        targets: [
          { repo: './svc.git', review: false },
          { repo: './other.git', run: 'echo x > src-x.txt', owns: ['**'] },
        ],
      },
    );
    expect(l).toMatchObject({ status: 'completed' });
    expect(l.review ?? null).toBeNull();
    expect(lane(m, 'other').review ?? null).toBeNull();
  });
});
