/**
 * What `fleet clean` removes from a folder's `_workspace/`: of each fleet's runs (and each exec's), the newest
 * `keep` stay, without their lanes' working copies; the older ones go whole. Pure: the reads and removals are
 * src/steps/clean.ts's.
 */

export interface RunFolder {
  /** Absolute path of the run's folder (`_workspace/fleet/<fleet_id>`, `_workspace/exec/<name>-<stamp>-<hex>`). */
  dir: string;
  kind: 'fleet' | 'exec';
  /** The fleet's name (its manifest's `name`, or an exec folder's prefix); null when the folder says none. */
  name: string | null;
  /** When the run started (ISO), to order a fleet's runs; null when unknown. */
  started: string | null;
}

export interface CleanChoice {
  /** Runs removed whole. */
  remove: RunFolder[];
  /** Runs kept, whose lanes' working copies are removed (the manifest, report, logs and patches stay). */
  trim: RunFolder[];
  /** Folders left alone, with why. */
  left: Array<{ run: RunFolder; why: string }>;
}

/** `keep`: how many of each fleet's newest runs stay (their clones trimmed); `all`: every run goes. */
export function chooseClean(runs: readonly RunFolder[], opts: { keep: number; all: boolean }): CleanChoice {
  const out: CleanChoice = { remove: [], trim: [], left: [] };
  const groups = new Map<string, RunFolder[]>();
  for (const r of runs) {
    if (r.name === null) {
      if (opts.all) out.remove.push(r);
      else out.left.push({ run: r, why: 'not a run Fleet can name (no manifest): remove it yourself, or pass --all' });
      continue;
    }
    const key = `${r.kind}\u0000${r.name}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  for (const group of groups.values()) {
    // Newest first; a run whose start is unknown counts as the oldest.
    const sorted = [...group].sort((a, b) => (b.started ?? '').localeCompare(a.started ?? '') || b.dir.localeCompare(a.dir));
    sorted.forEach((r, i) => {
      if (opts.all || i >= opts.keep) out.remove.push(r);
      else out.trim.push(r);
    });
  }
  return out;
}
