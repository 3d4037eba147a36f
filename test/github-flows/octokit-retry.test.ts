/**
 * Regression: plugin-retry keeps its back-off counter in `options.request`,
 * which Octokit shares between every request of a client. Concurrent lanes
 * each hitting one 5xx must each wait the first back-off, not a longer one
 * inherited from another lane's retry (nor from an earlier call).
 */
import { afterEach, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { createOctokit } from '../../src/github/octokit.js';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

it('each request backs off on its own: concurrent 5xx retries all wait the first interval, call after call', async () => {
  emu = await startEmulator({ token: 'ghs_retryIsolation0123456789abcdefghij' });
  for (const n of ['a', 'b', 'c']) await emu.createRepo({ owner: 'o', name: n });
  // 250 ms per back-off unit: a first retry waits 250 ms; a leaked count (a "second" retry) waits 1 s.
  const octokit = createOctokit({ token: 'ghs_retryIsolation0123456789abcdefghij', apiUrl: emu.url, retryAfterBaseValue: 250, pacing: { writeMs: 0, searchMs: 0, notificationsMs: 0 }, logger: { info() {}, warn() {}, error() {} } });
  // The emulator checks its answers against GitHub's response schemas and compiles each schema on first use: not part of what is timed.
  await octokit.paginate('GET /repos/{owner}/{repo}/pulls', { owner: 'o', repo: 'a', per_page: 100 });
  for (const round of [1, 2]) {
    emu.fault({ match: { method: 'GET' }, kind: '5xx', times: 3 });
    const t0 = Date.now();
    const took = await Promise.all(
      ['a', 'b', 'c'].map(async (repo) => {
        await octokit.paginate('GET /repos/{owner}/{repo}/pulls', { owner: 'o', repo, per_page: 100 });
        return Date.now() - t0;
      }),
    );
    for (const ms of took) expect(ms, `round ${round}: ${took.join(', ')} ms`).toBeLessThan(800);
  }
  // Every request failed once and succeeded on its first retry (plus the warm-up).
  expect(emu.count({ method: 'GET', status: 502 })).toBe(6);
  expect(emu.count({ method: 'GET', status: 200 })).toBe(7);
});
