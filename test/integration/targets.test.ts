/**
 * Targets that cannot run are excluded with a reason code, accounted for in the
 * manifest and the report; the other lanes run; dependents are skipped.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmptyRemote, createRepo, readRemoteFile, remoteBranches, remoteHead, tgit } from '../support/repos.js';
import { fleet, isDir, lane, readEvents, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

describe('targets', () => {
  it('a listed target that is not there stops the plan by default: exit 2, every such target named, nothing run (issue 27)', async () => {
    await createRepo(dir, 'good', { 'README.md': '# good\n' }, { clone: false });
    mkdirSync(join(dir, 'plain'));
    const file = writeFleetFile(dir, {
      name: 'tgt',
      directive: 'append a line',
      run: 'echo fleet >> README.md',
      targets: [{ repo: './good.git' }, { repo: './fixturez' }, { repo: './plain' }],
    });
    const ws = join(dir, 'ws');
    for (const command of ['plan', 'run']) {
      const r = await fleet(command === 'run' ? runArgs(file, ws) : ['plan', file], { cwd: dir });
      expect(r.code, r.stderr + r.stdout).toBe(2);
      expect(r.stderr).toContain(`${file}: targets[1].repo: ./fixturez is not there (not-found: ${join(dir, 'fixturez')} does not exist)`);
      expect(r.stderr).toContain(`${file}: targets[2].repo: ./plain is not there (not-a-repository: `);
      expect(r.stderr).toContain('set missing_targets: exclude (or pass --allow-missing)');
      expect(r.stderr).toContain('2 problems found');
    }
    // Nothing half-written: no workspace, no branch.
    expect(isDir(ws)).toBe(false);
    expect(await remoteBranches(join(dir, 'good.git'))).toEqual(['main']);
    // --allow-missing accepts them: the plan lists them as excluded and exits 0.
    const planned = await fleet(['plan', file, '--allow-missing'], { cwd: dir });
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toMatch(/`\.\/fixturez` — not-found/);
  });

  it('with missing_targets: exclude, a missing path and a plain folder are excluded with reason codes, their dependents skipped, the rest run', async () => {
    const good = await createRepo(dir, 'good', { 'README.md': '# good\n' }, { clone: false });
    const other = await createRepo(dir, 'other', { 'README.md': '# other\n' }, { clone: false });
    mkdirSync(join(dir, 'plain'));
    writeFileSync(join(dir, 'plain', 'notes.txt'), 'not a repo\n');
    const file = writeFleetFile(dir, {
      name: 'tgt',
      directive: 'append a line',
      run: 'echo fleet >> README.md',
      max_retries: 0,
      missing_targets: 'exclude',
      targets: [
        { repo: './good.git' },
        { repo: './missing.git' },
        { repo: './plain' },
        { repo: './other.git', lane: 'other', depends_on: ['missing'] },
        { repo: './good.git', lane: 'good-2', owns: ['docs/**'], run: 'mkdir -p docs && echo x > docs/x.md', depends_on: ['other'] },
      ],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    // Exclusions alone would exit 0; the skipped dependents did not get the change, so the run exits 1.
    expect(r.code, r.stderr + r.stdout).toBe(1);

    const m = readManifest(ws);
    expect(lane(m, 'good')).toMatchObject({ status: 'completed', phase: 'pushed' });
    const missing = lane(m, 'missing');
    expect(missing).toMatchObject({ status: 'excluded', phase: 'excluded', wave: null });
    expect(missing.error?.message).toMatch(/^not-found: /);
    const plain = lane(m, 'plain');
    expect(plain).toMatchObject({ status: 'excluded', wave: null });
    expect(plain.error?.message).toMatch(/^not-a-repository: /);
    expect(m.excluded.map((e) => [e.lane, e.reason]).sort()).toEqual([
      ['missing', 'not-found'],
      ['plain', 'not-a-repository'],
    ]);
    // Direct and transitive dependents of an excluded lane are skipped with the reason.
    const o = lane(m, 'other');
    expect(o).toMatchObject({ status: 'skipped', phase: 'skipped' });
    expect(o.error).toEqual({ class: 'dependency-failed', message: 'dependency "missing" was excluded (not-found)' });
    expect(lane(m, 'good-2').status).toBe('skipped');
    expect(lane(m, 'good-2').error?.message).toMatch(/dependency "missing" was excluded \(not-found\), reached through "other"/);
    expect(m.summary).toMatchObject({ total: 5, completed: 1, excluded: 2, skipped: 2, failed: 0 });

    // What actually happened: one branch on good, nothing on other, no working copies for the rest.
    expect(await remoteBranches(good.remote)).toEqual(['fleet/tgt/good', 'main']);
    expect(await readRemoteFile(good.remote, 'fleet/tgt/good', 'README.md')).toBe('# good\nfleet\n');
    expect(await remoteBranches(other.remote)).toEqual(['main']);
    for (const id of ['missing', 'plain', 'other', 'good-2']) expect(isDir(join(ws, 'lanes', id, 'repo')), id).toBe(false);
    // The plain folder was left alone: git init was not run in it.
    expect(isDir(join(dir, 'plain', '.git'))).toBe(false);

    // The report (stdout and report.md) lists the exclusions with their reason codes.
    const report = readFileSync(join(ws, 'report.md'), 'utf8');
    for (const text of [report, r.stdout]) {
      expect(text).toMatch(/### Excluded/);
      expect(text).toMatch(/`\.\/missing\.git` — not-found/);
      expect(text).toMatch(/`\.\/plain` — not-a-repository/);
    }
    // Every lane appears in the events log, the excluded and skipped ones too.
    const events = readEvents(ws);
    for (const id of ['missing', 'plain', 'other', 'good-2', 'good'])
      expect(
        events.some((e) => e.lane === id),
        id,
      ).toBe(true);
  });

  it('an owner/repo target without --repos-root is not found (an error, or with --allow-missing excluded); with it, it runs', async () => {
    await createRepo(join(dir, 'forge', 'acme'), 'widget', { 'README.md': '# w\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'gh',
      directive: 'append',
      run: 'echo y >> README.md',
      max_retries: 0,
      targets: [{ repo: 'acme/widget' }],
    });
    const r0 = await fleet(runArgs(file, join(dir, 'ws0')), { cwd: dir });
    expect(r0.code, r0.stderr).toBe(2);
    expect(r0.stderr).toMatch(/targets\[0\]\.repo: acme\/widget is not there \(not-found: .*--repos-root/);
    const r1 = await fleet([...runArgs(file, join(dir, 'ws1')), '--allow-missing'], { cwd: dir });
    // Its only target excluded, no lane ran: not a success (issue 11).
    expect(r1.code, r1.stderr).toBe(2);
    expect(r1.stderr).toContain('no lane ran: every target was excluded (1)');
    const m1 = readManifest(join(dir, 'ws1'));
    expect(m1.excluded).toEqual([expect.objectContaining({ lane: 'widget', reason: 'not-found' })]);
    expect(m1.excluded[0]!.detail).toMatch(/--repos-root/);

    const r2 = await fleet(runArgs(file, join(dir, 'ws2'), '--repos-root', join(dir, 'forge')), { cwd: dir });
    expect(r2.code, r2.stderr + r2.stdout).toBe(0);
    expect(lane(readManifest(join(dir, 'ws2')), 'widget').status).toBe('completed');
    expect(await readRemoteFile(join(dir, 'forge', 'acme', 'widget.git'), 'fleet/gh/widget', 'README.md')).toBe('# w\ny\n');
  });

  it('an empty repository and a missing base branch are excluded (empty, no-base-branch); a non-bare working copy runs', async () => {
    await createEmptyRemote(dir, 'empty');
    const based = await createRepo(dir, 'based', { 'README.md': '# b\n' }, { clone: false });
    const work = await createRepo(dir, 'work', { 'README.md': '# w\n' }, { bare: false });
    const detached = await createRepo(dir, 'detached', { 'README.md': '# d\n' }, { bare: false });
    await tgit(['-C', detached.dir, 'checkout', '-q', '--detach']);
    const file = writeFleetFile(dir, {
      name: 'kinds',
      directive: 'append',
      run: 'echo k >> README.md',
      max_retries: 0,
      targets: [{ repo: './empty.git' }, { repo: './based.git', base: 'release' }, { repo: './work' }, { repo: './detached' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout).toBe(0);
    const m = readManifest(ws);
    expect(m.excluded.map((e) => [e.lane, e.reason]).sort()).toEqual([
      ['based', 'no-base-branch'],
      ['detached', 'no-default-branch'],
      ['empty', 'empty'],
    ]);
    expect(await remoteBranches(based.remote)).toEqual(['main']);
    // The working copy: the lane branch is pushed into it, its checked-out branch and files are untouched.
    expect(lane(m, 'work').status).toBe('completed');
    expect(await remoteBranches(work.remote)).toEqual(['fleet/kinds/work', 'main']);
    expect(readFileSync(join(work.dir, 'README.md'), 'utf8')).toBe('# w\n');
    expect(await readRemoteFile(work.remote, 'fleet/kinds/work', 'README.md')).toBe('# w\nk\n');
  });

  it('a lane branch that is the base branch is refused before anything runs: Fleet never pushes onto a base branch', async () => {
    const repo = await createRepo(dir, 'main', { 'README.md': '# m\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'onbase',
      directive: 'x',
      branch: '{lane}',
      run: 'echo x >> README.md',
      max_retries: 0,
      targets: [{ repo: './main.git' }],
    });
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}: branch: lane "main" would work on branch "main", which is the base branch`);
    expect(isDir(ws)).toBe(false);
    expect(await remoteHead(repo.remote, 'main')).toBe(repo.commit);
  });

  it('URL targets: one that does not answer is excluded (unreachable), a git:// one runs and is verified over the network', async () => {
    const served = join(dir, 'served');
    const repo = await createRepo(served, 'net', { 'README.md': '# net\n' }, { clone: false });
    const { spawn } = await import('node:child_process');
    let daemon: ReturnType<typeof spawn> | undefined;
    let port = 0;
    // A real git daemon on a free port (try a few).
    for (let i = 0; i < 5 && !daemon; i++) {
      port = 20_000 + Math.floor(Math.random() * 20_000);
      const d = spawn(
        'git',
        ['daemon', '--export-all', '--enable=receive-pack', `--base-path=${served}`, '--listen=127.0.0.1', `--port=${port}`, '--reuseaddr'],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      const ok = await new Promise<boolean>((res) => {
        const timer = setTimeout(() => res(true), 400);
        d.on('exit', () => {
          clearTimeout(timer);
          res(false);
        });
      });
      if (ok) daemon = d;
    }
    expect(daemon, 'could not start git daemon').toBeDefined();
    try {
      const file = writeFleetFile(dir, {
        name: 'urls',
        directive: 'append',
        run: 'echo u >> README.md',
        max_retries: 0,
        targets: [{ repo: `file://${join(dir, 'missing.git')}` }, { repo: `git://127.0.0.1:${port}/net.git` }],
      });
      const ws = join(dir, 'ws');
      const r = await fleet(runArgs(file, ws), { cwd: dir });
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const m = readManifest(ws);
      expect(m.excluded).toEqual([expect.objectContaining({ lane: 'missing', reason: 'unreachable' })]);
      const net = lane(m, 'net');
      expect(net).toMatchObject({ status: 'completed', phase: 'pushed' });
      expect(net.evidence).toMatchObject({ head_matches: true, files_match: true, fence_ok: true, verified_by: 'local-git' });
      expect(await remoteHead(repo.remote, 'fleet/urls/net')).toBe(net.commit);
      expect(await readRemoteFile(repo.remote, 'fleet/urls/net', 'README.md')).toBe('# net\nu\n');
    } finally {
      daemon?.kill();
    }
  });

  it('exclude: in a JSON fleet file accounts for the target with its reason, skips its dependents, runs the rest', async () => {
    const keep = await createRepo(dir, 'keep', { 'README.md': '# k\n' }, { clone: false });
    const old = await createRepo(dir, 'old', { 'README.md': '# o\n' }, { clone: false });
    const file = writeFleetFile(
      dir,
      {
        name: 'excl',
        directive: 'append',
        run: 'echo e >> README.md',
        max_retries: 0,
        targets: [{ repo: './keep.git' }, { repo: './old.git' }, { repo: './keep.git', lane: 'after-old', owns: ['docs/**'], depends_on: ['old'] }],
        exclude: [{ repo: './old.git', reason: 'archived-by-team' }],
      },
      'fleet.json',
    );
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const m = readManifest(ws);
    expect(lane(m, 'old')).toMatchObject({ status: 'excluded' });
    expect(m.excluded).toEqual([{ repo: './old.git', lane: 'old', reason: 'archived-by-team', detail: null }]);
    expect(lane(m, 'after-old').error?.message).toBe('dependency "old" was excluded (archived-by-team)');
    expect(lane(m, 'keep').status).toBe('completed');
    expect(await remoteBranches(old.remote)).toEqual(['main']);
    expect(await remoteBranches(keep.remote)).toEqual(['fleet/excl/keep', 'main']);
    expect(r.stdout).toMatch(/`\.\/old\.git` — archived-by-team/);
  });
});
