/**
 * What a lane is given by whoever runs it (the local runner, a GitHub matrix job): the fleet, the ports, the
 * workspace folder, and the budgets it shares with the other lanes. Only the ports differ between runners; the
 * lane's phases are the same code.
 */
import type { FleetFile } from '../../core/fleet-file.js';
import type { LaneRecord } from '../../core/model.js';
import type { DiscoveryEntry } from '../../core/relay.js';
import type { Clock, Executor, Forge, Workspace } from '../../ports.js';
import type { Semaphore } from '../../util/pool.js';

export interface LaneContext {
  fleet_id: string;
  file: FleetFile;
  forge: Forge;
  workspace: Workspace;
  exec: Executor;
  clock: Clock;
  /** The fleet workspace folder; every path a lane records is relative to it. */
  root: string;
  dryRun: boolean;
  /** The environment handed to directives and checks (already stripped of Fleet's own secrets). */
  env: Record<string, string>;
  /** Called on every transition, for the events log and the live view. */
  onUpdate(record: LaneRecord, detail: string): void;
  /** Aborted when the run is interrupted: the lane stops at its next step (its running command is killed by the runner). */
  signal?: AbortSignal;
  /**
   * The global concurrency budget: held while a directive and its checks run.
   * Cloning, committing and pushing happen outside it, so they overlap with
   * other lanes' directives instead of queueing behind them.
   */
  slots?: Semaphore;
  /** Limits git's own heavy work (clone, push) to what the machine's cores can do at once. */
  gitSlots?: Semaphore;
  /**
   * Added to the environment of an agent directive only (not a lane's own `run:`, never the checks): the agent's
   * credential (ANTHROPIC_API_KEY …) and the PATH of the agent CLI a leg installed.
   */
  agentEnv?: Record<string, string>;
  /**
   * Text no change may hold: the agent credentials the directive was given, in every encoded form the caller
   * expands them to. Such a change is neither written to the lane's patch nor pushed.
   */
  neverInChange?: readonly string[];
  /**
   * What lanes of earlier waves left for later ones (the discovery relay): read when a lane starts, so a lane of wave
   * k sees every lane of waves before k. Locally the runner's records; on Actions the relay files of earlier waves.
   */
  relayEntries?: () => readonly DiscoveryEntry[];
  /**
   * What the whole fleet spent so far, shared by its lanes (and on Actions counted from earlier lanes' artifacts):
   * with a `budget.fleet.cost_usd` ceiling, no lane, attempt or lens starts once it is reached.
   */
  fleetSpend?: { spent: number };
}
