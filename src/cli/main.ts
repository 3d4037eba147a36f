/**
 * The `fleet` command. Thin: parse flags, build the local ports, call a step,
 * print, and map the outcome to an exit code (0 done, 1 a lane failed, 2 bad
 * input or set-up failure).
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { formatProblems, type Problem } from '../core/validate.js';
import { Manifest, SCHEMA_VERSION } from '../core/model.js';
import { renderPlan, renderReport, renderStatusTable } from '../core/report.js';
import { killAllRunning } from '../local/exec.js';
import { setupForge } from '../adapters.js';
import { GIT_LOCATING_ENV } from '../local/git.js';
import { closeGitLauncher } from '../local/launcher.js';
import { localExecutor, localWorkspace } from '../local/workspace.js';
import { systemClock } from '../ports.js';
import { loadFleetFile } from '../steps/load.js';
import { planStep } from '../steps/plan.js';
import { exitCodeFor, INTERRUPT_GRACE_MS, nothingRan, runFleet, writeInterruptedState } from '../steps/run.js';
import { readTextFile, writeFileAtomic } from '../util/fs.js';
import { MAX_FLEET_JSON_BYTES } from '../core/limits.js';
import { LiveView } from './live.js';
import { appFromEnv, appIsolationProblem, targetOwners, type CliApp } from './app.js';
import { maskPrivateKey, privateKeyParts } from '../github/app-key.js';
import type { TokenCredential } from '../github/credential.js';
import { redact } from '../local/git.js';

export const USAGE = `fleet — apply one directive across many repositories, in dependency waves

Usage:
  fleet plan <fleet-file> [--json] [--repos-root DIR] [--max-parallel N]
  fleet run <fleet-file> [--max-parallel N] [--dry-run] [--workspace DIR] [--speculative N]
                         [--resume MANIFEST | --since MANIFEST] [--repos-root DIR] [--quiet]
  fleet status <fleet-status.json>
  fleet report <fleet-status.json>

Options:
  --max-parallel N   lanes running at once (overrides max_parallel)
  --dry-run          run the directive and keep the patch; push nothing
  --speculative N    try every lane N ways at once (strategies s1…sN of its own
                     directive); only the pick opens a PR (speculative.pick)
  --workspace DIR    where clones, logs, results and the manifest go
                     (default _workspace/fleet/<fleet_id>, kept for audit)
  --resume MANIFEST  re-run only the lanes that did not complete in that run
  --since MANIFEST   incremental sweep: a lane that completed (or was a no-op) in that
                     run, whose target's base commit and digest are the same, ends
                     unchanged without a clone
  --repos-root DIR   where owner/repo targets live on disk (<DIR>/<owner>/<repo>)
  --json             print the plan as JSON
  --quiet            no live view; print only the final report

Exit codes: 0 every lane completed or had nothing to do, 1 some lane failed or was skipped,
2 bad input or set-up failure, 130 interrupted (Ctrl-C or SIGTERM; the
manifest is written, running commands are stopped; --resume picks it up).`;

export interface CliIo {
  stdout: { write(s: string): unknown; isTTY?: boolean; columns?: number };
  stderr: { write(s: string): unknown };
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborted on Ctrl-C (SIGINT) or SIGTERM: `fleet run` stops starting lanes, writes its manifest and exits 130. */
  signal?: AbortSignal;
  /** After an interrupt, how long lanes get to stop before the run ends without them (default INTERRUPT_GRACE_MS). */
  interruptGraceMs?: number;
}

class UsageError extends Error {}

/** 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C. */
export const EXIT_INTERRUPTED = 130;

/**
 * Fleet's own credentials never reach a directive's environment, nor do the
 * variables Fleet documents as token sources (GITHUB_TOKEN, GH_TOKEN), whether
 * or not this run took its token from them: on a runner GITHUB_TOKEN is the
 * job's own token, and a directive that wants a token of its own is given one
 * under a name of the user's choosing.
 */
const WITHHELD_ENV = [
  'FLEET_GITHUB_TOKEN', 'GITHUB_TOKEN', 'GH_TOKEN', 'FLEET_TOKEN', 'FLEET_RUN_TOKEN', 'INPUT_TOKEN', 'INPUT_GITHUB-TOKEN',
  'FLEET_APP_PRIVATE_KEY', 'INPUT_APP-PRIVATE-KEY', 'INPUT_PRIVATE-KEY',
  'ACTIONS_RUNTIME_TOKEN', 'ACTIONS_ID_TOKEN_REQUEST_TOKEN',
  // Agent credentials given to the action: they reach an agent directive under the CLI's own names, and nothing else.
  'FLEET_AGENT_ANTHROPIC_API_KEY', 'FLEET_AGENT_CLAUDE_CODE_OAUTH_TOKEN', 'FLEET_AGENT_OPENAI_API_KEY',
];

/**
 * The runner's command files: a directive that could write them would set the
 * job's outputs, its summary (a fake "every lane completed"), or the PATH and
 * environment of the steps after Fleet's (a `git` of its own, run by
 * actions/checkout's post step with the job's token). Fleet writes them; its
 * directives never see where they are.
 */
const RUNNER_COMMAND_FILES = ['GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_OUTPUT', 'GITHUB_STATE', 'GITHUB_STEP_SUMMARY'];

/**
 * Takes Fleet's credentials out of this process's own environment and returns
 * the environment as it was, for `main`'s io. Children inherit process.env (git
 * does, and through git any program a directive managed to configure for it:
 * an fsmonitor, a filter, a credential helper), so a secret left there could
 * reach a directive's hands after all. Whatever needs a credential reads it
 * from io.env.
 */
export function withholdFromProcessEnv(keep: readonly string[] = []): NodeJS.ProcessEnv {
  const original = { ...process.env };
  for (const k of WITHHELD_ENV) if (!keep.includes(k)) delete process.env[k];
  return original;
}


/**
 * The environment a directive gets: the caller's, less Fleet's credentials (and
 * the variable the forge token came from), and less any variable whose value
 * holds one of `secrets` (the forge token in its plain and basic-auth forms):
 * the same token exported a second time (`GITHUB_TOKEN=$FLEET_GITHUB_TOKEN`, a
 * header or URL built from it) would otherwise reach the directive, and through
 * it a file that is committed and pushed.
 */
export function directiveEnv(env: NodeJS.ProcessEnv, tokenVariable?: string, secrets: readonly (string | undefined)[] = []): Record<string, string> {
  const held = secrets.filter((s): s is string => typeof s === 'string' && s.length >= 8);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || WITHHELD_ENV.includes(k) || RUNNER_COMMAND_FILES.includes(k) || (GIT_LOCATING_ENV as readonly string[]).includes(k) || k === tokenVariable) continue;
    if (held.some((s) => v.includes(s))) continue;
    out[k] = v;
  }
  return out;
}

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new UsageError(`--${flag} takes a whole number from 1 to 256, got "${value}"`);
  return n;
}

async function readManifest(path: string): Promise<Manifest | Problem[]> {
  const read = await readTextFile(path, MAX_FLEET_JSON_BYTES, 'a manifest');
  if (!read.ok) {
    const message = read.message.startsWith('no such file') ? 'no such file: pass the fleet-status.json a run wrote' : read.message;
    return [{ file: path, field: '(file)', message }];
  }
  let json: unknown;
  try {
    json = JSON.parse(read.text);
  } catch (err) {
    return [{ file: path, field: '(syntax)', message: `not valid JSON: ${(err as Error).message}` }];
  }
  const parsed = Manifest.safeParse(json);
  if (!parsed.success) {
    return parsed.error.issues.map((i) => ({ file: path, field: i.path.join('.') || '(top level)', message: i.message }));
  }
  return parsed.data;
}

/**
 * The previous run of an incremental sweep. A manifest of another schema version (an older Fleet) is no error:
 * every lane then runs, and the string says why. A file that is missing or not a manifest at all is bad input.
 */
async function readSince(path: string): Promise<Manifest | Problem[] | string> {
  const m = await readManifest(path);
  if (!Array.isArray(m)) return m;
  try {
    const version = (JSON.parse(await readFile(path, 'utf8')) as { schema_version?: unknown }).schema_version;
    if (typeof version === 'string' && version !== SCHEMA_VERSION) return `${path} was written by another Fleet (manifest version ${version}, this one writes ${SCHEMA_VERSION})`;
  } catch {
    // readManifest already said what is wrong with the file
  }
  return m;
}

/**
 * Why `--workspace` cannot be used, checked before anything is written: it
 * must be a folder, or creatable as one (its nearest existing parent a folder).
 */
async function workspaceProblem(dir: string): Promise<Problem | undefined> {
  const problem = (message: string): Problem => ({ file: dir, field: '--workspace', message });
  for (let p = dir; ; p = dirname(p)) {
    let st;
    try {
      st = await stat(p);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === 'ENOENT' || code === 'ENOTDIR') && dirname(p) !== p) continue;
      return problem(`cannot use it (${code ?? (err as Error).message})`);
    }
    if (st.isDirectory()) return undefined;
    return p === dir
      ? problem('it is a file, not a folder: name a folder (it is created when missing)')
      : problem(`${p} is a file, so no folder can be created under it: name another folder`);
  }
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (!command || command === 'help' || command === '--help' || command === '-h') {
      io.stdout.write(`${USAGE}\n`);
      return command ? 0 : 2;
    }
    const { values, positionals } = (() => {
      try {
        return parseArgs({
          args: rest,
          allowPositionals: true,
          strict: true,
          options: {
            json: { type: 'boolean' },
            'dry-run': { type: 'boolean' },
            quiet: { type: 'boolean' },
            'max-parallel': { type: 'string' },
            speculative: { type: 'string' },
            workspace: { type: 'string' },
            resume: { type: 'string' },
            since: { type: 'string' },
            'repos-root': { type: 'string' },
          },
        });
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
    })();
    const target = positionals[0];
    if (positionals.length !== 1 || !target) throw new UsageError(`fleet ${command} takes exactly one file, got ${positionals.length}`);
    const path = resolve(io.cwd, target);

    if (command === 'status' || command === 'report') {
      const m = await readManifest(path);
      if (Array.isArray(m)) {
        io.stderr.write(`${formatProblems(m)}\n`);
        return 2;
      }
      const now = command === 'status' ? systemClock.now().toISOString() : (m.ended_at ?? systemClock.now().toISOString());
      const text = command === 'status' ? renderStatusTable(m, { now }) : renderReport(m, { now, workspace: dirname(path) });
      io.stdout.write(`${text}\n`);
      return command === 'report' ? exitCodeFor(m) : 0;
    }
    if (command !== 'plan' && command !== 'run') throw new UsageError(`unknown command "${command}"`);

    // Every problem of the input at once: the fleet file's and the flags'.
    const speculative = values.speculative === undefined ? undefined : positiveInt('speculative', values.speculative);
    const loaded = await loadFleetFile(path, { speculative });
    const problems = loaded.ok ? [] : [...loaded.problems];
    const ws = command === 'run' && values.workspace ? await workspaceProblem(resolve(io.cwd, values.workspace)) : undefined;
    if (ws) problems.push(ws);
    // App credentials (FLEET_APP_*) serve a fleet on GitHub; a fleet file with problems still gets its credentials checked.
    const appEnv = loaded.ok
      ? loaded.fleet.file.forge === 'github'
        ? appFromEnv(io.env, targetOwners(loaded.fleet), path)
        : { problems: [] }
      : appFromEnv(io.env, undefined, path);
    problems.push(...appEnv.problems);
    if (!loaded.ok || problems.length) {
      io.stderr.write(`${formatProblems(problems)}\n`);
      return 2;
    }
    for (const note of loaded.fleet.notes) io.stderr.write(`note: ${note}\n`);
    const maxParallel = positiveInt('max-parallel', values['max-parallel']);
    let credential: TokenCredential | undefined;
    if (appEnv.app && command === 'run') {
      const iso = localExecutor.isolation(loaded.fleet.file.isolation);
      const why = appIsolationProblem(loaded.fleet.file.isolation, iso.kind, iso.detail);
      if (why) {
        io.stderr.write(`${formatProblems([{ file: path, field: 'isolation', message: why }])}\n`);
        return 2;
      }
    }
    if (appEnv.app) {
      // Registers the key and each line of it with Fleet's redactor. No ::add-mask:: here: stdout is the report (mode: run
      // copies it into the job summary), and on a runner the key comes from a secret the runner already masks.
      maskPrivateKey(appEnv.app.privateKey, () => undefined);
      try {
        const token = await mintAppToken(appEnv.app, command === 'plan', io.env);
        MINTED.add(token);
        credential = token;
      } catch (err) {
        io.stderr.write(`${path}: forge: ${redact((err as Error).message)}\n`);
        return 2;
      }
    }
    const setup = await setupForge(loaded.fleet.file, {
      env: io.env,
      ...(credential ? { token: credential.current(), credential } : {}),
      baseDir: dirname(path),
      reposRoot: values['repos-root'] ? resolve(io.cwd, values['repos-root']) : undefined,
      logger: { info: () => undefined, warn: (m) => void io.stderr.write(`warning: ${m}\n`), error: (m) => void io.stderr.write(`error: ${m}\n`) },
    });
    if ('problem' in setup) {
      // The problem names its own field (forge: …, or the environment variable at fault).
      io.stderr.write(`${path}: ${setup.problem}\n`);
      return 2;
    }
    const { forge, discover, queue, settleQueue } = setup;

    if (command === 'plan') {
      const planned = await planStep(loaded.fleet, forge, systemClock, { file: path, maxParallel, discover, queue, readOnly: true });
      if (!planned.ok) {
        io.stderr.write(`${formatProblems(planned.problems)}\n`);
        return 2;
      }
      io.stdout.write(values.json ? `${JSON.stringify(planned.manifest, null, 2)}\n` : `${renderPlan(planned.manifest)}\n`);
      return 0;
    }

    let resume: { manifest: Manifest; root: string } | undefined;
    if (values.resume && loaded.fleet.file.source?.issues) {
      io.stderr.write(`${path}: source.issues: an issue queue resumes by running again: the next run resumes every issue whose branch has no PR; run it without --resume\n`);
      return 2;
    }
    if (values.resume) {
      const mp = resolve(io.cwd, values.resume);
      const m = await readManifest(mp);
      if (Array.isArray(m)) {
        io.stderr.write(`${formatProblems(m)}\n`);
        return 2;
      }
      if (m.name !== loaded.fleet.file.name) {
        io.stderr.write(`${mp}: this manifest is of fleet "${m.name}", not "${loaded.fleet.file.name}": resume it with its own fleet file\n`);
        return 2;
      }
      resume = { manifest: m, root: dirname(mp) };
    }
    let since: Manifest | undefined;
    if (values.since) {
      if (values.resume) throw new UsageError('--since and --resume cannot be used together: a resumed run re-runs what did not complete, an incremental sweep starts a new run');
      const mp = resolve(io.cwd, values.since);
      const read = await readSince(mp);
      if (Array.isArray(read)) {
        io.stderr.write(`${formatProblems(read)}\n`);
        return 2;
      }
      if (typeof read === 'string') io.stderr.write(`note: every lane runs: ${read}\n`);
      else if (read.name !== loaded.fleet.file.name) {
        io.stderr.write(`${mp}: --since: this manifest is of fleet "${read.name}", not "${loaded.fleet.file.name}": pass a manifest of this fleet\n`);
        return 2;
      } else since = read;
    }

    const live = values.quiet ? undefined : new LiveView(io.stdout);
    const outcome = await runFleet({
      fleet: loaded.fleet,
      file: path,
      forge,
      workspace: localWorkspace,
      exec: localExecutor,
      clock: systemClock,
      env: directiveEnv(io.env, setup.tokenVariable, [...(setup.secrets ?? []), ...(appEnv.app ? privateKeyParts(io.env.FLEET_APP_PRIVATE_KEY ?? '') : [])]),
      discover,
      queue,
      settleQueue,
      root: values.workspace ? resolve(io.cwd, values.workspace) : undefined,
      cwd: io.cwd,
      maxParallel,
      dryRun: values['dry-run'] ?? false,
      resume,
      since,
      onPlan: (m, root) => live?.start(m, root),
      onEvent: (e, lanes) => live?.event(e, lanes),
      signal: io.signal,
      interruptGraceMs: io.interruptGraceMs,
    });
    live?.stop();
    if (!outcome.ok) {
      io.stderr.write(`${formatProblems(outcome.problems)}\n`);
      return 2;
    }
    for (const note of outcome.notes) io.stderr.write(`note: ${note}\n`);
    const report = renderReport(outcome.manifest, { now: outcome.manifest.ended_at!, workspace: outcome.root });
    await writeFileAtomic(resolve(outcome.root, 'report.md'), `${report}\n`);
    io.stdout.write(`\n${report}\n`);
    if (io.signal?.aborted) {
      io.stderr.write(`fleet: interrupted; the lanes that had not finished are marked cancelled. Resume with: fleet run ${target} --resume ${resolve(outcome.root, 'fleet-status.json')}\n`);
      return EXIT_INTERRUPTED;
    }
    if (nothingRan(outcome.manifest)) io.stderr.write(`${path}: no lane ran: every target was excluded (${outcome.manifest.lanes.length}); the report says why for each\n`);
    return exitCodeFor(outcome.manifest);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`fleet: ${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    // A failure nobody foresaw: its message for the user, the stack only on request (it helps a bug report, not a fix).
    const debug = io.env.FLEET_DEBUG === '1';
    io.stderr.write(`fleet: ${debug ? ((err as Error).stack ?? String(err)) : err instanceof Error ? err.message : String(err)}\n`);
    if (!debug) io.stderr.write('fleet: run again with FLEET_DEBUG=1 for the stack trace\n');
    return 2;
  } finally {
    if ((await revokeMinted()) > 0) io.stderr.write('warning: a GitHub App installation token could not be revoked; it expires within the hour\n');
  }
}

/** Installation tokens minted and not yet revoked: revoked when the command ends, or by an interrupt that cannot wait for it. */
const MINTED = new Set<{ revoke(): Promise<{ revoked: number; failed: number }> }>();

/** Revokes every token still held; returns how many could not be. */
async function revokeMinted(): Promise<number> {
  let failed = 0;
  for (const token of [...MINTED]) {
    MINTED.delete(token);
    failed += (await token.revoke().catch(() => ({ failed: 1 }))).failed;
  }
  return failed;
}

/**
 * The App's installation token for this command, renewed while it runs. `fleet plan` only reads the targets: its
 * token is read-only. The App code (and @octokit/auth-app) loads only when App credentials are given.
 */
async function mintAppToken(app: CliApp, readOnly: boolean, env: NodeJS.ProcessEnv) {
  const { AppInstallationToken, resolveApiUrl } = await import('../github/app-token.js');
  return AppInstallationToken.start({ ...app, readOnly }, { apiUrl: resolveApiUrl(env.GITHUB_API_URL) });
}

/** After an interrupt, how long a command that ignores SIGTERM keeps running before SIGKILL. */
const KILL_AFTER_MS = 5_000;

/**
 * The process entry (bin/index.ts, and this file run directly): Fleet's secrets
 * out of the process environment, and interrupts handled. Directives and
 * Fleet's own git run in process groups of their own, so the terminal's Ctrl-C
 * never reaches them: the first SIGINT/SIGTERM aborts the run (no lane starts,
 * running lanes stop) and sends SIGTERM to every running group, SIGKILL to
 * what is left after KILL_AFTER_MS; lanes that still have not stopped after
 * the run's grace (stuck in a forge call) are recorded as cancelled; the run
 * writes its manifest and report and exits 130. A second interrupt, or a run
 * that cannot finish even then, writes the manifest and report as they stand,
 * kills what is left and exits at once. No exit leaves a process of Fleet's.
 */
export async function runCli(argv: string[]): Promise<void> {
  const env = withholdFromProcessEnv();
  const controller = new AbortController();
  let interrupts = 0;
  const exitNow = () => {
    killAllRunning('SIGKILL');
    try {
      const root = writeInterruptedState();
      if (root) process.stderr.write(`fleet: stopped at once; the manifest and report as they stood are in ${root}\n`);
    } catch (err) {
      process.stderr.write(`fleet: could not write the manifest: ${(err as Error).message}\n`);
    }
    // The App tokens this run minted are revoked even now (a runner cancels with SIGINT, then SIGTERM): a few seconds at most.
    void Promise.race([revokeMinted(), new Promise((r) => setTimeout(r, 3_000))]).finally(() => process.exit(EXIT_INTERRUPTED));
  };
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts++;
    if (interrupts > 1) return exitNow();
    process.stderr.write(`\nfleet: ${signal}: stopping the running lanes (again to quit at once)…\n`);
    controller.abort();
    killAllRunning('SIGTERM');
    setTimeout(() => killAllRunning('SIGKILL'), KILL_AFTER_MS).unref();
    // The run ends by itself after its grace; this only guards against a write that never returns.
    setTimeout(exitNow, INTERRUPT_GRACE_MS + 20_000).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let code: number;
  try {
    code = await main(argv, { stdout: process.stdout, stderr: process.stderr, env, cwd: process.cwd(), signal: controller.signal });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await closeGitLauncher();
  }
  process.exitCode = code;
  if (controller.signal.aborted) {
    // A forge call a stuck lane still waits on would keep this process alive: the run is over, so leave now.
    killAllRunning('SIGKILL');
    await new Promise<void>((r) => process.stdout.write('', () => r()));
    process.exit(code);
  }
}

// `npm run fleet -- …` runs this file directly (the bin and bundle use index.ts): run the CLI then too.
if (/[/\\]cli[/\\]main\.[jt]s$/.test(process.argv[1] ?? '')) await runCli(process.argv.slice(2));
