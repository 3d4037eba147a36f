/** File writes that are never half-done, and reads of users' files that are bounded. */
import { constants, renameSync, writeFileSync } from 'node:fs';
import { mkdir, open, rename, writeFile, rm, appendFile, type FileHandle } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { formatBytes } from '../core/limits.js';

export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** writeFileAtomic for an exit that cannot wait (a second interrupt). */
export function writeFileAtomicSync(path: string, data: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/**
 * Removes a folder others may be reading (a cache another process borrows from): renamed aside first, so that no
 * one finds it half removed, then removed; what cannot be removed after the rename is left aside. Throws only when
 * the rename fails (the folder is still where it was).
 */
export async function removeAside(dir: string): Promise<void> {
  const aside = `${dir}.${randomBytes(4).toString('hex')}.removed`;
  await rename(dir, aside);
  await rm(aside, { recursive: true, force: true }).catch(() => undefined);
}

export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * An append-only JSON-lines log. Appends are serialised through one promise
 * chain so lines from concurrent lanes never interleave; lines that arrive
 * while a write is under way go out together in the next one (a fleet logs
 * every lane transition: one file append each would be most of the log's cost).
 */
export class JsonLines {
  private chain: Promise<void> = Promise.resolve();
  private pending: string[] = [];
  private folderMade = false;
  constructor(readonly path: string) {}

  append(value: unknown): Promise<void> {
    this.pending.push(`${JSON.stringify(value)}\n`);
    if (this.pending.length > 1) return this.chain; // a write is already queued: this line goes with it
    // A failed append must not poison every later one: each starts from a settled chain.
    this.chain = this.chain
      .catch(() => undefined)
      .then(async () => {
        const lines = this.pending.join('');
        this.pending = [];
        if (!this.folderMade) {
          await mkdir(dirname(this.path), { recursive: true });
          this.folderMade = true;
        }
        await appendFile(this.path, lines);
      });
    return this.chain;
  }

  flush(): Promise<void> {
    return this.chain;
  }
}

export type TextRead = { ok: true; text: string } | { ok: false; message: string };

/**
 * Reads a user's text file, refusing one over `maxBytes` before reading it and
 * anything that is not a regular file (a FIFO or a device would never end; it
 * is opened non-blocking so a FIFO without a writer cannot hang the open). A
 * leading UTF-8 byte order mark, as Windows editors write, is dropped.
 * Messages are sentences to follow "<path>: "; `what` names the kind of file in them ("a fleet file").
 */
export async function readTextFile(path: string, maxBytes: number, what: string): Promise<TextRead> {
  let fh: FileHandle;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, message: code === 'ENOENT' ? 'no such file: check the path' : `cannot read it (${code ?? (err as Error).message})` };
  }
  try {
    const st = await fh.stat();
    if (st.isDirectory()) return { ok: false, message: 'it is a folder, not a file' };
    if (!st.isFile()) return { ok: false, message: 'it is not a regular file (a pipe or a device?): give the path of a file' };
    const tooLarge = (size: string) => ({ ok: false as const, message: `it is ${size}, over Fleet's limit of ${formatBytes(maxBytes)} for ${what}` });
    if (st.size > maxBytes) return tooLarge(formatBytes(st.size));
    // The file may grow between stat and read: read one byte past the limit to know.
    const buf = Buffer.alloc(maxBytes + 1);
    let got = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
      if (got > maxBytes) return tooLarge(`more than ${formatBytes(maxBytes)}`);
    }
    const text = buf.subarray(0, got).toString('utf8');
    return { ok: true, text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, message: `cannot read it (${code ?? (err as Error).message})` };
  } finally {
    await fh.close();
  }
}

/**
 * Reads a file a directive or an agent could have written (an answer, a discoveries file, a log): never through a
 * link (it could name a file of Fleet's), only a regular file (a FIFO would never end), at most `maxBytes` — the
 * first ones, or with `tail` the last. Anything else reads as empty: such a file says nothing Fleet should keep.
 */
export async function readUntrustedText(path: string, maxBytes: number, opts: { tail?: boolean } = {}): Promise<string> {
  let fh: FileHandle;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return '';
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return '';
    const from = opts.tail ? Math.max(0, st.size - maxBytes) : 0;
    const buf = Buffer.alloc(Math.min(maxBytes, st.size));
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    return buf.subarray(0, bytesRead).toString('utf8');
  } catch {
    return '';
  } finally {
    await fh.close();
  }
}

/** JSON from a file something untrusted may have written (see readUntrustedText): undefined when it is not JSON. */
export async function readUntrustedJson(path: string, maxBytes: number): Promise<unknown> {
  const text = await readUntrustedText(path, maxBytes);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
