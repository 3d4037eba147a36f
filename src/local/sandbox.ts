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
 * empty tmpfs in the same (private) mount namespace, and so, per command, are the
 * folders its caller names, but for folders kept visible inside them: for a lane,
 * the whole fleet workspace but the lane's own folder, and Fleet's private
 * temporary folder (workspace.ts). That costs the same few mounts (two masks,
 * the lane's folder mounted back, a remount read-only) whatever the number of lanes.
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
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { IsolationInfo, IsolationSetting } from '../ports.js';
import { shellQuote } from './agent.js';
import { privateTmp } from './private-tmp.js';

export type { IsolationInfo, IsolationSetting } from '../ports.js';

/** What one command, beyond the sandbox's own masks, sees of the file system. */
export interface WrapOptions {
  /** The folder the command starts in; entered again once the folders below are hidden (else `..` from the old one would reach them). */
  cwd?: string;
  /** Folders hidden under an empty read-only mount for this command. */
  hide?: readonly string[];
  /** Folders inside a hidden one that stay visible at the same path, as they are (writable where they were). */
  keep?: readonly string[];
}

/** How one command is started inside the sandbox. */
export interface Sandbox extends IsolationInfo {
  /** The program and arguments to spawn instead of `file args…` with `env`; identity when there is no isolation. */
  wrap(file: string, args: readonly string[], env?: Record<string, string | undefined>, opts?: WrapOptions): { file: string; args: string[] };
}

/** The variables that name the runner's command files (Fleet withholds them; the folder they sit in is masked too). */
const RUNNER_COMMAND_FILES = ['GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_OUTPUT', 'GITHUB_STATE', 'GITHUB_STEP_SUMMARY'];

/**
 * PID 1 of the namespace. Its arguments before `--` (as root in the new mount
 * namespace, so only the directive sees what it mounts), acted on in order:
 * - `DIR`: an empty read-only tmpfs over DIR (the runner's command files, when
 *   the command hides nothing else);
 * - `-k DIR`: DIR is opened on the next descriptor from 5 up, to stay visible
 *   inside a folder about to be hidden;
 * - `-t FILE`: one `mount -a` of the table in FILE (see mountTable): the masks,
 *   then the kept folders mounted back at their own paths from those
 *   descriptors (recursively, so a mask under one comes along);
 * - `-r DIR`: the mask on DIR, writable while the kept folders' mount points
 *   were made in it, made read-only;
 * - `-c DIR`: the folder to enter last: the working folder the command was
 *   started in is still the one under the mounts, and `..` from it would walk
 *   into the hidden folder's real contents.
 * A failure ends it with 125 before the command runs. Then it runs the rest as its child and waits: the directive is not
 * PID 1 itself, so it keeps ordinary signal semantics (`kill -9 $$`, a SIGTERM
 * on timeout) and orphans have a parent. Signals Fleet sends are passed on; the
 * child's standard input is handed over explicitly, since an asynchronous
 * command's would be /dev/null. A child killed by signal N ends PID 1 with
 * 128+N, which exec.ts reads back as the signal.
 */
const INIT = [
  'n=4',
  'while [ "$1" != -- ]; do case $1 in',
  '  -k) [ -d "$2" ] && [ $n -lt 9 ] || exit 125; n=$((n+1)); eval "exec $n<\"\\$2\""; shift 2;;',
  '  -t) [ -f "$2" ] || exit 125; exec 4<"$2"; mount -a -c -T /proc/self/fd/4 || exit 125; exec 4<&-; shift 2;;',
  '  -r) mount -c -o remount,bind,ro "$2" || exit 125; shift 2;;',
  '  -c) cd -- "$2" || exit 125; shift 2;;',
  '  *) mount -t tmpfs -o size=4k,mode=0555,ro fleet-masked "$1" || exit 125; shift;;',
  'esac; done; shift',
  'while [ $n -gt 4 ]; do eval "exec $n<&-"; n=$((n-1)); done',
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

/** How each way in starts a command: `prefix`, INIT's arguments (`masks` and the command's own), `--`, `drop`, the command. */
export interface Strategy {
  via: string;
  /** Up to INIT's arguments. */
  prefix: string[];
  /** The folders hidden from every command (the runner's command files). */
  masks: string[];
  /** What INIT runs the command through, to give up its privileges. */
  drop: string[];
  /** sudo resets PATH (secure_path) and may reset HOME: they are set again for the command. */
  restoresEnv?: boolean;
}

export function strategies(opts: { unshare: string; setpriv: string | null; sudo: string | null; uid: number; gid: number; masks: string[] }): Strategy[] {
  const { unshare, setpriv, sudo, uid, gid, masks } = opts;
  const setup = [...NAMESPACES, '--', '/bin/sh', '-c', INIT, 'fleet-sandbox'];
  const out: Strategy[] = [];
  if (uid === 0) {
    if (setpriv) out.push({ via: 'unshare as root', prefix: [unshare, ...setup], masks, drop: [setpriv, '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--'] });
    return out;
  }
  out.push({
    via: 'unshare in a user namespace',
    prefix: [unshare, '--user', '--map-root-user', ...setup],
    masks,
    drop: [unshare, '--user', `--map-user=${uid}`, `--map-group=${gid}`, '--'],
  });
  if (sudo && setpriv) {
    // Back as the user, for good: no new privileges (the runner user's passwordless sudo would otherwise make the
    // directive root again, free to unmount its /proc and read Fleet's environment), no capabilities, and none of the
    // user's supplementary groups (the runner user is in `docker`, another way to root).
    const drop = [setpriv, `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--'];
    out.push({ via: 'sudo unshare', prefix: [sudo, '-n', '-E', '--', unshare, ...setup], masks, drop, restoresEnv: true });
  }
  return out;
}

/** A path as a field of an fstab line: whitespace, `\` and `#` as octal escapes, which libmount reads back. */
function fstabField(p: string): string {
  return p.replace(/[ \t\n\r\v\f\\#]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

/** Tables written, by content: the same lane's commands share one file. */
const tables = new Map<string, string>();

/**
 * A file holding `text`, for `mount -a --fstab`, which wants a regular file (not a pipe). Kept in Fleet's private
 * folder, which every such table hides from the command itself, for the rest of the process.
 */
function mountTable(text: string, dir?: string): string {
  let file = dir === undefined ? tables.get(text) : undefined;
  if (file === undefined || !existsSync(file)) {
    file = path.join(dir ?? privateTmp(), `mounts-${createHash('sha256').update(text).digest('hex').slice(0, 20)}`);
    writeFileSync(file, text, { mode: 0o600 });
    if (dir === undefined) tables.set(text, file);
  }
  return file;
}

/**
 * INIT's arguments for one command (see INIT), given the sandbox's own masks. Without folders to hide, each mask
 * is a `mount` of its own; with them, one `mount -a` of a table makes every mask and mounts the kept folders back,
 * and one more makes the masks they sit in read-only: two `mount` calls however many folders. Throws when asked
 * for what INIT cannot do. `tableDir`: where the table goes, if not in Fleet's private folder (the probe's own).
 */
export function initArgs(opts: WrapOptions = {}, masks: readonly string[] = [], tableDir?: string): string[] {
  const hide = (opts.hide ?? []).map((d) => path.resolve(d));
  const inside = (d: string, h: string) => d.startsWith(h.endsWith('/') ? h : `${h}/`);
  // A kept folder not inside a hidden one is visible anyway.
  const keep = (opts.keep ?? []).map((d) => path.resolve(d)).filter((k) => hide.some((h) => inside(k, h)));
  if (keep.length > 5) throw new RangeError('the sandbox keeps at most 5 folders visible inside hidden ones');
  const out: string[] = [];
  if (hide.length === 0) {
    out.push(...masks);
  } else {
    for (const k of keep) out.push('-k', k);
    const holds = (h: string) => keep.some((k) => inside(k, h));
    const rows = [
      ...[...masks, ...hide.filter((h) => !holds(h))].map((d) => `fleet-masked ${fstabField(d)} tmpfs size=4k,mode=0555,ro 0 0`),
      // Writable until the kept folders' mount points are made in it (X-mount.mkdir), then read-only (-r).
      ...hide.filter(holds).map((h) => `fleet-masked ${fstabField(h)} tmpfs size=4k,mode=0555 0 0`),
      ...keep.map((k, i) => `/proc/self/fd/${5 + i} ${fstabField(k)} none rbind,X-mount.mkdir 0 0`),
    ];
    out.push('-t', mountTable(`${rows.join('\n')}\n`, tableDir));
    for (const h of hide.filter(holds)) out.push('-r', h);
  }
  if (opts.cwd !== undefined) out.push('-c', path.resolve(opts.cwd));
  return out;
}

/**
 * True when the strategy starts a command as the first child of a new namespace's PID 1, whose /proc shows only
 * them, with every mask in place, and with a folder hidden but for a folder kept inside it: what the command sees
 * there, and from its working folder, is only the kept folder, written through, and nothing can be added beside it.
 */
export function works(s: Strategy, masks: string[]): boolean {
  let scratch: string | undefined;
  try {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'fleet-probe-'));
    const hidden = path.join(scratch, 'hidden');
    const kept = path.join(hidden, 'lanes', 'kept');
    mkdirSync(kept, { recursive: true });
    writeFileSync(path.join(hidden, 'other'), '');
    // A password prompt would wait for ever: sudo -n fails instead, and the probe has a timeout besides.
    // Fleet's own pid must be missing from the namespace's /proc (a pid that small could exist there too: then count).
    const pidHidden = process.pid > 50 ? `[ ! -e /proc/${process.pid} ]` : '[ "$(ls /proc | grep -c "^[0-9]")" -lt 10 ]';
    const probe = [
      'grep -q fleet-sandbox /proc/1/cmdline',
      pidHidden,
      ...masks.map((m) => `[ -z "$(ls -A ${shellQuote(m)})" ]`),
      `[ ! -e ${shellQuote(path.join(hidden, 'other'))} ] && [ ! -e ../../other ] && [ "$(ls -A ..)" = kept ]`,
      // `true`, not `:`: a failed redirection of a special built-in ends the shell.
      `true > written && ! { true > ${shellQuote(path.join(hidden, 'added'))}; } 2>/dev/null`,
      // Not root again through a passwordless sudo (root itself stays root, without capabilities).
      ...(process.getuid?.() === 0 ? [] : ['! sudo -n true 2>/dev/null']),
    ].join(' && ');
    const args = [...s.prefix.slice(1), ...initArgs({ cwd: kept, hide: [hidden], keep: [kept] }, s.masks, scratch), '--', ...s.drop, '/bin/sh', '-c', probe];
    const r = spawnSync(s.prefix[0]!, args, { cwd: kept, stdio: 'ignore', timeout: 10_000 });
    return r.status === 0 && existsSync(path.join(kept, 'written'));
  } catch {
    return false;
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
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
    if (works(s, masks)) return sandboxOf(s);
  }
  const tried = found.map((s) => s.via).join(', ') || 'nothing (setpriv is not installed)';
  return NONE(`no way to start a PID namespace here (tried ${tried}); unprivileged user namespaces may be turned off, and sudo needs a password or is missing`);
}

/** The sandbox a strategy gives. */
export function sandboxOf(s: Strategy): Sandbox {
  return {
    kind: 'pid-namespace',
    detail: s.via,
    wrap: (file, args, env, opts) => {
      const restore = s.restoresEnv ? ['/usr/bin/env', ...(['PATH', 'HOME'] as const).flatMap((k) => (env?.[k] !== undefined ? [`${k}=${env[k]}`] : []))] : [];
      return { file: s.prefix[0]!, args: [...s.prefix.slice(1), ...initArgs(opts, s.masks), '--', ...s.drop, ...restore, file, ...args] };
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
