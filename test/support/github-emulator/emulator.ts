/**
 * The GitHub emulator: one HTTP server on 127.0.0.1 serving
 *  - REST at the root (`/repos/...`, also under `/api/v3`), every request
 *    checked against GitHub's OpenAPI description;
 *  - GraphQL at `/graphql` (also `/api/graphql`);
 *  - git smart HTTP at `/git/{owner}/{repo}.git` through `git http-backend`.
 * State lives in memory; repositories are real bare repositories on disk.
 */
import { readBody } from '../http-body.js';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { addActionsRestHandlers, type ActionsRestBackend } from './actions-rest.js';
import { IssueTracker, type ClosedCommitMode, type IssueRecord } from './issues.js';
import { addRunHandlers, type JobAnnotation, type RunControl } from './actions-runs.js';
import { addActionsSettingsHandlers, EnvironmentStore, type ActionsSettingsSpec } from './actions-settings.js';
import * as g from './git.js';
import { runHttpBackend } from './http-backend.js';
import { oauthScopesHeader, workflowGuardConfig, workflowRefusal } from './workflow-guard.js';
import {
  coerceParam,
  loadSpec,
  matchRoute,
  operationParams,
  paramsValidator,
  requestBodySpec,
  resourceOf,
  responseValidator,
  toGitHubErrors,
  type GitHubFieldError,
  type OpenApiOperation,
  type RouteMatch,
} from './openapi.js';
import { buildSchema, type GqlBackend } from './graphql-schema.js';
import { execute, isFragment, prepare, type GraphQLErrorJson } from './graphql.js';
import * as shapes from './shapes.js';
import { AppRegistry, looksLikeJwt, newInstallationToken, type AddedApp, type AppRecord, type AppSpec } from './apps.js';
import { appHandlers, JWT_OPERATIONS, type AppsHost } from './apps-rest.js';
import { EmulatorClock } from './clock.js';
import { checkOutputByteError, ContentLimiter, contentWindows, invalidRequestMessage, type ContentLimitOption } from './limits.js';
import { acceptedPermissions, assertScopes, gitNeed, permits, restNeed, type Access, type Scope, type ScopeNeed } from './scopes.js';
import {
  nowIso,
  type CheckRunAnnotation,
  type CheckRunRecord,
  type LabelRecord,
  type Permission,
  type PullRecord,
  type RepoRecord,
  type ReviewRecord,
  type StatusRecord,
  type TokenSpec,
  type UserRecord,
  type WorkflowJobRecord,
  type WorkflowRunRecord,
} from './state.js';
import type {
  BranchRule,
  CiCheck,
  CiGate,
  CiPlan,
  CiPolicy,
  CiStatus,
  CreatedRepo,
  CreateRepoSpec,
  EmulatorOptions,
  FaultHandle,
  FaultSpec,
  PushEvent,
  PushHook,
  RequestFilter,
  RequestKind,
  RequestRecord,
  ResponseProblem,
  Violation,
  WorkflowRunSpec,
  MintTokenSpec,
} from './types.js';

const DOCS = 'https://docs.github.com/rest';
const SECONDARY_DOCS = 'https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits';
const PRIMARY_DOCS = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';
const WRITE_METHODS = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
const PERM_RANK: Record<Permission, number> = { none: 0, pull: 1, triage: 2, push: 3, maintain: 4, admin: 5 };
/**
 * git at GitHub's own paths, beside `/git/…`: `/owner/repo.git/…`, or
 * `/owner/repo/info/refs` (and the two services) as actions/checkout builds
 * them from GITHUB_SERVER_URL. No REST route has either shape.
 */
const GITHUB_GIT_PATH = /^\/[^/]+\/[^/]+?(?:\.git(?:\/.*)?|\/(?:info\/refs|git-upload-pack|git-receive-pack))$/;

/**
 * A remote that fails below HTTP: `stall` reads the request and never answers
 * (the handler ends when the client gives up or the emulator closes); `drop`
 * closes the connection at once.
 */
/** GitHub's documented listing limits: https://docs.github.com/en/rest/commits/commits#compare-two-commits (300 files),
 * https://docs.github.com/en/rest/commits/commits#get-a-commit (3,000), https://docs.github.com/en/rest/git/trees#get-a-tree (100,000 entries, 7 MB). */
export const COMPARE_FILES_CAP = 300;
export const COMMIT_FILES_CAP = 3000;
export const TREE_ENTRIES_CAP = 100_000;
export const TREE_BYTES_CAP = 7 * 1024 * 1024;

function hangUp(kind: 'stall' | 'drop', req: IncomingMessage, res: ServerResponse): Promise<void> {
  req.resume();
  if (kind === 'drop') {
    req.socket.destroy();
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    if (res.destroyed || req.socket.destroyed) return resolve();
    res.once('close', () => resolve());
    req.socket.once('close', () => resolve());
  });
}

/**
 * Where GitHub's answers and its own description disagree, GitHub's answers
 * win: these response-schema errors are not problems of the emulator.
 */
const KNOWN_SCHEMA_INACCURACIES: Array<{ instancePath: RegExp; keyword: string; why: string }> = [
  {
    // A label created without a description has `description: null` everywhere; pull-request-simple says string.
    instancePath: /^(?:\/\d+)?\/labels\/\d+\/description$/,
    keyword: 'type',
    why: 'github/rest-api-description#1812',
  },
];

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown> | string | null,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body === 'object' && body && typeof body.message === 'string' ? body.message : `HTTP ${status}`);
  }
}

interface Auth {
  /** The token presented (null: anonymous). */
  token: string | null;
  spec: TokenSpec | null;
  /** A token was presented but is unknown (or expired). */
  invalid: boolean;
  login: string | null;
  /** The GitHub App a valid JWT authenticated (GET /app, token minting). */
  app?: AppRecord;
  /** Why a JWT was refused (answered on any endpoint, as GitHub does). */
  jwtError?: { status: number; message: string };
  /** Permissions refusals during this request (GraphQL fields answered FORBIDDEN), for the request log. */
  denied?: string[];
}

interface RestCtx {
  method: string;
  path: string;
  url: URL;
  params: Record<string, string>;
  query: Record<string, unknown>;
  rawQuery: URLSearchParams;
  body: unknown;
  auth: Auth;
  op: OpenApiOperation;
  /** The request's Accept header ('' when absent): the contents endpoint answers a raw media type. */
  accept: string;
}

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

interface RateBucket {
  limit: number;
  used: number;
  reset: number;
}

interface FaultState {
  spec: FaultSpec;
  hits: number;
  remaining: number;
}

type Handler = (c: RestCtx) => Promise<Reply>;

export class Emulator {
  /** REST base URL (no trailing slash): `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** GraphQL endpoint: `${url}/graphql`. */
  readonly graphqlUrl: string;
  readonly port: number;
  /** Folder holding the bare repositories (`<dir>/<owner>/<repo>.git`). */
  readonly reposDir: string;
  /** The token registered at start (admin everywhere), or null. */
  readonly token: string | null;
  readonly login: string;

  /** Every request, in arrival order. */
  readonly requests: RequestRecord[] = [];
  /** Every request the emulator rejected as not valid against GitHub's API description. */
  readonly violations: Violation[] = [];
  /** The emulator's own responses that do not match the response schema (unless `validateResponses: false`). */
  readonly responseProblems: ResponseProblem[] = [];
  /** Errors thrown by push hooks, CI policies or handlers (a handler error also answers 500). */
  readonly errors: Error[] = [];
  /**
   * The emulator's clock (real time until a test advances it): token expiry,
   * app JWT checks, the secondary-limit windows and the `date` header read it.
   */
  readonly clock = new EmulatorClock();

  private readonly server: http.Server;
  private readonly ownDir: boolean;
  private readonly opts: EmulatorOptions;
  private readonly tokens = new Map<string, TokenSpec>();
  private readonly users = new Map<string, UserRecord>();
  private readonly repos = new Map<string, RepoRecord>();
  private readonly pulls = new Map<string, PullRecord>();
  private readonly tracker: IssueTracker<RestCtx>;
  private closedCommitMode: ClosedCommitMode;
  private readonly statusesList: StatusRecord[] = [];
  private readonly checkRunsById = new Map<number, CheckRunRecord>();
  private readonly checkSuites = new Map<string, number>();
  private readonly runs = new Map<number, WorkflowRunRecord>();
  private readonly nodes = new Map<string, { type: 'PullRequest'; key: string }>();
  private readonly ci = new Map<string, CiPolicy>();
  private readonly protections = new Map<string, BranchRule>();
  private readonly hooks = new Set<PushHook>();
  private readonly faults: FaultState[] = [];
  private readonly rate = new Map<string, RateBucket>();
  /** Content-creating requests per account, for the 80-a-minute / 500-an-hour secondary limit. */
  private readonly contentLimiter: ContentLimiter;
  private readonly apps = new AppRegistry();
  /** CI timers, each with the resolver of the promise `idle()` waits on. */
  private readonly timers = new Map<NodeJS.Timeout, () => void>();
  private readonly pending = new Set<Promise<unknown>>();
  private readonly mergeCache = new Map<string, boolean>();
  private readonly pushLocks = new Map<string, Promise<void>>();
  /** Entries a recursive tree lists before it says `truncated` (GitHub: 100,000); tests lower it to reach the walk. */
  private treeEntryLimit = TREE_ENTRIES_CAP;
  private readonly handlers: Record<string, Handler>;
  private readonly gql = buildSchema(this.gqlBackendFactory());
  private nextId = 1_000_001;
  private nextRequestId = 1;
  private nextLogId = 1;
  private mergeableNullReads: number;
  private closed = false;
  /** The Actions runner driving this emulator's workflow runs (re-run, cancel, reviews over REST). */
  private runControl: RunControl | null = null;
  private readonly environments = new EnvironmentStore();
  private readonly actionsSettings = new Map<string, ActionsSettingsSpec>();
  private readonly jobAnnotations = new Map<number, JobAnnotation[]>();
  /** Artifacts and caches of the emulated Actions services (test/support/actions-services). */
  private actionsBackend: ActionsRestBackend | null = null;

  private constructor(server: http.Server, port: number, reposDir: string, ownDir: boolean, opts: EmulatorOptions) {
    this.server = server;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.graphqlUrl = `${this.url}/graphql`;
    this.reposDir = reposDir;
    this.ownDir = ownDir;
    this.opts = opts;
    this.login = opts.login ?? 'fleet-bot';
    this.token = opts.token === false ? null : (opts.token ?? 'ghs_emulator_token');
    this.mergeableNullReads = opts.mergeableNullReads ?? 0;
    this.contentLimiter = new ContentLimiter(contentWindows(opts.contentLimit));
    if (this.token) this.addToken(this.token, { login: this.login, default: 'admin' });
    this.closedCommitMode = opts.closedEventCommit ?? 'null';
    this.tracker = new IssueTracker<RestCtx>({
      repoFor: (c, need) => this.repoFor(c, need),
      paginate: (c, items) => this.paginate(c, items),
      httpError: (status, body) => new HttpError(status, body),
      semantic422: (c, errors, message) => this.semantic422(c, errors, message),
      id: () => this.id(),
      nodeId: (prefix, id) => shapes.nodeId(prefix, id),
      apiUrl: () => this.url,
      userShape: (login) => shapes.userShape(this.user(login), this.urls()),
      labelShape: (l, r) => shapes.labelShape(l, r, this.urls()),
      pull: (key, number) => this.pulls.get(`${key}#${number}`),
      pulls: (key) => [...this.pulls.values()].filter((p) => p.repoKey === key),
      pullIssueShape: async (p, c) => shapes.issueShape(await this.pullView(p, c.auth, false), this.urls()),
      closedCommitMode: () => this.closedCommitMode,
      now: () => nowIso(),
    });
    this.handlers = this.buildHandlers();
  }

  /** Starts the server; see `startEmulator`. */
  static async start(opts: EmulatorOptions = {}): Promise<Emulator> {
    loadSpec();
    const ownDir = !opts.dir;
    const dir = opts.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'github-emulator-')));
    const reposDir = path.join(dir, 'repos');
    await mkdir(reposDir, { recursive: true });
    let emu: Emulator | undefined;
    const server = http.createServer((req, res) => {
      if (!emu) {
        res.writeHead(503).end();
        return;
      }
      emu.handle(req, res).catch((e: unknown) => {
        emu!.errors.push(e instanceof Error ? e : new Error(String(e)));
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: `emulator error: ${String(e)}` }));
      });
    });
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    emu = new Emulator(server, port, reposDir, ownDir, opts);
    return emu;
  }

  // ================================================================ public API

  // ---------------------------------------------------------------- workflow runs of the Actions runner

  /** The Actions runner answers re-run, cancel, dispatch and deployment reviews that arrive over REST. */
  onRunControl(control: RunControl | null): void {
    this.runControl = control;
  }

  /** Starts a workflow run with no jobs yet; the runner adds them as it schedules them. */
  async startWorkflowRun(spec: Omit<WorkflowRunSpec, 'jobs'>): Promise<{ id: number; runNumber: number }> {
    const { id } = await this.addWorkflowRun({ ...spec, jobs: [], status: 'in_progress', conclusion: null });
    const run = this.runs.get(id)!;
    run.run_number = [...this.runs.values()].filter((x) => x.repoKey === run.repoKey && x.workflow_id === run.workflow_id).length;
    return { id, runNumber: run.run_number };
  }

  updateWorkflowRun(id: number, patch: { status?: string; conclusion?: string | null; attempt?: number }): void {
    const run = this.runs.get(id);
    if (!run) throw new Error(`no workflow run ${id}`);
    if (patch.status !== undefined) run.status = patch.status;
    if (patch.conclusion !== undefined) run.conclusion = patch.conclusion;
    if (patch.attempt !== undefined) run.run_attempt = patch.attempt;
    run.updated_at = this.clock.iso();
  }

  /** Adds a job to a run (one matrix leg, one attempt); returns its id, which is also its check run id. */
  addWorkflowJob(
    runId: number,
    job: { name: string; attempt: number; status: 'queued' | 'waiting' | 'in_progress' | 'completed'; conclusion?: string | null; labels?: string[] },
  ): number {
    const run = this.runs.get(runId);
    if (!run) throw new Error(`no workflow run ${runId}`);
    const id = this.id();
    const t = this.clock.iso();
    run.jobs.push({
      id,
      node_id: shapes.nodeId('CR', id),
      name: job.name,
      status: job.status,
      conclusion: (job.conclusion ?? null) as WorkflowJobRecord['conclusion'],
      started_at: t,
      completed_at: job.status === 'completed' ? t : null,
      run_attempt: job.attempt,
      steps: [],
      labels: job.labels ?? ['ubuntu-latest'],
      runner_name: job.status === 'queued' || job.status === 'waiting' ? null : 'GitHub Actions',
    });
    return id;
  }

  updateWorkflowJob(
    jobId: number,
    patch: { status?: string; conclusion?: string | null; steps?: Array<{ name: string; conclusion: string }>; runnerName?: string },
  ): void {
    for (const run of this.runs.values()) {
      const job = run.jobs.find((j) => j.id === jobId);
      if (!job) continue;
      if (patch.status !== undefined) job.status = patch.status as WorkflowJobRecord['status'];
      if (patch.conclusion !== undefined) job.conclusion = patch.conclusion as WorkflowJobRecord['conclusion'];
      if (patch.runnerName !== undefined) job.runner_name = patch.runnerName;
      if (patch.status === 'in_progress') job.started_at = this.clock.iso();
      if (patch.status === 'completed') job.completed_at = this.clock.iso();
      if (patch.steps) job.steps = patch.steps.map((st, i) => ({ name: st.name, status: 'completed' as const, conclusion: st.conclusion, number: i + 1 }));
      return;
    }
    throw new Error(`no workflow job ${jobId}`);
  }

  /** The annotations a job left (its check run's, listed by `checks/list-annotations`). */
  setJobAnnotations(jobId: number, annotations: JobAnnotation[]): void {
    this.jobAnnotations.set(
      jobId,
      annotations.map((a) => ({ ...a })),
    );
  }

  /** The live record of a workflow run (tests read jobs and attempts from it). */
  workflowRun(id: number): Readonly<WorkflowRunRecord> | undefined {
    return this.runs.get(id);
  }

  /** Answers the Actions artifact and cache REST operations from these services' state (null detaches). */
  attachActionsServices(backend: ActionsRestBackend | null): void {
    this.actionsBackend = backend;
  }

  /** `http://127.0.0.1:PORT/git/owner/repo.git` (with `token`, the credential is in the URL: for tests only). */
  gitUrl(owner: string, repo: string, opts: { token?: string } = {}): string {
    const base = `${this.url}/git/${owner}/${repo}.git`;
    return opts.token ? base.replace('http://', `http://x-access-token:${encodeURIComponent(opts.token)}@`) : base;
  }

  /** Environment for git commands: the token as an `http.extraheader` (as actions/checkout does), no prompts. */
  gitEnv(token: string | null = this.token): Record<string, string> {
    const env: Record<string, string> = { GIT_TERMINAL_PROMPT: '0' };
    if (token) {
      env.GIT_CONFIG_COUNT = '1';
      env.GIT_CONFIG_KEY_0 = `http.${this.url}/.extraheader`;
      env.GIT_CONFIG_VALUE_0 = `AUTHORIZATION: basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
    }
    return env;
  }

  addToken(token: string, spec: TokenSpec): void {
    if (spec.scopes) assertScopes(spec.scopes);
    this.tokens.set(token, { ...spec });
    this.ensureUser(spec.login, spec.login.endsWith('[bot]') ? 'Bot' : 'User');
  }

  removeToken(token: string): void {
    this.tokens.delete(token);
  }

  /**
   * Registers a GitHub App with its installations (a key pair is generated
   * when `privateKey` is absent). The app then authenticates with a JWT signed
   * by that key (see `signAppJwt`) and mints installation tokens over REST, as
   * actions/create-github-app-token does. An installation account not seen
   * yet is taken for an organization (create a user's repositories first to
   * make it a user).
   */
  addApp(spec: AppSpec): AddedApp {
    const added = this.apps.add(spec, this.clock.iso());
    this.ensureUser(`${spec.slug}[bot]`, 'Bot');
    for (const inst of spec.installations) if (!this.users.has(inst.account.toLowerCase())) this.ensureUser(inst.account, 'Organization');
    return added;
  }

  /**
   * Mints an installation token outside REST, as GitHub does for a job's
   * GITHUB_TOKEN: the github-actions app's token, limited to `repositories`
   * and to the job's `permissions:` (`scopes`), expiring after `expiresInMs`
   * (default 24 h) on the emulator clock. Revoke it with `removeToken` when
   * the job ends. It can still read public repositories elsewhere.
   */
  mintInstallationToken(spec: MintTokenSpec): string {
    const token = spec.token ?? newInstallationToken();
    const login = spec.login ?? 'github-actions[bot]';
    const repositories = spec.repositories?.map((r) => r.toLowerCase());
    this.addToken(token, {
      login,
      type: 'installation',
      default: 'push',
      scopes: { ...spec.scopes },
      expiresAt: this.clock.now() + (spec.expiresInMs ?? 24 * 3_600_000),
      rateLimit: spec.rateLimit ?? 1000,
      // One GITHUB_TOKEN installation per repository: its jobs share the secondary limit.
      account: `installation:${login}:${(repositories ?? ['*']).join(',')}`,
      ...(repositories ? { repositories } : {}),
    });
    return token;
  }

  async createRepo(spec: CreateRepoSpec): Promise<CreatedRepo> {
    const key = repoKey(spec.owner, spec.name);
    if (this.repos.has(key)) throw new Error(`repository ${spec.owner}/${spec.name} exists`);
    if (!/^[A-Za-z0-9._-]+$/.test(spec.owner) || !/^[A-Za-z0-9._-]+$/.test(spec.name)) throw new Error(`bad repository name ${spec.owner}/${spec.name}`);
    const ownerType = spec.ownerType ?? ([...this.tokens.values()].some((t) => t.login.toLowerCase() === spec.owner.toLowerCase()) ? 'User' : 'Organization');
    this.ensureUser(spec.owner, ownerType);
    const gitDir = path.join(this.reposDir, spec.owner, `${spec.name}.git`);
    const defaultBranch = spec.defaultBranch ?? 'main';
    await g.initBareFs(gitDir, defaultBranch);
    let headSha: string | null = null;
    if (!spec.empty) {
      const files = spec.files ?? { 'README.md': `# ${spec.name}\n` };
      headSha = await g.writeCommitFs(gitDir, `refs/heads/${defaultBranch}`, files, { message: 'Initial commit' });
      for (const [branch, extra] of Object.entries(spec.branches ?? {})) {
        await g.writeCommitFs(gitDir, `refs/heads/${branch}`, { ...files, ...extra }, { message: `Update ${branch}`, parent: headSha });
      }
    }
    const id = this.id();
    const t = nowIso();
    this.repos.set(key, {
      id,
      node_id: shapes.nodeId('R', id),
      owner: spec.owner,
      name: spec.name,
      description: spec.description ?? null,
      default_branch: defaultBranch,
      archived: spec.archived ?? false,
      disabled: spec.disabled ?? false,
      fork: spec.fork ?? false,
      parentKey: null,
      visibility: spec.visibility ?? 'public',
      topics: [...(spec.topics ?? [])],
      created_at: t,
      updated_at: t,
      pushed_at: t,
      gitDir,
      nextNumber: 1,
      labels: new Map(),
      pushCounts: new Map(),
    });
    return {
      owner: spec.owner,
      name: spec.name,
      fullName: `${spec.owner}/${spec.name}`,
      gitDir,
      cloneUrl: this.gitUrl(spec.owner, spec.name),
      defaultBranch,
      headSha,
    };
  }

  /** Changes repository metadata (archive it, make it private, …). */
  updateRepo(
    fullName: string,
    patch: Partial<Pick<RepoRecord, 'archived' | 'disabled' | 'fork' | 'visibility' | 'topics' | 'description' | 'default_branch'>>,
  ): void {
    const r = this.repoOrThrow(fullName);
    Object.assign(r, patch, { updated_at: nowIso() });
  }

  /** A snapshot of a repository's record (null when absent). */
  repo(fullName: string): Readonly<RepoRecord> | null {
    const [o, n] = fullName.split('/');
    return this.repos.get(repoKey(o ?? '', n ?? '')) ?? null;
  }

  /**
   * Commits `files` (null deletes) on `branch` server-side, as a web edit or
   * someone else's push would; fires push hooks and CI. Returns the commit.
   */
  async commit(spec: { owner: string; repo: string; branch: string; files: Record<string, string | null>; message?: string; from?: string }): Promise<string> {
    const r = this.repoOrThrow(`${spec.owner}/${spec.repo}`);
    const ref = `refs/heads/${spec.branch}`;
    const before = await g.revParse(r.gitDir, ref);
    const from = spec.from ?? before ?? (await g.readRefFs(r.gitDir, `refs/heads/${r.default_branch}`));
    const sha = await g.commitFiles(r.gitDir, ref, spec.files, { message: spec.message ?? `Update ${spec.branch}`, from });
    await this.afterRefChanges(r, [{ ref, before, after: sha }], 'api', null);
    return sha;
  }

  /** The commit a branch points at now, or null. */
  async branchSha(fullName: string, branch: string): Promise<string | null> {
    return g.readRefFs(this.repoOrThrow(fullName).gitDir, `refs/heads/${branch}`);
  }

  /** Snapshots of a repository's PRs. */
  pullRequests(fullName: string): PullRecord[] {
    const r = this.repoOrThrow(fullName);
    return [...this.pulls.values()].filter((p) => p.repoKey === repoKey(r.owner, r.name)).map((p) => ({ ...p }));
  }

  /** Opens an issue (not a PR) as `user` (default: the emulator's login); labels missing from the repository are created. */
  createIssue(fullName: string, spec: { title: string; body?: string; labels?: string[]; user?: string }): IssueRecord {
    const r = this.repos.get(fullName.toLowerCase());
    if (!r) throw new Error(`no repository ${fullName}`);
    return this.tracker.create(r, repoKey(r.owner, r.name), { ...spec, user: spec.user ?? this.login });
  }

  /** The issues (not PRs) of a repository, copies, by number. */
  issues(fullName: string): IssueRecord[] {
    const key = fullName.toLowerCase();
    return [...this.tracker.issues.values()]
      .filter((i) => i.repoKey === key)
      .sort((a, b) => a.number - b.number)
      .map((i) => structuredClone(i));
  }

  /**
   * A person's change to an issue: its body, labels (replacing them), or state (`closed` without a PR, as a
   * person closing it by hand does: no closing commit, no cross-reference).
   */
  editIssue(
    fullName: string,
    number: number,
    patch: { body?: string; title?: string; labels?: string[]; state?: 'open' | 'closed'; stateReason?: 'completed' | 'not_planned'; actor?: string },
  ): void {
    const i = this.tracker.get(fullName.toLowerCase(), number);
    const r = this.repos.get(fullName.toLowerCase());
    if (!i || !r) throw new Error(`no issue ${fullName}#${number}`);
    const actor = patch.actor ?? 'a-person';
    if (patch.body !== undefined) i.body = patch.body;
    if (patch.title !== undefined) i.title = patch.title;
    if (patch.labels) {
      for (const l of patch.labels) if (!r.labels.has(l.toLowerCase())) this.createIssueLabel(r, l);
      i.labels = patch.labels.map((l) => r.labels.get(l.toLowerCase())!.name);
    }
    if (patch.state === 'closed') this.tracker.close(i, actor, patch.stateReason ?? 'completed');
    if (patch.state === 'open') this.tracker.reopen(i, actor);
    i.updated_at = nowIso();
  }

  /** What the closed event of an issue closed by a merged PR carries (see issues.ts): `null` (default) or `merge-commit`. */
  setClosedEventCommit(mode: ClosedCommitMode): void {
    this.closedCommitMode = mode;
  }

  private createIssueLabel(r: RepoRecord, name: string): void {
    const id = this.id();
    r.labels.set(name.toLowerCase(), { id, node_id: shapes.nodeId('LA_', id), name, color: 'ededed', description: null, default: false });
  }

  checkRuns(fullName: string): CheckRunRecord[] {
    const r = this.repoOrThrow(fullName);
    return [...this.checkRunsById.values()]
      .filter((c) => c.repoKey === repoKey(r.owner, r.name))
      .map((c) => ({ ...c, ...(c.annotations ? { annotations: c.annotations.map((a) => ({ ...a })) } : {}) }));
  }

  statuses(fullName: string): StatusRecord[] {
    const r = this.repoOrThrow(fullName);
    return this.statusesList.filter((s) => s.repoKey === repoKey(r.owner, r.name)).map((s) => ({ ...s }));
  }

  /** Seeds a workflow run with its jobs (GET actions/runs/{id} and …/jobs answer it). */
  async addWorkflowRun(spec: WorkflowRunSpec): Promise<{ id: number; jobIds: number[] }> {
    const r = this.repoOrThrow(`${spec.owner}/${spec.repo}`);
    const headBranch = spec.headBranch ?? r.default_branch;
    const headSha = spec.headSha ?? (await g.readRefFs(r.gitDir, `refs/heads/${headBranch}`)) ?? '0'.repeat(40);
    const id = this.id();
    const t = nowIso();
    const jobs = spec.jobs.map((j) => {
      const jid = this.id();
      return { ...j, id: jid, node_id: shapes.nodeId('CR', jid), started_at: t, completed_at: (j.status ?? 'completed') === 'completed' ? t : null };
    });
    const allDone = jobs.every((j) => (j.status ?? 'completed') === 'completed');
    const failed = jobs.some((j) => ['failure', 'cancelled', 'timed_out'].includes(j.conclusion ?? 'success'));
    const run: WorkflowRunRecord = {
      id,
      node_id: shapes.nodeId('WFR', id),
      repoKey: repoKey(r.owner, r.name),
      name: spec.name ?? 'CI',
      path: spec.path ?? '.github/workflows/ci.yml',
      workflow_id: workflowId(repoKey(r.owner, r.name), spec.path ?? '.github/workflows/ci.yml'),
      run_number: this.runs.size + 1,
      run_attempt: spec.runAttempt ?? 1,
      event: spec.event ?? 'push',
      status: spec.status ?? (allDone ? 'completed' : 'in_progress'),
      conclusion: spec.conclusion !== undefined ? spec.conclusion : allDone ? (failed ? 'failure' : 'success') : null,
      head_branch: headBranch,
      head_sha: headSha,
      created_at: t,
      updated_at: t,
      jobs,
    };
    this.runs.set(id, run);
    return { id, jobIds: jobs.map((j) => j.id) };
  }

  /** CI simulation for a repository (`owner/repo`, or `*` for all): what a push of a branch creates. `null` removes it. */
  /**
   * An environment of `fullName` with these required reviewers (none: an environment without protection rules), for
   * GET …/environments/{name} when no workflow runner is attached (with one, the runner's environments answer).
   */
  setEnvironment(fullName: string, name: string, reviewers: string[]): void {
    const [o, n] = fullName.split('/');
    this.environments.set(repoKey(o!, n!), name, reviewers);
  }

  /** The repository's Actions settings (Settings → Actions → General): enabled, allowed actions, retention. */
  setActionsSettings(fullName: string, spec: ActionsSettingsSpec): void {
    const [o, n] = fullName.split('/');
    this.actionsSettings.set(repoKey(o!, n!), { ...spec });
  }

  setCi(fullName: string, policy: CiPolicy | null): void {
    const key = fullName === '*' ? '*' : repoKey(...(fullName.split('/') as [string, string]));
    if (policy === null) this.ci.delete(key);
    else this.ci.set(key, policy);
  }

  /**
   * Requires checks (by name) to succeed before a PR into `branch` can merge
   * (`mergeable_state: blocked`; the merge answers 405 "Required status check
   * "<name>" is expected."), through classic branch protection or a ruleset.
   */
  protectBranch(fullName: string, branch: string, rule: BranchRule | null): void {
    const r = this.repoOrThrow(fullName);
    const key = `${repoKey(r.owner, r.name)}#${branch}`;
    if (rule) this.protections.set(key, { ...rule, requiredChecks: [...rule.requiredChecks] });
    else this.protections.delete(key);
  }

  /** Called after every push (git, API commit, merge); returns an unsubscribe function. */
  onPush(hook: PushHook): () => void {
    this.hooks.add(hook);
    return () => this.hooks.delete(hook);
  }

  /** Injects a fault; the handle tells how often it fired. */
  fault(spec: FaultSpec): FaultHandle {
    const st: FaultState = { spec, hits: 0, remaining: spec.times ?? 1 };
    this.faults.push(st);
    return {
      get hits() {
        return st.hits;
      },
      get remaining() {
        return st.remaining;
      },
      cancel: () => {
        st.remaining = 0;
      },
    };
  }

  clearFaults(): void {
    this.faults.length = 0;
  }

  /**
   * `mergeable: null` for the next `n` reads of every PR (after each change of
   * its head or base), or of one PR when `pr` is given.
   */
  setMergeableNullReads(n: number, pr?: { owner: string; repo: string; number: number }): void {
    if (!pr) {
      this.mergeableNullReads = n;
      for (const p of this.pulls.values()) p.nullReadsKey = '';
      return;
    }
    const p = this.pulls.get(`${repoKey(pr.owner, pr.repo)}#${pr.number}`);
    if (!p) throw new Error(`no PR ${pr.owner}/${pr.repo}#${pr.number}`);
    p.nullReadsLeft = n;
    p.nullReadsKey = `${p.baseSha}..${p.headSha}`;
  }

  /** Replaces the secondary content limit (same forms as the `contentLimit` option) and forgets what was counted. */
  /** How many entries a recursive tree listing holds before `truncated: true` (default GitHub's 100,000); null restores it. */
  setTreeEntryLimit(n: number | null): void {
    this.treeEntryLimit = n ?? TREE_ENTRIES_CAP;
  }

  setContentLimit(limit: ContentLimitOption): void {
    this.contentLimiter.configure(contentWindows(limit));
  }

  /** Requests matching every given field. */
  count(filter: RequestFilter = {}): number {
    return this.requests.filter((r) => matchesFilter(r, filter)).length;
  }

  find(filter: RequestFilter = {}): RequestRecord[] {
    return this.requests.filter((r) => matchesFilter(r, filter));
  }

  resetLog(): void {
    this.requests.length = 0;
  }

  resetViolations(): void {
    this.violations.length = 0;
    this.responseProblems.length = 0;
  }

  /** Throws, listing them, when any request was rejected as invalid (or a handler failed). */
  assertNoViolations(): void {
    const problems = [
      ...this.violations.map((v) => `${v.kind}: ${v.method} ${v.path} → ${v.status} ${v.message}${v.errors ? ' ' + JSON.stringify(v.errors) : ''}`),
      ...this.responseProblems.map((p) => `response-schema: ${p.operationId} ${p.status} ${p.path} ${JSON.stringify(p.errors.slice(0, 5))}`),
      ...this.errors.map((e) => `error: ${e.message}`),
    ];
    if (problems.length) throw new Error(`GitHub emulator saw ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
  }

  /** Resolves once every pending CI timer and push hook has run. */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const [t, done] of this.timers) {
      clearTimeout(t);
      done();
    }
    this.timers.clear();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    await Promise.allSettled([...this.pending]);
    if (this.ownDir) await rm(path.dirname(this.reposDir), { recursive: true, force: true, maxRetries: 3 });
  }

  // ================================================================ plumbing

  private id(): number {
    return this.nextId++;
  }

  private ensureUser(login: string, type: UserRecord['type']): UserRecord {
    const k = login.toLowerCase();
    let u = this.users.get(k);
    if (!u) {
      const id = this.id();
      u = { login, id, node_id: shapes.nodeId(type === 'Organization' ? 'O' : 'U', id), type };
      this.users.set(k, u);
    }
    return u;
  }

  private user(login: string): UserRecord {
    return this.users.get(login.toLowerCase()) ?? this.ensureUser(login, login.endsWith('[bot]') ? 'Bot' : 'User');
  }

  private urls(): shapes.Urls {
    return { api: this.url, html: this.url, git: `${this.url}/git` };
  }

  private repoOrThrow(fullName: string): RepoRecord {
    const [o, n] = fullName.split('/');
    const r = this.repos.get(repoKey(o ?? '', n ?? ''));
    if (!r) throw new Error(`no repository ${fullName}`);
    return r;
  }

  private parseAuth(req: IncomingMessage): Auth {
    const h = req.headers.authorization;
    if (!h) return { token: null, spec: null, invalid: false, login: null };
    let token: string | null = null;
    const m = /^(\S+)\s+(.+)$/.exec(h.trim());
    if (m) {
      const scheme = m[1]!.toLowerCase();
      if (scheme === 'token' || scheme === 'bearer') token = m[2]!.trim();
      else if (scheme === 'basic') {
        const decoded = Buffer.from(m[2]!.trim(), 'base64').toString('utf8');
        const i = decoded.indexOf(':');
        const user = i < 0 ? decoded : decoded.slice(0, i);
        const pass = i < 0 ? '' : decoded.slice(i + 1);
        token = pass && pass !== 'x-oauth-basic' ? pass : user;
      }
    }
    if (token && looksLikeJwt(token) && !this.tokens.has(token)) return this.appAuth(token);
    const found = token ? (this.tokens.get(token) ?? null) : null;
    // An expired token is refused like an unknown one ("Bad credentials").
    const spec = found && !(found.expiresAt !== undefined && this.clock.now() >= found.expiresAt) ? found : null;
    return { token: token ?? h, spec, invalid: !spec, login: spec?.login ?? null };
  }

  /** A bearer JWT: the app it authenticates, or why GitHub would refuse it. */
  private appAuth(jwt: string): Auth {
    const v = this.apps.verifyJwt(jwt, this.clock.nowSec());
    if (!v.ok) return { token: jwt, spec: null, invalid: false, login: null, jwtError: { status: v.status, message: v.message } };
    return { token: jwt, spec: null, invalid: false, login: `${v.app.slug}[bot]`, app: v.app };
  }

  private permission(auth: Auth | null, r: RepoRecord): Permission {
    if (!auth?.spec) return r.visibility === 'public' ? 'pull' : 'none';
    const s = auth.spec;
    const full = `${r.owner}/${r.name}`.toLowerCase();
    let p: Permission | undefined;
    for (const [k, v] of Object.entries(s.permissions ?? {})) {
      const kk = k.toLowerCase();
      if (kk === full) p = v;
    }
    if (p === undefined) {
      for (const [k, v] of Object.entries(s.permissions ?? {})) if (k.toLowerCase() === `${r.owner.toLowerCase()}/*`) p = v;
    }
    p ??= s.default ?? 'push';
    // An installation token acts on its repositories only; elsewhere it reads what is public.
    if (s.repositories && !s.repositories.some((x) => x.toLowerCase() === full || x.toLowerCase() === `${r.owner.toLowerCase()}/*`)) p = 'none';
    if (p === 'none' && r.visibility !== 'private') p = 'pull';
    return p;
  }

  private rateBucket(auth: Auth, resource: 'core' | 'search' | 'graphql'): RateBucket {
    const who = auth.spec ? (auth.token ?? 'anonymous') : auth.app ? `app:${auth.app.id}` : 'anonymous';
    const key = `${who}|${resource}`;
    const now = Math.floor(Date.now() / 1000);
    let b = this.rate.get(key);
    if (!b || b.reset <= now) {
      const base = auth.spec ? (auth.spec.rateLimit ?? 5000) : auth.app ? 5000 : 60;
      const limit = resource === 'search' ? (auth.spec ? 30 : 10) : base;
      const window = resource === 'search' ? 60 : (this.opts.rateLimitWindowSec ?? 3600);
      b = { limit, used: 0, reset: now + window };
      this.rate.set(key, b);
    }
    return b;
  }

  private rateHeaders(b: RateBucket, resource: string): Record<string, string> {
    return {
      'x-ratelimit-limit': String(b.limit),
      'x-ratelimit-remaining': String(Math.max(0, b.limit - b.used)),
      'x-ratelimit-reset': String(b.reset),
      'x-ratelimit-used': String(b.used),
      'x-ratelimit-resource': resource,
    };
  }

  private takeFault(kind: RequestKind, method: string, p: string, route: string | null, auth: Auth): FaultState | null {
    for (const f of this.faults) {
      if (f.remaining <= 0) continue;
      const m = f.spec.match ?? {};
      if (m.kind && m.kind !== kind) continue;
      if (m.method && m.method.toUpperCase() !== method) continue;
      if (m.token && m.token !== auth.token) continue;
      if (m.path !== undefined) {
        if (m.path instanceof RegExp) {
          m.path.lastIndex = 0;
          if (!m.path.test(p)) continue;
        } else if (m.path.includes('{')) {
          if (m.path !== route) continue;
        } else if (m.path !== p) continue;
      }
      f.remaining--;
      f.hits++;
      return f;
    }
    return null;
  }

  /** A fault's answer, or null for `slow` (after its delay the request goes on). */
  private async faultReply(f: FaultState, bucket: RateBucket): Promise<Reply | null> {
    const s = f.spec;
    switch (s.kind) {
      case 'slow':
        await sleep(s.delayMs ?? 1000);
        return null;
      case '5xx': {
        const status = s.status ?? 502;
        return { status, body: { message: status === 503 ? 'Service Unavailable' : 'Server Error' } };
      }
      case 'secondary-rate-limit':
        return this.secondaryLimitReply(s.retryAfterSec ?? 1, s.status === 429 ? 429 : 403, s.retryAfterSec === undefined ? s.resetInSec : undefined);
      case 'stall':
      case 'drop':
        return null; // answered (never, or by a closed connection) where the request is at hand
      case 'primary-exhausted': {
        const reset = Math.floor(Date.now() / 1000) + (s.resetInSec ?? 1);
        return {
          status: 403,
          body: shapes.errorBody(
            'API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID ' +
              randomUUID().slice(0, 8).toUpperCase() +
              '.',
            PRIMARY_DOCS,
            403,
          ),
          headers: { ...this.rateHeaders({ ...bucket, used: bucket.limit, reset }, 'core'), 'x-ratelimit-remaining': '0' },
        };
      }
    }
  }

  /**
   * GitHub's answer to a request over a secondary limit ("Rate limits for the REST API", exceeding the rate
   * limit): "a 403 or 429 response and an error message that indicates that you exceeded a secondary rate
   * limit. If the retry-after response header is present, you should not retry your request until after that
   * many seconds has elapsed. If the x-ratelimit-remaining header is 0, you should not retry your request until
   * after the time, in UTC epoch seconds, specified by the x-ratelimit-reset header." With `resetInSec` the
   * answer has no retry-after but x-ratelimit-remaining 0 and a reset that many seconds on (emulator clock).
   */
  private secondaryLimitReply(retryAfterSec: number, status: 403 | 429 = 403, resetInSec?: number): Reply {
    const headers: Record<string, string> =
      resetInSec === undefined
        ? { 'retry-after': String(retryAfterSec) }
        : { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Math.ceil(this.clock.now() / 1000) + resetInSec) };
    return {
      status,
      body: shapes.errorBody(
        `You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ${randomUUID().slice(0, 8).toUpperCase()}.`,
        SECONDARY_DOCS,
        status,
      ),
      headers,
    };
  }

  /** The content-creation limits (80 a minute, 500 an hour per account): null when allowed (and counted). */
  private takeWrite(auth: Auth): Reply | null {
    const wait = this.contentLimiter.take(this.accountOf(auth), this.clock.now());
    return wait === null ? null : this.secondaryLimitReply(wait);
  }

  /** Whose budget a request spends: GitHub counts per user or app installation, not per token. */
  private accountOf(auth: Auth): string {
    if (auth.spec) return auth.spec.account ?? `login:${auth.spec.login.toLowerCase()}`;
    if (auth.app) return `app:${auth.app.id}`;
    return `anonymous:${auth.token ?? ''}`;
  }

  private violation(v: Omit<Violation, 'time'>): void {
    this.violations.push({ ...v, time: Date.now() });
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p)).catch(() => undefined);
    return p;
  }

  private send(res: ServerResponse, reply: Reply, base: Record<string, string>): void {
    const headers: Record<string, string> = {
      'x-github-request-id': `EMU:${this.nextRequestId++}`,
      'x-github-api-version-selected': '2022-11-28',
      'access-control-allow-origin': '*',
      // The emulator clock's time: @octokit/auth-app corrects its JWT clock from this header.
      date: new Date(this.clock.now()).toUTCString(),
      ...base,
      // On every answer, a 204 too (octokit/fixtures git-refs); a raw answer names its own.
      'x-github-media-type': 'github.v3; format=json',
      ...reply.headers,
    };
    if (reply.status === 204 || reply.status === 304 || reply.body === undefined) {
      res.writeHead(reply.status, headers);
      res.end();
      return;
    }
    const text = Buffer.isBuffer(reply.body) || typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    headers['content-type'] ??= typeof reply.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8';
    headers['content-length'] = String(Buffer.byteLength(text));
    res.writeHead(reply.status, headers);
    res.end(text);
  }

  // ================================================================ dispatch

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    const url = new URL(req.url ?? '/', this.url);
    let p = url.pathname;
    if (p.startsWith('/api/v3/') || p === '/api/v3') p = p.slice('/api/v3'.length) || '/';
    if (p === '/api/graphql') p = '/graphql';
    if (p.startsWith('/git/') || GITHUB_GIT_PATH.test(p)) return this.handleGit(req, res, url, p, started);
    const body = await readBody(req);
    if (p === '/graphql') return this.handleGraphql(req, res, url, body, started);
    return this.handleRest(req, res, url, p, body, started);
  }

  private log(rec: Omit<RequestRecord, 'id' | 'durationMs'>, started: number): void {
    this.requests.push({ id: this.nextLogId++, ...rec, durationMs: Date.now() - started });
  }

  // ---------------------------------------------------------------- REST

  private async handleRest(req: IncomingMessage, res: ServerResponse, url: URL, p: string, raw: Buffer, started: number): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    const auth = this.parseAuth(req);
    let bodyJson: unknown;
    let jsonError: string | null = null;
    if (raw.length) {
      try {
        bodyJson = JSON.parse(raw.toString('utf8'));
      } catch (e) {
        jsonError = (e as Error).message;
      }
    }
    const match = this.matchRest(method, p);
    const route = match?.route.template ?? null;
    const op = match?.operation ?? null;
    const bucket = this.rateBucket(auth, route === '/search/repositories' || route?.startsWith('/search/') ? 'search' : 'core');
    const resource = route?.startsWith('/search/') ? 'search' : 'core';
    let fault: string | undefined;
    let denied: string | undefined;
    let accepted = '';
    const finish = (reply: Reply): void => {
      const rh = { ...this.rateHeaders(bucket, resource), ...oauthScopesHeader(auth.spec) };
      this.send(res, reply, accepted ? { ...rh, 'x-accepted-github-permissions': accepted } : rh);
      const rec: Omit<RequestRecord, 'id' | 'durationMs'> = {
        kind: 'rest',
        method,
        path: p,
        query: url.search.replace(/^\?/, ''),
        route,
        operationId: op?.operationId ?? null,
        status: reply.status,
        token: auth.token,
        login: auth.login,
        time: started,
      };
      if (bodyJson !== undefined) rec.body = bodyJson;
      if (fault) rec.fault = fault;
      if (denied) rec.denied = denied;
      this.log(rec, started);
    };

    if (auth.invalid) return finish({ status: 401, body: shapes.errorBody('Bad credentials', DOCS, 401) });
    if (auth.jwtError) return finish({ status: auth.jwtError.status, body: shapes.errorBody(auth.jwtError.message, DOCS, auth.jwtError.status) });
    if (route !== '/rate_limit') bucket.used++;
    if (bucket.used > bucket.limit) {
      fault = 'primary-limit';
      bucket.used = bucket.limit;
      return finish({ status: 403, body: shapes.errorBody(`API rate limit exceeded for ${auth.login ?? '127.0.0.1'}.`, PRIMARY_DOCS, 403) });
    }
    if (!match) {
      this.violation({
        kind: 'unknown-route',
        method,
        path: p,
        route: null,
        operationId: null,
        status: 404,
        message: 'no such path in the OpenAPI description',
      });
      return finish({ status: 404, body: shapes.errorBody('Not Found', DOCS, 404) });
    }
    if (!op) {
      this.violation({
        kind: 'method-not-allowed',
        method,
        path: p,
        route,
        operationId: null,
        status: 405,
        message: `${method} is not an operation of ${route} (has ${[...match.route.operations.keys()].join(', ')})`,
      });
      return finish({
        status: 405,
        body: shapes.errorBody('Method Not Allowed', DOCS, 405),
        headers: { allow: [...match.route.operations.keys()].join(', ') },
      });
    }
    // Validation against the description comes first, so a malformed request is recorded even when a fault answers it.
    const v = this.validateRest(method, p, url, op, match.params, bodyJson, jsonError, raw.length > 0);
    const f = this.takeFault('rest', method, p, route, auth);
    if (f && (f.spec.kind === 'stall' || f.spec.kind === 'drop')) return hangUp(f.spec.kind, req, res);
    if (f) {
      const reply = await this.faultReply(f, bucket);
      if (reply) {
        fault = f.spec.kind;
        return finish(reply);
      }
    }
    if (v.reply) return finish(v.reply);
    const scoped = this.scopeCheck(auth, op, match.params);
    accepted = scoped.accepted;
    if (scoped.refusal) {
      denied = scoped.denied;
      return finish(scoped.refusal);
    }
    // Minting and revoking app tokens creates no content.
    if (WRITE_METHODS.has(method) && !op.operationId.startsWith('apps/')) {
      const limited = this.takeWrite(auth);
      if (limited) {
        fault = 'content-limit';
        return finish(limited);
      }
    }
    const handler = this.handlers[op.operationId];
    if (!handler) {
      this.violation({
        kind: 'unimplemented',
        method,
        path: p,
        route,
        operationId: op.operationId,
        status: 501,
        message: `the emulator does not implement ${op.operationId}`,
      });
      return finish({ status: 501, body: shapes.errorBody(`Not implemented by the GitHub emulator: ${op.operationId}`, op.docsUrl, 501) });
    }
    const ctx: RestCtx = {
      method,
      path: p,
      url,
      params: match.params,
      query: v.query,
      rawQuery: url.searchParams,
      body: bodyJson ?? {},
      auth,
      op,
      accept: req.headers.accept ?? '',
    };
    let reply: Reply;
    try {
      reply = await handler(ctx);
    } catch (e) {
      if (e instanceof HttpError) {
        let b = e.body;
        // GitHub's error bodies carry the status as a string beside the message (github/rest-api-description#3726).
        if (b && typeof b === 'object') b = { ...b, documentation_url: b.documentation_url ?? op.docsUrl, status: b.status ?? String(e.status) };
        reply = { status: e.status, body: b ?? undefined, headers: e.headers };
      } else throw e;
    }
    if (this.opts.validateResponses !== false && reply.body !== undefined && typeof reply.body !== 'string' && !Buffer.isBuffer(reply.body)) {
      const rv = responseValidator(op, reply.status);
      if (rv && !rv(reply.body)) {
        const errors = (rv.errors ?? []).filter((e) => !KNOWN_SCHEMA_INACCURACIES.some((k) => k.keyword === e.keyword && k.instancePath.test(e.instancePath)));
        if (errors.length) {
          this.responseProblems.push({
            operationId: op.operationId,
            status: reply.status,
            path: p,
            errors: errors.map((e) => ({ instancePath: e.instancePath, message: e.message, keyword: e.keyword })),
          });
        }
      }
    }
    finish(reply);
  }

  /**
   * The route of a REST path, with two forms GitHub answers that the description does not template: a
   * repository by id (`/repositories/{id}/…`, what its `Link` headers name, and clients follow them), and
   * contents with the path omitted (`…/contents`, `…/contents/`: "If you omit the path parameter, you will
   * receive the contents of the repository's root directory").
   */
  private matchRest(method: string, p: string): RouteMatch | null {
    const match = matchRoute(method, p);
    if (match) return match;
    const byId = /^\/repositories\/(\d+)(\/.*)?$/.exec(p);
    const r = byId && [...this.repos.values()].find((x) => x.id === Number(byId[1]));
    if (r) return this.matchRest(method, `/repos/${r.owner}/${r.name}${byId![2] ?? ''}`);
    const root = /^(\/repos\/[^/]+\/[^/]+\/contents)\/?$/.exec(p);
    // Matched with a stand-in path, which is then emptied: the handler lists the root for ''.
    const contents = root && matchRoute(method, `${root[1]}/.`);
    return contents ? { ...contents, params: { ...contents.params, path: '' } } : null;
  }

  /**
   * Fine-grained permissions: the `x-accepted-github-permissions` value for a
   * scoped token, and the 403 GitHub answers when its scopes lack what the
   * operation needs ("Resource not accessible by integration", or "… by
   * personal access token" for a fine-grained PAT). An app JWT works only on
   * the app endpoints.
   */
  private scopeCheck(auth: Auth, op: OpenApiOperation, params: Record<string, string>): { accepted: string; refusal?: Reply; denied?: string } {
    if (auth.app && !JWT_OPERATIONS.has(op.operationId)) {
      return { accepted: '', refusal: { status: 403, body: shapes.errorBody('Resource not accessible by integration', op.docsUrl, 403) } };
    }
    const scopes = auth.spec?.scopes;
    if (!scopes) return { accepted: '' };
    const need = restNeed(op);
    const accepted = acceptedPermissions(need);
    if (permits(scopes, need, auth.spec?.type ?? 'installation')) return { accepted };
    // A repository the token cannot see is 404 before any permission question (the handler answers it).
    const { owner, repo } = params;
    if (owner !== undefined && repo !== undefined) {
      const r = this.repos.get(repoKey(owner, repo));
      if (!r || this.permission(auth, r) === 'none') return { accepted };
    }
    const who = auth.spec?.type === 'pat' ? 'personal access token' : 'integration';
    return { accepted, denied: accepted || need.kind, refusal: { status: 403, body: shapes.errorBody(`Resource not accessible by ${who}`, op.docsUrl, 403) } };
  }

  private validateRest(
    method: string,
    p: string,
    url: URL,
    op: OpenApiOperation,
    pathParams: Record<string, string>,
    body: unknown,
    jsonError: string | null,
    hasBody: boolean,
  ): { reply?: Reply; query: Record<string, unknown> } {
    const route = op.template;
    const base = { method, path: p, route, operationId: op.operationId };
    const resource = resourceOf(op);
    const params = operationParams(op);
    // path params
    const pv = paramsValidator(op, 'path');
    if (pv) {
      const obj: Record<string, unknown> = {};
      for (const prm of params.filter((x) => x.in === 'path'))
        if (pathParams[prm.name] !== undefined) obj[prm.name] = coerceParam(prm.schema, pathParams[prm.name]!);
      if (!pv(obj)) {
        const errors = toGitHubErrors(resource, pv.errors, obj as never);
        this.violation({ ...base, kind: 'path-param', status: 404, message: 'path parameter does not match its schema', errors });
        return { reply: { status: 404, body: shapes.errorBody('Not Found', op.docsUrl, 404) }, query: {} };
      }
    }
    // query params
    const query: Record<string, unknown> = {};
    const qspecs = params.filter((x) => x.in === 'query');
    for (const q of qspecs) {
      const all = url.searchParams.getAll(q.name).concat(url.searchParams.getAll(`${q.name}[]`));
      if (all.length === 0) continue;
      query[q.name] = q.schema.type === 'array' && all.length > 1 ? all.flatMap((x) => coerceParam(q.schema, x) as unknown[]) : coerceParam(q.schema, all[0]!);
    }
    const qv = paramsValidator(op, 'query');
    if (qv && !qv(query)) {
      const errors = toGitHubErrors(resource, qv.errors, query as never);
      this.violation({ ...base, kind: 'query', status: 422, message: 'query parameters do not match their schema', errors });
      return { reply: { status: 422, body: shapes.errorBody('Validation Failed', op.docsUrl, 422, { errors }) }, query };
    }
    // body
    if (jsonError) {
      this.violation({ ...base, kind: 'json', status: 400, message: `body is not JSON: ${jsonError}` });
      return { reply: { status: 400, body: shapes.errorBody('Problems parsing JSON', op.docsUrl, 400) }, query };
    }
    const rb = requestBodySpec(op);
    if (rb) {
      if (!hasBody && rb.required) {
        this.violation({ ...base, kind: 'body', status: 422, message: 'a request body is required' });
        return {
          reply: { status: 422, body: shapes.errorBody('Validation Failed', op.docsUrl, 422, { errors: [{ resource, code: 'missing', field: '(body)' }] }) },
          query,
        };
      }
      if (hasBody && rb.validate && !rb.validate(body)) {
        const errors = toGitHubErrors(resource, rb.validate.errors, body as never);
        this.violation({ ...base, kind: 'body', status: 422, message: 'request body does not match its schema', errors });
        // The Checks API words length and count limits its own way ("Invalid request.\n\nOnly 65535 characters are allowed; …").
        const invalid = op.operationId.startsWith('checks/') ? invalidRequestMessage(rb.validate.errors, body) : null;
        if (invalid) return { reply: { status: 422, body: shapes.errorBody(invalid, op.docsUrl, 422) }, query };
        return { reply: { status: 422, body: shapes.errorBody('Validation Failed', op.docsUrl, 422, { errors }) }, query };
      }
    }
    return { query };
  }

  // ---------------------------------------------------------------- GraphQL

  private async handleGraphql(req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer, started: number): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    const auth = this.parseAuth(req);
    const bucket = this.rateBucket(auth, 'graphql');
    let parsedBody: unknown;
    let fault: string | undefined;
    let fields: string[] | undefined;
    const finish = (reply: Reply): void => {
      this.send(res, reply, { ...this.rateHeaders(bucket, 'graphql'), ...oauthScopesHeader(auth.spec) });
      const rec: Omit<RequestRecord, 'id' | 'durationMs'> = {
        kind: 'graphql',
        method,
        path: '/graphql',
        query: url.search.replace(/^\?/, ''),
        route: '/graphql',
        operationId: 'graphql',
        status: reply.status,
        token: auth.token,
        login: auth.login,
        time: started,
      };
      if (parsedBody !== undefined) rec.body = parsedBody;
      if (fault) rec.fault = fault;
      if (auth.denied?.length) rec.denied = [...new Set(auth.denied)].join(', ');
      if (fields) rec.graphqlFields = fields;
      this.log(rec, started);
    };
    const gqlViolation = (status: number, message: string, errors?: GraphQLErrorJson[]): void =>
      this.violation({
        kind: 'graphql',
        method,
        path: '/graphql',
        route: '/graphql',
        operationId: 'graphql',
        status,
        message,
        ...(errors ? { errors: errors as unknown as Record<string, unknown>[] } : {}),
      });

    if (method !== 'POST') {
      gqlViolation(404, `GraphQL takes POST, not ${method}`);
      return finish({ status: 404, body: shapes.errorBody('Not Found', 'https://docs.github.com/graphql', 404) });
    }
    if (auth.invalid) return finish({ status: 401, body: shapes.errorBody('Bad credentials', 'https://docs.github.com/graphql', 401) });
    if (!auth.spec)
      return finish({
        status: 401,
        body: shapes.errorBody(
          'This endpoint requires you to be authenticated.',
          'https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql',
          401,
        ),
      });
    try {
      parsedBody = JSON.parse(raw.toString('utf8'));
    } catch {
      gqlViolation(400, 'body is not JSON');
      return finish({ status: 400, body: shapes.errorBody('Problems parsing JSON', 'https://docs.github.com/graphql', 400) });
    }
    const b = parsedBody as { query?: unknown; variables?: unknown; operationName?: unknown };
    if (!b || typeof b !== 'object' || typeof b.query !== 'string') {
      const errors = [{ message: 'A query attribute must be specified and must be a string.' }];
      gqlViolation(200, errors[0]!.message, errors);
      return finish({ status: 200, body: { errors } });
    }
    if (b.variables !== undefined && b.variables !== null && (typeof b.variables !== 'object' || Array.isArray(b.variables))) {
      const errors = [{ message: 'Variables must be an object' }];
      gqlViolation(200, errors[0]!.message, errors);
      return finish({ status: 200, body: { errors } });
    }
    // Parsed and validated before any fault answers, so a malformed query is recorded either way.
    const prepared = prepare(this.gql, {
      query: b.query,
      variables: (b.variables as Record<string, unknown> | null | undefined) ?? null,
      operationName: typeof b.operationName === 'string' ? b.operationName : null,
    });
    if ('errors' in prepared) gqlViolation(200, prepared.errors.map((e) => e.message).join('; '), prepared.errors);
    const f = this.takeFault('graphql', method, '/graphql', '/graphql', auth);
    if (f) {
      const reply = await this.faultReply(f, bucket);
      if (reply) {
        fault = f.spec.kind;
        return finish(reply);
      }
    }
    bucket.used++;
    if (bucket.used > bucket.limit) {
      bucket.used = bucket.limit;
      fault = 'primary-limit';
      return finish({ status: 200, body: { errors: [{ type: 'RATE_LIMITED', message: `API rate limit exceeded for ${auth.login}.` }] } });
    }
    if ('errors' in prepared) return finish({ status: 200, body: { errors: prepared.errors } });
    fields = prepared.op.selections.map((s) => (isFragment(s) ? `... on ${s.on ?? prepared.op.kind}` : s.name));
    if (prepared.op.kind === 'mutation') {
      const limited = this.takeWrite(auth);
      if (limited) {
        fault = 'content-limit';
        return finish(limited);
      }
    }
    const result = await execute(this.gql, prepared, { auth, bucket });
    finish({ status: 200, body: result });
  }

  /** A GraphQL field's permission check: false (and noted for the log) when the token's scopes lack it. */
  private gqlAllowed(auth: Auth, scope: Scope, level: Access): boolean {
    const scopes = auth.spec?.scopes;
    const need: ScopeNeed = { kind: 'scope', any: [scope], level };
    if (!scopes || permits(scopes, need)) return true;
    (auth.denied ??= []).push(acceptedPermissions(need));
    return false;
  }

  private gqlBackendFactory(): GqlBackend {
    // Resolvers get their auth through the root value; this object reads emulator state.
    const self = (): Emulator => this;
    return {
      repository: (auth, owner, name) => {
        const r = self().repos.get(repoKey(owner, name));
        if (!r) return null;
        if (self().permission(auth as Auth, r) === 'none') return null;
        return r;
      },
      permission: (auth, r) => self().permission(auth as Auth, r),
      allowed: (auth, scope, level) => self().gqlAllowed(auth as Auth, scope, level),
      branchSha: (r, branch) => g.readRefFs(r.gitDir, `refs/heads/${branch}`),
      refSha: async (r, qualified) => {
        const ref = qualified.startsWith('refs/') ? qualified : `refs/heads/${qualified}`;
        if (ref.startsWith('-')) return null;
        const sha = await g.revParse(r.gitDir, ref);
        return sha
          ? { name: ref.replace(/^refs\/(heads|tags)\//, ''), prefix: ref.slice(0, ref.length - ref.replace(/^refs\/(heads|tags)\//, '').length), sha }
          : null;
      },
      isEmpty: async (r) => !(await g.hasBranchesFs(r.gitDir)),
      pull: (r, number) => self().pulls.get(`${repoKey(r.owner, r.name)}#${number}`) ?? null,
      pullByNodeId: (id) => {
        const n = self().nodes.get(id);
        const p = n ? self().pulls.get(n.key) : undefined;
        if (!p) return null;
        return { pull: p, repo: self().repos.get(p.repoKey)! };
      },
      livePullHead: (p) => self().liveHead(p),
      setDraft: (p, draft) => {
        p.draft = draft;
        p.updated_at = nowIso();
      },
      viewer: (auth) => self().user((auth as Auth).login ?? 'ghost'),
      rate: (root) => {
        const { bucket } = root as { bucket: RateBucket };
        return bucket;
      },
      url: (r) => `${self().url}/${r.owner}/${r.name}`,
      isCommit: (r, oid) => g.objectExists(r.gitDir, oid),
      checkSuites: (r, sha) => {
        const key = repoKey(r.owner, r.name);
        const suites = new Map<number, { id: number; app: string; runs: CheckRunRecord[] }>();
        const runs = [...self().checkRunsById.values()].filter((x) => x.repoKey === key && x.head_sha === sha).sort((a, b) => a.id - b.id);
        for (const run of runs) {
          const s = suites.get(run.check_suite_id) ?? { id: run.check_suite_id, app: run.app, runs: [] };
          s.runs.push(run);
          suites.set(run.check_suite_id, s);
        }
        return [...suites.values()];
      },
      latestStatuses: (r, sha) => self().latestStatuses(repoKey(r.owner, r.name), sha),
      pullUrl: (p) => {
        const r = self().repos.get(p.repoKey)!;
        return `${self().url}/${r.owner}/${r.name}/pull/${p.number}`;
      },
    };
  }

  // ---------------------------------------------------------------- git

  private async handleGit(req: IncomingMessage, res: ServerResponse, url: URL, p: string, started: number): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    const auth = this.parseAuth(req);
    const m = /^(?:\/git)?\/([^/]+)\/([^/]+?)(?:\.git)?(\/.*)?$/.exec(p);
    const service =
      url.searchParams.get('service') ?? (p.endsWith('/git-receive-pack') ? 'git-receive-pack' : p.endsWith('/git-upload-pack') ? 'git-upload-pack' : null);
    const write = service === 'git-receive-pack';
    let fault: string | undefined;
    let denied: string | undefined;
    const rec = (status: number, bytes?: number): void => {
      const r: Omit<RequestRecord, 'id' | 'durationMs'> = {
        kind: 'git',
        method,
        path: p,
        query: url.search.replace(/^\?/, ''),
        route: `git:${(m?.[3] ?? '').replace(/^\//, '') || 'unknown'}`,
        operationId: service,
        status,
        token: auth.token,
        login: auth.login,
        time: started,
      };
      if (fault) r.fault = fault;
      if (denied) r.denied = denied;
      if (bytes !== undefined) r.responseBytes = bytes;
      this.log(r, started);
    };
    const text = (status: number, msg: string, headers: Record<string, string> = {}): void => {
      req.resume();
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
      res.end(msg.endsWith('\n') ? msg : `${msg}\n`);
      rec(status);
    };
    const askAuth = (): void => text(401, 'Authentication required', { 'www-authenticate': 'Basic realm="GitHub"' });

    if (!m?.[3]) return text(404, 'Not Found');
    const f = this.takeFault('git', method, p, null, auth);
    if (f && (f.spec.kind === 'stall' || f.spec.kind === 'drop')) {
      fault = f.spec.kind;
      rec(0);
      return hangUp(f.spec.kind, req, res);
    }
    if (f) {
      if (f.spec.kind === 'slow') await sleep(f.spec.delayMs ?? 1000);
      else {
        fault = f.spec.kind;
        const status = f.spec.kind === '5xx' ? (f.spec.status ?? 502) : 403;
        return text(
          status,
          f.spec.kind === '5xx' ? 'Server Error' : 'You have exceeded a secondary rate limit.',
          f.spec.kind === 'secondary-rate-limit' ? { 'retry-after': String(f.spec.retryAfterSec ?? 1) } : {},
        );
      }
    }
    if (auth.invalid) return askAuth();
    const r = this.repos.get(repoKey(m[1]!, m[2]!));
    const perm = r ? this.permission(auth, r) : 'none';
    if (!r || perm === 'none') {
      if (!auth.spec) return askAuth();
      return text(404, 'Repository not found.');
    }
    if (write) {
      if (!auth.spec) return askAuth();
      if (r.disabled) return text(403, 'Repository access blocked');
      if (PERM_RANK[perm] < PERM_RANK.push) return text(403, `Permission to ${r.owner}/${r.name}.git denied to ${auth.login}.`);
      if (r.archived) return text(403, 'This repository was archived so it is read-only.');
    } else if (r.disabled) return text(403, 'Repository access blocked');
    // A scoped token fetches with contents: read and pushes with contents: write.
    const need = gitNeed(service);
    if (auth.spec?.scopes && !permits(auth.spec.scopes, need)) {
      denied = acceptedPermissions(need);
      return text(403, `Permission to ${r.owner}/${r.name}.git denied to ${auth.login}.`);
    }
    const isPushPost = write && method === 'POST';
    // Pushes to one repository are serialized, so each push's ref changes are its own.
    let unlock: () => void = () => undefined;
    if (isPushPost) {
      const key = repoKey(r.owner, r.name);
      const prev = this.pushLocks.get(key) ?? Promise.resolve();
      const mine = new Promise<void>((resolve) => (unlock = resolve));
      const chained = prev.then(() => mine);
      this.pushLocks.set(key, chained);
      await prev;
      void chained.then(() => {
        if (this.pushLocks.get(key) === chained) this.pushLocks.delete(key);
      });
    }
    try {
      await this.serveGit(req, res, url, r, m[3], auth, isPushPost, rec);
    } finally {
      unlock();
    }
  }

  private async serveGit(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    r: RepoRecord,
    rest: string,
    auth: Auth,
    isPushPost: boolean,
    rec: (status: number, bytes?: number) => void,
  ): Promise<void> {
    const before = isPushPost ? await g.listRefs(r.gitDir) : null;
    const pathInfo = `/${path.relative(this.reposDir, r.gitDir).split(path.sep).join('/')}${rest}`;
    const refusing = isPushPost ? workflowRefusal(auth.spec) : null;
    const config = refusing ? await workflowGuardConfig(path.dirname(this.reposDir), refusing) : undefined;
    const sent = { bytes: 0 };
    const status = await runHttpBackend(
      { req, res, projectRoot: this.reposDir, pathInfo, query: url.search.replace(/^\?/, ''), remoteUser: auth.login, sent, ...(config ? { config } : {}) },
      async () => {
        if (!before) return;
        const after = await g.listRefs(r.gitDir);
        const changes: Array<{ ref: string; before: string | null; after: string | null }> = [];
        for (const [ref, sha] of after) if (before.get(ref) !== sha) changes.push({ ref, before: before.get(ref) ?? null, after: sha });
        for (const [ref, sha] of before) if (!after.has(ref)) changes.push({ ref, before: sha, after: null });
        if (changes.length) await this.afterRefChanges(r, changes, 'git', auth.login);
      },
    );
    rec(status, sent.bytes);
  }

  // ================================================================ pushes & CI

  /** The CI policy of `r` (or '*') applied to a commit, as a push or a PR from a fork starts it. */
  private async runCi(
    r: RepoRecord,
    spec: { branch: string; sha: string; before: string | null; pushCount: number; source: PushEvent['source'] },
  ): Promise<void> {
    const policy = this.ci.get(repoKey(r.owner, r.name)) ?? this.ci.get('*');
    if (!policy) return;
    try {
      const plan = typeof policy === 'function' ? await policy({ owner: r.owner, repo: r.name, ...spec }) : policy;
      if (plan) this.applyCi(r, spec.sha, plan);
    } catch (e) {
      this.errors.push(e instanceof Error ? e : new Error(String(e)));
    }
  }

  private async afterRefChanges(
    r: RepoRecord,
    changes: Array<{ ref: string; before: string | null; after: string | null }>,
    source: PushEvent['source'],
    pusher: string | null,
  ): Promise<void> {
    const key = repoKey(r.owner, r.name);
    r.pushed_at = nowIso();
    for (const c of changes) {
      const branch = c.ref.startsWith('refs/heads/') ? c.ref.slice('refs/heads/'.length) : null;
      const event: PushEvent = {
        owner: r.owner,
        repo: r.name,
        ref: c.ref,
        branch,
        before: c.before,
        after: c.after,
        created: c.before === null,
        deleted: c.after === null,
        source,
        pusher,
      };
      if (branch) {
        const count = c.after !== null ? (r.pushCounts.get(branch) ?? 0) + 1 : 0;
        for (const p of this.pulls.values()) {
          if (p.state !== 'open') continue;
          const headHere = p.headRepoKey === key && p.headRef === branch;
          const baseHere = p.repoKey === key && p.baseRef === branch;
          if (!headHere && !baseHere) continue;
          if (c.after === null) {
            p.state = 'closed';
            p.closed_at = nowIso();
          } else if (headHere) {
            p.headSha = c.after;
            // A push to a fork's PR branch: the parent keeps the commit and runs its CI on it (pull_request).
            if (p.repoKey !== key) {
              await this.pullHeadIntoBase(p);
              await this.runCi(this.repos.get(p.repoKey)!, { branch, sha: c.after, before: c.before, pushCount: count, source });
            }
          } else p.baseSha = c.after;
          p.updated_at = nowIso();
        }
        if (c.after !== null) {
          r.pushCounts.set(branch, count);
          // Actions is off in a fork until its owner turns it on (GitHub's default): a fork runs no CI of its own.
          if (!r.fork || r.parentKey === null) await this.runCi(r, { branch, sha: c.after, before: c.before, pushCount: count, source });
        }
      }
      for (const hook of this.hooks) {
        try {
          await this.track(Promise.resolve(hook(event)));
        } catch (e) {
          this.errors.push(e instanceof Error ? e : new Error(String(e)));
        }
      }
    }
  }

  private applyCi(r: RepoRecord, sha: string, plan: CiPlan): void {
    const key = repoKey(r.owner, r.name);
    // Until its start delay has passed a check does not exist at all: the commit reads as having no CI.
    const timed = (startDelay: number, fn: () => void): void => (startDelay > 0 ? this.later(startDelay, fn) : fn());
    // A held start (`ci.held`): nothing exists until the test opens the gate, then the plan starts as it would have.
    const held = plan.gate?.stage === 'start' ? plan.gate.gate : null;
    const start = (startDelay: number, fn: () => void): void => (held ? held.when(() => !this.closed && timed(startDelay, fn)) : timed(startDelay, fn));
    const finish = plan.gate?.stage === 'finish' ? plan.gate.gate : undefined;
    for (const c of plan.checks ?? [])
      start(c.startDelayMs ?? plan.startDelayMs ?? 0, () => this.runCiCheck(r, key, sha, c, c.delayMs ?? plan.delayMs ?? 0, finish));
    for (const s of plan.statuses ?? [])
      start(s.startDelayMs ?? plan.startDelayMs ?? 0, () => this.runCiStatus(r, key, sha, s, s.delayMs ?? plan.delayMs ?? 0, finish));
  }

  private runCiCheck(r: RepoRecord, key: string, sha: string, c: CiCheck, delay: number, finish?: CiGate): void {
    const t = nowIso();
    const run = this.newCheckRun(key, sha, c.name, 'github-actions');
    run.status = 'in_progress';
    run.started_at = t;
    run.details_url = `${this.url}/${r.owner}/${r.name}/actions/runs/${run.id}`;
    const complete = (): void => {
      run.status = 'completed';
      run.conclusion = c.conclusion;
      run.completed_at = nowIso();
      run.concludedAtMs = Date.now();
      run.output = { title: c.name, summary: c.summary ?? `${c.name}: ${c.conclusion}`, text: null, annotations_count: 0 };
    };
    if (c.hang) return;
    if (finish) finish.when(() => !this.closed && (delay <= 0 ? complete() : this.later(delay, complete)));
    else if (delay <= 0) complete();
    else this.later(delay, complete);
  }

  private runCiStatus(r: RepoRecord, key: string, sha: string, s: CiStatus, delay: number, finish?: CiGate): void {
    const add = (state: StatusRecord['state']): void => {
      const id = this.id();
      const t = nowIso();
      this.statusesList.push({
        id,
        node_id: shapes.nodeId('SC', id),
        repoKey: key,
        sha,
        state,
        description: s.description ?? null,
        target_url: `${this.url}/${r.owner}/${r.name}/ci/${id}`,
        context: s.context,
        creator: 'github-actions[bot]',
        created_at: t,
        updated_at: t,
      });
    };
    if (finish) {
      add('pending');
      if (s.state !== 'pending') finish.when(() => !this.closed && (delay <= 0 ? add(s.state) : this.later(delay, () => add(s.state))));
    } else if (delay <= 0) add(s.state);
    else {
      add('pending');
      if (s.state !== 'pending') this.later(delay, () => add(s.state));
    }
  }

  private later(ms: number, fn: () => void): void {
    let resolveP!: () => void;
    const p = new Promise<void>((resolve) => (resolveP = resolve));
    const t = setTimeout(() => {
      this.timers.delete(t);
      try {
        if (!this.closed) fn();
      } finally {
        resolveP();
      }
    }, ms);
    this.timers.set(t, resolveP);
    this.track(p);
  }

  private newCheckRun(key: string, sha: string, name: string, app: string): CheckRunRecord {
    const suiteKey = `${key}|${sha}|${app}`;
    let suite = this.checkSuites.get(suiteKey);
    if (!suite) {
      suite = this.id();
      this.checkSuites.set(suiteKey, suite);
    }
    const id = this.id();
    const run: CheckRunRecord = {
      id,
      node_id: shapes.nodeId('CR', id),
      repoKey: key,
      head_sha: sha,
      name,
      status: 'queued',
      conclusion: null,
      started_at: nowIso(),
      completed_at: null,
      details_url: null,
      external_id: null,
      output: { title: null, summary: null, text: null, annotations_count: 0 },
      app,
      check_suite_id: suite,
    };
    this.checkRunsById.set(id, run);
    return run;
  }

  // ================================================================ REST helpers

  /** The repository of the request, checked for `need` (404 when invisible, 403 when not allowed). */
  private repoFor(c: RestCtx, need: 'pull' | 'push' | 'admin' = c.method === 'GET' ? 'pull' : 'push'): { r: RepoRecord; perm: Permission; key: string } {
    const owner = c.params.owner ?? '';
    const name = c.params.repo ?? '';
    const r = this.repos.get(repoKey(owner, name));
    if (!r) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
    const perm = this.permission(c.auth, r);
    if (perm === 'none') throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
    if (need !== 'pull') {
      if (!c.auth.spec) throw new HttpError(401, shapes.errorBody('Requires authentication', c.op.docsUrl, 401));
      if (r.disabled) throw new HttpError(403, shapes.errorBody('Repository access blocked', c.op.docsUrl, 403));
      if (PERM_RANK[perm] < PERM_RANK[need]) {
        const msg = c.auth.spec.type === 'pat' ? 'Resource not accessible by personal access token' : 'Resource not accessible by integration';
        throw new HttpError(403, shapes.errorBody(msg, c.op.docsUrl, 403));
      }
      if (r.archived) throw new HttpError(403, shapes.errorBody('Repository was archived so is read-only.', c.op.docsUrl, 403));
    }
    return { r, perm, key: repoKey(r.owner, r.name) };
  }

  /** A repository as GET …/repos/{owner}/{repo} shows it: a fork names its parent and the root of its network. */
  private async fullRepoView(r: RepoRecord, auth: Auth | null): Promise<shapes.RepoView> {
    const view = await this.repoView(r, auth);
    const parent = r.parentKey ? this.repos.get(r.parentKey) : undefined;
    if (parent) {
      let root = parent;
      while (root.parentKey && this.repos.has(root.parentKey)) root = this.repos.get(root.parentKey)!;
      view.parent = await this.repoView(parent, auth);
      view.source = await this.repoView(root, auth);
    }
    return view;
  }

  private async repoView(r: RepoRecord, auth: Auth | null): Promise<shapes.RepoView> {
    const empty = !(await g.hasBranchesFs(r.gitDir));
    const key = repoKey(r.owner, r.name);
    const openIssues =
      [...this.pulls.values()].filter((p) => p.repoKey === key && p.state === 'open').length +
      [...this.tracker.issues.values()].filter((i) => i.repoKey === key && i.state === 'open').length;
    return { repo: r, owner: this.user(r.owner), permission: auth?.spec ? this.permission(auth, r) : null, empty, openIssues };
  }

  private async resolveCommit(r: RepoRecord, ref: string, c: RestCtx): Promise<string> {
    if (ref.startsWith('-')) throw new HttpError(422, shapes.errorBody(`No commit found for SHA: ${ref}`, c.op.docsUrl, 422));
    if (!/^[0-9a-f]{40}$/i.test(ref)) {
      const branch = await g.readRefFs(r.gitDir, `refs/heads/${ref}`);
      if (branch) return branch;
    }
    const candidates = /^[0-9a-f]{40}$/i.test(ref) ? [ref] : [`refs/tags/${ref}`, ref.startsWith('refs/') ? ref : `refs/${ref}`, ref];
    for (const cand of candidates) {
      const sha = await g.revParse(r.gitDir, cand);
      if (sha) return sha;
    }
    if (!(await g.hasBranchesFs(r.gitDir))) throw new HttpError(409, shapes.errorBody('Git Repository is empty.', c.op.docsUrl, 409));
    throw new HttpError(422, shapes.errorBody(`No commit found for SHA: ${ref}`, c.op.docsUrl, 422));
  }

  private paginate<T>(c: RestCtx, items: T[], maxPerPage = 100): { items: T[]; headers: Record<string, string> } {
    const perPage = Math.min(Math.max(1, Number(c.query.per_page ?? 30) || 30), maxPerPage);
    const page = Math.max(1, Number(c.query.page ?? 1) || 1);
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const slice = items.slice((page - 1) * perPage, page * perPage);
    // GitHub's links name a repository by id (`https://api.github.com/repositories/1296269/issues?per_page=3&page=2`),
    // keep the request's query and set `page` alone.
    const r = c.params.owner !== undefined && c.params.repo !== undefined ? this.repos.get(repoKey(c.params.owner, c.params.repo)) : undefined;
    const where = r ? c.path.replace(/^\/(?:repos\/[^/]+\/[^/]+|repositories\/\d+)(?=\/|$)/, `/repositories/${r.id}`) : c.path;
    const link = (n: number): string => {
      const q = new URLSearchParams(c.url.search);
      q.set('page', String(n));
      return `<${this.url}${where}?${q.toString()}>`;
    };
    const rels: string[] = [];
    if (page > 1) rels.push(`${link(page - 1)}; rel="prev"`);
    if (page < last) rels.push(`${link(page + 1)}; rel="next"`, `${link(last)}; rel="last"`);
    if (page > 1) rels.push(`${link(1)}; rel="first"`);
    return { items: slice, headers: rels.length ? { link: rels.join(', ') } : {} };
  }

  /** Where a PR's head branch lives: its own repository, or the fork it was opened from (gone: its own). */
  private headRepoOf(p: PullRecord): RepoRecord {
    return this.repos.get(p.headRepoKey) ?? this.repos.get(p.repoKey)!;
  }

  /**
   * A fork's head commit, copied into the parent as refs/pull/<n>/head, as GitHub keeps it: the parent can then diff,
   * merge and run CI on a commit that was pushed to the fork only.
   */
  private async pullHeadIntoBase(p: PullRecord): Promise<void> {
    if (p.headRepoKey === p.repoKey) return;
    const base = this.repos.get(p.repoKey)!;
    const head = this.headRepoOf(p);
    await g.git(base.gitDir, ['fetch', '--quiet', '--no-tags', head.gitDir, `+refs/heads/${p.headRef}:refs/pull/${p.number}/head`], { allowFail: true });
  }

  private liveHead(p: PullRecord): Promise<string> {
    return this.refreshPull(p).then(() => p.headSha);
  }

  /** Reads the head and base branches NOW (an open PR follows pushes); a closed PR keeps what it had. */
  private async refreshPull(p: PullRecord): Promise<void> {
    if (p.state !== 'open') return;
    const r = this.repos.get(p.repoKey)!;
    const head = await g.readRefFs(this.headRepoOf(p).gitDir, `refs/heads/${p.headRef}`);
    const base = await g.readRefFs(r.gitDir, `refs/heads/${p.baseRef}`);
    if (head) p.headSha = head;
    if (base) p.baseSha = base;
  }

  private async pullView(p: PullRecord, auth: Auth | null, detail: false | 'read' | 'peek'): Promise<shapes.PullView> {
    await this.refreshPull(p);
    const r = this.repos.get(p.repoKey)!;
    const view: shapes.PullView = {
      pull: p,
      repo: await this.repoView(r, auth),
      user: this.user(p.user),
      mergedBy: p.merged_by ? this.user(p.merged_by) : null,
      assignees: p.assignees.map((a) => this.user(a)),
      reviewers: p.requested_reviewers.map((a) => this.user(a)),
      labels: p.labels.map((l) => r.labels.get(l.toLowerCase())).filter((l): l is LabelRecord => !!l),
      headSha: p.headSha,
      baseSha: p.baseSha,
      ...(p.headRepoKey !== p.repoKey && this.repos.has(p.headRepoKey) ? { headRepo: await this.repoView(this.headRepoOf(p), auth) } : {}),
    };
    if (detail) {
      const mb = (await g.mergeBase(r.gitDir, p.baseSha, p.headSha)) ?? p.baseSha;
      const files = p.merged_at ? await g.diffFiles(r.gitDir, mb, p.headSha) : await g.diffFiles(r.gitDir, mb, p.headSha);
      const m = await this.mergeability(p, detail === 'read');
      view.detail = {
        ...m,
        commits: await g.countCommits(r.gitDir, `${mb}..${p.headSha}`),
        additions: files.reduce((s, f) => s + f.additions, 0),
        deletions: files.reduce((s, f) => s + f.deletions, 0),
        changed_files: files.length,
      };
    }
    return view;
  }

  private async mergeability(p: PullRecord, consume: boolean): Promise<{ mergeable: boolean | null; mergeable_state: string }> {
    if (p.state !== 'open') return { mergeable: null, mergeable_state: 'unknown' };
    const pairKey = `${p.baseSha}..${p.headSha}`;
    if (p.nullReadsKey !== pairKey) {
      p.nullReadsKey = pairKey;
      p.nullReadsLeft = this.mergeableNullReads;
    }
    if (p.nullReadsLeft > 0) {
      if (consume) p.nullReadsLeft--;
      return { mergeable: null, mergeable_state: 'unknown' };
    }
    const r = this.repos.get(p.repoKey)!;
    let clean = this.mergeCache.get(pairKey);
    if (clean === undefined) {
      clean = (await g.mergeTree(r.gitDir, p.baseSha, p.headSha)).tree !== null;
      this.mergeCache.set(pairKey, clean);
    }
    if (!clean) return { mergeable: false, mergeable_state: 'dirty' };
    if (p.draft) return { mergeable: true, mergeable_state: 'draft' };
    if (this.missingRequiredChecks(p).length) return { mergeable: true, mergeable_state: 'blocked' };
    const ci = this.ciState(p.repoKey, p.headSha);
    if (ci === 'failure' || ci === 'pending') return { mergeable: true, mergeable_state: 'unstable' };
    return { mergeable: true, mergeable_state: 'clean' };
  }

  private latestChecks(key: string, sha: string): CheckRunRecord[] {
    const byName = new Map<string, CheckRunRecord>();
    for (const c of this.checkRunsById.values()) if (c.repoKey === key && c.head_sha === sha) byName.set(`${c.app}|${c.name}`, c);
    return [...byName.values()];
  }

  private latestStatuses(key: string, sha: string): StatusRecord[] {
    const byContext = new Map<string, StatusRecord>();
    for (const s of this.statusesList) if (s.repoKey === key && s.sha === sha) byContext.set(s.context, s);
    return [...byContext.values()];
  }

  /** success | failure | pending | none, over the latest check runs and statuses of a commit. */
  private ciState(key: string, sha: string): 'success' | 'failure' | 'pending' | 'none' {
    const checks = this.latestChecks(key, sha);
    const statuses = this.latestStatuses(key, sha);
    if (!checks.length && !statuses.length) return 'none';
    const bad = new Set(['failure', 'cancelled', 'timed_out', 'action_required', 'stale']);
    if (checks.some((c) => c.status === 'completed' && bad.has(c.conclusion ?? '')) || statuses.some((s) => s.state === 'failure' || s.state === 'error'))
      return 'failure';
    if (checks.some((c) => c.status !== 'completed') || statuses.some((s) => s.state === 'pending')) return 'pending';
    return 'success';
  }

  /** Required checks of the PR's base that have not succeeded on its head (an admin bypasses classic protection that does not enforce admins). */
  private missingRequiredChecks(p: PullRecord, admin = false): string[] {
    const rule = this.protections.get(`${p.repoKey}#${p.baseRef}`);
    if (!rule) return [];
    if (admin && (rule.via ?? 'protection') === 'protection' && rule.enforceAdmins !== true) return [];
    const checks = this.latestChecks(p.repoKey, p.headSha);
    const statuses = this.latestStatuses(p.repoKey, p.headSha);
    return rule.requiredChecks.filter(
      (name) =>
        !checks.some((c) => c.name === name && c.status === 'completed' && ['success', 'neutral', 'skipped'].includes(c.conclusion ?? '')) &&
        !statuses.some((s) => s.context === name && s.state === 'success'),
    );
  }

  private getPull(c: RestCtx, key: string, number: string | undefined): PullRecord {
    const p = this.pulls.get(`${key}#${number}`);
    if (!p) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
    return p;
  }

  private semantic422(c: RestCtx, errors: GitHubFieldError[] | Array<Record<string, unknown>>, message = 'Validation Failed'): HttpError {
    return new HttpError(422, shapes.errorBody(message, c.op.docsUrl, 422, { errors }));
  }

  private async commitView(r: RepoRecord, sha: string, withFiles = false): Promise<Record<string, unknown>> {
    const info = await g.readCommit(r.gitDir, sha);
    if (!info) throw new Error(`commit ${sha} vanished`);
    const files = withFiles && info.parents[0] ? await g.diffFiles(r.gitDir, info.parents[0], sha) : withFiles ? [] : undefined;
    return shapes.commitShape(info, r, this.urls(), () => null, files);
  }

  private checkRunView(run: CheckRunRecord): Record<string, unknown> {
    const r = this.repos.get(run.repoKey)!;
    const pulls = [...this.pulls.values()].filter((p) => p.repoKey === run.repoKey && p.state === 'open' && p.headSha === run.head_sha);
    return shapes.checkRunShape(run, r, shapes.appShape(run.app, this.user('github'), this.urls()), this.urls(), pulls);
  }

  // ================================================================ REST handlers

  private buildHandlers(): Record<string, Handler> {
    const U = (): shapes.Urls => this.urls();
    const ok = (body: unknown, headers?: Record<string, string>): Reply => ({ status: 200, body, ...(headers ? { headers } : {}) });
    const H: Record<string, Handler> = {};

    H['rate-limit/get'] = async (c) => {
      const res = (name: 'core' | 'search' | 'graphql'): Record<string, number> => {
        const b = this.rateBucket(c.auth, name);
        return { limit: b.limit, used: b.used, remaining: Math.max(0, b.limit - b.used), reset: b.reset };
      };
      const core = res('core');
      return ok({ resources: { core, search: res('search'), graphql: res('graphql') }, rate: core });
    };

    H['users/get-authenticated'] = async (c) => {
      if (!c.auth.spec) throw new HttpError(401, shapes.errorBody('Requires authentication', c.op.docsUrl, 401));
      return ok(this.userFull(this.user(c.auth.spec.login)));
    };
    H['users/get-by-username'] = async (c) => {
      const u = this.users.get((c.params.username ?? '').toLowerCase());
      if (!u) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      return ok(this.userFull(u));
    };
    H['orgs/get'] = async (c) => {
      const u = this.users.get((c.params.org ?? '').toLowerCase());
      if (u?.type !== 'Organization') throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      return ok(this.orgFull(u));
    };

    H['repos/get'] = async (c) => {
      const { r } = this.repoFor(c);
      return ok(shapes.fullRepoShape(await this.fullRepoView(r, c.auth), U()));
    };

    const listOwnerRepos = async (c: RestCtx, owner: string, orgOnly: boolean): Promise<Reply> => {
      const u = this.users.get(owner.toLowerCase());
      if (!u || (orgOnly && u.type !== 'Organization')) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      const type = String(c.query.type ?? (orgOnly ? 'all' : 'owner'));
      let list = [...this.repos.values()].filter((r) => r.owner.toLowerCase() === owner.toLowerCase() && this.permission(c.auth, r) !== 'none');
      if (type === 'public') list = list.filter((r) => r.visibility === 'public');
      else if (type === 'private') list = list.filter((r) => r.visibility !== 'public');
      else if (type === 'forks') list = list.filter((r) => r.fork);
      else if (type === 'sources') list = list.filter((r) => !r.fork);
      const sort = String(c.query.sort ?? 'full_name');
      const direction = String(c.query.direction ?? (sort === 'full_name' ? 'asc' : 'desc'));
      list.sort((a, b) => {
        const ka =
          sort === 'full_name'
            ? `${a.owner}/${a.name}`.toLowerCase()
            : String((a as unknown as Record<string, unknown>)[`${sort}_at`] ?? a.created_at) + String(a.id).padStart(12, '0');
        const kb =
          sort === 'full_name'
            ? `${b.owner}/${b.name}`.toLowerCase()
            : String((b as unknown as Record<string, unknown>)[`${sort}_at`] ?? b.created_at) + String(b.id).padStart(12, '0');
        return (ka < kb ? -1 : ka > kb ? 1 : 0) * (direction === 'asc' ? 1 : -1);
      });
      const page = this.paginate(c, list);
      const items = await Promise.all(page.items.map(async (r) => shapes.minimalRepoShape(await this.repoView(r, c.auth), U())));
      return ok(items, page.headers);
    };
    H['repos/list-for-org'] = (c) => listOwnerRepos(c, c.params.org ?? '', true);
    H['repos/list-for-user'] = (c) => listOwnerRepos(c, c.params.username ?? '', false);
    H['repos/list-for-authenticated-user'] = async (c) => {
      if (!c.auth.spec) throw new HttpError(401, shapes.errorBody('Requires authentication', c.op.docsUrl, 401));
      const list = [...this.repos.values()]
        .filter((r) => this.permission(c.auth, r) !== 'none')
        .sort((a, b) => `${a.owner}/${a.name}`.localeCompare(`${b.owner}/${b.name}`));
      const page = this.paginate(c, list);
      return ok(await Promise.all(page.items.map(async (r) => shapes.repoShape(await this.repoView(r, c.auth), U()))), page.headers);
    };

    H['search/repos'] = async (c) => {
      const q = String(c.query.q ?? '');
      const terms: string[] = [];
      const quals: Array<[string, string]> = [];
      for (const tok of q.match(/(?:[^\s"]+|"[^"]*")+/g) ?? []) {
        const m = /^(-?)([a-z_]+):(.+)$/i.exec(tok);
        if (m) quals.push([`${m[1]}${m[2]!.toLowerCase()}`, m[3]!.replace(/^"|"$/g, '')]);
        else terms.push(tok.replace(/^"|"$/g, '').toLowerCase());
      }
      const known = new Set(['org', 'user', 'topic', 'archived', 'fork', 'is', 'in', 'repo']);
      for (const [k] of quals) {
        if (!known.has(k.replace(/^-/, ''))) {
          this.violation({
            kind: 'semantic',
            method: c.method,
            path: c.path,
            route: c.op.template,
            operationId: c.op.operationId,
            status: 200,
            message: `search qualifier ${k}: is not emulated (ignored)`,
          });
        }
      }
      let forkMode: 'exclude' | 'include' | 'only' = 'exclude';
      let list = [...this.repos.values()].filter((r) => this.permission(c.auth, r) !== 'none');
      for (const [k, v] of quals) {
        const val = v.toLowerCase();
        if (k === 'org' || k === 'user') list = list.filter((r) => r.owner.toLowerCase() === val);
        else if (k === 'repo') list = list.filter((r) => `${r.owner}/${r.name}`.toLowerCase() === val);
        else if (k === 'topic') list = list.filter((r) => r.topics.some((t) => t.toLowerCase() === val));
        else if (k === '-topic') list = list.filter((r) => !r.topics.some((t) => t.toLowerCase() === val));
        else if (k === 'archived') list = list.filter((r) => r.archived === (val === 'true'));
        else if (k === 'fork') forkMode = val === 'only' ? 'only' : val === 'true' ? 'include' : 'exclude';
        else if (k === 'is') {
          if (val === 'public') list = list.filter((r) => r.visibility === 'public');
          else if (val === 'private') list = list.filter((r) => r.visibility === 'private');
          else if (val === 'internal') list = list.filter((r) => r.visibility === 'internal');
          else if (val === 'archived') list = list.filter((r) => r.archived);
          else if (val === 'fork') forkMode = 'only';
        }
      }
      if (forkMode === 'exclude') list = list.filter((r) => !r.fork);
      if (forkMode === 'only') list = list.filter((r) => r.fork);
      const inName = quals.some(([k, v]) => k === 'in' && v.toLowerCase() === 'name');
      for (const t of terms) {
        list = list.filter(
          (r) =>
            r.name.toLowerCase().includes(t) || (!inName && ((r.description ?? '').toLowerCase().includes(t) || r.topics.some((x) => x.toLowerCase() === t))),
        );
      }
      list.sort((a, b) => `${a.owner}/${a.name}`.localeCompare(`${b.owner}/${b.name}`));
      const capped = list.slice(0, 1000);
      const page = this.paginate(c, capped);
      const items = await Promise.all(page.items.map(async (r) => shapes.searchItemShape(await this.repoView(r, c.auth), U())));
      return ok({ total_count: list.length, incomplete_results: false, items }, page.headers);
    };

    // ---- branches & refs
    // A file, or a folder's listing (the root when the path is omitted); a symlink or a submodule is 404 here:
    // https://docs.github.com/rest/repos/contents#get-repository-content
    H['repos/get-content'] = async (c) => {
      const { r } = this.repoFor(c);
      const file = (c.params.path ?? '').replace(/^\/+|\/+$/g, '');
      const ref = c.query.ref === undefined ? r.default_branch : String(c.query.ref);
      const commit = await this.resolveCommit(r, ref, c).catch(() => null);
      if (!commit) throw new HttpError(404, shapes.errorBody(`No commit found for the ref ${ref}`, c.op.docsUrl, 404));
      const a = `${this.url}/repos/${r.owner}/${r.name}`;
      // What a file and a folder entry share (octokit/fixtures get-content: `url` names the ref even when the request did not).
      const entry = (type: g.FolderEntry['type'], p: string, sha: string, size: number): Record<string, unknown> => {
        const self = `${a}/contents/${p}?ref=${encodeURIComponent(ref)}`;
        const gitUrl = type === 'dir' ? `${a}/git/trees/${sha}` : `${a}/git/blobs/${sha}`;
        const html = `${this.url}/${r.owner}/${r.name}/${type === 'dir' ? 'tree' : 'blob'}/${ref}/${p}`;
        // No raw host here: download_url stays null (GitHub's points at raw.githubusercontent.com).
        return {
          name: p.split('/').pop(),
          path: p,
          sha,
          size,
          url: self,
          html_url: html,
          git_url: gitUrl,
          download_url: null,
          type,
          _links: { self, git: gitUrl, html },
        };
      };
      const folder = await g.readFolderAt(r.gitDir, commit, file);
      // "Directories and submodules do not support custom media types": a folder is listed whatever the Accept.
      if (folder) return ok(folder.map((e) => entry(e.type, e.path, e.sha, e.size)));
      const blob = file ? await g.readBlobAt(r.gitDir, commit, file) : null;
      if (!blob) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      const raw = /application\/vnd\.github(?:\.v3)?\.raw(?:\+json)?/.exec(c.accept)?.[0];
      if (raw) return { status: 200, body: blob.content, headers: { 'content-type': `${raw}; charset=utf-8`, 'x-github-media-type': 'github.v3; param=raw' } };
      const { _links, ...meta } = entry('file', file, blob.sha, blob.content.length);
      return ok({ type: 'file', encoding: 'base64', ...meta, content: blob.content.toString('base64').replace(/(.{60})/g, '$1\n'), _links });
    };
    H['repos/get-branch'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const branch = c.params.branch ?? '';
      const sha = branch.startsWith('-') ? null : await g.readRefFs(r.gitDir, `refs/heads/${branch}`);
      if (!sha) throw new HttpError(404, shapes.errorBody('Branch not found', c.op.docsUrl, 404));
      const a = `${this.url}/repos/${r.owner}/${r.name}`;
      const found = this.protections.get(`${key}#${branch}`);
      const rule = found && (found.via ?? 'protection') === 'protection' ? found : undefined;
      return ok({
        name: branch,
        commit: await this.commitView(r, sha),
        _links: { self: `${a}/branches/${encodeURIComponent(branch)}`, html: `${this.url}/${r.owner}/${r.name}/tree/${branch}` },
        protected: !!rule,
        protection: rule
          ? {
              enabled: true,
              required_status_checks: {
                enforcement_level: 'non_admins',
                contexts: rule.requiredChecks,
                checks: rule.requiredChecks.map((n) => ({ context: n, app_id: null })),
              },
            }
          : { enabled: false, required_status_checks: { enforcement_level: 'off', contexts: [], checks: [] } },
        protection_url: `${a}/branches/${encodeURIComponent(branch)}/protection`,
      });
    };
    H['repos/list-branches'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const refs = await g.listRefs(r.gitDir, 'refs/heads/');
      const list = [...refs].map(([ref, sha]) => ({ name: ref.slice('refs/heads/'.length), sha })).sort((a, b) => a.name.localeCompare(b.name));
      const page = this.paginate(c, list);
      const a = `${this.url}/repos/${r.owner}/${r.name}`;
      return ok(
        page.items.map((b) => ({
          name: b.name,
          commit: { sha: b.sha, url: `${a}/commits/${b.sha}` },
          protected: (this.protections.get(`${key}#${b.name}`)?.via ?? 'protection') === 'protection' && this.protections.has(`${key}#${b.name}`),
        })),
        page.headers,
      );
    };
    // Classic branch protection: reading it takes admin, as on GitHub; a branch without it is 404 "Branch not protected".
    const classicRule = async (c: RestCtx): Promise<{ r: RepoRecord; branch: string; rule: BranchRule; url: string }> => {
      const { r, key } = this.repoFor(c, 'admin');
      const branch = c.params.branch ?? '';
      if (!(await g.readRefFs(r.gitDir, `refs/heads/${branch}`))) throw new HttpError(404, shapes.errorBody('Branch not found', c.op.docsUrl, 404));
      const rule = this.protections.get(`${key}#${branch}`);
      if (!rule || (rule.via ?? 'protection') !== 'protection') throw new HttpError(404, shapes.errorBody('Branch not protected', c.op.docsUrl, 404));
      return { r, branch, rule, url: `${this.url}/repos/${r.owner}/${r.name}/branches/${encodeURIComponent(branch)}/protection` };
    };
    const statusCheckPolicy = (url: string, rule: BranchRule): Record<string, unknown> => ({
      url: `${url}/required_status_checks`,
      strict: false,
      contexts: rule.requiredChecks,
      checks: rule.requiredChecks.map((n) => ({ context: n, app_id: null })),
      contexts_url: `${url}/required_status_checks/contexts`,
    });
    H['repos/get-status-checks-protection'] = async (c) => {
      const { rule, url } = await classicRule(c);
      return ok(statusCheckPolicy(url, rule));
    };
    H['repos/get-branch-protection'] = async (c) => {
      const { rule, url } = await classicRule(c);
      const enforce = rule.enforceAdmins ?? false;
      const flag = (enabled: boolean): Record<string, boolean> => ({ enabled });
      return ok({
        url,
        required_status_checks: statusCheckPolicy(url, rule),
        enforce_admins: { url: `${url}/enforce_admins`, enabled: enforce },
        required_linear_history: flag(false),
        allow_force_pushes: flag(false),
        allow_deletions: flag(false),
        block_creations: flag(false),
        required_conversation_resolution: flag(false),
        lock_branch: flag(false),
        allow_fork_syncing: flag(false),
        required_signatures: { url: `${url}/required_signatures`, enabled: false },
      });
    };
    // The rules that apply to a branch, from every active ruleset: anyone who can read the repository may list them.
    H['repos/get-branch-rules'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const branch = c.params.branch ?? '';
      const rule = this.protections.get(`${key}#${branch}`);
      const rules =
        rule && rule.via === 'ruleset'
          ? [
              {
                type: 'required_status_checks',
                parameters: { required_status_checks: rule.requiredChecks.map((context) => ({ context })), strict_required_status_checks_policy: false },
                ruleset_source_type: 'Repository',
                ruleset_source: `${r.owner}/${r.name}`,
                ruleset_id: workflowId(key, `ruleset:${branch}`),
              },
            ]
          : [];
      const page = this.paginate(c, rules);
      return ok(page.items, page.headers);
    };

    const refShape = (r: RepoRecord, ref: string, sha: string): Record<string, unknown> => ({
      ref,
      node_id: shapes.nodeId('REF', parseInt(sha.slice(0, 8), 16)),
      url: `${this.url}/repos/${r.owner}/${r.name}/git/${ref}`,
      object: { type: 'commit', sha, url: `${this.url}/repos/${r.owner}/${r.name}/git/commits/${sha}` },
    });
    H['git/get-ref'] = async (c) => {
      const { r } = this.repoFor(c);
      const ref = `refs/${c.params.ref ?? ''}`;
      if ((await g.listRefs(r.gitDir)).size === 0) throw new HttpError(409, shapes.errorBody('Git Repository is empty.', c.op.docsUrl, 409));
      const refs = await g.listRefs(r.gitDir, ref);
      const sha = refs.get(ref);
      if (!sha) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      return ok(refShape(r, ref, sha));
    };
    // "Returns an array of references from your Git database that match the supplied name": a prefix, [] when none.
    H['git/list-matching-refs'] = async (c) => {
      const { r } = this.repoFor(c);
      const prefix = `refs/${c.params.ref ?? ''}`;
      const refs = [...(await g.listRefs(r.gitDir, 'refs/')).entries()]
        .filter(([ref]) => ref.startsWith(prefix))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return ok(refs.map(([ref, sha]) => refShape(r, ref, sha)));
    };
    H['git/create-ref'] = async (c) => {
      const { r } = this.repoFor(c);
      const body = c.body as { ref: string; sha: string };
      if (!/^refs\/.+\/.+/.test(body.ref)) throw this.semantic422(c, [], "Reference name must start with 'refs/' and have at least two slashes.");
      if (!(await g.objectExists(r.gitDir, body.sha))) throw this.semantic422(c, [], 'Object does not exist');
      if (!(await g.updateRef(r.gitDir, body.ref, body.sha, null))) throw this.semantic422(c, [], 'Reference already exists');
      await this.afterRefChanges(r, [{ ref: body.ref, before: null, after: body.sha }], 'api', c.auth.login);
      return shapes.created(refShape(r, body.ref, body.sha));
    };
    H['git/update-ref'] = async (c) => {
      const { r } = this.repoFor(c);
      const ref = `refs/${c.params.ref ?? ''}`;
      const body = c.body as { sha: string; force?: boolean };
      const current = (await g.listRefs(r.gitDir, ref)).get(ref);
      if (!current) throw this.semantic422(c, [], 'Reference does not exist');
      if (!(await g.objectExists(r.gitDir, body.sha))) throw this.semantic422(c, [], 'Object does not exist');
      if (!body.force) {
        const mb = await g.mergeBase(r.gitDir, current, body.sha);
        if (mb !== current) throw this.semantic422(c, [], 'Update is not a fast forward');
      }
      if (!(await g.updateRef(r.gitDir, ref, body.sha, current))) throw new HttpError(409, shapes.errorBody('Reference update failed', c.op.docsUrl, 409));
      await this.afterRefChanges(r, [{ ref, before: current, after: body.sha }], 'api', c.auth.login);
      return ok(refShape(r, ref, body.sha));
    };
    H['git/delete-ref'] = async (c) => {
      const { r } = this.repoFor(c);
      const ref = `refs/${c.params.ref ?? ''}`;
      const current = (await g.listRefs(r.gitDir, ref)).get(ref);
      if (!current) throw this.semantic422(c, [], 'Reference does not exist');
      await g.deleteRef(r.gitDir, ref);
      await this.afterRefChanges(r, [{ ref, before: current, after: null }], 'api', c.auth.login);
      return { status: 204 };
    };

    H['repos/get-commit'] = async (c) => {
      const { r } = this.repoFor(c);
      const sha = await this.resolveCommit(r, c.params.ref ?? '', c);
      const view = await this.commitView(r, sha, true);
      // GitHub: 300 files a page (Link headers for the rest), 3,000 in all; every page repeats the commit.
      const files = ((view.files as unknown[] | undefined) ?? []).slice(0, COMMIT_FILES_CAP);
      const page = this.paginate({ ...c, query: { per_page: '300', ...c.query } }, files, 300);
      return ok({ ...view, files: page.items }, files.length > 300 ? page.headers : undefined);
    };

    // ---- git database (commits and trees), read-only
    H['git/get-commit'] = async (c) => {
      const { r } = this.repoFor(c);
      const sha = c.params.commit_sha ?? '';
      const info = /^[0-9a-f]{40}$/i.test(sha) ? await g.readCommit(r.gitDir, sha) : null;
      if (!info || info.sha !== sha.toLowerCase()) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      const a = `${this.url}/repos/${r.owner}/${r.name}`;
      return ok({
        sha: info.sha,
        node_id: shapes.nodeId('C', parseInt(info.sha.slice(0, 8), 16)),
        url: `${a}/git/commits/${info.sha}`,
        html_url: `${this.url}/${r.owner}/${r.name}/commit/${info.sha}`,
        author: { name: info.author.name, email: info.author.email, date: info.author.date },
        committer: { name: info.committer.name, email: info.committer.email, date: info.committer.date },
        message: info.message,
        tree: { sha: info.tree, url: `${a}/git/trees/${info.tree}` },
        parents: info.parents.map((p) => ({ sha: p, url: `${a}/git/commits/${p}`, html_url: `${this.url}/${r.owner}/${r.name}/commit/${p}` })),
        verification: { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null },
      });
    };
    H['git/get-tree'] = async (c) => {
      const { r } = this.repoFor(c);
      const ref = c.params.tree_sha ?? '';
      const found = ref.startsWith('-') ? null : await g.git(r.gitDir, ['rev-parse', '--verify', '--quiet', `${ref}^{tree}`], { allowFail: true });
      const sha = found?.code === 0 ? found.stdout.trim() : null;
      if (!sha) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      const recursive = c.query.recursive !== undefined;
      const ls = await g.git(r.gitDir, ['ls-tree', '-z', '-l', ...(recursive ? ['-r', '-t'] : []), sha]);
      const a = `${this.url}/repos/${r.owner}/${r.name}`;
      const all = ls.stdout
        .split('\0')
        .filter(Boolean)
        .map((line) => {
          const tab = line.indexOf('\t');
          const [mode, type, oid, size] = line.slice(0, tab).split(/\s+/) as [string, string, string, string];
          const entry: Record<string, unknown> = { path: line.slice(tab + 1), mode, type, sha: oid };
          if (type === 'blob') entry.size = Number(size);
          if (type !== 'commit') entry.url = `${a}/git/${type === 'tree' ? 'trees' : 'blobs'}/${oid}`;
          return entry;
        });
      // GitHub lists at most 100,000 entries and 7 MB with `recursive`, and says so with `truncated`.
      let tree = all;
      if (recursive) {
        tree = all.slice(0, this.treeEntryLimit);
        let bytes = JSON.stringify(tree).length;
        while (bytes > TREE_BYTES_CAP && tree.length) bytes -= JSON.stringify(tree.pop()).length + 1;
      }
      return ok({ sha, url: `${a}/git/trees/${sha}`, tree, truncated: tree.length < all.length });
    };

    H['repos/compare-commits-with-basehead'] = async (c) => {
      const { r } = this.repoFor(c);
      const bh = c.params.basehead ?? '';
      const m = /^(.+?)(\.\.\.?)(.+)$/.exec(bh);
      if (!m) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      const strip = (s: string): string => {
        const i = s.indexOf(':');
        if (i < 0) return s;
        const owner = s.slice(0, i);
        if (owner.toLowerCase() !== r.owner.toLowerCase()) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
        return s.slice(i + 1);
      };
      const resolve = async (s: string): Promise<string> => {
        try {
          return await this.resolveCommit(r, strip(s), c);
        } catch (e) {
          if (e instanceof HttpError && e.status === 422)
            throw new HttpError(404, shapes.errorBody(`No common ancestor between ${m[1]} and ${m[3]}.`, c.op.docsUrl, 404));
          throw e;
        }
      };
      const base = await resolve(m[1]!);
      const head = await resolve(m[3]!);
      const mb = await g.mergeBase(r.gitDir, base, head);
      if (!mb) throw new HttpError(404, shapes.errorBody(`No common ancestor between ${m[1]} and ${m[3]}.`, c.op.docsUrl, 404));
      const ahead = await g.countCommits(r.gitDir, `${base}..${head}`);
      const behind = await g.countCommits(r.gitDir, `${head}..${base}`);
      const commits = await g.logRange(r.gitDir, `${base}..${head}`, 250);
      const files = await g.diffFiles(r.gitDir, mb, head);
      const baseInfo = (await g.readCommit(r.gitDir, base))!;
      const mbInfo = (await g.readCommit(r.gitDir, mb))!;
      const a = `${this.url}/repos/${r.owner}/${r.name}`;
      const html = `${this.url}/${r.owner}/${r.name}/compare/${bh}`;
      // GitHub: the files are on the first page only, at most 300 for the whole comparison; pages split the commits.
      const firstPage = Math.max(1, Number(c.query.page ?? 1) || 1) === 1;
      const perPage = { items: firstPage ? files.slice(0, COMPARE_FILES_CAP) : [], headers: {} };
      return ok(
        {
          url: `${a}/compare/${bh}`,
          html_url: html,
          permalink_url: `${this.url}/${r.owner}/${r.name}/compare/${r.owner}:${base.slice(0, 7)}...${r.owner}:${head.slice(0, 7)}`,
          diff_url: `${html}.diff`,
          patch_url: `${html}.patch`,
          base_commit: shapes.commitShape(baseInfo, r, U(), () => null),
          merge_base_commit: shapes.commitShape(mbInfo, r, U(), () => null),
          status: ahead && behind ? 'diverged' : ahead ? 'ahead' : behind ? 'behind' : 'identical',
          ahead_by: ahead,
          behind_by: behind,
          total_commits: ahead,
          commits: commits.map((ci) => shapes.commitShape(ci, r, U(), () => null)),
          files: perPage.items.map((f) => shapes.diffEntryShape(f, r, U(), head)),
        },
        perPage.headers,
      );
    };

    // ---- forks
    H['repos/create-fork'] = async (c) => {
      // Anyone who can read a repository can fork it; the fork belongs to the token's user or the organization named.
      const { r, key } = this.repoFor(c, 'pull');
      if (!c.auth.spec || !c.auth.login) throw new HttpError(401, shapes.errorBody('Requires authentication', c.op.docsUrl, 401));
      const b = (c.body ?? {}) as { organization?: string; name?: string; default_branch_only?: boolean };
      const owner = b.organization ?? c.auth.login;
      if (b.organization !== undefined && this.users.get(b.organization.toLowerCase())?.type !== 'Organization') {
        throw this.semantic422(c, [{ resource: 'Fork', field: 'organization', code: 'invalid', message: `${b.organization} is not an organization` }]);
      }
      // Forking again answers with the fork the owner has already.
      let fork = [...this.repos.values()].find((x) => x.parentKey === key && x.owner.toLowerCase() === owner.toLowerCase());
      if (!fork) {
        let name = b.name ?? r.name;
        for (let n = 1; this.repos.has(repoKey(owner, name)); n++) name = `${b.name ?? r.name}-${n}`;
        await this.createRepo({ owner, name, empty: true, defaultBranch: r.default_branch, visibility: r.visibility, description: r.description ?? undefined });
        fork = this.repos.get(repoKey(owner, name))!;
        fork.fork = true;
        fork.parentKey = key;
        const refs = b.default_branch_only ? [`+refs/heads/${r.default_branch}:refs/heads/${r.default_branch}`] : ['+refs/heads/*:refs/heads/*'];
        await g.git(fork.gitDir, ['fetch', '--quiet', '--no-tags', r.gitDir, ...refs]);
      }
      return { status: 202, body: shapes.fullRepoShape(await this.fullRepoView(fork, c.auth), U()) };
    };

    // ---- pulls
    H['pulls/create'] = async (c) => {
      // A PR from a fork needs no write access to the base repository: reading it is enough (for a personal token).
      const { r, key, perm } = this.repoFor(c, 'pull');
      if (!c.auth.spec) throw new HttpError(401, shapes.errorBody('Requires authentication', c.op.docsUrl, 401));
      if (r.archived) throw new HttpError(403, shapes.errorBody('Repository was archived so is read-only.', c.op.docsUrl, 403));
      const b = c.body as {
        title?: string;
        head: string;
        base: string;
        body?: string;
        draft?: boolean;
        maintainer_can_modify?: boolean;
        issue?: number;
        head_repo?: string;
      };
      let head = b.head;
      let headRepo = r;
      const colon = head.indexOf(':');
      if (colon >= 0) {
        const owner = head.slice(0, colon);
        head = head.slice(colon + 1);
        if (owner.toLowerCase() !== r.owner.toLowerCase()) {
          // owner:branch names a branch of the fork `owner` has of this repository.
          const fork = [...this.repos.values()].find((x) => x.parentKey === key && x.owner.toLowerCase() === owner.toLowerCase());
          if (!fork) throw this.semantic422(c, [{ resource: 'PullRequest', field: 'head', code: 'invalid' }]);
          headRepo = fork;
        }
      }
      // An installation token needs write access (pull_requests: write) to open a PR anywhere; a personal token does not.
      if (PERM_RANK[perm] < PERM_RANK.push && c.auth.spec.type !== 'pat') {
        throw new HttpError(403, shapes.errorBody('Resource not accessible by integration', c.op.docsUrl, 403));
      }
      const headKey = repoKey(headRepo.owner, headRepo.name);
      if (b.title === undefined && b.issue === undefined) throw this.semantic422(c, [{ resource: 'PullRequest', field: 'title', code: 'missing_field' }]);
      if (b.issue !== undefined)
        throw this.semantic422(c, [{ resource: 'PullRequest', field: 'issue', code: 'invalid', message: 'the emulator has no issues to convert' }]);
      const headSha = head.startsWith('-') ? null : await g.readRefFs(headRepo.gitDir, `refs/heads/${head}`);
      const baseSha = b.base.startsWith('-') ? null : await g.readRefFs(r.gitDir, `refs/heads/${b.base}`);
      const errs: GitHubFieldError[] = [];
      if (!headSha) errs.push({ resource: 'PullRequest', field: 'head', code: 'invalid' });
      if (!baseSha) errs.push({ resource: 'PullRequest', field: 'base', code: 'invalid' });
      if (errs.length) throw this.semantic422(c, errs);
      for (const p of this.pulls.values()) {
        if (p.repoKey === key && p.state === 'open' && p.headRef === head && p.headRepoKey === headKey && p.baseRef === b.base) {
          throw this.semantic422(c, [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${headRepo.owner}:${head}.` }]);
        }
      }
      const pending = `refs/pull/${r.nextNumber}/head`;
      if (headRepo !== r) await g.git(r.gitDir, ['fetch', '--quiet', '--no-tags', headRepo.gitDir, `+refs/heads/${head}:${pending}`]);
      if ((await g.countCommits(r.gitDir, `${baseSha}..${headSha}`)) === 0) {
        if (headRepo !== r) await g.deleteRef(r.gitDir, pending);
        throw this.semantic422(c, [{ resource: 'PullRequest', code: 'custom', message: `No commits between ${b.base} and ${head}` }]);
      }
      const id = this.id();
      const t = nowIso();
      const number = r.nextNumber++;
      const p: PullRecord = {
        id,
        node_id: shapes.nodeId('PR', id),
        repoKey: key,
        number,
        title: b.title ?? '',
        body: b.body ?? null,
        state: 'open',
        draft: b.draft ?? false,
        locked: false,
        headRef: head,
        headRepoKey: headKey,
        headSha: headSha!,
        baseRef: b.base,
        baseSha: baseSha!,
        user: c.auth.login ?? 'ghost',
        created_at: t,
        updated_at: t,
        closed_at: null,
        merged_at: null,
        merge_commit_sha: null,
        merged_by: null,
        labels: [],
        assignees: [],
        requested_reviewers: [],
        requested_teams: [],
        reviews: [],
        maintainer_can_modify: b.maintainer_can_modify ?? false,
        nullReadsLeft: 0,
        nullReadsKey: '',
      };
      this.pulls.set(`${key}#${number}`, p);
      this.nodes.set(p.node_id, { type: 'PullRequest', key: `${key}#${number}` });
      this.tracker.pullReferenced(p, r, p.user);
      // GitHub runs the base repository's workflows on a PR from a fork (pull_request), on the fork's head commit.
      if (headRepo !== r) await this.runCi(r, { branch: head, sha: headSha!, before: null, pushCount: 1, source: 'api' });
      const view = await this.pullView(p, c.auth, false);
      view.detail = { ...(await this.pullView(p, c.auth, 'peek')).detail!, mergeable: null, mergeable_state: 'unknown' };
      return { status: 201, body: shapes.pullShape(view, U()) };
    };

    H['pulls/list'] = async (c) => {
      const { key } = this.repoFor(c);
      const state = String(c.query.state ?? 'open');
      let list = [...this.pulls.values()].filter((p) => p.repoKey === key);
      if (state !== 'all') list = list.filter((p) => p.state === state);
      if (c.query.head !== undefined) {
        const head = String(c.query.head);
        const i = head.indexOf(':');
        if (i < 0) {
          this.violation({
            kind: 'semantic',
            method: c.method,
            path: c.path,
            route: c.op.template,
            operationId: c.op.operationId,
            status: 200,
            message: `head=${head} has no owner: GitHub expects head=owner:branch and ignores the filter otherwise (every PR is listed)`,
          });
        } else {
          const owner = head.slice(0, i).toLowerCase();
          const branch = head.slice(i + 1);
          list = list.filter((p) => owner === this.headRepoOf(p).owner.toLowerCase() && p.headRef === branch);
        }
      }
      if (c.query.base !== undefined) list = list.filter((p) => p.baseRef === String(c.query.base));
      const sort = String(c.query.sort ?? 'created');
      const direction = String(c.query.direction ?? (sort === 'created' ? 'desc' : 'asc'));
      list.sort((a, b) => {
        const ka = sort === 'updated' ? a.updated_at : a.created_at;
        const kb = sort === 'updated' ? b.updated_at : b.created_at;
        const d = ka < kb ? -1 : ka > kb ? 1 : a.number - b.number;
        return direction === 'asc' ? d : -d;
      });
      const page = this.paginate(c, list);
      const items = [];
      for (const p of page.items) items.push(shapes.pullShape(await this.pullView(p, c.auth, false), U()));
      return ok(items, page.headers);
    };

    H['pulls/get'] = async (c) => {
      const { key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.pull_number);
      return ok(shapes.pullShape(await this.pullView(p, c.auth, 'read'), U()));
    };

    H['pulls/update'] = async (c) => {
      // The PR's author edits and closes it with read access (a PR from a fork); anyone else needs write access.
      const { r, key, perm } = this.repoFor(c, 'pull');
      if (!c.auth.spec) throw new HttpError(401, shapes.errorBody('Requires authentication', c.op.docsUrl, 401));
      if (r.archived) throw new HttpError(403, shapes.errorBody('Repository was archived so is read-only.', c.op.docsUrl, 403));
      const p = this.getPull(c, key, c.params.pull_number);
      if (PERM_RANK[perm] < PERM_RANK.push && (c.auth.spec.type !== 'pat' || c.auth.login?.toLowerCase() !== p.user.toLowerCase())) {
        throw new HttpError(
          403,
          shapes.errorBody(
            c.auth.spec.type === 'pat' ? 'Resource not accessible by personal access token' : 'Resource not accessible by integration',
            c.op.docsUrl,
            403,
          ),
        );
      }
      const b = c.body as { title?: string; body?: string; state?: 'open' | 'closed'; base?: string; maintainer_can_modify?: boolean };
      if (b.base !== undefined && b.base !== p.baseRef) {
        const sha = b.base.startsWith('-') ? null : await g.readRefFs(r.gitDir, `refs/heads/${b.base}`);
        if (!sha)
          throw this.semantic422(c, [{ resource: 'PullRequest', field: 'base', code: 'invalid', message: `Proposed base branch '${b.base}' was not found` }]);
        p.baseRef = b.base;
        p.baseSha = sha;
      }
      if (b.state === 'open' && p.state === 'closed') {
        if (p.merged_at)
          throw this.semantic422(c, [
            { resource: 'PullRequest', field: 'state', code: 'invalid', message: 'state cannot be changed. The pull request cannot be reopened' },
          ]);
        if (!(await g.readRefFs(this.headRepoOf(p).gitDir, `refs/heads/${p.headRef}`)))
          throw this.semantic422(c, [
            { resource: 'PullRequest', field: 'state', code: 'invalid', message: 'state cannot be changed. The head branch is gone' },
          ]);
        p.state = 'open';
        p.closed_at = null;
      } else if (b.state === 'closed' && p.state === 'open') {
        await this.refreshPull(p);
        p.state = 'closed';
        p.closed_at = nowIso();
      }
      if (b.title !== undefined) p.title = b.title;
      if (b.body !== undefined) p.body = b.body;
      if (b.body !== undefined) this.tracker.pullReferenced(p, r, c.auth.login ?? p.user);
      if (b.maintainer_can_modify !== undefined) p.maintainer_can_modify = b.maintainer_can_modify;
      p.updated_at = nowIso();
      return ok(shapes.pullShape(await this.pullView(p, c.auth, 'peek'), U()));
    };

    H['pulls/list-files'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.pull_number);
      await this.refreshPull(p);
      const mb = (await g.mergeBase(r.gitDir, p.baseSha, p.headSha)) ?? p.baseSha;
      const files = (await g.diffFiles(r.gitDir, mb, p.headSha)).slice(0, 3000);
      const page = this.paginate(c, files);
      return ok(
        page.items.map((f) => shapes.diffEntryShape(f, r, U(), p.headSha)),
        page.headers,
      );
    };

    H['pulls/list-commits'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.pull_number);
      await this.refreshPull(p);
      const mb = (await g.mergeBase(r.gitDir, p.baseSha, p.headSha)) ?? p.baseSha;
      const commits = await g.logRange(r.gitDir, `${mb}..${p.headSha}`, 250);
      const page = this.paginate(c, commits);
      return ok(
        page.items.map((ci) => shapes.commitShape(ci, r, U(), () => null)),
        page.headers,
      );
    };

    H['pulls/check-if-merged'] = async (c) => {
      const { key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.pull_number);
      if (!p.merged_at) throw new HttpError(404, null);
      return { status: 204 };
    };

    H['pulls/merge'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.pull_number);
      const b = c.body as { commit_title?: string; commit_message?: string; sha?: string; merge_method?: 'merge' | 'squash' | 'rebase' };
      const notMergeable = (msg = 'Pull Request is not mergeable'): HttpError => new HttpError(405, shapes.errorBody(msg, c.op.docsUrl, 405));
      if (p.merged_at) throw notMergeable('Pull Request is not mergeable');
      if (p.state !== 'open') throw notMergeable('Pull Request is not mergeable');
      await this.refreshPull(p);
      if (!(await g.readRefFs(this.headRepoOf(p).gitDir, `refs/heads/${p.headRef}`))) throw notMergeable('Head branch was deleted');
      await this.pullHeadIntoBase(p);
      if (b.sha !== undefined && b.sha !== p.headSha)
        throw new HttpError(409, shapes.errorBody('Head branch was modified. Review and try the merge again.', c.op.docsUrl, 409));
      if (p.draft) throw notMergeable('Pull Request is still a draft');
      const missing = this.missingRequiredChecks(p, this.permission(c.auth, r) === 'admin');
      if (missing.length) throw notMergeable(`Required status check "${missing[0]}" is expected.`);
      const baseSha = p.baseSha;
      const headSha = p.headSha;
      const mt = await g.mergeTree(r.gitDir, baseSha, headSha);
      if (!mt.tree) throw notMergeable('Pull Request is not mergeable');
      const method = b.merge_method ?? 'merge';
      const merger = this.user(c.auth.login ?? 'ghost');
      const who = { name: merger.login, email: `${merger.id}+${merger.login}@users.noreply.github.com` };
      let newSha: string | null;
      if (method === 'merge') {
        const title = b.commit_title ?? `Merge pull request #${p.number} from ${this.headRepoOf(p).owner}/${p.headRef}`;
        const msg = `${title}\n\n${b.commit_message ?? p.title}`;
        newSha = await g.commitTree(r.gitDir, mt.tree, [baseSha, headSha], msg, who);
      } else if (method === 'squash') {
        const mb = (await g.mergeBase(r.gitDir, baseSha, headSha)) ?? baseSha;
        const commits = await g.logRange(r.gitDir, `${mb}..${headSha}`);
        const title = b.commit_title ?? `${p.title} (#${p.number})`;
        const msg = `${title}\n\n${b.commit_message ?? commits.map((ci) => `* ${ci.message}`).join('\n\n')}`;
        newSha = await g.commitTree(r.gitDir, mt.tree, [baseSha], msg, who);
      } else {
        const commits = await g.logRange(r.gitDir, `${baseSha}..${headSha}`);
        if (commits.some((ci) => ci.parents.length > 1)) throw notMergeable("This branch can't be rebased");
        const mb = (await g.mergeBase(r.gitDir, baseSha, headSha)) ?? baseSha;
        newSha = await g.replayCommits(r.gitDir, baseSha, mb, headSha);
        if (!newSha) throw notMergeable("This branch can't be rebased");
      }
      if (!(await g.updateRef(r.gitDir, `refs/heads/${p.baseRef}`, newSha, baseSha))) {
        throw notMergeable('Base branch was modified. Review and try the merge again.');
      }
      const t = nowIso();
      p.state = 'closed';
      p.merged_at = t;
      p.closed_at = t;
      p.updated_at = t;
      p.merge_commit_sha = newSha;
      p.merged_by = merger.login;
      p.baseSha = newSha;
      this.tracker.pullMerged(p, r, merger.login);
      await this.afterRefChanges(r, [{ ref: `refs/heads/${p.baseRef}`, before: baseSha, after: newSha }], 'merge', c.auth.login);
      return ok({ sha: newSha, merged: true, message: 'Pull Request successfully merged' });
    };

    H['pulls/request-reviewers'] = async (c) => {
      const { key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.pull_number);
      const b = c.body as { reviewers?: string[]; team_reviewers?: string[] };
      if (!b.reviewers && !b.team_reviewers) throw this.semantic422(c, [{ resource: 'PullRequest', field: 'reviewers', code: 'missing_field' }]);
      for (const login of b.reviewers ?? []) {
        if (login.toLowerCase() === p.user.toLowerCase()) throw this.semantic422(c, [], 'Review cannot be requested from pull request author.');
      }
      for (const login of b.reviewers ?? []) if (!p.requested_reviewers.some((x) => x.toLowerCase() === login.toLowerCase())) p.requested_reviewers.push(login);
      for (const team of b.team_reviewers ?? []) if (!p.requested_teams.includes(team)) p.requested_teams.push(team);
      p.updated_at = nowIso();
      return { status: 201, body: shapes.pullShape(await this.pullView(p, c.auth, false), U()) };
    };

    H['pulls/list-requested-reviewers'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.pull_number);
      return ok({
        users: p.requested_reviewers.map((l) => shapes.userShape(this.user(l), U())),
        teams: p.requested_teams.map((t) => shapes.teamShape(r.owner, t, U())),
      });
    };

    // ---- reviews
    const reviewShape = (r: RepoRecord, p: PullRecord, rv: ReviewRecord): Record<string, unknown> => {
      const html = `${this.url}/${r.owner}/${r.name}/pull/${p.number}#pullrequestreview-${rv.id}`;
      const pr = `${this.url}/repos/${r.owner}/${r.name}/pulls/${p.number}`;
      return {
        id: rv.id,
        node_id: rv.node_id,
        user: shapes.userShape(this.user(rv.user), U()),
        body: rv.body,
        state: rv.state,
        html_url: html,
        pull_request_url: pr,
        _links: { html: { href: html }, pull_request: { href: pr } },
        ...(rv.submitted_at ? { submitted_at: rv.submitted_at } : {}),
        commit_id: rv.commit_id,
        author_association: rv.user.toLowerCase() === r.owner.toLowerCase() ? 'OWNER' : 'COLLABORATOR',
      };
    };
    H['pulls/list-reviews'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.pull_number);
      // A pending review is visible to its author only.
      const list = p.reviews.filter((rv) => rv.state !== 'PENDING' || rv.user.toLowerCase() === (c.auth.login ?? '').toLowerCase());
      const page = this.paginate(c, list);
      return ok(
        page.items.map((rv) => reviewShape(r, p, rv)),
        page.headers,
      );
    };
    H['pulls/create-review'] = async (c) => {
      const { r, key } = this.repoFor(c, 'pull');
      if (!c.auth.spec) throw new HttpError(401, shapes.errorBody('Requires authentication', c.op.docsUrl, 401));
      const p = this.getPull(c, key, c.params.pull_number);
      const b = c.body as { commit_id?: string; body?: string; event?: 'APPROVE' | 'REQUEST_CHANGES' | 'COMMENT' };
      const login = c.auth.login ?? 'ghost';
      const own = login.toLowerCase() === p.user.toLowerCase();
      const refuse = (msg: string): HttpError => new HttpError(422, shapes.errorBody('Unprocessable Entity', c.op.docsUrl, 422, { errors: [msg] }));
      if (own && b.event === 'APPROVE') throw refuse('Review Can not approve your own pull request');
      if (own && b.event === 'REQUEST_CHANGES') throw refuse('Review Can not request changes on your own pull request');
      if ((b.event === 'REQUEST_CHANGES' || b.event === 'COMMENT') && !b.body) throw refuse(`Review Body is required for ${b.event}`);
      if (p.reviews.some((rv) => rv.state === 'PENDING' && rv.user.toLowerCase() === login.toLowerCase()))
        throw refuse('Review User can only have one pending review per pull request');
      await this.refreshPull(p);
      const id = this.id();
      const state: ReviewRecord['state'] =
        b.event === 'APPROVE' ? 'APPROVED' : b.event === 'REQUEST_CHANGES' ? 'CHANGES_REQUESTED' : b.event === 'COMMENT' ? 'COMMENTED' : 'PENDING';
      const rv: ReviewRecord = {
        id,
        node_id: shapes.nodeId('PRR', id),
        user: login,
        body: b.body ?? '',
        state,
        commit_id: b.commit_id ?? p.headSha,
        submitted_at: state === 'PENDING' ? null : nowIso(),
      };
      p.reviews.push(rv);
      // A submitted review answers the request: GitHub drops the reviewer from requested_reviewers.
      if (state !== 'PENDING') p.requested_reviewers = p.requested_reviewers.filter((x) => x.toLowerCase() !== login.toLowerCase());
      p.updated_at = nowIso();
      return ok(reviewShape(r, p, rv));
    };

    // ---- issues (PRs are issues)
    H['issues/get'] = async (c) => {
      const { key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.issue_number);
      return ok(shapes.issueShape(await this.pullView(p, c.auth, false), U()));
    };
    H['issues/add-labels'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.issue_number);
      const b = c.body as { labels?: Array<string | { name: string }> };
      for (const l of b.labels ?? []) {
        const name = typeof l === 'string' ? l : l.name;
        if (!r.labels.has(name.toLowerCase())) {
          const id = this.id();
          r.labels.set(name.toLowerCase(), { id, node_id: shapes.nodeId('LA', id), name, color: 'ededed', description: null, default: false });
        }
        if (!p.labels.some((x) => x.toLowerCase() === name.toLowerCase())) p.labels.push(name);
      }
      p.updated_at = nowIso();
      return ok(p.labels.map((l) => shapes.labelShape(r.labels.get(l.toLowerCase())!, r, U())));
    };
    H['issues/list-labels-on-issue'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.issue_number);
      const page = this.paginate(c, p.labels);
      return ok(
        page.items.map((l) => shapes.labelShape(r.labels.get(l.toLowerCase())!, r, U())),
        page.headers,
      );
    };
    H['issues/add-assignees'] = async (c) => {
      const { key } = this.repoFor(c);
      const p = this.getPull(c, key, c.params.issue_number);
      const b = c.body as { assignees?: string[] };
      for (const a of b.assignees ?? []) if (!p.assignees.some((x) => x.toLowerCase() === a.toLowerCase()) && p.assignees.length < 10) p.assignees.push(a);
      p.updated_at = nowIso();
      return { status: 201, body: shapes.issueShape(await this.pullView(p, c.auth, false), U()) };
    };

    // ---- statuses
    H['repos/create-commit-status'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const sha = c.params.sha ?? '';
      const full = /^[0-9a-f]{4,40}$/i.test(sha) ? await g.revParse(r.gitDir, sha) : null;
      if (!full) throw this.semantic422(c, [], `No commit found for SHA: ${sha}`);
      const b = c.body as { state: StatusRecord['state']; target_url?: string | null; description?: string | null; context?: string };
      const same = this.statusesList.filter((s) => s.repoKey === key && s.sha === full);
      if (same.length >= 1000)
        throw this.semantic422(c, [
          { resource: 'Status', code: 'custom', field: 'sha', message: 'This SHA and context has reached the maximum number of statuses.' },
        ]);
      const id = this.id();
      const t = nowIso();
      const rec: StatusRecord = {
        id,
        node_id: shapes.nodeId('SC', id),
        repoKey: key,
        sha: full,
        state: b.state,
        description: b.description ?? null,
        target_url: b.target_url ?? null,
        context: b.context ?? 'default',
        creator: c.auth.login ?? 'ghost',
        created_at: t,
        updated_at: t,
      };
      this.statusesList.push(rec);
      return shapes.created(shapes.statusShape(rec, this.user(rec.creator), r, U()));
    };
    H['repos/get-combined-status-for-ref'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const sha = await this.resolveCommit(r, c.params.ref ?? '', c);
      const latest = this.latestStatuses(key, sha).sort((a, b) => a.context.localeCompare(b.context));
      const state =
        latest.length === 0
          ? 'pending'
          : latest.some((s) => s.state === 'failure' || s.state === 'error')
            ? 'failure'
            : latest.some((s) => s.state === 'pending')
              ? 'pending'
              : 'success';
      const page = this.paginate(c, latest);
      return ok(
        {
          state,
          statuses: page.items.map((s) => shapes.simpleStatus(s, r, U())),
          sha,
          total_count: latest.length,
          repository: shapes.minimalRepoShape({ ...(await this.repoView(r, c.auth)), permission: null }, U()),
          commit_url: `${this.url}/repos/${r.owner}/${r.name}/commits/${sha}`,
          url: `${this.url}/repos/${r.owner}/${r.name}/commits/${sha}/status`,
        },
        page.headers,
      );
    };
    H['repos/list-commit-statuses-for-ref'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const sha = await this.resolveCommit(r, c.params.ref ?? '', c);
      const list = this.statusesList.filter((s) => s.repoKey === key && s.sha === sha).reverse();
      const page = this.paginate(c, list);
      return ok(
        page.items.map((s) => shapes.statusShape(s, this.user(s.creator), r, U())),
        page.headers,
      );
    };

    // ---- checks
    H['checks/create'] = async (c) => {
      const { r, key } = this.repoFor(c);
      if (c.auth.spec?.type === 'pat') throw new HttpError(403, shapes.errorBody('You must authenticate via a GitHub App.', c.op.docsUrl, 403));
      const b = c.body as {
        name: string;
        head_sha: string;
        details_url?: string;
        external_id?: string;
        status?: CheckRunRecord['status'];
        started_at?: string;
        conclusion?: string;
        completed_at?: string;
        output?: { title: string; summary: string; text?: string; annotations?: unknown[] };
      };
      const full = /^[0-9a-f]{40}$/i.test(b.head_sha) ? await g.revParse(r.gitDir, b.head_sha) : null;
      if (!full) throw this.semantic422(c, [{ resource: 'CheckRun', field: 'head_sha', code: 'invalid', message: `No commit found for SHA: ${b.head_sha}` }]);
      if ((b.status === 'completed' || b.completed_at) && !b.conclusion)
        throw this.semantic422(c, [{ resource: 'CheckRun', field: 'conclusion', code: 'missing_field' }]);
      const tooBig = checkOutputByteError(b.output);
      if (tooBig) throw this.semantic422(c, [tooBig]);
      const run = this.newCheckRun(key, full, b.name, 'github-actions');
      this.applyCheckUpdate(run, b);
      return { status: 201, body: this.checkRunView(run) };
    };
    H['checks/update'] = async (c) => {
      const { key } = this.repoFor(c);
      const run = this.checkRunsById.get(Number(c.params.check_run_id));
      if (!run || run.repoKey !== key) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      const b = c.body as Parameters<Emulator['applyCheckUpdate']>[1];
      if ((b.status === 'completed' || b.completed_at) && !b.conclusion && run.conclusion === null)
        throw this.semantic422(c, [{ resource: 'CheckRun', field: 'conclusion', code: 'missing_field' }]);
      const tooBig = checkOutputByteError(b.output);
      if (tooBig) throw this.semantic422(c, [tooBig]);
      this.applyCheckUpdate(run, b);
      return ok(this.checkRunView(run));
    };
    H['checks/get'] = async (c) => {
      const { key } = this.repoFor(c);
      const run = this.checkRunsById.get(Number(c.params.check_run_id));
      if (!run || run.repoKey !== key) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      return ok(this.checkRunView(run));
    };
    H['checks/list-for-ref'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const sha = await this.resolveCommit(r, c.params.ref ?? '', c);
      let list = [...this.checkRunsById.values()].filter((x) => x.repoKey === key && x.head_sha === sha);
      if ((c.query.filter ?? 'latest') === 'latest') {
        const latest = new Set(this.latestChecks(key, sha).map((x) => x.id));
        list = list.filter((x) => latest.has(x.id));
      }
      if (c.query.check_name !== undefined) list = list.filter((x) => x.name === c.query.check_name);
      if (c.query.status !== undefined) list = list.filter((x) => x.status === c.query.status);
      list.sort((a, b) => b.id - a.id);
      const page = this.paginate(c, list);
      return ok({ total_count: list.length, check_runs: page.items.map((x) => this.checkRunView(x)) }, page.headers);
    };

    // ---- actions
    H['actions/get-workflow-run'] = async (c) => {
      const { r, key } = this.repoFor(c);
      const run = this.runs.get(Number(c.params.run_id));
      if (!run || run.repoKey !== key) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      return ok(shapes.workflowRunShape(run, await this.repoView(r, c.auth), U(), this.user(this.login), await g.readCommit(r.gitDir, run.head_sha)));
    };
    const listJobs = async (c: RestCtx): Promise<Reply> => {
      const { r, key } = this.repoFor(c);
      const run = this.runs.get(Number(c.params.run_id));
      if (!run || run.repoKey !== key) throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
      const page = this.paginate(c, run.jobs);
      return ok({ total_count: run.jobs.length, jobs: page.items.map((j) => shapes.jobShape(j, run, r, U())) }, page.headers);
    };
    H['actions/list-jobs-for-workflow-run'] = listJobs;
    H['actions/list-jobs-for-workflow-run-attempt'] = listJobs;
    H['actions/list-repo-workflows'] = async (c) => {
      const { r, key } = this.repoFor(c);
      // Workflow files on the default branch, plus the workflows of seeded runs.
      const byPath = new Map<string, string>();
      const head = await g.readRefFs(r.gitDir, `refs/heads/${r.default_branch}`);
      if (head) {
        const ls = await g.git(r.gitDir, ['ls-tree', '-z', '--name-only', `${head}:.github/workflows`], { allowFail: true });
        for (const f of ls.stdout.split('\0')) if (/\.ya?ml$/.test(f)) byPath.set(`.github/workflows/${f}`, f.replace(/\.ya?ml$/, ''));
      }
      for (const run of this.runs.values()) if (run.repoKey === key && !byPath.has(run.path)) byPath.set(run.path, run.name);
      const list = [...byPath].sort(([a], [b]) => a.localeCompare(b));
      const page = this.paginate(c, list);
      return ok(
        { total_count: list.length, workflows: page.items.map(([p, name]) => shapes.workflowShape(r, workflowId(key, p), p, name, U())) },
        page.headers,
      );
    };
    H['actions/get-job-for-workflow-run'] = async (c) => {
      const { r, key } = this.repoFor(c);
      for (const run of this.runs.values()) {
        if (run.repoKey !== key) continue;
        const job = run.jobs.find((j) => j.id === Number(c.params.job_id));
        if (job) return ok(shapes.jobShape(job, run, r, U()));
      }
      throw new HttpError(404, shapes.errorBody('Not Found', c.op.docsUrl, 404));
    };
    addRunHandlers(H, {
      repoFor: (c, need) => this.repoFor(c, need),
      paginate: (c, items) => this.paginate(c, items),
      httpError: (status, body) => new HttpError(status, body),
      run: (id) => this.runs.get(id),
      jobShape: (job, run, c) => shapes.jobShape(job, run, this.repoFor(c, 'pull').r, U()),
      userShape: (login) => shapes.userShape(this.user(login), U()),
      annotations: (jobId) => this.jobAnnotations.get(jobId) ?? (this.jobExists(jobId) ? [] : undefined),
      checkRunAnnotations: (id, key) => {
        const run = this.checkRunsById.get(id);
        return run && run.repoKey === key ? (run.annotations ?? []) : undefined;
      },
      control: () => this.runControl,
      ownEnvironment: (key, name) => this.environments.get(key, name),
      apiUrl: () => this.url,
      htmlUrl: () => this.urls().html,
    });
    addActionsSettingsHandlers(H, {
      repoFor: (c, need) => this.repoFor(c, need),
      settings: (key) => this.actionsSettings.get(key),
      apiUrl: () => this.url,
    });
    addActionsRestHandlers(H, {
      repoFor: (c, need) => this.repoFor(c, need),
      paginate: (c, items) => this.paginate(c, items),
      httpError: (status, body) => new HttpError(status, body),
      backend: () => this.actionsBackend,
      apiUrl: () => this.url,
    });
    Object.assign(H, appHandlers(this.appsHost()));
    Object.assign(
      H,
      this.tracker.handlers({
        'issues/get': H['issues/get']!,
        'issues/add-labels': H['issues/add-labels']!,
        'issues/list-labels-on-issue': H['issues/list-labels-on-issue']!,
      }),
    );
    return H;
  }

  private jobExists(jobId: number): boolean {
    return [...this.runs.values()].some((r) => r.jobs.some((j) => j.id === jobId));
  }

  /** What the GitHub App endpoints (apps-rest.ts) read and change. */
  private appsHost(): AppsHost {
    return {
      url: this.url,
      clock: this.clock,
      apps: this.apps,
      repo: (fullName) => this.repo(fullName) as RepoRecord | null,
      repoById: (id) => [...this.repos.values()].find((r) => r.id === id) ?? null,
      user: (login) => this.user(login),
      userJson: (login) => shapes.userShape(this.user(login), this.urls()),
      repoJson: async (r) => shapes.repoShape(await this.repoView(r, null), this.urls()),
      addToken: (token, spec) => this.addToken(token, spec),
      removeToken: (token) => this.removeToken(token),
    };
  }

  private applyCheckUpdate(
    run: CheckRunRecord,
    b: {
      name?: string;
      details_url?: string;
      external_id?: string;
      status?: CheckRunRecord['status'];
      started_at?: string;
      conclusion?: string;
      completed_at?: string;
      output?: { title?: string; summary: string; text?: string; annotations?: unknown[] };
    },
  ): void {
    if (b.name !== undefined) run.name = b.name;
    if (b.details_url !== undefined) run.details_url = b.details_url;
    if (b.external_id !== undefined) run.external_id = b.external_id;
    if (b.started_at !== undefined) run.started_at = b.started_at;
    if (b.status !== undefined) run.status = b.status;
    if (b.conclusion !== undefined) {
      run.conclusion = b.conclusion;
      run.status = 'completed';
    }
    if (run.status === 'completed') {
      run.completed_at = b.completed_at ?? run.completed_at ?? nowIso();
      run.concludedAtMs ??= Date.now();
    }
    if (b.output) {
      run.output = {
        title: b.output.title ?? run.output.title,
        summary: b.output.summary,
        text: b.output.text ?? run.output.text,
        annotations_count: run.output.annotations_count + (b.output.annotations?.length ?? 0),
      };
      // "Each time you update the check run, annotations are appended to the list of annotations that already exist"
      // (https://docs.github.com/rest/checks/runs#update-a-check-run).
      if (b.output.annotations?.length)
        run.annotations = [...(run.annotations ?? []), ...(b.output.annotations as CheckRunAnnotation[]).map((a) => ({ ...a }))];
    }
  }

  private userFull(u: UserRecord): Record<string, unknown> {
    const t = '2020-01-01T00:00:00Z';
    return {
      ...shapes.userShape(u, this.urls()),
      name: u.login,
      company: null,
      blog: '',
      location: null,
      email: null,
      hireable: null,
      bio: null,
      twitter_username: null,
      public_repos: [...this.repos.values()].filter((r) => r.owner.toLowerCase() === u.login.toLowerCase() && r.visibility === 'public').length,
      public_gists: 0,
      followers: 0,
      following: 0,
      created_at: t,
      updated_at: t,
    };
  }

  private orgFull(u: UserRecord): Record<string, unknown> {
    const api = `${this.url}/orgs/${u.login}`;
    return {
      login: u.login,
      id: u.id,
      node_id: u.node_id,
      url: api,
      repos_url: `${api}/repos`,
      events_url: `${api}/events`,
      hooks_url: `${api}/hooks`,
      issues_url: `${api}/issues`,
      members_url: `${api}/members{/member}`,
      public_members_url: `${api}/public_members{/member}`,
      avatar_url: `${this.url}/avatars/${u.login}`,
      description: null,
      html_url: `${this.url}/${u.login}`,
      has_organization_projects: true,
      has_repository_projects: true,
      public_repos: [...this.repos.values()].filter((r) => r.owner.toLowerCase() === u.login.toLowerCase() && r.visibility === 'public').length,
      public_gists: 0,
      followers: 0,
      following: 0,
      type: 'Organization',
      created_at: '2020-01-01T00:00:00Z',
      updated_at: '2020-01-01T00:00:00Z',
      archived_at: null,
    };
  }
}

function repoKey(owner: string, name: string): string {
  return `${owner}/${name}`.toLowerCase();
}

function workflowId(key: string, wfPath: string): number {
  return [...`${key}:${wfPath}`].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) >>> 0, 11) % 100_000_000;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function matchesFilter(r: RequestRecord, f: RequestFilter): boolean {
  if (f.kind && r.kind !== f.kind) return false;
  if (f.method && r.method !== f.method.toUpperCase()) return false;
  if (f.route && r.route !== f.route) return false;
  if (f.operationId && r.operationId !== f.operationId) return false;
  if (f.status !== undefined && r.status !== f.status) return false;
  if (f.token && r.token !== f.token) return false;
  if (f.fault && r.fault !== f.fault) return false;
  if (f.denied === true && !r.denied) return false;
  if (typeof f.denied === 'string' && r.denied !== f.denied) return false;
  if (f.path !== undefined) {
    if (f.path instanceof RegExp) {
      f.path.lastIndex = 0;
      if (!f.path.test(r.path)) return false;
    } else if (r.path !== f.path) return false;
  }
  return true;
}

/** Starts an emulator on 127.0.0.1 (random port unless `opts.port`). */
export function startEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  return Emulator.start(opts);
}
