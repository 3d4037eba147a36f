/**
 * Any job of the repository's default branch can write the Actions cache (a pull_request_target job, a CI step
 * of another workflow): a sweep's outcomes count only when sealed with the fleet's own credential, else an entry
 * written by anyone could mark a changed target `unchanged` and keep its lane from running.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readPreviousSweep, sealedSweep } from '../../src/actions/sweep.js';
import { SWEEP_FILE, type SweepCache } from '../../src/actions/sweep-cache.js';
import { sealKey } from '../../src/actions/settings.js';
import { initManifest } from '../../src/core/manifest.js';
import { removeDir, tempDir } from '../integration/helpers.js';

let dir: string;
let cwd: string;
beforeEach(() => {
  dir = tempDir();
  cwd = process.cwd();
  process.chdir(dir);
});
afterEach(() => {
  process.chdir(cwd);
  removeDir(dir);
});

const manifest = initManifest({
  fleet_id: 'fleet-run-1',
  name: 'web',
  forge: 'github',
  started_at: '2026-12-01T00:00:00Z',
  directive: 'x',
  max_parallel: 8,
  max_retries: 0,
  checkpoint: 'pushed',
  merge_policy: 'never',
  dry_run: false,
  waves: [],
  contention: [],
  excluded: [],
  lanes: [],
  skipped: [],
});

/** A cache holding one entry whose file has `text`. */
function cacheWith(text: string): SweepCache {
  return {
    async restore(file) {
      mkdirSync(dirname(resolve(file)), { recursive: true });
      writeFileSync(resolve(file), text);
      return 'fleet-sweep/web/9-1';
    },
    async save() {
      return true;
    },
  };
}

function core() {
  const said: string[] = [];
  return { said, core: { info: (m: string) => said.push(m), warning: (m: string) => said.push(m) } as never };
}

describe("a sweep's outcomes in the Actions cache", () => {
  const pat = sealKey({ token: 'ghp_fleet_pat_0123456789', app: undefined });

  it('are read when sealed with this fleet credential', async () => {
    const c = core();
    const read = await readPreviousSweep({ core: c.core, sweepCache: cacheWith(sealedSweep(manifest, pat)) }, 'web', pat);
    expect(read?.fleet_id).toBe('fleet-run-1');
    expect(existsSync(join(dir, SWEEP_FILE))).toBe(true);
  });

  it('are refused when written by anyone else: a plain manifest, or one sealed with another credential', async () => {
    for (const text of [`${JSON.stringify(manifest)}\n`, sealedSweep(manifest, sealKey({ token: 'ghp_someone_else_012345', app: undefined }))]) {
      const c = core();
      expect(await readPreviousSweep({ core: c.core, sweepCache: cacheWith(text) }, 'web', pat)).toBeUndefined();
      expect(c.said.join('\n')).toContain("is not sealed with this fleet's credential");
    }
  });

  it('are refused when the sealed manifest was altered after sealing', async () => {
    const sealed = JSON.parse(sealedSweep(manifest, pat)) as { manifest: string };
    const altered = JSON.stringify({ ...sealed, manifest: sealed.manifest.replace('fleet-run-1', 'fleet-run-2') });
    const c = core();
    expect(await readPreviousSweep({ core: c.core, sweepCache: cacheWith(altered) }, 'web', pat)).toBeUndefined();
  });
});
