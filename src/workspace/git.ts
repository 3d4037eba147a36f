/**
 * A thin, fast wrapper over the git CLI. Every call spawns `git` directly (no
 * shell) with a fixed, non-interactive configuration:
 *
 *   git -c core.hooksPath=/dev/null -c advice.detachedHead=false (…more -c) <args>
 *
 * and an environment with GIT_TERMINAL_PROMPT=0, LC_ALL=C and a fixed commit
 * identity. Repository-locating variables inherited from a parent git process
 * (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, …) are removed so a call only ever
 * touches the directory it is given.
 *
 * Every error is a `GitError` whose message, args and stderr went through
 * `redact`, so a token in a remote URL never reaches a log or a lane result.
 */
import { spawn } from 'node:child_process';
import { closeSync, constants as fsConstants, existsSync, fstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, realpath, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_COMMIT_IDENTITY, type CommitSigning, type UserGitConfig } from '../core/commit-identity.js';
import { gitLauncher, type GitLauncher } from './launcher.js';
import { redact } from '../util/secrets.js';
import { GIT_LOCATING_ENV } from '../util/directive-env.js';
import { isInterrupted, killGroup, killGroupOrLeader, pinnedProgram, signalName, trackGroup, untrackGroup } from './processes.js';

// ---------------------------------------------------------------------------
// Identity and environment
// ---------------------------------------------------------------------------

export interface GitIdentity {
  name: string;
  email: string;
}

export const DEFAULT_GIT_IDENTITY: Readonly<GitIdentity> = DEFAULT_COMMIT_IDENTITY;
let identity: GitIdentity = { ...DEFAULT_GIT_IDENTITY };

/** Sets the author and committer of every commit Fleet makes; `null` restores the default ("Fleet"). A per-call `env` still wins. */
export function setGitIdentity(id: Partial<GitIdentity> | null): void {
  identity = id ? { name: id.name ?? DEFAULT_GIT_IDENTITY.name, email: id.email ?? DEFAULT_GIT_IDENTITY.email } : { ...DEFAULT_GIT_IDENTITY };
}

export function getGitIdentity(): GitIdentity {
  return { ...identity };
}

let signing: { format: string; key: string | null; program: string } | null = null;

/**
 * Signs every commit Fleet makes from now on (null: none), the way the user's git would: its format, key and program.
 * The program is pinned to its absolute path now, before any directive could put another of that name on PATH.
 * Returns why signing cannot be set up (the program is not installed), or null.
 */
export function setGitSigning(s: CommitSigning | null): string | null {
  if (!s) {
    signing = null;
    return null;
  }
  // git expands a leading ~/ in gpg.program (a pathname); a bare name is looked up on PATH, now.
  const named = s.program.startsWith('~/') ? path.join(os.homedir(), s.program.slice(2)) : s.program;
  const program = named.includes('/') ? path.resolve(named) : pinnedProgram(named);
  if (!program.startsWith('/') || !existsSync(program)) {
    return `signing commits (${s.format}) runs ${s.program}, which is not installed here: install it, or set sign_commits: off`;
  }
  // git reads user.signingkey as a path for ssh: `~/` as the user meant it, a relative path against where Fleet started.
  // A literal key (`key::…`, or git's older `ssh-…` form) is passed as it is.
  const literal = !s.key || s.key.startsWith('key::') || s.key.startsWith('ssh-');
  const key = s.format === 'ssh' && !literal ? (s.key!.startsWith('~/') ? path.join(os.homedir(), s.key!.slice(2)) : path.resolve(s.key!)) : s.key;
  signing = { format: s.format, key, program };
  return null;
}

/** The configuration a commit-making git call gets: signing as set by setGitSigning (BASE_CONFIG turns it off). */
function signConfig(): string[] {
  if (!signing) return [];
  const key = signing.key === null ? [] : ['-c', `user.signingkey=${signing.key}`];
  return ['-c', 'commit.gpgsign=true', '-c', `gpg.format=${signing.format}`, '-c', `gpg.${signing.format}.program=${signing.program}`, ...key];
}

const USER_CONFIG_KEYS = /^(user\.(name|email|signingkey)|commit\.gpgsign|gpg\.(format|program)|gpg\.(openpgp|ssh|x509)\.program)$/;

/**
 * The user's own git identity and signing set-up, read from their system and global configuration (never a
 * repository's) and git's identity variables. Read once, before any directive runs: Fleet's git never reads these
 * files afterwards, since a directive runs as the same user and could rewrite them.
 */
export async function readUserGitConfig(env: NodeJS.ProcessEnv = process.env): Promise<UserGitConfig> {
  const userEnv: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !(GIT_LOCATING_ENV as readonly string[]).includes(k)) userEnv[k] = v;
  // A GIT_DIR that cannot exist: git reads the system and global files and no repository's; one call for both.
  userEnv.GIT_DIR = '/dev/null/no-repository';
  const r = await git(['config', '--includes', '--show-scope', '--null', '--get-regexp', USER_CONFIG_KEYS.source], {
    cwd: os.homedir(),
    userEnv,
    allowFail: true,
  });
  const values = new Map<string, string>();
  const fields = r.stdout.split('\0');
  for (let i = 0; i + 1 < fields.length; i += 2) {
    // The `-c` options Fleet passes every git (BASE_CONFIG) are the "command" scope: not the user's.
    if (fields[i] === 'command') continue;
    const entry = fields[i + 1]!;
    const nl = entry.indexOf('\n');
    // A key with no value (`[commit] gpgsign`) is true, and --null prints it without the newline.
    if (nl > 0) values.set(entry.slice(0, nl).toLowerCase(), entry.slice(nl + 1));
    else if (entry) values.set(entry.toLowerCase(), 'true');
  }
  const format = (values.get('gpg.format') ?? 'openpgp').toLowerCase();
  const gpgsign = values.get('commit.gpgsign');
  return {
    name: env.GIT_AUTHOR_NAME || values.get('user.name') || undefined,
    email: env.GIT_AUTHOR_EMAIL || values.get('user.email') || undefined,
    gpgsign: gpgsign === undefined ? undefined : /^(true|yes|on|1)$/i.test(gpgsign.trim()),
    format: values.get('gpg.format'),
    signingKey: values.get('user.signingkey') || undefined,
    program: values.get(`gpg.${format}.program`) || (format === 'openpgp' ? values.get('gpg.program') : undefined) || undefined,
  };
}

/**
 * Fleet's own git calls also drop a ceiling or dates they did not set, and the
 * Actions runtime's credentials: git never needs them, and a filter or hook a
 * hostile repository got git to run would inherit them (the runtime token can
 * upload artifacts the report job reads).
 */
const STRIPPED_ENV = [
  ...GIT_LOCATING_ENV,
  'GIT_CEILING_DIRECTORIES',
  'GIT_AUTHOR_DATE',
  'GIT_COMMITTER_DATE',
  'ACTIONS_RUNTIME_TOKEN',
  'ACTIONS_RUNTIME_URL',
  'ACTIONS_RESULTS_URL',
  'ACTIONS_CACHE_URL',
  'ACTIONS_ID_TOKEN_REQUEST_TOKEN',
  'ACTIONS_ID_TOKEN_REQUEST_URL',
];

/**
 * Configuration forced on every call (before the subcommand). Only the
 * transports a target can be reached over are allowed: `ext::` runs a command
 * and `fd::` talks to an inherited descriptor, neither of which a target needs.
 * The user's attributes and excludes files are not read either: what a lane
 * commits depends on the target repository alone, the same on every machine.
 */
const BASE_CONFIG = [
  '-c',
  'protocol.allow=never',
  '-c',
  'protocol.file.allow=always',
  '-c',
  'protocol.https.allow=always',
  '-c',
  'protocol.http.allow=always',
  '-c',
  'protocol.ssh.allow=always',
  '-c',
  'protocol.git.allow=always',
  '-c',
  'core.attributesFile=/dev/null',
  '-c',
  'core.excludesFile=/dev/null',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'advice.detachedHead=false',
  '-c',
  'core.quotePath=false',
  '-c',
  'commit.gpgsign=false',
  '-c',
  'tag.gpgsign=false',
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
  // Where Fleet runs as root its directives run as nobody, in working copies made theirs (sandbox.ts): git would
  // refuse them as owned by someone else. What that check guards against, a repository's own configuration
  // running programs, Fleet's git is kept from anyway: .git/config is put back as cloned before each call.
  '-c',
  'safe.directory=*',
];

/**
 * Fleet's git reads only configuration Fleet wrote: the repository's own
 * .git/config (put back as cloned after every foreign command, see
 * workspace.ts) and what this module passes. A directive runs as the same user
 * and can write ~/.gitconfig, $XDG_CONFIG_HOME/git/config or (as root)
 * /etc/gitconfig: a `core.fsmonitor` there would run its program inside
 * Fleet's push with the credential header in the environment, and a
 * `url.*.pushInsteadOf` would send the lane's commit to another repository.
 * Replace refs (`git replace`) and grafts are ignored for the same reason:
 * through them a directive could show Fleet a diff other than the commit's.
 */
const ISOLATED_ENV: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_NO_REPLACE_OBJECTS: '1',
};

/**
 * Git, by the absolute path it had at Fleet's first git call: every directive runs after its lane's clone, so no
 * directive can have planted a `git` on PATH by then (see pinnedProgram).
 */
const gitProgram = (): string => pinnedProgram('git');

function gitEnv(extra?: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...ISOLATED_ENV };
  for (const k of STRIPPED_ENV) delete env[k];
  env.GIT_TERMINAL_PROMPT = '0';
  env.GCM_INTERACTIVE = 'never';
  env.LC_ALL = 'C';
  env.GIT_AUTHOR_NAME = identity.name;
  env.GIT_AUTHOR_EMAIL = identity.email;
  env.GIT_COMMITTER_NAME = identity.name;
  env.GIT_COMMITTER_EMAIL = identity.email;
  if (extra) Object.assign(env, extra);
  return env;
}

// ---------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------

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

interface RawResult {
  stdout: Buffer;
  stderr: string;
  code: number;
}

function runGit(args: readonly string[], opts: GitOptions): Promise<RawResult> {
  const launcher = gitLauncher();
  return launcher ? runLaunched(launcher, args, opts) : runSpawned(args, opts);
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
  end: { exit: number; signal: string | null; timedOut: boolean; stdout: Buffer; stderr: string },
): RawResult {
  const { exit, signal, stderr } = end;
  if (end.timedOut) throw new GitError(args, -1, stderr, `timed out after ${opts.timeoutMs} ms`);
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
async function runLaunched(launcher: GitLauncher, args: readonly string[], opts: GitOptions): Promise<RawResult> {
  const launched = launcher.launch({
    file: gitProgram(),
    args: [...BASE_CONFIG, ...args],
    cwd: opts.cwd,
    env: opts.userEnv ?? gitEnv(opts.env),
    sharedEnv: () => gitEnv(),
    input: opts.input,
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
  return settle(args, opts, { exit: signalled ? -1 : r.status, signal: signalled, timedOut, stdout: r.stdout, stderr: r.stderr });
}

/** Starts git with Node's own spawn: where no launcher shell can be had. */
function runSpawned(args: readonly string[], opts: GitOptions): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    let child;
    try {
      // A group of its own (git, git-remote-https, ssh…), so an interrupt or a timeout can end all of it: a
      // transport helper left behind would keep the forge's credential header in its environment.
      child = spawn(gitProgram(), [...BASE_CONFIG, ...args], {
        cwd: opts.cwd,
        env: opts.userEnv ?? gitEnv(opts.env),
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
    child.stdout!.on('data', (b: Buffer) => out.push(b));
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
        resolve(settle(args, opts, { exit: code ?? -1, signal, timedOut, stdout: Buffer.concat(out), stderr: Buffer.concat(errOut).toString('utf8') }));
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

/** Runs `git <args>` in `cwd`. Throws a `GitError` on a non-zero exit unless `allowFail`. stderr is returned as git wrote it (callers that log it should `redact` it). */
export async function git(args: string[], opts: GitOptions): Promise<GitResult> {
  const r = await runGit(args, opts);
  return { stdout: r.stdout.toString('utf8'), stderr: r.stderr, code: r.code };
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

/**
 * One network git call with its timeout, retried with backoff while it fails
 * transiently. `before` runs before every retry (a clone removes what the last
 * try left). Throws the last GitError; with allowFail, returns the last result.
 */
async function networkGit(args: string[], opts: GitOptions & { before?: () => Promise<void> }): Promise<GitResult> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS;
  for (let attempt = 1; ; attempt++) {
    let failure: GitError | GitResult;
    try {
      const r = await git(args, { ...opts, timeoutMs, allowFail: opts.allowFail });
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

function lastLines(text: string, n: number): string {
  const lines = text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.length > 0 && l !== 'remote:');
  return lines.slice(-n).join('\n');
}

/** The lines of git's stderr that say what went wrong (error:, fatal:, rejected, denied…), else its last lines. */
function errorLines(text: string, n: number): string {
  const lines = text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.length > 0 && l !== 'remote:');
  const errors = lines.filter((l) => /\b(error|fatal|rejected|denied|refused|declined)\b/i.test(l));
  return (errors.length > 0 ? errors : lines).slice(-n).join('\n');
}

// ---------------------------------------------------------------------------
// Remotes
// ---------------------------------------------------------------------------

/** True when git would treat `url` as a path on this machine (not `scheme://…` nor scp-like `host:path`). */
export function isLocalRemote(url: string): boolean {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return url.toLowerCase().startsWith('file://');
  if (url.startsWith('/') || url.startsWith('.') || url.startsWith('~')) return true;
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  return colon < 0 || (slash >= 0 && slash < colon);
}

/** Makes a local path absolute (expanding `~`), so git does not resolve it against its cwd; URLs are returned unchanged. */
export function normalizeRemote(url: string): string {
  if (!isLocalRemote(url) || /^file:\/\//i.test(url)) return url;
  if (url === '~' || url.startsWith('~/')) return path.join(os.homedir(), url.slice(1));
  return path.resolve(url);
}

/** A neutral cwd for commands that do not need a repository (ls-remote, clone). */
function neutralCwd(): string {
  return os.tmpdir();
}

// ---------------------------------------------------------------------------
// Inspection
// ---------------------------------------------------------------------------

export type RepoKind = 'repo' | 'bare' | 'not-a-repository' | 'not-found';

/**
 * What `p` is: the top of a working tree ('repo'), a bare repository ('bare'),
 * an existing path that is neither ('not-a-repository'; a subdirectory of some
 * other repository counts as this), or nothing ('not-found').
 */
export async function isGitRepo(p: string): Promise<RepoKind> {
  let abs: string;
  try {
    abs = await realpath(p);
    if (!(await stat(abs)).isDirectory()) return 'not-a-repository';
  } catch {
    return 'not-found';
  }
  // The ceiling keeps git from discovering a repository above `abs`.
  const r = await git(['rev-parse', '--is-bare-repository', '--is-inside-work-tree', '--show-prefix'], {
    cwd: abs,
    env: { GIT_CEILING_DIRECTORIES: path.dirname(abs) },
    allowFail: true,
  });
  if (r.code !== 0) return 'not-a-repository';
  const [bare, inside, prefix = ''] = r.stdout.split('\n');
  if (bare === 'true') return 'bare';
  if (inside === 'true' && prefix === '') return 'repo';
  return 'not-a-repository';
}

/** True when the repository at `p` (bare or not) has at least one commit. */
export async function hasCommits(p: string): Promise<boolean> {
  const r = await git(['for-each-ref', '--count=1', '--format=%(objectname)', 'refs/heads'], { cwd: p, allowFail: true });
  if (r.code === 0 && r.stdout.trim() !== '') return true;
  const head = await git(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd: p, allowFail: true });
  return head.code === 0;
}

/** The branch HEAD of a remote (URL or path) points at, via `git ls-remote --symref <url> HEAD`; null for an empty repository or a detached HEAD. Throws a GitError when the remote cannot be read. */
export async function defaultBranch(remoteUrlOrPath: string): Promise<string | null> {
  return (await defaultBranchHead(remoteUrlOrPath))?.branch ?? null;
}

/** The same answer with the commit HEAD points at, which the one `ls-remote --symref` call also lists (`<sha>\tHEAD`). */
export async function defaultBranchHead(remoteUrlOrPath: string): Promise<{ branch: string; commit: string | null } | null> {
  const r = await networkGit(['ls-remote', '--symref', '--', normalizeRemote(remoteUrlOrPath), 'HEAD'], { cwd: neutralCwd() });
  const m = /^ref: refs\/heads\/(\S.*)\tHEAD$/m.exec(r.stdout);
  if (!m) return null;
  const sha = /^([0-9a-f]{40}(?:[0-9a-f]{24})?)\tHEAD$/m.exec(r.stdout);
  return { branch: m[1]!, commit: sha ? sha[1]! : null };
}

/** The commit a remote branch points at, or null when it does not exist. Throws a GitError when the remote cannot be read. */
export async function lsRemoteBranch(url: string, branch: string): Promise<string | null> {
  const ref = `refs/heads/${branch}`;
  const r = await networkGit(['ls-remote', '--', normalizeRemote(url), ref], { cwd: neutralCwd() });
  for (const line of r.stdout.split('\n')) {
    const [sha, name] = line.split('\t');
    if (name === ref && sha) return sha;
  }
  return null;
}

/** The full sha `rev` names in `dir`, or null when it names nothing. */
export async function revParse(dir: string, rev: string): Promise<string | null> {
  const r = await git(['rev-parse', '--verify', '--quiet', '--end-of-options', rev], { cwd: dir, allowFail: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

/**
 * A small file of git's metadata (HEAD, a ref, packed-refs), read with synchronous calls: from the page cache
 * they take microseconds, where each call through libuv's thread pool costs some 0.1 ms of CPU, and Fleet reads
 * these many times a lane. Opened without following a link and without blocking, and only when it is a regular
 * file: a FIFO or a device a directive left in .git neither stalls Fleet nor feeds it forever. Throws like fs does.
 */
export function readGitFile(file: string): string {
  const fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW);
  try {
    if (!fstatSync(fd).isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EFTYPE' });
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * The commit a ref points at, read from the repository's files (a loose ref,
 * else packed-refs) without starting git: Fleet asks this many times a lane.
 * `gitDir` is the .git folder (or the bare repository). Null when the ref
 * does not exist; undefined when the files cannot answer (then ask git).
 */
export function readRef(gitDir: string, ref: string): string | null | undefined {
  if (!/^refs\/[^\0\s~^:?*[\\]+$/.test(ref) || ref.includes('..')) return undefined;
  try {
    const loose = readGitFile(path.join(gitDir, ref)).trim();
    if (/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(loose)) return loose;
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return undefined;
  }
  let packed: string;
  try {
    packed = readGitFile(path.join(gitDir, 'packed-refs'));
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
  }
  for (const line of packed.split('\n')) {
    if (line.length > 41 && line.endsWith(ref) && line[line.length - ref.length - 1] === ' ') {
      const sha = line.slice(0, line.length - ref.length - 1);
      if (/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(sha)) return sha;
    }
  }
  return null;
}

/** The branch HEAD names and the commit it points at, read from the files; undefined when they cannot answer. */
export function readHead(gitDir: string): { ref: string; commit: string | null } | undefined {
  let head: string;
  try {
    head = readGitFile(path.join(gitDir, 'HEAD')).trim();
  } catch {
    return undefined;
  }
  const m = /^ref: (refs\/heads\/.+)$/.exec(head);
  if (!m) return undefined;
  const commit = readRef(gitDir, m[1]!);
  return commit === undefined ? undefined : { ref: m[1]!, commit };
}

/** The .git folder of a repository on disk: `<p>/.git` for a working copy, `p` itself for a bare one. */
export function gitDirOf(p: string): string {
  return existsSync(path.join(p, '.git')) ? path.join(p, '.git') : p;
}

/** The tree of a commit. */
export async function treeOf(dir: string, rev: string): Promise<string> {
  const r = await git(['rev-parse', '--verify', '--end-of-options', `${rev}^{tree}`], { cwd: dir });
  return r.stdout.trim();
}

/** The first parent of a commit; null for a root commit. */
export async function parentOf(dir: string, rev: string): Promise<string | null> {
  return revParse(dir, `${rev}^1^{commit}`);
}

// ---------------------------------------------------------------------------
// A lane's working copy
// ---------------------------------------------------------------------------

export interface CloneForLaneOptions {
  /** The branch to start from; defaults to the remote's default branch (its HEAD). */
  base?: string;
  /** The lane branch created locally at the base commit. */
  branch: string;
  /** Shallow clone depth, for network remotes only (git ignores depth for local paths). */
  depth?: number;
  /** Extra environment for the network calls (a forge's credentials as an extra header). */
  env?: Record<string, string>;
  /** How long the clone (and the fetch) may take, each try; default DEFAULT_GIT_TIMEOUT_MS. */
  timeoutMs?: number;
  /**
   * Where the lane branch lives when not in the cloned repository (a fork): `origin` then points there, so the lane
   * branch's state is read from it and the push goes to it, while the base came from `url`.
   */
  headUrl?: string;
}

export interface CloneForLaneResult {
  base_branch: string;
  base_commit: string;
  /** Where the lane branch already is on the remote (a previous run), or null; the lease for `pushBranch`. */
  remote_branch_commit: string | null;
}

/**
 * Clones one branch of `url` into `dir` (hard-linking objects for a local
 * path), learns where the lane branch already is on the remote (fetched into
 * refs/remotes/origin/<branch> so its tree can be compared), and checks out
 * the lane branch at the base commit.
 */
export async function cloneForLane(url: string, dir: string, opts: CloneForLaneOptions): Promise<CloneForLaneResult> {
  const src = normalizeRemote(url);
  const target = path.resolve(dir);
  await mkdir(path.dirname(target), { recursive: true });
  const args = ['clone', '--quiet', '--no-tags', '--single-branch', '--template=', '-c', 'core.quotePath=false'];
  if (opts.base) args.push('--branch', opts.base);
  if (opts.depth !== undefined && opts.depth > 0 && !isLocalRemote(src)) args.push('--depth', String(opts.depth));
  args.push('--', src, target);
  // A try that was killed or cut off leaves a partial working copy behind: the next starts from nothing.
  const clean = () => rm(target, { recursive: true, force: true });
  await networkGit(args, { cwd: path.dirname(target), env: opts.env, timeoutMs: opts.timeoutMs, before: clean });

  // The lane branch's remote state is fetched while HEAD is read and the lane
  // branch checked out: they touch different refs, and fetch not the index.
  // On a remote on disk, a lane branch that does not exist yet (the usual first run) needs no fetch at all.
  if (opts.headUrl) await git(['remote', 'set-url', 'origin', normalizeRemote(opts.headUrl)], { cwd: target });
  const wanted = opts.base === undefined || opts.branch !== opts.base;
  const onDisk = wanted && !opts.headUrl && isLocalRemote(src) && !/^file:/i.test(src);
  let exists = wanted;
  if (onDisk) {
    const onRemote = readRef(gitDirOf(src), `refs/heads/${opts.branch}`);
    exists =
      onRemote === undefined
        ? (
            await git(['rev-parse', '--verify', '--quiet', `refs/heads/${opts.branch}`], {
              cwd: src,
              env: { GIT_CEILING_DIRECTORIES: path.dirname(src) },
              allowFail: true,
            })
          ).code === 0
        : onRemote !== null;
  }
  const fetching = exists
    ? networkGit(['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', 'origin', `+refs/heads/${opts.branch}:refs/remotes/origin/${opts.branch}`], {
        cwd: target,
        allowFail: true,
        env: opts.env,
        timeoutMs: opts.timeoutMs,
      })
    : null;
  const checkingOut = (async () => {
    // The commit and the branch HEAD points at: from the files when they say, else one call ("HEAD" when detached, e.g. a tag as base).
    const fromFiles = readHead(path.join(target, '.git'));
    const head = fromFiles?.commit
      ? { code: 0, stdout: `${fromFiles.commit}\n${fromFiles.ref.slice('refs/heads/'.length)}\n`, stderr: '' }
      : await git(['rev-parse', 'HEAD', '--abbrev-ref', 'HEAD'], { cwd: target, allowFail: true });
    const [commit, abbrev] = head.stdout.trim().split('\n');
    if (head.code !== 0 || !commit || !abbrev) {
      throw new GitError(['clone', '--', src, target], 128, head.stderr, 'the remote repository has no commits (empty repository)');
    }
    if (!startBranch(path.join(target, '.git'), opts.branch, commit)) {
      await git(['checkout', '--quiet', '-B', opts.branch, commit], { cwd: target });
    }
    return { base_commit: commit, base_branch: abbrev === 'HEAD' ? (opts.base ?? 'HEAD') : abbrev };
  })();
  const [fetch, checkedOut] = await Promise.allSettled([fetching ?? Promise.resolve(null), checkingOut]);
  if (checkedOut.status === 'rejected') throw checkedOut.reason;
  if (fetch.status === 'rejected') throw fetch.reason;
  const { base_commit, base_branch } = checkedOut.value;

  let remote_branch_commit: string | null = null;
  if (opts.branch === base_branch) {
    remote_branch_commit = base_commit;
  } else if (fetch.value && fetch.value.code === 0) {
    remote_branch_commit = await revParse(target, `refs/remotes/origin/${opts.branch}`);
  } else if (fetch.value && !/couldn't find remote ref|could not find remote ref/i.test(fetch.value.stderr)) {
    throw new GitError(['fetch', 'origin', `refs/heads/${opts.branch}`], fetch.value.code, fetch.value.stderr);
  }
  return { base_branch, base_commit, remote_branch_commit };
}

/**
 * A branch name whose ref Fleet writes as a plain file: components of letters, digits, `.`, `_` and `-` that
 * start with neither `.` nor `-`, end with neither `.` nor `.lock`, no `..`. Git accepts every such name;
 * any other is left to git, which knows all of its rules.
 */
const PLAIN_BRANCH = /^(?:[A-Za-z0-9_][A-Za-z0-9._-]*\/)*[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/**
 * Creates refs/heads/<branch> at `commit` and points HEAD at it, by writing the two files as
 * `git checkout -B <branch> <commit>` would, when the working tree and the index already are `commit`'s (just
 * cloned): a git process less per lane. False, having changed nothing git would mind (at most an empty folder
 * under refs/heads), when the name is not plain or the ref already exists in any form: then git does it.
 */
function startBranch(gitDir: string, branch: string, commit: string): boolean {
  if (!PLAIN_BRANCH.test(branch) || branch.includes('..') || /(?:\.|\.lock)(?:\/|$)/.test(branch)) return false;
  const ref = `refs/heads/${branch}`;
  if (readRef(gitDir, ref) !== null) return false;
  const file = path.join(gitDir, ref);
  const lock = path.join(gitDir, 'HEAD.lock');
  // Synchronous, as readRef: two small files in a fresh clone, written in microseconds.
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    // 'wx': a ref that appeared meanwhile (or a folder of that name, for a longer branch) is git's to sort out.
    writeFileSync(file, `${commit}\n`, { flag: 'wx' });
  } catch {
    return false;
  }
  let locked = false;
  try {
    // As git does it: HEAD is replaced whole through HEAD.lock, never seen half-written.
    writeFileSync(lock, `ref: ${ref}\n`, { flag: 'wx' });
    locked = true;
    renameSync(lock, path.join(gitDir, 'HEAD'));
    return true;
  } catch {
    if (locked) rmSync(lock, { force: true });
    return false; // the branch exists now; `checkout -B` resets it and moves HEAD
  }
}

export interface ChangedEntry {
  /** A (added), M (modified), D (deleted), R (renamed), C (copied), T (type changed). */
  status: string;
  path: string;
  /** The old path of a rename or copy. */
  from?: string;
}

export interface ChangedFiles {
  /** Every path the directive added, modified or deleted (the new path of a rename), sorted. */
  files: string[];
  /** The old paths of renamed files, sorted. They no longer exist: a fence must check them too. */
  renamed_from: string[];
  entries: ChangedEntry[];
}

/**
 * Stages everything (`git add -A`: untracked files not ignored, deletions,
 * renames) and lists the staged changes against HEAD. Paths come out exactly
 * (NUL-separated, no quoting), spaces and unicode included.
 */
export async function changedFiles(dir: string): Promise<ChangedFiles> {
  await git(['add', '--all'], { cwd: dir });
  const r = await runGit(['diff', '--cached', '--name-status', '-z', '-M', '--no-ext-diff', 'HEAD', '--'], { cwd: dir });
  return parseNameStatus(r.stdout);
}

/**
 * What changed between two commits, read from their trees (replace refs
 * ignored, as on every call): the files a push of `to` would change on a
 * branch at `from`, whatever the index or the working tree say.
 */
export async function changedBetween(dir: string, from: string, to: string): Promise<ChangedFiles> {
  const r = await runGit(['diff-tree', '-r', '--name-status', '-z', '-M', '--no-ext-diff', '--end-of-options', from, to, '--'], { cwd: dir });
  return parseNameStatus(r.stdout);
}

export interface CommittedChange extends ChangedFiles {
  /** `git diff --binary -M from to`, byte for byte. */
  patch: Buffer;
}

/**
 * `changedBetween` and `diffPatchBuffer` from one git process: `diff-tree --raw -z -p` writes the listing
 * (exact paths), an empty field, then the same patch `git diff --binary` writes (the options that shape it are
 * all given, and Fleet's git reads no diff configuration but the clone's own).
 */
export async function committedChange(dir: string, from: string, to: string): Promise<CommittedChange> {
  const r = await runGit(
    [
      'diff-tree',
      '-r',
      '-z',
      '--raw',
      '-p',
      '-M',
      '--binary',
      '--no-color',
      '--no-ext-diff',
      '--no-textconv',
      '--src-prefix=a/',
      '--dst-prefix=b/',
      '--end-of-options',
      from,
      to,
      '--',
    ],
    { cwd: dir },
  );
  return parseRawThenPatch(r.stdout);
}

/** `--raw -z -p` output: `:<modes> <ids> <status>`, one path (two for a rename or copy), each NUL-terminated; then an empty field and the patch. */
function parseRawThenPatch(out: Buffer): CommittedChange {
  let at = 0;
  const field = (): string => {
    const end = out.indexOf(0, at);
    if (end < 0) throw new GitError(['diff-tree'], 0, '', 'diff-tree wrote a listing Fleet cannot read (a field without its NUL)');
    const text = out.toString('utf8', at, end);
    at = end + 1;
    return text;
  };
  const entries: ChangedEntry[] = [];
  while (at < out.length) {
    const head = field();
    if (head === '') break; // the separator: the patch follows
    if (!head.startsWith(':')) throw new GitError(['diff-tree'], 0, '', `diff-tree wrote a listing Fleet cannot read (${JSON.stringify(head.slice(0, 40))})`);
    const status = head.slice(head.lastIndexOf(' ') + 1)[0] ?? '';
    if (status === 'R' || status === 'C') {
      const from = field();
      entries.push({ status, path: field(), from });
    } else {
      entries.push({ status, path: field() });
    }
  }
  return { ...changedFromEntries(entries), patch: out.subarray(at) };
}

/** `--name-status -z` output: a status, then one path (two for a rename or copy), each NUL-terminated. */
function parseNameStatus(out: Buffer): ChangedFiles {
  const parts = out.toString('utf8').split('\0');
  const entries: ChangedEntry[] = [];
  for (let i = 0; i < parts.length; ) {
    const code = parts[i++];
    if (!code) continue;
    const status = code[0]!;
    if (status === 'R' || status === 'C') {
      const from = parts[i++]!;
      const to = parts[i++]!;
      entries.push({ status, path: to, from });
    } else {
      entries.push({ status, path: parts[i++]! });
    }
  }
  return changedFromEntries(entries);
}

function changedFromEntries(entries: ChangedEntry[]): ChangedFiles {
  const files = [...new Set(entries.map((e) => e.path))].sort();
  const renamed_from = [...new Set(entries.filter((e) => e.status === 'R' && e.from !== undefined).map((e) => e.from!))].sort();
  return { files, renamed_from, entries };
}

export interface CommitOptions {
  /** Skip `git add -A` because `changedFiles` just staged everything. */
  staged?: boolean;
  /** Commit even when nothing is staged (the caller reads the commit's change to learn whether there was one). */
  allowEmpty?: boolean;
}

/** Commits everything (staging it first unless `staged`) with `message` kept verbatim apart from surrounding blank lines; returns the commit sha. No hooks, no signing. */
export async function commitAll(dir: string, message: string, opts: CommitOptions = {}): Promise<string> {
  if (!opts.staged) await git(['add', '--all'], { cwd: dir });
  const empty = opts.allowEmpty ? ['--allow-empty'] : [];
  await git([...signConfig(), 'commit', '--quiet', '--no-verify', '--cleanup=whitespace', ...empty, '--file=-'], { cwd: dir, input: message });
  const head = readHead(path.join(dir, '.git'));
  if (head?.commit) return head.commit;
  const r = await git(['rev-parse', 'HEAD'], { cwd: dir });
  return r.stdout.trim();
}

/** A binary-safe patch from `fromRev` to `toRev` (`git diff --binary`), as UTF-8 text. Use `diffPatchBuffer` for byte-exact output when files are not UTF-8. */
export async function diffPatch(dir: string, fromRev: string, toRev: string): Promise<string> {
  return (await diffPatchBuffer(dir, fromRev, toRev)).toString('utf8');
}

export async function diffPatchBuffer(dir: string, fromRev: string, toRev: string): Promise<Buffer> {
  const r = await runGit(
    ['diff', '--binary', '--no-color', '--no-ext-diff', '--no-textconv', '--src-prefix=a/', '--dst-prefix=b/', '-M', fromRev, toRev, '--'],
    { cwd: dir },
  );
  return r.stdout;
}

// ---------------------------------------------------------------------------
// Pushing
// ---------------------------------------------------------------------------

export type PushResult =
  | { ok: true; status: 'created' | 'updated' | 'forced' | 'up-to-date' }
  | { ok: false; reason: 'stale' | 'rejected' | 'error'; detail: string };

interface PorcelainLine {
  flag: string;
  summary: string;
}

function parsePorcelain(stdout: string, dst: string): PorcelainLine | null {
  for (const line of stdout.split('\n')) {
    const parts = line.split('\t');
    if (parts.length < 3) continue;
    const [flag, refs, summary] = parts as [string, string, string];
    if (refs.endsWith(`:${dst}`)) return { flag: flag.trim() === '' ? ' ' : flag.trim(), summary: summary.trim() };
  }
  return null;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * What the remote said about a refused push, its first line first (reports
 * show only that): the porcelain line with the words a hook printed on
 * `remote:` lines (a pre-receive hook explains itself only there, in words
 * that need not say "error"), then git's own error lines.
 */
function pushDetail(line: PorcelainLine | null, stderr: string): string {
  const said = stderr
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => /^remote:\s*\S/.test(l) && !/^remote:\s*(Resolving deltas|Counting objects|Compressing objects|Total \d)/i.test(l))
    .slice(-10)
    .map((l) => l.replace(/^remote:\s*/, ''))
    .join(' ');
  const first = [line ? `${line.flag} ${line.summary}` : '', said].filter(Boolean).join(': ');
  const errors = errorLines(
    stderr
      .split('\n')
      .filter((l) => !l.startsWith('remote:'))
      .join('\n'),
    4,
  );
  return redact([first, errors].filter(Boolean).join('\n'));
}

async function pushWithLease(
  dir: string,
  src: string,
  dstRef: string,
  expected: string | null,
  env?: Record<string, string>,
  timeoutMs = DEFAULT_GIT_TIMEOUT_MS,
): Promise<PushResult> {
  let last: PushResult = { ok: false, reason: 'error', detail: 'push was not attempted' };
  for (let attempt = 1; attempt <= NETWORK_ATTEMPTS; attempt++) {
    let r: GitResult;
    try {
      r = await git(
        [
          'push',
          '--porcelain',
          '--no-verify',
          '--no-signed',
          '--no-follow-tags',
          '--recurse-submodules=no',
          `--force-with-lease=${dstRef}:${expected ?? ''}`,
          'origin',
          `${src}:${dstRef}`,
        ],
        { cwd: dir, allowFail: true, env, timeoutMs },
      );
    } catch (err) {
      if (!(err instanceof GitError) || err.killedBy !== null) throw err;
      r = { stdout: '', stderr: err.message, code: err.exitCode };
    }
    const line = parsePorcelain(r.stdout, dstRef);
    const detail = pushDetail(line, r.stderr);
    if (line && line.flag !== '!' && r.code === 0) {
      const status = line.flag === '*' ? 'created' : line.flag === '+' ? 'forced' : line.flag === '=' ? 'up-to-date' : 'updated';
      return { ok: true, status };
    }
    const transient = isTransientGitFailure(line?.summary ?? '') || isTransientGitFailure(r.stderr);
    if (line && line.flag === '!') {
      if (/stale info|fetch first|non-fast-forward/i.test(line.summary)) {
        // A try whose answer was lost (a dropped connection) may have pushed all the same: then the lease is ours.
        if (attempt > 1 && (await landed(dir, src, dstRef, env, timeoutMs))) return { ok: true, status: expected ? 'forced' : 'created' };
        return { ok: false, reason: 'stale', detail };
      }
      last = { ok: false, reason: 'rejected', detail };
    } else {
      last = { ok: false, reason: 'error', detail: detail || `git push exited with ${r.code}` };
    }
    if (!transient || isInterrupted()) return last;
    if (attempt < NETWORK_ATTEMPTS) await sleep(backoffMs(attempt));
  }
  return last;
}

/** Does the remote's `dstRef` hold the commit `src` names here? */
async function landed(dir: string, src: string, dstRef: string, env: Record<string, string> | undefined, timeoutMs: number): Promise<boolean> {
  const mine = await revParse(dir, src);
  const r = await git(['ls-remote', 'origin', dstRef], { cwd: dir, env, allowFail: true, timeoutMs }).catch(() => null);
  const theirs =
    r?.code === 0
      ? r.stdout
          .split('\n')
          .find((l) => l.endsWith(`\t${dstRef}`))
          ?.split('\t')[0]
      : undefined;
  return mine !== null && theirs === mine;
}

/**
 * Pushes HEAD to refs/heads/<branch> on origin, with a lease: the remote
 * branch must still be at `expected` (null: must not exist yet). A lease
 * failure (someone else pushed) is `stale`; a refusal by the remote (hook,
 * protection) is `rejected`, with the hook's own words; anything else (auth,
 * network) is `error`. Each try is killed at `timeoutMs`; transient failures
 * (a 5xx, a dropped connection, a timeout, a ref lock) are tried again, up to
 * 3 tries, with exponential backoff and jitter.
 */
export async function pushBranch(
  dir: string,
  branch: string,
  opts: { commit?: string; expected: string | null; env?: Record<string, string>; timeoutMs?: number },
): Promise<PushResult> {
  // `commit`: the very commit the caller judged, not whatever HEAD names by the time git reads it.
  return pushWithLease(dir, opts.commit ?? 'HEAD', `refs/heads/${branch}`, opts.expected, opts.env, opts.timeoutMs);
}

/**
 * The local merge: moves refs/heads/<baseBranch> on origin to `commit`, only if
 * it still is `expectedBaseCommit` (lease → `stale` otherwise) and `commit`
 * descends from it (a fast-forward; `rejected` otherwise).
 */
export async function pushFastForward(dir: string, commit: string, baseBranch: string, expectedBaseCommit: string): Promise<PushResult> {
  const anc = await git(['merge-base', '--is-ancestor', expectedBaseCommit, commit], { cwd: dir, allowFail: true });
  if (anc.code === 1) return { ok: false, reason: 'rejected', detail: `${commit} is not a fast-forward of ${baseBranch} (${expectedBaseCommit})` };
  if (anc.code !== 0) return { ok: false, reason: 'error', detail: redact(lastLines(anc.stderr, 4)) || 'cannot compare commits' };
  return pushWithLease(dir, commit, `refs/heads/${baseBranch}`, expectedBaseCommit);
}

export type MergeOutcome = { ok: true; commit: string } | { ok: false; conflicts: string[] };

/**
 * Merges `commit` into the checked-out branch with a merge commit of its own (`--no-ff`: the integration keeps which
 * lane brought what). A conflict is aborted, the branch left as it was, and the conflicting paths returned.
 */
export async function mergeCommit(dir: string, commit: string, message: string): Promise<MergeOutcome> {
  const r = await git([...signConfig(), 'merge', '--quiet', '--no-ff', '--no-verify', '--no-edit', '-m', message, commit], { cwd: dir, allowFail: true });
  if (r.code === 0) return { ok: true, commit: (await git(['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim() };
  const unmerged = await git(['diff', '--name-only', '-z', '--diff-filter=U'], { cwd: dir, allowFail: true });
  await git(['merge', '--abort'], { cwd: dir, allowFail: true });
  const conflicts = unmerged.stdout.split('\0').filter(Boolean).sort();
  if (!conflicts.length) throw new GitError(['merge', commit], r.code, r.stderr);
  return { ok: false, conflicts };
}

/** A commit on a branch beyond its base (see src/core/branch-conflict.ts). */
export interface BranchCommitInfo {
  commit: string;
  parents: string[];
  author: string;
  message: string;
  cleanMerge?: boolean;
}

/** The commits `head` holds that `base` lacks, oldest first: at most `max` (the newest `max` when there are more). */
export async function commitsBetween(dir: string, base: string, head: string, max: number): Promise<BranchCommitInfo[]> {
  const r = await git(['log', '--topo-order', `--max-count=${max}`, '--format=%H%x1f%P%x1f%an <%ae>%x1f%B%x00', `${base}..${head}`, '--'], { cwd: dir });
  const out: BranchCommitInfo[] = [];
  for (const entry of r.stdout.split('\0')) {
    const [commit, parents, author, message] = entry.replace(/^\n/, '').split('\x1f');
    if (!commit || parents === undefined || author === undefined || message === undefined) continue;
    out.push({ commit, parents: parents.split(' ').filter(Boolean), author, message: message.trim() });
  }
  // A merge is Fleet's to redo only when it changed nothing beyond merging (merge-tree needs git 2.38; older: not clean).
  for (const c of out) {
    if (c.parents.length !== 2) continue;
    const merged = await git(['merge-tree', '--write-tree', '--', c.parents[0]!, c.parents[1]!], { cwd: dir, allowFail: true });
    c.cleanMerge = merged.code === 0 && merged.stdout.split('\n', 1)[0] === (await treeOf(dir, c.commit));
  }
  return out.reverse();
}

/**
 * Puts `commits` (oldest first) on the checked-out branch: a commit whose first parent is the branch's head already is
 * taken as it is (fast-forward), any other is cherry-picked (a merge as its change against its first parent), one
 * whose change the branch already holds is dropped. A conflict is aborted, the branch left where it was before that
 * commit, and the commit and its paths returned. Replayed commits are never signed (see signConfig).
 */
export async function replayCommits(
  dir: string,
  commits: readonly BranchCommitInfo[],
): Promise<{ ok: true; head: string } | { ok: false; commit: string; conflicts: string[] }> {
  let head = (await git(['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim();
  for (const c of commits) {
    if (c.parents[0] === head && c.parents.length === 1) {
      await git(['reset', '--quiet', '--hard', c.commit], { cwd: dir });
      head = c.commit;
      continue;
    }
    // Not signed: the commit is someone else's work, which Fleet's key should not vouch for.
    const args = ['cherry-pick', '--allow-empty', ...(c.parents.length > 1 ? ['-m', '1'] : []), c.commit];
    const r = await git(args, { cwd: dir, allowFail: true });
    if (r.code !== 0) {
      const unmerged = await git(['diff', '--name-only', '-z', '--diff-filter=U'], { cwd: dir, allowFail: true });
      const conflicts = unmerged.stdout.split('\0').filter(Boolean).sort();
      if (conflicts.length) {
        await git(['cherry-pick', '--abort'], { cwd: dir, allowFail: true });
        return { ok: false, commit: c.commit, conflicts };
      }
      // --allow-empty keeps a commit that was empty to begin with; one whose change the base took meanwhile stops
      // the cherry-pick as "now empty": dropped.
      const empty = (await git(['diff', '--cached', '--quiet', 'HEAD'], { cwd: dir, allowFail: true })).code === 0;
      if (!empty) throw new GitError(args, r.code, r.stderr);
      await git(['cherry-pick', '--skip'], { cwd: dir, allowFail: true });
      await git(['reset', '--quiet', '--hard', head], { cwd: dir });
      continue;
    }
    head = (await git(['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim();
  }
  return { ok: true, head };
}

/** Is `ancestor` reachable from `rev` (a lane's commit already merged into the integration)? */
export async function isAncestor(dir: string, ancestor: string, rev: string): Promise<boolean> {
  return (await git(['merge-base', '--is-ancestor', ancestor, rev], { cwd: dir, allowFail: true })).code === 0;
}

/** Fetches `branch` of `url` into refs/remotes/fleet/<branch>; its commit, or null when the remote has no such branch. */
export async function fetchBranch(dir: string, url: string, branch: string, env?: Record<string, string>, timeoutMs?: number): Promise<string | null> {
  const r = await networkGit(
    ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', normalizeRemote(url), `+refs/heads/${branch}:refs/remotes/fleet/${branch}`],
    { cwd: dir, env, timeoutMs, allowFail: true },
  );
  if (r.code !== 0) {
    if (/couldn't find remote ref|could not find remote ref/i.test(r.stderr)) return null;
    throw new GitError(['fetch', url, branch], r.code, r.stderr);
  }
  return revParse(dir, `refs/remotes/fleet/${branch}`);
}
