/**
 * Response bodies shaped like GitHub's (every field the OpenAPI response
 * schemas require, so the emulator's own answers validate against them).
 */
import type { CommitInfo, DiffFile } from './git.js';
import type {
  CheckRunRecord,
  LabelRecord,
  Permission,
  PullRecord,
  RepoRecord,
  StatusRecord,
  UserRecord,
  WorkflowJobRecord,
  WorkflowRunRecord,
} from './state.js';

export interface Urls {
  /** REST base, no trailing slash. */
  api: string;
  /** Where html_url values point (the emulator's root). */
  html: string;
  /** Base of git URLs (`${git}/owner/repo.git`). */
  git: string;
}

export function nodeId(prefix: string, id: number): string {
  return `${prefix}_kwDO${Buffer.from(`${prefix}:${id}`).toString('base64url')}`;
}

export function userShape(u: UserRecord, urls: Urls): Record<string, unknown> {
  const api = `${urls.api}/users/${u.login}`;
  return {
    login: u.login,
    id: u.id,
    node_id: u.node_id,
    avatar_url: `${urls.html}/avatars/${u.login}`,
    gravatar_id: '',
    url: api,
    html_url: `${urls.html}/${u.login}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: u.type,
    user_view_type: 'public',
    site_admin: false,
  };
}

export function permissionsShape(p: Permission): { admin: boolean; maintain: boolean; push: boolean; triage: boolean; pull: boolean } {
  const rank = { none: 0, pull: 1, triage: 2, push: 3, maintain: 4, admin: 5 }[p];
  return { admin: rank >= 5, maintain: rank >= 4, push: rank >= 3, triage: rank >= 2, pull: rank >= 1 };
}

function repoUrls(r: RepoRecord, urls: Urls): Record<string, string> {
  const a = `${urls.api}/repos/${r.owner}/${r.name}`;
  return {
    url: a,
    html_url: `${urls.html}/${r.owner}/${r.name}`,
    archive_url: `${a}/{archive_format}{/ref}`,
    assignees_url: `${a}/assignees{/user}`,
    blobs_url: `${a}/git/blobs{/sha}`,
    branches_url: `${a}/branches{/branch}`,
    collaborators_url: `${a}/collaborators{/collaborator}`,
    comments_url: `${a}/comments{/number}`,
    commits_url: `${a}/commits{/sha}`,
    compare_url: `${a}/compare/{base}...{head}`,
    contents_url: `${a}/contents/{+path}`,
    contributors_url: `${a}/contributors`,
    deployments_url: `${a}/deployments`,
    downloads_url: `${a}/downloads`,
    events_url: `${a}/events`,
    forks_url: `${a}/forks`,
    git_commits_url: `${a}/git/commits{/sha}`,
    git_refs_url: `${a}/git/refs{/sha}`,
    git_tags_url: `${a}/git/tags{/sha}`,
    hooks_url: `${a}/hooks`,
    issue_comment_url: `${a}/issues/comments{/number}`,
    issue_events_url: `${a}/issues/events{/number}`,
    issues_url: `${a}/issues{/number}`,
    keys_url: `${a}/keys{/key_id}`,
    labels_url: `${a}/labels{/name}`,
    languages_url: `${a}/languages`,
    merges_url: `${a}/merges`,
    milestones_url: `${a}/milestones{/number}`,
    notifications_url: `${a}/notifications{?since,all,participating}`,
    pulls_url: `${a}/pulls{/number}`,
    releases_url: `${a}/releases{/id}`,
    stargazers_url: `${a}/stargazers`,
    statuses_url: `${a}/statuses/{sha}`,
    subscribers_url: `${a}/subscribers`,
    subscription_url: `${a}/subscription`,
    tags_url: `${a}/tags`,
    teams_url: `${a}/teams`,
    trees_url: `${a}/git/trees{/sha}`,
  };
}

export interface RepoView {
  repo: RepoRecord;
  owner: UserRecord;
  permission: Permission | null;
  empty: boolean;
  openIssues: number;
  /** A fork's parent and the root of its network (GET /repos/{owner}/{repo} shows them). */
  parent?: RepoView;
  source?: RepoView;
}

/** `minimal-repository` (lists). */
export function minimalRepoShape(v: RepoView, urls: Urls): Record<string, unknown> {
  const r = v.repo;
  const out: Record<string, unknown> = {
    id: r.id,
    node_id: r.node_id,
    name: r.name,
    full_name: `${r.owner}/${r.name}`,
    owner: userShape(v.owner, urls),
    private: r.visibility !== 'public',
    description: r.description,
    fork: r.fork,
    ...repoUrls(r, urls),
    git_url: `git://127.0.0.1/${r.owner}/${r.name}.git`,
    ssh_url: `git@127.0.0.1:${r.owner}/${r.name}.git`,
    clone_url: `${urls.git}/${r.owner}/${r.name}.git`,
    svn_url: `${urls.html}/${r.owner}/${r.name}`,
    mirror_url: null,
    homepage: null,
    language: null,
    forks_count: 0,
    stargazers_count: 0,
    watchers_count: 0,
    size: v.empty ? 0 : 1,
    default_branch: r.default_branch,
    open_issues_count: v.openIssues,
    is_template: false,
    topics: [...r.topics],
    has_issues: true,
    has_projects: true,
    has_wiki: true,
    has_pages: false,
    has_downloads: true,
    has_discussions: false,
    archived: r.archived,
    disabled: r.disabled,
    visibility: r.visibility,
    pushed_at: r.pushed_at,
    created_at: r.created_at,
    updated_at: r.updated_at,
    allow_forking: true,
    web_commit_signoff_required: false,
    license: null,
    forks: 0,
    open_issues: v.openIssues,
    watchers: 0,
  };
  if (v.permission) out.permissions = permissionsShape(v.permission);
  return out;
}

/** `full-repository` (GET /repos/{owner}/{repo}). */
export function fullRepoShape(v: RepoView, urls: Urls): Record<string, unknown> {
  return {
    ...minimalRepoShape(v, urls),
    // A fork names the repository it was forked from (parent) and the root of its network (source).
    ...(v.parent ? { parent: repoShape(v.parent, urls), source: repoShape(v.source ?? v.parent, urls) } : {}),
    network_count: 0,
    subscribers_count: 0,
    allow_squash_merge: true,
    allow_merge_commit: true,
    allow_rebase_merge: true,
    allow_auto_merge: false,
    delete_branch_on_merge: false,
    allow_update_branch: false,
    squash_merge_commit_title: 'COMMIT_OR_PR_TITLE',
    squash_merge_commit_message: 'COMMIT_MESSAGES',
    merge_commit_title: 'MERGE_MESSAGE',
    merge_commit_message: 'PR_TITLE',
    // Deprecated in the description in favour of squash_merge_commit_title; sent in 2022 (octokit/fixtures get-repository).
    use_squash_pr_title_as_default: false,
    // GitHub's token for cloning a private repository over HTTPS for a while; the emulator issues none, as for a public one.
    temp_clone_token: '',
    ...(v.owner.type === 'Organization' ? { organization: userShape(v.owner, urls) } : {}),
  };
}

/** `repository` (inside pull requests' head/base repo). */
export function repoShape(v: RepoView, urls: Urls): Record<string, unknown> {
  const m = minimalRepoShape(v, urls);
  return { ...m, permissions: m.permissions ?? undefined };
}

export function searchItemShape(v: RepoView, urls: Urls): Record<string, unknown> {
  return { ...minimalRepoShape(v, urls), score: 1 };
}

function gitUser(u: { name: string; email: string; date: string }): Record<string, unknown> {
  return { name: u.name, email: u.email, date: u.date };
}

/** `commit` (branches, compare). */
export function commitShape(
  c: CommitInfo,
  repo: RepoRecord,
  urls: Urls,
  users: (email: string) => UserRecord | null,
  files?: DiffFile[],
): Record<string, unknown> {
  const a = `${urls.api}/repos/${repo.owner}/${repo.name}`;
  const author = users(c.author.email);
  const committer = users(c.committer.email);
  const out: Record<string, unknown> = {
    sha: c.sha,
    node_id: nodeId('C', parseInt(c.sha.slice(0, 8), 16)),
    url: `${a}/commits/${c.sha}`,
    html_url: `${urls.html}/${repo.owner}/${repo.name}/commit/${c.sha}`,
    comments_url: `${a}/commits/${c.sha}/comments`,
    commit: {
      url: `${a}/git/commits/${c.sha}`,
      author: gitUser(c.author),
      committer: gitUser(c.committer),
      message: c.message,
      comment_count: 0,
      tree: { sha: c.tree, url: `${a}/git/trees/${c.tree}` },
      verification: { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null },
    },
    author: author ? userShape(author, urls) : null,
    committer: committer ? userShape(committer, urls) : null,
    parents: c.parents.map((p) => ({ sha: p, url: `${a}/commits/${p}`, html_url: `${urls.html}/${repo.owner}/${repo.name}/commit/${p}` })),
  };
  if (files) {
    out.files = files.map((f) => diffEntryShape(f, repo, urls, c.sha));
    const add = files.reduce((s, f) => s + f.additions, 0);
    const del = files.reduce((s, f) => s + f.deletions, 0);
    out.stats = { additions: add, deletions: del, total: add + del };
  }
  return out;
}

export function diffEntryShape(f: DiffFile, repo: RepoRecord, urls: Urls, ref: string): Record<string, unknown> {
  const enc = f.filename.split('/').map(encodeURIComponent).join('/');
  const out: Record<string, unknown> = {
    sha: f.sha,
    filename: f.filename,
    status: f.status,
    additions: f.additions,
    deletions: f.deletions,
    changes: f.changes,
    blob_url: `${urls.html}/${repo.owner}/${repo.name}/blob/${ref}/${enc}`,
    raw_url: `${urls.html}/${repo.owner}/${repo.name}/raw/${ref}/${enc}`,
    contents_url: `${urls.api}/repos/${repo.owner}/${repo.name}/contents/${enc}?ref=${ref}`,
  };
  if (f.patch !== undefined) out.patch = f.patch;
  if (f.previous_filename !== undefined) out.previous_filename = f.previous_filename;
  return out;
}

export function labelShape(l: LabelRecord, repo: RepoRecord, urls: Urls): Record<string, unknown> {
  return {
    id: l.id,
    node_id: l.node_id,
    url: `${urls.api}/repos/${repo.owner}/${repo.name}/labels/${encodeURIComponent(l.name)}`,
    name: l.name,
    description: l.description,
    color: l.color,
    default: l.default,
  };
}

export interface PullView {
  pull: PullRecord;
  repo: RepoView;
  /** The repository of the head branch when it is not `repo` (a PR from a fork). */
  headRepo?: RepoView;
  user: UserRecord;
  mergedBy: UserRecord | null;
  assignees: UserRecord[];
  reviewers: UserRecord[];
  labels: LabelRecord[];
  headSha: string;
  baseSha: string;
  /** Only for the full `pull-request` shape. */
  detail?: {
    mergeable: boolean | null;
    mergeable_state: string;
    commits: number;
    additions: number;
    deletions: number;
    changed_files: number;
  };
}

/** `pull-request` (with `detail`) or `pull-request-simple`. */
export function pullShape(v: PullView, urls: Urls): Record<string, unknown> {
  const p = v.pull;
  const r = v.repo.repo;
  const a = `${urls.api}/repos/${r.owner}/${r.name}`;
  const html = `${urls.html}/${r.owner}/${r.name}/pull/${p.number}`;
  const repoObj = repoShape(v.repo, urls);
  const owner = userShape(v.repo.owner, urls);
  const out: Record<string, unknown> = {
    url: `${a}/pulls/${p.number}`,
    id: p.id,
    node_id: p.node_id,
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    issue_url: `${a}/issues/${p.number}`,
    commits_url: `${a}/pulls/${p.number}/commits`,
    review_comments_url: `${a}/pulls/${p.number}/comments`,
    review_comment_url: `${a}/pulls/comments{/number}`,
    comments_url: `${a}/issues/${p.number}/comments`,
    statuses_url: `${a}/statuses/${v.headSha}`,
    number: p.number,
    state: p.state,
    locked: p.locked,
    title: p.title,
    user: userShape(v.user, urls),
    body: p.body,
    labels: v.labels.map((l) => labelShape(l, r, urls)),
    milestone: null,
    active_lock_reason: null,
    created_at: p.created_at,
    updated_at: p.updated_at,
    closed_at: p.closed_at,
    merged_at: p.merged_at,
    merge_commit_sha: p.merge_commit_sha,
    assignee: v.assignees[0] ? userShape(v.assignees[0], urls) : null,
    assignees: v.assignees.map((u) => userShape(u, urls)),
    requested_reviewers: v.reviewers.map((u) => userShape(u, urls)),
    requested_teams: p.requested_teams.map((t) => teamShape(r.owner, t, urls)),
    head: v.headRepo
      ? {
          label: `${v.headRepo.repo.owner}:${p.headRef}`,
          ref: p.headRef,
          sha: v.headSha,
          user: userShape(v.headRepo.owner, urls),
          repo: repoShape(v.headRepo, urls),
        }
      : { label: `${r.owner}:${p.headRef}`, ref: p.headRef, sha: v.headSha, user: owner, repo: repoObj },
    base: { label: `${r.owner}:${p.baseRef}`, ref: p.baseRef, sha: v.baseSha, user: owner, repo: repoObj },
    _links: {
      self: { href: `${a}/pulls/${p.number}` },
      html: { href: html },
      issue: { href: `${a}/issues/${p.number}` },
      comments: { href: `${a}/issues/${p.number}/comments` },
      review_comments: { href: `${a}/pulls/${p.number}/comments` },
      review_comment: { href: `${a}/pulls/comments{/number}` },
      commits: { href: `${a}/pulls/${p.number}/commits` },
      statuses: { href: `${a}/statuses/${v.headSha}` },
    },
    author_association: 'MEMBER',
    auto_merge: null,
    draft: p.draft,
  };
  if (v.detail) {
    Object.assign(out, {
      merged: p.merged_at !== null,
      mergeable: v.detail.mergeable,
      rebaseable: v.detail.mergeable,
      mergeable_state: v.detail.mergeable_state,
      merged_by: v.mergedBy ? userShape(v.mergedBy, urls) : null,
      comments: 0,
      review_comments: 0,
      maintainer_can_modify: p.maintainer_can_modify,
      commits: v.detail.commits,
      additions: v.detail.additions,
      deletions: v.detail.deletions,
      changed_files: v.detail.changed_files,
    });
  }
  return out;
}

/** `issue` (what POST assignees answers). */
export function issueShape(v: PullView, urls: Urls): Record<string, unknown> {
  const p = v.pull;
  const r = v.repo.repo;
  const a = `${urls.api}/repos/${r.owner}/${r.name}`;
  return {
    id: p.id,
    node_id: p.node_id,
    url: `${a}/issues/${p.number}`,
    repository_url: a,
    labels_url: `${a}/issues/${p.number}/labels{/name}`,
    comments_url: `${a}/issues/${p.number}/comments`,
    events_url: `${a}/issues/${p.number}/events`,
    html_url: `${urls.html}/${r.owner}/${r.name}/pull/${p.number}`,
    number: p.number,
    state: p.state,
    state_reason: null,
    title: p.title,
    body: p.body,
    user: userShape(v.user, urls),
    labels: v.labels.map((l) => labelShape(l, r, urls)),
    assignee: v.assignees[0] ? userShape(v.assignees[0], urls) : null,
    assignees: v.assignees.map((u) => userShape(u, urls)),
    milestone: null,
    locked: p.locked,
    active_lock_reason: null,
    comments: 0,
    pull_request: {
      url: `${a}/pulls/${p.number}`,
      html_url: `${urls.html}/${r.owner}/${r.name}/pull/${p.number}`,
      diff_url: `${urls.html}/${r.owner}/${r.name}/pull/${p.number}.diff`,
      patch_url: `${urls.html}/${r.owner}/${r.name}/pull/${p.number}.patch`,
      merged_at: p.merged_at,
    },
    closed_at: p.closed_at,
    created_at: p.created_at,
    updated_at: p.updated_at,
    draft: p.draft,
    closed_by: null,
    author_association: 'MEMBER',
    timeline_url: `${a}/issues/${p.number}/timeline`,
    performed_via_github_app: null,
    reactions: reactionsShape(`${a}/issues/${p.number}/reactions`),
  };
}

export function statusShape(s: StatusRecord, creator: UserRecord, repo: RepoRecord, urls: Urls): Record<string, unknown> {
  return {
    url: `${urls.api}/repos/${repo.owner}/${repo.name}/statuses/${s.sha}`,
    // The creator's avatar (octokit/fixtures create-status).
    avatar_url: `${urls.html}/avatars/${creator.login}`,
    id: s.id,
    node_id: s.node_id,
    state: s.state,
    description: s.description,
    target_url: s.target_url,
    context: s.context,
    created_at: s.created_at,
    updated_at: s.updated_at,
    creator: userShape(creator, urls),
  };
}

export function appShape(slug: string, owner: UserRecord, urls: Urls): Record<string, unknown> {
  return {
    id: slug === 'github-actions' ? 15368 : 1000 + slug.length,
    slug,
    node_id: nodeId('A', slug.length),
    client_id: `Iv1.${slug}`,
    owner: userShape(owner, urls),
    name: slug === 'github-actions' ? 'GitHub Actions' : slug,
    description: '',
    external_url: `${urls.html}/apps/${slug}`,
    html_url: `${urls.html}/apps/${slug}`,
    created_at: '2018-07-30T09:30:17Z',
    updated_at: '2024-04-10T20:33:16Z',
    permissions: { checks: 'write', contents: 'write', pull_requests: 'write', statuses: 'write', metadata: 'read' },
    events: ['check_run', 'check_suite', 'push', 'pull_request'],
  };
}

export function checkRunShape(c: CheckRunRecord, repo: RepoRecord, app: Record<string, unknown>, urls: Urls, pulls: PullRecord[]): Record<string, unknown> {
  const a = `${urls.api}/repos/${repo.owner}/${repo.name}`;
  return {
    id: c.id,
    head_sha: c.head_sha,
    node_id: c.node_id,
    external_id: c.external_id,
    url: `${a}/check-runs/${c.id}`,
    html_url: `${urls.html}/${repo.owner}/${repo.name}/runs/${c.id}`,
    details_url: c.details_url,
    status: c.status,
    conclusion: c.conclusion,
    started_at: c.started_at,
    completed_at: c.completed_at,
    output: {
      title: c.output.title,
      summary: c.output.summary,
      text: c.output.text,
      annotations_count: c.output.annotations_count,
      annotations_url: `${a}/check-runs/${c.id}/annotations`,
    },
    name: c.name,
    check_suite: { id: c.check_suite_id },
    app,
    pull_requests: pulls.map((p) => ({
      id: p.id,
      number: p.number,
      url: `${a}/pulls/${p.number}`,
      head: { ref: p.headRef, sha: p.headSha, repo: { id: repo.id, url: a, name: repo.name } },
      base: { ref: p.baseRef, sha: p.baseSha, repo: { id: repo.id, url: a, name: repo.name } },
    })),
  };
}

export function workflowRunShape(
  run: WorkflowRunRecord,
  repoView: RepoView,
  urls: Urls,
  actor: UserRecord,
  headCommit: CommitInfo | null,
): Record<string, unknown> {
  const repo = repoView.repo;
  const a = `${urls.api}/repos/${repo.owner}/${repo.name}`;
  const minimal = minimalRepoShape({ ...repoView, permission: null }, urls);
  return {
    id: run.id,
    name: run.name,
    node_id: run.node_id,
    check_suite_id: run.id + 1,
    check_suite_node_id: nodeId('CS', run.id + 1),
    head_branch: run.head_branch,
    head_sha: run.head_sha,
    path: run.path,
    display_title: run.name,
    run_number: run.run_number,
    run_attempt: run.run_attempt,
    event: run.event,
    status: run.status,
    conclusion: run.conclusion,
    workflow_id: run.workflow_id,
    url: `${a}/actions/runs/${run.id}`,
    html_url: `${urls.html}/${repo.owner}/${repo.name}/actions/runs/${run.id}`,
    pull_requests: [],
    created_at: run.created_at,
    updated_at: run.updated_at,
    actor: userShape(actor, urls),
    triggering_actor: userShape(actor, urls),
    run_started_at: run.created_at,
    jobs_url: `${a}/actions/runs/${run.id}/jobs`,
    logs_url: `${a}/actions/runs/${run.id}/logs`,
    check_suite_url: `${a}/check-suites/${run.id + 1}`,
    artifacts_url: `${a}/actions/runs/${run.id}/artifacts`,
    cancel_url: `${a}/actions/runs/${run.id}/cancel`,
    rerun_url: `${a}/actions/runs/${run.id}/rerun`,
    previous_attempt_url: null,
    workflow_url: `${a}/actions/workflows/${run.workflow_id}`,
    head_commit: headCommit
      ? {
          id: headCommit.sha,
          tree_id: headCommit.tree,
          message: headCommit.message,
          timestamp: headCommit.committer.date,
          author: { name: headCommit.author.name, email: headCommit.author.email },
          committer: { name: headCommit.committer.name, email: headCommit.committer.email },
        }
      : null,
    repository: minimal,
    head_repository: minimal,
  };
}

export function jobShape(job: WorkflowJobRecord, run: WorkflowRunRecord, repo: RepoRecord, urls: Urls): Record<string, unknown> {
  const a = `${urls.api}/repos/${repo.owner}/${repo.name}`;
  const status = job.status ?? 'completed';
  return {
    id: job.id,
    run_id: run.id,
    run_url: `${a}/actions/runs/${run.id}`,
    run_attempt: job.run_attempt ?? run.run_attempt,
    node_id: job.node_id,
    head_sha: run.head_sha,
    url: `${a}/actions/jobs/${job.id}`,
    html_url: `${urls.html}/${repo.owner}/${repo.name}/actions/runs/${run.id}/job/${job.id}`,
    status,
    conclusion: status === 'completed' ? (job.conclusion ?? 'success') : null,
    created_at: job.started_at,
    started_at: job.started_at,
    completed_at: status === 'completed' ? (job.completed_at ?? job.started_at) : null,
    name: job.name,
    steps: (job.steps ?? []).map((s, i) => ({
      name: s.name,
      status: s.status ?? 'completed',
      conclusion: (s.status ?? 'completed') === 'completed' ? (s.conclusion ?? 'success') : null,
      number: s.number ?? i + 1,
      started_at: job.started_at,
      completed_at: job.completed_at ?? job.started_at,
    })),
    check_run_url: `${a}/check-runs/${job.id}`,
    labels: job.labels ?? ['ubuntu-latest'],
    runner_id: status === 'queued' ? null : 1,
    runner_name: job.runner_name === undefined ? (status === 'queued' ? null : 'GitHub Actions 1') : job.runner_name,
    runner_group_id: status === 'queued' ? null : 2,
    runner_group_name: status === 'queued' ? null : 'GitHub Actions',
    workflow_name: run.name,
    head_branch: run.head_branch,
  };
}

/**
 * A 201 naming the new resource: GitHub's `Location` is the resource's API URL, the body's `url` (recorded for an
 * issue, a label, a commit status (by its commit) and a ref in octokit/fixtures, 2022).
 */
export function created(body: Record<string, unknown>): { status: 201; body: Record<string, unknown>; headers: Record<string, string> } {
  return { status: 201, body, headers: { location: String(body.url) } };
}

/** An issue's `reactions` rollup: the emulator has no reactions, so every count is 0. */
export function reactionsShape(url: string): Record<string, unknown> {
  return { url, total_count: 0, '+1': 0, '-1': 0, laugh: 0, confused: 0, heart: 0, hooray: 0, eyes: 0, rocket: 0 };
}

export function errorBody(message: string, docs = 'https://docs.github.com/rest', status?: number, extra?: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { message, documentation_url: docs, ...extra };
  if (status !== undefined) out.status = String(status);
  return out;
}

/** `simple-commit-status` (inside a combined status). */
export function simpleStatus(s: StatusRecord, repo: RepoRecord, urls: Urls): Record<string, unknown> {
  return {
    id: s.id,
    node_id: s.node_id,
    url: `${urls.api}/repos/${repo.owner}/${repo.name}/statuses/${s.sha}`,
    avatar_url: `${urls.html}/avatars/${s.creator}`,
    state: s.state,
    description: s.description,
    target_url: s.target_url,
    context: s.context,
    required: false,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

/** `team-simple` (requested teams). */
export function teamShape(org: string, slug: string, urls: Urls): Record<string, unknown> {
  const id = [...`${org}/${slug}`].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) >>> 0, 7) % 1_000_000;
  const api = `${urls.api}/orgs/${org}/teams/${slug}`;
  return {
    id,
    node_id: nodeId('T', id),
    url: api,
    members_url: `${api}/members{/member}`,
    name: slug,
    description: null,
    permission: 'pull',
    privacy: 'closed',
    notification_setting: 'notifications_enabled',
    html_url: `${urls.html}/orgs/${org}/teams/${slug}`,
    repositories_url: `${api}/repos`,
    slug,
    type: 'organization',
    parent: null,
  };
}

/** `workflow`. */
export function workflowShape(repo: RepoRecord, id: number, wfPath: string, name: string, urls: Urls): Record<string, unknown> {
  const a = `${urls.api}/repos/${repo.owner}/${repo.name}`;
  return {
    id,
    node_id: nodeId('W', id),
    name,
    path: wfPath,
    state: 'active',
    created_at: repo.created_at,
    updated_at: repo.updated_at,
    url: `${a}/actions/workflows/${id}`,
    html_url: `${urls.html}/${repo.owner}/${repo.name}/blob/${repo.default_branch}/${wfPath}`,
    badge_url: `${urls.html}/${repo.owner}/${repo.name}/workflows/${encodeURIComponent(name)}/badge.svg`,
  };
}
