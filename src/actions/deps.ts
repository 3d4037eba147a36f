/**
 * The real parts runAction is given on a runner, built from the job's
 * environment. index.ts uses it; tests use it with their own core and store,
 * so what they drive is wired exactly as the action is.
 */
import { dirname, resolve } from 'node:path';
import { setupForge } from '../adapters.js';
import { directiveEnv } from '../cli/main.js';
import { basicCredential } from '../github/octokit.js';
import { githubClient } from '../github/setup.js';
import { localExecutor, localWorkspace } from '../local/workspace.js';
import { systemClock, type ArtifactStore, type Logger } from '../ports.js';
import type { ActionDeps, CoreLike } from './main.js';

export function actionDeps(env: NodeJS.ProcessEnv, core: CoreLike, store: ArtifactStore, logger: Logger): ActionDeps {
  // Any variable holding a token, plain or as the basic credential git sends, is withheld from directives.
  const tokens = [env.FLEET_TOKEN, env.FLEET_RUN_TOKEN].flatMap((t) => (t ? [t, basicCredential(t)] : []));
  return {
    env,
    core,
    store,
    clock: systemClock,
    workspace: localWorkspace,
    exec: localExecutor,
    setupForge: (s, file, writePace) => setupForge(file, { env, baseDir: s.file ? dirname(resolve(s.file)) : process.cwd(), token: s.token, logger, writePace }),
    api: (s) => {
      const client = githubClient(env, s.runToken, logger);
      if ('problem' in client) throw new Error(client.problem);
      return client;
    },
    directiveEnv: directiveEnv(env, undefined, tokens),
  };
}
