// actions/create-github-app-token, emulated by its documented contract: sign a JWT as the App, find the
// installation for the owner (or for the listed repositories), mint an installation token narrowed to those
// repositories and permissions, mask it, and revoke it in the post step. The token lives one hour.
import { createSign } from 'node:crypto';
import * as core from '@actions/core';

/** The runner's clock: real time plus what the test advanced it by (the emulator checks the JWT against it). */
function nowSeconds() {
  return Math.floor((Date.now() + Number(process.env.RUNNER_CLOCK_OFFSET_MS ?? '0')) / 1000);
}

function jwt(appId, privateKey) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = nowSeconds();
  const body = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({ iat: now - 60, exp: now + 540, iss: appId })}`;
  const sig = createSign('RSA-SHA256').update(body).sign(privateKey).toString('base64url');
  return `${body}.${sig}`;
}

async function api(base, path, token, init = {}) {
  const res = await fetch(`${base}${path}`, {
    ...init,
    headers: {
      accept: 'application/vnd.github+json',
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'user-agent': 'actions/create-github-app-token',
    },
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path} failed with ${res.status}: ${text}`);
  return text ? JSON.parse(text) : {};
}

try {
  const appId = core.getInput('app-id') || core.getInput('client-id');
  if (!appId) throw new Error("Either 'app-id' or 'client-id' input must be set");
  const key = core.getInput('private-key', { required: true }).replace(/\\n/g, '\n');
  const base = (core.getInput('github-api-url') || process.env.GITHUB_API_URL).replace(/\/$/, '');
  const [repoOwner, repoName] = (process.env.GITHUB_REPOSITORY ?? '/').split('/');
  const owner = core.getInput('owner') || repoOwner;
  let repositories = core
    .getInput('repositories')
    .split(/[\n,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  if (!core.getInput('owner') && repositories.length === 0) repositories = [repoName];
  const permissions = {};
  for (const scope of ['contents', 'pull-requests', 'checks', 'actions', 'metadata', 'statuses', 'issues']) {
    const v = core.getInput(`permission-${scope}`);
    if (v) permissions[scope.replace('-', '_')] = v;
  }
  const appJwt = jwt(appId, key);
  const installation = repositories.length
    ? await api(base, `/repos/${owner}/${repositories[0]}/installation`, appJwt)
    : await api(base, `/orgs/${owner}/installation`, appJwt).catch(() => api(base, `/users/${owner}/installation`, appJwt));
  const body = { ...(repositories.length ? { repositories } : {}), ...(Object.keys(permissions).length ? { permissions } : {}) };
  const minted = await api(base, `/app/installations/${installation.id}/access_tokens`, appJwt, { method: 'POST', body: JSON.stringify(body) });
  core.setSecret(minted.token);
  core.setOutput('token', minted.token);
  core.setOutput('installation-id', String(installation.id));
  core.setOutput('app-slug', installation.app_slug ?? '');
  if (!core.getBooleanInput('skip-token-revoke')) core.saveState('token', minted.token);
  core.saveState('expiresAt', minted.expires_at ?? '');
} catch (err) {
  core.setFailed(err.message);
}
