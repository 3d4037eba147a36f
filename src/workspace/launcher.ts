/**
 * Starts Fleet's own git processes from small, long-lived shells instead of from Node.
 *
 * Why: Node starts a child with fork() of its whole process and waits, on its one thread, until the child has
 * exec'd. With eight lanes running git on a 2-core machine that wait is paid to the scheduler, and every page
 * Node writes afterwards takes a copy-on-write fault: a lane's seven git calls cost Node far more than git's own
 * work (`npm run bench -- --only floor`, docs/bench.md "Cost per lane"). A shell is a few hundred kilobytes;
 * its fork is cheap and its waiting blocks nobody.
 *
 * How: each shell (`/bin/sh`, started once with the environment every git call shares, never a credential, in a
 * process group of its own so a terminal's Ctrl-C does not end it) reads one command at a time on its stdin:
 *
 *   ( export K='V' …; cd -- 'DIR' || …; exec setsid git ARGS… ) <IN >OUT 2>ERR & echo "$!"; wait "$!"; echo "$?"
 *
 * - The environment travels inside the command text, through the pipe, never in an argv (readable by every
 *   user) nor a file; the shell itself holds nothing of it once the subshell is gone.
 * - `setsid` makes git the leader of a process group of its own, as `detached: true` does for a direct spawn,
 *   so a timeout or an interrupt can end git and every helper it started.
 * - Output goes to files in a folder of each shell, which the shell itself removes when it ends (end of input,
 *   including when Fleet dies without an exit event); the caller reads them once the status line arrives. Every
 *   shell's folder sits in Fleet's private temporary folder (private-tmp.ts, 0700), which one mount hides from
 *   every isolated directive, and which goes when Fleet does.
 *
 * Where /bin/sh or setsid is missing (Windows, a minimal image), `gitLauncher()` is null and git/run.ts spawns
 * directly, as before. A shell that dies fails its command (exit -1) and is replaced by a new one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { shellQuote } from '../core/agent.js';
import { privateTmp } from './private-tmp.js';
import { pinnedProgram } from './processes.js';

export interface LaunchRequest {
  file: string;
  args: readonly string[];
  cwd: string;
  /** The whole environment of the command. */
  env: NodeJS.ProcessEnv;
  /**
   * The part of `env` every call shares and a long-lived shell may hold (never a credential: those are added per
   * call and travel in the command only), asked for only when a new shell starts with it; commands then carry
   * only the difference.
   */
  sharedEnv?: () => NodeJS.ProcessEnv;
  input?: string;
  /** Output over this many bytes is not read into memory: the result says only how large it was (`stdoutBytes`). */
  maxStdout?: number;
}

export interface LaunchResult {
  /** The shell's `$?` for the command: an exit code, or 128+N when signal N ended it. -1 when the shell died. */
  status: number;
  stdout: Buffer;
  stderr: string;
  /** Set when the command could not be started (no such directory, no such program). */
  startError?: string;
  /** Set when stdout was over the request's `maxStdout`, and left unread (`stdout` is then empty). */
  stdoutBytes?: number;
}

export interface Launched {
  /** The process group of the command (its leader's pid), once it has started; undefined if it never did. */
  readonly pgid: Promise<number | undefined>;
  readonly result: Promise<LaunchResult>;
}

/** Names sh can export; others (rare: `ProgramFiles(x86)`, `a.b`) cannot be set by a shell and are left out. */
const SH_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Written to stderr when `cd` fails, so the caller can tell "no such directory" from git's own failures. */
const NO_DIR = 'fleet-launcher: no such directory';

/**
 * The command line a shell runs for one request (exported for tests of its quoting). `base` is the environment
 * the shell was started with: only what differs from it is exported or unset, which keeps a command a few
 * hundred bytes instead of the whole environment each time.
 */
export function commandLine(req: LaunchRequest, files: { in: string; out: string; err: string }, base: Readonly<Record<string, string>> = {}): string {
  // A shell drops a NUL where spawn() refuses one: refuse it too, rather than run something other than asked.
  const words = [req.file, ...req.args, req.cwd, ...Object.values(req.env).filter((v): v is string => v !== undefined)];
  if (words.some((w) => w.includes('\0'))) throw new TypeError('an argument, the folder or an environment value holds a NUL byte');
  const steps: string[] = ['trap - PIPE'];
  for (const k of Object.keys(base)) if (req.env[k] === undefined) steps.push(`unset ${k}`);
  for (const [k, v] of Object.entries(req.env)) {
    if (v !== undefined && base[k] !== v && SH_NAME.test(k)) steps.push(`export ${k}=${shellQuote(v)}`);
  }
  // Absolute, so CDPATH in the environment never sends `cd` elsewhere.
  steps.push(`cd -- ${shellQuote(path.resolve(req.cwd))} 2>/dev/null || { echo ${shellQuote(`${NO_DIR}: ${req.cwd}`)} >&2; exit 127; }`);
  steps.push(`exec ${shellQuote(pinnedProgram('setsid'))} ${[req.file, ...req.args].map((w) => shellQuote(w)).join(' ')}`);
  return `( ${steps.join('; ')} ) <${shellQuote(files.in)} >${shellQuote(files.out)} 2>${shellQuote(files.err)} & echo "$!"; wait "$!"; echo "$?"\n`;
}

/** The part of an environment a shell can hold (and so start with). */
function exportable(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && SH_NAME.test(k)) out[k] = v;
  return out;
}

/** One shell, its private folder, and the command it is running, if any. */
class Shell {
  private readonly child: ChildProcess;
  private buffer = '';
  private lines: ((line: string | null) => void)[] = [];
  private running = false;
  private closing = false;
  private seq = 0;
  dead = false;
  /** Where this shell's commands write their output (0700); the shell removes it when it ends. */
  readonly dir: string;
  /** Settles once the shell has exited and Node has reaped it. */
  readonly exited: Promise<void>;

  /** `env`: what the shell starts with (a request's sharedEnv). */
  constructor(readonly env: Readonly<Record<string, string>>) {
    this.dir = mkdtempSync(path.join(privateTmp(), 'sh-'));
    // detached: a process group of its own, which a terminal's Ctrl-C (sent to Fleet's group) does not reach.
    this.child = spawn('/bin/sh', ['-s'], { env, stdio: ['pipe', 'pipe', 'ignore'], windowsHide: true, detached: true });
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => this.read(chunk));
    const die = (): void => {
      this.dead = true;
      for (const w of this.lines.splice(0)) w(null);
      // A shell killed from outside ran no EXIT trap.
      rmSync(this.dir, { recursive: true, force: true });
    };
    this.exited = new Promise((resolve) => {
      this.child.on('exit', () => resolve());
      this.child.on('error', () => resolve());
    });
    this.child.on('exit', die);
    this.child.on('error', die);
    this.child.stdin!.on('error', die);
    // The folder goes when the shell ends, which it does at the end of its input: also when Fleet dies without
    // an exit event. SIGPIPE is ignored so that a status line nobody reads any more does not kill the shell
    // before that (each command sets it back to the default).
    this.child.stdin!.write(`trap ${shellQuote(`rm -rf -- ${shellQuote(this.dir)}`)} EXIT; trap '' PIPE\n`);
    this.idle();
  }

  /** Paths for the next command's input and output, in this shell's folder. */
  files(withInput: boolean): { in: string; out: string; err: string } {
    const base = path.join(this.dir, String(++this.seq));
    return { in: withInput ? `${base}.in` : '/dev/null', out: `${base}.out`, err: `${base}.err` };
  }

  private read(chunk: string): void {
    this.buffer += chunk;
    for (let i = this.buffer.indexOf('\n'); i >= 0; i = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, i);
      this.buffer = this.buffer.slice(i + 1);
      this.lines.shift()?.(line);
    }
  }

  private nextLine(): Promise<string | null> {
    if (this.dead) return Promise.resolve(null);
    return new Promise((resolve) => this.lines.push(resolve));
  }

  /** An idle shell must not keep Fleet alive; a busy one must, or Fleet could exit while git runs. */
  private idle(): void {
    this.child.unref();
    (this.child.stdout as unknown as { unref(): void }).unref();
    (this.child.stdin as unknown as { unref(): void }).unref();
  }

  private busy(): void {
    this.child.ref();
    (this.child.stdout as unknown as { ref(): void }).ref();
    (this.child.stdin as unknown as { ref(): void }).ref();
  }

  run(text: string): { pid: Promise<string | null>; status: Promise<string | null> } {
    this.running = true;
    this.busy();
    const pid = this.nextLine();
    const status = this.nextLine();
    this.child.stdin!.write(text);
    return { pid, status };
  }

  /** The caller has read the command's output: the shell may take the next one, or end if it was closed meanwhile. */
  done(): void {
    this.running = false;
    if (this.closing) this.end();
    else this.idle();
  }

  /** Ends the shell: now when idle, else once its command's output has been read (its folder goes with it). */
  close(): void {
    this.dead = true;
    this.closing = true;
    if (!this.running) this.end();
  }

  private end(): void {
    // Held until it has exited, so that whoever awaits `exited` is not left behind by an event loop that ends.
    this.child.ref();
    this.child.stdin!.end();
  }
}

/** Launchers not closed yet: whatever way the process ends, their shells get end of input. */
const open = new Set<GitLauncher>();
let exitHookInstalled = false;

export class GitLauncher {
  private readonly idleShells: Shell[] = [];
  private readonly shells = new Set<Shell>();

  constructor() {
    open.add(this);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.on('exit', () => {
        for (const l of open) l.close();
      });
    }
  }

  launch(req: LaunchRequest): Launched {
    let shell = this.idleShells.pop();
    // A shell that died while idle (killed from outside) is dropped, not handed a command it would fail.
    while (shell?.dead) shell = this.idleShells.pop();
    shell ??= this.newShell(req.sharedEnv?.() ?? {});
    const files = shell.files(req.input !== undefined);
    const text = commandLine(req, files, shell.env);
    if (req.input !== undefined) writeFileSync(files.in, req.input, { mode: 0o600 });
    const { pid, status } = shell.run(text);
    const pgid = pid.then((line) => (line !== null && /^\d+$/.test(line) ? Number(line) : undefined));
    const result = status.then((line): LaunchResult => {
      const over = sizeOver(files.out, req.maxStdout);
      const stdout = over === undefined ? readAndRemove(files.out) : (unlinkQuietly(files.out), Buffer.alloc(0));
      const stderr = readAndRemove(files.err).toString('utf8');
      if (req.input !== undefined) unlinkQuietly(files.in);
      shell.done();
      if (!shell.dead) this.idleShells.push(shell);
      if (line === null || !/^\d+$/.test(line)) return { status: -1, stdout, stderr, startError: 'the shell that starts git ended unexpectedly' };
      const code = Number(line);
      if (code === 127 && stderr.startsWith(NO_DIR)) return { status: -1, stdout, stderr: '', startError: `${req.cwd} does not exist` };
      if (code === 127 && /failed to execute|not found/.test(stderr))
        return { status: -1, stdout, stderr, startError: `${req.file} is not installed or not on PATH` };
      return { status: code, stdout, stderr, ...(over === undefined ? {} : { stdoutBytes: over }) };
    });
    return { pgid, result };
  }

  private newShell(env: NodeJS.ProcessEnv): Shell {
    const shell = new Shell(exportable(env));
    this.shells.add(shell);
    void shell.exited.then(() => this.shells.delete(shell));
    return shell;
  }

  /** The output folders of the shells now running (what a test checks is gone once they end). */
  folders(): string[] {
    return [...this.shells].map((s) => s.dir);
  }

  /** Ends every shell: idle ones at once, busy ones once their command's output has been read. */
  close(): void {
    open.delete(this);
    for (const s of this.shells) s.close();
  }

  /**
   * Ends every shell and waits until each has exited (and removed its folder): then Node has reaped them, and
   * the CPU time of the git they ran counts in Fleet's own (what `time` and the bench's process-tree measure read).
   */
  async closeAndWait(): Promise<void> {
    const all = [...this.shells];
    this.close();
    await Promise.all(all.map((s) => s.exited));
  }
}

/** The file's size where it is over `max` (and so is not to be read), else undefined. */
function sizeOver(file: string, max: number | undefined): number | undefined {
  if (max === undefined) return undefined;
  try {
    const size = statSync(file).size;
    return size > max ? size : undefined;
  } catch {
    return undefined;
  }
}

function readAndRemove(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch {
    return Buffer.alloc(0);
  } finally {
    unlinkQuietly(file);
  }
}

/** unlink(2), and nothing if the file is gone: rmSync's recursive walk costs more than the git call's own output. */
function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    /* never written (a command that could not start) */
  }
}

let launcher: GitLauncher | null | undefined;

/** Ends the process's launcher shells, if any, and waits for them (the CLI and the action, once a run is over). */
export async function closeGitLauncher(): Promise<void> {
  const l = launcher;
  launcher = undefined;
  await l?.closeAndWait();
}

/** The process's launcher, or null where this machine has no /bin/sh with setsid (git/run.ts then spawns directly). */
export function gitLauncher(): GitLauncher | null {
  if (launcher !== undefined) return launcher;
  launcher = null;
  if (process.platform === 'win32' || process.env.FLEET_GIT_LAUNCHER === 'off') return launcher;
  if (pinnedProgram('setsid').startsWith('/')) launcher = new GitLauncher();
  return launcher;
}
