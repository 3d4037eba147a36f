/**
 * A lane's folder in the fleet workspace and the files in it that others read: its result (the runner merges them),
 * its discoveries and the relay (lanes of other waves), its issue (the directive). One place names them, so the
 * lane, the runner and the report agree on where they are.
 */
import { join } from 'node:path';
import { SCHEMA_VERSION, type LaneRecord, type LaneResult } from '../../core/model.js';
import { writeJsonAtomic } from '../../util/fs.js';

export function laneDir(root: string, lane: string): string {
  return join(root, 'lanes', lane);
}

export function resultPath(root: string, lane: string): string {
  return join(laneDir(root, lane), 'result.json');
}

/** Where a lane leaves its discoveries for later lanes (FLEET_DISCOVERIES), outside its working copy so nothing commits them. */
export function discoveriesPath(root: string, lane: string): string {
  return join(laneDir(root, lane), 'discoveries.txt');
}

/** Where an issue-queue lane finds the issue it works on (FLEET_ISSUE_FILE): title, body and spec file, as markdown. */
export function issuePath(root: string, lane: string): string {
  return join(laneDir(root, lane), 'issue.md');
}

/** Where a lane finds the relay of earlier waves (FLEET_RELAY). */
export function relayPath(root: string, lane: string): string {
  return join(laneDir(root, lane), 'relay.md');
}

/** Each lane writes only its own result file; the runner merges them. */
export async function writeLaneResult(root: string, fleet_id: string, rec: LaneRecord): Promise<void> {
  const result: LaneResult = { schema_version: SCHEMA_VERSION, fleet_id, lane: rec };
  await writeJsonAtomic(resultPath(root, rec.lane), result);
}
