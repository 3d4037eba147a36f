/**
 * One workflow run and its attempts: jobs scheduled by `needs` and `if`,
 * reusable workflows expanded into their jobs, matrices into legs (with
 * `fail-fast` and `max-parallel`), environments that wait for a reviewer,
 * `timeout-minutes` on the runner's clock, cancellation, and "Re-run failed
 * jobs" / "Re-run all jobs" as new attempts. Every job is visible through the
 * GitHub emulator's Actions REST endpoints while it runs.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { isString } from '@actions/workflow-parser';
import { asString, condition, evaluateString, evaluateToken, truthy, type EvalEnv, type Json } from './expressions.js';
import { ancestors, nextAttemptNodes, type JobNode, type Leg, type Scope } from './graph.js';
import { githubContextOf, runLeg, type RunnerHost } from './job.js';
import { expandMatrix, legName, MatrixError } from './matrix.js';
import { effectivePermissions, exceeding, readPermissions } from './permissions.js';
import { callInputs, callOutputs, callProblems, callSecrets } from './reusable.js';
import { readConcurrency, type ConcurrencyGroups } from './concurrency.js';
import type { Annotation, Conclusion, LegResult, Permissions, RunFacts } from './types.js';
import { prop, type LoadedWorkflow } from './workflow.js';

/** What a run needs from the world around it: the emulator's records, tokens, services, workflows. */
export interface RunServices {
  host: RunnerHost;
  /** Loads a called workflow (`./path` in the caller's repository and commit, or `owner/repo/path@ref`). */
  loadCalled(uses: string, caller: LoadedWorkflow): Promise<LoadedWorkflow>;
  /** A GITHUB_TOKEN for one job: an installation token limited to the run's repository with these permissions. */
  mintToken(repo: string, permissions: Permissions): string;
  revokeToken(token: string): void;
  /** ACTIONS_RUNTIME_TOKEN and the service URLs for one job. */
  runtimeFor(job: { runId: number; attempt: number; jobId: number; name: string }): Record<string, string>;
  /** The job ended: its runtime token is no longer honoured. */
  endJob(jobId: number): void;
  jobs: JobsRecorder;
  environments: Map<string, EnvironmentRule>;
  /** A job named an environment the repository does not have: GitHub creates it, with no protection rules. */
  createEnvironment(name: string): void;
  vars: Record<string, string>;
  secrets: Record<string, string>;
  slots: Semaphore;
  /** Workflow-level concurrency groups across the runner's runs (a called workflow's included). */
  concurrency: ConcurrencyGroups;
  timeoutConclusion: 'cancelled' | 'timed_out';
  workDir: string;
  onLog?(job: string, line: string): void;
}

/** The emulator's view of the run's jobs (REST `actions/list-jobs-for-workflow-run`). */
export interface JobsRecorder {
  addJob(runId: number, job: { name: string; attempt: number; status: 'queued' | 'waiting' | 'in_progress' | 'completed'; conclusion?: string | null }): number;
  updateJob(
    jobId: number,
    patch: { status?: string; conclusion?: string | null; steps?: Array<{ name: string; conclusion: string }>; runnerName?: string },
  ): void;
  setAnnotations(jobId: number, annotations: Annotation[]): void;
  updateRun(runId: number, patch: { status?: string; conclusion?: string | null; attempt?: number }): void;
}

export interface EnvironmentRule {
  reviewers: string[];
}

export interface Review {
  environment: string;
  state: 'approved' | 'rejected';
  reviewer: string;
  comment: string;
}

/** A wake-up that is never lost: a notify before the wait is remembered. */
export class Signal {
  private resolver: (() => void) | undefined;
  private pending = false;
  notify(): void {
    if (this.resolver) {
      const r = this.resolver;
      this.resolver = undefined;
      r();
    } else this.pending = true;
  }
  async wait(): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return;
    }
    await new Promise<void>((r) => (this.resolver = r));
  }
}

export class Semaphore {
  private active = 0;
  private readonly queue: Array<() => void> = [];
  constructor(private readonly size: number) {}
  async acquire(): Promise<() => void> {
    if (this.active >= this.size) await new Promise<void>((r) => this.queue.push(r));
    this.active++;
    return () => {
      this.active--;
      this.queue.shift()?.();
    };
  }
}

interface LiveLeg {
  controller: AbortController;
  reason?: 'cancel' | 'timeout' | 'runner-lost';
  name: string;
  emuJobId: number;
}

export interface AttemptState {
  number: number;
  kind: 'first' | 'rerun-failed' | 'rerun-all';
  nodes: Map<string, JobNode>;
  cancelled: boolean;
  startupFailure?: string;
  done: Promise<void>;
}

export interface RunSummary {
  id: number;
  attempt: number;
  conclusion: Conclusion;
  startupFailure?: string;
  jobs: Array<{
    key: string;
    name: string;
    conclusion: Conclusion;
    attempt: number;
    outputs: Record<string, string>;
    log: string;
    summary: string;
    annotations: Annotation[];
    steps: LegResult['steps'];
  }>;
  outputs: Record<string, string>;
}

export class WorkflowRun {
  readonly attempts: AttemptState[] = [];
  private readonly live = new Set<LiveLeg>();
  private readonly waiting = new Map<string, Array<(r: Review) => void>>();
  readonly reviews: Review[] = [];
  private readonly changed = new Signal();

  constructor(
    readonly facts: RunFacts,
    private readonly services: RunServices,
    readonly inputs: Record<string, Json>,
  ) {}

  get id(): number {
    return this.facts.id;
  }

  get current(): AttemptState {
    return this.attempts[this.attempts.length - 1]!;
  }

  /** Starts attempt 1. */
  start(): AttemptState {
    const scope: Scope = {
      displayPrefix: '',
      keyPrefix: '',
      workflow: this.facts.entry,
      inputs: this.inputs,
      secrets: { ...this.services.secrets },
      inherited: this.defaultPermissions,
    };
    return this.launch('first', nodesOf(scope));
  }

  defaultPermissions: Permissions = { contents: 'read', packages: 'read' };

  private assertEnded(): void {
    if (this.summaryStatus() !== 'completed') throw new Error(`This workflow run (${this.id}) is still in progress; it can be re-run once it has completed.`);
  }

  private ended = new Set<number>();

  summaryStatus(): 'in_progress' | 'completed' {
    return this.ended.has(this.current.number) ? 'completed' : 'in_progress';
  }

  rerunFailed(): AttemptState {
    this.assertEnded();
    const prev = this.current;
    return this.launch('rerun-failed', nextAttemptNodes(prev.nodes));
  }

  rerunAll(): AttemptState {
    this.assertEnded();
    const scope: Scope = {
      displayPrefix: '',
      keyPrefix: '',
      workflow: this.facts.entry,
      inputs: this.inputs,
      secrets: { ...this.services.secrets },
      inherited: this.defaultPermissions,
    };
    return this.launch('rerun-all', nodesOf(scope));
  }

  /** A run that never started (replaced in its concurrency group while waiting). */
  cancelBeforeStart(reason: string): void {
    this.attempts.push({ number: 1, kind: 'first', nodes: new Map(), cancelled: true, startupFailure: reason, done: Promise.resolve() });
    this.ended.add(1);
    this.services.jobs.updateRun(this.id, { status: 'completed', conclusion: 'cancelled' });
  }

  cancel(): void {
    // A run still waiting for its concurrency group leaves the queue (and ends cancelled).
    if (!this.attempts.length) return this.services.concurrency.withdraw(this.id, 'The run was canceled.');
    this.current.cancelled = true;
    for (const leg of this.live) {
      leg.reason ??= 'cancel';
      leg.controller.abort();
    }
    for (const [, resolvers] of this.waiting) for (const r of resolvers) r({ environment: '', state: 'rejected', reviewer: '', comment: 'cancelled' });
    this.waiting.clear();
    this.services.concurrency.withdraw(this.id, 'The run was canceled.');
    this.changed.notify();
  }

  /** A runner lost mid-job: the job ends failed at once, no post steps, no outputs. */
  killJob(name: string): boolean {
    for (const leg of this.live) {
      if (leg.name === name) {
        leg.reason = 'runner-lost';
        leg.controller.abort();
        return true;
      }
    }
    return false;
  }

  runningJobs(): string[] {
    return [...this.live].map((l) => l.name);
  }

  waitingEnvironments(): string[] {
    return [...this.waiting.keys()];
  }

  review(r: Review): number {
    const resolvers = this.waiting.get(r.environment) ?? [];
    this.waiting.delete(r.environment);
    this.reviews.push(r);
    for (const resolve of resolvers) resolve(r);
    return resolvers.length;
  }

  private launch(kind: AttemptState['kind'], nodes: Map<string, JobNode>): AttemptState {
    const number = this.attempts.length + 1;
    const attempt: AttemptState = { number, kind, nodes, cancelled: false, done: Promise.resolve() };
    this.facts.attempt = number;
    this.attempts.push(attempt);
    this.services.jobs.updateRun(this.id, { status: 'in_progress', conclusion: null, attempt: number });
    attempt.done = this.drive(attempt).finally(() => this.ended.add(number));
    return attempt;
  }

  private async drive(attempt: AttemptState): Promise<void> {
    const problem = await this.validateStartup(attempt).catch((err: Error) => err.message);
    if (problem) {
      attempt.startupFailure = problem;
      this.services.jobs.updateRun(this.id, { status: 'completed', conclusion: 'failure' });
      return;
    }
    const running = new Set<Promise<void>>();
    for (;;) {
      const ready = [...attempt.nodes.values()].filter((n) => n.status === 'pending' && n.needs.every((k) => attempt.nodes.get(k)?.status === 'done'));
      for (const node of ready) {
        node.status = 'running';
        const p = this.startNode(attempt, node)
          .catch((err: Error) => this.failNode(attempt, node, err.message))
          .finally(() => {
            running.delete(p);
            this.changed.notify();
          });
        running.add(p);
      }
      if (!ready.length && !running.size) break;
      if (!ready.length) await this.changed.wait();
    }
    const top = [...attempt.nodes.values()].filter((n) => !n.scope.caller);
    const conclusion = attempt.cancelled ? 'cancelled' : top.some((n) => n.result === 'failure' || n.result === 'cancelled') ? 'failure' : 'success';
    this.services.jobs.updateRun(this.id, { status: 'completed', conclusion });
  }

  /** GitHub refuses some runs before any job starts: a bad call, permissions a called workflow asks for beyond the caller's. */
  private async validateStartup(attempt: AttemptState): Promise<string | undefined> {
    const problems: string[] = [];
    const check = async (wf: LoadedWorkflow, allowed: Permissions, depth: number): Promise<void> => {
      for (const job of wf.jobs) {
        const own = readPermissions(prop(job.raw, 'permissions')) ?? readPermissions(prop(wf.root, 'permissions'));
        if (depth > 0 && own) problems.push(...exceeding(own, allowed, `The nested job '${job.id}'`));
        if (job.model.type === 'reusableWorkflowJob') {
          const called = await this.services.loadCalled(job.model.ref.value, wf);
          problems.push(...callProblems(called, job.raw, job.model['inherit-secrets'] ?? false));
          const callerPerms = effectivePermissions(job.raw, wf.root, allowed);
          await check(called, callerPerms, depth + 1);
        }
      }
    };
    if (attempt.kind !== 'rerun-failed') await check(this.facts.entry, this.defaultPermissions, 0);
    return problems.length ? `The workflow is not valid. ${this.facts.entry.origin.path}: ${[...new Set(problems)].join(' ')}` : undefined;
  }

  private failNode(attempt: AttemptState, node: JobNode, message: string): void {
    node.status = 'done';
    node.result = 'failure';
    const name = `${node.scope.displayPrefix}${node.def.id}`;
    const id = this.services.jobs.addJob(this.id, { name, attempt: attempt.number, status: 'completed', conclusion: 'failure' });
    this.services.jobs.setAnnotations(id, [{ level: 'error', message }]);
    node.placeholderJobId = id;
  }

  private statusFor(attempt: AttemptState, node: JobNode): EvalEnv['status'] {
    const direct = node.needs.map((k) => attempt.nodes.get(k)!);
    const all = ancestors(attempt.nodes, node.key);
    const failed = all.some((n) => n.result === 'failure');
    const ok = !failed && direct.every((n) => n.result === 'success') && !all.some((n) => n.result === 'cancelled');
    return { status: ok ? 'success' : 'failure', cancelled: attempt.cancelled };
  }

  private needsContext(attempt: AttemptState, node: JobNode): Record<string, Json> {
    const out: Record<string, Json> = {};
    for (const k of node.needs) {
      const n = attempt.nodes.get(k)!;
      out[n.def.id] = { result: n.result ?? 'skipped', outputs: n.outputs };
    }
    return out;
  }

  private baseEnv(attempt: AttemptState, node: JobNode, extra: Partial<Record<string, Json>> = {}): EvalEnv {
    return {
      status: this.statusFor(attempt, node),
      contexts: {
        github: githubContextOf({
          facts: { ...this.facts, attempt: attempt.number },
          host: this.services.host,
          job: node.def.id,
          token: '',
          workspace: '',
          eventPath: '',
        }),
        inputs: node.scope.inputs,
        vars: this.services.vars,
        secrets: node.scope.secrets,
        needs: this.needsContext(attempt, node),
        env: {},
        ...(extra as Record<string, Json>),
      },
    };
  }

  private async startNode(attempt: AttemptState, node: JobNode): Promise<void> {
    if (node.carried) {
      node.status = 'done';
      return;
    }
    const env = this.baseEnv(attempt, node);
    if (attempt.cancelled || !condition(node.def.model.if, env)) return this.skipNode(attempt, node);
    if (node.def.model.type === 'reusableWorkflowJob') return this.runCaller(attempt, node, env);
    return this.runMatrix(attempt, node, env);
  }

  private skipNode(attempt: AttemptState, node: JobNode): void {
    node.status = 'done';
    node.result = 'skipped';
    const nameToken = prop(node.def.raw, 'name');
    const name = `${node.scope.displayPrefix}${nameToken && isString(nameToken) ? nameToken.value : node.def.id}`;
    node.placeholderJobId = this.services.jobs.addJob(this.id, { name, attempt: attempt.number, status: 'completed', conclusion: 'skipped' });
  }

  /** A job that calls a reusable workflow: its jobs join the graph; its result and outputs come from them. */
  private async runCaller(attempt: AttemptState, node: JobNode, env: EvalEnv): Promise<void> {
    if (node.def.model.type !== 'reusableWorkflowJob') return;
    if (!node.childScope) {
      const called = await this.services.loadCalled(node.def.model.ref.value, node.scope.workflow);
      const where = `${node.scope.workflow.origin.path} (job '${node.def.id}')`;
      const calleeEnv: EvalEnv = { contexts: { github: env.contexts.github!, inputs: {}, vars: this.services.vars } };
      const inherit = node.def.model['inherit-secrets'] ?? false;
      const nameToken = prop(node.def.raw, 'name');
      const label = nameToken ? evaluateString(nameToken, env) : node.def.id;
      // Values of the wrong type are known only now: they fail this call (undeclared or missing ones failed the run at start).
      const inputs = callInputs(called, prop(node.def.raw, 'with'), env, calleeEnv, where);
      const secrets = callSecrets(called, prop(node.def.raw, 'secrets'), inherit, node.scope.secrets, env);
      const scope: Scope = {
        displayPrefix: `${node.scope.displayPrefix}${label} / `,
        keyPrefix: `${node.key}/`,
        workflow: called,
        inputs,
        secrets,
        inherited: effectivePermissions(node.def.raw, node.scope.workflow.root, node.scope.inherited),
        caller: node.key,
      };
      // The called workflow's own `concurrency` is taken by this job, in this run (concurrency.ts).
      const spec = readConcurrency(prop(called.root, 'concurrency'), { contexts: { github: env.contexts.github!, inputs, vars: this.services.vars } });
      if (spec) {
        const entered = await this.enterGroup(node, spec);
        if (typeof entered === 'string') {
          node.status = 'done';
          node.result = 'cancelled';
          const id = this.services.jobs.addJob(this.id, { name: label, attempt: attempt.number, status: 'completed', conclusion: 'cancelled' });
          this.services.jobs.setAnnotations(id, [{ level: 'error', message: entered }]);
          node.placeholderJobId = id;
          return;
        }
        node.releaseGroup = entered;
      }
      node.childScope = scope;
      const children = nodesOf(scope);
      node.children = [...children.keys()];
      for (const [k, v] of children) attempt.nodes.set(k, v);
      this.changed.notify();
    }
    await this.waitFor(attempt, node.children ?? []);
    const kids = (node.children ?? []).map((k) => attempt.nodes.get(k)!);
    node.result = kids.some((k) => k.result === 'failure') ? 'failure' : kids.some((k) => k.result === 'cancelled') ? 'cancelled' : 'success';
    const jobs = Object.fromEntries(kids.map((k) => [k.def.id, { result: k.result ?? 'skipped', outputs: k.outputs }]));
    node.outputs = callOutputs(node.childScope!.workflow, { contexts: { jobs, inputs: node.childScope!.inputs, github: env.contexts.github! } });
    node.status = 'done';
    node.releaseGroup?.();
    node.releaseGroup = undefined;
  }

  /** Waits for the called workflow's group: the release to call when its jobs are done, or why the call was dropped. */
  private enterGroup(node: JobNode, spec: NonNullable<ReturnType<typeof readConcurrency>>): Promise<(() => void) | string> {
    return new Promise((resolve) => {
      const holder = { runId: this.id, topLevel: false, label: node.def.id, cancel: () => this.cancel() };
      this.services.concurrency.request(
        spec,
        holder,
        (release) => resolve(release),
        (reason) => resolve(reason),
      );
    });
  }

  private async waitFor(attempt: AttemptState, keys: string[]): Promise<void> {
    const done = new Signal();
    while (keys.some((k) => attempt.nodes.get(k)?.status !== 'done')) {
      // The called jobs finish through the drive loop; poll cheaply rather than thread a second signal through it.
      setTimeout(() => done.notify(), 20);
      await done.wait();
    }
  }

  /** A job with steps: its matrix legs, each on its own runner. */
  private async runMatrix(attempt: AttemptState, node: JobNode, env: EvalEnv): Promise<void> {
    const strategy = prop(node.def.raw, 'strategy');
    const where = `'${node.def.id}'. ${node.scope.workflow.origin.repo}/${node.scope.workflow.origin.path}@${node.scope.workflow.origin.ref}`;
    let combos: Array<Record<string, Json>>;
    try {
      const matrixToken = prop(strategy, 'matrix');
      combos = matrixToken ? expandMatrix(evaluateToken(matrixToken, env), where) : [{}];
    } catch (err) {
      const message = err instanceof MatrixError ? err.message : `Error when evaluating 'strategy' for job ${where}: ${(err as Error).message}`;
      return this.failNode(attempt, node, message);
    }
    const failFastToken = prop(strategy, 'fail-fast');
    const failFast = failFastToken === undefined ? true : truthy(evaluateToken(failFastToken, env));
    const maxParallelValue = evaluateToken(prop(strategy, 'max-parallel'), env);
    const maxParallel = typeof maxParallelValue === 'number' && maxParallelValue > 0 ? maxParallelValue : Infinity;
    const carried = new Map(node.legs.filter((l) => l.carried).map((l) => [JSON.stringify(l.matrix), l]));
    const legs: Leg[] = combos.map((matrix, index) => carried.get(JSON.stringify(matrix)) ?? { index, name: '', matrix });
    node.legs = legs;
    const pending = legs.filter((l) => !l.carried);
    const gate = new Semaphore(Number.isFinite(maxParallel) ? maxParallel : pending.length || 1);
    const group = new Set<LiveLeg>();
    let failedFast = false;
    // Every leg is listed, queued, as soon as the matrix expands; max-parallel only holds back when they start.
    for (const leg of pending) {
      leg.name = this.legDisplayName(node, leg, combos.length, env);
      leg.attempt = attempt.number;
      leg.emuJobId = this.services.jobs.addJob(this.id, { name: leg.name, attempt: attempt.number, status: 'queued' });
    }
    await Promise.all(
      pending.map(async (leg) => {
        const release = await gate.acquire();
        try {
          if (failedFast || attempt.cancelled) {
            leg.conclusion = 'cancelled';
            this.services.jobs.updateJob(leg.emuJobId!, { status: 'completed', conclusion: 'cancelled' });
            return;
          }
          await this.runOneLeg(attempt, node, leg, combos.length, env, group);
          const coe = this.continueOnError(node, leg, env);
          if (leg.conclusion === 'failure' && !coe && failFast) {
            failedFast = true;
            for (const l of group) {
              l.reason ??= 'cancel';
              l.controller.abort();
            }
          }
        } finally {
          release();
        }
      }),
    );
    this.concludeNode(node, env);
  }

  private continueOnError(node: JobNode, leg: Leg, env: EvalEnv): boolean {
    const token = prop(node.def.raw, 'continue-on-error');
    if (!token) return false;
    return truthy(evaluateToken(token, { ...env, contexts: { ...env.contexts, matrix: leg.matrix } }));
  }

  private concludeNode(node: JobNode, env: EvalEnv): void {
    const effective = node.legs.map((l) => (l.conclusion === 'failure' && this.continueOnError(node, l, env) ? 'success' : l.conclusion));
    node.result = effective.some((c) => c === 'failure') ? 'failure' : effective.some((c) => c === 'cancelled') ? 'cancelled' : 'success';
    // Matrix legs write the same outputs: the last leg to finish wins, as on GitHub.
    for (const leg of node.legs) if (!leg.carried && leg.result) Object.assign(node.outputs, leg.result.outputs);
    node.status = 'done';
  }

  private legDisplayName(node: JobNode, leg: Leg, legCount: number, env: EvalEnv): string {
    const nameToken = prop(node.def.raw, 'name');
    const legEnv = { ...env, contexts: { ...env.contexts, matrix: leg.matrix, strategy: this.strategyContext(node, leg, legCount, env) } };
    const base = nameToken ? evaluateString(nameToken, legEnv) : node.def.id;
    const hasMatrix = Object.keys(leg.matrix).length > 0;
    return `${node.scope.displayPrefix}${!nameToken && hasMatrix ? legName(base, leg.matrix) : base}`;
  }

  private strategyContext(node: JobNode, leg: Leg, total: number, env: EvalEnv): Json {
    const strategy = prop(node.def.raw, 'strategy');
    const ff = prop(strategy, 'fail-fast');
    const mp = evaluateToken(prop(strategy, 'max-parallel'), env);
    return {
      'fail-fast': ff ? truthy(evaluateToken(ff, env)) : true,
      'job-index': leg.index,
      'job-total': total,
      'max-parallel': typeof mp === 'number' ? mp : total,
    };
  }

  private async runOneLeg(attempt: AttemptState, node: JobNode, leg: Leg, legCount: number, env: EvalEnv, group: Set<LiveLeg>): Promise<void> {
    const legEnv = { ...env, contexts: { ...env.contexts, matrix: leg.matrix, strategy: this.strategyContext(node, leg, legCount, env) } };
    const emuJobId = leg.emuJobId!;
    const environment = this.environmentName(node, legEnv);
    if (environment) {
      const review = await this.awaitApproval(environment, emuJobId);
      if (review && review.state !== 'approved') {
        leg.conclusion = attempt.cancelled ? 'cancelled' : 'failure';
        this.services.jobs.updateJob(emuJobId, { status: 'completed', conclusion: leg.conclusion });
        const why = attempt.cancelled
          ? 'The run was canceled.'
          : review.comment === 'timeout'
            ? `The deployment to environment '${environment}' waited longer than 30 days for approval.`
            : `Deployment to environment '${environment}' was rejected by ${review.reviewer}${review.comment ? `: ${review.comment}` : ''}`;
        this.services.jobs.setAnnotations(emuJobId, [{ level: 'error', message: why }]);
        return;
      }
    }
    const release = await this.services.slots.acquire();
    const live: LiveLeg = { controller: new AbortController(), name: leg.name, emuJobId };
    this.live.add(live);
    group.add(live);
    const timeoutMinutes = this.timeoutMinutes(node, legEnv);
    const clock = this.services.host.clock;
    const deadline = clock.now() + timeoutMinutes * 60_000;
    const watchdog = setInterval(() => {
      if (clock.now() > deadline && !live.controller.signal.aborted) {
        live.reason = 'timeout';
        live.controller.abort();
      }
    }, 25);
    const permissions = effectivePermissions(node.def.raw, node.scope.workflow.root, node.scope.inherited);
    const token = this.services.mintToken(this.facts.repo, permissions);
    const runnerName = `GitHub Actions ${emuJobId % 1000}`;
    try {
      if (attempt.cancelled) {
        live.reason = 'cancel';
        live.controller.abort();
      }
      this.services.jobs.updateJob(emuJobId, { status: 'in_progress', runnerName });
      const dir = join(this.services.workDir, `run-${this.id}`, `attempt-${attempt.number}`, `job-${emuJobId}`);
      mkdirSync(dir, { recursive: true });
      const result = await runLeg(
        {
          facts: { ...this.facts, attempt: attempt.number },
          workflow: node.scope.workflow,
          def: node.def,
          name: leg.name,
          checkRunId: emuJobId,
          runnerName,
          dir,
          contexts: {
            inputs: node.scope.inputs,
            secrets: { ...node.scope.secrets, GITHUB_TOKEN: token },
            vars: this.services.vars,
            needs: this.needsContext(attempt, node),
            strategy: legEnv.contexts.strategy!,
            matrix: leg.matrix,
          },
          permissions,
          token,
          runtime: this.services.runtimeFor({ runId: this.id, attempt: attempt.number, jobId: emuJobId, name: leg.name }),
          timeoutMinutes,
          stop: live.controller.signal,
          stopReason: () => live.reason,
          onLog: (line) => this.services.onLog?.(leg.name, line),
        },
        this.services.host,
      );
      leg.result = result;
      leg.conclusion = result.conclusion;
      const conclusion = result.stoppedBy === 'timeout' ? this.services.timeoutConclusion : result.conclusion;
      this.services.jobs.setAnnotations(emuJobId, result.annotations);
      this.services.jobs.updateJob(emuJobId, { status: 'completed', conclusion, steps: result.steps.map((s) => ({ name: s.name, conclusion: s.conclusion })) });
    } finally {
      clearInterval(watchdog);
      this.services.revokeToken(token);
      this.services.endJob(emuJobId);
      this.live.delete(live);
      group.delete(live);
      release();
    }
  }

  private timeoutMinutes(node: JobNode, env: EvalEnv): number {
    const v = evaluateToken(prop(node.def.raw, 'timeout-minutes'), env);
    const n = typeof v === 'number' ? v : Number(v);
    return Number.isFinite(n) && n > 0 ? n : 360;
  }

  private environmentName(node: JobNode, env: EvalEnv): string {
    const token = prop(node.def.raw, 'environment');
    if (!token) return '';
    const v = evaluateToken(token, env);
    if (typeof v === 'string') return v;
    if (v && typeof v === 'object' && !Array.isArray(v)) return asString((v as Record<string, Json>).name ?? '');
    return '';
  }

  /** Waits for a reviewer when the environment has required reviewers (a missing environment has none). */
  private async awaitApproval(environment: string, emuJobId: number): Promise<Review | undefined> {
    const rule = this.services.environments.get(`${this.facts.repo}:${environment}`);
    if (!rule) this.services.createEnvironment(environment);
    if (!rule || rule.reviewers.length === 0) return undefined;
    this.services.jobs.updateJob(emuJobId, { status: 'waiting' });
    const clock = this.services.host.clock;
    const deadline = clock.now() + 30 * 24 * 60 * 60_000;
    return new Promise<Review>((resolve) => {
      const list = this.waiting.get(environment) ?? [];
      const timer = setInterval(() => {
        if (clock.now() > deadline) {
          clearInterval(timer);
          this.waiting.set(
            environment,
            (this.waiting.get(environment) ?? []).filter((r) => r !== done),
          );
          resolve({ environment, state: 'rejected', reviewer: '', comment: 'timeout' });
        }
      }, 25);
      const done = (r: Review) => {
        clearInterval(timer);
        resolve(r);
      };
      list.push(done);
      this.waiting.set(environment, list);
    });
  }

  summary(): RunSummary {
    const a = this.current;
    const jobs: RunSummary['jobs'] = [];
    for (const n of a.nodes.values()) {
      for (const l of n.legs) {
        jobs.push({
          key: n.key,
          name: l.name,
          conclusion: l.conclusion ?? 'skipped',
          attempt: l.attempt ?? a.number,
          outputs: l.result?.outputs ?? {},
          log: l.result?.log ?? '',
          summary: l.result?.summary ?? '',
          annotations: l.result?.annotations ?? [],
          steps: l.result?.steps ?? [],
        });
      }
    }
    const top = [...a.nodes.values()].filter((n) => !n.scope.caller);
    const conclusion: Conclusion = a.cancelled
      ? 'cancelled'
      : a.startupFailure
        ? 'failure'
        : top.some((n) => n.result === 'failure' || n.result === 'cancelled')
          ? 'failure'
          : 'success';
    const outputs = Object.assign({}, ...top.map((n) => n.outputs)) as Record<string, string>;
    return { id: this.id, attempt: a.number, conclusion, ...(a.startupFailure ? { startupFailure: a.startupFailure } : {}), jobs, outputs };
  }
}

/** The job nodes of one workflow instance. */
export function nodesOf(scope: Scope): Map<string, JobNode> {
  const out = new Map<string, JobNode>();
  for (const def of scope.workflow.jobs) {
    const key = `${scope.keyPrefix}${def.id}`;
    out.set(key, { key, def, scope, needs: def.needs.map((n) => `${scope.keyPrefix}${n}`), status: 'pending', outputs: {}, legs: [] });
  }
  return out;
}
