/**
 * The object cache: one bare repository per remote, in a folder of Fleet's (`_workspace/cache/` beside the fleet
 * file), that a lane's clone borrows objects from, so that a re-run, or a second lane of the same repository,
 * downloads only what changed since. It costs no request to the forge: the cache is filled with the packs the lanes'
 * own clones downloaded, copied in right after each clone, and never fetched on its own.
 *
 * How one clone goes (ObjectCache.lend, operations.ts cloneForLane):
 * 1. `git clone --reference <cache>`: the server sends only what the cache lacks (its refs go as known commits).
 * 2. Before anything else reads or runs in the clone, the packs it downloaded are copied into the cache, and the
 *    cache's ref for the base moved to the commit cloned.
 * 3. The cache's packs are copied into the clone and its `objects/info/alternates` removed (what `--dissociate` does,
 *    by copying files instead of repacking them); `git repack -a -d` where a copy fails.
 *
 * Why it is safe to share across runs, when an earlier run's working copies would not be:
 * - Only Fleet writes it, and only with packs a clone had just downloaded and git had checked object by object
 *   (index-pack hashes every object it stores), before any directive ran in that clone. Never a working copy a
 *   directive had run in: it could have planted objects that a later lane's base would read and its push leave out,
 *   unseen by the fence.
 * - Copies, never links: no alternates file stays, no object file has a second name, so nothing a directive does to
 *   its clone (a rewrite in place, a chown as root does to the lane's user) reaches the cache.
 * - Isolated directives and checks do not see the folder at all (workspace.ts hides it, as it hides the workspace),
 *   nor other lanes' fresh clones. Without isolation a directive can write it, as it can every other lane's working
 *   copy: docs/security.md says what then still holds.
 * - It is an optimisation only: a cache that cannot be made, read or filled leaves the lane to a plain clone.
 *
 * In one process the clones of a repository take turns (the second borrows what the first downloaded). Two processes
 * may share the folder (two fleets beside one fleet file): every file goes in under a fresh name and is renamed into
 * place, packs are named by their content, and a pack another process's repack removed under a copy sends the clone
 * to `git repack` instead.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { copyFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { readHead } from './refs.js';
import type { GitRunner } from './run.js';

/** Past this many packs the cache is repacked into one: each clone that downloaded something adds one. */
const MAX_PACKS = 16;

/** What a clone borrows (operations.ts cloneForLane). */
export interface Borrowing {
  /** The cache to clone with `--reference`, or null: clone plainly (the clone still fills the cache). */
  reference: string | null;
  /** Right after git's clone, before anything reads or runs in it: its packs kept in the cache, its link to the cache cut. */
  cloned(gitDir: string): Promise<void>;
  /** A clone with `reference` failed: the cache is removed (the plain clone that follows makes it anew). */
  discard(): Promise<void>;
}

/** The folder name of `url`'s cache: readable, and a hash so two remotes never share one (credentials never kept). */
export function cacheName(url: string): string {
  const bare = url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').replace(/^[^@/]*@/, '');
  const slug = bare
    .replace(/\.git$/i, '')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._-]+/, '')
    .slice(-60);
  return `${slug || 'repo'}-${createHash('sha256').update(url).digest('hex').slice(0, 12)}.git`;
}

/** The ref the cache keeps `base` (a branch, a tag, or the remote's HEAD when none is named) under: it keeps the objects, and a clone sends it as known. */
export function cacheRef(base: string | undefined): string {
  return `refs/fleet/${createHash('sha256')
    .update(base ?? 'HEAD')
    .digest('hex')
    .slice(0, 16)}`;
}

export class ObjectCache {
  /** Per cache, the clone going on in this process: the next waits for it, and borrows what it downloaded. */
  private readonly turns = new Map<string, Promise<void>>();

  /** `maxPacks`: past this many packs the cache is repacked into one (MAX_PACKS). */
  constructor(
    readonly root: string,
    private readonly opts: { maxPacks?: number } = {},
  ) {}

  /** The folder made (private to Fleet's user) before any command runs, so that a sandbox hides it from the first. */
  ensureRoot(): void {
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
  }

  dirFor(url: string): string {
    return path.join(this.root, cacheName(url));
  }

  /** Runs `clone` with what the cache of `url` lends, one clone of a repository at a time in this process. */
  async lend<T>(git: GitRunner, url: string, base: string | undefined, clone: (b: Borrowing) => Promise<T>): Promise<T> {
    const dir = this.dirFor(url);
    const before = this.turns.get(dir) ?? Promise.resolve();
    let done!: () => void;
    const mine = before.then(() => new Promise<void>((resolve) => (done = resolve)));
    this.turns.set(dir, mine);
    await before;
    try {
      // A cache with a pack that is not whole (a disk's fault, a copy cut short by a crash) is made anew: git would
      // skip the pack, and the clone would copy it for nothing.
      if (!packsOf(dir).every((name) => packLooksWhole(dir, name))) await discard(dir);
      const reference = holdsCommits(dir) ? dir : null;
      return await clone({ reference, cloned: (gitDir) => this.cloned(git, dir, base, gitDir), discard: () => discard(dir) });
    } finally {
      done();
      if (this.turns.get(dir) === mine) this.turns.delete(dir);
    }
  }

  private async cloned(git: GitRunner, dir: string, base: string | undefined, gitDir: string): Promise<void> {
    // What the clone downloaded goes to the cache first; a failure there costs the next run its borrowing, not this lane.
    await this.keep(git, dir, base, gitDir).catch(() => undefined);
    if (existsSync(path.join(gitDir, 'objects', 'info', 'alternates'))) await dissociate(git, gitDir, dir);
  }

  /** The clone's packs copied into the cache (made if need be), and the cache's ref for `base` moved to the commit cloned. */
  private async keep(git: GitRunner, dir: string, base: string | undefined, gitDir: string): Promise<void> {
    const own = packsOf(gitDir);
    if (!own.length) return;
    const head = readHead(gitDir)?.commit ?? (await git.run(['rev-parse', '--verify', '--quiet', 'HEAD'], { cwd: gitDir, allowFail: true })).stdout.trim();
    if (!/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(head)) return;
    this.ensureRoot();
    await this.create(git, dir);
    await copyPacks(gitDir, dir, own);
    // The ref last: a clone borrows from the cache only once a ref says what it holds.
    writeFresh(dir, path.join(dir, ...cacheRef(base).split('/')), `${head}\n`);
    if (packsOf(dir).length > (this.opts.maxPacks ?? MAX_PACKS)) await git.run(['--git-dir', dir, 'repack', '-a', '-d', '-q'], { cwd: dir, allowFail: true });
  }

  /** A bare repository at `dir`, made under a fresh name and renamed into place (another process may be making it too). */
  private async create(git: GitRunner, dir: string): Promise<void> {
    if (existsSync(path.join(dir, 'objects'))) return;
    const fresh = `${dir}.${randomBytes(4).toString('hex')}.new`;
    try {
      await git.run(['init', '--quiet', '--bare', '--template=', fresh], { cwd: this.root });
      renameSync(fresh, dir);
    } catch (err) {
      // Another process put its repository there first: that one serves.
      if (!['EEXIST', 'ENOTEMPTY'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  }
}

/**
 * The clone's own copy of every object it borrowed, its alternates file removed: the cache's packs copied in (a
 * reflink where the file system has them), or where a copy fails (a pack another process's repack removed), `git
 * repack -a -d`, which reads through the alternates whatever they hold now.
 */
async function dissociate(git: GitRunner, gitDir: string, cache: string): Promise<void> {
  try {
    await copyPacks(cache, gitDir, packsOf(cache));
  } catch {
    await git.run(['repack', '-a', '-d', '-q'], { cwd: gitDir });
  }
  rmSync(path.join(gitDir, 'objects', 'info', 'alternates'), { force: true });
}

/** Removes a cache: renamed away first, so that no process finds it half removed. */
async function discard(dir: string): Promise<void> {
  const away = `${dir}.${randomBytes(4).toString('hex')}.old`;
  try {
    renameSync(dir, away);
  } catch {
    return;
  }
  await rm(away, { recursive: true, force: true });
}

/** The names (`pack-<hash>`) of the packs in a repository's object store that have their index. */
function packsOf(gitDir: string): string[] {
  try {
    const files = readdirSync(path.join(gitDir, 'objects', 'pack'));
    return files.filter((f) => f.endsWith('.idx') && files.includes(`${f.slice(0, -4)}.pack`)).map((f) => f.slice(0, -4));
  } catch {
    return [];
  }
}

/**
 * Whether a pack and its index agree on their face: the index's magic and version, the object count its fan-out
 * ends with, a size that holds that many entries, and a pack header of the same count. Reads 1 KiB of each file; it
 * does not hash them (git checks each object as it reads it).
 */
export function packLooksWhole(gitDir: string, name: string): boolean {
  const base = path.join(gitDir, 'objects', 'pack', name);
  try {
    const idx = readStart(`${base}.idx`, 8 + 256 * 4);
    if (idx.bytes.readUInt32BE(0) !== 0xff744f63 || idx.bytes.readUInt32BE(4) !== 2) return false;
    const count = idx.bytes.readUInt32BE(8 + 255 * 4);
    // Header, fan-out, per object a name (20 or 32 bytes), a CRC and an offset, then two checksums.
    if (idx.size < 8 + 1024 + count * 28 + 40) return false;
    const pack = readStart(`${base}.pack`, 12);
    if (pack.bytes.toString('latin1', 0, 4) !== 'PACK' || ![2, 3].includes(pack.bytes.readUInt32BE(4))) return false;
    return pack.bytes.readUInt32BE(8) === count && pack.size >= 12 + 20;
  } catch {
    return false;
  }
}

/** The first `n` bytes of a file (a RangeError when it is shorter) and its size. */
function readStart(file: string, n: number): { bytes: Buffer; size: number } {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size < n) throw new RangeError(`${file}: too short`);
    const bytes = Buffer.alloc(n);
    if (readSync(fd, bytes, 0, n, 0) !== n) throw new RangeError(`${file}: too short`);
    return { bytes, size: st.size };
  } finally {
    closeSync(fd);
  }
}

/** Copies packs `from` one object store `to` another, each pack before its index (git finds a pack by its index), under fresh names renamed into place; a pack already there is left. */
async function copyPacks(from: string, to: string, names: readonly string[]): Promise<void> {
  const src = path.join(from, 'objects', 'pack');
  const dst = path.join(to, 'objects', 'pack');
  mkdirSync(dst, { recursive: true });
  for (const name of names) {
    if (existsSync(path.join(dst, `${name}.idx`))) continue;
    for (const ext of ['.pack', '.idx']) {
      const tmp = path.join(dst, `tmp_${randomBytes(6).toString('hex')}${ext}`);
      try {
        await copyFile(path.join(src, name + ext), tmp, constants.COPYFILE_FICLONE);
        renameSync(tmp, path.join(dst, name + ext));
      } finally {
        await rm(tmp, { force: true });
      }
    }
  }
}

/** Writes a file of the repository `dir` under a fresh name outside its refs (git would read one there as a ref) and renames it into place. */
function writeFresh(dir: string, file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = path.join(dir, `fleet-${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeFileSync(tmp, text, { flag: 'wx' });
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** True when the cache has a ref to lend from (packs without a ref say nothing the server could use). */
function holdsCommits(dir: string): boolean {
  try {
    return readdirSync(path.join(dir, 'refs', 'fleet')).length > 0;
  } catch {
    return false;
  }
}
