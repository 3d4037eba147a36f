import { describe, expect, it } from 'vitest';
import { finalizeManifest, initManifest, mergeLaneRecords, type ManifestInit } from '../../src/core/manifest.js';
import { emptyEvidence, newLaneRecord, type LaneRecord, type Manifest } from '../../src/core/model.js';
import {
  escapeCell,
  laneAnnotations,
  laneCount,
  laneResult,
  renderMermaid,
  renderPlan,
  renderReport,
  renderShard,
  renderStatusTable,
} from '../../src/core/report.js';

const T0 = '2026-04-20T07:15:00Z';
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000).toISOString();
const WORKSPACE = '_workspace/fleet';

function baseInit(over: Partial<ManifestInit> = {}): ManifestInit {
  return {
    fleet_id: 'fleet-20260420-071500',
    name: 'lodash-bump',
    forge: 'github',
    started_at: T0,
    directive: 'Bump lodash to ^4.17.21 and fix whatever breaks\nRun the repository tests before committing.',
    max_parallel: 4,
    max_retries: 3,
    checkpoint: 'green',
    merge_policy: 'when-green',
    dry_run: false,
    waves: [],
    contention: [],
    excluded: [],
    lanes: [],
    skipped: [],
    ...over,
  };
}

const branch = (lane: string) => `fleet/lodash-bump/${lane}`;

/**
 * The representative fleet: a dependency chain core → api → cli, a second lane in
 * acme/core pushed a wave later by contention, a no-op, an archived (excluded)
 * target, a lane skipped at plan time because its dependency is excluded.
 */
function planned(): Manifest {
  return initManifest(
    baseInit({
      waves: [
        { index: 0, lanes: ['core', 'docs'], exclusive: false, shards: [{ id: 'w0-s0', wave: 0, lanes: ['core', 'docs'] }], parallel: 1 },
        {
          index: 1,
          lanes: ['api', 'core-docs', 'web'],
          exclusive: false,
          shards: [
            { id: 'w1-s0', wave: 1, lanes: ['api', 'web'] },
            { id: 'w1-s1', wave: 1, lanes: ['core-docs'] },
          ],
          parallel: 2,
        },
        { index: 2, lanes: ['cli'], exclusive: true, shards: [{ id: 'w2-s0', wave: 2, lanes: ['cli'] }], parallel: 1 },
      ],
      contention: [{ lane: 'core-docs', repo: 'acme/core', wanted_wave: 0, wave: 1, because_of: 'core', reason: 'owns overlap: docs/** and **/*.md' }],
      excluded: [{ repo: 'acme/old-lib', lane: 'old-lib', reason: 'archived', detail: 'repository is archived' }],
      lanes: [
        { repo: 'acme/core', lane: 'core', wave: 0, branch: branch('core'), depends_on: [] },
        { repo: 'acme/docs', lane: 'docs', wave: 0, branch: branch('docs'), depends_on: [] },
        { repo: 'acme/api', lane: 'api', wave: 1, branch: branch('api'), depends_on: ['core'] },
        { repo: 'acme/core', lane: 'core-docs', wave: 1, branch: branch('core-docs'), depends_on: [] },
        { repo: 'acme/web', lane: 'web', wave: 1, branch: branch('web'), depends_on: ['core'] },
        { repo: 'acme/cli', lane: 'cli', wave: 2, branch: branch('cli'), depends_on: ['api'] },
      ],
      skipped: [{ repo: 'acme/legacy', lane: 'legacy', reason: 'depends on excluded lane old-lib', depends_on: ['old-lib'] }],
    }),
  );
}

/** A lane record as a lane would report it: newLaneRecord for the lane, then what happened. */
function rec(m: Manifest, lane: string, patch: Partial<LaneRecord>): LaneRecord {
  const cur = m.lanes.find((l) => l.lane === lane);
  if (!cur) throw new Error(`test fixture: no lane ${lane}`);
  return { ...newLaneRecord({ repo: cur.repo, lane, wave: cur.wave, branch: cur.branch, depends_on: cur.depends_on }), ...patch };
}

const pr = (repo: string, n: number) => ({ pr_number: n, pr_url: `https://github.com/${repo}/pull/${n}` });

/** 00:12:34 into the run: wave 1 is under way. */
const MID_NOW = at(754);
function midRun(): Manifest {
  const m = planned();
  return mergeLaneRecords(m, [
    rec(m, 'core', {
      status: 'completed',
      phase: 'merged',
      started_at: at(5),
      updated_at: at(300),
      ended_at: at(300),
      commit: 'a1b2c3d4e5f6',
      changed_files: ['package.json', 'package-lock.json'],
      ...pr('acme/core', 12),
      ci_conclusion: 'success',
      merge_status: 'merged',
      log: 'lanes/core/attempt-1.log',
    }),
    rec(m, 'docs', { status: 'completed', phase: 'no-op', started_at: at(5), updated_at: at(120), ended_at: at(120), log: 'lanes/docs/attempt-1.log' }),
    rec(m, 'api', {
      status: 'running',
      phase: 'ci',
      started_at: at(310),
      updated_at: at(712),
      commit: 'b2c3d4e5f6a1',
      ...pr('acme/api', 34),
      ci_conclusion: 'pending',
      merge_status: 'pending',
      retry_count: 1,
      log: 'lanes/api/attempt-2.log',
    }),
    rec(m, 'web', { status: 'running', phase: 'running', started_at: at(310), updated_at: at(736), log: 'lanes/web/attempt-1.log' }),
  ]);
}

/** 00:27:14: everything has ended. */
const END = at(1634);
function finished(): Manifest {
  const m = midRun();
  const merged = mergeLaneRecords(m, [
    rec(m, 'api', {
      status: 'failed',
      phase: 'failed',
      started_at: at(310),
      updated_at: at(1500),
      ended_at: at(1500),
      commit: 'c3d4e5f6a1b2',
      ...pr('acme/api', 34),
      ci_conclusion: 'failure',
      merge_status: 'not-requested',
      retry_count: 2,
      error: { class: 'ci-failed', message: 'CI failed after 2 retries: 3 tests fail in test/routes.test.ts\n  at routes.test.ts:41' },
      log: 'lanes/api/attempt-3.log',
    }),
    rec(m, 'web', {
      status: 'failed',
      phase: 'draft',
      started_at: at(310),
      updated_at: at(1400),
      ended_at: at(1400),
      commit: 'd4e5f6a1b2c3',
      ...pr('acme/web', 56),
      ci_conclusion: 'failure',
      merge_status: 'draft',
      retry_count: 3,
      error: { class: 'code-review-needed', message: 'Type errors remain after 3 attempts; the PR was turned into a draft for review.' },
      log: 'lanes/web/attempt-4.log',
    }),
    rec(m, 'core-docs', {
      status: 'completed',
      phase: 'merged',
      started_at: at(310),
      updated_at: at(800),
      ended_at: at(800),
      commit: 'e5f6a1b2c3d4',
      ...pr('acme/core', 13),
      ci_conclusion: 'success',
      merge_status: 'merged',
      log: 'lanes/core-docs/attempt-1.log',
    }),
    rec(m, 'cli', {
      status: 'skipped',
      phase: 'skipped',
      updated_at: at(1510),
      error: { class: 'dependency-failed', message: 'dependency api failed (ci-failed)' },
    }),
  ]);
  return finalizeManifest(merged, END);
}

/** Cells of a markdown table row, split on unescaped pipes. */
function cells(row: string): string[] {
  return row
    .split(/(?<!\\)\|/)
    .slice(1, -1)
    .map((c) => c.trim());
}
const tableRows = (md: string) => md.split('\n').filter((l) => l.startsWith('| '));
/** Each table of a document: its runs of consecutive `|` lines. */
function tables(md: string): string[][] {
  const out: string[][] = [];
  let cur: string[] | null = null;
  for (const line of md.split('\n')) {
    if (line.startsWith('|')) (cur ??= []).push(line);
    else if (cur) {
      out.push(cur);
      cur = null;
    }
  }
  if (cur) out.push(cur);
  return out;
}

const usage = (cost: number, turns: number) => ({ cost_usd: cost, turns, input_tokens: turns * 1000, output_tokens: turns * 100 });

/** The representative fleet run by agents, with the parts issue 9 adds: a review per lane, a relay, spending, an integration. */
function agentFleet(): Manifest {
  const m = finished();
  const finding = (id: string, over: Record<string, unknown>) => ({
    id,
    severity: 'high' as const,
    file: 'src/routes.ts',
    line: 41,
    finding: 'The retry loop never stops on a 4xx.',
    suggested_fix: 'Stop on 4xx.',
    lenses: ['correctness', 'edge-cases'],
    disposition: 'ACCEPT' as const,
    forced: true,
    reason: 'right',
    rounds: [1, 2],
    status: 'open' as const,
    ...over,
  });
  const round = (n: number, verdict: 'fix' | 'clear' | 'needs-person') => ({
    n,
    lenses: [
      {
        lens: 'correctness',
        outcome: 'findings' as const,
        findings: 1,
        asked_again: false,
        problem: null,
        exit_code: 0,
        duration_ms: 9000,
        log: `lanes/x/review/a1-r${n}-correctness.log`,
        usage: usage(0.02, 3),
      },
      {
        lens: 'edge-cases',
        outcome: 'failed' as const,
        findings: 0,
        asked_again: true,
        problem: 'the answer holds no JSON list of findings',
        exit_code: 0,
        duration_ms: 7000,
        log: `lanes/x/review/a1-r${n}-edge-cases-again.log`,
        usage: null,
      },
    ],
    raised: ['f1'],
    verdict,
    dispositions_problem: null,
    fix: verdict === 'fix' ? { ok: true, detail: 'changed 1 file; fence and checks passed', log: 'lanes/x/review/a1-r1-fix.log' } : null,
  });
  const lanes = m.lanes.map((l): LaneRecord => {
    if (l.lane === 'web') {
      return {
        ...l,
        usage: usage(1.25, 40),
        review: {
          verdict: 'needs-person',
          rounds: [round(1, 'fix'), round(2, 'needs-person')],
          findings: [finding('f1', {})],
          open: 1,
          usage: usage(0.5, 12),
          stopped: null,
        },
      };
    }
    if (l.lane === 'core-docs') {
      return {
        ...l,
        usage: usage(0.4, 10),
        discoveries: ['`docs/_sidebar.md` lists every page: add new pages there', 'The docs build needs Node 20.'],
        review: {
          verdict: 'clear',
          rounds: [round(1, 'clear')],
          findings: [
            finding('f1', {
              severity: 'low',
              file: 'docs/use.md',
              line: 3,
              finding: 'A heading skips a level.',
              lenses: ['consistency'],
              disposition: 'FIX_LATER',
              forced: false,
              rounds: [1],
              status: 'follow-up',
            }),
          ],
          open: 0,
          usage: usage(0.1, 4),
          stopped: null,
        },
      };
    }
    if (l.lane === 'cli') return { ...l, relay: { items: 2, from: ['core-docs'] } };
    return l;
  });
  const integration = [
    {
      repo: 'acme/core',
      branch: 'fleet/upgrade/_integration',
      base_branch: 'main',
      base_commit: 'a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2',
      head: 'f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1',
      waves: [
        {
          wave: 0,
          order: ['core', 'core-docs'],
          already: [],
          held: [{ lane: 'core-extra', conflicts: ['src/index.ts'], reason: 'merging it into fleet/upgrade/_integration conflicts in src/index.ts' }],
          seams: [{ lanes: ['core-docs', 'core'], check: 'npm test', ok: true, detail: null }],
          head: 'f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1',
        },
      ],
      release: {
        branch: 'fleet/upgrade/_release',
        commit: 'f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1',
        gate: [{ lanes: ['core', 'core-docs'], check: 'npm test', ok: true, detail: null }],
        ok: true,
        pr_url: 'https://github.com/acme/core/pull/77',
        pr_number: 77,
      },
    },
  ];
  return finalizeManifest({ ...m, lanes, integration }, m.ended_at!);
}

describe('snapshots of a representative fleet', () => {
  it('status table mid-run', async () => {
    await expect(renderStatusTable(midRun(), { now: MID_NOW })).toMatchFileSnapshot('./__snapshots__/report.status.md');
  });

  it('final report', async () => {
    await expect(renderReport(finished(), { now: END, workspace: WORKSPACE })).toMatchFileSnapshot('./__snapshots__/report.final.md');
  });

  it('final report of an agent fleet: review, relay, spending, integration', async () => {
    await expect(renderReport(agentFleet(), { now: END, workspace: WORKSPACE })).toMatchFileSnapshot('./__snapshots__/report.agents.md');
  });

  it('plan with mermaid graph', async () => {
    await expect(renderPlan(planned())).toMatchFileSnapshot('./__snapshots__/report.plan.md');
  });

  it('is deterministic and leaves the manifest alone', () => {
    const m = finished();
    const before = structuredClone(m);
    const a = [renderStatusTable(m, { now: END }), renderReport(m, { now: END, workspace: WORKSPACE }), renderPlan(m)];
    const b = [renderStatusTable(m, { now: END }), renderReport(m, { now: END, workspace: WORKSPACE }), renderPlan(m)];
    expect(a).toEqual(b);
    expect(m).toEqual(before);
  });
});

describe('renderStatusTable', () => {
  it('reports the counts and ages', () => {
    const md = renderStatusTable(midRun(), { now: MID_NOW });
    // The no-op lane (docs) is counted as a no-op, not among the completed ones.
    expect(md).toContain('Elapsed: 00:12:34 | Active: 2 / 4 | Queued: 2 | Completed: 1 | No-op: 1 | Failed: 0 | Skipped: 1 | Excluded: 1');
    const api = tableRows(md).find((r) => cells(r)[2] === 'api')!;
    expect(cells(api)).toEqual(['1', 'acme/api', 'api', '2', 'ci', '[#34](https://github.com/acme/api/pull/34)', 'pending', 'pending', '1', '00:00:42 ago']);
  });

  it('a lane waiting for a slot is not counted as active (issue 27: "Active: 2 / 1")', () => {
    const m = midRun();
    const running = m.lanes.filter((l) => l.status === 'running');
    expect(running.length).toBe(2);
    const one = { ...m, max_parallel: 1, lanes: m.lanes.map((l) => (l === running[1] ? { ...l, phase: 'waiting' as const } : l)) };
    expect(renderStatusTable(one, { now: MID_NOW })).toContain('| Active: 1 / 1 | Waiting for a slot: 1 | Queued: 2 |');
  });

  it('freezes elapsed time once the fleet has ended', () => {
    expect(renderStatusTable(finished(), { now: at(99_999) })).toContain('Elapsed: 00:27:14 |');
  });

  it('caps rows, running and failed first', () => {
    const ids = Array.from({ length: 60 }, (_, i) => `lane-${String(i).padStart(2, '0')}`);
    const m0 = initManifest(baseInit({ lanes: ids.map((id) => ({ repo: `acme/${id}`, lane: id, wave: 0, branch: branch(id), depends_on: [] })) }));
    const m = mergeLaneRecords(m0, [
      rec(m0, 'lane-57', { status: 'running', phase: 'ci', updated_at: at(10) }),
      rec(m0, 'lane-58', { status: 'running', phase: 'pr', updated_at: at(10) }),
      rec(m0, 'lane-59', { status: 'failed', phase: 'failed', updated_at: at(10) }),
    ]);
    const md = renderStatusTable(m, { now: at(20), maxRows: 10 });
    const rows = tableRows(md).slice(1); // drop the header
    expect(rows).toHaveLength(10);
    expect(rows.slice(0, 3).map((r) => cells(r)[2])).toEqual(['lane-57', 'lane-58', 'lane-59']);
    expect(md).toContain('… and 50 more (50 queued)');
    expect(md.trimEnd().endsWith('… and 50 more (50 queued)')).toBe(true);

    // Default cap is 50.
    expect(tableRows(renderStatusTable(m, { now: at(20) })).slice(1)).toHaveLength(50);
    expect(renderStatusTable(m, { now: at(20) })).toContain('… and 10 more (10 queued)');
    expect(renderStatusTable(m, { now: at(20), maxRows: 100 })).not.toContain('more (');
  });
});

describe('escaping', () => {
  const NASTY = 'boom | pipe <script>alert(1)</script> `tick` [x](http://evil) *em*\nsecond line | here';

  function nastyFleet(): Manifest {
    const m0 = initManifest(
      baseInit({
        directive: 'Run <img src=x onerror=alert(1)> | and `this`',
        lanes: [{ repo: 'acme/a|b', lane: 'nasty', wave: 0, branch: branch('nasty'), depends_on: [] }],
      }),
    );
    return finalizeManifest(
      mergeLaneRecords(m0, [
        rec(m0, 'nasty', {
          status: 'failed',
          phase: 'failed',
          updated_at: at(5),
          error: { class: 'directive-failed', message: NASTY },
          log: 'lanes/nasty/attempt-1.log',
        }),
      ]),
      at(10),
    );
  }

  it('keeps a lane message inside its cell and out of HTML', () => {
    const m = nastyFleet();
    for (const md of [renderReport(m, { now: at(10), workspace: WORKSPACE }), renderStatusTable(m, { now: at(10) }), renderPlan(m)]) {
      expect(md).not.toMatch(/<script|<img/i);
      expect(md).not.toContain('second line'); // only the first line of a message is shown
      // Every row of every table has as many cells as its header.
      for (const t of tables(md)) for (const row of t) expect(cells(row).length, row).toBe(cells(t[0]!).length);
    }
    const report = renderReport(m, { now: at(10), workspace: WORKSPACE });
    const lane = tableRows(report).find((r) => cells(r)[0] === 'nasty')!;
    expect(cells(lane)).toHaveLength(7);
    expect(cells(lane)[1]).toBe('acme/a\\|b');
    expect(cells(lane)[6]).toBe('directive-failed: boom \\| pipe &lt;script&gt;alert(1)&lt;/script&gt; \\`tick\\` \\[x\\](http://evil) \\*em\\* …');
    expect(report).toContain('Directive: Run &lt;img src=x onerror=alert(1)&gt; \\| and \\`this\\`');
    // In the action list the repo sits in a code span (literal there) and the message is escaped.
    expect(report).toContain(
      '- `acme/a|b` (lane `nasty`) — directive-failed: boom \\| pipe &lt;script&gt;alert(1)&lt;/script&gt; \\`tick\\` \\[x\\](http://evil) \\*em\\* … Log: `_workspace/fleet/lanes/nasty/attempt-1.log`',
    );
  });

  it('escapeCell handles pipes, tags, line breaks, backslashes, entities and invisibles', () => {
    expect(escapeCell('a|b')).toBe('a\\|b');
    expect(escapeCell('<b>x</b>')).toBe('&lt;b&gt;x&lt;/b&gt;');
    expect(escapeCell('one\r\ntwo\n\n  three')).toBe('one two three');
    expect(escapeCell('ends with \\')).toBe('ends with \\\\'); // cannot escape the cell's closing pipe
    expect(escapeCell('C:\\path\\file')).toBe('C:\\path\\file'); // a backslash before a letter is literal already
    expect(escapeCell('a\\|b')).toBe('a\\\\\\|b');
    // The # of an entity gets its zero-width space too (every # before a digit): it still reads as written.
    expect(escapeCell('&lt; && &#124;')).toBe('&amp;lt; && &amp;#&#8203;124;');
    expect(escapeCell('x\u202Eevil\u0007')).toBe('xevil');
    expect(escapeCell('`code`')).toBe('\\`code\\`');
  });

  it('truncates the directive to its first line and 200 characters', () => {
    const m = initManifest(baseInit({ directive: `${'x'.repeat(300)}\nmore` }));
    const line = renderReport(m, { now: T0 })
      .split('\n')
      .find((l) => l.startsWith('Directive: '))!;
    expect(Array.from(line.slice('Directive: '.length))).toHaveLength(200);
    expect(line.endsWith('x…')).toBe(true);
  });
});

describe('renderReport', () => {
  it('says so when nothing needs action and leaves the manifest line out without a workspace', () => {
    const m0 = initManifest(baseInit({ lanes: [{ repo: 'acme/a', lane: 'a', wave: 0, branch: branch('a'), depends_on: [] }] }));
    const m = finalizeManifest(mergeLaneRecords(m0, [rec(m0, 'a', { status: 'completed', phase: 'no-op', updated_at: at(3) })]), at(4));
    const md = renderReport(m, { now: at(4) });
    expect(md).toContain('### Action required\n\nNothing needs action.\n');
    expect(md).not.toContain('Manifest:');
    expect(md).not.toContain('### Excluded');
  });

  it('reports a dry-run lane as such, without a branch it never pushed, and says where its patch is', () => {
    const m0 = initManifest(baseInit({ dry_run: true, lanes: [{ repo: 'acme/a', lane: 'a', wave: 0, branch: branch('a'), depends_on: [] }] }));
    const m = mergeLaneRecords(m0, [
      rec(m0, 'a', { status: 'completed', phase: 'dry-run', commit: 'abc', updated_at: at(3), evidence: { ...emptyEvidence(), patch: 'lanes/a/patch.diff' } }),
    ]);
    const md = renderReport(m, { now: at(4), workspace: '/work/ws' });
    expect(cells(tableRows(md).find((r) => cells(r)[0] === 'a')!)).toEqual(['a', 'acme/a', '1', 'dry-run', 'patch `lanes/a/patch.diff`', '—', '—']);
    expect(md).toContain("_Dry run: nothing was pushed, no pull request was opened; each lane's change is in `/work/ws/lanes/<lane>/patch.diff`._");
    expect(md).toContain('| Duration | 00:00:04 (running) |');
    // A dry run in which no lane changed anything has no patch to point at, and says so.
    const nothing = mergeLaneRecords(m0, [rec(m0, 'a', { status: 'completed', phase: 'no-op', updated_at: at(3) })]);
    expect(renderReport(nothing, { now: at(4) })).toContain(
      '_Dry run: nothing was pushed, no pull request was opened; no lane made a change, so there is no patch._',
    );
    // A real run says nothing of patches.
    expect(renderReport(finished(), { now: END, workspace: WORKSPACE })).not.toMatch(/patch/);
  });

  it('caps the lanes table when asked, keeping lanes that need action', () => {
    const m = finished();
    const md = renderReport(m, { now: END, workspace: WORKSPACE, maxRows: 2 });
    const lanes = tableRows(md.slice(md.indexOf('### Lanes'))).slice(1);
    expect(lanes.map((r) => cells(r)[0])).toEqual(['api', 'web']);
    expect(md).toContain('… and 6 more (2 completed, 1 no-op, 2 skipped, 1 excluded): see the manifest');
  });
});

describe('renderMermaid', () => {
  it('gives lanes that sanitize alike distinct ids', () => {
    const m = initManifest(
      baseInit({
        lanes: [
          { repo: 'acme/x', lane: 'a.b', wave: 0, branch: branch('a.b'), depends_on: [] },
          { repo: 'acme/y', lane: 'a-b', wave: 0, branch: branch('a-b'), depends_on: [] },
          { repo: 'acme/z', lane: 'a_b', wave: 1, branch: branch('a_b'), depends_on: ['a.b', 'a-b'] },
        ],
      }),
    );
    const g = renderMermaid(m);
    const nodes = [...g.matchAll(/^ {4}(\S+)\["([^"]*)"\]$/gm)].map((x) => [x[1], x[2]]);
    expect(nodes).toEqual([
      ['n_a_b', 'a-b'],
      ['n_a_b_2', 'a.b'],
      ['n_a_b_3', 'a_b'],
    ]);
    for (const [id] of nodes) expect(id).toMatch(/^[A-Za-z0-9_]+$/);
    expect(g).toContain('  n_a_b_2 --> n_a_b_3\n  n_a_b --> n_a_b_3');
    expect(g).toContain('subgraph wave_1 ["Wave 1"]');
    expect(g).toContain('subgraph wave_2 ["Wave 2"]');
    expect(g.startsWith('```mermaid\ngraph LR\n')).toBe(true);
    expect(g.endsWith('\n```')).toBe(true);
  });

  it('styles excluded and skipped lanes', () => {
    const g = renderMermaid(planned());
    expect(g).toMatch(/classDef excluded /);
    expect(g).toContain('class n_old_lib excluded');
    expect(g).toContain('class n_legacy skipped');
    expect(g).toContain('n_old_lib --> n_legacy');
  });

  it('leaves a note instead of a graph past the node limit', () => {
    const ids = Array.from({ length: 301 }, (_, i) => `l${i}`);
    const m = initManifest(baseInit({ lanes: ids.map((id) => ({ repo: `acme/${id}`, lane: id, wave: 0, branch: branch(id), depends_on: [] })) }));
    expect(renderMermaid(m)).toBe('_graph omitted: 301 lanes (limit 300)_');
    expect(renderMermaid(m, 1000)).toContain('```mermaid');
    expect(renderMermaid(planned(), 5)).toBe('_graph omitted: 8 lanes (limit 5)_');
    expect(renderPlan(m)).toContain('graph omitted: 301 lanes (limit 300)');
  });
});

describe('fitCheckRunText', async () => {
  const mod = await import('../../src/core/report.js');
  const { fitCheckRunText, CHECK_RUN_TEXT_LIMIT } = mod;
  it('leaves a report that fits untouched', () => {
    expect(fitCheckRunText('short', 'See the artifact.')).toBe('short');
  });
  it('cuts at a line, stays within the limit, and points at the full report', () => {
    const long = Array.from({ length: 5000 }, (_, i) => `| lane-${i} | completed | ${'x'.repeat(20)} |`).join('\n');
    const fitted = fitCheckRunText(long, 'Full report: artifact fleet-report.');
    expect(long.length).toBeGreaterThan(CHECK_RUN_TEXT_LIMIT);
    expect(fitted.length).toBeLessThanOrEqual(CHECK_RUN_TEXT_LIMIT);
    expect(fitted).toContain('Full report: artifact fleet-report.');
    const body = fitted.slice(0, fitted.indexOf('\n\n… report truncated'));
    expect(body.split('\n').every((line) => /^\| lane-\d+ \| completed \| x{20} \|$/.test(line))).toBe(true);
  });
  it('counts bytes, not characters: GitHub refuses a summary over 65,535 bytes of UTF-8 (github/docs#35252)', () => {
    const { utf8Bytes } = mod;
    // 30,000 characters, but ✓ and — are 3 bytes each and 🚀 is 4: over 65,535 bytes though under 65,535 characters.
    const long = Array.from({ length: 3000 }, (_, i) => `✓ lane-${i} — 🚀`).join('\n');
    expect(long.length).toBeLessThan(CHECK_RUN_TEXT_LIMIT);
    expect(utf8Bytes(long)).toBeGreaterThan(CHECK_RUN_TEXT_LIMIT);
    const fitted = fitCheckRunText(long, 'Full report: artifact fleet-report.');
    expect(utf8Bytes(fitted)).toBeLessThanOrEqual(CHECK_RUN_TEXT_LIMIT);
    expect(fitted).toContain('Full report: artifact fleet-report.');
    expect(fitted).not.toMatch(/\uFFFD/);
  });
  it('closes a code fence the cut fell inside', () => {
    const long = `# r\n\`\`\`mermaid\n${'a --> b\n'.repeat(10_000)}\`\`\`\n`;
    const fitted = fitCheckRunText(long, 'p', 1000);
    expect(fitted.length).toBeLessThanOrEqual(1000);
    expect(fitted.match(/^```/gm)?.length).toBe(2);
  });
});

// ---------------------------------------------------------------------------
// The details a reader relies on, one behaviour at a time.

/** A fleet of one lane `a` in acme/a, as its lane reported it. */
function oneLane(patch: Partial<LaneRecord>, over: Partial<ManifestInit> = {}): Manifest {
  const m0 = initManifest(baseInit({ lanes: [{ repo: 'acme/a', lane: 'a', wave: 0, branch: branch('a'), depends_on: [] }], ...over }));
  return mergeLaneRecords(m0, [rec(m0, 'a', { updated_at: at(3), ...patch })]);
}
/** The cells of a lane's row in the report's Lanes table. */
function laneRow(md: string, lane: string): string[] {
  const row = tableRows(md.slice(md.indexOf('### Lanes'))).find((r) => cells(r)[0] === lane);
  if (!row) throw new Error(`no row for lane ${lane} in:\n${md}`);
  return cells(row);
}
/** The report's action list: its lines after the heading. */
function actionLines(md: string): string[] {
  const from = md.indexOf('### Action required\n\n') + '### Action required\n\n'.length;
  return md.slice(from).trimEnd().split('\n\n')[0]!.split('\n');
}
const failedWith = (message: string, patch: Partial<LaneRecord> = {}) =>
  oneLane({ status: 'failed', phase: 'failed', error: { class: 'directive-failed', message }, ...patch });

describe('an empty fleet', () => {
  const empty = () => initManifest(baseInit({ directive: 'do it' }));

  it('status table: the counts and "No lanes."', () => {
    expect(renderStatusTable(empty(), { now: at(60) })).toBe(
      '## Fleet Status — fleet-20260420-071500\n\n' +
        'Elapsed: 00:01:00 | Active: 0 / 4 | Queued: 0 | Completed: 0 | No-op: 0 | Failed: 0 | Skipped: 0 | Excluded: 0\n\nNo lanes.\n',
    );
  });

  it('report: zero metrics, "No lanes." and nothing to act on', () => {
    expect(renderReport(empty(), { now: at(60) })).toBe(
      '## Fleet Report — fleet-20260420-071500\n\nDirective: do it\n\n0 lanes in 0 waves.\n\n' +
        '| Metric | Value |\n|---|---:|\n| Lanes | 0 |\n| Completed | 0 |\n| No-op | 0 |\n| Failed | 0 |\n| Skipped | 0 |\n| Excluded | 0 |\n' +
        '| Merged | 0 |\n| Draft | 0 |\n| Retries | 0 |\n| Duration | 00:01:00 (running) |\n\n' +
        '### Lanes\n\nNo lanes.\n\n### Action required\n\nNothing needs action.\n',
    );
  });

  it('plan: no waves, no contention, no graph, and no empty Excluded or Skipped sections', () => {
    expect(renderPlan(empty())).toBe(
      '## Fleet Plan — fleet-20260420-071500\n\nDirective: do it\n\n' +
        '0 lanes in 0 waves · Max parallel: 4 · Retries: 3 · Checkpoint: green · Merge: when-green\n\n' +
        '### Waves\n\nNo waves: nothing to run.\n\n### Contention\n\nNo contention.\n\n### Graph\n\n_No lanes._\n',
    );
  });
});

describe('messages in notes and in the action list', () => {
  it('shows the first non-blank line, with an ellipsis only when more text follows', () => {
    const md = renderReport(failedWith('\n   \nnpm test failed\n\n   \n'), { now: at(10) });
    expect(laneRow(md, 'a')[6]).toBe('directive-failed: npm test failed');
    expect(actionLines(md)).toEqual(['- `acme/a` (lane `a`) — directive-failed: npm test failed.']);
  });

  it('shows the class alone when the message is blank', () => {
    const md = renderReport(failedWith(' \n\t\n '), { now: at(10) });
    expect(laneRow(md, 'a')[6]).toBe('directive-failed');
    expect(actionLines(md)).toEqual(['- `acme/a` (lane `a`) — directive-failed.']);
  });

  it('keeps a message of exactly 120 characters whole and cuts a longer one at a word, without a space before the ellipsis', () => {
    const exact = 'x'.repeat(120);
    expect(laneRow(renderReport(failedWith(exact), { now: at(10) }), 'a')[6]).toBe(`directive-failed: ${exact}`);
    const long = `${'a'.repeat(118)} ${'b'.repeat(10)}`;
    expect(laneRow(renderReport(failedWith(long), { now: at(10) }), 'a')[6]).toBe(`directive-failed: ${'a'.repeat(118)}…`);
  });

  it('ends an action line as a sentence: a full stop unless the message already ends one', () => {
    expect(actionLines(renderReport(failedWith('npm test exited 1 (see test.log)'), { now: at(10) }))).toEqual([
      '- `acme/a` (lane `a`) — directive-failed: npm test exited 1 (see test.log).',
    ]);
    expect(actionLines(renderReport(failedWith('Is the token expired?'), { now: at(10) }))).toEqual([
      '- `acme/a` (lane `a`) — directive-failed: Is the token expired?',
    ]);
  });

  it('says "failed." for a failed lane that carries no error', () => {
    const md = renderReport(oneLane({ status: 'failed', phase: 'failed' }), { now: at(10) });
    expect(laneRow(md, 'a')[6]).toBe('—');
    expect(actionLines(md)).toEqual(['- `acme/a` (lane `a`) — failed.']);
  });

  it('asks a person to review a draft pull request even when the lane recorded no error', () => {
    const md = renderReport(oneLane({ status: 'completed', phase: 'draft', merge_status: 'draft', commit: 'abc', ...pr('acme/a', 7) }), { now: at(10) });
    expect(laneRow(md, 'a')[3]).toBe('draft');
    expect(actionLines(md)).toEqual(['- `acme/a` (lane `a`) — draft: the pull request was left as a draft for review.']);
  });

  it('notes retries, capitalised when they are the only note', () => {
    const md = renderReport(oneLane({ status: 'completed', phase: 'no-op', retry_count: 1 }), { now: at(10) });
    expect(laneRow(md, 'a')[6]).toBe('Retried 1×');
  });
});

describe('log and manifest paths', () => {
  const withLog = (log: string) => failedWith('boom', { log });

  it('shows a log path as recorded without a workspace, and under the workspace with one', () => {
    expect(actionLines(renderReport(withLog('lanes/a/attempt-1.log'), { now: at(10) }))[0]).toBe(
      '- `acme/a` (lane `a`) — directive-failed: boom. Log: `lanes/a/attempt-1.log`',
    );
    const md = renderReport(withLog('./lanes/a/attempt-1.log'), { now: at(10), workspace: '/runner/_work/fleet//' });
    expect(actionLines(md)[0]).toBe('- `acme/a` (lane `a`) — directive-failed: boom. Log: `/runner/_work/fleet/lanes/a/attempt-1.log`');
    expect(md.trimEnd().split('\n').at(-1)).toBe('Manifest: `/runner/_work/fleet/fleet-status.json`');
  });

  it('keeps an absolute log path, and a path whose lane id ends in a dot, as they are', () => {
    expect(actionLines(renderReport(withLog('/tmp/lanes/a/attempt-1.log'), { now: at(10), workspace: WORKSPACE }))[0]).toMatch(
      / Log: `\/tmp\/lanes\/a\/attempt-1\.log`$/,
    );
    expect(actionLines(renderReport(withLog('lanes/v2./attempt-1.log'), { now: at(10), workspace: WORKSPACE }))[0]).toMatch(
      / Log: `_workspace\/fleet\/lanes\/v2\.\/attempt-1\.log`$/,
    );
  });
});

describe('pull request and branch cells', () => {
  const url = 'https://github.com/acme/a/pull/7';

  it('links a safe URL, labelled PR when the number is unknown', () => {
    const m = oneLane({ status: 'running', phase: 'pr', pr_url: url });
    expect(cells(tableRows(renderStatusTable(m, { now: at(10) }))[1]!)[5]).toBe(`[PR](${url})`);
    expect(laneRow(renderReport(m, { now: at(10) }), 'a')[4]).toBe(`\`${branch('a')}\` · [PR](${url})`);
  });

  it('never links an unsafe URL: the number alone, or the URL as text when there is no number', () => {
    const unsafe = 'javascript:alert(1)//https://github.com';
    const withNumber = oneLane({ status: 'running', phase: 'pr', pr_number: 7, pr_url: unsafe });
    expect(cells(tableRows(renderStatusTable(withNumber, { now: at(10) }))[1]!)[5]).toBe('#7');
    const spaced = `${url} onmouseover=alert(1)`;
    const noNumber = oneLane({ status: 'running', phase: 'pr', pr_url: spaced });
    expect(cells(tableRows(renderStatusTable(noNumber, { now: at(10) }))[1]!)[5]).toBe(spaced);
    expect(renderStatusTable(noNumber, { now: at(10) })).not.toContain('](');
  });

  it('shows the branch once the lane pushed, with the PR when there is one', () => {
    // checkpoint: pushed, a lane done once its branch is pushed: no PR.
    const pushed = renderReport(oneLane({ status: 'completed', phase: 'pushed', commit: 'abc' }, { checkpoint: 'pushed' }), { now: at(10) });
    expect(laneRow(pushed, 'a').slice(3, 5)).toEqual(['completed', `\`${branch('a')}\``]);
    // A lane known only by its PR number (its job died before it recorded the commit).
    const numbered = renderReport(oneLane({ status: 'failed', phase: 'failed', pr_number: 7 }), { now: at(10) });
    expect(laneRow(numbered, 'a')[4]).toBe(`\`${branch('a')}\` · #7`);
    // A queued lane has pushed nothing.
    expect(laneRow(renderReport(oneLane({}), { now: at(10) }), 'a')[4]).toBe('—');
  });

  it('reads completed for a lane that opened its PR and was not asked to merge', () => {
    const md = renderReport(oneLane({ status: 'completed', phase: 'pr-open', commit: 'abc', merge_status: 'not-requested', ...pr('acme/a', 7) }), {
      now: at(10),
    });
    expect(laneRow(md, 'a')[3]).toBe('completed');
  });
});

describe('laneResult', () => {
  it('reports failed for a merged lane the forge did not confirm', () => {
    const m = oneLane({
      status: 'failed',
      phase: 'failed',
      merge_status: 'merged',
      commit: 'abc',
      ...pr('acme/a', 7),
      error: { class: 'unverified', message: 'the forge does not confirm this lane: head differs' },
    });
    expect(laneResult(m.lanes[0]!)).toBe('failed');
    expect(laneRow(renderReport(m, { now: at(10) }), 'a')[3]).toBe('failed');
  });

  it('reports merged when either the merge status or the phase says so', () => {
    expect(laneResult(oneLane({ status: 'completed', phase: 'merging', merge_status: 'merged' }).lanes[0]!)).toBe('merged');
    expect(laneResult(oneLane({ status: 'completed', phase: 'merged', merge_status: null }).lanes[0]!)).toBe('merged');
  });
});

describe('report notes above the tables', () => {
  it('puts the dry-run note on its own paragraph', () => {
    const md = renderReport(oneLane({ status: 'completed', phase: 'dry-run' }, { dry_run: true, directive: 'do it' }), { now: at(10) });
    expect(md).toContain(
      "Directive: do it\n\n_Dry run: nothing was pushed, no pull request was opened; each lane's change is in its `patch.diff` (`lanes/<lane>/patch.diff` in the fleet workspace; on GitHub Actions, in the lane's `fleet-lane-<lane>.a<attempt>` artifact)._\n\n1 lane in 0 waves.\n\n| Metric | Value |",
    );
    expect(renderPlan(oneLane({}, { dry_run: true, directive: 'do it' }))).toContain(
      'Directive: do it\n\n_Dry run: nothing is pushed, no pull request is opened._\n\n1 lane in',
    );
  });

  it('says how many lanes ran without isolation, and why, once', () => {
    const none = { kind: 'none' as const, detail: 'user namespaces are\ndisabled' };
    const ids = ['a', 'b', 'c'];
    const m0 = initManifest(
      baseInit({ directive: 'do it', lanes: ids.map((id) => ({ repo: `acme/${id}`, lane: id, wave: 0, branch: branch(id), depends_on: [] })) }),
    );
    const one = mergeLaneRecords(m0, [rec(m0, 'a', { status: 'running', phase: 'running', updated_at: at(3), isolation: none })]);
    expect(renderReport(one, { now: at(10) })).toContain(
      "Directive: do it\n\n_Not isolated: the directives of 1 lane ran where they could see Fleet's processes (user namespaces are disabled); see docs/security.md._\n\n3 lanes in 0 waves.\n\n| Metric",
    );
    const two = mergeLaneRecords(one, [
      rec(m0, 'b', { status: 'running', phase: 'running', updated_at: at(4), isolation: none }),
      rec(m0, 'c', { status: 'running', phase: 'running', updated_at: at(4), isolation: { kind: 'pid-namespace', detail: 'unshare' } }),
    ]);
    expect(renderReport(two, { now: at(10) })).toContain('_Not isolated: the directives of 2 lanes ran where');
    expect(renderReport(oneLane({ isolation: { kind: 'pid-namespace', detail: 'unshare' } }), { now: at(10) })).not.toContain('Not isolated');
  });
});

describe('renderReport metrics and caps', () => {
  it('shows a duration it cannot compute as a dash, not as zero', () => {
    const m = oneLane({});
    expect(renderStatusTable(m, { now: 'not a time' })).toContain('Elapsed: — |');
    expect(renderReport(m, { now: 'not a time' })).toContain('| Duration | — (running) |');
  });

  it('counts running and queued lanes in a report rendered before the fleet ended', () => {
    const md = renderReport(midRun(), { now: MID_NOW });
    expect(md).toContain('| Excluded | 1 |\n| Running | 2 |\n| Queued | 2 |\n| Merged | 1 |');
    expect(renderReport(finished(), { now: END })).not.toMatch(/\| (Running|Queued) \|/);
  });

  it('keeps failed and draft lanes first, then running, skipped, completed, queued and excluded ones', () => {
    // Manifest order (by lane id) is the reverse of what a capped table keeps first.
    const ids = ['a-excluded', 'b-queued', 'c-completed', 'd-skipped', 'e-running', 'f-draft', 'g-failed'];
    const m0 = initManifest(baseInit({ lanes: ids.map((id) => ({ repo: `acme/${id}`, lane: id, wave: 0, branch: branch(id), depends_on: [] })) }));
    const m = mergeLaneRecords(m0, [
      rec(m0, 'a-excluded', { status: 'excluded', phase: 'excluded', updated_at: at(1), error: { class: 'excluded', message: 'archived' } }),
      rec(m0, 'c-completed', { status: 'completed', phase: 'no-op', updated_at: at(1) }),
      rec(m0, 'd-skipped', { status: 'skipped', phase: 'skipped', updated_at: at(1), error: { class: 'dependency-failed', message: 'x' } }),
      rec(m0, 'e-running', { status: 'running', phase: 'running', updated_at: at(1) }),
      rec(m0, 'f-draft', { status: 'completed', phase: 'draft', merge_status: 'draft', updated_at: at(1) }),
      rec(m0, 'g-failed', { status: 'failed', phase: 'failed', updated_at: at(1) }),
    ]);
    const kept = (maxRows: number) =>
      tableRows(renderReport(m, { now: at(10), maxRows }).split('### Lanes')[1]!)
        .slice(1)
        .map((r) => cells(r)[0]);
    expect(kept(2)).toEqual(['f-draft', 'g-failed']);
    expect(kept(3)).toEqual(['e-running', 'f-draft', 'g-failed']);
    expect(kept(4)).toEqual(['d-skipped', 'e-running', 'f-draft', 'g-failed']);
    expect(kept(5)).toEqual(['c-completed', 'd-skipped', 'e-running', 'f-draft', 'g-failed']);
    expect(kept(6)).toEqual(['b-queued', 'c-completed', 'd-skipped', 'e-running', 'f-draft', 'g-failed']);
    expect(renderReport(m, { now: at(10), maxRows: 6 })).toContain('\n\n… and 1 more (1 excluded): see the manifest\n');
  });

  it('with no rows to show, leaves the tables out and says what is hidden', () => {
    const m = initManifest(
      baseInit({
        directive: 'do it',
        lanes: [{ repo: 'acme/a', lane: 'a', wave: 0, branch: branch('a'), depends_on: [] }],
        excluded: [{ repo: 'acme/old', lane: 'old', reason: 'archived', detail: null }],
      }),
    );
    expect(renderStatusTable(m, { now: at(60), maxRows: 0 })).toBe(
      '## Fleet Status — fleet-20260420-071500\n\n' +
        'Elapsed: 00:01:00 | Active: 0 / 4 | Queued: 1 | Completed: 0 | No-op: 0 | Failed: 0 | Skipped: 0 | Excluded: 1\n\n' +
        '… and 2 more (1 queued, 1 excluded)\n',
    );
    const md = renderReport(m, { now: at(60), maxRows: 0 });
    expect(md.slice(md.indexOf('### Lanes'))).toBe(
      '### Lanes\n\n… and 2 more (1 queued, 1 excluded): see the manifest\n\n' +
        '### Excluded\n\n… and 1 more excluded: see the manifest\n\n' +
        '### Action required\n\nNothing needs action.\n',
    );
  });

  it('caps the excluded list when asked, and lists an exclusion without detail by its reason alone', () => {
    const m = initManifest(
      baseInit({
        excluded: [
          { repo: 'acme/x1', lane: 'x1', reason: 'archived', detail: null },
          { repo: 'acme/x2', lane: 'x2', reason: 'fork', detail: 'a fork of acme/x1' },
          { repo: 'acme/x3', lane: 'x3', reason: 'disabled', detail: null },
        ],
      }),
    );
    const excluded = (maxRows?: number) => {
      const md = renderReport(m, { now: at(10), maxRows });
      return md.slice(md.indexOf('### Excluded'), md.indexOf('### Action required')).trimEnd();
    };
    expect(excluded(1)).toBe('### Excluded\n\n- `acme/x1` — archived\n\n… and 2 more excluded: see the manifest');
    expect(excluded(3)).toBe('### Excluded\n\n- `acme/x1` — archived\n- `acme/x2` — fork: a fork of acme/x1\n- `acme/x3` — disabled');
    expect(excluded()).toBe(excluded(3));
  });
});

describe('renderPlan details', () => {
  it('says "wave" for one wave and shows a contention without a reason as a dash', () => {
    const md = renderPlan(
      initManifest(
        baseInit({
          waves: [{ index: 0, lanes: ['a', 'b'], exclusive: false, shards: [{ id: 'w0-s0', wave: 0, lanes: ['a', 'b'] }], parallel: 1 }],
          contention: [{ lane: 'b', repo: 'acme/a', wanted_wave: 0, wave: 0, because_of: 'a', reason: '' }],
          lanes: [
            { repo: 'acme/a', lane: 'a', wave: 0, branch: branch('a'), depends_on: [] },
            { repo: 'acme/a', lane: 'b', wave: 0, branch: branch('b'), depends_on: [] },
          ],
        }),
      ),
    );
    expect(md).toContain('2 lanes in 1 wave · Max parallel: 4');
    expect(tables(md)[1]!.slice(2).map(cells)).toEqual([['b', 'acme/a', '1 → 1', 'a', '—']]);
  });

  it('shows waves in order whatever order the manifest holds them in, and leaves the manifest alone', () => {
    const m = planned();
    const shuffled: Manifest = { ...m, waves: [m.waves[2]!, m.waves[0]!, m.waves[1]!] };
    const before = structuredClone(shuffled);
    const md = renderPlan(shuffled);
    expect(
      tables(md)[0]!
        .slice(2)
        .map((r) => cells(r).slice(0, 2)),
    ).toEqual([
      ['1', 'core, docs'],
      ['2', 'api, core-docs, web'],
      ['3', 'cli'],
    ]);
    expect(shuffled).toEqual(before);
  });

  it('caps long lists: 20 lane ids per wave, 100 contentions, exclusions and skipped lanes', () => {
    const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);
    const build = (n: number) => {
      const w0 = ids('a', n);
      return initManifest(
        baseInit({
          waves: [{ index: 0, lanes: w0, exclusive: false, shards: [{ id: 'w0-s0', wave: 0, lanes: w0 }], parallel: 1 }],
          lanes: w0.map((id) => ({ repo: `acme/${id}`, lane: id, wave: 0, branch: branch(id), depends_on: [] })),
          contention: ids('c', n * 5).map((id) => ({ lane: id, repo: 'acme/c', wanted_wave: 0, wave: 1, because_of: 'a000', reason: 'overlap' })),
          excluded: ids('x', n * 5).map((id) => ({ repo: `acme/${id}`, lane: id, reason: 'archived', detail: null })),
          skipped: ids('s', n * 5).map((id) => ({ repo: `acme/${id}`, lane: id, reason: 'depends on excluded lane x000', depends_on: ['x000'] })),
        }),
      );
    };
    const at20 = renderPlan(build(20));
    expect(cells(tables(at20)[0]![2]!)[1]).toBe(ids('a', 20).join(', '));
    expect(tableRows(at20.split('### Contention')[1]!).slice(1)).toHaveLength(100);
    expect(at20).not.toContain('more');
    const section = (md: string, name: string) => md.split(`### ${name}\n\n`)[1]!.split('\n\n')[0]!.split('\n');
    expect(section(at20, 'Excluded')).toHaveLength(100);
    expect(section(at20, 'Skipped')).toHaveLength(100);
    expect(section(at20, 'Skipped')[0]).toBe('- `acme/s000` (lane `s000`) — depends on excluded lane x000');

    const at21 = renderPlan(build(21));
    expect(cells(tables(at21)[0]![2]!)[1]).toBe(`${ids('a', 20).join(', ')} … +1`);
    expect(tableRows(at21.split('### Contention')[1]!).slice(1)).toHaveLength(100);
    expect(at21).toContain('\n\n… and 5 more: see the plan artifact\n');
    expect(section(at21, 'Excluded')).toHaveLength(101);
    expect(section(at21, 'Excluded')[100]).toBe('- … and 5 more excluded: see the plan artifact');
    expect(section(at21, 'Skipped')[100]).toBe('- … and 5 more skipped: see the plan artifact');
  });
});

describe('renderMermaid details', () => {
  const lanes = (specs: [string, number, string[]][]) =>
    initManifest(baseInit({ lanes: specs.map(([lane, wave, depends_on]) => ({ repo: `acme/${lane}`, lane, wave, branch: branch(lane), depends_on })) }));

  it('draws up to the node limit', () => {
    expect(renderMermaid(initManifest(baseInit()))).toBe('_No lanes._');
    expect(renderMermaid(planned(), 8)).toMatch(/^```mermaid\n/);
  });

  it('draws each edge once and leaves out dependencies the manifest does not hold', () => {
    const g = renderMermaid(
      lanes([
        ['a', 0, []],
        ['b', 1, ['a', 'a', 'gone']],
      ]),
    );
    expect(g.split('\n').filter((l) => l.includes('-->'))).toEqual(['  n_a --> n_b']);
  });

  it('orders subgraphs by wave, unscheduled last, whatever order the lanes come in', () => {
    const m = planned();
    const g = renderMermaid({ ...m, lanes: m.lanes.slice().reverse() });
    expect(g.split('\n').filter((l) => l.includes('subgraph'))).toEqual([
      '  subgraph wave_1 ["Wave 1"]',
      '  subgraph wave_2 ["Wave 2"]',
      '  subgraph wave_3 ["Wave 3"]',
      '  subgraph unscheduled ["Not scheduled"]',
    ]);
  });

  it('classes several lanes of a status in one comma-separated list', () => {
    const m0 = lanes([
      ['a', 0, []],
      ['b', 0, []],
      ['c', 0, []],
    ]);
    const m = mergeLaneRecords(m0, [
      rec(m0, 'a', { status: 'failed', phase: 'failed', updated_at: at(1) }),
      rec(m0, 'c', { status: 'failed', phase: 'failed', updated_at: at(1) }),
    ]);
    expect(renderMermaid(m)).toContain('\n  class n_a,n_c failed\n');
  });

  it('omits a graph of more than 500 edges, which GitHub cannot render', () => {
    const graph = (sources: number) => {
      const src = Array.from({ length: sources }, (_, i) => `s${i}`);
      const dst = Array.from({ length: 20 }, (_, i) => `d${i}`);
      return renderMermaid(lanes([...src.map((s): [string, number, string[]] => [s, 0, []]), ...dst.map((d): [string, number, string[]] => [d, 1, src])]));
    };
    expect(graph(25)).toMatch(/^```mermaid\n/); // exactly 500 edges
    expect(graph(26)).toBe('_graph omitted: 520 edges (limit 500)_');
  });
});

describe('fitting a check run', async () => {
  const { fitCheckRunText, utf8Bytes } = await import('../../src/core/report.js');
  const POINTER = 'See the artifact.';
  /** What fitCheckRunText appends, and the room it leaves for closing a code fence. */
  const tail = (size: number, limit: number) => `\n\n… report truncated to fit a check run (${size} bytes, limit ${limit}). ${POINTER}\n`;
  const SLACK = 8;

  it('leaves a text of exactly the limit untouched', () => {
    const text = 'x'.repeat(500);
    expect(fitCheckRunText(text, POINTER, 500)).toBe(text);
    expect(fitCheckRunText(`${text}y`, POINTER, 500)).not.toBe(`${text}y`);
  });

  it('cuts a text without line breaks as late as the limit allows, counting UTF-8 bytes per character', () => {
    const limit = 400;
    // One character of each UTF-8 width at its boundaries: 1 byte (< U+0080), 2 (from U+0080), 3 (from U+0800), 4 (from U+10000).
    for (const [ch, width] of [
      ['x', 1],
      ['\u0080', 2],
      ['\u07ff', 2],
      ['\u0800', 3],
      ['\uffff', 3],
      ['\u{10000}', 4],
    ] as const) {
      const text = ch.repeat(1000);
      const size = utf8Bytes(text);
      const room = limit - utf8Bytes(tail(size, limit)) - SLACK;
      const fitted = fitCheckRunText(text, POINTER, limit);
      expect(fitted, `U+${ch.codePointAt(0)!.toString(16)}`).toBe(ch.repeat(Math.floor(room / width)) + tail(size, limit));
      expect(utf8Bytes(fitted)).toBeLessThanOrEqual(limit);
    }
  });

  it('cuts at the budget when the only line break opens the text', () => {
    const text = `\n${'x'.repeat(1000)}`;
    const fitted = fitCheckRunText(text, POINTER, 400);
    expect(fitted.startsWith(`\n${'x'.repeat(100)}`)).toBe(true);
    expect(utf8Bytes(fitted)).toBeGreaterThan(400 - SLACK - 1);
  });

  it('closes only a fence that opens a line, not backticks inside one', () => {
    const text = `use \`\`\`inline\n${'line\n'.repeat(400)}`;
    const fitted = fitCheckRunText(text, POINTER, 400);
    expect(fitted).not.toContain('\n```');
    expect(fitted.startsWith('use ```inline\nline\n')).toBe(true);
  });
});

describe('checkRunConclusion', async () => {
  const { checkRunConclusion } = await import('../../src/core/report.js');
  it('fails when a lane failed or was skipped, is neutral when every lane was excluded or there were none, succeeds otherwise', () => {
    expect(checkRunConclusion(finished())).toBe('failure');
    expect(checkRunConclusion(oneLane({ status: 'failed', phase: 'failed' }))).toBe('failure');
    expect(checkRunConclusion(oneLane({ status: 'skipped', phase: 'skipped' }))).toBe('failure');
    expect(checkRunConclusion(oneLane({ status: 'completed', phase: 'no-op' }))).toBe('success');
    expect(checkRunConclusion(oneLane({ status: 'excluded', phase: 'excluded' }))).toBe('neutral');
    expect(checkRunConclusion(initManifest(baseInit()))).toBe('neutral');
    const mixed = initManifest(baseInit({ excluded: [{ repo: 'acme/old', lane: 'old', reason: 'archived', detail: null }] }));
    expect(checkRunConclusion(mixed)).toBe('neutral');
    const m0 = initManifest(
      baseInit({
        lanes: [{ repo: 'acme/a', lane: 'a', wave: 0, branch: branch('a'), depends_on: [] }],
        excluded: [{ repo: 'acme/old', lane: 'old', reason: 'archived', detail: null }],
      }),
    );
    expect(checkRunConclusion(mergeLaneRecords(m0, [rec(m0, 'a', { status: 'completed', phase: 'merged', updated_at: at(1) })]))).toBe('success');
  });
});

describe('unchanged lanes (incremental sweeps)', () => {
  function sweep(unchanged: number): Manifest {
    const ids = ['changed', ...Array.from({ length: unchanged }, (_, i) => `u${String(i).padStart(3, '0')}`)];
    const m0 = initManifest(baseInit({ lanes: ids.map((id) => ({ repo: `acme/${id}`, lane: id, wave: 0, branch: branch(id), depends_on: [] })) }));
    const recs = ids.map((id) =>
      id === 'changed'
        ? rec(m0, id, { status: 'completed', phase: 'pr-open', updated_at: at(5), commit: 'c'.repeat(40), ...pr(`acme/${id}`, 7) })
        : rec(m0, id, { status: 'unchanged', phase: 'unchanged', updated_at: at(1), unchanged_since: 'fleet-1' }),
    );
    return finalizeManifest(mergeLaneRecords(m0, recs), at(10));
  }

  it('counts them, shows a few as rows, and many as one line; the run is a success', async () => {
    const few = renderReport(sweep(3), { now: at(10) });
    expect(few).toContain('| Unchanged | 3 |');
    expect(laneRow(few, 'u000')[3]).toBe('unchanged');
    const many = renderReport(sweep(500), { now: at(10) });
    expect(many).toContain('| Unchanged | 500 |');
    expect(many).toContain('500 lanes unchanged since their last outcome');
    expect(tableRows(many.slice(many.indexOf('### Lanes'))).map((r) => cells(r)[0])).toEqual(['Lane', 'changed']);
    expect(many).toContain('Nothing needs action.');
    const { checkRunConclusion } = await import('../../src/core/report.js');
    expect(checkRunConclusion(sweep(500))).toBe('success');
    // A report of a plain run has no Unchanged row at all.
    expect(renderReport(sweep(0), { now: at(10) })).not.toContain('Unchanged');
    expect(renderPlan(sweep(500))).toContain('(500 unchanged, not run)');
  });
});
describe("a wave leg's summary and the check run's annotations", () => {
  it('renderShard: one row per lane of the leg, with how it ended, its branch and PR, and why', () => {
    const m = finished();
    const text = renderShard(
      'w1-s0',
      m.lanes.filter((l) => ['api', 'web'].includes(l.lane)),
    );
    expect(text.split('\n')[0]).toBe('## Fleet shard w1-s0');
    const rows = tableRows(text).slice(1).map(cells);
    expect(rows.map((r) => r.slice(0, 3))).toEqual([
      ['`api`', '`acme/api`', 'failed'],
      ['`web`', '`acme/web`', 'draft'],
    ]);
    expect(rows[0]![4]).toContain('ci-failed: CI failed after 2 retries');
    expect(renderShard('w0-s9', [])).toContain('No lanes in this shard.');
  });

  it('laneAnnotations: one per lane that needs action, a failure for a failed lane and a warning for a draft, none for the rest', () => {
    const notes = laneAnnotations(finished(), 'fleets/bump.yml');
    expect(notes).toEqual([
      expect.objectContaining({ path: 'fleets/bump.yml', start_line: 1, end_line: 1, annotation_level: 'failure', title: 'api (acme/api): failed' }),
      expect.objectContaining({ annotation_level: 'warning', title: 'web (acme/web): draft' }),
    ]);
    expect(notes[0]!.message).toMatch(
      /^ci-failed: CI failed after 2 retries: 3 tests fail in test\/routes\.test\.ts … https:\/\/github\.com\/acme\/api\/pull\/34$/,
    );
  });
});

describe('counting and naming what lanes did (issue 11)', () => {
  it('counts no-op lanes apart from the completed ones, in the report and the status table alike', () => {
    const m0 = initManifest(baseInit({ lanes: ['a', 'b', 'c'].map((id) => ({ repo: `acme/${id}`, lane: id, wave: 0, branch: branch(id), depends_on: [] })) }));
    const m = finalizeManifest(
      mergeLaneRecords(m0, [
        rec(m0, 'a', { status: 'completed', phase: 'pr-open', commit: 'abc', updated_at: at(3) }),
        rec(m0, 'b', { status: 'completed', phase: 'no-op', updated_at: at(3) }),
        rec(m0, 'c', { status: 'completed', phase: 'no-op', updated_at: at(3) }),
      ]),
      at(10),
    );
    expect(m.summary).toMatchObject({ completed: 3, no_op: 2 }); // the manifest's summary keeps its documented meaning
    const md = renderReport(m, { now: at(10) });
    const metrics = Object.fromEntries(
      tables(md)[0]!
        .slice(2)
        .map((r) => cells(r)),
    );
    expect(metrics).toMatchObject({ Lanes: '3', Completed: '1', 'No-op': '2' });
    expect(renderStatusTable(m, { now: at(10) })).toContain('| Completed: 1 | No-op: 2 |');
  });

  it('a local fleet has no CI: its lanes show their checks (passed, failed, none) in a Checks column', () => {
    const local = { forge: 'local' as const };
    const passed = renderReport(oneLane({ status: 'completed', phase: 'pushed', commit: 'abc', ci_conclusion: 'success' }, local), { now: at(10) });
    expect(tables(passed)[1]![0]).toBe('| Lane | Repo | Wave | Result | Branch / PR | Checks | Notes |');
    expect(laneRow(passed, 'a')[5]).toBe('passed');
    expect(passed).not.toMatch(/\| success \|/);
    expect(laneRow(renderReport(oneLane({ status: 'completed', phase: 'pushed', commit: 'abc', ci_conclusion: 'none' }, local), { now: at(10) }), 'a')[5]).toBe(
      'no checks',
    );
    expect(
      laneRow(
        renderReport(oneLane({ status: 'failed', phase: 'failed', error: { class: 'check-failed', message: 'check `npm test` exited with 1' } }, local), {
          now: at(10),
        }),
        'a',
      )[5],
    ).toBe('failed');
    const status = renderStatusTable(oneLane({ status: 'completed', phase: 'pushed', commit: 'abc', ci_conclusion: 'success' }, local), { now: at(10) });
    expect(tableRows(status)[0]).toBe('| # | Repo | Lane | Wave | Phase | PR | Checks | Merge | Retries | Last update |');
    expect(cells(tableRows(status)[1]!)[6]).toBe('passed');
    // On GitHub the column is the forge's CI verdict, as read there.
    const gh = renderReport(oneLane({ status: 'completed', phase: 'pr-open', commit: 'abc', ci_conclusion: 'none' }), { now: at(10) });
    expect(tables(gh)[1]![0]).toContain('| CI |');
    expect(laneRow(gh, 'a')[5]).toBe('none');
  });

  it('the plan and the run report count lanes with the same words', () => {
    const words = '8 lanes: 6 in 3 waves, 1 skipped at plan time, 1 excluded';
    expect(laneCount(planned())).toBe(words);
    expect(renderPlan(planned())).toContain(`\n${words} · Max parallel: 4`);
    expect(renderReport(finished(), { now: END })).toContain(`\n${words}.\n`);
    // A lane skipped at run time (cli: its dependency failed) is still one of the lanes in waves.
    expect(laneCount(finished())).toBe(words);
    const simple = oneLane({});
    expect(laneCount(simple)).toBe('1 lane in 0 waves');
  });
});
