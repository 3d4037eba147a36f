/**
 * Running one git process: started from a launcher shell (launcher.ts) where there is one, else spawned, in a
 * process group of its own so a timeout or an interrupt ends git and every helper it started; its verdict as a
 * GitResult or a GitError. And the one policy every network call shares: a timeout each, and retries of what a
 * remote gets wrong now and then. What the call gets (program, `-c` options, environment) is env.ts's; who runs it
 * (identity, launcher) is the caller's, given as values (a Git, git.ts).
 *
 * Every error is a `GitError` whose message, args and stderr went through `redact`, so a token in a remote URL never
 * reaches a log or a lane result.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { CommitIdentity } from '../../core/commit-identity.js';
import { redact } from '../../util/secrets.js';
import type { GitLauncher } from '../launcher.js';
import { isInterrupted, killGroup, killGroupOrLeader, signalName, trackGroup, untrackGroup } from '../processes.js';
import { BASE_CONFIG, gitEnv, gitProgram } from './env.js';

export class GitError extends Error {
  override readonly name = 'GitError';
  /** The git arguments (after the forced `-c` options), redacted. */
  readonly args: string[];
  /** git's exit code; -1 when git could not be started or was killed. */
  readonly exitCode: number;
  /** git's stderr, redacted. */
  readonly stderr: string;
  /** The signal that ended git when it was not Fleet's timeout (an interrupt), else null. */
  killedBy: string | null = null;

  constructor(args: readonly string[], exitCode: number, stderr: string, message?: string) {
    const safeArgs = args.map((a) => redact(a));
    const safeStderr = redact(stderr);
    const detail = message ?? (errorLines(safeStderr, 6) || `exit code ${exitCode}`);
    super(redact(`git ${safeArgs.join(' ')} failed (exit ${exitCode}): ${detail}`));
    this.args = safeArgs;
    this.exitCode = exitCode;
    this.stderr = safeStderr;
  }
}

/** git wrote more to stdout than the call's `maxStdoutBytes`: its output was not read. */
export class GitOutputTooLarge extends GitError {
  constructor(
    args: readonly string[],
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(args, 0, '', `it wrote ${bytes} bytes, over the ${limit} this call reads`);
  }
}

export interface GitOptions {
  cwd: string;
  /** Added to (and overriding) the environment Fleet gives git. */
  env?: Record<string, string>;
  /** Written to git's stdin. */
  input?: string;
  /** Return a non-zero exit instead of throwing. */
  allowFail?: boolean;
  /** Kill git (SIGKILL) after this long; the call then fails with exit code -1. */
  timeoutMs?: number;
  /**
   * Output over this many bytes is never read into memory: the call fails with `GitOutputTooLarge` (a patch of
   * hundreds of megabytes took gigabytes of memory to handle as text).
   */
  maxStdoutBytes?: number;
  /**
   * The whole environment instead of the isolated one Fleet gives its git: only for reading the user's own
   * configuration (readUserGitConfig), before any directive ran.
   */
  userEnv?: NodeJS.ProcessEnv;
}

export interface GitResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface RawResult {
  stdout: Buffer;
  stderr: string;
  code: number;
}

/** What an operation runs git through (a Git, git.ts): these calls carry its identity, signing and launcher. */
export interface GitRunner {
  /** Runs `git <args>` in `cwd`. Throws a `GitError` on a non-zero exit unless `allowFail`. stderr is returned as git wrote it (callers that log it should `redact` it). */
  run(args: string[], opts: GitOptions): Promise<GitResult>;
  /** The same, with stdout as git wrote it, byte for byte (a patch, NUL-separated paths). */
  bytes(args: readonly string[], opts: GitOptions): Promise<RawResult>;
  /** A network call: its timeout, and retries of transient failures (networkGit). */
  network(args: string[], opts: NetworkOptions): Promise<GitResult>;
  /** The `-c` options a commit-making call adds: this git's signing, none when unsigned (identity.ts). */
  signConfig(): string[];
}

/** Who runs one call: the identity its environment commits as, and the launcher shells to start it from (null: spawn it). */
export interface RunSetup {
  identity: CommitIdentity;
  launcher: GitLauncher | null;
}

/** Runs one git process with Fleet's configuration and environment; its raw result, or a GitError. */
export function execGit(args: readonly string[], opts: GitOptions, setup: RunSetup): Promise<RawResult> {
  return setup.launcher ? runLaunched(setup.launcher, args, opts, setup.identity) : runSpawned(args, opts, setup.identity);
}

/** Ends what is left of a finished git's group (a transport stuck on a socket) and forgets it. */
function endGroup(pgid: number | undefined): void {
  if (pgid === undefined) return;
  killGroup(pgid, 'SIGKILL');
  untrackGroup(pgid);
}

/** The verdict on a finished git, shared by both ways of starting it. */
function settle(
  args: readonly string[],
  opts: GitOptions,
  end: { exit: number; signal: string | null; timedOut: boolean; stdout: Buffer; stderr: string; stdoutBytes?: number },
): RawResult {
  const { exit, signal, stderr } = end;
  if (end.timedOut) throw new GitError(args, -1, stderr, `timed out after ${opts.timeoutMs} ms`);
  if (end.stdoutBytes !== undefined) throw new GitOutputTooLarge(args, end.stdoutBytes, opts.maxStdoutBytes ?? 0);
  if (signal) {
    // Killed from outside (an interrupt): never a result to act on, even with allowFail.
    const e = new GitError(args, exit, stderr, `killed by ${signal}`);
    e.killedBy = signal;
    throw e;
  }
  if (exit !== 0 && !opts.allowFail) throw new GitError(args, exit, stderr);
  return { stdout: end.stdout, stderr, code: exit };
}

/** Starts git from a launcher shell (launcher.ts: far cheaper than a fork of Node on a busy machine). */

async function runLaunched(launcher: GitLauncher, args: readonly string[], opts: GitOptions, identity: CommitIdentity): Promise<RawResult> {
  const launched = launcher.launch({
    file: gitProgram(),
    args: [...BASE_CONFIG, ...args],
    cwd: opts.cwd,
    env: opts.userEnv ?? gitEnv(identity, opts.env),
    sharedEnv: () => gitEnv(identity),
    input: opts.input,
    maxStdout: opts.maxStdoutBytes,
  });
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const pgid = await launched.pgid;
  if (pgid !== undefined) {
    trackGroup(pgid);
    // An interrupt that came while git was starting did not see its group yet.
    if (isInterrupted()) killGroupOrLeader(pgid, 'SIGKILL');
    if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
      timer = setTimeout(
        () => {
          timedOut = true;
          killGroupOrLeader(pgid, 'SIGKILL');
        },
        Math.min(opts.timeoutMs, 2 ** 31 - 1),
      );
    }
  }
  const r = await launched.result;
  if (timer) clearTimeout(timer);
  endGroup(pgid);
  if (r.startError !== undefined) throw new GitError(args, -1, r.stderr, `could not run git: ${r.startError}`);
  // A shell reports a signal as 128 + its number. git itself exits 128 (fatal) and 129 (usage), so a status
  // above 128 counts as a signal only when Fleet sent one (its timeout, an interrupt); an outside kill then
  // reads as that exit code, which is a failure all the same.
  const signalled = r.status > 128 && (timedOut || isInterrupted()) ? (signalName(r.status - 128) ?? `signal ${r.status - 128}`) : null;
  return settle(args, opts, { exit: signalled ? -1 : r.status, signal: signalled, timedOut, stdout: r.stdout, stderr: r.stderr, stdoutBytes: r.stdoutBytes });
}

/** Starts git with Node's own spawn: where no launcher shell can be had. */
function runSpawned(args: readonly string[], opts: GitOptions, identity: CommitIdentity): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      // A group of its own (git, git-remote-https, ssh…), so an interrupt or a timeout can end all of it: a
      // transport helper left behind would keep the forge's credential header in its environment.
      child = spawn(gitProgram(), [...BASE_CONFIG, ...args], {
        cwd: opts.cwd,
        env: opts.userEnv ?? gitEnv(identity, opts.env),
        stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        windowsHide: true,
        detached: true,
      });
    } catch (err) {
      reject(new GitError(args, -1, String(err), `could not start git: ${String((err as Error).message ?? err)}`));
      return;
    }
    const pgid = child.pid;
    if (pgid !== undefined) trackGroup(pgid);
    const out: Buffer[] = [];
    const errOut: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let settled = false;
    // Past the limit nothing more is kept; git is ended (its output is of no use) and the call fails.
    let outBytes = 0;
    child.stdout!.on('data', (b: Buffer) => {
      const before = outBytes;
      outBytes += b.length;
      if (opts.maxStdoutBytes === undefined || outBytes <= opts.maxStdoutBytes) out.push(b);
      else if (before <= opts.maxStdoutBytes) {
        out.length = 0;
        if (pgid !== undefined) killGroup(pgid, 'SIGKILL');
      }
    });
    child.stderr!.on('data', (b: Buffer) => errOut.push(b));
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      endGroup(pgid);
      const why = err.code === 'ENOENT' ? `${err.message} (git is not installed, or ${opts.cwd} does not exist)` : err.message;
      reject(new GitError(args, -1, Buffer.concat(errOut).toString('utf8'), `could not run git: ${why}`));
    });
    child.on('close', (code, signal) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      endGroup(pgid);
      try {
        const tooLarge = opts.maxStdoutBytes !== undefined && outBytes > opts.maxStdoutBytes;
        resolve(
          settle(args, opts, {
            exit: code ?? -1,
            signal: tooLarge ? null : signal,
            timedOut,
            stdout: Buffer.concat(out),
            stderr: Buffer.concat(errOut).toString('utf8'),
            ...(tooLarge ? { stdoutBytes: outBytes } : {}),
          }),
        );
      } catch (err) {
        reject(err);
      }
    });
    if (opts.input !== undefined) {
      child.stdin!.on('error', () => {
        /* git exited before reading all of its input; the exit code tells the story */
      });
      child.stdin!.end(opts.input);
    }
    if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
      timer = setTimeout(
        () => {
          timedOut = true;
          if (pgid === undefined || !killGroup(pgid, 'SIGKILL')) child.kill('SIGKILL');
        },
        Math.min(opts.timeoutMs, 2 ** 31 - 1),
      );
    }
  });
}

// ---------------------------------------------------------------------------
// Network calls: a timeout each, and retries of what a remote gets wrong now and then
// ---------------------------------------------------------------------------

/** How long one clone, fetch, push or ls-remote may take when the caller does not say (the fleet file's `git_timeout_minutes`). */
export const DEFAULT_GIT_TIMEOUT_MS = 10 * 60_000;
/** Tries of one network call: the first and two retries. */
export const NETWORK_ATTEMPTS = 3;

/**
 * Failures that say nothing about the request itself, so the same call may
 * well succeed a moment later: a 5xx, a connection dropped or reset (git's
 * "the remote end hung up unexpectedly"), a call killed at its timeout, and a
 * ref lock another push held on the remote. An authentication failure, a
 * missing repository or a hook's refusal are final.
 */
const TRANSIENT_NETWORK = new RegExp(
  [
    'cannot lock ref',
    'failed to lock',
    'unable to create [^\\n]*\\.lock',
    'returned error: 5\\d\\d',
    'HTTP 5\\d\\d',
    'RPC failed',
    'remote end hung up',
    'early EOF',
    'unexpected disconnect',
    'Empty reply from server',
    'Connection reset',
    'Connection refused',
    'Connection timed out',
    'Operation timed out',
    'timed out after \\d+ ms',
    'transfer closed with',
    'SSL_ERROR_SYSCALL',
    'GnuTLS recv error',
    'Recv failure',
    'Send failure',
    'Internal Server Error',
    'Service Unavailable',
    'Bad Gateway',
    'Gateway Time-?out',
  ].join('|'),
  'i',
);

/** True when git's output (or a GitError's message) names a failure worth retrying. */
export function isTransientGitFailure(text: string): boolean {
  return TRANSIENT_NETWORK.test(text);
}

/** Exponential backoff with jitter: retry n waits a random time up to base·2^(n-1), at least a tenth of it. */
export function backoffMs(retry: number, base = 1000): number {
  const cap = base * 2 ** (retry - 1);
  return Math.round(cap / 10 + Math.random() * cap * 0.9);
}

/** A network call's options: `before` runs before every retry (a clone removes what the last try left). */
export type NetworkOptions = GitOptions & { before?: () => Promise<void> };

/**
 * One network git call with its timeout, retried with backoff while it fails
 * transiently. `before` runs before every retry (a clone removes what the last
 * try left). Throws the last GitError; with allowFail, returns the last result.
 */
export async function networkGit(git: Pick<GitRunner, 'run'>, args: string[], opts: NetworkOptions): Promise<GitResult> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS;
  for (let attempt = 1; ; attempt++) {
    let failure: GitError | GitResult;
    try {
      const r = await git.run(args, { ...opts, timeoutMs, allowFail: opts.allowFail });
      if (r.code === 0 || !isTransientGitFailure(r.stderr)) return r;
      failure = r;
    } catch (err) {
      if (!(err instanceof GitError) || !isTransientGitFailure(err.message) || err.killedBy !== null) throw err;
      failure = err;
    }
    if (attempt >= NETWORK_ATTEMPTS || isInterrupted()) {
      if (failure instanceof GitError) throw failure;
      return failure;
    }
    await sleep(backoffMs(attempt));
    await opts.before?.();
  }
}

/** The last `n` lines of git's output that say something. */
export function lastLines(text: string, n: number): string {
  const lines = text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.length > 0 && l !== 'remote:');
  return lines.slice(-n).join('\n');
}

/** The lines of git's stderr that say what went wrong (error:, fatal:, rejected, denied…), else its last lines. */
export function errorLines(text: string, n: number): string {
  const lines = text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.length > 0 && l !== 'remote:');
  const errors = lines.filter((l) => /\b(error|fatal|rejected|denied|refused|declined)\b/i.test(l));
  return (errors.length > 0 ? errors : lines).slice(-n).join('\n');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
