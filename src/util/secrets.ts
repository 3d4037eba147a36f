/**
 * Fleet's secrets, and the one way text leaves with none of them: every token and key Fleet holds is registered here
 * (in each form an encoder gives it), and every log, error, lane result, report and PR body goes through `redact`.
 */

const secrets = new Set<string>();
let sortedSecrets: string[] = [];

/**
 * The forms a secret takes when something encodes it on its way out: URL
 * encoding, and base64 (an `Authorization: Basic` header, a config value, a
 * directive that hides what it found). Base64 of a secret inside a longer
 * text depends on where it starts modulo 3, so each of the three alignments
 * is given by the part that does not depend on its neighbours.
 */
export function encodedForms(secret: string): string[] {
  const forms = new Set([secret, encodeURIComponent(secret)]);
  const bytes = Buffer.from(secret, 'utf8');
  for (let pad = 0; pad < 3; pad++) {
    const b64 = Buffer.concat([Buffer.alloc(pad), bytes]).toString('base64');
    // Characters that mix in the padding (at the start) or whatever follows (at the end) are dropped.
    const start = pad === 0 ? 0 : Math.ceil((pad * 4) / 3);
    const end = Math.floor(((pad + bytes.length) * 4) / 3);
    const stable = b64.slice(start, end);
    if (stable.length >= 8) forms.add(stable);
  }
  return [...forms];
}

/** Registers a value (a token, a password), in every encoded form, that `redact` replaces by `***` wherever it appears. Values shorter than 4 characters are ignored. */
export function registerSecret(secret: string | null | undefined): void {
  if (!secret || secret.length < 4) return;
  for (const form of encodedForms(secret)) secrets.add(form);
  sortedSecrets = [...secrets].sort((a, b) => b.length - a.length);
}

/** Forgets every registered secret (for tests). */
export function clearSecrets(): void {
  secrets.clear();
  sortedSecrets = [];
}

/**
 * Removes credentials from text: registered secrets, the userinfo of http(s)
 * URLs (`https://user:token@host` → `https://***@host`), `user:password@` of
 * any other URL, `x-access-token:<token>@`, GitHub token shapes (ghp_, ghs_,
 * github_pat_, …) and `Authorization: basic|bearer|token <value>` headers.
 */
export function redact(text: string): string {
  if (!text) return text;
  let out = text;
  for (const s of sortedSecrets) if (out.includes(s)) out = out.split(s).join('***');
  out = out.replace(/\b(https?:\/\/)[^\s/@'"]+@/gi, '$1***@');
  out = out.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s/@:'"]*):[^\s/@'"]+@/gi, '$1:***@');
  out = out.replace(/x-access-token:[^\s@'"]+@/gi, 'x-access-token:***@');
  out = out.replace(/\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b/g, '***');
  out = out.replace(/(authorization:\s*(?:basic|bearer|token)\s+)[^\s'"]+/gi, '$1***');
  return out;
}
