/**
 * What becomes of a wave's lanes when it ends, in both drivers: each target tried several ways gets its pick (once
 * every strategy of it has ended), then, with integrate:, the wave's lanes go into each repository's integration.
 * The records that change are handed to the driver to merge into what it keeps (its manifest, its artifacts); a
 * lane held out of the integration then blocks its dependents (admission.ts), one that went in releases them.
 *
 * The one-process driver settles a whole wave at once. On GitHub Actions a leg settles the strategies of its shard,
 * and the integrate job after the wave job integrates the wave.
 */
import type { LaneRecord, LaneSpec } from '../core/model.js';
import type { Integration } from './integrate.js';
import type { LaneContext } from './lane/index.js';
import { settleStrategies } from './strategies.js';

/** The records a stage of the settlement changed (the picks, or the integration's outcomes); the driver merges them as soon as the stage ends. */
export type MergeSettled = (changed: readonly LaneRecord[], stage: 'picked' | 'integrated') => Promise<void>;

export interface WaveEnd {
  ctx: LaneContext;
  /** The wave's index in the plan, and the lanes to settle (the wave's, or a leg's shard of it). */
  wave: number;
  lanes: readonly string[];
  specs: ReadonlyMap<string, LaneSpec>;
  /** The lanes' records as the driver trusts them (verified where it verified them); the picks are set in it. */
  records: Map<string, LaneRecord>;
  /** The fleet's integration (integrate:), when this driver integrates the wave here. */
  integration?: Integration | null;
}

/** The strategies' picks, then the integration. */
export async function settleWave(end: WaveEnd, merge: MergeSettled): Promise<void> {
  await merge(await settleStrategies(end.ctx, end.lanes, end.specs, end.records), 'picked');
  if (end.integration) await merge(await integrateWave(end.integration, end.wave, end.lanes, end.records), 'integrated');
}

/** The wave's lanes merged into the integration; returns their records with `integration` set (went in, or held and why). */
export function integrateWave(
  integration: Integration,
  wave: number,
  lanes: readonly string[],
  records: ReadonlyMap<string, LaneRecord>,
): Promise<LaneRecord[]> {
  return integration.afterWave(wave, lanes, records);
}
