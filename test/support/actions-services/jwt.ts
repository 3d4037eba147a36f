/**
 * HS256 JSON Web Tokens for ACTIONS_RUNTIME_TOKEN. The clients only decode
 * the payload (`jwt-decode`); the services check the signature, so a token
 * that was edited (another backend id, another cache scope) is refused.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

export function signJwt(payload: Record<string, unknown>, secret: string): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${HEADER}.${body}.${mac(`${HEADER}.${body}`, secret).toString('base64url')}`;
}

/** The payload of a token this secret signed, or null (malformed, other algorithm, bad signature). */
export function verifyJwt(token: string, secret: string): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [head, body, sig] = parts as [string, string, string];
  // Only HS256: an `alg: none` token must not pass by carrying no signature.
  if (readJson(head)?.alg !== 'HS256') return null;
  const given = Buffer.from(sig, 'base64url');
  const expected = mac(`${head}.${body}`, secret);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  return readJson(body);
}

function mac(data: string, secret: string): Buffer {
  return createHmac('sha256', secret).update(data).digest();
}

function readJson(part: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
