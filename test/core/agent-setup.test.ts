import { describe, expect, it } from 'vitest';
import { agentCredentialEnv, agentPackage } from '../../src/core/agent-setup.js';
import { AgentSchema } from '../../src/core/fleet-file.js';

const agent = (a: Record<string, unknown>) => AgentSchema.parse(a);
const GIVEN = { FLEET_AGENT_ANTHROPIC_API_KEY: 'sk-ant-1', FLEET_AGENT_CLAUDE_CODE_OAUTH_TOKEN: 'oauth-1', FLEET_AGENT_OPENAI_API_KEY: 'sk-oa-1' };

describe('the agent CLI a leg installs', () => {
  it("is the preset's npm package, agent.install when set, nothing for false or a command template without one", () => {
    expect(agentPackage(agent({ preset: 'claude' }))).toBe('@anthropic-ai/claude-code');
    expect(agentPackage(agent({ preset: 'codex' }))).toBe('@openai/codex');
    expect(agentPackage(agent({ preset: 'claude', install: '@anthropic-ai/claude-code@2.1.100' }))).toBe('@anthropic-ai/claude-code@2.1.100');
    expect(agentPackage(agent({ preset: 'claude', install: false }))).toBeNull();
    expect(agentPackage(agent({ preset: 'command', command: 'my-agent {prompt_file}' }))).toBeNull();
    expect(agentPackage(agent({ preset: 'command', command: 'my-agent {prompt_file}', install: 'my-agent@3' }))).toBe('my-agent@3');
    expect(agentPackage(undefined)).toBeNull();
  });
});

describe('the credentials an agent directive gets', () => {
  it('are the ones its CLI reads, under the names it reads them', () => {
    expect(agentCredentialEnv(agent({ preset: 'claude' }), GIVEN)).toEqual({ ANTHROPIC_API_KEY: 'sk-ant-1', CLAUDE_CODE_OAUTH_TOKEN: 'oauth-1' });
    expect(agentCredentialEnv(agent({ preset: 'codex' }), GIVEN)).toEqual({ CODEX_API_KEY: 'sk-oa-1', OPENAI_API_KEY: 'sk-oa-1' });
  });

  it('are every one given for a command template, and none when none was given or the fleet has no agent', () => {
    expect(Object.keys(agentCredentialEnv(agent({ preset: 'command', command: 'x {prompt_file}' }), GIVEN)).sort()).toEqual([
      'ANTHROPIC_API_KEY',
      'CLAUDE_CODE_OAUTH_TOKEN',
      'CODEX_API_KEY',
      'OPENAI_API_KEY',
    ]);
    expect(agentCredentialEnv(agent({ preset: 'claude' }), {})).toEqual({});
    expect(agentCredentialEnv(agent({ preset: 'claude' }), { FLEET_AGENT_ANTHROPIC_API_KEY: '' })).toEqual({});
    expect(agentCredentialEnv(undefined, GIVEN)).toEqual({});
  });
});
