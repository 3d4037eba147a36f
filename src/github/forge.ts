/**
 * The GitHub forge: targets are owner/repo repositories on github.com or a
 * GitHub Enterprise Server. Lanes clone over HTTPS with the token sent as an
 * extra header through git's environment configuration (as actions/checkout
 * does), so no credential lands in a URL or in .git/config. Each lane has one
 * pull request, found again by its head branch, so a re-run updates it instead
 * of opening another. Every read is fresh: the report and the dependency
 * checkpoints trust GitHub, not what a lane said about itself.
 */
import type { LaneSpec } from '../core/model.js';
import type { CiConclusion, LaneRecord } from '../core/model.js';
import type {
  CiVerdict,
  CloseResult,
  Forge,
  ForgeCapabilities,
  Logger,
  MergeResult,
  PrView,
  PublishInput,
  PublishResult,
  TargetCheck,
  WorkflowWrites,
} from '../ports.js';
import { reviewState, type ReviewLike } from '../core/prs.js';
import { redact } from '../util/secrets.js';
import { combineCi, combineRequired, describeFailures, describePending, missingRequired, type CheckRunLike, type StatusLike } from './ci.js';
import { basicCredential, classicScopes, maskToken, resolveApiUrl, serverUrlFor, type FleetOctokit } from './octokit.js';
import { staticToken, type TokenCredential } from './credential.js';
import { changedPathsBetween, TreeTooLarge } from './trees.js';
import { checkRepos } from './validate.js';

export interface GitHubForgeOptions {
  octokit: FleetOctokit;
  /** The token the octokit uses; git sends it as an extra header. */
  token: string;
  /** When the token may change (an App installation token Fleet renews): git's header is built from its current token per call. */
  credential?: TokenCredential;
  /** The fleet's name: PR bodies carry `<!-- fleet:<name>:<lane> -->`. */
  name: string;
  /**
   * Where repositories are cloned from (`<serverUrl>/<owner>/<repo>.git`).
   * Default: GITHUB_SERVER_URL when the octokit talks to the environment's
   * API, else derived from the octokit's API URL (api.github.com → github.com,
   * https://HOST/api/v3 → https://HOST).
   */
  serverUrl?: string;
  allowForks?: boolean;
  /**
   * Fork mode (pr.fork): each lane branch is pushed to a fork of its target (in `owner`, an organization, or the
   * token's user) and its PR opened from there.
   */
  fork?: { owner?: string };
  /** How long a new fork may take to show its branch before the lane gives up (default 60 s). */
  forkReadyMs?: number;
  logger?: Logger;
  /** How long `merge` waits for GitHub to compute `mergeable` (default 60 s). */
  mergeableWaitMs?: number;
  /** Interval between reads of a PR's `mergeable` (default 2 s). */
  pollMs?: number;
  /** First interval between CI reads in `waitForCi`; it grows by half each time (default 10 s). */
  ciPollMs?: number;
  /** Longest interval between CI reads (default 60 s). */
  ciMaxPollMs?: number;
  /**
   * How long `waitForCi` keeps reading "no CI at all" as "CI has not started
   * yet" when the repository shows signs of CI (workflows, checks on the
   * parent commit) (default 2 min; capped by the timeout).
   */
  ciStartGraceMs?: number;
  /** Test seams. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/** GitHub's compare lists at most 300 files: from there on the answer is incomplete. */
const COMPARE_CAP = 300;
type DiffEntry = { filename: string; previous_filename?: string };

/** The paths a compare's files touch, sorted; a rename gives both. */
function filePaths(files: readonly DiffEntry[]): string[] {
  const out = new Set<string>();
  for (const f of files) {
    out.add(f.filename);
    if (f.previous_filename) out.add(f.previous_filename);
  }
  return [...out].sort();
}

/** An error from the forge: names the repository and what was being done; never carries the token. */
export class GitHubForgeError extends Error {
  constructor(
    readonly repo: string,
    readonly action: string,
    readonly status: number,
    detail: string,
  ) {
    super(redact(`${repo}: ${action} failed${status ? ` (${status})` : ''}: ${detail}`));
    this.name = 'GitHubForgeError';
  }
}

type Pull = {
  number: number;
  node_id: string;
  html_url: string;
  title: string;
  body: string | null;
  state: string;
  draft?: boolean;
  merged?: boolean;
  merged_at?: string | null;
  mergeable?: boolean | null;
  mergeable_state?: string;
  merge_commit_sha?: string | null;
  created_at?: string;
  head: { sha: string; ref: string; repo?: { full_name: string } | null };
  base: { ref: string };
  user: { login: string } | null;
  labels: Array<{ name?: string } | string>;
  assignees?: Array<{ login: string }> | null;
  requested_reviewers?: Array<{ login: string }> | null;
  requested_teams?: Array<{ slug: string }> | null;
};

/** A PublishResult plus what could not be applied (labels, reviewers, assignees), for the lane's evidence notes. */
export interface GitHubPublishResult extends PublishResult {
  notes: string[];
}

export const MERGE_METHODS = ['merge', 'squash', 'rebase', 'fast-forward'] as const;

function statusOf(err: unknown): number {
  return (err as { status?: number }).status ?? 0;
}

function messageOf(err: unknown): string {
  const e = err as { message?: string; response?: { data?: { message?: string; errors?: Array<{ message?: string } | string> } } };
  const data = e.response?.data;
  const detail = data?.errors
    ?.map((x) => (typeof x === 'string' ? x : x.message))
    .filter(Boolean)
    .join('; ');
  const msg = data?.message ? `${data.message}${detail ? `: ${detail}` : ''}` : String(e.message ?? err);
  return redact(msg.split('\n')[0]!.replace(/\s*-\s*https:\/\/docs\.github\.com\S*/g, '')).slice(0, 500);
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A commit's CI in one read: every check suite's latest run per name, and the latest status per context. An oid's
 * object is a GitObject (an interface), so the commit's fields sit in an inline fragment. Pages are kept small (20
 * suites, 50 runs each): GitHub charges a GraphQL query by the connections it may return, and a commit with more
 * falls back to the REST reads. https://docs.github.com/graphql/reference/objects#commit
 */
const CI_FIELDS =
  'checkSuites(first: 20) { totalCount nodes { checkRuns(first: 50, filterBy: { checkType: LATEST }) { totalCount nodes { databaseId name status conclusion startedAt } } } } status { contexts { context state createdAt } }';

/** Commits a CI query reads at once (aliases), well inside GitHub's node and cost limits. */
const CI_BATCH = 20;

type CiRead = { runs: CheckRunLike[]; statuses: StatusLike[] };
type CiAnswer = {
  object: {
    checkSuites: {
      totalCount: number;
      nodes: Array<{
        checkRuns: {
          totalCount: number;
          nodes: Array<{ databaseId: number | null; name: string; status: string; conclusion: string | null; startedAt: string | null }>;
        } | null;
      }>;
    } | null;
    status: { contexts: Array<{ context: string; state: string; createdAt: string }> } | null;
  } | null;
};

/** One alias's answer as the REST reads give it, or undefined when it is not the whole of the commit's CI. */
function ciFromGraphql(answer: CiAnswer | null | undefined): CiRead | undefined {
  const commit = answer?.object;
  const suites = commit?.checkSuites;
  if (!commit || !suites || suites.totalCount > suites.nodes.length) return undefined;
  const runs: CheckRunLike[] = [];
  for (const suite of suites.nodes) {
    if (!suite.checkRuns || suite.checkRuns.totalCount > suite.checkRuns.nodes.length) return undefined;
    for (const r of suite.checkRuns.nodes) {
      runs.push({
        id: r.databaseId ?? 0,
        name: r.name,
        status: r.status.toLowerCase(),
        conclusion: r.conclusion?.toLowerCase() ?? null,
        started_at: r.startedAt,
      });
    }
  }
  const statuses = (commit.status?.contexts ?? []).map((c) => ({ context: c.context, state: c.state.toLowerCase(), updated_at: c.createdAt }));
  return { runs, statuses };
}

export function markerFor(name: string, lane: string): string {
  return `<!-- fleet:${name}:${lane} -->`;
}

const MARKER = /<!-- fleet:([^:\s]+):([^\s]+) -->/;

export class GitHubForge implements Forge {
  readonly kind = 'github' as const;
  readonly capabilities: ForgeCapabilities = { ci: 'forge', pullRequests: true, verifiedBy: 'github' };
  readonly serverUrl: string;
  private readonly octokit: FleetOctokit;
  private readonly logger: Logger;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly now: () => number;
  private readonly credential: TokenCredential;
  /** Default branches, read once per repository (a lane's base when the fleet file names none). */
  private readonly defaultBranches = new Map<string, Promise<string>>();
  /** Required checks per repository and base, for CI verdicts (a merge reads them afresh). */
  private readonly requiredSeen = new Map<string, Promise<string[]>>();
  /** Each target's fork (pr.fork), once this process made or found it: where lanes push and open PRs from. */
  private readonly forks = new Map<string, Promise<Repo>>();
  /** Forks lanes' records name (useHeadRepo), by lane: read there, checked first, never pushed to. */
  private readonly recorded = new Map<string, Promise<Repo>>();
  private login: Promise<string> | undefined;
  private workflowAccess: Promise<WorkflowWrites | null> | undefined;

  constructor(private readonly opts: GitHubForgeOptions) {
    if (!opts.token) throw new Error('the GitHub forge needs a token');
    maskToken(opts.token);
    this.octokit = opts.octokit;
    this.logger = opts.logger ?? { info: () => {}, warn: () => {}, error: () => {} };
    this.sleep = opts.sleep ?? defaultSleep;
    this.now = opts.now ?? Date.now;
    this.serverUrl = (opts.serverUrl ?? defaultServerUrl(opts.octokit)).replace(/\/+$/, '');
    this.credential = opts.credential ?? staticToken(opts.token);
  }

  /**
   * Before a git command: an App token near its end is renewed first (`force`: git was refused, 401, so renew
   * now). True when git may try again with a new credential; a PAT never changes.
   */
  async refreshCredential(force = false): Promise<boolean> {
    if (!force) {
      await this.credential.fresh();
      return false;
    }
    const before = this.credential.current();
    const renewed = await this.credential.renew(before);
    return renewed !== null && renewed !== before;
  }

  // -------------------------------------------------------------------------
  // Targets and git
  // -------------------------------------------------------------------------

  checkTargets(lanes: readonly LaneSpec[]): Promise<TargetCheck[]> {
    return checkRepos(this.octokit, lanes, {
      allowForks: this.opts.allowForks ?? false,
      forkMode: this.opts.fork !== undefined,
      cloneUrl: (repo) => this.urlOf(repo),
    });
  }

  /**
   * A GitHub App's installation says whether it has the Workflows permission; a classic PAT names its scopes
   * (classicScopes); a fine-grained PAT says neither, and is only found out by a push GitHub refuses.
   */
  workflowWrites(): Promise<WorkflowWrites | null> {
    this.workflowAccess ??= (async (): Promise<WorkflowWrites | null> => {
      const granted = this.credential.installationPermissions?.();
      if (granted) {
        return {
          allowed: granted.workflows === 'write',
          credential: "the GitHub App's installation",
          fix: 'give the App the Workflows permission (Read and write) in its settings, then accept the new permission on its installation (docs/github-app.md)',
        };
      }
      const scopes = await classicScopes(this.octokit).catch(() => undefined);
      if (scopes === undefined) return null;
      return {
        allowed: scopes.includes('workflow'),
        credential: 'the token (a classic PAT)',
        fix: 'give the token the workflow scope, or use a fine-grained PAT or a GitHub App with the Workflows permission (Read and write)',
      };
    })();
    return this.workflowAccess;
  }

  cloneUrl(lane: LaneSpec): string {
    if (lane.repo_kind !== 'github') throw new Error(redact(`${lane.repo} is not an owner/repo name: forge: github runs GitHub repositories only`));
    return this.urlOf(lane.repo);
  }

  private urlOf(repo: string): string {
    return `${this.serverUrl}/${repo}.git`;
  }

  async headRepo(lane: LaneSpec, opts: { create: boolean }): Promise<{ repo: string; url: string } | undefined> {
    if (!this.opts.fork) return undefined;
    const fork = opts.create ? await this.makeFork(lane) : await this.ownFork(lane);
    return fork ? { repo: `${fork.owner}/${fork.repo}`, url: this.urlOf(`${fork.owner}/${fork.repo}`) } : undefined;
  }

  /**
   * A lane's record names the fork its branch was pushed to. A record is a file anyone could have edited, so the fork
   * is believed only for reading about that lane, and only once GitHub says it is a fork of the target owned by whom
   * Fleet forks into (pr.fork_owner, else the token's user); until then, or when it is not, every read about the lane
   * fails, and the lane is not verified. It never decides where anything is pushed or a PR is opened from.
   */
  useHeadRepo(lane: LaneSpec, repo: string): void {
    const key = `${lane.id}\u0000${lane.repo}`.toLowerCase();
    const [owner, name] = repo.split('/');
    if (!owner || !name || repo.toLowerCase() === lane.repo.toLowerCase() || this.recorded.has(key)) return;
    const checked = this.forkOfTarget(lane, owner, name);
    checked.catch(() => undefined);
    this.recorded.set(key, checked);
  }

  private async forkOfTarget(lane: LaneSpec, owner: string, repo: string): Promise<Repo> {
    const expected = this.opts.fork?.owner ?? (await this.tokenLogin(lane));
    let r: ForkAnswer;
    try {
      r = (await this.octokit.request('GET /repos/{owner}/{repo}', { owner, repo })).data as unknown as ForkAnswer;
    } catch (err) {
      throw this.error(lane, `reading ${owner}/${repo}, the fork the lane's record names`, err);
    }
    if (!isForkOf(r, lane.repo) || r.owner.login.toLowerCase() !== expected.toLowerCase()) {
      throw new GitHubForgeError(
        lane.repo,
        'reading the lane branch',
        0,
        `${owner}/${repo}, named by the lane's record, is not a fork of ${lane.repo} owned by ${expected}`,
      );
    }
    return { owner: r.owner.login, repo: r.name };
  }

  /**
   * The repository a lane branch is read in: the fork the lane's record names (useHeadRepo), else the target, or in
   * fork mode the fork this run made or finds (null when there is none: a dry run makes none).
   */
  private async branchRepo(lane: LaneSpec): Promise<Repo | null> {
    const recorded = this.recorded.get(`${lane.id}\u0000${lane.repo}`.toLowerCase());
    if (recorded) return recorded;
    return this.opts.fork ? this.ownFork(lane) : this.split(lane);
  }

  /**
   * In fork mode, the fork of the lane's target this process made, else the one under the fork owner named as the
   * target (GitHub names a fork otherwise, `-1`, only when the owner has that name taken: only a run that asks for the
   * fork learns that name). Null when there is none.
   */
  private async ownFork(lane: LaneSpec): Promise<Repo | null> {
    const known = this.forks.get(lane.repo.toLowerCase());
    if (known) return known;
    const { repo } = this.split(lane);
    const owner = this.opts.fork?.owner ?? (await this.tokenLogin(lane));
    try {
      const r = (await this.octokit.request('GET /repos/{owner}/{repo}', { owner, repo })).data as unknown as ForkAnswer;
      if (!isForkOf(r, lane.repo)) return null;
      const found = { owner: r.owner.login, repo: r.name };
      if (!this.forks.has(lane.repo.toLowerCase())) this.forks.set(lane.repo.toLowerCase(), Promise.resolve(found));
      return found;
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw this.error(lane, `looking for the fork of ${lane.repo} in ${owner}`, err);
    }
  }

  private tokenLogin(lane: LaneSpec): Promise<string> {
    this.login ??= this.octokit.request('GET /user').then((r) => (r.data as { login: string }).login);
    return this.login.catch((err: unknown) => {
      this.login = undefined;
      throw this.error(lane, "reading the token's user (fork mode forks into it; set pr.fork_owner to fork into an organization)", err);
    });
  }

  /**
   * Forks the lane's target, once per run (`POST …/forks` answers with the fork that exists already, under whatever
   * name it has), and waits until the fork shows its default branch: GitHub makes forks asynchronously.
   */
  private makeFork(lane: LaneSpec): Promise<Repo> {
    const key = lane.repo.toLowerCase();
    let made = this.forks.get(key);
    if (!made) {
      made = this.forkNow(lane);
      this.forks.set(key, made);
      made.catch(() => this.forks.delete(key));
    }
    return made;
  }

  private async forkNow(lane: LaneSpec): Promise<Repo> {
    const { owner, repo } = this.split(lane);
    let fork: ForkAnswer & { default_branch: string };
    try {
      const organization = this.opts.fork?.owner;
      const r = await this.octokit.request('POST /repos/{owner}/{repo}/forks', {
        owner,
        repo,
        default_branch_only: true,
        ...(organization ? { organization } : {}),
      });
      fork = r.data as unknown as typeof fork;
    } catch (err) {
      throw this.error(lane, 'forking', err);
    }
    if (!isForkOf(fork, lane.repo))
      throw new GitHubForgeError(lane.repo, 'forking', 0, `GitHub answered with ${fork.owner.login}/${fork.name}, which is not a fork of ${lane.repo}`);
    const made = { owner: fork.owner.login, repo: fork.name };
    const deadline = this.now() + (this.opts.forkReadyMs ?? 60_000);
    for (let wait = 1_000; ; wait = Math.min(wait * 2, 10_000)) {
      try {
        await this.octokit.request('GET /repos/{owner}/{repo}/git/ref/{ref}', { ...made, ref: `heads/${fork.default_branch}` });
        return made;
      } catch (err) {
        if (statusOf(err) !== 404 && statusOf(err) !== 409) throw this.error(lane, `reading the new fork ${made.owner}/${made.repo}`, err);
        if (this.now() >= deadline)
          throw new GitHubForgeError(
            lane.repo,
            'forking',
            0,
            `the fork ${made.owner}/${made.repo} showed no branch within ${Math.round((this.opts.forkReadyMs ?? 60_000) / 1000)} s; run again later`,
          );
        await this.sleep(wait);
      }
    }
  }

  /**
   * The token as an `http.<origin>/.extraheader` through GIT_CONFIG_COUNT /
   * GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n: it lives only in the environment
   * of the git commands given it. An empty value first resets extra headers
   * inherited from other configuration (git's documented reset), so a header
   * persisted by actions/checkout is not sent twice. Entries already in the
   * environment are kept. Built per call: a renewed token is in the next git command's header.
   */
  gitEnv(): Record<string, string> {
    const inherited = Number.parseInt(process.env.GIT_CONFIG_COUNT ?? '0', 10);
    const n = Number.isInteger(inherited) && inherited > 0 ? inherited : 0;
    const key = `http.${new URL(this.serverUrl).origin}/.extraheader`;
    return {
      GIT_CONFIG_COUNT: String(n + 2),
      [`GIT_CONFIG_KEY_${n}`]: key,
      [`GIT_CONFIG_VALUE_${n}`]: '',
      [`GIT_CONFIG_KEY_${n + 1}`]: key,
      [`GIT_CONFIG_VALUE_${n + 1}`]: `AUTHORIZATION: basic ${basicCredential(this.credential.current())}`,
    };
  }

  // -------------------------------------------------------------------------
  // Reads
  // -------------------------------------------------------------------------

  async branchHead(lane: LaneSpec, branch: string): Promise<string | null> {
    const head = await this.branchRepo(lane);
    if (!head) return null;
    const { owner, repo } = head;
    try {
      const r = await this.octokit.request('GET /repos/{owner}/{repo}/git/ref/{ref}', { owner, repo, ref: `heads/${branch}` });
      return r.data.object.sha;
    } catch (err) {
      // 404: no such branch; 409: the repository is empty.
      if (statusOf(err) === 404 || statusOf(err) === 409) return null;
      throw this.error(lane, `reading branch ${branch}`, err);
    }
  }

  async branchChanges(lane: LaneSpec, base: string, branch: string): Promise<{ head: string; files: string[] } | undefined> {
    // The base and branch come from a lane's result file: one git would refuse as a branch (`a...b`, `owner:branch` of
    // another repository) could make the compare read something else, so it gets the reads one at a time.
    if (/\.\.|:|^-/.test(branch) || !/^[0-9a-f]{40,64}$/.test(base)) return undefined;
    const at = await this.branchRepo(lane);
    if (!at) return undefined;
    let data: { total_commits?: number; commits?: Array<{ sha: string }>; files?: DiffEntry[] };
    try {
      data = (await this.octokit.request('GET /repos/{owner}/{repo}/compare/{basehead}', { ...at, basehead: `${base}...${branch}` })).data as typeof data;
    } catch (err) {
      // No such branch, no common history, an empty repository: the reads one at a time say which.
      if ([404, 409, 422].includes(statusOf(err) ?? 0)) return undefined;
      throw this.error(lane, `comparing ${base.slice(0, 12)}...${branch}`, err);
    }
    // The branch's head is the last of the commits listed (oldest first), when all of them are: at most 250 are.
    const commits = data.commits ?? [];
    const files = data.files ?? [];
    if (!commits.length || data.total_commits !== commits.length || files.length >= COMPARE_CAP) return undefined;
    return { head: commits[commits.length - 1]!.sha, files: filePaths(files) };
  }

  /**
   * Files changed between two commits; a rename gives both paths. One compare
   * call answers for up to 299 files; GitHub's compare lists at most 300 (and a
   * commit's own listing at most 3,000), so from 300 on the two commits' git
   * trees are compared instead, which holds at any size (see trees.ts): what a
   * lane reports is checked against the forge however many files it changed.
   * Null when the forge cannot say (a commit it does not have, a single folder
   * of more than 100,000 entries).
   */
  async changedFiles(lane: LaneSpec, base: string, head: string): Promise<string[] | null> {
    // In fork mode the fork holds both commits (the push carried the base along); the target may hold neither yet.
    const { owner, repo } = (await this.branchRepo(lane)) ?? this.split(lane);
    const what = `${base.slice(0, 12)}...${head.slice(0, 12)}`;
    let files: DiffEntry[];
    try {
      // No paging parameters: pages split the commit list, never the file list (at most 300 files, on the first page).
      const r = await this.octokit.request('GET /repos/{owner}/{repo}/compare/{basehead}', { owner, repo, basehead: `${base}...${head}` });
      files = (r.data as { files?: typeof files }).files ?? [];
    } catch (err) {
      const s = statusOf(err);
      if (s === 404 || s === 422 || s === 409) {
        this.logger.warn(`${lane.repo}: cannot compare ${what}: ${messageOf(err)}`);
        return null;
      }
      throw this.error(lane, `comparing ${what}`, err);
    }
    if (files.length >= COMPARE_CAP) {
      try {
        return await changedPathsBetween(this.octokit, base, head, { owner, repo });
      } catch (err) {
        if (err instanceof TreeTooLarge) {
          this.logger.warn(`${lane.repo}: cannot list the files of ${what}: ${err.message}`);
          return null;
        }
        throw this.error(lane, `comparing the trees of ${what}`, err);
      }
    }
    return filePaths(files);
  }

  // -------------------------------------------------------------------------
  // Pull requests
  // -------------------------------------------------------------------------

  async publish(input: PublishInput): Promise<GitHubPublishResult> {
    const { lane, record } = input;
    const { owner, repo } = this.split(lane);
    if (!record.branch || !record.base_branch) throw new GitHubForgeError(lane.repo, 'opening a pull request', 0, 'the lane has no branch or base branch');
    const marker = markerFor(this.opts.name, lane.id);
    const body = input.body.includes(marker) ? input.body : `${marker}\n${input.body}`;
    const notes: string[] = [];

    // A branch this lane's push created is the head of no open PR (GitHub closes a PR whose head branch is deleted),
    // so the PR is opened straight away; the 422 "already exists" below still adopts one if that ever does not hold.
    // In fork mode the lease was on the target's branch, not the fork's: look first.
    let pr = input.branchCreated && !this.opts.fork ? null : await this.findPull(lane, record.branch, record.base_branch);
    let updated = pr !== null;
    if (!pr) {
      try {
        pr = await this.createPull(lane, input, body, input.draft, notes);
      } catch (err) {
        // Another run opened it between our read and our write: adopt it.
        if (statusOf(err) === 422 && /already exists/i.test(messageOf(err))) {
          pr = await this.findPull(lane, record.branch, record.base_branch);
          updated = true;
        }
        if (!pr) throw this.error(lane, `opening a pull request from ${record.branch}`, err);
      }
    }
    if (updated) {
      const patch: Record<string, string> = {};
      if (pr.title !== input.title) patch.title = input.title;
      if ((pr.body ?? '') !== body) patch.body = body;
      if (pr.base.ref !== record.base_branch) patch.base = record.base_branch;
      if (Object.keys(patch).length) {
        try {
          const r = await this.octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: pr.number, ...patch });
          pr = r.data as unknown as Pull;
        } catch (err) {
          throw this.error(lane, `updating pull request #${pr.number}`, err);
        }
      }
    }
    await this.decorate(lane, pr, input, updated, notes);
    for (const n of notes) this.logger.warn(`${lane.repo}#${pr.number}: ${n}`);
    return { pr_url: pr.html_url, pr_number: pr.number, updated, notes };
  }

  /** The open PR of a lane branch: the one into the lane's base carrying this lane's marker first. */
  private async findPull(lane: LaneSpec, branch: string, base: string): Promise<Pull | null> {
    const { owner, repo } = this.split(lane);
    const head = await this.branchRepo(lane);
    if (!head) return null;
    let pulls: Pull[];
    try {
      pulls = (await this.octokit.paginate('GET /repos/{owner}/{repo}/pulls', {
        owner,
        repo,
        head: `${head.owner}:${branch}`,
        state: 'open',
        per_page: 100,
      })) as unknown as Pull[];
    } catch (err) {
      throw this.error(lane, `looking for the pull request of ${branch}`, err);
    }
    // Defensive: only PRs whose head really is this branch (of the fork, in fork mode).
    pulls = pulls.filter((p) => p.head.ref === branch && fromRepo(p, head, lane));
    if (!pulls.length) return null;
    const ours = (p: Pull) => {
      const m = MARKER.exec(p.body ?? '');
      return m ? (m[1] === this.opts.name && m[2] === lane.id ? 2 : 0) : 1;
    };
    const ranked = [...pulls].sort((a, b) => Number(b.base.ref === base) - Number(a.base.ref === base) || ours(b) - ours(a) || a.number - b.number);
    const best = ranked[0]!;
    if (ours(best) === 0) {
      const m = MARKER.exec(best.body ?? '')!;
      throw new GitHubForgeError(
        lane.repo,
        'publishing',
        0,
        `pull request #${best.number} from ${branch} belongs to fleet ${m[1]} lane ${m[2]}; give this fleet another name or branch template`,
      );
    }
    return best;
  }

  private async createPull(lane: LaneSpec, input: PublishInput, body: string, draft: boolean, notes: string[]): Promise<Pull> {
    const { owner, repo } = this.split(lane);
    // In fork mode the fork this lane pushed to; a fork a record names never decides where a PR comes from.
    const fork = this.opts.fork ? await this.ownFork(lane) : null;
    if (this.opts.fork && !fork) throw new GitHubForgeError(lane.repo, 'opening a pull request', 0, 'fork mode, and the target has no fork to open it from');
    try {
      const r = await this.octokit.request('POST /repos/{owner}/{repo}/pulls', {
        owner,
        repo,
        title: input.title,
        // From a fork: owner:branch, and the target's maintainers may push to it (GitHub's default for the web form).
        head: fork ? `${fork.owner}:${input.record.branch!}` : input.record.branch!,
        base: input.record.base_branch!,
        body,
        draft,
        ...(fork ? { maintainer_can_modify: true } : {}),
      });
      return r.data as unknown as Pull;
    } catch (err) {
      // Draft PRs need a plan that has them (private repositories on GitHub Free do not).
      if (draft && statusOf(err) === 422 && /draft/i.test(messageOf(err))) {
        notes.push(`opened as a regular PR: the repository does not allow drafts (${messageOf(err)})`);
        return this.createPull(lane, input, body, false, notes);
      }
      throw err;
    }
  }

  /** Labels, reviewers and assignees: only what is missing; a refusal is a note, not a failed lane (the PR exists). */
  private async decorate(lane: LaneSpec, pr: Pull, input: PublishInput, updated: boolean, notes: string[]): Promise<void> {
    const { owner, repo } = this.split(lane);
    const n = pr.number;
    const have = new Set(pr.labels.map((l) => (typeof l === 'string' ? l : (l.name ?? '')).toLowerCase()));
    const labels = unique(input.labels).filter((l) => !have.has(l.toLowerCase()));
    if (labels.length) {
      try {
        await this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', { owner, repo, issue_number: n, labels });
      } catch (err) {
        notes.push(`labels ${labels.join(', ')} not added: ${messageOf(err)}`);
      }
    }

    const author = pr.user?.login.toLowerCase();
    const requested = new Set((pr.requested_reviewers ?? []).map((u) => u.login.toLowerCase()));
    const teamsRequested = new Set((pr.requested_teams ?? []).map((t) => t.slug.toLowerCase()));
    let reviewers = unique(input.reviewers).filter((r) => !requested.has(r.toLowerCase()));
    const skippedAuthor = reviewers.filter((r) => r.toLowerCase() === author);
    if (skippedAuthor.length) notes.push(`${skippedAuthor[0]} opened the PR and cannot review it`);
    reviewers = reviewers.filter((r) => r.toLowerCase() !== author);
    // team_reviewers are team slugs; accept org/team too.
    const teams = unique(input.team_reviewers.map((t) => t.split('/').pop()!)).filter((t) => !teamsRequested.has(t.toLowerCase()));
    if (updated && reviewers.length) {
      // On a re-run, do not ask again people who already reviewed (GitHub drops them from requested_reviewers).
      try {
        const reviews = (await this.octokit.paginate('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
          owner,
          repo,
          pull_number: n,
          per_page: 100,
        })) as Array<{ user: { login: string } | null }>;
        const reviewed = new Set(reviews.map((r) => r.user?.login.toLowerCase()).filter(Boolean));
        reviewers = reviewers.filter((r) => !reviewed.has(r.toLowerCase()));
      } catch (err) {
        notes.push(`could not read the reviews: ${messageOf(err)}`);
      }
    }
    if (reviewers.length || teams.length) {
      try {
        await this.octokit.request('POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers', {
          owner,
          repo,
          pull_number: n,
          ...(reviewers.length ? { reviewers } : {}),
          ...(teams.length ? { team_reviewers: teams } : {}),
        });
      } catch (err) {
        notes.push(`review not requested from ${[...reviewers, ...teams.map((t) => `team ${t}`)].join(', ')}: ${messageOf(err)}`);
      }
    }

    const assigned = new Set((pr.assignees ?? []).map((u) => u.login.toLowerCase()));
    const assignees = unique(input.assignees).filter((a) => !assigned.has(a.toLowerCase()));
    if (assignees.length) {
      try {
        const r = await this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/assignees', { owner, repo, issue_number: n, assignees });
        // GitHub silently ignores people who cannot be assigned.
        const now = new Set((r.data.assignees ?? []).map((u) => u.login.toLowerCase()));
        const ignored = assignees.filter((a) => !now.has(a.toLowerCase()));
        if (ignored.length) notes.push(`GitHub did not assign ${ignored.join(', ')} (no access to the repository?)`);
      } catch (err) {
        notes.push(`assignees ${assignees.join(', ')} not added: ${messageOf(err)}`);
      }
    }
  }

  async isMerged(lane: LaneSpec, record: LaneRecord): Promise<boolean> {
    if (record.pr_number === null) return false;
    const { owner, repo } = this.split(lane);
    try {
      const pr = (await this.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: record.pr_number }))
        .data as unknown as Pull;
      return pr.merged === true;
    } catch (err) {
      throw this.error(lane, `reading pull request #${record.pr_number}`, err);
    }
  }

  async setDraft(lane: LaneSpec, prNumber: number, draft: boolean): Promise<void> {
    const { owner, repo } = this.split(lane);
    let pr: Pull;
    try {
      pr = (await this.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: prNumber })).data as unknown as Pull;
    } catch (err) {
      throw this.error(lane, `reading pull request #${prNumber}`, err);
    }
    if (Boolean(pr.draft) === draft || pr.state !== 'open') return;
    const mutation = draft
      ? 'mutation FleetToDraft($id: ID!) { convertPullRequestToDraft(input: { pullRequestId: $id }) { pullRequest { isDraft } } }'
      : 'mutation FleetReady($id: ID!) { markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { isDraft } } }';
    try {
      await this.octokit.graphql(mutation, { id: pr.node_id });
    } catch (err) {
      throw this.error(lane, `${draft ? 'turning' : 'marking'} pull request #${prNumber} ${draft ? 'into a draft' : 'ready for review'}`, err);
    }
  }

  // -------------------------------------------------------------------------
  // CI
  // -------------------------------------------------------------------------

  /** Check runs (the latest per name) and the combined status of a commit, every page. */
  async readCi(lane: LaneSpec, sha: string): Promise<{ runs: CheckRunLike[]; statuses: StatusLike[] }> {
    const { owner, repo } = this.split(lane);
    let runs: CheckRunLike[];
    try {
      runs = (await this.octokit.paginate('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
        owner,
        repo,
        ref: sha,
        filter: 'latest',
        per_page: 100,
      })) as CheckRunLike[];
    } catch (err) {
      throw this.error(lane, `reading the check runs of ${sha.slice(0, 12)}`, err);
    }
    const statuses: StatusLike[] = [];
    try {
      for (let page = 1; ; page++) {
        const r = await this.octokit.request('GET /repos/{owner}/{repo}/commits/{ref}/status', { owner, repo, ref: sha, per_page: 100, page });
        statuses.push(...(r.data.statuses as StatusLike[]));
        if (r.data.statuses.length < 100 || statuses.length >= r.data.total_count) break;
      }
    } catch (err) {
      throw this.error(lane, `reading the commit status of ${sha.slice(0, 12)}`, err);
    }
    return { runs, statuses };
  }

  /**
   * Commits' check runs and statuses in one GraphQL read (`Repository.object(oid:)` → `Commit.checkSuites` and
   * `Commit.status`, one alias per commit, CI_BATCH a query), where the REST reads take two requests a commit. An
   * entry is undefined where that read cannot answer for certain (more suites or runs than a page holds, a field the
   * token may not read, any error): the REST reads answer for it, as before. The verdict only: names, states and start
   * times (a failure's details are the REST reads' in waitForCi).
   */
  private async readCiBatch(items: ReadonlyArray<{ lane: LaneSpec; commit: string }>): Promise<Array<CiRead | undefined>> {
    const out: Array<CiRead | undefined> = items.map(() => undefined);
    for (let from = 0; from < items.length; from += CI_BATCH) {
      const chunk = items.slice(from, from + CI_BATCH);
      const vars: Record<string, string> = {};
      const decls: string[] = [];
      const fields: string[] = [];
      chunk.forEach(({ lane, commit }, i) => {
        if (!/^[0-9a-f]{40}$/.test(commit)) return;
        const { owner, repo } = this.split(lane);
        Object.assign(vars, { [`o${i}`]: owner, [`n${i}`]: repo, [`s${i}`]: commit });
        decls.push(`$o${i}: String!, $n${i}: String!, $s${i}: GitObjectID!`);
        fields.push(`c${i}: repository(owner: $o${i}, name: $n${i}) { object(oid: $s${i}) { ...on Commit { ${CI_FIELDS} } } }`);
      });
      if (!fields.length) continue;
      let data: Record<string, CiAnswer | null | undefined>;
      const errored = new Set<string>();
      try {
        data = await this.octokit.graphql<Record<string, CiAnswer | null>>(`query FleetCi(${decls.join(', ')}) { ${fields.join(' ')} }`, vars);
      } catch (err) {
        // A partial answer (one repository not found, a field the token may not read): the aliases an error names are
        // read over REST, the others stand; no answer at all, and the whole chunk is.
        const partial = err as { data?: Record<string, CiAnswer | null>; errors?: Array<{ path?: ReadonlyArray<string | number> }> };
        if (!partial.data || !Array.isArray(partial.errors)) continue;
        data = partial.data;
        for (const e of partial.errors) errored.add(String(e.path?.[0] ?? '*'));
        if (errored.has('*')) continue;
      }
      chunk.forEach((_, i) => {
        if (!errored.has(`c${i}`)) out[from + i] = ciFromGraphql(data[`c${i}`]);
      });
    }
    return out;
  }

  /** Many lanes' CI verdicts at once (the report's second read): undefined where the batch could not answer. */
  async ciConclusions(items: ReadonlyArray<{ lane: LaneSpec; commit: string }>): Promise<Array<CiConclusion | undefined>> {
    const reads = await this.readCiBatch(items);
    return Promise.all(
      reads.map(async (batched, i) => {
        // What the batch could not answer is read over REST here, not asked of GraphQL again lane by lane.
        const read = batched ?? (await this.readCi(items[i]!.lane, items[i]!.commit).catch(() => undefined));
        if (!read) return undefined;
        const seen = combineCi(read.runs, read.statuses);
        if (seen === 'failure' || seen === 'pending') return seen;
        try {
          return combineRequired(read.runs, read.statuses, await this.requiredForCi(items[i]!.lane));
        } catch {
          return undefined;
        }
      }),
    );
  }

  /** The CI verdict, where a check the base branch requires and that has not reported yet keeps it `pending`. */
  async ciConclusion(lane: LaneSpec, commit: string): Promise<CiConclusion> {
    const [once] = await this.readCiBatch([{ lane, commit }]);
    const { runs, statuses } = once ?? (await this.readCi(lane, commit));
    // The base's required checks only ever turn a green or empty CI into pending: red or running CI needs no read of them.
    const seen = combineCi(runs, statuses);
    if (seen === 'failure' || seen === 'pending') return seen;
    return combineRequired(runs, statuses, await this.requiredForCi(lane));
  }

  async waitForCi(lane: LaneSpec, commit: string, timeoutMs: number): Promise<CiVerdict> {
    const start = this.now();
    const deadline = start + Math.max(0, timeoutMs);
    const maxPoll = this.opts.ciMaxPollMs ?? 60_000;
    let delay = Math.min(this.opts.ciPollMs ?? 10_000, maxPoll);
    let expectCi: boolean | undefined;
    // Checks the base requires are waited for whatever the grace: GitHub will not merge without them.
    const required = await this.requiredForCi(lane);
    for (;;) {
      const { runs, statuses } = await this.readCi(lane, commit);
      const conclusion = combineRequired(runs, statuses, required);
      if (conclusion === 'failure') return { conclusion, failures: describeFailures(runs, statuses) };
      if (conclusion === 'success') return { conclusion, failures: '' };
      const now = this.now();
      if (conclusion === 'none') {
        expectCi ??= await this.expectsCi(lane, commit);
        const grace = Math.min(this.opts.ciStartGraceMs ?? 120_000, timeoutMs);
        if (!expectCi || now - start >= grace) return { conclusion: 'none', failures: '' };
      }
      if (now >= deadline) {
        const waited = Math.round((now - start) / 1000);
        return { conclusion: 'pending', failures: describePending(runs, statuses, required) || `no CI result after ${waited}s` };
      }
      await this.sleep(Math.max(0, Math.min(delay, deadline - now)));
      delay = Math.min(Math.round(delay * 1.5), maxPoll);
    }
  }

  /** The lane's base branch: the one the fleet file names, else the repository's default branch. */
  private baseOf(lane: LaneSpec): Promise<string> {
    if (lane.base) return Promise.resolve(lane.base);
    const { owner, repo } = this.split(lane);
    let branch = this.defaultBranches.get(lane.repo);
    if (!branch) {
      branch = this.octokit.request('GET /repos/{owner}/{repo}', { owner, repo }).then(
        (r) => r.data.default_branch,
        (err: unknown) => {
          this.defaultBranches.delete(lane.repo);
          throw this.error(lane, 'reading the default branch', err);
        },
      );
      this.defaultBranches.set(lane.repo, branch);
    }
    return branch;
  }

  /** The lane base's required checks, read once per repository and base by this forge (lanes of one repository share them). */
  private async requiredForCi(lane: LaneSpec): Promise<string[]> {
    const base = await this.baseOf(lane);
    const key = `${lane.repo}#${base}`;
    let seen = this.requiredSeen.get(key);
    if (!seen) {
      seen = this.requiredChecks(lane, base);
      this.requiredSeen.set(key, seen);
      seen.catch(() => this.requiredSeen.delete(key));
    }
    return seen;
  }

  /**
   * The status checks a PR into `base` must pass, from classic branch
   * protection (shown to anyone who can read the branch) and from the
   * repository's rulesets. A rules endpoint GitHub Enterprise Server does not
   * have yet (404) adds nothing; any other failure throws, so a caller that
   * merges fails closed.
   */
  async requiredChecks(lane: LaneSpec, base: string): Promise<string[]> {
    const { owner, repo } = this.split(lane);
    const names = new Set<string>();
    try {
      const b = await this.octokit.request('GET /repos/{owner}/{repo}/branches/{branch}', { owner, repo, branch: base });
      const rsc = b.data.protection?.required_status_checks;
      for (const c of rsc?.contexts ?? []) names.add(c);
      for (const c of rsc?.checks ?? []) names.add(c.context);
    } catch (err) {
      if (statusOf(err) !== 404) throw this.error(lane, `reading the protection of ${base}`, err);
    }
    try {
      const rules = (await this.octokit.paginate('GET /repos/{owner}/{repo}/rules/branches/{branch}', { owner, repo, branch: base, per_page: 100 })) as Array<{
        type: string;
        parameters?: { required_status_checks?: Array<{ context: string }> };
      }>;
      for (const rule of rules) if (rule.type === 'required_status_checks') for (const c of rule.parameters?.required_status_checks ?? []) names.add(c.context);
    } catch (err) {
      if (statusOf(err) !== 404) throw this.error(lane, `reading the rules of ${base}`, err);
    }
    return [...names].sort();
  }

  /**
   * The last word before a merge, read afresh on the lane's commit: every
   * check the base requires has reported and CI is green; "no CI at all" only
   * when the repository shows no sign of CI that may still come. Null when
   * the merge may go ahead, else why not.
   */
  private async mergeGate(lane: LaneSpec, base: string, commit: string, number: number): Promise<MergeResult | null> {
    const short = commit.slice(0, 12);
    let required: string[];
    let ci: { runs: CheckRunLike[]; statuses: StatusLike[] };
    try {
      required = await this.requiredChecks(lane, base);
      ci = await this.readCi(lane, commit);
    } catch (err) {
      return { status: 'pending', detail: `#${number} not merged: could not read its CI and the required checks of ${base} (${(err as Error).message})` };
    }
    const { runs, statuses } = ci;
    const conclusion = combineRequired(runs, statuses, required);
    if (conclusion === 'failure')
      return { status: 'blocked', detail: `#${number} not merged: CI failed on ${short}: ${describeFailures(runs, statuses, 300).split('\n')[0]}` };
    const missing = missingRequired(runs, statuses, required);
    if (missing.length)
      return {
        status: 'pending',
        detail: `#${number} not merged: required check${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of ${base} ha${missing.length > 1 ? 've' : 's'} not reported on ${short}`,
      };
    if (conclusion === 'pending')
      return { status: 'pending', detail: `#${number} not merged: CI is still running on ${short} (${describePending(runs, statuses)})` };
    if (conclusion === 'none' && (await this.expectsCi(lane, commit))) {
      return {
        status: 'pending',
        detail: `#${number} not merged: no CI has reported on ${short} yet, and the repository has workflows or CI on earlier commits`,
      };
    }
    return null;
  }

  /**
   * Whether "no CI at all" on a fresh commit may just mean CI has not started:
   * the repository has workflows, or its parent commit has checks or statuses.
   * When it cannot tell, it assumes CI may come.
   */
  private async expectsCi(lane: LaneSpec, commit: string): Promise<boolean> {
    const { owner, repo } = this.split(lane);
    // A guess, not a verdict: no retries (a failure just means "assume CI may come").
    const once = { request: { retries: 0 } };
    try {
      const wf = await this.octokit.request('GET /repos/{owner}/{repo}/actions/workflows', { owner, repo, per_page: 100, ...once });
      if (wf.data.workflows.some((w) => w.state === 'active')) return true;
      const c = await this.octokit.request('GET /repos/{owner}/{repo}/commits/{ref}', { owner, repo, ref: commit, per_page: 1, ...once });
      const parent = c.data.parents[0]?.sha;
      if (!parent) return false;
      const { runs, statuses } = await this.readCi(lane, parent);
      return runs.length + statuses.length > 0;
    } catch {
      return true;
    }
  }

  // -------------------------------------------------------------------------
  // Merge
  // -------------------------------------------------------------------------

  async merge(lane: LaneSpec, record: LaneRecord, method: string): Promise<MergeResult> {
    const { owner, repo } = this.split(lane);
    if (!record.commit || !record.branch) return { status: 'failed', detail: 'nothing to merge: the lane has no commit' };
    if (!(MERGE_METHODS as readonly string[]).includes(method))
      return { status: 'failed', detail: `unknown merge method ${method} (merge, squash, rebase or fast-forward)` };
    const short = record.commit.slice(0, 12);

    let number = record.pr_number;
    if (number === null) {
      const found = record.base_branch ? await this.findPull(lane, record.branch, record.base_branch) : null;
      if (!found) return { status: 'blocked', detail: `no open pull request from ${record.branch}` };
      number = found.number;
    }

    // GitHub computes `mergeable` lazily: the first reads after a push answer null.
    const deadline = this.now() + (this.opts.mergeableWaitMs ?? 60_000);
    let pr: Pull;
    for (;;) {
      try {
        pr = (await this.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: number })).data as unknown as Pull;
      } catch (err) {
        return { status: 'failed', detail: this.error(lane, `reading pull request #${number}`, err).message };
      }
      if (pr.merged || pr.merged_at) {
        return pr.head.sha === record.commit
          ? { status: 'merged', detail: `#${number} was already merged${pr.merge_commit_sha ? ` as ${pr.merge_commit_sha.slice(0, 12)}` : ''}` }
          : { status: 'blocked', detail: `#${number} was merged at ${pr.head.sha.slice(0, 12)}, not at the lane's ${short}` };
      }
      if (pr.state !== 'open') return { status: 'blocked', detail: `#${number} is closed` };
      if (pr.head.sha !== record.commit) {
        return { status: 'blocked', detail: `#${number}'s head is ${pr.head.sha.slice(0, 12)}, not the lane's ${short}: someone pushed to ${record.branch}` };
      }
      if (pr.draft) return { status: 'blocked', detail: `#${number} is a draft` };
      if (pr.mergeable !== null && pr.mergeable !== undefined) break;
      if (this.now() >= deadline) {
        return {
          status: 'pending',
          detail: `GitHub had not worked out whether #${number} can merge after ${Math.round((this.opts.mergeableWaitMs ?? 60_000) / 1000)}s`,
        };
      }
      await this.sleep(this.opts.pollMs ?? 2000);
    }
    if (pr.mergeable === false) {
      return { status: 'blocked', detail: `#${number} conflicts with ${pr.base.ref}${pr.mergeable_state ? ` (mergeable_state: ${pr.mergeable_state})` : ''}` };
    }
    // An admin token may bypass branch protection, and a repository may have CI but no required checks: Fleet checks itself.
    const gate = await this.mergeGate(lane, pr.base.ref, record.commit, number);
    if (gate) return gate;

    if (method === 'fast-forward') return this.fastForward(lane, pr, record.commit);
    try {
      const r = await this.octokit.request('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge', {
        owner,
        repo,
        pull_number: number,
        merge_method: method as 'merge' | 'squash' | 'rebase',
        sha: record.commit,
      });
      if (!r.data.merged) return { status: 'blocked', detail: `GitHub did not merge #${number}: ${redact(r.data.message)}` };
      return { status: 'merged', detail: `#${number} merged (${method}) as ${r.data.sha.slice(0, 12)}` };
    } catch (err) {
      const s = statusOf(err);
      const why = messageOf(err);
      if (s === 405) return { status: 'blocked', detail: `GitHub refused to merge #${number} (405): ${why}` };
      if (s === 409) return { status: 'blocked', detail: `#${number}'s head moved while merging (409): ${why}` };
      if (s === 422) return { status: 'blocked', detail: `GitHub cannot merge #${number} by ${method} (422): ${why}` };
      return { status: 'failed', detail: this.error(lane, `merging #${number}`, err).message };
    }
  }

  /** A true fast-forward: move the base branch to the lane commit; GitHub refuses (422) when that is not a fast-forward. */
  private async fastForward(lane: LaneSpec, pr: Pull, commit: string): Promise<MergeResult> {
    const { owner, repo } = this.split(lane);
    try {
      await this.octokit.request('PATCH /repos/{owner}/{repo}/git/refs/{ref}', { owner, repo, ref: `heads/${pr.base.ref}`, sha: commit, force: false });
      return { status: 'merged', detail: `${pr.base.ref} fast-forwarded to ${commit.slice(0, 12)} (#${pr.number})` };
    } catch (err) {
      const s = statusOf(err);
      if (s === 422 || s === 409) return { status: 'blocked', detail: `${pr.base.ref} cannot be fast-forwarded to ${commit.slice(0, 12)}: ${messageOf(err)}` };
      return { status: 'failed', detail: this.error(lane, `fast-forwarding ${pr.base.ref}`, err).message };
    }
  }

  // -------------------------------------------------------------------------
  // After the run (`fleet prs`)
  // -------------------------------------------------------------------------

  /**
   * The lane's PR in any state, found by its head branch as publish finds it (so one an earlier run opened is found
   * without its number): open first, then the record's number, then into the lane's base, then ours by the marker;
   * among open ones the oldest (publish's pick), among closed ones the newest. A PR from the branch carrying
   * another fleet's marker is not this lane's. When the listing shows none, the record's number is read directly.
   */
  private async locatePull(lane: LaneSpec, record: LaneRecord): Promise<Pull | null> {
    const { owner, repo } = this.split(lane);
    const branch = record.branch ?? lane.branch;
    const head = await this.branchRepo(lane);
    if (!head) return null;
    let pulls: Pull[];
    try {
      pulls = (await this.octokit.paginate('GET /repos/{owner}/{repo}/pulls', {
        owner,
        repo,
        head: `${head.owner}:${branch}`,
        state: 'all',
        per_page: 100,
      })) as unknown as Pull[];
    } catch (err) {
      throw this.error(lane, `looking for the pull request of ${branch}`, err);
    }
    pulls = pulls.filter((p) => p.head.ref === branch && fromRepo(p, head, lane));
    const mark = (p: Pull): number => {
      const m = MARKER.exec(p.body ?? '');
      return m ? (m[1] === this.opts.name && m[2] === lane.id ? 2 : 0) : 1;
    };
    const ours = pulls.filter((p) => mark(p) > 0);
    if (pulls.length && !ours.length) {
      const m = MARKER.exec(pulls[0]!.body ?? '')!;
      throw new GitHubForgeError(
        lane.repo,
        'reading pull requests',
        0,
        `pull request #${pulls[0]!.number} from ${branch} belongs to fleet ${m[1]} lane ${m[2]}, not to this lane`,
      );
    }
    const base = record.base_branch ?? lane.base;
    const open = (p: Pull) => Number(p.state === 'open');
    ours.sort(
      (a, b) =>
        open(b) - open(a) ||
        Number(b.number === record.pr_number) - Number(a.number === record.pr_number) ||
        Number(b.base.ref === base) - Number(a.base.ref === base) ||
        mark(b) - mark(a) ||
        (open(a) ? a.number - b.number : b.number - a.number),
    );
    if (ours.length) return ours[0]!;
    if (record.pr_number === null) return null;
    try {
      const pr = (await this.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: record.pr_number }))
        .data as unknown as Pull;
      return pr.head.ref === branch && fromRepo(pr, head, lane) ? pr : null;
    } catch (err) {
      if (statusOf(err) === 404) return null;
      throw this.error(lane, `reading pull request #${record.pr_number}`, err);
    }
  }

  async readPr(lane: LaneSpec, record: LaneRecord): Promise<PrView | null> {
    const { owner, repo } = this.split(lane);
    const branch = record.branch ?? lane.branch;
    const found = await this.locatePull(lane, record);
    if (!found) {
      // A pushed branch with no PR (the PR was never opened, or a person deleted it … GitHub keeps PRs, so: never opened).
      const head = await this.branchHead(lane, branch);
      if (!head) return null;
      const base = record.base_branch ?? lane.base ?? null;
      return {
        number: null,
        url: null,
        state: 'branch',
        draft: false,
        ci: await this.ciConclusion(base ? { ...lane, base } : lane, head),
        review: null,
        mergeable: null,
        mergeable_state: null,
        created_at: null,
        head_branch: branch,
        head_sha: head,
        base_branch: base,
        marked: true,
        branch_head: head,
      };
    }
    if (found.state !== 'open') {
      return {
        number: found.number,
        url: found.html_url,
        state: found.merged || found.merged_at ? 'merged' : 'closed',
        draft: Boolean(found.draft),
        ci: null,
        review: null,
        mergeable: null,
        mergeable_state: null,
        created_at: found.created_at ?? null,
        head_branch: branch,
        head_sha: found.head.sha,
        base_branch: found.base.ref,
        marked: this.carriesMarker(found, lane),
        branch_head: await this.branchHead(lane, branch),
      };
    }
    // The listing has no `mergeable`: only the PR's own read has it (null while GitHub works it out).
    let pr: Pull;
    try {
      pr = (await this.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: found.number })).data as unknown as Pull;
    } catch (err) {
      throw this.error(lane, `reading pull request #${found.number}`, err);
    }
    let reviews: ReviewLike[];
    try {
      reviews = (await this.octokit.paginate('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews', {
        owner,
        repo,
        pull_number: pr.number,
        per_page: 100,
      })) as ReviewLike[];
    } catch (err) {
      throw this.error(lane, `reading the reviews of #${pr.number}`, err);
    }
    const requested = (pr.requested_reviewers?.length ?? 0) + (pr.requested_teams?.length ?? 0);
    return {
      number: pr.number,
      url: pr.html_url,
      state: pr.merged || pr.merged_at ? 'merged' : pr.state === 'open' ? 'open' : 'closed',
      draft: Boolean(pr.draft),
      ci: await this.ciConclusion({ ...lane, base: pr.base.ref }, pr.head.sha),
      review: reviewState(reviews, requested),
      mergeable: pr.mergeable ?? null,
      mergeable_state: pr.mergeable_state ?? null,
      created_at: pr.created_at ?? null,
      head_branch: branch,
      head_sha: pr.head.sha,
      base_branch: pr.base.ref,
      marked: this.carriesMarker(pr, lane),
      branch_head: pr.state === 'open' ? pr.head.sha : await this.branchHead(lane, branch),
    };
  }

  /** The PR's body carries this fleet's marker for this lane: Fleet opened it (or updated it). */
  private carriesMarker(pr: Pull, lane: LaneSpec): boolean {
    const m = MARKER.exec(pr.body ?? '');
    return !!m && m[1] === this.opts.name && m[2] === lane.id;
  }

  /**
   * Closes the lane's open PR (`PATCH …/pulls/{n}` with `state: closed`), then deletes its branch
   * (`DELETE …/git/refs/heads/<branch>`) when it still holds the lane's commit. A merged PR is left as it is, and so is
   * its branch; a branch someone else pushed to is left, and the detail says so.
   */
  async closePr(lane: LaneSpec, record: LaneRecord, opts: { deleteBranch: boolean }): Promise<CloseResult> {
    const { owner, repo } = this.split(lane);
    const branch = record.branch ?? lane.branch;
    const out: CloseResult = { status: 'none', detail: '', pr_number: null, pr_url: null, pr_state: null, branch_deleted: false, branch_head: null };
    let pr: Pull | null;
    try {
      pr = await this.locatePull(lane, record);
      out.pr_number = pr?.number ?? null;
      out.pr_url = pr?.html_url ?? null;
      out.pr_state = pr ? (pr.merged || pr.merged_at ? 'merged' : pr.state === 'open' ? 'open' : 'closed') : null;
      out.branch_head = await this.branchHead(lane, branch);
    } catch (err) {
      return { ...out, status: 'failed', detail: (err as Error).message };
    }
    if (pr && (pr.merged || pr.merged_at)) return { ...out, status: 'merged', detail: `#${pr.number} is merged: nothing to close, ${branch} left as it is` };
    const said: string[] = [];
    if (pr?.state === 'open') {
      try {
        await this.octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: pr.number, state: 'closed' });
      } catch (err) {
        return { ...out, status: 'failed', detail: this.error(lane, `closing pull request #${pr.number}`, err).message };
      }
      out.status = 'closed';
      out.pr_state = 'closed';
      said.push(`#${pr.number} closed`);
    } else if (pr) {
      out.status = 'already-closed';
      said.push(`#${pr.number} was already closed`);
    } else said.push(`no pull request from ${branch}`);

    const short = (sha: string | null) => (sha ? sha.slice(0, 12) : 'none');
    if (!opts.deleteBranch || out.branch_head === null) {
      if (out.branch_head === null) said.push(`${branch} is gone`);
    } else if (!record.commit || out.branch_head !== record.commit) {
      said.push(`${branch} left: it is at ${short(out.branch_head)}, not at the lane's commit ${short(record.commit)}`);
    } else {
      try {
        // The lane branch lives in the fork in fork mode (branch_head was read there, so the fork is known).
        const head = await this.branchRepo(lane);
        if (!head) throw new GitHubForgeError(lane.repo, `deleting ${branch}`, 0, 'the fork holding it is gone');
        await this.octokit.request('DELETE /repos/{owner}/{repo}/git/refs/{ref}', { ...head, ref: `heads/${branch}` });
        out.branch_deleted = true;
        out.branch_head = null;
        said.push(`${branch} deleted`);
      } catch (err) {
        // 422 "Reference does not exist": someone deleted it meanwhile.
        if (statusOf(err) === 422 && (await this.branchHead(lane, branch).catch(() => out.branch_head)) === null) {
          out.branch_head = null;
          said.push(`${branch} is gone`);
        } else {
          return { ...out, status: 'failed', detail: `${said.join('; ')}; but ${this.error(lane, `deleting ${branch}`, err).message}` };
        }
      }
    }
    return { ...out, detail: said.join('; ') };
  }

  // -------------------------------------------------------------------------

  private split(lane: LaneSpec): { owner: string; repo: string } {
    const [owner, repo] = lane.repo.split('/');
    if (lane.repo_kind !== 'github' || !owner || !repo) throw new Error(redact(`${lane.repo} is not an owner/repo name`));
    return { owner, repo };
  }

  private error(lane: LaneSpec, action: string, err: unknown): GitHubForgeError {
    return new GitHubForgeError(lane.repo, action, statusOf(err), messageOf(err));
  }
}

type Repo = { owner: string; repo: string };

/** What GitHub says about a repository that may be a fork (GET …/repos/{owner}/{repo}, POST …/forks). */
type ForkAnswer = { fork?: boolean; parent?: { full_name?: string }; source?: { full_name?: string }; owner: { login: string }; name: string };

/** A fork of `target`: its parent, or the root of its network (a fork of a fork GitHub answered with), is the target. */
function isForkOf(r: ForkAnswer, target: string): boolean {
  const t = target.toLowerCase();
  return r.fork === true && (r.parent?.full_name?.toLowerCase() === t || r.source?.full_name?.toLowerCase() === t);
}

/**
 * Is the PR's head branch in `head` (a PR from a fork of the same name is another PR)? A PR whose head repository is
 * gone (a deleted fork) shows `head.repo: null`: it counts only where the branch is looked for in the target itself.
 */
function fromRepo(pr: Pull, head: Repo, lane: LaneSpec): boolean {
  const full = pr.head.repo?.full_name;
  const wanted = `${head.owner}/${head.repo}`.toLowerCase();
  return full === undefined || full === null ? wanted === lane.repo.toLowerCase() : full.toLowerCase() === wanted;
}

function unique(items: readonly string[]): string[] {
  const seen = new Set<string>();
  return items.filter((x) => {
    const k = x.toLowerCase();
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** GITHUB_SERVER_URL when the octokit talks to the environment's API, else derived from the octokit's API URL. */
function defaultServerUrl(octokit: FleetOctokit): string {
  const apiUrl = String(octokit.request.endpoint.DEFAULTS.baseUrl).replace(/\/+$/, '');
  if (process.env.GITHUB_SERVER_URL && apiUrl === resolveApiUrl()) return process.env.GITHUB_SERVER_URL;
  return serverUrlFor(apiUrl);
}
