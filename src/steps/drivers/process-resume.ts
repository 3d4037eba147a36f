/**
 * A resumed run (`fleet run --resume`) against the fleet file as it is now: what each lane ran with is kept in the
 * workspace, and a resume whose kept lanes would no longer match it is refused, saying what changed.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { canonicalJson, laneDigestInput } from '../../core/incremental.js';
import { compareIds } from '../../core/manifest.js';
import type { LaneRecord, Manifest } from '../../core/model.js';
import type { Plan } from '../../core/plan.js';
import type { Problem, ResolvedFleet } from '../../core/validate.js';
import { LANE_INPUTS_FILE, PREVIOUS_DIR } from './process-workspace.js';

/** Per lane id, everything that decides its result (what its digest hashes), as plain JSON. */
export interface LaneInputs {
  fleet_id?: string;
  lanes: Record<string, unknown>;
}

export function laneInputsOf(fleet: ResolvedFleet, plan: Plan): LaneInputs {
  const lanes: Record<string, unknown> = {};
  for (const l of plan.lanes) lanes[l.spec.id] = laneDigestInput(fleet.file, l.spec);
  return { lanes };
}

export async function readLaneInputs(root: string): Promise<LaneInputs | null> {
  try {
    const raw = JSON.parse(await readFile(join(root, LANE_INPUTS_FILE), 'utf8')) as unknown;
    if (raw && typeof raw === 'object' && 'lanes' in raw && raw.lanes && typeof raw.lanes === 'object' && !Array.isArray(raw.lanes)) return raw as LaneInputs;
  } catch {
    /* a workspace written before the file existed, or one it was removed from: digests alone then */
  }
  return null;
}

/** The fields of two lane inputs that differ: `run`, `checks`, `pr` …, and `Fleet's version`. */
function changedFields(before: unknown, after: unknown): string[] {
  const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
  const out: string[] = [];
  if (canonicalJson(obj(before).fleet_version) !== canonicalJson(obj(after).fleet_version)) out.push("Fleet's version");
  for (const part of ['lane', 'fleet']) {
    const a = obj(obj(before)[part]);
    const b = obj(obj(after)[part]);
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort(compareIds)) {
      if (canonicalJson(a[k]) !== canonicalJson(b[k]) && !out.includes(k)) out.push(k);
    }
  }
  return out;
}

const quoted = (ids: readonly string[]) => ids.map((id) => `"${id}"`).join(', ');

/**
 * Whether a lane's result file (`read`, in the lane's folder, which is not sealed) says what the sealed manifest
 * (`sealed`) says of what the lane left on the forge: what a resume keeps, and a later merge acts on. The PR may be
 * missing from the file (`fleet prs merge` wrote it into the manifest alone), never another; the phase is not
 * compared, since that merge moves it.
 */
export function sameOutcome(sealed: LaneRecord, read: LaneRecord): boolean {
  const of = (r: LaneRecord) =>
    JSON.stringify([r.status, r.commit, r.branch, r.base_commit, r.digest ?? null, [...r.changed_files].sort(), r.head_repo ?? null]);
  const samePr = (read.pr_number === null || read.pr_number === sealed.pr_number) && (read.pr_url === null || read.pr_url === sealed.pr_url);
  return of(sealed) === of(read) && samePr;
}

/**
 * A resume against the fleet file as it is now. A lane the earlier run completed is kept as done: if what decides
 * its result changed since (the directive, its command, its checks …), the manifest would report it done with
 * inputs it never ran with, so that is refused, naming what changed. A change only to lanes that run again (and new
 * or removed lanes) goes on, with a note saying what changed. So does a resume with --dry-run of a real run only when
 * it keeps nothing that was pushed (its manifest would say nothing was).
 */
export function resumeCheck(input: {
  file: string;
  previous: Manifest;
  previousInputs: LaneInputs | null;
  manifest: Manifest;
  inputs: LaneInputs;
  dryRun: boolean;
  previousPath: string;
  /** The previous manifest is not believed (its seal): it keeps no lane, so no change refuses the run. */
  keepsNone?: boolean;
}): { problems: Problem[]; notes: string[] } {
  const { previous, manifest } = input;
  const since = `run ${previous.fleet_id}`;
  const before = new Map(previous.lanes.map((l) => [l.lane, l]));
  const now = new Map(manifest.lanes.map((l) => [l.lane, l]));
  // The lanes the resumed run keeps as they ended (as runFleet decides, from the earlier manifest).
  const kept = (l: LaneRecord) => !input.keepsNone && l.status === 'completed' && (l.phase !== 'dry-run' || input.dryRun);
  const changed: { lane: string; fields: string[] | null; kept: boolean }[] = [];
  for (const [id, cur] of now) {
    const prev = before.get(id);
    if (!prev?.digest || !cur.digest || prev.digest === cur.digest) continue;
    const a = input.previousInputs?.lanes[id];
    const b = input.inputs.lanes[id];
    const fields = a !== undefined && b !== undefined ? changedFields(a, b) : null;
    changed.push({ lane: id, fields: fields?.length ? fields : null, kept: kept(prev) });
  }
  const describe = (list: typeof changed) => {
    const groups = new Map<string, string[]>();
    for (const c of list) {
      const what = c.fields ? c.fields.join(', ') : `fields that decide the result (this workspace has no ${LANE_INPUTS_FILE} to say which)`;
      groups.set(what, [...(groups.get(what) ?? []), c.lane]);
    }
    return [...groups].map(([what, lanes]) => `${what} (lane${lanes.length === 1 ? '' : 's'} ${quoted(lanes)})`).join('; ');
  };
  const problems: Problem[] = [];
  const notes: string[] = [];
  const refused = changed.filter((c) => c.kept);
  if (refused.length) {
    problems.push({
      file: input.file,
      field: '--resume',
      message:
        `the fleet file changed since ${since}: ${describe(refused)}. ` +
        `${refused.length === 1 ? 'That lane' : 'Those lanes'} completed in ${since} with the fleet file as it was, and a resumed run would report ${refused.length === 1 ? 'it' : 'them'} done with inputs ${refused.length === 1 ? 'it' : 'they'} never ran with. ` +
        `Start a new run without --resume (every lane runs with the fleet file as it is), or with --since ${input.previousPath} (only the lanes whose inputs or base changed run)`,
    });
  }
  if (input.dryRun && !previous.dry_run) {
    const pushed = previous.lanes
      .filter((l) => l.status === 'completed' && l.phase !== 'no-op' && l.phase !== 'dry-run')
      .map((l) => l.lane)
      .sort(compareIds);
    if (pushed.length) {
      problems.push({
        file: input.file,
        field: '--dry-run',
        message: `${since} was not a dry run, and lane${pushed.length === 1 ? '' : 's'} ${quoted(pushed.slice(0, 10))}${pushed.length > 10 ? ` and ${pushed.length - 10} more` : ''} pushed ${pushed.length === 1 ? 'its' : 'their'} change; resumed as a dry run, its manifest would say nothing was pushed. Resume without --dry-run, or start a new dry run without --resume`,
      });
    }
  }
  if (problems.length) return { problems, notes };
  const rerun = changed.filter((c) => !c.kept);
  if (rerun.length) notes.push(`the fleet file changed since ${since} for lanes that run again: ${describe(rerun)}; they run with the fleet file as it is now`);
  const added = [...now.keys()].filter((id) => !before.has(id)).sort(compareIds);
  if (added.length)
    notes.push(
      `lane${added.length === 1 ? '' : 's'} ${quoted(added)} ${added.length === 1 ? 'is' : 'are'} new since ${since}: ${added.length === 1 ? 'it runs' : 'they run'}`,
    );
  const removed = [...before.keys()].filter((id) => !now.has(id)).sort(compareIds);
  if (removed.length) {
    const done = removed.filter((id) => before.get(id)!.status === 'completed');
    notes.push(
      `lane${removed.length === 1 ? '' : 's'} ${quoted(removed)} of ${since} ${removed.length === 1 ? 'is' : 'are'} no longer in the fleet file: left out of this run's manifest${done.length ? ` (what ${quoted(done)} pushed stays on the forge)` : ''}; ${removed.length === 1 ? 'its' : 'their'} files are in lanes/<lane>/${PREVIOUS_DIR}/`,
    );
  }
  for (const k of ['max_retries', 'max_parallel'] as const) {
    if (previous[k] !== manifest[k]) notes.push(`${k} is ${manifest[k]} now, ${previous[k]} in ${since}: the lanes kept from it ran with ${previous[k]}`);
  }
  return { problems, notes };
}
