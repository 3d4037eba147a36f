/**
 * Incremental sweeps on GitHub Actions: the plan job restores the previous sweep's manifest from the Actions
 * cache, the report job saves this one's (its unchanged lanes carry their earlier outcomes forward, so the next
 * sweep compares against the last run that really ran each lane). A cache that cannot be read or written never
 * fails the fleet: every lane then runs, and the job log says why.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Manifest, SCHEMA_VERSION } from '../core/model.js';
import type { ActionDeps } from './main.js';
import type { Settings } from './settings.js';
import { SWEEP_FILE, sweepKey, sweepKeyPrefix } from './sweep-cache.js';

/** The previous sweep's manifest, or undefined (first sweep, nothing usable); says which in the log. */
export async function readPreviousSweep(deps: Pick<ActionDeps, 'core' | 'sweepCache'>, fleetName: string): Promise<Manifest | undefined> {
  const { core } = deps;
  if (!deps.sweepCache) {
    core.warning('incremental: no cache service in this job; every lane runs');
    return undefined;
  }
  const file = resolve(SWEEP_FILE);
  await rm(file, { force: true });
  let key: string | undefined;
  try {
    key = await deps.sweepCache.restore(SWEEP_FILE, sweepKeyPrefix(fleetName));
  } catch (err) {
    core.warning(`incremental: the previous sweep's outcomes could not be restored (${(err as Error).message}); every lane runs`);
    return undefined;
  }
  if (!key) {
    core.info(`incremental: no previous sweep of "${fleetName}" in the cache (key prefix ${sweepKeyPrefix(fleetName)}); every lane runs`);
    return undefined;
  }
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    core.warning(`incremental: cache entry ${key} holds no readable manifest (${(err as Error).message}); every lane runs`);
    return undefined;
  }
  const parsed = Manifest.safeParse(json);
  if (!parsed.success) {
    const version = (json as { schema_version?: unknown } | null)?.schema_version;
    core.info(`incremental: cache entry ${key} was written by ${version !== SCHEMA_VERSION ? `another Fleet (manifest version ${String(version)})` : 'a Fleet this one cannot read'}; every lane runs`);
    return undefined;
  }
  core.info(`incremental: comparing with ${parsed.data.fleet_id} (cache entry ${key})`);
  return parsed.data;
}

/** Saves this sweep's manifest under a key of its own; a dry run saves nothing (it pushed nothing). */
export async function saveSweep(deps: Pick<ActionDeps, 'core' | 'sweepCache'>, settings: Settings, manifest: Manifest): Promise<void> {
  if (manifest.dry_run || !deps.sweepCache) return;
  const file = resolve(SWEEP_FILE);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(manifest)}\n`);
  const key = sweepKey(manifest.name, settings.runId, settings.runAttempt);
  try {
    if (await deps.sweepCache.save(SWEEP_FILE, key)) deps.core.info(`incremental: outcomes saved as cache entry ${key}`);
    else deps.core.warning(`incremental: the cache did not take ${key}; the next sweep compares with an earlier one`);
  } catch (err) {
    deps.core.warning(`incremental: saving the outcomes failed (${(err as Error).message}); the next sweep compares with an earlier one`);
  }
}

