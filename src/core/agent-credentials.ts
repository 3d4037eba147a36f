/**
 * The agent credentials Fleet takes (secrets of the reusable workflow, variables of the CLI's environment) and the
 * variables each agent CLI reads them from (sources in agent-setup.ts). Pure; imported by the fleet file's schema,
 * which refuses them in agent.env.
 */
/** An agent credential as the reusable workflow takes it (a secret) and the variables the CLI reads it from. */
export interface AgentCredential {
  /** The reusable workflow's secret and the action's input. */
  input: 'anthropic-api-key' | 'claude-code-oauth-token' | 'openai-api-key';
  /** How it reaches Fleet's process (action.yml passes each input as one of these). */
  fleetVariable: string;
  /** The variables the directive gets it in. */
  variables: readonly string[];
  presets: ReadonlyArray<'claude' | 'codex' | 'command'>;
}

export const AGENT_CREDENTIALS: readonly AgentCredential[] = [
  { input: 'anthropic-api-key', fleetVariable: 'FLEET_AGENT_ANTHROPIC_API_KEY', variables: ['ANTHROPIC_API_KEY'], presets: ['claude', 'command'] },
  {
    input: 'claude-code-oauth-token',
    fleetVariable: 'FLEET_AGENT_CLAUDE_CODE_OAUTH_TOKEN',
    variables: ['CLAUDE_CODE_OAUTH_TOKEN'],
    presets: ['claude', 'command'],
  },
  { input: 'openai-api-key', fleetVariable: 'FLEET_AGENT_OPENAI_API_KEY', variables: ['CODEX_API_KEY', 'OPENAI_API_KEY'], presets: ['codex', 'command'] },
];
