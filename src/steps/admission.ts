/**
 * Whether a lane may start: the one rule both drivers (the whole fleet in one process, and a leg of a GitHub Actions
 * wave job) apply before they run a lane. A lane starts from the integration of the waves before it when its
 * repository has one; it is skipped, with the reason as its error, when the integration it would build on left no
 * record, when a dependency failed, is held or its checkpoint does not hold on the forge, or when the fleet's cost
 * ceiling is reached. The driver writes the skipped record and tells it its own way (an event, a log line).
 */
import { ceilingReached, dependencyRecordVerdict, type LaneError, skippedLane, strategyPicks } from '../core/admission.js';
import type { IntegrationRecord, LaneRecord, LaneSpec } from '../core/model.js';
import type { Checkpoint, Clock, Forge } from '../ports.js';
import { integratedBase } from './integrate.js';

/** What the rule is given about one lane. */
export interface Admission {
  /** The lane as the plan has it. */
  planned: LaneSpec;
  /** Its record as planned: a lane that does not start ends as this record, skipped. */
  start: LaneRecord;
  /** The lanes' records as this driver knows them (its dependencies' verified where the driver verified them). */
  records: ReadonlyMap<string, LaneRecord>;
  specs: ReadonlyMap<string, LaneSpec>;
  forge: Forge;
  checkpoint: Checkpoint;
  dryRun: boolean;
  clock: Clock;
  /** With integrate:, each repository's integration of the waves before; `missing`, why there is none to start from. */
  integration?: { records: readonly IntegrationRecord[]; missing?: string };
  /** The fleet's cost ceiling and what it has spent so far (read when the lane would start). */
  budget?: { ceiling: number; spend: { spent: number } };
}

/** The lane as it starts: from its repository's integration branch once a wave before it was verified there. */
export function startingSpec(a: Admission): LaneSpec {
  const base = a.integration && integratedBase(a.integration.records, a.planned.repo);
  return base ? { ...a.planned, base } : a.planned;
}

/** The lane skipped because of the integration it would build on or of its dependencies, or undefined. */
export async function dependencyGate(a: Admission): Promise<LaneRecord | undefined> {
  const blocked = a.integration?.missing
    ? ({ class: 'checkpoint-unmet', message: a.integration.missing } as const)
    : await dependencyBlock(a.planned, a.records, a.specs, a.forge, a.checkpoint, a.dryRun);
  return blocked && skippedLane(a.start, blocked, a.clock.now().toISOString());
}

/** The lane skipped because the fleet's cost ceiling is reached, or undefined. */
export function budgetGate(a: Admission): LaneRecord | undefined {
  const b = a.budget;
  return b && b.spend.spent >= b.ceiling ? ceilingReached(a.start, b.ceiling, b.spend.spent, a.clock.now().toISOString()) : undefined;
}

/**
 * Both gates in turn, for a driver that runs its lanes one after another. The one-process driver asks the budget
 * only once a slot is free (lanes that ran meanwhile spent), so it calls the gates itself.
 */
export async function admit(a: Admission): Promise<{ start: LaneSpec } | { skipped: LaneRecord }> {
  const skipped = (await dependencyGate(a)) ?? budgetGate(a);
  return skipped ? { skipped } : { start: startingSpec(a) };
}

/**
 * Why a lane may not start yet, or undefined. A dependency must have completed,
 * and its checkpoint must hold on the forge: the runner never takes a lane's word for it.
 */
export async function dependencyBlock(
  spec: LaneSpec,
  records: ReadonlyMap<string, LaneRecord>,
  specs: ReadonlyMap<string, LaneSpec>,
  forge: Forge,
  checkpoint: Checkpoint,
  dryRun: boolean,
): Promise<LaneError | undefined> {
  const deps = strategyPicks(spec.depends_on, records, specs);
  if (!Array.isArray(deps)) return deps;
  for (const depId of deps) {
    const dep = records.get(depId);
    const verdict = dependencyRecordVerdict(depId, dep, dryRun);
    if (verdict === 'met') continue;
    if (verdict !== 'checkpoint') return verdict;
    const blocked = await checkpointBlock(depId, dep!, specs.get(depId)!, forge, checkpoint);
    if (blocked) return blocked;
  }
  return undefined;
}

/** Why a completed dependency's checkpoint does not hold on the forge, or undefined. */
async function checkpointBlock(depId: string, dep: LaneRecord, depSpec: LaneSpec, forge: Forge, checkpoint: Checkpoint): Promise<LaneError | undefined> {
  // Each checkpoint is read on the forge, not taken from the dependency's record (an artifact, on Actions).
  const asked = async <T>(what: string, call: () => Promise<T>): Promise<T | LaneError> => {
    try {
      return await call();
    } catch (err) {
      return { class: 'checkpoint-unmet', message: `dependency "${depId}": the forge could not be asked ${what} (${(err as Error).message})` };
    }
  };
  if (checkpoint === 'merged') {
    const merged = await asked('whether it is merged', () => forge.isMerged(depSpec, dep));
    if (typeof merged !== 'boolean') return merged;
    if (!merged) return { class: 'checkpoint-unmet', message: `dependency "${depId}" is not merged (checkpoint: merged)` };
    return undefined;
  }
  if (checkpoint === 'green' && dep.commit) {
    const ci = forge.capabilities.ci === 'lane-checks' ? dep.ci_conclusion : await asked('for its CI', () => forge.ciConclusion(depSpec, dep.commit!));
    if (ci !== null && typeof ci === 'object') return ci;
    if (ci !== 'success' && ci !== 'none') {
      return { class: 'checkpoint-unmet', message: `dependency "${depId}" CI is ${ci ?? 'unknown'} (checkpoint: green)` };
    }
  }
  if (dep.branch && dep.commit) {
    const branch = dep.branch;
    // A dependency in fork mode pushed to its fork (a lane job of its own may have made it).
    if (dep.head_repo) forge.useHeadRepo?.(depSpec, dep.head_repo);
    const head = await asked(`where ${branch} is`, () => forge.branchHead(depSpec, branch));
    if (head !== null && typeof head === 'object') return head;
    if (head !== dep.commit) {
      return {
        class: 'checkpoint-unmet',
        message: `dependency "${depId}": ${dep.branch} is at ${head?.slice(0, 12) ?? 'nothing'} on the forge, not ${dep.commit.slice(0, 12)}`,
      };
    }
  }
  return undefined;
}
