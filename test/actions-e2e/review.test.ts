/**
 * Review lenses through the reusable workflow: the lane jobs run the panel, the dispositions and the fix rounds with
 * the agent (a fake Claude Code that plays every part, test/support/fake-agents/review-agent.mjs); a lane whose review
 * reaches its cap hands a draft PR to a person and its dependent does not start; the report job's summary shows the
 * review; and a lens that quotes the agent key gets it scrubbed before Fleet keeps a word of it.
 */
import { tempDir } from '../integration/helpers.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FAKE_AGENTS } from '../support/repos.js';
import type { RunSummary } from '../support/actions-runner/index.js';
import { artifactsOf, CONTROL_REPO, dispatchFleet, explain, reportArtifact, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

const KEY = 'sk-ant-api03-FleetReviewTestKey-0123456789abcdefghijklmno';

let w: World;
let runId: number;
let s: RunSummary;
let planDir: string;

beforeAll(async () => {
  // Read by the fake agents, which run as nobody where the suite runs as root: open to every user.
  planDir = tempDir('fleet-review-plan-');
  const plan = join(planDir, 'plan.json');
  writeFileSync(
    plan,
    JSON.stringify({
      write: { 'src/app.js': 'export const value = BUG;\n' },
      lenses: { correctness: 'marker', security: 'leak-escaped' },
      dispositions: { high: 'ACCEPT', low: 'FIX_LATER' },
      fix: 'fix',
      lanes: { stuck: { fix: 'cannot', lenses: { correctness: 'marker' } } },
    }),
  );
  w = await startWorld({
    fleetFile: {
      name: 'rev',
      forge: 'github',
      directive: 'Set the value.',
      // Claude Code's preset (its JSON result, its key), played by the fake: nothing to install.
      agent: { preset: 'claude', command: `node ${join(FAKE_AGENTS, 'review-agent.mjs')} --plan ${plan}`, install: false },
      owns: ['src/**'],
      max_retries: 0,
      review: { lenses: ['correctness', 'security'], rounds: 2 },
      targets: [{ repo: 'acme/fixes' }, { repo: 'acme/stuck' }, { repo: 'acme/after', depends_on: ['stuck'] }],
    },
  });
  for (const name of ['fixes', 'stuck', 'after'])
    await w.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n`, 'src/app.js': 'export const value = 1;\n' } });
  w.runner.setSecret(CONTROL_REPO, 'ANTHROPIC_API_KEY', KEY);
  const r = await dispatchFleet(w, { directive: 'Set the value.' });
  runId = r.runId;
  s = r.s;
});
afterAll(async () => {
  await w?.close();
  rmSync(planDir, { recursive: true, force: true });
});

const lane = (id: string) => reportArtifact(w, runId).manifest.lanes.find((l) => l.lane === id)!;

describe('a reviewed agent fleet through the reusable workflow', () => {
  it('a lane whose worker fixes what it accepted opens a ready PR listing its follow-up work', async () => {
    const fixes = lane('fixes');
    expect(fixes, explain(s)).toMatchObject({ status: 'completed', phase: 'pr-open' });
    expect(fixes.review).toMatchObject({ verdict: 'clear', open: 0 });
    expect(fixes.review!.rounds.map((r) => r.verdict)).toEqual(['fix', 'clear']);
    // Claude Code's JSON results, summed: each round 2 lenses and a disposition step (the quoted key is raised again),
    // and the fix round between them: 7 runs of 2 turns.
    expect(fixes.review!.usage.turns).toBe(14);
    const [pr] = w.emu.pullRequests('acme/fixes');
    expect(pr).toMatchObject({ draft: false, labels: [] });
    expect(pr!.body).toContain('**Follow-up work** (1)');
    expect(execFileSync('git', ['--git-dir', join(w.emu.reposDir, 'acme/fixes.git'), 'show', 'fleet/rev/fixes:src/app.js'], { encoding: 'utf8' })).toBe(
      'export const value = OK;\n',
    );
  });

  it('a lane at the round cap hands a draft PR, labelled, to a person; its dependent does not start', () => {
    expect(lane('stuck')).toMatchObject({ status: 'failed', phase: 'draft', error: { class: 'code-review-needed' } });
    expect(w.emu.pullRequests('acme/stuck')).toMatchObject([{ draft: true, labels: ['fleet:needs-person'] }]);
    expect(lane('after')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    expect(s.conclusion).toBe('failure');
  });

  it("the report job's summary and the report show the review and the open finding", () => {
    const { report } = reportArtifact(w, runId);
    for (const text of [report, s.jobs.find((j) => j.name === 'fleet / report')!.summary]) {
      expect(text).toContain('### Review');
      expect(text).toMatch(/\| fixes \| 2 \| clear \| 1 high · 1 low \| correctness 1 · security 1 \| 0 \| 1 \| — \|/);
      expect(text).toContain('- `stuck` f1 (high; correctness) `src/app.js:1`: A BUG marker is left in the code.');
    }
  });

  it('the key a lens quoted is scrubbed from the manifest and the PR body, and reaches no artifact, summary or log', () => {
    const f = lane('fixes').review!.findings.find((x) => x.lenses.includes('security'))!;
    expect(f.finding).toBe('The key is ***.');
    const dir = mkdtempSync(join(tmpdir(), 'review-artifacts-'));
    try {
      for (const a of artifactsOf(w, runId).values()) {
        writeFileSync(join(dir, `${a.name}.zip`), w.services.artifactContent(a.id)!);
        execFileSync('unzip', ['-q', '-o', join(dir, `${a.name}.zip`), '-d', join(dir, a.name)]);
      }
      // The lens logs travel in the lane artifacts (redacted); their raw answers do not.
      const files = execFileSync('find', [dir, '-path', '*review*', '-type', 'f'], { encoding: 'utf8' });
      expect(files).toContain('lanes/fixes/review/a1-r1-security.log');
      expect(files).not.toContain('.out');
      const hits = execFileSync('sh', ['-c', `grep -rl -F -e "$K" "${dir}" | grep -v '\\.zip$' || true`], {
        env: { ...process.env, K: KEY },
        encoding: 'utf8',
      }).trim();
      expect(hits).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    for (const j of s.jobs) {
      expect(j.log, j.name).not.toContain(KEY);
      expect(j.summary, j.name).not.toContain(KEY);
    }
    for (const r of ['fixes', 'stuck']) for (const pr of w.emu.pullRequests(`acme/${r}`)) expect(pr.body).not.toContain(KEY);
    for (const c of w.emu.checkRuns(CONTROL_REPO)) expect(JSON.stringify(c)).not.toContain(KEY);
  });
});
