// actions/github-script, emulated by its documented contract: the script is the body of an async function
// given `github` (an authenticated Octokit), `context`, `core`, `glob`, `io`, `exec`, `require` and
// `__original_require__`; what it returns is the `result` output (JSON unless result-encoding is string).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as core from '@actions/core';

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
  const script = core.getInput('script', { required: true });
  // The toolkit's modules are loaded only for the names the script uses: a script cannot reach a parameter it does
  // not name, and loading Octokit, glob and exec is most of this process's start (a Fleet step names none of them).
  const names = (...ns) => ns.some((n) => new RegExp(`\\b${n}\\b`).test(script));
  const gh = names('github', 'octokit', 'context') ? await import('@actions/github') : undefined;
  const github = gh?.getOctokit(token, opts);
  const context = gh?.context;
  const exec = names('exec') ? await import('@actions/exec') : undefined;
  const glob = names('glob') ? await import('@actions/glob') : undefined;
  const io = names('io') ? await import('@actions/io') : undefined;
  const fn = new AsyncFunction('require', '__original_require__', 'github', 'octokit', 'context', 'core', 'exec', 'glob', 'io', script);
  const result = await fn(requireWrapper, ownRequire, github, github, context, core, exec, glob, io);
  const encoding = core.getInput('result-encoding') || 'json';
  if (encoding !== 'json' && encoding !== 'string') throw new Error('"result-encoding" must be either "string" or "json"');
  core.setOutput('result', encoding === 'string' ? String(result) : JSON.stringify(result));
} catch (err) {
  core.error(err.stack ?? String(err));
  core.setFailed(err.message);
}
