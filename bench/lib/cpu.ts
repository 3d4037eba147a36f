/** CPU time as Linux accounts it, for the bench's measurements (null off Linux). */
import { readFileSync } from 'node:fs';

export interface CpuTimes {
  self_s: number;
  children_s: number;
  /** CPU the rest of the machine used meanwhile (all CPUs' busy time minus ours): the noise from other work. */
  others_s?: number;
}

/** utime+stime of this process and of its reaped children (Linux /proc; null elsewhere). */
export function cpuTimes(): CpuTimes | null {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name (which may contain spaces) start at field 3.
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    const hz = 100; // USER_HZ: 100 on every Linux Node supports
    return { self_s: (f[11]! + f[12]!) / hz, children_s: (f[13]! + f[14]!) / hz };
  } catch {
    return null;
  }
}

/** Busy CPU seconds of the whole machine since boot (Linux /proc/stat), or null. */
export function machineBusy(): number | null {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal …: busy = everything but idle and iowait.
    return (f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!) / 100;
  } catch {
    return null;
  }
}
