/**
 * Push-only mode (pr.open: false, or `fleet run --push-only`) on GitHub: each lane pushes its branch, is verified
 * by it (a dependency's checkpoint, CI on its commit), and no PR is opened; what needs a PR is refused up front.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci } from '../support/github-emulator/index.js';
import { readManifest } from '../integration/helpers.js';
import { startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

describe('push-only mode on GitHub', () => {
  it('pushes every lane branch, waits for CI on it, and opens no PR', async () => {
    flow = await startFlow();
    const { emu } = flow;
    for (const name of ['core', 'api']) await emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
    emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['test'])));
    const file = flow.fleetFile({
      name: 'quiet',
      directive: 'Add a note.',
      run: 'echo note > NOTE.md',
      max_retries: 0,
      ci: { wait: true, timeout_minutes: 1 },
      targets: [{ repo: 'acme/core' }, { repo: 'acme/api', depends_on: ['core'] }],
    });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(file, ws, ['--push-only']);
    expect(r.code, r.stderr).toBe(0);
    const m = readManifest(ws);
    expect(m.lanes.map((l) => [l.lane, l.status, l.phase, l.pr_number, l.ci_conclusion])).toEqual([
      ['core', 'completed', 'pushed', null, 'success'],
      ['api', 'completed', 'pushed', null, 'success'],
    ]);
    for (const name of ['core', 'api']) {
      expect(emu.pullRequests(`acme/${name}`)).toEqual([]);
      expect(await emu.branchSha(`acme/${name}`, `fleet/quiet/${name}`)).toBe(m.lanes.find((l) => l.lane === name)!.commit);
    }
    emu.assertNoViolations();
  }, 120_000);

  it('refuses what needs a PR: merging when green, every problem at once', async () => {
    flow = await startFlow();
    const file = flow.fleetFile({
      name: 'quiet',
      directive: 'x',
      run: 'true',
      merge: { policy: 'when-green' },
      pr: { open: false },
      targets: [{ repo: 'acme/core' }],
    });
    const r = await flow.run(file, join(flow.dir, 'ws'));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('merge.policy: pr.open is false (push-only: no PR is opened), and when-green merges PRs');
  });
});
