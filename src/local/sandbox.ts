/**
 * Process isolation for directives and checks: each runs in a PID namespace
 * of its own, under a small init, with /proc mounted for that namespace only.
 *
 * Why: a directive runs as Fleet's user. Removing a token from Fleet's
 * environment does not remove it from the kernel's copy
 * (/proc/<fleet>/environ), nor from its ancestors' (the runner step that
 * started Fleet holds INPUT_TOKEN); ptrace-free reads of /proc need no
 * privilege for one's own user. In its own PID namespace a directive sees no
 * process but its own, and when it ends its init exits and the kernel kills
 * every process left in the namespace, so nothing it started (`setsid … &`) lives on
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
import { shellQuote } from './agent.js';

export type { IsolationInfo, IsolationSetting } from '../ports.js';

/** How one command is started inside the sandbox. */
export interface Sandbox extends IsolationInfo {
  /** The program and arguments to spawn instead of `file args…` with `env`; identity when there is no isolation. */
  wrap(file: string, args: readonly string[], env?: Record<string, string | undefined>): { file: string; args: string[] };
}

/** The variables that name the runner's command files (Fleet withholds them; the folder they sit in is masked too). */
const RUNNER_COMMAND_FILES = ['GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_OUTPUT', 'GITHUB_STATE', 'GITHUB_STEP_SUMMARY'];

/**
 * PID 1 of the namespace. It mounts an empty read-only tmpfs over every folder
 * named before `--` (as root in the new mount namespace, so only the directive
 * sees them), then runs the rest as its child and waits: the directive is not
 * PID 1 itself, so it keeps ordinary signal semantics (`kill -9 $$`, a SIGTERM
 * on timeout) and orphans have a parent. Signals Fleet sends are passed on; the
 * child's standard input is handed over explicitly, since an asynchronous
 * command's would be /dev/null. A child killed by signal N ends PID 1 with
 * 128+N, which exec.ts reads back as the signal.
 */
const INIT = [
  'while [ "$1" != -- ]; do mount -t tmpfs -o size=4k,mode=0555,ro fleet-masked "$1" || exit 125; shift; done; shift',
  'exec 3<&0',
  '"$@" 0<&3 3<&- &',
  'c=$!',
  'exec 3<&-',
  'for s in TERM INT HUP QUIT USR1 USR2; do trap "kill -$s $c 2>/dev/null" $s; done',
  'while :; do wait "$c"; st=$?; kill -0 "$c" 2>/dev/null || exit "$st"; done',
].join('\n');

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
export interface Strategy {
  via: string;
  prefix: string[];
  /** sudo resets PATH (secure_path) and may reset HOME: they are set again for the command. */
  restoresEnv?: boolean;
}

export function strategies(opts: { unshare: string; setpriv: string | null; sudo: string | null; uid: number; gid: number; masks: string[] }): Strategy[] {
  const { unshare, setpriv, sudo, uid, gid, masks } = opts;
  const setup = (drop: string[]) => [...NAMESPACES, '--', '/bin/sh', '-c', INIT, 'fleet-sandbox', ...masks, '--', ...drop];
  const out: Strategy[] = [];
  if (uid === 0) {
    if (setpriv) out.push({ via: 'unshare as root', prefix: [unshare, ...setup([setpriv, '--bounding-set=-all', '--inh-caps=-all', '--'])] });
    return out;
  }
  out.push({
    via: 'unshare in a user namespace',
    prefix: [unshare, '--user', '--map-root-user', ...setup([unshare, '--user', `--map-user=${uid}`, `--map-group=${gid}`, '--'])],
  });
  if (sudo && setpriv) {
    out.push({ via: 'sudo unshare', prefix: [sudo, '-n', '-E', '--', unshare, ...setup([setpriv, `--reuid=${uid}`, `--regid=${gid}`, '--init-groups', '--'])], restoresEnv: true });
  }
  return out;
}

/** True when `prefix` starts a command as the first child of a new namespace's PID 1, whose /proc shows only them, with every mask in place. */
function works(prefix: string[], masks: string[]): boolean {
  // A password prompt would wait for ever: sudo -n fails instead, and the probe has a timeout besides.
  // Fleet's own pid must be missing from the namespace's /proc (a pid that small could exist there too: then count).
  const hidden = process.pid > 50 ? `[ ! -e /proc/${process.pid} ]` : '[ "$(ls /proc | grep -c "^[0-9]")" -lt 10 ]';
  const probe = ['grep -q fleet-sandbox /proc/1/cmdline', hidden, ...masks.map((m) => `[ -z "$(ls -A ${shellQuote(m)})" ]`)].join(' && ');
  const r = spawnSync(prefix[0]!, [...prefix.slice(1), '/bin/sh', '-c', probe], { stdio: 'ignore', timeout: 10_000 });
  return r.status === 0;
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
    if (works(s.prefix, masks)) return sandboxOf(s);
  }
  const tried = found.map((s) => s.via).join(', ') || 'nothing (setpriv is not installed)';
  return NONE(`no way to start a PID namespace here (tried ${tried}); unprivileged user namespaces may be turned off, and sudo needs a password or is missing`);
}

/** The sandbox a strategy gives. */
export function sandboxOf(s: Strategy): Sandbox {
  return {
    kind: 'pid-namespace',
    detail: s.via,
    wrap: (file, args, env) => {
      const restore = s.restoresEnv ? ['/usr/bin/env', ...(['PATH', 'HOME'] as const).flatMap((k) => (env?.[k] !== undefined ? [`${k}=${env[k]}`] : []))] : [];
      return { file: s.prefix[0]!, args: [...s.prefix.slice(1), ...restore, file, ...args] };
    },
  };
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
