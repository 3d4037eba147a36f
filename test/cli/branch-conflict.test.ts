/**
 * A lane branch someone else pushed to between runs (a person's fix on Fleet's branch), met by `fleet run` as a user
 * types it (bin/fleet.js): `fail` refuses before anything runs, `rebase` keeps their commit under Fleet's, `replace`
 * drops it. Multi-gitter calls the same choice `--conflict-strategy`; Renovate stops updating a branch someone edited.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitToRemote, createRepo, readRemoteFile, remoteHead, tgit } from '../support/repos.js';
import { removeDir, tempDir } from '../integration/helpers.js';
import { fleetProcess } from './bin.js';

let dir: string;
let remote: string;
const BRANCH = 'fleet/stamp/svc';

beforeEach(async () => {
  dir = tempDir('fleet-cli-conflict-');
  remote = (await createRepo(dir, 'svc', { 'README.md': '# svc\n', 'NOTES.md': 'notes\n' }, { clone: false })).remote;
  writeFileSync(join(dir, 'fleet.yml'), 'name: stamp\ndirective: stamp\nrun: echo "stamped by $FLEET_LANE" > STAMP.md\ntargets:\n  - repo: ./svc.git\n');
  const first = fleet(['run', 'fleet.yml', '--quiet']);
  if (first.code !== 0) throw new Error(first.stderr);
});
afterEach(() => removeDir(dir));

const fleet = (args: string[]) => fleetProcess(args, dir, dir);

/** The lane's record in the manifest the last run wrote. */
function lastLane(stdout: string): Record<string, unknown> {
  const m = JSON.parse(stdout) as { lanes: Record<string, unknown>[] };
  return m.lanes.find((l) => l.lane === 'svc')!;
}

async function log(branch: string): Promise<string[]> {
  const r = await tgit(['-C', remote, 'log', '--format=%an|%s', branch]);
  return r.stdout.trim().split('\n');
}

describe('a lane branch someone else pushed to', () => {
  it('fail (the default): the lane fails before its directive runs, naming the commit, and the branch keeps it', async () => {
    const theirs = await commitToRemote(remote, BRANCH, { 'NOTES.md': 'a person fixed this\n' }, { message: 'Fix the notes by hand\n' });
    // The directive would leave a marker: it must never run.
    writeFileSync(join(dir, 'fleet.yml'), readFileSync(join(dir, 'fleet.yml'), 'utf8').replace('run: echo', 'run: touch "$FLEET_FILE_DIR/RAN"; echo'));
    const r = fleet(['run', 'fleet.yml', '--json']);
    expect(r.code, r.stderr).toBe(1);
    const lane = lastLane(r.stdout);
    expect(lane.error).toMatchObject({ class: 'branch-conflict' });
    const message = (lane.error as { message: string }).message;
    expect(message).toContain(theirs.slice(0, 12));
    expect(message).toContain('"Fix the notes by hand" (Test Author <test@example.com>)');
    expect(message).toMatch(/branch_conflict: rebase.*branch_conflict: replace/);
    expect(await remoteHead(remote, BRANCH)).toBe(theirs);
    expect(() => readFileSync(join(dir, 'RAN'))).toThrow();
  });

  it("rebase: their commit is replayed onto the base (its author kept), Fleet's change goes on top, and a re-run pushes nothing", async () => {
    await commitToRemote(remote, BRANCH, { 'NOTES.md': 'a person fixed this\n' }, { message: 'Fix the notes by hand\n' });
    // The base moved since Fleet's first run: their commit sits on Fleet's old commit, and must be replayed.
    await commitToRemote(remote, 'main', { 'README.md': '# svc, moved on\n' }, { message: 'main moves\n' });
    const r = fleet(['run', 'fleet.yml', '--json', '--branch-conflict', 'rebase']);
    expect(r.code, r.stderr).toBe(0);
    const lane = lastLane(r.stdout);
    expect(lane.status).toBe('completed');
    expect(lane.changed_files).toEqual(['STAMP.md']);
    const conflict = lane.branch_conflict as { strategy: string; commits: string[]; start: string };
    expect(conflict.strategy).toBe('rebase');
    expect(conflict.commits).toHaveLength(1);
    expect(await log(BRANCH)).toEqual(['T|stamp: svc', 'Test Author|Fix the notes by hand', 'Test Author|main moves', 'Test Author|initial commit']);
    expect(await readRemoteFile(remote, BRANCH, 'NOTES.md')).toBe('a person fixed this\n');
    expect(await readRemoteFile(remote, BRANCH, 'README.md')).toBe('# svc, moved on\n');
    // The report verified the lane's own change, on top of what it kept.
    expect(lane.evidence).toMatchObject({ files_match: true, fence_ok: true, head_matches: true });

    const head = await remoteHead(remote, BRANCH);
    const again = fleet(['run', 'fleet.yml', '--json', '--branch-conflict', 'rebase']);
    expect(again.code, again.stderr).toBe(0);
    expect(await remoteHead(remote, BRANCH)).toBe(head);
    expect(lastLane(again.stdout).branch_conflict).toMatchObject({ strategy: 'rebase', start: conflict.start });
  });

  it('rebase: a branch that keeps commits others pushed is never merged by when-green: no fence judged them', async () => {
    await commitToRemote(remote, BRANCH, { '.github/workflows/ci.yml': 'on: push\n' }, { message: 'Add a workflow\n' });
    writeFileSync(join(dir, 'fleet.yml'), `${readFileSync(join(dir, 'fleet.yml'), 'utf8')}merge:\n  policy: when-green\n  method: merge\n`);
    const r = fleet(['run', 'fleet.yml', '--json', '--branch-conflict', 'rebase']);
    expect(r.code, r.stderr).toBe(0);
    const lane = lastLane(r.stdout);
    expect(lane).toMatchObject({ status: 'completed', merge_status: 'blocked' });
    expect((lane.evidence as { notes: string[] }).notes.join('\n')).toContain('which no fence judged; a person merges it');
    expect(await readRemoteFile(remote, 'main', 'STAMP.md')).toBeNull();
  });

  it('rebase: a commit that cannot be replayed fails the lane, naming the paths, and pushes nothing', async () => {
    const theirs = await commitToRemote(remote, BRANCH, { 'NOTES.md': 'theirs\n' }, { message: 'Theirs\n' });
    await commitToRemote(remote, 'main', { 'NOTES.md': 'main changed the same line\n' }, { message: 'main moves\n' });
    writeFileSync(join(dir, 'fleet.yml'), `${readFileSync(join(dir, 'fleet.yml'), 'utf8')}branch_conflict: rebase\n`);
    const r = fleet(['run', 'fleet.yml', '--json']);
    expect(r.code, r.stderr).toBe(1);
    expect(lastLane(r.stdout).error).toMatchObject({
      class: 'branch-conflict',
      message: expect.stringMatching(/conflicts in NOTES\.md: nothing ran and nothing was pushed/),
    });
    expect(await remoteHead(remote, BRANCH)).toBe(theirs);
  });

  it("replace: Fleet's commit replaces theirs, and the manifest and notes say which it dropped", async () => {
    const theirs = await commitToRemote(remote, BRANCH, { 'NOTES.md': 'theirs\n' }, { message: 'Theirs\n' });
    const r = fleet(['run', 'fleet.yml', '--json', '--branch-conflict', 'replace']);
    expect(r.code, r.stderr).toBe(0);
    const lane = lastLane(r.stdout);
    expect(lane.branch_conflict).toEqual({ strategy: 'replace', commits: [theirs], start: null });
    expect((lane.evidence as { notes: string[] }).notes.join('\n')).toContain(`the push replaces ${theirs.slice(0, 12)}`);
    expect(await log(BRANCH)).toEqual(['T|stamp: svc', 'Test Author|initial commit']);
  });

  it('takes Fleet\'s own earlier commit and an "Update branch" merge of the base as Fleet\'s to redo: no conflict', async () => {
    const fleetCommit = (await remoteHead(remote, BRANCH))!;
    const moved = await commitToRemote(remote, 'main', { 'README.md': '# moved\n' }, { message: 'main moves\n' });
    // What GitHub's "Update branch" button leaves: a merge of the base into the lane branch, by a person.
    const tree = (await tgit(['-C', remote, 'rev-parse', `${moved}^{tree}`])).stdout.trim();
    const merged = await tgit(['-C', remote, 'merge-tree', '--write-tree', fleetCommit, moved]);
    const mergeTree = merged.stdout.trim().split('\n')[0]!;
    expect(mergeTree).not.toBe(tree);
    const merge = (
      await tgit(['-C', remote, 'commit-tree', mergeTree, '-p', fleetCommit, '-p', moved, '-m', "Merge branch 'main' into fleet/stamp/svc"])
    ).stdout.trim();
    await tgit(['-C', remote, 'update-ref', `refs/heads/${BRANCH}`, merge]);
    const r = fleet(['run', 'fleet.yml', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(lastLane(r.stdout).branch_conflict).toBeUndefined();
    expect(await log(BRANCH)).toEqual(['T|stamp: svc', 'Test Author|main moves', 'Test Author|initial commit']);
  });

  it('takes an "Update branch" merge that also changed a file as someone\'s work', async () => {
    const fleetCommit = (await remoteHead(remote, BRANCH))!;
    const moved = await commitToRemote(remote, 'main', { 'README.md': '# moved\n' }, { message: 'main moves\n' });
    // The merge's tree carries an edit beyond what merging gives: NOTES.md changed in the merge itself.
    const edited = await commitToRemote(remote, 'scratch', { 'README.md': '# moved\n', 'NOTES.md': 'edited in the merge\n' }, { from: fleetCommit });
    const tree = (await tgit(['-C', remote, 'rev-parse', `${edited}^{tree}`])).stdout.trim();
    const merge = (
      await tgit(['-C', remote, 'commit-tree', tree, '-p', fleetCommit, '-p', moved, '-m', "Merge branch 'main' into fleet/stamp/svc"])
    ).stdout.trim();
    await tgit(['-C', remote, 'update-ref', `refs/heads/${BRANCH}`, merge]);
    const r = fleet(['run', 'fleet.yml', '--json']);
    expect(r.code).toBe(1);
    expect(lastLane(r.stdout).error).toMatchObject({ class: 'branch-conflict', message: expect.stringContaining(merge.slice(0, 12)) });
    expect(await remoteHead(remote, BRANCH)).toBe(merge);
  });

  it('refuses a --branch-conflict it does not know, and a bad branch_conflict in the file, with exit 2', () => {
    const flag = fleet(['run', 'fleet.yml', '--branch-conflict', 'merge']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--branch-conflict takes fail, replace or rebase, got "merge"');
    writeFileSync(join(dir, 'fleet.yml'), `${readFileSync(join(dir, 'fleet.yml'), 'utf8')}branch_conflict: overwrite\n`);
    const file = fleet(['run', 'fleet.yml']);
    expect(file.code).toBe(2);
    expect(file.stderr).toMatch(/branch_conflict/);
  });
});
