/**
 * Whether an agent run failed, from what its CLI said of itself, pure. Claude Code (`--output-format json`) ends with
 * one result object, and exits 0 or 1 whatever happened: `is_error` says whether the run failed, `subtype` and
 * `terminal_reason` why (the turn cap, the spending cap, an API error with its `api_error_status`), `result` or
 * `errors` in its own words. Read off the real CLI against the model-API emulator (test/integration/real-claude.test.ts).
 *
 * A run that failed is never a change: its edits may be half done, whatever the exit code says.
 */
import type { ErrorClass } from './model.js';

export interface AgentOutcome {
  class: Extract<ErrorClass, 'directive-failed' | 'budget-exceeded'>;
  /** A sentence a person can act on, naming the cause in the agent's own words. */
  message: string;
  /** Another attempt cannot end otherwise (the key is refused): no retry. */
  final: boolean;
}

/** The failure Claude Code's last result object in `output` reports, or null (it succeeded, or printed no result). */
export function claudeOutcome(output: string): AgentOutcome | null {
  const r = lastResult(output);
  if (!r || r.is_error !== true) return null;
  const said = words(r);
  const status = typeof r.api_error_status === 'number' ? r.api_error_status : null;
  if (r.subtype === 'error_max_turns') {
    return { class: 'budget-exceeded', message: `the agent reached its turn cap with the change unfinished (${said})`, final: false };
  }
  if (r.subtype === 'error_max_budget_usd') {
    return { class: 'budget-exceeded', message: `the agent reached its spending cap with the change unfinished (${said})`, final: false };
  }
  if (status === 401 || status === 403) {
    return { class: 'directive-failed', message: `the agent's model API refused its credentials (${status}: ${said}): check the key the agent gets (ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN)`, final: true };
  }
  if (/not logged in/i.test(said)) {
    return { class: 'directive-failed', message: `the agent CLI has no credentials (${said}): give it ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN`, final: true };
  }
  if (status !== null) {
    return { class: 'directive-failed', message: `the agent's model API kept failing after the CLI's own retries (${status}: ${said})`, final: false };
  }
  return { class: 'directive-failed', message: `the agent stopped on an error (${r.subtype ?? r.terminal_reason ?? 'error'}: ${said})`, final: false };
}

function words(r: Record<string, unknown>): string {
  const errors = Array.isArray(r.errors) ? r.errors.filter((e): e is string => typeof e === 'string') : [];
  const text = [typeof r.result === 'string' ? r.result : '', ...errors].filter(Boolean).join('; ');
  return (text || 'no message').replace(/\s+/g, ' ').slice(0, 300);
}

/** Claude Code's last `{"type":"result",…}` line in `output` (a log has Fleet's footer after it). */
export function lastResult(output: string): Record<string, unknown> | null {
  const lines = output.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!.trim();
    if (!line.startsWith('{') || !line.includes('"type":"result"')) continue;
    try {
      const v = JSON.parse(line) as unknown;
      if (v && typeof v === 'object' && (v as Record<string, unknown>).type === 'result') return v as Record<string, unknown>;
    } catch {
      // not Claude Code's result object: read on
    }
  }
  return null;
}
