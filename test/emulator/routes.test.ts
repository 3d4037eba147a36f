/**
 * Every REST request is checked against GitHub's OpenAPI description:
 * routing by method + path template, path and query parameters, request
 * bodies (required fields, types, enums, nullable), and each rejection is
 * recorded as a violation.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { matchRoute, specLoadStats, startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api } from './helpers.js';

let emu: Emulator;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  await emu.createRepo({ owner: 'acme', name: 'api', branches: { feature: { 'f.txt': 'f\n' } } });
});

afterAll(async () => {
  await emu.close();
});

beforeEach(() => {
  emu.resetViolations();
  emu.resetLog();
});

describe('routing', () => {
  it('matches path templates, literal segments before parameters, and ref-like parameters across slashes', () => {
    expect(matchRoute('GET', '/repos/o/r/pulls/7')).toMatchObject({
      route: { template: '/repos/{owner}/{repo}/pulls/{pull_number}' },
      params: { pull_number: '7' },
    });
    expect(matchRoute('GET', '/repos/o/r/pulls/comments')?.route.template).toBe('/repos/{owner}/{repo}/pulls/comments');
    expect(matchRoute('GET', '/repos/o/r/git/ref/heads/fleet/x/y')?.params.ref).toBe('heads/fleet/x/y');
    expect(matchRoute('DELETE', '/repos/o/r/git/refs/heads/fleet%2Fx')?.params.ref).toBe('heads/fleet/x');
    expect(matchRoute('GET', '/repos/o/r/branches/fleet/lane-1')?.params.branch).toBe('fleet/lane-1');
    expect(matchRoute('GET', '/repos/o/r/compare/main...fleet/a')?.params.basehead).toBe('main...fleet/a');
    expect(matchRoute('GET', '/repos/o/r/commits/fleet/a/status')).toMatchObject({
      route: { template: '/repos/{owner}/{repo}/commits/{ref}/status' },
      params: { ref: 'fleet/a' },
    });
    expect(matchRoute('GET', '/nope')).toBeNull();
    const m = matchRoute('POST', '/repos/o/r/pulls/1');
    expect(m?.route.template).toBe('/repos/{owner}/{repo}/pulls/{pull_number}');
    expect(m?.operation).toBeUndefined();
  });

  it('loads the description once per process, and says what it cost', () => {
    const stats = specLoadStats();
    expect(stats).not.toBeNull();
    expect(stats!.paths).toBeGreaterThan(500);
    expect(stats!.operations).toBeGreaterThan(800);
    // Printed for the record (parse time and resident memory after the load).
    console.log(
      `openapi: ${stats!.bytes} bytes, ${stats!.paths} paths, ${stats!.operations} operations, loaded in ${stats!.ms} ms; RSS ${stats!.rssBeforeMB} → ${stats!.rssAfterMB} MB`,
    );
  });

  it("answers an unknown path 404 with GitHub's body, and records it", async () => {
    const r = await api(emu, 'GET', '/repos/acme/api/no-such-thing');
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ message: 'Not Found', documentation_url: expect.stringContaining('docs.github.com') });
    expect(emu.violations).toEqual([expect.objectContaining({ kind: 'unknown-route', status: 404, path: '/repos/acme/api/no-such-thing' })]);
    expect(() => emu.assertNoViolations()).toThrow(/unknown-route: GET \/repos\/acme\/api\/no-such-thing/);
  });

  it('answers a known path with an unknown method 405', async () => {
    const r = await api(emu, 'DELETE', '/repos/acme/api/pulls');
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toContain('GET');
    expect(emu.violations).toEqual([expect.objectContaining({ kind: 'method-not-allowed', route: '/repos/{owner}/{repo}/pulls' })]);
  });

  it('serves the same API under /api/v3 (a GHES-style base URL)', async () => {
    const r = await api(emu, 'GET', '/api/v3/repos/acme/api');
    expect(r.status).toBe(200);
    expect(emu.find({ kind: 'rest' })[0]).toMatchObject({ path: '/repos/acme/api', route: '/repos/{owner}/{repo}', operationId: 'repos/get' });
  });
});

describe('request bodies', () => {
  it('rejects a missing required field with 422 Validation Failed and missing_field', async () => {
    const r = await api(emu, 'POST', '/repos/acme/api/pulls', { body: { head: 'feature', title: 'x' } });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({
      message: 'Validation Failed',
      errors: [{ resource: 'PullRequest', field: 'base', code: 'missing_field' }],
      documentation_url: expect.stringContaining('pulls'),
    });
    expect(emu.violations).toEqual([expect.objectContaining({ kind: 'body', status: 422, operationId: 'pulls/create' })]);
  });

  it('rejects a wrong type and a value outside an enum', async () => {
    const pr = await api(emu, 'POST', '/repos/acme/api/pulls', { body: { head: 'feature', base: 'main', title: 't', draft: 'yes' } });
    expect(pr.status).toBe(422);
    expect(pr.body.errors).toEqual([expect.objectContaining({ field: 'draft', code: 'invalid' })]);

    const created = await api(emu, 'POST', '/repos/acme/api/pulls', { body: { head: 'feature', base: 'main', title: 't' } });
    expect(created.status).toBe(201);
    const bad = await api(emu, 'PATCH', `/repos/acme/api/pulls/${created.body.number}`, { body: { state: 'merged' } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([
      expect.objectContaining({ resource: 'PullRequest', field: 'state', code: 'invalid', message: 'state must be one of: open, closed' }),
    ]);
    const merge = await api(emu, 'PUT', `/repos/acme/api/pulls/${created.body.number}/merge`, { body: { merge_method: 'fast-forward' } });
    expect(merge.status).toBe(422);
    expect(emu.violations.map((v) => v.kind)).toEqual(['body', 'body', 'body']);
  });

  it('accepts null where the description says nullable, and refuses it elsewhere', async () => {
    const sha = await emu.branchSha('acme/api', 'main');
    const ok = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'success', target_url: null, description: null, context: 'ci' } });
    expect(ok.status).toBe(201);
    expect(emu.violations).toEqual([]);
    const bad = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'success', context: null } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0]).toMatchObject({ field: 'context', code: 'invalid' });
  });

  it('checks limits the description sets (check-run summary length, annotations per request), worded as the Checks API words them', async () => {
    // "Invalid request.\n\nOnly 65535 characters are allowed; 85289 were supplied." (zyborg/dotnet-tests-report#9);
    // "Invalid request.\n\nNo more than 50 items are allowed; 53 were supplied." (qiniu/reviewbot#258).
    const sha = await emu.branchSha('acme/api', 'main');
    const long = await api(emu, 'POST', '/repos/acme/api/check-runs', {
      body: { name: 'report', head_sha: sha, status: 'completed', conclusion: 'success', output: { title: 't', summary: 'x'.repeat(65_536) } },
    });
    expect(long.status).toBe(422);
    expect(long.body.message).toBe('Invalid request.\n\nOnly 65535 characters are allowed; 65536 were supplied.');
    const annotations = Array.from({ length: 51 }, (_, i) => ({ path: 'a', start_line: i + 1, end_line: i + 1, annotation_level: 'notice', message: 'm' }));
    const many = await api(emu, 'POST', '/repos/acme/api/check-runs', {
      body: { name: 'report', head_sha: sha, output: { title: 't', summary: 's', annotations } },
    });
    expect(many.status).toBe(422);
    expect(many.body.message).toBe('Invalid request.\n\nNo more than 50 items are allowed; 51 were supplied.');
    // Both are still recorded: the description itself rejects them.
    expect(emu.violations.filter((v) => v.operationId === 'checks/create').map((v) => v.errors?.[0])).toEqual([
      expect.objectContaining({ field: 'output.summary', code: 'invalid' }),
      expect.objectContaining({ field: 'output.annotations', code: 'invalid' }),
    ]);
  });

  it('answers a body that is not JSON 400 Problems parsing JSON', async () => {
    const r = await api(emu, 'POST', '/repos/acme/api/pulls', { rawBody: '{"head": ', headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(400);
    expect(r.body.message).toBe('Problems parsing JSON');
    expect(emu.violations).toEqual([expect.objectContaining({ kind: 'json' })]);
  });
});

describe('parameters', () => {
  it('rejects query parameters that do not match their schema (type, enum)', async () => {
    const perPage = await api(emu, 'GET', '/repos/acme/api/pulls?per_page=lots');
    expect(perPage.status).toBe(422);
    expect(perPage.body.errors[0]).toMatchObject({ field: 'per_page', code: 'invalid' });
    const state = await api(emu, 'GET', '/repos/acme/api/pulls?state=merged');
    expect(state.status).toBe(422);
    expect(state.body.errors[0]).toMatchObject({ field: 'state', code: 'invalid' });
    expect(emu.violations.map((v) => v.kind)).toEqual(['query', 'query']);
  });

  it('rejects a missing required query parameter', async () => {
    const r = await api(emu, 'GET', '/search/repositories');
    expect(r.status).toBe(422);
    expect(r.body.errors[0]).toMatchObject({ field: 'q', code: 'missing_field' });
  });

  it('answers a path parameter of the wrong type 404, as GitHub does, and records it', async () => {
    const r = await api(emu, 'GET', '/repos/acme/api/pulls/abc');
    expect(r.status).toBe(404);
    expect(emu.violations).toEqual([expect.objectContaining({ kind: 'path-param', route: '/repos/{owner}/{repo}/pulls/{pull_number}' })]);
  });

  it('ignores query parameters the description does not declare (as GitHub does)', async () => {
    const r = await api(emu, 'GET', '/repos/acme/api/pulls?state=all&whatever=1');
    expect(r.status).toBe(200);
    expect(emu.violations).toEqual([]);
  });

  it('flags a head filter without its owner, which GitHub silently ignores', async () => {
    const r = await api(emu, 'GET', '/repos/acme/api/pulls?head=feature&state=all');
    expect(r.status).toBe(200);
    expect(emu.violations).toEqual([expect.objectContaining({ kind: 'semantic', message: expect.stringContaining('owner:branch') })]);
  });

  it('answers an operation the emulator does not implement 501, recorded as unimplemented', async () => {
    const r = await api(emu, 'GET', '/repos/acme/api/releases');
    expect(r.status).toBe(501);
    expect(emu.violations).toEqual([expect.objectContaining({ kind: 'unimplemented', operationId: 'repos/list-releases' })]);
  });

  it("valid requests record nothing, and the emulator's answers match the response schemas", async () => {
    emu.resetViolations();
    expect((await api(emu, 'GET', '/repos/acme/api')).status).toBe(200);
    expect((await api(emu, 'GET', '/repos/acme/api/pulls?state=all&per_page=5')).status).toBe(200);
    expect((await api(emu, 'GET', '/rate_limit')).status).toBe(200);
    expect(emu.violations).toEqual([]);
    expect(emu.responseProblems).toEqual([]);
    emu.assertNoViolations();
  });
});
