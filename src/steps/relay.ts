/**
 * The relay's entries as both drivers build them: what the lanes of earlier waves left (the one-process driver from
 * its records, a leg on GitHub Actions from the relay artifacts and the plan).
 */
import type { LaneRecord } from '../core/model.js';
import type { DiscoveryEntry } from '../core/relay.js';

/** What lanes left for the relay, as the relay reads it. */
export function discoveryEntries(lanes: readonly LaneRecord[]): DiscoveryEntry[] {
  return lanes
    .filter((l) => l.discoveries?.length && l.wave !== null)
    .map((l) => ({ lane: l.lane, repo: l.repo, wave: l.wave!, ended_at: l.ended_at, discoveries: l.discoveries! }));
}
