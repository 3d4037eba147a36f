/**
 * GraphQL: batched repository lookups by alias (missing ones null with a
 * NOT_FOUND error at their path), variables, the draft mutations, and a real
 * parser/validator that refuses what it does not know.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api, graphql, pushFiles, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
const READER = 'ghs_graphqlReader000000000000000000001';

const FIELDS = 'nameWithOwner isArchived isDisabled isFork isEmpty viewerPermission visibility defaultBranchRef { name target { oid } }';

beforeAll(async () => {
  emu = await startEmulator();
  work = await tempDir();
  emu.addToken(READER, { login: 'reader', default: 'pull' });
  for (let i = 0; i < 98; i++) await emu.createRepo({ owner: 'acme', name: `svc-${i}` });
  await emu.createRepo({ owner: 'acme', name: 'old', archived: true });
  await emu.createRepo({ owner: 'acme', name: 'blank', empty: true });
  await emu.createRepo({ owner: 'acme', name: 'forked', fork: true, visibility: 'private' });
});

afterAll(async () => {
  await emu.close();
  await removeDir(work);
});

describe('repository batches', () => {
  it('answers 100 aliases in one query, a missing repository null with NOT_FOUND at its path', async () => {
    const names = [...Array.from({ length: 97 }, (_, i) => `svc-${i}`), 'old', 'blank', 'missing'];
    const query = `query {\n${names.map((n, i) => `  a${i}: repository(owner: "acme", name: "${n}") { ${FIELDS} }`).join('\n')}\n  rateLimit { cost remaining resetAt limit }\n}`;
    emu.resetLog();
    const r = await graphql(emu, query);
    expect(r.status).toBe(200);
    const data = r.body.data;
    expect(Object.keys(data)).toHaveLength(101);
    const main = await emu.branchSha('acme/svc-0', 'main');
    expect(data.a0).toEqual({
      nameWithOwner: 'acme/svc-0',
      isArchived: false,
      isDisabled: false,
      isFork: false,
      isEmpty: false,
      viewerPermission: 'ADMIN',
      visibility: 'PUBLIC',
      defaultBranchRef: { name: 'main', target: { oid: main } },
    });
    expect(data.a97).toMatchObject({ isArchived: true });
    expect(data.a98).toMatchObject({ isEmpty: true, defaultBranchRef: null });
    expect(data.a99).toBeNull();
    expect(r.body.errors).toEqual([
      {
        type: 'NOT_FOUND',
        path: ['a99'],
        locations: [{ line: 101, column: 3 }],
        message: "Could not resolve to a Repository with the name 'acme/missing'.",
      },
    ]);
    expect(data.rateLimit).toMatchObject({ cost: 1, limit: 5000, remaining: 4999 });
    expect(data.rateLimit.resetAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(emu.count({ kind: 'graphql' })).toBe(1);
    expect(emu.requests[0]!.graphqlFields).toHaveLength(101);
    expect(r.headers.get('x-ratelimit-resource')).toBe('graphql');
    expect(emu.violations).toEqual([]);
  });

  it("takes variables, and reports the viewer's permission per token", async () => {
    const q = `query($owner: String!, $name: String!) { repository(owner: $owner, name: $name) { nameWithOwner isFork isPrivate viewerPermission visibility } }`;
    const admin = await graphql(emu, q, { owner: 'acme', name: 'forked' });
    expect(admin.body).toEqual({
      data: { repository: { nameWithOwner: 'acme/forked', isFork: true, isPrivate: true, viewerPermission: 'ADMIN', visibility: 'PRIVATE' } },
    });
    const reader = await graphql(emu, q, { owner: 'acme', name: 'svc-1' }, READER);
    expect(reader.body.data.repository.viewerPermission).toBe('READ');
    const missingVar = await graphql(emu, q, { owner: 'acme' });
    expect(missingVar.body.data).toBeUndefined();
    expect(missingVar.body.errors[0].message).toBe('Variable $name of type String! was provided invalid value');
  });

  it('reads topics, refs and a pull request', async () => {
    await emu.createRepo({ owner: 'acme', name: 'topical', topics: ['a', 'b', 'c'] });
    const sha = await pushFiles(emu, work, { owner: 'acme', repo: 'topical', branch: 'lane', files: { 'x.txt': 'x\n' } });
    const pr = await api(emu, 'POST', '/repos/acme/topical/pulls', { body: { head: 'lane', base: 'main', title: 't' } });
    const r = await graphql(
      emu,
      `{ repository(owner: "acme", name: "topical") {
          repositoryTopics(first: 2) { totalCount nodes { topic { name } } }
          ref(qualifiedName: "refs/heads/lane") { name prefix target { oid abbreviatedOid } }
          pullRequest(number: ${pr.body.number}) { number isDraft state headRefName headRefOid baseRefName id __typename }
        } }`,
    );
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data.repository).toEqual({
      repositoryTopics: { totalCount: 3, nodes: [{ topic: { name: 'a' } }, { topic: { name: 'b' } }] },
      ref: { name: 'lane', prefix: 'refs/heads/', target: { oid: sha, abbreviatedOid: sha.slice(0, 7) } },
      pullRequest: {
        number: 1,
        isDraft: false,
        state: 'OPEN',
        headRefName: 'lane',
        headRefOid: sha,
        baseRefName: 'main',
        id: pr.body.node_id,
        __typename: 'PullRequest',
      },
    });
  });
});

describe('draft mutations', () => {
  it('converts a PR to a draft and back by its node id', async () => {
    await emu.createRepo({ owner: 'acme', name: 'drafty' });
    await pushFiles(emu, work, { owner: 'acme', repo: 'drafty', branch: 'lane', files: { 'x.txt': 'x\n' } });
    const pr = (await api(emu, 'POST', '/repos/acme/drafty/pulls', { body: { head: 'acme:lane', base: 'main', title: 't' } })).body;
    const toDraft = await graphql(emu, 'mutation($id: ID!) { convertPullRequestToDraft(input: { pullRequestId: $id }) { pullRequest { isDraft number } } }', {
      id: pr.node_id,
    });
    expect(toDraft.body).toEqual({ data: { convertPullRequestToDraft: { pullRequest: { isDraft: true, number: pr.number } } } });
    expect((await api(emu, 'GET', `/repos/acme/drafty/pulls/${pr.number}`)).body.draft).toBe(true);
    const ready = await graphql(
      emu,
      'mutation($input: MarkPullRequestReadyForReviewInput!) { markPullRequestReadyForReview(input: $input) { clientMutationId pullRequest { isDraft } } }',
      {
        input: { pullRequestId: pr.node_id, clientMutationId: 'abc' },
      },
    );
    expect(ready.body).toEqual({ data: { markPullRequestReadyForReview: { clientMutationId: 'abc', pullRequest: { isDraft: false } } } });
    expect(emu.pullRequests('acme/drafty')[0]!.draft).toBe(false);
  });

  it('answers an unknown node id NOT_FOUND and a read-only token FORBIDDEN', async () => {
    const missing = await graphql(emu, 'mutation { convertPullRequestToDraft(input: { pullRequestId: "PR_nope" }) { pullRequest { isDraft } } }');
    expect(missing.body).toMatchObject({ data: { convertPullRequestToDraft: null }, errors: [{ type: 'NOT_FOUND', path: ['convertPullRequestToDraft'] }] });
    const pr = emu.pullRequests('acme/drafty')[0]!;
    const forbidden = await graphql(
      emu,
      'mutation($id: ID!) { convertPullRequestToDraft(input: { pullRequestId: $id }) { pullRequest { isDraft } } }',
      { id: pr.node_id },
      READER,
    );
    expect(forbidden.body.errors[0]).toMatchObject({ type: 'FORBIDDEN', message: 'Resource not accessible by integration' });
    expect(emu.pullRequests('acme/drafty')[0]!.draft).toBe(false);
  });
});

describe('parsing and validation', () => {
  it('refuses an unknown field like GitHub (no data), and records a violation', async () => {
    emu.resetViolations();
    const r = await graphql(emu, '{ repository(owner: "acme", name: "svc-1") { nameWithOwner stars } }');
    expect(r.status).toBe(200);
    expect(r.body.data).toBeUndefined();
    expect(r.body.errors).toEqual([
      {
        message: "Field 'stars' doesn't exist on type 'Repository'",
        locations: [{ line: 1, column: 60 }],
        path: ['query', 'repository', 'stars'],
        extensions: { code: 'undefinedField', typeName: 'Repository', fieldName: 'stars' },
      },
    ]);
    expect(emu.violations).toEqual([expect.objectContaining({ kind: 'graphql', message: "Field 'stars' doesn't exist on type 'Repository'" })]);
  });

  it('refuses missing arguments, unknown arguments, bad selections, undeclared variables', async () => {
    const cases: Array<[string, RegExp]> = [
      ['{ repository(owner: "acme") { name } }', /missing required arguments: name/],
      ['{ repository(owner: "acme", name: "x", stars: 1) { name } }', /doesn't accept argument 'stars'/],
      ['{ repository(owner: "acme", name: "x") }', /must have selections/],
      ['{ repository(owner: "acme", name: "x") { name { x } } }', /Selections can't be made on scalars/],
      ['{ repository(owner: $o, name: "x") { name } }', /Variable \$o is used .* but not declared/],
      ['query($o: String) { rateLimit { cost } }', /Variable \$o is declared .* but not used/],
      ['{ repository(owner: "acme", name: 3) { name } }', /Could not coerce value 3 to String/],
    ];
    for (const [q, re] of cases) {
      const r = await graphql(emu, q);
      expect(r.body.errors?.[0]?.message, q).toMatch(re);
    }
  });

  it('refuses fragments, directives, subscriptions and syntax errors with a GraphQL error', async () => {
    const cases: Array<[string, RegExp]> = [
      ['{ repository(owner: "a", name: "b") { ...F } } fragment F on Repository { name }', /Fragment spreads are not supported/],
      ['query { repository(owner: "a", name: "b") { name } } fragment F on Repository { name }', /Fragments are not supported/],
      ['{ repository(owner: "a", name: "b") @include(if: true) { name } }', /Directives are not supported/],
      ['subscription { x }', /Subscriptions are not supported/],
      ['{ repository(owner: "a", name: "b") { name }', /Parse error on end of file/],
      ['{ repository(owner: "a, name: "b") { name } }', /Parse error|Unterminated string/],
    ];
    for (const [q, re] of cases) {
      const r = await graphql(emu, q);
      expect(r.status).toBe(200);
      expect(r.body.data, q).toBeUndefined();
      expect(r.body.errors[0].message, q).toMatch(re);
    }
    const noQuery = await api(emu, 'POST', '/graphql', { body: { variables: {} } });
    expect(noQuery.body.errors[0].message).toMatch(/query attribute must be specified/);
  });

  it('parses what real clients send: named operations, comments, commas, block strings, escapes, nested input objects', async () => {
    const q = `# a comment
      query Validate($owner: String! = "acme", $n: Int = 1) {
        a: repository(owner: $owner, name: """svc-1""",) { name, nameWithOwner }
        b: repository(owner: "ac\\u006De", name: "svc-2") { name }
        rateLimit(dryRun: false) { cost }
        t: repository(owner: "acme", name: "svc-3") { repositoryTopics(first: $n) { totalCount } }
      }
      mutation Other { convertPullRequestToDraft(input: { pullRequestId: "x" }) { clientMutationId } }`;
    const r = await api(emu, 'POST', '/graphql', { body: { query: q, operationName: 'Validate' } });
    expect(r.body).toEqual({
      data: { a: { name: 'svc-1', nameWithOwner: 'acme/svc-1' }, b: { name: 'svc-2' }, rateLimit: { cost: 1 }, t: { repositoryTopics: { totalCount: 0 } } },
    });
    const ambiguous = await api(emu, 'POST', '/graphql', { body: { query: q } });
    expect(ambiguous.body.errors[0].message).toMatch(/operation name is required/);
  });
});

// https://docs.github.com/graphql/reference/objects#commit: Repository.object(oid:) is a GitObject, so a commit's
// fields are asked in an inline fragment; checkSuites → checkRuns (filterBy: { checkType: LATEST }), and status.
describe("a commit's CI through Repository.object", () => {
  const CI = `query($o: String!, $n: String!, $s: GitObjectID!) { repository(owner: $o, name: $n) { object(oid: $s) { oid ... on Commit {
    checkSuites(first: 20) { totalCount nodes { app { slug } checkRuns(first: 50, filterBy: { checkType: LATEST }) { totalCount nodes { name status conclusion } } } }
    status { state contexts { context state } } } } } }`;

  it('answers the check runs (latest per name) and statuses of a commit; no statuses is a null status', async () => {
    await emu.createRepo({ owner: 'acme', name: 'ci-gql' });
    emu.setCi('acme/ci-gql', {
      checks: [
        { name: 'test', conclusion: 'failure' },
        { name: 'lint', conclusion: 'success' },
      ],
      statuses: [{ context: 'ci/legacy', state: 'pending' }],
    });
    const sha = await pushFiles(emu, work, { owner: 'acme', repo: 'ci-gql', branch: 'topic', files: { 'a.txt': 'a\n' } });
    await emu.idle();
    const r = await graphql(emu, CI, { o: 'acme', n: 'ci-gql', s: sha });
    expect(r.body.errors).toBeUndefined();
    const obj = r.body.data.repository.object;
    expect(obj.oid).toBe(sha);
    const runs = obj.checkSuites.nodes.flatMap((n: { checkRuns: { nodes: Array<{ name: string; status: string; conclusion: string }> } }) => n.checkRuns.nodes);
    expect(runs.map((x: { name: string; status: string; conclusion: string }) => [x.name, x.status, x.conclusion]).sort()).toEqual([
      ['lint', 'COMPLETED', 'SUCCESS'],
      ['test', 'COMPLETED', 'FAILURE'],
    ]);
    expect(obj.status).toEqual({ state: 'PENDING', contexts: [{ context: 'ci/legacy', state: 'PENDING' }] });
    const main = await emu.branchSha('acme/ci-gql', 'main');
    const bare = await graphql(emu, CI, { o: 'acme', n: 'ci-gql', s: main });
    expect(bare.body.data.repository.object.checkSuites).toEqual({ totalCount: 0, nodes: [] });
    expect(bare.body.data.repository.object.status).toBeNull();
    // An oid that is no commit of the repository: null.
    expect((await graphql(emu, CI, { o: 'acme', n: 'ci-gql', s: 'f'.repeat(40) })).body.data.repository.object).toBeNull();
  });

  it('validates fragments as GitHub does: a condition that cannot apply, an unknown type; connections need first', async () => {
    const cases: Array<[string, RegExp]> = [
      ['{ repository(owner: "acme", name: "old") { ... on Commit { oid } } }', /Fragment on Commit can't be spread inside Repository/],
      ['{ repository(owner: "acme", name: "old") { ... on Nothing { oid } } }', /No such type Nothing, so it can't be a fragment condition/],
      ['{ repository(owner: "acme", name: "old") { object(oid: "x") { ... on Commit { nope } } } }', /Field 'nope' doesn't exist on type 'Commit'/],
    ];
    for (const [q, re] of cases) expect((await graphql(emu, q)).body.errors?.[0]?.message, q).toMatch(re);
    const sha = await emu.branchSha('acme/old', 'main');
    const r = await graphql(emu, `{ repository(owner: "acme", name: "old") { object(oid: "${sha}") { ... on Commit { checkSuites { totalCount } } } } }`);
    expect(r.body.errors[0]).toMatchObject({ type: 'MISSING_PAGINATION_BOUNDARIES' });
  });

  it('needs checks: read for the suites and statuses: read for the status: a field the token may not read is null, FORBIDDEN', async () => {
    await emu.createRepo({ owner: 'acme', name: 'ci-scoped' });
    const sha = (await emu.branchSha('acme/ci-scoped', 'main'))!;
    const token = emu.mintInstallationToken({ scopes: { contents: 'read', checks: 'read' } });
    const r = await api(emu, 'POST', '/graphql', { token, body: { query: CI, variables: { o: 'acme', n: 'ci-scoped', s: sha } } });
    expect(r.body.data.repository.object.checkSuites).toEqual({ totalCount: 0, nodes: [] });
    expect(r.body.data.repository.object.status).toBeNull();
    expect(r.body.errors.map((e: { type: string; path: string[] }) => [e.type, e.path.join('.')])).toEqual([['FORBIDDEN', 'repository.object.status']]);
  });
});
