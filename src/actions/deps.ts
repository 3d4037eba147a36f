/**
 * The real parts runAction is given on a runner, built from the job's
 * environment. index.ts uses it; tests use it with their own core and store,
 * so what they drive is wired exactly as the action is.
 */
import { dirname, resolve } from 'node:path';
import { AGENT_CREDENTIALS } from '../core/agent-credentials.js';
import { githubClient } from '../github/setup.js';
import { basicCredential } from '../github/octokit.js';
import { openSession, withheldEnv, type Session } from '../session/session.js';
import { encodedForms, registerSecret } from '../util/secrets.js';
import { systemClock, type ArtifactStore, type Logger } from '../ports.js';
import type { TokenCredential } from '../github/credential.js';
import type { CacheLike } from './agent-install.js';
import { OtherRunArtifactStore } from './artifact-store.js';
import type { ActionDeps, CoreLike } from './main.js';
import { actionsSweepCache } from './sweep-cache.js';
import type { Settings } from './settings.js';

export function actionDeps(env: NodeJS.ProcessEnv, core: CoreLike, store: ArtifactStore, logger: Logger): ActionDeps {
  // Any variable holding a token, plain or as the basic credential git sends, is withheld from directives; so is
  // one holding the App's private key (or a line of it). Tokens Fleet mints later live in no variable at all.
  const tokens = [env.FLEET_TOKEN, env.FLEET_RUN_TOKEN].flatMap((t) => (t ? [t, basicCredential(t)] : []));
  // Agent credentials too: only an agent directive gets them, under its CLI's names (see prepareAgent in main.ts).
  const agentCredentials = AGENT_CREDENTIALS.map((c) => env[c.fleetVariable]?.trim()).filter((v): v is string => !!v);
  for (const credential of agentCredentials) registerSecret(credential);
  const withheld = withheldEnv(env, { secrets: [...tokens, ...agentCredentials], privateKey: env.FLEET_APP_PRIVATE_KEY });

  // One session per job, with one credential: the PAT as given, or the App's installation token, minted at the first
  // need and renewed. Least privilege: only the lane jobs write to the targets; the others' tokens are read-only.
  let session: Session | undefined;
  const sessionFor = (s: Settings): Session => (session ??= openSession({ env, app: s.app, token: s.token, writes: s.mode === 'lane', logger }));
  const clientOf = (cred: Promise<TokenCredential>, s: Settings) => {
    const client = cred.then((c) => {
      const octokit = githubClient(env, c.current(), logger, s.app ? c : undefined);
      if ('problem' in octokit) throw new Error(octokit.problem);
      return octokit;
    });
    return { request: async (route: string, params?: Record<string, unknown>) => (await client).request(route, params) };
  };

  return {
    env,
    core,
    store,
    clock: systemClock,
    setupForge: async (s, file, writePace) => {
      const job = s.mode === 'lane' || s.mode === 'integrate';
      const connected = await sessionFor(s).connect(file, {
        baseDir: s.file ? dirname(resolve(s.file)) : process.cwd(),
        writePace,
        logger,
        // An integrate job runs the lanes' checks on the integrated tree: untrusted code, like a lane's.
        runsCode: job,
        commits: job,
        onCommits: (line, notes) => {
          core.info(`Fleet ${s.mode}: ${line}`);
          for (const note of notes) core.warning(`Fleet ${s.mode}: ${note}`);
        },
      });
      if (!('problem' in connected)) return connected;
      if (connected.part === 'isolation') return { problem: `Fleet ${s.mode}: ${connected.problem}` };
      if (connected.part === 'sign_commits') return { problem: `Fleet ${s.mode}: sign_commits: ${connected.problem}` };
      // A token that cannot be minted fails the job as any other failure of it does.
      if (connected.part === 'credential') throw new Error(connected.problem);
      return { problem: connected.problem };
    },
    api: (s) => {
      // The run's own repository: the job's GITHUB_TOKEN (github-token input); the App's token when there is none.
      if (s.runToken) {
        const client = githubClient(env, s.runToken, logger);
        if ('problem' in client) throw new Error(client.problem);
        return client;
      }
      return clientOf(sessionFor(s).credentials.credential(), s);
    },
    directiveEnv: withheld,
    // At the job's end every token Fleet minted is revoked.
    async finish() {
      await session?.close();
    },
    // Dispatching the next run of a chained fleet: the PAT, or an App token with Actions write and nothing else.
    fleetApi: (s) => clientOf(sessionFor(s).credentials.narrowed({ actions: 'write' }, 'Actions write, to continue the fleet in a new run'), s),
    runStore: (s, runId) =>
      new OtherRunArtifactStore({ token: s.runToken, workflowRunId: runId, repositoryOwner: s.repository!.owner, repositoryName: s.repository!.repo }),
    installAgent: async (spec, bin) => {
      const { installAgent } = await import('./agent-install.js');
      return installAgent({ spec, bin, env: withheld, log: logger.info, cache: await actionsCache() });
    },
    secretForms: encodedForms,
    sweepCache: actionsSweepCache,
  };
}

/** The job's Actions cache through @actions/cache (loaded only when a leg installs an agent), or none outside Actions. */
async function actionsCache(): Promise<CacheLike | undefined> {
  const cache = await import('@actions/cache');
  if (!cache.isFeatureAvailable()) return undefined;
  return { restore: (paths, key) => cache.restoreCache(paths, key), save: (paths, key) => cache.saveCache(paths, key) };
}
