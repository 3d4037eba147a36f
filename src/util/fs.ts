/** File writes that are never half-done: write a sibling temp file, then rename over the target. */
import { mkdir, rename, writeFile, rm, appendFile } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';

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
    this.chain = this.chain.catch(() => undefined).then(async () => {
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
