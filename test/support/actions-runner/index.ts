/**
 * A GitHub Actions workflow runner for tests: real workflow files from the
 * GitHub emulator's repositories, parsed by GitHub's own parser, expressions
 * by GitHub's own evaluator, jobs as processes on their own runner folders,
 * the real `@actions/*` clients talking to the emulated Actions services.
 * See README.md beside this file.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ActionsServices } from '../actions-services/index.js';
import type { Emulator } from '../github-emulator/index.js';
import { RunControlError, type PendingDeployment, type RunControl, type RunReviewRecord } from '../github-emulator/actions-runs.js';
import type { Json } from './expressions.js';
import type { LegContext, ResolvedAction, RunnerHost } from './job.js';
import { defaultPermissions, type DefaultPermissions } from './permissions.js';
import { RepoFiles } from './repo-files.js';
import { dispatchInputs, type CallError } from './reusable.js';
import { checkout } from './builtin/checkout.js';
import { setupNode } from './builtin/setup-node.js';
import type { Builtin } from './builtin/types.js';
import { ConcurrencyGroups, readConcurrency } from './concurrency.js';
import { Semaphore, WorkflowRun, type EnvironmentRule, type RunServices, type RunSummary } from './run.js';
import type { Permissions, RunnerClock } from './types.js';
import { loadAction, loadWorkflow, prop, type LoadedAction, type LoadedWorkflow } from './workflow.js';

export { WorkflowFileError } from './workflow.js';
export type { RunSummary } from './run.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));

/** The third-party actions Fleet's workflows use, emulated by their documented contract, with the runtime each major declares. */
const KNOWN_ACTIONS: Record<string, { dir: string; using: Record<string, string>; builtin?: Builtin }> = {
  'actions/checkout': { dir: 'checkout', using: { v4: 'node20', v5: 'node24', v6: 'node24' }, builtin: checkout },
  'actions/setup-node': { dir: 'setup-node', using: { v4: 'node20', v5: 'node24', v6: 'node24' }, builtin: setupNode },
  'actions/github-script': { dir: 'github-script', using: { v7: 'node20', v8: 'node24', v9: 'node24' } },
  'actions/create-github-app-token': { dir: 'create-github-app-token', using: { v1: 'node20', v2: 'node20', v3: 'node24' } },
  'actions/upload-artifact': { dir: 'upload-artifact', using: { v4: 'node20', v5: 'node20', v6: 'node24', v7: 'node24' } },
};

export interface RunnerOptions {
  emulator: Emulator;
  services: ActionsServices;
  /** Jobs running at once across all runs (GitHub's concurrency limit per account; here, the machine's). Default 4. */
  maxConcurrentJobs?: number;
  /** The repositories' default GITHUB_TOKEN permissions (Settings › Actions): `restricted` (GitHub's default since 2023) or `permissive`. */
  defaultPermissions?: DefaultPermissions;
  /** The conclusion of a job past its `timeout-minutes` in the jobs API: `cancelled` (default) or `timed_out`. */
  timeoutConclusion?: 'cancelled' | 'timed_out';
  /** Variables added to every step's process (test knobs such as FLEET_GITHUB_PACING_MS). Never secrets. */
  extraEnv?: Record<string, string>;
  /** Keep the runner folders after `close()` (for debugging). */
  keep?: boolean;
  onLog?(job: string, line: string): void;
}

export interface DispatchSpec {
  repo: string;
  workflow: string;
  /** Branch or tag (default: the default branch). */
  ref?: string;
  inputs?: Record<string, string | boolean | number>;
  actor?: string;
}

export class ActionsRunner {
  readonly runs = new Map<number, WorkflowRun>();
  readonly clock: RunnerClock;
  private readonly files: RepoFiles;
  private readonly workDir: string;
  private readonly environments = new Map<string, EnvironmentRule & { id: number; createdAt: string }>();
  private readonly secrets = new Map<string, Record<string, string>>();
  private readonly vars = new Map<string, Record<string, string>>();
  private readonly retention = new Map<string, number>();
  private readonly slots: Semaphore;
  private readonly actionCache = new Map<string, Promise<string>>();
  private readonly groups = new ConcurrencyGroups();
  private nextEnvironmentId = 1;

  constructor(private readonly opts: RunnerOptions) {
    const emu = opts.emulator;
    this.clock = { now: () => emu.clock.now(), advance: (ms) => emu.clock.advance(ms) };
    this.files = new RepoFiles(emu.reposDir);
    this.workDir = mkdtempSync(join(tmpdir(), 'actions-runner-'));
    this.slots = new Semaphore(opts.maxConcurrentJobs ?? 4);
    emu.attachActionsServices(opts.services.restBackend());
    emu.onRunControl(this.control());
  }

  /** GitHub's URLs as the runner hands them to jobs: the server on a `*.localhost` name (not GHES to the toolkit), the API on the emulator. */
  get host(): RunnerHost {
    const emu = this.opts.emulator;
    return {
      serverUrl: `http://github.localhost:${emu.port}`,
      apiUrl: emu.url,
      graphqlUrl: emu.graphqlUrl,
      clock: this.clock,
      resolveAction: (uses, job) => this.resolveAction(uses, job),
      extraEnv: { ...this.opts.extraEnv },
    };
  }

  setSecret(repo: string, name: string, value: string): void {
    this.secrets.set(repo, { ...this.secrets.get(repo), [name]: value });
  }

  setVariable(repo: string, name: string, value: string): void {
    this.vars.set(repo, { ...this.vars.get(repo), [name]: value });
  }

  /**
   * The repository's artifact and log retention (Settings › Actions › General; 1–90 days on a public repository, up
   * to 400 on a private one; default 90): jobs see it as GITHUB_RETENTION_DAYS, and @actions/artifact caps an
   * upload's retention-days to it with a warning. The Actions services store the expiry the client sends.
   */
  setRetentionDays(repo: string, days: number): void {
    this.retention.set(repo, days);
  }

  /** An environment with protection rules: jobs that name it wait until one of `reviewers` approves. */
  setEnvironment(repo: string, name: string, rule: EnvironmentRule): void {
    this.environments.set(`${repo}:${name}`, { ...rule, id: this.nextEnvironmentId++, createdAt: new Date(this.clock.now()).toISOString() });
  }

  /** The concurrency groups (lower case) run `runId` is waiting for: its own, or a called workflow's. */
  waitingForConcurrency(runId: number): string[] {
    return this.groups.waitingOf(runId);
  }

  /** `workflow_dispatch`, as "Run workflow" does; a form GitHub would refuse throws with GitHub's 422 message. */
  async dispatch(spec: DispatchSpec): Promise<WorkflowRun> {
    const loaded = await this.loadEntry(spec.repo, spec.workflow, spec.ref);
    if (!prop(prop(loaded.root, 'on'), 'workflow_dispatch') && !hasEvent(loaded, 'workflow_dispatch')) {
      throw new RunControlError(422, "Workflow does not have 'workflow_dispatch' trigger");
    }
    let inputs: Record<string, Json>;
    try {
      inputs = dispatchInputs(loaded, spec.inputs ?? {}, { contexts: { github: { repository: spec.repo } } });
    } catch (err) {
      throw new RunControlError(422, (err as CallError).message);
    }
    const payload = {
      inputs: Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)])),
      ref: loaded.origin.ref,
      workflow: loaded.origin.path,
    };
    return this.startRun(loaded, 'workflow_dispatch', payload, inputs, spec.actor ?? 'octocat');
  }

  /** A `schedule` event: scheduled workflows run on the default branch's latest commit. */
  async schedule(spec: { repo: string; workflow: string; cron?: string }): Promise<WorkflowRun> {
    const loaded = await this.loadEntry(spec.repo, spec.workflow);
    const crons = (loaded.template.events.schedule ?? []).map((s) => s.cron);
    if (!crons.length) throw new Error(`${spec.workflow} has no schedule trigger`);
    if (spec.cron && !crons.includes(spec.cron)) throw new Error(`${spec.workflow} has no schedule '${spec.cron}' (it has ${crons.join(', ')})`);
    return this.startRun(loaded, 'schedule', { schedule: spec.cron ?? crons[0]! }, {}, 'github-actions[bot]');
  }

  /** Runs a started run to the end of its current attempt and returns what it left. */
  async finish(run: WorkflowRun): Promise<RunSummary> {
    while (!this.runs.has(run.id) || !run.attempts.length) await new Promise((r) => setTimeout(r, 10));
    await run.current.done;
    return run.summary();
  }

  review(runId: number, environment: string, state: 'approved' | 'rejected', reviewer: string, comment = ''): number {
    const run = this.runs.get(runId);
    if (!run) throw new Error(`no run ${runId}`);
    const rule = this.environments.get(`${run.facts.repo}:${environment}`);
    if (rule && !rule.reviewers.includes(reviewer)) throw new RunControlError(422, `${reviewer} is not a required reviewer of environment '${environment}'`);
    return run.review({ environment, state, reviewer, comment });
  }

  async close(): Promise<void> {
    for (const run of this.runs.values()) if (!run.attempts.length || run.summaryStatus() !== 'completed') run.cancel();
    await Promise.all([...this.runs.values()].map((r) => r.current?.done.catch(() => undefined)));
    this.opts.emulator.onRunControl(null);
    if (!this.opts.keep) rmSync(this.workDir, { recursive: true, force: true });
  }

  // ---------------------------------------------------------------- runs

  private async loadEntry(repo: string, path: string, ref?: string): Promise<LoadedWorkflow> {
    const branch = ref ?? (await this.files.defaultBranch(repo));
    const sha = await this.files.resolve(repo, branch);
    if (!sha) throw new RunControlError(422, `No ref found for: ${branch}`);
    const content = await this.files.read(repo, sha, path);
    if (content === null) throw new RunControlError(404, `Not Found: ${path} is not a workflow file of ${repo} at ${branch}`);
    return loadWorkflow({ repo, sha, ref: branch.startsWith('refs/') ? branch : `refs/heads/${branch}`, path }, content);
  }

  private async startRun(
    entry: LoadedWorkflow,
    event: string,
    payload: Record<string, Json>,
    inputs: Record<string, Json>,
    actor: string,
  ): Promise<WorkflowRun> {
    const emu = this.opts.emulator;
    const [owner, name] = entry.origin.repo.split('/') as [string, string];
    const record = emu.repo(entry.origin.repo);
    if (!record) throw new Error(`no repository ${entry.origin.repo}`);
    const { id, runNumber } = await emu.startWorkflowRun({
      owner,
      repo: name,
      name: entry.name,
      path: entry.origin.path,
      headBranch: entry.origin.ref.replace(/^refs\/heads\//, ''),
      headSha: entry.origin.sha,
      event,
    });
    const facts = {
      id,
      number: runNumber,
      attempt: 1,
      repo: entry.origin.repo,
      repoId: record.id,
      ownerId: 1,
      event,
      eventPayload: payload,
      ref: entry.origin.ref,
      sha: entry.origin.sha,
      actor,
      entry,
      retentionDays: this.retention.get(entry.origin.repo) ?? 90,
    };
    const run = new WorkflowRun(facts, this.runServices(entry.origin.repo), inputs);
    run.defaultPermissions = defaultPermissions(this.opts.defaultPermissions ?? 'restricted');
    this.runs.set(id, run);
    this.queueByConcurrency(run, () => this.launch(run, 'first'));
    return run;
  }

  /** Starts an attempt, telling the Actions services what kind it is (artifacts across attempts depend on it). */
  private launch(run: WorkflowRun, kind: 'first' | 'rerun-failed' | 'rerun-all'): void {
    const attempt = run.attempts.length + 1;
    this.opts.services.startAttempt({
      repo: run.facts.repo,
      runId: run.id,
      attempt,
      kind,
      ref: run.facts.ref,
      headSha: run.facts.sha,
      headBranch: run.facts.ref.replace(/^refs\/heads\//, ''),
    });
    if (kind === 'first') run.start();
    else if (kind === 'rerun-failed') run.rerunFailed();
    else run.rerunAll();
  }

  rerunFailed(runId: number): WorkflowRun {
    return this.rerun(runId, 'rerun-failed');
  }

  rerunAll(runId: number): WorkflowRun {
    return this.rerun(runId, 'rerun-all');
  }

  private rerun(runId: number, kind: 'rerun-failed' | 'rerun-all'): WorkflowRun {
    const run = this.runs.get(runId);
    if (!run) throw new RunControlError(404, 'Not Found');
    if (run.summaryStatus() !== 'completed') throw new RunControlError(403, 'This workflow is already running');
    if (kind === 'rerun-failed' && run.summary().conclusion === 'success') throw new RunControlError(403, 'This workflow run has no failed jobs to re-run');
    this.launch(run, kind);
    return run;
  }

  /** Workflow-level `concurrency` of the run's own workflow (concurrency.ts): the run starts, waits, or is replaced. */
  private queueByConcurrency(run: WorkflowRun, start: () => void): void {
    const env = {
      contexts: {
        github: { repository: run.facts.repo, ref: run.facts.ref, workflow: run.facts.entry.name, event_name: run.facts.event, run_id: String(run.id) },
        inputs: run.inputs,
        vars: { ...this.vars.get(run.facts.repo) },
      },
    };
    const spec = readConcurrency(prop(run.facts.entry.root, 'concurrency'), env);
    if (!spec) return start();
    const holder = { runId: run.id, topLevel: true, label: 'top level workflow', cancel: () => run.cancel() };
    const waits = this.groups.request(
      spec,
      holder,
      (release) => {
        start();
        void run.current.done.then(release);
      },
      (reason) => run.cancelBeforeStart(reason),
    );
    if (waits) this.opts.emulator.updateWorkflowRun(run.id, { status: 'pending' });
  }

  private runServices(repo: string): RunServices {
    const emu = this.opts.emulator;
    const services = this.opts.services;
    const registered = new Map<string, string>();
    return {
      host: this.host,
      loadCalled: (uses, caller) => this.loadCalled(uses, caller),
      mintToken: (r: string, permissions: Permissions) => emu.mintInstallationToken({ repositories: [r], scopes: { ...permissions, metadata: 'read' } }),
      revokeToken: (token: string) => emu.removeToken(token),
      runtimeFor: (job) => {
        const reg = services.registerJob({ repo, runId: job.runId, runAttempt: job.attempt, jobName: job.name, jobId: job.jobId });
        registered.set(String(job.jobId), reg.runtimeToken);
        return reg.env;
      },
      endJob: (jobId: number) => {
        const token = registered.get(String(jobId));
        if (token) services.endJob(token);
      },
      jobs: {
        addJob: (runId, job) => emu.addWorkflowJob(runId, job),
        updateJob: (jobId, patch) => emu.updateWorkflowJob(jobId, patch),
        setAnnotations: (jobId, list) => emu.setJobAnnotations(jobId, list),
        updateRun: (runId, patch) => emu.updateWorkflowRun(runId, patch),
      },
      environments: this.environments,
      // "Running a workflow that references an environment that does not exist will create an environment with the
      // referenced name" (https://docs.github.com/actions/reference/workflows-and-actions/deployments-and-environments): no rules.
      createEnvironment: (name) => {
        if (!this.environments.has(`${repo}:${name}`)) this.setEnvironment(repo, name, { reviewers: [] });
      },
      vars: { ...this.vars.get(repo) },
      secrets: { ...this.secrets.get(repo) },
      slots: this.slots,
      concurrency: this.groups,
      timeoutConclusion: this.opts.timeoutConclusion ?? 'cancelled',
      workDir: this.workDir,
      ...(this.opts.onLog ? { onLog: this.opts.onLog } : {}),
    };
  }

  /** A called workflow: `./.github/workflows/x.yml` (the caller's repository and commit) or `owner/repo/path@ref`. */
  private async loadCalled(uses: string, caller: LoadedWorkflow): Promise<LoadedWorkflow> {
    if (uses.startsWith('./')) {
      const path = uses.slice(2);
      const content = await this.files.read(caller.origin.repo, caller.origin.sha, path);
      if (content === null)
        throw new Error(`${caller.origin.path}: error parsing called workflow "${uses}": failed to fetch workflow: workflow was not found.`);
      return loadWorkflow({ ...caller.origin, path }, content);
    }
    const m = /^([^/]+\/[^/]+)\/(.+)@(.+)$/.exec(uses);
    if (!m) throw new Error(`${caller.origin.path}: invalid value workflow reference: ${uses}`);
    const [, repo, path, ref] = m as unknown as [string, string, string, string];
    const sha = await this.files.resolve(repo, ref);
    const content = sha ? await this.files.read(repo, sha, path) : null;
    if (!sha || content === null)
      throw new Error(`${caller.origin.path}: error parsing called workflow "${uses}": failed to fetch workflow: workflow was not found.`);
    return loadWorkflow({ repo, sha, ref: /^[0-9a-f]{40}$/.test(ref) ? ref : await this.refKind(repo, ref), path }, content);
  }

  private async refKind(repo: string, ref: string): Promise<string> {
    if (ref.startsWith('refs/')) return ref;
    const tag = await this.files.resolve(repo, `refs/tags/${ref}`);
    return tag ? `refs/tags/${ref}` : `refs/heads/${ref}`;
  }

  // ---------------------------------------------------------------- actions

  /**
   * `uses:` of a step: a local action in the workspace, an emulated
   * third-party action (at a major the runner knows), or an action in an
   * emulator repository at a ref. Anything else fails the step loudly.
   */
  private async resolveAction(uses: string, job: LegContext): Promise<ResolvedAction> {
    if (uses.startsWith('docker://')) throw new Error(`Docker actions are not supported by the emulated runner: ${uses}`);
    if (uses.startsWith('./')) return this.actionAt(resolve(job.workspace, uses), uses);
    const m = /^([^/@]+)\/([^/@]+)(\/[^@]*)?@(.+)$/.exec(uses);
    if (!m) throw new Error(`Unable to resolve action \`${uses}\`, the reference must be owner/repo@ref`);
    const [, owner, name, sub = '', ref] = m as unknown as [string, string, string, string | undefined, string];
    const known = KNOWN_ACTIONS[`${owner}/${name}`];
    if (known) {
      const major = /^v\d+/.exec(ref)?.[0];
      const using = major ? known.using[major] : undefined;
      if (!using) throw new Error(`Unable to resolve action \`${uses}\`: the emulated runner knows ${owner}/${name} at ${Object.keys(known.using).join(', ')}`);
      const action = this.actionAt(join(HERE, 'actions', known.dir), uses);
      if (known.builtin) return { kind: 'builtin', ref: uses, dir: action.dir, loaded: action.loaded, using, impl: known.builtin };
      return action.kind === 'node' ? { ...action, using } : action;
    }
    const repo = `${owner}/${name}`;
    const sha = await this.files.resolve(repo, ref);
    if (!sha) throw new Error(`Unable to resolve action \`${uses}\`, unable to find version \`${ref}\``);
    const key = `${repo}@${sha}`;
    if (!this.actionCache.has(key)) {
      const dir = join(this.workDir, '_actions', owner, name, sha);
      this.actionCache.set(
        key,
        this.files.export(repo, sha, dir).then(() => dir),
      );
    }
    return this.actionAt(join(await this.actionCache.get(key)!, sub), uses);
  }

  private actionAt(dir: string, uses: string): ResolvedAction {
    const file = ['action.yml', 'action.yaml'].map((f) => join(dir, f)).find((f) => existsSync(f));
    if (!file)
      throw new Error(`Can't find 'action.yml' or 'action.yaml' under '${dir}'. Did you forget to run actions/checkout before running your local action?`);
    const loaded: LoadedAction = loadAction(uses, readFileSync(file, 'utf8'));
    const runs = loaded.template.runs;
    if (runs.using === 'composite') return { kind: 'composite', ref: uses, dir, loaded };
    if (runs.using === 'docker') throw new Error(`Docker actions are not supported by the emulated runner: ${uses}`);
    return {
      kind: 'node',
      ref: uses,
      dir,
      loaded,
      using: runs.using,
      main: runs.main,
      ...(runs.post ? { post: runs.post } : {}),
      ...(runs.postIf ? { postIf: runs.postIf } : {}),
    };
  }

  // ---------------------------------------------------------------- REST run controls

  private control(): RunControl {
    return {
      rerun: (runId, failedOnly) => void (failedOnly ? this.rerunFailed(runId) : this.rerunAll(runId)),
      cancel: (runId) => this.runs.get(runId)?.cancel(),
      dispatch: async (repo, workflow, ref, inputs) => {
        const path = /^\d+$/.test(workflow) ? workflow : workflow.includes('/') ? workflow : `.github/workflows/${workflow}`;
        await this.dispatch({ repo, workflow: path, ref, inputs: inputs as Record<string, string> });
      },
      pendingDeployments: (runId) => this.pending(runId),
      review: (runId, ids, state, comment, reviewer) => {
        const run = this.runs.get(runId);
        if (!run) throw new RunControlError(404, 'Not Found');
        for (const env of this.environmentsById(run, ids)) this.review(runId, env, state, reviewer, comment);
      },
      reviews: (runId) => this.reviewsOf(runId),
      environment: (repo, name) => {
        const rule = this.environments.get(`${repo}:${name}`);
        return rule ? { id: rule.id, name, reviewers: rule.reviewers, createdAt: rule.createdAt } : undefined;
      },
    };
  }

  private pending(runId: number): PendingDeployment[] {
    const run = this.runs.get(runId);
    if (!run) return [];
    return run.waitingEnvironments().map((name) => {
      const rule = this.environments.get(`${run.facts.repo}:${name}`)!;
      return { environmentId: rule.id, environment: name, reviewers: rule.reviewers, waitingSince: new Date(this.clock.now()).toISOString() };
    });
  }

  private environmentsById(run: WorkflowRun, ids: number[]): string[] {
    const out: string[] = [];
    for (const [key, rule] of this.environments)
      if (key.startsWith(`${run.facts.repo}:`) && ids.includes(rule.id)) out.push(key.slice(run.facts.repo.length + 1));
    if (out.length !== ids.length) throw new RunControlError(422, 'environment_ids: not all environments are waiting on this run');
    return out;
  }

  private reviewsOf(runId: number): RunReviewRecord[] {
    const run = this.runs.get(runId);
    if (!run) return [];
    return run.reviews
      .filter((r) => r.reviewer)
      .map((r) => ({
        state: r.state,
        comment: r.comment,
        reviewer: r.reviewer,
        environments: [{ id: this.environments.get(`${run.facts.repo}:${r.environment}`)?.id ?? 0, name: r.environment }],
      }));
  }
}

function hasEvent(wf: LoadedWorkflow, event: string): boolean {
  return Object.hasOwn(wf.template.events, event);
}

/** Starts the runner over an emulator and its Actions services. */
export function startRunner(opts: RunnerOptions): ActionsRunner {
  return new ActionsRunner(opts);
}
