// actions/checkout, emulated by its documented contract: init a repository in $GITHUB_WORKSPACE/<path>,
// fetch the ref from ${GITHUB_SERVER_URL}/<repository> with the token as an HTTP extra header, check it out,
// and (persist-credentials, the default) leave that header in .git/config, as the real action does.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as core from '@actions/core';

function git(cwd, args, extraEnv = {}) {
  core.info(`[command]/usr/bin/git ${args.map((a) => (a.includes('AUTHORIZATION') ? a.replace(/basic \S+/, 'basic ***') : a)).join(' ')}`);
  return execFileSync('git', args, { cwd, env: { ...process.env, GIT_TERMINAL_PROMPT: '0', ...extraEnv }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

try {
  const repository = core.getInput('repository') || process.env.GITHUB_REPOSITORY;
  const token = core.getInput('token');
  const workspace = process.env.GITHUB_WORKSPACE;
  const dest = resolve(workspace, core.getInput('path') || '.');
  if (!dest.startsWith(resolve(workspace))) throw new Error(`Repository path '${dest}' is not under '${workspace}'`);
  const depth = Number(core.getInput('fetch-depth') || '1');
  const persist = core.getBooleanInput('persist-credentials');
  const server = new URL(process.env.GITHUB_SERVER_URL);
  const url = `${server.origin}${server.pathname.replace(/\/$/, '')}/${repository}.git`;
  const header = `AUTHORIZATION: basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  core.setSecret(Buffer.from(`x-access-token:${token}`).toString('base64'));
  const configKey = `http.${server.origin}/.extraheader`;
  let ref = core.getInput('ref');
  const own = repository.toLowerCase() === (process.env.GITHUB_REPOSITORY ?? '').toLowerCase();
  if (!ref && own) ref = process.env.GITHUB_SHA;
  mkdirSync(dest, { recursive: true });
  git(dest, ['init', '-q']);
  git(dest, ['remote', 'add', 'origin', url]);
  const auth = ['-c', `${configKey}=${header}`];
  const depthArgs = depth > 0 ? [`--depth=${depth}`] : [];
  let target;
  if (!ref) target = 'HEAD';
  else if (/^[0-9a-f]{40}$/i.test(ref)) target = ref;
  else if (ref.startsWith('refs/')) target = ref;
  else target = ref;
  git(dest, [...auth, 'fetch', '--no-tags', '--prune', ...depthArgs, 'origin', target]);
  const commit = git(dest, ['rev-parse', 'FETCH_HEAD']);
  git(dest, ['checkout', '-q', '--force', commit]);
  if (persist) git(dest, ['config', '--local', configKey, header]);
  core.saveState('repositoryPath', dest);
  core.saveState('configKey', configKey);
  core.setOutput('ref', ref || 'HEAD');
  core.setOutput('commit', commit);
} catch (err) {
  core.setFailed(err.message);
}
