/**
 * The lane's change request: its PR opened or updated on the pushed branch (a draft, labelled for a person, when its
 * review left findings open), with a body that says where it came from; and a strategy's PR, once its group is
 * settled. With `pr.open: false` the pushed branch is the whole outcome.
 */
import { conflictBodyLines } from '../../core/branch-conflict.js';
import type { LaneRecord, LaneReview, LaneSpec } from '../../core/model.js';
import { codeSpan, escapeCell, pathSpan } from '../../core/markdown.js';
import { issueLink } from '../../core/queue.js';
import { reviewBodyLines } from '../../core/report.js';
import type { LaneContext } from './context.js';
import { forgeCall, LaneFailure } from './failure.js';
import { writeLaneResult } from './layout.js';
import { applyMergePolicy } from './merge.js';
import type { LaneRun } from './state.js';

/** Opens or updates the lane's PR (a draft, labelled for a person, when its review left findings open). */
export async function publish(run: LaneRun, review: LaneReview | null, draft = false): Promise<void> {
  const { ctx, lane } = run;
  const pr = ctx.file.pr;
  // Push-only mode: the pushed branch is the lane's checkpoint and its whole outcome; no PR is opened.
  if (!pr.open) return;
  const handOver = review?.verdict === 'needs-person' && lane.review ? lane.review.label : null;
  const published = await forgeCall('pr-failed', 'opening or updating the pull request', () =>
    ctx.forge.publish({
      lane,
      record: run.rec,
      title: lane.title,
      body: prBody(ctx, lane, run.rec),
      draft: pr.draft || draft || handOver !== null,
      labels: handOver && !pr.labels.includes(handOver) ? [...pr.labels, handOver] : pr.labels,
      reviewers: pr.reviewers,
      team_reviewers: pr.team_reviewers,
      assignees: pr.assignees,
      branchCreated: run.branchCreated,
    }),
  );
  if (published.notes?.length) run.rec.evidence = { ...run.rec.evidence, notes: [...run.rec.evidence.notes, ...published.notes] };
  if (published.pr_url) {
    run.update(
      { phase: 'pr-open', pr_url: published.pr_url, pr_number: published.pr_number },
      `${published.updated ? 'updated' : 'opened'} ${published.pr_url}`,
    );
  }
  // An existing PR is not made a draft by publishing it again.
  if (handOver && published.updated && run.rec.pr_number !== null) {
    const number = run.rec.pr_number;
    await forgeCall('pr-failed', 'turning the pull request into a draft for a person', () => ctx.forge.setDraft(lane, number, true));
  }
}

/** The PR body carries a hidden marker so a re-run finds its own PR and a person sees where it came from. */
export function prBody(ctx: LaneContext, lane: LaneSpec, rec: LaneRecord): string {
  const files = rec.changed_files
    .slice(0, 50)
    .map((f) => `- ${pathSpan(f)}`)
    .join('\n');
  const more = rec.changed_files.length > 50 ? `\n- … and ${rec.changed_files.length - 50} more` : '';
  return [
    `<!-- fleet:${ctx.file.name}:${lane.id} -->`,
    `This change was made by the Fleet **${ctx.file.name}** (lane \`${lane.id}\`).`,
    '',
    ...(lane.issue ? [issueLink(lane.issue.number, lane.issue.slot), ''] : []),
    '**Directive**',
    '',
    lane.directive
      .trim()
      .split('\n')
      .map((l) => `> ${l}`)
      .join('\n'),
    '',
    `**Files changed** (${rec.changed_files.length})`,
    '',
    files + more,
    ...(rec.review ? reviewBodyLines(rec.review) : []),
    ...(rec.branch_conflict ? conflictBodyLines(rec.branch_conflict.strategy, rec.branch_conflict.commits) : []),
  ].join('\n');
}

/**
 * Publishes one strategy of a target once its group is settled: the pick (its PR, then the merge policy), or, when a
 * person picks, each strategy as a draft. `others` says in the PR body where the other strategies are. A forge call
 * that fails leaves the lane failed, saying which step.
 */
export async function publishStrategy(ctx: LaneContext, lane: LaneSpec, start: LaneRecord, draft: boolean, others: string[]): Promise<LaneRecord> {
  let rec = start;
  const update = (patch: Partial<LaneRecord>, detail: string) => {
    rec = { ...rec, ...patch, updated_at: ctx.clock.now().toISOString() };
    ctx.onUpdate(rec, detail);
  };
  const pr = ctx.file.pr;
  if (!pr.open) return rec;
  const why = rec.strategy?.reason ? `${draft ? 'A person picks among the strategies' : 'Picked among the strategies'}: ${rec.strategy.reason}.` : '';
  const body = [
    prBody(ctx, lane, rec),
    '',
    `**Strategy** ${codeSpan(rec.strategy?.label ?? lane.id)}. ${escapeCell(why)}`,
    ...(others.length ? ['', 'The other strategies stay as branches:', ...others.map((o) => `- ${o}`)] : []),
  ].join('\n');
  try {
    const published = await forgeCall('pr-failed', 'opening the pull request of the picked strategy', () =>
      ctx.forge.publish({
        lane,
        record: rec,
        title: lane.title,
        body,
        draft: pr.draft || draft,
        labels: pr.labels,
        reviewers: pr.reviewers,
        team_reviewers: pr.team_reviewers,
        assignees: pr.assignees,
      }),
    );
    if (published.notes?.length) rec.evidence = { ...rec.evidence, notes: [...rec.evidence.notes, ...published.notes] };
    if (published.pr_url)
      update({ phase: 'pr-open', pr_url: published.pr_url, pr_number: published.pr_number }, `${published.updated ? 'updated' : 'opened'} ${published.pr_url}`);
    if (!draft) await applyMergePolicy(ctx, lane, () => rec, update);
  } catch (err) {
    const failure = err instanceof LaneFailure ? err : new LaneFailure('lane-crashed', (err as Error).message);
    update({ status: 'failed', phase: 'failed', error: { class: failure.errorClass, message: failure.message } }, failure.errorClass);
  }
  await writeLaneResult(ctx.root, ctx.fleet_id, rec);
  return rec;
}
