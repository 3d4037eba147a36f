/**
 * The reads `fleet doctor` makes on GitHub before a first fleet: what the credential is and grants, a repository's
 * visibility, an approval environment's reviewers, and the Actions settings of the repository that runs Fleet.
 * Every read answers what it found or why it could not: doctor reports, it never stops at the first refusal.
 */
import type { ActionsSettings, CredentialGrants, SetupProbe } from '../ports.js';
import { redact } from '../util/secrets.js';
import { environmentRules } from './actions-run.js';
import type { TokenCredential } from './credential.js';
import { classicScopes, type FleetOctokit } from './octokit.js';

function split(repo: string): { owner: string; repo: string } {
  const [owner = '', name = ''] = repo.split('/');
  return { owner, repo: name };
}

function statusOf(err: unknown): number {
  return (err as { status?: number }).status ?? 0;
}

function messageOf(err: unknown): string {
  return redact(
    String((err as Error).message ?? err)
      .split('\n')[0]!
      .replace(/\s*-\s*https:\/\/docs\.github\.com\S*/g, ''),
  );
}

export class GitHubSetupProbe implements SetupProbe {
  constructor(
    private readonly octokit: FleetOctokit,
    private readonly credentialOf: TokenCredential | undefined,
  ) {}

  async credential(): Promise<CredentialGrants> {
    const granted = this.credentialOf?.installationPermissions?.();
    if (granted) return { kind: 'app', account: this.credentialOf?.installationAccount?.() ?? '', permissions: granted };
    // GET /user names who the token is (an installation token may not call it: 403, and then it is no person's).
    let scopes: string[] | undefined;
    try {
      scopes = await classicScopes(this.octokit);
    } catch (err) {
      if (statusOf(err) === 401) return { kind: 'refused', detail: messageOf(err) };
      throw err;
    }
    const login = await this.octokit
      .request('GET /user')
      .then((r) => (r.data as { login?: string }).login ?? null)
      .catch(() => null);
    if (scopes !== undefined) return { kind: 'classic-pat', login: login ?? '', scopes };
    return { kind: 'unknown', login };
  }

  async visibility(repo: string): Promise<'public' | 'private' | 'internal' | null> {
    try {
      const { data } = await this.octokit.request('GET /repos/{owner}/{repo}', split(repo));
      const v = (data as { visibility?: string; private?: boolean }).visibility;
      return v === 'public' || v === 'private' || v === 'internal' ? v : (data as { private?: boolean }).private ? 'private' : 'public';
    } catch (err) {
      if (statusOf(err) === 404 || statusOf(err) === 403) return null;
      throw err;
    }
  }

  async environment(repo: string, name: string): Promise<{ reviewers: string[] } | { missing: true } | { unreadable: string }> {
    try {
      const api = { request: (route: string, params?: Record<string, unknown>) => this.octokit.request(route, params) };
      const rules = await environmentRules(api, split(repo), name);
      const reviewers = rules
        .filter((r) => r.type === 'required_reviewers')
        .flatMap((r) => (r.reviewers ?? []) as Array<{ type?: string; reviewer?: { login?: string; slug?: string } }>)
        .map((r) => r.reviewer?.login ?? r.reviewer?.slug ?? '?');
      return { reviewers };
    } catch (err) {
      if (statusOf(err) === 404) return { missing: true };
      return { unreadable: `${statusOf(err) || 'error'}: ${messageOf(err)}` };
    }
  }

  /**
   * GET …/actions/permissions, …/selected-actions and …/artifact-and-log-retention: each takes administration: read
   * (a workflow's GITHUB_TOKEN never has it; an App must be given it), so a refusal is an answer, not an error.
   * https://docs.github.com/rest/actions/permissions#get-github-actions-permissions-for-a-repository
   */
  async actionsSettings(repo: string): Promise<ActionsSettings | { unreadable: string }> {
    const r = split(repo);
    let perms: { enabled?: boolean; allowed_actions?: string };
    try {
      ({ data: perms } = (await this.octokit.request('GET /repos/{owner}/{repo}/actions/permissions', r)) as { data: typeof perms });
    } catch (err) {
      return { unreadable: `${statusOf(err) || 'error'}: ${messageOf(err)}` };
    }
    const allowed = perms.allowed_actions === 'local_only' || perms.allowed_actions === 'selected' ? perms.allowed_actions : 'all';
    const out: ActionsSettings = { enabled: perms.enabled !== false, allowedActions: allowed };
    if (allowed === 'selected') {
      try {
        const { data } = (await this.octokit.request('GET /repos/{owner}/{repo}/actions/permissions/selected-actions', r)) as {
          data: { github_owned_allowed?: boolean; verified_allowed?: boolean; patterns_allowed?: string[] };
        };
        out.selected = { githubOwned: data.github_owned_allowed ?? false, verified: data.verified_allowed ?? false, patterns: data.patterns_allowed ?? [] };
      } catch {
        // Left undefined: the finding says the list could not be read.
      }
    }
    try {
      const { data } = (await this.octokit.request('GET /repos/{owner}/{repo}/actions/permissions/artifact-and-log-retention', r)) as {
        data: { days?: number };
      };
      if (typeof data.days === 'number') out.retentionDays = data.days;
    } catch {
      // Unreadable retention: the runner's GITHUB_RETENTION_DAYS may still say it.
    }
    return out;
  }
}
