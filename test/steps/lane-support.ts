/**
 * A lane of a one-target fleet, planned and ready for runLane: on a local bare repository (LocalForge) or on the
 * GitHub emulator (GitHubForge, pacing 0). Shared by the lane tests of test/steps.
 */
import { join } from 'node:path';
import type { LaneRecord } from '../../src/core/model.js';
import { validateFleetFile } from '../../src/core/validate.js';
import { LocalForge } from '../../src/local/forge.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock, type Forge } from '../../src/ports.js';
import type { LaneContext } from '../../src/steps/lane/index.js';
import { planStep } from '../../src/steps/plan.js';

/** One workspace for the lanes of these tests, as a run has; its executor is the one a test wraps (lane-paths.test.ts). */
export const localWorkspace = new GitWorkspace();
export const localExecutor = localWorkspace.executor;

export const FILE = 'fleet.yml';

export interface PlannedLane {
  ctx: LaneContext;
  spec: import('../../src/core/model.js').LaneSpec;
  start: LaneRecord;
  /** `<phase>: <detail>` of every update, in order. */
  events: string[];
  /** Every record an update handed out, in order. */
  updates: LaneRecord[];
  root: string;
}

/**
 * Plans the fleet `spec` (name `lanes` unless given; isolation off, no retries unless given) with one target
 * `repo` on `forge`, workspace `<dir>/ws`.
 */
export async function planLane(dir: string, forge: Forge, spec: Record<string, unknown>, target: Record<string, unknown>): Promise<PlannedLane> {
  const v = validateFleetFile({ name: 'lanes', directive: 'Stamp it.', isolation: 'off', max_retries: 0, ...spec, targets: [target] }, FILE);
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const planned = await planStep(v.fleet, forge, systemClock, { file: FILE, fleet_id: 'fleet-lanes-1' });
  if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
  const events: string[] = [];
  const updates: LaneRecord[] = [];
  const root = join(dir, 'ws');
  const ctx: LaneContext = {
    fleet_id: 'fleet-lanes-1',
    file: planned.fleet.file,
    forge,
    workspace: localWorkspace,
    exec: localExecutor,
    clock: systemClock,
    root,
    dryRun: false,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    onUpdate: (rec: LaneRecord, detail: string) => {
      events.push(`${rec.phase}: ${detail}`);
      updates.push(structuredClone(rec));
    },
  };
  return { ctx, spec: planned.fleet.lanes[0]!, start: planned.manifest.lanes[0]!, events, updates, root };
}

export function localForge(dir: string): LocalForge {
  return new LocalForge({ baseDir: dir });
}
