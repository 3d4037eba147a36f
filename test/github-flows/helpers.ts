/**
 * Whole fleets on GitHub, end to end: the real `fleet` CLI (`main(argv, io)`)
 * or the action's `runAction`, pointed at the GitHub emulator through the
 * environment a user (or a GHES runner) would set. Real HTTP, real git; no
 * mock of fetch or Octokit. Everything asserted is read back from the
 * emulator's state or from the files the run left, never only from what
 * Fleet printed.
 */
import { join } from 'node:path';
import { startEmulator, type Emulator, type EmulatorOptions } from '../support/github-emulator/index.js';
import { fleet, git, removeDir, runArgs, tempDir, writeFleetFile, type CliRun } from '../integration/helpers.js';

/** A token of GitHub's installation-token shape, so shape-based redaction would catch it too. */
export const FLOW_TOKEN = 'ghs_FleetFlowsToken0123456789abcdefGHIJ';

export interface Flow {
  emu: Emulator;
  /** A temp folder for the fleet file and the workspace. */
  dir: string;
  token: string;
  /** The environment `fleet` runs with: the emulator's URLs, the token, and the test tuning knobs. */
  env: Record<string, string | undefined>;
  /** Writes the fleet file (forge: github) and returns its path. */
  fleetFile(spec: Record<string, unknown>, name?: string): string;
  /** `fleet run <file> --workspace <ws> --quiet` in-process. */
  run(file: string, ws: string, extra?: string[], env?: Record<string, string | undefined>): Promise<CliRun>;
  close(): Promise<void>;
}

/** The environment variables that point Fleet at the emulator (what GHES runners set), plus the test knobs. */
export function githubEnv(emu: Emulator, token: string): Record<string, string | undefined> {
  return {
    GITHUB_API_URL: emu.url,
    GITHUB_GRAPHQL_URL: emu.graphqlUrl,
    // The emulator serves git at ${url}/git/<owner>/<repo>.git; the forge clones `${GITHUB_SERVER_URL}/<owner>/<repo>.git`.
    GITHUB_SERVER_URL: `${emu.url}/git`,
    FLEET_GITHUB_TOKEN: token,
    GITHUB_TOKEN: undefined,
    GH_TOKEN: undefined,
    // Not on a runner: no ::add-mask:: lines on stdout.
    GITHUB_ACTIONS: undefined,
    GIT_TERMINAL_PROMPT: '0',
    // The emulator has its own limits to test; GitHub's 1 s / 3 s pacing would only make the tests slow.
    FLEET_GITHUB_PACING_MS: '0',
    FLEET_GITHUB_POLL_MS: '25',
    FLEET_GITHUB_CI_GRACE_MS: '250',
  };
}

export async function startFlow(opts: EmulatorOptions = {}): Promise<Flow> {
  const token = typeof opts.token === 'string' ? opts.token : FLOW_TOKEN;
  const emu = await startEmulator({ ...opts, token });
  const dir = tempDir('fleet-gh-');
  const env = githubEnv(emu, token);
  return {
    emu,
    dir,
    token,
    env,
    fleetFile: (spec, name = 'fleet.yml') => writeFleetFile(dir, { forge: 'github', ...spec }, name),
    run: (file, ws, extra = [], more = {}) => fleet(runArgs(file, ws, ...extra), { cwd: dir, env: { ...env, ...more } }),
    async close() {
      await emu.close();
      removeDir(dir);
    },
  };
}

/** Creates `owner/<prefix>-1..n`, each with a README and a package.json. */
export async function createRepos(emu: Emulator, owner: string, prefix: string, n: number): Promise<string[]> {
  const names: string[] = [];
  for (let i = 1; i <= n; i++) {
    const name = `${prefix}-${i}`;
    await emu.createRepo({ owner, name, files: { 'README.md': `# ${name}\n`, 'package.json': `{ "name": "${name}" }\n` } });
    names.push(`${owner}/${name}`);
  }
  return names;
}

/** PRs opened (POST …/pulls answered 201), optionally in one repository. */
export function prsOpened(emu: Emulator, repo?: string): number {
  return emu.find({ route: '/repos/{owner}/{repo}/pulls', method: 'POST', status: 201 }).filter((r) => !repo || r.path === `/repos/${repo}/pulls`).length;
}

/** Pushes that reached a repository over git (receive-pack POSTs answered 200). */
export function gitPushes(emu: Emulator, repo: string): number {
  return emu.find({ kind: 'git', method: 'POST', status: 200 }).filter((r) => r.path === `/git/${repo}.git/git-receive-pack`).length;
}

/** Commits on `branch` that are not on `base`, in a bare repository of the emulator (newest first). */
export function commitsAhead(emu: Emulator, repo: string, base: string, branch: string): string[] {
  const gitDir = join(emu.reposDir, `${repo}.git`);
  const out = git(gitDir, 'rev-list', `refs/heads/${base}..refs/heads/${branch}`);
  return out ? out.split('\n') : [];
}

/** Every commit reachable from a branch in a bare repository of the emulator (newest first). */
export function history(emu: Emulator, repo: string, branch: string): Array<{ sha: string; parents: string[]; subject: string }> {
  const gitDir = join(emu.reposDir, `${repo}.git`);
  return git(gitDir, 'log', '--format=%H %P%x09%s', `refs/heads/${branch}`)
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [ids, subject = ''] = line.split('\t');
      const [sha, ...parents] = ids!.split(' ');
      return { sha: sha!, parents, subject };
    });
}

/** The "Action required" section of a rendered report. */
export function actionRequired(report: string): string {
  const at = report.indexOf('### Action required');
  if (at < 0) return '';
  const rest = report.slice(at + '### Action required'.length);
  const end = rest.search(/\n#{1,3} |\nManifest: /);
  return (end < 0 ? rest : rest.slice(0, end)).trim();
}

/** The "Excluded" section of a rendered report. */
export function excludedSection(report: string): string {
  const at = report.indexOf('### Excluded');
  if (at < 0) return '';
  const rest = report.slice(at + '### Excluded'.length);
  const end = rest.search(/\n#{1,3} /);
  return (end < 0 ? rest : rest.slice(0, end)).trim();
}
