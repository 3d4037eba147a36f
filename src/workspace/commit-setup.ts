/**
 * Hands Fleet's git the identity and signing of the lanes' commits (src/core/commit-identity.ts), decided from the
 * fleet file and the user's own git as it is now: call it before any directive runs.
 */
import type { FleetFile } from '../core/fleet-file.js';
import { commitSetup, describeCommitSetup } from '../core/commit-identity.js';
import { readUserGitConfig, setGitIdentity, setGitSigning } from './git.js';

/** What was decided (one line for a log), or why signing cannot be set up. */
export async function adoptCommitSetup(
  file: Pick<FleetFile, 'commit_author' | 'sign_commits'>,
  env: NodeJS.ProcessEnv,
): Promise<{ ok: true; line: string; notes: string[] } | { ok: false; problem: string }> {
  const decided = commitSetup(file.commit_author, file.sign_commits, await readUserGitConfig(env));
  if (!decided.ok) return decided;
  const notes = [...decided.setup.notes];
  const problem = setGitSigning(decided.setup.signing);
  if (problem) {
    if (file.sign_commits === 'required') return { ok: false, problem };
    // auto: the user's signing program is not here (a runner without gpg): unsigned, said once.
    setGitSigning(null);
    notes.push(`commits are not signed: ${problem}`);
  }
  setGitIdentity(decided.setup.identity);
  return { ok: true, line: describeCommitSetup({ ...decided.setup, signing: problem ? null : decided.setup.signing }), notes };
}
