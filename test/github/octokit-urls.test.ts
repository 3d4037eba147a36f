import { afterEach, describe, expect, it, vi } from 'vitest';
import { clearSecrets, redact } from '../../src/util/secrets.js';
import { GitHubForge } from '../../src/github/forge.js';
import { basicCredential, createOctokit, graphqlUrlFor, resolveGraphqlUrl, serverUrlFor } from '../../src/github/octokit.js';
import { topicQuery } from '../../src/github/discover.js';
import { lane } from './helpers.js';

afterEach(() => {
  vi.unstubAllEnvs();
  clearSecrets();
});

describe('URLs', () => {
  it('derives the GraphQL endpoint from the REST base (github.com, GHE.com, GHES)', () => {
    expect(graphqlUrlFor('https://api.github.com')).toBe('https://api.github.com/graphql');
    expect(graphqlUrlFor('https://api.acme.ghe.com/')).toBe('https://api.acme.ghe.com/graphql');
    expect(graphqlUrlFor('https://ghes.acme.com/api/v3')).toBe('https://ghes.acme.com/api/graphql');
    expect(graphqlUrlFor('https://ghes.acme.com/api/v3/')).toBe('https://ghes.acme.com/api/graphql');
  });

  it('reads GITHUB_GRAPHQL_URL only when the REST URL also comes from the environment', () => {
    vi.stubEnv('GITHUB_API_URL', 'https://ghes.acme.com/api/v3');
    vi.stubEnv('GITHUB_GRAPHQL_URL', 'https://ghes.acme.com/api/graphql');
    expect(resolveGraphqlUrl({})).toBe('https://ghes.acme.com/api/graphql');
    expect(resolveGraphqlUrl({ apiUrl: 'http://127.0.0.1:9' })).toBe('http://127.0.0.1:9/graphql');
    expect(resolveGraphqlUrl({ apiUrl: 'http://127.0.0.1:9', graphqlUrl: 'http://127.0.0.1:9/gql' })).toBe('http://127.0.0.1:9/gql');
  });

  it('derives the server (clone) URL from the REST base', () => {
    expect(serverUrlFor('https://api.github.com')).toBe('https://github.com');
    expect(serverUrlFor('https://ghes.acme.com/api/v3')).toBe('https://ghes.acme.com');
    expect(serverUrlFor('https://api.acme.ghe.com')).toBe('https://acme.ghe.com');
    expect(serverUrlFor('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
  });

  it('sends REST and GraphQL to the right endpoints for a GHES base', async () => {
    const seen: string[] = [];
    const fetch = (async (url: string | URL | Request) => {
      seen.push(String(url));
      const body = String(url).includes('graphql') ? { data: { viewer: { login: 'x' } } } : { login: 'x' };
      return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
    }) as typeof globalThis.fetch;
    const ghes = createOctokit({ token: 'ghp_test_token_value_1234', apiUrl: 'https://ghes.acme.com/api/v3', pacing: { writeMs: 0 }, fetch });
    await ghes.request('GET /user');
    await ghes.graphql('query { viewer { login } }');
    expect(seen).toEqual(['https://ghes.acme.com/api/v3/user', 'https://ghes.acme.com/api/graphql']);

    seen.length = 0;
    const custom = createOctokit({
      token: 'ghp_test_token_value_1234',
      apiUrl: 'https://ghes.acme.com/api/v3',
      graphqlUrl: 'https://gql.acme.com/graphql',
      pacing: { writeMs: 0 },
      fetch,
    });
    await custom.graphql('query { viewer { login } }');
    expect(seen).toEqual(['https://gql.acme.com/graphql']);
  });
});

describe('git credentials', () => {
  it('clones from a URL without credentials and sends the token as an extra header in the environment only', () => {
    const token = 'ghs_abcdefghijklmnopqrstuvwxyz0123';
    const octokit = createOctokit({ token, apiUrl: 'https://ghes.acme.com/api/v3' });
    const forge = new GitHubForge({ octokit, token, name: 'demo' });
    expect(forge.serverUrl).toBe('https://ghes.acme.com');
    expect(forge.cloneUrl(lane('acme/api'))).toBe('https://ghes.acme.com/acme/api.git');
    const env = forge.gitEnv();
    expect(env).toEqual({
      GIT_CONFIG_COUNT: '2',
      GIT_CONFIG_KEY_0: 'http.https://ghes.acme.com/.extraheader',
      GIT_CONFIG_VALUE_0: '',
      GIT_CONFIG_KEY_1: 'http.https://ghes.acme.com/.extraheader',
      GIT_CONFIG_VALUE_1: `AUTHORIZATION: basic ${basicCredential(token)}`,
    });
    expect(Buffer.from(basicCredential(token), 'base64').toString()).toBe(`x-access-token:${token}`);
    // Both forms of the token are redacted from anything Fleet logs.
    expect(redact(`token ${token} header ${basicCredential(token)}`)).toBe('token *** header ***');
  });

  it('keeps git config entries already in the environment', () => {
    vi.stubEnv('GIT_CONFIG_COUNT', '1');
    const token = 'ghs_abcdefghijklmnopqrstuvwxyz0123';
    const forge = new GitHubForge({ octokit: createOctokit({ token, apiUrl: 'https://api.github.com' }), token, name: 'demo' });
    const env = forge.gitEnv();
    expect(env.GIT_CONFIG_COUNT).toBe('3');
    expect(env.GIT_CONFIG_KEY_1).toBe('http.https://github.com/.extraheader');
    expect(env.GIT_CONFIG_KEY_0).toBeUndefined();
  });

  it('masks the token in the Actions log when running in Actions', () => {
    vi.stubEnv('GITHUB_ACTIONS', 'true');
    const writes: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    try {
      createOctokit({ token: 'ghs_masked_token_value_99', apiUrl: 'https://api.github.com' });
    } finally {
      spy.mockRestore();
    }
    expect(writes.join('')).toContain('::add-mask::ghs_masked_token_value_99');
    expect(writes.join('')).toContain(`::add-mask::${basicCredential('ghs_masked_token_value_99')}`);
  });
});

describe('discovery queries', () => {
  it('builds topic queries with org: or user: by owner type', () => {
    expect(topicQuery('terraform', 'acme', 'Organization')).toBe('topic:terraform org:acme');
    expect(topicQuery('terraform', 'octocat', 'User')).toBe('topic:terraform user:octocat');
    expect(topicQuery('terraform', 'x', 'unknown', true)).toBe('topic:terraform user:x fork:true');
  });

  // https://docs.github.com/en/search-github/getting-started-with-searching-on-github/understanding-the-search-syntax#use-quotation-marks-for-queries-with-whitespace
  it('quotes a topic with whitespace so it stays one term, dropping quotes inside it', () => {
    expect(topicQuery('machine learning', 'acme', 'Organization')).toBe('topic:"machine learning" org:acme');
    expect(topicQuery('say "hi"', 'acme', 'User')).toBe('topic:"say hi" user:acme');
  });
});
