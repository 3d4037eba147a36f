/**
 * The action's entrypoint (dist/action/index.js): wires the runner's real
 * parts into runAction. Started by action.yml from a github-script step.
 */
import * as core from '@actions/core';
import { withholdFromProcessEnv } from '../cli/main.js';
import { ActionsArtifactStore } from './artifact-store.js';
import { actionDeps } from './deps.js';
import { runAction } from './main.js';

// Fleet's credentials leave process.env at once, so no child (git, a directive) inherits them; they live in `env`.
// The artifact client reads its runtime token from process.env, so that one stays (directives never get it: directiveEnv).
const env = withholdFromProcessEnv(['ACTIONS_RUNTIME_TOKEN']);
const store = new ActionsArtifactStore();
const logger = { info: core.info, warn: core.warning, error: core.error };

const code = await runAction(actionDeps(env, core, store, logger));
process.exitCode = code;
