import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Git } from '../../src/workspace/git/git.js';
import { isLocalRemote, normalizeRemote } from '../../src/workspace/git/refs.js';
import { GitError } from '../../src/workspace/git/run.js';
import { clearSecrets, redact, registerSecret } from '../../src/util/secrets.js';
import {
  commitToRemote,
  createEmptyRemote,
  createRepo,
  makeTempDir,
  readRemoteFile,
  remoteBranches,
  remoteFiles,
  remoteHead,
  removeDir,
  tgit,
} from '../support/repos.js';

const {
  changedFiles,
  cloneForLane,
  changedBetween,
  commitAll,
  committedChange,
  defaultBranch,
  diffPatch,
  diffPatchBuffer,
  run: git,
  hasCommits,
  isGitRepo,
  lsRemoteBranch,
  parentOf,
  pushBranch,
  pushFastForward,
  revParse,
  treeOf,
} = new Git();

let tmp: string;
let n = 0;
/** A fresh lane directory under the suite's temp dir. */
const laneDir = (name = 'lane'): string => path.join(tmp, 'lanes', `${name}-${++n}`);

beforeAll(async () => {
  tmp = await makeTempDir('fleet-git-');
});
afterAll(async () => {
  await removeDir(tmp);
});
afterEach(() => {
  clearSecrets();
});

describe('redact', () => {
  it('removes URL credentials, x-access-token and GitHub token shapes', () => {
    expect(redact('fatal: unable to access https://user:ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r.git/')).toBe(
      'fatal: unable to access https://***@github.com/o/r.git/',
    );
    expect(redact('https://x-access-token:ghs_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r')).toBe('https://***@github.com/o/r');
    expect(redact('remote x-access-token:abc.def-123@host')).toBe('remote x-access-token:***@host');
    expect(redact('https://onlytoken@github.com/o/r')).toBe('https://***@github.com/o/r');
    expect(redact('ssh://git:pa55@host/x')).toBe('ssh://git:***@host/x');
    expect(redact('ssh://git@github.com/o/r and git@github.com:o/r')).toBe('ssh://git@github.com/o/r and git@github.com:o/r');
    expect(redact('token github_pat_11ABCDEFG0123456789_abcdefghijkl here')).toBe('token *** here');
    expect(redact('http.extraheader=AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hz')).toBe('http.extraheader=AUTHORIZATION: basic ***');
    expect(redact('https://github.com/o/r/blob/main/a@b.md')).toBe('https://github.com/o/r/blob/main/a@b.md');
  });

  it('removes registered secrets wherever they appear', () => {
    registerSecret('s3cr3t-T0KEN');
    registerSecret('ab'); // too short to register
    expect(redact('value=s3cr3t-T0KEN; again s3cr3t-T0KEN; ab')).toBe('value=***; again ***; ab');
    clearSecrets();
    expect(redact('s3cr3t-T0KEN')).toBe('s3cr3t-T0KEN');
  });

  it('removes a registered secret URL-encoded, and base64-encoded wherever it starts in a longer text', () => {
    const secret = 'ghs_16C7e42F292c6912E7710c838347Ae178B4a/+=?';
    registerSecret(secret);
    expect(redact(`q=${encodeURIComponent(secret)}&x=1`)).toBe('q=***&x=1');
    for (const prefix of ['', 'a', 'ab', 'Authorization: token ', 'x-access-token:']) {
      const b64 = Buffer.from(`${prefix}${secret} and more`, 'utf8').toString('base64');
      const out = redact(b64);
      expect(out, `base64 after "${prefix}"`).toContain('***');
      // What is left cannot be decoded back into the secret or a long piece of it.
      expect(Buffer.from(out.replace(/\*\*\*/g, ''), 'base64').toString('latin1')).not.toContain(secret.slice(0, 12));
    }
    clearSecrets();
  });

  it('never lets a token reach a GitError message', async () => {
    const token = 'ghp_0123456789abcdefghijABCDEFGHIJ012345';
    // Port 9 on localhost: refused at once, and git echoes the URL in its error.
    const err = await git(['ls-remote', `https://x-access-token:${token}@127.0.0.1:9/o/r.git`], { cwd: tmp }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitError);
    const e = err as GitError;
    expect(e.exitCode).toBeGreaterThan(0);
    for (const text of [e.message, e.stderr, e.args.join(' '), String(e.stack)]) expect(text).not.toContain(token);
    expect(e.message).toContain('***@127.0.0.1');

    const secret = 'my-registered-secret-42';
    registerSecret(secret);
    const err2 = (await cloneForLane(path.join(tmp, `missing-${secret}`), laneDir(), { branch: 'b' }).catch((x: unknown) => x)) as GitError;
    expect(err2).toBeInstanceOf(GitError);
    expect(err2.message).not.toContain(secret);
    expect(err2.stderr).not.toContain(secret);
    expect(err2.args.join(' ')).not.toContain(secret);
  });
});

describe('inspection', () => {
  it('tells repositories, bare repositories, other paths and missing paths apart', async () => {
    const { remote, dir } = await createRepo(tmp, 'kinds', { 'a.txt': 'a\n' });
    await mkdir(path.join(dir, 'sub'), { recursive: true });
    await mkdir(path.join(tmp, 'plain'), { recursive: true });
    await writeFile(path.join(tmp, 'plain', 'f.txt'), 'x');
    expect(await isGitRepo(dir)).toBe('repo');
    expect(await isGitRepo(remote)).toBe('bare');
    expect(await isGitRepo(path.join(dir, 'sub'))).toBe('not-a-repository');
    expect(await isGitRepo(path.join(dir, '.git'))).toBe('not-a-repository');
    expect(await isGitRepo(path.join(tmp, 'plain'))).toBe('not-a-repository');
    expect(await isGitRepo(path.join(tmp, 'plain', 'f.txt'))).toBe('not-a-repository');
    expect(await isGitRepo(path.join(tmp, 'nope'))).toBe('not-found');
  });

  it('ignores GIT_DIR and friends inherited from a parent git process', async () => {
    const { remote } = await createRepo(tmp, 'envleak', { 'a.txt': 'a\n' }, { clone: false });
    const saved = process.env.GIT_DIR;
    process.env.GIT_DIR = remote;
    try {
      expect(await isGitRepo(path.join(tmp, 'plain'))).toBe('not-a-repository');
    } finally {
      if (saved === undefined) delete process.env.GIT_DIR;
      else process.env.GIT_DIR = saved;
    }
  });

  it('knows empty repositories, default branches and remote branches', async () => {
    const { remote, commit } = await createRepo(tmp, 'trunky', { 'a.txt': 'a\n' }, { branch: 'trunk', clone: false });
    const empty = await createEmptyRemote(tmp, 'empty');
    expect(await hasCommits(remote)).toBe(true);
    expect(await hasCommits(empty)).toBe(false);
    expect(await defaultBranch(remote)).toBe('trunk');
    expect(await defaultBranch(empty)).toBeNull();
    expect(await lsRemoteBranch(remote, 'trunk')).toBe(commit);
    expect(await lsRemoteBranch(remote, 'nope')).toBeNull();
    await commitToRemote(remote, 'feature/trunk', { 'b.txt': 'b\n' });
    expect(await lsRemoteBranch(remote, 'trunk')).toBe(commit); // not the tail match feature/trunk
    await expect(defaultBranch(path.join(tmp, 'does-not-exist'))).rejects.toBeInstanceOf(GitError);
  });

  it('normalizes local remotes and leaves URLs alone', () => {
    expect(isLocalRemote('/abs/x.git')).toBe(true);
    expect(isLocalRemote('./x')).toBe(true);
    expect(isLocalRemote('file:///x')).toBe(true);
    expect(isLocalRemote('https://github.com/o/r.git')).toBe(false);
    expect(isLocalRemote('git@github.com:o/r.git')).toBe(false);
    expect(normalizeRemote('./x')).toBe(path.resolve('x'));
    expect(normalizeRemote('https://github.com/o/r.git')).toBe('https://github.com/o/r.git');
  });
});

describe('a lane: clone, change, commit, push', () => {
  it('clones the default branch, checks out the lane branch and pushes a commit by Fleet', async () => {
    const { remote, commit: initial } = await createRepo(tmp, 'app', { 'README.md': '# app\n', 'src/a.ts': 'export const a = 1;\n' }, { clone: false });
    const dir = laneDir();
    const c = await cloneForLane(remote, dir, { branch: 'fleet/demo/app' });
    expect(c).toEqual({ base_branch: 'main', base_commit: initial, remote_branch_commit: null });
    expect((await git(['symbolic-ref', '--short', 'HEAD'], { cwd: dir })).stdout.trim()).toBe('fleet/demo/app');

    await writeFile(path.join(dir, 'README.md'), '# app\n\nUpdated.\n');
    expect((await changedFiles(dir)).files).toEqual(['README.md']);
    const message = 'chore: update README\n\n# not a comment: kept verbatim\nFleet-Lane: app\n';
    const sha = await commitAll(dir, message, { staged: true });
    expect(await parentOf(dir, sha)).toBe(initial);
    expect(await treeOf(dir, sha)).toMatch(/^[0-9a-f]{40}$/);
    const show = await git(['show', '-s', '--format=%an <%ae>|%cn <%ce>|%B', sha], { cwd: dir });
    expect(show.stdout).toBe(`Fleet <fleet@users.noreply.github.com>|Fleet <fleet@users.noreply.github.com>|${message}\n`);

    expect(await pushBranch(dir, 'fleet/demo/app', { expected: c.remote_branch_commit })).toEqual({ ok: true, status: 'created' });
    expect(await remoteHead(remote, 'fleet/demo/app')).toBe(sha);
    expect(await readRemoteFile(remote, 'fleet/demo/app', 'README.md')).toBe('# app\n\nUpdated.\n');
    expect(await remoteBranches(remote)).toEqual(['fleet/demo/app', 'main']);
    expect(await remoteHead(remote, 'main')).toBe(initial);
  });

  it('clone + change + commit + push of a small repository, five lanes in a row', async () => {
    const { remote } = await createRepo(tmp, 'speedy', { 'README.md': '# speedy\n', 'src/a.ts': 'export const a = 1;\n' }, { clone: false });
    const runs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const dir = laneDir('speed');
      const t0 = performance.now();
      const c = await cloneForLane(remote, dir, { branch: `fleet/speed/l${i}` });
      await writeFile(path.join(dir, 'README.md'), `# speedy ${i}\n`);
      await changedFiles(dir);
      await commitAll(dir, `speed ${i}`, { staged: true });
      const p = await pushBranch(dir, `fleet/speed/l${i}`, { expected: c.remote_branch_commit });
      runs.push(performance.now() - t0);
      expect(p.ok).toBe(true);
    }
    runs.sort((a, b) => a - b);
    console.log(`[git] clone+changedFiles+commit+push, 5 runs (ms): ${runs.map((r) => r.toFixed(0)).join(' ')}; median ${runs[2]!.toFixed(0)}`);
    // Timed for the log only: on a shared machine a bound here fails at random; `npm run bench` measures speed.
    expect(await remoteBranches(remote)).toEqual(['fleet/speed/l0', 'fleet/speed/l1', 'fleet/speed/l2', 'fleet/speed/l3', 'fleet/speed/l4', 'main']);
  });

  it('pushes the commit it is given, not whatever HEAD names by then (another process moved the branch)', async () => {
    const { remote } = await createRepo(tmp, 'judged', { 'a.txt': 'a\n' }, { clone: false });
    const dir = laneDir();
    const c = await cloneForLane(remote, dir, { branch: 'fleet/x/judged' });
    await writeFile(path.join(dir, 'a.txt'), 'judged\n');
    const judged = await commitAll(dir, 'judged');
    // After the fence looked: the branch moves on to a commit that touches something else.
    await writeFile(path.join(dir, 'outside.txt'), 'x\n');
    const moved = await commitAll(dir, 'moved');
    expect(moved).not.toBe(judged);
    expect(await pushBranch(dir, 'fleet/x/judged', { commit: judged, expected: c.remote_branch_commit })).toEqual({ ok: true, status: 'created' });
    expect(await remoteHead(remote, 'fleet/x/judged')).toBe(judged);
  });

  it('uses an explicit base, and learns where a lane branch already is (a re-run)', async () => {
    const { remote } = await createRepo(tmp, 'rerun', { 'a.txt': 'a\n' }, { clone: false });
    const dev = await commitToRemote(remote, 'develop', { 'dev.txt': 'dev\n' });
    const previous = await commitToRemote(remote, 'fleet/x/rerun', { 'old.txt': 'old\n' }, { from: dev });

    const dir = laneDir();
    const c = await cloneForLane(remote, dir, { base: 'develop', branch: 'fleet/x/rerun' });
    expect(c).toEqual({ base_branch: 'develop', base_commit: dev, remote_branch_commit: previous });
    expect(await revParse(dir, 'HEAD')).toBe(dev); // the lane starts again from the base
    expect(await revParse(dir, 'refs/remotes/origin/fleet/x/rerun')).toBe(previous);

    await writeFile(path.join(dir, 'new.txt'), 'new\n');
    const sha = await commitAll(dir, 'again');
    expect(await pushBranch(dir, 'fleet/x/rerun', { expected: previous })).toEqual({ ok: true, status: 'forced' });
    expect(await remoteHead(remote, 'fleet/x/rerun')).toBe(sha);
    expect(await pushBranch(dir, 'fleet/x/rerun', { expected: sha })).toEqual({ ok: true, status: 'up-to-date' });
  });

  it('refuses a push when someone else pushed the branch in between (stale lease)', async () => {
    const { remote } = await createRepo(tmp, 'race', { 'a.txt': 'a\n' }, { clone: false });
    const dir = laneDir();
    const c = await cloneForLane(remote, dir, { branch: 'fleet/x/race' });
    expect(c.remote_branch_commit).toBeNull();
    const theirs = await commitToRemote(remote, 'fleet/x/race', { 'theirs.txt': 'theirs\n' }, { from: 'main' });
    await writeFile(path.join(dir, 'mine.txt'), 'mine\n');
    await commitAll(dir, 'mine');

    const r = await pushBranch(dir, 'fleet/x/race', { expected: c.remote_branch_commit });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toBe('stale');
      expect(r.detail).toMatch(/stale info/);
    }
    expect(await remoteHead(remote, 'fleet/x/race')).toBe(theirs);

    // Also when the branch existed at clone time and moved since.
    const dir2 = laneDir();
    const c2 = await cloneForLane(remote, dir2, { branch: 'fleet/x/race' });
    expect(c2.remote_branch_commit).toBe(theirs);
    const moved = await commitToRemote(remote, 'fleet/x/race', { 'more.txt': 'more\n' });
    await writeFile(path.join(dir2, 'mine.txt'), 'mine\n');
    await commitAll(dir2, 'mine');
    const r2 = await pushBranch(dir2, 'fleet/x/race', { expected: c2.remote_branch_commit });
    expect(r2.ok === false && r2.reason).toBe('stale');
    expect(await remoteHead(remote, 'fleet/x/race')).toBe(moved);
  });

  it('reports a push refused by the remote as rejected, and an unreachable remote as error', async () => {
    const { remote } = await createRepo(tmp, 'guarded', { 'a.txt': 'a\n' }, { clone: false });
    const hooks = path.join(tmp, 'guard-hooks');
    await mkdir(hooks, { recursive: true });
    await writeFile(path.join(hooks, 'pre-receive'), '#!/bin/sh\necho "protected by policy" >&2\nexit 1\n');
    await chmod(path.join(hooks, 'pre-receive'), 0o755);
    await tgit(['-C', remote, 'config', 'core.hooksPath', hooks]);
    const dir = laneDir();
    const c = await cloneForLane(remote, dir, { branch: 'fleet/x/guarded' });
    await writeFile(path.join(dir, 'b.txt'), 'b\n');
    await commitAll(dir, 'b');
    const r = await pushBranch(dir, 'fleet/x/guarded', { expected: c.remote_branch_commit });
    expect(r.ok === false && r.reason).toBe('rejected');
    expect(r.ok === false && r.detail).toMatch(/remote rejected|protected by policy/);

    await tgit(['-C', dir, 'remote', 'set-url', 'origin', path.join(tmp, 'gone.git')]);
    const r2 = await pushBranch(dir, 'fleet/x/guarded', { expected: null });
    expect(r2.ok === false && r2.reason).toBe('error');
  });

  it('pushes different branches to one bare repository concurrently', async () => {
    const { remote } = await createRepo(tmp, 'busy', { 'a.txt': 'a\n' }, { clone: false });
    const lanes = Array.from({ length: 6 }, (_, i) => `fleet/busy/l${i}`);
    const results = await Promise.all(
      lanes.map(async (branch, i) => {
        const dir = laneDir('busy');
        const c = await cloneForLane(remote, dir, { branch });
        await writeFile(path.join(dir, `f${i}.txt`), `${i}\n`);
        const sha = await commitAll(dir, `lane ${i}`);
        return { sha, push: await pushBranch(dir, branch, { expected: c.remote_branch_commit }) };
      }),
    );
    for (const r of results) expect(r.push).toEqual({ ok: true, status: 'created' });
    expect(await remoteBranches(remote)).toEqual([...lanes, 'main'].sort());
    for (const [i, branch] of lanes.entries()) expect(await remoteHead(remote, branch)).toBe(results[i]!.sha);
  });

  it('retries a push that hit a ref lock, and gives up after 3 attempts', async () => {
    const { remote } = await createRepo(tmp, 'locked', { 'a.txt': 'a\n' }, { clone: false });
    const dir = laneDir();
    const c = await cloneForLane(remote, dir, { branch: 'fleet/x/locked' });
    await writeFile(path.join(dir, 'b.txt'), 'b\n');
    await commitAll(dir, 'b');
    await mkdir(path.join(remote, 'refs/heads/fleet/x'), { recursive: true });
    const lock = path.join(remote, 'refs/heads/fleet/x/locked.lock');

    await writeFile(lock, ''); // a lock nobody releases
    const t0 = performance.now();
    const r = await pushBranch(dir, 'fleet/x/locked', { expected: c.remote_branch_commit });
    expect(r.ok === false && r.reason).toBe('rejected');
    expect(r.ok === false && r.detail).toMatch(/cannot lock ref/);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(150); // two backoffs: it did retry
    expect(await remoteHead(remote, 'fleet/x/locked')).toBeNull();

    setTimeout(() => void rm(lock, { force: true }), 30); // released while we back off
    expect(await pushBranch(dir, 'fleet/x/locked', { expected: c.remote_branch_commit })).toEqual({ ok: true, status: 'created' });
  });

  it('does not run hooks, even ones the repository configures', async () => {
    const { remote } = await createRepo(tmp, 'hooked', { 'a.txt': 'a\n' }, { clone: false });
    const dir = laneDir();
    await cloneForLane(remote, dir, { branch: 'fleet/x/hooked' });
    const hooks = path.join(dir, '.githooks');
    await mkdir(hooks);
    await writeFile(path.join(hooks, 'pre-commit'), '#!/bin/sh\necho hook ran > hook-ran.txt\nexit 1\n');
    await chmod(path.join(hooks, 'pre-commit'), 0o755);
    await tgit(['-C', dir, 'config', 'core.hooksPath', '.githooks']);
    await tgit(['-C', dir, 'config', 'commit.gpgsign', 'true']);
    await writeFile(path.join(dir, 'b.txt'), 'b\n');
    await expect(commitAll(dir, 'no hooks, no signing')).resolves.toMatch(/^[0-9a-f]{40}$/);
    await expect(readFile(path.join(dir, 'hook-ran.txt'), 'utf8')).rejects.toThrow();
  });

  it('uses an overridable identity', async () => {
    const { remote } = await createRepo(tmp, 'ident', { 'a.txt': 'a\n' }, { clone: false });
    const dir = laneDir();
    await cloneForLane(remote, dir, { branch: 'fleet/x/ident' });
    const bot = new Git({ identity: { name: 'Fleet Bot', email: 'bot@example.com' } });
    await writeFile(path.join(dir, 'b.txt'), 'b\n');
    const sha = await bot.commitAll(dir, 'who');
    expect((await git(['show', '-s', '--format=%an <%ae>', sha], { cwd: dir })).stdout.trim()).toBe('Fleet Bot <bot@example.com>');
  });

  it('fails clearly on an empty remote', async () => {
    const empty = await createEmptyRemote(tmp, 'void');
    await expect(cloneForLane(empty, laneDir(), { branch: 'x' })).rejects.toThrow(/empty repository|no commits|not found in upstream/i);
  });
});

describe('changedFiles', () => {
  it('lists modified, added (untracked), deleted and renamed files, with spaces and unicode intact', async () => {
    const files = {
      'README.md': '# r\n',
      'src/keep.ts': 'export const keep = 1;\n',
      'src/old name.ts': 'export const renamed = "a fairly long line so rename detection has content to match";\n',
      'docs/gone.md': 'gone\n',
      'données/été.txt': 'chaud\n',
      '.gitignore': 'dist/\n*.log\n',
    };
    const { remote } = await createRepo(tmp, 'changes', files, { clone: false });
    const dir = laneDir();
    await cloneForLane(remote, dir, { branch: 'fleet/x/changes' });

    await writeFile(path.join(dir, 'README.md'), '# r\nmore\n'); // modified
    await mkdir(path.join(dir, 'new dir/深い'), { recursive: true });
    await writeFile(path.join(dir, 'new dir/深い/ファイル 1.md'), 'new\n'); // untracked, spaces + unicode
    await writeFile(path.join(dir, 'quote"and\\back.txt'), 'odd\n'); // quotes and backslashes
    await rm(path.join(dir, 'docs/gone.md')); // deleted
    await rename(path.join(dir, 'src/old name.ts'), path.join(dir, 'src/new name.ts')); // renamed
    await writeFile(path.join(dir, 'données/été.txt'), 'froid\n'); // unicode, modified
    await mkdir(path.join(dir, 'dist'));
    await writeFile(path.join(dir, 'dist/out.js'), 'ignored\n'); // ignored
    await writeFile(path.join(dir, 'debug.log'), 'ignored\n'); // ignored

    const r = await changedFiles(dir);
    expect(r.files).toEqual(['README.md', 'docs/gone.md', 'données/été.txt', 'new dir/深い/ファイル 1.md', 'quote"and\\back.txt', 'src/new name.ts'].sort());
    expect(r.renamed_from).toEqual(['src/old name.ts']);
    const byPath = Object.fromEntries(r.entries.map((e) => [e.path, e]));
    expect(byPath['docs/gone.md']!.status).toBe('D');
    expect(byPath['new dir/深い/ファイル 1.md']!.status).toBe('A');
    expect(byPath['README.md']!.status).toBe('M');
    expect(byPath['src/new name.ts']).toEqual({ status: 'R', path: 'src/new name.ts', from: 'src/old name.ts' });

    const sha = await commitAll(dir, 'all kinds', { staged: true });
    expect(await pushBranch(dir, 'fleet/x/changes', { expected: null })).toMatchObject({ ok: true });
    const remoteTree = await remoteFiles(remote, 'fleet/x/changes');
    expect(remoteTree).toContain('new dir/深い/ファイル 1.md');
    expect(remoteTree).not.toContain('docs/gone.md');
    expect(remoteTree).not.toContain('dist/out.js');
    expect(await parentOf(dir, sha)).not.toBeNull();
  });

  it('is empty when nothing changed', async () => {
    const { remote } = await createRepo(tmp, 'nochange', { 'a.txt': 'a\n' }, { clone: false });
    const dir = laneDir();
    await cloneForLane(remote, dir, { branch: 'fleet/x/nochange' });
    await writeFile(path.join(dir, 'a.txt'), 'a\n'); // same content
    expect(await changedFiles(dir)).toEqual({ files: [], renamed_from: [], entries: [] });
  });
});

describe('committedChange', () => {
  it('gives the files changedBetween gives and the patch diffPatch gives, from one git process', async () => {
    const keep = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\n';
    const { remote, commit } = await createRepo(
      tmp,
      'both',
      { 'keep.txt': keep, 'gone.txt': 'x\n', 'run.sh': 'echo\n', 'img.bin': Buffer.from([0, 1, 2, 3, 255]), 'sp ace.txt': 'old\n' },
      { clone: false },
    );
    const dir = laneDir();
    await cloneForLane(remote, dir, { branch: 'fleet/x/both' });
    await rename(path.join(dir, 'keep.txt'), path.join(dir, 'kept.txt'));
    await rm(path.join(dir, 'gone.txt'));
    await chmod(path.join(dir, 'run.sh'), 0o755);
    await writeFile(path.join(dir, 'img.bin'), Buffer.from([0, 9, 8, 7, 255, 0, 128]));
    await writeFile(path.join(dir, 'sp ace.txt'), 'new\n');
    await writeFile(path.join(dir, 'ünï\nline.txt'), 'u\n');
    const sha = await commitAll(dir, 'both at once');

    const both = await committedChange(dir, commit, sha);
    const { patch, ...listed } = both;
    expect(listed).toEqual(await changedBetween(dir, commit, sha));
    expect(listed.files).toEqual(['gone.txt', 'img.bin', 'kept.txt', 'run.sh', 'sp ace.txt', 'ünï\nline.txt']);
    expect(listed.renamed_from).toEqual(['keep.txt']);
    expect(listed.entries).toContainEqual({ status: 'D', path: 'gone.txt' });
    expect(patch.equals(await diffPatchBuffer(dir, commit, sha))).toBe(true);
    expect(patch.toString('utf8')).toContain('GIT binary patch');
    expect(await committedChange(dir, sha, sha)).toEqual({ files: [], renamed_from: [], entries: [], patch: Buffer.alloc(0) });
  });
});

describe('commitsBetween', () => {
  it('reads each commit whole whatever bytes its message and author hold: a separator, a line that looks like a listing, a NUL', async () => {
    // Commits someone pushed to a lane branch (branch_conflict: rebase replays them): their text is theirs to choose.
    const { remote, commit: base } = await createRepo(tmp, 'between', { 'a.txt': 'a\n' }, { clone: false });
    const dir = laneDir();
    await cloneForLane(remote, dir, { branch: 'fleet/x/between' });
    const tree = await treeOf(dir, 'HEAD');
    const fake = 'f'.repeat(40);
    // A message with the unit separator an earlier parser split on, and the fields of a forged commit after it.
    await writeFile(path.join(dir, 'b.txt'), 'b\n');
    const one = await commitAll(dir, `one\x1f${fake}\x1f${base}\x1fEvil <e@e>\x1fforged`);
    // An author with the separator in it, and a message with a NUL (git's own commit refuses one: written literally).
    const raw = [
      `tree ${tree}`,
      `parent ${one}`,
      'author Odd\x1fName <o@o> 1700000000 +0000',
      'committer C <c@c> 1700000000 +0000',
      '',
      `two\0${fake}\0${one}\0Evil <e@e>\0forged`,
      '',
    ].join('\n');
    await writeFile(path.join(tmp, 'raw-commit'), raw);
    const two = (await git(['hash-object', '-t', 'commit', '-w', '--literally', path.join(tmp, 'raw-commit')], { cwd: dir })).stdout.trim();
    const got = await new Git().commitsBetween(dir, base, two, 10);
    expect(got.map((c) => c.commit)).toEqual([one, two]);
    expect(got[0]).toMatchObject({ parents: [base], message: `one\x1f${fake}\x1f${base}\x1fEvil <e@e>\x1fforged` });
    // git prints a message up to its NUL: the rest is no commit of its own.
    expect(got[1]).toMatchObject({ parents: [one], author: 'Odd\x1fName <o@o>', message: 'two' });
  });
});

describe('diffPatch', () => {
  it('produces a binary-safe patch that reproduces the commit', async () => {
    const { remote, commit } = await createRepo(tmp, 'patchy', { 'a.txt': 'a\n', 'img.bin': Buffer.from([0, 1, 2, 3, 255]) }, { clone: false });
    const dir = laneDir();
    await cloneForLane(remote, dir, { branch: 'fleet/x/patchy' });
    await writeFile(path.join(dir, 'a.txt'), 'a\nb\n');
    await writeFile(path.join(dir, 'img.bin'), Buffer.from([0, 9, 8, 7, 255, 0, 128]));
    await writeFile(path.join(dir, 'new file.txt'), 'ünïcode\n');
    const sha = await commitAll(dir, 'patch me');
    const patch = await diffPatch(dir, commit, sha);
    expect(patch).toContain('GIT binary patch');
    expect(patch).toContain('diff --git a/a.txt b/a.txt');

    const other = laneDir('apply');
    await cloneForLane(remote, other, { branch: 'apply' });
    await writeFile(path.join(tmp, 'lane.patch'), patch);
    await tgit(['-C', other, 'apply', '--index', path.join(tmp, 'lane.patch')]);
    expect((await tgit(['-C', other, 'write-tree'])).stdout.trim()).toBe(await treeOf(dir, sha));
  });
});

describe('pushFastForward (local merge)', () => {
  it('fast-forwards the base only while it is still at the expected commit', async () => {
    const { remote, commit: base } = await createRepo(tmp, 'merge', { 'a.txt': 'a\n' }, { clone: false });
    const dir = laneDir();
    const c = await cloneForLane(remote, dir, { branch: 'fleet/x/merge' });
    await writeFile(path.join(dir, 'b.txt'), 'b\n');
    const sha = await commitAll(dir, 'b');
    expect(await pushFastForward(dir, sha, c.base_branch, c.base_commit)).toMatchObject({ ok: true });
    expect(await remoteHead(remote, 'main')).toBe(sha);

    // The base moved since (someone merged): stale.
    const dir2 = laneDir();
    const c2 = await cloneForLane(remote, dir2, { branch: 'fleet/x/merge2' });
    await commitToRemote(remote, 'main', { 'c.txt': 'c\n' });
    await writeFile(path.join(dir2, 'd.txt'), 'd\n');
    const sha2 = await commitAll(dir2, 'd');
    const r = await pushFastForward(dir2, sha2, c2.base_branch, c2.base_commit);
    expect(r.ok === false && r.reason).toBe('stale');

    // Not a descendant of the expected base: rejected, nothing pushed.
    const dir3 = laneDir();
    await cloneForLane(remote, dir3, { branch: 'fleet/x/merge3' });
    const head = await remoteHead(remote, 'main');
    const r3 = await pushFastForward(dir3, base, 'main', head!);
    expect(r3.ok === false && r3.reason).toBe('rejected');
    expect(await remoteHead(remote, 'main')).toBe(head);
  });
});

describe('network failures worth another try', () => {
  it('tells a transient failure (5xx, dropped connection, timeout, ref lock) from a final one (auth, missing repository, hook)', async () => {
    const { isTransientGitFailure } = await import('../../src/workspace/git/run.js');
    for (const t of [
      "fatal: unable to access 'https://h/o/r.git/': The requested URL returned error: 502",
      'error: RPC failed; HTTP 503 curl 22 The requested URL returned error: 503',
      'fatal: the remote end hung up unexpectedly',
      'fatal: early EOF',
      'error: RPC failed; curl 56 Recv failure: Connection reset by peer',
      "fatal: unable to access 'https://h/': Empty reply from server",
      'git clone failed (exit -1): timed out after 600 ms',
      "! refs/heads/x:refs/heads/x [remote rejected] (cannot lock ref 'refs/heads/x': is at 1 but expected 2)",
    ])
      expect(isTransientGitFailure(t), t).toBe(true);
    for (const t of [
      "remote: Repository not found.\nfatal: repository 'https://h/o/r.git/' not found",
      "fatal: Authentication failed for 'https://h/o/r.git/'",
      "fatal: unable to access 'https://h/': The requested URL returned error: 403",
      '! HEAD:refs/heads/x [remote rejected] (pre-receive hook declined)',
      '! HEAD:refs/heads/x [rejected] (stale info)',
    ])
      expect(isTransientGitFailure(t), t).toBe(false);
  });

  it('backs off exponentially with jitter', async () => {
    const { backoffMs } = await import('../../src/workspace/git/run.js');
    for (let retry = 1; retry <= 3; retry++) {
      const cap = 1000 * 2 ** (retry - 1);
      const seen = Array.from({ length: 200 }, () => backoffMs(retry, 1000));
      for (const ms of seen) {
        expect(ms).toBeGreaterThanOrEqual(cap / 10);
        expect(ms).toBeLessThanOrEqual(cap);
      }
      expect(new Set(seen).size).toBeGreaterThan(50);
    }
  });
});
