/**
 * The one-process driver's workspace (`_workspace/fleet/<fleet_id>` unless named): claimed for one run, cleared of an
 * earlier run's files (or, resumed, with the files of the lanes that run again set aside), and its manifest file kept
 * current while the lanes run.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { LANE_ID_PATTERN } from '../../core/fleet-file.js';
import { Manifest as ManifestSchema, type Manifest } from '../../core/model.js';
import { SEAL_SUFFIX, writeManifest } from '../../util/manifest-seal.js';
import { laneDir } from '../lane/index.js';

/** The file in the workspace that keeps what each lane ran with (its digest's input), for a later --resume. */
export const LANE_INPUTS_FILE = 'lane-inputs.json';

export function manifestPath(root: string): string {
  return join(root, 'fleet-status.json');
}

/**
 * The default workspace is named by the fleet id: claim the folder (mkdir fails if it exists), so even two runs whose
 * ids collided would never share one. Returns the folder and the fleet id it is named for.
 */
export async function claimWorkspace(cwd: string, fleetId: string): Promise<{ root: string; fleet_id: string }> {
  const base = resolve(cwd, '_workspace', 'fleet');
  await mkdir(base, { recursive: true });
  await ignoreWorkspace(resolve(cwd, '_workspace'));
  for (let i = 1; ; i++) {
    const id = i === 1 ? fleetId : `${fleetId}-${i}`;
    try {
      await mkdir(join(base, id));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    return { root: join(base, id), fleet_id: id };
  }
}

/**
 * `_workspace/` sits beside the fleet file, often inside a git repository (a control repository): a `.gitignore`
 * holding `*` keeps its clones, logs and patches out of `git status` and of any commit, as Terraform's and Python's
 * tools do for their own folders. Written once, never over a file someone put there.
 */
export async function ignoreWorkspace(dir: string): Promise<void> {
  await writeFile(join(dir, '.gitignore'), '# Written by Fleet: clones, logs and reports of fleet runs (fleet clean removes old ones).\n*\n', {
    flag: 'wx',
  }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
}

const LIVE_WRITE_MS = 250;

/** The manifest file of a running fleet: rewritten (atomically, one write at a time) soon after lanes change. */
export class LiveManifest {
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly path: string,
    private readonly snapshot: () => Manifest,
  ) {}

  changed(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.now();
    }, LIVE_WRITE_MS);
    this.timer.unref();
  }

  /** Write the current state now (after any write in flight); a failed write is retried by the next change. */
  now(): Promise<void> {
    if (this.closed) return this.chain;
    this.chain = this.chain.then(() => (this.closed ? undefined : writeManifest(this.path, this.snapshot()).catch(() => undefined)));
    return this.chain;
  }

  /** No more writes: the final manifest is written by the caller. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.chain;
  }
}

/**
 * A new run into a workspace that holds an earlier run: remove that run's own
 * files (its manifest names them), so the events log, the lane results and the
 * attempt logs are this run's alone. Nothing else in the folder is touched.
 */
export async function clearPreviousRun(root: string): Promise<void> {
  let previous: Manifest;
  try {
    previous = ManifestSchema.parse(JSON.parse(await readFile(manifestPath(root), 'utf8')));
  } catch {
    return; // no earlier run here (or not one Fleet can read): nothing of ours to clear
  }
  // Only ids of the lane alphabet name a folder: a hand-edited manifest cannot point rm elsewhere.
  const ids = previous.lanes.map((l) => l.lane).filter((id) => LANE_ID_PATTERN.test(id));
  await Promise.all(ids.map((id) => rm(laneDir(root, id), { recursive: true, force: true })));
  for (const f of ['events.jsonl', 'plan.json', LANE_INPUTS_FILE, 'report.md', 'fleet-status.json', `fleet-status.json${SEAL_SUFFIX}`])
    await rm(join(root, f), { force: true });
}

/** Where, in a lane's folder, a resumed run puts the files of the runs before it: `previous/1/` (the first), `previous/2/`, … */
export const PREVIOUS_DIR = 'previous';

/**
 * A resumed run's lanes that run again (or no longer run): the files the earlier run left in their folders are moved
 * to `lanes/<lane>/previous/<n>/`, n one more than the last, so the folder holds this run's files alone and the
 * earlier attempts stay readable. The earlier working copy is removed (a lane clones afresh anyway).
 */
export async function setAsidePreviousFiles(root: string, ids: readonly string[]): Promise<void> {
  // Only ids of the lane alphabet name a folder: a hand-edited manifest cannot point a rename elsewhere.
  const safe = ids.filter((id) => LANE_ID_PATTERN.test(id));
  await Promise.all(
    safe.map(async (id) => {
      const dir = laneDir(root, id);
      const entries = (await readdir(dir).catch(() => [] as string[])).filter((e) => e !== PREVIOUS_DIR);
      if (entries.includes('repo')) await rm(join(dir, 'repo'), { recursive: true, force: true });
      const rest = entries.filter((e) => e !== 'repo');
      if (!rest.length) return;
      const aside = join(dir, PREVIOUS_DIR);
      await mkdir(aside, { recursive: true });
      const taken = (await readdir(aside)).filter((e) => /^[1-9]\d*$/.test(e)).map(Number);
      const dest = join(aside, String(Math.max(0, ...taken) + 1));
      await mkdir(dest);
      for (const e of rest) await rename(join(dir, e), join(dest, e));
    }),
  );
}
