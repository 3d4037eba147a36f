/** The emulator's in-memory state: plain records, no behaviour. */
import type { Scopes } from './scopes.js';

export type Permission = 'admin' | 'maintain' | 'push' | 'triage' | 'pull' | 'none';

export interface TokenSpec {
  login: string;
  /** Per repository (`owner/repo`) or per owner (`owner/*`). */
  permissions?: Record<string, 'admin' | 'push' | 'pull' | 'none'>;
  /** Permission on repositories not named in `permissions`; default `push`. */
  default?: 'admin' | 'push' | 'pull' | 'none';
  /**
   * `installation` (a GitHub App token, like GITHUB_TOKEN: may create check runs; a write
   * without permission is 403 "Resource not accessible by integration") or `pat`
   * (check-run creation is 403). Default `installation`.
   */
  type?: 'installation' | 'pat';
  /** Primary rate limit of this token (default 5000 an hour). */
  rateLimit?: number;
  /**
   * Fine-grained permissions, as GITHUB_TOKEN's `permissions:` and an app
   * installation token have them. When set, every REST operation, GraphQL
   * field and git service is checked against them (unnamed scopes are `none`;
   * `metadata` is always read). Unset: only the repository-level permission
   * above applies.
   */
  scopes?: Scopes;
  /**
   * A classic PAT's (or OAuth token's) scopes, sent back in every REST and GraphQL answer's `X-OAuth-Scopes` header, as
   * GitHub does for such tokens (never for an installation token or a fine-grained PAT). Only the `workflow` scope is
   * acted on: without it a push that creates or changes a workflow file is refused (workflow-guard.ts).
   */
  oauthScopes?: string[];
  /** When the token stops working (emulator-clock ms): REST/GraphQL answer 401 Bad credentials, git asks for credentials. */
  expiresAt?: number;
  /**
   * Repositories (`owner/name`, or `owner/*`) the token acts on. Outside them it
   * can only read public repositories, as any authenticated token can.
   */
  repositories?: string[];
  /** Whose budget the secondary content limit counts against (default: the login; an installation token: its installation). */
  account?: string;
  /** The app installation that minted this token (set by the emulator; DELETE /installation/token works with it). */
  installationId?: number;
}

export interface UserRecord {
  login: string;
  id: number;
  node_id: string;
  type: 'User' | 'Organization' | 'Bot';
}

export interface RepoRecord {
  id: number;
  node_id: string;
  owner: string;
  name: string;
  description: string | null;
  default_branch: string;
  archived: boolean;
  disabled: boolean;
  fork: boolean;
  /** The repository this one was forked from (POST /repos/{owner}/{repo}/forks), or null. */
  parentKey: string | null;
  visibility: 'public' | 'private' | 'internal';
  topics: string[];
  created_at: string;
  updated_at: string;
  pushed_at: string;
  gitDir: string;
  nextNumber: number;
  labels: Map<string, LabelRecord>;
  /** Pushes per branch (the CI policy's `pushCount`). */
  pushCounts: Map<string, number>;
}

export interface LabelRecord {
  id: number;
  node_id: string;
  name: string;
  color: string;
  description: string | null;
  default: boolean;
}

export interface PullRecord {
  id: number;
  node_id: string;
  repoKey: string;
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  draft: boolean;
  locked: boolean;
  headRef: string;
  /** The repository the head branch lives in: the PR's own, or a fork of it in the same network. */
  headRepoKey: string;
  /** The head commit last seen (kept when the branch is deleted or the PR closed). */
  headSha: string;
  baseRef: string;
  baseSha: string;
  user: string;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  merged_at: string | null;
  merge_commit_sha: string | null;
  merged_by: string | null;
  labels: string[];
  assignees: string[];
  requested_reviewers: string[];
  requested_teams: string[];
  /** Reviews left on the PR, oldest first (GitHub drops a reviewer from requested_reviewers once they review). */
  reviews: ReviewRecord[];
  maintainer_can_modify: boolean;
  /** Reads left that answer `mergeable: null`, for the current (base, head) pair. */
  nullReadsLeft: number;
  nullReadsKey: string;
}

export interface ReviewRecord {
  id: number;
  node_id: string;
  user: string;
  body: string;
  state: 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'PENDING' | 'DISMISSED';
  commit_id: string;
  submitted_at: string | null;
}

export interface StatusRecord {
  id: number;
  node_id: string;
  repoKey: string;
  sha: string;
  state: 'error' | 'failure' | 'pending' | 'success';
  description: string | null;
  target_url: string | null;
  context: string;
  creator: string;
  created_at: string;
  updated_at: string;
}

export interface CheckRunRecord {
  id: number;
  node_id: string;
  repoKey: string;
  head_sha: string;
  name: string;
  status: 'queued' | 'in_progress' | 'completed' | 'waiting' | 'requested' | 'pending';
  conclusion: string | null;
  started_at: string | null;
  completed_at: string | null;
  details_url: string | null;
  external_id: string | null;
  output: { title: string | null; summary: string | null; text: string | null; annotations_count: number };
  /** Annotations sent with create and update requests, in order: each request's are appended (at most 50 a request). */
  annotations?: CheckRunAnnotation[];
  app: string;
  check_suite_id: number;
  /** When it concluded, in ms (GitHub's `completed_at` has whole seconds; tests order events by this). */
  concludedAtMs?: number;
}

export interface CheckRunAnnotation {
  path: string;
  start_line: number;
  end_line: number;
  start_column?: number;
  end_column?: number;
  annotation_level: 'notice' | 'warning' | 'failure';
  message: string;
  title?: string;
  raw_details?: string;
}

export interface WorkflowJobSpec {
  name: string;
  status?: 'queued' | 'in_progress' | 'completed' | 'waiting';
  conclusion?: 'success' | 'failure' | 'cancelled' | 'skipped' | 'timed_out' | 'neutral' | 'action_required' | null;
  steps?: Array<{ name: string; status?: 'queued' | 'in_progress' | 'completed'; conclusion?: string | null; number?: number }>;
  labels?: string[];
  runner_name?: string | null;
}

export interface WorkflowRunRecord {
  id: number;
  node_id: string;
  repoKey: string;
  name: string;
  path: string;
  workflow_id: number;
  run_number: number;
  run_attempt: number;
  event: string;
  status: string;
  conclusion: string | null;
  head_branch: string;
  head_sha: string;
  created_at: string;
  updated_at: string;
  jobs: WorkflowJobRecord[];
}

export interface WorkflowJobRecord extends WorkflowJobSpec {
  id: number;
  node_id: string;
  started_at: string;
  completed_at: string | null;
  /** The attempt that ran this job (default: the run's attempt). */
  run_attempt?: number;
}

export const nowIso = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
