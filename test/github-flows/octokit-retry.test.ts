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
  // plugin-retry waits (attempt)² back-off units after a failed attempt; Fleet logs which attempt failed. A leaked
  // counter shows as a failure on attempt 2 or later where every request failed only once. (Read from the log,
  // not the clock: a shared machine stretches any wall-clock bound.)
  const warnings: string[] = [];
  const octokit = createOctokit({
    token: 'ghs_retryIsolation0123456789abcdefghij',
    apiUrl: emu.url,
    retryAfterBaseValue: 50,
    pacing: { writeMs: 0, searchMs: 0, notificationsMs: 0 },
    logger: { info() {}, warn: (m) => warnings.push(m), error() {} },
  });
  for (const round of [1, 2]) {
    emu.fault({ match: { method: 'GET' }, kind: '5xx', times: 3 });
    await Promise.all(['a', 'b', 'c'].map((repo) => octokit.paginate('GET /repos/{owner}/{repo}/pulls', { owner: 'o', repo, per_page: 100 })));
    const failures = warnings.splice(0).filter((w) => / failed on attempt /.test(w));
    expect(failures, `round ${round}`).toHaveLength(3);
    for (const w of failures) expect(w, `round ${round}`).toMatch(/^GitHub: GET \/repos\/o\/[abc]\/pulls failed on attempt 1 \(502: /);
  }
  // Every request failed once and succeeded on its first retry.
  expect(emu.count({ method: 'GET', status: 502 })).toBe(6);
  expect(emu.count({ method: 'GET', status: 200 })).toBe(6);
});
