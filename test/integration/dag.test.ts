/**
 * Dependency waves across repositories: a lane starts only once its
 * dependencies' branches are on the remote.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, readRemoteFile, remoteHead } from '../support/repos.js';
import { fleet, lane, readEvents, readManifest, removeDir, runArgs, sharedFile, tempDir, TRUST_REPOS, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

describe('dependency chain', () => {
  it('a → b → c across three repositories: each starts after the one before is pushed; waves 0,1,2 (1,2,3 in the report)', async () => {
    const repos = {
      a: await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false }),
      b: await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false }),
      c: await createRepo(dir, 'c', { 'README.md': '# c\n' }, { clone: false }),
    };
    // Each directive records what it can see of its dependency's branch on the remote when it runs.
    const see = (dep: string) => `${TRUST_REPOS}; git ls-remote ${join(dir, `${dep}.git`)} refs/heads/fleet/chain/${dep} | cut -f1 > SEEN-${dep}`;
    const file = writeFleetFile(dir, {
      name: 'chain',
      directive: 'append',
      run: 'echo "$FLEET_LANE" >> README.md',
      max_retries: 0,
      max_parallel: 3,
      targets: [
        { repo: './c.git', depends_on: ['b'], run: `${see('b')} && echo c >> README.md` },
        { repo: './a.git' },
        { repo: './b.git', depends_on: ['a'], run: `${see('a')} && echo b >> README.md` },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    const m = readManifest(ws);
    expect(m.waves.map((w) => [w.index, w.lanes])).toEqual([
      [0, ['a']],
      [1, ['b']],
      [2, ['c']],
    ]);
    expect(['a', 'b', 'c'].map((id) => lane(m, id).wave)).toEqual([0, 1, 2]);
    expect(lane(m, 'c').depends_on).toEqual(['b']);

    const events = readEvents(ws);
    const at = (id: string, to: string) => {
      const e = events.find((x) => x.lane === id && x.to === to);
      expect(e, `${id} → ${to}`).toBeDefined();
      return Date.parse(e!.time);
    };
    expect(at('b', 'cloning')).toBeGreaterThanOrEqual(at('a', 'pushed'));
    expect(at('c', 'cloning')).toBeGreaterThanOrEqual(at('b', 'pushed'));
    // The event log is in order: b's first event comes after a's last.
    const idx = (pred: (e: (typeof events)[number]) => boolean) => events.findIndex(pred);
    const lastA = events.map((e) => e.lane).lastIndexOf('a');
    expect(idx((e) => e.lane === 'b')).toBeGreaterThan(lastA);

    // What the dependents saw on the remote when they ran: their dependency's pushed commit.
    expect(await readRemoteFile(repos.b.remote, 'fleet/chain/b', 'SEEN-a')).toBe(`${lane(m, 'a').commit}\n`);
    expect(await readRemoteFile(repos.c.remote, 'fleet/chain/c', 'SEEN-b')).toBe(`${lane(m, 'b').commit}\n`);
    for (const id of ['a', 'b', 'c'] as const) expect(await remoteHead(repos[id].remote, `fleet/chain/${id}`)).toBe(lane(m, id).commit);

    // Waves are 0-based in the manifest, 1-based for people.
    const row = (id: string) => r.stdout.split('\n').find((l) => l.startsWith(`| ${id} |`))!;
    expect(
      row('a')
        .split('|')
        .map((c) => c.trim())[3],
    ).toBe('1');
    expect(
      row('b')
        .split('|')
        .map((c) => c.trim())[3],
    ).toBe('2');
    expect(
      row('c')
        .split('|')
        .map((c) => c.trim())[3],
    ).toBe('3');
  });

  it('a dependency whose pushed branch is moved before its dependent starts: the dependent is not run against it', async () => {
    const a = await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    // a's directive arranges for its own branch to be moved right after Fleet pushes it: a post-receive hook on the remote.
    const hook = join(a.remote, 'hooks', 'post-receive');
    const { mkdirSync, writeFileSync, chmodSync } = await import('node:fs');
    mkdirSync(join(a.remote, 'hooks'), { recursive: true });
    writeFileSync(hook, `#!/bin/sh\nwhile read old new ref; do\n  [ "$ref" = refs/heads/fleet/moved/a ] && git update-ref "$ref" ${a.commit}\ndone\nexit 0\n`);
    chmodSync(hook, 0o755);
    const file = writeFleetFile(dir, {
      name: 'moved',
      directive: 'append',
      run: 'echo "$FLEET_LANE" >> README.md',
      max_retries: 0,
      targets: [{ repo: './a.git' }, { repo: './b.git', depends_on: ['a'] }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code).toBe(1);
    const m = readManifest(ws);
    // The lane reads its branch back from the forge right after the push, not trusting git's word: a fails there,
    // before any PR, and the report step's own check agrees.
    expect(lane(m, 'a').status).toBe('failed');
    expect(lane(m, 'a').error?.class).toBe('push-rejected');
    expect(lane(m, 'a').error?.message).toContain("not at the lane's commit");
    const b = lane(m, 'b');
    expect(b.status).toBe('skipped');
    expect(b.error?.class).toBe('dependency-failed');
    expect(b.error?.message).toContain('push-rejected');
    expect(await remoteHead(join(dir, 'b.git'), 'fleet/moved/b')).toBeNull();
  });

  it('the global budget: never more lanes at once than --max-parallel, and that many when there is work', async () => {
    const names = ['p1', 'p2', 'p3', 'p4', 'p5'];
    for (const n of names) await createRepo(dir, n, { 'README.md': `# ${n}\n` }, { clone: false });
    const trace = sharedFile(join(dir, 'trace.log'));
    const file = writeFleetFile(dir, {
      name: 'budget',
      directive: 'append',
      run: `echo "+ $FLEET_LANE" >> ${trace}; sleep 0.4; echo "- $FLEET_LANE" >> ${trace}; echo x >> README.md`,
      max_retries: 0,
      max_parallel: 8,
      targets: names.map((n) => ({ repo: `./${n}.git` })),
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws, '--max-parallel', '2'), { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    expect(readManifest(ws).max_parallel).toBe(2);
    const { readFileSync } = await import('node:fs');
    let running = 0;
    let peak = 0;
    for (const line of readFileSync(trace, 'utf8').trim().split('\n')) {
      running += line.startsWith('+') ? 1 : -1;
      peak = Math.max(peak, running);
    }
    expect(running).toBe(0);
    expect(peak).toBe(2);
  });

  it('merge when-green: the base branch is fast-forwarded to the lane commit; a dependent with checkpoint merged runs after it', async () => {
    const a = await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const b = await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'merge',
      directive: 'append',
      run: 'echo "$FLEET_LANE" >> README.md',
      checks: ['grep -q "$FLEET_LANE" README.md'],
      merge: { policy: 'when-green', method: 'fast-forward' },
      checkpoint: 'merged',
      max_retries: 0,
      targets: [{ repo: './a.git' }, { repo: './b.git', depends_on: ['a'] }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    const m = readManifest(ws);
    for (const [id, repo] of [
      ['a', a],
      ['b', b],
    ] as const) {
      const l = lane(m, id);
      expect(l).toMatchObject({ status: 'completed', phase: 'merged', merge_status: 'merged', ci_conclusion: 'success' });
      expect(await remoteHead(repo.remote, 'main')).toBe(l.commit);
      expect(await readRemoteFile(repo.remote, 'main', 'README.md')).toBe(`# ${id}\n${id}\n`);
    }
    expect(m.summary.merged).toBe(2);
  });
});

describe('checkpoint: merged', () => {
  it('a dependency that was pushed but never merged holds its dependent back', async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'unmerged',
      directive: 'append',
      run: 'echo "$FLEET_LANE" >> README.md',
      max_retries: 0,
      checkpoint: 'merged',
      targets: [{ repo: './a.git' }, { repo: './b.git', depends_on: ['a'] }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    const m = readManifest(ws);
    expect(lane(m, 'a')).toMatchObject({ status: 'completed', merge_status: 'not-requested' });
    expect(lane(m, 'b').status).toBe('skipped');
    expect(lane(m, 'b').error).toEqual({ class: 'checkpoint-unmet', message: 'dependency "a" is not merged (checkpoint: merged)' });
    expect(await remoteHead(join(dir, 'b.git'), 'fleet/unmerged/b')).toBeNull();
    expect(r.code).toBe(1);
  });
});
