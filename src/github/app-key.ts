/**
 * A GitHub App's private key as the inputs hand it over: read, checked and masked without loading the App code
 * (src/github/app-token.ts and @octokit/auth-app), which only jobs with App credentials load.
 */
import { createPrivateKey } from 'node:crypto';
import { registerSecret } from '../local/git.js';

/** A private key as the runner may hand it over: a secret pasted with `\n` for its newlines, or with CRLF. */
export function normalizePrivateKey(key: string): string {
  return key.replace(/\\n/g, '\n').replace(/\r\n?/g, '\n').trim();
}

/** Why a private key cannot be used (never quoting it), or null when Node's crypto reads it as a private key. */
export function privateKeyProblem(key: string): string | null {
  try {
    const k = createPrivateKey(normalizePrivateKey(key));
    return k.asymmetricKeyType === 'rsa' ? null : `is a ${k.asymmetricKeyType} key; GitHub Apps sign with RSA keys`;
  } catch {
    return 'is not a PEM private key (paste the whole .pem file GitHub generated, BEGIN and END lines included)';
  }
}

/**
 * Masks a private key in the Actions log and registers it with Fleet's redactor: the whole key and each line of
 * its body, since the runner matches masks within one log line (actions/runner#161: a multi-line mask never
 * matches; the runner masks multi-line *secrets* line by line, actions/runner#27, and so does Fleet).
 */
export function maskPrivateKey(key: string, setSecret: (s: string) => void): void {
  const pem = normalizePrivateKey(key);
  const lines = pem.split('\n').map((l) => l.trim()).filter((l) => l.length >= 8 && !/^-----(BEGIN|END) /.test(l));
  for (const s of new Set([key, pem, ...lines])) {
    registerSecret(s);
    if (process.env.GITHUB_ACTIONS === 'true') setSecret(s);
  }
}
