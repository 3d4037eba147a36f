/**
 * Target validation against the GitHub emulator: one GraphQL query per 100
 * repositories, reason codes for every kind of unusable target, partial
 * errors that never fail a batch.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOctokit } from '../../src/github/octokit.js';
import { mapLimit } from '../../src/util/pool.js';
import { harness, lane, NO_PACING, type Harness } from './helpers.js';

let h: Harness;

beforeAll(async () => {
  h = await harness();
  const { emu } = h;
  await emu.createRepo({ owner: 'acme', name: 'api', branches: { develop: { 'x.txt': 'x' } } });
  await emu.createRepo({ owner: 'acme', name: 'archived', archived: true });
  await emu.createRepo({ owner: 'acme', name: 'disabled', disabled: true });
  await emu.createRepo({ owner: 'acme', name: 'forked', fork: true });
  await emu.createRepo({ owner: 'acme', name: 'empty', empty: true });
  await emu.createRepo({ owner: 'acme', name: 'readonly' });
  await emu.createRepo({ owner: 'acme', name: 'triage-only' });
  await emu.createRepo({ owner: 'acme', name: 'maintained' });
  await emu.createRepo({ owner: 'acme', name: 'secret', visibility: 'private' });
});

afterAll(async () => {
  h.emu.assertNoViolations();
  await h.emu.close();
});

describe('checkTargets', () => {
  it('gives each lane exactly once, in order, with a reason code when it cannot run', async () => {
    const token = 'ghs_limitedTokenForValidation00001';
    h.emu.addToken(token, {
      login: 'limited',
      default: 'push',
      permissions: { 'acme/readonly': 'pull', 'acme/triage-only': 'pull', 'acme/maintained': 'admin', 'acme/secret': 'none' },
    });
    const client = createOctokit({ token, apiUrl: h.emu.url, pacing: NO_PACING });
    const forge = h.makeForge({ octokit: client, token });
    const lanes = [
      lane('acme/api'),
      lane('acme/api', { id: 'api-dev', base: 'develop' }),
      lane('acme/API', { id: 'api-gone', base: 'no-such-branch' }),
      lane('acme/archived'),
      lane('acme/disabled'),
      lane('acme/forked'),
      lane('acme/empty'),
      lane('acme/readonly'),
      lane('acme/maintained'),
      lane('acme/missing'),
      lane('acme/secret'),
      lane('./local-path', { id: 'local', repo_kind: 'path' }),
    ];
    h.emu.resetLog();
    const checks = await forge.checkTargets(lanes);
    expect(checks.map((c) => c.lane)).toEqual(lanes.map((l) => l.id));
    const summary = Object.fromEntries(checks.map((c) => [c.lane, c.ok ? `ok ${c.default_branch}` : c.reason]));
    expect(summary).toEqual({
      api: 'ok main',
      'api-dev': 'ok develop',
      'api-gone': 'no-base-branch',
      archived: 'archived',
      disabled: 'disabled',
      forked: 'fork',
      empty: 'empty',
      readonly: 'no-push-permission',
      maintained: 'ok main',
      missing: 'not-found',
      secret: 'not-found',
      local: 'not-a-github-repository',
    });
    const ok = checks.find((c) => c.lane === 'api');
    expect(ok).toMatchObject({ ok: true, clone_url: `${h.emu.url}/git/acme/api.git` });
    expect(checks.find((c) => c.lane === 'readonly')).toMatchObject({
      detail: 'the token has read permission on acme/readonly; it needs write, or fork mode (pr.fork: true, fleet run --fork) to push to a fork instead',
    });
    expect(checks.find((c) => c.lane === 'api-gone')).toMatchObject({ detail: 'acme/api has no branch no-such-branch' });
    expect(checks.find((c) => c.lane === 'local')).toMatchObject({
      detail: './local-path is not an owner/repo name; forge: github runs GitHub repositories only',
    });
    // The same query reads the commit each base branch is at (Ref.target.oid: https://docs.github.com/en/graphql/reference/objects#ref),
    // for incremental sweeps: no request per target.
    expect(ok).toMatchObject({ base_commit: await h.emu.branchSha('acme/api', 'main') });
    expect(checks.find((c) => c.lane === 'api-dev')).toMatchObject({ base_commit: await h.emu.branchSha('acme/api', 'develop') });
    // One query for all of it; partial NOT_FOUND errors did not fail it.
    expect(h.emu.count({ kind: 'graphql' })).toBe(1);
    expect(h.emu.count({ kind: 'rest' })).toBe(0);
  });

  it('accepts forks when allow_forks is set', async () => {
    const checks = await h.makeForge({ allowForks: true }).checkTargets([lane('acme/forked')]);
    expect(checks[0]).toMatchObject({ ok: true });
  });

  it('fails loudly (naming repositories, not the token) when the whole query fails', async () => {
    const client = createOctokit({ token: 'ghs_unknownTokenValue0000000000001', apiUrl: h.emu.url, pacing: NO_PACING });
    const forge = h.makeForge({ octokit: client, token: 'ghs_unknownTokenValue0000000000001' });
    const err = await forge.checkTargets([lane('acme/api'), lane('acme/web')]).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^validating acme\/api, acme\/web on GitHub failed: 401/);
    expect((err as Error).message).not.toContain('ghs_unknownTokenValue');
  });

  it("names three repositories of a failed query, and counts the rest, with GitHub's message", async () => {
    const token = 'ghs_unknownTokenValue0000000000002';
    const forge = h.makeForge({ octokit: createOctokit({ token, apiUrl: h.emu.url, pacing: NO_PACING }), token });
    const fail = (n: number) =>
      forge.checkTargets(Array.from({ length: n }, (_, i) => lane(`acme/r${i}`))).then(
        () => 'no error',
        (e: Error) => e.message,
      );
    expect(await fail(3)).toBe('validating acme/r0, acme/r1, acme/r2 on GitHub failed: 401 Bad credentials - https://docs.github.com/graphql');
    expect(await fail(5)).toBe('validating acme/r0, acme/r1, acme/r2 and 2 more on GitHub failed: 401 Bad credentials - https://docs.github.com/graphql');
  });
});

describe('at scale', () => {
  it('validates 1,000 targets with 10 GraphQL requests', async () => {
    // 1,000 targets: 100 repositories that exist (a mix), 900 that do not — every batch carries partial errors.
    await mapLimit(
      Array.from({ length: 100 }, (_, i) => i),
      8,
      (i) => h.emu.createRepo({ owner: 'big', name: `svc-${i}`, empty: i % 5 === 1, archived: i % 5 === 2 }),
    );
    const lanes = Array.from({ length: 1000 }, (_, i) => lane(`big/svc-${i}`, { id: `svc-${i}` }));
    h.emu.resetLog();
    const checks = await h.forge.checkTargets(lanes);
    expect(h.emu.count({ kind: 'graphql' })).toBe(10);
    for (const req of h.emu.find({ kind: 'graphql' })) expect(req.graphqlFields?.filter((f) => f === 'repository')).toHaveLength(100);
    expect(checks.map((c) => c.lane)).toEqual(lanes.map((l) => l.id));
    const count = (why: string) => checks.filter((c) => (c.ok ? 'ok' : c.reason) === why).length;
    expect({ ok: count('ok'), empty: count('empty'), archived: count('archived'), 'not-found': count('not-found') }).toEqual({
      ok: 60,
      empty: 20,
      archived: 20,
      'not-found': 900,
    });
  }, 120_000);
});
