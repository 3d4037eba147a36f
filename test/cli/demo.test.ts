/** `npm run demo`, the first command of the README's quick start: a real fleet over sample repositories. */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeDir, tempDir } from '../integration/helpers.js';

let tmp: string;
beforeEach(() => {
  tmp = tempDir('fleet-demo-tmp-');
});
afterEach(() => removeDir(tmp));

/** What Fleet left in the temporary folder (tsx keeps its cache there too). */
function fleetFolders(): string[] {
  return readdirSync(tmp).filter((f) => f.startsWith('fleet'));
}

function demo() {
  // TMPDIR: the demo's folder goes where this test can count what it leaves.
  return spawnSync('npm', ['run', '--silent', 'demo'], { encoding: 'utf8', env: { ...process.env, TMPDIR: tmp }, timeout: 120_000 });
}

describe('npm run demo', () => {
  it('shows every outcome, and leaves one folder behind however often it runs', () => {
    const first = demo();
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/legacy.*failed/);
    expect(first.stdout).toMatch(/notes.*excluded/);
    expect(fleetFolders()).toHaveLength(1);
    const second = demo();
    expect(second.status, second.stderr).toBe(0);
    expect(fleetFolders()).toEqual([`fleet-demo-${process.getuid!()}`]);
  });
});
