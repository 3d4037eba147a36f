/**
 * GitHub Apps for the emulator: registered apps with their RSA keys, their
 * installations, and the JSON Web Tokens an app authenticates with.
 *
 * What GitHub checks, and answers, for an app's JWT (RS256, `iss` = app id or
 * client id, `iat`, `exp`), from "Generating a JSON Web Token (JWT) for a
 * GitHub App" and the replies users quote:
 *  - not a JWT / bad signature / not RS256 → 401 "A JSON web token could not
 *    be decoded" (actions/create-github-app-token#153, backstage/backstage#12887);
 *  - unknown issuer → 404 "Integration not found" (actions/create-github-app-token#76,
 *    octokit/authentication-strategies.js#165);
 *  - `iat` in the future beyond 60 s of drift → 401 "'Issued at' claim ('iat')
 *    must be an Integer representing the time that the assertion was issued"
 *    (octokit's spec notes, octokit/auth-app.js clock-skew handling);
 *  - `exp` passed → 401 "'Expiration time' claim ('exp') must be a numeric
 *    value representing the future time at which the assertion expires"
 *    (PyGithub's recorded replies);
 *  - `exp` more than 10 minutes ahead (of now, or of `iat`) → 401
 *    "'Expiration time' claim ('exp') is too far in the future"
 *    (octokit/auth-app.js#698, actions/create-github-app-token#178, github/docs#36558).
 */
import { createPublicKey, createSign, createVerify, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { assertScopes, type Scopes } from './scopes.js';

export interface AppInstallationSpec {
  /** The user or organization the app is installed on. */
  account: string;
  /** Repository names (or `owner/name`) of a "selected repositories" installation; absent: all of the account's repositories. */
  repositories?: string[];
  /** What the installation grants (default: DEFAULT_INSTALLATION_SCOPES). */
  permissions?: Scopes;
}

export interface AppSpec {
  id: number;
  slug: string;
  /** Display name (default: the slug). */
  name?: string;
  /** Client id, also accepted as the JWT's `iss` (default `Iv23li` + the id). */
  clientId?: string;
  /** The app's private key (PEM); a 2048-bit RSA key is generated when absent. */
  privateKey?: string;
  /** Owner of the app (default: the first installation's account). */
  owner?: string;
  installations: AppInstallationSpec[];
}

export interface AddedApp {
  id: number;
  slug: string;
  clientId: string;
  /** PKCS#1 PEM (`BEGIN RSA PRIVATE KEY`), as GitHub hands out app keys. */
  privateKeyPem: string;
  installationIds: number[];
}

export interface AppRecord {
  id: number;
  slug: string;
  name: string;
  clientId: string;
  owner: string;
  publicKey: KeyObject;
  created_at: string;
}

export interface InstallationRecord {
  id: number;
  appId: number;
  account: string;
  /** Full names (`owner/name`, lower case) of a selected-repositories installation; null: all of the account's. */
  repositories: string[] | null;
  permissions: Scopes;
  created_at: string;
}

/** What an installation grants when its spec says nothing: what a Fleet app asks for. */
export const DEFAULT_INSTALLATION_SCOPES: Scopes = {
  metadata: 'read',
  contents: 'write',
  'pull-requests': 'write',
  issues: 'write',
  checks: 'write',
  statuses: 'write',
  actions: 'read',
};

export const JWT_MESSAGES = {
  undecodable: 'A JSON web token could not be decoded',
  unknownApp: 'Integration not found',
  iat: "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
  expired: "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
  tooFar: "'Expiration time' claim ('exp') is too far in the future",
} as const;

/** GitHub allows this much clock drift on `iat` (its docs say to backdate `iat` by 60 s). */
const IAT_DRIFT_SEC = 60;
/** A JWT lives at most 10 minutes. */
const JWT_MAX_SEC = 600;

export type JwtCheck = { ok: true; app: AppRecord } | { ok: false; status: 401 | 404; message: string };

/** A JWT for `iss` signed with `privateKeyPem`: what @octokit/auth-app sends (iat 30 s back, exp iat + 10 min) unless claims are given. */
export function signAppJwt(iss: number | string, privateKeyPem: string, claims: { nowSec?: number; iat?: number; exp?: number; alg?: string } = {}): string {
  const now = claims.nowSec ?? Math.floor(Date.now() / 1000);
  const iat = claims.iat ?? now - 30;
  const payload = { iat, exp: claims.exp ?? iat + JWT_MAX_SEC, iss };
  const head = b64url(JSON.stringify({ alg: claims.alg ?? 'RS256', typ: 'JWT' }));
  const body = b64url(JSON.stringify(payload));
  const signer = createSign('RSA-SHA256');
  signer.update(`${head}.${body}`);
  return `${head}.${body}.${signer.sign(privateKeyPem).toString('base64url')}`;
}

/** A bearer value shaped like a JWT (three base64url parts, a JSON header): app authentication rather than a token. */
export function looksLikeJwt(value: string): boolean {
  return /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(value);
}

/** `ghs_` + 36 characters, the shape of GitHub's installation tokens. */
export function newInstallationToken(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return `ghs_${[...randomBytes(36)].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

export class AppRegistry {
  private readonly apps = new Map<number, AppRecord>();
  private readonly installations = new Map<number, InstallationRecord>();
  private nextInstallationId = 40_000_001;

  /** Registers an app and its installations; generates a key pair when none is given. */
  add(spec: AppSpec, createdAt: string): AddedApp {
    if (this.apps.has(spec.id)) throw new Error(`app ${spec.id} exists`);
    const privateKeyPem = spec.privateKey ?? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const clientId = spec.clientId ?? `Iv23li${String(spec.id).padStart(14, '0')}`;
    const owner = spec.owner ?? spec.installations[0]?.account ?? 'github';
    this.apps.set(spec.id, {
      id: spec.id,
      slug: spec.slug,
      name: spec.name ?? spec.slug,
      clientId,
      owner,
      publicKey: createPublicKey(privateKeyPem),
      created_at: createdAt,
    });
    const installationIds = spec.installations.map((i) => this.install(spec.id, i, createdAt));
    return { id: spec.id, slug: spec.slug, clientId, privateKeyPem, installationIds };
  }

  private install(appId: number, spec: AppInstallationSpec, createdAt: string): number {
    if (spec.permissions) assertScopes(spec.permissions);
    const id = this.nextInstallationId++;
    const repositories = spec.repositories?.map((r) => (r.includes('/') ? r : `${spec.account}/${r}`).toLowerCase()) ?? null;
    this.installations.set(id, {
      id,
      appId,
      account: spec.account,
      repositories,
      permissions: { ...(spec.permissions ?? DEFAULT_INSTALLATION_SCOPES) },
      created_at: createdAt,
    });
    return id;
  }

  app(id: number): AppRecord | null {
    return this.apps.get(id) ?? null;
  }

  installation(id: number): InstallationRecord | null {
    return this.installations.get(id) ?? null;
  }

  installationsOf(appId: number): InstallationRecord[] {
    return [...this.installations.values()].filter((i) => i.appId === appId);
  }

  /** The app's installation on `account` (case-insensitive), if any. */
  installationOn(appId: number, account: string): InstallationRecord | null {
    return this.installationsOf(appId).find((i) => i.account.toLowerCase() === account.toLowerCase()) ?? null;
  }

  /** Whether an installation covers a repository (`owner/name`). */
  covers(inst: InstallationRecord, fullName: string): boolean {
    const full = fullName.toLowerCase();
    if (!full.startsWith(`${inst.account.toLowerCase()}/`)) return false;
    return inst.repositories === null || inst.repositories.includes(full);
  }

  /** The permissions an app was granted: the widest over its installations (GET /app's `permissions`). */
  appScopes(appId: number): Scopes {
    const out: Scopes = {};
    for (const inst of this.installationsOf(appId)) {
      for (const [k, v] of Object.entries(inst.permissions) as Array<[keyof Scopes, NonNullable<Scopes[keyof Scopes]>]>) {
        if (v === 'write' || (v === 'read' && out[k] !== 'write')) out[k] = v;
      }
    }
    return out;
  }

  /** Verifies an app JWT against the emulator clock (`nowSec`). */
  verifyJwt(jwt: string, nowSec: number): JwtCheck {
    const parsed = decodeJwt(jwt);
    if (!parsed) return { ok: false, status: 401, message: JWT_MESSAGES.undecodable };
    const app = this.byIssuer(parsed.claims.iss);
    if (!app) return { ok: false, status: 404, message: JWT_MESSAGES.unknownApp };
    const verifier = createVerify('RSA-SHA256');
    verifier.update(parsed.signed);
    if (!verifier.verify(app.publicKey, parsed.signature)) return { ok: false, status: 401, message: JWT_MESSAGES.undecodable };
    return checkTimes(parsed.claims, nowSec) ?? { ok: true, app };
  }

  private byIssuer(iss: unknown): AppRecord | null {
    if (typeof iss === 'number' || (typeof iss === 'string' && /^\d+$/.test(iss))) return this.apps.get(Number(iss)) ?? null;
    if (typeof iss === 'string') return [...this.apps.values()].find((a) => a.clientId === iss) ?? null;
    return null;
  }
}

interface DecodedJwt {
  claims: Record<string, unknown>;
  signed: string;
  signature: Buffer;
}

function decodeJwt(jwt: string): DecodedJwt | null {
  const parts = jwt.split('.');
  if (parts.length !== 3) return null;
  try {
    const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as { alg?: unknown };
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown;
    // GitHub only takes RS256 (an unsigned `alg: none` token must not pass).
    if (header.alg !== 'RS256' || !claims || typeof claims !== 'object') return null;
    return { claims: claims as Record<string, unknown>, signed: `${parts[0]}.${parts[1]}`, signature: Buffer.from(parts[2]!, 'base64url') };
  } catch {
    return null;
  }
}

function checkTimes(claims: Record<string, unknown>, now: number): { ok: false; status: 401; message: string } | null {
  const { iat, exp } = claims;
  const fail = (message: string) => ({ ok: false as const, status: 401 as const, message });
  if (typeof iat !== 'number' || !Number.isInteger(iat) || iat > now + IAT_DRIFT_SEC) return fail(JWT_MESSAGES.iat);
  if (typeof exp !== 'number' || !Number.isFinite(exp) || exp <= now) return fail(JWT_MESSAGES.expired);
  if (exp > now + JWT_MAX_SEC || exp - iat > JWT_MAX_SEC) return fail(JWT_MESSAGES.tooFar);
  return null;
}

function b64url(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64url');
}
