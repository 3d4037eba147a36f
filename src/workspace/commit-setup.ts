/**
 * Decides the identity and signing of the lanes' commits (src/core/commit-identity.ts) from the fleet file and the
 * user's own git as it is now: call it before any directive runs. What it decides is a value, `commit`, that the
 * run's workspace is built with (workspace.ts, git/git.ts).
 */
import type { FleetFile } from '../core/fleet-file.js';
import { commitSetup, describeCommitSetup } from '../core/commit-identity.js';
import { Git } from './git/git.js';
import { pinSigning, readUserGitConfig, type CommitSettings } from './git/identity.js';

/** What was decided (one line for a log, and the settings to build the workspace with), or why signing cannot be set up. */
export async function adoptCommitSetup(
  file: Pick<FleetFile, 'commit_author' | 'sign_commits'>,
  env: NodeJS.ProcessEnv,
): Promise<{ ok: true; line: string; notes: string[]; commit: CommitSettings } | { ok: false; problem: string }> {
  const decided = commitSetup(file.commit_author, file.sign_commits, await readUserGitConfig(new Git(), env));
  if (!decided.ok) return decided;
  const notes = [...decided.setup.notes];
  const pinned = decided.setup.signing ? pinSigning(decided.setup.signing) : { ok: true as const, signing: null };
  const problem = pinned.ok ? null : pinned.problem;
  if (problem) {
    if (file.sign_commits === 'required') return { ok: false, problem };
    // auto: the user's signing program is not here (a runner without gpg): unsigned, said once.
    notes.push(`commits are not signed: ${problem}`);
  }
  const commit: CommitSettings = { identity: { ...decided.setup.identity }, signing: pinned.ok ? pinned.signing : null };
  return { ok: true, line: describeCommitSetup({ ...decided.setup, signing: problem ? null : decided.setup.signing }), notes, commit };
}
