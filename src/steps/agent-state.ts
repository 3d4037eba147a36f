/**
 * Each lane's agent keeps its state in a folder of the lane's own (`<lane folder>/agent-state/`), never in a folder
 * another lane's agent reads: Claude Code's settings, sessions and transcripts (`CLAUDE_CONFIG_DIR`, by default
 * `~/.claude` and `~/.claude.json`) and Codex's (`CODEX_HOME`, by default `~/.codex`). Without it, lanes run as the
 * same user share one home: a lane's agent would read the transcripts of every lane before it (each holding its
 * repository's code and prompt), and one prompt-injected agent could leave settings (hooks, MCP servers, a model
 * provider) that every later lane's agent obeys.
 *
 * What the agent needs from the user's own folder is copied in once, when the lane's first agent run starts: its
 * login (Claude Code's `.credentials.json`, Codex's `auth.json`) and Codex's `config.toml` (where a gateway is a model
 * provider). Nothing else: not settings, hooks or history. The user's folder is `agent.env`'s or Fleet's
 * `CLAUDE_CONFIG_DIR` / `CODEX_HOME`, else `~/.claude` / `~/.codex`.
 *
 * The copy is made without trusting either side: a directive of an earlier lane (run as the same user) may have
 * put a link to `/proc/self/environ` where the login was, and a directive of this lane may have made the state folder
 * a link elsewhere. A source is read only as a regular file of one name, not through a link, from no pseudo file
 * system, at most 1 MiB; the state folder is made afresh (an existing one is used as it is, never written into).
 */
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, realpath } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { AgentSpec } from '../core/fleet-file.js';

interface StateSpec {
  /** The variable the CLI reads its state folder from. */
  variable: string;
  /** Its default, under HOME. */
  home: string;
  /** The files copied from the user's folder into the lane's. */
  seed: readonly string[];
}

/** Every CLI a preset may run: a `command` template may run either, so it gets both. */
const STATES: Readonly<Record<'claude' | 'codex', StateSpec>> = {
  claude: { variable: 'CLAUDE_CONFIG_DIR', home: '.claude', seed: ['.credentials.json'] },
  codex: { variable: 'CODEX_HOME', home: '.codex', seed: ['config.toml', 'auth.json'] },
};

const MAX_SEED_BYTES = 1024 * 1024;
const making = new Map<string, Promise<Record<string, string>>>();

/**
 * The variables that put this lane's agent state in `<laneDir>/agent-state/`, the folders made and seeded on the
 * first call for the lane (a call made meanwhile, a lens starting beside another, waits for that one).
 */
export function agentStateEnv(laneDir: string, agent: AgentSpec, env: Readonly<Record<string, string | undefined>>): Promise<Record<string, string>> {
  let p = making.get(laneDir);
  if (!p) {
    p = makeState(laneDir, agent, env).finally(() => making.delete(laneDir));
    making.set(laneDir, p);
  }
  return p;
}

async function makeState(laneDir: string, agent: AgentSpec, env: Readonly<Record<string, string | undefined>>): Promise<Record<string, string>> {
  const root = join(laneDir, 'agent-state');
  const specs = agent.preset === 'command' ? Object.values(STATES) : [STATES[agent.preset]];
  const out: Record<string, string> = {};
  for (const s of specs) out[s.variable] = join(root, s.home.slice(1));
  if (!(await fresh(root))) return out;
  for (const s of specs) {
    const dir = out[s.variable]!;
    await mkdir(dir, { mode: 0o700 });
    const from = agent.env?.[s.variable] || env[s.variable] || join(env.HOME || homedir(), s.home);
    for (const name of s.seed) await copySeed(join(from, name), join(dir, name));
  }
  return out;
}

/** Makes `dir`; false when something is already there (a folder of an earlier run of the lane, or anything else). */
async function fresh(dir: string): Promise<boolean> {
  try {
    await mkdir(dir, { mode: 0o700 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const st: Stats = await lstat(dir);
    if (!st.isDirectory()) throw new Error(`${dir} is not a folder (a directive replaced it): the lane's agent has no state folder`);
    return false;
  }
}

async function copySeed(from: string, to: string): Promise<void> {
  let real: string;
  try {
    real = await realpath(from);
  } catch {
    return; // nothing there: the user has no login or config of that kind
  }
  if (/^\/(proc|sys|dev)(\/|$)/.test(real)) return;
  let src: FileHandle;
  try {
    src = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return; // a link, or unreadable
  }
  try {
    const st = await src.stat();
    if (!st.isFile() || st.size > MAX_SEED_BYTES) return;
    const bytes = await src.readFile();
    const dst = await open(to, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      await dst.writeFile(bytes);
    } finally {
      await dst.close();
    }
  } finally {
    await src.close();
  }
}
