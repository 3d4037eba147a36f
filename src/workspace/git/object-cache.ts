/**
 * The object cache: one bare repository per remote, in a folder of Fleet's (`_workspace/cache/` beside the fleet
 * file), that a lane's clone borrows objects from, so that a re-run, or a second lane of the same repository,
 * downloads only what changed since. It costs no request to the forge: the cache is filled with the packs the lanes'
 * own clones downloaded, copied in right after each clone, and never fetched on its own.
 *
 * The cache is a hint, never trusted. Whatever runs as Fleet's user can reach it (a directive without isolation, a
 * local fleet's directive beside the same fleet file), so a clone takes nothing from it that git has not checked:
 * 1. `git clone --reference <cache> --no-checkout`: the server sends only what the cache seems to hold (its refs go
 *    as known commits); nothing is read into the working tree yet.
 * 2. The packs that clone downloaded are copied into the cache, and the cache's ref for the base moved to the commit
 *    cloned (ObjectCache.fill).
 * 3. Each pack of the cache is copied into the clone and indexed there by `git index-pack`, which names every object
 *    by the hash of its content: an object planted under another's name is filed under its own, never under the name
 *    it claimed. Then the link to the cache (`objects/info/alternates`) is removed, and only then is the base checked
 *    out, from the clone's own checked objects. An object the cache claimed and did not hold is missing there, and
 *    the clone fails: cloneForLane then discards the cache and clones plainly (operations.ts).
 *
 * So a planted cache costs at most a clone made twice. What it can still do: hold back older history the server then
 * does not send (the base's tree and files are checked at the checkout; commits before it are not walked): a
 * directive's `git log` then fails partway ("Failed to traverse parents"), though what the lane pushes is the same
 * (docs/security.md).
 *
 * In one process the clones of a repository take turns up to step 3 (the second borrows what the first downloaded).
 * Two processes may share the folder (two fleets beside one fleet file): every file goes in under a fresh name and is
 * renamed into place, packs are named by their content, a repack that fails (another process's pack under it) discards
 * the cache, and a clone that finds a pack gone fails into a plain clone.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { removeAside } from '../../util/fs.js';
import { readHead } from './refs.js';
import type { GitRunner } from './run.js';

/** Past this many packs the cache is repacked into one: each clone that downloaded something adds one. */
const MAX_PACKS = 16;

/** What a clone borrows (operations.ts cloneForLane). */
export interface Borrowing {
  /** The cache to clone with `--reference` (and `--no-checkout`), or null: clone plainly (the clone still fills the cache). */
  reference: string | null;
  /**
   * Right after git's clone, before anything reads or runs in it: its packs kept in the cache; when it borrowed, the
   * cache's packs indexed into it and its link to the cache cut. The caller checks out the base after.
   */
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
    // Only the cache's own folder is private: folders above it (`_workspace`) keep the modes they would have.
    mkdirSync(path.dirname(this.root), { recursive: true });
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    // Whole repositories' packs, beside a fleet file often kept in git: never for `git add -A` (whatever folder the run's
    // own workspace is in; `_workspace/.gitignore` is written only where a run claims its folder there).
    try {
      writeFileSync(path.join(this.root, '.gitignore'), '# Written by Fleet: the object cache (docs/cli.md).\n*\n', { flag: 'wx' });
    } catch {
      /* there already */
    }
  }

  dirFor(url: string): string {
    return path.join(this.root, cacheName(url));
  }

  /** Runs `clone` with what the cache of `url` lends, one clone of a repository at a time in this process (until `cloned`). */
  async lend<T>(git: GitRunner, url: string, base: string | undefined, clone: (b: Borrowing) => Promise<T>): Promise<T> {
    const dir = this.dirFor(url);
    const before = this.turns.get(dir) ?? Promise.resolve();
    let done!: () => void;
    const mine = before.then(() => new Promise<void>((resolve) => (done = resolve)));
    this.turns.set(dir, mine);
    await before;
    const release = () => {
      done();
      if (this.turns.get(dir) === mine) this.turns.delete(dir);
    };
    try {
      // Only a folder of Fleet's own is lent from or filled: not a link, not another user's, not writable by others.
      const usable = this.usable();
      // A cache that is not as Fleet leaves it is made anew rather than lent from: a pack whose index and header
      // disagree (a crash, a full disk), or a configuration or alternates file Fleet did not write (git reads them
      // in the commands it runs there, some with Fleet's own settings set aside).
      if (usable && existsSync(dir) && !asFleetLeftIt(dir)) await discard(dir);
      const reference = usable && holdsCommits(dir) ? dir : null;
      return await clone({
        reference,
        cloned: async (gitDir) => {
          if (usable) await this.fill(git, dir, base, gitDir).catch(() => undefined);
          // A clone made with the reference (not the plain one that may follow it) links to the cache.
          if (existsSync(path.join(gitDir, 'objects', 'info', 'alternates'))) await borrowFrom(git, dir, gitDir);
          // The next clone of the repository may start. Not when borrowing failed: the plain clone that follows fills
          // the cache first (the turn ends with lend), else every lane waiting would download the whole repository.
          release();
        },
        discard: () => discard(dir),
      });
    } finally {
      release();
    }
  }

  /** Whether the cache's folder is a real folder of this user's that no one else may write. */
  private usable(): boolean {
    try {
      this.ensureRoot();
      const st = lstatSync(this.root);
      return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o022) === 0;
    } catch {
      return false;
    }
  }

  /** The clone's packs copied into the cache (made if need be), and the cache's ref for `base` moved to the commit cloned. */
  private async fill(git: GitRunner, dir: string, base: string | undefined, gitDir: string): Promise<void> {
    const own = packsOf(gitDir);
    if (!own.length) return;
    const head = readHead(gitDir)?.commit ?? (await git.run(['rev-parse', '--verify', '--quiet', 'HEAD'], { cwd: gitDir, allowFail: true })).stdout.trim();
    if (!/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(head)) return;
    await this.create(git, dir);
    const packDir = path.join(dir, 'objects', 'pack');
    for (const name of own) {
      if (existsSync(path.join(packDir, `${name}.idx`))) continue;
      // The pack before its index: git finds a pack by its index.
      for (const ext of ['.pack', '.idx']) await copyInto(path.join(gitDir, 'objects', 'pack', name + ext), path.join(packDir, name + ext));
    }
    // The ref last: a clone borrows from the cache only once a ref says what it holds.
    writeFresh(dir, path.join(dir, ...cacheRef(base).split('/')), `${head}\n`);
    if (packsOf(dir).length > (this.opts.maxPacks ?? MAX_PACKS)) {
      const r = await git.run(['--git-dir', dir, 'repack', '-a', '-d', '-q'], { cwd: dir, allowFail: true });
      // A repack that fails (a ref to a commit another process's repack dropped) would fail every time: start anew.
      if (r.code !== 0) await discard(dir);
    }
  }

  /** A bare repository at `dir`, made under a fresh name and renamed into place (another process may be making it too). */
  private async create(git: GitRunner, dir: string): Promise<void> {
    if (existsSync(path.join(dir, 'objects'))) return;
    const fresh = `${dir}.${randomBytes(4).toString('hex')}.new`;
    try {
      await git.run(['init', '--quiet', '--bare', '--template=', fresh], { cwd: this.root });
      writeFileSync(path.join(fresh, 'config'), CACHE_CONFIG);
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
 * The clone's own checked copy of every object it borrowed, and its link to the cache cut: each of the cache's packs
 * copied in and indexed by `git index-pack` (which hashes every object), then `objects/info/alternates` removed.
 * Throws when a pack cannot be copied or indexed (gone under a repack, planted, broken): the clone is then made again
 * without the cache.
 */
async function borrowFrom(git: GitRunner, cache: string, gitDir: string): Promise<void> {
  const packDir = path.join(gitDir, 'objects', 'pack');
  // The clone's own packs (what it downloaded, which fill() just copied to the cache) it has already.
  for (const name of packsOf(cache).filter((n) => !existsSync(path.join(packDir, `${n}.idx`)))) {
    const tmp = path.join(packDir, `tmp_borrowed_${randomBytes(6).toString('hex')}.pack`);
    try {
      await copyInto(path.join(cache, 'objects', 'pack', `${name}.pack`), tmp);
      const indexed = await git.run(['index-pack', tmp], { cwd: gitDir });
      const hash = /([0-9a-f]{40,64})\s*$/.exec(indexed.stdout)?.[1];
      if (!hash) throw new Error(`git index-pack named no pack for ${name}`);
      // Named by what index-pack found in it, whatever the cache called it.
      if (!existsSync(path.join(packDir, `pack-${hash}.idx`))) {
        await rename(tmp, path.join(packDir, `pack-${hash}.pack`));
        await rename(`${tmp.slice(0, -'.pack'.length)}.idx`, path.join(packDir, `pack-${hash}.idx`));
      }
    } finally {
      // And the reverse index git 2.41 and later write beside the index (git does without it).
      for (const ext of ['.pack', '.idx', '.rev']) await rm(`${tmp.slice(0, -'.pack'.length)}${ext}`, { force: true });
    }
  }
  rmSync(path.join(gitDir, 'objects', 'info', 'alternates'), { force: true });
}

/** Removes a cache (util/fs removeAside); one that cannot be moved is left as it is. */
async function discard(dir: string): Promise<void> {
  await removeAside(dir).catch(() => undefined);
}

/** The names (`pack-<hash>`) of the packs in a repository's object store that have their index. */
function packsOf(gitDir: string): string[] {
  try {
    const files = readdirSync(path.join(gitDir, 'objects', 'pack'));
    return files.filter((f) => /^pack-[0-9a-f]{40,64}\.idx$/.test(f) && files.includes(`${f.slice(0, -4)}.pack`)).map((f) => f.slice(0, -4));
  } catch {
    return [];
  }
}

/**
 * Copies a regular file to `to` under a fresh name renamed into place: the source opened without following a link
 * and without blocking (a FIFO planted there would wait for a writer for ever), and refused unless a regular file.
 */
async function copyInto(from: string, to: string): Promise<void> {
  const src = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  const tmp = path.join(path.dirname(to), `tmp_copy_${randomBytes(6).toString('hex')}`);
  try {
    if (!(await src.stat()).isFile()) throw new Error(`${from} is not a regular file`);
    const dst = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o444);
    await pipeline(src.createReadStream({ autoClose: false }), dst.createWriteStream());
    await rename(tmp, to);
  } finally {
    await src.close();
    await rm(tmp, { force: true });
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

/** The whole configuration of a cache: what `git init --bare` writes, and nothing a command there could run. */
const CACHE_CONFIG = '[core]\n\trepositoryformatversion = 0\n\tbare = true\n';

/**
 * Whether a cache is as Fleet leaves it: a real folder, its configuration Fleet's, no alternates of its own, every
 * pack whole on its face. Each file opened without following a link or blocking.
 */
function asFleetLeftIt(dir: string): boolean {
  try {
    if (!lstatSync(dir).isDirectory()) return false;
    const config = readStart(path.join(dir, 'config'), 0);
    if (config.size !== CACHE_CONFIG.length || readStart(path.join(dir, 'config'), CACHE_CONFIG.length).bytes.toString('latin1') !== CACHE_CONFIG) return false;
    try {
      lstatSync(path.join(dir, 'objects', 'info', 'alternates'));
      return false;
    } catch {
      /* none: as Fleet leaves it */
    }
    return packsOf(dir).every((name) => packLooksWhole(dir, name));
  } catch {
    return false;
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

/**
 * Whether a pack and its index agree on their face: the index's magic and version, the object count its fan-out
 * ends with, a size that holds that many entries, and a pack header of the same count. Reads 1 KiB of each file.
 * Not a check of the content (index-pack makes that when a clone borrows the pack): a quick look for a cache a crash
 * or a full disk left broken.
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

/** The first `n` bytes of a regular file (a RangeError when it is shorter) and its size. */
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
