/**
 * Lanes that change workflow files, under a credential GitHub refuses such a push from (the emulator's workflow guard,
 * test/emulator/workflow-guard.test.ts, after GitHub's "refusing to allow a GitHub App to create or update workflow
 * … without `workflows` permission"). A lane fenced to workflow files only is excluded at the plan with the reason and
 * the fix, when the credential says it lacks the permission (a classic PAT's X-OAuth-Scopes, an App installation's
 * permissions); a lane with a wider fence runs, and the refused push fails it with the same fix; a dry run keeps the
 * fenced lane (its patch shows what it would do). With the permission every lane completes.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readManifest } from '../integration/helpers.js';
import { startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

const EDIT_CI = 'printf "on: [push, pull_request]\\n" > .github/workflows/ci.yml';

async function world(): Promise<{ flow: Flow; file: string }> {
  const f = await startFlow();
  await f.emu.createRepo({ owner: 'acme', name: 'api', files: { 'README.md': '# api\n', '.github/workflows/ci.yml': 'on: push\n' } });
  const file = f.fleetFile({
    name: 'wf',
    directive: 'Run CI on pull requests too.',
    max_retries: 0,
    targets: [
      { repo: 'acme/api', lane: 'ci-only', owns: ['.github/workflows/**'], run: EDIT_CI },
      { repo: 'acme/api', lane: 'whole', owns: ['README.md', '.github/**'], run: EDIT_CI },
      { repo: 'acme/api', lane: 'docs', owns: ['docs/**'], run: 'mkdir -p docs && echo hi > docs/x.md' },
    ],
  });
  return { flow: f, file };
}

const row = (m: ReturnType<typeof readManifest>, id: string) => m.lanes.find((l) => l.lane === id)!;

describe('lanes that change workflow files', () => {
  it('under a classic PAT without the workflow scope: the fenced lane is excluded with the fix, the wider one fails with it, the others complete', async () => {
    const w = await world();
    flow = w.flow;
    flow.emu.addToken('ghp_ClassicRepoOnly000000000000000000000', { login: 'octocat', type: 'pat', oauthScopes: ['repo'] });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(w.file, ws, [], { FLEET_GITHUB_TOKEN: 'ghp_ClassicRepoOnly000000000000000000000' });
    expect(r.code, r.stderr).toBe(1);
    const m = readManifest(ws);
    const excluded = m.excluded.find((e) => e.lane === 'ci-only')!;
    expect(excluded.reason).toBe('no-workflows-permission');
    expect(excluded.detail).toBe(
      'its owns: holds workflow files only (.github/workflows/**), and GitHub refuses a push that changes one from the token (a classic PAT), which lacks the Workflows permission: give the token the workflow scope, or use a fine-grained PAT or a GitHub App with the Workflows permission (Read and write)',
    );
    expect(row(m, 'whole')).toMatchObject({ status: 'failed', error: { class: 'push-rejected' } });
    expect(row(m, 'whole').error!.message).toBe(
      'push refused: the change creates, changes or deletes .github/workflows/ci.yml, and GitHub takes workflow files only from a token with the workflow scope (a classic PAT) or the Workflows permission (a fine-grained PAT, Read and write); or keep them out of the lane with never: [".github/workflows/**"]',
    );
    expect(row(m, 'docs').status).toBe('completed');
    expect(await flow.emu.branchSha('acme/api', 'fleet/wf/whole')).toBeNull();
  }, 120_000);

  it('a dry run keeps the fenced lane: nothing is pushed, its patch shows the change', async () => {
    const w = await world();
    flow = w.flow;
    flow.emu.addToken('ghp_ClassicRepoOnly000000000000000000000', { login: 'octocat', type: 'pat', oauthScopes: ['repo'] });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(w.file, ws, ['--dry-run'], { FLEET_GITHUB_TOKEN: 'ghp_ClassicRepoOnly000000000000000000000' });
    expect(r.code, r.stderr).toBe(0);
    const m = readManifest(ws);
    expect(m.excluded).toEqual([]);
    expect(row(m, 'ci-only').status).toBe('completed');
  }, 120_000);

  it('under a GitHub App without the Workflows permission the fenced lane is excluded; with it, every lane completes', async () => {
    const w = await world();
    flow = w.flow;
    const perms = { contents: 'write', 'pull-requests': 'write', issues: 'write', checks: 'read', statuses: 'read', metadata: 'read' } as const;
    const without = flow.emu.addApp({ id: 5151, slug: 'no-wf', installations: [{ account: 'acme', permissions: perms }] });
    const appEnv = (app: typeof without) => ({ FLEET_GITHUB_TOKEN: undefined, FLEET_APP_ID: String(app.id), FLEET_APP_PRIVATE_KEY: app.privateKeyPem });
    const ws1 = join(flow.dir, 'ws1');
    const r1 = await flow.run(w.file, ws1, [], appEnv(without));
    expect(r1.code, r1.stderr).toBe(1);
    const m1 = readManifest(ws1);
    expect(m1.excluded.find((e) => e.lane === 'ci-only')?.detail).toContain(
      "from the GitHub App's installation, which lacks the Workflows permission: give the App the Workflows permission (Read and write)",
    );
    expect(row(m1, 'whole').error!.message).toContain('GitHub takes workflow files only from a GitHub App with the Workflows permission');

    await flow.emu.close();
    const w2 = await world();
    flow = w2.flow;
    const withWf = flow.emu.addApp({ id: 5252, slug: 'with-wf', installations: [{ account: 'acme', permissions: { ...perms, workflows: 'write' } }] });
    const ws2 = join(flow.dir, 'ws2');
    const r2 = await flow.run(w2.file, ws2, [], appEnv(withWf));
    expect(r2.code, r2.stderr).toBe(0);
    const m2 = readManifest(ws2);
    expect(m2.lanes.map((l) => [l.lane, l.status]).sort()).toEqual([
      ['ci-only', 'completed'],
      ['docs', 'completed'],
      ['whole', 'completed'],
    ]);
  }, 180_000);
});
