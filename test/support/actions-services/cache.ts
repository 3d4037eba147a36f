/**
 * The CacheService of the results service
 * (`github.actions.results.api.v1.CacheService`, cache service v2, what
 * `@actions/cache` calls when ACTIONS_CACHE_SERVICE_V2 is set) and the cache
 * state the GitHub emulator's REST endpoints read.
 *
 * Scoping follows GitHub's documentation ("Restrictions for accessing a
 * cache"): a job writes to its own ref and reads its own ref, then the base
 * branch of a pull request, then the default branch. The scopes travel in the
 * runtime token's `ac` claim (a JSON string of `{ Scope, Permission }`,
 * Permission 1 = read, 2 = write, as act mints it), so the client sends no
 * scope and an edited token is refused by its signature.
 *
 * Matching ("Cache key matching"): in each scope in turn, the key exactly,
 * else the newest entry the key prefixes, then each restore key the same way;
 * only entries of the same `version` (the client's hash of paths and
 * compression) count.
 */
import type { BlobStore } from './blob-store.js';
import { isoTime } from './state.js';
import { TwirpError, int, str, strList, type Json } from './twirp.js';
import type { CacheRecord } from './types.js';

export interface CacheScope {
  Scope: string;
  Permission: number;
}

export interface CacheDeps {
  now: () => number;
  blobs: BlobStore;
  urlTtlSec: number;
}

const READ = 1;
const WRITE = 2;

export class CacheStore {
  private readonly entries: CacheRecord[] = [];
  private nextId = 1;

  constructor(private readonly deps: CacheDeps) {}

  rpc(method: string, repo: string, scopes: CacheScope[], body: Json): Json {
    switch (method) {
      case 'GetCacheEntryDownloadURL':
        return this.lookup(repo, scopes, body);
      case 'CreateCacheEntry':
        return this.create(repo, scopes, body);
      case 'FinalizeCacheEntryUpload':
        return this.finalize(repo, scopes, body);
      default:
        throw new TwirpError('bad_route', `no handler for path "/twirp/github.actions.results.api.v1.CacheService/${method}"`);
    }
  }

  all(): CacheRecord[] {
    return this.entries.map((e) => ({ ...e }));
  }

  /** Finalized entries of a repository (lower-cased `owner/name`). */
  finalized(repoKey: string): CacheRecord[] {
    return this.entries.filter((e) => e.finalized && e.repo.toLowerCase() === repoKey);
  }

  deleteById(id: number): boolean {
    const i = this.entries.findIndex((e) => e.id === id);
    if (i < 0) return false;
    this.deps.blobs.delete(this.entries[i]!.blobName);
    this.entries.splice(i, 1);
    return true;
  }

  // ---------------------------------------------------------------- RPCs

  private lookup(repo: string, scopes: CacheScope[], body: Json): Json {
    const version = str(body, 'version');
    const keys = [str(body, 'key'), ...strList(body, 'restore_keys')];
    for (const scope of scopes.filter((s) => s.Permission & READ)) {
      const candidates = this.entries.filter((e) => e.finalized && this.isRepo(e, repo) && e.scope === scope.Scope && e.version === version);
      for (const key of keys) {
        const hit = bestMatch(candidates, key);
        if (hit) {
          hit.lastAccessedAt = isoTime(this.deps.now());
          return { ok: true, signedDownloadUrl: this.deps.blobs.sign(hit.blobName, 'r', this.deps.urlTtlSec), matchedKey: hit.key };
        }
      }
    }
    return { ok: false, signedDownloadUrl: '', matchedKey: '' };
  }

  private create(repo: string, scopes: CacheScope[], body: Json): Json {
    const scope = writeScope(scopes);
    // A read-only token is answered 200 with ok=false (Mic92/hestia#84); the client knows the prefix.
    if (!scope) return { ok: false, signedUploadUrl: '', message: 'cache write denied: token has no writable scopes' };
    const key = str(body, 'key');
    const version = str(body, 'version');
    // A saved key is immutable; also while another job is still uploading it.
    // Posted by many users (actions/cache#1541, bazel-contrib/setup-bazel#77).
    if (this.entries.some((e) => this.isRepo(e, repo) && e.scope === scope && e.key === key && e.version === version)) {
      throw new TwirpError('already_exists', 'cache entry with the same key, version, and scope already exists');
    }
    const now = isoTime(this.deps.now());
    const entry: CacheRecord = {
      id: this.nextId++,
      repo,
      scope,
      key,
      version,
      size: 0,
      finalized: false,
      createdAt: now,
      lastAccessedAt: now,
      blobName: this.deps.blobs.reserve('caches', ''),
    };
    this.entries.push(entry);
    return { ok: true, signedUploadUrl: this.deps.blobs.sign(entry.blobName, 'cw', this.deps.urlTtlSec) };
  }

  private finalize(repo: string, scopes: CacheScope[], body: Json): Json {
    const scope = writeScope(scopes);
    if (!scope) return { ok: false, entryId: '0', message: 'cache write denied: token has no writable scopes' };
    const key = str(body, 'key');
    const version = str(body, 'version');
    const entry = this.entries.find((e) => !e.finalized && this.isRepo(e, repo) && e.scope === scope && e.key === key && e.version === version);
    if (!entry) throw new TwirpError('not_found', 'cache entry not found');
    const blob = this.deps.blobs.get(entry.blobName);
    if (!blob) throw new TwirpError('not_found', 'cache entry content not found: upload it before finalizing');
    entry.size = int(body, 'size_bytes') ?? blob.data.length;
    entry.finalized = true;
    this.deps.blobs.seal(entry.blobName);
    return { ok: true, entryId: String(entry.id) };
  }

  private isRepo(e: CacheRecord, repo: string): boolean {
    return e.repo.toLowerCase() === repo.toLowerCase();
  }
}

function writeScope(scopes: CacheScope[]): string | null {
  return scopes.find((s) => s.Permission & WRITE)?.Scope ?? null;
}

/** The entry whose key is `key`, else the newest one `key` prefixes. */
function bestMatch(candidates: CacheRecord[], key: string): CacheRecord | undefined {
  const newestFirst = [...candidates].sort((a, b) => b.id - a.id);
  return newestFirst.find((e) => e.key === key) ?? newestFirst.find((e) => e.key.startsWith(key));
}
