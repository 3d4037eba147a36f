/**
 * What a GitHub Actions leg needs before an agent lane can run: the npm
 * package that provides the agent CLI, and the variables each CLI reads its
 * credential from. Pure: the install itself is src/actions/agent-install.ts.
 *
 * Variables, from the CLIs' own documentation:
 * - Claude Code reads `ANTHROPIC_API_KEY` (always used in print mode when set)
 *   or `CLAUDE_CODE_OAUTH_TOKEN` (the token `claude setup-token` mints for
 *   headless use): https://code.claude.com/docs/en/env-vars
 * - Codex reads `CODEX_API_KEY` in `codex exec` ("set it inline, not for the
 *   whole job"), and older releases `OPENAI_API_KEY`:
 *   https://developers.openai.com/codex/environment-variables
 */
import type { AgentSpec } from './fleet-file.js';

/** The npm package each preset's CLI comes from. */
export const PRESET_PACKAGES: Readonly<Record<'claude' | 'codex', string>> = {
  claude: '@anthropic-ai/claude-code',
  codex: '@openai/codex',
};

/** The npm package spec a leg installs for this agent, or null when it installs nothing. */
export function agentPackage(agent: AgentSpec | undefined): string | null {
  if (!agent || agent.install === false) return null;
  if (agent.install) return agent.install;
  return agent.preset === 'command' ? null : PRESET_PACKAGES[agent.preset];
}

/** An agent credential as the reusable workflow takes it (a secret) and the variables the CLI reads it from. */
export interface AgentCredential {
  /** The reusable workflow's secret and the action's input. */
  input: 'anthropic-api-key' | 'claude-code-oauth-token' | 'openai-api-key';
  /** How it reaches Fleet's process (action.yml passes each input as one of these). */
  fleetVariable: string;
  /** The variables the directive gets it in. */
  variables: readonly string[];
  presets: ReadonlyArray<AgentSpec['preset']>;
}

export const AGENT_CREDENTIALS: readonly AgentCredential[] = [
  { input: 'anthropic-api-key', fleetVariable: 'FLEET_AGENT_ANTHROPIC_API_KEY', variables: ['ANTHROPIC_API_KEY'], presets: ['claude', 'command'] },
  { input: 'claude-code-oauth-token', fleetVariable: 'FLEET_AGENT_CLAUDE_CODE_OAUTH_TOKEN', variables: ['CLAUDE_CODE_OAUTH_TOKEN'], presets: ['claude', 'command'] },
  { input: 'openai-api-key', fleetVariable: 'FLEET_AGENT_OPENAI_API_KEY', variables: ['CODEX_API_KEY', 'OPENAI_API_KEY'], presets: ['codex', 'command'] },
];

/**
 * The variables the directive of this agent gets, from the credentials Fleet was given: only those its CLI reads
 * (a `command` template may run either CLI, so it gets every one that was given). Never for checks.
 */
export function agentCredentialEnv(agent: AgentSpec | undefined, given: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  if (!agent) return out;
  for (const c of AGENT_CREDENTIALS) {
    const value = given[c.fleetVariable];
    if (!value || !c.presets.includes(agent.preset)) continue;
    for (const v of c.variables) out[v] = value;
  }
  return out;
}
