/**
 * The lane as the other steps see it: run one (runLane), publish a settled strategy, and the lane's folder and
 * result file. The phases themselves are the other modules of this folder, run-lane.ts their order.
 */
export type { LaneContext } from './context.js';
export { gist } from './failure.js';
export { laneDir, resultPath, writeLaneResult } from './layout.js';
export { prBody, publishStrategy } from './publish.js';
export { runLane } from './run-lane.js';
