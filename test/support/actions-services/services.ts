/**
 * Emulated GitHub Actions services on one HTTP server on 127.0.0.1:
 *  - the results service's twirp API at `/twirp/github.actions.results.api.v1.{ArtifactService,CacheService}/…`
 *    (ACTIONS_RESULTS_URL), authenticated by the job's runtime token;
 *  - signed blob storage at `/actionsresults/actions-results/…` (the URLs those RPCs hand out).
 * The runner registers attempts and jobs; each job gets a runtime token and
 * the environment a JavaScript action sees. See README.md beside this file.
 */
import { readBody } from '../http-body.js';
import { randomBytes, randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ActionsArtifactView, ActionsCacheView, ActionsRestBackend } from '../github-emulator/actions-rest.js';
import { ArtifactStore } from './artifacts.js';
import { BlobStore } from './blob-store.js';
import { CacheStore, type CacheScope } from './cache.js';
import { verifyJwt, signJwt } from './jwt.js';
import { fullRef, repoKey, type AttemptState, type JobState, type RunState } from './state.js';
import { TwirpError, type Json } from './twirp.js';
import type {
  ActionsServicesOptions,
  ArtifactRecord,
  ArtifactRules,
  AttemptInfo,
  CacheRecord,
  RegisteredJob,
  RegisterJobSpec,
  ServiceRequest,
  StartAttemptSpec,
} from './types.js';

const TWIRP_PREFIX = '/twirp/github.actions.results.api.v1.';
const DEFAULT_RULES: ArtifactRules = { reuploadAcrossAttempts: 'allow', artifactIds: 'unordered', internalList: 'by-kind', earlierAttemptAccess: 'not-found' };
const SIX_HOURS_SEC = 6 * 3600;

export class ActionsServices {
  /** Origin of the server (`http://127.0.0.1:PORT`); ACTIONS_RESULTS_URL is `${url}/`. */
  readonly url: string;
  readonly port: number;
  /** Every twirp and blob request, in arrival order. */
  readonly requests: ServiceRequest[] = [];
  /** Unexpected errors in handlers (each also answered 500). */
  readonly errors: Error[] = [];

  private readonly secret: string;
  private readonly now: () => number;
  private readonly refuseEndedJobs: boolean;
  private readonly blobs: BlobStore;
  private readonly artifactStore: ArtifactStore;
  private readonly cacheStore: CacheStore;
  private readonly runs = new Map<string, RunState>();
  private readonly attempts = new Map<string, AttemptState>();
  private readonly jobs = new Map<string, JobState>();

  private constructor(
    private readonly server: http.Server,
    opts: ActionsServicesOptions,
  ) {
    this.port = (server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    this.secret = opts.secret ?? randomBytes(32).toString('hex');
    this.now = opts.now ?? Date.now;
    this.refuseEndedJobs = opts.refuseEndedJobs ?? true;
    const urlTtlSec = opts.signedUrlTtlSec ?? 3600;
    this.blobs = new BlobStore(this.secret, this.now, () => this.url);
    this.artifactStore = new ArtifactStore({
      rules: { ...DEFAULT_RULES, ...opts.artifacts },
      maxPerJob: opts.maxArtifactsPerJob ?? 500,
      now: this.now,
      blobs: this.blobs,
      urlTtlSec,
      attemptByBackendId: (id) => this.attempts.get(id),
    });
    this.cacheStore = new CacheStore({ now: this.now, blobs: this.blobs, urlTtlSec });
  }

  static async start(opts: ActionsServicesOptions = {}): Promise<ActionsServices> {
    let services: ActionsServices | undefined;
    const server = http.createServer((req, res) => {
      if (!services) return void res.writeHead(503).end();
      services.handle(req, res).catch((e: unknown) => services!.fail(res, e));
    });
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    services = new ActionsServices(server, opts);
    return services;
  }

  // ================================================================ runner API

  /** Registers an attempt of a run; say which kind it is, as GitHub's re-run buttons do. */
  startAttempt(spec: StartAttemptSpec): AttemptInfo {
    const run = this.run(spec);
    if (run.attempts.has(spec.attempt)) throw new Error(`attempt ${spec.attempt} of run ${spec.runId} is already started`);
    if (spec.attempt === 1 ? spec.kind !== 'first' : spec.kind === 'first') throw new Error(`attempt ${spec.attempt} cannot be of kind '${spec.kind}'`);
    const attempt: AttemptState = { run, attempt: spec.attempt, kind: spec.kind, backendId: spec.workflowRunBackendId ?? randomUUID() };
    run.attempts.set(spec.attempt, attempt);
    this.attempts.set(attempt.backendId, attempt);
    return { repo: run.repo, runId: run.runId, attempt: attempt.attempt, kind: attempt.kind, workflowRunBackendId: attempt.backendId };
  }

  /** Registers a job of a started attempt and mints its runtime token. */
  registerJob(spec: RegisterJobSpec): RegisteredJob {
    const attempt = this.runs.get(runKey(spec.repo, spec.runId))?.attempts.get(spec.runAttempt);
    if (!attempt) throw new Error(`attempt ${spec.runAttempt} of run ${spec.repo}#${spec.runId} is not started: call startAttempt first`);
    const job: JobState = {
      attempt,
      jobName: spec.jobName,
      jobId: spec.jobId ?? null,
      backendId: spec.workflowJobRunBackendId ?? randomUUID(),
      artifactsCreated: 0,
      ended: false,
    };
    this.jobs.set(job.backendId, job);
    const runtimeToken = this.mintToken(job, spec.ttlSec ?? SIX_HOURS_SEC, spec.cacheWrite ?? true);
    return { runtimeToken, workflowRunBackendId: attempt.backendId, workflowJobRunBackendId: job.backendId, env: this.jobEnv(runtimeToken) };
  }

  /** The variables a JavaScript action of a job sees for these services. */
  jobEnv(runtimeToken: string): Record<string, string> {
    return {
      ACTIONS_RUNTIME_TOKEN: runtimeToken,
      ACTIONS_RESULTS_URL: `${this.url}/`,
      // Cache service v1 would read ACTIONS_CACHE_URL; v2 (the only one served) reads ACTIONS_RESULTS_URL.
      ACTIONS_CACHE_URL: `${this.url}/`,
      ACTIONS_CACHE_SERVICE_V2: 'True',
    };
  }

  /** Marks a job ended; with `refuseEndedJobs` its token is refused from now on. */
  endJob(runtimeTokenOrJobBackendId: string): void {
    const job = this.jobs.get(runtimeTokenOrJobBackendId) ?? this.jobOfToken(runtimeTokenOrJobBackendId);
    if (!job) throw new Error('no such job');
    job.ended = true;
  }

  // ================================================================ state for tests

  artifacts(filter: { repo?: string; runId?: number; attempt?: number } = {}): ArtifactRecord[] {
    return this.artifactStore
      .all()
      .filter((a) => (filter.repo ? repoKey(a.repo) === repoKey(filter.repo) : true))
      .filter((a) => (filter.runId !== undefined ? a.runId === filter.runId : true))
      .filter((a) => (filter.attempt !== undefined ? a.attempt === filter.attempt : true));
  }

  caches(filter: { repo?: string } = {}): CacheRecord[] {
    return this.cacheStore.all().filter((c) => (filter.repo ? repoKey(c.repo) === repoKey(filter.repo) : true));
  }

  /** The stored bytes of an artifact (its zip, or the raw file of a `skipArchive` upload). */
  artifactContent(id: number): Buffer | undefined {
    const r = this.artifactStore.byId(id);
    return r ? this.blobs.get(r.blobName)?.data : undefined;
  }

  /** Test hook: change an artifact's stored bytes (default: flip the last byte), so its digest no longer matches. */
  corruptArtifact(id: number, change: (data: Buffer) => Buffer = flipLastByte): void {
    const r = this.artifactStore.byId(id);
    if (!r) throw new Error(`no artifact ${id}`);
    this.blobs.mutate(r.blobName, change);
  }

  /** The view the GitHub emulator's REST endpoints read: `emu.attachActionsServices(services.restBackend())`. */
  restBackend(): ActionsRestBackend {
    return {
      artifacts: (key) => this.artifactStore.finalized(key).map((a) => this.artifactView(a)),
      deleteArtifact: (_key, id) => this.artifactStore.deleteById(id),
      artifactDownloadUrl: (key, id, ttlSec) => {
        const r = this.artifactStore.byId(id);
        return r?.finalized && repoKey(r.repo) === key ? this.artifactStore.downloadUrl(r, ttlSec) : null;
      },
      caches: (key) => this.cacheStore.finalized(key).map(cacheView),
      deleteCache: (_key, id) => this.cacheStore.deleteById(id),
    };
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  // ================================================================ tokens

  private mintToken(job: JobState, ttlSec: number, cacheWrite: boolean): string {
    const { attempt } = job;
    const iat = Math.floor(this.now() / 1000);
    return signJwt(
      {
        // Shaped like GitHub's: the artifact client reads the Actions.Results scope
        // (`getBackendIdsFromToken`), the cache service the `ac` claim.
        scp: `Actions.GenericRead:${attempt.backendId} Actions.Results:${attempt.backendId}:${job.backendId}`,
        ac: JSON.stringify(cacheScopes(attempt.run, cacheWrite)),
        iss: 'vstoken.actions.githubusercontent.com',
        aud: 'vso:actions-services-emulator',
        nbf: iat,
        iat,
        exp: iat + ttlSec,
        repository: attempt.run.repo,
        run_id: String(attempt.run.runId),
        run_attempt: String(attempt.attempt),
        job: job.jobName,
      },
      this.secret,
    );
  }

  private jobOfToken(token: string): JobState | undefined {
    const claims = verifyJwt(token, this.secret);
    const ids = typeof claims?.scp === 'string' ? /Actions\.Results:[^:\s]+:(\S+)/.exec(claims.scp) : null;
    return ids ? this.jobs.get(ids[1]!) : undefined;
  }

  /** The job and cache scopes of a request's bearer token; twirp 401 when it does not authenticate. */
  private authenticate(req: IncomingMessage): { job: JobState; scopes: CacheScope[] } {
    const token = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token) throw new TwirpError('unauthenticated', 'missing bearer token');
    const claims = verifyJwt(token, this.secret);
    if (!claims) throw new TwirpError('unauthenticated', 'invalid token: signature verification failed');
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= this.now()) throw new TwirpError('unauthenticated', 'token is expired');
    const job = this.jobOfToken(token);
    if (!job) throw new TwirpError('unauthenticated', 'invalid token: unknown job');
    if (job.ended && this.refuseEndedJobs) throw new TwirpError('unauthenticated', 'token is no longer valid: the job has completed');
    return { job, scopes: parseScopes(claims.ac) };
  }

  // ================================================================ HTTP

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = this.now();
    const url = new URL(req.url ?? '/', this.url);
    const method = (req.method ?? 'GET').toUpperCase();
    const body = await readBody(req);
    if (url.pathname.startsWith(TWIRP_PREFIX)) return this.handleTwirp(req, res, url, method, body, started);
    const reply = this.blobs.handle(method, url, req.headers, body);
    res.writeHead(reply.status, reply.headers).end(reply.body);
    this.requests.push({ kind: 'blob', method, path: url.pathname, status: reply.status, time: started });
  }

  private handleTwirp(req: IncomingMessage, res: ServerResponse, url: URL, method: string, raw: Buffer, started: number): void {
    const rpc = url.pathname.slice(TWIRP_PREFIX.length);
    let status = 200;
    let answer: Json;
    try {
      answer = this.twirp(req, method, rpc, raw);
    } catch (e) {
      if (!(e instanceof TwirpError)) throw e;
      status = e.status;
      answer = { code: e.code, msg: e.message };
    }
    const text = JSON.stringify(answer);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }).end(text);
    this.requests.push({ kind: 'twirp', method, path: url.pathname, rpc, status, ...(status !== 200 ? { error: String(answer.msg) } : {}), time: started });
  }

  private twirp(req: IncomingMessage, method: string, rpc: string, raw: Buffer): Json {
    if (method !== 'POST') throw new TwirpError('bad_route', `unsupported method "${method}" (only POST is allowed)`);
    const [service, name = ''] = rpc.split('/');
    const { job, scopes } = this.authenticate(req);
    const body = parseBody(raw);
    if (service === 'ArtifactService') return this.artifactStore.rpc(name, job, body);
    if (service === 'CacheService') return this.cacheStore.rpc(name, job.attempt.run.repo, scopes, body);
    throw new TwirpError('bad_route', `no handler for path "${TWIRP_PREFIX}${rpc}"`);
  }

  private fail(res: ServerResponse, e: unknown): void {
    this.errors.push(e instanceof Error ? e : new Error(String(e)));
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ code: 'internal', msg: String(e) }));
  }

  // ================================================================ helpers

  private run(spec: StartAttemptSpec): RunState {
    const key = runKey(spec.repo, spec.runId);
    let run = this.runs.get(key);
    if (!run) {
      const defaultBranch = spec.defaultBranch ?? 'main';
      const ref = fullRef(spec.ref ?? defaultBranch);
      run = {
        repo: spec.repo,
        repoKey: repoKey(spec.repo),
        runId: spec.runId,
        ref,
        baseRef: spec.baseRef ? fullRef(spec.baseRef) : null,
        defaultBranch,
        headBranch: spec.headBranch ?? ref.replace(/^refs\/heads\//, ''),
        headSha: spec.headSha ?? '0'.repeat(40),
        attempts: new Map(),
      };
      this.runs.set(key, run);
    }
    return run;
  }

  private artifactView(a: ArtifactRecord): ActionsArtifactView {
    const run = this.runs.get(runKey(a.repo, a.runId));
    return {
      id: a.id,
      name: a.name,
      size: a.size,
      digest: a.digest,
      createdAt: a.createdAt,
      updatedAt: a.updatedAt,
      expiresAt: a.expiresAt,
      expired: this.artifactStore.isExpired(a),
      runId: a.runId,
      runAttempt: a.attempt,
      headBranch: run?.headBranch ?? '',
      headSha: run?.headSha ?? '',
    };
  }
}

/** Starts the services on 127.0.0.1 (random port unless `opts.port`). */
export function startActionsServices(opts: ActionsServicesOptions = {}): Promise<ActionsServices> {
  return ActionsServices.start(opts);
}

/** The job's own ref (read and write unless `cacheWrite` is false), then the PR's base, then the default branch (read). */
function cacheScopes(run: RunState, cacheWrite: boolean): CacheScope[] {
  const scopes: CacheScope[] = [{ Scope: run.ref, Permission: cacheWrite ? 3 : 1 }];
  for (const ref of [run.baseRef, fullRef(run.defaultBranch)]) if (ref && !scopes.some((s) => s.Scope === ref)) scopes.push({ Scope: ref, Permission: 1 });
  return scopes;
}

function parseScopes(ac: unknown): CacheScope[] {
  try {
    const v: unknown = typeof ac === 'string' ? JSON.parse(ac) : [];
    return Array.isArray(v) ? v.filter((s): s is CacheScope => typeof s?.Scope === 'string' && typeof s?.Permission === 'number') : [];
  } catch {
    return [];
  }
}

function parseBody(raw: Buffer): Json {
  try {
    const v: unknown = JSON.parse(raw.toString('utf8') || '{}');
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Json;
  } catch {
    // fall through
  }
  throw new TwirpError('invalid_argument', 'the json request could not be decoded');
}

function cacheView(c: CacheRecord): ActionsCacheView {
  return { id: c.id, ref: c.scope, key: c.key, version: c.version, sizeInBytes: c.size, createdAt: c.createdAt, lastAccessedAt: c.lastAccessedAt };
}

function runKey(repo: string, runId: number): string {
  return `${repoKey(repo)}#${runId}`;
}

function flipLastByte(data: Buffer): Buffer {
  if (data.length) data[data.length - 1] = data[data.length - 1]! ^ 0xff;
  return data;
}
