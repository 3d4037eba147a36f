/**
 * An artifact store in a folder: what the local runner and the tests use in
 * place of a run's artifacts. Same contract as the Actions store: unique
 * names, latest wins, digests verified on download.
 */
import { createHash } from 'node:crypto';
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import type { ArtifactStore, StoredArtifact } from '../ports.js';

async function digestOf(dir: string): Promise<string> {
  const hash = createHash('sha256');
  const walk = async (d: string): Promise<void> => {
    for (const entry of (await readdir(d, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) await walk(p);
      else {
        hash
          .update(relative(dir, p))
          .update('\0')
          .update(await readFile(p))
          .update('\0');
      }
    }
  };
  await walk(dir);
  return hash.digest('hex');
}

export class FolderArtifactStore implements ArtifactStore {
  private nextId = 1;
  constructor(readonly root: string) {}

  async upload(name: string, files: string[], rootDir: string): Promise<StoredArtifact> {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`artifact name "${name}" has characters an artifact name cannot have`);
    const dest = join(this.root, name);
    await rm(dest, { recursive: true, force: true });
    for (const f of files) {
      const rel = relative(resolve(rootDir), resolve(f));
      if (rel.startsWith('..')) throw new Error(`${f} is outside the artifact root ${rootDir}`);
      await mkdir(join(dest, rel, '..'), { recursive: true });
      await cp(f, join(dest, rel));
    }
    await mkdir(dest, { recursive: true });
    const id = this.nextId++;
    const digest = await digestOf(dest);
    await writeFile(join(this.root, `.${name}.meta`), JSON.stringify({ id, digest }));
    return { name, id, digest };
  }

  async list(prefix: string): Promise<StoredArtifact[]> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch {
      return [];
    }
    const out: StoredArtifact[] = [];
    for (const name of names.sort()) {
      if (name.startsWith('.') || !name.startsWith(prefix)) continue;
      if (!(await stat(join(this.root, name))).isDirectory()) continue;
      const meta = JSON.parse(await readFile(join(this.root, `.${name}.meta`), 'utf8').catch(() => '{}')) as { id?: number; digest?: string };
      out.push({ name, id: meta.id ?? 0, digest: meta.digest });
    }
    return out;
  }

  async download(artifact: StoredArtifact, dir: string): Promise<void> {
    const src = join(this.root, artifact.name);
    if (artifact.digest && (await digestOf(src)) !== artifact.digest) {
      throw new Error(`artifact ${artifact.name} does not match its digest: it changed after upload`);
    }
    await mkdir(dir, { recursive: true });
    await cp(src, dir, { recursive: true });
  }
}
