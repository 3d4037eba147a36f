/**
 * The action's entrypoint (dist/action/index.js): wires the runner's real
 * parts into runAction. Started by action.yml from a github-script step.
 */
import * as core from '@actions/core';
import { dirname, resolve } from 'node:path';
import { githubClient, setupForge } from '../adapters.js';
import { basicCredential } from '../github/octokit.js';
import { directiveEnv, withholdFromProcessEnv } from '../cli/main.js';
import { localExecutor, localWorkspace } from '../local/workspace.js';
import { systemClock } from '../ports.js';
import { ActionsArtifactStore } from './artifact-store.js';
import { runAction } from './main.js';

// Fleet's credentials leave process.env at once, so no child (git, a directive) inherits them; they live in `env`.
// The artifact client reads its runtime token from process.env, so that one stays (directives never get it: directiveEnv).
const env = withholdFromProcessEnv(['ACTIONS_RUNTIME_TOKEN']);
const store = new ActionsArtifactStore();
const logger = { info: core.info, warn: core.warning, error: core.error };

const code = await runAction({
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
  directiveEnv: directiveEnv(env, undefined, [env.FLEET_TOKEN, env.FLEET_RUN_TOKEN].flatMap((t) => (t ? [t, basicCredential(t)] : []))),
});
process.exitCode = code;
