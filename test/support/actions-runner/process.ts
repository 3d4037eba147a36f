/**
 * One step's process: its own process group (so cancelling a job kills what
 * the step started, as the runner does), every output line handed to the job
 * (which parses workflow commands and masks secrets before logging).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

export interface StepProcess {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  onLine(line: string, stream: 'stdout' | 'stderr'): void;
  /** Aborting kills the whole group (SIGTERM, then SIGKILL after a grace period). */
  signal: AbortSignal;
  /** The job's process groups: what a step leaves running lives until the job ends (`endJobProcesses`). */
  groups: Set<number>;
}

export interface ProcessResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

const KILL_GRACE_MS = 1500;
const live = new Set<number>();
process.on('exit', () => {
  for (const pgid of live) killGroup(pgid, 'SIGKILL');
});

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is gone
  }
}

/**
 * At the end of a job the runner kills every process its steps left behind
 * ("Cleaning up orphan processes"): their process groups, and any process that
 * left its group (`setsid`) but still carries the job's RUNNER_TRACKING_ID, as
 * the runner finds them.
 */
export function endJobProcesses(groups: Set<number>, trackingId?: string): void {
  for (const pgid of groups) {
    killGroup(pgid, 'SIGKILL');
    live.delete(pgid);
  }
  groups.clear();
  if (trackingId) for (const pid of trackedProcesses(trackingId)) killPid(pid);
}

function trackedProcesses(trackingId: string): number[] {
  const mark = `RUNNER_TRACKING_ID=${trackingId}`;
  const out: number[] = [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const pid of pids) {
    if (Number(pid) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(mark)) out.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

function killPid(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}

export function runProcess(p: StepProcess): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const child = spawn(p.command, p.args, { cwd: p.cwd, env: p.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const pgid = child.pid;
    if (pgid) live.add(pgid);
    const pump = (stream: NodeJS.ReadableStream, name: 'stdout' | 'stderr') => {
      const decoder = new StringDecoder('utf8');
      let pending = '';
      stream.on('data', (chunk: Buffer) => {
        pending += decoder.write(chunk);
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          p.onLine(pending.slice(0, nl).replace(/\r$/, ''), name);
          pending = pending.slice(nl + 1);
        }
      });
      stream.on('end', () => {
        pending += decoder.end();
        if (pending) p.onLine(pending, name);
      });
    };
    pump(child.stdout!, 'stdout');
    pump(child.stderr!, 'stderr');
    const abort = () => {
      if (!pgid) return;
      killGroup(pgid, 'SIGTERM');
      setTimeout(() => killGroup(pgid, 'SIGKILL'), KILL_GRACE_MS).unref();
    };
    if (p.signal.aborted) abort();
    else p.signal.addEventListener('abort', abort, { once: true });
    child.on('error', (err) => {
      p.onLine(`##[error]${err.message}`, 'stderr');
    });
    child.on('close', (exitCode, signal) => {
      p.signal.removeEventListener('abort', abort);
      if (pgid) p.groups.add(pgid);
      resolve({ exitCode, signal });
    });
  });
}
