/**
 * GitHub's refusal of a push that creates, changes or deletes a workflow file (anything under `.github/workflows/`)
 * when the token may not: a GitHub App's token (GITHUB_TOKEN included) without the `workflows` permission, a classic
 * PAT or OAuth token without the `workflow` scope. The push is refused per ref, in the ref's status line:
 *
 *   ! [remote rejected] fleet/x -> fleet/x (refusing to allow a GitHub App to create or update workflow
 *     `.github/workflows/ci.yml` without `workflows` permission)
 *
 * (peter-evans/create-pull-request#1234 and #3558, repo-sync/github-sync#23 for an App; flashcatcloud/categraf#34 and
 * DataChefHQ/aws-data-landing-zone#29 for a PAT). The commits checked are the ones the repository did not have yet
 * (ocaml-opam/opam-publish#180: a fork refused a branch whose new commits came from upstream), any file under the
 * folder counts (intersystems/iknow#58 was refused for `.github/workflows/dependencies.sh`).
 *
 * git's own receive-pack does the push; a `proc-receive` hook (git ≥ 2.29, `receive.procReceiveRefs`) answers for
 * each ref, which is how a refusal gets GitHub's words into the ref's status line: receive-pack lets that hook update
 * the refs it accepts itself, and reports its `ng <ref> <reason>` as `[remote rejected] (<reason>)`. The hook is
 * configured only for a push whose token lacks the permission; every other push is receive-pack's alone.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TokenSpec } from './state.js';

/** Who GitHub says is refused, or null when the token may change workflow files. */
export function workflowRefusal(spec: TokenSpec | null): 'app' | 'pat' | null {
  if (!spec) return null;
  if (spec.scopes) return spec.scopes.workflows === 'write' ? null : 'app';
  if (spec.oauthScopes) return spec.oauthScopes.includes('workflow') ? null : 'pat';
  // A token the test set up without scopes acts as the repository permission says, as a person's own push would.
  return null;
}

/** The `X-OAuth-Scopes` header of a classic PAT's answers (none for any other token). */
export function oauthScopesHeader(spec: TokenSpec | null): Record<string, string> {
  return spec?.oauthScopes ? { 'x-oauth-scopes': spec.oauthScopes.join(', ') } : {};
}

/** Writes the hook into `dir` (once per emulator) and returns the git configuration that turns it on. */
export async function workflowGuardConfig(dir: string, who: 'app' | 'pat'): Promise<Record<string, string>> {
  const hooks = path.join(dir, 'workflow-guard-hooks');
  await mkdir(hooks, { recursive: true });
  const script = fileURLToPath(new URL('./workflow-guard-hook.mjs', import.meta.url));
  const hook = path.join(hooks, 'proc-receive');
  await writeFile(hook, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(script)}\n`);
  await chmod(hook, 0o755);
  return { 'core.hooksPath': hooks, 'receive.procReceiveRefs': 'refs/', 'emulator.workflowGuard': who };
}
