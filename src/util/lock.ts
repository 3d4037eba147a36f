/**
 * One `fleet run` per workspace. Two runs in one folder would clear each
 * other's results, clone into each other's working copies and write a
 * manifest that contradicts the forge. The lock is a file created atomically
 * (O_EXCL) holding the holder's pid, the start time of that process (so a pid
 * the system reused for another process does not keep a dead run's lock
 * alive) and its host.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import { link, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const LOCK_FILE = '.fleet.lock';

export interface LockHolder {
  pid: number;
  /** The process's start time as the kernel counts it (Linux: clock ticks since boot), or null where unknown. */
  process_start: string | null;
  host: string;
  /** When the lock was taken (ISO). */
  since: string;
  fleet_id: string;
}

export type LockResult = { ok: true; release(): Promise<void>; note?: string } | { ok: false; holder: LockHolder | null; message: string };

/** The start time of a process (field 22 of /proc/<pid>/stat), or null off Linux or when it is gone. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Is the process that wrote `h` still running (and still that process)? Unknowable for another host: then yes. */
export function holderAlive(h: LockHolder): boolean {
  if (h.host !== hostname()) return true;
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  if (h.process_start === null) return true;
  const now = processStart(h.pid);
  return now === null ? process.platform !== 'linux' : now === h.process_start;
}

function parseHolder(text: string): LockHolder | null {
  try {
    const j = JSON.parse(text) as Partial<LockHolder>;
    if (typeof j.pid !== 'number' || !Number.isInteger(j.pid) || j.pid < 1 || typeof j.host !== 'string') return null;
    return {
      pid: j.pid,
      process_start: typeof j.process_start === 'string' ? j.process_start : null,
      host: j.host,
      since: String(j.since ?? ''),
      fleet_id: String(j.fleet_id ?? ''),
    };
  } catch {
    return null;
  }
}

function describeHolder(h: LockHolder): string {
  return `pid ${h.pid} on ${h.host}${h.since ? `, since ${h.since}` : ''}${h.fleet_id ? `, fleet ${h.fleet_id}` : ''}`;
}

/**
 * Takes the workspace's lock for this process. A lock whose holder is gone
 * (killed with SIGKILL, a crash) is taken over with a note; a live holder's
 * is refused, naming it. Released by `release()`, or when this process exits.
 */
export async function lockWorkspace(root: string, fleet_id: string): Promise<LockResult> {
  const path = join(root, LOCK_FILE);
  const me: LockHolder = { pid: process.pid, process_start: processStart(process.pid), host: hostname(), since: new Date().toISOString(), fleet_id };
  const text = `${JSON.stringify(me)}\n`;
  let note: string | undefined;
  for (let tries = 0; tries < 5; tries++) {
    try {
      await writeFile(path, text, { flag: 'wx' });
      return { ok: true, release: releaser(path, text), note };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const seen = await readFile(path, 'utf8').catch(() => null);
    if (seen === null) continue; // released meanwhile
    const holder = parseHolder(seen);
    // A lock being written this instant reads empty: treat it as live rather than steal it.
    if (holder === null && seen.trim() !== '') {
      return { ok: false, holder: null, message: `${path} is not a lock Fleet wrote; if no fleet runs here, remove it` };
    }
    if (holder === null || holderAlive(holder)) {
      const who = holder ? describeHolder(holder) : 'a run that is starting';
      return {
        ok: false,
        holder,
        message: `another fleet run holds this workspace (${who}): wait for it to end or stop it, or give this run another --workspace`,
      };
    }
    // Stale. Move it aside under a name of our own, and make sure what we moved is the stale lock we read:
    // a run that took it over a moment before us must keep its fresh lock.
    const aside = `${path}.stale-${process.pid}`;
    try {
      await rename(path, aside);
    } catch {
      continue;
    }
    const moved = await readFile(aside, 'utf8').catch(() => null);
    if (moved !== seen) {
      await link(aside, path).catch(() => undefined);
      await unlink(aside).catch(() => undefined);
      continue;
    }
    await unlink(aside).catch(() => undefined);
    note = `took over the lock of ${describeHolder(holder)}: that process is no longer running`;
  }
  return { ok: false, holder: null, message: `${path}: the lock changed hands too often to take; try again` };
}

function releaser(path: string, mine: string): () => Promise<void> {
  // Whatever way this process ends, its lock goes with it (a SIGKILL aside: that is what the takeover is for).
  const onExit = () => {
    try {
      if (readFileSync(path, 'utf8') === mine) unlinkSync(path);
    } catch {
      /* already gone */
    }
  };
  process.on('exit', onExit);
  return async () => {
    process.off('exit', onExit);
    const now = await readFile(path, 'utf8').catch(() => null);
    if (now === mine) await unlink(path).catch(() => undefined);
  };
}
