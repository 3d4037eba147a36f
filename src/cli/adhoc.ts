/**
 * `fleet run --repo … -- COMMAND` and `fleet exec`: a fleet without a fleet file, as multi-gitter and git-xargs are
 * used. The flags build the same fleet file a user would write, validated by the same loader, so an ad-hoc run and
 * a run of the file `--print-fleet-file` writes are one and the same.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { classifyRepo, COMMAND_LINE } from '../core/validate.js';
import type { Flags } from './commands.js';

/** The name problems give the in-memory fleet file; it sits in the current folder, where its paths resolve. */
export const FLAGS_FILE = COMMAND_LINE;

/**
 * Where an ad-hoc run keeps the fleet file its flags built, in its workspace beside fleet-status.json, so that `fleet
 * prs` (close, merge, list) finds it from the manifest: the run had no file to name with --fleet. With the folder the
 * command ran in, where its relative paths (local targets) resolve.
 */
export const ADHOC_RECORD = 'adhoc-fleet.json';

export interface AdhocRecord {
  /** The folder the run was started in: the built file sits there (FLAGS_FILE), and its paths resolve from it. */
  cwd: string;
  text: string;
}

/** Is any target or discovery flag given: is this an ad-hoc run? */
export function isAdhoc(values: Flags): boolean {
  return !!(values.repo?.length || values.org || values.user || values.search || values.topic);
}

export type Adhoc = { ok: true; path: string; text: string } | { ok: false; problems: string[] };

/**
 * The fleet file the flags describe. Its name is `adhoc-` and a digest of the command, so running the same command
 * again updates the same branches (an idempotent re-run) and another command never touches them.
 */
export function adhocFleetFile(values: Flags, command: string | undefined, cwd: string, usage: string): Adhoc {
  const problems: string[] = [];
  if (!command?.trim()) problems.push(`give the command after --: ${usage}`);
  if (values.topic && !values.org) problems.push('--topic needs --org: the topic is looked for among the repositories of that owner');
  const forge = values.forge ?? defaultForge(values);
  if (forge !== 'local' && forge !== 'github') problems.push(`--forge takes local or github, got "${forge}"`);
  if (forge === 'local' && (values.org || values.user || values.search))
    problems.push('--org, --user and --search find repositories on GitHub: drop --forge local');
  if (problems.length) return { ok: false, problems };

  const discover = [
    ...(values.org && !values.topic ? [{ org: values.org }] : []),
    ...(values.org && values.topic ? [{ topic: values.topic, owner: values.org }] : []),
    ...(values.user ? [{ user: values.user }] : []),
    ...(values.search ? [{ search: values.search }] : []),
  ];
  const spec = {
    name: values.name ?? `adhoc-${createHash('sha256').update(command!).digest('hex').slice(0, 8)}`,
    directive: command,
    run: command,
    ...(forge === 'github' ? { forge } : {}),
    targets: (values.repo ?? []).map((repo) => ({ repo })),
    ...(discover.length ? { github: { discover } } : {}),
  };
  return { ok: true, path: join(cwd, FLAGS_FILE), text: stringify(spec) };
}

/** GitHub when a target is an OWNER/NAME (without --repos-root, which finds those on disk) or is found on GitHub. */
function defaultForge(values: Flags): string {
  if (values.org || values.user || values.search) return 'github';
  if (values['repos-root']) return 'local';
  return (values.repo ?? []).some((r) => classifyRepo(r) === 'github') ? 'github' : 'local';
}
