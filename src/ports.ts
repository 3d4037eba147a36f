/**
 * What the steps (plan, lane, report) need from the world. Adapters in
 * src/workspace, src/local and src/github implement these; the steps never import an adapter.
 */
import type { LaneSpec } from './core/model.js';
import type { CiConclusion, LaneRecord, Manifest, MergeStatus, QueueBoard } from './core/model.js';
import type { ResolvedFleet } from './core/validate.js';
import type { PrView } from './core/prs.js';
import type { BranchCommit } from './core/branch-conflict.js';

export type { PrView } from './core/prs.js';

export interface Clock {
  now(): Date;
}

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export type TargetCheck =
  /** `base_commit`: the commit the lane's base branch points at, read by the same check (null when the forge could not say). */
  | { lane: string; repo: string; ok: true; clone_url: string; default_branch: string; base_commit?: string | null }
  | { lane: string; repo: string; ok: false; reason: string; detail: string | null };

export type Checkpoint = 'pushed' | 'green' | 'merged';

/** What a credential is, as far as the forge can tell before using it. */
export type CredentialGrants =
  /** A GitHub App installation token Fleet minted: the installation's permissions (`contents: 'write'`…). */
  | { kind: 'app'; account: string; permissions: Readonly<Record<string, string>> }
  /** A classic PAT (or OAuth token): its scopes, from the `X-OAuth-Scopes` header. */
  | { kind: 'classic-pat'; login: string; scopes: string[] }
  /** A fine-grained PAT or a token minted elsewhere: GitHub does not say what it grants. */
  | { kind: 'unknown'; login: string | null }
  /** GitHub refused it (401): expired, revoked, mistyped. */
  | { kind: 'refused'; detail: string };

/** A repository's Actions settings (Settings → Actions → General), as far as the credential may read them. */
export interface ActionsSettings {
  enabled: boolean;
  /** Which actions and reusable workflows may run: every one, the repository owner's only, or those listed. */
  allowedActions: 'all' | 'local_only' | 'selected';
  /** With `selected`: GitHub's own actions, Marketplace verified creators', and `owner/repo@ref` patterns. */
  selected?: { githubOwned: boolean; verified: boolean; patterns: string[] };
  /** How many days artifacts and logs are kept; undefined when it cannot be read. */
  retentionDays?: number;
}

/** The set-up reads `fleet doctor` makes on the forge (GitHub only). */
export interface SetupProbe {
  credential(): Promise<CredentialGrants>;
  /** A repository's visibility; null when the credential cannot see it. */
  visibility(repo: string): Promise<'public' | 'private' | 'internal' | null>;
  /** An environment's required reviewers (logins and team slugs); `missing` when there is none of that name. */
  environment(repo: string, name: string): Promise<{ reviewers: string[] } | { missing: true } | { unreadable: string }>;
  /** The repository's Actions settings; `unreadable` with why (they take administration: read). */
  actionsSettings(repo: string): Promise<ActionsSettings | { unreadable: string }>;
}

/** What the forge's credential may do to workflow files, and, when it may not, what grants it. */
export interface WorkflowWrites {
  allowed: boolean;
  /** The credential, as a message names it ("the GitHub App's installation", "the token (a classic PAT)"). */
  credential: string;
  /** What to change so that it may. */
  fix: string;
}

export interface PublishInput {
  lane: LaneSpec;
  record: LaneRecord;
  title: string;
  /** Carries the hidden marker `<!-- fleet:<name>:<lane> -->`. */
  body: string;
  draft: boolean;
  labels: string[];
  reviewers: string[];
  team_reviewers: string[];
  assignees: string[];
  /**
   * The lane's push just created its branch (its lease said the branch was not there), so no open PR has it as head:
   * the forge may open the PR without looking for one first, and adopts the existing one if the forge says otherwise.
   */
  branchCreated?: boolean;
}

export interface PublishResult {
  pr_url: string | null;
  pr_number: number | null;
  /** True when an existing PR (found by its head branch) was updated rather than a new one opened. */
  updated: boolean;
  /** What the forge could not do but did not fail the lane for (a reviewer it could not request, …). */
  notes?: string[];
}

export interface CiVerdict {
  conclusion: CiConclusion;
  /** What failed, in a few lines per check (names, summaries, URLs), fed back to a retry. */
  failures: string;
}

export interface MergeResult {
  status: MergeStatus;
  detail: string;
}

/** What `Forge.closePr` did with a lane's PR and branch. */
export interface CloseResult {
  /**
   * `closed`: the PR was open and is closed now; `already-closed`: it was closed (not merged) before; `merged`: it is
   * merged, and was left alone (so was its branch); `none`: the forge has no PR of the lane (a local forge never has
   * one): only its branch was looked at; `blocked`: nothing was closed, on purpose (`detail`: the branch moved past
   * the lane's commit, is checked out, …); `failed`: the forge refused or could not be asked (`detail`). Locally,
   * deleting the branch is the close: `closed`.
   */
  status: 'closed' | 'already-closed' | 'merged' | 'none' | 'blocked' | 'failed';
  detail: string;
  pr_number: number | null;
  pr_url: string | null;
  /** The PR's state afterwards (a PR closed before deleting its branch failed is `closed`); null: no PR. */
  pr_state: 'open' | 'closed' | 'merged' | null;
  /** This call deleted the lane branch. */
  branch_deleted: boolean;
  /** Where the lane branch is afterwards; null when it is gone (deleted now or before). */
  branch_head: string | null;
}

/**
 * What a forge can do, named after what the steps decide by it: a step asks what the forge can do, never which forge
 * it is.
 */
export interface ForgeCapabilities {
  /**
   * Who says whether a lane's commit is green. `lane-checks`: the forge runs no CI, so the lane's own checks stand for
   * it (green when they ran and passed, `none` when it has none) and the forge is neither asked nor waited for;
   * `forge`: the forge's CI on the pushed commit, read or waited for.
   */
  readonly ci: 'lane-checks' | 'forge';
  /** The forge has pull requests: a lane handed to a person is a draft PR with a label, not only its pushed branch. */
  readonly pullRequests: boolean;
  /** Who the report names as having confirmed a lane's branch, files and fence (its evidence's `verified_by`). */
  readonly verifiedBy: 'local-git' | 'github';
}

/**
 * A forge holds the targets: local repositories on disk, or GitHub. Reads are
 * always fresh: the report and the dependency checkpoints trust the forge, not
 * what a lane said about itself.
 */
export interface Forge {
  /** Which forge, as a manifest records it (`forge:`): a manifest is only read again with a fleet file on the same forge. */
  readonly kind: 'local' | 'github';
  readonly capabilities: ForgeCapabilities;
  /** Validate every lane's target; each lane comes back exactly once, excluded ones with a reason code. */
  checkTargets(lanes: readonly LaneSpec[]): Promise<TargetCheck[]>;
  /** The URL a lane clones and pushes to; never carries a credential that would persist in .git/config. */
  cloneUrl(lane: LaneSpec): string;
  /**
   * The branch a lane clones when its target check found one other than what cloning the URL would check out (a
   * working copy on disk with a WIP branch checked out); undefined: the URL's HEAD, or the lane's own `base:`.
   */
  baseBranch?(lane: LaneSpec): string | undefined;
  /**
   * Where the lane branch lives when it is not the target itself: the fork it is pushed to (`pr.fork`), `owner/name`
   * and URL, made on first use; with `create: false` (a dry run) an existing fork only. Undefined: the target.
   */
  headRepo?(lane: LaneSpec, opts: { create: boolean }): Promise<{ repo: string; url: string } | undefined>;
  /**
   * Tells the forge where a lane's branch lives, as its record says (`head_repo`: a fork an earlier process pushed
   * to), before reads about the lane; whatever the fleet file says now.
   */
  useHeadRepo?(lane: LaneSpec, repo: string): void;
  /**
   * Whether pushes may create or change workflow files (`.github/workflows/`): GitHub refuses them from a GitHub App
   * without the Workflows permission and from a classic PAT without the `workflow` scope. Null when the forge cannot
   * tell before a push (a fine-grained PAT); absent where nothing refuses them (local repositories).
   */
  workflowWrites?(): Promise<WorkflowWrites | null>;
  /** The commit a lane branch points at now (in the fork, with `pr.fork`), or null. */
  branchHead(lane: LaneSpec, branch: string): Promise<string | null>;
  /** Files changed between two commits of the lane's repository, read from the forge. */
  changedFiles(lane: LaneSpec, base: string, head: string): Promise<string[] | null>;
  /** Open or update the change request for a pushed lane branch (a PR on GitHub; nothing locally). */
  publish(input: PublishInput): Promise<PublishResult>;
  /**
   * The lane branch's head and the files it changes since `base`, in one read where the forge has one (GitHub: the
   * compare of base...branch). Undefined when that read cannot answer for certain: ask branchHead and changedFiles.
   */
  branchChanges?(lane: LaneSpec, base: string, branch: string): Promise<{ head: string; files: string[] } | undefined>;
  /**
   * Many lanes' CI verdicts in as few reads as the forge allows (GitHub: one GraphQL query for up to 20 commits);
   * undefined for a lane the batch could not answer for certain, which `ciConclusion` then reads on its own.
   */
  ciConclusions?(items: ReadonlyArray<{ lane: LaneSpec; commit: string }>): Promise<Array<CiConclusion | undefined>>;
  /** The CI verdict for a commit, read afresh (`none` when the forge has no CI). */
  ciConclusion(lane: LaneSpec, commit: string): Promise<CiConclusion>;
  /** Poll until CI on `commit` concludes or `timeoutMs` passes (then `pending`). */
  waitForCi(lane: LaneSpec, commit: string, timeoutMs: number): Promise<CiVerdict>;
  /** Turn a PR into a draft (or back): the hand-off to a person when retries are exhausted. */
  setDraft(lane: LaneSpec, prNumber: number, draft: boolean): Promise<void>;
  /** Merge a lane under the fleet's explicit merge policy. */
  merge(lane: LaneSpec, record: LaneRecord, method: string): Promise<MergeResult>;
  /** Is the lane's change in its base branch now (its PR merged; locally, the base contains its commit)? Read afresh. */
  isMerged(lane: LaneSpec, record: LaneRecord): Promise<boolean>;
  /**
   * The lane's PR as the forge shows it now (`fleet prs`): found by its head branch (`record.branch`, else the lane's),
   * so a PR an earlier run opened is found even when the record has no number; open PRs first. State, draft, CI on
   * its head (read afresh), review, mergeability, age. A branch with no PR is `state: branch` (always, locally: no
   * PRs there). Null when the forge has neither a PR nor a branch of the lane.
   */
  readPr(lane: LaneSpec, record: LaneRecord): Promise<PrView | null>;
  /**
   * Closes the lane's open PR (found as readPr finds it) and, with `deleteBranch`, deletes the lane branch when it
   * still holds the lane's commit (`record.commit`): a branch someone else pushed to is left, and so is a merged
   * PR's. Idempotent: a closed PR and a missing branch are answers, not errors. Locally: deletes the branch.
   */
  closePr(lane: LaneSpec, record: LaneRecord, opts: { deleteBranch: boolean }): Promise<CloseResult>;
  /**
   * Environment for git commands against this forge (credentials as an extra header, never in a URL or
   * .git/config). Ask for it per git command: the credential may have been renewed since.
   */
  gitEnv(): Record<string, string>;
  /**
   * Makes sure the credential git gets next has time left (a GitHub App token near its end is renewed); with
   * `force`, after git was refused for its credential, renews it at once. True when a retry may succeed.
   */
  refreshCredential?(force?: boolean): Promise<boolean>;
}

/** One line of events.jsonl for the issue queue: a state an issue moved to, or something the run did to it. */
export interface QueueEvent {
  issue: number;
  from: string | null;
  to: string;
  detail: string;
}

export interface QueueOutcome {
  /** The lanes this run starts (new and resumed work items). */
  lanes: LaneSpec[];
  board: QueueBoard;
  events: QueueEvent[];
  /** Why the queue could not be read: the plan stops. */
  problems: string[];
  /**
   * Brings the issues in step with the decision (labels, the NO_SPEC comment, closing an issue whose parts all
   * merged), once the plan is known to hold: a plan refused for another reason changes nothing. The board and events
   * then include what it did.
   */
  commit(): Promise<{ board: QueueBoard; events: QueueEvent[] }>;
}

export interface QueueOptions {
  /** Change nothing on the forge (a dry run, `fleet plan`): no merge, label, comment or close. */
  readOnly: boolean;
  /** The run's concurrency budget (`max_parallel`, or what the command line or the workflow input set). */
  budget: number;
  now(): Date;
}

/** The issue queue of a fleet (source.issues): reads the forge's issues, keeps them in step, and says what starts. */
export type QueueSource = (fleet: ResolvedFleet, opts: QueueOptions) => Promise<QueueOutcome>;

/** After a run: hands the issues whose lanes need a person to one (label and comment); what it did, for the board. */
export type QueueSettle = (fleet: ResolvedFleet, manifest: Manifest) => Promise<string[]>;

export const systemClock: Clock = { now: () => new Date() };

export interface CloneResult {
  base_branch: string;
  base_commit: string;
  /** Where the lane branch already points on the remote (a previous run), or null. */
  remote_branch_commit: string | null;
}

export type PushResult = { ok: true } | { ok: false; reason: 'stale' | 'rejected' | 'error'; detail: string };

/** Git working copies: the same implementation serves local and GitHub lanes. */
export interface Workspace {
  /** `timeoutMs`: per try of the clone and fetch (transient failures are tried again). */
  /** `headUrl`: where the lane branch lives when not at `url` (a fork): its state is read there, and pushes go there. */
  clone(
    url: string,
    dir: string,
    opts: { base?: string; branch: string; env?: Record<string, string>; timeoutMs?: number; headUrl?: string },
  ): Promise<CloneResult>;
  /** Is the working copy still a git repository on the lane branch? (A directive may have deleted .git.) */
  intact(dir: string): Promise<boolean>;
  /** Put the lane branch back on `base` with every change kept as uncommitted work (undoes commits a directive made). */
  settle(dir: string, branch: string, base: string): Promise<void>;
  /** Throw away everything the last attempt did. */
  reset(dir: string, base: string): Promise<void>;
  /** Stage everything and list what changed against HEAD (renames give both paths). */
  changedFiles(dir: string): Promise<string[]>;
  /** Commit what is staged (after `changedFiles`). */
  commit(dir: string, message: string): Promise<string>;
  /**
   * Stage everything and commit it, even when nothing changed (an empty commit, whose `committed` lists no
   * files): one git call fewer than `changedFiles` then `commit`, for a lane with no checks to run in between.
   */
  commitEverything(dir: string, message: string): Promise<string>;
  /**
   * What pushing `to` onto `from` changes, read from the two commits' trees: the files (renames give both paths)
   * and the binary-safe patch.
   */
  committed(dir: string, from: string, to: string): Promise<{ files: string[]; patch: string }>;
  tree(dir: string, rev: string): Promise<string>;
  parent(dir: string, rev: string): Promise<string | null>;
  /** Push `commit` (the one the fence judged, by its id: never what HEAD names by then) to `branch`, leased on `expected`. */
  push(dir: string, branch: string, commit: string, expected: string | null, env?: Record<string, string>, timeoutMs?: number): Promise<PushResult>;
  /** Tracked files of the working copy. */
  listFiles(dir: string): Promise<string[]>;
  /** Fetches `branch` of the remote at `url`; its commit, or null when the remote has no such branch. */
  fetchBranch(dir: string, url: string, branch: string, env?: Record<string, string>, timeoutMs?: number): Promise<string | null>;
  /** Is `ancestor` reachable from `rev`? */
  isAncestor(dir: string, ancestor: string, rev: string): Promise<boolean>;
  /** The messages of the commits on `rev`'s first-parent history, newest first (at most `max`). */
  commitMessages(dir: string, rev: string, max: number): Promise<string[]>;
  /** The commits `head` holds that `base` lacks, oldest first, at most `max` (the newest). */
  branchCommits(dir: string, base: string, head: string, max: number): Promise<BranchCommit[]>;
  /**
   * Puts `commits` (oldest first) on the checked-out branch: as they are where they sit on its head already, else
   * cherry-picked; one whose change the branch holds already is dropped. A conflict is aborted and reported.
   */
  replay(dir: string, commits: readonly BranchCommit[]): Promise<{ ok: true; head: string } | { ok: false; commit: string; conflicts: string[] }>;
  /** Merges `commit` into the checked-out branch (a merge commit); a conflict is aborted and its paths returned. */
  merge(dir: string, commit: string, message: string): Promise<{ ok: true; commit: string } | { ok: false; conflicts: string[] }>;
  /**
   * A copy of the repository in `dir` (its objects copied, never shared) checked out at `rev`, in `dest` (replaced):
   * what runs there can rewrite its own objects and configuration, and never those of `dir`.
   */
  copyAt(dir: string, rev: string, dest: string): Promise<void>;
}

/** `auto`: isolate directives where the machine allows, say so where not; `required`: refuse to run a directive without; `off`: never. */
export type IsolationSetting = 'auto' | 'required' | 'off';

/** Whether directives run where Fleet's processes cannot be seen, and how (or why not). */
export interface IsolationInfo {
  kind: 'pid-namespace' | 'none';
  detail: string;
}

export interface ExecOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  logFile: string;
  /** Run the command isolated from Fleet's processes (default `off`: Fleet's own helper commands). */
  isolation?: IsolationSetting;
  /**
   * The fleet workspace and the lane's own folder in it. Isolated, the command sees of the workspace only the
   * lane's folder (its working copy, logs and prompts): other lanes', the manifest and the events log are hidden.
   */
  confine?: { workspace: string; lane: string };
}

export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  /** The end of the combined output, secrets redacted: fed back to a retry and shown in errors. */
  tail: string;
}

export interface Executor {
  run(command: string, opts: ExecOptions): Promise<ExecResult>;
  /** What `run` gives a command under `setting` on this machine. */
  isolation(setting: IsolationSetting): Promise<IsolationInfo>;
}

export interface StoredArtifact {
  name: string;
  id: number;
  /** sha256 of the artifact's zip, when the store knows it (downloads then verify it). */
  digest?: string;
}

/**
 * Where lanes leave their results for the report: a run's artifacts on
 * GitHub Actions, a folder locally and in tests. Names are unique in a run.
 */
export interface ArtifactStore {
  upload(name: string, files: string[], rootDir: string): Promise<StoredArtifact>;
  /**
   * Artifacts whose name starts with `prefix`. Every upload is listed (a
   * re-run's uploads sit beside earlier attempts'; names carry the attempt).
   * `complete`: the whole run's, even what this job's own listing does not
   * show (on Actions: the REST listing, which costs API calls).
   */
  list(prefix: string, opts?: { complete?: boolean }): Promise<StoredArtifact[]>;
  /** Download into `dir` (created); throws when the digest does not match. */
  download(artifact: StoredArtifact, dir: string): Promise<void>;
}

export interface RunJob {
  id?: number;
  name: string;
  status: string;
  conclusion: string | null;
  html_url: string | null;
}

/** The workflow run the fleet runs in, to explain a lane that left no result. */
export interface RunJobs {
  /** Every job of the run (its latest attempt of each), all pages. */
  list(): Promise<RunJob[]>;
  /** The messages GitHub left on a job (a timeout, a lost runner). */
  annotations?(jobId: number): Promise<string[]>;
  /** The review that rejected a pending deployment of this run (the approval gate), if one did. */
  rejection?(): Promise<{ environment: string; reviewer: string; comment: string } | null>;
}
