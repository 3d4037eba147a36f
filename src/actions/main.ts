/**
 * The action's logic, with the runner injected (the create-github-app-token
 * pattern): `core`, the artifact store, the forge and the GitHub API come in
 * as arguments, so tests drive it without a runner. index.ts wires the real ones.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { exitCodeFor, handOffIssues, nothingRan } from '../steps/outcome.js';
import { formatProblems } from '../core/validate.js';
import type { Manifest } from '../core/model.js';
import type { MatrixPlanOutputs } from '../steps/drivers/matrix.js';
import {
  ANNOTATIONS_PER_REQUEST,
  checkRunConclusion,
  fitCheckRunText,
  laneAnnotations,
  renderIntegration,
  renderPlan,
  renderReport,
  renderShard,
} from '../core/report.js';
import { matrixIntegrate } from '../steps/drivers/matrix-integrate.js';
import type { ArtifactStore, Clock, Executor, Forge, QueueSettle, RunJobs, Workspace } from '../ports.js';
import { loadFleetFile } from '../steps/load.js';
import { attemptName, continuesAfter, loadPlanBundle, REPORT_ARTIFACT, type PlanBundle } from '../steps/drivers/matrix-artifacts.js';
import { legPaceOf, waitForPredecessor } from '../steps/drivers/matrix-pace.js';
import { matrixContinue, matrixPlan, matrixReport, matrixShard, publishChain } from '../steps/drivers/matrix.js';
import { finalizeManifest } from '../core/manifest.js';
import { readFile } from 'node:fs/promises';
import { renderWriteBudget, type LegPace, type WriteBudget, type WriteWindow } from '../core/budget.js';
import type { PlanStepOptions } from '../steps/plan.js';
import type { AgentSpec, FleetFile } from '../core/fleet-file.js';
import { createCheckRun, dispatchWorkflow, getWorkflowRun, runJobs, updateCheckRun, type GitHubApi, type WorkflowRun } from '../github/actions-run.js';
import { agentCredentialEnv, agentPackage } from '../core/agent-setup.js';
import { writeFileAtomic, writeJsonAtomic } from '../util/fs.js';
import { readSettings, sealKey, type Settings } from './settings.js';
import { readPreviousSweep, saveSweep } from './sweep.js';
import type { SweepCache } from './sweep-cache.js';
import { maskPrivateKey } from '../github/app-key.js';
import { redact } from '../util/secrets.js';
import { approvalGateProblem, ARTIFACT_RETENTION_DAYS, retentionNote } from './gate.js';

/** GitHub's limit for one step's summary: 1 MiB; a larger one is dropped whole, so the report is cut below it. */
const STEP_SUMMARY_BYTES = 1_048_000;

/** The slice of @actions/core the action uses. */
export interface CoreLike {
  setOutput(name: string, value: string): void;
  setFailed(message: string): void;
  setSecret(secret: string): void;
  info(message: string): void;
  warning(message: string): void;
  summary: { addRaw(text: string, addEOL?: boolean): { write(): Promise<unknown> } };
}

/** What a job works with: the forge (and its discovery, issue queue), and for lane and integrate jobs the workspace and executor. */
interface JobSetup {
  forge: Forge;
  discover?: PlanStepOptions['discover'];
  queue?: PlanStepOptions['queue'];
  settleQueue?: QueueSettle;
  writeLimits?: WriteWindow[];
  workspace?: Workspace;
  exec?: Executor;
}

type ForgeChoice = JobSetup | { problem: string };

export interface ActionDeps {
  env: NodeJS.ProcessEnv;
  core: CoreLike;
  store: ArtifactStore;
  clock: Clock;
  /** The workspace and executor of a job whose setupForge gives none (deps a test builds by hand). */
  workspace?: Workspace;
  exec?: Executor;
  /**
   * The job's session for the fleet file (src/session/session.ts): the forge it names (and its target discovery, on
   * GitHub), whose writes keep to `writePace` in a lane job; in lane and integrate jobs, the isolation App credentials
   * need and the commit setup checked first, and the workspace and executor.
   */
  setupForge(settings: Settings, file: FleetFile, writePace?: LegPace): ForgeChoice | Promise<ForgeChoice>;
  api(settings: Settings): GitHubApi;
  /** The same API with the fleet token (the run token may not dispatch a workflow). */
  fleetApi?(settings: Settings): GitHubApi;
  /** The artifacts of another run of this repository (a chain's earlier run), read through the REST API. */
  runStore?(settings: Settings, runId: number): ArtifactStore;
  /** The environment handed to directives (Fleet's own credentials withheld). */
  directiveEnv: Record<string, string>;
  /** Installs (or restores from the Actions cache) the agent CLI a leg runs; the folder to put on PATH. */
  installAgent?(spec: string, bin: string | null): Promise<{ binDir: string }>;
  /** Every form a secret takes once encoded (plain, URL, base64 …), so a change holding it is recognised. */
  secretForms?(secret: string): string[];
  /** Where incremental sweeps keep their outcomes (the Actions cache). */
  sweepCache?: SweepCache;
  /** At the job's end, whatever the outcome: revokes the installation tokens Fleet minted. */
  finish?(): Promise<void>;
}

/** Returns the exit code: 0 done, 1 a lane failed (report mode), 2 bad input or set-up failure. */
export async function runAction(deps: ActionDeps): Promise<number> {
  const { core } = deps;
  const read = readSettings(deps.env);
  if (!read.ok) {
    core.setFailed(`Fleet: ${read.problems.length} problem(s) with the inputs:\n${read.problems.map((p) => `  ${p}`).join('\n')}`);
    return 2;
  }
  const settings = read.settings;
  if (settings.token) core.setSecret(settings.token);
  if (settings.runToken && settings.runToken !== settings.token) core.setSecret(settings.runToken);
  if (settings.app) maskPrivateKey(settings.app.privateKey, (s) => core.setSecret(s));
  for (const credential of Object.values(settings.agentCredentials)) core.setSecret(credential);
  try {
    if (settings.mode === 'plan') return await plan(deps, settings);
    const bundle = await loadPlanBundle(deps.store, settings.workspace, { digest: settings.planDigest, attempt: settings.runAttempt });
    const pace = settings.mode === 'lane' ? legPaceOf(bundle, settings.shard) : undefined;
    if (pace) {
      const burst = pace.burst ?? 1;
      core.info(
        `Write budget: this leg writes at most ${burst > 1 ? `${burst} times, ${pace.gap_ms ?? pace.slot_ms} ms apart,` : 'once'} every ${pace.interval_ms} ms, in its own slots (phase ${pace.phase_ms} ms).`,
      );
      pace.waitTurn = () =>
        waitForPredecessor({
          store: deps.store,
          root: settings.workspace,
          bundle,
          shard: settings.shard,
          attempt: settings.runAttempt,
          jobs: legJobs(deps, settings),
          log: (l) => core.info(l),
        });
    }
    const setup = await deps.setupForge(settings, bundle.fleet.file, pace);
    if ('problem' in setup) {
      core.setFailed(setup.problem);
      return 2;
    }
    if (settings.mode === 'lane') return await lane(deps, settings, setup, bundle);
    if (settings.mode === 'integrate') return await integrate(deps, settings, setup, bundle);
    return await report(deps, settings, setup.forge, bundle, setup.settleQueue);
  } catch (err) {
    core.setFailed(`Fleet ${settings.mode} failed: ${redact((err as Error).message)}`);
    return 2;
  } finally {
    await deps.finish?.().catch((err: Error) => core.warning(`Fleet could not revoke its GitHub App tokens: ${redact(err.message)}`));
  }
}

async function plan(deps: ActionDeps, settings: Settings): Promise<number> {
  if (settings.continueRun) return await continuePlan(deps, settings, settings.continueRun);
  // A gate with no reviewer would open at once: refused before anything is planned or uploaded (with the file's problems, if any).
  const gate = await gateProblem(deps, settings);
  const loaded = await loadFleetFile(settings.file);
  if (!loaded.ok || gate) {
    const text = [...(loaded.ok ? [] : [formatProblems(loaded.problems)]), ...(gate ? [gate] : [])].join('\n');
    if (gate) await deps.core.summary.addRaw(`## Fleet plan refused\n\n${gate}\n`, true).write();
    deps.core.setFailed(text);
    return 2;
  }
  const setup = await deps.setupForge(settings, loaded.fleet.file);
  if ('problem' in setup) {
    deps.core.setFailed(setup.problem);
    return 2;
  }
  const forge = setup.forge;
  let fleet = loaded.fleet;
  if (settings.directive) {
    // A workflow_dispatch directive replaces the file's, except where a lane sets its own.
    const previous = fleet.file.directive;
    fleet = {
      ...fleet,
      file: { ...fleet.file, directive: settings.directive },
      lanes: fleet.lanes.map((l) => (l.directive === previous ? { ...l, directive: settings.directive! } : l)),
    };
  }
  const fleet_id = settings.runId ? `fleet-run-${settings.runId}` : `fleet-${deps.clock.now().getTime()}`;
  const since = settings.incremental ? await readPreviousSweep(deps, fleet.file.name, sealKey(settings)) : undefined;
  const out = await matrixPlan({
    fleet,
    file: settings.file,
    forge,
    clock: deps.clock,
    store: deps.store,
    root: settings.workspace,
    fleet_id,
    waveJobs: settings.waveJobs,
    maxParallel: settings.maxParallel,
    legTimeoutMinutes: settings.legTimeoutMinutes,
    dryRun: settings.dryRun,
    discover: setup.discover,
    queue: setup.queue,
    attempt: settings.runAttempt,
    since,
    run: thisRun(settings),
    writeLimits: setup.writeLimits,
  });
  if (!out.ok) {
    deps.core.setFailed(formatProblems(out.problems));
    return 2;
  }
  for (const note of out.notes) deps.core.info(note);
  await planOutputs(deps, settings, out.manifest, out.outputs, out.budget);
  return 0;
}

function thisRun(settings: Settings): { id: number; url: string | null } | undefined {
  return settings.runId ? { id: settings.runId, url: settings.runUrl ?? null } : undefined;
}

async function planOutputs(deps: ActionDeps, settings: Settings, manifest: Manifest, o: MatrixPlanOutputs, writeBudget?: WriteBudget): Promise<void> {
  deps.core.setOutput('fleet-id', o.fleet_id);
  deps.core.setOutput('wave-count', String(o.wave_count));
  deps.core.setOutput('max-parallel', String(o.max_parallel));
  deps.core.setOutput('lane-count', String(o.lane_count));
  deps.core.setOutput('plan-digest', o.plan_digest);
  o.waves.forEach((shards, i) => deps.core.setOutput(`wave-${i + 1}`, JSON.stringify(shards)));
  deps.core.setOutput('integrate-jobs', String(o.integrate_jobs));
  deps.core.setOutput('gated', settings.approvalEnvironment ? 'true' : 'false');
  // The approver reads this before the approval gate opens, with how long the plan's artifact lives.
  const kept = retentionNote(settings.retentionDays, ARTIFACT_RETENTION_DAYS, !!settings.approvalEnvironment, deps.clock.now());
  if (kept.warning) deps.core.warning(kept.warning);
  const budget = writeBudget ? `\n\n${renderWriteBudget(writeBudget)}` : '';
  // No gate by choice (approval-environment: none) is said where a gate's approver would have read the plan.
  const waived = settings.gateWaived
    ? '\n\n**No approval gate**: approval-environment is `none`, so the lanes start as soon as the plan is made, without a second person seeing the directive first.'
    : '';
  await deps.core.summary.addRaw(`${renderPlan(manifest)}${budget}${waived}\n\n${kept.line}\n`, true).write();
  if (settings.gateWaived) deps.core.info('No approval gate: approval-environment is none.');
  deps.core.info(`Planned ${o.lane_count} lanes in ${o.wave_count} wave(s); ${manifest.excluded.length} excluded.`);
}

/**
 * The plan job of a run that continues a fleet deeper than the workflow's wave jobs: the plan and the lanes' results
 * come from the run it continues, which must be a run of this same workflow in this repository.
 */
async function continuePlan(deps: ActionDeps, settings: Settings, runId: number): Promise<number> {
  if (!settings.repository || !settings.caller || !deps.runStore) {
    deps.core.setFailed('input continue-run: a fleet continues only in a run of GitHub Actions (GITHUB_REPOSITORY and GITHUB_WORKFLOW_REF are not set)');
    return 2;
  }
  const why = notContinuable(await getWorkflowRun(deps.api(settings), settings.repository, runId), settings);
  if (why) {
    deps.core.setFailed(
      `input continue-run: run ${runId} ${why}: a fleet continues only from a run of the same workflow, started by hand, on a schedule or by Fleet, on this branch of this repository`,
    );
    return 2;
  }
  const out = await matrixContinue({
    previous: deps.runStore(settings, runId),
    store: deps.store,
    root: settings.workspace,
    waveJobs: settings.waveJobs,
    attempt: settings.runAttempt,
    run: thisRun(settings),
  });
  deps.core.info(
    `Continuing ${out.manifest.fleet_id} from run ${runId}: waves ${(out.manifest.runs?.at(-1)?.first_wave ?? 0) + 1}–${(out.manifest.runs?.at(-1)?.last_wave ?? 0) + 1} of ${out.manifest.waves.length}.`,
  );
  await planOutputs(deps, settings, out.manifest, out.outputs);
  return 0;
}

async function gateProblem(deps: ActionDeps, settings: Settings): Promise<string | undefined> {
  if (!settings.approvalEnvironment) return undefined;
  if (!settings.repository)
    return 'input approval-environment: GITHUB_REPOSITORY is not set, so the environment cannot be checked (the plan mode runs in a workflow job)';
  return approvalGateProblem(deps.api(settings), settings.repository, settings.approvalEnvironment);
}

/** What a lane or integrate job hands the steps: this job's adapters, the plan, and the environment for untrusted code. */
function jobInput(deps: ActionDeps, settings: Settings, setup: JobSetup, bundle: PlanBundle) {
  return {
    bundle,
    store: deps.store,
    root: settings.workspace,
    forge: setup.forge,
    // The session's; deps a test builds by hand give their own.
    workspace: (setup.workspace ?? deps.workspace)!,
    exec: (setup.exec ?? deps.exec)!,
    clock: deps.clock,
    env: { ...deps.directiveEnv, ...fleetFileDir(settings) },
    dryRun: settings.dryRun || undefined,
    log: (line: string) => deps.core.info(line),
    attempt: settings.runAttempt,
    integrationPins: integrationPins(settings, bundle),
  };
}

/**
 * FLEET_FILE_DIR for directives and checks, as the CLI gives it: the fleet file's folder in the caller's checkout (the
 * reusable workflow checks it out in every lane and integrate job, and passes the fleet file's path). None without it.
 */
function fleetFileDir(settings: Settings): Record<string, string> {
  if (!settings.file) return {};
  const dir = dirname(resolve(settings.file));
  return existsSync(dir) ? { FLEET_FILE_DIR: dir } : {};
}

/**
 * The integration records a job may read: in the reusable workflow, those the integrate jobs gave as outputs (none
 * given, none read). Without integrate: there are none to read.
 */
function integrationPins(settings: Settings, bundle: PlanBundle): string[] | undefined {
  return bundle.fleet.file.integrate ? settings.integrationDigests : undefined;
}

async function lane(deps: ActionDeps, settings: Settings, setup: JobSetup, bundle: PlanBundle): Promise<number> {
  const agent = await prepareAgent(deps, settings, bundle.fleet.file.agent);
  const records = await matrixShard({
    ...jobInput(deps, settings, setup, bundle),
    shard: settings.shard,
    agentEnv: agent.env,
    neverInChange: agent.neverInChange,
  });
  for (const r of records) {
    const line = `${r.lane}: ${r.status} (${r.phase})${r.error ? ` — ${r.error.class}: ${r.error.message}` : ''}`;
    if (r.status === 'failed') deps.core.warning(line);
    else deps.core.info(line);
  }
  // The leg's own summary: its lanes and how each ended, beside its log.
  await deps.core.summary.addRaw(renderShard(settings.shard, records), true).write();
  // The job fails when a lane did, so "Re-run failed jobs" re-runs exactly these shards (keeping their completed lanes);
  // later waves and the report still run (their if: is !cancelled()).
  const failed = records.filter((r) => r.status === 'failed');
  if (failed.length) {
    deps.core.setFailed(`${failed.length} lane(s) of shard ${settings.shard} failed: ${failed.map((r) => r.lane).join(', ')}`);
    return 1;
  }
  return 0;
}

/**
 * The job after a wave job, with integrate: in the fleet file: the wave's lanes merged into the integration branch
 * (after the last wave, the release). A lane held by a conflict or a failed check is an outcome the report counts,
 * not a failure of this job; git or the forge failing is, so "Re-run failed jobs" tries the integration again.
 */
async function integrate(deps: ActionDeps, settings: Settings, setup: JobSetup, bundle: PlanBundle): Promise<number> {
  const { state, problems, digest } = await matrixIntegrate({ ...jobInput(deps, settings, setup, bundle), waveJob: settings.wave! });
  // The next wave job, the next integrate job and the report read this record and no other.
  deps.core.setOutput('integration-digest', digest ?? '');
  for (const [id, outcome] of Object.entries(state.lanes)) {
    if (outcome.wave !== state.wave) continue;
    if (outcome.state === 'held') deps.core.warning(`${id}: held out of the integration: ${outcome.reason ?? 'held'}`);
    else deps.core.info(`${id}: integrated`);
  }
  await deps.core.summary.addRaw(renderIntegration(state.wave, state.records), true).write();
  // Git or the forge failed, not a lane: failing the job lets "Re-run failed jobs" try the integration again.
  if (problems.length) {
    deps.core.setFailed(`The integration could not be done: ${problems.map((p) => redact(p)).join('; ')}`);
    return 1;
  }
  return 0;
}

/**
 * What an agent directive needs in this leg: the CLI (installed once per leg, through the Actions cache) first on its
 * PATH, and the credentials its CLI reads. The credentials are text no change may hold.
 */
async function prepareAgent(
  deps: ActionDeps,
  settings: Settings,
  agent: AgentSpec | undefined,
): Promise<{ env: Record<string, string>; neverInChange: string[] }> {
  const env = agentCredentialEnv(agent, settings.agentCredentials);
  const neverInChange = [...new Set(Object.values(env))].flatMap((v) => deps.secretForms?.(v) ?? [v]);
  const spec = agentPackage(agent);
  if (!agent || !spec || !deps.installAgent) return { env, neverInChange };
  try {
    const installed = await deps.installAgent(spec, presetBinary(agent));
    return { env: { ...env, PATH: [installed.binDir, deps.directiveEnv.PATH].filter(Boolean).join(':') }, neverInChange };
  } catch (err) {
    throw new Error(`installing the agent CLI (${spec}, agent.install in the fleet file) failed: ${(err as Error).message}`);
  }
}

/** The command a preset runs, unless agent.command names another binary. */
function presetBinary(agent: AgentSpec): string | null {
  if (agent.preset === 'command' || agent.command) return null;
  return agent.preset;
}

async function report(deps: ActionDeps, settings: Settings, forge: Forge, bundle: PlanBundle, settleQueue?: QueueSettle): Promise<number> {
  const api = deps.api(settings);
  let manifest = await matrixReport({
    bundle,
    store: deps.store,
    root: settings.workspace,
    forge,
    clock: deps.clock,
    jobs: settings.repository && settings.runId ? runJobs(api, settings.repository, settings.runId) : undefined,
    attempt: settings.runAttempt,
    integrationPins: integrationPins(settings, bundle),
  });
  manifest = await continueChain(deps, settings, bundle, manifest);
  manifest = await handOffIssues(manifest, bundle.fleet, settleQueue);
  const text = renderReport(manifest, { now: manifest.ended_at ?? deps.clock.now().toISOString() });
  await writeJsonAtomic(join(settings.workspace, 'fleet-status.json'), manifest);
  await writeFileAtomic(join(settings.workspace, 'report.md'), `${text}\n`);
  const artifact = attemptName(REPORT_ARTIFACT, settings.runAttempt);
  await deps.store.upload(artifact, [join(settings.workspace, 'fleet-status.json'), join(settings.workspace, 'report.md')], settings.workspace);
  // A step summary holds 1 MiB: a very large fleet's report is cut there, with a pointer to the artifact.
  await deps.core.summary.addRaw(fitCheckRunText(text, `The full report is the \`${artifact}\` artifact.`, STEP_SUMMARY_BYTES), true).write();
  deps.core.setOutput('manifest', join(settings.workspace, 'fleet-status.json'));
  // For callers that chain work after the fleet (the reusable workflow's outputs).
  for (const key of ['total', 'completed', 'failed', 'skipped', 'excluded'] as const) deps.core.setOutput(key, String(manifest.summary[key]));
  deps.core.setOutput('report-artifact', artifact);
  if (settings.incremental) await saveSweep(deps, settings, manifest, sealKey(settings));
  // The summary and the artifact are written: a check run GitHub refuses is a warning, not a failed report.
  if (settings.repository && settings.sha)
    await postCheckRun(api, settings, manifest, text, artifact).catch((err: Error) => deps.core.warning(checkRunProblem(err)));
  const code = exitCodeFor(manifest);
  if (code !== 0 && settings.failOnLaneFailure) deps.core.setFailed(`${failureLine(manifest)}: see the report`);
  return settings.failOnLaneFailure ? code : 0;
}

/** What made the run fail: failed lanes, and lanes held out of the integration (which a failed count alone would hide). */
function failureLine(manifest: Manifest): string {
  const held = manifest.lanes.filter((l) => l.integration?.state === 'held' && l.status !== 'failed').length;
  const skipped = manifest.lanes.filter((l) => l.status === 'skipped').length;
  if (nothingRan(manifest)) return `no lane ran: every target was excluded (${manifest.lanes.length})`;
  const parts = [
    `${manifest.summary.failed} lane(s) failed`,
    ...(held ? [`${held} held out of the integration`] : []),
    ...(skipped ? [`${skipped} skipped`] : []),
  ];
  return parts.join(', ');
}

/**
 * Why a run's fleet-chain artifact is not to be trusted, or null. Its workflow file must be this one, in this
 * repository, on this branch, and it must have been started by workflow_dispatch or schedule: a pull_request run
 * (a fork's, or a branch's own edit of the workflow file) runs the workflow as the PR wrote it, and could upload any
 * chain it likes.
 */
function notContinuable(run: WorkflowRun, settings: Settings): string | null {
  const here = `${settings.repository!.owner}/${settings.repository!.repo}`;
  if (run.repository?.full_name !== here || run.path !== settings.caller!.path)
    return `is a run of ${run.repository?.full_name ?? '?'}/${run.path ?? '?'}, not of ${here}/${settings.caller!.path}`;
  if (run.event !== 'workflow_dispatch' && run.event !== 'schedule') return `was started by a ${run.event ?? 'unknown'} event`;
  if (run.head_repository?.full_name !== here) return `ran the code of ${run.head_repository?.full_name ?? 'another repository'}`;
  if (run.head_branch !== settings.caller!.ref) return `ran on ${run.head_branch ?? 'no branch'}, not on ${settings.caller!.ref}`;
  return null;
}

/**
 * A fleet deeper than the workflow's wave jobs goes on in a new run of the calling workflow: this run's state is left
 * as an artifact, and the calling workflow is dispatched with its own inputs and `fleet-continue` naming this run.
 * When that cannot be done, the lanes of the later waves are skipped with the reason, so every lane is accounted for.
 */
async function continueChain(deps: ActionDeps, settings: Settings, bundle: PlanBundle, manifest: Manifest): Promise<Manifest> {
  const next = continuesAfter(bundle);
  if (next === null) return manifest;
  try {
    if (!settings.repository || !settings.caller || !settings.runId) throw new Error('this is not a run of GitHub Actions');
    await publishChain(
      deps.store,
      settings.workspace,
      { fleet: bundle.fleet, manifest, next_wave: next, ...(bundle.budget ? { budget: bundle.budget } : {}) },
      settings.runAttempt,
    );
    const inputs = { ...(await dispatchedInputs(settings.caller)), [CONTINUE_INPUT]: String(settings.runId) };
    await dispatchNext(deps, settings, inputs);
    deps.core.info(`The fleet goes on from wave ${next + 1} in a new run of ${settings.caller.path} (${CONTINUE_INPUT}: ${settings.runId}).`);
    return manifest;
  } catch (err) {
    const why = `the fleet could not continue in a new run of the workflow after wave ${next}: ${(err as Error).message}`;
    deps.core.warning(why);
    const now = deps.clock.now().toISOString();
    const lanes = manifest.lanes.map((l) =>
      l.wave !== null && l.wave >= next && l.status === 'queued'
        ? { ...l, status: 'skipped' as const, phase: 'skipped' as const, updated_at: now, ended_at: now, error: { class: 'no-result' as const, message: why } }
        : l,
    );
    return finalizeManifest({ ...manifest, lanes }, now);
  }
}

/** The input of the calling workflow that carries the run a fleet continues (see workflows-templates/). */
export const CONTINUE_INPUT = 'fleet-continue';

/** The inputs the calling workflow was dispatched with (none for a schedule): the next run gets the same. */
async function dispatchedInputs(caller: NonNullable<Settings['caller']>): Promise<Record<string, string>> {
  if (caller.event !== 'workflow_dispatch' || !caller.eventPath) return {};
  const event = JSON.parse(await readFile(caller.eventPath, 'utf8')) as { inputs?: Record<string, unknown> | null };
  return Object.fromEntries(
    Object.entries(event.inputs ?? {})
      .filter(([k]) => k !== CONTINUE_INPUT)
      .map(([k, v]) => [k, String(v)]),
  );
}

/**
 * Dispatches the calling workflow with the fleet token (a PAT, or an App token with Actions write minted for this):
 * the job's GITHUB_TOKEN has actions: read only, so that callers of fleets that never chain need not grant more.
 */
async function dispatchNext(deps: ActionDeps, settings: Settings, inputs: Record<string, string>): Promise<void> {
  try {
    await dispatchWorkflow((deps.fleetApi ?? deps.api)(settings), settings.repository!, settings.caller!.path.split('/').pop()!, settings.caller!.ref, inputs);
  } catch (err) {
    throw dispatchProblem(err as Error);
  }
}

function dispatchProblem(err: Error & { status?: number }): Error {
  const hint =
    err.status === 422
      ? ` The calling workflow needs a workflow_dispatch input named ${CONTINUE_INPUT}, passed to the reusable workflow as continue-run (see workflows-templates/).`
      : err.status === 403 || err.status === 404
        ? ' The fleet token must be allowed to run workflows in this repository: a PAT with Actions: write, or a GitHub App with the Actions write permission.'
        : '';
  return new Error(`dispatching the next run failed (${err.status ?? 'error'}: ${err.message}).${hint}`);
}

function checkRunProblem(err: Error & { status?: number }): string {
  const hint =
    err.status === 403
      ? ' The report job needs `permissions: checks: write` (and the caller must grant it: a reusable workflow cannot have more than its caller).'
      : '';
  return `The report's check run could not be posted (${err.status ?? 'error'}: ${err.message}); the job summary and the report artifact have the full report.${hint}`;
}

/** The run's jobs for a leg waiting on the shard before it: none without the run's coordinates or a token to read them. */
function legJobs(deps: ActionDeps, settings: Settings): RunJobs | undefined {
  if (!settings.repository || !settings.runId) return undefined;
  try {
    return runJobs(deps.api(settings), settings.repository, settings.runId);
  } catch {
    return undefined;
  }
}

async function postCheckRun(api: GitHubApi, settings: Settings, manifest: Manifest, text: string, artifact: string): Promise<void> {
  const pointer = settings.runUrl
    ? `The full report is the \`${artifact}\` artifact of ${settings.runUrl}.`
    : `The full report is the \`${artifact}\` artifact.`;
  const s = manifest.summary;
  const output = {
    title: `${s.completed} completed, ${s.failed} failed, ${s.skipped} skipped, ${s.excluded} excluded${s.unchanged ? `, ${s.unchanged} unchanged` : ''} of ${s.total}`,
    summary: fitCheckRunText(text, pointer),
  };
  // One annotation per lane a person must look at, 50 a request: the rest are appended by updates of the same check run.
  const notes = laneAnnotations(manifest, settings.file || 'fleet.yml');
  const batches = Array.from({ length: Math.ceil(notes.length / ANNOTATIONS_PER_REQUEST) }, (_, i) =>
    notes.slice(i * ANNOTATIONS_PER_REQUEST, (i + 1) * ANNOTATIONS_PER_REQUEST),
  );
  const repo = settings.repository!;
  const id = await createCheckRun(api, repo, {
    name: `${settings.checkName}: ${manifest.name}`,
    headSha: settings.sha,
    conclusion: checkRunConclusion(manifest),
    detailsUrl: settings.runUrl,
    output: { ...output, ...(batches[0] ? { annotations: batches[0] } : {}) },
  });
  for (const batch of batches.slice(1)) await updateCheckRun(api, repo, id, { ...output, annotations: batch });
}
