/**
 * `fleet doctor`: before a first fleet, everything the set-up docs ask for, read from GitHub and held against what
 * this fleet needs (src/core/doctor.ts): the credential and its permissions, a sample of the targets, the workflow
 * files the lanes may change, the approval environment and its reviewers, and the Actions settings and artifact
 * retention of the repository the fleet runs from. Every finding at once, each with its fix; nothing is changed.
 */
import {
  appPermissionFindings,
  classicScopeFindings,
  type Finding,
  lanesThatMayChangeWorkflows,
  neededAppPermissions,
  RUN_LIFETIME_DAYS,
} from '../core/doctor.js';
import type { LaneSpec } from '../core/model.js';
import type { ResolvedFleet } from '../core/validate.js';
import { oneLine } from '../core/markdown.js';
import type { ActionsSettings, Forge, SetupProbe } from '../ports.js';
import { redact } from '../util/secrets.js';

export interface DoctorOptions {
  /** The repository the fleet's workflows run in (`owner/name`): its approval environment and Actions settings. */
  controlRepo?: string;
  /** The approval environment the dispatch workflow names; `none`: no gate, by choice. Undefined: not checked. */
  approvalEnvironment?: string;
  /** Where Fleet's workflow and action come from (`owner/name`), for the allowed-actions check. */
  fleetRepo?: string;
  /** How many listed targets to check (default 10). */
  sample?: number;
  /** The runner's GITHUB_RETENTION_DAYS, when doctor runs in a job. */
  retentionDays?: number;
}

const MANAGE_ENVIRONMENTS = 'https://docs.github.com/actions/how-tos/deploy/configure-and-manage-deployments/manage-environments';
const ACTIONS_SETTINGS =
  'https://docs.github.com/repositories/managing-your-repositorys-settings-and-features/enabling-features-for-your-repository/managing-github-actions-settings-for-a-repository';

/** A check that could not be made is a finding of its own (what failed, redacted), never the end of the others. */
async function guarded(check: string, run: () => Promise<Finding[]>): Promise<Finding[]> {
  try {
    return await run();
  } catch (err) {
    return [
      {
        check,
        status: 'fail',
        message: `could not be checked: ${redact(oneLine((err as Error).message ?? String(err)))}`,
        fix: 'see the error; a 5xx or a network error passes: run fleet doctor again',
      },
    ];
  }
}

export async function runDoctor(fleet: ResolvedFleet, forge: Forge, probe: SetupProbe | undefined, opts: DoctorOptions = {}): Promise<Finding[]> {
  const sample = opts.sample ?? 10;
  if (!probe) {
    return [
      {
        check: 'forge',
        status: 'ok',
        message: `forge: ${fleet.file.forge}: the targets are repositories on disk or git URLs; there is no GitHub set-up to check`,
      },
      ...(await guarded('targets', () => targetFindings(fleet, forge, sample))),
    ];
  }
  const findings: Finding[] = [];
  const credentialFindings = await guarded('credential', () => credentialChecks(fleet, probe));
  findings.push(...credentialFindings);
  if (credentialFindings.some((f) => f.check === 'credential' && f.status === 'fail')) return findings;
  findings.push(...(await guarded('targets', () => targetFindings(fleet, forge, sample))));
  findings.push(...(await guarded('workflow files', () => workflowFindings(fleet, forge))));
  if (opts.controlRepo) {
    const repo = opts.controlRepo;
    findings.push(...(await guarded('approval gate', () => gateFindings(probe, repo, opts.approvalEnvironment))));
    findings.push(...(await guarded('actions settings', () => actionsFindings(probe, opts))));
  } else {
    findings.push({
      check: 'control repository',
      status: 'skip',
      message: 'no repository to run the fleet from was named, so its approval environment and Actions settings were not checked',
      fix: 'pass --control-repo OWNER/NAME (the repository that holds the fleet file and its workflows); in a workflow job it is GITHUB_REPOSITORY',
    });
  }
  return findings;
}

async function credentialChecks(fleet: ResolvedFleet, probe: SetupProbe): Promise<Finding[]> {
  const c = await probe.credential();
  if (c.kind === 'refused') {
    return [
      {
        check: 'credential',
        status: 'fail',
        message: `GitHub refused the token (${c.detail})`,
        fix: 'the token is expired, revoked or mistyped: make a new one, or use a GitHub App (docs/github-app.md)',
      },
    ];
  }
  if (c.kind === 'app') {
    return [
      { check: 'credential', status: 'ok', message: `a GitHub App installation${c.account ? ` on ${c.account}` : ''}: Fleet mints and renews its tokens` },
      ...appPermissionFindings(c.permissions, neededAppPermissions(fleet.file)),
    ];
  }
  if (c.kind === 'classic-pat') {
    return [
      {
        check: 'credential',
        status: 'warn',
        message: `a classic PAT${c.login ? ` of ${c.login}` : ''}: it acts as that person on every repository they can reach, and its pushes and PRs are theirs`,
        fix: 'prefer a GitHub App (docs/github-app.md) or a fine-grained PAT limited to the targets',
      },
      ...classicScopeFindings(c.scopes),
    ];
  }
  return [
    {
      check: 'credential',
      status: 'ok',
      message: `a token${c.login ? ` of ${c.login}` : ''} that does not say what it grants (a fine-grained PAT, or one minted elsewhere): the targets below show what it can reach`,
    },
    {
      check: 'permissions',
      status: 'warn',
      message: 'a fine-grained PAT cannot be asked for its permissions: a missing one shows at the first push or PR',
      fix: 'give it Contents, Pull requests and Issues: Read and write, and Checks, Commit statuses and Actions: Read-only, on the targets (docs/actions/tokens.md, Permissions)',
    },
  ];
}

/** The listed targets, a sample of them: each one the credential cannot see or push to is a finding. */
async function targetFindings(fleet: ResolvedFleet, forge: Forge, sample: number): Promise<Finding[]> {
  const excluded = new Set(fleet.excluded.map((e) => e.lane));
  const byRepo = new Map<string, LaneSpec>();
  for (const l of fleet.lanes) if (!excluded.has(l.id) && !byRepo.has(l.repo.toLowerCase())) byRepo.set(l.repo.toLowerCase(), l);
  const lanes = [...byRepo.values()];
  if (!lanes.length) {
    return [
      {
        check: 'targets',
        status: 'skip',
        message: fleet.file.github.discover
          ? 'the targets are found by github.discover when the plan runs: `fleet plan` lists them'
          : 'no listed target to check',
      },
    ];
  }
  const picked = lanes.slice(0, sample);
  const checks = await forge.checkTargets(picked);
  const findings: Finding[] = [];
  for (const c of checks) {
    if (c.ok) continue;
    const missing = c.reason === 'not-found' || c.reason === 'not-a-repository';
    findings.push({
      check: `target ${c.repo}`,
      status: missing || c.reason === 'no-push-permission' || c.reason === 'forbidden' || c.reason === 'unreachable' ? 'fail' : 'warn',
      message: `${c.reason}${c.detail ? `: ${c.detail}` : ''}`,
      fix: targetFix(c.reason, fleet.file.forge),
    });
  }
  const fine = checks.filter((c) => c.ok).length;
  const of =
    picked.length < lanes.length ? `${picked.length} of the ${lanes.length} targets (the first; --sample N checks more)` : `the ${lanes.length} target(s)`;
  findings.unshift({
    check: 'targets',
    status: fine === checks.length ? 'ok' : 'warn',
    message: `${fine} of ${of} can be cloned and pushed to`,
  });
  return findings;
}

function targetFix(reason: string, forge: string): string {
  if (forge === 'local') return 'fix the path in the fleet file, or list the target under exclude: with a reason';
  switch (reason) {
    case 'not-found':
      return 'the repository does not exist or the credential cannot see it: fix the name, install the GitHub App on it (the installation\'s "Repository access"), or give the PAT access to it';
    case 'no-push-permission':
      return 'the credential can read it but not push: a GitHub App must be installed on it (the installation\'s "Repository access") with Contents: Read and write, a PAT needs write access to it; or set pr.fork: true to push to a fork';
    case 'archived':
    case 'disabled':
    case 'fork':
    case 'empty':
      return 'the plan excludes it with this reason; remove it from the targets if that is not what you want';
    default:
      return 'see the reason; the plan excludes such a target';
  }
}

async function workflowFindings(fleet: ResolvedFleet, forge: Forge): Promise<Finding[]> {
  const { only, may } = lanesThatMayChangeWorkflows(fleet.lanes);
  if (!only.length && !may.length) {
    return [{ check: 'workflow files', status: 'ok', message: "no lane's fence lets it change .github/workflows/: the Workflows permission is not needed" }];
  }
  const access = forge.workflowWrites ? await forge.workflowWrites() : null;
  if (access?.allowed) return [{ check: 'workflow files', status: 'ok', message: `${access.credential} may push changes to workflow files` }];
  const names = (ls: LaneSpec[]) =>
    `${ls
      .slice(0, 5)
      .map((l) => l.id)
      .join(', ')}${ls.length > 5 ? ` and ${ls.length - 5} more` : ''}`;
  const out: Finding[] = [];
  if (!access) {
    out.push({
      check: 'workflow files',
      status: 'warn',
      message: `lanes may change .github/workflows/ (${names([...only, ...may])}), and the token does not say whether GitHub would take such a push`,
      fix: 'a fine-grained PAT needs Workflows: Read and write for that; or keep workflow files out of the lanes with never: [".github/workflows/**"]',
    });
    return out;
  }
  if (only.length) {
    out.push({
      check: 'workflow files',
      status: 'fail',
      message: `lanes fenced to workflow files only (${names(only)}) would be excluded: GitHub refuses their push from ${access.credential}, which lacks the Workflows permission`,
      fix: access.fix,
    });
  }
  if (may.length) {
    out.push({
      check: 'workflow files',
      status: 'warn',
      message: `lanes whose fence includes .github/workflows/ (${names(may)}) fail at their push if the directive changes a workflow file: ${access.credential} lacks the Workflows permission`,
      fix: `${access.fix}; or, if the directive should never change them, add never: [".github/workflows/**"]`,
    });
  }
  return out;
}

async function gateFindings(probe: SetupProbe, repo: string, environment: string | undefined): Promise<Finding[]> {
  if (environment === undefined) return [];
  if (environment.trim().toLowerCase() === 'none') {
    return [
      {
        check: 'approval gate',
        status: 'warn',
        message: 'none, by choice (approval-environment: none): a dispatched directive runs without a second person seeing it first',
        fix: `create an environment with required reviewers and name it instead, where the plan allows (${MANAGE_ENVIRONMENTS})`,
      },
    ];
  }
  const [env, visibility] = await Promise.all([probe.environment(repo, environment), probe.visibility(repo)]);
  if ('reviewers' in env && env.reviewers.length) {
    return [{ check: 'approval gate', status: 'ok', message: `environment "${environment}" of ${repo} holds each plan for ${env.reviewers.join(', ')}` }];
  }
  if ('unreadable' in env) {
    return [
      {
        check: 'approval gate',
        status: 'warn',
        message: `environment "${environment}" of ${repo} could not be read (${env.unreadable})`,
        fix: 'the token needs Actions: Read-only on that repository (a workflow job: permissions: actions: read)',
      },
    ];
  }
  const what = 'missing' in env ? `${repo} has no environment "${environment}"` : `environment "${environment}" of ${repo} has no required reviewers`;
  const privateRepo = visibility === 'private' || visibility === 'internal';
  const setUp = `in ${repo}, Settings → Environments → ${'missing' in env ? 'New environment' : `"${environment}"`}, tick Required reviewers, add who approves fleet plans, Save protection rules (${MANAGE_ENVIRONMENTS})`;
  const fix = privateRepo
    ? `${repo} is ${visibility}: required reviewers on a ${visibility} repository need GitHub Enterprise. On Enterprise: ${setUp}. Otherwise run fleets from a public control repository, or choose no gate: set the repository variable FLEET_APPROVAL_ENVIRONMENT to none`
    : `${setUp}; or choose no gate: set the repository variable FLEET_APPROVAL_ENVIRONMENT to none`;
  return [{ check: 'approval gate', status: 'fail', message: `${what}, so the plan job refuses the fleet (a gate without reviewers opens at once)`, fix }];
}

async function actionsFindings(probe: SetupProbe, opts: DoctorOptions): Promise<Finding[]> {
  const repo = opts.controlRepo!;
  const settings = await probe.actionsSettings(repo);
  const out: Finding[] = [];
  if ('unreadable' in settings) {
    out.push({
      check: 'actions settings',
      status: 'skip',
      message: `the Actions settings of ${repo} could not be read (${settings.unreadable}): they take administration: read, which a workflow's GITHUB_TOKEN never has`,
      fix: `check them by hand in ${repo}, Settings → Actions → General: Actions enabled, and allowed: ${allowList(opts.fleetRepo)} (${ACTIONS_SETTINGS})`,
    });
  } else {
    out.push(...allowedActionsFindings(settings, repo, opts.fleetRepo));
  }
  const retention = opts.retentionDays ?? ('unreadable' in settings ? undefined : settings.retentionDays);
  const gated = opts.approvalEnvironment !== undefined && opts.approvalEnvironment !== 'none';
  if (retention !== undefined) {
    out.push(
      retention < RUN_LIFETIME_DAYS && gated
        ? {
            check: 'artifact retention',
            status: 'warn',
            message: `${repo} keeps artifacts ${retention} days, and a plan can wait at the gate 30 days in a run that lasts up to ${RUN_LIFETIME_DAYS}: a plan approved late finds its artifact gone`,
            fix: `raise it to at least ${RUN_LIFETIME_DAYS} days in Settings → Actions → General → Artifact and log retention`,
          }
        : { check: 'artifact retention', status: 'ok', message: `${repo} keeps artifacts ${retention} days` },
    );
  }
  return out;
}

function allowList(fleetRepo: string | undefined): string {
  return `${fleetRepo ?? "Fleet's repository"} and GitHub's own actions (actions/checkout, actions/setup-node, actions/github-script, actions/upload-artifact, actions/download-artifact, actions/cache)`;
}

function allowedActionsFindings(s: ActionsSettings, repo: string, fleetRepo: string | undefined): Finding[] {
  if (!s.enabled) {
    return [
      {
        check: 'actions settings',
        status: 'fail',
        message: `GitHub Actions is turned off in ${repo}: no fleet workflow can run`,
        fix: `turn it on in ${repo}, Settings → Actions → General → Actions permissions (${ACTIONS_SETTINGS})`,
      },
    ];
  }
  const owner = repo.split('/')[0]!.toLowerCase();
  if (s.allowedActions === 'local_only') {
    const foreign = fleetRepo && fleetRepo.split('/')[0]!.toLowerCase() !== owner;
    return [
      {
        check: 'actions settings',
        status: 'fail',
        message: `${repo} allows only actions and reusable workflows of ${owner}${foreign ? `, not ${fleetRepo}` : ''}, and Fleet's workflows use GitHub's own actions (actions/checkout…)`,
        fix: `allow ${allowList(fleetRepo)} in Settings → Actions → General → Actions permissions`,
      },
    ];
  }
  if (s.allowedActions === 'selected') {
    if (!s.selected) {
      return [
        {
          check: 'actions settings',
          status: 'warn',
          message: `${repo} allows selected actions only, and the list could not be read`,
          fix: `make sure it allows ${allowList(fleetRepo)}`,
        },
      ];
    }
    const gaps: string[] = [];
    if (!s.selected.githubOwned)
      gaps.push(
        "actions created by GitHub (Fleet's workflows use actions/checkout, actions/setup-node, actions/github-script and the artifact and cache actions)",
      );
    if (fleetRepo && fleetRepo.split('/')[0]!.toLowerCase() !== owner && !s.selected.patterns.some((p) => patternAllows(p, fleetRepo))) {
      gaps.push(`${fleetRepo} (add ${fleetRepo}@* or ${fleetRepo.split('/')[0]}/*)`);
    }
    if (gaps.length) {
      return [
        {
          check: 'actions settings',
          status: 'fail',
          message: `${repo} allows selected actions only, and not ${gaps.join(', nor ')}`,
          fix: 'add them in Settings → Actions → General → Actions permissions → Allow … and select non-… actions and reusable workflows',
        },
      ];
    }
  }
  return [
    {
      check: 'actions settings',
      status: 'ok',
      message: `${repo} runs workflows and allows ${s.allowedActions === 'all' ? 'every action' : "the actions Fleet's workflows use"}`,
    },
  ];
}

/** GitHub's allow-list patterns: `owner/repo@ref`, `owner/repo/path@ref`, `owner/*`, `owner/repo@*`, with `*` a wildcard. */
function patternAllows(pattern: string, repo: string): boolean {
  const [path] = pattern.trim().split('@');
  const re = new RegExp(`^${path!.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 'i');
  return re.test(repo) || re.test(`${repo}/.github/workflows/fleet.yml`);
}
