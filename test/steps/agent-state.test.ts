/**
 * Each lane's agent state folder (src/steps/agent-state.ts): made afresh, seeded with the user's login and Codex's
 * config alone, and never by reading through a link, a FIFO or a pseudo file a directive of an earlier lane planted,
 * nor by writing where a directive of this lane pointed the folder. The real CLIs using it are in
 * test/integration/real-claude.test.ts ("own state") and real-codex.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentStateEnv } from '../../src/steps/agent-state.js';
import { AgentSchema } from '../../src/core/fleet-file.js';
import { removeDir, tempDir } from '../integration/helpers.js';

let dir: string;
let home: string;
let lane: string;
beforeEach(() => {
  dir = tempDir('fleet-agent-state-');
  home = join(dir, 'home');
  lane = join(dir, 'ws', 'lanes', 'a');
  mkdirSync(join(home, '.claude'), { recursive: true });
  mkdirSync(join(home, '.codex'), { recursive: true });
  mkdirSync(lane, { recursive: true });
});
afterEach(() => removeDir(dir));

const claude = AgentSchema.parse({ preset: 'claude' });

describe("a lane's agent state", () => {
  it("is a folder of the lane's, seeded with the user's login alone", async () => {
    writeFileSync(join(home, '.claude', '.credentials.json'), '{"claudeAiOauth":{}}');
    writeFileSync(join(home, '.claude', 'settings.json'), '{"hooks":{}}');
    writeFileSync(join(home, '.claude.json'), '{}');
    const env = await agentStateEnv(lane, claude, { HOME: home });
    expect(env).toEqual({ CLAUDE_CONFIG_DIR: join(lane, 'agent-state', 'claude') });
    expect(readdirSync(env.CLAUDE_CONFIG_DIR!)).toEqual(['.credentials.json']);
    expect(readFileSync(join(env.CLAUDE_CONFIG_DIR!, '.credentials.json'), 'utf8')).toBe('{"claudeAiOauth":{}}');
  });

  it("takes Codex's config and login from CODEX_HOME (agent.env's before Fleet's), and gives a command template both CLIs' folders", async () => {
    const mine = join(dir, 'codex-home');
    mkdirSync(mine);
    writeFileSync(join(mine, 'config.toml'), 'model = "x"\n');
    writeFileSync(join(mine, 'auth.json'), '{}');
    writeFileSync(join(mine, 'history.jsonl'), 'old sessions\n');
    const codex = AgentSchema.parse({ preset: 'codex', env: { CODEX_HOME: mine } });
    const env = await agentStateEnv(lane, codex, { HOME: home, CODEX_HOME: join(dir, 'elsewhere') });
    expect(readdirSync(env.CODEX_HOME!).sort()).toEqual(['auth.json', 'config.toml']);
    const other = join(dir, 'ws', 'lanes', 'b');
    mkdirSync(other);
    expect(Object.keys(await agentStateEnv(other, AgentSchema.parse({ preset: 'command', command: 'x' }), { HOME: home })).sort()).toEqual([
      'CLAUDE_CONFIG_DIR',
      'CODEX_HOME',
    ]);
  });

  it('reads no login through a link, from /proc, or from a FIFO an earlier directive planted', async () => {
    symlinkSync('/proc/self/environ', join(home, '.claude', '.credentials.json'));
    const env = await agentStateEnv(lane, claude, { HOME: home });
    expect(readdirSync(env.CLAUDE_CONFIG_DIR!)).toEqual([]);

    removeDir(join(lane, 'agent-state'));
    removeDir(join(home, '.codex'));
    symlinkSync('/proc/self', join(home, '.codex'));
    execFileSync('mkfifo', [join(home, '.claude-fifo')]);
    const codex = await agentStateEnv(lane, AgentSchema.parse({ preset: 'codex' }), { HOME: home });
    expect(readdirSync(codex.CODEX_HOME!)).toEqual([]);

    const fifoHome = join(dir, 'fifo-home');
    mkdirSync(join(fifoHome, '.claude'), { recursive: true });
    execFileSync('mkfifo', [join(fifoHome, '.claude', '.credentials.json')]);
    const other = join(dir, 'ws', 'lanes', 'c');
    mkdirSync(other);
    // Would block in open() without O_NONBLOCK: nobody writes to it.
    expect(readdirSync((await agentStateEnv(other, claude, { HOME: fifoHome })).CLAUDE_CONFIG_DIR!)).toEqual([]);
  });

  it('writes nowhere a directive of the lane pointed its folder, and uses a folder already there as it is', async () => {
    writeFileSync(join(home, '.claude', '.credentials.json'), 'login');
    const target = join(dir, 'target');
    mkdirSync(target);
    symlinkSync(target, join(lane, 'agent-state'));
    await expect(agentStateEnv(lane, claude, { HOME: home })).rejects.toThrow(/is not a folder \(a directive replaced it\)/);
    expect(readdirSync(target)).toEqual([]);

    const again = join(dir, 'ws', 'lanes', 'd');
    mkdirSync(join(again, 'agent-state', 'claude'), { recursive: true });
    await agentStateEnv(again, claude, { HOME: home });
    expect(existsSync(join(again, 'agent-state', 'claude', '.credentials.json'))).toBe(false);
  });
});
