/**
 * One job on one runner (one matrix leg): its own directory, HOME and
 * workspace; steps run one after another as processes; the environment files
 * and workflow commands are read back after each step; post steps run at the
 * end in reverse order; the job's outputs are evaluated last. Everything a
 * step prints goes through the masker before it reaches the log.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { isBasicExpression, isString } from '@actions/workflow-parser';
import type { TemplateToken } from '@actions/workflow-parser/templates/tokens/template-token';
import { Masker, parseCommand, parseKeyValueFile, STEP_SUMMARY_LIMIT, type WorkflowCommand } from './commands.js';
import { condition, evaluateString, evaluateStrings, evaluateToken, ExpressionFailure, type EvalEnv, type Json } from './expressions.js';
import type { Builtin, BuiltinStep } from './builtin/types.js';
import { endJobProcesses, runProcess } from './process.js';
import type { Annotation, Conclusion, LegResult, Permissions, RunFacts, RunnerClock, StepRecord } from './types.js';
import { entries, items, prop, type JobDef, type LoadedAction, type LoadedWorkflow } from './workflow.js';

/** An action ready to run: a JavaScript action (node), or a composite one. */
export type ResolvedAction =
  | { kind: 'node'; ref: string; dir: string; loaded: LoadedAction; using: string; main: string; pre?: string; post?: string; postIf?: string }
  | { kind: 'composite'; ref: string; dir: string; loaded: LoadedAction }
  | { kind: 'builtin'; ref: string; dir: string; loaded: LoadedAction; using: string; impl: Builtin };

/** What the runner gives every job: URLs, the clock, action resolution. */
export interface RunnerHost {
  serverUrl: string;
  apiUrl: string;
  graphqlUrl: string;
  clock: RunnerClock;
  /** Resolves `uses:` (`./path` against the workspace, `owner/repo@ref` against the emulator or the emulated actions). */
  resolveAction(uses: string, job: LegContext): Promise<ResolvedAction>;
  /** Extra environment for every step (test knobs such as FLEET_GITHUB_PACING_MS); never secrets. */
  extraEnv: Record<string, string>;
}

export interface LegSpec {
  facts: RunFacts;
  /** The file that defines this job (a called workflow for a nested job). */
  workflow: LoadedWorkflow;
  def: JobDef;
  name: string;
  /** The job's id in the emulator (also its check run id). */
  checkRunId: number;
  runnerName: string;
  dir: string;
  contexts: { inputs: Json; secrets: Record<string, string>; vars: Record<string, string>; needs: Json; strategy: Json; matrix: Json };
  permissions: Permissions;
  token: string;
  /** ACTIONS_RUNTIME_TOKEN and the service URLs: JavaScript actions get them, `run:` steps do not. */
  runtime: Record<string, string>;
  timeoutMinutes: number;
  stop: AbortSignal;
  /** Why `stop` fired, read after it did. */
  stopReason(): 'cancel' | 'timeout' | 'runner-lost' | undefined;
  onLog?(line: string): void;
}

/** The live state of a running job, shared by its steps. */
export interface LegContext {
  spec: LegSpec;
  host: RunnerHost;
  workspace: string;
  temp: string;
  home: string;
  masker: Masker;
  log: string[];
  annotations: Annotation[];
  summaries: string[];
  steps: Record<string, { outputs: Record<string, string>; outcome: Conclusion; conclusion: Conclusion }>;
  records: StepRecord[];
  status: 'success' | 'failure';
  addedEnv: Record<string, string>;
  addedPath: string[];
  /** `defaults.run` of the job (`shell`, `working-directory`), evaluated at its start. */
  runDefaults: Record<string, string>;
  groups: Set<number>;
  posts: Array<() => Promise<void>>;
  node20: Set<string>;
  /** RUNNER_TRACKING_ID: how the runner finds the processes this job left behind. */
  trackingId: string;
}

const HOST_PATH = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';

export function logLine(ctx: LegContext, line: string): void {
  const masked = ctx.masker.mask(line);
  ctx.log.push(masked);
  ctx.spec.onLog?.(masked);
}

function annotate(ctx: LegContext, a: Annotation): void {
  const masked = { ...a, message: ctx.masker.mask(a.message) };
  ctx.annotations.push(masked);
  logLine(ctx, `##[${a.level}]${a.message}`);
}

function stopped(ctx: LegContext): boolean {
  return ctx.spec.stop.aborted;
}

/** The `github` context of this job. */
export function githubContext(ctx: LegContext, extra: Record<string, Json> = {}): Record<string, Json> {
  return githubContextOf(
    {
      facts: ctx.spec.facts,
      host: ctx.host,
      job: ctx.spec.def.id,
      token: ctx.spec.token,
      workspace: ctx.workspace,
      eventPath: join(ctx.spec.dir, 'event.json'),
    },
    extra,
  );
}

/** The `github` context from the run's facts (job-level `if:` and `name:` see it before any runner exists). */
export function githubContextOf(
  c: { facts: RunFacts; host: Pick<RunnerHost, 'apiUrl' | 'graphqlUrl' | 'serverUrl'>; job: string; token: string; workspace: string; eventPath: string },
  extra: Record<string, Json> = {},
): Record<string, Json> {
  const f = c.facts;
  const [owner] = f.repo.split('/');
  const entry = f.entry.origin;
  return {
    action: '',
    action_path: '',
    action_ref: '',
    action_repository: '',
    actor: f.actor,
    actor_id: '1',
    api_url: c.host.apiUrl,
    base_ref: '',
    env: '',
    event: f.eventPayload,
    event_name: f.event,
    event_path: c.eventPath,
    graphql_url: c.host.graphqlUrl,
    head_ref: '',
    job: c.job,
    path: '',
    ref: f.ref,
    ref_name: f.ref.replace(/^refs\/(heads|tags)\//, ''),
    ref_protected: false,
    ref_type: f.ref.startsWith('refs/tags/') ? 'tag' : 'branch',
    repository: f.repo,
    repository_id: String(f.repoId),
    repository_owner: owner ?? '',
    repository_owner_id: String(f.ownerId),
    repositoryUrl: `git://${new URL(c.host.serverUrl).host}/${f.repo}.git`,
    retention_days: String(f.retentionDays ?? 90),
    run_attempt: String(f.attempt),
    run_id: String(f.id),
    run_number: String(f.number),
    secret_source: 'Actions',
    server_url: c.host.serverUrl,
    sha: f.sha,
    token: c.token,
    triggering_actor: f.actor,
    workflow: f.entry.name,
    workflow_ref: `${entry.repo}/${entry.path}@${entry.ref}`,
    workflow_sha: entry.sha,
    workspace: c.workspace,
    ...extra,
  };
}

/** The `job` context, with the workflow identity GitHub added in 2026 (`job.workflow_*`, absent on GHES). */
function jobContext(ctx: LegContext, status: string): Record<string, Json> {
  const o = ctx.spec.workflow.origin;
  return {
    status,
    check_run_id: ctx.spec.checkRunId,
    container: { id: '', network: '' },
    services: {},
    workflow_ref: `${o.repo}/${o.path}@${o.ref}`,
    workflow_sha: o.sha,
    workflow_repository: o.repo,
    workflow_file_path: o.path,
  };
}

function runnerContext(ctx: LegContext): Record<string, Json> {
  return {
    os: 'Linux',
    arch: 'X64',
    name: ctx.spec.runnerName,
    temp: ctx.temp,
    tool_cache: join(ctx.spec.dir, 'toolcache'),
    environment: 'github-hosted',
    debug: '',
  };
}

/** Workflow `env:` then job `env:` (each may use expressions), as strings. */
function jobEnv(ctx: LegContext, base: EvalEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const source of [prop(ctx.spec.workflow.root, 'env'), prop(ctx.spec.def.raw, 'env')]) {
    Object.assign(out, evaluateStrings(source, { ...base, contexts: { ...base.contexts, env: { ...out } } }));
  }
  return out;
}

/** `defaults.run` (job keys over workflow keys), evaluated once at job start with the job's env, as JobExtension.cs does. */
function runDefaults(ctx: LegContext, base: EvalEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const source of [prop(ctx.spec.workflow.root, 'defaults'), prop(ctx.spec.def.raw, 'defaults')]) {
    for (const [k, v] of Object.entries(evaluateStrings(prop(source, 'run'), base))) if (v) out[k] = v;
  }
  return out;
}

export function evalEnv(ctx: LegContext, env: Record<string, string>, extraGithub: Record<string, Json> = {}): EvalEnv {
  const s = ctx.spec.contexts;
  return {
    workspace: ctx.workspace,
    status: { status: ctx.status, cancelled: stopped(ctx) && ctx.spec.stopReason() !== 'runner-lost' },
    contexts: {
      github: githubContext(ctx, extraGithub),
      env,
      vars: s.vars,
      secrets: s.secrets,
      inputs: s.inputs,
      needs: s.needs,
      strategy: s.strategy,
      matrix: s.matrix,
      steps: ctx.steps,
      job: jobContext(ctx, stopped(ctx) ? 'cancelled' : ctx.status),
      runner: runnerContext(ctx),
    },
  };
}

/** The variables every step's process gets from the runner (not the `env` context). */
export function runnerVariables(
  ctx: LegContext,
  files: StepFiles,
  action?: { path?: string; repository?: string; ref?: string; name: string },
): Record<string, string> {
  const f = ctx.spec.facts;
  const g = githubContext(ctx);
  const vars: Record<string, string> = {
    CI: 'true',
    HOME: ctx.home,
    LANG: 'C.UTF-8',
    GITHUB_ACTIONS: 'true',
    GITHUB_ACTION: action?.name ?? '',
    GITHUB_ACTOR: f.actor,
    GITHUB_ACTOR_ID: '1',
    GITHUB_API_URL: ctx.host.apiUrl,
    GITHUB_BASE_REF: '',
    GITHUB_EVENT_NAME: f.event,
    GITHUB_EVENT_PATH: String(g.event_path),
    GITHUB_GRAPHQL_URL: ctx.host.graphqlUrl,
    GITHUB_HEAD_REF: '',
    GITHUB_JOB: ctx.spec.def.id,
    GITHUB_REF: f.ref,
    GITHUB_REF_NAME: String(g.ref_name),
    GITHUB_REF_PROTECTED: 'false',
    GITHUB_REF_TYPE: String(g.ref_type),
    GITHUB_REPOSITORY: f.repo,
    GITHUB_REPOSITORY_ID: String(f.repoId),
    GITHUB_REPOSITORY_OWNER: String(g.repository_owner),
    GITHUB_REPOSITORY_OWNER_ID: String(f.ownerId),
    GITHUB_RETENTION_DAYS: String(f.retentionDays ?? 90),
    GITHUB_RUN_ATTEMPT: String(f.attempt),
    GITHUB_RUN_ID: String(f.id),
    GITHUB_RUN_NUMBER: String(f.number),
    GITHUB_SERVER_URL: ctx.host.serverUrl,
    GITHUB_SHA: f.sha,
    GITHUB_TRIGGERING_ACTOR: f.actor,
    GITHUB_WORKFLOW: f.entry.name,
    GITHUB_WORKFLOW_REF: String(g.workflow_ref),
    GITHUB_WORKFLOW_SHA: String(g.workflow_sha),
    GITHUB_WORKSPACE: ctx.workspace,
    GITHUB_OUTPUT: files.output,
    GITHUB_ENV: files.env,
    GITHUB_PATH: files.path,
    GITHUB_STATE: files.state,
    GITHUB_STEP_SUMMARY: files.summary,
    RUNNER_ARCH: 'X64',
    RUNNER_ENVIRONMENT: 'github-hosted',
    RUNNER_NAME: ctx.spec.runnerName,
    RUNNER_OS: 'Linux',
    RUNNER_TEMP: ctx.temp,
    RUNNER_TOOL_CACHE: join(ctx.spec.dir, 'toolcache'),
    RUNNER_TRACKING_ID: ctx.trackingId,
    RUNNER_WORKSPACE: dirname(ctx.workspace),
    // Emulation only: how far the test has advanced the runner's clock, for processes that sign timestamps (App JWTs).
    RUNNER_CLOCK_OFFSET_MS: String(ctx.host.clock.now() - Date.now()),
  };
  if (action?.path) vars.GITHUB_ACTION_PATH = action.path;
  if (action?.repository) vars.GITHUB_ACTION_REPOSITORY = action.repository;
  if (action?.ref) vars.GITHUB_ACTION_REF = action.ref;
  return vars;
}

export interface StepFiles {
  output: string;
  env: string;
  path: string;
  state: string;
  summary: string;
}

function newStepFiles(ctx: LegContext): StepFiles {
  const dir = join(ctx.temp, '_runner_file_commands', randomUUID());
  mkdirSync(dir, { recursive: true });
  const files = {
    output: join(dir, 'set_output'),
    env: join(dir, 'set_env'),
    path: join(dir, 'add_path'),
    state: join(dir, 'save_state'),
    summary: join(dir, 'step_summary'),
  };
  for (const f of Object.values(files)) writeFileSync(f, '');
  return files;
}

/** Reads what the step wrote to its environment files into the job; returns its outputs and saved state. */
function collectStepFiles(ctx: LegContext, files: StepFiles): { outputs: Record<string, string>; state: Record<string, string> } {
  const outputs = Object.fromEntries(parseKeyValueFile(readFileSync(files.output, 'utf8'), 'GITHUB_OUTPUT'));
  for (const [k, v] of parseKeyValueFile(readFileSync(files.env, 'utf8'), 'GITHUB_ENV')) ctx.addedEnv[k] = v;
  for (const line of readFileSync(files.path, 'utf8').split(/\r?\n/)) if (line.trim()) ctx.addedPath.unshift(line.trim());
  const state = Object.fromEntries(parseKeyValueFile(readFileSync(files.state, 'utf8'), 'GITHUB_STATE'));
  const summary = readFileSync(files.summary, 'utf8');
  if (Buffer.byteLength(summary) > STEP_SUMMARY_LIMIT) {
    // The runner refuses the whole summary of that step (the step itself does not fail).
    annotate(ctx, {
      level: 'error',
      message: `$GITHUB_STEP_SUMMARY upload aborted, supports content up to a size of 1024k, got ${Math.ceil(Buffer.byteLength(summary) / 1024)}k. For more information see: https://docs.github.com/actions/using-workflows/workflow-commands-for-github-actions#adding-a-markdown-summary`,
    });
  } else if (summary) ctx.summaries.push(summary);
  return { outputs, state };
}

/** What a step's workflow commands read and change while it runs. */
interface CommandState {
  /** The token of `::stop-commands::`, until it comes back. */
  stopToken: string | null;
  outputs: Record<string, string>;
  /** The step's process environment (ACTIONS_ALLOW_UNSECURE_COMMANDS is read from it). */
  env: Record<string, string>;
  /** A command could not be processed: the step fails (ActionCommandManager.cs sets CommandResult). */
  failed: boolean;
}

/** Handles one line of a step's output: a workflow command, or a log line. */
function onStepLine(ctx: LegContext, line: string, state: CommandState): void {
  const cmd = parseCommand(line);
  if (state.stopToken) {
    if (cmd && cmd.name === state.stopToken.toLowerCase()) state.stopToken = null;
    else logLine(ctx, line);
    return;
  }
  if (!cmd) return logLine(ctx, line);
  applyCommand(ctx, cmd, state, line);
}

const UNSECURE_DISABLED =
  'The `{0}` command is disabled. Please upgrade to using Environment Files or opt into unsecure command execution by setting the `ACTIONS_ALLOW_UNSECURE_COMMANDS` environment variable to `true`. For more information see: https://github.blog/changelog/2020-10-01-github-actions-deprecating-set-env-and-add-path-commands/';

/**
 * `::set-env::` and `::add-path::`, as ActionCommandManager.cs handles them: honoured only when
 * ACTIONS_ALLOW_UNSECURE_COMMANDS is `true`, otherwise refused, which fails the step.
 */
function unsecureCommand(ctx: LegContext, cmd: WorkflowCommand, state: CommandState, raw: string): void {
  const refuse = (why: string) => {
    annotate(ctx, { level: 'error', message: `Unable to process command '${raw}' successfully.` });
    annotate(ctx, { level: 'error', message: why });
    state.failed = true;
  };
  if (!/^\s*true\s*$/i.test(state.env.ACTIONS_ALLOW_UNSECURE_COMMANDS ?? '')) return refuse(UNSECURE_DISABLED.replace('{0}', cmd.name));
  if (cmd.name === 'add-path') {
    if (!cmd.message) return refuse("Value cannot be null. (Parameter 'path')");
    ctx.addedPath = [cmd.message, ...ctx.addedPath.filter((p) => p !== cmd.message)];
    return;
  }
  const name = cmd.properties.name;
  if (!name) return refuse("Required field 'name' is missing in ##[set-env] command.");
  if (name.toUpperCase() === 'NODE_OPTIONS')
    return annotate(ctx, { level: 'error', message: "Can't update NODE_OPTIONS environment variable using ::set-env:: command." });
  ctx.addedEnv[name] = cmd.message;
}

function applyCommand(ctx: LegContext, cmd: WorkflowCommand, state: CommandState, raw: string): void {
  switch (cmd.name) {
    case 'add-mask':
      ctx.masker.add(cmd.message);
      return;
    case 'error':
    case 'warning':
    case 'notice': {
      const a: Annotation = { level: cmd.name, message: cmd.message };
      if (cmd.properties.title) a.title = cmd.properties.title;
      if (cmd.properties.file) a.file = cmd.properties.file;
      if (cmd.properties.line) a.line = Number(cmd.properties.line);
      return annotate(ctx, a);
    }
    case 'group':
      return logLine(ctx, `##[group]${cmd.message}`);
    case 'endgroup':
      return logLine(ctx, '##[endgroup]');
    case 'debug':
      return;
    case 'stop-commands':
      state.stopToken = cmd.message;
      return;
    case 'set-env':
    case 'add-path':
      return unsecureCommand(ctx, cmd, state, raw);
    case 'set-output':
      state.outputs[cmd.properties.name ?? ''] = cmd.message;
      annotate(ctx, {
        level: 'warning',
        message: 'The `set-output` command is deprecated and will be disabled soon. Please upgrade to using Environment Files.',
      });
      return;
    default:
      logLine(ctx, raw);
  }
}

interface StepOutcome {
  outcome: Conclusion;
  outputs: Record<string, string>;
}

/** Runs a process for a step, with its environment files, and folds the files back into the job. */
async function runStepProcess(
  ctx: LegContext,
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  files: StepFiles,
  timeoutMs: number,
): Promise<StepOutcome & { state: Record<string, string> }> {
  const commands: CommandState = { stopToken: null, outputs: {}, env, failed: false };
  const outputs = commands.outputs;
  const stepStop = new AbortController();
  const onJobStop = () => stepStop.abort();
  ctx.spec.stop.addEventListener('abort', onJobStop, { once: true });
  const deadline = Number.isFinite(timeoutMs) ? ctx.host.clock.now() + timeoutMs : Infinity;
  const watch = setInterval(() => {
    if (ctx.host.clock.now() > deadline) stepStop.abort();
  }, 25);
  try {
    mkdirSync(cwd, { recursive: true });
    const path = [...ctx.addedPath, env.PATH ?? HOST_PATH].join(delimiter);
    const result = await runProcess({
      command,
      args,
      cwd,
      env: { ...env, PATH: path },
      signal: stepStop.signal,
      groups: ctx.groups,
      onLine: (line) => onStepLine(ctx, line, commands),
    });
    const collected = collectStepFiles(ctx, files);
    Object.assign(outputs, collected.outputs);
    if (stepStop.signal.aborted && !ctx.spec.stop.aborted) {
      annotate(ctx, { level: 'error', message: `The action has timed out.` });
      return { outcome: 'failure', outputs, state: collected.state };
    }
    if (result.exitCode !== 0) {
      if (!ctx.spec.stop.aborted) annotate(ctx, { level: 'error', message: `Process completed with exit code ${result.exitCode ?? 1}.` });
      return { outcome: ctx.spec.stop.aborted ? 'cancelled' : 'failure', outputs, state: collected.state };
    }
    return { outcome: commands.failed ? 'failure' : 'success', outputs, state: collected.state };
  } finally {
    clearInterval(watch);
    ctx.spec.stop.removeEventListener('abort', onJobStop);
  }
}

const SHELLS: Record<string, (file: string) => [string, string[]]> = {
  bash: (f) => ['bash', ['--noprofile', '--norc', '-eo', 'pipefail', f]],
  sh: (f) => ['sh', ['-e', f]],
  python: (f) => ['python3', [f]],
};

function shellCommand(shell: string, file: string): [string, string[]] {
  const known = SHELLS[shell];
  if (known) return known(file);
  if (!shell.includes('{0}')) throw new Error(`Invalid shell option. Shell must be a valid built-in (bash, sh, python) or a format string containing '{0}'`);
  const parts = shell.replace('{0}', file).split(/\s+/).filter(Boolean);
  return [parts[0]!, parts.slice(1)];
}

function stepEnv(ctx: LegContext, jobEnvVars: Record<string, string>, stepToken: TemplateToken | undefined, base: EvalEnv): Record<string, string> {
  const env: Record<string, string> = { ...jobEnvVars, ...ctx.addedEnv };
  return { ...env, ...evaluateStrings(prop(stepToken, 'env'), { ...base, contexts: { ...base.contexts, env } }) };
}

/** A `run:` step. */
async function runScript(
  ctx: LegContext,
  token: TemplateToken,
  env: Record<string, string>,
  base: EvalEnv,
  action?: { path: string; repository?: string; ref?: string },
): Promise<StepOutcome> {
  const script = evaluateString(prop(token, 'run'), base);
  const shell = evaluateString(prop(token, 'shell'), base) || (action ? '' : ctx.runDefaults.shell) || 'bash';
  const wd = evaluateString(prop(token, 'working-directory'), base) || (action ? '' : ctx.runDefaults['working-directory']) || '';
  const file = join(ctx.temp, `${randomUUID()}.sh`);
  writeFileSync(file, script);
  const [command, args] = shellCommand(shell, file);
  const files = newStepFiles(ctx);
  const processEnv = { ...runnerVariables(ctx, files, action ? { ...action, name: '__run' } : { name: '__run' }), ...ctx.host.extraEnv, ...env };
  const cwd = wd ? (isAbsolute(wd) ? wd : join(ctx.workspace, wd)) : ctx.workspace;
  const timeout = stepTimeoutMs(token, base);
  const r = await runStepProcess(ctx, command, args, cwd, processEnv, files, timeout);
  return { outcome: r.outcome, outputs: r.outputs };
}

function stepTimeoutMs(token: TemplateToken, base: EvalEnv): number {
  const t = evaluateToken(prop(token, 'timeout-minutes'), base);
  return typeof t === 'number' && t > 0 ? t * 60_000 : Infinity;
}

/** `with:` evaluated, then the action's defaults for what it did not set; warnings as the runner gives them. */
function actionInputs(ctx: LegContext, action: ResolvedAction, token: TemplateToken, base: EvalEnv): Record<string, string> {
  const given = evaluateStrings(prop(token, 'with'), base);
  const defs = action.loaded.template.inputs ?? [];
  const known = new Set(defs.map((d) => d.id.toLowerCase()));
  const unexpected = Object.keys(given).filter((k) => !known.has(k.toLowerCase()));
  if (unexpected.length) {
    annotate(ctx, {
      level: 'warning',
      message: `Unexpected input(s) '${unexpected.join("', '")}', valid inputs are ['${defs.map((d) => d.id).join("', '")}']`,
    });
  }
  const out: Record<string, string> = {};
  for (const d of defs) {
    const key = Object.keys(given).find((k) => k.toLowerCase() === d.id.toLowerCase());
    if (key !== undefined) out[d.id] = given[key]!;
    else if (d.default) out[d.id] = evaluateString(d.default, base);
    else {
      out[d.id] = '';
      if (d.required) annotate(ctx, { level: 'warning', message: `Input required and not supplied: ${d.id}` });
    }
  }
  for (const k of unexpected) out[k] = given[k]!;
  return out;
}

function inputVariables(inputs: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(inputs).map(([k, v]) => [`INPUT_${k.replace(/ /g, '_').toUpperCase()}`, v]));
}

/** A `uses:` step: a JavaScript action (a process on this Node.js) or a composite action (its steps, here). */
async function runAction(
  ctx: LegContext,
  uses: string,
  token: TemplateToken,
  env: Record<string, string>,
  base: EvalEnv,
  stepName: string,
): Promise<StepOutcome> {
  const action = await ctx.host.resolveAction(uses, ctx);
  const [repository, ref] = uses.startsWith('./') ? ['', ''] : uses.split('@');
  const ghExtra = { action_path: action.dir, action_repository: repository ?? '', action_ref: ref ?? '', action: stepName };
  const withBase = { ...base, contexts: { ...base.contexts, github: githubContext(ctx, ghExtra) } };
  const inputs = actionInputs(ctx, action, token, withBase);
  if (action.kind === 'composite') return runComposite(ctx, action, inputs, env, withBase);
  if (action.using === 'node20' || action.using === 'node16' || action.using === 'node12') ctx.node20.add(uses);
  const files = newStepFiles(ctx);
  if (action.kind === 'builtin') {
    const stepEnvVars = {
      ...runnerVariables(ctx, files, { path: action.dir, repository: repository ?? '', ref: ref ?? '', name: stepName }),
      ...ctx.spec.runtime,
      ...env,
      ...inputVariables(inputs),
    };
    stepEnvVars.PATH = [...ctx.addedPath, env.PATH ?? HOST_PATH].join(delimiter);
    return runBuiltin(
      ctx,
      action.impl,
      { inputs, env: stepEnvVars, workspace: ctx.workspace, log: (l) => logLine(ctx, l), mask: (v) => ctx.masker.add(v), state: {} },
      stepName,
    );
  }
  const processEnv = {
    ...runnerVariables(ctx, files, { path: action.dir, repository: repository ?? '', ref: ref ?? '', name: stepName }),
    ...ctx.host.extraEnv,
    ...ctx.spec.runtime,
    ...env,
    ...inputVariables(inputs),
  };
  const r = await runStepProcess(ctx, process.execPath, [join(action.dir, action.main)], ctx.workspace, processEnv, files, stepTimeoutMs(token, base));
  if (action.post) registerPost(ctx, action, action.post, processEnv, r.state, stepName);
  return { outcome: r.outcome, outputs: r.outputs };
}

/** A third-party action the runner emulates in-process (checkout, setup-node): only its git or files run. */
async function runBuiltin(ctx: LegContext, impl: Builtin, step: BuiltinStep, stepName: string): Promise<StepOutcome> {
  const r = await impl.main(step);
  if (r.addPath) ctx.addedPath.unshift(r.addPath);
  if (impl.post) {
    addPost(ctx, stepName, async () => {
      await impl.post!(step);
      return 'success';
    });
  }
  if (r.ok) return { outcome: 'success', outputs: r.outputs };
  annotate(ctx, { level: 'error', message: r.error ?? 'the action failed' });
  return { outcome: 'failure', outputs: r.outputs };
}

function registerPost(
  ctx: LegContext,
  action: Extract<ResolvedAction, { kind: 'node' }>,
  post: string,
  env: Record<string, string>,
  state: Record<string, string>,
  stepName: string,
): void {
  const when = () => condition(undefined, evalEnv(ctx, env), action.postIf ?? 'always()');
  addPost(
    ctx,
    stepName,
    async () => {
      const files = newStepFiles(ctx);
      const stateEnv = Object.fromEntries(Object.entries(state).map(([k, v]) => [`STATE_${k}`, v]));
      const r = await runStepProcess(
        ctx,
        process.execPath,
        [join(action.dir, post)],
        ctx.workspace,
        { ...env, ...runnerVariables(ctx, files, { path: action.dir, name: stepName }), ...stateEnv },
        files,
        Infinity,
      );
      return r.outcome;
    },
    when,
  );
}

/**
 * Post steps are job steps (StepsRunner.cs queues them after the main steps):
 * each is listed as `Post <step>`, and one that fails fails the job.
 */
function addPost(ctx: LegContext, stepName: string, run: () => Promise<Conclusion>, when: () => boolean = () => true): void {
  const name = `Post ${stepName}`;
  ctx.posts.unshift(async () => {
    if (!when()) {
      ctx.records.push({ id: '', name, outcome: 'skipped', conclusion: 'skipped', outputs: {} });
      return;
    }
    logLine(ctx, name);
    const outcome = await run().catch((err: Error) => {
      annotate(ctx, { level: 'error', message: err.message });
      return 'failure' as const;
    });
    ctx.records.push({ id: '', name, outcome, conclusion: outcome, outputs: {} });
    if (outcome === 'failure') ctx.status = 'failure';
  });
}

/** A composite action: its steps, with `inputs` and `github.action_path`; its outputs from its steps. */
async function runComposite(
  ctx: LegContext,
  action: Extract<ResolvedAction, { kind: 'composite' }>,
  inputs: Record<string, string>,
  env: Record<string, string>,
  base: EvalEnv,
): Promise<StepOutcome> {
  const runs = action.loaded.template.runs;
  if (runs.using !== 'composite') throw new Error('not a composite action');
  const saved = { steps: ctx.steps, status: ctx.status };
  ctx.steps = {};
  ctx.status = 'success';
  // Inside a composite, `steps` are its own and `inputs` are the action's; `github` keeps action_path.
  const scoped = (): EvalEnv => {
    const e = evalEnv(ctx, env);
    return { ...e, contexts: { ...e.contexts, inputs, github: base.contexts.github ?? null, steps: ctx.steps as unknown as Json, env } };
  };
  try {
    for (let i = 0; i < runs.steps.length; i++) {
      await runOneStep(ctx, runs.steps[i] as StepModel, action.loaded.rawSteps[i]!, env, scoped(), {
        path: action.dir,
        ...(action.ref ? { repository: action.ref } : {}),
      });
    }
    const outputs: Record<string, string> = {};
    const final = scoped();
    for (const o of action.loaded.template.outputs ?? []) outputs[o.id] = evaluateString(o.value, final);
    return { outcome: ctx.status, outputs };
  } finally {
    ctx.steps = saved.steps;
    ctx.status = saved.status;
  }
}

interface StepModel {
  id: string;
  name?: TemplateToken;
  if?: TemplateToken;
  'continue-on-error'?: boolean | TemplateToken;
}

function stepDisplayName(model: StepModel, raw: TemplateToken, base: EvalEnv): string {
  if (model.name) return evaluateString(model.name, base);
  const uses = prop(raw, 'uses');
  if (uses && isString(uses)) return `Run ${uses.value}`;
  const run = prop(raw, 'run');
  const text = run && isString(run) ? run.value : run && isBasicExpression(run) ? (run.source ?? run.expression) : 'script';
  return `Run ${text.trim().split('\n')[0]}`;
}

function continueOnError(model: StepModel, base: EvalEnv): boolean {
  const c = model['continue-on-error'];
  if (typeof c === 'boolean') return c;
  if (c === undefined) return false;
  const v = evaluateToken(c, base);
  return v === true || v === 'true';
}

/** Runs one step (if its condition holds) and records it; 'failed' when it fails the job. */
async function runOneStep(
  ctx: LegContext,
  model: StepModel,
  raw: TemplateToken,
  env: Record<string, string>,
  base: EvalEnv,
  action?: { path: string; repository?: string },
): Promise<'ok' | 'failed' | 'skipped'> {
  if (ctx.spec.stopReason() === 'runner-lost') return 'skipped';
  const record = (outcome: Conclusion, conclusion: Conclusion, outputs: Record<string, string>, name: string) => {
    ctx.steps[model.id] = { outputs, outcome, conclusion };
    ctx.records.push({ id: model.id, name, outcome, conclusion, outputs });
  };
  let name = model.id;
  try {
    // The condition sees the env the step will run with: job env, GITHUB_ENV, then the step's own (StepsRunner.cs).
    const senv = stepEnv(ctx, env, raw, base);
    const sbase = { ...base, contexts: { ...base.contexts, env: senv } };
    name = stepDisplayName(model, raw, sbase);
    if (!condition(model.if, sbase)) {
      record('skipped', 'skipped', {}, name);
      return 'skipped';
    }
    logLine(ctx, `##[group]${name}`);
    const uses = prop(raw, 'uses');
    const r = uses && isString(uses) ? await runAction(ctx, uses.value, raw, senv, sbase, name) : await runScript(ctx, raw, senv, sbase, action);
    logLine(ctx, '##[endgroup]');
    if (r.outcome === 'success') {
      record('success', 'success', r.outputs, name);
      return 'ok';
    }
    const keepGoing = r.outcome === 'failure' && continueOnError(model, sbase);
    record(r.outcome, keepGoing ? 'success' : r.outcome, r.outputs, name);
    if (keepGoing) return 'ok';
    ctx.status = 'failure';
    return 'failed';
  } catch (err) {
    annotate(ctx, { level: 'error', message: err instanceof ExpressionFailure ? err.message : (err as Error).message });
    record('failure', 'failure', {}, name);
    ctx.status = 'failure';
    return 'failed';
  }
}

/** The job's `outputs:`, evaluated after its steps; a value holding a secret is dropped, as GitHub drops it. */
function jobOutputs(ctx: LegContext, base: EvalEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of entries(prop(ctx.spec.def.raw, 'outputs'))) {
    let value: string;
    try {
      value = evaluateString(v, base);
    } catch (err) {
      annotate(ctx, { level: 'error', message: (err as Error).message });
      continue;
    }
    if (ctx.masker.contains(value)) {
      annotate(ctx, { level: 'warning', message: `Skip output '${k}' since it may contain secret.` });
      continue;
    }
    out[k] = value;
  }
  const size = Object.entries(out).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  if (size > 1024 * 1024) {
    annotate(ctx, { level: 'error', message: `The job's outputs are ${size} bytes; a job's outputs are limited to 1 MB. They were dropped.` });
    return {};
  }
  return out;
}

function newContext(spec: LegSpec, host: RunnerHost): LegContext {
  const workspace = join(spec.dir, 'work', spec.facts.repo.split('/')[1] ?? 'repo', spec.facts.repo.split('/')[1] ?? 'repo');
  const ctx: LegContext = {
    spec,
    host,
    workspace,
    temp: join(spec.dir, 'temp'),
    home: join(spec.dir, 'home'),
    masker: new Masker(),
    log: [],
    annotations: [],
    summaries: [],
    steps: {},
    records: [],
    status: 'success',
    addedEnv: {},
    addedPath: [],
    runDefaults: {},
    groups: new Set(),
    posts: [],
    node20: new Set(),
    trackingId: `github_${randomUUID()}`,
  };
  for (const d of [workspace, ctx.temp, ctx.home, join(spec.dir, 'toolcache')]) mkdirSync(d, { recursive: true });
  ctx.masker.add(spec.token);
  for (const v of Object.values(spec.contexts.secrets)) ctx.masker.add(v);
  ctx.masker.add(spec.runtime.ACTIONS_RUNTIME_TOKEN);
  writeFileSync(join(spec.dir, 'event.json'), JSON.stringify(spec.facts.eventPayload));
  return ctx;
}

const NODE20_MESSAGE =
  'Node.js 20 is deprecated. The following actions target Node.js 20 but are being forced to run on Node.js 24: {0}. For more information see: https://github.blog/changelog/2025-09-19-deprecation-of-node-20-on-github-actions-runners/';

/** Runs one job on its own runner. Never throws: every outcome is a LegResult. */
export async function runLeg(spec: LegSpec, host: RunnerHost): Promise<LegResult> {
  const ctx = newContext(spec, host);
  logLine(ctx, `Job "${spec.name}" on runner ${spec.runnerName}`);
  const steps = spec.def.model.type === 'job' ? spec.def.model.steps : [];
  const rawSteps = items(prop(spec.def.raw, 'steps'));
  let env: Record<string, string> = {};
  try {
    env = jobEnv(ctx, evalEnv(ctx, {}));
    ctx.runDefaults = runDefaults(ctx, evalEnv(ctx, env));
  } catch (err) {
    annotate(ctx, { level: 'error', message: (err as Error).message });
    ctx.status = 'failure';
  }
  for (let i = 0; i < steps.length; i++) {
    if (spec.stopReason() === 'runner-lost') break;
    await runOneStep(ctx, steps[i] as StepModel, rawSteps[i]!, env, evalEnv(ctx, env));
  }
  if (spec.stopReason() !== 'runner-lost') for (const post of ctx.posts) await post();
  endJobProcesses(ctx.groups, ctx.trackingId);
  if (ctx.node20.size) annotate(ctx, { level: 'warning', message: NODE20_MESSAGE.replace('{0}', [...ctx.node20].join(', ')) });
  const reason = spec.stopReason();
  if (reason === 'timeout')
    annotate(ctx, {
      level: 'error',
      message: `The job running on runner ${spec.runnerName} has exceeded the maximum execution time of ${spec.timeoutMinutes} minutes.`,
    });
  if (reason === 'runner-lost') {
    annotate(ctx, {
      level: 'error',
      message: 'The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled.',
    });
  }
  if (reason === 'cancel') annotate(ctx, { level: 'error', message: 'The operation was canceled.' });
  const outputs = reason === 'runner-lost' ? {} : jobOutputs(ctx, evalEnv(ctx, env));
  const conclusion: Conclusion = reason === 'runner-lost' ? 'failure' : spec.stop.aborted ? 'cancelled' : ctx.status;
  return {
    conclusion,
    ...(reason ? { stoppedBy: reason } : {}),
    outputs,
    steps: ctx.records,
    log: ctx.log.join('\n'),
    summary: ctx.summaries.join('\n'),
    annotations: ctx.annotations,
  };
}
