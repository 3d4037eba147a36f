/** Runs, attempts and jobs the runner registered: plain records, no behaviour. */
import type { AttemptKind } from './types.js';

export interface RunState {
  /** `owner/name` as registered. */
  repo: string;
  /** Lower-cased `owner/name`. */
  repoKey: string;
  runId: number;
  ref: string;
  baseRef: string | null;
  defaultBranch: string;
  headBranch: string;
  headSha: string;
  attempts: Map<number, AttemptState>;
}

export interface AttemptState {
  run: RunState;
  attempt: number;
  kind: AttemptKind;
  backendId: string;
}

export interface JobState {
  attempt: AttemptState;
  jobName: string;
  jobId: number | null;
  backendId: string;
  /** CreateArtifact calls accepted for this job (the per-job limit counts them). */
  artifactsCreated: number;
  ended: boolean;
}

export const repoKey = (repo: string): string => repo.toLowerCase();

export const isoTime = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** `main` or `refs/heads/main` → `refs/heads/main` (other `refs/…` kept as they are). */
export const fullRef = (ref: string): string => (ref.startsWith('refs/') ? ref : `refs/heads/${ref}`);
