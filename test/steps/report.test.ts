/**
 * The report step on real repositories and the local forge: a lane result is read only when it is this fleet's
 * and this lane's, a completed lane is confirmed against the forge (its branch, its files, its fence) and marked
 * `unverified` when the forge does not show what it says, and a lane that left nothing is accounted for.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION, type LaneRecord, type Manifest } from '../../src/core/model.js';
import { validateFleetFile } from '../../src/core/validate.js';
import type { LaneSpec } from '../../src/core/model.js';
import { LocalForge } from '../../src/local/forge.js';
import type { Clock } from '../../src/ports.js';
import { resultPath, writeLaneResult } from '../../src/steps/lane/index.js';
import { planStep } from '../../src/steps/plan.js';
import { readLaneResult, reportStep, verifyLane } from '../../src/steps/report.js';
import { commitToRemote, createRepo } from '../support/repos.js';
import { removeDir, tempDir } from '../integration/helpers.js';

const FILE = 'fleet.yml';
const NOW = '2026-12-01T12:00:00.000Z';
const clock: Clock = { now: () => new Date(NOW) };

let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-report-step-');
});
afterEach(() => removeDir(dir));

/**
 * A repository `svc` whose lane `svc` pushed one commit to fleet/report/svc (README.md changed), a plan of it, and
 * the lane's record as a lane that completed would leave it.
 */
async function pushedLane(extra: Record<string, unknown> = {}) {
  const { remote, commit: base } = await createRepo(dir, 'svc', { 'README.md': '# svc\n', 'src/a.ts': 'a\n' }, { clone: false });
  const commit = await commitToRemote(remote, 'fleet/report/svc', { 'README.md': '# svc, stamped\n' }, { from: base });
  const v = validateFleetFile({ name: 'report', directive: 'stamp', run: 'true', targets: [{ repo: './svc.git', ...extra }] }, FILE);
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const forge = new LocalForge({ baseDir: dir });
  const planned = await planStep(v.fleet, forge, clock, { file: FILE, fleet_id: 'fleet-report-1' });
  if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
  const spec: LaneSpec = planned.fleet.lanes[0]!;
  const rec: LaneRecord = {
    ...planned.manifest.lanes[0]!,
    status: 'completed',
    phase: 'pushed',
    base_branch: 'main',
    base_commit: base,
    commit,
    changed_files: ['README.md'],
    merge_status: 'not-requested',
  };
  return { remote, base, commit, forge, spec, rec, manifest: planned.manifest };
}

describe('verifyLane', () => {
  it('confirms a lane whose branch, files and fence the forge shows as it said, recording what it read', async () => {
    const { forge, spec, rec, commit } = await pushedLane();
    const checked = await verifyLane(forge, spec, rec, NOW, false);
    expect(checked.status).toBe('completed');
    expect(checked.phase).toBe('pushed');
    expect(checked.error).toBeNull();
    expect(checked.evidence).toMatchObject({
      verified_at: NOW,
      verified_by: 'local-git',
      branch_head: commit,
      head_matches: true,
      files_match: true,
      fence_ok: true,
      notes: [],
    });
  });

  it('a branch that is not on the forge: failed, unverified', async () => {
    const { forge, spec, rec } = await pushedLane();
    const checked = await verifyLane(forge, spec, { ...rec, branch: 'fleet/report/elsewhere' }, NOW, false);
    expect(checked).toMatchObject({ status: 'failed', phase: 'failed' });
    expect(checked.error).toEqual({ class: 'unverified', message: 'the forge does not confirm this lane: fleet/report/elsewhere is not on the forge' });
    expect(checked.evidence).toMatchObject({ branch_head: null, head_matches: false, files_match: true, fence_ok: true });
  });

  it('a branch that moved on: failed, unverified, naming both commits', async () => {
    const { remote, forge, spec, rec, commit } = await pushedLane();
    const moved = await commitToRemote(remote, 'fleet/report/svc', { 'OTHER.md': 'someone else\n' });
    const checked = await verifyLane(forge, spec, rec, NOW, false);
    expect(checked.status).toBe('failed');
    expect(checked.error?.class).toBe('unverified');
    expect(checked.evidence.notes).toEqual([`fleet/report/svc points at ${moved.slice(0, 12)}, not the lane's ${commit.slice(0, 12)}`]);
    expect(checked.evidence).toMatchObject({ branch_head: moved, head_matches: false });
  });

  it('a merged lane whose branch was deleted is still confirmed; an unmerged one is not', async () => {
    const { forge, spec, rec } = await pushedLane();
    const gone = { ...rec, branch: 'fleet/report/deleted' };
    expect((await verifyLane(forge, spec, { ...gone, merge_status: 'merged', phase: 'merged' }, NOW, false)).status).toBe('completed');
    expect((await verifyLane(forge, spec, { ...gone, merge_status: 'blocked' }, NOW, false)).status).toBe('failed');
  });

  it('files the forge does not show as the lane said: failed, unverified, with both counts', async () => {
    const { forge, spec, rec } = await pushedLane();
    const checked = await verifyLane(forge, spec, { ...rec, changed_files: ['README.md', 'src/a.ts'] }, NOW, false);
    expect(checked.error).toEqual({
      class: 'unverified',
      message: 'the forge does not confirm this lane: the forge shows 1 changed files, the lane reported 2',
    });
    expect(checked.evidence).toMatchObject({ head_matches: true, files_match: false, fence_ok: true });
    // The same count with another file is no match either.
    const other = await verifyLane(forge, spec, { ...rec, changed_files: ['src/a.ts'] }, NOW, false);
    expect(other.evidence.files_match).toBe(false);
    expect(other.error?.message).toBe('the forge does not confirm this lane: the forge shows 1 changed files, the lane reported 1');
  });

  it('as many files as the lane said, but not the same ones: failed, unverified', async () => {
    const { remote, forge, spec, rec, base } = await pushedLane();
    const commit = await commitToRemote(remote, 'fleet/report/two', { 'README.md': 'x\n', 'b.md': 'b\n' }, { from: base });
    const checked = await verifyLane(forge, spec, { ...rec, branch: 'fleet/report/two', commit, changed_files: ['README.md', 'c.md'] }, NOW, false);
    expect(checked.evidence.files_match).toBe(false);
    expect(checked.status).toBe('failed');
  });

  it('a merged lane whose branch moved elsewhere is not confirmed by the merge', async () => {
    const { remote, forge, spec, rec } = await pushedLane();
    await commitToRemote(remote, 'fleet/report/svc', { 'OTHER.md': 'x\n' });
    const checked = await verifyLane(forge, spec, { ...rec, merge_status: 'merged', phase: 'merged' }, NOW, false);
    expect(checked).toMatchObject({ status: 'failed', evidence: { head_matches: false } });
  });

  it('every reason the forge does not confirm a lane is in its error, one after another', async () => {
    const { forge, spec, rec } = await pushedLane({ owns: ['src/**'] });
    const checked = await verifyLane(forge, spec, { ...rec, branch: 'gone', changed_files: ['README.md', 'x.md'] }, NOW, false);
    expect(checked.evidence.notes).toHaveLength(3);
    expect(checked.error?.message).toBe(`the forge does not confirm this lane: ${checked.evidence.notes.join('; ')}`);
    expect(checked.error?.message).toMatch(
      /^the forge does not confirm this lane: gone is not on the forge; the forge shows 1 changed files, the lane reported 2; fence: /,
    );
  });

  it('files listed in another order still match: the forge lists them sorted', async () => {
    const { remote, forge, spec, rec, base } = await pushedLane();
    const commit = await commitToRemote(remote, 'fleet/report/two', { 'b.md': 'b\n', 'a.md': 'a\n' }, { from: base });
    const checked = await verifyLane(forge, spec, { ...rec, branch: 'fleet/report/two', commit, changed_files: ['b.md', 'a.md'] }, NOW, false);
    expect(checked.status).toBe('completed');
    expect(checked.evidence.files_match).toBe(true);
  });

  it('a commit the forge cannot diff: failed, unverified, saying so', async () => {
    const { forge, spec, rec } = await pushedLane();
    const checked = await verifyLane(forge, spec, { ...rec, base_commit: '0'.repeat(40) }, NOW, false);
    expect(checked.status).toBe('failed');
    expect(checked.evidence.notes).toEqual(['the forge could not diff the lane commit against its base']);
    expect(checked.evidence).toMatchObject({ head_matches: true, files_match: false });
  });

  it('a change outside the fence on the forge: failed, unverified, naming the fence', async () => {
    const { forge, spec, rec } = await pushedLane({ owns: ['src/**'] });
    const checked = await verifyLane(forge, spec, rec, NOW, false);
    expect(checked.status).toBe('failed');
    expect(checked.evidence).toMatchObject({ head_matches: true, files_match: true, fence_ok: false });
    expect(checked.evidence.notes).toHaveLength(1);
    expect(checked.evidence.notes[0]).toMatch(/^fence: .*README\.md/);
    expect(checked.error?.message).toBe(`the forge does not confirm this lane: ${checked.evidence.notes[0]}`);
  });

  it('the fence is checked on what the forge shows, not on what the lane said', async () => {
    const { forge, spec, rec } = await pushedLane({ owns: ['src/**'] });
    const checked = await verifyLane(forge, spec, { ...rec, changed_files: ['src/a.ts'] }, NOW, false);
    expect(checked.evidence.fence_ok).toBe(false);
  });

  it('keeps the notes the lane already had, before its own', async () => {
    const { forge, spec, rec } = await pushedLane();
    const checked = await verifyLane(
      forge,
      spec,
      { ...rec, branch: 'gone', evidence: { ...rec.evidence, notes: ['reviewer x could not be requested'] } },
      NOW,
      false,
    );
    expect(checked.evidence.notes).toEqual(['reviewer x could not be requested', 'gone is not on the forge']);
  });

  it('asks nothing of a lane that did not complete, has no commit, or ran dry', async () => {
    const { forge, spec, rec } = await pushedLane();
    const gone = { ...rec, branch: 'not-there' };
    for (const r of [
      { ...gone, status: 'failed' as const, phase: 'failed' as const },
      { ...gone, commit: null },
      { ...gone, branch: null },
      { ...gone, base_commit: null },
      { ...gone, phase: 'dry-run' as const },
    ]) {
      expect(await verifyLane(forge, spec, r, NOW, false)).toBe(r);
    }
    expect(await verifyLane(forge, spec, gone, NOW, true)).toBe(gone);
  });

  it('a forge that cannot be asked leaves a completed lane failed and unverified, saying why', async () => {
    const { spec, rec } = await pushedLane();
    // A GitHub name on a local forge without --repos-root: the forge cannot even say where the repository is.
    const lost: LaneSpec = { ...spec, repo: 'acme/svc', repo_kind: 'github' };
    const checked = await verifyLane(new LocalForge({ baseDir: dir }), lost, rec, NOW, false);
    expect(checked).toMatchObject({ status: 'failed', phase: 'failed' });
    expect(checked.error?.class).toBe('unverified');
    expect(checked.error?.message).toMatch(/^the forge could not be asked to confirm this lane: /);
    expect(checked.evidence.verified_at).toBe(NOW);
    expect(checked.evidence.notes).toEqual([checked.error!.message]);
  });
});

describe('readLaneResult', () => {
  it('reads a lane result of this fleet and lane', async () => {
    const { rec } = await pushedLane();
    await writeLaneResult(dir, 'fleet-report-1', rec);
    expect(await readLaneResult(dir, 'svc', 'fleet-report-1')).toEqual({ ok: true, record: rec });
  });

  it('no file: missing', async () => {
    expect(await readLaneResult(dir, 'svc', 'fleet-report-1')).toEqual({ ok: false, reason: 'missing', detail: 'the lane left no result file' });
  });

  it("refuses another fleet's result, and another lane's", async () => {
    const { rec } = await pushedLane();
    await writeLaneResult(dir, 'fleet-report-1', rec);
    expect(await readLaneResult(dir, 'svc', 'fleet-other')).toEqual({
      ok: false,
      reason: 'invalid',
      detail: 'result.json belongs to fleet-report-1/svc, not fleet-other/svc',
    });
    await writeLaneResult(dir, 'fleet-report-1', { ...rec, lane: 'api' });
    mkdirSync(join(dir, 'lanes', 'web'), { recursive: true });
    writeFileSync(resultPath(dir, 'web'), JSON.stringify({ schema_version: SCHEMA_VERSION, fleet_id: 'fleet-report-1', lane: { ...rec, lane: 'api' } }));
    expect(await readLaneResult(dir, 'web', 'fleet-report-1')).toEqual({
      ok: false,
      reason: 'invalid',
      detail: 'result.json belongs to fleet-report-1/api, not fleet-report-1/web',
    });
  });

  it('not JSON, or not a lane result: invalid, saying what is wrong (at most three schema issues, with their paths)', async () => {
    mkdirSync(join(dir, 'lanes', 'svc'), { recursive: true });
    writeFileSync(resultPath(dir, 'svc'), '{ not json');
    const notJson = await readLaneResult(dir, 'svc', 'f');
    expect(notJson).toMatchObject({ ok: false, reason: 'invalid' });
    expect(!notJson.ok && notJson.detail).toMatch(/^result\.json is not JSON: /);

    const { rec } = await pushedLane();
    writeFileSync(
      resultPath(dir, 'svc'),
      JSON.stringify({ schema_version: SCHEMA_VERSION, fleet_id: 'f', lane: { ...rec, status: 'great', wave: 'x', retry_count: -1, commit: 5 } }),
    );
    const bad = await readLaneResult(dir, 'svc', 'f');
    expect(bad).toMatchObject({ ok: false, reason: 'invalid' });
    const detail = bad.ok ? '' : bad.detail;
    expect(detail).toMatch(/^result\.json does not match the lane result schema \(lane\.\w+: [^;]+; lane\.\w+: [^;]+; lane\.\w+: [^;]+\)$/);
  });

  it('a result too big to be one: invalid, naming the limit', async () => {
    mkdirSync(join(dir, 'lanes', 'svc'), { recursive: true });
    writeFileSync(resultPath(dir, 'svc'), ' '.repeat(70 * 1024 * 1024));
    const big = await readLaneResult(dir, 'svc', 'f');
    expect(big).toMatchObject({ ok: false, reason: 'invalid' });
    expect(!big.ok && big.detail).toMatch(/^result\.json: it is 70(\.0)? MiB, over Fleet's limit of 64 MiB for a lane result$/);
  });
});

describe('reportStep', () => {
  /** The report of a manifest of the one lane `spec`, on the local forge. */
  async function reportOf(manifest: Manifest, spec: LaneSpec, forge: LocalForge, opts: Partial<Parameters<typeof reportStep>[0]> = {}) {
    return reportStep({ root: dir, manifest, lanes: new Map([[spec.id, spec]]), forge, clock, ...opts });
  }

  it("checks a lane's own result against the forge and finalizes the manifest", async () => {
    const { forge, spec, rec, manifest } = await pushedLane();
    await writeLaneResult(dir, manifest.fleet_id, rec);
    const m = await reportOf(manifest, spec, forge);
    expect(m.lanes[0]).toMatchObject({ status: 'completed', evidence: { verified_by: 'local-git', head_matches: true } });
    expect(m.ended_at).toBe(NOW);
    expect(m.summary).toMatchObject({ total: 1, completed: 1, failed: 0 });
  });

  it('a lane that left no result: failed no-result, or what the runner can tell of it', async () => {
    const { forge, spec, manifest } = await pushedLane();
    const m = await reportOf(manifest, spec, forge);
    expect(m.lanes[0]).toMatchObject({
      status: 'failed',
      phase: 'failed',
      updated_at: NOW,
      error: { class: 'no-result', message: 'the lane left no result file; the lane did not finish (crashed, killed or cancelled)' },
    });
    const asked: string[] = [];
    const explained = await reportOf(manifest, spec, forge, {
      explainMissing: async (lane) => (asked.push(lane.lane), { status: 'skipped', error: { class: 'cancelled', message: 'rejected at the gate' } }),
    });
    expect(asked).toEqual(['svc']);
    expect(explained.lanes[0]).toMatchObject({ status: 'skipped', phase: 'skipped', error: { class: 'cancelled', message: 'rejected at the gate' } });
    // A runner that cannot tell leaves the lane failed with no-result.
    const unexplained = await reportOf(manifest, spec, forge, { explainMissing: async () => null });
    expect(unexplained.lanes[0]).toMatchObject({ status: 'failed', error: { class: 'no-result' } });
  });

  it('an unreadable result is no-result with what is wrong, and is not explained from the run', async () => {
    const { forge, spec, manifest } = await pushedLane();
    mkdirSync(join(dir, 'lanes', 'svc'), { recursive: true });
    writeFileSync(resultPath(dir, 'svc'), '[]');
    const asked: string[] = [];
    const m = await reportOf(manifest, spec, forge, { explainMissing: async (lane) => (asked.push(lane.lane), null) });
    expect(asked).toEqual([]);
    expect(m.lanes[0]!.error?.class).toBe('no-result');
    expect(m.lanes[0]!.error?.message).toMatch(
      /^result\.json does not match the lane result schema .*; the lane did not finish \(crashed, killed or cancelled\)$/,
    );
  });

  it('a lane whose result stopped mid-way is failed no-result, naming the phase', async () => {
    const { forge, spec, rec, manifest } = await pushedLane();
    await writeLaneResult(dir, manifest.fleet_id, { ...rec, status: 'running', phase: 'checking' });
    const m = await reportOf(manifest, spec, forge);
    expect(m.lanes[0]).toMatchObject({
      status: 'failed',
      phase: 'failed',
      updated_at: NOW,
      error: { class: 'no-result', message: 'the lane stopped while checking' },
    });
  });

  it("takes the runner's own checked record over the file, and asks nothing more of the forge for it", async () => {
    const { forge, spec, rec, manifest } = await pushedLane();
    await writeLaneResult(dir, manifest.fleet_id, { ...rec, branch: 'nowhere' });
    const verified = { ...rec, evidence: { ...rec.evidence, notes: ['checked as it finished'] } };
    const m = await reportOf(manifest, spec, forge, { verified: new Map([['svc', verified]]) });
    expect(m.lanes[0]).toMatchObject({ status: 'completed', branch: rec.branch, evidence: { notes: ['checked as it finished'], verified_at: null } });
  });

  it('after an interrupt a completed lane is reported as it said, with a note, without asking the forge', async () => {
    const { forge, spec, rec, manifest } = await pushedLane();
    await writeLaneResult(dir, manifest.fleet_id, { ...rec, branch: 'nowhere' });
    const m = await reportOf(manifest, spec, forge, { forgeReads: false });
    expect(m.lanes[0]).toMatchObject({
      status: 'completed',
      evidence: { verified_at: null, notes: ['not checked against the forge again: the run was interrupted'] },
    });
    // A failed lane is reported as it is either way.
    await writeLaneResult(dir, manifest.fleet_id, { ...rec, status: 'failed', phase: 'failed', error: { class: 'check-failed', message: 'x' } });
    const failed = await reportOf(manifest, spec, forge, { forgeReads: false });
    expect(failed.lanes[0]!.evidence.notes).toEqual([]);
    expect(failed.lanes[0]!.error).toEqual({ class: 'check-failed', message: 'x' });
  });

  it('excluded and plan-skipped lanes stay as planned, with no result to read', async () => {
    const { forge, spec, manifest, rec } = await pushedLane();
    const excluded: Manifest = { ...manifest, lanes: [{ ...manifest.lanes[0]!, status: 'excluded', phase: 'excluded' }] };
    expect((await reportOf(excluded, spec, forge)).lanes[0]).toMatchObject({ status: 'excluded', error: null });
    const skipped: Manifest = {
      ...manifest,
      lanes: [{ ...manifest.lanes[0]!, status: 'skipped', phase: 'skipped', error: { class: 'dependency-failed', message: 'dep' } }],
    };
    expect((await reportOf(skipped, spec, forge)).lanes[0]).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed', message: 'dep' } });
    // Even with a result file written there, an excluded lane is not read.
    await writeLaneResult(dir, manifest.fleet_id, rec);
    expect((await reportOf(excluded, spec, forge)).lanes[0]!.status).toBe('excluded');
  });

  it('a lane the fleet file no longer names is reported as it said, unchecked', async () => {
    const { forge, rec, manifest } = await pushedLane();
    await writeLaneResult(dir, manifest.fleet_id, { ...rec, branch: 'nowhere' });
    const m = await reportStep({ root: dir, manifest, lanes: new Map(), forge, clock });
    expect(m.lanes[0]).toMatchObject({ status: 'completed', branch: 'nowhere', evidence: { verified_at: null } });
  });

  it('a dry-run manifest asks the forge nothing for a completed lane', async () => {
    const { forge, spec, rec, manifest } = await pushedLane();
    await writeLaneResult(dir, manifest.fleet_id, { ...rec, branch: 'nowhere' });
    const m = await reportOf({ ...manifest, dry_run: true }, spec, forge);
    expect(m.lanes[0]).toMatchObject({ status: 'completed', evidence: { verified_at: null } });
  });
});
