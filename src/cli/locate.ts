/**
 * The manifest `fleet status` and `fleet report` read, from whatever a user naturally names: the manifest itself,
 * the run's workspace folder, or the fleet file (its latest run, in the default workspace beside it).
 */
import { readdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Problem } from '../core/validate.js';
import { parseFleetText } from '../steps/load.js';
import { MAX_FLEET_FILE_BYTES, MAX_FLEET_JSON_BYTES } from '../core/limits.js';
import { readTextFile } from '../util/fs.js';

export const MANIFEST_FILE = 'fleet-status.json';

/** Where runs of fleet files in `dir` keep their workspaces by default (runFleet's default root). */
export function defaultWorkspaces(dir: string): string {
  return join(dir, '_workspace', 'fleet');
}

export type Located = { path: string; note?: string } | { problem: Problem };

export async function locateManifest(path: string): Promise<Located> {
  const kind = await stat(path).then(
    (s) => (s.isDirectory() ? 'folder' : 'file'),
    () => 'missing',
  );
  if (kind === 'missing')
    return {
      problem: { file: path, field: '(file)', message: 'no such file: pass the fleet-status.json a run wrote, its workspace folder, or the fleet file' },
    };
  if (kind === 'folder') return inFolder(path);
  if (!isFleetFileName(path) && !(await looksLikeFleetFile(path))) return { path };
  return latestRunOf(path);
}

async function inFolder(dir: string): Promise<Located> {
  const inside = join(dir, MANIFEST_FILE);
  if (await exists(inside)) return { path: inside };
  // The folder of fleet files: the latest run kept beside them.
  const latest = await latestRun(defaultWorkspaces(dir), () => true);
  if (latest) return latest;
  return {
    problem: {
      file: dir,
      field: '(folder)',
      message: `no ${MANIFEST_FILE} in this folder: pass a run's workspace (_workspace/fleet/<fleet_id>), its ${MANIFEST_FILE}, or the fleet file`,
    },
  };
}

function isFleetFileName(path: string): boolean {
  return /\.ya?ml$/i.test(path);
}

/** A .json fleet file has a directive and no fleet_id; a manifest has a fleet_id. */
async function looksLikeFleetFile(path: string): Promise<boolean> {
  try {
    // Bounded, and never blocking on a pipe planted where a file should be.
    const read = await readTextFile(path, MAX_FLEET_JSON_BYTES, 'a manifest');
    if (!read.ok) return false;
    const json = JSON.parse(read.text) as Record<string, unknown>;
    return typeof json === 'object' && json !== null && !('fleet_id' in json) && 'directive' in json;
  } catch {
    return false;
  }
}

/** The newest run of a fleet file in its default workspace: by name, then by when it started. */
async function latestRunOf(file: string): Promise<Located> {
  const read = await readTextFile(file, MAX_FLEET_FILE_BYTES, 'a fleet file');
  const parsed = parseFleetText(read.ok ? read.text : '', file);
  const name = parsed.ok ? (parsed.value as { name?: unknown }).name : undefined;
  if (typeof name !== 'string') {
    return { problem: { file, field: 'name', message: 'this fleet file has no name, so its runs cannot be found: pass the fleet-status.json a run wrote' } };
  }
  const root = defaultWorkspaces(dirname(file));
  const latest = await latestRun(root, (m) => m.name === name);
  if (latest) return latest;
  return {
    problem: {
      file,
      field: '(runs)',
      message: `no run of fleet "${name}" in ${root}: run it first (fleet run ${file}), or pass the ${MANIFEST_FILE} of a run kept elsewhere (--workspace)`,
    },
  };
}

/** The newest run in a folder of workspaces whose manifest `pick` accepts, by when it started; undefined: none. */
async function latestRun(root: string, pick: (m: { name?: unknown }) => boolean): Promise<{ path: string; note?: string } | undefined> {
  const runs: { path: string; started: string }[] = [];
  for (const id of await readdir(root).catch(() => [] as string[])) {
    const path = join(root, id, MANIFEST_FILE);
    try {
      const read = await readTextFile(path, MAX_FLEET_JSON_BYTES, 'a manifest');
      if (!read.ok) continue;
      const m = JSON.parse(read.text) as { name?: unknown; started_at?: unknown; fleet_id?: unknown };
      // A run's manifest names its own folder: a copy, or one planted under another name, is not a run of it.
      if (m.fleet_id === id && pick(m)) runs.push({ path, started: typeof m.started_at === 'string' ? m.started_at : '' });
    } catch {
      // a folder without a manifest (a run that never planned), or another file: not a run
    }
  }
  const latest = runs.sort((a, b) => b.started.localeCompare(a.started))[0];
  if (!latest) return undefined;
  return { path: latest.path, note: runs.length > 1 ? `The latest of ${runs.length} runs: ${latest.path}` : undefined };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
