// The post step revokes the installation token unless it already expired (as the real action does).
import * as core from '@actions/core';

const token = core.getState('token');
const expiresAt = core.getState('expiresAt');
const now = Date.now() + Number(process.env.RUNNER_CLOCK_OFFSET_MS ?? '0');
if (!token) core.info('Token revocation was skipped');
else if (expiresAt && Date.parse(expiresAt) < now) core.info('Token expired, skipping token revocation');
else {
  const base = (process.env.GITHUB_API_URL ?? '').replace(/\/$/, '');
  const res = await fetch(`${base}/installation/token`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json' },
  });
  if (res.status === 204) core.info('Token revoked');
  else core.warning(`Token revocation failed: ${res.status}`);
}
