/**
 * The GitHub side of `setupForge` (src/session/forge.ts), in a module of its own so that entrypoints load Octokit
 * and its HTTP client only for fleets on GitHub.
 */
import type { LegPace } from '../core/budget.js';
import type { FleetFile } from '../core/fleet-file.js';
import type { ResolvedFleet } from '../core/validate.js';
import type { Logger } from '../ports.js';
import { discoverRepos } from './discover.js';
import { runIssueQueue, settleQueue } from './queue.js';
import type { Manifest } from '../core/model.js';
import type { QueueOptions } from '../ports.js';
import { GitHubForge } from './forge.js';
import { GitHubSetupProbe } from './setup-probe.js';
import { basicCredential, createOctokit, type FleetOctokit } from './octokit.js';
import type { TokenCredential } from './credential.js';
import { githubTuning, type GitHubTuning } from './tuning.js';

/**
 * The Octokit every entrypoint uses against GitHub: the environment's API
 * URLs (GITHUB_API_URL, GITHUB_GRAPHQL_URL) and pacing knob. The action builds
 * its client for the run's own repository (check run, jobs) here too.
 */
export function githubClient(env: NodeJS.ProcessEnv, token: string, logger?: Logger, credential?: TokenCredential): FleetOctokit | { problem: string } {
  const tuning = githubTuning(env);
  if ('problem' in tuning) return tuning;
  return octokitFor(env, token, tuning, logger, credential);
}

function octokitFor(
  env: NodeJS.ProcessEnv,
  token: string,
  tuning: GitHubTuning,
  logger?: Logger,
  credential?: TokenCredential,
  writePace?: LegPace,
): FleetOctokit {
  return createOctokit({ token, credential, logger, apiUrl: env.GITHUB_API_URL, graphqlUrl: env.GITHUB_GRAPHQL_URL, pacing: tuning.pacing, writePace });
}

/** The GitHub forge, its target discovery and the secrets no directive may see, for a token already found. */
export function githubSetup(
  file: FleetFile,
  opts: { env: NodeJS.ProcessEnv; token: string; credential?: TokenCredential; tuning: GitHubTuning; logger?: Logger; writePace?: LegPace },
) {
  const { env, token, credential, tuning, logger } = opts;
  // A leg's writes wait for its slots of the fleet's write budget (the plan's share for this leg).
  const octokit = octokitFor(env, token, tuning, logger, credential, opts.writePace);
  const forge = new GitHubForge({
    octokit,
    token,
    credential,
    name: file.name,
    allowForks: file.github.allow_forks,
    ...(file.pr.fork ? { fork: file.pr.fork_owner ? { owner: file.pr.fork_owner } : {} } : {}),
    serverUrl: env.GITHUB_SERVER_URL,
    logger,
    ...tuning.forge,
  });
  return {
    forge,
    probe: new GitHubSetupProbe(octokit, credential),
    secrets: [token, basicCredential(token)],
    discover: (fleet: ResolvedFleet) => discoverRepos(octokit, fleet.file.github.discover, { allowForks: fleet.file.github.allow_forks }),
    queue: (fleet: ResolvedFleet, o: QueueOptions) => runIssueQueue(octokit, forge, fleet, o),
    settleQueue: (fleet: ResolvedFleet, manifest: Manifest) => settleQueue(octokit, fleet, manifest),
  };
}
