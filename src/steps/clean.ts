/**
 * `fleet clean`: a folder's `_workspace/` kept from growing without end. Each run leaves its lanes' working copies
 * (a clone per lane) beside its manifest, report, logs and patches; of every fleet, the newest runs stay (what
 * `fleet status`, `fleet report` and `fleet prs` read) without their clones, and older runs go whole
 * (src/core/clean.ts chooses). A run still going holds its workspace's lock: it is never touched.
 */
import { lstat, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { chooseClean, type CleanChoice, type RunFolder } from '../core/clean.js';
import { lockWorkspace } from '../util/lock.js';

export interface CleanResult extends CleanChoice {
  /** Bytes removed (or that would be, with dryRun). */
  freed: number;
  /** Runs left because a live run holds their lock. */
  busy: Array<{ run: RunFolder; why: string }>;
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
      if (m) runs.push({ dir, kind, name: m.name, started: m.started });
      else if (kind === 'exec') {
        // exec folders are <name>-<yyyymmddThhmmss>-<hex>, and keep no manifest.
        const x = /^(.+)-(\d{8}T\d{6})-[0-9a-f]{6}$/.exec(e.name);
        runs.push({ dir, kind, name: x ? x[1]! : null, started: x ? x[2]! : null });
      } else runs.push({ dir, kind, name: null, started: null });
    }
  }
  return runs;
}

async function readManifestHead(path: string): Promise<{ name: string; started: string | null } | null> {
  try {
    const j = JSON.parse(await readFile(path, 'utf8')) as { name?: unknown; started_at?: unknown };
    return typeof j.name === 'string' ? { name: j.name, started: typeof j.started_at === 'string' ? j.started_at : null } : null;
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

/** The lanes' working copies of a run (`lanes/<id>/repo`). */
async function clonesOf(run: RunFolder): Promise<string[]> {
  const lanes = join(run.dir, 'lanes');
  const ids = await readdir(lanes).catch(() => []);
  const out: string[] = [];
  for (const id of ids) {
    const repo = join(lanes, id, 'repo');
    const st = await lstat(repo).catch(() => null);
    if (st?.isDirectory()) out.push(repo);
  }
  return out;
}

export async function cleanWorkspace(workspace: string, opts: { keep: number; all: boolean; dryRun: boolean }): Promise<CleanResult> {
  const choice = chooseClean(await listRuns(workspace), opts);
  const result: CleanResult = { remove: [], trim: [], left: choice.left, busy: [], freed: 0 };
  for (const [runs, whole] of [
    [choice.remove, true],
    [choice.trim, false],
  ] as const) {
    for (const run of runs) {
      const paths = whole ? [run.dir] : await clonesOf(run);
      // The run's own lock: a run still going refuses it, and nothing of it is touched.
      const lock = opts.dryRun ? null : await lockWorkspace(run.dir, 'fleet-clean');
      if (lock && !lock.ok) {
        result.busy.push({ run, why: lock.message });
        continue;
      }
      try {
        for (const p of paths) {
          result.freed += await sizeOf(p);
          if (!opts.dryRun) await rm(p, { recursive: true, force: true });
        }
      } finally {
        if (lock?.ok && !whole) await lock.release();
      }
      (whole ? result.remove : result.trim).push(run);
    }
  }
  return result;
}
