/**
 * Exactly what a lane's artifact holds, uploaded and downloaded by the real
 * @actions/artifact client through the emulated results service, for a real
 * GitHub lane (clone, two attempts, push, PR) of a private target. On GitHub
 * everyone who can read the fleet's repository can download its artifacts:
 * the target's source and `.git` (the lane's working copy sits in the lane's
 * folder) must never travel, nor anything a directive drops into its lane
 * folder under a name Fleet would use.
 */
import '../../src/actions/env-defaults.js';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitHubForge } from '../../src/github/forge.js';
import { createOctokit } from '../../src/github/octokit.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock } from '../../src/ports.js';
import { loadFleetFile } from '../../src/steps/load.js';
import { LANE_ARTIFACT_PREFIX } from '../../src/steps/drivers/matrix-artifacts.js';
import { matrixPlan, matrixShard } from '../../src/steps/drivers/matrix.js';
import { writeFleetFile } from '../integration/helpers.js';
import { asJob, startWorld, type World } from './helpers.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

const RUN = 77;
const REPO = 'acme/control';
const MARKER = 'PRIVATE-SOURCE-4c1d9e';
let world: World;

/** Every file under `dir`, relative, sorted. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

/** The directive: fails its first attempt, then changes one file and litters its lane folder with the target's source. */
const DIRECTIVE = [
  '[ "$FLEET_ATTEMPT" = 1 ] && { echo "first attempt fails"; exit 3; }',
  'echo changed > CHANGED.md',
  // Names Fleet writes itself (for other lanes, other attempts, agents) …
  'for f in attempt-9.log prompt-1.md prompt-2.md agent-routing.json; do cp PRIVATE.md "$FLEET_LANE_DIR/$f"; done',
  // … a folder with such a name, a copy of the whole working copy, and a link to the source.
  'mkdir -p "$FLEET_LANE_DIR/attempt-7.log" && cp PRIVATE.md "$FLEET_LANE_DIR/attempt-7.log/x"',
  'cp -r . "$FLEET_LANE_DIR/copy"',
  'ln -s repo/PRIVATE.md "$FLEET_LANE_DIR/result.json.orig"',
].join('\n');

beforeAll(async () => {
  world = await startWorld();
  await world.emu.createRepo({ owner: 'acme', name: 'secret', visibility: 'private', files: { 'README.md': '# secret\n', 'PRIVATE.md': `${MARKER}\n` } });
  world.services.startAttempt({ repo: REPO, runId: RUN, attempt: 1, kind: 'first' });
});
afterAll(() => world?.close());

describe("a lane's artifact", () => {
  it('holds exactly result.json, patch.diff and the logs of the attempts that ran: no working copy, nothing the directive dropped there', async () => {
    const { emu, services, work } = world;
    const file = writeFleetFile(work, {
      name: 'artifacts',
      forge: 'github',
      directive: 'Change one file.',
      run: DIRECTIVE,
      max_retries: 1,
      targets: [{ repo: 'acme/secret' }],
    });
    const loaded = await loadFleetFile(file);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const octokit = createOctokit({ token: emu.token!, apiUrl: emu.url, pacing: { writeMs: 0, searchMs: 0, notificationsMs: 0 } });
    const forge = new GitHubForge({ octokit, token: emu.token!, name: 'artifacts', serverUrl: `${emu.url}/git`, pollMs: 10, ciStartGraceMs: 0 });
    const { ActionsArtifactStore } = await import('../../src/actions/artifact-store.js');
    const store = new ActionsArtifactStore();

    const planJob = services.registerJob({ repo: REPO, runId: RUN, runAttempt: 1, jobName: 'plan' });
    const planned = await asJob(planJob, () =>
      matrixPlan({ fleet: loaded.fleet, file, forge, clock: systemClock, store, root: join(work, 'plan-runner'), fleet_id: `fleet-${RUN}`, waveJobs: 1 }),
    );
    if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
    const shard = planned.outputs.waves[0]![0]!;
    const laneJob = services.registerJob({ repo: REPO, runId: RUN, runAttempt: 1, jobName: `wave 1 (${shard})` });
    const [rec] = await asJob(laneJob, () =>
      matrixShard({
        shard,
        store,
        root: join(work, 'lane-runner'),
        forge,
        workspace: localWorkspace,
        exec: localExecutor,
        clock: systemClock,
        env: { PATH: process.env.PATH ?? '' },
      }),
    );
    expect(rec, JSON.stringify(rec?.error)).toMatchObject({ status: 'completed', phase: 'pr-open', retry_count: 1, changed_files: ['CHANGED.md'] });
    // The working copy is there, in the lane's folder, beside what the directive left.
    expect(readdirSync(join(work, 'lane-runner', 'lanes', 'secret')).sort()).toEqual(
      expect.arrayContaining(['repo', 'copy', 'attempt-9.log', 'attempt-7.log', 'prompt-1.md', 'agent-routing.json', 'result.json.orig']),
    );

    // The report job downloads it as the report does (digest checked), on the job's own path.
    const reportJob = services.registerJob({ repo: REPO, runId: RUN, runAttempt: 1, jobName: 'report' });
    const down = join(work, 'downloaded');
    await asJob(reportJob, async () => {
      const [artifact, ...others] = await store.list(LANE_ARTIFACT_PREFIX);
      expect([artifact?.name, ...others.map((a) => a.name)]).toEqual(['fleet-lane-secret.a1']);
      expect(artifact!.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
      await store.download(artifact!, down);
    });
    expect(filesUnder(down)).toEqual(['lanes/secret/attempt-1.log', 'lanes/secret/attempt-2.log', 'lanes/secret/patch.diff', 'lanes/secret/result.json']);
    for (const f of filesUnder(down)) expect(readFileSync(join(down, f), 'utf8'), f).not.toContain(MARKER);
    expect(readFileSync(join(down, 'lanes/secret/patch.diff'), 'utf8')).toContain('+changed');

    // The zip as stored holds those four entries and nothing else (no folders, no links).
    const [stored] = services.artifacts({ runId: RUN }).filter((a) => a.name === 'fleet-lane-secret.a1');
    writeFileSync(join(work, 'lane.zip'), services.artifactContent(stored!.id)!);
    const entries = execFileSync('unzip', ['-Z1', join(work, 'lane.zip')], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .sort();
    expect(entries).toEqual(['lanes/secret/attempt-1.log', 'lanes/secret/attempt-2.log', 'lanes/secret/patch.diff', 'lanes/secret/result.json']);
    // A whole lane (clone, two attempts, push, PR) and two artifact round trips: more than the default 30 s on a loaded machine.
  }, 120_000);
});
