/**
 * `fleet_vs_git_floor` (`--only floor`): what a lane costs next to git doing the same work by hand.
 *
 * Each repetition makes fresh bare repositories from the bench seed (32 for each side, none shared) and runs:
 *
 *   floor   a git-xargs-style shell loop, `xargs -P <parallel>`, per repository: `git clone`,
 *           `git checkout -b <branch>`, the directive's change, `git add -A`, `git commit`,
 *           `git push origin <branch>` (a new branch per repository);
 *   fleet   the `fleet run` CLI on a fleet file over the other 32 (forge local, max_parallel <parallel>,
 *           the same directive, isolation as configured: the sandbox when the machine has one);
 *   fleet (isolation: off)   the same over a third set, for the sandbox's share (information);
 *   wide    the loop and the fleet again over `wide` repositories (128): the slope between the two sizes is what each
 *           further lane costs (`fleet_vs_git_floor_marginal`), Node's start and the sandbox probe paid once cancel out;
 *   history the loop and the fleet over repositories with a real project's history and size (`makeHistorySeed`:
 *           2,000 commits, 1,500 files), where a user's time goes on real work (`fleet_vs_git_floor_history`).
 *
 * The sides run one after the other, in an order that rotates each repetition, so a load spike is not always
 * paid by the same side. Wall time is spawn → exit of the outermost process (sh, node). CPU time is the user +
 * system time of the whole process tree: the bench process's `cutime + cstime` from /proc/self/stat (what
 * getrusage(RUSAGE_CHILDREN) reports: every descendant once it has been waited for, and every process here is),
 * read before and after each side, while nothing else of the bench runs. Off Linux only the wall ratio is kept.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { cpuTimes, machineBusy } from './cpu.js';
import { makeBareRepos, makeHistorySeed } from './repos.js';
import { median, round } from './stats.js';

/** The directive both sides apply: one new file per repository. */
export const FLOOR_CHANGE = 'echo x > f.txt';

/**
 * The floor: one `sh -c` per repository, `parallel` at once. Identity from the environment, as a CI job sets it;
 * the user's git configuration applies (that is what a shell loop gets).
 */
const FLOOR_SCRIPT = [
  'set -e',
  'r=${1##*/}; r=${r%.git}',
  'git clone -q "$1" "$r"',
  'cd "$r"',
  'git checkout -q -b "fleet/floor/$r"',
  FLOOR_CHANGE,
  'git add -A',
  'git commit -q -m "bench directive"',
  'git push -q origin "fleet/floor/$r"',
].join('\n');

export interface Measured {
  wall_ms: number;
  /** User + system seconds of the whole process tree; null off Linux. */
  cpu_s: number | null;
}

const SIDES = ['floor', 'fleet', 'fleet_off', 'floor_wide', 'fleet_wide', 'floor_history', 'fleet_history'] as const;
type Side = (typeof SIDES)[number];

export interface FloorRep {
  order: string[];
  floor: Measured;
  fleet: Measured;
  fleet_off: Measured;
  floor_wide: Measured;
  fleet_wide: Measured;
  floor_history: Measured;
  fleet_history: Measured;
  /** (fleet_wide − fleet) ÷ (floor_wide − floor), wall time: what one more lane costs each side. */
  marginal_ratio: number;
  history_ratio: number;
  wall_ratio: number;
  cpu_ratio: number | null;
  wall_ratio_off: number;
  cpu_ratio_off: number | null;
  /** CPU seconds the rest of the machine used during the three runs (all busy time minus ours). */
  others_cpu_s: number | null;
  loadavg: number[];
}

export interface FloorResult {
  reps: FloorRep[];
  isolation: { kind: string; detail: string } | null;
  cli: string;
  repositories: number;
  wide: number;
  history: { commits: number; files: number; pack_bytes: number };
  parallel: number;
  /** Git processes per lane, each side, from one run apart from the timed ones (GIT_TRACE2_EVENT: a file per process). */
  git_processes_per_lane: { floor: number; fleet: number; floor_history: number; fleet_history: number };
}

/** Runs one process tree to its end; fails with its output's tail when it does not exit 0. (Also used by bench/lib/agents.ts.) */
export function measure(what: string, file: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<Measured & { output: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const c0 = cpuTimes()?.children_s ?? null;
    const t0 = performance.now();
    const child = spawn(file, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (b: Buffer) => chunks.push(b));
    child.stderr.on('data', (b: Buffer) => chunks.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const wall_ms = performance.now() - t0;
      const c1 = cpuTimes()?.children_s ?? null;
      const output = Buffer.concat(chunks).toString('utf8');
      if (code !== 0) {
        reject(new Error(`${what} exited ${code ?? signal}:\n${output.trimEnd().split('\n').slice(-20).join('\n')}`));
        return;
      }
      resolve({ wall_ms, cpu_s: c0 === null || c1 === null ? null : round(c1 - c0, 2), output });
    });
  });
}

/**
 * The CLI the fleet side runs: `fleet run` as one `node` process. By default a bundle of the current sources
 * made at the start of the bench with esbuild (the committed dist/ is rebuilt only at release, so it may lag
 * the sources being measured); `dist` runs bin/fleet.js, the committed bundle, as published.
 */
export async function fleetCli(root: string, tmp: string, which: 'src' | 'dist'): Promise<{ args: string[]; label: string }> {
  if (which === 'dist') return { args: [join(root, 'bin', 'fleet.js')], label: 'bin/fleet.js (the committed dist/cli bundle)' };
  const { build } = await import('esbuild');
  const outdir = join(tmp, 'fleet-cli');
  const out = join(outdir, 'index.js');
  // dist/cli is ESM under a "type": "module" package.json, its GitHub side a chunk loaded on demand: the same here.
  mkdirSync(outdir, { recursive: true });
  writeFileSync(join(outdir, 'package.json'), '{ "type": "module" }\n');
  await build({
    entryPoints: [join(root, 'src', 'cli', 'index.ts')],
    outdir,
    splitting: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'es2022',
    // Bundled CommonJS dependencies call require(); an ESM bundle has none of its own.
    banner: { js: "import { createRequire as __fleetRequire } from 'node:module'; const require = __fleetRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  return { args: [out], label: 'src/cli/index.ts bundled by esbuild at the start of the run (as dist/cli is: the GitHub side in a chunk of its own)' };
}

function gitEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_AUTHOR_NAME: 'Fleet bench',
    GIT_AUTHOR_EMAIL: 'bench@example.invalid',
    GIT_COMMITTER_NAME: 'Fleet bench',
    GIT_COMMITTER_EMAIL: 'bench@example.invalid',
  };
}

async function runFloor(dir: string, repos: string[], parallel: number, env: NodeJS.ProcessEnv = gitEnv()): Promise<Measured> {
  const work = join(dir, 'work');
  mkdirSync(work, { recursive: true });
  const list = join(dir, 'repos.txt');
  writeFileSync(list, repos.map((r) => `${r}\n`).join(''));
  const loop = `xargs -P ${parallel} -n 1 sh -c '${FLOOR_SCRIPT.replace(/'/g, `'\\''`)}' floor < "$1"`;
  const m = await measure('the git floor', '/bin/sh', ['-c', loop, 'floor', list], { cwd: work, env });
  // Every repository must have its branch: a loop that skipped work would look fast.
  const missing = repos.filter(
    (r) =>
      !existsSync(
        join(
          r,
          'refs',
          'heads',
          'fleet',
          'floor',
          r
            .split('/')
            .at(-1)!
            .replace(/\.git$/, ''),
        ),
      ),
  );
  if (missing.length) throw new Error(`the git floor did not push ${missing.length} branch(es), e.g. to ${missing[0]}`);
  return { wall_ms: m.wall_ms, cpu_s: m.cpu_s };
}

async function runFleetCli(
  cli: string[],
  dir: string,
  repos: string[],
  parallel: number,
  isolation: 'auto' | 'off',
  env: NodeJS.ProcessEnv = gitEnv(),
): Promise<Measured & { isolation: { kind: string; detail: string } | null }> {
  const file = join(dir, 'fleet.yml');
  const fleet = {
    name: 'bench-floor',
    directive: 'bench directive',
    run: FLOOR_CHANGE,
    max_parallel: parallel,
    max_retries: 0,
    timeout_minutes: 5,
    isolation,
    targets: repos.map((repo) => ({ repo })),
  };
  writeFileSync(file, `${JSON.stringify(fleet, null, 2)}\n`);
  const ws = join(dir, 'workspace');
  const m = await measure(`fleet run (isolation: ${isolation})`, process.execPath, [...cli, 'run', file, '--quiet', '--workspace', ws], { cwd: dir, env });
  const manifest = JSON.parse(readFileSync(join(ws, 'fleet-status.json'), 'utf8')) as {
    lanes: { lane: string; status: string; phase: string; isolation?: { kind: string; detail: string } }[];
  };
  const bad = manifest.lanes.filter((l) => l.status !== 'completed' || l.phase !== 'pushed');
  if (bad.length || manifest.lanes.length !== repos.length) {
    throw new Error(
      `fleet run (isolation: ${isolation}): ${bad.length} of ${manifest.lanes.length} lanes did not end pushed (${bad[0]?.lane} ${bad[0]?.status}/${bad[0]?.phase})`,
    );
  }
  return { wall_ms: m.wall_ms, cpu_s: m.cpu_s, isolation: manifest.lanes[0]?.isolation ?? null };
}

/**
 * Git processes per lane: the loop and the fleet run once more over fresh repositories with GIT_TRACE2_EVENT set to
 * a folder, where every git process (git-remote-*, upload-pack and receive-pack included) writes a file of its own.
 */
async function gitProcesses(cli: string[], dir: string, seed: string, count: number, parallel: number): Promise<{ floor: number; fleet: number }> {
  const out = { floor: 0, fleet: 0 };
  for (const side of ['floor', 'fleet'] as const) {
    const base = join(dir, side);
    const trace = join(base, 'trace2');
    mkdirSync(trace, { recursive: true });
    const repos = makeBareRepos(seed, join(base, 'remotes'), count);
    const env = { ...gitEnv(), GIT_TRACE2_EVENT: trace };
    if (side === 'floor') await runFloor(base, repos, parallel, env);
    else await runFleetCli(cli, base, repos, parallel, 'auto', env);
    out[side] = round(readdirSync(trace).length / count, 2);
  }
  return out;
}

/** `fleet_fixed_start_ms`: `fleet run` of a fleet with one no-op lane, next to `node -e ''`, alternating. */
export async function benchFixedStart(opts: { root: string; tmp: string; seed: string; reps: number; cli: 'src' | 'dist' }): Promise<{
  node_ms: number[];
  fleet_ms: number[];
}> {
  const { args: cli } = await fleetCli(opts.root, opts.tmp, opts.cli);
  const node_ms: number[] = [];
  const fleet_ms: number[] = [];
  for (let r = 0; r < opts.reps; r++) {
    const dir = join(opts.tmp, `fixed-start${r}`);
    const [repo] = makeBareRepos(opts.seed, join(dir, 'remotes'), 1);
    const file = join(dir, 'fleet.yml');
    writeFileSync(file, `${JSON.stringify({ name: 'bench-start', directive: 'no-op', run: 'true', isolation: 'auto', targets: [{ repo }] }, null, 2)}\n`);
    node_ms.push(round((await measure('node', process.execPath, ['-e', ''], { cwd: dir, env: gitEnv() })).wall_ms));
    const m = await measure('fleet run (one no-op lane)', process.execPath, [...cli, 'run', file, '--quiet', '--workspace', join(dir, 'workspace')], {
      cwd: dir,
      env: gitEnv(),
    });
    fleet_ms.push(round(m.wall_ms));
    rmSync(dir, { recursive: true, force: true });
  }
  return { node_ms, fleet_ms };
}

export async function benchFloor(opts: {
  root: string;
  tmp: string;
  seed: string;
  reps: number;
  repositories: number;
  wide: number;
  history: { commits: number; files: number };
  parallel: number;
  cli: 'src' | 'dist';
  keep: boolean;
  log: (s: string) => void;
}): Promise<FloorResult> {
  const { args: cli, label } = await fleetCli(opts.root, opts.tmp, opts.cli);
  const historySeed = makeHistorySeed(opts.tmp, opts.history);
  const packBytes = readdirSync(join(historySeed, 'objects', 'pack')).reduce((n, f) => n + statSync(join(historySeed, 'objects', 'pack', f)).size, 0);
  const reps: FloorRep[] = [];
  let isolation: FloorResult['isolation'] = null;
  const seedOf = (side: Side) => (side.endsWith('_history') ? historySeed : opts.seed);
  const countOf = (side: Side) => (side.endsWith('_wide') ? opts.wide : opts.repositories);
  for (let r = 0; r < opts.reps; r++) {
    const base = join(opts.tmp, `floor${r}`);
    const repos = Object.fromEntries(SIDES.map((s) => [s, makeBareRepos(seedOf(s), join(base, s, 'remotes'), countOf(s))])) as Record<Side, string[]>;
    const order = SIDES.map((_, i) => SIDES[(i + r) % SIDES.length]!);
    const got: Partial<Record<Side, Measured>> = {};
    const b0 = machineBusy();
    const c0 = cpuTimes()?.children_s ?? null;
    for (const side of order) {
      const dir = join(base, side);
      if (side.startsWith('floor')) got[side] = await runFloor(dir, repos[side], opts.parallel);
      else {
        const m = await runFleetCli(cli, dir, repos[side], opts.parallel, side === 'fleet_off' ? 'off' : 'auto');
        if (side === 'fleet') isolation = m.isolation;
        got[side] = { wall_ms: m.wall_ms, cpu_s: m.cpu_s };
      }
    }
    const b1 = machineBusy();
    const c1 = cpuTimes()?.children_s ?? null;
    const g = got as Record<Side, Measured>;
    const { floor, fleet, fleet_off } = g;
    const ratio = (a: number | null, b: number | null) => (a === null || b === null || b <= 0 ? null : round(a / b, 3));
    const kept = (m: Measured): Measured => ({ wall_ms: round(m.wall_ms), cpu_s: m.cpu_s });
    const rep: FloorRep = {
      order: [...order],
      floor: kept(floor),
      fleet: kept(fleet),
      fleet_off: kept(fleet_off),
      floor_wide: kept(g.floor_wide),
      fleet_wide: kept(g.fleet_wide),
      floor_history: kept(g.floor_history),
      fleet_history: kept(g.fleet_history),
      marginal_ratio: round((g.fleet_wide.wall_ms - fleet.wall_ms) / Math.max(1, g.floor_wide.wall_ms - floor.wall_ms), 3),
      history_ratio: round(g.fleet_history.wall_ms / g.floor_history.wall_ms, 3),
      wall_ratio: round(fleet.wall_ms / floor.wall_ms, 3),
      cpu_ratio: ratio(fleet.cpu_s, floor.cpu_s),
      wall_ratio_off: round(fleet_off.wall_ms / floor.wall_ms, 3),
      cpu_ratio_off: ratio(fleet_off.cpu_s, floor.cpu_s),
      others_cpu_s: b0 === null || b1 === null || c0 === null || c1 === null ? null : round(Math.max(0, b1 - b0 - (c1 - c0)), 2),
      loadavg: os.loadavg().map((x) => round(x, 2)),
    };
    reps.push(rep);
    const s = (m: Measured) => `${(m.wall_ms / 1000).toFixed(2)} s`;
    opts.log(
      `  floor rep ${r + 1}/${opts.reps}: ${opts.repositories} repos: git ${s(floor)} / ${floor.cpu_s ?? '?'} cpu-s, ` +
        `fleet ${s(fleet)} / ${fleet.cpu_s ?? '?'} cpu-s (×${rep.wall_ratio} wall, ×${rep.cpu_ratio ?? '?'} cpu), isolation off ${s(fleet_off)} (×${rep.wall_ratio_off}); ` +
        `${opts.wide} repos: git ${s(g.floor_wide)}, fleet ${s(g.fleet_wide)} (marginal ×${rep.marginal_ratio}); ` +
        `history: git ${s(g.floor_history)}, fleet ${s(g.fleet_history)} (×${rep.history_ratio}); others ${rep.others_cpu_s ?? '?'} cpu-s, load ${rep.loadavg.join(' ')}`,
    );
    if (!opts.keep) rmSync(base, { recursive: true, force: true });
  }
  const traced = join(opts.tmp, 'floor-trace');
  const one = await gitProcesses(cli, join(traced, 'one'), opts.seed, opts.repositories, opts.parallel);
  const hist = await gitProcesses(cli, join(traced, 'history'), historySeed, opts.repositories, opts.parallel);
  if (!opts.keep) rmSync(traced, { recursive: true, force: true });
  opts.log(`  git processes per lane: loop ${one.floor}, fleet ${one.fleet}; history: loop ${hist.floor}, fleet ${hist.fleet}`);
  return {
    reps,
    isolation,
    cli: label,
    repositories: opts.repositories,
    wide: opts.wide,
    history: { ...opts.history, pack_bytes: packBytes },
    parallel: opts.parallel,
    git_processes_per_lane: { floor: one.floor, fleet: one.fleet, floor_history: hist.floor, fleet_history: hist.fleet },
  };
}

/** The median of each figure over the repetitions. */
export function floorMedians(reps: readonly FloorRep[]): Record<string, number | null> {
  const m = (xs: (number | null)[]) => {
    const ok = xs.filter((x): x is number => x !== null);
    return ok.length ? median(ok) : null;
  };
  return {
    wall_ratio: m(reps.map((r) => r.wall_ratio)),
    cpu_ratio: m(reps.map((r) => r.cpu_ratio)),
    wall_ratio_off: m(reps.map((r) => r.wall_ratio_off)),
    cpu_ratio_off: m(reps.map((r) => r.cpu_ratio_off)),
    floor_wall_s: m(reps.map((r) => r.floor.wall_ms / 1000)),
    fleet_wall_s: m(reps.map((r) => r.fleet.wall_ms / 1000)),
    floor_cpu_s: m(reps.map((r) => r.floor.cpu_s)),
    fleet_cpu_s: m(reps.map((r) => r.fleet.cpu_s)),
    marginal_ratio: m(reps.map((r) => r.marginal_ratio)),
    history_ratio: m(reps.map((r) => r.history_ratio)),
    floor_wide_s: m(reps.map((r) => r.floor_wide.wall_ms / 1000)),
    fleet_wide_s: m(reps.map((r) => r.fleet_wide.wall_ms / 1000)),
    floor_history_s: m(reps.map((r) => r.floor_history.wall_ms / 1000)),
    fleet_history_s: m(reps.map((r) => r.fleet_history.wall_ms / 1000)),
  };
}
