/**
 * Who Fleet's commits are by and how they are signed, as values a Git (git.ts) is built with: decided once, before
 * any directive runs (commit-setup.ts, from src/core/commit-identity.ts), never a setting of the process that a
 * later call could change. And reading the user's own git configuration, which that decision starts from.
 */
import os from 'node:os';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { DEFAULT_COMMIT_IDENTITY, type CommitIdentity, type CommitSigning, type UserGitConfig } from '../../core/commit-identity.js';
import { GIT_LOCATING_ENV } from '../../util/directive-env.js';
import { pinnedProgram } from '../processes.js';
import type { GitRunner } from './run.js';

export type GitIdentity = CommitIdentity;

/** "Fleet": the author and committer of a git that was given no identity. */
export const DEFAULT_GIT_IDENTITY: Readonly<GitIdentity> = DEFAULT_COMMIT_IDENTITY;

/** Signing as Fleet's git applies it: the user's format and key, the program by the absolute path it had when decided. */
export interface GitSigning {
  format: string;
  key: string | null;
  program: string;
}

/** Who the lanes' commits are by and how they are signed (null: unsigned): what adoptCommitSetup decided. */
export interface CommitSettings {
  identity: GitIdentity;
  signing: GitSigning | null;
}

/**
 * Signing the way the user's git would: its format, key and program. The program is pinned to its absolute path now,
 * before any directive could put another of that name on PATH. Why signing cannot be set up (the program is not
 * installed), or the signing to build a Git with.
 */
export function pinSigning(s: CommitSigning): { ok: true; signing: GitSigning } | { ok: false; problem: string } {
  // git expands a leading ~/ in gpg.program (a pathname); a bare name is looked up on PATH, now.
  const named = s.program.startsWith('~/') ? path.join(os.homedir(), s.program.slice(2)) : s.program;
  const program = named.includes('/') ? path.resolve(named) : pinnedProgram(named);
  if (!program.startsWith('/') || !existsSync(program)) {
    return { ok: false, problem: `signing commits (${s.format}) runs ${s.program}, which is not installed here: install it, or set sign_commits: off` };
  }
  // git reads user.signingkey as a path for ssh: `~/` as the user meant it, a relative path against where Fleet started.
  // A literal key (`key::…`, or git's older `ssh-…` form) is passed as it is.
  const literal = !s.key || s.key.startsWith('key::') || s.key.startsWith('ssh-');
  const key = s.format === 'ssh' && !literal ? (s.key!.startsWith('~/') ? path.join(os.homedir(), s.key!.slice(2)) : path.resolve(s.key!)) : s.key;
  return { ok: true, signing: { format: s.format, key, program } };
}

/** The configuration a commit-making git call gets: `signing` (env.ts's BASE_CONFIG turns signing off for every other call). */
export function signConfig(signing: GitSigning | null): string[] {
  if (!signing) return [];
  const key = signing.key === null ? [] : ['-c', `user.signingkey=${signing.key}`];
  return ['-c', 'commit.gpgsign=true', '-c', `gpg.format=${signing.format}`, '-c', `gpg.${signing.format}.program=${signing.program}`, ...key];
}

const USER_CONFIG_KEYS = /^(user\.(name|email|signingkey)|commit\.gpgsign|gpg\.(format|program)|gpg\.(openpgp|ssh|x509)\.program)$/;

/**
 * The user's own git identity and signing set-up, read from their system and global configuration (never a
 * repository's) and git's identity variables. Read once, before any directive runs: Fleet's git never reads these
 * files afterwards, since a directive runs as the same user and could rewrite them.
 */
export async function readUserGitConfig(git: Pick<GitRunner, 'run'>, env: NodeJS.ProcessEnv = process.env): Promise<UserGitConfig> {
  const userEnv: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !(GIT_LOCATING_ENV as readonly string[]).includes(k)) userEnv[k] = v;
  // A GIT_DIR that cannot exist: git reads the system and global files and no repository's; one call for both.
  userEnv.GIT_DIR = '/dev/null/no-repository';
  const r = await git.run(['config', '--includes', '--show-scope', '--null', '--get-regexp', USER_CONFIG_KEYS.source], {
    cwd: os.homedir(),
    userEnv,
    allowFail: true,
  });
  const values = new Map<string, string>();
  const fields = r.stdout.split('\0');
  for (let i = 0; i + 1 < fields.length; i += 2) {
    // The `-c` options Fleet passes every git (BASE_CONFIG) are the "command" scope: not the user's.
    if (fields[i] === 'command') continue;
    const entry = fields[i + 1]!;
    const nl = entry.indexOf('\n');
    // A key with no value (`[commit] gpgsign`) is true, and --null prints it without the newline.
    if (nl > 0) values.set(entry.slice(0, nl).toLowerCase(), entry.slice(nl + 1));
    else if (entry) values.set(entry.toLowerCase(), 'true');
  }
  const format = (values.get('gpg.format') ?? 'openpgp').toLowerCase();
  const gpgsign = values.get('commit.gpgsign');
  return {
    name: env.GIT_AUTHOR_NAME || values.get('user.name') || undefined,
    email: env.GIT_AUTHOR_EMAIL || values.get('user.email') || undefined,
    gpgsign: gpgsign === undefined ? undefined : /^(true|yes|on|1)$/i.test(gpgsign.trim()),
    format: values.get('gpg.format'),
    signingKey: values.get('user.signingkey') || undefined,
    program: values.get(`gpg.${format}.program`) || (format === 'openpgp' ? values.get('gpg.program') : undefined) || undefined,
  };
}
