/**
 * The fleet file: what a user writes. Parsed from YAML or JSON by an adapter,
 * validated here. Pure: no I/O.
 */
import * as z from 'zod';
import { BUILTIN_LENSES, SEVERITIES, type Severity } from './review.js';
import { DEFAULT_PRIORITY_LABELS, DEFAULT_SPEC_PATTERNS } from './queue.js';
import { AGENT_CREDENTIALS } from './agent-credentials.js';

/** A lane id doubles as a path segment and a branch segment, so it is kept to a safe alphabet. */
export const LANE_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,99}$/;
/** The fleet name is used in branch names (`fleet/<name>/<lane>`). */
export const FLEET_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

const glob = z.string().min(1, 'a glob cannot be empty');

export const PersonaSchema = z
  .strictObject({
    name: z.string().regex(LANE_ID_PATTERN, 'use lowercase letters, digits, ".", "_" or "-"'),
    description: z.string().optional(),
    applies_to: z.array(glob).default([]).describe('Globs over changed files; each that matches one adds 2 to the score.'),
    keywords: z.array(z.string().min(1)).default([]).describe('Case-insensitive substrings of the lane title and body; each found adds 1.'),
    prompt: z.string().optional().describe('Extra instructions handed to the agent when this persona is selected.'),
  })
  .describe('A specialised agent persona, routed to lanes by file globs and keywords.');

/**
 * Why a variable cannot be set in `agent.env`, or undefined. The fleet file is committed and travels in the plan
 * artifact, so it holds no secret (a credential is a secret of the workflow); and the variables Fleet, git, the runner
 * and the sandbox own are not the agent's to set.
 */
export function agentEnvProblem(name: string): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return 'a variable name is letters, digits and "_", not starting with a digit';
  const credential = AGENT_CREDENTIALS.find((c) => c.variables.includes(name));
  if (credential)
    return `${name} is the agent's credential, which never belongs in the fleet file: pass it as the ${credential.input} secret of the reusable workflow (locally: set it in Fleet's environment)`;
  if (/^(FLEET|GITHUB|ACTIONS|RUNNER|GIT)_/.test(name) || ['PATH', 'HOME', 'TMPDIR', 'SHELL', 'USER', 'LOGNAME'].includes(name)) {
    return `${name} is set by Fleet, git or the runner for every lane and cannot be changed for the agent`;
  }
  return undefined;
}

/**
 * Why an agent command template cannot be used, or undefined: checked when
 * the fleet file is validated and again when the command is built.
 */
export function templateProblem(template: string): string | undefined {
  if (/\{prompt\}/.test(template)) {
    return '{prompt} is not a placeholder: the prompt is untrusted text and never becomes part of a shell command; read it from the file {prompt_file} names (e.g. "my-agent --prompt-file {prompt_file}", or "my-agent < {prompt_file}" for standard input)';
  }
  return undefined;
}

export const AgentSchema = z
  .strictObject({
    preset: z
      .enum(['claude', 'codex', 'command'])
      .default('command')
      .describe('claude: `claude -p <prompt> --output-format json`; codex: `codex exec <prompt>`; command: the `command` template.'),
    command: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Command template for preset `command` (or to override a preset binary). Placeholders: {prompt_file}, {repo}, {lane}, {branch}, each read from an environment variable (FLEET_PROMPT_FILE, FLEET_REPO, FLEET_LANE, FLEET_BRANCH); the prompt itself only ever arrives as the file {prompt_file}. Runs in a shell in the working copy.',
      ),
    args: z.array(z.string()).default([]).describe('Extra arguments appended to a preset command.'),
    personas: z.array(PersonaSchema).default([]),
    top_k: z.number().int().min(0).default(2).describe('How many personas to select per lane; 0 disables routing.'),
    fallback: z.string().optional().describe('Persona used when none scores above zero.'),
    install: z
      .union([z.literal(false), z.string().min(1)])
      .optional()
      .describe(
        'On GitHub Actions legs: the npm package spec that provides the agent CLI, installed once per leg and cached (default for claude: @anthropic-ai/claude-code, for codex: @openai/codex; none for command). false: use the CLI the runner already has. Pin a version (e.g. @anthropic-ai/claude-code@2.1.100) so every leg runs the same agent.',
      ),
    env: z
      .record(z.string(), z.string())
      .default({})
      .superRefine((vars, ctx) => {
        for (const name of Object.keys(vars)) {
          const problem = agentEnvProblem(name);
          if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
        }
      })
      .describe(
        'Variables every agent run gets (the worker, each lens, each fix round), locally and on every Actions leg: e.g. ANTHROPIC_BASE_URL for a gateway, ANTHROPIC_MODEL, CLAUDE_CODE_USE_BEDROCK. Not secrets: the fleet file is committed; a credential is a secret of the workflow.',
      ),
  })
  .describe('Run the directive as a prompt for a headless coding agent.');

const BUILTIN_LENS_NAMES = Object.keys(BUILTIN_LENSES) as [string, ...string[]];

export const LensSchema = z
  .union([
    z
      .enum(BUILTIN_LENS_NAMES, { error: () => `not a built-in lens (${BUILTIN_LENS_NAMES.join(', ')}); a lens of your own is {name, brief}` })
      .describe(`A built-in lens: ${BUILTIN_LENS_NAMES.join(', ')}.`),
    z.strictObject({
      name: z.string().regex(LANE_ID_PATTERN, 'use lowercase letters, digits, ".", "_" or "-"'),
      brief: z
        .string()
        .min(1, 'say what this lens looks for')
        .describe('What the lens doubts, in words: it is told to look for reasons the change is wrong from this angle.'),
    }),
  ])
  .describe("One reviewer of a lane's change: a built-in lens by name, or {name, brief}.");

/** The review settings a target may override one by one (none has a default here: an unset field keeps the fleet's). */
const reviewFields = {
  lenses: z.array(LensSchema).min(1, 'list at least one lens, or set review: false').describe('The lenses to draw the panel from, in order.'),
  panel: z.number().int().min(1).max(10).describe('How many lenses review each change (the first ones of `lenses`); default: all of them.'),
  rounds: z.number().int().min(1).max(10).describe('The round cap: review rounds (each after the first follows a fix round) before the lane goes to a person.'),
  block: z
    .array(z.enum(SEVERITIES))
    .describe('Severities that must be fixed: a finding of these is ACCEPT whatever the worker says. Lower ones the worker may mark FIX_LATER or DEFER.'),
  label: z.string().min(1).describe('The label of a PR whose review reached the round cap with findings open (it is also made a draft).'),
};

export const REVIEW_DEFAULTS = { lenses: [...BUILTIN_LENS_NAMES], rounds: 2, block: ['critical', 'high'] as Severity[], label: 'fleet:needs-person' };

export const ReviewSchema = z
  .strictObject({
    lenses: reviewFields.lenses.default(REVIEW_DEFAULTS.lenses),
    panel: reviewFields.panel.optional(),
    rounds: reviewFields.rounds.default(REVIEW_DEFAULTS.rounds),
    block: reviewFields.block.default(REVIEW_DEFAULTS.block),
    label: reviewFields.label.default(REVIEW_DEFAULTS.label),
  })
  .describe(
    "Review each agent lane's change before it counts: a panel of lenses (agent runs told to look for reasons the change is wrong) raises findings, the worker gives each a disposition (ACCEPT, FIX_LATER, DEFER) and fixes the ACCEPT ones, up to `rounds` rounds. See docs/review.md.",
  );

export const TargetReviewSchema = z
  .union([
    z.literal(false),
    z.strictObject({
      lenses: reviewFields.lenses.optional(),
      panel: reviewFields.panel.optional(),
      rounds: reviewFields.rounds.optional(),
      block: reviewFields.block.optional(),
      label: reviewFields.label.optional(),
    }),
  ])
  .describe(
    "false: this lane is not reviewed. An object: the fleet's review settings with these fields replaced (the built-in defaults where the fleet has no review:).",
  );

export const RelaySchema = z
  .union([
    z.literal(false),
    z.strictObject({
      item_chars: z.number().int().min(40).max(2000).default(300).describe('Each discovery is cut to this many characters.'),
      max_chars: z.number().int().min(200).max(32_000).default(4000).describe('The whole relay a lane receives stays within this many characters.'),
      scope: z
        .enum(['fleet', 'repository'])
        .default('fleet')
        .describe(
          "fleet: every later lane receives what any earlier lane found; repository: only lanes of the same repository (keeps one repository's findings out of another's prompts).",
        ),
    }),
  ])
  .describe(
    'The discovery relay between waves: what lanes leave in $FLEET_DISCOVERIES (or a "Discoveries" section of the agent\'s final answer) reaches the lanes of later waves, in the agent prompt and as the file $FLEET_RELAY. On by default; false turns it off. See docs/relay.md.',
  );

export const BudgetSchema = z
  .strictObject({
    lane: z
      .strictObject({
        turns: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe('Agent turns one lane may take, over all its agent runs (attempts, lenses, dispositions, fix rounds), where the agent CLI reports them.'),
        cost_usd: z
          .number()
          .positive()
          .optional()
          .describe('Dollars one lane may spend, over all its agent runs, where the agent CLI reports cost (Claude Code).'),
      })
      .optional(),
    fleet: z
      .strictObject({
        cost_usd: z.number().positive().optional().describe("The fleet's cost ceiling: once reached, no new lane, attempt or lens starts."),
      })
      .optional(),
  })
  .describe('Spending caps for agent fleets; see docs/budgets.md.');

/** A strategy label becomes part of a lane id (`<lane>.<label>`) and of a branch (`fleet/<name>/<lane>/<label>`). */
export const STRATEGY_LABEL_PATTERN = /^[a-z0-9][a-z0-9_-]{0,30}$/;

export const StrategySchema = z
  .strictObject({
    label: z.string().regex(STRATEGY_LABEL_PATTERN, 'use lowercase letters, digits, "_" or "-" (at most 31)'),
    directive: z.string().min(1).optional().describe("This strategy's directive (the agent's prompt); default: the lane's."),
    run: z.string().min(1).optional().describe("This strategy's command; default: the lane's."),
  })
  .describe('One way to try a hard change: it runs as its own lane on fleet/<name>/<lane>/<label>.');

export const PICK_RULES = ['first-green', 'smallest-green-diff', 'fewest-open-findings', 'person'] as const;

export const SpeculativeSchema = z
  .strictObject({
    pick: z
      .enum(PICK_RULES)
      .default('first-green')
      .describe(
        'How the winner is chosen once every strategy of a target has finished: the first to end green, the green one with the smallest diff, the green one with the fewest open review findings, or a person (every strategy opens a draft PR).',
      ),
    strategies: z.array(StrategySchema).min(2).max(10).optional().describe('Strategies for every target that lists none of its own.'),
    count: z
      .number()
      .int()
      .min(2)
      .max(10)
      .optional()
      .describe("Without strategies: this many copies of each lane's own directive (labels s1, s2, …): an agent tries the same change several times."),
  })
  .describe('Speculative strategies: a hard change tried several ways at once; only the pick opens a PR. See docs/strategies.md.');

export const IntegrateSchema = z
  .strictObject({
    branch: z
      .string()
      .min(1)
      .default('fleet/{name}/_integration')
      .describe("The integration branch each wave's lanes are merged into, one at a time; {name} is the fleet name."),
    release: z
      .string()
      .min(1)
      .default('fleet/{name}/_release')
      .describe("The release branch cut from the last verified integration at the end, and the one PR's head."),
    seam_checks: z.array(z.string().min(1)).default([]).describe("Commands that check a soft edge on the integrated tree; default: both lanes' checks."),
    checks: z.array(z.string().min(1)).optional().describe("The global seam gate run on the release branch; default: every integrated lane's checks."),
    title: z.string().min(1).optional().describe('The title of the one PR; default "<name>: integrated".'),
  })
  .describe('Integrate the lanes of each repository into one branch after every wave, and open one PR for the whole fleet at the end. See docs/integrate.md.');

export const MergeSchema = z
  .strictObject({
    policy: z
      .enum(['never', 'when-green'])
      .default('never')
      .describe('never: leave the branch (or PR) for a person. when-green: merge once checks pass and the branch is mergeable.'),
    method: z.enum(['merge', 'squash', 'rebase', 'fast-forward']).default('squash'),
  })
  .describe('Fleet never merges unless this says so.');

export const CheckpointSchema = z
  .enum(['pushed', 'green', 'merged'])
  .describe('What a dependency must reach before its dependents start: its branch pushed, its PR green, or merged.');

export const TargetSchema = z
  .strictObject({
    repo: z.string().min(1).describe('owner/repo on GitHub, a local path (./x, /x, ~/x) or a git URL.'),
    lane: z
      .string()
      .regex(LANE_ID_PATTERN, 'use lowercase letters, digits, ".", "_" or "-" (at most 100)')
      .optional()
      .describe('Lane id; defaults to the repository name. Needed to run several lanes in one repository.'),
    title: z.string().optional().describe('Title of the change (commit subject, PR title); defaults to the fleet name and lane.'),
    depends_on: z.array(z.string().min(1)).default([]).describe('Lane ids that must reach their checkpoint first.'),
    soft_depends_on: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'Lanes of the same repository this one may run beside (same wave) but must fit with: each is a seam checked on the integrated tree (needs integrate:).',
      ),
    owns: z.array(glob).default([]).describe('Files this lane may change; empty means the whole repository.'),
    never: z.array(glob).default([]).describe('Files this lane must never change, even inside `owns`.'),
    exclusive: z.boolean().default(false).describe('Run this lane in a wave of its own.'),
    directive: z.string().optional().describe('Overrides the fleet directive for this lane.'),
    run: z.string().min(1).optional().describe('Overrides the fleet `run` command for this lane.'),
    checks: z.array(z.string().min(1)).optional().describe('Overrides the fleet checks for this lane.'),
    base: z.string().min(1).optional().describe('Base branch; defaults to the repository default branch.'),
    review: TargetReviewSchema.optional(),
    strategies: z
      .array(StrategySchema)
      .min(2)
      .max(10)
      .optional()
      .describe('Try this lane several ways at once (speculative.pick chooses the one that opens a PR).'),
  })
  .describe('One lane: a repository and, optionally, its scope and dependencies.');

export const DiscoverSourceSchema = z
  .union([
    z.strictObject({ org: z.string().min(1).describe('Every repository of this organization.') }),
    z.strictObject({ user: z.string().min(1).describe('Every repository this user owns.') }),
    z.strictObject({ topic: z.string().min(1), owner: z.string().min(1).describe('Repositories of this owner carrying the topic.') }),
    z.strictObject({ search: z.string().min(1).describe('A GitHub repository search query, e.g. "org:acme language:go".') }),
  ])
  .describe('Where to find more targets on GitHub.');

export const GitHubSchema = z
  .strictObject({
    discover: z.array(DiscoverSourceSchema).default([]).describe('Sources of targets besides the explicit list.'),
    include: z.array(glob).default([]).describe('Keep only discovered owner/repo names matching one of these globs.'),
    exclude: z.array(glob).default([]).describe('Drop discovered owner/repo names matching one of these globs (accounted for as excluded).'),
    allow_forks: z.boolean().default(false).describe('Run on forks too (they are excluded by default).'),
  })
  .describe('GitHub-only settings: target discovery.');

export const QUEUE_LABEL_DEFAULTS = { in_flight: 'fleet:in-flight', blocked: 'fleet:blocked', needs_person: 'fleet:needs-person' };

export const IssueSourceSchema = z
  .strictObject({
    repo: z.string().min(1).describe('owner/name of the repository whose issues are the queue (its lanes run there).'),
    label: z
      .string()
      .min(1)
      .default('fleet:ready')
      .describe('The ready label: every open issue carrying it is in the queue. Only people with triage access can label, so this is the trust boundary.'),
    priority: z
      .array(z.string().min(1))
      .default(DEFAULT_PRIORITY_LABELS)
      .describe('Priority labels, most urgent first: ready issues start in this order, then lowest number first.'),
    spec: z
      .strictObject({
        patterns: z
          .array(z.string().min(1))
          .min(1)
          .default(DEFAULT_SPEC_PATTERNS)
          .describe(
            'Regular expressions (case-insensitive, per line): a body matching none says nothing about what done looks like (NO_SPEC). A `Spec: path` line pointing to a file on the base branch also counts.',
          ),
        comment: z.boolean().default(true).describe('Comment once on a NO_SPEC issue saying what is missing (never a second time).'),
        unlabel: z.boolean().default(false).describe('Take the ready label off a NO_SPEC issue, so it leaves the queue until a person puts it back.'),
      })
      .default({ patterns: DEFAULT_SPEC_PATTERNS, comment: true, unlabel: false }),
    labels: z
      .strictObject({
        in_flight: z.string().min(1).default(QUEUE_LABEL_DEFAULTS.in_flight).describe("Set while an issue has a lane or an open PR; Fleet's own."),
        blocked: z.string().min(1).default(QUEUE_LABEL_DEFAULTS.blocked).describe("Set while an issue waits on other work or a gate; Fleet's own."),
        needs_person: z
          .string()
          .min(1)
          .default(QUEUE_LABEL_DEFAULTS.needs_person)
          .describe(
            "A person's label: an issue carrying it is BLOCKED_PERSON. Fleet sets it when a PR of the issue is closed without merging, and never removes it.",
          ),
      })
      .default(QUEUE_LABEL_DEFAULTS),
  })
  .describe(
    'A ready queue of GitHub issues: each open issue with the ready label becomes a lane (several with a "## Parallel plan"). See docs/issue-queue.md.',
  );

export const SourceSchema = z
  .strictObject({
    issues: IssueSourceSchema.optional(),
  })
  .describe('Sources of lanes besides targets: and github.discover.');

export const PullRequestSchema = z
  .strictObject({
    labels: z.array(z.string().min(1)).default([]),
    reviewers: z.array(z.string().min(1)).default([]),
    team_reviewers: z.array(z.string().min(1)).default([]),
    assignees: z.array(z.string().min(1)).default([]),
    draft: z.boolean().default(false).describe('Open every PR as a draft.'),
    open: z
      .boolean()
      .default(true)
      .describe(
        'false: push-only mode: each lane pushes (and is verified by) its branch, and no PR is opened; people or another tool open them. `fleet run --push-only` sets it.',
      ),
    fork: z
      .boolean()
      .default(false)
      .describe(
        'Fork mode, for repositories the token cannot push to: each target is forked (once; an existing fork is reused), the lane branch is pushed to the fork, and the PR is opened from it into the target. `fleet run --fork` sets it.',
      ),
    fork_owner: z
      .string()
      .regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/, 'an organization name, as GitHub spells it')
      .optional()
      .describe("The organization the forks go to; default: the token's own user."),
  })
  .describe('How lane pull requests are opened on GitHub.');

export const CiSchema = z
  .strictObject({
    wait: z
      .boolean()
      .default(false)
      .describe('Wait for CI on the pushed commit; a red CI with retries left runs the directive again with the failure fed back.'),
    timeout_minutes: z.number().positive().max(360).default(30),
  })
  .describe("Waiting for the target repositories' own CI (GitHub).");

export const ExcludeSchema = z.strictObject({
  repo: z.string().min(1),
  reason: z.string().min(1).default('excluded-by-config'),
});

export const FleetFileSchema = z
  .strictObject({
    $schema: z.string().optional(),
    name: z.string().regex(FLEET_NAME_PATTERN, 'use lowercase letters, digits, ".", "_" or "-" (at most 64); it is used in branch names'),
    directive: z.string().describe('What every lane does, in words. Handed to the worker as FLEET_DIRECTIVE and to agents as the prompt.'),
    run: z.string().min(1).optional().describe('Shell command run in each working copy (sh -c). Exactly one of run and agent.'),
    agent: AgentSchema.optional(),
    checks: z.array(z.string().min(1)).default([]).describe('Commands run after the directive; a non-zero exit fails the attempt.'),
    forge: z
      .enum(['local', 'github'])
      .default('local')
      .describe('local: repositories on disk or git URLs; github: owner/repo targets on GitHub (or GitHub Enterprise via GITHUB_API_URL).'),
    targets: z.array(TargetSchema).default([]).describe('The lanes. At least one, unless targets_file or github.discover gives them.'),
    targets_file: z
      .string()
      .min(1)
      .optional()
      .describe('A file with one more target per line (# comments), relative to this file; each gets the fleet defaults.'),
    github: GitHubSchema.default({ discover: [], include: [], exclude: [], allow_forks: false }),
    source: SourceSchema.optional(),
    pr: PullRequestSchema.default({ labels: [], reviewers: [], team_reviewers: [], assignees: [], draft: false, open: true, fork: false }),
    ci: CiSchema.default({ wait: false, timeout_minutes: 30 }),
    exclude: z.array(ExcludeSchema).default([]).describe('Targets to account for but never run, each with a reason.'),
    missing_targets: z
      .enum(['fail', 'exclude'])
      .default('fail')
      .describe(
        'A listed target that is not there (a local path with no repository, a repository GitHub does not have or the token cannot see). fail: the plan stops and names every such target (exit 2), since a target that is not there is far more often a mistake in this file than a state of the world; exclude: it is accounted for as excluded and the rest run. A repository that is there in some state (archived, a fork, disabled, empty, read-only) is always excluded with its reason, never a failure. On the command line, --allow-missing is exclude.',
      ),
    owns: z.array(glob).default([]).describe('Default `owns` for every lane.'),
    never: z.array(glob).default([]).describe("Globs no lane may change, added to each lane's own `never`."),
    max_parallel: z.number().int().min(1).max(256).default(8).describe('The global concurrency budget: lanes running at once.'),
    legs: z
      .enum(['auto', 'per-lane', 'shared'])
      .default('auto')
      .describe(
        "On GitHub Actions, how a wave's lanes are spread over matrix legs (jobs). shared: max_parallel legs, each running its share of the lanes one after another (more legs, in full rounds of max_parallel, only where a leg would not fit half of the wave job's timeout); per-lane: one lane per leg, a runner of its own for every lane, up to 256 a wave (a runner start per lane); auto: per-lane for a fleet with agent lanes (lanes of one leg share the agent CLI it installs), shared otherwise. Ignored by the CLI.",
      ),
    max_retries: z.number().int().min(0).max(10).default(2).describe('Extra attempts after a failing directive or check.'),
    timeout_minutes: z.number().positive().max(360).default(30).describe('Per attempt of the directive (and of each check).'),
    isolation: z
      .enum(['auto', 'required', 'off'])
      .default('auto')
      .describe(
        "Run each directive and check in a PID namespace of its own, where Fleet's processes (and the credentials in their environment) cannot be seen. auto: where the machine allows, and the report says where it did not; required: a lane fails rather than run a directive without; off: never (see docs/security.md).",
      ),
    git_timeout_minutes: z
      .number()
      .positive()
      .max(360)
      .default(10)
      .describe('Per try of each git clone, fetch and push; a stalled remote is cut off here and tried again (3 tries in all).'),
    max_waves: z.number().int().min(1).max(1000).default(20).describe('The planner refuses a DAG deeper than this.'),
    branch: z.string().min(1).default('fleet/{name}/{lane}').describe('Branch name template; {name} and {lane} are replaced.'),
    commit_message: z.string().optional().describe('Commit message; defaults to the lane title followed by the directive.'),
    commit_author: z
      .string()
      .regex(/^[^<>\n]*[^<>\s][^<>\n]* <[^<>\s]+>$/, 'write it as "Name <email>", as git shows an author')
      .optional()
      .describe(
        'Author and committer of the lanes\' commits, as "Name <email>" (`fleet run --author` sets it). Default: your own git identity (user.name and user.email of your git configuration), else Fleet <fleet@users.noreply.github.com>.',
      ),
    sign_commits: z
      .enum(['auto', 'required', 'off'])
      .default('auto')
      .describe(
        "auto: sign the lanes' commits when your git configuration signs commits (commit.gpgsign), with its key and format; required: sign them, and fail a lane whose commit could not be signed; off: never sign.",
      ),
    branch_conflict: z
      .enum(['fail', 'replace', 'rebase'])
      .default('fail')
      .describe(
        "What a lane does when its branch holds commits Fleet did not make for it (a person pushed a fix between runs). fail: the lane fails (branch-conflict) before anything runs, their commits untouched; replace: the lane's new commit replaces them (force-push with a lease); rebase: they are replayed onto the base and the directive runs on top, so the branch keeps them under Fleet's commit (a replay that conflicts fails the lane).",
      ),
    checkpoint: CheckpointSchema.default('pushed'),
    merge: MergeSchema.default({ policy: 'never', method: 'squash' }),
    review: ReviewSchema.optional(),
    budget: BudgetSchema.optional(),
    speculative: SpeculativeSchema.optional(),
    integrate: IntegrateSchema.optional(),
    relay: RelaySchema.default({ item_chars: 300, max_chars: 4000, scope: 'fleet' }),
  })
  .describe('A Fleet file: one directive applied to many targets.');

export type FleetFileInput = z.input<typeof FleetFileSchema>;
export type FleetFile = z.output<typeof FleetFileSchema>;
export type TargetSpec = z.output<typeof TargetSchema>;
export type Persona = z.output<typeof PersonaSchema>;
export type AgentSpec = z.output<typeof AgentSchema>;
export type ReviewSpec = z.output<typeof ReviewSchema>;
export type RelaySpec = z.output<typeof RelaySchema>;
export type BudgetSpec = z.output<typeof BudgetSchema>;
export type StrategySpec = z.output<typeof StrategySchema>;
export type PickRule = (typeof PICK_RULES)[number];
export type IntegrateSpec = z.output<typeof IntegrateSchema>;
export type IssueSourceSpec = z.output<typeof IssueSourceSchema>;
export type TargetReviewSpec = z.output<typeof TargetReviewSchema>;

/** A schema without the wrappers that only say a value may be left out (optional, default, nullable). */
function unwrapped(schema: z.ZodType): z.ZodType {
  let s = schema;
  while (s instanceof z.ZodOptional || s instanceof z.ZodDefault || s instanceof z.ZodNullable) s = s.unwrap() as z.ZodType;
  return s;
}

/** The alternatives a value may take: each option of a union (unions of unions flattened), else the schema itself. */
function alternatives(schema: z.ZodType): z.ZodType[] {
  const s = unwrapped(schema);
  return s instanceof z.ZodUnion ? (s.options as z.ZodType[]).flatMap(alternatives) : [s];
}

/**
 * The schemas that may hold the value at `path` of a fleet file (`['targets', 2, 'owns']`), each unwrapped; several
 * when a union is on the way (a target's `review` is `false` or a mapping), none when the path leads nowhere the
 * schema knows. Messages about a value that does not fit read them: which fields a mapping has, what a list holds.
 */
export function schemasAt(path: readonly PropertyKey[], root: z.ZodType = FleetFileSchema): z.ZodType[] {
  let here = alternatives(root);
  for (const part of path) {
    here = here.flatMap((s): z.ZodType[] => {
      if (s instanceof z.ZodObject && typeof part === 'string' && part in s.shape) return alternatives(s.shape[part] as z.ZodType);
      if (s instanceof z.ZodArray && typeof part === 'number') return alternatives(s.element as z.ZodType);
      return [];
    });
  }
  return here;
}

/** The field names a mapping at `path` may hold (of every alternative, in schema order), or none when no mapping is there. */
export function fieldsAt(path: readonly PropertyKey[]): string[] {
  const names = schemasAt(path).flatMap((s) => (s instanceof z.ZodObject ? Object.keys(s.shape) : []));
  return [...new Set(names)];
}

/** What the reference says about the field at `path` (its `.describe()` text), if anything. */
export function descriptionAt(path: readonly PropertyKey[]): string | undefined {
  if (!path.length) return undefined;
  for (const parent of schemasAt(path.slice(0, -1))) {
    const last = path[path.length - 1]!;
    let s: z.ZodType | undefined =
      parent instanceof z.ZodObject && typeof last === 'string'
        ? (parent.shape[last] as z.ZodType | undefined)
        : parent instanceof z.ZodArray
          ? (parent.element as z.ZodType)
          : undefined;
    // The description may sit on any wrapper: `.default([]).describe(…)` puts it on the outside.
    while (s) {
      if (s.description) return s.description;
      s = s instanceof z.ZodOptional || s instanceof z.ZodDefault || s instanceof z.ZodNullable ? (s.unwrap() as z.ZodType) : undefined;
    }
  }
  return undefined;
}

/**
 * Where in a fleet file a mapping has a field called `key`, as `pr` or `targets[].review` (`[]`: any entry of the
 * list); the top level is ''. For an unknown field that is a known one written in the wrong place.
 */
export function fieldHomes(key: string): string[] {
  const homes = new Set<string>();
  const walk = (schema: z.ZodType, at: string, depth: number): void => {
    if (depth > 6) return; // the fleet file nests four deep; this only guards a future recursive schema
    for (const s of alternatives(schema)) {
      if (s instanceof z.ZodArray) walk(s.element as z.ZodType, `${at}[]`, depth + 1);
      if (!(s instanceof z.ZodObject)) continue;
      if (key in s.shape) homes.add(at);
      for (const [name, field] of Object.entries(s.shape as Record<string, z.ZodType>)) walk(field, at ? `${at}.${name}` : name, depth + 1);
    }
  };
  walk(FleetFileSchema, '', 0);
  // The nearest the top first: `pr` before `source.issues`.
  return [...homes].sort((a, b) => a.split('.').length - b.split('.').length);
}
