/**
 * The REST side of GitHub Apps, as actions/create-github-app-token uses it:
 * find the installation (GET /repos/{owner}/{repo}/installation,
 * /orgs/{org}/installation, /users/{username}/installation), mint a token
 * (POST /app/installations/{id}/access_tokens, which may narrow repositories
 * and permissions but never widen them) and revoke it at the end
 * (DELETE /installation/token). Plus GET /app and the installation listings.
 *
 * Replies follow GitHub's REST docs ("Apps" and "Installations") and the
 * messages users quote: 422 "There is at least one repository that does not
 * exist or is not accessible to the parent installation.", 422 "The
 * permissions requested are not granted to this installation.", 401 "A JSON
 * web token could not be decoded" when an app-only endpoint gets anything but
 * a valid app JWT.
 */
import { JWT_MESSAGES, newInstallationToken, type AppRecord, type AppRegistry, type InstallationRecord } from './apps.js';
import type { EmulatorClock } from './clock.js';
import { narrowScopes, toAppPermissions } from './scopes.js';
import type { RepoRecord, TokenSpec, UserRecord } from './state.js';

/** The slice of the emulator's request context these handlers read. */
export interface AppsCtx {
  method: string;
  params: Record<string, string>;
  body: unknown;
  auth: { token: string | null; spec: TokenSpec | null; app?: AppRecord };
  op: { operationId: string; docsUrl: string };
}

export interface AppsReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** What the handlers need from the emulator. */
export interface AppsHost {
  readonly url: string;
  readonly clock: EmulatorClock;
  readonly apps: AppRegistry;
  repo(fullName: string): RepoRecord | null;
  repoById(id: number): RepoRecord | null;
  user(login: string): UserRecord;
  userJson(login: string): Record<string, unknown>;
  repoJson(r: RepoRecord): Promise<Record<string, unknown>>;
  addToken(token: string, spec: TokenSpec): void;
  removeToken(token: string): void;
}

/** Operations that take the app's JWT (and nothing else). */
export const JWT_OPERATIONS = new Set([
  'apps/get-authenticated',
  'apps/list-installations',
  'apps/get-installation',
  'apps/create-installation-access-token',
  'apps/get-repo-installation',
  'apps/get-org-installation',
  'apps/get-user-installation',
]);

/** An installation token lives one hour and cannot be extended (actions/create-github-app-token#128). */
export const INSTALLATION_TOKEN_TTL_MS = 3_600_000;

type AppsHandler = (c: AppsCtx) => Promise<AppsReply>;

const fail = (c: AppsCtx, status: number, message: string): AppsReply => ({
  status,
  body: { message, documentation_url: c.op.docsUrl, status: String(status) },
});

export function appHandlers(host: AppsHost): Record<string, AppsHandler> {
  const H: Record<string, AppsHandler> = {};
  const withApp =
    (fn: (c: AppsCtx, app: AppRecord) => Promise<AppsReply>): AppsHandler =>
    async (c) => {
      // Anything but a verified JWT on an app endpoint: what GitHub answers a token there.
      if (!c.auth.app) return { status: 401, body: { message: JWT_MESSAGES.undecodable, documentation_url: 'https://docs.github.com/rest', status: '401' } };
      return fn(c, c.auth.app);
    };
  const installationReply = (c: AppsCtx, app: AppRecord, inst: InstallationRecord | null): AppsReply =>
    inst && inst.appId === app.id ? { status: 200, body: installationShape(host, app, inst) } : fail(c, 404, 'Not Found');

  H['apps/get-authenticated'] = withApp(async (_c, app) => ({ status: 200, body: integrationShape(host, app) }));
  H['apps/list-installations'] = withApp(async (_c, app) => ({
    status: 200,
    body: host.apps.installationsOf(app.id).map((i) => installationShape(host, app, i)),
  }));
  H['apps/get-installation'] = withApp(async (c, app) => installationReply(c, app, host.apps.installation(Number(c.params.installation_id))));
  H['apps/get-org-installation'] = withApp(async (c, app) => {
    const org = c.params.org ?? '';
    if (host.user(org).type !== 'Organization') return fail(c, 404, 'Not Found');
    return installationReply(c, app, host.apps.installationOn(app.id, org));
  });
  H['apps/get-user-installation'] = withApp(async (c, app) => installationReply(c, app, host.apps.installationOn(app.id, c.params.username ?? '')));
  H['apps/get-repo-installation'] = withApp(async (c, app) => {
    const full = `${c.params.owner ?? ''}/${c.params.repo ?? ''}`;
    const inst = host.repo(full) ? host.apps.installationOn(app.id, c.params.owner ?? '') : null;
    return installationReply(c, app, inst && host.apps.covers(inst, full) ? inst : null);
  });
  H['apps/create-installation-access-token'] = withApp((c, app) => mintForApp(host, c, app));
  H['apps/revoke-installation-access-token'] = async (c) => {
    const spec = c.auth.spec;
    if (!spec || !c.auth.token) return fail(c, 401, 'Requires authentication');
    if (spec.type === 'pat') return fail(c, 403, 'Resource not accessible by personal access token');
    host.removeToken(c.auth.token);
    return { status: 204 };
  };
  return H;
}

/** POST /app/installations/{id}/access_tokens. */
async function mintForApp(host: AppsHost, c: AppsCtx, app: AppRecord): Promise<AppsReply> {
  const inst = host.apps.installation(Number(c.params.installation_id));
  if (!inst || inst.appId !== app.id) return fail(c, 404, 'Not Found');
  const body = (c.body ?? {}) as { repositories?: string[]; repository_ids?: number[]; permissions?: Record<string, string> };
  const selected = selectRepositories(host, inst, body);
  if (selected === 'inaccessible') return fail(c, 422, 'There is at least one repository that does not exist or is not accessible to the parent installation.');
  const scopes = narrowScopes(inst.permissions, body.permissions);
  if (!scopes) return fail(c, 422, 'The permissions requested are not granted to this installation.');
  const token = newInstallationToken();
  const expiresAt = host.clock.now() + INSTALLATION_TOKEN_TTL_MS;
  const repositories = selected ? selected.map((r) => `${r.owner}/${r.name}`) : (inst.repositories ?? [`${inst.account}/*`]);
  host.addToken(token, {
    login: `${app.slug}[bot]`,
    type: 'installation',
    default: 'push',
    scopes,
    expiresAt,
    repositories,
    account: `installation:${inst.id}`,
    installationId: inst.id,
  });
  const out: Record<string, unknown> = {
    token,
    expires_at: host.clock.iso(expiresAt),
    permissions: toAppPermissions(scopes),
    repository_selection: selected || inst.repositories ? 'selected' : 'all',
  };
  if (selected) out.repositories = await Promise.all(selected.map((r) => host.repoJson(r)));
  return { status: 201, body: out };
}

/** The repositories a token request narrows to (null: not narrowed), or 'inaccessible' when one is outside the installation. */
function selectRepositories(
  host: AppsHost,
  inst: InstallationRecord,
  body: { repositories?: string[]; repository_ids?: number[] },
): RepoRecord[] | null | 'inaccessible' {
  const names = body.repositories ?? [];
  const ids = body.repository_ids ?? [];
  if (!names.length && !ids.length) return null;
  const found = [...names.map((n) => host.repo(n.includes('/') ? n : `${inst.account}/${n}`)), ...ids.map((id) => host.repoById(id))];
  if (found.some((r) => !r || !host.apps.covers(inst, `${r.owner}/${r.name}`))) return 'inaccessible';
  return [...new Map((found as RepoRecord[]).map((r) => [r.id, r])).values()];
}

function integrationShape(host: AppsHost, app: AppRecord): Record<string, unknown> {
  return {
    id: app.id,
    slug: app.slug,
    node_id: Buffer.from(`A:${app.id}`).toString('base64'),
    client_id: app.clientId,
    owner: host.userJson(app.owner),
    name: app.name,
    description: '',
    external_url: `${host.url}/apps/${app.slug}`,
    html_url: `${host.url}/apps/${app.slug}`,
    created_at: app.created_at,
    updated_at: app.created_at,
    permissions: toAppPermissions(host.apps.appScopes(app.id)),
    events: [],
    installations_count: host.apps.installationsOf(app.id).length,
  };
}

function installationShape(host: AppsHost, app: AppRecord, inst: InstallationRecord): Record<string, unknown> {
  const account = host.user(inst.account);
  const settings = account.type === 'Organization' ? `organizations/${account.login}/settings` : 'settings';
  return {
    id: inst.id,
    account: host.userJson(inst.account),
    repository_selection: inst.repositories ? 'selected' : 'all',
    access_tokens_url: `${host.url}/app/installations/${inst.id}/access_tokens`,
    repositories_url: `${host.url}/installation/repositories`,
    html_url: `${host.url}/${settings}/installations/${inst.id}`,
    app_id: app.id,
    app_slug: app.slug,
    client_id: app.clientId,
    target_id: account.id,
    target_type: account.type === 'Organization' ? 'Organization' : 'User',
    permissions: toAppPermissions(inst.permissions),
    events: [],
    created_at: inst.created_at,
    updated_at: inst.created_at,
    single_file_name: null,
    has_multiple_single_files: false,
    single_file_paths: [],
    suspended_by: null,
    suspended_at: null,
  };
}
