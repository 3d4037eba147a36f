/**
 * The real `@actions/cache` client (v6, cache service v2: tar + zstd, the
 * Azure SDK's single-shot Put Blob, a plain GET to restore) against the
 * emulated cache service, following GitHub's "Dependency caching reference":
 * key and restore-key matching, the version, immutability of a saved key and
 * scoping by ref; and the REST cache operations in the GitHub emulator,
 * validated against GitHub's OpenAPI description.
 */
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegisteredJob, StartAttemptSpec } from '../support/actions-services/index.js';
import { READER, REPO, asJob, loadClients, startWorld, writeTree, type World } from './helpers.js';

let world: World;
let clients: Awaited<ReturnType<typeof loadClients>>;
let runId = 300;
let deps: string;

beforeAll(async () => {
  world = await startWorld();
  clients = await loadClients();
  deps = path.join(world.work, 'deps');
});

afterAll(async () => {
  world.emu.assertNoViolations();
  expect(world.emu.responseProblems).toEqual([]);
  expect(world.services.errors).toEqual([]);
  await world.close();
});

/** A job of a new run on `ref` (`refs/heads/main` unless told). */
function jobOn(spec: Partial<StartAttemptSpec> = {}, cacheWrite = true): RegisteredJob {
  const run = ++runId;
  world.services.startAttempt({ repo: REPO, runId: run, attempt: 1, kind: 'first', ...spec });
  return world.services.registerJob({ repo: REPO, runId: run, runAttempt: 1, jobName: 'build', cacheWrite });
}

/** Saves `deps/` holding `content` under `key`; the cache id, or -1 when the service refused. */
async function save(job: RegisteredJob, key: string, content: string, paths = [deps]): Promise<number> {
  await rm(deps, { recursive: true, force: true });
  await writeTree(deps, { 'lib.txt': content });
  return asJob(job, () => clients.cache.saveCache(paths, key));
}

/** Restores into an emptied `deps/`: the matched key (or undefined) and what `deps/lib.txt` then holds. */
async function restore(
  job: RegisteredJob,
  key: string,
  restoreKeys: string[] = [],
  paths = [deps],
): Promise<{ key: string | undefined; content: string | null }> {
  await rm(deps, { recursive: true, force: true });
  const hit = await asJob(job, () => clients.cache.restoreCache(paths, key, restoreKeys));
  const content = await readFile(path.join(deps, 'lib.txt'), 'utf8').catch(() => null);
  return { key: hit, content };
}

const lastTwirpError = (): string | undefined => world.services.requests.filter((r) => r.kind === 'twirp' && r.error).at(-1)?.error;

describe('keys and versions (docs: "Cache key matching")', () => {
  it('restores an exact key, else the newest entry a restore key prefixes', async () => {
    const main = jobOn();
    expect(await save(main, 'deps-linux-aaa', 'v1')).toBeGreaterThan(0);
    expect(await save(main, 'deps-linux-bbb', 'v2')).toBeGreaterThan(0);
    expect(await restore(main, 'deps-linux-aaa')).toEqual({ key: 'deps-linux-aaa', content: 'v1' });
    expect(await restore(main, 'deps-linux-ccc', ['deps-windows-', 'deps-linux-'])).toEqual({ key: 'deps-linux-bbb', content: 'v2' });
    // A partial match of the key itself.
    expect((await restore(main, 'deps-')).key).toBe('deps-linux-bbb');
    expect(await restore(main, 'other', ['nothing-'])).toEqual({ key: undefined, content: null });
  });

  it('keeps a saved key immutable: a second save is refused as already existing, the first content stays (actions/cache#1541)', async () => {
    const main = jobOn();
    expect(await save(main, 'immutable-1', 'first')).toBeGreaterThan(0);
    expect(await save(main, 'immutable-1', 'second')).toBe(-1);
    expect(lastTwirpError()).toBe('cache entry with the same key, version, and scope already exists');
    expect((await restore(main, 'immutable-1')).content).toBe('first');
  });

  it('finds an entry only for the same version (the client hashes the paths and compression method)', async () => {
    const main = jobOn();
    expect(await save(main, 'versioned', 'x')).toBeGreaterThan(0);
    const otherPaths = [deps, path.join(world.work, 'more')];
    expect((await restore(main, 'versioned', [], otherPaths)).key).toBeUndefined();
    // The same key may be saved again under the other version.
    await writeTree(path.join(world.work, 'more'), { 'm.txt': 'm' });
    expect(await save(main, 'versioned', 'y', otherPaths)).toBeGreaterThan(0);
    expect(world.services.caches().filter((c) => c.key === 'versioned')).toHaveLength(2);
  });

  it('refuses a save with a read-only token ("cache write denied", Mic92/hestia#84)', async () => {
    expect(await save(jobOn({}, false), 'read-only', 'x')).toBe(-1);
    expect(world.services.caches().some((c) => c.key === 'read-only')).toBe(false);
  });
});

describe('scopes (docs: "Restrictions for accessing a cache")', () => {
  it("lets a branch restore its own and the default branch's caches, and the default branch not the branch's", async () => {
    expect(await save(jobOn(), 'scoped-main', 'from main')).toBeGreaterThan(0);
    const feature = jobOn({ ref: 'refs/heads/feature' });
    expect(await restore(feature, 'scoped-main')).toEqual({ key: 'scoped-main', content: 'from main' });
    expect(await save(feature, 'scoped-feature', 'from feature')).toBeGreaterThan(0);
    expect((await restore(jobOn(), 'scoped-feature')).key).toBeUndefined();
    expect((await restore(jobOn({ ref: 'refs/heads/other' }), 'scoped-feature')).key).toBeUndefined();
    expect(world.services.caches().find((c) => c.key === 'scoped-feature')?.scope).toBe('refs/heads/feature');
  });

  it('searches the own scope first: a branch may save a key the default branch has, and restores its own', async () => {
    const feature = jobOn({ ref: 'refs/heads/feature-2' });
    expect(await save(jobOn(), 'shadowed', 'main copy')).toBeGreaterThan(0);
    expect(await save(feature, 'shadowed', 'feature copy')).toBeGreaterThan(0);
    expect((await restore(feature, 'shadowed')).content).toBe('feature copy');
    expect((await restore(jobOn(), 'shadowed')).content).toBe('main copy');
  });

  it("lets a pull request run read its base branch's caches", async () => {
    expect(await save(jobOn({ ref: 'refs/heads/release' }), 'release-deps', 'release')).toBeGreaterThan(0);
    const pr = jobOn({ ref: 'refs/pull/7/merge', baseRef: 'release' });
    expect((await restore(pr, 'release-deps')).content).toBe('release');
    expect(await save(pr, 'pr-deps', 'pr')).toBeGreaterThan(0);
    expect(world.services.caches().find((c) => c.key === 'pr-deps')?.scope).toBe('refs/pull/7/merge');
  });
});

describe('REST cache operations (docs.github.com/rest/actions/cache), response shapes validated', () => {
  const own = { owner: 'acme', repo: 'api' };

  it('lists with a key prefix, a ref and a sort; reports usage', async () => {
    const octokit = clients.getOctokit(READER);
    const byPrefix = await octokit.rest.actions.getActionsCacheList({ ...own, key: 'deps-linux-', sort: 'created_at', direction: 'asc' });
    expect(byPrefix.data.actions_caches.map((c) => c.key)).toEqual(['deps-linux-aaa', 'deps-linux-bbb']);
    expect(byPrefix.data.actions_caches[0]).toMatchObject({
      ref: 'refs/heads/main',
      version: expect.stringMatching(/^[0-9a-f]{64}$/),
      size_in_bytes: expect.any(Number),
    });
    const feature = await octokit.rest.actions.getActionsCacheList({ ...own, ref: 'refs/heads/feature' });
    expect(feature.data.actions_caches.map((c) => c.key)).toEqual(['scoped-feature']);
    const all = await octokit.rest.actions.getActionsCacheList({ ...own, per_page: 100 });
    expect(all.data.total_count).toBe(world.services.caches().filter((c) => c.finalized).length);
    const usage = await octokit.rest.actions.getActionsCacheUsage(own);
    expect(usage.data).toEqual({ full_name: 'acme/api', active_caches_count: all.data.total_count, active_caches_size_in_bytes: expect.any(Number) });
  });

  it('deletes by key (and ref) and by id; needs write access; a deleted cache no longer restores', async () => {
    const reader = clients.getOctokit(READER);
    await expect(reader.rest.actions.deleteActionsCacheByKey({ ...own, key: 'shadowed' })).rejects.toMatchObject({ status: 403 });
    const admin = clients.getOctokit(world.emu.token!);
    const byKey = await admin.rest.actions.deleteActionsCacheByKey({ ...own, key: 'shadowed', ref: 'refs/heads/feature-2' });
    expect(byKey.data.actions_caches.map((c) => c.ref)).toEqual(['refs/heads/feature-2']);
    expect((await restore(jobOn({ ref: 'refs/heads/feature-2' }), 'shadowed')).content).toBe('main copy');
    const [entry] = (await admin.rest.actions.getActionsCacheList({ ...own, key: 'release-deps' })).data.actions_caches;
    expect((await admin.rest.actions.deleteActionsCacheById({ ...own, cache_id: entry!.id! })).status).toBe(204);
    await expect(admin.rest.actions.deleteActionsCacheById({ ...own, cache_id: entry!.id! })).rejects.toMatchObject({ status: 404 });
    await expect(admin.rest.actions.deleteActionsCacheByKey({ ...own, key: 'no-such-key' })).rejects.toMatchObject({ status: 404 });
  });
});
