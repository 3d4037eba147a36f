/** Public types of the GitHub emulator. */
import type { GitHubFieldError } from './openapi.js';
import type { ContentLimitOption } from './limits.js';
import type { Scope, ScopeLevel, Scopes } from './scopes.js';
import type { TokenSpec } from './state.js';

export type { TokenSpec, ContentLimitOption, Scope, ScopeLevel, Scopes };
export type { AppSpec, AppInstallationSpec, AddedApp } from './apps.js';

export type RequestKind = 'rest' | 'graphql' | 'git';

export interface EmulatorOptions {
  /**
   * A token registered at start with `admin` on every repository (`emu.token`);
   * `false` registers none. Default `ghs_emulator_token`.
   */
  token?: string | false;
  /** Login of that token (default `fleet-bot`). */
  login?: string;
  /** Folder for the bare repositories (default: a temp folder, removed by `close()`). */
  dir?: string;
  /** Port (default 0: a random free port). */
  port?: number;
  /**
   * Secondary limit on content-creating requests per account (all tokens of one
   * login or app installation): default 80 a minute and 500 an hour.
   * `{ perMinute, perHour }` sets either; the older `{ max, windowMs }` is one
   * window; `false` disables it.
   */
  contentLimit?: ContentLimitOption;
  /** Reads of a PR (GET pulls/{n}) that answer `mergeable: null` after each change of its head or base (default 0). */
  mergeableNullReads?: number;
  /** Check the emulator's own JSON responses against the OpenAPI response schemas (into `emu.responseProblems`). Default true. */
  validateResponses?: boolean;
  /**
   * The `commit_id` of the closed event when a merged PR closes an issue: `null` (default: what GitHub sends,
   * PyGithub/PyGithub#1295) or `merge-commit` (what the issue-event docs describe).
   */
  closedEventCommit?: 'null' | 'merge-commit';
  /** Seconds GitHub's primary rate limit window lasts (default 3600). */
  rateLimitWindowSec?: number;
}

export interface RequestRecord {
  id: number;
  kind: RequestKind;
  method: string;
  /** Path without the query (and without an `/api/v3` prefix). */
  path: string;
  query: string;
  /** OpenAPI path template (`/repos/{owner}/{repo}/pulls`), `/graphql`, or `git:<service>` for git. */
  route: string | null;
  operationId: string | null;
  status: number;
  token: string | null;
  login: string | null;
  body?: unknown;
  /** ms since epoch when the request arrived. */
  time: number;
  durationMs: number;
  /** Set when a fault or a limit answered instead of the handler. */
  fault?: string;
  /**
   * Set when the token's fine-grained permissions refused the request (a 403
   * "Resource not accessible by integration", a refused push, or a GraphQL
   * field answered FORBIDDEN): the permissions that would have been accepted,
   * as GitHub's `x-accepted-github-permissions` header lists them
   * (`contents=write`, `issues=write; pull_requests=write`). Not a violation.
   */
  denied?: string;
  /** GraphQL: the top-level fields (aliases resolved to names), e.g. ['repository', 'repository', 'rateLimit']. */
  graphqlFields?: string[];
  /** git: the bytes of the response body (a clone's or fetch's download: the advertisement or the pack). */
  responseBytes?: number;
}

/** emu.mintInstallationToken: an installation token such as a job's GITHUB_TOKEN. */
export interface MintTokenSpec {
  /** Repositories (`owner/name` or `owner/*`) it acts on; absent: all (then only `scopes` limit it). */
  repositories?: string[];
  /** The job's `permissions:` (unnamed scopes are `none`). */
  scopes: Scopes;
  /** Lifetime from now on the emulator clock (default 24 hours: a job's maximum). */
  expiresInMs?: number;
  /** Default `github-actions[bot]`. */
  login?: string;
  /** The token value (default: a fresh `ghs_` token). */
  token?: string;
  /** Primary rate limit (default 1000 an hour, GITHUB_TOKEN's per repository). */
  rateLimit?: number;
}

export interface RequestFilter {
  kind?: RequestKind;
  method?: string;
  route?: string;
  operationId?: string;
  status?: number;
  token?: string;
  path?: string | RegExp;
  fault?: string;
  /** true: any refusal; a string: that accepted-permissions value. */
  denied?: true | string;
}

export type ViolationKind = 'unknown-route' | 'method-not-allowed' | 'path-param' | 'query' | 'body' | 'json' | 'graphql' | 'semantic' | 'unimplemented';

export interface Violation {
  kind: ViolationKind;
  method: string;
  path: string;
  route: string | null;
  operationId: string | null;
  status: number;
  message: string;
  errors?: Array<GitHubFieldError | Record<string, unknown>>;
  time: number;
}

export interface ResponseProblem {
  operationId: string;
  status: number;
  path: string;
  errors: Array<{ instancePath: string; message?: string; keyword: string }>;
}

/**
 * `stall`: the request is read and never answered, until the client gives up (a remote that hangs);
 * `drop`: the connection is closed without an answer (git: "the remote end hung up unexpectedly").
 */
export type FaultKind = 'secondary-rate-limit' | 'primary-exhausted' | '5xx' | 'slow' | 'stall' | 'drop';

export interface FaultSpec {
  match?: {
    method?: string;
    /** A RegExp tested on the path; a string is an exact path, or an OpenAPI template when it contains `{`. */
    path?: RegExp | string;
    kind?: RequestKind;
    token?: string;
  };
  kind: FaultKind;
  /** How many matching requests it answers (default 1; Infinity for all). */
  times?: number;
  /** For `5xx` (default 502); for `secondary-rate-limit`, 403 (default) or 429, both of which GitHub documents. */
  status?: number;
  /** For `slow` (default 1000). */
  delayMs?: number;
  /** For `secondary-rate-limit` (default 1). */
  retryAfterSec?: number;
  /**
   * For `primary-exhausted`: seconds until `x-ratelimit-reset` (default 1). For `secondary-rate-limit` without
   * `retryAfterSec`: answer with `x-ratelimit-remaining: 0` and this `x-ratelimit-reset` instead of `retry-after`.
   */
  resetInSec?: number;
}

export interface FaultHandle {
  readonly hits: number;
  readonly remaining: number;
  cancel(): void;
}

export type CheckConclusion = 'success' | 'failure' | 'neutral' | 'cancelled' | 'skipped' | 'timed_out' | 'action_required' | 'stale';

export interface CiCheck {
  name: string;
  conclusion: CheckConclusion;
  /** Leave the check unfinished (`in_progress`) forever: CI that never concludes. */
  hang?: boolean;
  summary?: string;
  /** Overrides the plan's delay for this check. */
  delayMs?: number;
  /** Overrides the plan's start delay for this check. */
  startDelayMs?: number;
}

export interface CiStatus {
  context: string;
  state: 'success' | 'failure' | 'error' | 'pending';
  description?: string;
  delayMs?: number;
  startDelayMs?: number;
}

export interface CiPlan {
  checks?: CiCheck[];
  statuses?: CiStatus[];
  /** Checks and statuses start `in_progress`/`pending` and conclude after this many ms (default 0: concluded before the push returns). */
  delayMs?: number;
  /**
   * CI that starts late, as GitHub Actions does (a push event is queued, a
   * runner is picked): for this many ms after the push the commit has no
   * check run and no status at all; then they appear `queued`/`pending` and
   * conclude `delayMs` later. Real time; `emu.idle()` waits for it.
   */
  startDelayMs?: number;
  /**
   * CI held by a test (`ci.held`): `start` keeps the commit with no check run
   * and no status until the gate opens (then they appear as a late start
   * would), `finish` leaves them `in_progress`/`pending` until it opens (then
   * they conclude). Not real time: `emu.idle()` does not wait for a gate.
   */
  gate?: { stage: 'start' | 'finish'; gate: CiGate };
}

/** A gate a test opens (`ci.held(…).release()`); what waits on it runs synchronously when it opens. */
export interface CiGate {
  readonly released: boolean;
  /** Runs `fn` when the gate opens (at once, synchronously, if it already has). */
  when(fn: () => void): void;
}

/** Required status checks on a branch (`emu.protectBranch`). */
export interface BranchRule {
  /** Check-run names or status contexts that must succeed on a PR's head before it merges into the branch. */
  requiredChecks: string[];
  /**
   * Where the rule lives: classic branch protection (`protection`, read with
   * GET …/branches/{branch} and …/protection) or a repository ruleset
   * (`ruleset`, read with GET …/rules/branches/{branch}). Default `protection`.
   */
  via?: 'protection' | 'ruleset';
  /**
   * Classic protection only: whether admins are held to it too ("Do not allow
   * bypassing the above settings"). Default false, as on GitHub: an admin
   * token merges past a missing check.
   */
  enforceAdmins?: boolean;
}

export interface CiContext {
  owner: string;
  repo: string;
  branch: string;
  sha: string;
  before: string | null;
  /** 1 for the first push to this branch, 2 for the next … (per repository and branch). */
  pushCount: number;
  source: PushEvent['source'];
}

export type CiPolicy = CiPlan | ((ctx: CiContext) => CiPlan | null | undefined | Promise<CiPlan | null | undefined>);

export interface PushEvent {
  owner: string;
  repo: string;
  ref: string;
  branch: string | null;
  before: string | null;
  after: string | null;
  created: boolean;
  deleted: boolean;
  /** `git` (a push over HTTP), `api` (emu.commit / git refs API) or `merge` (a PR merge). */
  source: 'git' | 'api' | 'merge';
  pusher: string | null;
}

export type PushHook = (event: PushEvent) => void | Promise<void>;

export interface CreateRepoSpec {
  owner: string;
  name: string;
  /** Files of the initial commit on the default branch (default: a README). */
  files?: Record<string, string>;
  /** Extra branches, each one commit of these files on top of the default branch. */
  branches?: Record<string, Record<string, string | null>>;
  defaultBranch?: string;
  archived?: boolean;
  disabled?: boolean;
  fork?: boolean;
  /** No commits at all. */
  empty?: boolean;
  topics?: string[];
  visibility?: 'public' | 'private' | 'internal';
  description?: string;
  /** Default: `User` when a registered token has this login, else `Organization`. */
  ownerType?: 'User' | 'Organization';
}

export interface CreatedRepo {
  owner: string;
  name: string;
  fullName: string;
  gitDir: string;
  cloneUrl: string;
  defaultBranch: string;
  /** The initial commit (null for an empty repository). */
  headSha: string | null;
}

export interface WorkflowRunSpec {
  owner: string;
  repo: string;
  name?: string;
  path?: string;
  headBranch?: string;
  headSha?: string;
  event?: string;
  status?: 'queued' | 'in_progress' | 'completed';
  conclusion?: 'success' | 'failure' | 'cancelled' | 'skipped' | 'timed_out' | 'neutral' | 'action_required' | null;
  runAttempt?: number;
  jobs: Array<{
    name: string;
    status?: 'queued' | 'in_progress' | 'completed' | 'waiting';
    conclusion?: 'success' | 'failure' | 'cancelled' | 'skipped' | 'timed_out' | 'neutral' | 'action_required' | null;
    steps?: Array<{ name: string; status?: 'queued' | 'in_progress' | 'completed'; conclusion?: string | null; number?: number }>;
    labels?: string[];
    runner_name?: string | null;
  }>;
}
