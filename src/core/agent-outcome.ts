/**
 * Whether an agent run failed, from what its CLI said of itself, pure. Read off the real CLIs against the model-API
 * emulator (test/integration/real-claude.test.ts, test/integration/real-codex.test.ts):
 * - Claude Code (`--output-format json`) ends with one result object, and exits 0 or 1 whatever happened: `is_error`
 *   says whether the run failed, `subtype` and `terminal_reason` why (the turn cap, the spending cap, an API error
 *   with its `api_error_status`), `result` or `errors` in its own words.
 * - Codex (`codex exec --json`) prints events, one per line; a run that failed ends with `turn.failed` (its
 *   `error.message`, after `error` events for each retry) and exits 1.
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
  if (r?.is_error !== true) return null;
  const said = words(r);
  const status = typeof r.api_error_status === 'number' ? r.api_error_status : null;
  if (r.subtype === 'error_max_turns') {
    return { class: 'budget-exceeded', message: `the agent reached its turn cap with the change unfinished (${said})`, final: false };
  }
  if (r.subtype === 'error_max_budget_usd') {
    return { class: 'budget-exceeded', message: `the agent reached its spending cap with the change unfinished (${said})`, final: false };
  }
  if (status === 401 || status === 403) {
    return {
      class: 'directive-failed',
      message: `the agent's model API refused its credentials (${status}: ${said}): check the key the agent gets (ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN)`,
      final: true,
    };
  }
  if (/not logged in/i.test(said)) {
    return {
      class: 'directive-failed',
      message: `the agent CLI has no credentials (${said}): give it ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN`,
      final: true,
    };
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

/** The failure `codex exec --json` reports in `output` (its turn.failed event), or null. */
export function codexOutcome(output: string): AgentOutcome | null {
  let failed: string | null = null;
  for (const e of events(output)) {
    if (e.type === 'turn.failed') {
      const err = e.error as { message?: unknown } | undefined;
      failed = typeof err?.message === 'string' ? err.message : 'no message';
    }
  }
  if (failed === null) return null;
  const said = failed.replace(/\s+/g, ' ').slice(0, 300);
  if (/\b(401|403)\b|invalid_api_key|Incorrect API key/i.test(said)) {
    return {
      class: 'directive-failed',
      message: `the agent's model API refused its credentials (${said}): check the key the agent gets (OPENAI_API_KEY or CODEX_API_KEY)`,
      final: true,
    };
  }
  if (/quota/i.test(said)) return { class: 'directive-failed', message: `the agent's model API account is out of quota (${said})`, final: true };
  if (/status|stream disconnected|retry limit|high demand/i.test(said)) {
    return { class: 'directive-failed', message: `the agent's model API kept failing after the CLI's own retries (${said})`, final: false };
  }
  return { class: 'directive-failed', message: `the agent stopped on an error (${said})`, final: false };
}

/** The text of Codex's last agent_message in `output` (`codex exec --json`), or null when it printed none. */
export function lastCodexMessage(output: string): string | null {
  let text: string | null = null;
  for (const e of events(output)) {
    const item = e.item as { type?: unknown; text?: unknown } | undefined;
    if (e.type === 'item.completed' && item?.type === 'agent_message' && typeof item.text === 'string') text = item.text;
  }
  return text;
}

/** The JSON objects of `output`, one per line; other lines (Fleet's log header, stderr) are passed over. */
function* events(output: string): Generator<Record<string, unknown>> {
  for (const line of output.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try {
      const v = JSON.parse(t) as unknown;
      if (v && typeof v === 'object') yield v as Record<string, unknown>;
    } catch {
      // not an event
    }
  }
}
