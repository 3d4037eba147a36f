/**
 * Builds the forge an entrypoint needs from the fleet file and the
 * environment. Entrypoints (CLI, action) call this; steps never do.
 */
import type { FleetFile } from './core/fleet-file.js';
import type { ResolvedFleet } from './core/validate.js';
import { discoverRepos } from './github/discover.js';
import { GitHubForge, type GitHubForgeOptions } from './github/forge.js';
import { basicCredential, createOctokit, type FleetOctokit, type Pacing } from './github/octokit.js';
import { LocalForge } from './local/forge.js';
import type { Forge, Logger } from './ports.js';

/** Where Fleet looks for its GitHub token, in order. */
export const TOKEN_VARIABLES = ['FLEET_GITHUB_TOKEN', 'GITHUB_TOKEN', 'GH_TOKEN'] as const;

/**
 * Tuning knobs for GitHub Enterprise Server and for tests against an emulator,
 * read from the environment. Unset, Fleet keeps GitHub's recommended pacing
 * and its production poll intervals.
 *
 * - `FLEET_GITHUB_PACING_MS`: milliseconds between writes (and GraphQL
 *   queries, searches and PR-creating writes) in queues of this process's own,
 *   instead of the throttling plugin's shared defaults (1 s between writes,
 *   2 s between searches, 3 s between writes that notify people). `0` turns
 *   pacing off: for an emulator, or a GHES instance without secondary limits.
 * - `FLEET_GITHUB_POLL_MS`: the first interval between CI reads (default
 *   10 s; it grows by half each time up to 6× this, default 60 s) and the
 *   interval between reads of a PR's `mergeable` (default 2 s).
 * - `FLEET_GITHUB_CI_GRACE_MS`: how long "no CI at all" on a pushed commit is
 *   read as "CI has not started yet" when the repository shows signs of CI
 *   (default 2 min).
 */
export const TUNING_VARIABLES = ['FLEET_GITHUB_PACING_MS', 'FLEET_GITHUB_POLL_MS', 'FLEET_GITHUB_CI_GRACE_MS'] as const;

export interface GitHubTuning {
  pacing?: Pacing;
  forge: Pick<GitHubForgeOptions, 'pollMs' | 'ciPollMs' | 'ciMaxPollMs' | 'ciStartGraceMs'>;
}

/** The knobs of TUNING_VARIABLES, or the first that is not a whole number of milliseconds. */
export function githubTuning(env: NodeJS.ProcessEnv): GitHubTuning | { problem: string } {
  const read = (name: (typeof TUNING_VARIABLES)[number]): number | undefined | string => {
    const raw = env[name]?.trim();
    if (!raw) return undefined;
    const n = Number(raw);
    return Number.isInteger(n) && n >= 0 && n <= 3_600_000 ? n : `${name} must be a whole number of milliseconds (0 to 3600000), got "${raw}"`;
  };
  const pacing = read('FLEET_GITHUB_PACING_MS');
  const poll = read('FLEET_GITHUB_POLL_MS');
  const grace = read('FLEET_GITHUB_CI_GRACE_MS');
  for (const v of [pacing, poll, grace]) if (typeof v === 'string') return { problem: v };
  const tuning: GitHubTuning = { forge: {} };
  if (typeof pacing === 'number') tuning.pacing = { writeMs: pacing, searchMs: pacing, notificationsMs: pacing };
  if (typeof poll === 'number') tuning.forge = { pollMs: poll, ciPollMs: poll, ciMaxPollMs: Math.min(60_000, Math.max(poll, poll * 6)) };
  if (typeof grace === 'number') tuning.forge = { ...tuning.forge, ciStartGraceMs: grace };
  return tuning;
}

/**
 * The Octokit every entrypoint uses against GitHub: the environment's API
 * URLs (GITHUB_API_URL, GITHUB_GRAPHQL_URL) and pacing knob. The action builds
 * its client for the run's own repository (check run, jobs) here too.
 */
export function githubClient(env: NodeJS.ProcessEnv, token: string, logger?: Logger): FleetOctokit | { problem: string } {
  const tuning = githubTuning(env);
  if ('problem' in tuning) return tuning;
  return createOctokit({ token, logger, apiUrl: env.GITHUB_API_URL, graphqlUrl: env.GITHUB_GRAPHQL_URL, pacing: tuning.pacing });
}

export interface ForgeSetup {
  forge: Forge;
  discover?(fleet: ResolvedFleet): Promise<{ repos: string[]; problems: string[] }>;
  /** The environment variable the token came from, withheld from directives. */
  tokenVariable?: string;
  /** The token and the basic-auth credential git sends: no variable holding either reaches a directive. */
  secrets?: string[];
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
  const tuning = githubTuning(opts.env);
  if ('problem' in tuning) return tuning;
  const octokit = createOctokit({ token, logger: opts.logger, apiUrl: opts.env.GITHUB_API_URL, graphqlUrl: opts.env.GITHUB_GRAPHQL_URL, pacing: tuning.pacing });
  const forge = new GitHubForge({
    octokit,
    token,
    name: file.name,
    allowForks: file.github.allow_forks,
    serverUrl: opts.env.GITHUB_SERVER_URL,
    logger: opts.logger,
    ...tuning.forge,
  });
  return {
    forge,
    tokenVariable,
    secrets: [token, basicCredential(token)],
    discover: (fleet) => discoverRepos(octokit, fleet.file.github.discover, { allowForks: fleet.file.github.allow_forks }),
  };
}
