/**
 * actions/setup-node, emulated: only the runner's own Node.js exists here (no
 * network), so a different major fails rather than passing silently.
 */
import { dirname } from 'node:path';
import type { Builtin, BuiltinResult } from './types.js';

export const setupNode: Builtin = {
  async main(step): Promise<BuiltinResult> {
    const wanted = (step.inputs['node-version'] ?? '').replace(/^v/, '');
    const have = process.versions.node;
    if (wanted && have.split('.')[0] !== wanted.split('.')[0]) {
      return { ok: false, outputs: {}, error: `Unable to find Node version '${wanted}' (the emulated runner has only Node.js ${have}).` };
    }
    step.log(`Using Node.js ${have} at ${dirname(process.execPath)}`);
    return { ok: true, outputs: { 'node-version': `v${have}`, 'cache-hit': 'false' }, addPath: dirname(process.execPath) };
  },
};
