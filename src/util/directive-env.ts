/**
 * What of Fleet's environment a directive gets: everything but Fleet's credentials, the runner's command files and
 * the variables that would point git elsewhere. Used alike by the CLI and the action.
 */
/**
 * Set when Fleet runs inside a git process (a hook, an alias): they point git at
 * that repository instead of the one named. Stripped from Fleet's own git calls
 * and from a directive's environment.
 */
export const GIT_LOCATING_ENV = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_COMMON_DIR',
  'GIT_NAMESPACE',
  'GIT_PREFIX',
  'GIT_QUARANTINE_PATH',
  'GIT_CONFIG_PARAMETERS',
] as const;

/**
 * Fleet's own credentials never reach a directive's environment, nor do the
 * variables Fleet documents as token sources (GITHUB_TOKEN, GH_TOKEN), whether
 * or not this run took its token from them: on a runner GITHUB_TOKEN is the
 * job's own token, and a directive that wants a token of its own is given one
 * under a name of the user's choosing.
 */
const WITHHELD_ENV = [
  'FLEET_GITHUB_TOKEN',
  'GITHUB_TOKEN',
  'GH_TOKEN',
  'FLEET_TOKEN',
  'FLEET_RUN_TOKEN',
  'INPUT_TOKEN',
  'INPUT_GITHUB-TOKEN',
  'FLEET_APP_PRIVATE_KEY',
  'INPUT_APP-PRIVATE-KEY',
  'INPUT_PRIVATE-KEY',
  'ACTIONS_RUNTIME_TOKEN',
  'ACTIONS_ID_TOKEN_REQUEST_TOKEN',
  // Agent credentials given to the action: they reach an agent directive under the CLI's own names, and nothing else.
  'FLEET_AGENT_ANTHROPIC_API_KEY',
  'FLEET_AGENT_CLAUDE_CODE_OAUTH_TOKEN',
  'FLEET_AGENT_OPENAI_API_KEY',
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
    if (
      v === undefined ||
      WITHHELD_ENV.includes(k) ||
      RUNNER_COMMAND_FILES.includes(k) ||
      (GIT_LOCATING_ENV as readonly string[]).includes(k) ||
      k === tokenVariable
    )
      continue;
    if (held.some((s) => v.includes(s))) continue;
    out[k] = v;
  }
  return out;
}
