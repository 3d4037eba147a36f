/**
 * fleet doctor's judgements (src/core/doctor.ts), and the one-link App registration of docs/github-app.md held to
 * the permissions doctor asks for: a page that told people to grant less would send every first fleet into doctor's
 * FAIL lines.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  appPermissionFindings,
  classicScopeFindings,
  doctorExitCode,
  lanesThatMayChangeWorkflows,
  neededAppPermissions,
  renderFindings,
} from '../../src/core/doctor.js';
import { validateFleetFile } from '../../src/core/validate.js';

function fleet(extra: Record<string, unknown> = {}) {
  const r = validateFleetFile({ name: 'f', forge: 'github', directive: 'd', run: 'true', targets: [{ repo: 'acme/api' }], ...extra }, 'fleet.yml');
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.fleet;
}

describe('neededAppPermissions', () => {
  it('asks for pull requests only when PRs are opened, and issues only for labels, assignees or the issue queue', () => {
    const names = (extra: Record<string, unknown>) => neededAppPermissions(fleet(extra).file).map((p) => `${p.name}:${p.level}`);
    expect(names({})).toEqual(['contents:write', 'metadata:read', 'pull_requests:write', 'checks:read', 'statuses:read', 'actions:read']);
    expect(names({ pr: { labels: ['fleet'] } })).toContain('issues:write');
    expect(names({ pr: { open: false } })).not.toContain('pull_requests:write');
  });
});

describe('appPermissionFindings', () => {
  const needed = neededAppPermissions(fleet().file);
  it('one ok line when everything is granted (write covers read)', () => {
    const f = appPermissionFindings(
      { contents: 'write', metadata: 'read', pull_requests: 'write', checks: 'write', statuses: 'read', actions: 'read' },
      needed,
    );
    expect(f.map((x) => x.status)).toEqual(['ok']);
  });
  it('a fail per missing required permission, a warning for actions: read, and read where write is needed fails', () => {
    const f = appPermissionFindings({ contents: 'read', metadata: 'read', pull_requests: 'write', checks: 'read', statuses: 'read' }, needed);
    expect(f.map((x) => [x.status, x.message])).toEqual([
      ['fail', 'the GitHub App has contents: read, and the fleet needs contents: write to clone and push the lane branches'],
      ['warn', 'the GitHub App has no actions permission, and the fleet needs actions: read to tell whether a target has workflows (a sign that CI is coming)'],
    ]);
    expect(doctorExitCode(f)).toBe(1);
    expect(doctorExitCode(f.filter((x) => x.status === 'warn'))).toBe(0);
  });
});

describe('classicScopeFindings', () => {
  it('repo passes, public_repo warns, anything else fails', () => {
    expect(classicScopeFindings(['repo', 'workflow'])[0]!.status).toBe('ok');
    expect(classicScopeFindings(['public_repo'])[0]!.status).toBe('warn');
    expect(classicScopeFindings([])[0]).toMatchObject({
      status: 'fail',
      message: 'the token (a classic PAT) has no scope, and pushing a branch and opening a PR take repo',
    });
  });
});

describe('lanesThatMayChangeWorkflows', () => {
  it('splits lanes fenced to workflow files only from lanes whose fence includes them; never: fences them off', () => {
    const f = fleet({
      targets: [
        { repo: 'acme/a', owns: ['.github/workflows/*.yml'] },
        { repo: 'acme/b' },
        { repo: 'acme/c', owns: ['.github/**'] },
        { repo: 'acme/d', owns: ['src/**'] },
        { repo: 'acme/e', never: ['.github/workflows/**'] },
      ],
    });
    const { only, may } = lanesThatMayChangeWorkflows(f.lanes);
    expect([only.map((l) => l.id), may.map((l) => l.id)]).toEqual([['a'], ['b', 'c']]);
  });
});

describe('renderFindings', () => {
  it('one line per finding, the fix under what is not ok, and a count', () => {
    expect(
      renderFindings([
        { check: 'credential', status: 'ok', message: 'fine', fix: 'unseen' },
        { check: 'permissions', status: 'fail', message: 'missing', fix: 'grant it' },
      ]),
    ).toBe('ok    credential: fine\nFAIL  permissions: missing\n      fix: grant it\n\n1 to fix before the first fleet, 0 warning(s).');
  });
});

describe('docs/github-app.md', () => {
  it('registers the App with every permission doctor asks of a fleet that opens labelled PRs, no more, and no webhook', () => {
    const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'github-app.md'), 'utf8');
    const link = /https:\/\/github\.com\/organizations\/your-org\/settings\/apps\/new\?\S+/.exec(page)![0];
    const params = new URL(link).searchParams;
    expect([params.get('webhook_active'), params.get('public')]).toEqual(['false', 'false']);
    const granted = Object.fromEntries([...params].filter(([k]) => !['name', 'description', 'url', 'public', 'webhook_active'].includes(k)));
    const needed = neededAppPermissions(fleet({ pr: { labels: ['fleet'] } }).file).filter((p) => p.name !== 'metadata');
    expect(granted).toEqual(Object.fromEntries(needed.map((p) => [p.name, p.level])));
    expect(appPermissionFindings({ ...granted, metadata: 'read' }, needed).map((f) => f.status)).toEqual(['ok']);
  });
});
