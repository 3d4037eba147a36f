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
 *   fleet (isolation: off)   the same over a third set, for the sandbox's share (information).
 *
 * The three run one after the other, in an order that rotates each repetition, so a load spike is not always
 * paid by the same side. Wall time is spawn → exit of the outermost process (sh, node). CPU time is the user +
 * system time of the whole process tree: the bench process's `cutime + cstime` from /proc/self/stat (what
 * getrusage(RUSAGE_CHILDREN) reports: every descendant once it has been waited for, and every process here is),
 * read before and after each side, while nothing else of the bench runs. Off Linux only the wall ratio is kept.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { cpuTimes, machineBusy } from './cpu.js';
import { makeBareRepos } from './repos.js';
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

export interface FloorRep {
  order: string[];
  floor: Measured;
  fleet: Measured;
  fleet_off: Measured;
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
  parallel: number;
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

async function runFloor(dir: string, repos: string[], parallel: number): Promise<Measured> {
  const work = join(dir, 'work');
  mkdirSync(work, { recursive: true });
  const list = join(dir, 'repos.txt');
  writeFileSync(list, repos.map((r) => `${r}\n`).join(''));
  const loop = `xargs -P ${parallel} -n 1 sh -c '${FLOOR_SCRIPT.replace(/'/g, `'\\''`)}' floor < "$1"`;
  const m = await measure('the git floor', '/bin/sh', ['-c', loop, 'floor', list], { cwd: work, env: gitEnv() });
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
  const m = await measure(`fleet run (isolation: ${isolation})`, process.execPath, [...cli, 'run', file, '--quiet', '--workspace', ws], {
    cwd: dir,
    env: gitEnv(),
  });
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

export async function benchFloor(opts: {
  root: string;
  tmp: string;
  seed: string;
  reps: number;
  repositories: number;
  parallel: number;
  cli: 'src' | 'dist';
  keep: boolean;
  log: (s: string) => void;
}): Promise<FloorResult> {
  const { args: cli, label } = await fleetCli(opts.root, opts.tmp, opts.cli);
  const reps: FloorRep[] = [];
  let isolation: FloorResult['isolation'] = null;
  const sides = ['floor', 'fleet', 'fleet_off'] as const;
  for (let r = 0; r < opts.reps; r++) {
    const base = join(opts.tmp, `floor${r}`);
    const repos = Object.fromEntries(sides.map((s) => [s, makeBareRepos(opts.seed, join(base, s, 'remotes'), opts.repositories)])) as Record<
      (typeof sides)[number],
      string[]
    >;
    const order = sides.map((_, i) => sides[(i + r) % sides.length]!);
    const got: Partial<Record<(typeof sides)[number], Measured>> = {};
    const b0 = machineBusy();
    const c0 = cpuTimes()?.children_s ?? null;
    for (const side of order) {
      const dir = join(base, side);
      if (side === 'floor') got.floor = await runFloor(dir, repos.floor, opts.parallel);
      else {
        const m = await runFleetCli(cli, dir, repos[side], opts.parallel, side === 'fleet' ? 'auto' : 'off');
        if (side === 'fleet') isolation = m.isolation;
        got[side] = { wall_ms: m.wall_ms, cpu_s: m.cpu_s };
      }
    }
    const b1 = machineBusy();
    const c1 = cpuTimes()?.children_s ?? null;
    const { floor, fleet, fleet_off } = got as Record<(typeof sides)[number], Measured>;
    const ratio = (a: number | null, b: number | null) => (a === null || b === null || b <= 0 ? null : round(a / b, 3));
    const rep: FloorRep = {
      order: [...order],
      floor: { wall_ms: round(floor.wall_ms), cpu_s: floor.cpu_s },
      fleet: { wall_ms: round(fleet.wall_ms), cpu_s: fleet.cpu_s },
      fleet_off: { wall_ms: round(fleet_off.wall_ms), cpu_s: fleet_off.cpu_s },
      wall_ratio: round(fleet.wall_ms / floor.wall_ms, 3),
      cpu_ratio: ratio(fleet.cpu_s, floor.cpu_s),
      wall_ratio_off: round(fleet_off.wall_ms / floor.wall_ms, 3),
      cpu_ratio_off: ratio(fleet_off.cpu_s, floor.cpu_s),
      others_cpu_s: b0 === null || b1 === null || c0 === null || c1 === null ? null : round(Math.max(0, b1 - b0 - (c1 - c0)), 2),
      loadavg: os.loadavg().map((x) => round(x, 2)),
    };
    reps.push(rep);
    opts.log(
      `  floor rep ${r + 1}/${opts.reps} (${order.join(' → ')}): git floor ${(floor.wall_ms / 1000).toFixed(2)} s / ${floor.cpu_s ?? '?'} cpu-s; ` +
        `fleet ${(fleet.wall_ms / 1000).toFixed(2)} s / ${fleet.cpu_s ?? '?'} cpu-s (×${rep.wall_ratio} wall, ×${rep.cpu_ratio ?? '?'} cpu); ` +
        `isolation off ${(fleet_off.wall_ms / 1000).toFixed(2)} s / ${fleet_off.cpu_s ?? '?'} cpu-s (×${rep.wall_ratio_off}, ×${rep.cpu_ratio_off ?? '?'}); ` +
        `others ${rep.others_cpu_s ?? '?'} cpu-s, load ${rep.loadavg.join(' ')}`,
    );
    if (!opts.keep) rmSync(base, { recursive: true, force: true });
  }
  return { reps, isolation, cli: label, repositories: opts.repositories, parallel: opts.parallel };
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
  };
}
