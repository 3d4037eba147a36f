/**
 * The object cache with real git over `file://` remotes (Fleet borrows only for network remotes; the whole flow
 * against the GitHub emulator is test/github-flows/object-cache.test.ts): the first clone fills the cache, the next
 * borrows and keeps copies of its own; clones of one repository take turns; a failed clone leaves the cache alone;
 * packs are folded into one past a bound; names keep no credential.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Git } from '../../src/workspace/git/git.js';
import { cacheName, cacheRef, ObjectCache, packLooksWhole } from '../../src/workspace/git/object-cache.js';
import { git, removeDir, tempDir } from '../integration/helpers.js';
import { createRepo } from '../support/repos.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

/** A lane's clone as Fleet makes it (operations.ts cloneForLane), over `file://` (which Fleet itself hard-links instead). */
async function cloneWith(cache: ObjectCache, url: string, target: string, base = 'main'): Promise<string | null> {
  const git = new Git();
  return cache.lend(git, url, base, async (b) => {
    const borrowed = b.reference ? ['--reference', b.reference, '--no-checkout'] : [];
    await git.run(['clone', '--quiet', '--no-tags', '--single-branch', '--branch', base, ...borrowed, '--', url, target], { cwd: dir });
    await b.cloned(join(target, '.git'));
    if (b.reference) await git.run(['reset', '--hard', '--quiet'], { cwd: target });
    return b.reference;
  });
}

const packs = (gitDir: string) => readdirSync(join(gitDir, 'objects', 'pack')).filter((f) => f.endsWith('.pack'));

/** Every file under a repository's objects, and those with a second name (a hard link). */
function linkedObjects(gitDir: string): string[] {
  const root = join(gitDir, 'objects');
  return readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((p) => statSync(join(root, p)).isFile() && statSync(join(root, p)).nlink > 1);
}

describe('the object cache', () => {
  it('names a cache by its remote, readable, never with the credential a URL may carry', () => {
    expect(cacheName('https://github.com/acme/api.git')).toMatch(/^github\.com_acme_api-[0-9a-f]{12}\.git$/);
    expect(cacheName('https://x-access-token:ghs_secret@github.com/acme/api.git')).not.toContain('ghs_secret');
    expect(cacheName('https://github.com/acme/api.git')).not.toBe(cacheName('https://github.com/acme/api2.git'));
    expect(cacheName('https://github.com/Acme/api.git')).not.toBe(cacheName('https://github.com/acme/api.git'));
    expect(cacheRef(undefined)).toMatch(/^refs\/fleet\/[0-9a-f]{16}$/);
    expect(cacheRef('release/1.x')).not.toBe(cacheRef('main'));
  });

  it('the first clone fills the cache; the next borrows from it and keeps a copy of its own, sharing no file with it', async () => {
    const { remote, dir: work } = await createRepo(dir, 'app', { 'README.md': '# app\n' });
    const url = `file://${remote}`;
    const cache = new ObjectCache(join(dir, 'cache'));
    const cached = cache.dirFor(url);
    expect(await cloneWith(cache, url, join(dir, 'lane1'))).toBeNull();
    expect(git(cached, 'rev-parse', cacheRef('main'))).toBe(git(remote, 'rev-parse', 'refs/heads/main'));
    expect(git(cached, 'fsck', '--no-progress')).toBe('');

    git(work, 'commit', '--quiet', '--allow-empty', '-m', 'next');
    git(work, 'push', '--quiet', 'origin', 'HEAD:main');
    expect(await cloneWith(cache, url, join(dir, 'lane2'))).toBe(cached);
    const lane = join(dir, 'lane2', '.git');
    expect(existsSync(join(lane, 'objects', 'info', 'alternates'))).toBe(false);
    expect(linkedObjects(lane)).toEqual([]);
    expect(git(join(dir, 'lane2'), 'fsck', '--no-progress')).toBe('');
    // The cache holds the new commit too, by the pack the second clone downloaded.
    expect(git(cached, 'rev-parse', cacheRef('main'))).toBe(git(remote, 'rev-parse', 'refs/heads/main'));
    expect(packs(cached)).toHaveLength(2);
    expect(git(cached, 'fsck', '--no-progress')).toBe('');
  });

  it('clones of one repository take turns in a process: the first fills the cache, the others borrow', async () => {
    const { remote } = await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    const url = `file://${remote}`;
    const cache = new ObjectCache(join(dir, 'cache'));
    const lent = await Promise.all([1, 2, 3].map((i) => cloneWith(cache, url, join(dir, `lane${i}`))));
    expect(lent).toEqual([null, cache.dirFor(url), cache.dirFor(url)]);
    for (const i of [1, 2, 3]) expect(git(join(dir, `lane${i}`), 'fsck', '--no-progress')).toBe('');
  });

  it("a clone that fails leaves the cache as it was, and the next clone's turn comes", async () => {
    const { remote } = await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    const url = `file://${remote}`;
    const cache = new ObjectCache(join(dir, 'cache'));
    await expect(cloneWith(cache, url, join(dir, 'lane1'), 'no-such-branch')).rejects.toThrow(/no-such-branch/);
    expect(existsSync(cache.dirFor(url))).toBe(false);
    expect(await cloneWith(cache, url, join(dir, 'lane2'))).toBeNull();
  });

  it('a pack and its index that disagree on their face are not whole', async () => {
    const { remote } = await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    const cache = new ObjectCache(join(dir, 'cache'));
    await cloneWith(cache, `file://${remote}`, join(dir, 'lane1'));
    const cached = cache.dirFor(`file://${remote}`);
    const [name] = packs(cached).map((p) => p.slice(0, -'.pack'.length));
    expect(packLooksWhole(cached, name!)).toBe(true);
    const idx = join(cached, 'objects', 'pack', `${name}.idx`);
    const whole = readFileSync(idx);
    writeFileSync(idx, whole.subarray(0, whole.length - 41));
    expect(packLooksWhole(cached, name!)).toBe(false);
    writeFileSync(idx, whole);
    writeFileSync(join(cached, 'objects', 'pack', `${name}.pack`), 'PACK');
    expect(packLooksWhole(cached, name!)).toBe(false);
    expect(packLooksWhole(cached, 'pack-missing')).toBe(false);
    // The next clone finds the cache broken, makes it anew, and borrows nothing.
    expect(await cloneWith(cache, `file://${remote}`, join(dir, 'lane2'))).toBeNull();
    expect(git(cached, 'fsck', '--no-progress')).toBe('');
  });

  it('a cache not as Fleet left it is made anew: a FIFO for a pack, a configuration or alternates of its own', async () => {
    const { remote } = await createRepo(dir, 'app', { 'README.md': '# app\n' }, { clone: false });
    const url = `file://${remote}`;
    const cache = new ObjectCache(join(dir, 'cache'));
    const cached = cache.dirFor(url);
    let lane = 0;
    const planted: Array<[string, () => void]> = [
      // A FIFO where a pack is: a copy that opened it would wait for a writer for ever.
      ['a FIFO', () => execFileSync('mkfifo', [join(cached, 'objects', 'pack', `pack-${'0'.repeat(40)}.pack`)])],
      ['a configuration', () => writeFileSync(join(cached, 'config'), '[core]\n\tbare = true\n\tfsmonitor = touch /tmp/pwned\n')],
      ['alternates', () => writeFileSync(join(cached, 'objects', 'info', 'alternates'), `${join(dir, 'elsewhere')}\n`)],
    ];
    await cloneWith(cache, url, join(dir, `lane${lane++}`));
    for (const [what, plant] of planted) {
      if (what === 'a FIFO') writeFileSync(join(cached, 'objects', 'pack', `pack-${'0'.repeat(40)}.idx`), 'x');
      mkdirSync(join(cached, 'objects', 'info'), { recursive: true });
      plant();
      expect(await cloneWith(cache, url, join(dir, `lane${lane++}`)), what).toBeNull();
      expect(readFileSync(join(cached, 'config'), 'utf8'), what).not.toContain('fsmonitor');
      expect(git(cached, 'fsck', '--no-progress'), what).toBe('');
    }
  });

  it('folds the packs of many clones into one', async () => {
    const { remote, dir: work } = await createRepo(dir, 'app', { 'README.md': '# app\n' });
    const url = `file://${remote}`;
    const cache = new ObjectCache(join(dir, 'cache'), { maxPacks: 3 });
    let most = 0;
    for (let i = 0; i < 5; i++) {
      git(work, 'commit', '--quiet', '--allow-empty', '-m', `c${i}`);
      git(work, 'push', '--quiet', 'origin', 'HEAD:main');
      await cloneWith(cache, url, join(dir, `lane${i}`));
      most = Math.max(most, packs(cache.dirFor(url)).length);
    }
    expect(most).toBe(3);
    expect(packs(cache.dirFor(url)).length).toBeLessThan(3);
    expect(git(cache.dirFor(url), 'fsck', '--no-progress')).toBe('');
  });
});
