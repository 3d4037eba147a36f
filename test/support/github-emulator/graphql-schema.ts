/**
 * The slice of GitHub's GraphQL schema the emulator answers: `repository`
 * (with the fields target validation reads, and `object(oid:)`: a commit's
 * check suites, check runs and combined status, as a CI read takes them),
 * `rateLimit`, `viewer`, and the draft mutations. Field and argument names follow GitHub's schema; anything
 * else is rejected by validation ("Field 'x' doesn't exist on type 'Y'").
 */
import { FieldError, type FieldDef, type Schema } from './graphql.js';
import type { Access, Scope } from './scopes.js';
import type { CheckRunRecord, Permission, PullRecord, RepoRecord, StatusRecord, UserRecord } from './state.js';

export interface GqlBackend {
  repository(auth: unknown, owner: string, name: string): RepoRecord | null;
  permission(auth: unknown, r: RepoRecord): Permission;
  /** Whether the token's fine-grained scopes (if any) grant `scope` at `level`. */
  allowed(auth: unknown, scope: Scope, level: Access): boolean;
  branchSha(r: RepoRecord, branch: string): Promise<string | null>;
  refSha(r: RepoRecord, qualifiedName: string): Promise<{ name: string; prefix: string; sha: string } | null>;
  isEmpty(r: RepoRecord): Promise<boolean>;
  pull(r: RepoRecord, number: number): PullRecord | null;
  pullByNodeId(id: string): { pull: PullRecord; repo: RepoRecord } | null;
  livePullHead(p: PullRecord): Promise<string>;
  setDraft(p: PullRecord, draft: boolean): void;
  viewer(auth: unknown): UserRecord;
  rate(root: unknown): { limit: number; used: number; reset: number };
  /** Whether `oid` names a commit of `r` (the only GitObject the emulator answers with). */
  isCommit(r: RepoRecord, oid: string): Promise<boolean>;
  /** A commit's check suites (one per app), each with its check runs, oldest first. */
  checkSuites(r: RepoRecord, sha: string): Array<{ id: number; app: string; runs: CheckRunRecord[] }>;
  /** A commit's statuses, the latest per context. */
  latestStatuses(r: RepoRecord, sha: string): StatusRecord[];
  url(r: RepoRecord): string;
  pullUrl(p: PullRecord): string;
}

interface Root {
  auth: unknown;
  bucket: unknown;
}
interface RepoCtx {
  r: RepoRecord;
  auth: unknown;
}
interface CommitCtx {
  sha: string;
  r?: RepoRecord;
  auth?: unknown;
}
interface PullCtx {
  p: PullRecord;
  r: RepoRecord;
  auth: unknown;
}

const VIEWER_PERMISSION: Record<Permission, string | null> = {
  admin: 'ADMIN',
  maintain: 'MAINTAIN',
  push: 'WRITE',
  triage: 'TRIAGE',
  pull: 'READ',
  none: null,
};

const RANK: Record<Permission, number> = { none: 0, pull: 1, triage: 2, push: 3, maintain: 4, admin: 5 };

/** What GitHub answers a field the token's permissions do not reach (the field is null, the error typed FORBIDDEN). */
const FORBIDDEN_MESSAGE = 'Resource not accessible by integration';

export function buildSchema(b: GqlBackend): Schema {
  const repo = (p: unknown): RepoCtx => p as RepoCtx;
  // A Commit is reached from a Ref (`target`) or from `object(oid:)`; older callers hand its sha alone.
  const commit = (p: unknown): CommitCtx => (typeof p === 'string' ? { sha: p } : (p as CommitCtx));
  const inRepo = (c: CommitCtx): { r: RepoRecord; auth: unknown } => {
    if (!c.r) throw new FieldError('this commit was not reached through its repository', 'UNPROCESSABLE');
    return { r: c.r, auth: c.auth };
  };
  // Connections want `first` or `last`, at most 100 (GitHub's MISSING_PAGINATION_BOUNDARIES / EXCESSIVE_PAGINATION).
  const page = <T>(items: T[], args: Record<string, unknown>, connection: string): { total: number; nodes: T[] } => {
    if (args.first === undefined && args.last === undefined) {
      throw new FieldError(
        `You must provide a \`first\` or \`last\` value to properly paginate the \`${connection}\` connection.`,
        'MISSING_PAGINATION_BOUNDARIES',
      );
    }
    const n = Number(args.first ?? args.last);
    if (n < 0 || n > 100) {
      throw new FieldError(`Requesting ${n} records on the \`${connection}\` connection exceeds the \`first\` limit of 100 records.`, 'EXCESSIVE_PAGINATION');
    }
    return { total: items.length, nodes: args.first !== undefined ? items.slice(0, n) : items.slice(Math.max(0, items.length - n)) };
  };
  const connection = (nodeType: string): { kind: 'object'; fields: Record<string, FieldDef> } => ({
    kind: 'object',
    fields: {
      totalCount: { type: 'Int!', resolve: (c) => (c as { total: number }).total },
      nodes: { type: `[${nodeType}]`, resolve: (c) => (c as { nodes: unknown[] }).nodes },
    },
  });
  const pr = (p: unknown): PullCtx => p as PullCtx;
  // Refs and commits need `contents`, pull requests `pull-requests` (GitHub's app permissions apply to GraphQL too).
  const need = (auth: unknown, scope: Scope, level: Access): void => {
    if (!b.allowed(auth, scope, level)) throw new FieldError(FORBIDDEN_MESSAGE, 'FORBIDDEN');
  };
  const draftMutation = (draft: boolean) => async (parent: unknown, args: Record<string, unknown>) => {
    const root = parent as Root;
    const input = args.input as { pullRequestId: string; clientMutationId?: string | null };
    const found = b.pullByNodeId(input.pullRequestId);
    if (!found || b.permission(root.auth, found.repo) === 'none') {
      throw new FieldError(`Could not resolve to a node with the global id of '${input.pullRequestId}'`, 'NOT_FOUND');
    }
    if (RANK[b.permission(root.auth, found.repo)] < RANK.push) throw new FieldError(FORBIDDEN_MESSAGE, 'FORBIDDEN');
    need(root.auth, 'pull-requests', 'write');
    if (found.repo.archived) throw new FieldError('Repository was archived so is read-only.', 'UNPROCESSABLE');
    if (found.pull.state !== 'open') throw new FieldError('Pull request is closed', 'UNPROCESSABLE');
    b.setDraft(found.pull, draft);
    return { clientMutationId: input.clientMutationId ?? null, pullRequest: { p: found.pull, r: found.repo, auth: root.auth } };
  };

  return {
    query: 'Query',
    mutation: 'Mutation',
    types: {
      Query: {
        kind: 'object',
        fields: {
          repository: {
            type: 'Repository',
            args: { owner: 'String!', name: 'String!', followRenames: 'Boolean' },
            resolve: (parent, args) => {
              const root = parent as Root;
              const r = b.repository(root.auth, String(args.owner), String(args.name));
              if (!r) throw new FieldError(`Could not resolve to a Repository with the name '${String(args.owner)}/${String(args.name)}'.`, 'NOT_FOUND');
              return { r, auth: root.auth } satisfies RepoCtx;
            },
          },
          rateLimit: {
            type: 'RateLimit',
            args: { dryRun: 'Boolean' },
            resolve: (parent) => b.rate(parent),
          },
          viewer: { type: 'User!', resolve: (parent) => b.viewer((parent as Root).auth) },
        },
      },
      Mutation: {
        kind: 'object',
        fields: {
          convertPullRequestToDraft: {
            type: 'ConvertPullRequestToDraftPayload',
            args: { input: 'ConvertPullRequestToDraftInput!' },
            resolve: draftMutation(true),
          },
          markPullRequestReadyForReview: {
            type: 'MarkPullRequestReadyForReviewPayload',
            args: { input: 'MarkPullRequestReadyForReviewInput!' },
            resolve: draftMutation(false),
          },
        },
      },
      ConvertPullRequestToDraftInput: { kind: 'input', fields: { pullRequestId: 'ID!', clientMutationId: 'String' } },
      MarkPullRequestReadyForReviewInput: { kind: 'input', fields: { pullRequestId: 'ID!', clientMutationId: 'String' } },
      ConvertPullRequestToDraftPayload: {
        kind: 'object',
        fields: {
          clientMutationId: { type: 'String', resolve: (p) => (p as { clientMutationId: string | null }).clientMutationId },
          pullRequest: { type: 'PullRequest', resolve: (p) => (p as { pullRequest: PullCtx }).pullRequest },
        },
      },
      MarkPullRequestReadyForReviewPayload: {
        kind: 'object',
        fields: {
          clientMutationId: { type: 'String', resolve: (p) => (p as { clientMutationId: string | null }).clientMutationId },
          pullRequest: { type: 'PullRequest', resolve: (p) => (p as { pullRequest: PullCtx }).pullRequest },
        },
      },
      RateLimit: {
        kind: 'object',
        fields: {
          cost: { type: 'Int!', resolve: () => 1 },
          limit: { type: 'Int!', resolve: (p) => (p as { limit: number }).limit },
          nodeCount: { type: 'Int!', resolve: () => 1 },
          remaining: { type: 'Int!', resolve: (p) => Math.max(0, (p as { limit: number; used: number }).limit - (p as { used: number }).used) },
          resetAt: { type: 'DateTime!', resolve: (p) => new Date((p as { reset: number }).reset * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') },
          used: { type: 'Int!', resolve: (p) => (p as { used: number }).used },
        },
      },
      User: {
        kind: 'object',
        fields: {
          login: { type: 'String!', resolve: (u) => (u as UserRecord).login },
          id: { type: 'ID!', resolve: (u) => (u as UserRecord).node_id },
          databaseId: { type: 'Int', resolve: (u) => (u as UserRecord).id },
        },
      },
      RepositoryOwner: {
        kind: 'object',
        fields: {
          login: { type: 'String!', resolve: (r) => repo(r).r.owner },
          id: { type: 'ID!', resolve: (r) => `O_${repo(r).r.owner}` },
        },
      },
      Repository: {
        kind: 'object',
        fields: {
          id: { type: 'ID!', resolve: (p) => repo(p).r.node_id },
          databaseId: { type: 'Int', resolve: (p) => repo(p).r.id },
          name: { type: 'String!', resolve: (p) => repo(p).r.name },
          nameWithOwner: { type: 'String!', resolve: (p) => `${repo(p).r.owner}/${repo(p).r.name}` },
          owner: { type: 'RepositoryOwner!', resolve: (p) => p },
          description: { type: 'String', resolve: (p) => repo(p).r.description },
          url: { type: 'URI!', resolve: (p) => b.url(repo(p).r) },
          isArchived: { type: 'Boolean!', resolve: (p) => repo(p).r.archived },
          isDisabled: { type: 'Boolean!', resolve: (p) => repo(p).r.disabled },
          isFork: { type: 'Boolean!', resolve: (p) => repo(p).r.fork },
          isEmpty: { type: 'Boolean!', resolve: (p) => b.isEmpty(repo(p).r) },
          isPrivate: { type: 'Boolean!', resolve: (p) => repo(p).r.visibility !== 'public' },
          isLocked: { type: 'Boolean!', resolve: () => false },
          isMirror: { type: 'Boolean!', resolve: () => false },
          isTemplate: { type: 'Boolean!', resolve: () => false },
          visibility: { type: 'RepositoryVisibility!', resolve: (p) => repo(p).r.visibility.toUpperCase() },
          viewerPermission: { type: 'RepositoryPermission', resolve: (p) => VIEWER_PERMISSION[b.permission(repo(p).auth, repo(p).r)] },
          viewerCanAdminister: { type: 'Boolean!', resolve: (p) => b.permission(repo(p).auth, repo(p).r) === 'admin' },
          createdAt: { type: 'DateTime!', resolve: (p) => repo(p).r.created_at },
          updatedAt: { type: 'DateTime!', resolve: (p) => repo(p).r.updated_at },
          pushedAt: { type: 'DateTime', resolve: (p) => repo(p).r.pushed_at },
          defaultBranchRef: {
            type: 'Ref',
            resolve: async (p) => {
              const r = repo(p).r;
              need(repo(p).auth, 'contents', 'read');
              const sha = await b.branchSha(r, r.default_branch);
              return sha ? { name: r.default_branch, prefix: 'refs/heads/', sha } : null;
            },
          },
          ref: {
            type: 'Ref',
            args: { qualifiedName: 'String!' },
            resolve: (p, args) => {
              need(repo(p).auth, 'contents', 'read');
              return b.refSha(repo(p).r, String(args.qualifiedName));
            },
          },
          object: {
            type: 'GitObject',
            args: { oid: 'GitObjectID', expression: 'String' },
            resolve: async (p, args) => {
              const { r, auth } = repo(p);
              need(auth, 'contents', 'read');
              const oid = typeof args.oid === 'string' ? args.oid : undefined;
              if (!oid || !/^[0-9a-f]{40}$/.test(oid)) return null;
              return (await b.isCommit(r, oid)) ? ({ sha: oid, r, auth } satisfies CommitCtx) : null;
            },
          },
          repositoryTopics: {
            type: 'RepositoryTopicConnection!',
            args: { first: 'Int', last: 'Int', after: 'String', before: 'String' },
            resolve: (p, args) => {
              if (args.first === undefined && args.last === undefined) {
                throw new FieldError(
                  'You must provide a `first` or `last` value to properly paginate the `repositoryTopics` connection.',
                  'MISSING_PAGINATION_BOUNDARIES',
                );
              }
              const n = Number(args.first ?? args.last);
              if (n < 0 || n > 100)
                throw new FieldError(
                  `Requesting ${n} records on the \`repositoryTopics\` connection exceeds the \`first\` limit of 100 records.`,
                  'EXCESSIVE_PAGINATION',
                );
              const all = repo(p).r.topics;
              return { total: all.length, nodes: args.first !== undefined ? all.slice(0, n) : all.slice(-n) };
            },
          },
          pullRequest: {
            type: 'PullRequest',
            args: { number: 'Int!' },
            resolve: (p, args) => {
              const { r, auth } = repo(p);
              need(auth, 'pull-requests', 'read');
              const pull = b.pull(r, Number(args.number));
              if (!pull) throw new FieldError(`Could not resolve to a PullRequest with the number of ${String(args.number)}.`, 'NOT_FOUND');
              return { p: pull, r, auth } satisfies PullCtx;
            },
          },
        },
      },
      RepositoryTopicConnection: {
        kind: 'object',
        fields: {
          totalCount: { type: 'Int!', resolve: (c) => (c as { total: number }).total },
          nodes: { type: '[RepositoryTopic]', resolve: (c) => (c as { nodes: string[] }).nodes },
        },
      },
      RepositoryTopic: {
        kind: 'object',
        fields: { topic: { type: 'Topic!', resolve: (t) => t }, url: { type: 'URI!', resolve: (t) => `https://github.com/topics/${String(t)}` } },
      },
      Topic: { kind: 'object', fields: { name: { type: 'String!', resolve: (t) => t } } },
      Ref: {
        kind: 'object',
        fields: {
          name: { type: 'String!', resolve: (x) => (x as { name: string }).name },
          prefix: { type: 'String!', resolve: (x) => (x as { prefix: string }).prefix },
          target: { type: 'Commit', resolve: (x) => (x as { sha: string }).sha },
        },
      },
      // Blob, Tree and Tag implement it on GitHub too; the emulator answers commits only (object(oid:) of another is null).
      GitObject: {
        kind: 'interface',
        possibleTypes: ['Commit'],
        resolveType: () => 'Commit',
        fields: {
          oid: { type: 'GitObjectID!', resolve: (p) => commit(p).sha },
          abbreviatedOid: { type: 'String!', resolve: (p) => commit(p).sha.slice(0, 7) },
        },
      },
      Commit: {
        kind: 'object',
        fields: {
          oid: { type: 'GitObjectID!', resolve: (p) => commit(p).sha },
          abbreviatedOid: { type: 'String!', resolve: (p) => commit(p).sha.slice(0, 7) },
          // https://docs.github.com/graphql/reference/objects#commit: checkSuites (Checks: read), status (Commit statuses: read; null without any).
          checkSuites: {
            type: 'CheckSuiteConnection',
            args: { first: 'Int', last: 'Int', after: 'String', before: 'String', filterBy: 'CheckSuiteFilter' },
            resolve: (p, args) => {
              const c = commit(p);
              const { r, auth } = inRepo(c);
              need(auth, 'checks', 'read');
              const suites = b.checkSuites(r, c.sha).map((s) => ({ ...s, auth }));
              return page(suites, args, 'checkSuites');
            },
          },
          status: {
            type: 'Status',
            resolve: (p) => {
              const c = commit(p);
              const { r, auth } = inRepo(c);
              need(auth, 'statuses', 'read');
              const latest = b.latestStatuses(r, c.sha);
              return latest.length ? latest : null;
            },
          },
        },
      },
      CheckSuiteConnection: connection('CheckSuite'),
      CheckSuiteFilter: { kind: 'input', fields: { appId: 'Int', checkName: 'String' } },
      CheckSuite: {
        kind: 'object',
        fields: {
          databaseId: { type: 'Int', resolve: (s) => (s as { id: number }).id },
          app: { type: 'App', resolve: (s) => (s as { app: string }).app },
          checkRuns: {
            type: 'CheckRunConnection',
            args: { first: 'Int', last: 'Int', after: 'String', before: 'String', filterBy: 'CheckRunFilter' },
            resolve: (s, args) => {
              const filter = (args.filterBy ?? {}) as { checkType?: string | null; checkName?: string | null; status?: string | null };
              let runs = (s as { runs: CheckRunRecord[] }).runs;
              // LATEST (GitHub's default): the newest run of each name in the suite.
              if ((filter.checkType ?? 'LATEST') === 'LATEST') {
                const byName = new Map<string, CheckRunRecord>();
                for (const run of runs) byName.set(run.name, run);
                runs = [...byName.values()];
              }
              if (filter.checkName) runs = runs.filter((x) => x.name === filter.checkName);
              if (filter.status) runs = runs.filter((x) => x.status.toUpperCase() === filter.status);
              return page(runs, args, 'checkRuns');
            },
          },
        },
      },
      App: {
        kind: 'object',
        fields: { slug: { type: 'String!', resolve: (a) => String(a) }, name: { type: 'String!', resolve: (a) => String(a) } },
      },
      CheckRunFilter: { kind: 'input', fields: { checkType: 'CheckRunType', appId: 'Int', checkName: 'String', status: 'CheckStatusState' } },
      CheckRunType: { kind: 'enum', values: ['ALL', 'LATEST'] },
      CheckRunConnection: connection('CheckRun'),
      CheckRun: {
        kind: 'object',
        fields: {
          databaseId: { type: 'Int', resolve: (x) => (x as CheckRunRecord).id },
          name: { type: 'String!', resolve: (x) => (x as CheckRunRecord).name },
          status: { type: 'CheckStatusState!', resolve: (x) => (x as CheckRunRecord).status.toUpperCase() },
          conclusion: { type: 'CheckConclusionState', resolve: (x) => (x as CheckRunRecord).conclusion?.toUpperCase() ?? null },
          startedAt: { type: 'DateTime', resolve: (x) => (x as CheckRunRecord).started_at },
          completedAt: { type: 'DateTime', resolve: (x) => (x as CheckRunRecord).completed_at },
          detailsUrl: { type: 'URI', resolve: (x) => (x as CheckRunRecord).details_url },
        },
      },
      CheckStatusState: { kind: 'enum', values: ['REQUESTED', 'QUEUED', 'IN_PROGRESS', 'COMPLETED', 'WAITING', 'PENDING'] },
      CheckConclusionState: {
        kind: 'enum',
        values: ['ACTION_REQUIRED', 'TIMED_OUT', 'CANCELLED', 'FAILURE', 'SUCCESS', 'NEUTRAL', 'SKIPPED', 'STARTUP_FAILURE', 'STALE'],
      },
      Status: {
        kind: 'object',
        fields: {
          state: {
            type: 'StatusState!',
            resolve: (s) => {
              const list = s as StatusRecord[];
              return list.some((x) => x.state === 'failure' || x.state === 'error')
                ? 'FAILURE'
                : list.some((x) => x.state === 'pending')
                  ? 'PENDING'
                  : 'SUCCESS';
            },
          },
          contexts: { type: '[StatusContext!]!', resolve: (s) => s },
        },
      },
      StatusContext: {
        kind: 'object',
        fields: {
          context: { type: 'String!', resolve: (x) => (x as StatusRecord).context },
          state: { type: 'StatusState!', resolve: (x) => (x as StatusRecord).state.toUpperCase() },
          description: { type: 'String', resolve: (x) => (x as StatusRecord).description },
          targetUrl: { type: 'URI', resolve: (x) => (x as StatusRecord).target_url },
          createdAt: { type: 'DateTime!', resolve: (x) => (x as StatusRecord).created_at },
        },
      },
      StatusState: { kind: 'enum', values: ['EXPECTED', 'ERROR', 'FAILURE', 'PENDING', 'SUCCESS'] },
      PullRequest: {
        kind: 'object',
        fields: {
          id: { type: 'ID!', resolve: (x) => pr(x).p.node_id },
          databaseId: { type: 'Int', resolve: (x) => pr(x).p.id },
          number: { type: 'Int!', resolve: (x) => pr(x).p.number },
          title: { type: 'String!', resolve: (x) => pr(x).p.title },
          isDraft: { type: 'Boolean!', resolve: (x) => pr(x).p.draft },
          state: { type: 'PullRequestState!', resolve: (x) => (pr(x).p.merged_at ? 'MERGED' : pr(x).p.state.toUpperCase()) },
          merged: { type: 'Boolean!', resolve: (x) => pr(x).p.merged_at !== null },
          url: { type: 'URI!', resolve: (x) => b.pullUrl(pr(x).p) },
          headRefName: { type: 'String!', resolve: (x) => pr(x).p.headRef },
          headRefOid: { type: 'GitObjectID!', resolve: (x) => b.livePullHead(pr(x).p) },
          baseRefName: { type: 'String!', resolve: (x) => pr(x).p.baseRef },
        },
      },
      RepositoryPermission: { kind: 'enum', values: ['ADMIN', 'MAINTAIN', 'WRITE', 'TRIAGE', 'READ'] },
      RepositoryVisibility: { kind: 'enum', values: ['PUBLIC', 'PRIVATE', 'INTERNAL'] },
      PullRequestState: { kind: 'enum', values: ['OPEN', 'CLOSED', 'MERGED'] },
    },
  };
}
