/**
 * Fleet's private temporary folder: one per process (0700, in the OS temp folder), holding what Fleet's own git
 * writes there (the launcher shells' output files, the local forge's scratch repositories).
 *
 * Why one folder for all of it: every isolated directive and check gets this folder hidden under an empty
 * read-only mount (sandbox.ts, workspace.ts). One mount hides every shell's folder, including shells started
 * after the directive was, where a mask per shell folder would miss those and cost a mount each.
 *
 * The folder keeps its path for the whole process and is never removed and made again while Fleet runs: a
 * folder removed on the host takes the masks on it away in every sandbox, and one made again at that path would
 * be visible to directives already running. It goes when Fleet exits; when Fleet is killed outright, the last
 * launcher shell to end removes it (launcher.ts).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

let folder: string | undefined;

/** The folder, made on first use. */
export function privateTmp(): string {
  // Gone only if something outside Fleet removed it: then a new one, under a new name, never the old path again.
  if (folder !== undefined && existsSync(folder)) return folder;
  const made = mkdtempSync(path.join(os.tmpdir(), 'fleet-git-'));
  if (folder === undefined) {
    process.on('exit', () => {
      if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
    });
  }
  folder = made;
  return made;
}
