/**
 * The report step: gather every lane's own result file, check each against
 * the forge (never trusting what the lane said about itself), merge them into
 * the manifest and finalize it.
 */
import { MAX_FLEET_JSON_BYTES } from '../core/limits.js';
import { readTextFile } from '../util/fs.js';
import { checkFence } from '../core/fence.js';
import { finalizeManifest, mergeLaneRecords } from '../core/manifest.js';
import { LaneResult, TERMINAL, type LaneRecord, type Manifest } from '../core/model.js';
import type { LaneSpec } from '../core/model.js';
import type { Clock, Forge } from '../ports.js';
import { mapLimit } from '../util/pool.js';
import { resultPath } from './lane/index.js';

export type ResultRead = { ok: true; record: LaneRecord } | { ok: false; reason: 'missing' | 'invalid'; detail: string };

export async function readLaneResult(root: string, lane: string, fleet_id: string): Promise<ResultRead> {
  const read = await readTextFile(resultPath(root, lane), MAX_FLEET_JSON_BYTES, 'a lane result');
  if (!read.ok) {
    if (read.message.startsWith('no such file')) return { ok: false, reason: 'missing', detail: 'the lane left no result file' };
    return { ok: false, reason: 'invalid', detail: `result.json: ${read.message}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(read.text);
  } catch (err) {
    return { ok: false, reason: 'invalid', detail: `result.json is not JSON: ${(err as Error).message}` };
  }
  const parsed = LaneResult.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.')}: ${i.message}`)
      .join('; ');
    return { ok: false, reason: 'invalid', detail: `result.json does not match the lane result schema (${first})` };
  }
  if (parsed.data.fleet_id !== fleet_id || parsed.data.lane.lane !== lane) {
    return { ok: false, reason: 'invalid', detail: `result.json belongs to ${parsed.data.fleet_id}/${parsed.data.lane.lane}, not ${fleet_id}/${lane}` };
  }
  return { ok: true, record: parsed.data.lane };
}

/**
 * Look at what a lane left behind. A completed lane with a commit must have its
 * branch on the forge pointing at that commit, with exactly its files, inside its fence.
 */
export async function verifyLane(forge: Forge, lane: LaneSpec, rec: LaneRecord, now: string, dryRun: boolean): Promise<LaneRecord> {
  try {
    return await checkOnForge(forge, lane, rec, now, dryRun);
  } catch (err) {
    // The forge could not be asked: the lane stays unconfirmed, and the fleet goes on.
    const message = `the forge could not be asked to confirm this lane: ${(err as Error).message}`;
    return {
      ...rec,
      status: rec.status === 'completed' ? 'failed' : rec.status,
      phase: rec.status === 'completed' ? 'failed' : rec.phase,
      error: rec.status === 'completed' ? { class: 'unverified', message } : rec.error,
      evidence: { ...rec.evidence, verified_at: now, notes: [...rec.evidence.notes, message] },
    };
  }
}

async function checkOnForge(forge: Forge, lane: LaneSpec, rec: LaneRecord, now: string, dryRun: boolean): Promise<LaneRecord> {
  if (rec.status !== 'completed' || !rec.commit || !rec.branch || !rec.base_commit || dryRun || rec.phase === 'dry-run') return rec;
  const notes = [...rec.evidence.notes];
  // The lane pushed to a fork (pr.fork): its branch is read there, even by a report job that made no fork itself.
  if (rec.head_repo) forge.useHeadRepo?.(lane, rec.head_repo);
  const base = rec.branch_conflict?.start ?? rec.base_commit;
  // One read for both where the forge has it; the files then count only when the branch is at the lane's commit.
  // Only for the branch the plan gave the lane: the record's own word never chooses what is compared.
  const both = rec.branch === lane.branch ? await forge.branchChanges?.(lane, base, rec.branch) : undefined;
  const head = both ? both.head : await forge.branchHead(lane, rec.branch);
  // A merged lane's branch may have been deleted or moved on; the base branch then holds the commit.
  const headMatches = head === rec.commit || (rec.merge_status === 'merged' && head === null);
  if (!headMatches)
    notes.push(head ? `${rec.branch} points at ${head.slice(0, 12)}, not the lane's ${rec.commit.slice(0, 12)}` : `${rec.branch} is not on the forge`);
  // A lane that kept commits others pushed (branch_conflict: rebase) answers for its own change on top of them.
  const files = both && both.head === rec.commit ? both.files : await forge.changedFiles(lane, base, rec.commit);
  const want = [...rec.changed_files].sort();
  const filesMatch = files !== null && files.length === want.length && files.every((f, i) => f === want[i]);
  if (files === null) notes.push('the forge could not diff the lane commit against its base');
  else if (!filesMatch) notes.push(`the forge shows ${files.length} changed files, the lane reported ${want.length}`);
  const fence = checkFence(files ?? want, lane.owns, lane.never);
  if (!fence.ok) notes.push(`fence: ${fence.message}`);
  const verified: LaneRecord = {
    ...rec,
    evidence: {
      ...rec.evidence,
      verified_at: now,
      verified_by: forge.capabilities.verifiedBy,
      branch_head: head,
      head_matches: headMatches,
      files_match: filesMatch,
      fence_ok: fence.ok,
      notes,
    },
  };
  if (headMatches && filesMatch && fence.ok) return verified;
  return {
    ...verified,
    status: 'failed',
    phase: 'failed',
    error: { class: 'unverified', message: `the forge does not confirm this lane: ${notes.join('; ')}` },
  };
}

export interface ReportStepInput {
  root: string;
  manifest: Manifest;
  lanes: ReadonlyMap<string, LaneSpec>;
  forge: Forge;
  clock: Clock;
  /** Lanes the runner already checked against the forge in this process, as they finished. */
  verified?: ReadonlyMap<string, LaneRecord>;
  /** False after an interrupt: lanes not already checked are reported without asking the forge again (it may be what hangs). */
  forgeReads?: boolean;
  /** Why a lane left no result (its job was cancelled, timed out, failed before upload, never approved), when the runner can tell. */
  explainMissing?(lane: LaneRecord): Promise<{ status: 'failed' | 'skipped'; error: NonNullable<LaneRecord['error']> } | null>;
}

export async function reportStep(input: ReportStepInput): Promise<Manifest> {
  const { manifest, forge, clock } = input;
  const now = clock.now().toISOString();
  const checked = await mapLimit(manifest.lanes, 16, (planned) => laneAtReport(input, planned, now));
  if (input.forgeReads === false) return finalizeManifest(mergeLaneRecords(manifest, checked), now);
  // The lanes whose CI was still running are read again, in as few requests as the forge allows (GitHub: 20 a query).
  const again = checked.flatMap((rec) => {
    const spec = input.lanes.get(rec.lane);
    return spec && readAgain(forge, rec, manifest.dry_run) ? [{ lane: spec, commit: rec.commit!, rec }] : [];
  });
  const batch = again.length && forge.ciConclusions ? await forge.ciConclusions(again).catch(() => []) : [];
  const read = new Map(again.map((x, i) => [x.rec.lane, batch[i]]));
  const records = await mapLimit(checked, 16, (rec) =>
    read.has(rec.lane) ? ciAtReport(forge, input.lanes.get(rec.lane)!, rec, read.get(rec.lane)) : Promise.resolve(rec),
  );
  return finalizeManifest(mergeLaneRecords(manifest, records), now);
}

/** A lane that pushed while its CI had not concluded (\`ci.wait\` off, or a wait that timed out). */
function readAgain(forge: Forge, rec: LaneRecord, dryRun: boolean): boolean {
  if (dryRun || forge.capabilities.ci === 'lane-checks') return false;
  return rec.status === 'completed' && !!rec.commit && rec.ci_conclusion === 'pending' && rec.phase !== 'dry-run' && rec.phase !== 'no-op';
}

/**
 * CI as it stands when the report is written, for a lane that pushed while its CI had not concluded (\`ci.wait\` off,
 * or a wait that timed out): read once more, so a red PR is reported red (and the run exits 1) rather than left as
 * the \`pending\` the lane saw right after its push. A read that fails leaves what the lane saw.
 */
async function ciAtReport(forge: Forge, spec: LaneSpec, rec: LaneRecord, batched: LaneRecord['ci_conclusion'] | undefined): Promise<LaneRecord> {
  let now: LaneRecord['ci_conclusion'];
  try {
    now = batched ?? (await forge.ciConclusion(spec, rec.commit!));
  } catch {
    return rec;
  }
  if (now === rec.ci_conclusion) return rec;
  const note = `CI read again at the report: ${now} (it was pending when the lane pushed)`;
  return { ...rec, ci_conclusion: now, evidence: { ...rec.evidence, notes: [...rec.evidence.notes, note] } };
}

/** A lane's record as the report starts from it: verified already, read from its result file and checked, or why it has none. */
async function laneAtReport(input: ReportStepInput, planned: LaneRecord, now: string): Promise<LaneRecord> {
  const { manifest, forge } = input;
  // Unchanged lanes did not run: their outcome is the previous run's, and the forge is not asked about them.
  if (planned.status === 'excluded' || planned.status === 'unchanged') return planned;
  const done = input.verified?.get(planned.lane);
  if (done) return done;
  const read = await readLaneResult(input.root, planned.lane, manifest.fleet_id);
  if (!read.ok) {
    // Lanes skipped at plan time never ran, so they have no file.
    if (planned.status === 'skipped') return planned;
    const cause = read.reason === 'missing' ? await input.explainMissing?.(planned) : null;
    const status = cause?.status ?? 'failed';
    return {
      ...planned,
      status,
      phase: status,
      updated_at: now,
      error: cause?.error ?? { class: 'no-result', message: `${read.detail}; the lane did not finish (crashed, killed or cancelled)` },
    };
  }
  const rec = read.record;
  if (!TERMINAL.has(rec.status)) {
    return { ...rec, status: 'failed', phase: 'failed', updated_at: now, error: { class: 'no-result', message: `the lane stopped while ${rec.phase}` } };
  }
  const spec = input.lanes.get(rec.lane);
  if (input.forgeReads === false && rec.status === 'completed') {
    const note = 'not checked against the forge again: the run was interrupted';
    return { ...rec, evidence: { ...rec.evidence, notes: [...rec.evidence.notes, note] } };
  }
  return spec ? verifyLane(forge, spec, rec, now, manifest.dry_run) : rec;
}
