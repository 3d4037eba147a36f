/**
 * Where an incremental sweep keeps its outcomes between runs on GitHub Actions: the Actions cache, through
 * the toolkit's @actions/cache client. A saved key is immutable, so each sweep saves a key of its own
 * (`fleet-sweep/<fleet name>/<run id>-<attempt>`) and the next one restores the newest by prefix. Entries are
 * scoped by branch: a run reads its own branch's entries, then the default branch's, and writes its own
 * branch's (GitHub's "Dependency caching reference": restrictions for accessing a cache).
 */

export interface SweepCache {
  /** Restore the newest entry whose key starts with `prefix` into `file`; the key restored, or undefined. */
  restore(file: string, prefix: string): Promise<string | undefined>;
  /** Save `file` under `key`; false when the service refused (the key exists, no write access). */
  save(file: string, key: string): Promise<boolean>;
}

/** The key prefix of a fleet's sweeps (fleet names are lowercase letters, digits, `.`, `_`, `-`: valid in a key). */
export function sweepKeyPrefix(fleetName: string): string {
  // A fleet name may hold `-` but never `/`: fleet `web` must not restore fleet `web-legacy`'s sweep.
  return `fleet-sweep/${fleetName}/`;
}

export function sweepKey(fleetName: string, runId: number | undefined, attempt: number): string {
  return `${sweepKeyPrefix(fleetName)}${runId ?? 'local'}-${attempt}`;
}

/**
 * The file's path must be the same string when saving and restoring: the cache version hashes it. It is
 * relative to the job's working directory (GITHUB_WORKSPACE), which the client archives from.
 */
export const SWEEP_FILE = '.fleet-sweep/fleet-status.json';

/** The toolkit's cache client, loaded when a sweep needs it: most action runs never do, and it is 1.2 MB to parse. */
const toolkit = () => import('@actions/cache');

export const actionsSweepCache: SweepCache = {
  async restore(file, prefix) {
    const cache = await toolkit();
    if (!cache.isFeatureAvailable()) return undefined;
    return cache.restoreCache([file], prefix, [prefix]);
  },
  async save(file, key) {
    const cache = await toolkit();
    if (!cache.isFeatureAvailable()) return false;
    return (await cache.saveCache([file], key)) !== -1;
  },
};
