/**
 * The `fleet` command. Thin: parse flags, build the local ports, call a step,
 * print, and map the outcome to an exit code (0 done, 1 a lane failed, 2 bad
 * input or set-up failure).
 */
import { existsSync, type Stats } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { formatProblems, type Problem, shownFile } from '../core/validate.js';
import { type LaneRecord, type Manifest, SCHEMA_VERSION } from '../core/model.js';
import { ciRed } from '../core/manifest.js';
import { matchesAny, matchesGlob } from '../core/glob.js';
import { renderPlan, renderReport, renderStatusTable } from '../core/report.js';
import { killAllRunning } from '../workspace/exec.js';
import { parseAuthor } from '../core/commit-identity.js';
import { openSession, type Connection, type Session } from '../session/session.js';
import { enterProcess, EXIT_INTERRUPTED } from '../session/interrupts.js';
import { systemClock } from '../ports.js';
import { loadFleetFile } from '../steps/load.js';
import { planStep } from '../steps/plan.js';
import { exitCodeFor, nothingRan } from '../steps/outcome.js';
import { type RunOptions, runFleet } from '../steps/drivers/process.js';
import { INTERRUPT_GRACE_MS, writeInterruptedState } from '../steps/drivers/process-interrupt.js';
import { ignoreWorkspace } from '../steps/drivers/process-workspace.js';
import { cleanWorkspace } from '../steps/clean.js';
import { formatBytes } from '../core/limits.js';
import { readTextFile, writeFileAtomic } from '../util/fs.js';
import { sealProblem, useManifestSeal } from '../util/manifest-seal.js';
import { MAX_FLEET_JSON_BYTES } from '../core/limits.js';
import { LiveView } from './live.js';
import {
  commandHelp,
  commandNamed,
  overview,
  parseCommand,
  shellWord,
  unknownCommand,
  usageLine,
  UsageError,
  type CommandSpec,
  type Flags,
  type Parsed,
} from './commands.js';
import { ADHOC_RECORD, type AdhocRecord, adhocFleetFile, FLAGS_FILE, isAdhoc } from './adhoc.js';
import { renderExec } from './exec-view.js';
import { execFleet } from '../steps/exec.js';
import { runDoctor } from '../steps/doctor.js';
import { doctorExitCode, renderFindings } from '../core/doctor.js';
import { prsCommand, readManifestFile } from '../steps/prs.js';
import { mergeMethodFor, prsJson, renderPrsActions, renderPrsTable } from '../core/prs.js';
import { renderBranch, type ResolvedFleet } from '../core/validate.js';
import { locateManifest } from './locate.js';
import { VERSION } from './version.js';
import { appFromEnv, targetOwners } from './app.js';
import { redact } from '../util/secrets.js';
import { showInvisibles } from '../core/text.js';
import { terminalText } from '../core/markdown.js';

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

export { EXIT_INTERRUPTED };

function positiveInt(flag: string, value: unknown, command?: CommandSpec): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new UsageError(`--${flag} takes a whole number from 1 to 256, got "${String(value)}"`, command);
  return n;
}

function branchConflictFlag(value: string | undefined, command: CommandSpec): string | undefined {
  if (value === undefined || ['fail', 'replace', 'rebase'].includes(value)) return value;
  throw new UsageError(`--branch-conflict takes fail, replace or rebase, got ${JSON.stringify(value)}`, command);
}

function authorFlag(value: string | undefined, command: CommandSpec): string | undefined {
  if (value === undefined || parseAuthor(value)) return value;
  throw new UsageError(`--author takes "Name <email>", as git shows an author, got ${JSON.stringify(value)}`, command);
}

async function readManifest(path: string): Promise<Manifest | Problem[]> {
  const read = await readManifestAndText(path);
  return Array.isArray(read) ? read : read.manifest;
}

/** A manifest and the text it was read from (what its seal is checked against). */
async function readManifestAndText(path: string): Promise<{ manifest: Manifest; text: string } | Problem[]> {
  const read = await readManifestFile(path);
  return read.ok ? read : read.problems;
}

/**
 * The previous run of an incremental sweep. A manifest of another schema version (an older Fleet) is no error:
 * every lane then runs, and the string says why. A file that is missing or not a manifest at all is bad input.
 */
async function readSince(path: string): Promise<{ manifest: Manifest; text: string } | Problem[] | string> {
  const m = await readManifestAndText(path);
  if (!Array.isArray(m)) return m;
  try {
    const version = (JSON.parse(await readFile(path, 'utf8')) as { schema_version?: unknown }).schema_version;
    if (typeof version === 'string' && version !== SCHEMA_VERSION)
      return `${path} was written by another Fleet (manifest version ${version}, this one writes ${SCHEMA_VERSION})`;
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
    let st: Stats;
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
  const [first, ...rest] = argv;
  let spec: CommandSpec | undefined;
  // The sessions this command opened: closed when it ends, whatever the outcome.
  const sessions: Session[] = [];
  try {
    if (!first) {
      io.stderr.write(`${overview()}\n`);
      return 2;
    }
    if (first === '--help' || first === '-h' || first === 'help') {
      const about = rest[0] ? commandNamed(rest[0]) : undefined;
      if (rest[0] && !about) throw new UsageError(unknownCommand(rest[0]));
      io.stdout.write(`${about ? commandHelp(about) : overview()}\n`);
      return 0;
    }
    if (first === '--version' || first === '-V' || first === 'version') {
      io.stdout.write(`fleet ${VERSION}\n`);
      return 0;
    }
    spec = commandNamed(first);
    if (!spec) throw new UsageError(unknownCommand(first));
    const own = rest.includes('--') ? rest.slice(0, rest.indexOf('--')) : rest;
    if (own.includes('--help') || own.includes('-h')) {
      io.stdout.write(`${commandHelp(spec)}\n`);
      return 0;
    }
    const parsed = parseCommand(spec, rest);
    if (spec.name === 'status' || spec.name === 'report') return await showRun(spec, parsed, io);
    if (spec.name === 'prs') return await prs(spec, parsed, io, sessions);
    if (spec.name === 'clean') return await clean(spec, parsed, io);
    return await planOrRun(spec, parsed, io, sessions);
  } catch (err) {
    if (err instanceof UsageError) {
      const about = err.command ?? spec;
      // The message may quote what the user typed: its controls are written out, never sent to the terminal.
      const message = err.message.split('\n').map(showInvisibles).join('\n');
      io.stderr.write(`fleet${about ? ` ${about.name}` : ''}: ${message}\n${usageLine(about)}\n`);
      return 2;
    }
    // A failure nobody foresaw: its message for the user, the stack only on request (it helps a bug report, not a fix).
    const debug = io.env.FLEET_DEBUG === '1';
    // Redacted: a failure nobody foresaw may quote a request, and with it a credential.
    io.stderr.write(`fleet: ${redact(debug ? ((err as Error).stack ?? String(err)) : err instanceof Error ? err.message : String(err))}\n`);
    if (!debug) io.stderr.write('fleet: run again with FLEET_DEBUG=1 for the stack trace\n');
    return 2;
  } finally {
    let failed = 0;
    for (const session of sessions) failed += (await session.close()).failed;
    if (failed > 0) io.stderr.write('warning: a GitHub App installation token could not be revoked; it expires within the hour\n');
  }
}

/** The one file a command takes. */
function oneFile(spec: CommandSpec, parsed: Parsed): string {
  const [file, ...more] = parsed.positionals;
  if (!file) throw new UsageError(`name the file: ${spec.usage.split('   or   ')[0]}`, spec);
  if (more.length) throw new UsageError(`takes one file, got ${parsed.positionals.length}: ${parsed.positionals.join(' ')}`, spec);
  return file;
}

/** With no file named, the fleet file of the current folder (`fleet.yml`, else `fleet.yaml`), as a run beside it finds it. */
function defaultFleetFile(spec: CommandSpec, cwd: string): string {
  const found = ['fleet.yml', 'fleet.yaml'].find((f) => existsSync(join(cwd, f)));
  if (!found) throw new UsageError(`name the run (no fleet.yml in ${cwd}): ${spec.usage}`, spec);
  return found;
}

/** `fleet status` and `fleet report`: a run's manifest, found from itself, its workspace folder or its fleet file. */
async function showRun(spec: CommandSpec, parsed: Parsed, io: CliIo): Promise<number> {
  const found = await locateManifest(resolve(io.cwd, parsed.positionals.length ? oneFile(spec, parsed) : defaultFleetFile(spec, io.cwd)));
  if ('problem' in found) {
    io.stderr.write(`${formatProblems([found.problem])}\n`);
    return 2;
  }
  const m = await readManifest(found.path);
  if (Array.isArray(m)) {
    io.stderr.write(`${formatProblems(m)}\n`);
    return 2;
  }
  if (parsed.values.json) io.stdout.write(`${JSON.stringify(m, null, 2)}\n`);
  else {
    const now = spec.name === 'status' ? systemClock.now().toISOString() : (m.ended_at ?? systemClock.now().toISOString());
    const text = spec.name === 'status' ? renderStatusTable(m, { now }) : renderReport(m, { now, workspace: dirname(found.path) });
    io.stdout.write(shown(io, `${found.note ? `${found.note}\n\n` : ''}${text}\n`));
  }
  return spec.name === 'report' ? exitCodeFor(m) : 0;
}

/** The fleet file a command works on: one named on the command line, or one the flags build (an ad-hoc run). */
interface FleetInput {
  path: string;
  /** The text of a fleet file built from flags; undefined: read `path`. */
  text?: string;
}

function fleetInput(spec: CommandSpec, parsed: Parsed, io: CliIo): FleetInput | { printed: string } {
  const { values } = parsed;
  if (!isAdhoc(values)) {
    if (spec.name === 'run' && parsed.command !== undefined)
      throw new UsageError(
        'a command after -- makes an ad-hoc run, which names its targets with --repo (or --org, --user, --search); a fleet file has its own run:',
        spec,
      );
    if (values['print-fleet-file'])
      throw new UsageError('--print-fleet-file prints the fleet file --repo, --org, --user or --search build: name targets with them', spec);
    if (values.name || values.forge)
      throw new UsageError(`--${values.name ? 'name' : 'forge'} belongs to an ad-hoc run (--repo …); a fleet file sets its own`, spec);
    const target = oneFile(spec, parsed);
    return { path: resolve(io.cwd, target) };
  }
  if (parsed.positionals.length)
    throw new UsageError(`give either a fleet file or targets (--repo, --org, --user, --search), not both: ${parsed.positionals.join(' ')}`, spec);
  const built = adhocFleetFile(values, parsed.command, io.cwd, spec.usage.split('   or   ').pop()!);
  if (!built.ok) throw new UsageError(built.problems.join('\n'), spec);
  if (values['print-fleet-file']) return { printed: built.text };
  return { path: built.path, text: built.text };
}

/** A fleet loaded, its credentials checked and its forge set up: what plan, run and exec share. */
interface Connected {
  input: FleetInput;
  fleet: ResolvedFleet;
  setup: Connection;
  directiveEnv: Record<string, string>;
  maxParallel: number | undefined;
}

/** `fleet plan`, `fleet run` and `fleet exec`. */
async function planOrRun(spec: CommandSpec, parsed: Parsed, io: CliIo, sessions: Session[]): Promise<number> {
  const input = fleetInput(spec, parsed, io);
  if ('printed' in input) {
    // Validated as a run of it would be, so what is printed runs.
    const checked = await loadFleetFile(join(io.cwd, FLAGS_FILE), { text: input.printed });
    if (!checked.ok) {
      io.stderr.write(`${formatProblems(checked.problems)}\n`);
      return 2;
    }
    io.stdout.write(input.printed);
    return 0;
  }
  if (spec.name === 'exec' && !parsed.command?.trim()) throw new UsageError(`give the command after --: ${spec.usage.split('   or   ')[0]}`, spec);
  const connected = await connect(spec, parsed.values, input, io, { writes: spec.name === 'run', sessions });
  if (typeof connected === 'number') return connected;
  if (spec.name === 'plan') return plan(connected, parsed.values, io);
  if (spec.name === 'doctor') return doctor(spec, connected, parsed.values, io);
  if (spec.name === 'exec') return execCommand(connected, parsed, io);
  return run(spec, connected, parsed.values, io, parsed.words);
}

/** Loads the fleet file, checks the flags and credentials with it (every problem at once), and opens the command's session. */
async function connect(
  spec: CommandSpec,
  values: Flags,
  input: FleetInput,
  io: CliIo,
  opts: { writes: boolean; sessions: Session[] },
): Promise<Connected | number> {
  const command = spec.name;
  const { path } = input;
  // Every problem of the input at once: the fleet file's and the flags'.
  const speculative = values.speculative === undefined ? undefined : positiveInt('speculative', values.speculative, spec);
  const maxParallel = positiveInt('max-parallel', values['max-parallel'], spec);
  const fields = {
    branch_conflict: branchConflictFlag(values['branch-conflict'], spec),
    commit_author: authorFlag(values.author, spec),
    missing_targets: values['allow-missing'] ? 'exclude' : undefined,
  };
  const loaded = await loadFleetFile(path, { speculative, pushOnly: values['push-only'], fork: values.fork, text: input.text, fields });
  const problems = loaded.ok ? [] : [...loaded.problems];
  const ws = command !== 'plan' && values.workspace ? await workspaceProblem(resolve(io.cwd, values.workspace)) : undefined;
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
  if (command === 'run' || command === 'exec') {
    // Before any command runs, so the sandbox can hide the key's folder from the first (a mask needs its folder).
    const seal = useManifestSeal(io.env);
    if ('problem' in seal && command === 'run')
      io.stderr.write(`note: this run's manifest is not sealed, so no --since or --resume will believe it: ${seal.problem}\n`);
  }
  // plan, exec and the list of PRs only read the targets: their App token is read-only.
  const session = openSession({ env: io.env, app: appEnv.app, writes: opts.writes });
  opts.sessions.push(session);
  const setup = await session.connect(loaded.fleet.file, {
    baseDir: dirname(path),
    reposRoot: values['repos-root'] ? resolve(io.cwd, values['repos-root']) : undefined,
    logger: { info: () => undefined, warn: (m) => void io.stderr.write(`warning: ${m}\n`), error: (m) => void io.stderr.write(`error: ${m}\n`) },
    runsCode: command === 'run' || command === 'exec',
    commits: command === 'run',
    // Beside the runs it serves (`_workspace/`), for the clones of a fleet on GitHub: a re-run downloads only what
    // changed. A local fleet's clones hard-link instead; what its directives could leave there, nothing trusts.
    objectCache: (command === 'run' || command === 'exec') && loaded.fleet.file.forge === 'github' ? join(dirname(path), '_workspace', 'cache') : undefined,
    onCommits: (_line, notes) => {
      for (const note of notes) io.stderr.write(`note: ${note}\n`);
    },
  });
  if ('problem' in setup) {
    if (setup.part === 'isolation' || setup.part === 'sign_commits')
      io.stderr.write(`${formatProblems([{ file: path, field: setup.part, message: setup.problem }])}\n`);
    else if (setup.part === 'credential') io.stderr.write(`${shownFile(path)}: forge: ${redact(setup.problem)}\n`);
    // The problem names its own field (forge: …, or the environment variable at fault).
    else io.stderr.write(`${shownFile(path)}: ${setup.problem}\n`);
    return 2;
  }
  // A directive's helper scripts live beside the fleet file: `run: $FLEET_FILE_DIR/scripts/fix.sh`.
  const env = { ...setup.directiveEnv, FLEET_FILE_DIR: dirname(path) };
  return { input, fleet: loaded.fleet, setup, directiveEnv: env, maxParallel };
}

async function plan(c: Connected, values: Flags, io: CliIo): Promise<number> {
  const { forge, discover, queue } = c.setup;
  const planned = await planStep(c.fleet, forge, systemClock, { file: c.input.path, maxParallel: c.maxParallel, discover, queue, readOnly: true });
  if (!planned.ok) {
    io.stderr.write(`${formatProblems(planned.problems)}\n`);
    return 2;
  }
  io.stdout.write(values.json ? `${JSON.stringify(planned.manifest, null, 2)}\n` : shown(io, `${renderPlan(planned.manifest)}\n`));
  return 0;
}

/** `fleet doctor`: the set-up this fleet needs, read from the forge; exit 1 when something must be fixed first. */
async function doctor(spec: CommandSpec, c: Connected, values: Flags, io: CliIo): Promise<number> {
  const env = io.env;
  const sample = positiveInt('sample', values.sample, spec);
  const controlRepo = values['control-repo'] ?? (env.GITHUB_REPOSITORY || undefined);
  if (values['approval-environment'] !== undefined && !controlRepo)
    throw new UsageError('--approval-environment is the environment of the repository --control-repo names: give --control-repo too', spec);
  for (const [flag, value] of [
    ['control-repo', controlRepo],
    ['fleet-repo', values['fleet-repo']],
  ] as const) {
    if (value !== undefined && !/^[\w.-]+\/[\w.-]+$/.test(value)) throw new UsageError(`--${flag}: "${value}" is not OWNER/NAME`, spec);
  }
  const retention = Number(env.GITHUB_RETENTION_DAYS);
  const findings = await runDoctor(c.fleet, c.setup.forge, c.setup.probe, {
    controlRepo,
    approvalEnvironment: controlRepo ? (values['approval-environment'] ?? (env.FLEET_APPROVAL_ENVIRONMENT?.trim() || 'fleet-approval')) : undefined,
    fleetRepo: values['fleet-repo'] ?? (env.GITHUB_ACTION_REPOSITORY || undefined),
    ...(sample !== undefined ? { sample } : {}),
    ...(env.GITHUB_RETENTION_DAYS && Number.isInteger(retention) ? { retentionDays: retention } : {}),
  });
  const text = values.json
    ? JSON.stringify({ file: c.input.path, findings }, null, 2)
    : `fleet doctor: ${shownFile(c.input.path)}\n\n${renderFindings(findings)}`;
  io.stdout.write(`${redact(text)}\n`);
  return doctorExitCode(findings);
}

async function run(spec: CommandSpec, c: Connected, values: Flags, io: CliIo, parsedWords: string[]): Promise<number> {
  const { path } = c.input;
  const loaded = { fleet: c.fleet };
  const { forge, discover, queue, settleQueue } = c.setup;
  let resume: RunOptions['resume'];
  if (values.resume && loaded.fleet.file.source?.issues) {
    io.stderr.write(
      `${path}: source.issues: an issue queue resumes by running again: the next run resumes every issue whose branch has no PR; run it without --resume\n`,
    );
    return 2;
  }
  if (values.resume) {
    const mp = resolve(io.cwd, values.resume);
    const read = await readManifestAndText(mp);
    if (Array.isArray(read)) {
      io.stderr.write(`${formatProblems(read)}\n`);
      return 2;
    }
    const m = read.manifest;
    if (m.name !== loaded.fleet.file.name) {
      io.stderr.write(`${mp}: this manifest is of fleet "${m.name}", not "${loaded.fleet.file.name}": resume it with its own fleet file\n`);
      return 2;
    }
    // A lane it shows completed is kept without running again: only where Fleet itself wrote that.
    const distrust = await sealProblem(mp, read.text);
    if (distrust) io.stderr.write(`note: every lane runs again: ${mp} is not believed: ${distrust}\n`);
    resume = { manifest: m, root: dirname(mp), keep: !distrust };
  }
  let since: Manifest | undefined;
  if (values.since) {
    if (values.resume)
      throw new UsageError(
        '--since and --resume cannot be used together: a resumed run re-runs what did not complete, an incremental sweep starts a new run',
        spec,
      );
    const mp = resolve(io.cwd, values.since);
    const read = await readSince(mp);
    if (Array.isArray(read)) {
      io.stderr.write(`${formatProblems(read)}\n`);
      return 2;
    }
    if (typeof read === 'string') io.stderr.write(`note: every lane runs: ${read}\n`);
    else if (read.manifest.name !== loaded.fleet.file.name) {
      io.stderr.write(`${mp}: --since: this manifest is of fleet "${read.manifest.name}", not "${loaded.fleet.file.name}": pass a manifest of this fleet\n`);
      return 2;
    } else {
      // Another fleet's directive may have rewritten it (a failed lane made unchanged): only Fleet's own word counts.
      const distrust = await sealProblem(mp, read.text);
      if (distrust) io.stderr.write(`note: every lane runs: ${mp} is not believed: ${distrust}\n`);
      else since = read.manifest;
    }
  }

  // --json keeps stdout for the manifest alone.
  const live = values.quiet || values.json ? undefined : new LiveView(io.stdout);
  const outcome = await runFleet({
    fleet: loaded.fleet,
    file: path,
    forge,
    workspace: c.setup.workspace,
    exec: c.setup.exec,
    clock: systemClock,
    env: c.directiveEnv,
    discover,
    queue,
    settleQueue,
    root: values.workspace ? resolve(io.cwd, values.workspace) : undefined,
    // The default workspace goes beside the fleet file, so a run started from any folder lands in the same place.
    cwd: dirname(path),
    maxParallel: c.maxParallel,
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
  if (c.input.text !== undefined) {
    // An ad-hoc run's fleet file exists nowhere else: kept beside its manifest, `fleet prs close` finds it there.
    const record: AdhocRecord = { cwd: dirname(path), text: c.input.text };
    await writeFileAtomic(resolve(outcome.root, ADHOC_RECORD), `${JSON.stringify(record, null, 2)}\n`);
  }
  io.stdout.write(values.json ? `${JSON.stringify(outcome.manifest, null, 2)}\n` : shown(io, `\n${report}\n`));
  if (io.signal?.aborted) {
    io.stderr.write(
      `fleet: interrupted; the lanes that had not finished are marked cancelled. Resume with:\n  ${resumeLine(spec, parsedWords, resolve(outcome.root, 'fleet-status.json'))}\n`,
    );
    return EXIT_INTERRUPTED;
  }
  if (nothingRan(outcome.manifest))
    io.stderr.write(`${shownFile(path)}: no lane ran: every target was excluded (${outcome.manifest.lanes.length}); the report says why for each\n`);
  return exitCodeFor(outcome.manifest);
}

/**
 * The command line that resumes an interrupted run, ready to paste: the words as typed, less any --resume or --since,
 * then --resume and the manifest (before the `--` of an ad-hoc command, so the command and with it the fleet's name are
 * the same).
 */
function resumeLine(spec: CommandSpec, words: readonly string[], manifest: string): string {
  const dash = words.indexOf('--');
  const own = dash === -1 ? [...words] : words.slice(0, dash);
  const kept: string[] = [];
  for (let i = 0; i < own.length; i++) {
    const w = own[i]!;
    if (w === '--resume' || w === '--since') i++;
    else if (!w.startsWith('--resume=') && !w.startsWith('--since=')) kept.push(w);
  }
  const line = ['fleet', spec.name, ...kept, '--resume', manifest, ...(dash === -1 ? [] : words.slice(dash))];
  return line.map((w) => (w === '--' ? w : shellWord(w))).join(' ');
}

/**
 * The lanes `fleet prs` acts on: `--lane` globs (each must match a lane of the run: a pattern that matches none is a
 * typo, not an empty choice) and `--failed`; all when neither is given. A string is the problem.
 */
function laneChoice(values: Flags, manifest: Manifest): ((rec: LaneRecord) => boolean) | undefined | string {
  const patterns = values.lane ?? [];
  if (!patterns.length && !values.failed) return undefined;
  const ids = manifest.lanes.map((l) => l.lane);
  const unmatched = patterns.filter((p) => !ids.some((id) => matchesGlob(id, p)));
  if (unmatched.length)
    return `--lane ${unmatched.map((p) => JSON.stringify(p)).join(', ')} matches no lane of run ${manifest.fleet_id} (its lanes: ${ids.slice(0, 20).join(', ')}${ids.length > 20 ? ', …' : ''})`;
  return (rec) => (!patterns.length || matchesAny(rec.lane, patterns)) && (!values.failed || rec.status === 'failed' || ciRed(rec));
}

/**
 * `fleet prs [merge|close]`: the fleet's PRs read live from the forge, and acted on. The manifest says which lanes
 * pushed what; the fleet file says which forge they are on and how to reach it: a fleet file finds its latest run,
 * a manifest (or its workspace) needs the fleet file named with --fleet.
 */
async function prs(spec: CommandSpec, parsed: Parsed, io: CliIo, sessions: Session[]): Promise<number> {
  const { values } = parsed;
  const [first, ...rest] = parsed.positionals;
  const sub = first === 'merge' || first === 'close' || first === 'list' ? first : 'list';
  const target = oneFile(spec, { ...parsed, positionals: sub === first ? rest : parsed.positionals });
  if (sub === 'list' && (values['dry-run'] || values.method))
    throw new UsageError(`--${values.method ? 'method' : 'dry-run'} is for fleet prs merge (or close): the list changes nothing`, spec);
  if (sub === 'close' && values.method) throw new UsageError('--method is for fleet prs merge', spec);
  const named = resolve(io.cwd, target);
  const fleetPath = values.fleet ? resolve(io.cwd, values.fleet) : named;
  const where = values.workspace ? { path: join(resolve(io.cwd, values.workspace), 'fleet-status.json') } : await locateManifest(named);
  if ('problem' in where) {
    io.stderr.write(`${formatProblems([where.problem])}\n`);
    return 2;
  }
  // An ad-hoc run kept the fleet file its flags built beside its manifest: used only when no fleet file was named (the
  // argument is the run's manifest or folder), never over one the user gave, and said so.
  const namedFile =
    !values.fleet &&
    !(await stat(named)
      .then((s) => s.isDirectory())
      .catch(() => false)) &&
    where.path !== named;
  const adhoc = values.fleet || namedFile ? undefined : await adhocRecord(dirname(where.path));
  if (!values.fleet && !adhoc && !namedFile)
    throw new UsageError(
      `${target} is a ${where.path === named ? 'manifest' : 'run folder'}: name its fleet file too (--fleet FILE), which says the forge its PRs are on`,
      spec,
    );
  if (adhoc) io.stderr.write(`note: the fleet file is the one the ad-hoc run kept: ${join(dirname(where.path), ADHOC_RECORD)}\n`);
  const input: FleetInput = adhoc ? { path: join(adhoc.cwd, FLAGS_FILE), text: adhoc.text } : { path: fleetPath };
  const connected = await connect(spec, values, input, io, { writes: sub !== 'list', sessions });
  if (typeof connected === 'number') return connected;
  const file = connected.fleet.file;
  const method = sub === 'merge' ? mergeMethodFor({ flag: values.method, policy: file.merge.policy, method: file.merge.method }) : undefined;
  if (method && 'problem' in method) {
    io.stderr.write(`${fleetPath}: merge: ${method.problem}\n`);
    return 2;
  }
  const manifest = await readManifest(where.path);
  if (Array.isArray(manifest)) {
    io.stderr.write(`${formatProblems(manifest)}\n`);
    return 2;
  }
  if (manifest.name !== file.name) {
    io.stderr.write(`${where.path}: this manifest is of fleet "${manifest.name}", not "${file.name}": pass its own fleet file\n`);
    return 2;
  }
  if ('note' in where && where.note) io.stderr.write(`note: ${where.note}\n`);
  const only = laneChoice(values, manifest);
  if (typeof only === 'string') {
    io.stderr.write(`${where.path}: ${only}\n`);
    return 2;
  }
  const dryRun = values['dry-run'] ?? false;
  // A merge or close writes the manifest back, sealed as it was.
  if (sub !== 'list') useManifestSeal(io.env);
  const r = await prsCommand(
    {
      manifestPath: where.path,
      forge: connected.setup.forge,
      clock: systemClock,
      lanes: connected.fleet.lanes,
      // Every lane branch of this fleet starts so: a manifest naming another branch is never acted on.
      branchPrefix: renderBranch(file.branch.slice(0, file.branch.indexOf('{lane}')), file.name, ''),
      only,
    },
    sub === 'list' ? { command: 'list' } : sub === 'merge' ? { command: 'merge', method: method!.method, dryRun } : { command: 'close', dryRun },
  );
  if (!r.ok) {
    io.stderr.write(`${formatProblems(r.problems)}\n`);
    return 2;
  }
  const now = systemClock.now().toISOString();
  if (r.command === 'list') {
    io.stdout.write(
      values.json
        ? `${JSON.stringify({ manifest: r.manifestPath, fleet_id: r.manifest.fleet_id, now, rows: prsJson(r.rows, now) }, null, 2)}\n`
        : shown(io, `${renderPrsTable(r.rows, { now, title: r.manifest.name })}\n`),
    );
    return r.exitCode;
  }
  io.stdout.write(
    values.json
      ? `${JSON.stringify({ manifest: r.manifestPath, command: r.command, dry_run: r.dryRun, method: r.method, changed: r.changed, actions: r.actions, rows: prsJson(r.rows, now), events: r.events }, null, 2)}\n`
      : shown(io, `${renderPrsActions(r.actions, { command: r.command, dryRun: r.dryRun, method: r.method ?? undefined, title: file.name })}\n`),
  );
  return r.exitCode;
}

/**
 * `fleet clean`: old runs out of `_workspace/` beside a fleet file (or in a folder): of each fleet, the newest
 * `--keep` runs stay without their lanes' clones, older runs go whole; `--all` removes every run.
 */
async function clean(spec: CommandSpec, parsed: Parsed, io: CliIo): Promise<number> {
  const { values } = parsed;
  if (parsed.positionals.length > 1) throw new UsageError(`give one fleet file or folder, not ${parsed.positionals.length}`, spec);
  const keep = values.keep === undefined ? 1 : Number(values.keep);
  if (!Number.isInteger(keep) || keep < 0) throw new UsageError(`--keep takes a whole number of runs (0 or more), not "${values.keep}"`, spec);
  const named = resolve(io.cwd, parsed.positionals[0] ?? '.');
  const st = await stat(named).catch(() => null);
  if (!st) throw new UsageError(`${named}: no such file or folder`, spec);
  const folder = st.isDirectory() ? named : dirname(named);
  const workspace = folder.endsWith(`${'/'}_workspace`) ? folder : join(folder, '_workspace');
  if (!existsSync(workspace)) {
    io.stdout.write(
      values.json
        ? `${JSON.stringify({ workspace, removed: [], trimmed: [], left: [], busy: [], cache: null, freed_bytes: 0 }, null, 2)}\n`
        : `${workspace}: nothing to clean (no such folder)\n`,
    );
    return 0;
  }
  let r: Awaited<ReturnType<typeof cleanWorkspace>>;
  try {
    r = await cleanWorkspace(workspace, { keep, all: values.all ?? false, dryRun: values['dry-run'] ?? false });
  } catch (err) {
    io.stderr.write(`fleet clean: ${showInvisibles((err as Error).message)}\n`);
    return 2;
  }
  if (values.json) {
    const dirs = (xs: Array<{ dir: string }>) => xs.map((x) => x.dir);
    io.stdout.write(
      `${JSON.stringify(
        {
          workspace,
          dry_run: values['dry-run'] ?? false,
          removed: dirs(r.remove),
          trimmed: dirs(r.trim),
          left: r.left.map((l) => ({ dir: l.run.dir, why: l.why })),
          busy: r.busy.map((l) => ({ dir: l.run.dir, why: l.why })),
          cache: r.cache && { dir: r.cache.dir, bytes: r.cache.bytes, removed: r.cache.removed },
          freed_bytes: r.freed,
        },
        null,
        2,
      )}\n`,
    );
    return 0;
  }
  const would = values['dry-run'] ? 'would remove' : 'removed';
  const lines = [
    ...r.remove.map((x) => `${would} ${x.dir}${x.name ? ` (${x.kind === 'exec' ? 'exec' : 'run'} of ${x.name}${x.started ? `, ${x.started}` : ''})` : ''}`),
    ...r.trim.map((x) => `${values['dry-run'] ? 'would trim' : 'trimmed'} ${x.dir}: its lanes' working copies (the manifest, report, logs and patches stay)`),
    ...r.left.map((x) => `left ${x.run.dir}: ${x.why}`),
    ...r.busy.map((x) => `left ${x.run.dir}: still running (${x.why})`),
  ];
  if (r.cache && r.cache.bytes > 0) {
    lines.push(
      r.cache.removed
        ? `${would} ${r.cache.dir} (the object cache, ${formatBytes(r.cache.bytes)}: the next run downloads its repositories whole)`
        : `kept ${r.cache.dir} (the object cache, ${formatBytes(r.cache.bytes)}: what the next run's clones borrow; --all removes it)`,
    );
  }
  lines.push(`${values['dry-run'] ? 'Would free' : 'Freed'} ${formatBytes(r.freed)} in ${workspace}.`);
  // Folder names and a manifest's name are whatever was written there: their controls are written out, never sent.
  io.stdout.write(`${lines.map(showInvisibles).join('\n')}\n`);
  return 0;
}

/**
 * Rendered markdown as stdout takes it: on a terminal, with its escapes read back (`[.editorconfig]`, not
 * `\\[.editorconfig\\]`); into a pipe or a file, as markdown, since it may go where markdown is rendered (the action's
 * run mode appends it to the job summary), and there the escapes keep untrusted names from making links or HTML.
 */
function shown(io: CliIo, md: string): string {
  return io.stdout.isTTY ? terminalText(md) : md;
}

/** The fleet file an ad-hoc run kept in its workspace (ADHOC_RECORD), or undefined when there is none to read. */
async function adhocRecord(root: string): Promise<AdhocRecord | undefined> {
  const read = await readTextFile(join(root, ADHOC_RECORD), MAX_FLEET_JSON_BYTES, 'the ad-hoc fleet file');
  if (!read.ok) return undefined;
  try {
    const r = JSON.parse(read.text) as Partial<AdhocRecord>;
    return typeof r.cwd === 'string' && typeof r.text === 'string' ? { cwd: r.cwd, text: r.text } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `fleet exec`: the command in every target, its output per repository. Exit 0 when every target answered (whatever
 * its exit code: grep's 1 is an answer), 1 when some could not be asked, 2 when none could be (all excluded).
 */
async function execCommand(c: Connected, parsed: Parsed, io: CliIo): Promise<number> {
  const command = parsed.command!;
  const stamp = systemClock.now().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  // A folder of its own per run (the time, and a random part for two started in the same second).
  const root = parsed.values.workspace
    ? resolve(io.cwd, parsed.values.workspace)
    : join(dirname(c.input.path), '_workspace', 'exec', `${c.fleet.file.name}-${stamp}-${randomBytes(3).toString('hex')}`);
  if (!parsed.values.workspace) {
    await mkdir(join(dirname(c.input.path), '_workspace'), { recursive: true });
    await ignoreWorkspace(join(dirname(c.input.path), '_workspace'));
  }
  const done = await execFleet({
    fleet: c.fleet,
    file: c.input.path,
    command,
    forge: c.setup.forge,
    workspace: c.setup.workspace,
    exec: c.setup.exec,
    clock: systemClock,
    env: c.directiveEnv,
    root,
    maxParallel: c.maxParallel,
    discover: c.setup.discover,
    signal: io.signal,
  });
  if (!done.ok) {
    io.stderr.write(`${formatProblems(done.problems)}\n`);
    return 2;
  }
  const { rows } = done.outcome;
  for (const note of done.outcome.notes) io.stderr.write(`note: ${note}\n`);
  io.stdout.write(parsed.values.json ? `${JSON.stringify({ command, root, rows }, null, 2)}\n` : `${renderExec(command, rows, root)}\n`);
  if (io.signal?.aborted) return EXIT_INTERRUPTED;
  if (rows.length && rows.every((r) => r.status === 'excluded')) {
    io.stderr.write(`${shownFile(c.input.path)}: no target was asked: every target was excluded (${rows.length}); the output says why for each\n`);
    return 2;
  }
  return rows.some((r) => r.status === 'failed') ? 1 : 0;
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
  const entry = enterProcess({
    gentle: {
      say: (signal) => process.stderr.write(`\nfleet: ${signal}: stopping the running lanes (again to quit at once)…\n`),
      killAfterMs: KILL_AFTER_MS,
      stopAfterMs: INTERRUPT_GRACE_MS + 20_000,
    },
    beforeExit: () => {
      try {
        const root = writeInterruptedState();
        if (root) process.stderr.write(`fleet: stopped at once; the manifest and report as they stood are in ${root}\n`);
      } catch (err) {
        process.stderr.write(`fleet: could not write the manifest: ${(err as Error).message}\n`);
      }
    },
  });
  let code: number;
  try {
    code = await main(argv, { stdout: process.stdout, stderr: process.stderr, env: entry.env, cwd: process.cwd(), signal: entry.signal });
  } finally {
    await entry.end();
  }
  process.exitCode = code;
  if (entry.signal.aborted) {
    // A forge call a stuck lane still waits on would keep this process alive: the run is over, so leave now.
    killAllRunning('SIGKILL');
    await new Promise<void>((r) => process.stdout.write('', () => r()));
    process.exit(code);
  }
}

// `npm run fleet -- …` runs this file directly (the bin and bundle use index.ts): run the CLI then too.
if (/[/\\]cli[/\\]main\.[jt]s$/.test(process.argv[1] ?? '')) await runCli(process.argv.slice(2));
