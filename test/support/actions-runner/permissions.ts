/**
 * GITHUB_TOKEN permissions as GitHub computes them
 * (https://docs.github.com/actions/reference/security/secure-use#github_token-permissions,
 * https://docs.github.com/actions/how-tos/reuse-automations/reuse-workflows#access-and-permissions):
 * a job's `permissions`, else its workflow's, else the repository's default
 * (restricted: contents and packages read; permissive: everything write);
 * in a called workflow the caller job's permissions are the ceiling, and a
 * nested job asking for more fails the whole run at start.
 */
import { isString } from '@actions/workflow-parser';
import type { TemplateToken } from '@actions/workflow-parser/templates/tokens/template-token';
import { entries, prop } from './workflow.js';
import { ALL_SCOPES, type Access, type Permissions, type Scope } from './types.js';

export type DefaultPermissions = 'restricted' | 'permissive';

const RANK: Record<Access, number> = { none: 0, read: 1, write: 2 };

export function defaultPermissions(kind: DefaultPermissions): Permissions {
  if (kind === 'permissive') {
    return Object.fromEntries(ALL_SCOPES.map((s) => [s, s === 'id-token' || s === 'models' || s === 'attestations' ? 'none' : 'write'])) as Permissions;
  }
  return { contents: 'read', packages: 'read' };
}

/** A `permissions:` token (`read-all`, `write-all`, `{}` or a mapping) as a full set; undefined when absent. */
export function readPermissions(token: TemplateToken | undefined): Permissions | undefined {
  if (!token) return undefined;
  if (isString(token)) {
    if (token.value === 'read-all') return Object.fromEntries(ALL_SCOPES.map((s) => [s, s === 'id-token' ? 'none' : 'read'])) as Permissions;
    if (token.value === 'write-all') return Object.fromEntries(ALL_SCOPES.map((s) => [s, 'write'])) as Permissions;
    return {};
  }
  const out: Permissions = {};
  for (const [k, v] of entries(token)) if (isString(v)) out[k as Scope] = v.value as Access;
  return out;
}

export function access(p: Permissions, scope: Scope): Access {
  return p[scope] ?? 'none';
}

/** Scopes where `asked` exceeds `allowed`, worded as GitHub's startup failure is. */
export function exceeding(asked: Permissions, allowed: Permissions, who: string): string[] {
  const out: string[] = [];
  for (const scope of ALL_SCOPES) {
    if (RANK[access(asked, scope)] > RANK[access(allowed, scope)]) {
      out.push(`${who} is requesting '${scope}: ${access(asked, scope)}', but is only allowed '${scope}: ${access(allowed, scope)}'.`);
    }
  }
  return out;
}

/** The effective permissions of a job: its own, else its workflow's, else what it inherits (the caller's, or the default). */
export function effectivePermissions(jobRaw: TemplateToken | undefined, workflowRoot: TemplateToken, inherited: Permissions): Permissions {
  return readPermissions(prop(jobRaw, 'permissions')) ?? readPermissions(prop(workflowRoot, 'permissions')) ?? inherited;
}
