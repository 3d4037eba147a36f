/**
 * Process isolation for directives and checks: each runs as PID 1 of a PID
 * namespace of its own, with /proc mounted for that namespace only.
 *
 * Why: a directive runs as Fleet's user. Removing a token from Fleet's
 * environment does not remove it from the kernel's copy
 * (/proc/<fleet>/environ), nor from its ancestors' (the runner step that
 * started Fleet holds INPUT_TOKEN); ptrace-free reads of /proc need no
 * privilege for one's own user. In its own PID namespace a directive sees no
 * process but its own, and when its first process ends the kernel kills every
 * process left in the namespace, so nothing it started (`setsid … &`) lives on
 * into the steps after Fleet's. The runner's command files are hidden under an
 * empty tmpfs in the same (private) mount namespace.
 *
 * How, in the order tried (the first whose probe works is kept for the process):
 * - Fleet is root: `unshare` directly; the directive then runs as root without
 *   capabilities (it cannot unmount the masks or load a module).
 * - An unprivileged user namespace: `unshare --user --map-root-user` sets up
 *   the namespaces, then a nested user namespace maps the directive back to
 *   Fleet's own uid, so files it writes are Fleet's user's and it holds no
 *   capability (util-linux 2.38 or later).
 * - `sudo -n` (GitHub's hosted runners, where AppArmor refuses unprivileged user
 *   namespaces but sudo needs no password): `unshare` as root, then `setpriv`
 *   back to Fleet's uid and groups.
 * Otherwise directives run without isolation, and the report says so.
 *
 * The directive keeps its HOME and environment: an agent CLI's login under the
 * user's home still works. Fleet's own configuration needs no hiding: its git
 * reads none of the user's (see git.ts), and its credentials live only in
 * its memory and in the environment of its own git calls.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { IsolationInfo, IsolationSetting } from '../ports.js';

export type { IsolationInfo, IsolationSetting } from '../ports.js';

/** How one command is started inside the sandbox. */
export interface Sandbox extends IsolationInfo {
  /** The program and arguments to spawn instead of `file args…`; identity when there is no isolation. */
  wrap(file: string, args: readonly string[]): { file: string; args: string[] };
}

/** The variables that name the runner's command files (Fleet withholds them; the folder they sit in is masked too). */
const RUNNER_COMMAND_FILES = ['GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_OUTPUT', 'GITHUB_STATE', 'GITHUB_STEP_SUMMARY'];

/**
 * Mounts an empty read-only tmpfs over every folder named before `--`, then
 * execs the rest. Run as root in the new mount namespace, so the mounts are
 * seen by the directive only.
 */
const MASK_AND_EXEC = 'while [ "$1" != -- ]; do mount -t tmpfs -o size=4k,mode=0555,ro fleet-masked "$1" || exit 125; shift; done; shift; exec "$@"';

const NAMESPACES = ['--pid', '--fork', '--kill-child', '--mount', '--mount-proc', '--propagation', 'private'];

export interface SandboxOptions {
  /** Folders to hide from directives (default: the folders of the runner's command files, from the environment). */
  masks?: string[];
  /** The environment Fleet started with, to find the runner's command files. */
  env?: NodeJS.ProcessEnv;
  /** Fleet's uid and gid (default: this process's). */
  uid?: number;
  gid?: number;
}

/** The folders holding the runner's command files (GITHUB_ENV and the rest) that exist on this machine. */
export function runnerCommandFolders(env: NodeJS.ProcessEnv): string[] {
  const dirs = new Set<string>();
  for (const k of RUNNER_COMMAND_FILES) {
    const f = env[k];
    if (!f || !path.isAbsolute(f)) continue;
    const d = path.dirname(f);
    try {
      if (statSync(d).isDirectory()) dirs.add(d);
    } catch {
      /* not on this machine */
    }
  }
  return [...dirs].sort();
}

function onPath(program: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, program);
    if (existsSync(p)) return p;
  }
  return null;
}

/** The argv prefix of each way in, up to the command (`…, '--', file, args…` follows). */
export function strategies(opts: { unshare: string; setpriv: string | null; sudo: string | null; uid: number; gid: number; masks: string[] }): Array<{ via: string; prefix: string[] }> {
  const { unshare, setpriv, sudo, uid, gid, masks } = opts;
  // Nothing to mask (outside a runner): the namespaces' first process is the drop itself, a shell fewer per command.
  const setup = (drop: string[]) => (masks.length ? [...NAMESPACES, '--', '/bin/sh', '-c', MASK_AND_EXEC, 'fleet-sandbox', ...masks, '--', ...drop] : [...NAMESPACES, '--', ...drop]);
  const out: Array<{ via: string; prefix: string[] }> = [];
  if (uid === 0) {
    if (setpriv) out.push({ via: 'unshare as root', prefix: [unshare, ...setup([setpriv, '--bounding-set=-all', '--inh-caps=-all', '--'])] });
    return out;
  }
  out.push({
    via: 'unshare in a user namespace',
    prefix: [unshare, '--user', '--map-root-user', ...setup([unshare, '--user', `--map-user=${uid}`, `--map-group=${gid}`, '--'])],
  });
  if (sudo && setpriv) {
    out.push({ via: 'sudo unshare', prefix: [sudo, '-n', '-E', '--', unshare, ...setup([setpriv, `--reuid=${uid}`, `--regid=${gid}`, '--init-groups', '--'])] });
  }
  return out;
}

/** True when `prefix` starts a command as PID 1 of a namespace whose /proc shows only it, with every mask in place. */
function works(prefix: string[], masks: string[]): boolean {
  // Fleet's own pid must be missing from the namespace's /proc (a pid that small could exist there too: then count).
  const hidden = process.pid > 50 ? `[ ! -e /proc/${process.pid} ]` : '[ "$(ls /proc | grep -c "^[0-9]")" -lt 10 ]';
  const probe = ['test "$$" = 1', hidden, ...masks.map((m) => `[ -z "$(ls -A ${shellQuote(m)})" ]`)].join(' && ');
  const r = spawnSync(prefix[0]!, [...prefix.slice(1), '/bin/sh', '-c', probe], { stdio: 'ignore', timeout: 10_000 });
  return r.status === 0;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

const NONE = (detail: string): Sandbox => ({ kind: 'none', detail, wrap: (file, args) => ({ file, args: [...args] }) });

/** Finds the first way in that works on this machine, or says why there is none. */
export function detectSandbox(opts: SandboxOptions = {}): Sandbox {
  if (process.platform !== 'linux') return NONE(`process isolation needs Linux namespaces; this is ${process.platform}`);
  const unshare = onPath('unshare');
  if (!unshare) return NONE('unshare (util-linux) is not installed');
  const masks = opts.masks ?? runnerCommandFolders(opts.env ?? process.env);
  const uid = opts.uid ?? process.getuid!();
  const gid = opts.gid ?? process.getgid!();
  const found = strategies({ unshare, setpriv: onPath('setpriv'), sudo: onPath('sudo'), uid, gid, masks });
  for (const s of found) {
    if (!works(s.prefix, masks)) continue;
    return { kind: 'pid-namespace', detail: s.via, wrap: (file, args) => ({ file: s.prefix[0]!, args: [...s.prefix.slice(1), file, ...args] }) };
  }
  const tried = found.map((s) => s.via).join(', ') || 'nothing (setpriv is not installed)';
  return NONE(`no way to start a PID namespace here (tried ${tried}); unprivileged user namespaces may be turned off, and sudo needs a password or is missing`);
}

let cached: Sandbox | undefined;

/** The sandbox of this process, probed once. */
export function processSandbox(): Sandbox {
  cached ??= detectSandbox();
  return cached;
}

/** What a setting gives on this machine: the sandbox, or no isolation with the reason. */
export function sandboxFor(setting: IsolationSetting): Sandbox {
  if (setting === 'off') return NONE('turned off in the fleet file (isolation: off)');
  return processSandbox();
}
