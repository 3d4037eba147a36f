/**
 * GitHub App credentials for `fleet run` and `fleet plan` (and so for the action's `mode: run`): with
 * FLEET_APP_ID and FLEET_APP_PRIVATE_KEY set, Fleet mints the App's installation token itself and renews it while
 * the fleet runs, as the reusable workflow's jobs do (src/session/credentials.ts), instead of reading a token variable.
 *
 * The key is read from the environment only, never from a file path: a directive can read any file its user can
 * (docs/security.md), but Fleet withholds FLEET_APP_PRIVATE_KEY from directives and from its own process
 * environment (WITHHELD_ENV in src/util/directive-env.ts).
 */
import type { ResolvedFleet } from '../core/validate.js';
import type { Problem } from '../core/validate.js';
import { appCredentialProblems, normalizePrivateKey } from '../github/app-key.js';

export interface CliApp {
  appId: string;
  privateKey: string;
  owner: string;
}

const ID = 'FLEET_APP_ID';
const KEY = 'FLEET_APP_PRIVATE_KEY';
const OWNER = 'FLEET_APP_OWNER';

/** The accounts the fleet's targets belong to: the explicit targets' owners and the discovery sources'. */
export function targetOwners(fleet: Pick<ResolvedFleet, 'lanes' | 'file'>): string[] {
  const owners = new Set<string>();
  for (const l of fleet.lanes) {
    const owner = /^([^/]+)\/[^/]+$/.exec(l.repo)?.[1];
    if (owner && !owner.startsWith('.')) owners.add(owner);
  }
  for (const d of fleet.file.github?.discover ?? []) {
    if ('org' in d) owners.add(d.org);
    else if ('user' in d) owners.add(d.user);
    else if ('owner' in d) owners.add(d.owner);
  }
  return [...owners].sort();
}

/**
 * The App credentials the environment gives, every problem with them at once (each naming its variable), or
 * neither when no App variable is set. `owners`: the targets' accounts, for an unset FLEET_APP_OWNER (undefined when
 * the fleet file could not be read: the owner is then not checked).
 */
export function appFromEnv(env: NodeJS.ProcessEnv, owners: readonly string[] | undefined, file: string): { app?: CliApp; problems: Problem[] } {
  const appId = env[ID]?.trim() ?? '';
  const key = env[KEY] ?? '';
  const keyGiven = key.trim() !== '';
  if (!appId && !keyGiven) return { problems: [] };
  const problems = appCredentialProblems(appId, key, {
    id: ID,
    key: KEY,
    idShort: ID,
    howToGiveKey: `export the key's text, e.g. ${KEY}="$(cat my-app.private-key.pem)"`,
  });
  if (env.FLEET_GITHUB_TOKEN)
    problems.push(`FLEET_GITHUB_TOKEN and ${ID}: give a token or GitHub App credentials, not both (with App credentials Fleet mints its own tokens)`);
  let owner = env[OWNER]?.trim() ?? '';
  if (!owner && owners) {
    if (owners.length === 1) owner = owners[0]!;
    else if (owners.length > 1)
      problems.push(`${OWNER}: the targets belong to ${owners.join(', ')}: set the account the App is installed on (one App installation per fleet)`);
    else problems.push(`${OWNER}: no target names its owner: set the account the App is installed on`);
  }
  if (problems.length) return { problems: problems.map((message) => ({ file, field: '(environment)', message })) };
  return { app: { appId, privateKey: normalizePrivateKey(key), owner }, problems: [] };
}
