/**
 * FLEET_FILE_DIR through the reusable workflow: a directive's helper script lives beside the fleet file in the calling
 * repository, and the lane job (a job of its own, on its own runner) finds it there, as `fleet run` gives it locally.
 * The lane jobs check out the caller's repository into `source/` without credentials (.github/workflows/fleet.yml).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../support/actions-runner/index.js';
import { dispatchFleet, explain, reportArtifact, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World;
let runId: number;
let s: RunSummary;

beforeAll(async () => {
  w = await startWorld({
    fleetFile: {
      name: 'helpers',
      forge: 'github',
      directive: 'Stamp with the shared script.',
      run: 'sh "$FLEET_FILE_DIR/scripts/stamp.sh"',
      max_retries: 0,
      targets: [{ repo: 'acme/a' }, { repo: 'acme/b', depends_on: ['a'] }],
    },
  });
  await w.commitControl({ 'scripts/stamp.sh': 'echo "stamped from $(basename "$FLEET_FILE_DIR")" > STAMP.md\n' });
  for (const name of ['a', 'b']) await w.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
  ({ runId, s } = await dispatchFleet(w));
});
afterAll(async () => {
  await w?.close();
});

describe('FLEET_FILE_DIR in the reusable workflow', () => {
  it("runs a helper script from beside the fleet file in every wave's lane job", () => {
    expect(s.conclusion, explain(s)).toBe('success');
    const lanes = reportArtifact(w, runId).manifest.lanes;
    expect(lanes.map((l) => [l.lane, l.status, l.changed_files])).toEqual([
      ['a', 'completed', ['STAMP.md']],
      ['b', 'completed', ['STAMP.md']],
    ]);
    for (const name of ['a', 'b']) {
      const stamp = execFileSync('git', ['--git-dir', join(w.emu.reposDir, `acme/${name}.git`), 'show', `fleet/helpers/${name}:STAMP.md`], {
        encoding: 'utf8',
      });
      expect(stamp).toBe('stamped from source\n');
    }
  });
});
