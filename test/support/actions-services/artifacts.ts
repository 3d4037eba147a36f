/**
 * The ArtifactService of the results service
 * (`github.actions.results.api.v1.ArtifactService`, what `@actions/artifact`
 * v2+ calls) and the artifact state the GitHub emulator's REST endpoints read.
 *
 * Error answers are GitHub's own where a user posted them (cited beside each);
 * where none was found the README says so.
 */
import type { BlobStore } from './blob-store.js';
import { isoTime, type AttemptState, type JobState } from './state.js';
import { TwirpError, field, int, str, type Json } from './twirp.js';
import type { ArtifactRecord, ArtifactRules } from './types.js';

export interface ArtifactDeps {
  rules: ArtifactRules;
  maxPerJob: number;
  now: () => number;
  blobs: BlobStore;
  urlTtlSec: number;
  attemptByBackendId: (id: string) => AttemptState | undefined;
}

const DAY = 86_400_000;
/** GitHub's default retention when the upload names none. */
const DEFAULT_RETENTION_DAYS = 90;
// Ids: GitHub's are around 10^10. `unordered` gives each attempt a block below
// the previous attempt's, so an earlier attempt always holds the higher ids.
const ID_BASE = 9_000_000_000;
const ID_STRIDE = 10_000_000;
const MAX_ATTEMPTS = 100;

// Posted by many users (e.g. k0rdent/kcm#1636, actions/upload-artifact#634).
const NAME_TAKEN = 'an artifact with this name already exists on the workflow run';
// actions/download-artifact#486, MeshInspector/MeshLib#6474.
const RUN_NOT_FOUND = 'workflow run not found';

export class ArtifactStore {
  private readonly records: ArtifactRecord[] = [];
  private seq = 0;

  constructor(private readonly deps: ArtifactDeps) {}

  rpc(method: string, job: JobState, body: Json): Json {
    switch (method) {
      case 'CreateArtifact':
        return this.create(job, body);
      case 'FinalizeArtifact':
        return this.finalize(job, body);
      case 'ListArtifacts':
        return this.list(job, body);
      case 'GetSignedArtifactURL':
        return this.signedUrl(job, body);
      case 'DeleteArtifact':
        return this.remove(job, body);
      default:
        throw new TwirpError('bad_route', `no handler for path "/twirp/github.actions.results.api.v1.ArtifactService/${method}"`);
    }
  }

  // ---------------------------------------------------------------- views for tests and REST

  all(): ArtifactRecord[] {
    return this.records.map((r) => ({ ...r }));
  }

  /** Finalized artifacts of a repository (`repoKey` lower-cased), oldest first. */
  finalized(repo: string): ArtifactRecord[] {
    return this.records.filter((r) => r.finalized && r.repo.toLowerCase() === repo);
  }

  byId(id: number): ArtifactRecord | undefined {
    return this.records.find((r) => r.id === id);
  }

  isExpired(r: ArtifactRecord): boolean {
    return Date.parse(r.expiresAt) <= this.deps.now();
  }

  deleteById(id: number): boolean {
    const i = this.records.findIndex((r) => r.id === id);
    if (i < 0) return false;
    this.deps.blobs.delete(this.records[i]!.blobName);
    this.records.splice(i, 1);
    return true;
  }

  downloadUrl(r: ArtifactRecord, ttlSec: number): string {
    return this.deps.blobs.sign(r.blobName, 'r', ttlSec);
  }

  // ---------------------------------------------------------------- RPCs

  private create(job: JobState, body: Json): Json {
    const attempt = this.ownAttempt(job, body);
    const name = str(body, 'name');
    // Posted in qualcomm-linux/meta-qcom#1540.
    if (name.length < 1 || name.length > 256)
      throw new TwirpError('invalid_argument', 'name invalid length for artifact name: must be between 1 and 256 characters');
    // Reported limit (actions/upload-artifact#470); GitHub's status and message for it were not found.
    if (job.artifactsCreated >= this.deps.maxPerJob)
      throw new TwirpError('failed_precondition', `maximum number of artifacts (${this.deps.maxPerJob}) created for this job`);
    // A name is taken from CreateArtifact on, finalized or not: a retry after a
    // failed FinalizeArtifact hits the 409 (QIICR/dcmqi#562, camunda/camunda#62965).
    if (this.records.some((r) => r.workflowRunBackendId === attempt.backendId && r.name === name)) throw new TwirpError('already_exists', NAME_TAKEN);
    if (this.deps.rules.reuploadAcrossAttempts === 'conflict' && this.inRun(attempt).some((r) => r.name === name))
      throw new TwirpError('already_exists', NAME_TAKEN);
    job.artifactsCreated++;
    const record = this.newRecord(job, name, str(body, 'mime_type') || null, str(body, 'expires_at'));
    this.records.push(record);
    return { ok: true, signedUploadUrl: this.deps.blobs.sign(record.blobName, 'cw', this.deps.urlTtlSec) };
  }

  private finalize(job: JobState, body: Json): Json {
    const attempt = this.ownAttempt(job, body);
    const name = str(body, 'name');
    const record = this.records.find((r) => r.workflowRunBackendId === attempt.backendId && r.name === name);
    if (!record) throw new TwirpError('not_found', 'artifact not found');
    if (record.finalized) throw new TwirpError('failed_precondition', 'artifact is already finalized');
    if (!this.deps.blobs.get(record.blobName)) throw new TwirpError('not_found', 'artifact content not found: upload it before finalizing');
    record.size = int(body, 'size') ?? 0;
    const hash = field(body, 'hash');
    record.digest = typeof hash === 'string' && hash ? hash : null;
    record.finalized = true;
    record.updatedAt = isoTime(this.deps.now());
    // Immutable from here on: the upload URL no longer writes.
    this.deps.blobs.seal(record.blobName);
    return { ok: true, artifactId: String(record.id) };
  }

  private list(job: JobState, body: Json): Json {
    const visible = this.visibleAttempts(job.attempt);
    const nameFilter = field(body, 'name_filter');
    const idFilter = int(body, 'id_filter');
    const artifacts = this.records
      .filter((r) => r.finalized && !this.isExpired(r) && visible.has(r.workflowRunBackendId))
      .filter((r) => (typeof nameFilter === 'string' ? r.name === nameFilter : true))
      .filter((r) => (idFilter !== null ? r.id === idFilter : true))
      .map((r) => ({
        workflowRunBackendId: r.workflowRunBackendId,
        workflowJobRunBackendId: r.workflowJobRunBackendId,
        databaseId: String(r.id),
        name: r.name,
        size: String(r.size),
        createdAt: r.createdAt,
        ...(r.digest ? { digest: r.digest } : {}),
      }));
    return { artifacts };
  }

  private signedUrl(job: JobState, body: Json): Json {
    const record = this.finalizedIn(this.targetAttempt(job, body), str(body, 'name'));
    return { signedUrl: this.deps.blobs.sign(record.blobName, 'r', this.deps.urlTtlSec) };
  }

  private remove(job: JobState, body: Json): Json {
    const record = this.finalizedIn(this.targetAttempt(job, body), str(body, 'name'));
    this.deleteById(record.id);
    return { ok: true, artifactId: String(record.id) };
  }

  // ---------------------------------------------------------------- helpers

  /** The job's own attempt; the request must name it (a token only writes to its own run). */
  private ownAttempt(job: JobState, body: Json): AttemptState {
    if (str(body, 'workflow_run_backend_id') !== job.attempt.backendId) throw new TwirpError('not_found', RUN_NOT_FOUND);
    if (str(body, 'workflow_job_run_backend_id') !== job.backendId) throw new TwirpError('not_found', 'workflow job run not found');
    return job.attempt;
  }

  /** The attempt a read names: the job's own, or (when the rules allow) an earlier one of its run. */
  private targetAttempt(job: JobState, body: Json): AttemptState {
    const target = this.deps.attemptByBackendId(str(body, 'workflow_run_backend_id'));
    if (!target || target.run !== job.attempt.run) throw new TwirpError('not_found', RUN_NOT_FOUND);
    if (target !== job.attempt && this.deps.rules.earlierAttemptAccess === 'not-found') throw new TwirpError('not_found', RUN_NOT_FOUND);
    return target;
  }

  private finalizedIn(attempt: AttemptState, name: string): ArtifactRecord {
    const record = this.records.find((r) => r.finalized && r.workflowRunBackendId === attempt.backendId && r.name === name);
    if (!record) throw new TwirpError('not_found', 'artifact not found');
    return record;
  }

  private inRun(attempt: AttemptState): ArtifactRecord[] {
    const ids = new Set([...attempt.run.attempts.values()].map((a) => a.backendId));
    return this.records.filter((r) => ids.has(r.workflowRunBackendId));
  }

  /** Backend ids of the attempts whose artifacts an attempt's ListArtifacts shows. */
  private visibleAttempts(attempt: AttemptState): Set<string> {
    const mode = this.deps.rules.internalList;
    if (mode === 'attempt') return new Set([attempt.backendId]);
    if (mode === 'run') return new Set([...attempt.run.attempts.values()].map((a) => a.backendId));
    // by-kind: a partial re-run inherits the attempt before it (and what that one
    // inherits); a first attempt or a "re-run all jobs" attempt starts afresh.
    const seen = new Set([attempt.backendId]);
    let current: AttemptState | undefined = attempt;
    while (current?.kind === 'rerun-failed') {
      current = previousAttempt(current);
      if (current) seen.add(current.backendId);
    }
    return seen;
  }

  private newRecord(job: JobState, name: string, mimeType: string | null, expiresAt: string): ArtifactRecord {
    const { attempt } = job;
    const now = this.deps.now();
    const isZip = mimeType === null || mimeType === 'application/zip';
    const disposition = `attachment; filename="${name.replace(/[^\x20-\x7e]|"/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`;
    return {
      id: this.nextId(attempt.attempt),
      repo: attempt.run.repo,
      runId: attempt.run.runId,
      attempt: attempt.attempt,
      workflowRunBackendId: attempt.backendId,
      workflowJobRunBackendId: job.backendId,
      jobName: job.jobName,
      name,
      size: 0,
      digest: null,
      mimeType,
      finalized: false,
      createdAt: isoTime(now),
      updatedAt: isoTime(now),
      expiresAt: expiresAt && !Number.isNaN(Date.parse(expiresAt)) ? isoTime(Date.parse(expiresAt)) : isoTime(now + DEFAULT_RETENTION_DAYS * DAY),
      blobName: this.deps.blobs.reserve(`${attempt.backendId}/${job.backendId}/artifacts`, isZip ? '.zip' : '', isZip ? undefined : disposition),
    };
  }

  private nextId(attempt: number): number {
    this.seq++;
    if (this.deps.rules.artifactIds === 'ascending') return ID_BASE + this.seq;
    return ID_BASE + (MAX_ATTEMPTS - Math.min(attempt, MAX_ATTEMPTS)) * ID_STRIDE + this.seq;
  }
}

function previousAttempt(a: AttemptState): AttemptState | undefined {
  let best: AttemptState | undefined;
  for (const other of a.run.attempts.values()) if (other.attempt < a.attempt && (!best || other.attempt > best.attempt)) best = other;
  return best;
}
