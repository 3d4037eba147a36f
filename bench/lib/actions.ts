/**
 * The Actions suite of the bench (`--only actions`): Fleet as GitHub runs it,
 * the bundled action (dist/action/index.js) started as action.yml's
 * github-script step starts it, against the GitHub emulator and the emulated
 * Actions services (artifacts through the real @actions/artifact client).
 *
 *   node_start_ms / action_cold_start_ms   `node -e ''`, and the bundle's spawn → its first API request (plan mode)
 *   dist_bytes                             what a job checks out to run Fleet
 *   simulated_fleet_300_s                  a 300-lane fleet through the workflow runner, dispatch → end of run
 *   report_job_1000_lanes_s                the report job alone over 1,000 real lane artifacts
 *   agent_install_cached_s                 an agent fleet's leg restoring its agent CLI from the Actions cache, vs npm (agent-install.ts)
 *
 * The workflow runner parses workflows with `@actions/workflow-parser`, whose
 * schema modules `import … from "../workflow-v1.0.min.json"` without import
 * attributes. Node 20 alone refuses that (ERR_IMPORT_ASSERTION_TYPE_MISSING:
 * "needs an import attribute of type json"); under vitest `server.deps.inline`
 * lets vite transform it. The bench needs no hook: it runs with
 * `node --import tsx`, and tsx's ESM loader serves `.json` files itself (as a
 * default export), attributes or not, node_modules included (checked on Node 20.20).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';
import type { Manifest } from '../../src/core/model.js';
import { startActionsServices, type ActionsServices } from '../../test/support/actions-services/index.js';
import type { Scope, Access } from '../../test/support/actions-runner/types.js';
import type { World } from '../../test/actions-e2e/world.js';
import { startEmulator, type Emulator } from '../../test/support/github-emulator/index.js';
import { agentInstall, type AgentInstallRun } from './agent-install.js';
import { median, round } from './stats.js';

type Log = (s: string) => void;
const PAT = 'ghp_FleetBenchPat0123456789abcdefghijklmnoP';
const CONTROL = { owner: 'acme', repo: 'control' };

// ---------------------------------------------------------------------------
// Processes

export interface Exited {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Date.now() just before spawn(), to compare with the emulator's request log (also Date.now()). */
  spawnedAt: number;
  /** spawn() → exit, performance.now() clock. */
  ms: number;
  output: string;
}

/** Runs a process to its end, keeping its output (stdout and stderr interleaved) for a failure message. */
export function runProcess(command: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Exited> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const spawnedAt = Date.now();
    const t0 = performance.now();
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (b: Buffer) => chunks.push(b));
    child.stderr.on('data', (b: Buffer) => chunks.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, spawnedAt, ms: performance.now() - t0, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

function tail(text: string, lines = 30): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** `node -e ''`: the floor under every Node.js process this machine starts (spawn → exit). */
export async function nodeStart(reps: number): Promise<number[]> {
  const out: number[] = [];
  for (let r = 0; r < reps; r++) {
    const x = await runProcess(process.execPath, ['-e', '']);
    if (x.code !== 0) throw new Error(`node -e '' exited ${x.code ?? x.signal}`);
    out.push(x.ms);
  }
  return out;
}

/** Runs `fn` over `items` with at most `limit` running at once; results in input order. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

// ---------------------------------------------------------------------------
// dist/

export interface DistSize {
  total: number;
  /** Per bundle (top-level folder of dist/), bytes. */
  bundles: Record<string, number>;
  /** Every file, bytes, by path relative to dist/. */
  files: Record<string, number>;
}

export function distSize(root: string): DistSize {
  const dist = join(root, 'dist');
  const files: Record<string, number> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else files[relative(dist, p)] = st.size;
    }
  };
  walk(dist);
  const bundles: Record<string, number> = {};
  for (const [f, n] of Object.entries(files)) {
    const top = f.includes('/') ? f.slice(0, f.indexOf('/')) : f;
    bundles[top] = (bundles[top] ?? 0) + n;
  }
  return { total: Object.values(files).reduce((a, b) => a + b, 0), bundles, files };
}

/**
 * A copy of dist/ taken once, from which every process of the suite is started (the folder
 * holding it stands for the job's `.fleet` checkout: no node_modules beside it). The tree may
 * be rebuilt while the bench runs; a copy taken while a bundle is missing or being written is
 * taken again.
 */
export async function snapshotDist(root: string, into: string): Promise<{ root: string; action_sha256: string }> {
  for (let attempt = 1; ; attempt++) {
    await distSettled(root);
    rmSync(join(into, 'dist'), { recursive: true, force: true });
    cpSync(join(root, 'dist'), join(into, 'dist'), { recursive: true });
    const copied = sha256(readFileSync(join(into, BUNDLE)));
    if (existsSync(join(root, BUNDLE)) && copied === sha256(readFileSync(join(root, BUNDLE)))) return { root: into, action_sha256: copied };
    if (attempt === 5) throw new Error(`${BUNDLE} kept changing while it was copied: is a build running?`);
  }
}

const BUNDLE = join('dist', 'action', 'index.js');

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Waits until the action bundle exists and has not changed for 2 s (a build of the tree may be running). */
async function distSettled(root: string): Promise<void> {
  const file = join(root, BUNDLE);
  for (let attempt = 1; ; attempt++) {
    const st = existsSync(file) ? statSync(file) : null;
    if (st && Date.now() - st.mtimeMs > 2000) return;
    if (attempt === 60) throw new Error(`${BUNDLE} is missing or kept changing for a minute: is a build running?`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

// ---------------------------------------------------------------------------
// A GitHub with Actions services, and jobs of one run that run the bundled action

interface Rig {
  emu: Emulator;
  services: ActionsServices;
  serverUrl: string;
  controlSha: string;
  close(): Promise<void>;
}

/** The emulator (no secondary content limit: the bench measures Fleet, not GitHub's pacing) and the Actions services on one clock. */
async function startRig(fleetFile: Record<string, unknown>): Promise<Rig> {
  const emu = await startEmulator({ contentLimit: false });
  const services = await startActionsServices({ now: () => emu.clock.now() });
  emu.attachActionsServices(services.restBackend());
  emu.addToken(PAT, { login: 'platform-bot', type: 'pat', default: 'push' });
  const control = await emu.createRepo({ ...CONTROL, name: CONTROL.repo, files: { 'README.md': '# control\n', 'fleet.yml': stringify(fleetFile) } });
  return {
    emu,
    services,
    // @actions/artifact refuses any other host as GitHub Enterprise Server; it only reads the hostname.
    serverUrl: `http://github.localhost:${emu.port}`,
    controlSha: control.headSha!,
    async close() {
      await services.close();
      await emu.close();
    },
  };
}

/** A workflow run of the control repository, known to the emulator (REST) and to the Actions services (artifacts). */
async function startRun(rig: Rig): Promise<number> {
  const { id } = await rig.emu.startWorkflowRun({
    owner: CONTROL.owner,
    repo: CONTROL.repo,
    name: 'Fleet (dispatch)',
    path: '.github/workflows/fleet.yml',
    headBranch: 'main',
    headSha: rig.controlSha,
    event: 'workflow_dispatch',
  });
  rig.services.startAttempt({
    repo: `${CONTROL.owner}/${CONTROL.repo}`,
    runId: id,
    attempt: 1,
    kind: 'first',
    ref: 'refs/heads/main',
    headSha: rig.controlSha,
    headBranch: 'main',
  });
  return id;
}

interface JobRun extends Exited {
  outputs: Record<string, string>;
  workspace: string;
}

/** The key=value and heredoc (`name<<delimiter`) lines @actions/core writes to GITHUB_OUTPUT. */
export function parseOutputFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const value: string[] = [];
      for (i++; i < lines.length && lines[i] !== heredoc[2]; i++) value.push(lines[i]!);
      out[heredoc[1]!] = value.join('\n');
    } else if (line.includes('=')) out[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
  }
  return out;
}

/**
 * One job of the run that runs the action's Fleet step: its own runner folders, a
 * registered job for the Actions services (ACTIONS_RUNTIME_TOKEN, ACTIONS_RESULTS_URL),
 * a GITHUB_TOKEN with the job's permissions (the FLEET_RUN_TOKEN action.yml passes),
 * and `node dist/action/index.js` started with the environment the composite action's
 * github-script step hands it.
 */
async function runFleetJob(
  rig: Rig,
  spec: {
    root: string;
    dir: string;
    runId: number;
    name: string;
    permissions: Partial<Record<Scope, Access>>;
    fleet: Record<string, string>;
    files?: Record<string, string>;
    profileDir?: string;
  },
): Promise<JobRun> {
  const dir = spec.dir;
  const work = join(dir, 'work');
  const temp = join(dir, 'temp');
  const home = join(dir, 'home');
  const cmd = join(temp, '_runner_file_commands');
  for (const d of [work, temp, home, cmd]) mkdirSync(d, { recursive: true });
  for (const [f, text] of Object.entries(spec.files ?? {})) {
    mkdirSync(join(work, f, '..'), { recursive: true });
    writeFileSync(join(work, f), text);
  }
  const files = {
    GITHUB_OUTPUT: join(cmd, 'set_output'),
    GITHUB_STEP_SUMMARY: join(cmd, 'step_summary'),
    GITHUB_ENV: join(cmd, 'set_env'),
    GITHUB_PATH: join(cmd, 'add_path'),
    GITHUB_STATE: join(cmd, 'save_state'),
  };
  for (const f of Object.values(files)) writeFileSync(f, '');
  const repo = `${CONTROL.owner}/${CONTROL.repo}`;
  const job = rig.services.registerJob({ repo, runId: spec.runId, runAttempt: 1, jobName: spec.name });
  const jobId = rig.emu.addWorkflowJob(spec.runId, { name: spec.name, attempt: 1, status: 'in_progress' });
  const githubToken = rig.emu.mintInstallationToken({ repositories: [repo], scopes: { ...spec.permissions, metadata: 'read' } });
  const workspace = join(temp, 'fleet');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    LANG: 'C.UTF-8',
    CI: 'true',
    GITHUB_ACTIONS: 'true',
    GITHUB_API_URL: rig.emu.url,
    GITHUB_GRAPHQL_URL: rig.emu.graphqlUrl,
    GITHUB_SERVER_URL: rig.serverUrl,
    GITHUB_REPOSITORY: repo,
    GITHUB_REPOSITORY_OWNER: CONTROL.owner,
    GITHUB_RUN_ID: String(spec.runId),
    GITHUB_RUN_ATTEMPT: '1',
    GITHUB_SHA: rig.controlSha,
    GITHUB_REF: 'refs/heads/main',
    GITHUB_EVENT_NAME: 'workflow_dispatch',
    GITHUB_WORKSPACE: work,
    RUNNER_TEMP: temp,
    RUNNER_OS: 'Linux',
    ...files,
    ...job.env,
    FLEET_TOKEN: PAT,
    FLEET_RUN_TOKEN: githubToken,
    FLEET_WORKSPACE_DIR: workspace,
    FLEET_ACTION_PATH: spec.root,
    FLEET_GITHUB_PACING_MS: '0',
    ...spec.fleet,
  };
  try {
    const profile = spec.profileDir
      ? ['--cpu-prof', '--cpu-prof-dir', spec.profileDir, '--cpu-prof-name', `${spec.name.replace(/\W+/g, '-')}-${Date.now()}.cpuprofile`]
      : [];
    const x = await runProcess(process.execPath, [...profile, join(spec.root, 'dist', 'action', 'index.js')], { cwd: work, env });
    rig.emu.updateWorkflowJob(jobId, { status: 'completed', conclusion: x.code === 0 ? 'success' : 'failure' });
    return { ...x, outputs: parseOutputFile(readFileSync(files.GITHUB_OUTPUT, 'utf8')), workspace };
  } finally {
    rig.services.endJob(job.runtimeToken);
    rig.emu.removeToken(githubToken);
  }
}

function mustSucceed(x: JobRun, what: string): JobRun {
  if (x.code !== 0) throw new Error(`${what}: the action exited ${x.code ?? x.signal}:\n${tail(x.output)}`);
  return x;
}

const pad = (i: number, width: number) => String(i).padStart(width, '0');

async function makeRepos(emu: Emulator, names: string[], concurrency = 16): Promise<number> {
  const t0 = performance.now();
  await pool(names, concurrency, (name) => emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } }));
  return performance.now() - t0;
}

// ---------------------------------------------------------------------------
// action_cold_start_ms

export interface ColdStart {
  /** spawn → the emulator's first logged request, per repetition. */
  first_request_ms: number[];
  /** spawn → exit of the whole plan job, per repetition. */
  plan_exit_ms: number[];
  /** The first request each repetition sent (method and route). */
  first_request: string;
}

/** The bundled action in plan mode, as a plan job starts it, `reps` times; each is a plan job of a run of its own. */
export async function actionColdStart(opts: { root: string; tmp: string; reps: number; log: Log; profileDir?: string }): Promise<ColdStart> {
  const targets = ['cs-1', 'cs-2', 'cs-3'];
  const fleetFile = { name: 'cold-start', forge: 'github', directive: 'Nothing.', run: 'true', targets: targets.map((t) => ({ repo: `acme/${t}` })) };
  const rig = await startRig(fleetFile);
  try {
    await makeRepos(rig.emu, targets);
    const out: ColdStart = { first_request_ms: [], plan_exit_ms: [], first_request: '' };
    for (let r = 0; r < opts.reps; r++) {
      const runId = await startRun(rig);
      rig.emu.resetLog();
      const x = mustSucceed(
        await runFleetJob(rig, {
          root: opts.root,
          dir: join(opts.tmp, 'cold-start', String(r)),
          runId,
          name: 'fleet / plan',
          permissions: { contents: 'read' },
          files: { 'source/fleet.yml': stringify(fleetFile) },
          fleet: { FLEET_MODE: 'plan', FLEET_FILE: 'source/fleet.yml', FLEET_WAVE_JOBS: '8', FLEET_DRY_RUN: 'false' },
          profileDir: opts.profileDir,
        }),
        'cold start (plan job)',
      );
      const reqs = rig.emu.requests.filter((q) => q.time >= x.spawnedAt);
      if (!reqs.length) throw new Error('cold start: the plan job sent no request to the emulator');
      const first = reqs.reduce((a, b) => (b.time < a.time ? b : a));
      out.first_request_ms.push(first.time - x.spawnedAt);
      out.plan_exit_ms.push(x.ms);
      out.first_request = `${first.method} ${first.route ?? first.path}`;
      opts.log(
        `  cold start rep ${r + 1}/${opts.reps}: first request ${first.time - x.spawnedAt} ms after spawn (${out.first_request}), plan job exited after ${x.ms.toFixed(0)} ms`,
      );
    }
    return out;
  } finally {
    await rig.close();
  }
}

// ---------------------------------------------------------------------------
// report_job_1000_lanes_s

export interface ReportJobRun {
  lanes: number;
  shards: number;
  report_ms: number;
  repos_ms: number;
  plan_ms: number;
  lanes_ms: number;
  lane_job_ms_median: number;
  artifacts: number;
  artifact_bytes: number;
  report_requests: RouteStats;
  summary: Manifest['summary'];
}

/**
 * The state a report job finds after a 1,000-lane wave: a real plan (the bundle
 * in plan mode), then every shard run by the bundle in lane mode as its own job
 * of the run (the lanes are no-ops: `run: 'true'` changes nothing; each still
 * clones its repository and uploads a real lane result as `fleet-lane-<lane>.a1`).
 * Only the report job is timed: spawn → exit.
 */
export async function reportJob(opts: { root: string; tmp: string; lanes: number; jobs: number; log: Log; profileDir?: string }): Promise<ReportJobRun> {
  const width = String(opts.lanes).length;
  const names = Array.from({ length: opts.lanes }, (_, i) => `r-${pad(i + 1, width)}`);
  const fleetFile = {
    name: 'report-bench',
    forge: 'github',
    directive: 'Change nothing.',
    run: 'true',
    max_retries: 0,
    targets: names.map((n) => ({ repo: `acme/${n}` })),
  };
  const rig = await startRig(fleetFile);
  try {
    const repos_ms = await makeRepos(rig.emu, names);
    opts.log(`  ${opts.lanes} repositories in ${(repos_ms / 1000).toFixed(1)} s`);
    const runId = await startRun(rig);
    const dir = join(opts.tmp, 'report-1000');
    const plan = mustSucceed(
      await runFleetJob(rig, {
        root: opts.root,
        dir: join(dir, 'plan'),
        runId,
        name: 'fleet / plan',
        permissions: { contents: 'read' },
        files: { 'source/fleet.yml': stringify(fleetFile) },
        fleet: { FLEET_MODE: 'plan', FLEET_FILE: 'source/fleet.yml', FLEET_WAVE_JOBS: '8', FLEET_DRY_RUN: 'false' },
      }),
      'report bench: plan job',
    );
    const shards = JSON.parse(plan.outputs['wave-1'] ?? '[]') as string[];
    if (plan.outputs['wave-count'] !== '1' || plan.outputs['lane-count'] !== String(opts.lanes)) {
      throw new Error(
        `report bench: expected ${opts.lanes} lanes in one wave, the plan says ${plan.outputs['lane-count']} lanes in ${plan.outputs['wave-count']} wave(s)`,
      );
    }
    opts.log(`  plan job: ${(plan.ms / 1000).toFixed(1)} s, ${shards.length} shards`);
    // The reusable workflow hands the plan job's plan-digest output to every later job (when the plan job gives one).
    const digest: Record<string, string> = plan.outputs['plan-digest'] ? { FLEET_PLAN_DIGEST: plan.outputs['plan-digest'] } : {};
    const t0 = performance.now();
    let done = 0;
    const legs = await pool(shards, opts.jobs, async (shard) => {
      const x = mustSucceed(
        await runFleetJob(rig, {
          root: opts.root,
          dir: join(dir, 'lanes', shard),
          runId,
          name: `fleet / wave 1 (${shard})`,
          permissions: { contents: 'read', actions: 'read' },
          fleet: { FLEET_MODE: 'lane', FLEET_SHARD: shard, FLEET_DRY_RUN: 'false', ...digest },
        }),
        `report bench: lane job ${shard}`,
      );
      if (++done % 32 === 0 || done === shards.length) opts.log(`  lane jobs: ${done}/${shards.length} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
      return x.ms;
    });
    const lanes_ms = performance.now() - t0;
    const uploaded = rig.services.artifacts({ runId }).filter((a) => a.name.startsWith('fleet-lane-'));
    if (uploaded.length !== opts.lanes) throw new Error(`report bench: ${uploaded.length} lane artifacts were uploaded, expected ${opts.lanes}`);

    const reportFrom = Date.now();
    const report = mustSucceed(
      await runFleetJob(rig, {
        root: opts.root,
        dir: join(dir, 'report'),
        runId,
        name: 'fleet / report',
        permissions: { contents: 'read', actions: 'read', checks: 'write' },
        fleet: { FLEET_MODE: 'report', FLEET_CHECK_NAME: 'Fleet', FLEET_FAIL_ON_LANE_FAILURE: 'true', ...digest },
        profileDir: opts.profileDir,
      }),
      'report bench: report job',
    );
    const manifest = JSON.parse(readFileSync(join(report.workspace, 'fleet-status.json'), 'utf8')) as Manifest;
    const s = manifest.summary;
    if (manifest.lanes.length !== opts.lanes || s.total !== opts.lanes || s.completed !== opts.lanes || s.failed !== 0) {
      throw new Error(`report bench: the report's manifest is not ${opts.lanes} completed lanes: ${manifest.lanes.length} lanes, summary ${JSON.stringify(s)}`);
    }
    if (!rig.services.artifacts({ runId }).some((a) => a.name === 'fleet-report.a1'))
      throw new Error('report bench: the report job uploaded no fleet-report.a1');
    return {
      lanes: opts.lanes,
      shards: shards.length,
      report_ms: report.ms,
      repos_ms,
      plan_ms: plan.ms,
      lanes_ms,
      lane_job_ms_median: median(legs),
      artifacts: uploaded.length,
      artifact_bytes: uploaded.reduce((n, a) => n + a.size, 0),
      report_requests: requestsBetween(rig.emu, rig.services, reportFrom, Date.now()),
      summary: s,
    };
  } finally {
    await rig.close();
  }
}

// ---------------------------------------------------------------------------
// simulated_fleet_300_s

export interface SimulatedFleet {
  lanes: number;
  /** The fleet file's `legs:` (core/legs.ts): auto, or one lane per leg as every plan made before it. */
  legs: 'auto' | 'per-lane';
  wall_ms: number;
  repos_ms: number;
  world_ms: number;
  jobs_run: number;
  jobs_by_wave: Record<string, number>;
  two_lane_shards: number;
  max_concurrent_jobs: number;
  cpus: number;
  /** Per job (first log line → last), and the two parts of it, medians in ms. */
  job_ms: { median: number; p90: number; max: number; checkout_median: number; fleet_step_median: number };
  /** Dispatch → first line of each stage's first job, and → last line of its last job, in seconds. */
  stages: Record<string, { start_s: number; end_s: number }>;
  /**
   * A wave leg's own cost: its job's span (first log line → last) less its lanes' own time (each lane record's
   * started_at → ended_at), per leg, in ms; and the span of an empty job (one `run: true` step) on the same runner in
   * the same world, the floor any job pays here.
   */
  leg_overhead_ms: number[];
  empty_job_ms: number;
  summary: Manifest['summary'];
  /** The action bundle the emulated Fleet repository held (dist/ when the world started). */
  dist_sha256: string;
  /** What the report job asked GitHub and the Actions services while it ran, by route. */
  report_job_requests: RouteStats;
  emulator_violations: string[];
}

/** Requests by route: how many, and the server-side milliseconds they took (sum, max). */
export type RouteStats = Record<string, { n: number; ms: number; max_ms: number }>;

function routeStats(reqs: Array<{ key: string; ms: number }>): RouteStats {
  const out: RouteStats = {};
  for (const q of reqs) {
    const r = (out[q.key] ??= { n: 0, ms: 0, max_ms: 0 });
    r.n++;
    r.ms += q.ms;
    r.max_ms = Math.max(r.max_ms, q.ms);
  }
  for (const r of Object.values(out)) r.ms = Math.round(r.ms);
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1].n - a[1].n));
}

/** The emulator's and the Actions services' requests that arrived in [from, to] (Date.now() ms). */
function requestsBetween(emu: Emulator, services: ActionsServices, from: number, to: number): RouteStats {
  const gh = emu.requests.filter((q) => q.time >= from && q.time <= to).map((q) => ({ key: `${q.method} ${q.route ?? q.path}`, ms: q.durationMs }));
  // The services log no duration: only counts.
  const svc = services.requests
    .filter((q) => q.time >= from && q.time <= to)
    .map((q) => ({ key: q.kind === 'twirp' ? `twirp ${q.rpc}` : `blob ${q.method}`, ms: 0 }));
  return routeStats([...gh, ...svc]);
}

interface JobTrace {
  first: number;
  last: number;
  fleetAt?: number;
  checkoutAt?: number;
}

/**
 * `lanes` targets acme/t-001…: all independent but `dependents`, which depend on
 * t-001, so wave 1 holds lanes − dependents (past the 256-leg limit: some shards
 * hold two lanes) and wave 2 the rest. Dispatched from the dispatch template
 * through the workflow runner; every lane writes STAMP, pushes and opens a PR.
 */
export async function simulatedFleet(opts: {
  root: string;
  lanes: number;
  dependents: number;
  jobs: number;
  legs: 'auto' | 'per-lane';
  log: Log;
}): Promise<SimulatedFleet> {
  // Imported here: the runner pulls in GitHub's workflow parser, which only this bench needs.
  const { startWorld, dispatchFleet, planOf, reportArtifact, explain, CONTROL_REPO, KNOBS } = await import('../../test/actions-e2e/world.js');
  const width = Math.max(3, String(opts.lanes).length);
  const names = Array.from({ length: opts.lanes }, (_, i) => `t-${pad(i + 1, width)}`);
  const root = names[0]!;
  const fleetFile = {
    name: 'stamp',
    forge: 'github',
    directive: 'Stamp every repository.',
    run: 'echo x > STAMP',
    max_retries: 0,
    legs: opts.legs,
    targets: names.map((n, i) => (i >= opts.lanes - opts.dependents ? { repo: `acme/${n}`, depends_on: [root] } : { repo: `acme/${n}` })),
  };
  const traces = new Map<string, JobTrace>();
  const onLog = (job: string, line: string) => {
    const now = Date.now();
    const t = traces.get(job) ?? traces.set(job, { first: now, last: now }).get(job)!;
    t.last = now;
    if (t.checkoutAt === undefined && line.startsWith('##[group]Run actions/checkout@')) t.checkoutAt = now;
    if (t.fleetAt === undefined && line === '##[group]Run ./.fleet') t.fleetAt = now;
  };
  const w0 = performance.now();
  // startWorld publishes this tree's action.yml, reusable workflow and dist/ as the Fleet repository: not while a build
  // rewrites them. What it published must be the bundle on disk once settled, or the world is made again.
  let w: Awaited<ReturnType<typeof startWorld>>;
  let published: string;
  for (let attempt = 1; ; attempt++) {
    await distSettled(opts.root);
    w = await startWorld({
      emulator: { contentLimit: false, validateResponses: false },
      runner: { maxConcurrentJobs: opts.jobs, extraEnv: KNOBS, onLog },
      fleetFile,
    });
    published = sha256(execFileSync('git', ['--git-dir', join(w.emu.reposDir, 'acme', 'fleet.git'), 'show', `v1:${BUNDLE}`], { maxBuffer: 64 * 1024 * 1024 }));
    if (existsSync(join(opts.root, BUNDLE)) && published === sha256(readFileSync(join(opts.root, BUNDLE)))) break;
    await w.close();
    if (attempt === 5) throw new Error(`simulated fleet: ${BUNDLE} kept changing while the world was made: is a build running?`);
  }
  try {
    const repos_ms = await makeRepos(w.emu, names);
    const world_ms = performance.now() - w0;
    opts.log(
      `  world and ${opts.lanes} repositories ready in ${(world_ms / 1000).toFixed(1)} s; dispatching (at most ${opts.jobs} jobs at once, ${os.cpus().length} CPUs)`,
    );
    const dispatchedAt = Date.now();
    const t0 = performance.now();
    const progress = setInterval(() => opts.log(`  … ${traces.size} jobs started, ${((performance.now() - t0) / 1000).toFixed(0)} s`), 30_000);
    let result: Awaited<ReturnType<typeof dispatchFleet>>;
    try {
      result = await dispatchFleet(w, { directive: 'Stamp every repository.' });
    } finally {
      clearInterval(progress);
    }
    const wall_ms = performance.now() - t0;
    const { runId, s } = result;

    // A bench that measured a broken run is worthless: check the outcome before reporting a number.
    const fail = (why: string): never => {
      throw new Error(`simulated fleet: ${why}\n${tail(explain(s), 60)}`);
    };
    if (s.conclusion !== 'success') fail(`the run ended ${s.conclusion}`);
    const legsOf = (prefix: string) => s.jobs.filter((j) => j.name.startsWith(prefix) && j.conclusion !== 'skipped');
    const wave1 = legsOf('fleet / wave 1 (');
    const wave2 = legsOf('fleet / wave 2 (');
    const inWave1 = opts.lanes - opts.dependents;
    const plan = planOf(w, runId).manifest;
    const shards1 = plan.waves[0]?.shards ?? [];
    const shards2 = plan.waves[1]?.shards ?? [];
    // One lane per leg: 256 legs (GitHub's matrix limit), some of two lanes; auto: the legs the plan sized.
    const legs1 = opts.legs === 'per-lane' ? Math.min(256, inWave1) : shards1.length;
    const legs2 = opts.legs === 'per-lane' ? opts.dependents : shards2.length;
    if (wave1.length !== legs1) fail(`wave 1 ran ${wave1.length} legs, expected ${legs1} (GitHub's matrix limit is 256)`);
    if (wave2.length !== legs2) fail(`wave 2 ran ${wave2.length} legs, expected ${legs2}`);
    const two = shards1.filter((x) => x.lanes.length === 2).length;
    if (plan.waves.length !== 2 || shards1.length !== legs1 || (opts.legs === 'per-lane' && two !== Math.max(0, inWave1 - 256)))
      fail(`the plan has ${plan.waves.length} waves, ${shards1.length} shards in wave 1 (${two} of two lanes)`);
    const { manifest } = reportArtifact(w, runId);
    const sm = manifest.summary;
    if (sm.total !== opts.lanes || sm.completed !== opts.lanes || sm.failed !== 0 || sm.no_op !== 0) fail(`the report says ${JSON.stringify(sm)}`);
    const unverified = manifest.lanes.filter((l) => l.status !== 'completed' || !l.commit || !l.evidence.head_matches || !l.evidence.files_match);
    if (unverified.length)
      fail(
        `${unverified.length} lane(s) not completed and verified: ${unverified
          .slice(0, 3)
          .map((l) => `${l.lane} ${l.status}/${l.phase}`)
          .join(', ')}`,
      );
    const prs = names.filter((n) => w.emu.pullRequests(`acme/${n}`).filter((p) => p.state === 'open').length !== 1);
    if (prs.length) fail(`${prs.length} repositories do not have exactly one open PR (${prs.slice(0, 5).join(', ')})`);
    if (w.emu.checkRuns(CONTROL_REPO).length !== 1) fail('the report job posted no check run');

    const ran = s.jobs.filter((j) => j.conclusion !== 'skipped');
    const byWave: Record<string, number> = {};
    for (const j of ran) {
      const stage = /^fleet \/ (\w+(?: \d+)?)/.exec(j.name)?.[1] ?? j.name;
      byWave[stage] = (byWave[stage] ?? 0) + 1;
    }
    const stages: SimulatedFleet['stages'] = {};
    for (const [job, t] of traces) {
      const stage = /^fleet \/ (\w+(?: \d+)?)/.exec(job)?.[1] ?? job;
      const st = (stages[stage] ??= { start_s: Infinity, end_s: 0 });
      st.start_s = Math.min(st.start_s, round((t.first - dispatchedAt) / 1000, 2));
      st.end_s = Math.max(st.end_s, round((t.last - dispatchedAt) / 1000, 2));
    }
    const reportTrace = traces.get('fleet / report')!;
    // A leg's own cost: its span less its lanes' own time, from the report's records.
    const laneMs = new Map(manifest.lanes.map((l) => [l.lane, l.started_at && l.ended_at ? Date.parse(l.ended_at) - Date.parse(l.started_at) : 0] as const));
    const leg_overhead_ms = [...shards1, ...shards2].flatMap((shard) => {
      const t = [...traces.entries()].find(([job]) => job.endsWith(`(${shard.id})`))?.[1];
      return t ? [t.last - t.first - shard.lanes.reduce((sum, id) => sum + (laneMs.get(id) ?? 0), 0)] : [];
    });
    const empty_job_ms = await emptyJob(w, CONTROL_REPO, traces);
    const spans = [...traces.values()];
    const jobMs = spans.map((t) => t.last - t.first).sort((a, b) => a - b);
    const withFleet = spans.filter((t) => t.fleetAt !== undefined);
    return {
      lanes: opts.lanes,
      legs: opts.legs,
      wall_ms,
      repos_ms,
      world_ms,
      jobs_run: ran.length,
      jobs_by_wave: byWave,
      two_lane_shards: two,
      max_concurrent_jobs: opts.jobs,
      cpus: os.cpus().length,
      job_ms: {
        median: median(jobMs),
        p90: jobMs[Math.ceil(jobMs.length * 0.9) - 1] ?? NaN,
        max: jobMs.at(-1) ?? NaN,
        checkout_median: median(withFleet.filter((t) => t.checkoutAt !== undefined).map((t) => t.fleetAt! - t.checkoutAt!)),
        fleet_step_median: median(withFleet.map((t) => t.last - t.fleetAt!)),
      },
      stages,
      leg_overhead_ms,
      empty_job_ms,
      summary: sm,
      dist_sha256: published,
      report_job_requests: requestsBetween(w.emu, w.services, reportTrace.first, reportTrace.last),
      emulator_violations: w.emu.violations.slice(0, 20).map((v) => `${v.kind}: ${v.method} ${v.path} → ${v.status} ${v.message}`),
    };
  } finally {
    await w.close();
  }
}

/** The span of a job with one `run: true` step, dispatched in the same world on the same runner (first log line → last). */
async function emptyJob(w: World, repo: string, traces: Map<string, JobTrace>): Promise<number> {
  await w.commitControl({
    '.github/workflows/empty.yml': stringify({
      name: 'empty',
      on: { workflow_dispatch: {} },
      permissions: {},
      jobs: { empty: { 'runs-on': 'ubuntu-latest', steps: [{ run: 'true' }] } },
    }),
  });
  const run = await w.runner.dispatch({ repo, workflow: '.github/workflows/empty.yml' });
  await w.runner.finish(run);
  const t = traces.get('empty');
  if (!t) throw new Error(`simulated fleet: the empty job left no log (jobs seen: ${[...traces.keys()].slice(-3).join(', ')})`);
  return t.last - t.first;
}

// ---------------------------------------------------------------------------
// The suite in a process of its own

export const ACTIONS_SUITES = ['cold-start', 'dist', 'fleet-300', 'report-1000', 'agent-install'] as const;
export type ActionsSuite = (typeof ACTIONS_SUITES)[number];

export interface ActionsRequest {
  suites: ActionsSuite[];
  root: string;
  tmp: string;
  /** Repetitions of the cold start (and of `node -e ''`). */
  reps: number;
  /** Jobs running at once: the workflow runner's maxConcurrentJobs, and the lane jobs that prepare the report bench. */
  jobs: number;
  /** When set, the timed processes (cold start, report job) write V8 CPU profiles here (the profiler slows them: figures are not comparable). */
  profileDir?: string;
}

export interface ActionsResults {
  node_start_ms?: number[];
  cold_start?: ColdStart;
  dist?: DistSize;
  fleet_300?: SimulatedFleet;
  /** The same fleet with `legs: per-lane`: a leg per lane, as plans were before legs were sized. */
  fleet_300_per_lane?: SimulatedFleet;
  report_1000?: ReportJobRun;
  agent_install?: AgentInstallRun;
  /** Wall seconds each part took, set-up included. */
  took_s: Record<string, number>;
  /** The dist/ the processes ran (a copy taken at the start), by its action bundle's digest. */
  dist_sha256?: string;
}

/** Runs the requested parts one after another (never two at once: they measure wall time on a small machine). */
export async function runActionsSuites(req: ActionsRequest, log: Log): Promise<ActionsResults> {
  const out: ActionsResults = { took_s: {} };
  // The bundle the cold start, the report bench and dist_bytes use: one copy, whatever happens to the tree meanwhile.
  const needsDist = req.suites.some((s) => s !== 'fleet-300' && s !== 'agent-install');
  const snap = needsDist ? await snapshotDist(req.root, join(req.tmp, 'fleet-action')) : undefined;
  if (snap) out.dist_sha256 = snap.action_sha256;
  const fleetRoot = snap?.root ?? req.root;
  const timed = async <T>(name: string, fn: () => Promise<T> | T): Promise<T> => {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      out.took_s[name] = round((performance.now() - t0) / 1000, 1);
    }
  };
  if (req.suites.includes('dist')) out.dist = await timed('dist', () => distSize(fleetRoot));
  if (req.suites.includes('cold-start')) {
    log('node_start_ms, action_cold_start_ms …');
    out.node_start_ms = await timed('node_start', () => nodeStart(req.reps));
    out.cold_start = await timed('cold_start', () => actionColdStart({ root: fleetRoot, tmp: req.tmp, reps: req.reps, log, profileDir: req.profileDir }));
  }
  if (req.suites.includes('report-1000')) {
    log('report_job_1000_lanes_s …');
    out.report_1000 = await timed('report_1000', () =>
      reportJob({ root: fleetRoot, tmp: req.tmp, lanes: 1000, jobs: req.jobs, log, profileDir: req.profileDir }),
    );
  }
  if (req.suites.includes('fleet-300')) {
    log('simulated_fleet_300_s …');
    // Before and after legs were sized (core/legs.ts): one lane per leg, then the plan's own sizing.
    out.fleet_300_per_lane = await timed('fleet_300_per_lane', () =>
      simulatedFleet({ root: req.root, lanes: 300, dependents: 10, jobs: req.jobs, legs: 'per-lane', log }),
    );
    out.fleet_300 = await timed('fleet_300', () => simulatedFleet({ root: req.root, lanes: 300, dependents: 10, jobs: req.jobs, legs: 'auto', log }));
  }
  if (req.suites.includes('agent-install')) {
    log('agent_install_cached_s …');
    out.agent_install = await timed('agent_install', () => agentInstall({ reps: Math.min(req.reps, 3), log }));
  }
  return out;
}

/**
 * Runs the suite in a child process (bench/lib/actions-child.ts): its emulator, runner
 * and Actions services hold a lot of memory, which must not show in the bench
 * process's own RSS figures (plan_10k_rss_mb) nor slow its later spawns; and the
 * processes it times are spawned from a small parent, as a runner's are.
 */
export async function runActionsInChild(req: ActionsRequest): Promise<ActionsResults> {
  const { fileURLToPath } = await import('node:url');
  const outFile = join(req.tmp, 'actions-results.json');
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./actions-child.ts', import.meta.url)), JSON.stringify(req), outFile], {
    cwd: req.root,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (c, signal) => resolve(c ?? (signal ? 128 : null)));
  });
  if (code !== 0) throw new Error(`the Actions bench failed (exit ${code}): see its output above`);
  return JSON.parse(readFileSync(outFile, 'utf8')) as ActionsResults;
}
