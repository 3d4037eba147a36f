/**
 * The shapes Fleet writes: the plan, a lane result and the manifest. zod is the
 * source of truth; `npm run schema` generates the committed JSON Schemas from it.
 * Changing the manifest or lane result shape bumps SCHEMA_VERSION.
 */
import * as z from 'zod';
import type { Severity } from './review.js';

export const SCHEMA_VERSION = '1.5.0';

/**
 * `unchanged`: an incremental sweep found the target's base commit and the lane's digest as they were when the
 * lane last completed (or was a no-op), so it was not run again: no clone, its PR left as it is.
 */
export const LaneStatus = z.enum(['queued', 'running', 'completed', 'failed', 'skipped', 'excluded', 'unchanged']);
export type LaneStatus = z.infer<typeof LaneStatus>;
export const TERMINAL: ReadonlySet<LaneStatus> = new Set(['completed', 'failed', 'skipped', 'excluded', 'unchanged']);

/**
 * Where in its life a lane is. `no-op` is a completed lane that changed nothing;
 * `draft` a lane whose PR was turned into a draft for a person; `dry-run` a lane
 * that committed locally and kept its patch but pushed nothing.
 */
export const LanePhase = z.enum([
  'queued',
  'waiting',
  'cloning',
  'running',
  'checking',
  'reviewing',
  'committing',
  'pushing',
  'pr',
  'ci',
  'merging',
  'pushed',
  'dry-run',
  'pr-open',
  'merged',
  'draft',
  'no-op',
  'failed',
  'skipped',
  'excluded',
  'unchanged',
]);
export type LanePhase = z.infer<typeof LanePhase>;

/** Why a lane failed, skipped or was excluded; stable strings tools can switch on. */
export const ErrorClass = z.enum([
  'invalid-input',
  'clone-failed',
  'directive-failed',
  'directive-timeout',
  'check-failed',
  'fence-violation',
  'workspace-corrupted',
  'push-rejected',
  'pr-failed',
  'ci-failed',
  'code-review-needed',
  'merge-blocked',
  'checkpoint-unmet',
  'dependency-failed',
  'unverified',
  'lane-crashed',
  'no-result',
  'cancelled',
  'excluded',
  'budget-exceeded',
  'branch-conflict',
]);
export type ErrorClass = z.infer<typeof ErrorClass>;

export const LaneError = z.strictObject({ class: ErrorClass, message: z.string() });
export type LaneError = z.infer<typeof LaneError>;

export const MergeStatus = z.enum(['not-requested', 'pending', 'merged', 'draft', 'blocked', 'failed']);
export type MergeStatus = z.infer<typeof MergeStatus>;

export const CiConclusion = z.enum(['success', 'failure', 'pending', 'neutral', 'cancelled', 'timed_out', 'skipped', 'none']);
export type CiConclusion = z.infer<typeof CiConclusion>;

export const Attempt = z.strictObject({
  n: z.number().int().min(1),
  started_at: z.string(),
  duration_ms: z.number().min(0),
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  timed_out: z.boolean(),
  failed_step: z.enum(['directive', 'check', 'fence', 'ci']).nullable(),
  log: z.string().describe("Path of this attempt's log, relative to the fleet workspace."),
});
export type Attempt = z.infer<typeof Attempt>;

/** What a verifier found when it looked at what the lane left behind, not at what it said. */
export const Evidence = z.strictObject({
  verified_at: z.string().nullable(),
  verified_by: z.string().nullable().describe('local-git or github'),
  branch_head: z.string().nullable().describe('The commit the remote branch points at, read from the forge.'),
  head_matches: z.boolean().nullable(),
  files_match: z.boolean().nullable(),
  fence_ok: z.boolean().nullable(),
  patch: z.string().nullable().describe('Path of the lane patch, relative to the fleet workspace.'),
  notes: z.array(z.string()),
});
export type Evidence = z.infer<typeof Evidence>;

export const Timings = z.strictObject({
  wait_ms: z.number().min(0).nullable().describe('Time spent waiting for a slot in the concurrency budget.'),
  clone_ms: z.number().min(0).nullable(),
  directive_ms: z.number().min(0).nullable(),
  checks_ms: z.number().min(0).nullable(),
  commit_ms: z.number().min(0).nullable(),
  push_ms: z.number().min(0).nullable(),
  total_ms: z.number().min(0).nullable(),
});
export type Timings = z.infer<typeof Timings>;

/** Agent spending as the agent CLI reported it (Claude Code's JSON result; null where the CLI reports none). */
export const AgentUsage = z.strictObject({
  cost_usd: z.number().min(0).nullable(),
  turns: z.number().int().min(0).nullable(),
  input_tokens: z.number().int().min(0).nullable(),
  output_tokens: z.number().int().min(0).nullable(),
});
export type AgentUsage = z.infer<typeof AgentUsage>;

/** One lens run of a review round: what it answered, or why its answer could not be read. */
export const LensRun = z.strictObject({
  lens: z.string(),
  outcome: z
    .enum(['findings', 'refuted', 'failed'])
    .describe('findings: it raised some; refuted: it looked and said it found nothing; failed: no readable answer, even when asked again.'),
  findings: z.number().int().min(0),
  asked_again: z.boolean().describe('Its first answer did not validate and it was asked once more.'),
  problem: z.string().nullable().describe('Why its (last) answer could not be read, for a failed lens.'),
  exit_code: z.number().int().nullable(),
  duration_ms: z.number().min(0),
  log: z.string().describe('Path of its log, relative to the fleet workspace.'),
  usage: AgentUsage.nullable(),
});
export type LensRun = z.infer<typeof LensRun>;

export const ReviewRound = z.strictObject({
  n: z.number().int().min(1),
  lenses: z.array(LensRun),
  raised: z.array(z.string()).describe('Ids of the findings the panel raised this round.'),
  verdict: z.enum(['clear', 'fix', 'review-again', 'needs-person']),
  dispositions_problem: z.string().nullable().describe("Why the worker's dispositions could not be read (every finding then counts as ACCEPT)."),
  fix: z
    .strictObject({ ok: z.boolean(), detail: z.string(), log: z.string() })
    .nullable()
    .describe("The worker's fix round after this review round: ok when its change passed the fence and the checks (else the change before it was kept)."),
});
export type ReviewRound = z.infer<typeof ReviewRound>;

export const ReviewFindingRecord = z.strictObject({
  id: z.string().describe('f1, f2, … in the order first raised in this lane.'),
  severity: z.enum(['critical', 'high', 'medium', 'low']),
  file: z.string().nullable(),
  line: z.number().int().nullable(),
  finding: z.string(),
  suggested_fix: z.string(),
  lenses: z.array(z.string()).describe('Every lens that raised it (overlap raises confidence).'),
  disposition: z.enum(['ACCEPT', 'FIX_LATER', 'DEFER']),
  forced: z.boolean().describe('ACCEPT because the fleet file blocks its severity, whatever the worker said.'),
  reason: z.string().nullable().describe("The worker's reason for its disposition."),
  rounds: z.array(z.number().int().min(1)).describe('The review rounds that raised it.'),
  status: z
    .enum(['open', 'fixed', 'follow-up', 'deferred'])
    .describe('open: ACCEPT and raised again by the last round; fixed: ACCEPT and not raised again after a fix round; follow-up: FIX_LATER; deferred: DEFER.'),
});
export type ReviewFindingRecord = z.infer<typeof ReviewFindingRecord>;

export const LaneReview = z.strictObject({
  verdict: z
    .enum(['clear', 'needs-person'])
    .describe('clear: no ACCEPT finding open; needs-person: the round cap was reached with findings open or lenses failing.'),
  rounds: z.array(ReviewRound),
  findings: z.array(ReviewFindingRecord),
  open: z.number().int().min(0),
  usage: AgentUsage.describe('The panel, the dispositions and the fix rounds together.'),
  stopped: z.string().nullable().optional().describe('Why the review stopped before its verdict (a budget reached); it then needs a person.'),
});
export type LaneReview = z.infer<typeof LaneReview>;

/** How one lane went into its repository's integration branch (integrate:). */
export const LaneIntegration = z.strictObject({
  state: z
    .enum(['merged', 'held'])
    .describe('merged: in the integration branch, its checks and seams green there; held: left out (a conflict, a failed check or seam), its dependents wait.'),
  wave: z.number().int().min(0),
  merge_commit: z.string().nullable(),
  conflicts: z.array(z.string()).describe('Files that conflicted, for a lane held by a conflict.'),
  reason: z.string().nullable(),
});
export type LaneIntegration = z.infer<typeof LaneIntegration>;

/** What `fleet prs merge` / `fleet prs close` last found and did to a lane's PR, after the run (src/steps/prs.ts). */
export const LanePrs = z.strictObject({
  command: z.enum(['merge', 'close']).describe('The command that last changed this record.'),
  outcome: z
    .enum(['merged', 'closed', 'already-merged', 'already-closed', 'not-merged', 'not-closed', 'failed'])
    .describe(
      'merged / closed: that command did it; already-*: it found it so (a person, or an earlier command); not-* and failed: refused or could not, detail says why.',
    ),
  state: z
    .enum(['open', 'closed', 'merged', 'branch'])
    .describe('The PR as the forge showed it afterwards (branch: a lane branch with no PR, as on the local forge; closed: locally, the branch deleted).'),
  branch_deleted: z.boolean().describe('The lane branch is gone from the forge (close deletes it when it still holds the lane commit).'),
  detail: z.string(),
  at: z.string(),
});
export type LanePrs = z.infer<typeof LanePrs>;

export const LaneRecord = z.strictObject({
  repo: z.string(),
  lane: z.string(),
  wave: z.number().int().min(0).nullable(),
  status: LaneStatus,
  phase: LanePhase,
  started_at: z.string().nullable(),
  updated_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  branch: z.string().nullable(),
  base_branch: z.string().nullable(),
  base_commit: z.string().nullable(),
  commit: z.string().nullable(),
  changed_files: z.array(z.string()),
  pr_url: z.string().nullable(),
  pr_number: z.number().int().nullable(),
  ci_conclusion: CiConclusion.nullable(),
  merge_status: MergeStatus.nullable(),
  retry_count: z.number().int().min(0),
  attempts: z.array(Attempt),
  error: LaneError.nullable(),
  depends_on: z.array(z.string()),
  routing: z.array(z.string()).nullable().describe('Personas selected for this lane, when an agent runs it.'),
  log: z.string().nullable().describe("Path of the lane's last log, relative to the fleet workspace."),
  evidence: Evidence,
  timings: Timings,
  isolation: z
    .strictObject({ kind: z.enum(['pid-namespace', 'none']), detail: z.string() })
    .nullable()
    .optional()
    .describe("How the lane's directive and checks were kept from seeing Fleet's processes (pid-namespace), or why they were not (none)."),
  digest: z
    .string()
    .nullable()
    .optional()
    .describe(
      "sha256 of everything that decides the lane's result (directive, command, checks, the fleet-file fields that matter, Fleet's version): with base_commit, what an incremental sweep compares.",
    ),
  unchanged_since: z
    .string()
    .nullable()
    .optional()
    .describe('For an unchanged lane: the fleet id of the run whose outcome it carries forward (the last run that really ran it).'),
  usage: AgentUsage.nullable()
    .optional()
    .describe("What the lane's agent runs spent (attempts, lenses, dispositions, fix rounds), where the agent CLI reports it."),
  discoveries: z
    .array(z.string())
    .optional()
    .describe('What the lane left for later lanes (FLEET_DISCOVERIES or a "Discoveries" section of the agent\'s answer), cut and deduplicated.'),
  relay: z
    .strictObject({ items: z.number().int().min(0), from: z.array(z.string()).describe('The lanes whose discoveries it received.') })
    .nullable()
    .optional()
    .describe('The relay the lane received from earlier waves; absent when it received none.'),
  integration: LaneIntegration.optional().describe('How the lane was integrated (integrate:); absent otherwise.'),
  strategy: z
    .strictObject({
      group: z.string().describe('The target tried several ways: the lane id its dependents name.'),
      label: z.string(),
      picked: z.boolean().nullable().describe('Whether this strategy is the pick; null when a person picks (every strategy opened a draft PR).'),
      reason: z.string().nullable().describe('Why the pick is what it is (the rule and what decided it).'),
      diff_lines: z.number().int().min(0).nullable().describe('Lines added and removed by its change.'),
    })
    .optional()
    .describe('For one strategy of a target tried several ways (speculative strategies).'),
  review: LaneReview.nullable()
    .optional()
    .describe("The review of the lane's last change by a panel of lenses (review: in the fleet file); absent when not reviewed."),
  head_repo: z.string().optional().describe('owner/name of the fork the lane branch was pushed to (pr.fork); absent: the target itself.'),
  branch_conflict: z
    .strictObject({
      strategy: z.enum(['replace', 'rebase']),
      commits: z.array(z.string()).describe('The commits others had pushed to the lane branch, as the branch held them when the lane began (oldest first).'),
      start: z
        .string()
        .nullable()
        .describe(
          "rebase: the commit the lane's change was made on (those commits, replayed onto the base where they did not sit on it already); null for replace.",
        ),
    })
    .optional()
    .describe('What the lane did with commits others had pushed to its branch (branch_conflict: replace or rebase); absent when the branch held none.'),
  prs: LanePrs.optional().describe(
    "What `fleet prs merge` or `fleet prs close` last found and did to the lane's PR (or branch) after the run; absent until one of them acted on it.",
  ),
});
export type LaneRecord = z.infer<typeof LaneRecord>;

/** A lane result file is one lane record plus the fleet it belongs to. */
export const LaneResult = z.strictObject({
  schema_version: z.literal(SCHEMA_VERSION),
  fleet_id: z.string(),
  lane: LaneRecord,
});
export type LaneResult = z.infer<typeof LaneResult>;

export const ContentionEntry = z.strictObject({
  lane: z.string(),
  repo: z.string(),
  wanted_wave: z.number().int().min(0),
  wave: z.number().int().min(0),
  because_of: z.string().describe('The lane whose scope or exclusivity pushed this one.'),
  reason: z.string(),
});
export type ContentionEntry = z.infer<typeof ContentionEntry>;

export const Exclusion = z.strictObject({
  repo: z.string(),
  lane: z.string(),
  reason: z
    .string()
    .describe(
      'A reason code: not-found, not-a-repository, empty, unreachable, no-base-branch, no-default-branch, archived, disabled, fork, no-push-permission, no-workflows-permission, forbidden, not-a-github-repository, excluded-by-pattern, excluded-by-config, or the reason written in exclude:',
    ),
  detail: z.string().nullable(),
});
export type Exclusion = z.infer<typeof Exclusion>;

export const Shard = z.strictObject({
  id: z.string().describe('w<wave>-s<index>, unique in the fleet'),
  wave: z.number().int().min(0),
  lanes: z.array(z.string()),
});
export type Shard = z.infer<typeof Shard>;

export const Wave = z.strictObject({
  index: z.number().int().min(0),
  lanes: z.array(z.string()),
  exclusive: z.boolean(),
  shards: z.array(Shard),
  parallel: z.number().int().min(0).describe('Shards run at once (the matrix max-parallel).'),
});
export type Wave = z.infer<typeof Wave>;

export const Summary = z.strictObject({
  total: z.number().int(),
  completed: z.number().int().describe('Lanes with status completed, no-ops included.'),
  no_op: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
  excluded: z.number().int(),
  unchanged: z.number().int().describe('Lanes an incremental sweep did not run: base commit and digest as at their last completed outcome.'),
  queued: z.number().int(),
  running: z.number().int(),
  merged: z.number().int(),
  draft: z.number().int(),
  retries: z.number().int(),
  duration_seconds: z.number().min(0).nullable(),
  usage: AgentUsage.optional().describe("What every lane's agent runs spent together; absent when no agent reported any."),
});
export type Summary = z.infer<typeof Summary>;

/** One workflow run of a fleet deeper than the reusable workflow's wave jobs: which waves it ran. */
export const ChainRun = z.strictObject({
  run_id: z.number().int(),
  url: z.string().nullable(),
  first_wave: z.number().int().min(0),
  last_wave: z.number().int().min(0).describe('Inclusive.'),
});
export type ChainRun = z.infer<typeof ChainRun>;

export const SeamResult = z.strictObject({
  lanes: z.array(z.string()).describe('The soft edge (two lanes), or one lane whose own checks ran on the integrated tree.'),
  check: z.string(),
  ok: z.boolean(),
  detail: z.string().nullable(),
});
export type SeamResult = z.infer<typeof SeamResult>;

export const IntegrationRecord = z.strictObject({
  repo: z.string(),
  branch: z.string(),
  base_branch: z.string().nullable(),
  base_commit: z.string().nullable(),
  head: z.string().nullable().describe('The last verified integration commit (pushed to the branch).'),
  waves: z.array(
    z.strictObject({
      wave: z.number().int().min(0),
      order: z.array(z.string()).describe('The lanes merged, in order.'),
      already: z.array(z.string()).describe('Lanes a previous run had merged already (not merged twice).'),
      held: z.array(z.strictObject({ lane: z.string(), conflicts: z.array(z.string()), reason: z.string() })),
      seams: z.array(SeamResult),
      head: z.string().nullable(),
    }),
  ),
  release: z
    .strictObject({
      branch: z.string(),
      commit: z.string().nullable(),
      gate: z.array(SeamResult).describe('The global seam gate: the full checks on the release branch.'),
      ok: z.boolean(),
      pr_url: z.string().nullable(),
      pr_number: z.number().int().nullable(),
    })
    .nullable(),
});
export type IntegrationRecord = z.infer<typeof IntegrationRecord>;

export const QueueItemRecord = z.strictObject({
  slot: z.string().nullable().describe("The slot of the issue's parallel plan, or null for the whole issue."),
  state: z.enum(['merged', 'open-pr', 'closed-pr', 'resume', 'ready', 'waiting']),
  branch: z.string().nullable(),
  pr: z.strictObject({ number: z.number().int(), state: z.enum(['open', 'merged', 'closed']), url: z.string(), created_at: z.string() }).nullable(),
  owns: z.array(z.string()),
  depends_on: z.array(z.string()),
});

export const QueueRow = z.strictObject({
  issue: z.number().int(),
  title: z.string(),
  url: z.string(),
  state: z.enum(['READY', 'IN_FLIGHT', 'BLOCKED_WORK', 'BLOCKED_PERSON', 'NO_SPEC']),
  reason: z.string().describe('Why, quoted from the issue where it can be.'),
  items: z.array(QueueItemRecord),
  started: z.array(z.string()).describe('The lanes this run started for it.'),
  priority: z.number().int(),
  created_at: z.string(),
  waiting_since: z.string().nullable().describe('Since when it has waited: its oldest open PR, or the issue itself when nothing of it is open.'),
});

export const QueueBoard = z
  .strictObject({
    repo: z.string(),
    label: z.string(),
    read_at: z.string(),
    budget: z.number().int(),
    rows: z.array(QueueRow),
    /** What this run did to the queue before starting lanes: merges, closes, labels and comments. */
    actions: z.array(z.string()),
    events: z
      .array(z.strictObject({ issue: z.number().int(), from: z.string().nullable(), to: z.string(), detail: z.string() }))
      .describe(
        "Each issue whose state moved since the last run (as Fleet's labels tell it), and each merge and close: the lines the local run writes to events.jsonl.",
      ),
    dry_run: z.boolean(),
  })
  .describe('The issue queue (source.issues) as this run found it: one row per ready-labelled issue, by state.');
export type QueueBoard = z.infer<typeof QueueBoard>;

export const Manifest = z.strictObject({
  $schema: z.string().optional(),
  schema_version: z.literal(SCHEMA_VERSION),
  fleet_id: z.string(),
  name: z.string(),
  forge: z.enum(['local', 'github']),
  started_at: z.string(),
  ended_at: z.string().nullable(),
  directive: z.string(),
  max_parallel: z.number().int(),
  max_retries: z.number().int(),
  checkpoint: z.enum(['pushed', 'green', 'merged']),
  merge_policy: z.enum(['never', 'when-green']),
  dry_run: z.boolean(),
  waves: z.array(Wave),
  contention: z.array(ContentionEntry),
  excluded: z.array(Exclusion),
  lanes: z.array(LaneRecord),
  summary: Summary,
  queue: QueueBoard.optional(),
  integration: z.array(IntegrationRecord).optional().describe('Per repository with integrate:, the integration of its lanes wave by wave and the release.'),
  runs: z
    .array(ChainRun)
    .optional()
    .describe('On GitHub Actions, the workflow runs the fleet ran in, in order: more than one when its DAG is deeper than the workflow has wave jobs.'),
});
export type Manifest = z.infer<typeof Manifest>;

export function emptyEvidence(): Evidence {
  return { verified_at: null, verified_by: null, branch_head: null, head_matches: null, files_match: null, fence_ok: null, patch: null, notes: [] };
}

export function emptyTimings(): Timings {
  return { wait_ms: null, clone_ms: null, directive_ms: null, checks_ms: null, commit_ms: null, push_ms: null, total_ms: null };
}

export function newLaneRecord(init: { repo: string; lane: string; wave: number | null; branch: string | null; depends_on: string[] }): LaneRecord {
  return {
    repo: init.repo,
    lane: init.lane,
    wave: init.wave,
    status: 'queued',
    phase: 'queued',
    started_at: null,
    updated_at: null,
    ended_at: null,
    branch: init.branch,
    base_branch: null,
    base_commit: null,
    commit: null,
    changed_files: [],
    pr_url: null,
    pr_number: null,
    ci_conclusion: null,
    merge_status: null,
    retry_count: 0,
    attempts: [],
    error: null,
    depends_on: init.depends_on,
    routing: null,
    log: null,
    evidence: emptyEvidence(),
    timings: emptyTimings(),
  };
}

/** What the plan made of one target: one lane's whole specification. */
export type RepoKind = 'github' | 'path' | 'url';

export interface LaneSpec {
  id: string;
  repo: string;
  repo_kind: RepoKind;
  title: string;
  directive: string;
  run: string | undefined;
  checks: string[];
  depends_on: string[];
  owns: string[];
  never: string[];
  exclusive: boolean;
  branch: string;
  base: string | undefined;
  /** Index in the fleet file's `targets`, for error messages. */
  index: number;
  /** How the lane's change is reviewed before it counts (an agent lane with `review:`), or null: not reviewed. */
  review: ResolvedReview | null;
  /**
   * One strategy of a target tried several ways (`strategies:`): the lane id is `<group>.<label>`, and lanes that
   * depend on the target depend on the group, whose checkpoint is its pick's.
   */
  strategy?: { group: string; label: string };
  /** Lanes of the same repository this one may run beside but must fit with: seams checked on the integrated tree. */
  soft_depends_on?: string[];
  /** A lane of the issue queue (source.issues): the issue it works on, which its PR closes (or is part of, for a slot). */
  issue?: LaneIssue;
}

export interface LaneIssue {
  number: number;
  slot: string | null;
  url: string;
  title: string;
  body: string;
  spec: { path: string; text: string } | null;
}

/** A lane's review settings with the fleet's and the target's merged and the panel cut to size. */
export interface ResolvedReview {
  /** The panel: the lenses that review each change, each with its brief. */
  lenses: { name: string; brief: string }[];
  rounds: number;
  block: Severity[];
  label: string;
}
