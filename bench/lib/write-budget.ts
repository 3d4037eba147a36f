/**
 * The write-budget bench (`--only write-budget`), in a process of its own: 256 legs open a PR each, at once,
 * through the workflow runner and the reusable workflow, against an emulator that enforces GitHub's secondary
 * content limit per account — compressed in time, and Fleet told the same compressed limit
 * (FLEET_GITHUB_WRITE_BUDGET): the same algorithm, seconds instead of minutes.
 *
 *   secondary_limit_rejections_256_legs   writes the emulator refused for the limit during the run      (goal 0)
 *   write_budget_use                      the fleet's writes per window achieved, first write → last,
 *                                         ÷ the limit (max per window)                                  (goal ≥ 0.8)
 *
 * GitHub's limit is 80 a minute (and 500 an hour); here it is 40 in 30 s (see WRITE_BUDGET_DEFAULTS), and no hourly
 * window: 512 writes (each PR and its label) take 512 × 834 ms ≈ 7.1 min at the 90% Fleet plans.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WriteBudget } from '../../src/core/budget.js';

export interface WriteBudgetRequest {
  legs: number;
  /** The fleet file's max_parallel: the legs the plan divides the budget among, and GitHub's max-parallel. */
  parallel: number;
  /** The compressed limit the emulator enforces and Fleet plans with. */
  limit: { max: number; windowMs: number };
  /** Jobs the runner runs at once. */
  jobs: number;
}

export interface WriteBudgetResult {
  legs: number;
  parallel: number;
  limit: { max: number; windowMs: number };
  compression: string;
  jobs: number;
  cpus: number;
  rejections: number;
  writes: number;
  first_to_last_ms: number;
  /** writes per window achieved ÷ max per window. */
  use: number;
  /** The most writes any window held (the emulator's own sliding count). */
  busiest_window: number;
  /** Where the slots went: writes landed in each window-long bin from the first write, and when the refused ones came (ms after the first). */
  timeline: {
    per_window: number[];
    rejected_at_ms: number[];
    leg_first_request_to_pr_ms: { p10: number; median: number; p90: number };
    legs_alive: number[];
    /** Legs whose label came more than 10 s after their PR (a slot missed between them). */
    label_after_pr_over_10s: number;
    /** The last legs to write: first request, PR and label, in ms after the first write. */
    last_legs: Array<{ repo: string; first: number; pr?: number; label?: number }>;
  };
  budget: WriteBudget | undefined;
  lanes_completed: number;
  run_s: number;
  conclusion: string;
}

/**
 * 256 legs, 64 at once: a leg's job holds ~145 MB here (the github-script step and Fleet), so 256 at once do not fit in
 * this machine's memory; max_parallel says what runs at once, as a fleet on a plan with 60 concurrent jobs should.
 * The limit keeps GitHub's pace (36 planned in 30 s: a write every 834 ms, as 72 a minute) in a window half as long,
 * with 4 writes of slack as GitHub's 80 leave 8.
 */
export const WRITE_BUDGET_DEFAULTS: WriteBudgetRequest = { legs: 256, parallel: 64, limit: { max: 40, windowMs: 30_000 }, jobs: 64 };

async function measure(req: WriteBudgetRequest, log: (s: string) => void): Promise<WriteBudgetResult> {
  const { startWorld, dispatchFleet, reportArtifact, explain, artifactsOf, artifactFile, KNOBS } = await import('../../test/actions-e2e/world.js');
  const names = Array.from({ length: req.legs }, (_, i) => `wb-${String(i).padStart(3, '0')}`);
  const fleetFile = {
    name: 'write-budget',
    forge: 'github',
    directive: 'Stamp.',
    run: 'echo stamped > STAMP',
    max_retries: 0,
    max_parallel: req.parallel,
    // Two writes a lane (the PR, then its label): a leg that has written once has its next write ready for its next
    // slot, so the figure is the budget's use, not how fast this loaded 2-core machine starts jobs.
    pr: { labels: ['fleet'] },
    targets: names.map((n) => ({ repo: `acme/${n}` })),
  };
  const w = await startWorld({
    emulator: { contentLimit: req.limit, validateResponses: false },
    runner: { maxConcurrentJobs: req.jobs, extraEnv: { ...KNOBS, FLEET_GITHUB_WRITE_BUDGET: `${req.limit.max}/${req.limit.windowMs}` } },
    fleetFile,
  });
  try {
    for (const n of names) await w.emu.createRepo({ owner: 'acme', name: n });
    w.emu.resetLog();
    log(
      `  ${req.legs} repositories; dispatching (${req.legs} legs, max-parallel ${req.parallel}, the runner ${req.jobs} jobs at once, limit ${req.limit.max} writes per ${req.limit.windowMs} ms)`,
    );
    const t0 = performance.now();
    const progress = setInterval(() => {
      const done = w.emu.requests.filter((q) => q.method === 'POST' && q.route === '/repos/{owner}/{repo}/pulls' && q.status === 201).length;
      const labelled = w.emu.requests.filter(
        (q) => q.method === 'POST' && q.route === '/repos/{owner}/{repo}/issues/{issue_number}/labels' && q.status === 200,
      ).length;
      log(`  … ${done} PRs, ${labelled} labelled, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }, 30_000);
    let run: Awaited<ReturnType<typeof dispatchFleet>>;
    try {
      run = await dispatchFleet(w, { directive: 'Stamp.' });
    } finally {
      clearInterval(progress);
    }
    const run_s = (performance.now() - t0) / 1000;
    const { manifest } = reportArtifact(w, run.runId);
    if (manifest.summary.completed !== req.legs)
      throw new Error(`write-budget bench: ${manifest.summary.completed}/${req.legs} lanes completed\n${explain(run.s).slice(-4000)}`);
    const plan = artifactsOf(w, run.runId).get('fleet-plan.a1');
    const budget = plan ? (JSON.parse(artifactFile(w, plan, 'fleet.json')) as { budget?: WriteBudget }).budget : undefined;
    // The PAT's writes (every leg's): the report's check run goes as the run's GITHUB_TOKEN, another account.
    // REST writes only: a git push is no content-creating API request, and GraphQL queries are not writes (Fleet sends no mutation here).
    const writes = w.emu.requests.filter((q) => q.kind === 'rest' && ['POST', 'PATCH', 'PUT', 'DELETE'].includes(q.method) && q.login === 'platform-bot');
    const rejections = writes.filter((q) => q.fault === 'content-limit').length;
    const landed = writes
      .filter((q) => q.fault !== 'content-limit')
      .map((q) => q.time)
      .sort((a, b) => a - b);
    const span = landed.at(-1)! - landed[0]!;
    // n writes over a span hold n − 1 gaps: (n − 1) / span writes per ms, × windowMs per window.
    const use = (((landed.length - 1) / span) * req.limit.windowMs) / req.limit.max;
    let busiest = 0;
    for (let i = 0, j = 0; i < landed.length; i++) {
      while (landed[j]! <= landed[i]! - req.limit.windowMs) j++;
      busiest = Math.max(busiest, i - j + 1);
    }
    const timeline = timelineOf(w.emu.requests, writes, landed, req.limit.windowMs);
    return {
      timeline,
      legs: req.legs,
      parallel: req.parallel,
      limit: req.limit,
      compression: `${req.limit.max} writes per ${req.limit.windowMs / 1000} s for GitHub's 80 per 60 s (and Fleet told the same)`,
      jobs: req.jobs,
      cpus: os.cpus().length,
      rejections,
      writes: landed.length,
      first_to_last_ms: span,
      use: Math.round(use * 1000) / 1000,
      busiest_window: busiest,
      budget,
      lanes_completed: manifest.summary.completed,
      run_s: Math.round(run_s * 10) / 10,
      conclusion: run.s.conclusion,
    };
  } finally {
    await w.close();
  }
}

type Logged = { method: string; path: string; route: string | null; status: number; time: number; fault?: string };

/** Per window-long bin from the first write: writes landed and legs alive (first request → last request of its repository). */
function timelineOf(all: readonly Logged[], writes: readonly Logged[], landed: number[], windowMs: number): WriteBudgetResult['timeline'] {
  const t0 = landed[0]!;
  const bins = Math.ceil((landed.at(-1)! - t0) / windowMs) + 1;
  const per_window = Array.from({ length: bins }, () => 0);
  for (const t of landed) per_window[Math.floor((t - t0) / windowMs)]!++;
  const legs = new Map<string, { first: number; last: number; pr?: number; label?: number }>();
  for (const q of all) {
    const repo = /\/(wb-\d{3})\b/.exec(q.path)?.[1];
    if (!repo) continue;
    const l = legs.get(repo) ?? { first: q.time, last: q.time };
    l.first = Math.min(l.first, q.time);
    l.last = Math.max(l.last, q.time);
    if (q.method === 'POST' && q.route === '/repos/{owner}/{repo}/pulls' && q.status === 201) l.pr = q.time;
    if (q.method === 'POST' && q.route === '/repos/{owner}/{repo}/issues/{issue_number}/labels' && q.status === 200) l.label = q.time;
    legs.set(repo, l);
  }
  const legs_alive = per_window.map((_, i) => [...legs.values()].filter((l) => l.first < t0 + (i + 1) * windowMs && l.last >= t0 + i * windowMs).length);
  const toPr = [...legs.values()]
    .filter((l) => l.pr !== undefined)
    .map((l) => l.pr! - l.first)
    .sort((a, b) => a - b);
  const pick = (f: number) => Math.round(toPr[Math.min(toPr.length - 1, Math.floor(f * toPr.length))] ?? 0);
  return {
    per_window,
    rejected_at_ms: writes.filter((q) => q.fault === 'content-limit').map((q) => q.time - t0),
    leg_first_request_to_pr_ms: { p10: pick(0.1), median: pick(0.5), p90: pick(0.9) },
    legs_alive,
    label_after_pr_over_10s: [...legs.values()].filter((l) => l.pr !== undefined && l.label !== undefined && l.label - l.pr > 10_000).length,
    last_legs: [...legs.entries()]
      .sort((a, b) => (b[1].label ?? 0) - (a[1].label ?? 0))
      .slice(0, 8)
      .map(([repo, l]) => ({
        repo,
        first: l.first - t0,
        ...(l.pr !== undefined ? { pr: l.pr - t0 } : {}),
        ...(l.label !== undefined ? { label: l.label - t0 } : {}),
      })),
  };
}

/** Runs the bench in a child process (the runner's jobs and the emulator hold memory the bench's own RSS figures must not show). */
export async function runWriteBudgetInChild(req: WriteBudgetRequest, tmp: string, root: string): Promise<WriteBudgetResult> {
  const outFile = join(tmp, 'write-budget-results.json');
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(req), outFile], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (c, signal) => resolve(c ?? (signal ? 128 : null)));
  });
  if (code !== 0) throw new Error(`the write-budget bench failed (exit ${code}): see its output above`);
  return JSON.parse(readFileSync(outFile, 'utf8')) as WriteBudgetResult;
}

// The child: argv = the request as JSON, the file to write results to.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [request, outFile] = process.argv.slice(2);
  if (!request || !outFile) throw new Error('usage: write-budget.ts <request JSON> <results file>');
  const result = await measure(JSON.parse(request) as WriteBudgetRequest, (s) => process.stderr.write(`${s}\n`));
  writeFileSync(outFile, JSON.stringify(result));
  process.exit(0);
}
