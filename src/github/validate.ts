/**
 * Target validation in batches: one GraphQL query looks up to 100
 * repositories by aliases (`r0: repository(owner: $o0, name: $n0) {…}`), with
 * every name passed as a variable (never spliced into the query text). 1,000
 * targets cost 10 requests. A repository GitHub cannot find comes back as
 * `null` with a NOT_FOUND error beside the other results: partial errors never
 * fail the batch.
 */
import type { LaneSpec } from '../core/model.js';
import type { TargetCheck } from '../ports.js';
import { redact } from '../util/secrets.js';
import type { FleetOctokit } from './octokit.js';

export const BATCH_SIZE = 100;

/** Permissions that can push a branch. */
const PUSH_PERMISSIONS = new Set(['ADMIN', 'MAINTAIN', 'WRITE']);

export interface RepoQuery {
  /** owner/repo as the lanes wrote it (the first spelling, when lanes differ in case). */
  repo: string;
  owner: string;
  name: string;
  /** Base branches lanes of this repository ask for (each checked with `ref(qualifiedName:)`). */
  bases: string[];
}

export interface BatchQuery {
  query: string;
  variables: Record<string, string>;
  /** alias → repository, alias of each base → branch */
  repos: Array<{ alias: string; repo: RepoQuery; baseAliases: Array<{ alias: string; branch: string }> }>;
}

export interface RepoNode {
  nameWithOwner: string;
  isArchived: boolean;
  isDisabled: boolean;
  isFork: boolean;
  isEmpty: boolean;
  viewerPermission: string | null;
  defaultBranchRef: { name: string; target?: { oid?: string } | null } | null;
  [alias: string]: unknown;
}

export interface GraphqlErrorLike {
  type?: string;
  path?: ReadonlyArray<string | number>;
  message: string;
}

/**
 * `target { oid }`: the commit each base branch is at, for incremental sweeps, in the same request (a Ref's
 * target is a GitObject, whose `oid` every object has: https://docs.github.com/en/graphql/reference/objects#ref).
 */
const FIELDS = 'nameWithOwner isArchived isDisabled isFork isEmpty viewerPermission defaultBranchRef { name target { oid } }';

/** Groups lanes by repository (case-insensitively), keeping the order in which repositories first appear. */
export function groupRepos(lanes: readonly LaneSpec[]): RepoQuery[] {
  const byKey = new Map<string, RepoQuery>();
  for (const lane of lanes) {
    if (lane.repo_kind !== 'github') continue;
    const key = lane.repo.toLowerCase();
    let q = byKey.get(key);
    if (!q) {
      const [owner = '', name = ''] = lane.repo.split('/');
      q = { repo: lane.repo, owner, name, bases: [] };
      byKey.set(key, q);
    }
    if (lane.base && !q.bases.includes(lane.base)) q.bases.push(lane.base);
  }
  return [...byKey.values()];
}

/** One query for up to BATCH_SIZE repositories; `offset` keeps aliases unique across a run's batches (for logs). */
export function buildBatchQuery(repos: readonly RepoQuery[]): BatchQuery {
  if (repos.length > BATCH_SIZE) throw new RangeError(`a batch holds at most ${BATCH_SIZE} repositories, got ${repos.length}`);
  const decls: string[] = [];
  const parts: string[] = [];
  const variables: Record<string, string> = {};
  const out: BatchQuery['repos'] = [];
  repos.forEach((repo, i) => {
    const alias = `r${i}`;
    decls.push(`$o${i}: String!`, `$n${i}: String!`);
    variables[`o${i}`] = repo.owner;
    variables[`n${i}`] = repo.name;
    const baseAliases = repo.bases.map((branch, j) => {
      decls.push(`$b${i}_${j}: String!`);
      variables[`b${i}_${j}`] = `refs/heads/${branch}`;
      return { alias: `b${j}`, branch };
    });
    const refs = baseAliases.map((b, j) => ` ${b.alias}: ref(qualifiedName: $b${i}_${j}) { name target { oid } }`).join('');
    parts.push(`  ${alias}: repository(owner: $o${i}, name: $n${i}) { ${FIELDS}${refs} }`);
    out.push({ alias, repo, baseAliases });
  });
  const query = `query FleetTargets(${decls.join(', ')}) {\n${parts.join('\n')}\n}`;
  return { query, variables, repos: out };
}

/** Splits into batches of at most `size` repositories. */
export function batches<T>(items: readonly T[], size = BATCH_SIZE): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export type RepoVerdict =
  /** `heads`: the commit each branch read (the default branch and every base) points at. */
  | { ok: true; nameWithOwner: string; defaultBranch: string; missingBases: string[]; heads: Record<string, string> }
  | { ok: false; reason: string; detail: string };

/** What one alias's answer (and its errors) says about a repository. */
export function judgeRepo(
  repo: string,
  node: RepoNode | null | undefined,
  errors: readonly GraphqlErrorLike[],
  baseAliases: ReadonlyArray<{ alias: string; branch: string }>,
  allowForks: boolean,
  /** Fork mode: lanes push to forks, so reading the target is enough. */
  forkMode = false,
): RepoVerdict {
  if (!node) {
    const err = errors[0];
    if (!err || err.type === 'NOT_FOUND') {
      return { ok: false, reason: 'not-found', detail: `${repo} does not exist, or the token cannot see it` };
    }
    if (err.type === 'FORBIDDEN') return { ok: false, reason: 'forbidden', detail: `${repo}: ${redact(err.message)}` };
    return { ok: false, reason: 'unreachable', detail: `${repo}: ${redact(err.message)}` };
  }
  if (node.isDisabled) return { ok: false, reason: 'disabled', detail: `${node.nameWithOwner} is disabled` };
  if (node.isArchived) return { ok: false, reason: 'archived', detail: `${node.nameWithOwner} is archived (read-only)` };
  if (node.isFork && !allowForks)
    return { ok: false, reason: 'fork', detail: `${node.nameWithOwner} is a fork (set github.allow_forks: true to include forks)` };
  if (node.isEmpty || !node.defaultBranchRef) return { ok: false, reason: 'empty', detail: `${node.nameWithOwner} has no commits yet` };
  if (!forkMode && (!node.viewerPermission || !PUSH_PERMISSIONS.has(node.viewerPermission))) {
    return {
      ok: false,
      reason: 'no-push-permission',
      detail: `the token has ${node.viewerPermission ? `${node.viewerPermission.toLowerCase()} permission` : 'no permission'} on ${node.nameWithOwner}; it needs write, or fork mode (pr.fork: true, fleet run --fork) to push to a fork instead`,
    };
  }
  const missingBases = baseAliases.filter((b) => !node[b.alias]).map((b) => b.branch);
  const heads: Record<string, string> = {};
  const oid = (ref: unknown) => (ref as { target?: { oid?: unknown } | null } | null)?.target?.oid;
  const defaultOid = oid(node.defaultBranchRef);
  if (typeof defaultOid === 'string') heads[node.defaultBranchRef.name] = defaultOid;
  for (const b of baseAliases) {
    const at = oid(node[b.alias]);
    if (typeof at === 'string') heads[b.branch] = at;
  }
  return { ok: true, nameWithOwner: node.nameWithOwner, defaultBranch: node.defaultBranchRef.name, missingBases, heads };
}

interface GraphqlFailure {
  data?: Record<string, RepoNode | null> | null;
  errors?: GraphqlErrorLike[];
  status?: number;
  message?: string;
}

/** Runs one batch; a response with errors but with data is a partial success (GitHub's way of answering "not found"). */
async function runBatch(octokit: FleetOctokit, batch: BatchQuery): Promise<{ data: Record<string, RepoNode | null>; errors: GraphqlErrorLike[] }> {
  try {
    const data = await octokit.graphql<Record<string, RepoNode | null>>(batch.query, batch.variables);
    return { data, errors: [] };
  } catch (err) {
    const e = err as GraphqlFailure;
    if (e.data && typeof e.data === 'object' && Array.isArray(e.errors)) return { data: e.data, errors: e.errors };
    const names = batch.repos.map((r) => r.repo.repo);
    const which = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
    throw new Error(redact(`validating ${which} on GitHub failed: ${e.status ? `${e.status} ` : ''}${String(e.message ?? err).split('\n')[0]}`));
  }
}

export interface CheckReposOptions {
  allowForks?: boolean;
  /** Fork mode (pr.fork): a target the token can only read is fine. */
  forkMode?: boolean;
  /** The clone URL of a repository (the forge's `cloneUrl`). */
  cloneUrl: (repo: string) => string;
  /** Batches in flight at once (default 1: GraphQL requests count against the secondary limits like writes). */
  concurrency?: number;
}

/**
 * Validates every lane's repository; each lane comes back exactly once, in
 * input order. Lanes that are not owner/repo names cannot be GitHub targets.
 */
export async function checkRepos(octokit: FleetOctokit, lanes: readonly LaneSpec[], opts: CheckReposOptions): Promise<TargetCheck[]> {
  const repos = groupRepos(lanes);
  const verdicts = new Map<string, RepoVerdict>();
  const queue = batches(repos).map((b) => buildBatchQuery(b));
  const width = Math.max(1, opts.concurrency ?? 1);
  let next = 0;
  const worker = async () => {
    while (next < queue.length) {
      const batch = queue[next++]!;
      const { data, errors } = await runBatch(octokit, batch);
      for (const { alias, repo, baseAliases } of batch.repos) {
        const own = errors.filter((e) => e.path?.[0] === alias);
        verdicts.set(repo.repo.toLowerCase(), judgeRepo(repo.repo, data[alias], own, baseAliases, opts.allowForks ?? false, opts.forkMode ?? false));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, queue.length) }, worker));

  return lanes.map((lane): TargetCheck => {
    if (lane.repo_kind !== 'github') {
      return {
        lane: lane.id,
        repo: lane.repo,
        ok: false,
        reason: 'not-a-github-repository',
        detail: redact(`${lane.repo} is not an owner/repo name; forge: github runs GitHub repositories only`),
      };
    }
    const v = verdicts.get(lane.repo.toLowerCase());
    if (!v) return { lane: lane.id, repo: lane.repo, ok: false, reason: 'unreachable', detail: `${lane.repo} was not checked` };
    if (!v.ok) return { lane: lane.id, repo: lane.repo, ok: false, reason: v.reason, detail: v.detail };
    if (lane.base && v.missingBases.includes(lane.base)) {
      return { lane: lane.id, repo: lane.repo, ok: false, reason: 'no-base-branch', detail: `${v.nameWithOwner} has no branch ${lane.base}` };
    }
    const branch = lane.base ?? v.defaultBranch;
    return { lane: lane.id, repo: lane.repo, ok: true, clone_url: opts.cloneUrl(lane.repo), default_branch: branch, base_commit: v.heads[branch] ?? null };
  });
}
