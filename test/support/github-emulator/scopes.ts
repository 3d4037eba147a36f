/**
 * Fine-grained permissions, as GITHUB_TOKEN and GitHub App installation tokens
 * have them: which permission (a workflow `permissions:` key) each REST
 * operation, GraphQL field and git service needs, and whether a token's scopes
 * grant it.
 *
 * Sources:
 *  - scope names: GitHub's "Controlling permissions for GITHUB_TOKEN" (the
 *    `permissions:` keys) and the GITHUB_TOKEN reference's table (which adds
 *    `metadata`, always read);
 *  - operation → permission: GitHub's "Permissions required for GitHub Apps"
 *    (github/docs content/rest/overview/permissions-required-for-github-apps.md),
 *    reached here through the OpenAPI description's `x-github` category /
 *    subcategory, with explicit overrides where the page differs from the
 *    category (a PR's merge needs `contents`, a PR read accepts `contents` or
 *    `pull-requests`, issue endpoints on a PR accept `issues` or
 *    `pull-requests`);
 *  - the `x-accepted-github-permissions` header (GitHub changelog 2023-08-10):
 *    each acceptable set separated by `; `.
 */
import type { OpenApiOperation } from './openapi.js';

/**
 * The keys of a workflow's `permissions:` block, plus `metadata` and `workflows`: a GitHub App permission no
 * `permissions:` key grants (so never GITHUB_TOKEN's), without which a push that creates or changes a file under
 * `.github/workflows/` is refused (workflow-guard.ts). GitHub offers it at write only.
 */
export const SCOPES = [
  'actions',
  'attestations',
  'checks',
  'contents',
  'deployments',
  'discussions',
  'id-token',
  'issues',
  'metadata',
  'models',
  'packages',
  'pages',
  'pull-requests',
  'repository-projects',
  'security-events',
  'statuses',
  'workflows',
] as const;

export type Scope = (typeof SCOPES)[number];
export type ScopeLevel = 'read' | 'write' | 'none';
export type Scopes = Partial<Record<Scope, ScopeLevel>>;
export type Access = 'read' | 'write';

export type ScopeNeed =
  /** No permission: public metadata, rate limit, search, the app endpoints (checked on their own). */
  | { kind: 'none' }
  /** One of these scopes at this level. */
  | { kind: 'scope'; any: Scope[]; level: Access }
  /** The endpoint acts as a user (`/user…`): installation tokens cannot call it. */
  | { kind: 'user' }
  /** A permission no `permissions:` key grants (administration, secrets…): scoped tokens are refused. */
  | { kind: 'ungrantable'; permission: string; level: Access };

const RANK: Record<ScopeLevel, number> = { none: 0, read: 1, write: 2 };

/** Workflow scope → GitHub App permission name (REST bodies and headers use these). */
const APP_NAME: Partial<Record<Scope, string>> = {
  actions: 'actions',
  attestations: 'attestations',
  checks: 'checks',
  contents: 'contents',
  deployments: 'deployments',
  discussions: 'discussions',
  issues: 'issues',
  metadata: 'metadata',
  packages: 'packages',
  pages: 'pages',
  'pull-requests': 'pull_requests',
  'repository-projects': 'repository_projects',
  'security-events': 'security_events',
  statuses: 'statuses',
  workflows: 'workflows',
};
const FROM_APP_NAME = new Map(Object.entries(APP_NAME).map(([scope, app]) => [app, scope as Scope]));

/** Categories that need no permission at all. */
const FREE_CATEGORIES = new Set(['meta', 'rate-limit', 'search', 'emojis', 'gitignore', 'licenses', 'codes-of-conduct', 'markdown', 'apps']);
/** Categories whose reads are repository / account metadata (writes need administration). */
const METADATA_CATEGORIES = new Set(['repos', 'orgs', 'users', 'collaborators', 'metrics', 'activity']);

const BY_SUBCATEGORY: Record<string, Scope> = {
  'actions/artifacts': 'actions',
  'actions/cache': 'actions',
  'actions/workflow-runs': 'actions',
  'actions/workflow-jobs': 'actions',
  'actions/workflows': 'actions',
  'actions/concurrency-groups': 'actions',
  'commits/statuses': 'statuses',
  'commits/commits': 'contents',
  'commits/comments': 'contents',
  'repos/contents': 'contents',
  'branches/branches': 'contents',
  'dependabot/alerts': 'security-events',
  'repos/attestations': 'attestations',
  'users/attestations': 'attestations',
  'orgs/attestations': 'attestations',
  'deployments/deployments': 'deployments',
  'deployments/statuses': 'deployments',
};
const BY_CATEGORY: Record<string, Scope> = {
  checks: 'checks',
  pulls: 'pull-requests',
  git: 'contents',
  releases: 'contents',
  pages: 'pages',
  packages: 'packages',
  'code-scanning': 'security-events',
};

const scope = (any: Scope[], level: Access): ScopeNeed => ({ kind: 'scope', any, level });

/** Where "Permissions required for GitHub Apps" lists an operation apart from its category. */
const OVERRIDES: Record<string, ScopeNeed> = {
  'pulls/get': scope(['pull-requests', 'contents'], 'read'),
  'pulls/merge': scope(['contents'], 'write'),
  'repos/list-pull-requests-associated-with-commit': scope(['pull-requests'], 'read'),
  'repos/create-dispatch-event': scope(['contents'], 'write'),
  'repos/merge-upstream': scope(['contents'], 'write'),
  'repos/get-all-environments': scope(['actions'], 'read'),
  'repos/get-environment': scope(['actions'], 'read'),
  // Settings → Actions → General: "Administration" repository permissions (read), which no `permissions:` key grants.
  'actions/get-github-actions-permissions-repository': { kind: 'ungrantable', permission: 'administration', level: 'read' },
  'actions/get-allowed-actions-repository': { kind: 'ungrantable', permission: 'administration', level: 'read' },
  'actions/get-artifact-and-log-retention-settings-repository': { kind: 'ungrantable', permission: 'administration', level: 'read' },
};

/** Issue endpoints that work on a PR's issue side accept either permission. */
const ISSUE_OR_PR_SUBCATEGORIES = new Set(['labels', 'assignees', 'comments', 'milestones', 'events', 'timeline']);

function accessOf(op: OpenApiOperation): Access {
  return op.method === 'GET' || op.method === 'HEAD' ? 'read' : 'write';
}

/** The permission a REST operation needs. */
export function restNeed(op: OpenApiOperation): ScopeNeed {
  const override = OVERRIDES[op.operationId];
  if (override) return override;
  const level = accessOf(op);
  const x = (op.raw['x-github'] ?? {}) as { category?: string; subcategory?: string };
  const category = x.category ?? '';
  if (op.template === '/user' || op.template.startsWith('/user/')) return { kind: 'user' };
  if (FREE_CATEGORIES.has(category)) return { kind: 'none' };
  if (category === 'issues') {
    const either = op.template.includes('{issue_number}') || ISSUE_OR_PR_SUBCATEGORIES.has(x.subcategory ?? '');
    return scope(either ? ['issues', 'pull-requests'] : ['issues'], level);
  }
  const mapped = BY_SUBCATEGORY[`${category}/${x.subcategory ?? ''}`] ?? BY_CATEGORY[category];
  if (mapped) return scope([mapped], level);
  if (METADATA_CATEGORIES.has(category)) return level === 'read' ? scope(['metadata'], 'read') : { kind: 'ungrantable', permission: 'administration', level };
  return { kind: 'ungrantable', permission: category || 'unknown', level };
}

/** git over HTTP: fetching needs contents read, pushing contents write. */
export function gitNeed(service: string | null): ScopeNeed {
  return scope(['contents'], service === 'git-receive-pack' ? 'write' : 'read');
}

/** The level a token holds for one scope (`metadata` is always at least read, as GitHub grants it to every token). */
export function levelOf(scopes: Scopes, s: Scope): ScopeLevel {
  const held = scopes[s] ?? 'none';
  return s === 'metadata' && RANK[held] < RANK.read ? 'read' : held;
}

/** Whether `scopes` satisfy `need`; `type` decides the `/user` endpoints. */
export function permits(scopes: Scopes, need: ScopeNeed, type: 'installation' | 'pat' = 'installation'): boolean {
  switch (need.kind) {
    case 'none':
      return true;
    case 'user':
      return type === 'pat';
    case 'ungrantable':
      return false;
    case 'scope':
      return need.any.some((s) => RANK[levelOf(scopes, s)] >= RANK[need.level]);
  }
}

/** `x-accepted-github-permissions`: the acceptable permission sets, `; `-separated (empty when none is needed). */
export function acceptedPermissions(need: ScopeNeed): string {
  if (need.kind === 'scope') return need.any.map((s) => `${APP_NAME[s] ?? s}=${need.level}`).join('; ');
  if (need.kind === 'ungrantable') return `${need.permission}=${need.level}`;
  return '';
}

/** Scopes as a REST `permissions` object (app permission names; `id-token` and `models` have none). */
export function toAppPermissions(scopes: Scopes): Record<string, Access> {
  const out: Record<string, Access> = {};
  for (const s of SCOPES) {
    const level = levelOf(scopes, s);
    const name = APP_NAME[s];
    if (name && level !== 'none') out[name] = level;
  }
  return out;
}

/**
 * The scopes of a token asked for with `requested` (app permission names) out
 * of an installation's `granted` ones: a request may narrow, never widen.
 * Returns null when something asked for is not granted at that level.
 */
export function narrowScopes(granted: Scopes, requested: Record<string, string> | undefined): Scopes | null {
  if (!requested) return { ...granted, metadata: levelOf(granted, 'metadata') };
  const out: Scopes = { metadata: 'read' };
  for (const [name, level] of Object.entries(requested)) {
    const s = FROM_APP_NAME.get(name);
    if (!s || (level !== 'read' && level !== 'write')) return null;
    if (RANK[levelOf(granted, s)] < RANK[level]) return null;
    out[s] = level;
  }
  return out;
}

/** Checks a `scopes` object names only known scopes and levels (a typo would silently grant nothing). */
export function assertScopes(scopes: Scopes): void {
  for (const [k, v] of Object.entries(scopes)) {
    if (!(SCOPES as readonly string[]).includes(k)) throw new Error(`unknown scope '${k}' (GitHub's permissions are ${SCOPES.join(', ')})`);
    if (v !== 'read' && v !== 'write' && v !== 'none') throw new Error(`scope ${k}: '${String(v)}' is not read, write or none`);
  }
}
