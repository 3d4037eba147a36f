/**
 * `fleet prs` on the local forge, after a real fleet run over real bare repositories: the lane branches stand for
 * PRs (no PRs locally), a merge is a fast-forward of the base, a close deletes the branch. Everything asserted is
 * read back from the repositories and the files the commands left.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateFleetFile } from '../../src/core/validate.js';
import { LocalForge } from '../../src/local/forge.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock } from '../../src/ports.js';
import { closePrs, laneSpecFor, listPrs, mergePrs, prsCommand, type PrsEventLine } from '../../src/steps/prs.js';
import { runFleet } from '../../src/steps/drivers/process.js';
import { processStart } from '../../src/util/lock.js';
import { sealProblem, stopManifestSeal, useManifestSeal } from '../../src/util/manifest-seal.js';
import { commitToRemote, createRepo, remoteBranches, remoteHead } from '../support/repos.js';
import { lane, readManifest, removeDir, tempDir } from '../integration/helpers.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-prs-');
});
afterEach(() => removeDir(dir));

/**
 * Three repositories, one lane each, run for real by the local runner (runFleet, as `fleet run` does): each lane
 * pushes `fleet/stamp/<lane>` with STAMP.md.
 */
async function ranFleet() {
  const repos = {
    svc: await createRepo(dir, 'svc', { 'README.md': '# svc\n' }, { clone: false }),
    lib: await createRepo(dir, 'lib', { 'README.md': '# lib\n' }, { clone: false }),
    web: await createRepo(dir, 'web', { 'README.md': '# web\n' }, { clone: false }),
  };
  const v = validateFleetFile(
    {
      name: 'stamp',
      directive: 'Stamp every repository.',
      run: 'echo "$FLEET_LANE" > STAMP.md',
      isolation: 'off',
      max_retries: 0,
      targets: [{ repo: './svc.git' }, { repo: './lib.git' }, { repo: './web.git' }],
    },
    'fleet.yml',
  );
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const ws = join(dir, 'ws');
  const forge = new LocalForge({ baseDir: dir });
  const out = await runFleet({
    fleet: v.fleet,
    file: join(dir, 'fleet.yml'),
    forge,
    workspace: localWorkspace,
    exec: localExecutor,
    clock: systemClock,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    root: ws,
    cwd: dir,
  });
  if (!out.ok) throw new Error(JSON.stringify(out.problems));
  expect(out.manifest.lanes.map((l) => [l.lane, l.status])).toEqual([
    ['lib', 'completed'],
    ['svc', 'completed'],
    ['web', 'completed'],
  ]);
  return { repos, ws, manifestPath: join(ws, 'fleet-status.json'), forge, lanes: v.fleet.lanes };
}

function events(ws: string): Array<Record<string, unknown>> {
  return readFileSync(join(ws, 'events.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

function prsLines(ws: string): PrsEventLine[] {
  return events(ws).filter((e) => typeof e.command === 'string') as unknown as PrsEventLine[];
}

describe('fleet prs on the local forge', () => {
  it('lists each lane branch as the forge shows it: a branch without a PR, fast-forwardable or not, no CI, its age', async () => {
    const { repos, ws, forge } = await ranFleet();
    // The base of web moved on after the run: its lane branch can no longer be fast-forwarded.
    await commitToRemote(repos.web.remote, 'main', { 'NEWS.md': 'news\n' });
    const m = readManifest(ws);
    const rows = await listPrs({ manifest: m, forge, clock: systemClock });
    expect(rows.map((r) => [r.lane, r.state, r.pr, r.ci, r.mergeable, r.mergeable_state])).toEqual([
      ['lib', 'branch', null, 'none', true, 'fast-forward'],
      ['svc', 'branch', null, 'none', true, 'fast-forward'],
      ['web', 'branch', null, 'none', false, 'diverged'],
    ]);
    for (const r of rows) {
      expect(r.head_sha).toBe(lane(m, r.lane).commit);
      expect(r.branch).toBe(`fleet/stamp/${r.lane}`);
      // The age is the branch head's commit date: made during this test.
      expect(Date.now() - Date.parse(r.created_at!)).toBeLessThan(120_000);
    }
  }, 60_000);

  it('merges what can fast-forward, leaves the rest with the reason, and does nothing the second time', async () => {
    const { repos, ws, manifestPath, forge } = await ranFleet();
    await commitToRemote(repos.web.remote, 'main', { 'NEWS.md': 'news\n' });
    // Someone pushed to lib's lane branch after the run: not the commit Fleet verified.
    const foreign = await commitToRemote(repos.lib.remote, 'fleet/stamp/lib', { 'OTHER.md': 'x\n' });
    const before = readManifest(ws);
    const svcCommit = lane(before, 'svc').commit!;
    const bytes = readFileSync(manifestPath, 'utf8');
    const lines = events(ws).length;

    // A dry run says what it would do and changes nothing anywhere.
    const dry = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'merge', method: 'fast-forward', dryRun: true });
    if (!dry.ok || dry.command === 'list') throw new Error('dry run failed');
    expect(dry.actions.map((a) => [a.lane, a.outcome])).toEqual([
      ['lib', 'not-merged'],
      ['svc', 'would-merge'],
      ['web', 'not-merged'],
    ]);
    expect(await remoteHead(repos.svc.remote, 'main')).toBe(repos.svc.commit);
    expect(readFileSync(manifestPath, 'utf8')).toBe(bytes);
    expect(events(ws)).toHaveLength(lines);

    const r = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'merge', method: 'fast-forward', dryRun: false });
    if (!r.ok || r.command === 'list') throw new Error('merge failed');
    expect(r.exitCode).toBe(1);
    const by = new Map(r.actions.map((a) => [a.lane, a]));
    expect(by.get('svc')).toMatchObject({ outcome: 'merged', detail: `main fast-forwarded to ${svcCommit.slice(0, 12)}` });
    expect(by.get('lib')).toMatchObject({ outcome: 'not-merged' });
    expect(by.get('lib')!.detail).toContain(
      `head is ${foreign.slice(0, 12)}, not the lane's ${lane(before, 'lib').commit!.slice(0, 12)}: someone pushed to fleet/stamp/lib`,
    );
    expect(by.get('web')).toMatchObject({ outcome: 'not-merged', detail: 'fleet/stamp/web cannot merge into main (diverged)' });
    // On the forge: only svc's base moved, to the lane's commit.
    expect(await remoteHead(repos.svc.remote, 'main')).toBe(svcCommit);
    expect(await remoteHead(repos.lib.remote, 'main')).toBe(repos.lib.commit);
    // In the manifest, as written.
    const after = readManifest(ws);
    expect(lane(after, 'svc')).toMatchObject({
      merge_status: 'merged',
      phase: 'merged',
      prs: { command: 'merge', outcome: 'merged', state: 'merged', branch_deleted: false },
    });
    expect(lane(after, 'web').prs).toMatchObject({ outcome: 'not-merged', state: 'branch', detail: 'fleet/stamp/web cannot merge into main (diverged)' });
    expect(lane(after, 'lib').merge_status).not.toBe('merged');
    expect(after.summary.merged).toBe(1);
    // In the events log, one line per lane whose record changed.
    expect(prsLines(ws).map((e) => [e.lane, e.command, e.from, e.to])).toEqual([
      ['lib', 'prs merge', 'branch', 'branch'],
      ['svc', 'prs merge', 'branch', 'merged'],
      ['web', 'prs merge', 'branch', 'branch'],
    ]);

    // Again: nothing to do, and nothing written.
    const bytesAfter = readFileSync(manifestPath, 'utf8');
    const again = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'merge', method: 'fast-forward', dryRun: false });
    if (!again.ok || again.command === 'list') throw new Error('second merge failed');
    expect(again.changed).toBe(false);
    expect(again.actions.find((a) => a.lane === 'svc')).toMatchObject({ outcome: 'already-merged' });
    expect(readFileSync(manifestPath, 'utf8')).toBe(bytesAfter);
    expect(prsLines(ws)).toHaveLength(3);
    expect(await remoteHead(repos.svc.remote, 'main')).toBe(svcCommit);
  }, 60_000);

  it('closes by deleting the lane branch where it still holds the lane commit; again, nothing to do', async () => {
    const { repos, ws, manifestPath, forge } = await ranFleet();
    const foreign = await commitToRemote(repos.lib.remote, 'fleet/stamp/lib', { 'OTHER.md': 'x\n' });
    await commitToRemote(repos.web.remote, 'main', { 'NEWS.md': 'news\n' });
    const m = readManifest(ws);
    // svc merged first (web's base moved on, lib's branch moved: neither merges): a merged branch is left by close.
    const merged = await mergePrs({ manifest: m, forge, clock: systemClock }, { method: 'fast-forward', dryRun: false });
    expect(merged.actions.find((a) => a.lane === 'svc')!.outcome).toBe('merged');
    writeFileSync(manifestPath, `${JSON.stringify(merged.manifest, null, 2)}\n`);

    const dry = await closePrs({ manifest: merged.manifest, forge, clock: systemClock }, { dryRun: true });
    expect(dry.actions.map((a) => [a.lane, a.outcome, a.detail])).toEqual([
      ['lib', 'not-closed', `fleet/stamp/lib is at ${foreign.slice(0, 12)}, not at the lane's commit: it would be left`],
      ['svc', 'already-merged', 'fleet/stamp/svc is merged: left as it is'],
      ['web', 'would-close', 'would delete fleet/stamp/web'],
    ]);
    expect(dry.changed).toBe(false);
    expect(await remoteBranches(repos.web.remote)).toEqual(['fleet/stamp/web', 'main']);

    const r = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'close', dryRun: false });
    if (!r.ok || r.command === 'list') throw new Error('close failed');
    expect(r.actions.map((a) => [a.lane, a.outcome, a.branch_deleted])).toEqual([
      ['lib', 'not-closed', false],
      ['svc', 'already-merged', false],
      ['web', 'closed', true],
    ]);
    expect(r.exitCode).toBe(1);
    expect(await remoteBranches(repos.web.remote)).toEqual(['main']);
    expect(await remoteHead(repos.lib.remote, 'fleet/stamp/lib')).toBe(foreign);
    expect(await remoteBranches(repos.svc.remote)).toEqual(['fleet/stamp/svc', 'main']);
    const after = readManifest(ws);
    expect(lane(after, 'web').prs).toMatchObject({ command: 'close', outcome: 'closed', state: 'closed', branch_deleted: true });
    expect(lane(after, 'lib').prs).toMatchObject({ command: 'close', outcome: 'not-closed', state: 'branch', branch_deleted: false });
    // svc's record already said merged: unchanged.
    expect(lane(after, 'svc').prs).toMatchObject({ command: 'merge', outcome: 'merged' });
    expect(prsLines(ws).map((e) => [e.lane, e.command, e.from, e.to])).toEqual([
      ['lib', 'prs close', 'branch', 'branch'],
      ['web', 'prs close', 'branch', 'closed'],
    ]);

    const bytes = readFileSync(manifestPath, 'utf8');
    const again = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'close', dryRun: false });
    if (!again.ok || again.command === 'list') throw new Error('second close failed');
    expect(again.actions.map((a) => [a.lane, a.outcome])).toEqual([
      ['lib', 'not-closed'],
      ['svc', 'already-merged'],
      ['web', 'already-closed'],
    ]);
    expect(again.changed).toBe(false);
    expect(readFileSync(manifestPath, 'utf8')).toBe(bytes);
    expect(prsLines(ws)).toHaveLength(2);
  }, 60_000);

  it("a close writes the manifest back sealed only if Fleet's seal vouched for what it read", async () => {
    useManifestSeal({ XDG_STATE_HOME: join(dir, 'state') });
    try {
      const { manifestPath, forge } = await ranFleet();
      expect(await sealProblem(manifestPath, readFileSync(manifestPath, 'utf8'))).toBeNull();
      // Changed after Fleet wrote it (what another fleet's directive could do): the close must not seal it anew.
      writeFileSync(manifestPath, readFileSync(manifestPath, 'utf8').replace('"dry_run": false', '"dry_run":false'));
      const r = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'close', dryRun: false });
      if (!r.ok || r.command === 'list') throw new Error('close failed');
      expect(r.changed).toBe(true);
      expect(existsSync(`${manifestPath}.seal`)).toBe(false);
      expect(await sealProblem(manifestPath, readFileSync(manifestPath, 'utf8'))).toMatch(/has no seal/);
    } finally {
      stopManifestSeal();
    }
  });

  it('merge and close wait for no run: a live run holding the workspace lock refuses them; a dry run still reads', async () => {
    const { ws, manifestPath, forge } = await ranFleet();
    writeFileSync(
      join(ws, '.fleet.lock'),
      JSON.stringify({ pid: process.pid, process_start: processStart(process.pid), host: hostname(), since: new Date().toISOString(), fleet_id: 'other' }),
    );
    const r = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'close', dryRun: false });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems[0]!.message).toMatch(/another fleet run holds this workspace/);
    expect(await remoteBranches(join(dir, 'web.git'))).toContain('fleet/stamp/web');
    const dry = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'close', dryRun: true });
    expect(dry.ok && dry.command !== 'list' && dry.actions.every((a) => a.outcome === 'would-close')).toBe(true);
  }, 60_000);

  it('a manifest of another forge, or one that is not a manifest, is refused', async () => {
    const { ws, manifestPath, forge } = await ranFleet();
    const m = readManifest(ws);
    writeFileSync(manifestPath, JSON.stringify({ ...m, forge: 'github' }));
    const r = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'list' });
    expect(!r.ok && r.problems[0]).toMatchObject({ field: 'forge' });
    writeFileSync(manifestPath, '{"not": "a manifest"}');
    const bad = await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'list' });
    expect(bad.ok).toBe(false);
  }, 60_000);

  it('rebuilds a lane the fleet file does not list from its record; a repository name it cannot place is a reason', () => {
    const rec = { repo: 'acme/api', lane: 'api', branch: 'fleet/x/api', base_branch: 'main', depends_on: [] } as unknown as Parameters<typeof laneSpecFor>[0];
    expect(laneSpecFor(rec)).toMatchObject({ id: 'api', repo: 'acme/api', repo_kind: 'github', branch: 'fleet/x/api', base: 'main' });
    expect(laneSpecFor({ ...rec, repo: 'acme/..' })).toMatch(/not a valid owner\/repo name/);
  });
});
