/**
 * The session builder both entrypoints use (src/session/): what a fleet file gets from it, the problem that
 * names the part at fault, and a close that can be called any number of times.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalForge } from '../../src/local/forge.js';
import { Credentials } from '../../src/session/credentials.js';
import { openSession } from '../../src/session/session.js';
import { loadFleetFile } from '../../src/steps/load.js';
import { writeFleetFile } from '../integration/helpers.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleet-session-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function fleetFile(spec: Record<string, unknown>) {
  const loaded = await loadFleetFile(writeFleetFile(dir, { name: 'session', directive: 'stamp', run: 'true', ...spec }));
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  return loaded.fleet.file;
}

describe('a session', () => {
  it("gives a local fleet its forge, workspace and executor, and a directive environment without Fleet's credentials", async () => {
    const file = await fleetFile({ targets: [{ repo: './lib.git' }] });
    const session = openSession({ env: { KEEP: 'visible', FLEET_GITHUB_TOKEN: 'ghp_0123456789abcdef' }, writes: true });
    const c = await session.connect(file, { baseDir: dir, runsCode: true, commits: false });
    if ('problem' in c) throw new Error(c.problem);
    expect(c.forge).toBeInstanceOf(LocalForge);
    expect(c.workspace).toBeDefined();
    expect(c.exec).toBeDefined();
    expect(c.directiveEnv).toEqual({ KEEP: 'visible' });
    await session.close();
  });

  it('names the part at fault: a fleet on GitHub with no token is a problem of the forge, naming the variables', async () => {
    const file = await fleetFile({ forge: 'github', targets: [{ repo: 'acme/lib' }] });
    const session = openSession({ env: {}, writes: false });
    const c = await session.connect(file, { baseDir: dir, runsCode: false, commits: false });
    expect(c).toEqual({ part: 'forge', problem: expect.stringContaining('FLEET_GITHUB_TOKEN, GITHUB_TOKEN, GH_TOKEN') });
    await session.close();
  });

  it('closes once, however often close is called', async () => {
    const session = openSession({ env: {}, writes: false });
    const first = session.close();
    expect(session.close()).toBe(first);
    expect(await first).toEqual({ revoked: 0, failed: 0 });
  });
});

describe('the token policy', () => {
  it('a token given, even an empty one, is the one; given none, the forge reads the token variables', async () => {
    expect(await new Credentials({ env: { GITHUB_TOKEN: 'x' }, token: '', writes: false }).forForge()).toEqual({ token: '' });
    expect(await new Credentials({ env: { GITHUB_TOKEN: 'x' }, writes: false }).forForge()).toEqual({});
    expect((await new Credentials({ env: {}, token: 'ghp_given', writes: true }).credential()).current()).toBe('ghp_given');
  });
});
