/**
 * The commands of `fleet`, their flags and their help: one table the parser, `--help`, the errors and the docs
 * read, so a flag is accepted exactly by the commands it means something to.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { nearest } from '../core/suggest.js';
import { VERSION } from './version.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandSpec {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The synopsis: what an error prints under the message. */
  usage: string;
  /** Each flag's help, in the order shown. */
  flags: readonly [flag: string, help: string][];
  options: Options;
}

/** plan, run and exec: a listed target that is not there is accepted (missing_targets: exclude). */
const ALLOW_MISSING: [flag: string, help: string] = [
  '--allow-missing',
  'a target that is not there (no repository at a path, or none on GitHub) is excluded, not an error (missing_targets: exclude)',
];

const ADHOC_FLAGS: readonly [string, string][] = [
  ['--repo PATH_OR_OWNER/NAME', 'a target (repeat it); with no fleet file, the flags build one'],
  ['--org ORG', 'every repository of a GitHub organization (with --topic: its repositories carrying the topic)'],
  ['--user USER', 'every repository a GitHub user owns'],
  ['--topic TOPIC', 'repositories of --org carrying the topic'],
  ['--search QUERY', 'a GitHub repository search, e.g. "org:acme language:go"'],
  ['--name NAME', 'the fleet name (branches are fleet/<name>/<lane>); default: adhoc-<8 hex digits of the command>, so the same command reuses its branches'],
  ['--forge local|github', 'default: github when a target is OWNER/NAME or found on GitHub, else local'],
];

const ADHOC_OPTIONS: Options = {
  repo: { type: 'string', multiple: true },
  org: { type: 'string' },
  user: { type: 'string' },
  topic: { type: 'string' },
  search: { type: 'string' },
  name: { type: 'string' },
  forge: { type: 'string' },
};

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'plan',
    summary: 'validate a fleet file and show its waves, contention and exclusions; changes nothing',
    usage: 'fleet plan <fleet-file> [--json] [--max-parallel N] [--repos-root DIR]',
    flags: [
      ['--json', 'print the planned manifest as JSON'],
      ['--max-parallel N', 'lanes running at once (overrides max_parallel)'],
      ['--repos-root DIR', 'where OWNER/NAME targets live on disk (<DIR>/<owner>/<name>)'],
      ALLOW_MISSING,
    ],
    options: { json: { type: 'boolean' }, 'max-parallel': { type: 'string' }, 'repos-root': { type: 'string' }, 'allow-missing': { type: 'boolean' } },
  },
  {
    name: 'run',
    summary: 'run a fleet: one branch (and on GitHub one PR) per lane, verified, with a report',
    usage: 'fleet run <fleet-file> [options]   or   fleet run --repo R [--repo R…] [options] -- COMMAND',
    flags: [
      ['--dry-run', 'run the directive and keep each patch; push nothing'],
      ['--push-only', 'push each lane branch and open no PR (pr.open: false)'],
      ['--fork', 'push each lane branch to a fork of its target and open the PR from there (pr.fork), for repositories the token cannot push to'],
      ['--branch-conflict MODE', 'a lane branch holding commits Fleet did not make: fail (default), replace or rebase (branch_conflict)'],
      ['--author "NAME <EMAIL>"', "author and committer of the lanes' commits (commit_author; default: your git identity)"],
      ['--max-parallel N', 'directives running at once (overrides max_parallel)'],
      ['--workspace DIR', 'where clones, logs, results and the manifest go (default: _workspace/fleet/<fleet_id> beside the fleet file)'],
      ['--resume MANIFEST', 're-run only the lanes that did not complete in that run'],
      ['--since MANIFEST', 'incremental sweep: a lane whose target and inputs are unchanged since it completed there is not run again'],
      ['--speculative N', 'try every lane N ways at once; only the pick opens a PR'],
      ['--repos-root DIR', 'where OWNER/NAME targets live on disk (<DIR>/<owner>/<name>)'],
      ALLOW_MISSING,
      ['--quiet', 'no live view; print only the final report'],
      ['--json', 'print the final manifest as JSON instead of the report (the report is still written)'],
      ...ADHOC_FLAGS,
      ['--print-fleet-file', 'print the fleet file the flags build, and run nothing'],
    ],
    options: {
      'dry-run': { type: 'boolean' },
      'push-only': { type: 'boolean' },
      fork: { type: 'boolean' },
      'branch-conflict': { type: 'string' },
      author: { type: 'string' },
      'max-parallel': { type: 'string' },
      workspace: { type: 'string' },
      resume: { type: 'string' },
      since: { type: 'string' },
      speculative: { type: 'string' },
      'repos-root': { type: 'string' },
      'allow-missing': { type: 'boolean' },
      quiet: { type: 'boolean' },
      json: { type: 'boolean' },
      'print-fleet-file': { type: 'boolean' },
      ...ADHOC_OPTIONS,
    },
  },
  {
    name: 'exec',
    summary: 'run a read-only command in every target and collect its output per repository; nothing is committed',
    usage: 'fleet exec <fleet-file> [options] -- COMMAND   or   fleet exec --repo R [--repo R…] [options] -- COMMAND',
    flags: [
      ['--max-parallel N', 'commands running at once (overrides max_parallel)'],
      ['--workspace DIR', 'where clones and outputs go (default: _workspace/exec/<id> beside the fleet file, or here)'],
      ['--repos-root DIR', 'where OWNER/NAME targets live on disk (<DIR>/<owner>/<name>)'],
      ALLOW_MISSING,
      ['--json', "print every target's exit code and output as JSON"],
      ...ADHOC_FLAGS,
    ],
    options: {
      'max-parallel': { type: 'string' },
      workspace: { type: 'string' },
      'repos-root': { type: 'string' },
      'allow-missing': { type: 'boolean' },
      json: { type: 'boolean' },
      ...ADHOC_OPTIONS,
    },
  },
  {
    name: 'prs',
    summary: "a fleet's PRs read live from the forge; merge the green ones, or close them all",
    usage: 'fleet prs [merge|close] <fleet-file | fleet-status.json | workspace> [--lane PATTERN…] [--failed] [--fleet FILE] [--dry-run] [--json]',
    flags: [
      ['merge', 'merge every PR that may merge now (open, not a draft, CI green, no changes requested, no conflict)'],
      ['close', "close every lane's open PR and delete its branch"],
      ['--fleet FILE', 'the fleet file, when the first argument is a manifest or a workspace folder'],
      ['--workspace DIR', "the run's workspace, when it is not the default beside the fleet file"],
      ['--lane PATTERN', 'only the lanes whose id matches (repeat it; globs such as "svc-*")'],
      ['--failed', 'only the lanes that failed (or whose CI is red)'],
      ['--method M', "merge, squash, rebase or fast-forward (default: the fleet file's merge.method, squash)"],
      ['--dry-run', 'say what would be merged or closed; change nothing'],
      ['--json', 'print the rows (and actions) as JSON'],
      ['--repos-root DIR', 'where OWNER/NAME targets live on disk (<DIR>/<owner>/<name>)'],
    ],
    options: {
      fleet: { type: 'string' },
      workspace: { type: 'string' },
      lane: { type: 'string', multiple: true },
      failed: { type: 'boolean' },
      method: { type: 'string' },
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
      'repos-root': { type: 'string' },
    },
  },
  {
    name: 'doctor',
    summary: 'check the set-up a fleet needs on GitHub before its first run: credential, permissions, targets, gate, Actions settings',
    usage: 'fleet doctor <fleet-file> [--control-repo OWNER/NAME] [--approval-environment NAME|none] [--fleet-repo OWNER/NAME] [--sample N] [--json]',
    flags: [
      [
        '--control-repo OWNER/NAME',
        'the repository whose workflows run the fleet: its approval environment and Actions settings (default: GITHUB_REPOSITORY in a job)',
      ],
      [
        '--approval-environment NAME',
        'the approval environment the dispatch workflow names (default: FLEET_APPROVAL_ENVIRONMENT, else fleet-approval as the template has it); none: no gate, by choice',
      ],
      ['--fleet-repo OWNER/NAME', 'where your workflows take Fleet from (your-org/fleet), for the allowed-actions check (default: GITHUB_ACTION_REPOSITORY)'],
      ['--sample N', 'how many of the listed targets to check (default 10)'],
      ['--json', 'print the findings as JSON'],
      ['--repos-root DIR', 'where OWNER/NAME targets live on disk (<DIR>/<owner>/<name>)'],
    ],
    options: {
      'control-repo': { type: 'string' },
      'approval-environment': { type: 'string' },
      'fleet-repo': { type: 'string' },
      sample: { type: 'string' },
      json: { type: 'boolean' },
      'repos-root': { type: 'string' },
    },
  },
  {
    name: 'clean',
    summary: "remove old runs from _workspace/: each fleet's newest run stays, without its clones",
    usage: 'fleet clean [fleet-file | folder (default: here)] [--keep N] [--all] [--dry-run] [--json]',
    flags: [
      ['--keep N', "how many of each fleet's newest runs stay, without their lanes' working copies (default 1; 0 removes them too)"],
      ['--all', 'remove every run, and folders Fleet cannot name'],
      ['--dry-run', 'say what would be removed and how much it frees; remove nothing'],
      ['--json', 'print what was removed as JSON'],
    ],
    options: { keep: { type: 'string' }, all: { type: 'boolean' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } },
  },
  {
    name: 'status',
    summary: "a run's lanes as they stand (a run still going, or one that ended)",
    usage: 'fleet status [fleet-status.json | workspace folder | fleet-file (default: fleet.yml here)] [--json]',
    flags: [['--json', 'print the manifest as JSON']],
    options: { json: { type: 'boolean' } },
  },
  {
    name: 'report',
    summary: "a run's report again; exits as the run did",
    usage: 'fleet report [fleet-status.json | workspace folder | fleet-file (default: fleet.yml here)] [--json]',
    flags: [['--json', 'print the manifest as JSON']],
    options: { json: { type: 'boolean' } },
  },
];

/** Commands that are not fleets of their own: help and version. */
const META = ['help', 'version'];

export function commandNamed(name: string): CommandSpec | undefined {
  return COMMANDS.find((c) => c.name === name);
}

export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: CommandSpec,
  ) {
    super(message);
  }
}

/** `fleet --help`: every command, one line each, then where to read more. */
export function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    `fleet ${VERSION} — apply one directive across many repositories, in dependency waves`,
    '',
    'Usage: fleet <command> [arguments] [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'fleet <command> --help shows its options; fleet --version its version.',
    'Exit codes: 0 every lane completed or had nothing to do, 1 some lane failed or was skipped, 2 bad input or',
    'set-up failure (or no lane ran: every target was excluded), 130 interrupted (the manifest is written; --resume',
    'picks it up). Docs: docs/cli.md.',
  ].join('\n');
}

/** `fleet <command> --help`. */
export function commandHelp(c: CommandSpec): string {
  const width = Math.max(...c.flags.map(([f]) => f.length));
  return [`fleet ${c.name} — ${c.summary}`, '', `Usage: ${c.usage}`, '', 'Options:', ...c.flags.map(([f, h]) => `  ${f.padEnd(width)}  ${h}`)].join('\n');
}

/** What an error prints under its message: the synopsis and where the rest is, never the whole page. */
export function usageLine(c: CommandSpec | undefined): string {
  return c ? `usage: ${c.usage}\n       (fleet ${c.name} --help for every option)` : 'usage: fleet <command> … (fleet --help lists the commands)';
}

export function unknownCommand(name: string): string {
  const names = [...COMMANDS.map((c) => c.name), ...META];
  const guess = nearest(name, names);
  return `unknown command "${name}"${guess ? `: did you mean ${guess}?` : ''}\ncommands: ${COMMANDS.map((c) => c.name).join(', ')}`;
}

/** Every flag any command takes, by its type; parseArgs holds each command to its own. */
export interface Flags {
  json?: boolean;
  'control-repo'?: string;
  keep?: string;
  all?: boolean;
  'approval-environment'?: string;
  'fleet-repo'?: string;
  sample?: string;
  'dry-run'?: boolean;
  'push-only'?: boolean;
  fork?: boolean;
  'branch-conflict'?: string;
  author?: string;
  quiet?: boolean;
  'print-fleet-file'?: boolean;
  'max-parallel'?: string;
  speculative?: string;
  workspace?: string;
  resume?: string;
  since?: string;
  'repos-root'?: string;
  'allow-missing'?: boolean;
  repo?: string[];
  org?: string;
  user?: string;
  topic?: string;
  search?: string;
  name?: string;
  forge?: string;
  fleet?: string;
  method?: string;
  lane?: string[];
  failed?: boolean;
}

export interface Parsed {
  values: Flags;
  positionals: string[];
  /** What follows `--`: the command of an ad-hoc run or of `fleet exec`. */
  command: string | undefined;
  /** The command's words as typed (after its name), for a hint that gives the command line back. */
  words: string[];
}

/** The flags of one command; an unknown flag names the nearest the command knows. */
export function parseCommand(c: CommandSpec, args: string[]): Parsed {
  const dash = args.indexOf('--');
  const own = dash === -1 ? args : args.slice(0, dash);
  const after = dash === -1 ? undefined : args.slice(dash + 1);
  if (dash === -1) {
    const hint = missingDashes(c, args);
    if (hint) throw new UsageError(hint, c);
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: own, allowPositionals: true, strict: true, options: c.options });
  } catch (err) {
    throw new UsageError(flagMessage(c, err as Error & { code?: string }), c);
  }
  return {
    values: parsed.values as Flags,
    positionals: parsed.positionals,
    command: after?.length ? (after.length === 1 ? after[0] : after.map(shellWord).join(' ')) : undefined,
    words: args,
  };
}

const TARGET_FLAGS = new Set(['--repo', '--org', '--user', '--search', '--topic']);

/**
 * A command typed without the `--` before it (`fleet run --repo x sed -i s/a/b/ f`): its own flags would be read as
 * Fleet's (`unknown option -i`) or its words as a fleet file. The command starts at the first word that is not a flag
 * or a flag's value, past the fleet file if one is named; the message gives the line with `--` in its place.
 */
function missingDashes(c: CommandSpec, args: readonly string[]): string | null {
  if (!c.usage.includes('-- COMMAND')) return null;
  const positions: number[] = [];
  let adhoc = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('-') || a === '-') {
      positions.push(i);
      continue;
    }
    const name = a.replace(/=.*$/, '');
    if (TARGET_FLAGS.has(name)) adhoc = true;
    const option = c.options[name.replace(/^-+/, '')];
    // A known flag that takes a value takes the next word (unless given as --flag=value); an unknown one is the command's.
    if (option?.type === 'string' && !a.includes('=')) i++;
    else if (!option && positions.length >= (adhoc ? 0 : 1)) break;
  }
  const start = positions[adhoc ? 0 : 1];
  if (start === undefined) return null;
  const line = ['fleet', c.name, ...args.slice(0, start), '--', ...args.slice(start)].map(shellWord).join(' ');
  return `the command to run goes after --, so that its own flags are not read as Fleet's: ${line}`;
}

function flagMessage(c: CommandSpec, err: Error & { code?: string }): string {
  const unknown = /Unknown option '(-{1,2}[^']+)'/.exec(err.message);
  if (unknown) {
    const flag = unknown[1]!;
    const known = Object.keys(c.options).map((k) => `--${k}`);
    const guess = nearest(flag, known);
    const elsewhere = COMMANDS.filter((o) => o !== c && Object.keys(o.options).includes(flag.replace(/^-+/, ''))).map((o) => `fleet ${o.name}`);
    return `unknown option ${flag}${guess ? `: did you mean ${guess}?` : elsewhere.length ? `: it belongs to ${elsewhere.join(', ')}` : ''}`;
  }
  const missing = /Option '(-{1,2}[^']+?)(?: <value>)?' argument missing/.exec(err.message);
  if (missing) return `${missing[1]} needs a value`;
  const typed = /Option '(-{1,2}[^']+?)' does not take an argument/.exec(err.message);
  if (typed) return `${typed[1]} takes no value`;
  return err.message;
}

/**
 * A word of the command after `--`, quoted for `sh -c` unless it is plain: `fleet exec -- grep -rl "a b" .` runs
 * what the user typed, with the shell's quoting intact. A single word is a script of its own and is passed as it
 * is (`fleet exec -- 'grep -rl x . | wc -l'`), as `sh -c` takes it.
 */
export function shellWord(w: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}
