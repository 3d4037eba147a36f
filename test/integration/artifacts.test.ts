/**
 * What a run leaves behind and the commands that read it: the events log, the
 * manifest, lane results, `fleet status`, `fleet report` and `fleet plan --json`.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LaneResult, LanePhase, LaneStatus, Manifest } from '../../src/core/model.js';
import { createRepo } from '../support/repos.js';
import { fleet, lane, readManifest, removeDir, runArgs, tempDir, writeFleetFile, tsxLoader } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

async function sampleFleet() {
  for (const n of ['core', 'api', 'broken', 'same']) await createRepo(dir, n, { 'README.md': `# ${n}\n` }, { clone: false });
  return writeFleetFile(dir, {
    name: 'sample',
    directive: 'append a line',
    run: 'echo "$FLEET_LANE" >> README.md',
    max_retries: 1,
    missing_targets: 'exclude',
    targets: [
      { repo: './core.git' },
      { repo: './api.git', depends_on: ['core'] },
      { repo: './broken.git', run: 'echo "error: broken" >&2; exit 1' },
      { repo: './same.git', run: 'true' },
      { repo: './gone.git' },
      { repo: './api.git', lane: 'api-docs', depends_on: ['broken'], owns: ['docs/**'] },
    ],
  });
}

describe('run artifacts', () => {
  it('the events log: one valid JSON object per line, with time, lane, from, to, status and detail, in time order', async () => {
    const file = await sampleFleet();
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code).toBe(1);
    const lines = readFileSync(join(ws, 'events.jsonl'), 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    const events = lines.slice(0, -1).map((l, i) => {
      expect(() => JSON.parse(l), `line ${i + 1}`).not.toThrow();
      return JSON.parse(l);
    });
    const m = readManifest(ws);
    for (const e of events) {
      expect(Object.keys(e).sort()).toEqual(['detail', 'from', 'lane', 'status', 'time', 'to']);
      expect(new Date(e.time).toISOString()).toBe(e.time);
      expect(LanePhase.safeParse(e.from).success).toBe(true);
      expect(LanePhase.safeParse(e.to).success).toBe(true);
      expect(LaneStatus.safeParse(e.status).success).toBe(true);
      expect(typeof e.detail).toBe('string');
      expect(m.lanes.some((l) => l.lane === e.lane)).toBe(true);
    }
    const times = events.map((e) => Date.parse(e.time));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // Each lane's transitions chain: every event starts where the previous one of that lane ended.
    for (const l of m.lanes) {
      const mine = events.filter((e) => e.lane === l.lane);
      expect(mine.length, l.lane).toBeGreaterThan(0);
      for (let i = 1; i < mine.length; i++) expect(mine[i].from, `${l.lane} #${i}`).toBe(mine[i - 1].to);
      expect(mine.at(-1).status).toBe(l.status === 'failed' && l.error?.class === 'unverified' ? 'completed' : l.status);
    }
    expect(events.find((e) => e.lane === 'gone')).toMatchObject({ to: 'excluded', status: 'excluded' });
    expect(events.find((e) => e.lane === 'api-docs')).toMatchObject({ to: 'skipped', status: 'skipped' });
  });

  it('the manifest and every lane result validate against their schemas and agree', async () => {
    const file = await sampleFleet();
    const ws = join(dir, 'ws');
    await fleet(runArgs(file, ws), { cwd: dir });
    const raw = JSON.parse(readFileSync(join(ws, 'fleet-status.json'), 'utf8'));
    const parsed = Manifest.safeParse(raw);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    const m = parsed.data!;
    expect(m.fleet_id).toMatch(/^fleet-\d{8}-\d{6}-[0-9a-f]{6}$/);
    expect(m.ended_at).not.toBeNull();
    expect(m.forge).toBe('local');
    expect(m.lanes.map((l) => l.lane).sort()).toEqual(['api', 'api-docs', 'broken', 'core', 'gone', 'same']);
    const s = m.summary;
    expect(s).toMatchObject({ total: 6, completed: 3, no_op: 1, failed: 1, skipped: 1, excluded: 1, queued: 0, running: 0, retries: 1 });
    expect(s.total).toBe(s.completed + s.failed + s.skipped + s.excluded + s.queued + s.running);
    expect(lane(m, 'same')).toMatchObject({ status: 'completed', phase: 'no-op', commit: null, changed_files: [] });
    for (const l of m.lanes) {
      if (l.status === 'excluded') {
        expect(existsSync(join(ws, 'lanes', l.lane, 'result.json'))).toBe(false);
        continue;
      }
      const res = LaneResult.safeParse(JSON.parse(readFileSync(join(ws, 'lanes', l.lane, 'result.json'), 'utf8')));
      expect(res.success, l.lane).toBe(true);
      expect(res.data!.fleet_id).toBe(m.fleet_id);
      // The manifest adds the verification; everything else is the lane's own record.
      expect({ ...res.data!.lane, evidence: null }).toEqual({ ...l, evidence: null });
      if (l.log) expect(existsSync(join(ws, l.log)), l.log).toBe(true);
      for (const a of l.attempts) expect(existsSync(join(ws, a.log)), a.log).toBe(true);
    }
    const core = lane(m, 'core');
    expect(core.evidence).toMatchObject({ verified_by: 'local-git', head_matches: true, files_match: true, fence_ok: true, branch_head: core.commit });
    expect(core.timings.total_ms).toBeGreaterThan(0);
    const plan = JSON.parse(readFileSync(join(ws, 'plan.json'), 'utf8'));
    expect(plan.fleet_id).toBe(m.fleet_id);
    expect(readdirSync(ws).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('fleet status and fleet report read a manifest; fleet plan --json prints the initial one', async () => {
    const file = await sampleFleet();
    const ws = join(dir, 'ws');
    await fleet(runArgs(file, ws), { cwd: dir });
    const mf = join(ws, 'fleet-status.json');
    const m = readManifest(ws);

    const status = await fleet(['status', mf], { cwd: dir });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`## Fleet Status — ${m.fleet_id}`);
    // Of the 3 completed lanes, 1 changed nothing: counted as a no-op, not as completed.
    expect(status.stdout).toMatch(/Completed: 2 \| No-op: 1 \| Failed: 1 \| Skipped: 1 \| Excluded: 1/);
    for (const id of ['core', 'api', 'broken', 'same', 'gone', 'api-docs']) expect(status.stdout).toMatch(new RegExp(`\\| ${id} \\|`));

    const report = await fleet(['report', 'ws/fleet-status.json'], { cwd: dir });
    expect(report.code).toBe(1); // a lane failed
    expect(report.stdout).toContain(`## Fleet Report — ${m.fleet_id}`);
    expect(report.stdout).toMatch(/\| broken \| \.\/broken\.git \| 1 \| failed \|/);
    expect(report.stdout).toContain('### Action required');
    expect(report.stdout.trim()).toBe(readFileSync(join(ws, 'report.md'), 'utf8').trim());

    const plan = await fleet(['plan', file, '--json'], { cwd: dir });
    expect(plan.code, plan.stderr).toBe(0);
    const planned = Manifest.parse(JSON.parse(plan.stdout));
    expect(planned.ended_at).toBeNull();
    // api owns the whole of api.git, so api-docs (same repository) is pushed to a wave of its own.
    expect(planned.waves.map((w) => w.lanes)).toEqual([['broken', 'core', 'same'], ['api'], ['api-docs']]);
    expect(planned.contention).toEqual([expect.objectContaining({ lane: 'api-docs', because_of: 'api', wanted_wave: 1, wave: 2 })]);
    expect(
      planned.lanes
        .filter((l) => l.status === 'queued')
        .map((l) => l.lane)
        .sort(),
    ).toEqual(['api', 'api-docs', 'broken', 'core', 'same']);
    expect(lane(planned, 'gone')).toMatchObject({ status: 'excluded' });
    // Planning writes nothing.
    expect(existsSync(join(dir, '_workspace'))).toBe(false);

    const text = await fleet(['plan', file], { cwd: dir });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/Wave/);

    // Bad manifests: exit 2 naming the file.
    const bad = await fleet(['status', file], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(file);
    const none = await fleet(['report', join(dir, 'nope.json')], { cwd: dir });
    expect(none.code).toBe(2);
  });

  it('without --workspace, the workspace goes under the directory the command runs in', async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const file = writeFleetFile(dir, { name: 'dflt', directive: 'x', run: 'echo x >> README.md', max_retries: 0, targets: [{ repo: './a.git' }] });
    const r = await fleet(['run', file, '--quiet'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const ids = readdirSync(join(dir, '_workspace', 'fleet'));
    expect(ids).toHaveLength(1);
    expect(ids[0]).toMatch(/^fleet-\d{8}-\d{6}-[0-9a-f]{6}$/);
    expect(readManifest(join(dir, '_workspace', 'fleet', ids[0]!)).fleet_id).toBe(ids[0]);
    // fleet status and fleet report with no argument read the run of the fleet.yml in the current folder (issue 27).
    for (const cmd of ['status', 'report']) {
      const here = await fleet([cmd], { cwd: dir });
      expect(here.code, here.stderr).toBe(0);
      expect(here.stdout).toContain(ids[0]!);
    }
    const elsewhere = await fleet(['status'], { cwd: join(dir, '_workspace') });
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain(`name the run (no fleet.yml in ${join(dir, '_workspace')})`);
  });

  it('an events log that cannot be written does not take the run down', async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'noevents',
      directive: 'x',
      run: 'echo x >> README.md',
      max_retries: 0,
      // Isolated, a directive does not see the events log (test/integration/trust-lanes.test.ts); without isolation it can break it.
      isolation: 'off',
      targets: [
        { repo: './a.git', run: 'e="$FLEET_WORKSPACE/events.jsonl"; until [ -d "$e" ]; do rm -f "$e"; mkdir "$e" 2>/dev/null; done; echo x >> README.md' },
        { repo: './b.git', depends_on: ['a'] },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readManifest(ws).summary).toMatchObject({ total: 2, completed: 2 });
  });

  it('the live view on a terminal redraws its frame in place and ends with the final state', async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const file = writeFleetFile(dir, { name: 'tty', directive: 'x', run: 'sleep 0.6; echo x >> README.md', max_retries: 0, targets: [{ repo: './a.git' }] });
    const r = await fleet(['run', file, '--workspace', join(dir, 'ws')], { cwd: dir, tty: true });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Fleet fleet-\S+ · \d\d:\d\d:\d\d elapsed$/m);
    expect(r.stdout).toMatch(/\x1b\[\d+A\x1b\[0J/); // moved up over the previous frame
    const lastFrame = r.stdout.slice(r.stdout.lastIndexOf('\x1b[0J'));
    expect(lastFrame).toMatch(/1\/1 lanes done \(1 completed\)/);
  });

  it('two runs started at once in one directory get workspaces of their own', async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const fa = writeFleetFile(dir, { name: 'first', directive: 'x', run: 'echo x >> README.md', max_retries: 0, targets: [{ repo: './a.git' }] }, 'a.yml');
    const fb = writeFleetFile(dir, { name: 'second', directive: 'x', run: 'echo x >> README.md', max_retries: 0, targets: [{ repo: './b.git' }] }, 'b.yml');
    const [ra, rb] = await Promise.all([fleet(['run', fa, '--quiet'], { cwd: dir }), fleet(['run', fb, '--quiet'], { cwd: dir })]);
    expect([ra.code, rb.code]).toEqual([0, 0]);
    const ids = readdirSync(join(dir, '_workspace', 'fleet')).sort();
    expect(ids).toHaveLength(2);
    const names = ids.map((id) => readManifest(join(dir, '_workspace', 'fleet', id))).map((m) => [m.name, m.summary.completed]);
    expect(names.sort()).toEqual([
      ['first', 1],
      ['second', 1],
    ]);
    for (const id of ids) expect(readManifest(join(dir, '_workspace', 'fleet', id)).fleet_id).toBe(id);
  });

  it('the live view (not --quiet) prints one line per transition on a pipe', async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const file = writeFleetFile(dir, { name: 'live', directive: 'x', run: 'echo x >> README.md', max_retries: 0, targets: [{ repo: './a.git' }] });
    const ws = join(dir, 'ws');
    const r = await fleet(['run', file, '--workspace', ws], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Fleet fleet-\d{8}-\d{6}-[0-9a-f]{6}: 1 lane in 1 wave, up to 8 directives at once/m);
    expect(r.stdout).toMatch(/\d\d:\d\d:\d\d a: queued → cloning/);
    expect(r.stdout).toMatch(/a: pushing → pushed/);
    expect(r.stdout).toContain('## Fleet Report');
  });
});

describe('while a fleet runs', () => {
  it('fleet-status.json follows the lanes, so `fleet status` shows a running fleet as it is', async () => {
    await createRepo(dir, 'quick', { 'README.md': '# q\n' }, { clone: false });
    await createRepo(dir, 'slow', { 'README.md': '# s\n' }, { clone: false });
    const gate = join(dir, 'gate');
    const file = writeFleetFile(dir, {
      name: 'live',
      directive: 'append',
      run: 'echo x >> README.md',
      max_retries: 0,
      // The slow lane waits until the test has looked (at most 10 s).
      targets: [{ repo: './quick.git' }, { repo: './slow.git', run: `for i in $(seq 100); do [ -f ${gate} ] && break; sleep 0.1; done; echo y >> README.md` }],
    });
    const ws = join(dir, 'ws');
    const running = fleet(runArgs(file, ws), { cwd: dir });
    const { writeFileSync } = await import('node:fs');
    let seen: Manifest | undefined;
    const deadline = Date.now() + 8_000;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      if (!existsSync(join(ws, 'fleet-status.json'))) continue;
      const m = readManifest(ws);
      if (lane(m, 'quick').status === 'completed' && lane(m, 'slow').status === 'running') {
        seen = m;
        break;
      }
    }
    const status = seen ? await fleet(['status', join(ws, 'fleet-status.json')], { cwd: dir }) : undefined;
    writeFileSync(gate, '');
    const r = await running;
    expect(seen, 'the manifest never showed quick completed while slow ran').toBeDefined();
    expect(seen!.ended_at).toBeNull();
    expect(seen!.summary).toMatchObject({ total: 2, completed: 1, running: 1 });
    expect(status!.stdout).toMatch(/Active: 1 \/ 8 .*Completed: 1/);
    expect(r.code).toBe(0);
    const final = readManifest(ws);
    expect(final.ended_at).not.toBeNull();
    expect(final.summary).toMatchObject({ completed: 2, running: 0 });
  });
});

describe('entry points', () => {
  it('`npm run fleet` (src/cli/main.ts run directly) and src/cli/index.ts both run the CLI', async () => {
    const { spawnSync } = await import('node:child_process');
    const root = join(import.meta.dirname, '../..');
    const loader = tsxLoader();
    const file = writeFleetFile(dir, { name: 'entry', directive: 'x', run: 'true', missing_targets: 'exclude', targets: [{ repo: './nothing.git' }] });
    for (const entry of ['src/cli/main.ts', 'src/cli/index.ts']) {
      const p = spawnSync(process.execPath, ['--import', loader, join(root, entry), 'plan', file, '--json'], { cwd: dir, encoding: 'utf8', timeout: 20_000 });
      expect(p.status, `${entry}: ${p.stderr}`).toBe(0);
      expect(Manifest.parse(JSON.parse(p.stdout)).name).toBe('entry');
    }
  });
});
