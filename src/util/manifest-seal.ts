/**
 * Seals on the manifests the CLI writes, so that `--since` and `--resume` take a manifest's word only where Fleet
 * wrote it. A manifest lives in a workspace: hidden from its own fleet's directives, but not from another fleet's,
 * which may rewrite it (a failed lane made `unchanged`, a lane that never ran made `completed`). The seal is an HMAC
 * of the manifest's text, in `fleet-status.json.seal` beside it, under a key of the user's own that no isolated
 * command sees (the sandbox hides its folder: workspace.ts). A manifest whose seal is missing or wrong is not
 * believed: every lane runs.
 *
 * Process-wide, as the private temporary folder is: the CLI turns sealing on once (useManifestSeal), and every
 * writer of a manifest seals through writeManifest. The action needs none: it keeps its sweep state sealed with the
 * fleet's credential (actions/sweep.ts), and its manifests never come back as input.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readUntrustedText, writeFileAtomic, writeFileAtomicSync } from './fs.js';

export const SEAL_SUFFIX = '.seal';
const KEY_FILE = 'manifest-seal.key';
const KEY_BYTES = 32;

let key: Buffer | undefined;
let folder: string | undefined;

/** Where the user's seal key lives: `$XDG_STATE_HOME/fleet`, else `~/.local/state/fleet`. */
export function sealFolder(env: Record<string, string | undefined>): string | undefined {
  const state = env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : undefined;
  const home = env.HOME && path.isAbsolute(env.HOME) ? env.HOME : os.homedir() || undefined;
  if (state) return path.join(state, 'fleet');
  return home ? path.join(home, '.local', 'state', 'fleet') : undefined;
}

/**
 * Turns sealing on for this process: reads the user's key, or makes it. Returns the key's folder (for the sandbox to
 * hide), or why there is no seal (the manifests are then written unsealed, and no later run believes them).
 */
export function useManifestSeal(env: Record<string, string | undefined>): { folder: string } | { problem: string } {
  const dir = sealFolder(env);
  if (!dir) return { problem: 'no HOME to keep the seal key in' };
  if (key && folder === dir && existsSync(path.join(dir, KEY_FILE))) return { folder };
  try {
    key = readOrMakeKey(dir);
    folder = dir;
    return { folder: dir };
  } catch (err) {
    return { problem: `the seal key in ${dir} cannot be used: ${(err as Error).message}` };
  }
}

/**
 * The folder of the seal key in use, for the sandbox to hide; undefined when sealing is off. Made again if something
 * removed it meanwhile: a mask needs its folder, and a command that found none could make it and plant a key there
 * for the next run.
 */
export function manifestSealFolder(): string | undefined {
  if (!folder) return undefined;
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    return folder;
  } catch {
    return undefined; // nowhere to make it (its HOME gone too): nothing there to hide
  }
}

/** For tests: sealing off, as in a process that never turned it on. */
export function stopManifestSeal(): void {
  key = undefined;
  folder = undefined;
}

function readOrMakeKey(dir: string): Buffer {
  // Folders made on the way are this user's: as root under `sudo -E` (another user's HOME) they would be root's, and
  // that user's own runs, and other programs, could no longer write them.
  const uid = process.getuid?.();
  let existing = dir;
  while (!existsSync(existing) && path.dirname(existing) !== existing) existing = path.dirname(existing);
  if (existing !== dir && uid === 0 && statSync(existing).uid !== 0)
    throw new Error(`${existing} belongs to uid ${statSync(existing).uid}, not to this user (${uid}): run Fleet as that user, or set XDG_STATE_HOME`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The folder must be the user's alone: one others may write could have its key swapped between two runs.
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error('it is not a folder');
  if (uid !== undefined && st.uid !== uid) throw new Error(`it belongs to uid ${st.uid}, not to this user (${uid})`);
  if (st.mode & 0o022) throw new Error('others may write it (chmod go-w)');
  const file = path.join(dir, KEY_FILE);
  const read = readKey(file);
  if (read) return read;
  // Made under a fresh name and linked into place: two Fleets starting at once agree on the first key written.
  const tmp = path.join(dir, `.${KEY_FILE}.${process.pid}.${randomBytes(4).toString('hex')}`);
  writeFileSync(tmp, randomBytes(KEY_BYTES), { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(tmp, { force: true });
  }
  const made = readKey(file);
  if (!made) throw new Error(`${KEY_FILE} could not be made`);
  return made;
}

/** The key, or undefined when there is no file; a file that is not a key Fleet made throws (it is not replaced). */
function readKey(file: string): Buffer | undefined {
  let fd: number;
  try {
    // Neither a link nor a FIFO: a key planted as either would be read through, or would block Fleet.
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const st = fstatSync(fd);
    const uid = process.getuid?.();
    if (!st.isFile() || st.size !== KEY_BYTES || (uid !== undefined && st.uid !== uid) || st.mode & 0o077)
      throw new Error(`${file} is not a key Fleet made (a file of ${KEY_BYTES} bytes, the user's own, mode 0600): remove it`);
    const buf = Buffer.alloc(KEY_BYTES);
    if (readSync(fd, buf, 0, KEY_BYTES, 0) !== KEY_BYTES) throw new Error(`${file} could not be read whole`);
    return buf;
  } finally {
    closeSync(fd);
  }
}

/**
 * The seal of `text` as the manifest at `file`: its real path is part of it, so a sealed manifest copied from another
 * workspace (or an older one of the same run put back under another name) does not pass for the one there.
 */
function mac(k: Buffer, file: string, text: string): string {
  let at = path.resolve(file);
  try {
    at = path.join(realpathSync(path.dirname(at)), path.basename(at));
  } catch {
    /* no folder yet: the path as given */
  }
  return createHmac('sha256', k).update('fleet-manifest-seal/2\0').update(at).update('\0').update(text).digest('hex');
}

/**
 * Writes a manifest and its seal (or, with sealing off or `seal: false`, removes a seal left by an earlier write:
 * a manifest Fleet read unsealed and wrote back is no more believed than before).
 */
export async function writeManifest(file: string, manifest: unknown, opts: { seal?: boolean } = {}): Promise<void> {
  const text = `${JSON.stringify(manifest, null, 2)}\n`;
  // The seal goes first, so a crash between the two writes leaves a mismatch (not believed), never an old seal that
  // fits the new text.
  if (key && opts.seal !== false) await writeFileAtomic(`${file}${SEAL_SUFFIX}`, `${mac(key, file, text)}\n`);
  else await rmSeal(file);
  await writeFileAtomic(file, text);
}

/** writeManifest for an exit that cannot wait (a second interrupt). */
export function writeManifestSync(file: string, manifest: unknown): void {
  const text = `${JSON.stringify(manifest, null, 2)}\n`;
  const seal = `${file}${SEAL_SUFFIX}`;
  if (key) writeFileAtomicSync(seal, `${mac(key, file, text)}\n`);
  else rmSync(seal, { force: true });
  writeFileAtomicSync(file, text);
}

async function rmSeal(file: string): Promise<void> {
  await rm(`${file}${SEAL_SUFFIX}`, { force: true });
}

/**
 * Why a manifest's text is not to be believed (null: its seal is this user's Fleet's). The text is the one the
 * caller parses, so what was checked is what is used.
 */
export async function sealProblem(file: string, text: string): Promise<string | null> {
  if (!key) return 'this Fleet has no seal key to check it with (no HOME, or the key could not be read)';
  // Read without following a link or blocking on a FIFO: '' for anything that is not a small regular file.
  const seal = (await readUntrustedText(`${file}${SEAL_SUFFIX}`, 4096)).trim();
  if (!seal)
    return `it has no seal (${path.basename(file)}${SEAL_SUFFIX}): it was not written by this user's Fleet (another user or machine, or a Fleet before the seals)`;
  const want = Buffer.from(mac(key, file, text), 'hex');
  const got = Buffer.from(/^[0-9a-f]{64}$/.test(seal) ? seal : '', 'hex');
  if (got.length !== want.length || !timingSafeEqual(got, want))
    return 'its seal does not match: it was changed after Fleet wrote it, or written by another user or machine';
  return null;
}
