// actions/github-script, emulated by its documented contract: the script is the body of an async function
// given `github` (an authenticated Octokit), `context`, `core`, `glob`, `io`, `exec`, `require` and
// `__original_require__`; what it returns is the `result` output (JSON unless result-encoding is string).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as core from '@actions/core';
import * as exec from '@actions/exec';
import { context, getOctokit } from '@actions/github';
import * as glob from '@actions/glob';
import * as io from '@actions/io';

const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor;
const ownRequire = createRequire(import.meta.url);

/** github-script's require: Node's own modules and the action's, else resolved from the workspace. */
function requireWrapper(id) {
  try {
    return ownRequire(id);
  } catch {
    const fromWorkspace = createRequire(join(process.cwd(), 'noop.js'));
    return fromWorkspace(fromWorkspace.resolve(id, { paths: [process.cwd()] }));
  }
}

try {
  const token = core.getInput('github-token', { required: true });
  const baseUrl = core.getInput('base-url');
  const opts = { userAgent: core.getInput('user-agent') || undefined, ...(baseUrl ? { baseUrl } : {}) };
  const github = getOctokit(token, opts);
  const script = core.getInput('script', { required: true });
  const fn = new AsyncFunction('require', '__original_require__', 'github', 'octokit', 'context', 'core', 'exec', 'glob', 'io', script);
  const result = await fn(requireWrapper, ownRequire, github, github, context, core, exec, glob, io);
  const encoding = core.getInput('result-encoding') || 'json';
  if (encoding !== 'json' && encoding !== 'string') throw new Error('"result-encoding" must be either "string" or "json"');
  core.setOutput('result', encoding === 'string' ? String(result) : JSON.stringify(result));
} catch (err) {
  core.error(err.stack ?? String(err));
  core.setFailed(err.message);
}
