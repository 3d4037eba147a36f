/**
 * Fleet's private temporary folder: one per process (0700, in the OS temp folder), holding what Fleet's own git
 * writes there (the launcher shells' output files, the local forge's scratch repositories) and the sandbox's mount
 * tables.
 *
 * Why one folder for all of it: every isolated directive and check gets this folder hidden under an empty
 * read-only mount (sandbox.ts, workspace.ts). One mount hides every shell's folder, including shells started
 * after the directive was, where a mask per shell folder would miss those and cost a mount each.
 *
 * The folder keeps its path for the whole process and is never removed and made again while Fleet runs: a
 * folder removed on the host takes the masks on it away in every sandbox, and one made again at that path would
 * be visible to directives already running. It goes when Fleet ends, however it ends: a small shell of its own
 * (in a process group of its own, so a terminal's Ctrl-C does not end it) waits for the end of its input, which
 * comes when Fleet's process is gone, also when it was killed outright or never ran its exit handlers.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

let folder: string | undefined;

/** The folder, made on first use. */
export function privateTmp(): string {
  // Gone only if something outside Fleet removed it: then a new one, under a new name, never the old path again.
  if (folder !== undefined && existsSync(folder)) return folder;
  const made = mkdtempSync(path.join(os.tmpdir(), 'fleet-git-'));
  removeWhenGone(made);
  folder = made;
  return made;
}

function removeWhenGone(dir: string): void {
  // Never throws: a later exit listener (processes.ts) ends the git still running, credentials in its environment.
  process.on('exit', () => {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      /* something still writing in it: the janitor below removes it once Fleet is gone */
    }
  });
  if (process.platform === 'win32') return;
  try {
    const janitor = spawn('/bin/sh', ['-c', 'read -r _; rm -rf -- "$1"', 'fleet-tmp-janitor', dir], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    janitor.on('error', () => {
      /* no /bin/sh: the exit handler above is all there is */
    });
    janitor.stdin!.on('error', () => {});
    // It must not keep Fleet alive.
    janitor.unref();
    (janitor.stdin as unknown as { unref(): void }).unref();
  } catch {
    /* as above */
  }
}
