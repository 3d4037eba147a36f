/**
 * The merge policy, the lane's last phase: once its PR is open and its CI read, merge when green (`when-green`), or
 * record why not. Commits others pushed that no fence judged are never merged by Fleet.
 */
import type { LaneRecord, LaneSpec } from '../../core/model.js';
import type { LaneContext } from './context.js';

/**
 * The merge policy, once the lane's PR is open and its CI read: merge when green, or say why not. `current` reads the
 * lane's record as it stands: `update` replaces it.
 */
export async function applyMergePolicy(
  ctx: LaneContext,
  lane: LaneSpec,
  current: () => LaneRecord,
  update: (patch: Partial<LaneRecord>, detail: string) => void,
): Promise<void> {
  if (ctx.file.merge.policy !== 'when-green') {
    current().merge_status = 'not-requested';
    return;
  }
  // Commits others pushed (kept by branch_conflict: rebase) were never judged by the lane's fence: a person merges.
  if (current().branch_conflict?.strategy === 'rebase') {
    const rec = current();
    rec.merge_status = 'blocked';
    rec.evidence = {
      ...rec.evidence,
      notes: [...rec.evidence.notes, 'not merged: the branch keeps commits others pushed (branch_conflict: rebase), which no fence judged; a person merges it'],
    };
    return;
  }
  const ci = current().ci_conclusion;
  if (ci === 'success' || ci === 'none') {
    const before = current().phase;
    update({ phase: 'merging' }, 'the policy is when-green');
    const m = await ctx.forge.merge(lane, current(), ctx.file.merge.method);
    const rec = current();
    rec.merge_status = m.status;
    if (m.status === 'merged') rec.phase = 'merged';
    else {
      // Not merged: the lane ends where it was (its PR open), not in the middle of a merge.
      rec.phase = before;
      rec.evidence = { ...rec.evidence, notes: [...rec.evidence.notes, `merge ${m.status}: ${m.detail}`] };
    }
  } else {
    // CI still running (or a required check not reported yet) may turn green later; anything else will not.
    const rec = current();
    rec.merge_status = ci === 'pending' ? 'pending' : 'blocked';
    rec.evidence = { ...rec.evidence, notes: [...rec.evidence.notes, `not merged: CI is ${ci ?? 'unknown'}`] };
  }
}
