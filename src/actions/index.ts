/**
 * The action's entrypoint (dist/action/index.js): wires the runner's real
 * parts into runAction. Started by action.yml from a github-script step.
 */
import './env-defaults.js';
import * as core from '@actions/core';
import { enterProcess } from '../session/interrupts.js';
import { ActionsArtifactStore, type FindBy } from './artifact-store.js';
import { actionDeps } from './deps.js';
import { runAction } from './main.js';

// Fleet's credentials leave process.env at once, so no child (git, a directive) inherits them; they live in `env`.
// The artifact client reads its runtime token from process.env, so that one stays (directives never get it: directiveEnv).
// A cancelled job gets SIGINT, then SIGTERM, and the runner's SIGKILL seconds later: every interrupt stops at once.
const entry = enterProcess({ keep: ['ACTIONS_RUNTIME_TOKEN'] });
const { env } = entry;
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
const code = await runAction(actionDeps(env, core, store, logger));
await entry.end();
process.exitCode = code;
