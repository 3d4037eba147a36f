/**
 * A GitHub App's private key as the inputs hand it over: read, checked and masked without loading the App code
 * (src/github/app-token.ts and @octokit/auth-app), which only jobs with App credentials load.
 */
import { createPrivateKey } from 'node:crypto';
import { registerSecret } from '../util/secrets.js';

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
 * A private key as given, as read, and each line of its body: what is masked in logs, and what a variable must not
 * hold to reach a directive (the key pasted once more under another name, or a line of it).
 */
export function privateKeyParts(key: string): string[] {
  const pem = normalizePrivateKey(key);
  const lines = pem
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length >= 8 && !/^-----(BEGIN|END) /.test(l));
  return [...new Set([key, pem, ...lines])];
}

/**
 * Masks a private key in the Actions log and registers it with Fleet's redactor: the whole key and each line of
 * its body, since the runner matches masks within one log line (actions/runner#161: a multi-line mask never
 * matches; the runner masks multi-line *secrets* line by line, actions/runner#27, and so does Fleet).
 */
export function maskPrivateKey(key: string, setSecret: (s: string) => void): void {
  for (const s of privateKeyParts(key)) {
    registerSecret(s);
    if (process.env.GITHUB_ACTIONS === 'true') setSecret(s);
  }
}

/** How the user names the App's id and key where the problems are reported: action inputs, or the CLI's variables. */
export interface AppCredentialNames {
  /** "input app-id", "FLEET_APP_ID". */
  id: string;
  /** "input app-private-key", "FLEET_APP_PRIVATE_KEY". */
  key: string;
  /** The id's own name inside a sentence: "app-id". */
  idShort: string;
  /** How to give the key: "pass the key (…) as the app-private-key secret". */
  howToGiveKey: string;
}

/** Every problem with an App id and key given together, each naming what the user set; never quotes the key. */
export function appCredentialProblems(appId: string, key: string, n: AppCredentialNames): string[] {
  const problems: string[] = [];
  const keyGiven = key.trim() !== '';
  if (appId && !keyGiven) problems.push(`${n.key}: ${n.idShort} is set but the App's private key is empty: ${n.howToGiveKey}`);
  if (!appId && keyGiven) problems.push(`${n.id}: an App private key was given without the App's id: set ${n.idShort} (the App's settings page shows it)`);
  if (appId && !/^(\d+|Iv[0-9A-Za-z.]+)$/.test(appId))
    problems.push(`${n.id}: must be the App's numeric id (or its client id, Iv…), as the App's settings page shows it`);
  if (keyGiven) {
    const bad = privateKeyProblem(key);
    if (bad) problems.push(`${n.key}: the key ${bad}`);
  }
  return problems;
}
