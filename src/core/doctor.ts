/**
 * `fleet doctor`'s judgements: what a fleet needs of its credential, its control repository and GitHub's settings,
 * held against what was read. Each finding is one line with its fix. Pure: the reads are src/steps/doctor.ts's.
 */
import { matchesAny } from './glob.js';
import { oneLine } from './markdown.js';
import type { FleetFile } from './fleet-file.js';
import { ownsOnlyWorkflows } from './fence.js';
import type { LaneSpec } from './model.js';

/** How long GitHub lets a run live, time at an approval gate included (up to 30 days of it). */
export const RUN_LIFETIME_DAYS = 35;

export type FindingStatus = 'ok' | 'warn' | 'fail' | 'skip';

export interface Finding {
  /** The check, one word or two: `credential`, `permissions`, `target acme/api`, `approval gate`… */
  check: string;
  status: FindingStatus;
  message: string;
  /** What to do about it (fail and warn). */
  fix?: string;
}

/** A GitHub App permission Fleet needs, at the level it needs it, and why. */
export interface NeededPermission {
  name: string;
  level: 'read' | 'write';
  why: string;
  /** Missing it fails the check (else it warns: Fleet works without it, with less). */
  required: boolean;
}

/** What an App needs on the targets for this fleet (docs/actions/tokens.md, "Permissions"). */
export function neededAppPermissions(file: FleetFile): NeededPermission[] {
  const prs = file.pr.open;
  const out: NeededPermission[] = [
    { name: 'contents', level: 'write', why: 'clone and push the lane branches', required: true },
    { name: 'metadata', level: 'read', why: 'read the repositories (granted to every App)', required: true },
  ];
  if (prs) out.push({ name: 'pull_requests', level: 'write', why: "open and update each lane's PR", required: true });
  if (file.source?.issues || (prs && (file.pr.labels.length > 0 || file.pr.assignees.length > 0))) {
    out.push({ name: 'issues', level: 'write', why: 'labels and assignees (GitHub keeps them on the issue side of a PR), the issue queue', required: true });
  }
  out.push(
    { name: 'checks', level: 'read', why: "read CI's check runs on each lane's commit", required: true },
    { name: 'statuses', level: 'read', why: "read CI's commit statuses on each lane's commit", required: true },
    { name: 'actions', level: 'read', why: 'tell whether a target has workflows (a sign that CI is coming)', required: false },
  );
  return out;
}

const RANK: Record<string, number> = { read: 1, write: 2, admin: 3 };

/** The App's permissions held against what the fleet needs: one finding for all that is there, one per gap. */
export function appPermissionFindings(granted: Readonly<Record<string, string>>, needed: readonly NeededPermission[]): Finding[] {
  const missing = needed.filter((p) => (RANK[granted[p.name] ?? ''] ?? 0) < RANK[p.level]!);
  const findings: Finding[] = missing.map((p) => ({
    check: 'permissions',
    status: p.required ? 'fail' : 'warn',
    message: `the GitHub App has ${granted[p.name] ? `${p.name}: ${granted[p.name]}` : `no ${p.name} permission`}, and the fleet needs ${p.name}: ${p.level} to ${p.why}`,
    fix: `in the App's settings, Permissions and events → Repository permissions → ${title(p.name)}: ${p.level === 'write' ? 'Read and write' : 'Read-only'}; then accept the new permissions on its installation (the organization's Settings → GitHub Apps → Configure)`,
  }));
  if (!missing.length) {
    findings.push({ check: 'permissions', status: 'ok', message: `the GitHub App has ${needed.map((p) => `${p.name}: ${granted[p.name]}`).join(', ')}` });
  }
  return findings;
}

/** A classic PAT's scopes against what a fleet needs: `repo` (or `public_repo` when every target is public). */
export function classicScopeFindings(scopes: readonly string[]): Finding[] {
  if (scopes.includes('repo')) return [{ check: 'permissions', status: 'ok', message: `the token (a classic PAT) has the scopes ${scopes.join(', ')}` }];
  if (scopes.includes('public_repo')) {
    return [
      {
        check: 'permissions',
        status: 'warn',
        message: 'the token (a classic PAT) has public_repo, not repo: it can push to public repositories only',
        fix: 'give it the repo scope if any target is private, or use a GitHub App (docs/github-app.md)',
      },
    ];
  }
  return [
    {
      check: 'permissions',
      status: 'fail',
      message: `the token (a classic PAT) has ${scopes.length ? `the scopes ${scopes.join(', ')}` : 'no scope'}, and pushing a branch and opening a PR take repo`,
      fix: 'give it the repo scope, or use a GitHub App (docs/github-app.md)',
    },
  ];
}

const A_WORKFLOW = '.github/workflows/fleet-doctor-probe.yml';

/** Lanes whose fence lets them change a workflow file: `owns` holds one (or is the whole repository) and `never` does not fence it off. */
export function lanesThatMayChangeWorkflows(lanes: readonly LaneSpec[]): { only: LaneSpec[]; may: LaneSpec[] } {
  const only: LaneSpec[] = [];
  const may: LaneSpec[] = [];
  for (const l of lanes) {
    if (matchesAny(A_WORKFLOW, l.never)) continue;
    if (ownsOnlyWorkflows(l.owns)) only.push(l);
    else if (!l.owns.length || matchesAny(A_WORKFLOW, l.owns)) may.push(l);
  }
  return { only, may };
}

/** Exit code of `fleet doctor`: 1 when something must be fixed before the first fleet, else 0. */
export function doctorExitCode(findings: readonly Finding[]): 0 | 1 {
  return findings.some((f) => f.status === 'fail') ? 1 : 0;
}

const LABEL: Record<FindingStatus, string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL', skip: 'skip' };

/** The findings as the terminal shows them: one line each, the fix on the next, then a count. */
export function renderFindings(findings: readonly Finding[]): string {
  const lines: string[] = [];
  // One line each, whatever a message quotes (a GitHub error, a repository's reason): nothing starts a line of its own.
  for (const f of findings) {
    lines.push(`${LABEL[f.status]}  ${oneLine(f.check)}: ${oneLine(f.message)}`);
    if (f.fix && f.status !== 'ok') lines.push(`      fix: ${oneLine(f.fix)}`);
  }
  const count = (s: FindingStatus) => findings.filter((f) => f.status === s).length;
  lines.push('');
  lines.push(
    count('fail')
      ? `${count('fail')} to fix before the first fleet, ${count('warn')} warning(s).`
      : `Nothing to fix${count('warn') ? ` (${count('warn')} warning(s))` : ''}: the set-up holds what this fleet needs.`,
  );
  return lines.join('\n');
}

function title(permission: string): string {
  const names: Record<string, string> = {
    pull_requests: 'Pull requests',
    contents: 'Contents',
    issues: 'Issues',
    checks: 'Checks',
    statuses: 'Commit statuses',
    actions: 'Actions',
    metadata: 'Metadata',
    workflows: 'Workflows',
  };
  return names[permission] ?? permission;
}
