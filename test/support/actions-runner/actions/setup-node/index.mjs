// actions/setup-node, emulated: only the runner's own Node.js exists here, so a different major is an error
// rather than a silent substitute.
import { dirname } from 'node:path';
import * as core from '@actions/core';

const wanted = core.getInput('node-version');
const have = process.versions.node;
if (wanted && !have.startsWith(`${wanted.replace(/^v/, '').split('.')[0]}`)) {
  core.setFailed(`Unable to find Node version '${wanted}' (the emulated runner has only Node.js ${have}).`);
} else {
  core.addPath(dirname(process.execPath));
  core.setOutput('node-version', `v${have}`);
  core.setOutput('cache-hit', 'false');
}
