/**
 * Settling a target tried several ways (speculative strategies, issue 9): once every strategy of a group has finished,
 * the fleet file's rule picks one from what the lanes left behind, only the pick opens a PR (or every strategy opens a
 * draft when a person picks), and the others stay as branches, named in the PR and the report.
 */
import type { LaneRecord } from '../core/model.js';
import { TERMINAL } from '../core/model.js';
import { pickStrategy } from '../core/strategies.js';
import type { LaneSpec } from '../core/model.js';
import { codeSpan } from '../core/markdown.js';
import { publishStrategy, writeLaneResult, type LaneContext } from './lane/index.js';

/**
 * The groups with a strategy among `laneIds` whose every strategy (all of the fleet's, not only these) has finished,
 * each with its members' ids in plan order. A group some of whose strategies this process has not seen is never
 * settled here: one leg must not pick among a part of them.
 */
export function finishedGroups(
  laneIds: readonly string[],
  specs: ReadonlyMap<string, LaneSpec>,
  records: ReadonlyMap<string, LaneRecord>,
): Map<string, string[]> {
  const wanted = new Set(laneIds.map((id) => specs.get(id)?.strategy?.group).filter((g) => g !== undefined));
  const groups = new Map<string, string[]>();
  for (const spec of specs.values()) {
    const group = spec.strategy?.group;
    if (group && wanted.has(group)) groups.set(group, [...(groups.get(group) ?? []), spec.id]);
  }
  for (const [group, ids] of groups) if (!ids.every((id) => TERMINAL.has(records.get(id)?.status ?? 'queued'))) groups.delete(group);
  return groups;
}

/** Picks and publishes each finished group among `laneIds`; the members' records are updated in `records` (and their result files). */
export async function settleStrategies(
  ctx: LaneContext,
  laneIds: readonly string[],
  specs: ReadonlyMap<string, LaneSpec>,
  records: Map<string, LaneRecord>,
): Promise<LaneRecord[]> {
  const rule = ctx.file.speculative?.pick ?? 'first-green';
  const out: LaneRecord[] = [];
  for (const ids of finishedGroups(laneIds, specs, records).values()) {
    const members = ids.map((id) => records.get(id)!);
    // A pick an earlier run (or attempt) made stands: its PR may be open or merged already, and a second pick would
    // give one target two PRs.
    const kept = members.find((m) => m.strategy?.picked === true && (m.status === 'unchanged' || (m.status === 'completed' && m.phase !== 'pushed')));
    if (kept) {
      for (const m of members) {
        if (m.status === 'unchanged' || m.strategy?.picked !== null) continue;
        const rec = { ...m, strategy: { ...m.strategy!, picked: false, reason: kept.strategy!.reason } };
        await writeLaneResult(ctx.root, ctx.fleet_id, rec);
        records.set(rec.lane, rec);
        out.push(rec);
      }
      continue;
    }
    const { pick, reason } = pickStrategy(rule, members);
    const settled = members.map((m) => ({ ...m, strategy: { ...m.strategy!, picked: rule === 'person' ? null : m.lane === pick, reason } }));
    const branchOf = (m: LaneRecord) =>
      `${codeSpan(m.branch ?? m.lane)} (${m.strategy!.label}: ${m.status === 'completed' ? (m.phase === 'no-op' ? 'no change' : 'green') : `${m.status}${m.error ? `, ${m.error.class}` : ''}`})`;
    for (const m of settled) {
      const others = settled.filter((o) => o.lane !== m.lane && o.commit && o.phase !== 'dry-run').map(branchOf);
      // With integrate: the pick goes into the integration, never a PR or a merge of its own.
      const publish = !ctx.dryRun && !ctx.file.integrate && m.status === 'completed' && m.phase === 'pushed' && (rule === 'person' || m.lane === pick);
      const rec = publish ? await publishStrategy(ctx, specs.get(m.lane)!, m, rule === 'person', others) : m;
      if (!publish) {
        ctx.onUpdate(rec, m.lane === pick ? `picked: ${reason}` : `not picked: ${reason}`);
        await writeLaneResult(ctx.root, ctx.fleet_id, rec);
      }
      records.set(rec.lane, rec);
      out.push(rec);
    }
  }
  return out;
}
