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
import { AGENT_CREDENTIALS } from './agent-credentials.js';

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
