/**
 * The approval gate's check with a token that may not read environments: GitHub answers 403 to
 * `GET /repos/{owner}/{repo}/environments/{environment_name}` without "Actions" repository permission (read)
 * (https://docs.github.com/rest/deployments/environments#get-an-environment), and the plan job then refuses
 * with what the calling workflow must grant, instead of opening a gate it could not check.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalGateProblem } from '../../src/actions/gate.js';
import { createOctokit } from '../../src/github/octokit.js';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator();
  await emu.createRepo({ owner: 'acme', name: 'control' });
});
afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
});

const client = (actions: 'read' | 'none') =>
  createOctokit({
    token: emu.mintInstallationToken({ repositories: ['acme/control'], scopes: { contents: 'read', actions } }),
    apiUrl: emu.url,
    pacing: { writeMs: 0, searchMs: 0, notificationsMs: 0 },
  });

describe('the approval gate check', () => {
  it('without actions: read, refuses and says the calling workflow must grant it', async () => {
    const why = await approvalGateProblem(client('none'), { owner: 'acme', repo: 'control' }, 'fleet-approval');
    expect(why).toMatch(
      /^input approval-environment: the approval gate would not hold the lanes: the plan job could not read environment "fleet-approval" of acme\/control \(403: /,
    );
    expect(why).toContain('needs `actions: read`; the calling workflow must grant it');
  });
});
