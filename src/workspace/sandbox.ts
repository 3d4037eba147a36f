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
 * What Fleet runs after a command (its own installation, the Node it runs on) is
 * mounted read-only in the command's view, whoever Fleet runs as.
 *
 * How, in the order tried (the first whose probe works is kept for the process):
 * - Fleet is root: `unshare` directly; the directive then runs as nobody, without
 *   capabilities: root without them would still own every program Fleet runs
 *   next. Its lane's folder is made nobody's, it gets a HOME of its own, and the
 *   folders on its way that nobody could not pass are masked, the way down made
 *   anew (viewFor).
 * - An unprivileged user namespace: `unshare --user --map-root-user` sets up
 *   the namespaces, then a nested user namespace maps the directive back to
 *   Fleet's own uid, so files it writes are Fleet's user's and it holds no
 *   capability (util-linux 2.38 or later).
 * - `sudo -n` (GitHub's hosted runners, where AppArmor refuses unprivileged user
 *   namespaces but sudo needs no password): `unshare` as root, then `setpriv`
 *   back to Fleet's uid and groups.
 * Otherwise directives run without isolation, and the report says so.
 *
 * The directive keeps its HOME (but as nobody) and environment: an agent CLI's
 * login under the user's home still works. Fleet's own configuration needs no
 * hiding: its git reads none of the user's (see git/env.ts), and its credentials
 * live only in its memory and in the environment of its own git calls.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  chownSync,
  constants as fsConstants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { lchown, lstat, mkdir, open, readdir, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { IsolationInfo, IsolationSetting } from '../ports.js';
import { shellQuote } from '../core/agent.js';
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
  /**
   * Folders the command reads but does not own (the fleet file's folder): where the command runs as another user
   * than Fleet, kept reachable through folders that user could not pass, never made its own.
   */
  reach?: readonly string[];
}

/** How one command is started inside the sandbox. */
export interface Sandbox extends IsolationInfo {
  /**
   * The program and arguments to spawn instead of `file args…` with `env`, and the folder to spawn them in (the
   * command enters its own); identity when there is no isolation.
   */
  wrap(file: string, args: readonly string[], env?: Record<string, string | undefined>, opts?: WrapOptions): { file: string; args: string[]; cwd?: string };
  /**
   * Before `wrap`, where the command runs as another user than Fleet (Fleet is root): its kept folders are made that
   * user's, so that it can write its working copy and nothing else of Fleet's.
   */
  prepare(opts?: WrapOptions): Promise<void>;
}

/** The variables that name the runner's command files (Fleet withholds them; the folder they sit in is masked too). */
const RUNNER_COMMAND_FILES = ['GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_OUTPUT', 'GITHUB_STATE', 'GITHUB_STEP_SUMMARY'];

/**
 * PID 1 of the namespace. Its arguments before `--` (as root in the new mount
 * namespace, so only the directive sees what it mounts), acted on in order:
 * - `-k DIR`: DIR is opened on the next descriptor from 5 up, to stay visible
 *   inside a folder about to be hidden;
 * - `-t FILE`: one `mount -a` of the table in FILE (see mountTable): the pins,
 *   the masks, then the kept folders mounted back at their own paths from those
 *   descriptors (recursively, so a mask under one comes along); under umask 022,
 *   whatever Fleet's, so that the way it makes anew inside a mask is one the
 *   command's user can pass (under 027, as root, every lane failed to start);
 * - `-r DIR`: the mask on DIR, writable while the kept folders' mount points
 *   were made in it, made read-only.
 * It starts in `/`, and the command enters its working folder itself (ENTER),
 * once it is the user it runs as, through the mounts: a folder it was started
 * in would be the one under them, where `..` walks the hidden folder's real
 * contents. A failure ends it with 125 before the command runs. Then it runs the rest as its child and waits: the directive is not
 * PID 1 itself, so it keeps ordinary signal semantics (`kill -9 $$`, a SIGTERM
 * on timeout) and orphans have a parent. Signals Fleet sends are passed on; the
 * child's standard input is handed over explicitly, since an asynchronous
 * command's would be /dev/null. A child killed by signal N ends PID 1 with
 * 128+N, which exec.ts reads back as the signal.
 */
const INIT = [
  'n=4',
  'while [ "$1" != -- ]; do case $1 in',
  '  -k) [ -d "$2" ] && [ $n -lt 9 ] || { echo "fleet-sandbox: no folder $2 to mount back" >&2; exit 125; }; n=$((n+1)); eval "exec $n<"\\$2""; shift 2;;',
  '  -t) [ -f "$2" ] || { echo "fleet-sandbox: no mount table $2" >&2; exit 125; }; exec 4<"$2"; (umask 022 && mount -a -c -T /proc/self/fd/4) || exit 125; exec 4<&-; shift 2;;',
  '  -r) mount -c -o remount,bind,ro "$2" || exit 125; shift 2;;',
  '  *) exit 125;;',
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

/**
 * Who a directive runs as when Fleet is root: a user of its own per lane, nobody on the machine. As root without
 * capabilities it would still own every file root owns: the git, setsid, node and Fleet's own code that Fleet runs
 * after it, /etc/ld.so.preload, the sysctls under /proc/sys. As an unprivileged user it can write only what is made
 * its own (its lane's folder) and a private HOME. One user per lane, not one for all: lanes run at once, and one
 * lane's process handed a descriptor of its folder to another (a unix socket needs no path) would otherwise let
 * that one change the folder while Fleet, as root, works in it. The uid is taken from the lane's folder, in a range
 * no distribution gives its users (2^30 and up: above the subordinate ranges of /etc/subuid too).
 */
export const LANE_USERS = { first: 0x40000000, count: 0x10000000 } as const;

export function laneUser(key: string): { uid: number; gid: number } {
  const id = LANE_USERS.first + (createHash('sha256').update(path.resolve(key)).digest().readUInt32BE(0) % LANE_USERS.count);
  return { uid: id, gid: id };
}

/** setpriv's arguments that make `who` of root for good: no groups, no capabilities, no new privileges. */
function dropTo(setpriv: string, who: { uid: number; gid: number }): string[] {
  return [setpriv, `--reuid=${who.uid}`, `--regid=${who.gid}`, '--clear-groups', '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--'];
}

/**
 * The last step before the command: into its working folder, as the user it runs as and in its own view. As root,
 * the way there could lead through a link the command's lane left (a `repo` swapped for a link to a folder closed
 * to it): a user's `cd` is refused where root's would follow.
 */
const ENTER = ['/bin/sh', '-c', 'cd -- "$0" || exit 125; exec "$@"'];

/** How each way in starts a command: `prefix`, INIT's arguments (`masks` and the command's own), `--`, `drop`, the command. */
export interface Strategy {
  via: string;
  /** Up to INIT's arguments. */
  prefix: string[];
  /** The folders hidden from every command (the runner's command files). */
  masks: string[];
  /** What INIT runs the command through, to give up its privileges (where it is the same for every command). */
  drop: string[];
  /** sudo resets PATH (secure_path) and may reset HOME: they are set again for the command. */
  restoresEnv?: boolean;
  /** Fleet is root: each lane's commands run as a user of the lane's own (laneUser), through this setpriv. */
  perLane?: { setpriv: string };
}

export function strategies(opts: { unshare: string; setpriv: string | null; sudo: string | null; uid: number; gid: number; masks: string[] }): Strategy[] {
  const { unshare, setpriv, sudo, uid, gid, masks } = opts;
  const setup = [...NAMESPACES, '--', '/bin/sh', '-c', INIT, 'fleet-sandbox'];
  const out: Strategy[] = [];
  if (uid === 0) {
    if (setpriv) out.push({ via: 'unshare as root, each lane as a user of its own', prefix: [unshare, ...setup], masks, drop: [], perLane: { setpriv } });
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
    out.push({ via: 'sudo unshare', prefix: [sudo, '-n', '-E', '--', unshare, ...setup], masks, drop: dropTo(setpriv, { uid, gid }), restoresEnv: true });
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
 * One mount a command's view gets:
 * - `hide`: an empty read-only tmpfs over the folder;
 * - `keep`: the folder itself, mounted back (writable where it was) inside a hidden or read-only one;
 * - `ro`: the folder itself, read-only (Fleet's installation, Node's);
 * - `pin`: the folder itself, as it is, mounted onto itself so that it cannot be renamed (pinsFor).
 */
export interface Layer {
  kind: 'pin' | 'hide' | 'keep' | 'ro';
  path: string;
}

/** At one path, the layer that wins: read-only over writable, what is kept over a mask, anything over a pin. */
const RANK = { pin: 0, hide: 1, keep: 2, ro: 3 } as const;
const within = (d: string, h: string) => d !== h && d.startsWith(h === '/' ? '/' : `${h}/`);

/**
 * The layers that change what the command sees, shallower first, each with whether its mount point must be made
 * (it sits in a hidden folder: made in the mask's fresh tmpfs, never on a disk a command can write) and whether a
 * mask must stay writable until what sits in it is mounted. A mask or read-only folder inside a mask adds nothing; so
 * does a kept folder already visible as it is.
 */
export function planLayers(layers: readonly Layer[]): { layer: Layer; mkdir: boolean; holds: boolean }[] {
  const byPath = new Map<string, Layer>();
  for (const l of layers) {
    const p = path.resolve(l.path);
    const had = byPath.get(p);
    if (!had || RANK[l.kind] > RANK[had.kind]) byPath.set(p, { ...l, path: p });
  }
  const depth = (p: string) => (p === '/' ? 0 : p.split('/').length - 1);
  const sorted = [...byPath.values()].sort((x, y) => depth(x.path) - depth(y.path) || x.path.localeCompare(y.path));
  const kept: { layer: Layer; mkdir: boolean; holds: boolean }[] = [];
  for (const layer of sorted) {
    let around: { layer: Layer; holds: boolean } | undefined;
    for (const k of kept) if (within(layer.path, k.layer.path) && (!around || within(k.layer.path, around.layer.path))) around = k;
    const a = around?.layer.kind;
    const covered = a === 'hide';
    if (layer.kind === 'hide' && covered) continue;
    // Inside a mask the way is made anew in a fresh tmpfs, and inside a read-only folder nothing can be renamed.
    if (layer.kind === 'pin' && (covered || a === 'ro')) continue;
    if (layer.kind === 'ro' && (covered || a === 'ro')) continue;
    if (layer.kind === 'keep' && (a === undefined || a === 'keep')) continue;
    if (around && covered) around.holds = true;
    kept.push({ layer, mkdir: covered, holds: false });
  }
  return kept;
}

/**
 * INIT's arguments for one command (see INIT): one `mount -a` of a table that makes every layer, shallowest first,
 * the folders mounted back opened beforehand; a remount read-only of each mask something was mounted inside. Throws when asked for what INIT cannot do. `tableDir`: where the table goes, if not in
 * Fleet's private folder (the probe's own).
 */
export function initArgs(layers: readonly Layer[], tableDir?: string): string[] {
  const plan = planLayers(layers);
  const out: string[] = [];
  const rows: string[] = [];
  let fds = 0;
  for (const { layer, mkdir, holds } of plan) {
    const at = fstabField(layer.path);
    if (layer.kind === 'hide') {
      rows.push(`fleet-masked ${at} tmpfs size=4k,mode=0555${holds ? '' : ',ro'} 0 0`);
      continue;
    }
    if (layer.kind === 'ro') {
      rows.push(`${at} ${at} none rbind,ro 0 0`);
      continue;
    }
    if (layer.kind === 'pin') {
      rows.push(`${at} ${at} none rbind 0 0`);
      continue;
    }
    // A folder mounted back is opened before any mount: by then its path may lead into a mask.
    if (fds === 5) throw new RangeError('the sandbox mounts at most 5 folders back inside hidden ones');
    out.push('-k', layer.path);
    rows.push(`/proc/self/fd/${5 + fds++} ${at} none rbind${mkdir ? ',X-mount.mkdir' : ''} 0 0`);
  }
  if (rows.length) out.push('-t', mountTable(`${rows.join('\n')}\n`, tableDir));
  for (const { layer, holds } of plan) if (layer.kind === 'hide' && holds) out.push('-r', layer.path);
  return out;
}

/** True when `who` may pass through folder `dir` (search permission), as the kernel decides for an unprivileged user. */
function searchable(dir: string, who: { uid: number; gid: number }): boolean {
  try {
    const st = statSync(dir);
    if (st.uid === who.uid) return (st.mode & 0o100) !== 0;
    if (st.gid === who.gid) return (st.mode & 0o010) !== 0;
    return (st.mode & 0o001) !== 0;
  } catch {
    return false;
  }
}

/**
 * Whether `user` may write a folder. Fleet's own user keeps its supplementary groups (a user namespace maps them) and
 * its ACLs: the kernel says what it may write. Another user (root's lanes) has only its own uid and gid.
 */
function writerCheck(user: { uid: number; gid: number }): (dir: string) => boolean {
  return user.uid === process.getuid?.() ? accessible : (dir: string) => writable(dir, user);
}

/** True when this process may make files in `dir`, as the kernel decides (groups, ACLs). */
function accessible(dir: string): boolean {
  try {
    accessSync(dir, fsConstants.W_OK | fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** True when `who` may make files in `dir`. */
function writable(dir: string, who: { uid: number; gid: number }): boolean {
  try {
    const st = statSync(dir);
    if (!st.isDirectory()) return false;
    if (st.uid === who.uid) return (st.mode & 0o300) === 0o300;
    if (st.gid === who.gid) return (st.mode & 0o030) === 0o030;
    return (st.mode & 0o003) === 0o003;
  } catch {
    return false;
  }
}

/**
 * The folders a command must not be able to change, since Fleet runs what is in them after it: Fleet's own
 * installation (the folder holding dist/ or src/: a global npm install, the npx cache, a runner's actions folder)
 * and Node's (on a runner, its own node, which later steps of the job run too), where they belong to a user (or
 * others may write them). A folder of root's that only root writes needs no mount: no directive is root (as root,
 * Fleet runs them as nobody), and neither does everything else Fleet runs, the system's programs.
 */
export function programFolders(): string[] {
  const fleet = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  let node = path.dirname(path.dirname(process.execPath));
  try {
    node = path.dirname(path.dirname(realpathSync(process.execPath)));
  } catch {
    /* the path as started */
  }
  return [...new Set([fleet, node])].filter((dir) => {
    try {
      const st = statSync(dir);
      return st.uid !== 0 || (st.mode & 0o022) !== 0;
    } catch {
      return false;
    }
  });
}

/**
 * Where a command run as another user keeps its HOME and TMPDIR: two folders of that user's, one pair per lane (per
 * kept folder), in Fleet's private folder. Per lane, so that one lane's directive cannot leave an `.npmrc` or an
 * agent's settings for another's.
 */
export function privateHomes(privateDir: string, key: string): { dir: string; home: string; tmp: string } {
  const dir = path.join(privateDir, 'homes', createHash('sha256').update(path.resolve(key)).digest('hex').slice(0, 16));
  return { dir, home: path.join(dir, 'home'), tmp: path.join(dir, 'tmp') };
}

/** The first folder on the way from `from` (exclusive) down to `to` (exclusive) that `who` cannot pass, if any. */
function closedOnTheWay(from: string, to: string, who: { uid: number; gid: number }): string | undefined {
  let at = from;
  for (const step of path.relative(from, to).split(path.sep).slice(0, -1)) {
    at = path.join(at, step);
    if (!searchable(at, who)) return at;
  }
  return undefined;
}

/** How many folders INIT can mount back (descriptors 5 to 9: the shell's redirections take one digit). */
const MAX_KEPT = 5;

/**
 * What one command sees: the sandbox's own masks, the folders the command hides and keeps, the program folders
 * read-only; and, where it runs as another user (`who`: Fleet is root), a HOME of its own (and TMPDIR, where that user cannot
 * write the one it was given), kept visible at their own paths in Fleet's private folder and named in `env`, and
 * every folder it must reach made passable: the highest folder on the way that the user could not pass is hidden,
 * and the way down made anew inside the mask.
 */
export function viewFor(
  s: Pick<Strategy, 'masks'>,
  who: { uid: number; gid: number } | undefined,
  opts: WrapOptions,
  env: Record<string, string | undefined> | undefined,
  privateDir: () => string,
  readOnly: readonly string[] = programFolders(),
): { layers: Layer[]; env: Record<string, string> } {
  const layers: Layer[] = [
    // As Fleet's own user (not root's lanes, which run as users of their own), the user's services too.
    ...[...s.masks, ...(opts.hide ?? []), ...cgroupsToHide(who ?? ownUser()), ...(who ? [] : runtimeFolders())].map((p) => ({
      kind: 'hide' as const,
      path: p,
    })),
    ...(opts.keep ?? []).map((p) => ({ kind: 'keep' as const, path: p })),
    ...readOnly.map((p) => ({ kind: 'ro' as const, path: p })),
  ];
  if (!who) return { layers: [...layers, ...pinsFor(layers, ownUser())], env: {} };
  // A folder the user cannot pass itself is of no use kept, and would stand in the way of what is kept inside it.
  for (const p of opts.reach ?? []) if (searchable(p, who)) layers.push({ kind: 'keep', path: p });
  const own = privateHomes(privateDir(), opts.keep?.[0] ?? opts.cwd ?? '/');
  const set: Record<string, string> = { HOME: own.home };
  layers.push({ kind: 'keep', path: own.dir });
  const tmp = env?.TMPDIR;
  if (tmp && !(path.isAbsolute(tmp) && writable(tmp, who))) set.TMPDIR = own.tmp;
  // Programs on the command's PATH that sit under a folder the user cannot pass (what is installed in root's home:
  // the agent CLI a runner's leg installed, pyenv, rustup): the folder just inside the closed one is kept visible, as
  // far as INIT can keep folders, the first on PATH first.
  const keeps = () => new Set(layers.filter((l) => l.kind === 'keep').map((l) => path.resolve(l.path))).size;
  for (const dir of (env?.PATH ?? '').split(':')) {
    if (keeps() >= MAX_KEPT) break;
    if (!path.isAbsolute(dir) || !existsSync(dir)) continue;
    const closed = closedOnTheWay('/', path.join(dir, 'x'), who);
    if (closed === undefined) continue;
    const inner = path.join(closed, path.relative(closed, dir).split(path.sep)[0]!);
    if (searchable(inner, who)) layers.push({ kind: 'keep', path: inner });
  }
  const kept = layers.filter((l) => l.kind === 'keep').map((l) => path.resolve(l.path));
  for (const p of kept) {
    // From the deepest folder kept around p (its content is what that mount shows), down to p.
    const around = kept.filter((q) => within(p, q)).sort((x, y) => y.length - x.length)[0] ?? '/';
    const closed = closedOnTheWay(around, p, who);
    if (closed !== undefined) layers.push({ kind: 'hide', path: closed });
  }
  return { layers: [...layers, ...pinsFor(layers, who)], env: set };
}

const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * The folders of Fleet's own cgroups, in every hierarchy it is in (/proc/self/cgroup), and the folders above them up
 * to the root of their hierarchy: where one of them is `user`'s to write (a systemd user session delegates the user's
 * cgroups), a command running as `user` could freeze Fleet (`cgroup.freeze`, v1's `freezer.state`) or kill it
 * (`cgroup.kill`), timeouts and interrupt handler with it.
 */
export function cgroupFolders(procSelfCgroup: string, root = CGROUP_ROOT): string[] {
  const out = new Set<string>();
  for (const line of procSelfCgroup.split('\n')) {
    const m = /^(\d+):([^:]*):(\/.*)$/.exec(line.trim());
    if (!m) continue;
    const [, hier, controllers, at] = m;
    // v2 (hierarchy 0) is the root itself, or `unified` beside v1's in a hybrid; v1's are named by their controllers.
    const tops = hier === '0' ? [root, path.join(root, 'unified')] : [path.join(root, controllers!.replace(/^name=/, ''))];
    for (const top of tops) {
      for (let p = path.resolve(top, `.${at}`); p === top || p.startsWith(`${top}/`); p = path.dirname(p)) {
        out.add(p);
        if (p === top) break;
      }
    }
  }
  return [...out];
}

let cgroupHidden: Map<string, boolean> | undefined;

/** `/sys/fs/cgroup`, where one of Fleet's cgroup folders is `user`'s to write; else nothing. Asked once per user. */
function cgroupsToHide(user: { uid: number; gid: number }): string[] {
  cgroupHidden ??= new Map();
  const key = `${user.uid}:${user.gid}`;
  let hide = cgroupHidden.get(key);
  if (hide === undefined) {
    let text = '';
    try {
      text = readFileSync('/proc/self/cgroup', 'utf8');
    } catch {
      /* no /proc: nothing to hide */
    }
    const canWrite = writerCheck(user);
    hide = cgroupFolders(text).some((dir) => existsSync(dir) && canWrite(dir));
    cgroupHidden.set(key, hide);
  }
  return hide ? [CGROUP_ROOT] : [];
}

/**
 * The folder of the user's running services (`$XDG_RUNTIME_DIR`, `/run/user/<uid>`) where it is Fleet's user's: the
 * systemd user manager (`systemd/private`), the session bus (`bus`), a rootless Docker or Podman. A command running
 * as Fleet's own user could ask any of them to start a process outside the sandbox (`systemd-run --user`), where
 * Fleet's seal key, its private folder and /proc/<fleet>/environ are in reach, or to freeze or kill Fleet's unit.
 */
export function runtimeFolders(env: NodeJS.ProcessEnv = process.env): string[] {
  const uid = process.getuid?.();
  if (uid === undefined) return [];
  const dirs = new Set([env.XDG_RUNTIME_DIR, `/run/user/${uid}`].filter((d): d is string => !!d && path.isAbsolute(d)));
  return [...dirs].filter((d) => {
    try {
      const st = statSync(d);
      return st.isDirectory() && st.uid === uid;
    } catch {
      return false;
    }
  });
}

/** Fleet's own user: whom a command runs as where Fleet is not root (a user namespace maps it back, sudo's setpriv too). */
function ownUser(): { uid: number; gid: number } {
  return { uid: process.getuid?.() ?? -1, gid: process.getgid?.() ?? -1 };
}

/**
 * The folders on the way to those a command's view changes that the command's user could rename (it may write the
 * folder they are in), each to be mounted onto itself: a mount point cannot be renamed (EBUSY). Else a command could
 * move a folder above its masked workspace aside, masks and all (a mask stays on the folder it was put on, wherever
 * that goes), and make one of its own at the path Fleet goes on using: a working copy of its choosing where another
 * lane's was, a manifest of its own, another installation of Fleet where Fleet's was. The folders themselves are
 * mount points already.
 */
export function pinsFor(layers: readonly Layer[], user: { uid: number; gid: number }): Layer[] {
  const canWrite = writerCheck(user);
  const pins = new Set<string>();
  for (const l of layers) {
    for (let at = path.dirname(path.resolve(l.path)); at !== '/'; at = path.dirname(at)) {
      if (canWrite(path.dirname(at))) pins.add(at);
    }
  }
  return [...pins].map((p) => ({ kind: 'pin' as const, path: p }));
}

/**
 * Makes `dir` and everything in it `who`'s own, and `dir` closed to every other user, before a command that runs as
 * `who`: never through a link, and never a file with more than one name (a hard link to a file of root's, planted
 * where a kernel allows it, would make that file the command's). Each folder is held open and what is in it reached
 * through that descriptor (/proc/self/fd/N/name), so a folder swapped for a link on the way is never followed: the
 * walk is root's, in a tree a user wrote.
 */
export async function makeOwn(dir: string, who: { uid: number; gid: number }): Promise<void> {
  const NOFOLLOW_DIR = fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW;
  const folder = async (at: string, top: boolean): Promise<void> => {
    let fh: FileHandle;
    try {
      fh = await open(at, NOFOLLOW_DIR);
    } catch {
      return; // gone, or a link now: not followed
    }
    try {
      const st = await fh.stat();
      if (st.uid !== who.uid || st.gid !== who.gid) await fh.chown(who.uid, who.gid);
      if (top && (st.mode & 0o077) !== 0) await fh.chmod(st.mode & 0o700);
      const base = `/proc/self/fd/${fh.fd}`;
      const names = await readdir(base).catch(() => [] as string[]);
      const dirs: string[] = [];
      await Promise.all(
        names.map(async (n) => {
          const p = `${base}/${n}`;
          const e = await lstat(p).catch(() => undefined);
          if (!e || e.isSymbolicLink()) return;
          if (e.isDirectory()) return void dirs.push(p);
          if (e.isFile() && e.nlink > 1) return;
          if (e.uid !== who.uid || e.gid !== who.gid) await lchown(p, who.uid, who.gid).catch(() => undefined);
        }),
      );
      // One folder open at a time below this one: a wide tree does not run out of descriptors.
      for (const d of dirs) await folder(d, false);
    } finally {
      await fh.close();
    }
  };
  await folder(dir, true);
}

/** Makes the private HOME and TMPDIR of privateHomes, `who`'s, in folders of root's that `who` cannot change. */
async function makeHomes(homes: { dir: string; home: string; tmp: string }, who: { uid: number; gid: number }): Promise<void> {
  await mkdir(homes.dir, { recursive: true, mode: 0o755 });
  for (const p of [homes.home, homes.tmp]) {
    await mkdir(p, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    await lchown(p, who.uid, who.gid);
  }
}

/**
 * True when the strategy starts a command as the first child of a new namespace's PID 1, whose /proc shows only
 * them, with every mask in place, with a folder hidden but for a folder kept inside it (what the command sees
 * there, and from its working folder, is only the kept folder, written through, and nothing can be added beside it),
 * and a program folder it cannot write; as root, run as nobody, with a private HOME of its own.
 */
export async function works(s: Strategy, masks: string[]): Promise<boolean> {
  let scratch: string | undefined;
  try {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'fleet-probe-'));
    const hidden = path.join(scratch, 'hidden');
    const kept = path.join(hidden, 'lanes', 'kept');
    const programs = path.join(scratch, 'programs');
    const own = path.join(scratch, 'own');
    mkdirSync(kept, { recursive: true });
    mkdirSync(programs);
    chmodSync(programs, 0o777); // only the mount stops a write
    writeFileSync(path.join(hidden, 'other'), '');
    const who = s.perLane ? laneUser(kept) : undefined;
    if (who) {
      const homes = privateHomes(own, kept);
      mkdirSync(homes.dir, { recursive: true });
      chmodSync(homes.dir, 0o755);
      for (const p of [homes.home, homes.tmp]) {
        mkdirSync(p, { mode: 0o700 });
        chownSync(p, who.uid, who.gid);
      }
      chownSync(kept, who.uid, who.gid);
    }
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
      `! { true > ${shellQuote(path.join(programs, 'planted'))}; } 2>/dev/null`,
      // Root runs its commands as the lane's user, in a HOME of their own; a user is not made root again by a
      // passwordless sudo.
      ...(who ? [`[ "$(id -u)" = ${who.uid} ] && true > "$HOME/written"`] : ['! sudo -n true 2>/dev/null']),
    ].join(' && ');
    const view = viewFor(s, who, { hide: [hidden], keep: [kept] }, {}, () => own, [programs]);
    const setEnv = Object.keys(view.env).length ? ['/usr/bin/env', ...Object.entries(view.env).map(([k, v]) => `${k}=${v}`)] : [];
    const drop = who ? dropTo(s.perLane!.setpriv, who) : s.drop;
    const args = [...s.prefix.slice(1), ...initArgs(view.layers, scratch), '--', ...drop, ...setEnv, ...ENTER, kept, '/bin/sh', '-c', probe];
    // Spawned, not run synchronously: the probe takes a few hundred milliseconds (namespaces, mounts), which a lane's
    // clone and the plan can use meanwhile.
    const status = await new Promise<number | null>((resolve) => {
      const child = spawn(s.prefix[0]!, args, { cwd: '/', stdio: 'ignore', timeout: 10_000 });
      child.on('error', () => resolve(null));
      child.on('close', (code) => resolve(code));
    });
    return status === 0 && existsSync(path.join(kept, 'written'));
  } catch {
    return false;
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

const NONE = (detail: string): Sandbox => ({ kind: 'none', detail, wrap: (file, args) => ({ file, args: [...args] }), prepare: async () => {} });

/** Finds the first way in that works on this machine, or says why there is none. */
export async function detectSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  if (process.platform !== 'linux') return NONE(`process isolation needs Linux namespaces; this is ${process.platform}`);
  const unshare = onPath('unshare');
  if (!unshare) return NONE('unshare (util-linux) is not installed');
  const masks = opts.masks ?? runnerCommandFolders(opts.env ?? process.env);
  const uid = opts.uid ?? process.getuid!();
  const gid = opts.gid ?? process.getgid!();
  const found = strategies({ unshare, setpriv: onPath('setpriv'), sudo: onPath('sudo'), uid, gid, masks });
  for (const s of found) {
    if (await works(s, masks)) return sandboxOf(s);
  }
  const tried = found.map((s) => s.via).join(', ') || 'nothing (setpriv is not installed)';
  return NONE(`no way to start a PID namespace here (tried ${tried}); unprivileged user namespaces may be turned off, and sudo needs a password or is missing`);
}

/** The sandbox a strategy gives. */
export function sandboxOf(s: Strategy): Sandbox {
  const readOnly = programFolders();
  return {
    kind: 'pid-namespace',
    detail: s.via,
    wrap: (file, args, env, opts = {}) => {
      const key = opts.keep?.[0] ?? opts.cwd ?? '/';
      const who = s.perLane ? laneUser(key) : undefined;
      const view = viewFor(s, who, opts, env, privateTmp, readOnly);
      // sudo resets PATH (secure_path) and may reset HOME; a lane's own user gets a HOME (and TMPDIR) of its own.
      const restore = s.restoresEnv ? Object.fromEntries((['PATH', 'HOME'] as const).flatMap((k) => (env?.[k] !== undefined ? [[k, env[k]!]] : []))) : {};
      const set = Object.entries({ ...restore, ...view.env }).map(([k, v]) => `${k}=${v}`);
      const drop = who ? dropTo(s.perLane!.setpriv, who) : s.drop;
      const enter = opts.cwd === undefined ? [] : [...ENTER, path.resolve(opts.cwd)];
      return {
        file: s.prefix[0]!,
        args: [...s.prefix.slice(1), ...initArgs(view.layers), '--', ...drop, ...(set.length ? ['/usr/bin/env', ...set] : []), ...enter, file, ...args],
        cwd: '/',
      };
    },
    prepare: async (opts = {}) => {
      if (!s.perLane) return;
      const key = opts.keep?.[0] ?? opts.cwd ?? '/';
      const who = laneUser(key);
      await makeHomes(privateHomes(privateTmp(), key), who);
      for (const k of opts.keep ?? []) await makeOwn(k, who);
    },
  };
}

let cached: Promise<Sandbox> | undefined;

/** The sandbox of this process, probed once (the first caller starts the probe; every caller awaits the same one). */
export function processSandbox(): Promise<Sandbox> {
  cached ??= detectSandbox();
  return cached;
}

const OFF = NONE('turned off in the fleet file (isolation: off)');

/** What a setting gives on this machine: the sandbox, or no isolation with the reason. */
export function sandboxFor(setting: IsolationSetting): Promise<Sandbox> {
  if (setting === 'off') return Promise.resolve(OFF);
  return processSandbox();
}
