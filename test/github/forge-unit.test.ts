/**
 * The GitHub forge without a server: its construction (token, server URL), the git environment it hands out,
 * and how it words GitHub's errors (from answers a stub `fetch` makes, so every shape of error body is covered).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { newLaneRecord } from '../../src/core/model.js';
import { clearSecrets } from '../../src/util/secrets.js';
import { GitHubForge, GitHubForgeError } from '../../src/github/forge.js';
import { createOctokit } from '../../src/github/octokit.js';
import { lane } from './helpers.js';

afterEach(() => {
  vi.unstubAllEnvs();
  clearSecrets();
});

const token = 'ghs_unitTestTokenForTheForge0000001';

/** A forge whose every request is answered `status` with `body` (no retries). */
function answering(status: number, body: unknown): GitHubForge {
  const fetch = (async () =>
    new Response(typeof body === 'string' ? body : JSON.stringify(body), {
      status,
      headers: { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' },
    })) as typeof globalThis.fetch;
  const octokit = createOctokit({ token, apiUrl: 'https://api.github.com', pacing: { writeMs: 0 }, serverErrorRetries: 0, fetch });
  return new GitHubForge({ octokit, token, name: 'demo' });
}

const api = lane('acme/api');

describe('construction', () => {
  it('needs a token', () => {
    expect(() => new GitHubForge({ octokit: createOctokit({ token, apiUrl: 'https://api.github.com' }), token: '', name: 'demo' })).toThrow(
      'the GitHub forge needs a token',
    );
  });

  it('clones from the server URL it is given, without trailing slashes', () => {
    const forge = new GitHubForge({
      octokit: createOctokit({ token, apiUrl: 'https://api.github.com' }),
      token,
      name: 'demo',
      serverUrl: 'https://git.acme.com/mirror//',
    });
    expect(forge.serverUrl).toBe('https://git.acme.com/mirror');
    expect(forge.cloneUrl(api)).toBe('https://git.acme.com/mirror/acme/api.git');
  });

  it('clones from GITHUB_SERVER_URL when it talks to the environment’s API, and from its own API’s server otherwise', () => {
    vi.stubEnv('GITHUB_SERVER_URL', 'https://github.acme-proxy.com');
    vi.stubEnv('GITHUB_API_URL', 'https://api.acme-proxy.com');
    const envApi = new GitHubForge({ octokit: createOctokit({ token }), token, name: 'demo' });
    expect(envApi.serverUrl).toBe('https://github.acme-proxy.com');
    const own = new GitHubForge({ octokit: createOctokit({ token, apiUrl: 'https://ghes.acme.com/api/v3/' }), token, name: 'demo' });
    expect(own.serverUrl).toBe('https://ghes.acme.com');
  });

  it('refuses to clone a lane that is not an owner/repo name', () => {
    const forge = answering(200, {});
    expect(() => forge.cloneUrl(lane('./local', { repo_kind: 'url' }))).toThrow(
      './local is not an owner/repo name: forge: github runs GitHub repositories only',
    );
  });

  it('starts its git config entries at 0 when the inherited count is not a positive whole number', () => {
    for (const count of ['x', '-2', '0', '']) {
      vi.stubEnv('GIT_CONFIG_COUNT', count);
      const env = answering(200, {}).gitEnv();
      expect(env.GIT_CONFIG_COUNT, count).toBe('2');
      expect(env.GIT_CONFIG_VALUE_0, count).toBe('');
      expect(env.GIT_CONFIG_VALUE_1, count).toMatch(/^AUTHORIZATION: basic /);
    }
  });
});

describe('the pull request of a branch', () => {
  // The forge asks for head=owner:branch; should GitHub ever list another branch's pull request, it is not the lane's.
  it('takes only a pull request whose head is the lane branch', async () => {
    const seen: string[] = [];
    const fetch = (async (url: string | URL | Request) => {
      seen.push(String(url));
      const list = [
        {
          number: 7,
          node_id: 'PR_7',
          html_url: 'https://github.com/acme/api/pull/7',
          title: 't',
          body: null,
          state: 'open',
          head: { sha: 'a'.repeat(40), ref: 'someone/else' },
          base: { ref: 'main' },
          user: null,
          labels: [],
        },
      ];
      return new Response(JSON.stringify(list), { status: 200, headers: { 'content-type': 'application/json' } });
    }) as typeof globalThis.fetch;
    const forge = new GitHubForge({ octokit: createOctokit({ token, apiUrl: 'https://api.github.com', pacing: { writeMs: 0 }, fetch }), token, name: 'demo' });
    const record = {
      ...newLaneRecord({ repo: 'acme/api', lane: 'api', wave: 0, branch: 'fleet/t/api', depends_on: [] }),
      base_branch: 'main',
      commit: 'b'.repeat(40),
    };
    expect(await forge.merge(api, record, 'merge')).toEqual({ status: 'blocked', detail: 'no open pull request from fleet/t/api' });
    expect(seen).toHaveLength(1);
  });
});

describe('required checks', () => {
  /** A forge whose GET answers come from `routes` (by path under /repos/acme/api); anything else 404. */
  function routed(routes: Record<string, unknown>): GitHubForge {
    const fetch = (async (url: string | URL | Request) => {
      const path = new URL(String(url)).pathname;
      const hit = Object.entries(routes).find(([suffix]) => path === `/repos/acme/api${suffix}`);
      return new Response(JSON.stringify(hit ? hit[1] : { message: 'Not Found' }), {
        status: hit ? 200 : 404,
        headers: { 'content-type': 'application/json' },
      });
    }) as typeof globalThis.fetch;
    return new GitHubForge({
      octokit: createOctokit({ token, apiUrl: 'https://api.github.com', pacing: { writeMs: 0 }, serverErrorRetries: 0, fetch }),
      token,
      name: 'demo',
    });
  }

  // Older servers list only `contexts` (checks came later), and a rule may come without parameters.
  it('reads the contexts or the checks of classic protection, whichever is there, and skips rules without checks', async () => {
    const onlyChecks = routed({
      '/branches/main': { name: 'main', protection: { enabled: true, required_status_checks: { checks: [{ context: 'ci/checks' }] } } },
      '/rules/branches/main': [{ type: 'required_status_checks' }, { type: 'deletion' }],
    });
    expect(await onlyChecks.requiredChecks(api, 'main')).toEqual(['ci/checks']);
    const onlyContexts = routed({
      '/branches/main': { name: 'main', protection: { enabled: true, required_status_checks: { contexts: ['ci/contexts'] } } },
      '/rules/branches/main': [{ type: 'required_status_checks', parameters: { required_status_checks: [{ context: 'ci/rule' }] } }],
    });
    expect(await onlyContexts.requiredChecks(api, 'main')).toEqual(['ci/contexts', 'ci/rule']);
    // No protection at all, and no rules endpoint (GitHub Enterprise Server before rulesets: 404).
    expect(await routed({ '/branches/main': { name: 'main' } }).requiredChecks(api, 'main')).toEqual([]);
  });
});

describe('changed files', () => {
  it('lists both paths of a rename in path order, whatever order GitHub answers in', async () => {
    const forge = answering(200, { files: [{ filename: 'src/b.ts' }, { filename: 'docs/new.md', previous_filename: 'docs/old.md' }, { filename: 'a.txt' }] });
    expect(await forge.changedFiles(api, 'a'.repeat(40), 'b'.repeat(40))).toEqual(['a.txt', 'docs/new.md', 'docs/old.md', 'src/b.ts']);
    expect(await answering(200, {}).changedFiles(api, 'a'.repeat(40), 'b'.repeat(40))).toEqual([]);
  });

  it('cannot say (null) when GitHub does not have a commit (404), cannot compare them (422) or has an empty repository (409), even with no logger', async () => {
    for (const status of [404, 422, 409]) {
      expect(await answering(status, { message: 'No common ancestor' }).changedFiles(api, 'a'.repeat(40), 'b'.repeat(40)), String(status)).toBeNull();
    }
  });
});

describe('errors', () => {
  it('word a request that got no answer at all', async () => {
    const fetch = (async () => {
      throw new TypeError('fetch failed');
    }) as typeof globalThis.fetch;
    const forge = new GitHubForge({
      octokit: createOctokit({ token, apiUrl: 'https://api.github.com', pacing: { writeMs: 0 }, serverErrorRetries: 0, fetch }),
      token,
      name: 'demo',
    });
    const err = await forge.branchHead(api, 'main').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitHubForgeError);
    expect((err as Error).message).toMatch(/^acme\/api: reading branch main failed \(500\): fetch failed/);
  });

  it('name the repository, the action and the status (none when there is no status)', () => {
    expect(new GitHubForgeError('acme/api', 'reading x', 404, 'Not Found').message).toBe('acme/api: reading x failed (404): Not Found');
    expect(new GitHubForgeError('acme/api', 'reading x', 0, 'no answer').message).toBe('acme/api: reading x failed: no answer');
    expect(new GitHubForgeError('acme/api', 'reading x', 0, 'no answer').name).toBe('GitHubForgeError');
  });

  it('carry GitHub’s message and its listed errors, on one line, without the documentation link', async () => {
    const err = await answering(422, {
      message: 'Validation Failed - https://docs.github.com/rest/git/refs#get-a-reference\nmore detail',
      errors: [{ message: 'first' }, 'second', { code: 'invalid' }],
      documentation_url: 'https://docs.github.com/rest',
    })
      .branchHead(api, 'main')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitHubForgeError);
    expect((err as Error).message).toBe('acme/api: reading branch main failed (422): Validation Failed');
    const listed = await answering(422, { message: 'Validation Failed', errors: [{ message: 'first' }, 'second', { code: 'invalid' }] })
      .branchHead(api, 'main')
      .catch((e: unknown) => e);
    expect((listed as Error).message).toBe('acme/api: reading branch main failed (422): Validation Failed: first; second');
    const bare = await answering(422, { message: 'Validation Failed', errors: [] })
      .branchHead(api, 'main')
      .catch((e: unknown) => e);
    expect((bare as Error).message).toBe('acme/api: reading branch main failed (422): Validation Failed');
  });

  it('fall back to the error’s own message, cut to 500 characters', async () => {
    const text = await answering(418, 'I am a teapot')
      .branchHead(api, 'main')
      .catch((e: unknown) => e);
    expect((text as Error).message).toBe('acme/api: reading branch main failed (418): I am a teapot');
    const long = await answering(422, { message: 'x'.repeat(600) })
      .branchHead(api, 'main')
      .catch((e: unknown) => e);
    expect((long as Error).message).toBe(`acme/api: reading branch main failed (422): ${'x'.repeat(500)}`);
  });
});
