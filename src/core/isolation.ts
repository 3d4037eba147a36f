/**
 * What Fleet's credentials require of the sandbox: one policy for the CLI and the action. Pure.
 */
import type { FleetFile } from './fleet-file.js';

/**
 * With App credentials, Fleet's own environment holds the App's private key: a directive that is not isolated can
 * read it from /proc (docs/security.md). Under `isolation: auto` a machine that cannot isolate is therefore a set-up
 * failure when App credentials are given; `isolation: off` says the user accepts that, and the report says so.
 */
export function appIsolationProblem(setting: FleetFile['isolation'], kind: string, detail: string): string | null {
  if (setting !== 'auto' || kind !== 'none') return null;
  return `with GitHub App credentials directives must be isolated (the App's private key is in Fleet's environment, which an unisolated directive can read from /proc), but they cannot be isolated here: ${detail}. Run where user namespaces or sudo are available, use a token instead, or set isolation: off in the fleet file to accept the risk`;
}
