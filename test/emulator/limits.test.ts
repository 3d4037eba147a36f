/**
 * Limits GitHub enforces beyond its API description:
 *  - check-run `output.summary` and `output.text` hold 65,535 *bytes* each:
 *    422 "summary exceeds a maximum bytesize of 65535" (github/docs#35252),
 *    while the description's maxLength counts characters; annotations go at
 *    most 50 per request ("Invalid request.\n\nNo more than 50 items are
 *    allowed; 51 were supplied.", dorny/test-reporter#194);
 *  - the secondary limit on content creation: 80 a minute and 500 an hour,
 *    counted per account ("Rate limits for the REST API").
 */
import { getOctokit } from '@actions/github';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { contentWindows } from '../support/github-emulator/limits.js';
import { api, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
let sha: string;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  work = await tempDir();
  await emu.createRepo({ owner: 'acme', name: 'api' });
  sha = (await emu.branchSha('acme/api', 'main'))!;
});

afterEach(() => emu.setContentLimit({ perMinute: 80, perHour: 500 }));

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

const bytesizeError = (field: 'summary' | 'text') => ({
  message: 'Validation Failed',
  errors: [{ resource: 'CheckRun', code: 'custom', field, message: `${field} exceeds a maximum bytesize of 65535` }],
  documentation_url: expect.stringMatching(/^https:\/\/docs\.github\.com\/rest\/.*checks/),
  status: '422',
});

describe('check-run output is limited in bytes (github/docs#35252)', () => {
  it('refuses a 40,000-character summary of 3-byte characters on create, though the description allows 65,535 characters', async () => {
    const summary = '✓'.repeat(40_000);
    expect(Buffer.byteLength(summary)).toBe(120_000);
    const r = await api(emu, 'POST', '/repos/acme/api/check-runs', { body: { name: 'fleet', head_sha: sha, output: { title: 't', summary } } });
    expect([r.status, r.body]).toEqual([422, bytesizeError('summary')]);
    // GitHub's description does not forbid it: not a violation, and nothing was created.
    expect(emu.violations).toEqual([]);
    expect(emu.checkRuns('acme/api')).toEqual([]);
  });

  it('refuses it on update and for text too; exactly 65,535 bytes passes', async () => {
    const octokit = getOctokit(emu.token!, { baseUrl: emu.url });
    const run = await octokit.rest.checks.create({
      owner: 'acme',
      repo: 'api',
      name: 'fleet',
      head_sha: sha,
      output: { title: 't', summary: 'x'.repeat(65_535) },
    });
    await expect(
      octokit.rest.checks.update({ owner: 'acme', repo: 'api', check_run_id: run.data.id, output: { title: 't', summary: 's', text: 'é'.repeat(40_000) } }),
    ).rejects.toMatchObject({ status: 422, response: { data: bytesizeError('text') } });
    const upd = await api(emu, 'PATCH', `/repos/acme/api/check-runs/${run.data.id}`, { body: { output: { title: 't', summary: '€'.repeat(21_846) } } });
    expect([upd.status, upd.body.errors?.[0]?.field]).toEqual([422, 'summary']);
    const exact = await api(emu, 'PATCH', `/repos/acme/api/check-runs/${run.data.id}`, { body: { output: { title: 't', summary: '€'.repeat(21_845) } } });
    expect(exact.status).toBe(200);
    expect(emu.checkRuns('acme/api')[0]!.output.summary).toHaveLength(21_845);
    emu.assertNoViolations();
  });

  it("annotations go at most 50 per request, on create and update (the description's maxItems, in GitHub's words)", async () => {
    const annotations = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ path: 'a.ts', start_line: i + 1, end_line: i + 1, annotation_level: 'warning', message: 'm' }));
    const octokit = getOctokit(emu.token!, { baseUrl: emu.url });
    const run = await octokit.rest.checks.create({
      owner: 'acme',
      repo: 'api',
      name: 'lint',
      head_sha: sha,
      output: { title: 't', summary: 's', annotations: annotations(50) as never },
    });
    expect(run.data.output.annotations_count).toBe(50);
    const more = await api(emu, 'PATCH', `/repos/acme/api/check-runs/${run.data.id}`, {
      body: { output: { title: 't', summary: 's', annotations: annotations(51) } },
    });
    expect([more.status, more.body.message]).toEqual([422, 'Invalid request.\n\nNo more than 50 items are allowed; 51 were supplied.']);
    // The description rejects it, so it is recorded.
    expect(emu.violations.map((v) => v.operationId)).toEqual(['checks/update']);
    emu.resetViolations();
  });
});

describe('secondary content limit, per account', () => {
  it('defaults to 80 a minute and 500 an hour; the older { max, windowMs } form is one window', () => {
    expect(contentWindows(undefined)).toEqual([
      { max: 80, windowMs: 60_000 },
      { max: 500, windowMs: 3_600_000 },
    ]);
    expect(contentWindows({ max: 3, windowMs: 300 })).toEqual([{ max: 3, windowMs: 300 }]);
    expect(contentWindows(false)).toEqual([]);
  });

  it('counts every token of one login together (80 a minute across two tokens)', async () => {
    const a = 'ghs_sameuser0000000000000000000000000001';
    const b = 'ghs_sameuser0000000000000000000000000002';
    emu.addToken(a, { login: 'lane-bot' });
    emu.addToken(b, { login: 'lane-bot' });
    const codes: number[] = [];
    for (let i = 0; i < 81; i++)
      codes.push((await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { token: i % 2 ? a : b, body: { state: 'success', context: `c${i}` } })).status);
    expect(codes.filter((c) => c === 201)).toHaveLength(80);
    expect(codes[80]).toBe(403);
    expect(emu.requests.at(-1)).toMatchObject({ fault: 'content-limit', login: 'lane-bot' });
    // Another login has its own budget.
    expect((await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'success', context: 'admin' } })).status).toBe(201);
  });

  // "If you exceed a secondary rate limit, you will receive a 403 or 429 response and an error message that indicates that you
  // exceeded a secondary rate limit. If the retry-after response header is present, you should not retry your request until
  // after that many seconds has elapsed. If the x-ratelimit-remaining header is 0, you should not retry your request until
  // after the time, in UTC epoch seconds, specified by the x-ratelimit-reset header."
  // https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit
  it('answers as GitHub documents: 403 with a secondary-limit message and retry-after; a fault can answer 429, or x-ratelimit-reset instead', async () => {
    emu.setContentLimit({ max: 1, windowMs: 10_000 });
    expect((await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'success', context: 'doc-1' } })).status).toBe(201);
    const over = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'success', context: 'doc-2' } });
    expect(over.status).toBe(403);
    expect(over.body.message).toMatch(/^You have exceeded a secondary rate limit/);
    expect(over.body.documentation_url).toMatch(/rate-limits-for-the-rest-api#about-secondary-rate-limits$/);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(10);
    emu.setContentLimit(false);

    emu.fault({ kind: 'secondary-rate-limit', status: 429, retryAfterSec: 3, match: { method: 'POST' } });
    const tooMany = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'success', context: 'doc-3' } });
    expect([tooMany.status, tooMany.headers.get('retry-after'), tooMany.body.status]).toEqual([429, '3', '429']);
    expect(tooMany.body.message).toMatch(/secondary rate limit/);

    emu.fault({ kind: 'secondary-rate-limit', resetInSec: 30, match: { method: 'POST' } });
    const reset = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'success', context: 'doc-4' } });
    expect(reset.status).toBe(403);
    expect(reset.headers.get('retry-after')).toBeNull();
    expect(reset.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(reset.headers.get('x-ratelimit-reset')) - Math.ceil(emu.clock.now() / 1000)).toBeGreaterThanOrEqual(29);
  });

  it("500 an hour: once the minute passes writes resume until the hour's budget is spent; retry-after counts to the hour's end (emulator clock)", async () => {
    emu.setContentLimit({ perMinute: 3, perHour: 5 });
    const post = async (): Promise<[number, string | null]> => {
      const r = await api(emu, 'POST', `/repos/acme/api/statuses/${sha}`, { body: { state: 'pending', context: 'h' } });
      return [r.status, r.headers.get('retry-after')];
    };
    const first = [await post(), await post(), await post(), await post()];
    expect(first.map(([s]) => s)).toEqual([201, 201, 201, 403]);
    expect(Number(first[3]![1])).toBeLessThanOrEqual(60);
    emu.clock.advance(61_000);
    const second = [await post(), await post(), await post()];
    expect(second.map(([s]) => s)).toEqual([201, 201, 403]);
    expect(Number(second[2]![1])).toBeGreaterThan(3_400);
    emu.clock.advance(3_600_000);
    expect((await post())[0]).toBe(201);
  });
});
