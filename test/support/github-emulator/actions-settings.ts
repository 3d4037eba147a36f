/**
 * A repository's Actions settings (Settings → Actions → General), as the REST API answers them, and environments
 * for a test without an attached workflow runner: what `fleet doctor` reads.
 *
 * - `GET /repos/{owner}/{repo}/actions/permissions`: `enabled`, `allowed_actions` (`all`, `local_only`,
 *   `selected`) and, for `selected`, `selected_actions_url`
 *   (https://docs.github.com/rest/actions/permissions#get-github-actions-permissions-for-a-repository);
 * - `GET …/actions/permissions/selected-actions`: `github_owned_allowed`, `verified_allowed`, `patterns_allowed`
 *   (https://docs.github.com/rest/actions/permissions#get-allowed-actions-and-reusable-workflows-for-a-repository);
 * - `GET …/actions/permissions/artifact-and-log-retention`: `days`, `maximum_allowed_days`.
 *
 * Each takes admin on the repository ("The authenticated user must have admin access to the repository"; a GitHub
 * App "Administration" repository permissions (read), which no workflow `permissions:` key grants, so a
 * GITHUB_TOKEN is always refused: scopes.ts). A caller without admin gets the emulator's usual 403 ("Resource not
 * accessible by …"); an App's `administration` permission is not modelled, so a scoped token is always refused.
 */
import type { EnvironmentRecord } from './actions-runs.js';

export interface ActionsSettingsSpec {
  enabled?: boolean;
  allowedActions?: 'all' | 'local_only' | 'selected';
  githubOwnedAllowed?: boolean;
  verifiedAllowed?: boolean;
  patternsAllowed?: string[];
  /** Artifact and log retention in days (default 90). */
  retentionDays?: number;
}

interface Ctx {
  params: Record<string, string>;
  op: { docsUrl: string };
}
type Handler<C> = (c: C) => Promise<{ status: number; body?: unknown }>;

export interface SettingsHost<C> {
  repoFor(c: C, need: 'pull' | 'push' | 'admin'): { r: { owner: string; name: string; visibility: string }; key: string };
  settings(key: string): ActionsSettingsSpec | undefined;
  apiUrl(): string;
}

export function addActionsSettingsHandlers<C extends Ctx>(H: Record<string, Handler<C>>, h: SettingsHost<C>): void {
  const of = (c: C) => {
    const { key, r } = h.repoFor(c, 'admin');
    return { key, r, s: h.settings(key) ?? {} };
  };
  H['actions/get-github-actions-permissions-repository'] = async (c) => {
    const { key, s } = of(c);
    const allowed = s.allowedActions ?? 'all';
    return {
      status: 200,
      body: {
        enabled: s.enabled ?? true,
        allowed_actions: allowed,
        ...(allowed === 'selected' ? { selected_actions_url: `${h.apiUrl()}/repos/${key}/actions/permissions/selected-actions` } : {}),
      },
    };
  };
  H['actions/get-allowed-actions-repository'] = async (c) => {
    const { s } = of(c);
    return {
      status: 200,
      body: { github_owned_allowed: s.githubOwnedAllowed ?? true, verified_allowed: s.verifiedAllowed ?? false, patterns_allowed: s.patternsAllowed ?? [] },
    };
  };
  H['actions/get-artifact-and-log-retention-settings-repository'] = async (c) => {
    const { s, r } = of(c);
    // Public repositories keep artifacts 1–90 days, private ones up to 400.
    return { status: 200, body: { days: s.retentionDays ?? 90, maximum_allowed_days: r.visibility === 'public' ? 90 : 400 } };
  };
}

/** Environments a test sets on the emulator itself, for GET …/environments/{name} when no runner is attached. */
export class EnvironmentStore {
  private readonly envs = new Map<string, EnvironmentRecord>();
  private nextId = 9000;

  set(repoKey: string, name: string, reviewers: string[]): void {
    this.envs.set(`${repoKey}:${name}`, { id: this.nextId++, name, reviewers: [...reviewers], createdAt: new Date().toISOString() });
  }

  get(repoKey: string, name: string): EnvironmentRecord | undefined {
    return this.envs.get(`${repoKey}:${name}`);
  }
}
