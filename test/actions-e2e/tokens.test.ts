/**
 * Tokens over a long fleet. A GitHub App installation token lives one hour
 * and cannot pass between jobs (actions/create-github-app-token#128,
 * peter-murray/workflow-application-token-action#43). With App credentials
 * the reusable workflow mints a token in every job, so a fleet whose waves
 * span two hours of the runner's clock finishes; a token minted once and
 * stored as a secret runs out in the middle, and the runner shows it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CONTROL_REPO, dispatchFleet, explain, reportArtifact, startWorld, type World } from './world.js';

// Whole workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const CHAIN = {
  name: 'long',
  forge: 'github',
  directive: 'Stamp.',
  run: 'echo stamped > STAMP',
  max_retries: 0,
  targets: [{ repo: 'acme/one' }, { repo: 'acme/two', depends_on: ['one'] }, { repo: 'acme/three', depends_on: ['two'] }],
};
const APP_SCOPES = { contents: 'write', 'pull-requests': 'write', issues: 'write', checks: 'read', statuses: 'read', actions: 'read' } as const;

/** Every wave job starts 40 minutes after the one before: three waves span two hours. */
async function longWorld(): Promise<World> {
  let world: World | undefined;
  world = await startWorld({
    fleetFile: CHAIN,
    runner: { onLog: (_job, line) => void (line.startsWith('Job "fleet / wave') && world?.runner.clock.advance(40 * 60_000)) },
  });
  for (const name of ['one', 'two', 'three']) await world.emu.createRepo({ owner: 'acme', name });
  return world;
}

describe('a fleet longer than an hour', () => {
  it('with App credentials every job mints its own installation token: the fleet finishes', async () => {
    w = await longWorld();
    const app = w.emu.addApp({ id: 4242, slug: 'fleet-app', installations: [{ account: 'acme', permissions: APP_SCOPES }] });
    w.runner.setVariable(CONTROL_REPO, 'FLEET_APP_ID', String(app.id));
    w.runner.setSecret(CONTROL_REPO, 'FLEET_APP_PRIVATE_KEY', app.privateKeyPem);
    w.runner.setSecret(CONTROL_REPO, 'FLEET_TOKEN', '');
    const started = w.runner.clock.now();
    const { runId, s } = await dispatchFleet(w);
    expect(w.runner.clock.now() - started).toBeGreaterThanOrEqual(120 * 60_000);
    expect(s.conclusion, explain(s)).toBe('success');
    expect(reportArtifact(w, runId).manifest.summary).toMatchObject({ total: 3, completed: 3 });
    // One token per job (plan, three waves, report), each minted by POST …/access_tokens and revoked at the job's end.
    const minted = w.emu.find({ route: '/app/installations/{installation_id}/access_tokens', method: 'POST', status: 201 });
    expect(minted.length).toBe(5);
    expect(w.emu.find({ route: '/installation/token', method: 'DELETE' }).map((r) => r.status)).toEqual([204, 204, 204, 204, 204]);
    // The PRs were opened by the App, not by a person's token.
    expect(w.emu.pullRequests('acme/three')[0]!.user).toBe('fleet-app[bot]');
  });

  it('with one installation token stored as a secret, the fleet fails once the hour is up: the token cannot be renewed', async () => {
    w = await longWorld();
    const token = w.emu.mintInstallationToken({ scopes: APP_SCOPES, login: 'fleet-app[bot]', expiresInMs: 60 * 60_000 });
    w.runner.setSecret(CONTROL_REPO, 'FLEET_TOKEN', token);
    const { runId, s } = await dispatchFleet(w);
    expect(s.conclusion).toBe('failure');
    const { manifest } = reportArtifact(w, runId);
    const lane = (id: string) => manifest.lanes.find((l) => l.lane === id)!;
    // Wave 1 pushed at +40 minutes; at +80 wave 2 cannot even read where wave 1 left its branch, and at +120 the
    // report cannot confirm wave 1's work: every answer is 401 Bad credentials.
    expect(lane('one').error).toEqual({ class: 'unverified', message: 'the forge could not be asked to confirm this lane: acme/one: reading branch fleet/long/one failed (401): Bad credentials' });
    expect(lane('two')).toMatchObject({ status: 'skipped', error: { class: 'checkpoint-unmet' } });
    expect(lane('two').error!.message).toContain('(401): Bad credentials');
    expect(lane('three')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    expect(w.emu.pullRequests('acme/one')).toHaveLength(1);
  });
});
