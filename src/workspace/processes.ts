/**
 * Every process group Fleet started and has not seen end: directives and
 * checks (exec.ts) and Fleet's own git (git/run.ts). An interrupt must reach all
 * of them: a `git clone` left running after Fleet exits still holds the
 * forge's credential header in its environment.
 */

import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import os from 'node:os';

/** Process groups still running, killed if this process exits. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Remembers a process group (its leader's pid, spawned `detached`) until `untrackGroup`. */
export function trackGroup(pgid: number): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Whatever way this process ends, no group of ours outlives it.
    process.on('exit', () => killAllRunning('SIGKILL'));
  }
  liveGroups.add(pgid);
}

export function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

/** How many groups are running now (for tests and the interrupt message). */
export function runningGroups(): number {
  return liveGroups.size;
}

let interrupted = false;

/**
 * Sends `signal` to every process group still running: directives, checks and
 * Fleet's own git. From then on this process is stopping: a network call that
 * failed is not tried again.
 */
export function killAllRunning(signal: NodeJS.Signals = 'SIGTERM'): void {
  interrupted = true;
  for (const pgid of liveGroups) killGroup(pgid, signal);
}

/** True once killAllRunning was called (an interrupt). */
export function isInterrupted(): boolean {
  return interrupted;
}

/** `kill(-pgid, signal)`; false when nobody is left in the group. */
export function killGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  // Most calls find the group already gone (every git's group is ended after it exits): the ESRCH error
  // process.kill throws then is caught here and never shown, so it is made without a stack trace.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: nobody left in the group
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * `killGroup`, for a process known to be running: one the git launcher started is known by its pid a moment
 * before it has made its group (`setsid` runs after the shell said the pid), and then the process alone is
 * signalled, which is all there is of the group yet. Never for a process that may have been reaped: its pid
 * could be someone else's by now.
 */
export function killGroupOrLeader(pgid: number, signal: NodeJS.Signals): boolean {
  if (killGroup(pgid, signal)) return true;
  try {
    process.kill(pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** The name of signal number `n` ("SIGKILL"), or null. */
export function signalName(n: number): string | null {
  return Object.entries(os.constants.signals).find(([, v]) => v === n)?.[0] ?? null;
}

/**
 * Programs Fleet itself runs (git, setsid), by absolute path, looked up once, at their first use. A
 * directive can write its HOME, and GitHub's runner images put `~/.local/bin` before `/usr/bin` on PATH: a `git` it
 * planted there must never be what Fleet's own git calls run, outside the sandbox and with the credential header.
 */
const pinned = new Map<string, string>();

export function pinnedProgram(name: string): string {
  let found = pinned.get(name);
  if (found === undefined) {
    found = name;
    for (const dir of (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
      if (!dir.startsWith('/')) continue;
      const candidate = `${dir}/${name}`;
      try {
        accessSync(candidate, fsConstants.X_OK);
        if (!statSync(candidate).isFile()) continue;
        found = candidate;
        break;
      } catch {
        /* not here */
      }
    }
    pinned.set(name, found);
  }
  return found;
}

/** Forgets the pinned programs (for tests that put a `git` of their own on PATH for one run). */
export function unpinPrograms(): void {
  pinned.clear();
}
