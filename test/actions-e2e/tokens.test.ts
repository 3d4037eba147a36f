/**
 * Tokens over a long fleet. A GitHub App installation token lives one hour
 * and cannot pass between jobs (actions/create-github-app-token#128,
 * peter-murray/workflow-application-token-action#43), nor be extended
 * (https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-an-installation-access-token-for-a-github-app).
 * With App credentials Fleet itself mints a token in every job, renews it
 * while a leg runs past the hour, and revokes what it minted at the job's
 * end; a fleet whose waves span two hours of the runner's clock, and a fleet
 * whose single leg does, both finish. A token minted once and stored as a
 * secret runs out in the middle, and the runner shows it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CONTROL_REPO, dispatchFleet, explain, reportArtifact, startWorld, template, type World, ungated } from './world.js';

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
    // One token per job (plan, three waves, report), each minted by Fleet (POST …/access_tokens) and revoked by it at the job's end.
    const minted = w.emu.find({ route: '/app/installations/{installation_id}/access_tokens', method: 'POST', status: 201 });
    expect(minted.length).toBe(5);
    // Least privilege: the plan's and the report's tokens are read-only; the lanes' have the App's permissions.
    const asked = minted.map((r) => (r.body as { permissions?: Record<string, string> } | undefined)?.permissions);
    expect(asked.filter((p) => p === undefined)).toHaveLength(3);
    expect(asked.filter((p) => p && Object.values(p).every((level) => level === 'read'))).toHaveLength(2);
    expect(w.emu.find({ route: '/installation/token', method: 'DELETE' }).map((r) => r.status)).toEqual([204, 204, 204, 204, 204]);
    // The PRs were opened by the App, not by a person's token.
    expect(w.emu.pullRequests('acme/three')[0]!.user).toBe('fleet-app[bot]');
  });

  it('with App credentials a single leg running lanes across two hours renews its token and finishes', async () => {
    // One wave, one leg: a lane whose clone, commit and push are each 40 minutes apart on GitHub's clock (the
    // runner's clock moves as Fleet logs each phase), so the leg's first token runs out between clone and push.
    let world: World | undefined;
    const advanced = new Set<string>();
    world = await startWorld({
      fleetFile: { name: 'agents', forge: 'github', directive: 'Stamp.', run: 'echo stamped > STAMP', max_retries: 0, targets: [{ repo: 'acme/solo' }] },
      // A leg of agent lanes may run for hours: the wave job's own timeout is raised above the two hours.
      caller: ungated(template('fleet-dispatch.yml')).replace(
        'app-id: ${{ vars.FLEET_APP_ID }}',
        'app-id: ${{ vars.FLEET_APP_ID }}\n      lane-timeout-minutes: 360',
      ),
      runner: {
        onLog: (job, line) => {
          const phase = /^solo: (cloning|committing|pushing) \(/.exec(line)?.[1];
          if (!job.includes('wave') || !phase || advanced.has(phase)) return;
          advanced.add(phase);
          world?.runner.clock.advance(40 * 60_000);
        },
      },
    });
    w = world;
    await w.emu.createRepo({ owner: 'acme', name: 'solo' });
    const app = w.emu.addApp({ id: 4242, slug: 'fleet-app', installations: [{ account: 'acme', permissions: APP_SCOPES }] });
    w.runner.setVariable(CONTROL_REPO, 'FLEET_APP_ID', String(app.id));
    w.runner.setSecret(CONTROL_REPO, 'FLEET_APP_PRIVATE_KEY', app.privateKeyPem);
    w.runner.setSecret(CONTROL_REPO, 'FLEET_TOKEN', '');
    const started = w.runner.clock.now();
    const { runId, s } = await dispatchFleet(w);
    expect([...advanced].sort()).toEqual(['cloning', 'committing', 'pushing']);
    expect(w.runner.clock.now() - started).toBeGreaterThanOrEqual(120 * 60_000);
    expect(s.conclusion, explain(s)).toBe('success');
    expect(reportArtifact(w, runId).manifest.summary).toMatchObject({ total: 1, completed: 1 });
    // The wave's one leg minted more than one token: its first ran out under it and Fleet renewed it.
    const wave = s.jobs.find((j) => j.name.includes('wave 1'))!;
    expect(wave.conclusion).toBe('success');
    const minted = w.emu.find({ route: '/app/installations/{installation_id}/access_tokens', method: 'POST', status: 201 });
    // The plan's and the report's are read-only; the rest are the leg's: more than one, its first ran out under it.
    const legTokens = minted.filter((r) => (r.body as { permissions?: unknown } | undefined)?.permissions === undefined);
    expect(minted.length - legTokens.length).toBe(2);
    expect(legTokens.length).toBeGreaterThanOrEqual(2);
    expect(wave.log, explain(s)).toMatch(/GitHub App token(: \d+ min left| refused \(401 Bad credentials\))/);
    // Every push and every write went out with a token the App had minted, and the PR is the App's.
    expect(w.emu.pullRequests('acme/solo')[0]!.user).toBe('fleet-app[bot]');
    const pushes = w.emu.find({ kind: 'git', operationId: 'git-receive-pack', method: 'POST', status: 200 });
    expect(pushes.length).toBeGreaterThan(0);
    expect(pushes.every((r) => r.login === 'fleet-app[bot]')).toBe(true);
    // No token leaked into a log: the runner masked every one Fleet minted.
    const logs = s.jobs.map((j) => j.log).join('\n');
    expect(logs).not.toMatch(/ghs_[A-Za-z0-9]{36}/);
    expect(logs).not.toContain(app.privateKeyPem.split('\n')[2]!);
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
    // (Verification reads the branch and its files in one compare of base...branch, so that is the read refused.)
    expect(lane('one').error).toMatchObject({ class: 'unverified' });
    expect(lane('one').error!.message).toMatch(
      /^the forge could not be asked to confirm this lane: acme\/one: comparing [0-9a-f]{12}\.\.\.fleet\/long\/one failed \(401\): Bad credentials$/,
    );
    expect(lane('two')).toMatchObject({ status: 'skipped', error: { class: 'checkpoint-unmet' } });
    expect(lane('two').error!.message).toContain('(401): Bad credentials');
    expect(lane('three')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    expect(w.emu.pullRequests('acme/one')).toHaveLength(1);
  });
});
