/** Shapes shared by the runner's parts. */
import { SCOPES, type Scope as EmulatorScope } from '../github-emulator/scopes.js';
import type { Json } from './expressions.js';
import type { LoadedWorkflow } from './workflow.js';

export type Conclusion = 'success' | 'failure' | 'cancelled' | 'skipped';
/** The keys of a workflow's `permissions:` block (the emulator's scopes, less the implicit `metadata`). */
export type Scope = Exclude<EmulatorScope, 'metadata'>;
export type Access = 'read' | 'write' | 'none';
export type Permissions = Partial<Record<Scope, Access>>;

export const ALL_SCOPES: Scope[] = SCOPES.filter((s): s is Scope => s !== 'metadata');

/** The runner's clock: real time plus whatever the test advanced it by. */
export interface RunnerClock {
  now(): number;
  advance(ms: number): void;
}

export interface Annotation {
  level: 'error' | 'warning' | 'notice';
  message: string;
  title?: string;
  file?: string;
  line?: number;
}

export interface StepRecord {
  name: string;
  id: string;
  outcome: Conclusion;
  conclusion: Conclusion;
  outputs: Record<string, string>;
}

/** What one job (one matrix leg) left behind. */
export interface LegResult {
  conclusion: Conclusion;
  /** Set when the job did not end by itself: `timeout`, `cancel`, `runner-lost`. */
  stoppedBy?: 'timeout' | 'cancel' | 'runner-lost';
  outputs: Record<string, string>;
  steps: StepRecord[];
  /** The job's log, every secret and mask replaced by `***`. */
  log: string;
  /** GITHUB_STEP_SUMMARY of every step, concatenated (each step's within 1 MiB). */
  summary: string;
  annotations: Annotation[];
}

/** The run-level facts every job of a run shares (the `github` context's source). */
export interface RunFacts {
  id: number;
  number: number;
  attempt: number;
  repo: string;
  repoId: number;
  ownerId: number;
  event: string;
  eventPayload: Record<string, Json>;
  ref: string;
  sha: string;
  actor: string;
  /** The workflow the run was started from (not a called one). */
  entry: LoadedWorkflow;
  /** The repository's artifact and log retention in days (Settings › Actions › General; GitHub's default 90). */
  retentionDays?: number;
}
