/**
 * How a fleet's run ends, whichever driver ran it (one process, or the report job of a GitHub Actions workflow): the
 * issues whose lanes need a person handed to one, and the exit code.
 */
import { ciRed } from '../core/manifest.js';
import type { Manifest } from '../core/model.js';
import type { ResolvedFleet } from '../core/validate.js';
import type { QueueSettle } from '../ports.js';

/**
 * The issue queue's part of a run's end: an issue whose lane failed for a reason a retry will not change (or changed
 * nothing) is handed to a person, and the board says so. A forge that cannot is a line on the board, not a failure.
 */
export async function handOffIssues(manifest: Manifest, fleet: ResolvedFleet, settle?: QueueSettle): Promise<Manifest> {
  if (!settle || !manifest.queue) return manifest;
  const done = await settle(fleet, manifest).catch((err: Error) => [`could not hand issues to a person: ${err.message}`]);
  return done.length ? { ...manifest, queue: { ...manifest.queue, actions: [...manifest.queue.actions, ...done] } } : manifest;
}

/** Every target of the fleet was excluded (a wrong path, an archived repository, `exclude:`): no lane ran. */
export function nothingRan(manifest: Manifest): boolean {
  return manifest.lanes.length > 0 && manifest.lanes.every((l) => l.status === 'excluded');
}

/**
 * 0 when every lane completed (or had nothing to do), 1 when any lane failed or was skipped, 2 when the fleet had
 * targets and every one was excluded: a run in which no lane ran did nothing, and must not pass as done. (A fleet
 * with no target at all, an issue queue with no ready issue, did what it was asked.)
 */
export function exitCodeFor(manifest: Manifest): 0 | 1 | 2 {
  if (nothingRan(manifest)) return 2;
  // A skipped lane did not get the change either (its dependency failed, was excluded or never reached its
  // checkpoint), so it fails the run just as a failed lane does; an excluded target was refused on purpose.
  // A lane held out of the integration did not get into the one PR either.
  // A completed lane whose PR's CI reads red at the report is not a good change either (issue 27): red CI never exits 0.
  return manifest.lanes.some((l) => l.status === 'failed' || l.status === 'skipped' || l.integration?.state === 'held' || ciRed(l)) ? 1 : 0;
}
