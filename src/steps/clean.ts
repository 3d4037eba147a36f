/**
 * `fleet clean`: a folder's `_workspace/` kept from growing without end. Each run leaves its lanes' working copies
 * (a clone per lane) beside its manifest, report, logs and patches; of every fleet, the newest runs stay (what
 * `fleet status`, `fleet report` and `fleet prs` read) without their clones, and older runs go whole
 * (src/core/clean.ts chooses). A run still going holds its workspace's lock: it is never touched.
 */
import { lstat, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { chooseClean, type CleanChoice, type RunFolder } from '../core/clean.js';
import { removeAside } from '../util/fs.js';
import { lockWorkspace } from '../util/lock.js';

export interface CleanResult extends CleanChoice {
  /** Bytes removed (or that would be, with dryRun). */
  freed: number;
  /** Runs left because a live run holds their lock. */
  busy: Array<{ run: RunFolder; why: string }>;
  /** The object cache (`_workspace/cache`, src/workspace/git/object-cache.ts): its size, and whether it went (`all`). */
  cache: { dir: string; bytes: number; removed: boolean } | null;
}

const MANIFEST = 'fleet-status.json';

/** The run folders of `<workspace>/fleet/*` and `<workspace>/exec/*`, named and dated from their manifests. */
export async function listRuns(workspace: string): Promise<RunFolder[]> {
  const runs: RunFolder[] = [];
  for (const kind of ['fleet', 'exec'] as const) {
    const base = join(workspace, kind);
    const entries = await readdir(base, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const dir = join(base, e.name);
      const m = await readManifestHead(join(dir, MANIFEST));
      // A run's folder is named by its fleet id (locate.ts reads it so too): a manifest that says otherwise was put
      // there, and does not choose which of a fleet's runs is the newest.
      if (m && (kind !== 'fleet' || m.fleetId === e.name)) runs.push({ dir, kind, name: m.name, started: m.started });
      else if (m) runs.push({ dir, kind, name: null, started: null });
      else if (kind === 'exec') {
        // exec folders are <name>-<yyyymmddThhmmss>-<hex>, and keep no manifest.
        const x = /^(.+)-(\d{8}T\d{6})-[0-9a-f]{6}$/.exec(e.name);
        runs.push({ dir, kind, name: x ? x[1]! : null, started: x ? x[2]! : null });
      } else runs.push({ dir, kind, name: null, started: null });
    }
  }
  return runs;
}

async function readManifestHead(path: string): Promise<{ name: string; fleetId: string; started: string | null } | null> {
  try {
    const j = JSON.parse(await readFile(path, 'utf8')) as { name?: unknown; fleet_id?: unknown; started_at?: unknown };
    if (typeof j.name !== 'string') return null;
    // A start in the future is no start: it would make a planted run the newest.
    const t = typeof j.started_at === 'string' ? Date.parse(j.started_at) : Number.NaN;
    const started = Number.isFinite(t) && t <= Date.now() ? new Date(t).toISOString() : null;
    return { name: j.name, fleetId: typeof j.fleet_id === 'string' ? j.fleet_id : '', started };
  } catch {
    return null;
  }
}

/** Sum of the sizes of the files under `path`, links not followed. */
async function sizeOf(path: string): Promise<number> {
  const st = await lstat(path).catch(() => null);
  if (!st) return 0;
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const e of await readdir(path).catch(() => [])) total += await sizeOf(join(path, e));
  return total;
}

/** Whether `path` is a real folder (not a link to one). */
async function realFolder(path: string): Promise<boolean> {
  const st = await lstat(path).catch(() => null);
  return !!st?.isDirectory();
}

/**
 * The lanes' working copies of a run (`lanes/<id>/repo`), each a real folder reached through real folders: a link a
 * directive left at `lanes`, `lanes/<id>` or `repo` is never followed to what it points at.
 */
async function clonesOf(run: RunFolder): Promise<string[]> {
  const lanes = join(run.dir, 'lanes');
  if (!(await realFolder(lanes))) return [];
  const out: string[] = [];
  for (const id of await readdir(lanes).catch(() => [])) {
    if (!(await realFolder(join(lanes, id)))) continue;
    const repo = join(lanes, id, 'repo');
    if (await realFolder(repo)) out.push(repo);
  }
  return out;
}

/** Whether `path` resolves inside `root` (both through their real paths), so nothing outside `_workspace/` is removed. */
async function inside(root: string, path: string): Promise<boolean> {
  const [r, p] = await Promise.all([realpath(root).catch(() => null), realpath(path).catch(() => null)]);
  if (r === null || p === null) return false;
  return p.startsWith(`${r}${sep}`);
}

export async function cleanWorkspace(workspace: string, opts: { keep: number; all: boolean; dryRun: boolean }): Promise<CleanResult> {
  // `_workspace` itself a link (to a folder of something else): refused, as is anything under it that resolves outside.
  if (!(await realFolder(workspace))) throw new Error(`${workspace} is not a folder of its own (a link?): nothing was removed`);
  const choice = chooseClean(await listRuns(workspace), opts);
  const result: CleanResult = { remove: [], trim: [], left: choice.left, busy: [], freed: 0, cache: null };
  for (const [runs, whole] of [
    [choice.remove, true],
    [choice.trim, false],
  ] as const) {
    for (const run of runs) {
      const paths = whole ? [run.dir] : await clonesOf(run);
      // The run's own lock: a run still going refuses it, and nothing of it is touched (a dry run asks the same way).
      const lock = await lockWorkspace(run.dir, 'fleet-clean');
      if (!lock.ok) {
        result.busy.push({ run, why: lock.message });
        continue;
      }
      try {
        for (const p of paths) {
          if (!(await inside(workspace, p))) continue;
          result.freed += await sizeOf(p);
          if (!opts.dryRun) await rm(p, { recursive: true, force: true });
        }
      } finally {
        if (opts.dryRun || !whole) await lock.release();
      }
      (whole ? result.remove : result.trim).push(run);
    }
  }
  // The object cache is what makes the next run's clones cheap: it stays unless every run goes. A clone borrowing from
  // it while it goes finds an object missing, and is made again without it (src/workspace/git/object-cache.ts).
  const cache = join(workspace, 'cache');
  if ((await realFolder(cache)) && (await inside(workspace, cache))) {
    const bytes = await sizeOf(cache);
    result.cache = { dir: cache, bytes, removed: opts.all };
    if (opts.all) {
      result.freed += bytes;
      if (!opts.dryRun) await removeAside(cache);
    }
  }
  return result;
}
