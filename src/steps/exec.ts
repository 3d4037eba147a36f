/**
 * `fleet exec`: a question asked of every target ("which repositories still use X?"). The command runs in a fresh
 * clone of each target, as a directive does (its environment, its isolation, its timeout), and its output is kept
 * per repository; nothing is committed or pushed, and the clones are removed. The command's exit code is an answer
 * (grep exits 1 for "not found"), not a failure: the step fails only a target it could not ask.
 */
import { chmod, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Problem, ResolvedFleet } from '../core/validate.js';
import type { Clock, Executor, Forge, Workspace } from '../ports.js';
import { mapLimit } from '../util/pool.js';
import { readUntrustedText, writeFileAtomic } from '../util/fs.js';
import { planStep, type PlanStepOptions } from './plan.js';
import { lockWorkspace } from '../util/lock.js';

/** What one target answered. `output` is the command's combined output, cut to OUTPUT_KEPT_BYTES from its end. */
export interface ExecRow {
  lane: string;
  repo: string;
  /** ran: the command ran to an exit code; failed: it could not be asked (clone, timeout, signal); excluded: not run. */
  status: 'ran' | 'failed' | 'excluded';
  exit_code: number | null;
  output: string;
  /** The full output, relative to the workspace. */
  output_file: string | null;
  detail: string | null;
  duration_ms: number;
}

export interface ExecOutcome {
  root: string;
  rows: ExecRow[];
  /** Said once for the whole run: the command ran without isolation (isolation: auto on a machine that has none). */
  notes: string[];
}

/** How much of each target's output the summary (and --json) carries; the file keeps the rest, up to the log cap. */
export const OUTPUT_KEPT_BYTES = 64 * 1024;

export interface ExecInput {
  fleet: ResolvedFleet;
  file: string;
  command: string;
  forge: Forge;
  workspace: Workspace;
  exec: Executor;
  clock: Clock;
  env: Record<string, string>;
  /** The folder the outputs go to (made when missing). */
  root: string;
  maxParallel?: number;
  discover?: PlanStepOptions['discover'];
  signal?: AbortSignal;
}

export async function execFleet(input: ExecInput): Promise<{ ok: true; outcome: ExecOutcome } | { ok: false; problems: Problem[] }> {
  const { fleet, forge } = input;
  if (fleet.file.source?.issues)
    return { ok: false, problems: [{ file: input.file, field: 'source.issues', message: 'fleet exec asks targets, not an issue queue: list targets' }] };
  // As fleet run does, before anything is cloned: a fleet that requires isolation on a machine that cannot give it.
  const isolation = await input.exec.isolation(fleet.file.isolation);
  if (fleet.file.isolation === 'required' && isolation.kind === 'none') {
    return {
      ok: false,
      problems: [{ file: input.file, field: 'isolation', message: `required, but commands cannot be isolated on this machine: ${isolation.detail}` }],
    };
  }
  const notes = fleet.file.isolation !== 'off' && isolation.kind === 'none' ? [`the command ran without isolation in every target: ${isolation.detail}`] : [];
  const unusable = await rootProblem(input.root);
  if (unusable) return { ok: false, problems: [{ file: input.root, field: '--workspace', message: unusable }] };
  // dryRun: exec pushes nothing, so nothing a push would be refused for (workflow files) keeps a target out.
  const planned = await planStep(fleet, forge, input.clock, {
    file: input.file,
    maxParallel: input.maxParallel,
    discover: input.discover,
    readOnly: true,
    dryRun: true,
  });
  if (!planned.ok) return planned;
  await mkdir(input.root, { recursive: true });
  // One exec at a time in a folder: a second one would remove the first one's clones under it.
  const lock = await lockWorkspace(input.root, `exec-${fleet.file.name}`);
  if (!lock.ok) return { ok: false, problems: [{ file: input.root, field: '(workspace)', message: lock.message }] };
  try {
    const excluded = new Map(planned.manifest.excluded.map((e) => [e.lane, e]));
    const lanes = planned.plan.lanes.map((l) => l.spec);
    const budget = input.maxParallel ?? fleet.file.max_parallel;
    const rows = await mapLimit(lanes, budget, async (lane): Promise<ExecRow> => {
      const gone = excluded.get(lane.id);
      if (gone) return row(lane, { status: 'excluded', detail: `${gone.reason}: ${gone.detail}` });
      if (input.signal?.aborted) return row(lane, { status: 'failed', detail: 'interrupted before it ran' });
      return askTarget(input, lane);
    });
    // Targets the plan excluded before they became lanes (an unreadable repository) are accounted for too.
    const seen = new Set(rows.map((r) => r.lane));
    for (const e of planned.manifest.excluded)
      if (!seen.has(e.lane)) rows.push(row({ id: e.lane, repo: e.repo }, { status: 'excluded', detail: `${e.reason}: ${e.detail}` }));
    await writeFileAtomic(join(input.root, 'exec.json'), `${JSON.stringify({ command: input.command, fleet: fleet.file.name, rows }, null, 2)}\n`);
    return { ok: true, outcome: { root: input.root, rows, notes } };
  } finally {
    await lock.release();
  }
}

/**
 * Why `root` cannot hold an exec's outputs: a folder with files of its own (not an earlier exec's: one with
 * exec.json) would have its targets/ overwritten.
 */
async function rootProblem(root: string): Promise<string | undefined> {
  const entries: string[] | null = await readdir(root).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? [] : null));
  if (entries === null) return 'cannot be used as a folder: name a folder (it is created when missing)';
  if (entries.length && !entries.includes('exec.json')) return "is a folder with files of its own: name an empty or new folder, or an earlier fleet exec's";
  return undefined;
}

type LaneLike = { id: string; repo: string };

function row(lane: LaneLike, part: Partial<ExecRow> & Pick<ExecRow, 'status'>): ExecRow {
  return { lane: lane.id, repo: lane.repo, exit_code: null, output: '', output_file: null, detail: null, duration_ms: 0, ...part };
}

/** Clone, run, keep the output, remove the clone. */
async function askTarget(input: ExecInput, lane: ResolvedFleet['lanes'][number]): Promise<ExecRow> {
  const dir = join(input.root, 'targets', lane.id);
  const repoDir = join(dir, 'repo');
  const log = join(dir, 'output.log');
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const timeoutMs = input.fleet.file.timeout_minutes * 60_000;
  try {
    try {
      await input.workspace.clone(input.forge.cloneUrl(lane), repoDir, {
        base: lane.base ?? input.forge.baseBranch?.(lane),
        branch: lane.branch,
        env: input.forge.gitEnv(),
        timeoutMs: input.fleet.file.git_timeout_minutes * 60_000,
      });
    } catch (err) {
      return row(lane, { status: 'failed', detail: `clone failed: ${(err as Error).message.split('\n')[0]}` });
    }
    const env = { ...input.env, FLEET_NAME: input.fleet.file.name, FLEET_REPO: lane.repo, FLEET_LANE: lane.id };
    const r = await input.exec.run(input.command, {
      cwd: repoDir,
      env,
      timeoutMs,
      logFile: log,
      isolation: input.fleet.file.isolation,
      confine: { workspace: input.root, lane: dir },
    });
    // The command may have removed or replaced its own log (it runs beside it): then there is no output to keep.
    const size = await stat(log).then(
      (st) => (st.isFile() ? st.size : 0),
      () => 0,
    );
    const output = size ? commandOutput(await readUntrustedText(log, OUTPUT_KEPT_BYTES, { tail: true }), size > OUTPUT_KEPT_BYTES) : '';
    const stopped = r.timedOut ? `timed out after ${input.fleet.file.timeout_minutes} min` : r.exitCode === null ? `killed by ${r.signal ?? 'a signal'}` : null;
    return row(lane, {
      status: stopped ? 'failed' : 'ran',
      exit_code: r.exitCode,
      output,
      output_file: join('targets', lane.id, 'output.log'),
      detail: stopped,
      duration_ms: r.durationMs,
    });
  } finally {
    await removeClone(repoDir);
  }
}

/** Removes a clone the command may have left unwritable (`chmod 0` on a folder): write access back first. */
async function removeClone(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
    return;
  } catch {
    // fall through: give every folder back its owner's write and search bits, then try again
  }
  const open = async (d: string): Promise<void> => {
    await chmod(d, 0o700).catch(() => undefined);
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) if (e.isDirectory()) await open(join(d, e.name));
  };
  await open(dir);
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
}

/**
 * The command's own output from its log: without the lines the executor writes around it (the command and folder
 * before, the exit code after; the row says those), and saying so when the start was cut.
 */
export function commandOutput(log: string, cut: boolean): string {
  const lines = log.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (/^=== exit=/.test(lines.at(-1) ?? '')) lines.pop();
  // The header is the command (which may span lines) and then its folder: up to and with the `=== cwd:` line.
  const cwdLine = lines.findIndex((l) => /^=== cwd: /.test(l));
  if (!cut && /^=== \d{4}-\d\d-\d\dT/.test(lines[0] ?? '') && cwdLine >= 1) lines.splice(0, cwdLine + 1);
  else if (cut) lines.splice(0, 1, `[… the start is cut: the last ${OUTPUT_KEPT_BYTES / 1024} KiB follow]`);
  return lines.length ? `${lines.join('\n')}\n` : '';
}
