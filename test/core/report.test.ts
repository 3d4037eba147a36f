import { describe, expect, it } from 'vitest';
import { finalizeManifest, initManifest, mergeLaneRecords, type ManifestInit } from '../../src/core/manifest.js';
import { newLaneRecord, type LaneRecord, type Manifest } from '../../src/core/model.js';
import { escapeCell, renderMermaid, renderPlan, renderReport, renderStatusTable } from '../../src/core/report.js';

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

describe('snapshots of a representative fleet', () => {
  it('status table mid-run', async () => {
    await expect(renderStatusTable(midRun(), { now: MID_NOW })).toMatchFileSnapshot('./__snapshots__/report.status.md');
  });

  it('final report', async () => {
    await expect(renderReport(finished(), { now: END, workspace: WORKSPACE })).toMatchFileSnapshot('./__snapshots__/report.final.md');
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
    expect(md).toContain('Elapsed: 00:12:34 | Active: 2 / 4 | Queued: 2 | Completed: 2 | Failed: 0 | Skipped: 1 | Excluded: 1');
    const api = tableRows(md).find((r) => cells(r)[2] === 'api')!;
    expect(cells(api)).toEqual(['1', 'acme/api', 'api', '2', 'ci', '[#34](https://github.com/acme/api/pull/34)', 'pending', 'pending', '1', '00:00:42 ago']);
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
        rec(m0, 'nasty', { status: 'failed', phase: 'failed', updated_at: at(5), error: { class: 'directive-failed', message: NASTY }, log: 'lanes/nasty/attempt-1.log' }),
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
    expect(cells(lane)[6]).toBe(
      'directive-failed: boom \\| pipe &lt;script&gt;alert(1)&lt;/script&gt; \\`tick\\` \\[x\\](http://evil) \\*em\\* …',
    );
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
    expect(escapeCell('&lt; && &#124;')).toBe('&amp;lt; && &amp;#124;');
    expect(escapeCell('x\u202Eevil\u0007')).toBe('xevil');
    expect(escapeCell('`code`')).toBe('\\`code\\`');
  });

  it('truncates the directive to its first line and 200 characters', () => {
    const m = initManifest(baseInit({ directive: `${'x'.repeat(300)}\nmore` }));
    const line = renderReport(m, { now: T0 }).split('\n').find((l) => l.startsWith('Directive: '))!;
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

  it('reports a dry-run lane as such, without a branch it never pushed', () => {
    const m0 = initManifest(baseInit({ dry_run: true, lanes: [{ repo: 'acme/a', lane: 'a', wave: 0, branch: branch('a'), depends_on: [] }] }));
    const m = mergeLaneRecords(m0, [rec(m0, 'a', { status: 'completed', phase: 'dry-run', commit: 'abc', updated_at: at(3) })]);
    const md = renderReport(m, { now: at(4) });
    expect(cells(tableRows(md).find((r) => cells(r)[0] === 'a')!)).toEqual(['a', 'acme/a', '1', 'dry-run', '—', '—', '—']);
    expect(md).toContain('_Dry run: nothing is pushed, no pull request is opened._');
    expect(md).toContain('| Duration | 00:00:04 (running) |');
  });

  it('caps the lanes table when asked, keeping lanes that need action', () => {
    const m = finished();
    const md = renderReport(m, { now: END, workspace: WORKSPACE, maxRows: 2 });
    const lanes = tableRows(md.slice(md.indexOf('### Lanes'))).slice(1);
    expect(lanes.map((r) => cells(r)[0])).toEqual(['api', 'web']);
    expect(md).toContain('… and 6 more (3 completed, 2 skipped, 1 excluded): see the manifest');
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
