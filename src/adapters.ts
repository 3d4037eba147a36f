/**
 * Builds the forge an entrypoint needs from the fleet file and the
 * environment. Entrypoints (CLI, action) call this; steps never do.
 */
import type { FleetFile } from './core/fleet-file.js';
import type { ResolvedFleet } from './core/validate.js';
import { discoverRepos } from './github/discover.js';
import { GitHubForge } from './github/forge.js';
import { createOctokit } from './github/octokit.js';
import { LocalForge } from './local/forge.js';
import type { Forge, Logger } from './ports.js';

/** Where Fleet looks for its GitHub token, in order. */
export const TOKEN_VARIABLES = ['FLEET_GITHUB_TOKEN', 'GITHUB_TOKEN', 'GH_TOKEN'] as const;

export interface ForgeSetup {
  forge: Forge;
  discover?(fleet: ResolvedFleet): Promise<{ repos: string[]; problems: string[] }>;
  /** The environment variable the token came from, withheld from directives. */
  tokenVariable?: string;
}

export function setupForge(
  file: FleetFile,
  opts: { env: NodeJS.ProcessEnv; baseDir: string; reposRoot?: string; token?: string; logger?: Logger },
): ForgeSetup | { problem: string } {
  if (file.forge === 'local') return { forge: new LocalForge({ baseDir: opts.baseDir, reposRoot: opts.reposRoot }) };
  const tokenVariable = opts.token ? undefined : TOKEN_VARIABLES.find((k) => opts.env[k]);
  const token = opts.token ?? (tokenVariable ? opts.env[tokenVariable] : undefined);
  if (!token) {
    return { problem: `forge: github needs a token: set ${TOKEN_VARIABLES.join(', ')} (a GitHub App installation token or a PAT that can push to the targets)` };
  }
  const octokit = createOctokit({ token, logger: opts.logger, apiUrl: opts.env.GITHUB_API_URL, graphqlUrl: opts.env.GITHUB_GRAPHQL_URL });
  const forge = new GitHubForge({ octokit, token, name: file.name, allowForks: file.github.allow_forks, serverUrl: opts.env.GITHUB_SERVER_URL, logger: opts.logger });
  return {
    forge,
    tokenVariable,
    discover: (fleet) => discoverRepos(octokit, fleet.file.github.discover, { allowForks: fleet.file.github.allow_forks }),
  };
}
