/**
 * The action's entrypoint (dist/action/index.js): wires the runner's real
 * parts into runAction. Started by action.yml from a github-script step.
 */
import './env-defaults.js';
import * as core from '@actions/core';
import { withholdFromProcessEnv } from '../util/directive-env.js';
import { closeGitLauncher } from '../workspace/launcher.js';
import { killAllRunning } from '../workspace/processes.js';
import { ActionsArtifactStore, type FindBy } from './artifact-store.js';
import { actionDeps } from './deps.js';
import { runAction } from './main.js';

// Fleet's credentials leave process.env at once, so no child (git, a directive) inherits them; they live in `env`.
// The artifact client reads its runtime token from process.env, so that one stays (directives never get it: directiveEnv).
const env = withholdFromProcessEnv(['ACTIONS_RUNTIME_TOKEN']);
const logger = { info: core.info, warn: core.warning, error: core.error };

/** This run's REST coordinates for artifacts the job's own path cannot reach (an earlier attempt's uploads). */
function thisRun(): FindBy | undefined {
  const [owner, repo] = (env.GITHUB_REPOSITORY ?? '').split('/');
  const runId = Number(env.GITHUB_RUN_ID);
  const token = env.FLEET_RUN_TOKEN || env.FLEET_TOKEN;
  if (!owner || !repo || !runId || !token) return undefined;
  return { token, workflowRunId: runId, repositoryOwner: owner, repositoryName: repo };
}

const store = new ActionsArtifactStore(thisRun(), core.info);
const deps = actionDeps(env, core, store, logger);

// A cancelled job gets SIGINT, then SIGTERM: git and the directives run in process groups of their own, which the
// runner's signal does not reach, so they are ended here (no git left holding the credential header). The App
// tokens Fleet minted are revoked too, as create-github-app-token's post step does on a cancel: a few seconds at
// most, before the runner's SIGKILL.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllRunning('SIGKILL');
    const revoked = deps.finish?.().catch(() => undefined) ?? Promise.resolve();
    void Promise.race([revoked, new Promise((r) => setTimeout(r, 3000))]).finally(() => process.exit(130));
  });
}

const code = await runAction(deps);
await closeGitLauncher();
process.exitCode = code;
