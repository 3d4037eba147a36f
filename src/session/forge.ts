/**
 * The forge a fleet file names, built from the environment: a folder of repositories on disk, or GitHub. The
 * session (src/session/session.ts) calls this; steps never do.
 */
import type { LegPace, WriteWindow } from '../core/budget.js';
import type { FleetFile } from '../core/fleet-file.js';
import type { ResolvedFleet } from '../core/validate.js';
import type { TokenCredential } from '../github/credential.js';
import { githubTuning } from '../github/tuning.js';
import { LocalForge } from '../local/forge.js';
import type { Forge, Logger, QueueSettle, QueueSource, SetupProbe } from '../ports.js';
import { TOKEN_VARIABLES } from './credentials.js';

export interface ForgeSetup {
  forge: Forge;
  /** The set-up reads of `fleet doctor` (GitHub only). */
  probe?: SetupProbe;
  discover?(fleet: ResolvedFleet): Promise<{ repos: string[]; problems: string[] }>;
  /** The issue queue (source.issues): its lanes, board and events (GitHub only). */
  queue?: QueueSource;
  settleQueue?: QueueSettle;
  /** The environment variable the token came from, withheld from directives. */
  tokenVariable?: string;
  /** The token and the basic-auth credential git sends: no variable holding either reaches a directive. */
  secrets?: string[];
  /** The account's secondary limits a plan divides among its legs (GitHub only; none: no write budget). */
  writeLimits?: WriteWindow[];
}

/**
 * The forge of a fleet file. The GitHub side (Octokit, undici: about half of the CLI's bundle) is loaded only
 * by fleets that use it, so a local fleet starts without parsing it.
 */
export async function setupForge(
  file: FleetFile,
  opts: { env: NodeJS.ProcessEnv; baseDir: string; reposRoot?: string; token?: string; credential?: TokenCredential; logger?: Logger; writePace?: LegPace },
): Promise<ForgeSetup | { problem: string }> {
  if (file.forge === 'local') return { forge: new LocalForge({ baseDir: opts.baseDir, reposRoot: opts.reposRoot }) };
  const tokenVariable = opts.token ? undefined : TOKEN_VARIABLES.find((k) => opts.env[k]);
  const token = opts.token ?? (tokenVariable ? opts.env[tokenVariable] : undefined);
  if (!token) {
    return {
      problem: `forge: github needs a token: set ${TOKEN_VARIABLES.join(', ')} (a GitHub App installation token or a PAT that can push to the targets)`,
    };
  }
  const tuning = githubTuning(opts.env);
  if ('problem' in tuning) return tuning;
  const { githubSetup } = await import('../github/setup.js');
  return {
    ...githubSetup(file, { env: opts.env, token, credential: opts.credential, tuning, logger: opts.logger, writePace: opts.writePace }),
    tokenVariable,
    writeLimits: tuning.writeLimits,
  };
}
