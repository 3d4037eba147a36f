/**
 * The real parts runAction is given on a runner, built from the job's
 * environment. index.ts uses it; tests use it with their own core and store,
 * so what they drive is wired exactly as the action is.
 */
import { dirname, resolve } from 'node:path';
import { setupForge } from '../adapters.js';
import { directiveEnv } from '../cli/main.js';
import { AGENT_CREDENTIALS } from '../core/agent-setup.js';
import { basicCredential } from '../github/octokit.js';
import { encodedForms, registerSecret } from '../local/git.js';
import { githubClient } from '../github/setup.js';
import { localExecutor, localWorkspace } from '../local/workspace.js';
import { systemClock, type ArtifactStore, type Logger } from '../ports.js';
import type { CacheLike } from './agent-install.js';
import { OtherRunArtifactStore } from './artifact-store.js';
import type { ActionDeps, CoreLike } from './main.js';
import { actionsSweepCache } from './sweep-cache.js';

export function actionDeps(env: NodeJS.ProcessEnv, core: CoreLike, store: ArtifactStore, logger: Logger): ActionDeps {
  // Any variable holding a token, plain or as the basic credential git sends, is withheld from directives.
  const tokens = [env.FLEET_TOKEN, env.FLEET_RUN_TOKEN].flatMap((t) => (t ? [t, basicCredential(t)] : []));
  // Agent credentials too: only an agent directive gets them, under its CLI's names (see prepareAgent in main.ts).
  const agentCredentials = AGENT_CREDENTIALS.map((c) => env[c.fleetVariable]?.trim()).filter((v): v is string => !!v);
  for (const credential of agentCredentials) registerSecret(credential);
  const withheld = directiveEnv(env, undefined, [...tokens, ...agentCredentials]);
  return {
    env,
    core,
    store,
    clock: systemClock,
    workspace: localWorkspace,
    exec: localExecutor,
    setupForge: (s, file) => setupForge(file, { env, baseDir: s.file ? dirname(resolve(s.file)) : process.cwd(), token: s.token, logger }),
    api: (s) => {
      const client = githubClient(env, s.runToken, logger);
      if ('problem' in client) throw new Error(client.problem);
      return client;
    },
    fleetApi: (s) => {
      const client = githubClient(env, s.token, logger);
      if ('problem' in client) throw new Error(client.problem);
      return client;
    },
    runStore: (s, runId) => new OtherRunArtifactStore({ token: s.runToken, workflowRunId: runId, repositoryOwner: s.repository!.owner, repositoryName: s.repository!.repo }),
    directiveEnv: withheld,
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
