/**
 * Runs one command (a directive, a check, an agent) with a timeout, in its own
 * process group, logging its output to a file. Never throws for a failing
 * command: every outcome is an ExecResult.
 *
 * - The command runs detached (its own session and process group). On timeout
 *   the whole group gets SIGTERM, then SIGKILL after `killGraceMs`, so
 *   grandchildren (`sleep 1000 &`) die with it.
 * - When the command exits by itself, whatever it left running in its group
 *   (background jobs) is terminated the same way: a lane leaves no processes.
 * - stdout and stderr are appended to `logFile`, line by line in the order
 *   they arrive, redacted, between a header and a footer.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { ExecResult } from '../ports.js';
import { closeSync, constants as fsConstants, createWriteStream, fstatSync, openSync, rmSync, type WriteStream } from 'node:fs';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { redact } from '../util/secrets.js';
import { killGroup, signalName, trackGroup, untrackGroup } from './processes.js';

export interface ExecOptions {
  cwd: string;
  /** The complete environment of the command (nothing is inherited), except that PATH is always present. */
  env: Record<string, string>;
  /** Per run; 0 or a non-finite value disables the timeout. */
  timeoutMs: number;
  logFile: string;
  /** Default true: a string command runs with `sh -c`. An array command always runs without a shell. */
  shell?: boolean;
  /** Written to stdin (otherwise stdin is /dev/null). */
  input?: string;
  /** Between SIGTERM and SIGKILL; default 2000. */
  killGraceMs?: number;
  /** How much output the log keeps: the first `head` bytes and the last `tail` (default LOG_HEAD_BYTES, LOG_TAIL_BYTES). */
  logLimits?: { head: number; tail: number };
  /** Starts the command some other way (inside a sandbox, see sandbox.ts), from `cwd`; the log still names the command itself. */
  wrap?: (file: string, args: readonly string[], env: Record<string, string>, opts: { cwd: string }) => { file: string; args: string[]; cwd?: string };
}

/** exitCode is null when killed by a signal and 127 when the command could not be started; tail is the last ~4 KB, redacted. */
export type { ExecResult } from '../ports.js';

const TAIL_CHARS = 4096;
const KEEP_CHARS = TAIL_CHARS * 2;
/** A partial line longer than this is flushed to the log without waiting for its newline. */
const MAX_PENDING_LINE = 64 * 1024;
/** How long to wait for stdout/stderr to close once the whole process group is gone. */
const CLOSE_WAIT_MS = 500;
const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/**
 * A log keeps the first 8 MiB of a command's output and the last 1 MiB, with a line saying how much was left out
 * between: a directive that prints gigabytes fills neither the disk nor an artifact (each lane's logs are uploaded),
 * and the start and the end, where what went wrong is usually told, stay.
 */
const LOG_HEAD_BYTES = 8 * 1024 * 1024;
const LOG_TAIL_BYTES = 1024 * 1024;

/** Sends `signal` to every process group Fleet still runs (directives, checks, its own git), for a CLI's SIGINT/SIGTERM handler. */
export { killAllRunning } from './processes.js';

/**
 * True while a process of the group is still running. `kill(-pgid, 0)` also
 * counts zombies: orphans reparented to a PID 1 that reaps late (or never, in a
 * container without an init), so on Linux the group is checked in /proc.
 */
async function groupAlive(pgid: number): Promise<boolean> {
  if (!killGroup(pgid, 0)) return false;
  if (process.platform !== 'linux') return true;
  let pids: string[];
  try {
    pids = await readdir('/proc');
  } catch {
    return true;
  }
  for (const pid of pids) {
    if (pid.charCodeAt(0) < 48 || pid.charCodeAt(0) > 57) continue;
    let stat: string;
    try {
      stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp …"; comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** SIGTERM the group, wait up to graceMs for it to empty, then SIGKILL. */
async function terminateGroup(pgid: number, graceMs: number): Promise<void> {
  if (!killGroup(pgid, 'SIGTERM')) return;
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await sleep(Math.min(25, Math.max(1, deadline - Date.now())));
    if (!(await groupAlive(pgid))) return;
  }
  killGroup(pgid, 'SIGKILL');
}

function describe(command: string | string[]): string {
  return Array.isArray(command) ? command.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ') : command;
}

/** Splits a stream into lines, redacts each and hands it on; keeps partial lines until their newline (or until they grow too long). */
class LineRedactor {
  private pending = '';
  private readonly decoder = new StringDecoder('utf8');
  constructor(private readonly sink: (text: string) => void) {}

  write(chunk: Buffer): void {
    this.pending += this.decoder.write(chunk);
    const cut = this.pending.lastIndexOf('\n');
    if (cut >= 0) {
      this.sink(redact(this.pending.slice(0, cut + 1)));
      this.pending = this.pending.slice(cut + 1);
    }
    if (this.pending.length > MAX_PENDING_LINE) {
      this.sink(redact(this.pending));
      this.pending = '';
    }
  }

  end(): void {
    this.pending += this.decoder.end();
    if (this.pending) this.sink(redact(this.pending));
    this.pending = '';
  }
}

const LOG_FLAGS = fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;

/**
 * Opens a log in the lane's folder, which a directive can write, for appending. What it may have planted at the
 * path is never written through: not a link (to a file of its choosing), not a FIFO (the open would wait for a
 * reader for ever, and with it the whole of Fleet: non-blocking, it fails or returns at once), not a device, not a
 * second name of another file (a hard link: Fleet as root would append to a file of root's). Such a thing is
 * removed and the log made anew, exclusively.
 */
function openLog(file: string): number {
  try {
    const fd = openSync(file, LOG_FLAGS, 0o644);
    const st = fstatSync(fd);
    if (st.isFile() && st.nlink === 1) return fd;
    closeSync(fd);
  } catch {
    // ELOOP (a link), ENXIO (a FIFO nobody reads), EISDIR: removed below
  }
  // Not recursively: a folder planted there stays, and the attempt has no log (root removing a tree a user can still
  // change is a walk a link can turn elsewhere).
  rmSync(file, { force: true });
  return openSync(file, LOG_FLAGS | fsConstants.O_EXCL, 0o644);
}

export async function runCommand(command: string | string[], opts: ExecOptions): Promise<ExecResult> {
  const started = performance.now();
  const killGraceMs = opts.killGraceMs ?? 2000;
  const env: Record<string, string> = { ...opts.env };
  if (!env.PATH) env.PATH = process.env.PATH || FALLBACK_PATH;

  let file: string;
  let args: string[];
  if (Array.isArray(command)) {
    if (command.length === 0) throw new TypeError('runCommand: empty command');
    file = command[0]!;
    args = command.slice(1);
  } else if (opts.shell === false) {
    file = command;
    args = [];
  } else {
    file = '/bin/sh';
    args = ['-c', command];
  }

  // The log: header now, output as it comes, footer at the end.
  let log: WriteStream | null = null;
  try {
    await mkdir(path.dirname(path.resolve(opts.logFile)), { recursive: true });
    log = createWriteStream('', { fd: openLog(opts.logFile) });
    log.on('error', () => {
      /* a log that cannot be written must not fail the command */
    });
  } catch {
    log = null;
  }
  const writeLog = (text: string): void => {
    if (log && text) log.write(text);
  };
  writeLog(`=== ${new Date().toISOString()} $ ${redact(describe(command))}\n=== cwd: ${opts.cwd}\n`);

  // The tail: the last KEEP_CHARS characters of combined output, redacted at the end.
  let tailBuf = '';
  const keep = (text: string): void => {
    tailBuf += text;
    if (tailBuf.length > KEEP_CHARS * 2) tailBuf = tailBuf.slice(-KEEP_CHARS);
  };
  // The log's share of the output: the first limits.head bytes as they come, then only the last limits.tail kept.
  const limits = opts.logLimits ?? { head: LOG_HEAD_BYTES, tail: LOG_TAIL_BYTES };
  let logged = 0;
  let past = 0;
  let pastTail = '';
  const logOutput = (text: string): void => {
    if (logged < limits.head) {
      const bytes = Buffer.from(text);
      const room = limits.head - logged;
      if (bytes.length <= room) {
        writeLog(text);
        logged += bytes.length;
        return;
      }
      // Cut where a character starts (not inside one: it would read as U+FFFD, and miscount what is left out).
      let cut = room;
      while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
      writeLog(bytes.subarray(0, cut).toString('utf8'));
      logged = limits.head;
      text = bytes.subarray(cut).toString('utf8');
    }
    past += Buffer.byteLength(text);
    pastTail += text;
    if (pastTail.length > limits.tail * 2) pastTail = pastTail.slice(-limits.tail);
  };
  const sink = (text: string): void => {
    logOutput(text);
    keep(text);
  };
  const outLines = new LineRedactor(sink);
  const errLines = new LineRedactor(sink);

  let child: ChildProcess;
  let spawnError: Error | null = null;
  try {
    // Inside the try: a sandbox that cannot be set up (its mount table not written) fails this command, logged.
    let cwd = opts.cwd;
    if (opts.wrap) ({ file, args, cwd = opts.cwd } = opts.wrap(file, args, env, { cwd: opts.cwd }));
    child = spawn(file, args, {
      cwd,
      env,
      detached: true,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
  } catch (err) {
    spawnError = err as Error;
    child = null as unknown as ChildProcess;
  }

  let timedOut = false;
  let exitCode: number | null = null;
  let signal: string | null = null;

  if (!spawnError) {
    const pgid = child.pid;
    if (pgid !== undefined) trackGroup(pgid);

    const outcome = await new Promise<{ code: number | null; signal: string | null; error: Error | null }>((resolve) => {
      let done = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (v: { code: number | null; signal: string | null; error: Error | null }): void => {
        if (done) return;
        done = true;
        if (timer) clearTimeout(timer);
        resolve(v);
      };
      child.stdout!.on('data', (b: Buffer) => outLines.write(b));
      child.stderr!.on('data', (b: Buffer) => errLines.write(b));
      child.on('error', (err) => finish({ code: null, signal: null, error: err }));
      child.on('exit', (code, sig) => finish({ code, signal: sig, error: null }));
      if (opts.input !== undefined && child.stdin) {
        child.stdin.on('error', () => {
          /* EPIPE: the command did not read all of its input */
        });
        child.stdin.end(opts.input);
      }
      if (pgid !== undefined && Number.isFinite(opts.timeoutMs) && opts.timeoutMs > 0) {
        timer = setTimeout(
          () => {
            timedOut = true;
            void terminateGroup(pgid, killGraceMs);
          },
          Math.min(opts.timeoutMs, 2 ** 31 - 1),
        );
      }
    });

    if (outcome.error) {
      spawnError = outcome.error;
    } else {
      exitCode = outcome.code;
      signal = outcome.signal;
      // In the sandbox the command's parent is the namespace's init, which can only exit: 128+N says signal N ended the command.
      const bySignal = opts.wrap && exitCode !== null && exitCode > 128 ? signalName(exitCode - 128) : null;
      if (bySignal) {
        exitCode = null;
        signal = bySignal;
      }
    }

    // Whatever the command left behind in its group (background jobs) goes too.
    if (pgid !== undefined) {
      if (await groupAlive(pgid)) await terminateGroup(pgid, killGraceMs);
      untrackGroup(pgid);
    }
    // Let the pipes drain; a process that escaped the group may still hold them.
    await waitForClose(child, CLOSE_WAIT_MS);
  }

  outLines.end();
  errLines.end();
  if (spawnError) {
    const e = spawnError as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? `${e.message} (command or working directory not found)` : e.message;
    sink(`fleet: could not start ${describe(command)}: ${why}\n`);
    exitCode = 127;
    signal = null;
  }
  if (past > 0) {
    const all = Buffer.from(pastTail);
    let from = Math.max(0, all.length - limits.tail);
    while (from < all.length && (all[from]! & 0xc0) === 0x80) from++;
    const kept = all.subarray(from).toString('utf8');
    const left = past - Buffer.byteLength(kept);
    if (left > 0) writeLog(`\n=== ${left} bytes of output left out here: a log keeps the first ${limits.head} bytes and the last ${limits.tail} ===\n`);
    writeLog(kept);
  }
  const durationMs = Math.round(performance.now() - started);
  writeLog(
    `=== exit=${exitCode === null ? 'null' : exitCode} signal=${signal ?? 'null'}${timedOut ? ` timed-out-after=${opts.timeoutMs}ms` : ''} duration=${durationMs}ms\n`,
  );
  if (log) await new Promise<void>((r) => log!.end(r));

  const tail = redact(tailBuf).slice(-TAIL_CHARS);
  return { exitCode, signal, timedOut, durationMs, tail };
}

function waitForClose(child: ChildProcess, ms: number): Promise<void> {
  const streams = [child.stdout, child.stderr].filter((s): s is NonNullable<typeof s> => s !== null && !s.destroyed && !s.readableEnded);
  if (streams.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    let left = streams.length;
    const timer = setTimeout(() => {
      for (const s of streams) s.destroy();
      resolve();
    }, ms);
    for (const s of streams) {
      s.once('close', () => {
        if (--left === 0) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
  });
}
