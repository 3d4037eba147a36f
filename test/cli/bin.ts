/** `fleet` as a user runs it: bin/fleet.js over the committed bundle, a process of its own. */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

export const BIN = resolve('bin/fleet.js');

/** The environment a user's `fleet` starts with: PATH, a HOME of the test's, and who commits; no token. */
export function plainEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'T',
    GIT_AUTHOR_EMAIL: 't@example.invalid',
    GIT_COMMITTER_NAME: 'T',
    GIT_COMMITTER_EMAIL: 't@example.invalid',
  };
}

/**
 * `fleet …` from `cwd`, with HOME in `home`, a fixed git identity and no token but what `extraEnv` adds; `bin`: another
 * installed `fleet`.
 */
export function fleetProcess(
  args: string[],
  cwd: string,
  home: string,
  bin = BIN,
  extraEnv: Record<string, string> = {},
): { code: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...plainEnv(home), ...extraEnv };
  const r = spawnSync(bin === BIN ? process.execPath : bin, bin === BIN ? [BIN, ...args] : args, { cwd, env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
