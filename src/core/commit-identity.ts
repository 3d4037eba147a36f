/**
 * Who Fleet's commits are by, and whether they are signed: decided once, before any directive runs, from the fleet
 * file (or its flags), the user's own git configuration as it was then, and the documented default. Fleet's git never
 * reads the user's configuration itself (a directive could have rewritten it by then, see src/workspace/git/env.ts).
 */

export interface CommitIdentity {
  name: string;
  email: string;
}

export const DEFAULT_COMMIT_IDENTITY: Readonly<CommitIdentity> = Object.freeze({ name: 'Fleet', email: 'fleet@users.noreply.github.com' });

/** What the user's git says, read before anything ran (`git config` of the user's system and global files, and git's environment). */
export interface UserGitConfig {
  name?: string;
  email?: string;
  /** commit.gpgsign */
  gpgsign?: boolean;
  /** gpg.format: openpgp (git's default), ssh or x509. */
  format?: string;
  /** user.signingkey */
  signingKey?: string;
  /** The signing program git would run for the format (gpg.<format>.program, gpg.program), as configured. */
  program?: string;
}

export type SigningFormat = 'openpgp' | 'ssh' | 'x509';

export interface CommitSigning {
  format: SigningFormat;
  /** user.signingkey; null: the program's default key (openpgp and x509 only). */
  key: string | null;
  /** The program as configured, or git's default for the format; the adapter pins it to an absolute path. */
  program: string;
}

export interface CommitSetup {
  identity: CommitIdentity;
  /** Where the identity came from, for the run's header. */
  identitySource: 'commit_author' | 'your git configuration' | 'the default';
  signing: CommitSigning | null;
  /** Why commits are not signed although the user's git signs them (sign_commits: auto). */
  notes: string[];
}

const DEFAULT_PROGRAM: Record<SigningFormat, string> = { openpgp: 'gpg', ssh: 'ssh-keygen', x509: 'gpgsm' };

/** `Name <email>` → its parts; null when it is not in that form. */
export function parseAuthor(text: string): CommitIdentity | null {
  const m = /^([^<>\n]*[^<>\s][^<>\n]*?)\s*<([^<>\s]+)>$/.exec(text.trim());
  return m ? { name: m[1]!.trim(), email: m[2]! } : null;
}

/**
 * The identity and signing of the lanes' commits. `author`: the fleet file's `commit_author` (or `--author`);
 * `sign`: its `sign_commits`. A problem (signing required and impossible) stops the run before anything ran.
 */
export function commitSetup(
  author: string | undefined,
  sign: 'auto' | 'required' | 'off',
  user: UserGitConfig,
): { ok: true; setup: CommitSetup } | { ok: false; problem: string } {
  const given = author === undefined ? null : parseAuthor(author);
  const identity = given ?? (user.name && user.email ? { name: user.name, email: user.email } : { ...DEFAULT_COMMIT_IDENTITY });
  const identitySource = given ? 'commit_author' : user.name && user.email ? 'your git configuration' : 'the default';
  const unsigned = (notes: string[] = []) => ({ ok: true as const, setup: { identity, identitySource, signing: null, notes } satisfies CommitSetup });
  if (sign === 'off' || (sign === 'auto' && !user.gpgsign)) return unsigned();
  // Under auto a set-up Fleet cannot use leaves the commits unsigned, with a note; under required it stops the run.
  const cannot = (why: string) => (sign === 'required' ? { ok: false as const, problem: why } : unsigned([`commits are not signed: ${why}`]));
  const format = (user.format ?? 'openpgp').toLowerCase();
  if (format !== 'openpgp' && format !== 'ssh' && format !== 'x509') {
    return cannot(
      `your git configuration signs commits in gpg.format ${JSON.stringify(user.format)}, which git does not know: set it to openpgp, ssh or x509, or sign_commits: off`,
    );
  }
  if (format === 'ssh' && !user.signingKey) {
    return cannot(
      'signing commits in gpg.format ssh needs a key: set user.signingkey (git config --global user.signingkey ~/.ssh/id_ed25519.pub), or sign_commits: off',
    );
  }
  // gpg and gpgsm start programs their own configuration files name (agent-program, pinentry-program), and those
  // files are the user's, which a directive can rewrite: they would run outside the directive's isolation. SSH
  // signing (ssh-keygen with a key file or the agent) reads no such file, so auto signs with it alone.
  if (sign === 'auto' && format !== 'ssh') {
    return unsigned([
      `commits are not signed: your git signs with ${format === 'x509' ? 'gpgsm' : 'gpg'}, which starts programs its own configuration names, and a directive can rewrite that configuration; sign with gpg.format ssh, or set sign_commits: required to sign with ${format} anyway (docs/security.md)`,
    ]);
  }
  return {
    ok: true,
    setup: { identity, identitySource, signing: { format, key: user.signingKey ?? null, program: user.program || DEFAULT_PROGRAM[format] }, notes: [] },
  };
}

/** One line for the run's header: `commits by Ada <ada@example.com> (your git configuration), signed (ssh)`. */
export function describeCommitSetup(setup: CommitSetup): string {
  const who = `${setup.identity.name} <${setup.identity.email}>`;
  return `commits by ${who} (${setup.identitySource})${setup.signing ? `, signed (${setup.signing.format})` : ''}`;
}
