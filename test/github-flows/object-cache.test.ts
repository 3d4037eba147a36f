/**
 * The object cache (src/workspace/git/object-cache.ts): the lanes of a fleet on GitHub borrow the objects their
 * clone needs from a bare repository of Fleet's beside the fleet file (`_workspace/cache/`), so a second lane of the
 * same repository and a re-run download only what changed; the bytes counted are those the emulator's git served.
 * A broken cache costs the borrowing, not the lane. And what a hostile directive could do with it: rewrite its own
 * clone's objects in place (no hard link, no alternates: the cache stays whole), or, isolated, reach the cache at all
 * (hidden, as the workspace is).
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fleet, git, lane, readManifest } from '../integration/helpers.js';
import { processSandbox } from '../../src/workspace/sandbox.js';
import { startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

const REPO = 'acme/big';
const canIsolate = process.platform === 'linux' && (await processSandbox()).kind !== 'none';

/** A repository whose clone is mostly one large file that does not compress: 1.5 MB of random bytes, base64. */
async function world(f: Flow): Promise<void> {
  await f.emu.createRepo({ owner: 'acme', name: 'big', files: { 'README.md': '# big\n', 'data.txt': `${randomBytes(1_500_000).toString('base64')}\n` } });
}

/** Bytes the emulator's upload-pack sent for REPO (the packs of clones and fetches), from request `from` on. */
function downloaded(f: Flow, from = 0): number {
  return f.emu
    .find({ kind: 'git', method: 'POST' })
    .filter((r) => r.id > from && r.path === `/git/${REPO}.git/git-upload-pack`)
    .reduce((n, r) => n + (r.responseBytes ?? 0), 0);
}

const lastRequest = (f: Flow) => f.emu.requests.at(-1)?.id ?? 0;

function fleetOf(f: Flow, targets: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}): string {
  return f.fleetFile({ name: 'cache', directive: 'x', max_retries: 0, targets, ...extra });
}

const TWO_LANES = [
  { repo: REPO, lane: 'one', owns: ['one.txt'], run: 'echo 1 > one.txt' },
  { repo: REPO, lane: 'two', owns: ['two.txt'], run: 'echo 2 > two.txt' },
];

/**
 * Replaces the packs of the bare repository `gitDir` with one that holds the same objects but for the blob `victim`,
 * whose name its index gives to a blob of `content` instead (the index rewritten: names re-sorted, fan-out and
 * checksum made anew). Git reads a packed object by the name its index gives, without hashing it on a checkout.
 */
function forgePack(gitDir: string, victim: string, content: string): void {
  const run = (args: string[], input?: string | Buffer) =>
    execFileSync('git', ['--git-dir', gitDir, ...args], { input })
      .toString()
      .trim();
  const impostor = run(['hash-object', '-w', '--stdin'], content);
  const ids = run(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)'])
    .split('\n')
    .filter((id) => id !== victim);
  const packDir = join(gitDir, 'objects', 'pack');
  const old = readdirSync(packDir);
  const prefix = join(gitDir, 'forged');
  const hash = run(['pack-objects', '-q', prefix], `${ids.join('\n')}\n`);
  for (const f of old) rmSync(join(packDir, f));
  rmSync(join(gitDir, 'objects', impostor.slice(0, 2)), { recursive: true, force: true });
  const idx = readFileSync(`${prefix}-${hash}.idx`);
  const n = idx.readUInt32BE(8 + 255 * 4);
  const names = 8 + 1024;
  const crcs = names + n * 20;
  const offsets = crcs + n * 4;
  const rows = Array.from({ length: n }, (_, i) => ({
    name: idx.subarray(names + i * 20, names + i * 20 + 20).toString('hex'),
    crc: idx.readUInt32BE(crcs + i * 4),
    offset: idx.readUInt32BE(offsets + i * 4),
  }));
  for (const r of rows) if (r.name === impostor) r.name = victim;
  rows.sort((a, b) => a.name.localeCompare(b.name));
  const out = Buffer.from(idx);
  for (let b = 0; b < 256; b++) out.writeUInt32BE(rows.filter((r) => Number.parseInt(r.name.slice(0, 2), 16) <= b).length, 8 + b * 4);
  rows.forEach((r, i) => {
    Buffer.from(r.name, 'hex').copy(out, names + i * 20);
    out.writeUInt32BE(r.crc, crcs + i * 4);
    out.writeUInt32BE(r.offset, offsets + i * 4);
  });
  createHash('sha1')
    .update(out.subarray(0, out.length - 20))
    .digest()
    .copy(out, out.length - 20);
  renameSync(`${prefix}-${hash}.pack`, join(packDir, `pack-${hash}.pack`));
  writeFileSync(join(packDir, `pack-${hash}.idx`), out);
  rmSync(`${prefix}-${hash}.idx`);
}

/** Every file under a lane's .git/objects, and whether any has a second name (a hard link into the cache). */
function objectFiles(repoDir: string): { files: string[]; linked: string[] } {
  const root = join(repoDir, '.git', 'objects');
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((p) => statSync(join(root, p)).isFile());
  return { files, linked: files.filter((p) => statSync(join(root, p)).nlink > 1) };
}

describe('the object cache of a fleet on GitHub', () => {
  it('a second lane of a repository and a re-run download only what changed; no lane keeps a link to the cache', async () => {
    flow = await startFlow();
    await world(flow);
    const file = fleetOf(flow, TWO_LANES);

    const r1 = await flow.run(file, join(flow.dir, 'ws1'));
    expect(r1.code, r1.stderr).toBe(0);
    const posts = flow.emu.find({ kind: 'git', method: 'POST' }).filter((r) => r.path === `/git/${REPO}.git/git-upload-pack`);
    // One download is the cache's: the whole repository, at least the compressed size of the large file.
    const whole = Math.max(...posts.map((r) => r.responseBytes ?? 0));
    expect(whole).toBeGreaterThan(1_100_000);
    // Both lanes cloned from it: the two clones together cost far less than a second download of the repository.
    const run1 = downloaded(flow);
    expect(run1).toBeLessThan(whole * 1.2);

    const cache = join(flow.dir, '_workspace', 'cache');
    const [cached] = readdirSync(cache).filter((n) => n.endsWith('.git'));
    expect(cached).toMatch(/^127\.0\.0\.1_\d+_git_acme_big-[0-9a-f]{12}\.git$/);
    expect(git(join(cache, cached!), 'fsck', '--no-progress')).toBe('');

    // The default branch moves by a small commit; a new run (a workspace of its own) fetches that commit and not the rest.
    await flow.emu.commit({ owner: 'acme', repo: 'big', branch: 'main', files: { 'README.md': '# big, again\n' } });
    const before = lastRequest(flow);
    const r2 = await flow.run(file, join(flow.dir, 'ws2'));
    expect(r2.code, r2.stderr).toBe(0);
    const run2 = downloaded(flow, before);
    expect(run2).toBeGreaterThan(0);
    expect(run2).toBeLessThan(whole / 10);

    for (const id of ['one', 'two']) {
      const repoDir = join(flow.dir, 'ws2', 'lanes', id, 'repo');
      expect(readFileSync(join(repoDir, 'README.md'), 'utf8')).toBe('# big, again\n');
      // The clone holds its own copy of what it borrowed: no alternates file, no object file shared with the cache.
      expect(existsSync(join(repoDir, '.git', 'objects', 'info', 'alternates'))).toBe(false);
      const objects = objectFiles(repoDir);
      expect(objects.files.length).toBeGreaterThan(0);
      expect(objects.linked).toEqual([]);
      expect(git(repoDir, 'fsck', '--no-progress')).toBe('');
    }
    expect(lane(readManifest(join(flow.dir, 'ws2')), 'one').status).toBe('completed');

    // fleet clean keeps the cache, saying its size; --all removes it.
    const kept = await fleet(['clean', '--json'], { cwd: flow.dir });
    expect(JSON.parse(kept.stdout).cache).toMatchObject({ dir: cache, removed: false });
    expect(JSON.parse(kept.stdout).cache.bytes).toBeGreaterThan(1_100_000);
    expect(existsSync(cache)).toBe(true);
    const all = await fleet(['clean', '--all'], { cwd: flow.dir });
    expect(all.stdout).toContain(`removed ${cache} (the object cache`);
    expect(existsSync(cache)).toBe(false);
  }, 180_000);

  it("a directive that rewrites its clone's objects in place changes nothing in the cache: the next run's lanes start from GitHub's content", async () => {
    flow = await startFlow();
    await world(flow);
    // Every object file the lane's clone holds, overwritten through its own name (a hard link would carry it into the cache).
    const vandal = 'find .git/objects -type f | while read -r f; do chmod u+w "$f"; printf broken > "$f"; done; echo 1 > one.txt';
    const hostile = fleetOf(flow, [{ repo: REPO, lane: 'one', owns: ['one.txt'], run: vandal }], { isolation: 'off' });
    const r1 = await flow.run(hostile, join(flow.dir, 'ws1'));
    expect(r1.code).toBe(1);

    const cache = join(flow.dir, '_workspace', 'cache');
    const [cached] = readdirSync(cache).filter((n) => n.endsWith('.git'));
    expect(git(join(cache, cached!), 'fsck', '--no-progress')).toBe('');

    const honest = fleetOf(flow, TWO_LANES, { isolation: 'off' });
    const r2 = await flow.run(honest, join(flow.dir, 'ws2'));
    expect(r2.code, r2.stderr).toBe(0);
    for (const id of ['one', 'two']) {
      const repoDir = join(flow.dir, 'ws2', 'lanes', id, 'repo');
      expect(git(repoDir, 'fsck', '--no-progress')).toBe('');
      expect(readFileSync(join(repoDir, 'README.md'), 'utf8')).toBe('# big\n');
    }
    // What was pushed is GitHub's base and the lane's one file.
    const pushed = git(join(flow.emu.reposDir, `${REPO}.git`), 'diff', '--name-only', 'main', 'fleet/cache/one');
    expect(pushed).toBe('one.txt');
  }, 180_000);

  it("a cache holding an object under another's name is not believed: the lane reads and pushes GitHub's content", async () => {
    flow = await startFlow();
    await world(flow);
    const file = fleetOf(flow, [TWO_LANES[0]!], { isolation: 'off' });
    expect((await flow.run(file, join(flow.dir, 'ws1'))).code).toBe(0);
    const cache = join(flow.dir, '_workspace', 'cache');
    const [name] = readdirSync(cache).filter((n) => n.endsWith('.git'));
    const cached = join(cache, name!);
    const real = git(join(flow.emu.reposDir, `${REPO}.git`), 'rev-parse', 'main:README.md');
    // What a directive that reached the cache could leave (one without isolation, or one that renamed a folder above
    // it): a pack whose index files a README of its own under the name of the base's README.
    forgePack(cached, real, '# planted\n');
    // Plain git believes it: a clone with --reference checks the planted file out, and says nothing.
    const believer = join(flow.dir, 'believer');
    git(flow.dir, 'clone', '--quiet', '--reference', cached, `file://${join(flow.emu.reposDir, `${REPO}.git`)}`, believer);
    expect(readFileSync(join(believer, 'README.md'), 'utf8')).toBe('# planted\n');

    const r2 = await flow.run(file, join(flow.dir, 'ws2'));
    expect(r2.code, r2.stderr).toBe(0);
    const repoDir = join(flow.dir, 'ws2', 'lanes', 'one', 'repo');
    expect(readFileSync(join(repoDir, 'README.md'), 'utf8')).toBe('# big\n');
    expect(git(repoDir, 'fsck', '--no-progress')).toBe('');
    expect(git(join(flow.emu.reposDir, `${REPO}.git`), 'diff', '--name-only', 'main', 'fleet/cache/one')).toBe('one.txt');
    // The cache the lane found wanting was made anew from GitHub's content.
    expect(
      git(
        readdirSync(cache)
          .filter((n) => n.endsWith('.git'))
          .map((n) => join(cache, n))[0]!,
        'fsck',
        '--no-progress',
      ),
    ).toBe('');
  }, 180_000);

  it('a broken cache costs the borrowing, not the lane: its clone is made again without it', async () => {
    flow = await startFlow();
    await world(flow);
    const file = fleetOf(flow, [TWO_LANES[0]!]);
    expect((await flow.run(file, join(flow.dir, 'ws1'))).code).toBe(0);
    const cache = join(flow.dir, '_workspace', 'cache');
    const [cached] = readdirSync(cache).filter((n) => n.endsWith('.git'));
    const packDir = join(cache, cached!, 'objects', 'pack');
    for (const p of readdirSync(packDir)) writeFileSync(join(packDir, p), 'broken');
    const before = lastRequest(flow);
    const r2 = await flow.run(file, join(flow.dir, 'ws2'));
    expect(r2.code, r2.stderr).toBe(0);
    expect(git(join(flow.dir, 'ws2', 'lanes', 'one', 'repo'), 'fsck', '--no-progress')).toBe('');
    // The whole repository again, from GitHub; the cache made anew from it.
    expect(downloaded(flow, before)).toBeGreaterThan(1_100_000);
    const [again] = readdirSync(cache).filter((n) => n.endsWith('.git'));
    expect(again).toBe(cached);
    expect(git(join(cache, again!), 'fsck', '--no-progress')).toBe('');

    // A cache git refuses as a reference (its object store gone): the clone fails with it, and is made again without.
    rmSync(join(cache, cached!, 'objects'), { recursive: true });
    writeFileSync(join(cache, cached!, 'objects'), 'not a folder');
    const r3 = await flow.run(file, join(flow.dir, 'ws3'));
    expect(r3.code, r3.stderr).toBe(0);
    expect(git(join(flow.dir, 'ws3', 'lanes', 'one', 'repo'), 'fsck', '--no-progress')).toBe('');
    expect(git(join(cache, cached!), 'fsck', '--no-progress')).toBe('');

    // The same with a repository whose name holds 404: what git said decides, not the URL and folders in the message.
    await flow.emu.createRepo({ owner: 'acme', name: 'fix-404', files: { 'README.md': '# x\n' } });
    const named = fleetOf(flow, [{ repo: 'acme/fix-404', lane: 'x', owns: ['one.txt'], run: 'echo 1 > one.txt' }]);
    expect((await flow.run(named, join(flow.dir, 'ws4'))).code).toBe(0);
    const [c404] = readdirSync(cache).filter((n) => n.includes('fix-404'));
    rmSync(join(cache, c404!, 'objects'), { recursive: true });
    writeFileSync(join(cache, c404!, 'objects'), 'not a folder');
    const r5 = await flow.run(named, join(flow.dir, 'ws5'));
    expect(r5.code, r5.stderr).toBe(0);
  }, 180_000);

  it.runIf(canIsolate)(
    'an isolated directive sees the cache as an empty folder it cannot write',
    async () => {
      flow = await startFlow();
      await world(flow);
      const probe = [
        'c="$FLEET_FILE_DIR/_workspace/cache"; o="$FLEET_LANE_DIR/probe.txt"',
        'echo "SEEN:[$(ls -A "$c" 2>/dev/null | tr \'\\n\' \' \')]" > "$o"',
        'touch "$c/planted" 2>/dev/null && echo WRITTEN >> "$o"',
        'mkdir -p "$c/x.git/objects" 2>/dev/null && echo MADE >> "$o"',
        'echo 1 > one.txt',
      ].join('\n');
      const file = fleetOf(flow, [{ repo: REPO, lane: 'one', owns: ['one.txt'], run: probe }]);
      const r = await flow.run(file, join(flow.dir, 'ws'));
      expect(r.code, r.stderr).toBe(0);
      const seen = readFileSync(join(flow.dir, 'ws', 'lanes', 'one', 'probe.txt'), 'utf8');
      expect(seen).toBe('SEEN:[]\n');
      const cache = join(flow.dir, '_workspace', 'cache');
      expect(readdirSync(cache).filter((n) => (!n.endsWith('.git') || n === 'x.git') && n !== '.gitignore')).toEqual([]);
      expect(readdirSync(cache).filter((n) => n.endsWith('.git'))).toHaveLength(1);
      // Beside a fleet file kept in git, the cache ignores itself, whatever folder the run's workspace is in.
      expect(readFileSync(join(cache, '.gitignore'), 'utf8')).toMatch(/^\*$/m);
    },
    180_000,
  );
});
