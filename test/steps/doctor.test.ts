/**
 * runDoctor (src/steps/doctor.ts) goes on past a check it cannot make: that check becomes a FAIL finding saying
 * what failed (redacted), and every other check still reports. The GitHub reads themselves are tested against the
 * emulator in test/integration/doctor.test.ts; here the forge and the probe are ports that fail on purpose.
 */
import { describe, expect, it } from 'vitest';
import { validateFleetFile } from '../../src/core/validate.js';
import type { Forge, SetupProbe } from '../../src/ports.js';
import { runDoctor } from '../../src/steps/doctor.js';
import { registerSecret } from '../../src/util/secrets.js';

describe('runDoctor', () => {
  it('reports a check that threw as a finding, redacted, and makes the others', async () => {
    const v = validateFleetFile({ name: 'f', forge: 'github', directive: 'd', run: 'true', targets: [{ repo: 'acme/api' }] }, 'fleet.yml');
    if (!v.ok) throw new Error('fleet');
    registerSecret('ghp_SecretInAnError0000000000000000000000');
    const forge = {
      checkTargets: async () => {
        throw new Error('validating acme/api on GitHub failed: 502 (token ghp_SecretInAnError0000000000000000000000)');
      },
      workflowWrites: async () => ({ allowed: true, credential: 'the token', fix: '' }),
    } as unknown as Forge;
    const probe: SetupProbe = {
      credential: async () => ({
        kind: 'app',
        account: 'acme',
        permissions: { contents: 'write', metadata: 'read', pull_requests: 'write', checks: 'read', statuses: 'read', actions: 'read' },
      }),
      visibility: async () => 'public',
      environment: async () => {
        throw new Error('socket hang up');
      },
      actionsSettings: async () => ({ unreadable: '403: Resource not accessible by integration' }),
    };
    const findings = await runDoctor(v.fleet, forge, probe, { controlRepo: 'acme/control', approvalEnvironment: 'fleet-approval' });
    expect(findings.map((f) => [f.check, f.status])).toEqual([
      ['credential', 'ok'],
      ['permissions', 'ok'],
      ['targets', 'fail'],
      ['workflow files', 'ok'],
      ['approval gate', 'fail'],
      ['actions settings', 'skip'],
    ]);
    const targets = findings.find((f) => f.check === 'targets')!;
    expect(targets.message).toMatch(/^could not be checked: validating acme\/api on GitHub failed: 502/);
    expect(targets.message).not.toContain('ghp_SecretInAnError');
    expect(findings.find((f) => f.check === 'approval gate')!.message).toBe('could not be checked: socket hang up');
  });
});
