// actions/checkout's post step removes the persisted credentials from the repository's config.
import { execFileSync } from 'node:child_process';
import * as core from '@actions/core';

const dir = core.getState('repositoryPath');
const key = core.getState('configKey');
if (dir && key) {
  try {
    execFileSync('git', ['config', '--local', '--unset-all', key], { cwd: dir, stdio: 'ignore' });
  } catch {
    // nothing persisted
  }
}
