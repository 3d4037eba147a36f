/**
 * What every git call Fleet makes gets, whoever makes it: the program (pinned at the first call), the `-c` options
 * forced before the subcommand, and the environment (non-interactive, LC_ALL=C, the commit identity, nothing that
 * points git at another repository or configuration). Kept apart from running git (run.ts) because it is the
 * security boundary of Fleet's git: every option and variable here says why it is there.
 */
import type { CommitIdentity } from '../../core/commit-identity.js';
import { GIT_LOCATING_ENV } from '../../util/directive-env.js';
import { pinnedProgram } from '../processes.js';

/**
 * Fleet's own git calls also drop a ceiling or dates they did not set, and the
 * Actions runtime's credentials: git never needs them, and a filter or hook a
 * hostile repository got git to run would inherit them (the runtime token can
 * upload artifacts the report job reads).
 */
const STRIPPED_ENV = [
  ...GIT_LOCATING_ENV,
  'GIT_CEILING_DIRECTORIES',
  'GIT_AUTHOR_DATE',
  'GIT_COMMITTER_DATE',
  'ACTIONS_RUNTIME_TOKEN',
  'ACTIONS_RUNTIME_URL',
  'ACTIONS_RESULTS_URL',
  'ACTIONS_CACHE_URL',
  'ACTIONS_ID_TOKEN_REQUEST_TOKEN',
  'ACTIONS_ID_TOKEN_REQUEST_URL',
];

/**
 * Configuration forced on every call (before the subcommand). Only the
 * transports a target can be reached over are allowed: `ext::` runs a command
 * and `fd::` talks to an inherited descriptor, neither of which a target needs.
 * The user's attributes and excludes files are not read either: what a lane
 * commits depends on the target repository alone, the same on every machine.
 */
export const BASE_CONFIG: readonly string[] = [
  '-c',
  'protocol.allow=never',
  '-c',
  'protocol.file.allow=always',
  '-c',
  'protocol.https.allow=always',
  '-c',
  'protocol.http.allow=always',
  '-c',
  'protocol.ssh.allow=always',
  '-c',
  'protocol.git.allow=always',
  '-c',
  'core.attributesFile=/dev/null',
  '-c',
  'core.excludesFile=/dev/null',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'advice.detachedHead=false',
  '-c',
  'core.quotePath=false',
  '-c',
  'commit.gpgsign=false',
  '-c',
  'tag.gpgsign=false',
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
  // Where Fleet runs as root its directives run as nobody, in working copies made theirs (sandbox.ts): git would
  // refuse them as owned by someone else. What that check guards against, a repository's own configuration
  // running programs, Fleet's git is kept from anyway: .git/config is put back as cloned before each call.
  '-c',
  'safe.directory=*',
];

/**
 * Fleet's git reads only configuration Fleet wrote: the repository's own
 * .git/config (put back as cloned after every foreign command, see
 * guard.ts) and what this module passes. A directive runs as the same user
 * and can write ~/.gitconfig, $XDG_CONFIG_HOME/git/config or (as root)
 * /etc/gitconfig: a `core.fsmonitor` there would run its program inside
 * Fleet's push with the credential header in the environment, and a
 * `url.*.pushInsteadOf` would send the lane's commit to another repository.
 * Replace refs (`git replace`) and grafts are ignored for the same reason:
 * through them a directive could show Fleet a diff other than the commit's.
 */
const ISOLATED_ENV: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_NO_REPLACE_OBJECTS: '1',
};

/**
 * Git, by the absolute path it had at Fleet's first git call: every directive runs after its lane's clone, so no
 * directive can have planted a `git` on PATH by then (see pinnedProgram).
 */
export const gitProgram = (): string => pinnedProgram('git');

/** The environment of a git call: isolated, non-interactive, committing as `identity`; `extra` (a call's own) wins. */
export function gitEnv(identity: CommitIdentity, extra?: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...ISOLATED_ENV };
  for (const k of STRIPPED_ENV) delete env[k];
  env.GIT_TERMINAL_PROMPT = '0';
  env.GCM_INTERACTIVE = 'never';
  env.LC_ALL = 'C';
  env.GIT_AUTHOR_NAME = identity.name;
  env.GIT_AUTHOR_EMAIL = identity.email;
  env.GIT_COMMITTER_NAME = identity.name;
  env.GIT_COMMITTER_EMAIL = identity.email;
  if (extra) Object.assign(env, extra);
  return env;
}
