/**
 * The discovery relay through the reusable workflow: each wave is its own job, so what a lane found reaches later
 * waves in a relay artifact (`fleet-relay-<lane>.a<attempt>`) its leg uploads beside the lane's artifact, and a leg of
 * a later wave job downloads the relay artifacts of earlier waves before its lanes start.
 */
import { tempDir } from '../integration/helpers.js';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FAKE_AGENTS } from '../support/repos.js';
import type { RunSummary } from '../support/actions-runner/index.js';
import { artifactsOf, dispatchFleet, explain, reportArtifact, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

let w: World;
let runId: number;
let s: RunSummary;
let planDir: string;

beforeAll(async () => {
  // Read by the fake agents, which run as nobody where the suite runs as root: open to every user.
  planDir = tempDir('fleet-relay-plan-');
  const plan = join(planDir, 'plan.json');
  writeFileSync(
    plan,
    JSON.stringify({
      write: { 'NOTES.md': 'b\n' },
      discoveries: ['The config lives in conf/app.json.', 'Tests need TZ=UTC.'],
      record: join(planDir, 'prompt'),
    }),
  );
  w = await startWorld({
    fleetFile: {
      name: 'relay',
      forge: 'github',
      directive: 'Leave a note.',
      agent: { preset: 'command', command: `node ${join(FAKE_AGENTS, 'review-agent.mjs')} --plan ${plan} --prompt-file {prompt_file}` },
      max_retries: 0,
      targets: [
        { repo: 'acme/a', run: 'echo "Tests need TZ=UTC." > "$FLEET_DISCOVERIES"; echo a > A.md' },
        { repo: 'acme/b', depends_on: ['a'] },
        { repo: 'acme/c', depends_on: ['b'], run: 'cp "$FLEET_RELAY" RELAY.md' },
      ],
    },
  });
  for (const name of ['a', 'b', 'c']) await w.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
  const r = await dispatchFleet(w, { directive: 'Leave a note.' });
  runId = r.runId;
  s = r.s;
});
afterAll(async () => {
  await w?.close();
  rmSync(planDir, { recursive: true, force: true });
});

const lane = (id: string) => reportArtifact(w, runId).manifest.lanes.find((l) => l.lane === id)!;

describe('the relay through the reusable workflow', () => {
  it('crosses three wave jobs: a file in wave 1, the prompt and the answer in wave 2, FLEET_RELAY in wave 3', () => {
    expect(s.conclusion, explain(s)).toBe('success');
    expect(readFileSync(join(planDir, 'prompt-b.md'), 'utf8')).toContain('- Tests need TZ=UTC. (from a)');
    expect(lane('b').relay).toEqual({ items: 1, from: ['a'] });
    const relay = execFileSync('git', ['--git-dir', join(w.emu.reposDir, 'acme/c.git'), 'show', 'fleet/relay/c:RELAY.md'], { encoding: 'utf8' });
    expect(relay).toBe('- Tests need TZ=UTC. (from a, b)\n- The config lives in conf/app.json. (from b)\n');
    expect(lane('c').relay).toEqual({ items: 2, from: ['a', 'b'] });
  });

  it('travels in relay artifacts of the lanes that found something, and the report says what each wave learned', () => {
    const names = [...artifactsOf(w, runId).keys()].filter((n) => n.startsWith('fleet-relay-')).sort();
    expect(names).toEqual(['fleet-relay-a.a1', 'fleet-relay-b.a1']);
    const summary = s.jobs.find((j) => j.name === 'fleet / report')!.summary;
    expect(summary).toContain('### Relay\n\nWave 1 learned 1 thing; received by 2 lanes: `b`, `c`.');
    expect(summary).toContain('Wave 2 learned 2 things; received by 1 lane: `c`.');
  });
});
