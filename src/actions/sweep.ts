/**
 * Incremental sweeps on GitHub Actions: the plan job restores the previous sweep's manifest from the Actions
 * cache, the report job saves this one's (its unchanged lanes carry their earlier outcomes forward, so the next
 * sweep compares against the last run that really ran each lane). A cache that cannot be read or written never
 * fails the fleet: every lane then runs, and the job log says why.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Manifest, SCHEMA_VERSION } from '../core/model.js';
import type { Settings } from './settings.js';
import { SWEEP_FILE, sweepKey, sweepKeyPrefix, type SweepCache } from './sweep-cache.js';

/** The sweep file: the manifest as text, and its MAC under the fleet credential's seal key (see sealKey). */
interface Sealed {
  format: 'fleet-sweep-sealed/1';
  mac: string;
  manifest: string;
}

const mac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest('hex');

/** What of the action's deps a sweep uses: the log, and the cache the outcomes live in. */
interface SweepDeps {
  core: { info(message: string): void; warning(message: string): void };
  sweepCache?: SweepCache;
}

/** The previous sweep's manifest, or undefined (first sweep, nothing usable); says which in the log. */
export async function readPreviousSweep(deps: SweepDeps, fleetName: string, seal: Buffer): Promise<Manifest | undefined> {
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
    const sealed = JSON.parse(await readFile(file, 'utf8')) as Partial<Sealed>;
    const want = Buffer.from(mac(seal, String(sealed.manifest)), 'hex');
    const got = Buffer.from(typeof sealed.mac === 'string' ? sealed.mac : '', 'hex');
    // Any job of the default branch can write the cache: only outcomes sealed with this fleet's credential count.
    if (sealed.format !== 'fleet-sweep-sealed/1' || got.length !== want.length || !timingSafeEqual(got, want)) {
      core.warning(
        `incremental: cache entry ${key} is not sealed with this fleet's credential (written by another job, or before the credential changed); every lane runs`,
      );
      return undefined;
    }
    json = JSON.parse(String(sealed.manifest));
  } catch (err) {
    core.warning(`incremental: cache entry ${key} holds no readable manifest (${(err as Error).message}); every lane runs`);
    return undefined;
  }
  const parsed = Manifest.safeParse(json);
  if (!parsed.success) {
    const version = (json as { schema_version?: unknown } | null)?.schema_version;
    core.info(
      `incremental: cache entry ${key} was written by ${version !== SCHEMA_VERSION ? `another Fleet (manifest version ${String(version)})` : 'a Fleet this one cannot read'}; every lane runs`,
    );
    return undefined;
  }
  core.info(`incremental: comparing with ${parsed.data.fleet_id} (cache entry ${key})`);
  return parsed.data;
}

/** Saves this sweep's manifest under a key of its own; a dry run saves nothing (it pushed nothing). */
export async function saveSweep(deps: SweepDeps, settings: Settings, manifest: Manifest, seal: Buffer): Promise<void> {
  if (manifest.dry_run || !deps.sweepCache) return;
  const file = resolve(SWEEP_FILE);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, sealedSweep(manifest, seal));
  const key = sweepKey(manifest.name, settings.runId, settings.runAttempt);
  try {
    if (await deps.sweepCache.save(SWEEP_FILE, key)) deps.core.info(`incremental: outcomes saved as cache entry ${key}`);
    else deps.core.warning(`incremental: the cache did not take ${key}; the next sweep compares with an earlier one`);
  } catch (err) {
    deps.core.warning(`incremental: saving the outcomes failed (${(err as Error).message}); the next sweep compares with an earlier one`);
  }
}

/** The sweep file's text: the manifest, sealed with the fleet credential's key. */
export function sealedSweep(manifest: Manifest, seal: Buffer): string {
  const text = JSON.stringify(manifest);
  const sealed: Sealed = { format: 'fleet-sweep-sealed/1', mac: mac(seal, text), manifest: text };
  return `${JSON.stringify(sealed)}\n`;
}
