/**
 * Wave integration (integrate:) through the reusable workflow. Each wave is its own job there, so the integration of
 * wave k is a job of its own too (`integrate-k`, between `wave-k` and `wave-(k+1)`): it merges the wave's verified
 * lanes into each repository's integration branch, as the local runner does between waves, and leaves what it did
 * as the `fleet-integration-w<wave>` artifact. The legs of later waves read it (which lanes were held, where their
 * repository's integration is) and start from the integration; the report job puts it in the manifest. The job after
 * the fleet's last wave also cuts the release branch and opens the one PR.
 *
 * The record is cumulative (every repository, every lane integrated so far), so a reader needs only the latest one.
 * A fleet deeper than the wave jobs carries it to the next run in the manifest of the chain.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { IntegrationRecord, LaneIntegration, type LaneRecord } from '../../core/model.js';
import type { ArtifactStore, StoredArtifact } from '../../ports.js';
import { readUntrustedJson, writeJsonAtomic } from '../../util/fs.js';
import { Integration, integrable } from '../integrate.js';
import { writeLaneResult } from '../lane/index.js';
import { verifyLane } from '../report.js';
import { integrateWave } from '../settle.js';
import {
  attemptName,
  bareDigest,
  fetchLaneResults,
  type JobInput,
  latestByAttempt,
  legContext,
  parseAttemptName,
  type PlanBundle,
} from './matrix-artifacts.js';

export const INTEGRATION_ARTIFACT_PREFIX = 'fleet-integration-w';

/** What an integrate job leaves: every repository's integration so far, and how each lane integrated so far went in. */
export const IntegrationState = z.strictObject({
  fleet_id: z.string(),
  /** The last wave it covers. */
  wave: z.number().int().min(0),
  records: z.array(IntegrationRecord),
  lanes: z.record(z.string(), LaneIntegration),
});
export type IntegrationState = z.infer<typeof IntegrationState>;

/** The latest integration before a wave, and which wave it covers (null: no wave was integrated yet). */
export interface SeenIntegration {
  state: IntegrationState;
  wave: number | null;
  /** Why a record that was there could not be read, for the log. */
  problem?: string;
}

/**
 * The integration as it stood after the waves before `before`: the latest record of this run's integrate jobs (the
 * latest attempt of each), else what an earlier run of the chain left in the plan's manifest.
 */
export async function readIntegration(
  store: ArtifactStore,
  root: string,
  bundle: PlanBundle,
  before: number,
  attempt: number,
  pins?: readonly string[],
): Promise<SeenIntegration> {
  const first = bundle.first_wave ?? 0;
  const since = bundle.attempt ?? 1;
  const found: { artifact: StoredArtifact; wave: number; attempt: number }[] = [];
  // Pinned, only the records the integrate jobs gave as outputs (which no step but theirs can write) count: an upload
  // under the same name by anything else in the run is not read.
  const pinned = pins && new Set(pins.map(bareDigest).filter(Boolean));
  const listed = (await store.list(INTEGRATION_ARTIFACT_PREFIX, { complete: attempt > since })).filter((a) => !pinned || pinned.has(bareDigest(a.digest)));
  for (const [base, artifact] of latestByAttempt(listed, since, attempt)) {
    const m = /^fleet-integration-w(\d{1,4})$/.exec(base);
    const wave = m ? Number(m[1]) : NaN;
    if (wave >= first && wave < before) found.push({ artifact, wave, attempt: parseAttemptName(artifact.name).attempt });
  }
  const carried = fromManifest(bundle);
  const best = found.sort((a, b) => b.wave - a.wave)[0];
  if (!best) return carried;
  // "Re-run failed jobs" re-runs an integrate job and every job after it: a later wave's record older than an earlier
  // wave's is from before the re-run (its own job did not run again, or died), and builds on an integration since redone.
  const newer = found.find((f) => f.wave < best.wave && f.attempt > best.attempt);
  if (newer) return { ...carried, problem: `${best.artifact.name} is older than ${newer.artifact.name}, the integration it built on was redone since` };
  const dir = join(root, '.integration', best.artifact.name);
  try {
    await store.download(best.artifact, dir);
    const parsed = IntegrationState.safeParse(await readUntrustedJson(join(dir, 'integration', `w${best.wave}.json`), 8 * 1024 * 1024));
    // The plan names the fleet and its integration branch, the artifact name the wave: a record that says otherwise
    // is not this one (and its branch would never become a lane's base).
    const branch = bundle.fleet.file.integrate?.branch.replaceAll('{name}', bundle.fleet.file.name);
    if (
      !parsed.success ||
      parsed.data.fleet_id !== bundle.manifest.fleet_id ||
      parsed.data.wave !== best.wave ||
      parsed.data.records.some((r) => r.branch !== branch)
    ) {
      return { ...carried, problem: `${best.artifact.name} is not a record of this fleet's integration of wave ${best.wave + 1}` };
    }
    return { state: parsed.data, wave: best.wave };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** What the runs before this one of a chain integrated: in the manifest they handed on. */
function fromManifest(bundle: PlanBundle): SeenIntegration {
  const { manifest } = bundle;
  const first = bundle.first_wave ?? 0;
  const lanes = Object.fromEntries(manifest.lanes.filter((l) => l.integration && l.wave !== null && l.wave < first).map((l) => [l.lane, l.integration!]));
  return {
    state: { fleet_id: manifest.fleet_id, wave: Math.max(0, first - 1), records: manifest.integration ?? [], lanes },
    wave: first > 0 ? first - 1 : null,
  };
}

/** Why `wave` cannot start (what cannot, `who`): the integration of the wave before it left no record. */
export function integrationMissing(seen: SeenIntegration, wave: number, who = 'this lane cannot start from it'): string | undefined {
  if (wave === 0 || seen.wave === wave - 1) return undefined;
  return `the integration of wave ${wave} left no record (its job failed or did not run${seen.problem ? `; ${seen.problem}` : ''}), so ${who}: re-run the failed jobs`;
}

export interface MatrixIntegrateInput extends Omit<JobInput, 'bundle'> {
  bundle: PlanBundle;
  /** The wave job this job follows (1 … wave_jobs): it integrates wave first_wave + waveJob - 1. */
  waveJob: number;
}

/**
 * The integrate job after a wave job: the wave's lanes (checked against the forge first: a result file is a lane's
 * word) merged into the integration; after the fleet's last wave, the release. Returns the record it uploaded, and
 * what went wrong with the integration itself (not with a lane): git failing, a push refused.
 */
export async function matrixIntegrate(input: MatrixIntegrateInput): Promise<{ state: IntegrationState; problems: string[]; digest: string | undefined }> {
  const { bundle } = input;
  const { fleet, manifest } = bundle;
  const spec = fleet.file.integrate;
  if (!spec) throw new Error('the fleet file has no integrate: section, so there is nothing to integrate');
  const wave = (bundle.first_wave ?? 0) + input.waveJob - 1;
  if (!manifest.waves[wave]) throw new Error(`the plan has no wave ${wave + 1} to integrate`);
  const attempt = input.attempt ?? 1;
  const seen = await readIntegration(input.store, input.root, bundle, wave, attempt, input.integrationPins);
  const missing = integrationMissing(seen, wave, 'this wave has nothing verified to build on');
  if (missing) throw new Error(missing);
  const specs = new Map(fleet.lanes.map((l) => [l.id, l]));
  const ctx = legContext(input, bundle);
  const integration = new Integration(ctx, specs, spec, seen.state.records);
  const records = await verified(input, await fetchLaneResults(input.store, input.root, bundle, manifest.waves[wave]!.lanes, attempt));
  // An unchanged lane did not run (no artifact): its record, with the commit of its last sweep, is in the plan.
  for (const l of manifest.lanes) if (l.wave === wave && l.status === 'unchanged') records.set(l.lane, l);
  const lanes = { ...seen.state.lanes };
  for (const rec of await integrateWave(integration, wave, manifest.waves[wave]!.lanes, records)) lanes[rec.lane] = rec.integration!;
  if (wave === manifest.waves.length - 1) await integration.release(await integratedLanes(input, lanes, records));
  const state: IntegrationState = { fleet_id: manifest.fleet_id, wave, records: integration.records(), lanes };
  const file = join(input.root, 'integration', `w${wave}.json`);
  await writeJsonAtomic(file, state);
  const uploaded = await input.store.upload(attemptName(`${INTEGRATION_ARTIFACT_PREFIX}${wave}`, attempt), [file], input.root);
  return { state, problems: integration.problems, digest: uploaded.digest };
}

/** The wave's results, each completed lane checked against the forge as the report job will (its branch, its files, its fence). */
async function verified(input: MatrixIntegrateInput, records: Map<string, LaneRecord>): Promise<Map<string, LaneRecord>> {
  const specs = new Map(input.bundle.fleet.lanes.map((l) => [l.id, l]));
  const now = input.clock.now().toISOString();
  for (const [id, rec] of records)
    if (rec.status === 'completed' && specs.has(id)) records.set(id, await verifyLane(input.forge, specs.get(id)!, rec, now, input.bundle.manifest.dry_run));
  return records;
}

/** The records of every lane in the integration, for the release PR's body: this wave's, this run's earlier ones, earlier runs'. */
async function integratedLanes(
  input: MatrixIntegrateInput,
  lanes: Record<string, LaneIntegration>,
  wave: Map<string, LaneRecord>,
): Promise<Map<string, LaneRecord>> {
  const merged = Object.entries(lanes)
    .filter(([, i]) => i.state === 'merged')
    .map(([id]) => id);
  const out = new Map(
    input.bundle.manifest.lanes.filter((l) => merged.includes(l.lane) && l.wave !== null && l.wave < (input.bundle.first_wave ?? 0)).map((l) => [l.lane, l]),
  );
  const fetch = merged.filter((id) => !out.has(id) && !wave.has(id));
  for (const [id, rec] of await fetchLaneResults(input.store, join(input.root, '.release'), input.bundle, fetch, input.attempt ?? 1)) out.set(id, rec);
  for (const [id, rec] of wave) out.set(id, rec);
  return out;
}

/**
 * The report job's part: each lane of this run (`results`: those that left one) gets its integration outcome (the latest record), and a lane that
 * should have been integrated but is in no record is held with the reason. The lanes' result files in `root` are
 * rewritten, so the report reads them as the local runner's; an unchanged lane has none (it did not run), so its
 * outcome is returned with the repositories' records for the caller to set.
 */
export async function applyIntegration(
  store: ArtifactStore,
  root: string,
  bundle: PlanBundle,
  attempt: number,
  pins: readonly string[] | undefined,
  laneIds: readonly string[],
  results: ReadonlyMap<string, LaneRecord>,
): Promise<{ records: IntegrationRecord[]; unchanged: Map<string, LaneIntegration> }> {
  const { manifest } = bundle;
  const last = Math.min(manifest.waves.length, (bundle.first_wave ?? 0) + (bundle.wave_jobs ?? manifest.waves.length)) - 1;
  const seen = await readIntegration(store, root, bundle, last + 1, attempt, pins);
  const planned = new Map(manifest.lanes.map((l) => [l.lane, l]));
  const unchanged = new Map<string, LaneIntegration>();
  for (const id of laneIds) {
    const fromFile = planned.get(id)?.status === 'unchanged' ? undefined : results.get(id);
    const rec = fromFile ?? (planned.get(id)?.status === 'unchanged' ? planned.get(id) : undefined);
    if (!rec) continue;
    const outcome = seen.state.lanes[id] ?? (integrable(rec) && rec.wave !== null ? notInRecord(rec.wave, seen.problem) : undefined);
    if (!outcome) continue;
    if (fromFile) await writeLaneResult(root, manifest.fleet_id, { ...fromFile, integration: outcome });
    else unchanged.set(id, outcome);
  }
  return { records: seen.state.records, unchanged };
}

/** A lane that should have gone into the integration of its wave, which left no record. */
function notInRecord(wave: number, problem: string | undefined): LaneIntegration {
  const reason = `the integration of wave ${wave + 1} left no record (its job failed or did not run${problem ? `; ${problem}` : ''}): this lane is not in the integration branch`;
  return { state: 'held', wave, merge_commit: null, conflicts: [], reason };
}
