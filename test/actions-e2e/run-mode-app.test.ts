/**
 * The action's `mode: run` (the whole fleet in one job) with GitHub App credentials instead of a token, through
 * the workflow runner: the action hands `app-id`, `app-private-key` and `app-owner` to the CLI, which mints the
 * installation token (POST /app/installations/{id}/access_tokens,
 * https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app), opens the PRs as the
 * App and revokes the token at the end (DELETE /installation/token,
 * https://docs.github.com/en/rest/apps/installations#revoke-an-installation-access-token). The key reaches no
 * directive.
 */
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../support/actions-runner/index.js';
import { readRemoteFile } from '../support/repos.js';
import { CONTROL_REPO, explain, FLEET_REPO, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

const caller = `name: Fleet in one job
on:
  workflow_dispatch:
permissions:
  contents: read
jobs:
  fleet:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v6
        with:
          persist-credentials: false
      - id: fleet
        uses: ${FLEET_REPO}@v1
        with:
          mode: run
          fleet-file: fleet.yml
          app-id: \${{ vars.FLEET_APP_ID }}
          app-private-key: \${{ secrets.FLEET_APP_PRIVATE_KEY }}
      - run: echo "exit code \${{ steps.fleet.outputs.exit-code }}"
`;

let w: World;
let s: RunSummary;
let keyBody: string;

beforeAll(async () => {
  w = await startWorld({ caller });
  for (const name of ['one', 'two']) await w.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
  const app = w.emu.addApp({
    id: 4545,
    slug: 'fleet-run',
    installations: [
      { account: 'acme', permissions: { contents: 'write', 'pull-requests': 'write', issues: 'write', checks: 'read', statuses: 'read', metadata: 'read' } },
    ],
  });
  keyBody = app.privateKeyPem.split('\n')[1]!;
  w.runner.setVariable(CONTROL_REPO, 'FLEET_APP_ID', String(app.id));
  w.runner.setSecret(CONTROL_REPO, 'FLEET_APP_PRIVATE_KEY', app.privateKeyPem);
  await w.commitControl({
    'fleet.yml': stringify({
      name: 'one-job',
      forge: 'github',
      directive: 'Print the environment into the change.',
      run: 'env | sort > ENV.txt',
      max_retries: 0,
      targets: [{ repo: 'acme/one' }, { repo: 'acme/two' }],
    }),
  });
  w.emu.resetLog();
  const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: {} });
  s = await w.runner.finish(run);
});
afterAll(() => w?.close());

describe('mode: run with GitHub App credentials', () => {
  it('mints one installation token, opens every PR as the App, and revokes the token at the end', async () => {
    expect(s.conclusion, explain(s)).toBe('success');
    expect(s.jobs[0]!.log).toContain('exit code 0');
    expect(w.emu.find({ route: '/app/installations/{installation_id}/access_tokens', method: 'POST', status: 201 })).toHaveLength(1);
    for (const name of ['one', 'two']) expect(w.emu.pullRequests(`acme/${name}`)[0]?.user, name).toBe('fleet-run[bot]');
    expect(w.emu.find({ route: '/installation/token', method: 'DELETE' }).map((r) => r.status)).toEqual([204]);
  });

  it('leaves the key in no directive environment', async () => {
    const pr = w.emu.pullRequests('acme/one')[0]!;
    const printed = (await readRemoteFile(w.emu.repo('acme/one')!.gitDir, pr.headRef, 'ENV.txt')) ?? '';
    expect(printed).toMatch(/^FLEET_LANE=one$/m);
    expect(printed).not.toMatch(/^(FLEET_APP_PRIVATE_KEY|INPUT_APP-PRIVATE-KEY)=/m);
    expect(printed.includes(keyBody)).toBe(false);
  });
});
