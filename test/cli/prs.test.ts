/**
 * `fleet prs`, `fleet prs merge` and `fleet prs close` as a user types them, through bin/fleet.js, after a real
 * `fleet run` over real repositories on disk (the local forge: a lane branch stands for a PR). The emulator test of
 * the same commands on GitHub is test/github-flows/prs.test.ts.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, remoteBranches, remoteHead } from '../support/repos.js';
import { removeDir, tempDir } from '../integration/helpers.js';
import { fleetProcess } from './bin.js';

let dir: string;
beforeEach(async () => {
  dir = tempDir('fleet-cli-prs-');
  for (const n of ['svc', 'lib']) await createRepo(dir, n, { 'README.md': `# ${n}\n` }, { clone: false });
  writeFileSync(
    join(dir, 'fleet.yml'),
    'name: stamp\ndirective: stamp\nrun: echo "$FLEET_LANE" > STAMP.md\ntargets:\n  - repo: ./svc.git\n  - repo: ./lib.git\n',
  );
  const ran = fleet(['run', 'fleet.yml', '--quiet']);
  if (ran.code !== 0) throw new Error(ran.stderr);
});
afterEach(() => removeDir(dir));

const fleet = (args: string[]) => fleetProcess(args, dir, dir);

describe('fleet prs', () => {
  it('lists, merges with a dry run first, merges once, then closes what is left, from the fleet file alone', async () => {
    const list = fleet(['prs', 'fleet.yml']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/\| svc \| \.\/svc\.git \| `fleet\/stamp\/svc` \|/);
    const rows = JSON.parse(fleet(['prs', 'fleet.yml', '--json']).stdout).rows as { lane: string; state: string }[];
    expect(rows.map((r) => [r.lane, r.state]).sort()).toEqual([
      ['lib', 'branch'],
      ['svc', 'branch'],
    ]);

    // As the README gives it: no merge policy in the file, no --method. The command is the telling; the method is the
    // file's merge.method (squash, which the local forge does as a fast-forward), named in the output (issue 27).
    const mainBefore = await remoteHead(join(dir, 'svc.git'), 'main');
    const asReadme = fleet(['prs', 'merge', 'fleet.yml', '--dry-run']);
    expect(asReadme.code, asReadme.stderr).toBe(0);
    expect(asReadme.stdout).toMatch(/would merge .*\(squash\)/);
    const bad = fleet(['prs', 'merge', 'fleet.yml', '--method', 'octopus']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--method takes merge, squash, rebase, fast-forward/);

    const dry = fleet(['prs', 'merge', 'fleet.yml', '--method', 'fast-forward', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/would merge/);
    expect(await remoteHead(join(dir, 'svc.git'), 'main')).toBe(mainBefore);

    const merged = fleet(['prs', 'merge', 'fleet.yml', '--method', 'fast-forward']);
    expect(merged.code, merged.stderr).toBe(0);
    expect(await remoteHead(join(dir, 'svc.git'), 'main')).toBe(await remoteHead(join(dir, 'svc.git'), 'fleet/stamp/svc'));
    const ws = join(dir, '_workspace', 'fleet');
    const events = () => readFileSync(join(ws, JSON.parse(fleet(['status', 'fleet.yml', '--json']).stdout).fleet_id, 'events.jsonl'), 'utf8');
    const after = events();
    expect(after).toMatch(/"command":"prs merge"/);

    // Again: nothing to do, nothing written.
    const again = fleet(['prs', 'merge', 'fleet.yml', '--method', 'fast-forward']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/already merged/);
    expect(events()).toBe(after);

    // A merged lane's branch is left; close leaves it too, and says so.
    const closed = fleet(['prs', 'close', 'fleet.yml']);
    expect(closed.code, closed.stderr).toBe(0);
    expect(await remoteBranches(join(dir, 'svc.git'))).toContain('fleet/stamp/svc');
  });

  it('close deletes each open lane branch, once; a manifest needs its fleet file named', async () => {
    const dry = fleet(['prs', 'close', 'fleet.yml', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(await remoteBranches(join(dir, 'lib.git'))).toContain('fleet/stamp/lib');
    // One lane at a time, as Batch Changes closes changesets (issue 27): --lane takes globs; one matching nothing is refused.
    const typo = fleet(['prs', 'close', 'fleet.yml', '--lane', 'sv*', '--lane', 'nope-*']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('--lane "nope-*" matches no lane of run');
    expect(typo.stderr).toMatch(/its lanes: (lib, svc|svc, lib)/);
    const one = fleet(['prs', 'close', 'fleet.yml', '--lane', 'sv*']);
    expect(one.code, one.stderr).toBe(0);
    expect(await remoteBranches(join(dir, 'svc.git'))).toEqual(['main']);
    expect(await remoteBranches(join(dir, 'lib.git'))).toContain('fleet/stamp/lib');
    expect(one.stdout).not.toMatch(/\blib\b/);
    // --failed: no lane of this run failed, so nothing is closed.
    const failedOnly = fleet(['prs', 'close', 'fleet.yml', '--failed', '--json']);
    expect(failedOnly.code, failedOnly.stderr).toBe(0);
    expect(JSON.parse(failedOnly.stdout).actions).toEqual([]);
    expect(await remoteBranches(join(dir, 'lib.git'))).toContain('fleet/stamp/lib');
    const closed = fleet(['prs', 'close', 'fleet.yml']);
    expect(closed.code, closed.stderr).toBe(0);
    expect(await remoteBranches(join(dir, 'lib.git'))).toEqual(['main']);
    expect(await remoteBranches(join(dir, 'svc.git'))).toEqual(['main']);
    const manifest = JSON.parse(fleet(['status', 'fleet.yml', '--json']).stdout) as { fleet_id: string };
    const path = join('_workspace', 'fleet', manifest.fleet_id, 'fleet-status.json');
    const bare = fleet(['prs', path]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('--fleet FILE');
    writeFileSync(join(dir, 'other.yml'), 'name: other\ndirective: x\nrun: "true"\ntargets:\n  - repo: ./svc.git\n');
    const wrong = fleet(['prs', path, '--fleet', 'other.yml']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('this manifest is of fleet "stamp", not "other"');
    const again = fleet(['prs', 'close', path, '--fleet', 'fleet.yml']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/already closed|nothing to close|no branch/i);
  });

  it('never acts on a branch a planted manifest names', async () => {
    const runs = join(dir, '_workspace', 'fleet');
    const real = JSON.parse(fleet(['status', 'fleet.yml', '--json']).stdout) as {
      fleet_id: string;
      started_at: string;
      lanes: { branch: string; commit: string }[];
    };
    const release = await remoteHead(join(dir, 'svc.git'), 'main');
    // A newer-looking run whose lanes name main, at main's own commit.
    const planted = {
      ...real,
      fleet_id: 'zzz',
      started_at: '9999-01-01T00:00:00.000Z',
      lanes: real.lanes.map((l) => ({ ...l, branch: 'main', commit: release })),
    };
    mkdirSync(join(runs, 'zzz'), { recursive: true });
    writeFileSync(join(runs, 'zzz', 'fleet-status.json'), JSON.stringify(planted));
    const r = fleet(['prs', 'close', 'fleet.yml']);
    expect(r.stderr).toContain('note: The latest of 2 runs');
    expect(r.stdout).toContain('an edited or foreign manifest');
    expect(r.code).toBe(1);
    expect(await remoteBranches(join(dir, 'svc.git'))).toContain('main');
  });
});
