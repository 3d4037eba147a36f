/**
 * The action's logic, with the runner injected (the create-github-app-token
 * pattern): `core`, the artifact store, the forge and the GitHub API come in
 * as arguments, so tests drive it without a runner. index.ts wires the real ones.
 */
import { join } from 'node:path';
import { exitCodeFor } from '../steps/run.js';
import { formatProblems } from '../core/validate.js';
import type { Manifest } from '../core/model.js';
import { checkRunConclusion, fitCheckRunText, renderPlan, renderReport } from '../core/report.js';
import { renderWriteBudget, type LegPace, type WriteWindow } from '../core/budget.js';
import type { ArtifactStore, Clock, Executor, Forge, RunJob, RunJobs, Workspace } from '../ports.js';
import { loadFleetFile } from '../steps/load.js';
import { attemptName, legPaceOf, loadPlanBundle, matrixPlan, matrixReport, matrixShard, REPORT_ARTIFACT, type PlanBundle } from '../steps/matrix.js';
import type { PlanStepOptions } from '../steps/plan.js';
import type { FleetFile } from '../core/fleet-file.js';
import { writeFileAtomic, writeJsonAtomic } from '../util/fs.js';
import { readSettings, type Settings } from './settings.js';

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

/** The slice of Octokit the action uses for the run's own repository. */
export interface GitHubApi {
  request(route: string, params?: Record<string, unknown>): Promise<{ data: unknown }>;
}

type ForgeChoice = { forge: Forge; discover?: PlanStepOptions['discover']; writeLimits?: WriteWindow[] } | { problem: string };

export interface ActionDeps {
  env: NodeJS.ProcessEnv;
  core: CoreLike;
  store: ArtifactStore;
  clock: Clock;
  workspace: Workspace;
  exec: Executor;
  /** The forge the fleet file names (and its target discovery, on GitHub); a lane job's writes keep to `writePace`. */
  setupForge(settings: Settings, file: FleetFile, writePace?: LegPace): ForgeChoice | Promise<ForgeChoice>;
  api(settings: Settings): GitHubApi;
  /** The environment handed to directives (Fleet's own credentials withheld). */
  directiveEnv: Record<string, string>;
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
  core.setSecret(settings.token);
  if (settings.runToken !== settings.token) core.setSecret(settings.runToken);
  try {
    if (settings.mode === 'plan') return await plan(deps, settings);
    const bundle = await loadPlanBundle(deps.store, settings.workspace, { digest: settings.planDigest, attempt: settings.runAttempt });
    const pace = settings.mode === 'lane' ? legPaceOf(bundle, settings.shard) : undefined;
    if (pace) core.info(`Write budget: this leg writes at most once every ${pace.interval_ms} ms, in its own slots (phase ${pace.phase_ms} ms).`);
    const setup = await deps.setupForge(settings, bundle.fleet.file, pace);
    if ('problem' in setup) {
      core.setFailed(setup.problem);
      return 2;
    }
    if (settings.mode === 'lane') return await lane(deps, settings, setup.forge, bundle);
    return await report(deps, settings, setup.forge, bundle);
  } catch (err) {
    core.setFailed(`Fleet ${settings.mode} failed: ${(err as Error).message}`);
    return 2;
  }
}

async function plan(deps: ActionDeps, settings: Settings): Promise<number> {
  const loaded = await loadFleetFile(settings.file);
  if (!loaded.ok) {
    deps.core.setFailed(formatProblems(loaded.problems));
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
    dryRun: settings.dryRun,
    discover: setup.discover,
    attempt: settings.runAttempt,
    writeLimits: setup.writeLimits,
  });
  if (!out.ok) {
    deps.core.setFailed(formatProblems(out.problems));
    return 2;
  }
  const o = out.outputs;
  deps.core.setOutput('fleet-id', o.fleet_id);
  deps.core.setOutput('wave-count', String(o.wave_count));
  deps.core.setOutput('max-parallel', String(o.max_parallel));
  deps.core.setOutput('lane-count', String(o.lane_count));
  deps.core.setOutput('plan-digest', o.plan_digest);
  o.waves.forEach((shards, i) => deps.core.setOutput(`wave-${i + 1}`, JSON.stringify(shards)));
  // The approver reads this before the approval gate opens.
  const planText = renderPlan(out.manifest);
  await deps.core.summary.addRaw(out.budget ? `${planText}\n\n${renderWriteBudget(out.budget)}` : planText, true).write();
  deps.core.info(`Planned ${o.lane_count} lanes in ${o.wave_count} wave(s); ${out.manifest.excluded.length} excluded.`);
  return 0;
}

async function lane(deps: ActionDeps, settings: Settings, forge: Forge, bundle: PlanBundle): Promise<number> {
  const records = await matrixShard({
    bundle,
    shard: settings.shard,
    store: deps.store,
    root: settings.workspace,
    forge,
    workspace: deps.workspace,
    exec: deps.exec,
    clock: deps.clock,
    env: deps.directiveEnv,
    dryRun: settings.dryRun || undefined,
    log: (line) => deps.core.info(line),
    attempt: settings.runAttempt,
  });
  for (const r of records) {
    const line = `${r.lane}: ${r.status} (${r.phase})${r.error ? ` — ${r.error.class}: ${r.error.message}` : ''}`;
    if (r.status === 'failed') deps.core.warning(line);
    else deps.core.info(line);
  }
  // The job fails when a lane did, so "Re-run failed jobs" re-runs exactly these shards (keeping their completed lanes);
  // later waves and the report still run (their if: is !cancelled()).
  const failed = records.filter((r) => r.status === 'failed');
  if (failed.length) {
    deps.core.setFailed(`${failed.length} lane(s) of shard ${settings.shard} failed: ${failed.map((r) => r.lane).join(', ')}`);
    return 1;
  }
  return 0;
}

async function report(deps: ActionDeps, settings: Settings, forge: Forge, bundle: PlanBundle): Promise<number> {
  const api = deps.api(settings);
  const manifest = await matrixReport({
    bundle,
    store: deps.store,
    root: settings.workspace,
    forge,
    clock: deps.clock,
    jobs: settings.repository && settings.runId ? runJobs(api, settings.repository, settings.runId) : undefined,
    attempt: settings.runAttempt,
  });
  const text = renderReport(manifest, { now: manifest.ended_at ?? deps.clock.now().toISOString() });
  await writeJsonAtomic(join(settings.workspace, 'fleet-status.json'), manifest);
  await writeFileAtomic(join(settings.workspace, 'report.md'), `${text}\n`);
  const artifact = attemptName(REPORT_ARTIFACT, settings.runAttempt);
  await deps.store.upload(artifact, [join(settings.workspace, 'fleet-status.json'), join(settings.workspace, 'report.md')], settings.workspace);
  // A step summary holds 1 MiB: a very large fleet's report is cut there, with a pointer to the artifact.
  await deps.core.summary.addRaw(fitCheckRunText(text, `The full report is the \`${artifact}\` artifact.`, STEP_SUMMARY_BYTES), true).write();
  deps.core.setOutput('manifest', join(settings.workspace, 'fleet-status.json'));
  deps.core.setOutput('failed', String(manifest.summary.failed));
  // The summary and the artifact are written: a check run GitHub refuses is a warning, not a failed report.
  if (settings.repository && settings.sha) await postCheckRun(api, settings, manifest, text, artifact).catch((err: Error) => deps.core.warning(checkRunProblem(err)));
  const code = exitCodeFor(manifest);
  if (code !== 0 && settings.failOnLaneFailure) deps.core.setFailed(`${manifest.summary.failed} lane(s) failed: see the report`);
  return settings.failOnLaneFailure ? code : 0;
}

function checkRunProblem(err: Error & { status?: number }): string {
  const hint =
    err.status === 403
      ? ' The report job needs `permissions: checks: write` (and the caller must grant it: a reusable workflow cannot have more than its caller).'
      : '';
  return `The report's check run could not be posted (${err.status ?? 'error'}: ${err.message}); the job summary and the report artifact have the full report.${hint}`;
}

/** The run's jobs (every page: a big fleet has thousands), their annotations, and the approval gate's verdict. */
export function runJobs(api: GitHubApi, repo: { owner: string; repo: string }, runId: number): RunJobs {
  return {
    async list(): Promise<RunJob[]> {
      const jobs: RunJob[] = [];
      for (let page = 1; ; page++) {
        const { data } = await api.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs', { ...repo, run_id: runId, filter: 'latest', per_page: 100, page });
        const batch = (data as { jobs: RunJob[]; total_count: number }).jobs;
        jobs.push(...batch.map((j) => ({ id: j.id, name: j.name, status: j.status, conclusion: j.conclusion, html_url: j.html_url })));
        if (batch.length < 100 || jobs.length >= (data as { total_count: number }).total_count) break;
      }
      return jobs;
    },
    async annotations(jobId: number): Promise<string[]> {
      const { data } = await api.request('GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations', { ...repo, check_run_id: jobId, per_page: 50 });
      return (data as Array<{ message: string }>).map((a) => a.message);
    },
    async rejection() {
      const { data } = await api.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}/approvals', { ...repo, run_id: runId });
      const rejected = (data as Array<{ state: string; comment: string; user: { login: string }; environments: Array<{ name?: string }> }>).find((r) => r.state === 'rejected');
      return rejected ? { environment: rejected.environments.map((e) => e.name).join(', '), reviewer: rejected.user.login, comment: rejected.comment } : null;
    },
  };
}

async function postCheckRun(api: GitHubApi, settings: Settings, manifest: Manifest, text: string, artifact: string): Promise<void> {
  const pointer = settings.runUrl ? `The full report is the \`${artifact}\` artifact of ${settings.runUrl}.` : `The full report is the \`${artifact}\` artifact.`;
  const s = manifest.summary;
  await api.request('POST /repos/{owner}/{repo}/check-runs', {
    ...settings.repository,
    name: `${settings.checkName}: ${manifest.name}`,
    head_sha: settings.sha,
    status: 'completed',
    conclusion: checkRunConclusion(manifest),
    ...(settings.runUrl ? { details_url: settings.runUrl } : {}),
    output: {
      title: `${s.completed} completed, ${s.failed} failed, ${s.skipped} skipped, ${s.excluded} excluded of ${s.total}`,
      summary: fitCheckRunText(text, pointer),
    },
  });
}
