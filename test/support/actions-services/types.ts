/** Public types of the emulated GitHub Actions services (results service, cache service, blob storage). */

/**
 * How a run attempt came to be: the first attempt, "Re-run failed jobs"
 * (a partial re-run: jobs that are not re-run keep their earlier results) or
 * "Re-run all jobs" (a fresh attempt).
 */
export type AttemptKind = 'first' | 'rerun-failed' | 'rerun-all';

/** Where reports about GitHub disagree, each behaviour is a switch; README.md gives the evidence for each default. */
export interface ArtifactRules {
  /**
   * A later attempt uploading a name an earlier attempt of the run uploaded:
   * `allow` (default; both are kept, Kong/insomnia#10253) or `conflict` (409
   * "an artifact with this name already exists on the workflow run").
   */
  reuploadAcrossAttempts: 'allow' | 'conflict';
  /**
   * Artifact ids: `unordered` (default) gives an earlier attempt's artifacts
   * higher ids than a later attempt's, so the toolkit's highest-id pick
   * (`listArtifacts({ latest: true })`) returns the older upload
   * (Systemorph/MeshWeaver#4303, dotnet/orleans#11328); `ascending` numbers
   * them in creation order.
   */
  artifactIds: 'unordered' | 'ascending';
  /**
   * What the internal ListArtifacts of an attempt shows: `by-kind` (default:
   * a "re-run failed jobs" attempt also lists the attempts it inherits from,
   * a "re-run all jobs" attempt only its own: actions/upload-artifact#585),
   * `attempt` (only its own) or `run` (every attempt).
   */
  internalList: 'by-kind' | 'attempt' | 'run';
  /**
   * GetSignedArtifactURL (and DeleteArtifact) for an artifact of an earlier
   * attempt: `not-found` (default; 404 "workflow run not found",
   * actions/download-artifact#486, MeshInspector/MeshLib#6474) or `allow`.
   * The REST path (`findBy`) works either way.
   */
  earlierAttemptAccess: 'not-found' | 'allow';
}

export interface ActionsServicesOptions {
  port?: number;
  /** HMAC secret for runtime tokens and signed URLs (default: random). */
  secret?: string;
  /** The clock (ms since epoch) for token and URL expiry, `created_at` and retention (default `Date.now`). */
  now?: () => number;
  artifacts?: Partial<ArtifactRules>;
  /** At most this many CreateArtifact calls a job may make (default 500, the documented limit). */
  maxArtifactsPerJob?: number;
  /** Refuse the runtime token of a job that `endJob` ended (default true). */
  refuseEndedJobs?: boolean;
  /** Lifetime of signed upload/download URLs from the results and cache services (default 3600 s). */
  signedUrlTtlSec?: number;
}

export interface StartAttemptSpec {
  /** `owner/name`. */
  repo: string;
  runId: number;
  attempt: number;
  kind: AttemptKind;
  /** The run's ref (default `refs/heads/<defaultBranch>`): the cache scope its jobs write to. */
  ref?: string;
  /** For a pull request run: the base branch (`main` or `refs/heads/main`), whose caches its jobs may read. */
  baseRef?: string;
  /** The repository's default branch (default `main`), whose caches every run may read. */
  defaultBranch?: string;
  /** Shown as `workflow_run.head_branch` / `head_sha` in REST artifact answers. */
  headBranch?: string;
  headSha?: string;
  /** The attempt's backend id in runtime tokens (default: a random UUID per attempt). */
  workflowRunBackendId?: string;
}

export interface AttemptInfo {
  repo: string;
  runId: number;
  attempt: number;
  kind: AttemptKind;
  workflowRunBackendId: string;
}

export interface RegisterJobSpec {
  repo: string;
  runId: number;
  runAttempt: number;
  jobName: string;
  /** The job's numeric id (`job.check_run_id`), if the runner has one. */
  jobId?: number;
  /** Default: a random UUID. */
  workflowJobRunBackendId?: string;
  /** Token lifetime (default 6 h, a hosted job's longest run). */
  ttlSec?: number;
  /** May the job save caches (default true)? A read-only token gets "cache write denied". */
  cacheWrite?: boolean;
}

export interface RegisteredJob {
  runtimeToken: string;
  workflowRunBackendId: string;
  workflowJobRunBackendId: string;
  /** The variables the runner gives a JavaScript action for these services. */
  env: Record<string, string>;
}

export interface ArtifactRecord {
  id: number;
  repo: string;
  runId: number;
  attempt: number;
  workflowRunBackendId: string;
  workflowJobRunBackendId: string;
  jobName: string;
  name: string;
  /** Size and `sha256:<hex>` as the client reported them at FinalizeArtifact. */
  size: number;
  digest: string | null;
  mimeType: string | null;
  finalized: boolean;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
  blobName: string;
}

export interface CacheRecord {
  id: number;
  repo: string;
  /** The ref scope it was saved in (`refs/heads/feature`). */
  scope: string;
  key: string;
  version: string;
  size: number;
  finalized: boolean;
  createdAt: string;
  lastAccessedAt: string;
  blobName: string;
}

export interface ServiceRequest {
  kind: 'twirp' | 'blob';
  method: string;
  path: string;
  /** Twirp: `ArtifactService/CreateArtifact`. */
  rpc?: string;
  status: number;
  /** Twirp error message, when one was answered. */
  error?: string;
  time: number;
}
