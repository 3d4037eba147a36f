/**
 * Speculative strategies, locally (issue 9): a target tried several ways at once, each strategy its own lane on
 * fleet/<name>/<lane>/<label> in one wave whatever their scopes; when all have finished, the fleet file's rule picks
 * one from what they left behind; a lane that depends on the target starts from the pick's checkpoint.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, readRemoteFile, remoteBranches } from '../support/repos.js';
import { fleet, lane, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

async function tried(spec: Record<string, unknown>, extraArgs: string[] = []) {
  await createRepo(dir, 'svc', { 'README.md': '# svc\n', 'src/app.js': 'export const a = 1;\nexport const b = 2;\n' }, { clone: false });
  await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
  const file = writeFleetFile(dir, {
    name: 'spec',
    directive: 'Make the values right.',
    run: 'true',
    owns: ['src/**'],
    checks: ['! grep -q BROKEN src/app.js'],
    max_retries: 0,
    ...spec,
  });
  const ws = join(dir, 'ws');
  const r = await fleet([...runArgs(file, ws), ...extraArgs], { cwd: dir });
  return { r, m: readManifest(ws), report: readFileSync(join(ws, 'report.md'), 'utf8') };
}

const THREE = [
  { label: 'crash', run: 'exit 3' },
  { label: 'rewrite', run: 'printf "export const a = 10;\\nexport const b = 20;\\nexport const c = 30;\\n" > src/app.js' },
  { label: 'minimal', run: 'sed -i "s/a = 1/a = 10/" src/app.js' },
];

describe('speculative strategies', () => {
  it('three strategies, two green: the smallest green diff is picked, in one wave despite one scope; the dependent builds on the pick', async () => {
    const { r, m, report } = await tried({
      speculative: { pick: 'smallest-green-diff' },
      targets: [
        { repo: './svc.git', strategies: THREE },
        { repo: './app.git', owns: ['**'], depends_on: ['svc'], run: 'echo "$FLEET_LANE" > DEP.md' },
      ],
    });
    // One strategy failed: the fleet did not complete every lane (exit 1), but its target has a pick.
    expect(r.code).toBe(1);
    expect(m.waves.map((w) => w.lanes)).toEqual([['svc.crash', 'svc.minimal', 'svc.rewrite'], ['app']]);
    expect(m.waves[0]!.shards).toHaveLength(1);
    expect(m.contention).toEqual([]);
    expect(lane(m, 'svc.crash')).toMatchObject({ status: 'failed', strategy: { group: 'svc', label: 'crash', picked: false } });
    expect(lane(m, 'svc.rewrite')).toMatchObject({ status: 'completed', strategy: { picked: false, diff_lines: 5 } });
    expect(lane(m, 'svc.minimal')).toMatchObject({
      status: 'completed',
      branch: 'fleet/spec/svc/minimal',
      strategy: { picked: true, diff_lines: 2, reason: 'smallest green diff: minimal changes 2 lines in 1 file (2 of 3 green)' },
    });
    expect(await remoteBranches(join(dir, 'svc.git'))).toEqual(['fleet/spec/svc/minimal', 'fleet/spec/svc/rewrite', 'main']);
    expect(lane(m, 'app')).toMatchObject({ status: 'completed', depends_on: ['svc.crash', 'svc.rewrite', 'svc.minimal'] });
    expect(await readRemoteFile(join(dir, 'app.git'), 'fleet/spec/app', 'DEP.md')).toBe('app\n');
    expect(report).toContain('### Strategies\n\n`svc`: smallest green diff: minimal changes 2 lines in 1 file (2 of 3 green).');
    // A local fleet has no CI: the Checks column says the checks passed, the CI column claims nothing.
    expect(report).toMatch(/\| minimal ✅ \| completed \| passed \| — \| — \| 2 \| 1 \|/);
    expect(report).toMatch(/\| crash \| failed \| — \| — \| — \| — \| — \|/);
  });

  it('no green strategy: the target has no pick, and its dependent is skipped saying so', async () => {
    const { m } = await tried({
      targets: [
        {
          repo: './svc.git',
          strategies: [
            { label: 'a', run: 'exit 1' },
            { label: 'b', run: 'echo BROKEN >> src/app.js' },
          ],
        },
        { repo: './app.git', owns: ['**'], depends_on: ['svc'] },
      ],
    });
    expect(lane(m, 'svc.b')).toMatchObject({ status: 'failed', error: { class: 'check-failed' }, strategy: { picked: false } });
    expect(lane(m, 'app')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    expect(lane(m, 'app').error!.message).toBe(
      'dependency "svc" has no picked strategy (no strategy ended green (a: failed directive-failed, b: failed check-failed)); this lane was not run against a missing checkpoint',
    );
  });

  it('--speculative 3 tries every lane three times with its own directive; the first green is picked', async () => {
    const { r, m } = await tried({ run: 'sed -i "s/b = 2/b = 3/" src/app.js', targets: [{ repo: './svc.git' }] }, ['--speculative', '3']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(m.lanes.map((l) => l.lane)).toEqual(['svc.s1', 'svc.s2', 'svc.s3']);
    const picked = m.lanes.filter((l) => l.strategy!.picked);
    expect(picked).toHaveLength(1);
    expect(picked[0]!.ended_at! <= m.lanes.map((l) => l.ended_at!).sort()[0]!).toBe(true);
    expect(picked[0]!.strategy!.reason).toMatch(/^first green: s\d ended green first \(3 of 3 green\)$/);
  });

  it("an incremental sweep keeps a target's strategies in one shard, and a pick that opened its PR stands", async () => {
    await createRepo(dir, 'svc', { 'README.md': '# svc\n' }, { clone: false });
    await createRepo(dir, 'other', { 'README.md': '# other\n' }, { clone: false });
    const spec = (n: number) => ({
      name: 'spec',
      directive: 'd',
      run: 'true',
      max_retries: 0,
      targets: [
        { repo: './other.git', run: 'echo o > O.md' },
        {
          repo: './svc.git',
          strategies: [
            { label: 'a', run: `echo a${n} > A.md` },
            { label: 'b', run: `echo b${n} > B.md` },
          ],
        },
      ],
    });
    const first = await fleet(runArgs(writeFleetFile(dir, spec(1)), join(dir, 'ws1')), { cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    // The strategies change (new commands), the other lane does not: it is left out of the shards, they stay together.
    const second = await fleet([...runArgs(writeFleetFile(dir, spec(2)), join(dir, 'ws2')), '--since', join(dir, 'ws1', 'fleet-status.json')], { cwd: dir });
    expect(second.code, second.stderr).toBe(0);
    const m = readManifest(join(dir, 'ws2'));
    expect(lane(m, 'other').status).toBe('unchanged');
    expect(m.waves[0]!.shards.map((s) => s.lanes)).toEqual([['svc.a', 'svc.b']]);
    expect(m.lanes.filter((l) => l.strategy?.picked).map((l) => l.lane)).toHaveLength(1);
  });

  it('refuses a label written twice and a strategy lane id that is already a lane, every problem at once', async () => {
    await createRepo(dir, 'svc', { 'README.md': '# svc\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'spec',
      directive: 'd',
      run: 'true',
      targets: [
        { repo: './svc.git', strategies: [{ label: 'x' }, { label: 'x' }, { label: 'y' }] },
        { repo: './svc.git', lane: 'svc.y' },
      ],
    });
    const r = await fleet(['plan', file], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('targets[0].strategies[1].label: strategy "x" is listed twice for lane "svc"');
    expect(r.stderr).toContain('targets[0].strategies[2].label: strategy lane "svc.y" is already a lane of this fleet: choose another label');
  });
});
