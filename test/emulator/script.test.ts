/**
 * `npm run emulator`: what it prints is what a user pastes. The exported environment alone (token, URLs and the
 * tuning that suits an emulator) must carry a real `fleet run` over its sample repositories.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeDir, tempDir, tsxLoader } from '../integration/helpers.js';
import { fleetProcess } from '../cli/bin.js';

let child: ChildProcess | undefined;
let dir: string | undefined;
afterEach(() => {
  child?.kill('SIGTERM');
  removeDir(dir);
});

/** Starts the script and returns what it printed up to "Ctrl-C stops". */
async function startScript(): Promise<string> {
  child = spawn(process.execPath, ['--import', tsxLoader(), 'scripts/emulator.ts', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child!.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ctrl-C stops')) resolve();
    });
    child!.on('exit', (code) => reject(new Error(`the emulator script exited with ${code}: ${out}`)));
  });
  return out;
}

describe('npm run emulator', () => {
  it('prints an environment under which a four-lane fleet runs against it, pacing and polling set for an emulator', async () => {
    const printed = await startScript();
    const env = Object.fromEntries([...printed.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
    expect(env).toMatchObject({
      FLEET_GITHUB_PACING_MS: '0',
      FLEET_GITHUB_POLL_MS: expect.stringMatching(/^\d+$/),
      FLEET_GITHUB_CI_GRACE_MS: expect.stringMatching(/^\d+$/),
    });
    expect(Number(env.FLEET_GITHUB_POLL_MS)).toBeLessThan(1000);
    dir = tempDir('fleet-emu-script-');
    const file = join(dir, 'fleet.yml');
    writeFileSync(
      file,
      'name: trial\nforge: github\ndirective: add a note\nrun: echo note > NOTE.md\ntargets:\n  - repo: acme/core-lib\n  - repo: acme/api\n    depends_on: [core-lib]\n  - repo: acme/web\n  - repo: acme/legacy\n',
    );
    // As a user would: the printed exports, and of this process's environment only PATH and HOME.
    const r = fleetProcess(['run', file, '--json', '--quiet'], dir, dir, undefined, env);
    // The script's CI fails the first push of every branch (it says so) half a second after it, and this fleet does
    // not wait for CI: the lanes complete, and the report reads each PR's CI as it stands, red where it has concluded
    // (pending where the report came first), and a red one makes the run exit 1 (issue 27;
    // test/github-flows/ci-at-report.test.ts holds the same by events).
    const m = JSON.parse(r.stdout) as { lanes: { lane: string; status: string; ci_conclusion: string | null }[] };
    expect(Object.fromEntries(m.lanes.map((l) => [l.lane, l.status]))).toEqual({
      'core-lib': 'completed',
      api: 'completed',
      web: 'completed',
      legacy: 'excluded',
    });
    const ci = m.lanes.filter((l) => l.status === 'completed').map((l) => l.ci_conclusion);
    for (const c of ci) expect(['failure', 'pending']).toContain(c);
    expect(r.code, r.stderr).toBe(ci.includes('failure') ? 1 : 0);
  });
});
