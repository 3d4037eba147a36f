import { describe, expect, it } from 'vitest';
import { lane } from './helpers.js';
import { BATCH_SIZE, batches, buildBatchQuery, groupRepos, judgeRepo, type RepoNode } from '../../src/github/validate.js';

const node = (extra: Partial<RepoNode> = {}): RepoNode => ({
  nameWithOwner: 'acme/api',
  isArchived: false,
  isDisabled: false,
  isFork: false,
  isEmpty: false,
  viewerPermission: 'WRITE',
  defaultBranchRef: { name: 'main' },
  ...extra,
});

describe('GraphQL batch query building', () => {
  it('groups lanes by repository case-insensitively and collects their bases', () => {
    const groups = groupRepos([
      lane('acme/api'),
      lane('acme/API', { id: 'api-docs', base: 'develop' }),
      lane('acme/web', { base: 'release' }),
      lane('./local', { repo_kind: 'path' }),
    ]);
    expect(groups).toEqual([
      { repo: 'acme/api', owner: 'acme', name: 'api', bases: ['develop'] },
      { repo: 'acme/web', owner: 'acme', name: 'web', bases: ['release'] },
    ]);
  });

  it('builds one aliased query with every name as a variable', () => {
    const q = buildBatchQuery(groupRepos([lane('acme/api'), lane('acme/web', { base: 'release/1.0' })]));
    expect(q.query).toContain('query FleetTargets($o0: String!, $n0: String!, $o1: String!, $n1: String!, $b1_0: String!)');
    expect(q.query).toContain(
      'r0: repository(owner: $o0, name: $n0) { nameWithOwner isArchived isDisabled isFork isEmpty viewerPermission defaultBranchRef { name target { oid } } }',
    );
    expect(q.query).toContain(
      'r1: repository(owner: $o1, name: $n1) { nameWithOwner isArchived isDisabled isFork isEmpty viewerPermission defaultBranchRef { name target { oid } } b0: ref(qualifiedName: $b1_0) { name target { oid } } }',
    );
    expect(q.variables).toEqual({ o0: 'acme', n0: 'api', o1: 'acme', n1: 'web', b1_0: 'refs/heads/release/1.0' });
    // Names never appear in the query text (no injection through a repository name).
    expect(q.query).not.toContain('acme');
  });

  it('splits 1,000 repositories into 10 batches of 100 and refuses a bigger batch', () => {
    const repos = groupRepos(Array.from({ length: 1000 }, (_, i) => lane(`org/r${i}`)));
    const bs = batches(repos);
    expect(bs).toHaveLength(10);
    expect(bs.every((b) => b.length === BATCH_SIZE)).toBe(true);
    expect(batches(repos.slice(0, 101))).toHaveLength(2);
    expect(() => buildBatchQuery(repos.slice(0, 101))).toThrow(/at most 100/);
    const q = buildBatchQuery(bs[9]!);
    expect(q.query.match(/repository\(/g)).toHaveLength(100);
    expect(Object.keys(q.variables)).toHaveLength(200);
  });
});

describe('judgeRepo', () => {
  it('gives the reason codes', () => {
    expect(judgeRepo('acme/x', null, [{ type: 'NOT_FOUND', path: ['r0'], message: 'Could not resolve' }], [], false)).toMatchObject({
      ok: false,
      reason: 'not-found',
    });
    expect(judgeRepo('acme/x', null, [], [], false)).toMatchObject({ ok: false, reason: 'not-found' });
    expect(judgeRepo('acme/x', null, [{ type: 'FORBIDDEN', message: 'SAML enforcement' }], [], false)).toMatchObject({ ok: false, reason: 'forbidden' });
    expect(judgeRepo('acme/api', node({ isArchived: true }), [], [], false)).toMatchObject({ ok: false, reason: 'archived' });
    expect(judgeRepo('acme/api', node({ isDisabled: true, isArchived: true }), [], [], false)).toMatchObject({ ok: false, reason: 'disabled' });
    expect(judgeRepo('acme/api', node({ isFork: true }), [], [], false)).toMatchObject({ ok: false, reason: 'fork' });
    expect(judgeRepo('acme/api', node({ isFork: true }), [], [], true)).toMatchObject({ ok: true });
    expect(judgeRepo('acme/api', node({ isEmpty: true, defaultBranchRef: null }), [], [], false)).toMatchObject({ ok: false, reason: 'empty' });
    for (const p of ['READ', 'TRIAGE', null]) {
      expect(judgeRepo('acme/api', node({ viewerPermission: p }), [], [], false), String(p)).toMatchObject({ ok: false, reason: 'no-push-permission' });
    }
    for (const p of ['WRITE', 'MAINTAIN', 'ADMIN']) expect(judgeRepo('acme/api', node({ viewerPermission: p }), [], [], false).ok).toBe(true);
  });

  it('says why in words a person can act on', () => {
    const detail = (v: ReturnType<typeof judgeRepo>) => (v.ok ? 'ok' : `${v.reason}: ${v.detail}`);
    expect(detail(judgeRepo('acme/x', null, [{ type: 'NOT_FOUND', path: ['r0'], message: 'Could not resolve' }], [], false))).toBe(
      'not-found: acme/x does not exist, or the token cannot see it',
    );
    expect(detail(judgeRepo('acme/x', null, [{ type: 'FORBIDDEN', message: 'Resource protected by organization SAML enforcement.' }], [], false))).toBe(
      'forbidden: acme/x: Resource protected by organization SAML enforcement.',
    );
    // Any other error is neither "not found" nor "forbidden": the repository could not be checked.
    expect(detail(judgeRepo('acme/x', null, [{ type: 'SERVICE_UNAVAILABLE', message: 'Something went wrong' }], [], false))).toBe(
      'unreachable: acme/x: Something went wrong',
    );
    expect(detail(judgeRepo('acme/x', null, [{ message: 'timeout' }], [], false))).toBe('unreachable: acme/x: timeout');
    expect(detail(judgeRepo('acme/api', node({ isDisabled: true }), [], [], false))).toBe('disabled: acme/api is disabled');
    expect(detail(judgeRepo('acme/api', node({ isArchived: true }), [], [], false))).toBe('archived: acme/api is archived (read-only)');
    expect(detail(judgeRepo('acme/api', node({ isFork: true }), [], [], false))).toBe(
      'fork: acme/api is a fork (set github.allow_forks: true to include forks)',
    );
    expect(detail(judgeRepo('acme/api', node({ isEmpty: true, defaultBranchRef: null }), [], [], false))).toBe('empty: acme/api has no commits yet');
    // No default branch to clone is as good as empty, whatever isEmpty says.
    expect(detail(judgeRepo('acme/api', node({ defaultBranchRef: null }), [], [], false))).toBe('empty: acme/api has no commits yet');
    expect(detail(judgeRepo('acme/api', node({ viewerPermission: null }), [], [], false))).toBe(
      'no-push-permission: the token has no permission on acme/api; it needs write, or fork mode (pr.fork: true, fleet run --fork) to push to a fork instead',
    );
    expect(detail(judgeRepo('acme/api', node({ viewerPermission: 'TRIAGE' }), [], [], false))).toBe(
      'no-push-permission: the token has triage permission on acme/api; it needs write, or fork mode (pr.fork: true, fleet run --fork) to push to a fork instead',
    );
    // Fork mode pushes to a fork: reading the target is enough.
    expect(judgeRepo('acme/api', node({ viewerPermission: 'READ' }), [], [], false, true)).toMatchObject({ ok: true });
  });

  it('reports bases that do not exist', () => {
    const v = judgeRepo(
      'acme/api',
      node({ b0: { name: 'develop' }, b1: null }),
      [],
      [
        { alias: 'b0', branch: 'develop' },
        { alias: 'b1', branch: 'nope' },
      ],
      false,
    );
    expect(v).toEqual({ ok: true, nameWithOwner: 'acme/api', defaultBranch: 'main', missingBases: ['nope'], heads: {} });
  });

  it('reads the commit of the default branch and of each base from the same answer (incremental sweeps)', () => {
    const sha = (c: string) => c.repeat(40);
    const v = judgeRepo(
      'acme/api',
      node({ defaultBranchRef: { name: 'main', target: { oid: sha('a') } }, b0: { name: 'develop', target: { oid: sha('b') } } }),
      [],
      [{ alias: 'b0', branch: 'develop' }],
      false,
    );
    expect(v).toMatchObject({ ok: true, heads: { main: sha('a'), develop: sha('b') } });
  });
});
