/**
 * REST operations for Actions artifacts and caches, answered from the state of
 * the emulated Actions services (test/support/actions-services) once they are
 * attached with `emu.attachActionsServices(backend)`. Without a backend a
 * repository simply has no artifacts and no caches.
 *
 * https://docs.github.com/rest/actions/artifacts, https://docs.github.com/rest/actions/cache
 */

/** An artifact as the REST answers need it. */
export interface ActionsArtifactView {
  id: number;
  name: string;
  size: number;
  digest: string | null;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
  expired: boolean;
  runId: number;
  runAttempt: number;
  headBranch: string;
  headSha: string;
}

export interface ActionsCacheView {
  id: number;
  /** `refs/heads/main`, `refs/pull/1/merge`. */
  ref: string;
  key: string;
  version: string;
  sizeInBytes: number;
  createdAt: string;
  lastAccessedAt: string;
}

/** What the Actions services expose to the emulator; `repoKey` is the lower-cased `owner/name`. */
export interface ActionsRestBackend {
  /** Finalized artifacts of every run and attempt, oldest first. */
  artifacts(repoKey: string): ActionsArtifactView[];
  deleteArtifact(repoKey: string, id: number): boolean;
  /** A signed blob URL for the artifact's zip, or null when there is no such artifact. */
  artifactDownloadUrl(repoKey: string, id: number, ttlSec: number): string | null;
  /** Saved (finalized) cache entries. */
  caches(repoKey: string): ActionsCacheView[];
  deleteCache(repoKey: string, id: number): boolean;
}

/** The part of the emulator's request context these handlers read. */
export interface ActionsRestCtx {
  params: Record<string, string>;
  query: Record<string, unknown>;
  op: { docsUrl: string };
}

export interface ActionsRestReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ActionsRestHelpers<C extends ActionsRestCtx> {
  /** The repository of the request, checked for `need` (throws the emulator's 404/403). */
  repoFor(c: C, need: 'pull' | 'push'): { r: { id: number; owner: string; name: string }; key: string };
  paginate<T>(c: C, items: T[]): { items: T[]; headers: Record<string, string> };
  /** An error the emulator answers as it is (`status`, JSON body). */
  httpError(status: number, body: Record<string, unknown>): Error;
  backend(): ActionsRestBackend | null;
  apiUrl(): string;
}

type Handler<C> = (c: C) => Promise<ActionsRestReply>;

/** Seconds a download redirect stays valid ("This URL expires after 1 minute"). */
const DOWNLOAD_URL_TTL_SEC = 60;

export function addActionsRestHandlers<C extends ActionsRestCtx>(H: Record<string, Handler<C>>, h: ActionsRestHelpers<C>): void {
  const fail = (c: C, status: number, message: string): Error => h.httpError(status, { message, documentation_url: c.op.docsUrl, status: String(status) });
  const ok = (body: unknown, headers?: Record<string, string>): ActionsRestReply => ({ status: 200, body, ...(headers ? { headers } : {}) });
  const artifactsOf = (key: string): ActionsArtifactView[] => h.backend()?.artifacts(key) ?? [];
  const cachesOf = (key: string): ActionsCacheView[] => h.backend()?.caches(key) ?? [];

  // Repository access here; a scoped token's `actions: read` / `actions: write` is checked
  // before the handler runs (scopes.ts maps the artifacts and cache categories to `actions`).
  const repo = (c: C, write: boolean) => h.repoFor(c, write ? 'push' : 'pull');

  const artifactJson = (a: ActionsArtifactView, r: { id: number; owner: string; name: string }): Record<string, unknown> => {
    const url = `${h.apiUrl()}/repos/${r.owner}/${r.name}/actions/artifacts/${a.id}`;
    return {
      id: a.id,
      node_id: Buffer.from(`08:Artifact${a.id}`).toString('base64'),
      name: a.name,
      size_in_bytes: a.size,
      url,
      archive_download_url: `${url}/zip`,
      expired: a.expired,
      created_at: a.createdAt,
      expires_at: a.expiresAt,
      updated_at: a.updatedAt,
      digest: a.digest,
      workflow_run: { id: a.runId, repository_id: r.id, head_repository_id: r.id, head_branch: a.headBranch, head_sha: a.headSha },
    };
  };
  const artifactPage = (c: C, list: ActionsArtifactView[], r: { id: number; owner: string; name: string }): ActionsRestReply => {
    const page = h.paginate(c, list);
    return ok({ total_count: list.length, artifacts: page.items.map((a) => artifactJson(a, r)) }, page.headers);
  };
  const findArtifact = (c: C, key: string): ActionsArtifactView => {
    const a = artifactsOf(key).find((x) => x.id === Number(c.params.artifact_id));
    if (!a) throw fail(c, 404, 'Not Found');
    return a;
  };

  H['actions/list-workflow-run-artifacts'] = async (c) => {
    const { r, key } = repo(c, false);
    // Every attempt's artifacts of the run: the REST path is run-scoped (MeshInspector/MeshLib#6474).
    let list = artifactsOf(key).filter((a) => a.runId === Number(c.params.run_id));
    if (typeof c.query.name === 'string') list = list.filter((a) => a.name === c.query.name);
    if ((c.query.direction ?? 'desc') === 'desc') list = list.reverse();
    return artifactPage(c, list, r);
  };
  H['actions/list-artifacts-for-repo'] = async (c) => {
    const { r, key } = repo(c, false);
    let list = artifactsOf(key).reverse();
    if (typeof c.query.name === 'string') list = list.filter((a) => a.name === c.query.name);
    return artifactPage(c, list, r);
  };
  H['actions/get-artifact'] = async (c) => {
    const { r, key } = repo(c, false);
    return ok(artifactJson(findArtifact(c, key), r));
  };
  H['actions/delete-artifact'] = async (c) => {
    const { key } = repo(c, true);
    const a = findArtifact(c, key);
    h.backend()?.deleteArtifact(key, a.id);
    return { status: 204 };
  };
  H['actions/download-artifact'] = async (c) => {
    const { key } = repo(c, false);
    // "The :archive_format must be zip."
    if (c.params.archive_format !== 'zip') throw fail(c, 404, 'Not Found');
    const a = findArtifact(c, key);
    if (a.expired) throw fail(c, 410, 'Artifact has expired');
    const location = h.backend()?.artifactDownloadUrl(key, a.id, DOWNLOAD_URL_TTL_SEC);
    if (!location) throw fail(c, 404, 'Not Found');
    return { status: 302, headers: { location } };
  };

  const cacheJson = (x: ActionsCacheView): Record<string, unknown> => ({
    id: x.id,
    ref: x.ref,
    key: x.key,
    version: x.version,
    last_accessed_at: x.lastAccessedAt,
    created_at: x.createdAt,
    size_in_bytes: x.sizeInBytes,
  });
  H['actions/get-actions-cache-list'] = async (c) => {
    const { key } = repo(c, false);
    let list = cachesOf(key);
    // `key`: "An explicit key or prefix for identifying the cache".
    if (typeof c.query.key === 'string') list = list.filter((x) => x.key.startsWith(c.query.key as string));
    if (typeof c.query.ref === 'string') list = list.filter((x) => x.ref === c.query.ref);
    list = sortCaches(list, String(c.query.sort ?? 'last_accessed_at'), String(c.query.direction ?? 'desc'));
    const page = h.paginate(c, list);
    return ok({ total_count: list.length, actions_caches: page.items.map(cacheJson) }, page.headers);
  };
  H['actions/delete-actions-cache-by-key'] = async (c) => {
    const { key } = repo(c, true);
    const doomed = cachesOf(key).filter((x) => x.key === c.query.key && (typeof c.query.ref !== 'string' || x.ref === c.query.ref));
    if (doomed.length === 0) throw fail(c, 404, 'Not Found');
    for (const x of doomed) h.backend()?.deleteCache(key, x.id);
    return ok({ total_count: doomed.length, actions_caches: doomed.map(cacheJson) });
  };
  H['actions/delete-actions-cache-by-id'] = async (c) => {
    const { key } = repo(c, true);
    const id = Number(c.params.cache_id);
    if (!cachesOf(key).some((x) => x.id === id)) throw fail(c, 404, 'Not Found');
    h.backend()?.deleteCache(key, id);
    return { status: 204 };
  };
  H['actions/get-actions-cache-usage'] = async (c) => {
    const { r, key } = repo(c, false);
    const list = cachesOf(key);
    return ok({
      full_name: `${r.owner}/${r.name}`,
      active_caches_size_in_bytes: list.reduce((n, x) => n + x.sizeInBytes, 0),
      active_caches_count: list.length,
    });
  };
}

function sortCaches(list: ActionsCacheView[], sort: string, direction: string): ActionsCacheView[] {
  const value = (x: ActionsCacheView): number =>
    sort === 'size_in_bytes' ? x.sizeInBytes : Date.parse(sort === 'created_at' ? x.createdAt : x.lastAccessedAt);
  const sign = direction === 'asc' ? 1 : -1;
  // Ties (same second) fall back to the id, so the order is stable.
  return [...list].sort((a, b) => sign * (value(a) - value(b) || a.id - b.id));
}
