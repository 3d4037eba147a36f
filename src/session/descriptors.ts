/**
 * Descriptors Fleet's process inherited from whatever started it and that stay open across exec (no close-on-exec
 * flag): every child Fleet starts (a directive, a check, git) would inherit them in turn, and a descriptor needs no
 * path, so no sandbox mask hides what it opens. A shell's `20>>file`, a parent's stray pipe or a runner's leaked
 * descriptor would hand that file to every directive, as the user Fleet runs as (issue 28, second pass).
 */
import { closeSync, readdirSync, readFileSync } from 'node:fs';

/** O_CLOEXEC as /proc/<pid>/fdinfo prints the flags (octal). */
const O_CLOEXEC = 0o2000000;

/**
 * Closes every descriptor above 2 that would outlive an exec, at an entrypoint's start, before any child runs. Node's
 * own descriptors are all close-on-exec (libuv opens them so), the IPC channel of a process started by `fork` too
 * (Node marks it so as it starts). Linux only (/proc/self/fdinfo); elsewhere nothing is done. Returns the descriptors
 * closed.
 */
export function closeInheritedDescriptors(): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const closed: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2) continue;
    let flags: number;
    try {
      const m = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
      if (!m) continue;
      flags = Number.parseInt(m[1]!, 8);
    } catch {
      continue; // gone already (the descriptor the listing itself used)
    }
    if (flags & O_CLOEXEC) continue;
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      /* closed meanwhile */
    }
  }
  return closed;
}
