/**
 * The agent CLI a matrix leg needs, installed with npm once per leg and kept
 * in the Actions cache, so 256 legs do not each download Claude Code or Codex.
 *
 * - The cache key names the exact package version (resolved with `npm view`,
 *   or the tarball's digest for a `file:` spec), the runner's OS and
 *   architecture and Node's major version: a new release is a new entry,
 *   never a stale hit.
 * - The path is `~/.fleet-agent/<id>`, written the same way in every job:
 *   @actions/cache versions an entry by the path strings it is given, and
 *   GitHub's runners share HOME across jobs.
 * - It is saved right after npm finishes, before any directive runs, so
 *   nothing a directive does can reach the cache (actions/cache keys are
 *   immutable, so a later leg cannot replace it either).
 * - npm runs with the directive's environment: Fleet's tokens and the
 *   runtime token withheld, like every command Fleet starts for the fleet.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface AgentInstallInput {
  /** The npm package spec (see agentPackage). */
  spec: string;
  /** The command the preset runs (`claude`, `codex`): it must be what the package installed. */
  bin: string | null;
  env: Record<string, string>;
  log(line: string): void;
  /** The Actions cache, when the job has one. */
  cache?: CacheLike;
}

export interface CacheLike {
  restore(paths: string[], key: string): Promise<string | undefined>;
  save(paths: string[], key: string): Promise<number>;
}

export interface AgentInstalled {
  /** Put first on the directive's PATH. */
  binDir: string;
  /** What was installed: `name@version`, or the spec as written when it could not be resolved. */
  resolved: string;
  from: 'cache' | 'npm';
  seconds: number;
}

/** Installs (or restores) the agent CLI; throws with npm's own words when it cannot. */
export async function installAgent(input: AgentInstallInput): Promise<AgentInstalled> {
  const t0 = Date.now();
  const { resolved, exact } = await resolveSpec(input.spec, input.env);
  // A spec npm could not resolve to one version (a registry it cannot reach, a git URL) could name another version
  // tomorrow under the same key: installed afresh, never from the cache.
  const cache = exact ? input.cache : undefined;
  if (!exact && input.cache) input.log(`Agent CLI ${input.spec}: not resolved to one version, so not cached: installing with npm`);
  const id = createHash('sha256')
    .update(`${resolved}\n${process.platform}-${process.arch}\nnode${process.versions.node.split('.')[0]}`)
    .digest('hex')
    .slice(0, 20);
  // Written with "~" so the cache's version (a digest of the path strings) is the same in every job.
  const cachePath = `~/.fleet-agent/${id}`;
  const dir = join(homedir(), '.fleet-agent', id);
  const binDir = join(dir, 'node_modules', '.bin');
  const key = `fleet-agent-${process.platform}-${process.arch}-${id}`;
  const seconds = () => Math.round((Date.now() - t0) / 10) / 100;

  if (cache && (await restored(cache, cachePath, key, input.log)) && usable(binDir, input.bin)) {
    input.log(`Agent CLI ${resolved}: restored from the Actions cache (${key}) in ${seconds()} s`);
    return { binDir, resolved, from: 'cache', seconds: seconds() };
  }
  await npm(['install', '--prefix', dir, '--no-audit', '--no-fund', '--no-save', '--loglevel=error', input.spec], input.env);
  if (!usable(binDir, input.bin)) {
    throw new Error(
      `the package ${input.spec} installed no \`${input.bin}\` command; set agent.install to the package that provides it, or agent.command to the binary`,
    );
  }
  const installedIn = seconds();
  if (cache) await saved(cache, cachePath, key, input.log);
  input.log(`Agent CLI ${resolved}: installed with npm in ${installedIn} s${cache ? ` and saved to the Actions cache as ${key}` : ' (not cached)'}`);
  return { binDir, resolved, from: 'npm', seconds: installedIn };
}

function usable(binDir: string, bin: string | null): boolean {
  return existsSync(bin ? join(binDir, bin) : binDir);
}

async function restored(cache: CacheLike, path: string, key: string, log: (line: string) => void): Promise<boolean> {
  try {
    return (await cache.restore([path], key)) === key;
  } catch (err) {
    log(`Agent CLI: the Actions cache could not be read (${(err as Error).message}); installing with npm`);
    return false;
  }
}

async function saved(cache: CacheLike, path: string, key: string, log: (line: string) => void): Promise<void> {
  try {
    // Another leg of the same wave may be saving the same key at this moment: the service refuses the second, which is fine.
    await cache.save([path], key);
  } catch (err) {
    log(`Agent CLI: not saved to the Actions cache (${(err as Error).message})`);
  }
}

/**
 * The exact thing a spec names: `name@version` from the registry for a name or range, the tarball's digest for a
 * `file:` spec, the spec as written otherwise (a git URL, or a registry npm cannot reach).
 */
async function resolveSpec(spec: string, env: Record<string, string>): Promise<{ resolved: string; exact: boolean }> {
  if (spec.startsWith('file:')) {
    const file = spec.slice('file:'.length);
    return existsSync(file)
      ? { resolved: `${spec}#sha256:${createHash('sha256').update(readFileSync(file)).digest('hex')}`, exact: true }
      : { resolved: spec, exact: false };
  }
  if (/^(git\+|https?:|github:)/.test(spec)) return { resolved: spec, exact: false };
  try {
    const out = JSON.parse(await npm(['view', spec, 'name', 'version', '--json'], env)) as
      | { name: string; version: string }
      | Array<{ name: string; version: string }>;
    const last = Array.isArray(out) ? out.at(-1) : out;
    return last ? { resolved: `${last.name}@${last.version}`, exact: true } : { resolved: spec, exact: false };
  } catch {
    return { resolved: spec, exact: false };
  }
}

/** Runs npm and returns its standard output; throws with the end of its error output. */
function npm(args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    child.on('error', (e) => reject(new Error(`npm could not be started (${e.message}): the runner needs Node.js with npm`)));
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`npm ${args[0]} exited with ${code}: ${err.trim().split('\n').slice(-5).join(' ')}`)),
    );
  });
}
