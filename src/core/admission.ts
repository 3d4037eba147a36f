/**
 * Whether a lane may start, as far as records alone decide it: what its dependencies' records say (a target tried
 * several ways standing as its pick), whether the fleet's cost ceiling is reached, and the skipped record a lane that
 * may not start ends with. The checkpoints read on the forge are the steps' part (steps/admission.ts), so both drivers
 * (one process, or the jobs of an Actions workflow) decide alike.
 */
import { type LaneRecord, type LaneSpec, TERMINAL } from './model.js';
import { budgetStop, NO_USAGE } from './spend.js';

export type LaneError = NonNullable<LaneRecord['error']>;

/** A lane that does not start, and why: skipped, with the reason as its error. */
export function skippedLane(start: LaneRecord, error: LaneError, now: string): LaneRecord {
  return { ...start, status: 'skipped', phase: 'skipped', updated_at: now, ended_at: now, error };
}

/** A lane that did not start because the fleet's cost ceiling was reached: skipped, saying so. */
export function ceilingReached(start: LaneRecord, ceiling: number, spent: number, now: string): LaneRecord {
  // The words a lane uses when it finds the ceiling reached itself (a lane that was already cloning).
  const message = `not started: ${budgetStop(NO_USAGE, undefined, { spent, ceiling })}`;
  return skippedLane(start, { class: 'budget-exceeded', message }, now);
}

/** A lane the run's interrupt kept from starting. */
export function notStarted(rec: LaneRecord, now: string): LaneRecord {
  return skippedLane(rec, { class: 'cancelled', message: 'the run was interrupted before this lane started' }, now);
}

/**
 * A lane's dependencies with each target tried several ways replaced by its pick: the group's checkpoint is the
 * pick's. A group without a pick (none green, or a person picks) blocks the lane, saying why.
 */
export function strategyPicks(
  depends_on: readonly string[],
  records: ReadonlyMap<string, LaneRecord>,
  specs: ReadonlyMap<string, LaneSpec>,
): string[] | LaneError {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const id of depends_on) {
    const group = specs.get(id)?.strategy?.group;
    if (!group) {
      out.push(id);
      continue;
    }
    if (seen.has(group)) continue;
    seen.add(group);
    const members = depends_on.filter((d) => specs.get(d)?.strategy?.group === group);
    const recs = members.map((m) => records.get(m));
    if (recs.some((r) => !r || !TERMINAL.has(r.status))) {
      return { class: 'checkpoint-unmet', message: `dependency "${group}": not every strategy had finished when this lane's wave started` };
    }
    // An unchanged strategy carries the pick it had when it last ran.
    const picked = recs.find((r) => r!.strategy?.picked === true);
    if (!picked) {
      const reason = recs.find((r) => r!.strategy?.reason)?.strategy?.reason ?? 'no strategy was picked';
      return {
        class: 'dependency-failed',
        message: `dependency "${group}" has no picked strategy (${reason}); this lane was not run against a missing checkpoint`,
      };
    }
    out.push(picked.lane);
  }
  return out;
}

/**
 * What one dependency's record says before the forge is asked: why it blocks the lane, `met` (nothing on the forge
 * to check), or `checkpoint` (its checkpoint is to be read on the forge).
 */
export function dependencyRecordVerdict(depId: string, dep: LaneRecord | undefined, dryRun: boolean): LaneError | 'met' | 'checkpoint' {
  if (!dep || !TERMINAL.has(dep.status)) {
    return { class: 'checkpoint-unmet', message: `dependency "${depId}" had not finished when this lane's wave started` };
  }
  // Held out of the integration (an unchanged lane too: it is integrated again), its work is not in the base.
  if (dep.integration?.state === 'held') {
    return {
      class: 'dependency-failed',
      message: `dependency "${depId}" is held out of the integration (${dep.integration.reason ?? 'held'}); this lane was not run against a missing checkpoint`,
    };
  }
  // An unchanged dependency's checkpoint was met when it last ran, and neither its base nor its inputs moved since.
  if (dep.status === 'unchanged') return 'met';
  if (dep.status !== 'completed') {
    const why = dep.error ? `${dep.status} (${dep.error.class})` : dep.status;
    return { class: 'dependency-failed', message: `dependency "${depId}" ${why}; this lane was not run against a missing checkpoint` };
  }
  if (dep.phase === 'no-op' || dryRun) return 'met';
  return 'checkpoint';
}
