/**
 * The incremental-sweep bench (`--only sweeps`): the scheduled template (incremental: true) through the workflow
 * runner, against the GitHub emulator and the emulated Actions services (the cache through the real
 * @actions/cache client), over `targets` repositories.
 *
 *   sweep_unchanged_1000_clones        clones of target repositories by a sweep over targets that did not change (0)
 *   sweep_unchanged_1000_api_requests  requests the fleet token makes in that sweep, every job counted   (≤ 12)
 *   sweep_20_changed_of_1000_s         schedule → end of run of a sweep where 20 targets changed and open PRs
 *
 * The previous sweep is seeded, not run through the runner: a first sweep of 1,000 lanes through the runner
 * costs 256 matrix legs, which this 2-core machine takes too long over. Fleet's own runFleet runs it in this
 * process against the same emulator (the GitHub forge, every lane cloned and run: each is a no-op, the
 * directive writes only where a repository asks for it), and its manifest is saved into the Actions cache the
 * way the report job saves it (src/actions/sweep.ts's key, file and client), as a run of the scheduled
 * workflow on the default branch. What is measured after that goes through the runner, job by job.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { validateFleetFile } from '../../src/core/validate.js';
import { SWEEP_FILE, actionsSweepCache, sweepKey } from '../../src/actions/sweep-cache.js';
import { sealedSweep } from '../../src/actions/sweep.js';
import { sealKey } from '../../src/actions/settings.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock, type Logger } from '../../src/ports.js';
import { runFleet } from '../../src/steps/drivers/process.js';
import { directiveEnv } from '../../src/util/directive-env.js';
import type { Manifest } from '../../src/core/model.js';
import type { ActionsServices } from '../../test/support/actions-services/index.js';
import { round } from './stats.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

type Log = (s: string) => void;

export interface SweepsRequest {
  root: string;
  tmp: string;
  targets: number;
  changed: number;
  /** The workflow runner's jobs at once. */
  jobs: number;
}

interface SweepRun {
  wall_s: number;
  clones: number;
  fleet_requests: number;
  fleet_requests_by_route: Record<string, number>;
  legs: number;
  jobs: number;
  summary: Manifest['summary'];
}

export interface SweepsResults {
  targets: number;
  changed: number;
  cpus: number;
  jobs: number;
  repos_s: number;
  seed_s: number;
  unchanged: SweepRun;
  changed_run: SweepRun & { prs_opened: number };
}

const FLEET = 'sweep';
/** The run id the seeded previous sweep is saved under: far from the runner's own. */
const SEED_RUN_ID = 9_000_001;

export async function sweepsBench(req: SweepsRequest, log: Log): Promise<SweepsResults> {
  // Imported here: the runner pulls in GitHub's workflow parser.
  const { startWorld, template, CONTROL_REPO, KNOBS, PAT, reportArtifact, explain } = await import('../../test/actions-e2e/world.js');
  const { createOctokit } = await import('../../src/github/octokit.js');
  const { GitHubForge } = await import('../../src/github/forge.js');
  const names = Array.from({ length: req.targets }, (_, i) => `sw-${String(i + 1).padStart(4, '0')}`);
  const spec = {
    name: FLEET,
    forge: 'github',
    directive: 'Stamp the repositories that ask for it.',
    run: 'if [ -f WANTS_STAMP ]; then echo stamped > STAMP; fi',
    isolation: 'off',
    max_retries: 0,
    max_parallel: 8,
    targets: names.map((n) => ({ repo: `acme/${n}` })),
  };
  const w = await startWorld({
    emulator: { contentLimit: false, validateResponses: false },
    runner: { maxConcurrentJobs: req.jobs, extraEnv: KNOBS },
    caller: template('fleet-scheduled.yml'),
  });
  try {
    const r0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < names.length) await w.emu.createRepo({ owner: 'acme', name: names[next++]! });
      }),
    );
    await w.commitControl({ 'fleets/weekly-sweep.yml': stringify(spec) });
    const repos_s = (performance.now() - r0) / 1000;
    log(`  ${req.targets} repositories in ${repos_s.toFixed(1)} s; seeding the previous sweep …`);

    // The previous sweep: every lane cloned and run by Fleet's runner (GitHub forge), its manifest saved as the report job saves it.
    const s0 = performance.now();
    const v = validateFleetFile(spec, 'source/fleets/weekly-sweep.yml');
    if (!v.ok) throw new Error(`the sweep fleet does not validate: ${JSON.stringify(v.problems.slice(0, 3))}`);
    const quiet: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
    const octokit = createOctokit({ token: PAT, apiUrl: w.emu.url, logger: quiet, pacing: { writeMs: 0, searchMs: 0, notificationsMs: 0 } });
    const forge = new GitHubForge({ octokit, token: PAT, name: FLEET, serverUrl: `${w.emu.url}/git`, logger: quiet });
    const seedDir = join(req.tmp, 'sweep-seed');
    const seeded = await runFleet({
      fleet: v.fleet,
      file: 'fleets/weekly-sweep.yml',
      forge,
      workspace: localWorkspace,
      exec: localExecutor,
      clock: systemClock,
      env: directiveEnv(process.env),
      root: join(seedDir, 'ws'),
    });
    if (!seeded.ok) throw new Error(`the seed sweep did not plan: ${JSON.stringify(seeded.problems.slice(0, 3))}`);
    if (seeded.manifest.summary.completed !== req.targets) throw new Error(`the seed sweep: ${JSON.stringify(seeded.manifest.summary)}`);
    await saveAsPreviousSweep(w.services, CONTROL_REPO, seedDir, seeded.manifest, PAT);
    const seed_s = (performance.now() - s0) / 1000;
    log(`  seeded in ${seed_s.toFixed(1)} s; a sweep where nothing changed …`);

    const sweep = async (): Promise<SweepRun & { manifest: Manifest }> => {
      w.emu.resetLog();
      const t0 = performance.now();
      const run = await w.runner.schedule({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', cron: '17 6 * * 1' });
      const s = await w.runner.finish(run);
      const wall_s = (performance.now() - t0) / 1000;
      if (s.conclusion !== 'success') throw new Error(`the sweep ended ${s.conclusion}\n${explain(s).split('\n').slice(-60).join('\n')}`);
      const mine = w.emu.requests.filter((q) => q.token === PAT && q.kind !== 'git');
      const byRoute: Record<string, number> = {};
      for (const q of mine) byRoute[`${q.method} ${q.route ?? q.path}`] = (byRoute[`${q.method} ${q.route ?? q.path}`] ?? 0) + 1;
      const clones = w.emu.requests.filter((q) => q.operationId === 'git-upload-pack' && q.method === 'POST' && q.path.startsWith('/acme/sw-')).length;
      const { manifest } = reportArtifact(w, run.id);
      const legs = s.jobs.filter((j) => / \/ wave \d/.test(j.name) && j.conclusion !== 'skipped').length;
      return {
        wall_s,
        clones,
        fleet_requests: mine.length,
        fleet_requests_by_route: byRoute,
        legs,
        jobs: s.jobs.filter((j) => j.conclusion !== 'skipped').length,
        summary: manifest.summary,
        manifest,
      };
    };

    const { manifest: m1, ...unchanged } = await sweep();
    if (m1.summary.unchanged !== req.targets)
      throw new Error(`the unchanged sweep left ${m1.summary.unchanged} of ${req.targets} lanes unchanged: ${JSON.stringify(m1.summary)}`);
    log(
      `  unchanged: ${unchanged.wall_s.toFixed(1)} s, ${unchanged.clones} clones, ${unchanged.fleet_requests} fleet-token requests; ${req.changed} targets change …`,
    );

    const step = Math.floor(req.targets / req.changed);
    const changed = names.filter((_, i) => i % step === 0).slice(0, req.changed);
    for (const n of changed) await w.emu.commit({ owner: 'acme', repo: n, branch: 'main', files: { WANTS_STAMP: 'yes\n' } });
    const { manifest: m2, ...changedRun } = await sweep();
    const ran = m2.lanes
      .filter((l) => l.status === 'completed')
      .map((l) => l.repo.slice('acme/'.length))
      .sort();
    if (JSON.stringify(ran) !== JSON.stringify([...changed].sort()) || m2.summary.unchanged !== req.targets - req.changed) {
      throw new Error(
        `the changed sweep ran ${ran.length} lanes (${ran.slice(0, 5).join(', ')}…), expected exactly the ${req.changed} changed: ${JSON.stringify(m2.summary)}`,
      );
    }
    const prs_opened = changed.filter((n) => w.emu.pullRequests(`acme/${n}`).length === 1).length;
    if (prs_opened !== req.changed) throw new Error(`only ${prs_opened} of the ${req.changed} changed targets have a PR`);
    log(`  ${req.changed} changed: ${changedRun.wall_s.toFixed(1)} s, ${changedRun.legs} legs, ${changedRun.clones} clones`);
    return {
      targets: req.targets,
      changed: req.changed,
      cpus: os.cpus().length,
      jobs: req.jobs,
      repos_s: round(repos_s, 1),
      seed_s: round(seed_s, 1),
      unchanged,
      changed_run: { ...changedRun, prs_opened },
    };
  } finally {
    await w.close();
  }
}

/** Saves `manifest` as a scheduled run's report job would: same file, key and client, in the default branch's scope. */
async function saveAsPreviousSweep(services: ActionsServices, repo: string, dir: string, manifest: Manifest, seal: string): Promise<void> {
  services.startAttempt({ repo, runId: SEED_RUN_ID, attempt: 1, kind: 'first', ref: 'refs/heads/main', defaultBranch: 'main' });
  const job = services.registerJob({ repo, runId: SEED_RUN_ID, runAttempt: 1, jobName: 'fleet / report' });
  const workspace = join(dir, 'job');
  mkdirSync(dirname(join(workspace, SWEEP_FILE)), { recursive: true });
  // Sealed as the report job seals it, with the credential the scheduled runs use (the PAT).
  writeFileSync(join(workspace, SWEEP_FILE), sealedSweep(manifest, sealKey({ token: seal, app: undefined })));
  const vars: Record<string, string> = { ...job.env, GITHUB_WORKSPACE: workspace, RUNNER_TEMP: join(dir, 'temp') };
  mkdirSync(vars.RUNNER_TEMP!, { recursive: true });
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const cwd = process.cwd();
  Object.assign(process.env, vars);
  process.chdir(workspace);
  try {
    if (!(await actionsSweepCache.save(SWEEP_FILE, sweepKey(FLEET, SEED_RUN_ID, 1)))) throw new Error('the cache did not take the seeded sweep');
  } finally {
    process.chdir(cwd);
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    services.endJob(job.runtimeToken);
  }
}

/** Runs the bench in a child process of its own: the emulator, runner and services hold a lot of memory. */
export async function runSweepsInChild(req: SweepsRequest): Promise<SweepsResults> {
  const outFile = join(req.tmp, 'sweeps-results.json');
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(req), outFile], {
    cwd: req.root,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (c, signal) => resolve(c ?? (signal ? 128 : null)));
  });
  if (code !== 0) throw new Error(`the sweeps bench failed (exit ${code}): see its output above`);
  return JSON.parse(readFileSync(outFile, 'utf8')) as SweepsResults;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const req = JSON.parse(process.argv[2]!) as SweepsRequest;
  const out = await sweepsBench(req, (s) => console.log(s));
  writeFileSync(process.argv[3]!, JSON.stringify(out));
  process.exit(0);
}
