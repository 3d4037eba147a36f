/**
 * Issues that are not pull requests: their labels, comments and timeline, the repository's labels, and the
 * closing keywords that close an issue when the pull request naming it merges. Pull requests stay in the
 * emulator's own store; an issue operation on a PR's number falls through to the handler given as `pull`.
 *
 * https://docs.github.com/rest/issues, https://docs.github.com/rest/using-the-rest-api/issue-event-types,
 * https://docs.github.com/issues/tracking-your-work-with-issues/using-issues/linking-a-pull-request-to-an-issue
 */
import { created, reactionsShape } from './shapes.js';
import type { LabelRecord, PullRecord, RepoRecord } from './state.js';

export interface IssueComment {
  id: number;
  node_id: string;
  user: string;
  body: string;
  created_at: string;
  updated_at: string;
}

export type IssueEvent =
  | { kind: 'labeled' | 'unlabeled'; id: number; actor: string; label: string; created_at: string }
  | { kind: 'closed'; id: number; actor: string; commit_id: string | null; state_reason: string | null; created_at: string }
  | { kind: 'reopened'; id: number; actor: string; created_at: string }
  | { kind: 'commented'; id: number; comment: number; created_at: string }
  /** A pull request of the same repository mentioned the issue; `pull` is its number (rendered live, as GitHub does). */
  | { kind: 'cross-referenced'; actor: string; pull: number; created_at: string };

export interface IssueRecord {
  id: number;
  node_id: string;
  repoKey: string;
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  state_reason: 'completed' | 'not_planned' | 'duplicate' | 'reopened' | null;
  labels: string[];
  assignees: string[];
  user: string;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  closed_by: string | null;
  comments: IssueComment[];
  events: IssueEvent[];
}

/**
 * What the closed event of an issue a merged PR closed carries: `merge-commit` is what the docs say
 * ("commit_id: The SHA of the commit that referenced this issue"); `null` is what maintainers' threads report
 * GitHub sending for PR closes (PyGithub/PyGithub#1295: "closed event doesn't populate commit_id").
 */
export type ClosedCommitMode = 'merge-commit' | 'null';

export interface IssueCtx {
  method: string;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  auth: { login: string | null };
  op: { docsUrl: string };
}

export interface IssueReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

type Handler<C> = (c: C) => Promise<IssueReply>;

export interface IssuesHost<C extends IssueCtx> {
  repoFor(c: C, need?: 'pull' | 'push'): { r: RepoRecord; key: string };
  paginate<T>(c: C, items: T[]): { items: T[]; headers: Record<string, string> };
  httpError(status: number, body: Record<string, unknown>): Error;
  semantic422(c: C, errors: Array<Record<string, unknown>>, message?: string): Error;
  id(): number;
  nodeId(prefix: string, id: number): string;
  apiUrl(): string;
  userShape(login: string): Record<string, unknown>;
  labelShape(l: LabelRecord, r: RepoRecord): Record<string, unknown>;
  pull(key: string, number: number): PullRecord | undefined;
  pulls(key: string): PullRecord[];
  /** A PR as the issues API shows it. */
  pullIssueShape(p: PullRecord, c: C): Promise<Record<string, unknown>>;
  closedCommitMode(): ClosedCommitMode;
  now(): string;
}

/** GitHub's closing keywords ("Linking a pull request to an issue using a keyword"), then `#N` or `owner/repo#N`. */
const CLOSING = /\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+(?:([\w.-]+\/[\w.-]+))?#(\d+)\b/gi;
const MENTION = /(?:^|[^\w/])(?:([\w.-]+\/[\w.-]+))?#(\d+)\b/g;

function numbersIn(text: string | null, re: RegExp, fullName: string): number[] {
  const out = new Set<number>();
  for (const m of (text ?? '').matchAll(re)) {
    if (m[1] && m[1].toLowerCase() !== fullName.toLowerCase()) continue;
    out.add(Number(m[2]));
  }
  return [...out];
}

/** The issues a PR body closes on merge (same repository only; the emulator has no cross-repository links). */
export function closingNumbers(body: string | null, fullName: string): number[] {
  return numbersIn(body, CLOSING, fullName);
}

function withoutClosedBy({ closed_by: _, ...issue }: Record<string, unknown>): Record<string, unknown> {
  return issue;
}

export class IssueTracker<C extends IssueCtx> {
  readonly issues = new Map<string, IssueRecord>();
  private nextEventId = 9_000_000;

  constructor(private readonly h: IssuesHost<C>) {}

  get(key: string, number: number): IssueRecord | undefined {
    return this.issues.get(`${key}#${number}`);
  }

  /** Creates an issue (tests and `POST …/issues` alike); labels that do not exist yet are created, as GitHub does. */
  create(r: RepoRecord, key: string, spec: { title: string; body?: string | null; labels?: string[]; assignees?: string[]; user: string }): IssueRecord {
    const id = this.h.id();
    const t = this.h.now();
    const issue: IssueRecord = {
      id,
      node_id: this.h.nodeId('I_', id),
      repoKey: key,
      number: r.nextNumber++,
      title: spec.title,
      body: spec.body ?? null,
      state: 'open',
      state_reason: null,
      labels: [],
      assignees: spec.assignees ?? [],
      user: spec.user,
      created_at: t,
      updated_at: t,
      closed_at: null,
      closed_by: null,
      comments: [],
      events: [],
    };
    this.issues.set(`${key}#${issue.number}`, issue);
    for (const l of spec.labels ?? []) this.addLabel(r, issue, l, spec.user);
    return issue;
  }

  close(issue: IssueRecord, actor: string, reason: 'completed' | 'not_planned' | 'duplicate', commitId: string | null = null): void {
    if (issue.state === 'closed') return;
    const t = this.h.now();
    issue.state = 'closed';
    issue.state_reason = reason;
    issue.closed_at = t;
    issue.closed_by = actor;
    issue.updated_at = t;
    issue.events.push({ kind: 'closed', id: this.nextEventId++, actor, commit_id: commitId, state_reason: reason, created_at: t });
  }

  reopen(issue: IssueRecord, actor: string): void {
    if (issue.state === 'open') return;
    const t = this.h.now();
    issue.state = 'open';
    issue.state_reason = 'reopened';
    issue.closed_at = null;
    issue.updated_at = t;
    issue.events.push({ kind: 'reopened', id: this.nextEventId++, actor, created_at: t });
  }

  comment(issue: IssueRecord, user: string, body: string): IssueComment {
    const id = this.h.id();
    const t = this.h.now();
    const cm: IssueComment = { id, node_id: this.h.nodeId('IC_', id), user, body, created_at: t, updated_at: t };
    issue.comments.push(cm);
    issue.events.push({ kind: 'commented', id: this.nextEventId++, comment: id, created_at: t });
    issue.updated_at = t;
    return cm;
  }

  /** A PR opened or edited: each issue its body mentions gets one cross-referenced event for it. */
  pullReferenced(p: PullRecord, r: RepoRecord, actor: string): void {
    for (const n of numbersIn(p.body, MENTION, `${r.owner}/${r.name}`)) {
      const issue = this.get(p.repoKey, n);
      if (!issue || issue.events.some((e) => e.kind === 'cross-referenced' && e.pull === p.number)) continue;
      issue.events.push({ kind: 'cross-referenced', actor, pull: p.number, created_at: this.h.now() });
    }
  }

  /**
   * A PR merged: the issues its body closes with a keyword are closed, when it merged into the default branch
   * ("If the pull request targets the default branch, the linked issue is closed when the pull request is merged").
   */
  pullMerged(p: PullRecord, r: RepoRecord, merger: string): void {
    if (p.baseRef !== r.default_branch) return;
    const commit = this.h.closedCommitMode() === 'merge-commit' ? p.merge_commit_sha : null;
    for (const n of closingNumbers(p.body, `${r.owner}/${r.name}`)) {
      const issue = this.get(p.repoKey, n);
      if (issue) this.close(issue, merger, 'completed', commit);
    }
  }

  private label(r: RepoRecord, name: string, creator: () => void = () => undefined): LabelRecord {
    let l = r.labels.get(name.toLowerCase());
    if (!l) {
      const id = this.h.id();
      l = { id, node_id: this.h.nodeId('LA_', id), name, color: 'ededed', description: null, default: false };
      r.labels.set(name.toLowerCase(), l);
      creator();
    }
    return l;
  }

  private addLabel(r: RepoRecord, issue: IssueRecord, name: string, actor: string): void {
    const l = this.label(r, name);
    if (issue.labels.some((x) => x.toLowerCase() === l.name.toLowerCase())) return;
    issue.labels.push(l.name);
    issue.events.push({ kind: 'labeled', id: this.nextEventId++, actor, label: l.name, created_at: this.h.now() });
    issue.updated_at = this.h.now();
  }

  private removeLabel(issue: IssueRecord, name: string, actor: string): boolean {
    const i = issue.labels.findIndex((x) => x.toLowerCase() === name.toLowerCase());
    if (i < 0) return false;
    const [gone] = issue.labels.splice(i, 1);
    issue.events.push({ kind: 'unlabeled', id: this.nextEventId++, actor, label: gone!, created_at: this.h.now() });
    issue.updated_at = this.h.now();
    return true;
  }

  private shape(r: RepoRecord, i: IssueRecord): Record<string, unknown> {
    const a = `${this.h.apiUrl()}/repos/${r.owner}/${r.name}`;
    return {
      id: i.id,
      node_id: i.node_id,
      url: `${a}/issues/${i.number}`,
      repository_url: a,
      labels_url: `${a}/issues/${i.number}/labels{/name}`,
      comments_url: `${a}/issues/${i.number}/comments`,
      events_url: `${a}/issues/${i.number}/events`,
      html_url: `${this.h.apiUrl()}/${r.owner}/${r.name}/issues/${i.number}`,
      number: i.number,
      state: i.state,
      state_reason: i.state_reason,
      title: i.title,
      body: i.body,
      user: this.h.userShape(i.user),
      labels: i.labels.map((l) => this.h.labelShape(r.labels.get(l.toLowerCase())!, r)),
      assignee: i.assignees[0] ? this.h.userShape(i.assignees[0]) : null,
      assignees: i.assignees.map((u) => this.h.userShape(u)),
      milestone: null,
      locked: false,
      active_lock_reason: null,
      comments: i.comments.length,
      closed_at: i.closed_at,
      created_at: i.created_at,
      updated_at: i.updated_at,
      closed_by: i.closed_by ? this.h.userShape(i.closed_by) : null,
      author_association: 'MEMBER',
      timeline_url: `${a}/issues/${i.number}/timeline`,
      performed_via_github_app: null,
      reactions: reactionsShape(`${a}/issues/${i.number}/reactions`),
    };
  }

  private commentShape(r: RepoRecord, i: IssueRecord, cm: IssueComment): Record<string, unknown> {
    const a = `${this.h.apiUrl()}/repos/${r.owner}/${r.name}`;
    return {
      id: cm.id,
      node_id: cm.node_id,
      url: `${a}/issues/comments/${cm.id}`,
      html_url: `${this.h.apiUrl()}/${r.owner}/${r.name}/issues/${i.number}#issuecomment-${cm.id}`,
      body: cm.body,
      user: this.h.userShape(cm.user),
      created_at: cm.created_at,
      updated_at: cm.updated_at,
      issue_url: `${a}/issues/${i.number}`,
      author_association: 'MEMBER',
    };
  }

  private async eventShape(r: RepoRecord, i: IssueRecord, e: IssueEvent, c: C): Promise<Record<string, unknown>> {
    const a = `${this.h.apiUrl()}/repos/${r.owner}/${r.name}`;
    if (e.kind === 'cross-referenced') {
      const p = this.h.pull(i.repoKey, e.pull)!;
      return {
        event: 'cross-referenced',
        actor: this.h.userShape(e.actor),
        created_at: e.created_at,
        updated_at: e.created_at,
        source: { type: 'issue', issue: await this.h.pullIssueShape(p, c) },
      };
    }
    if (e.kind === 'commented') {
      const cm = i.comments.find((x) => x.id === e.comment)!;
      return { event: 'commented', actor: this.h.userShape(cm.user), ...this.commentShape(r, i, cm) };
    }
    const common = {
      id: e.id,
      node_id: this.h.nodeId('E_', e.id),
      url: `${a}/issues/events/${e.id}`,
      actor: this.h.userShape(e.actor),
      event: e.kind,
      commit_id: e.kind === 'closed' ? e.commit_id : null,
      commit_url: e.kind === 'closed' && e.commit_id ? `${a}/commits/${e.commit_id}` : null,
      created_at: e.created_at,
      performed_via_github_app: null,
    };
    if (e.kind === 'labeled' || e.kind === 'unlabeled')
      return { ...common, label: { name: e.label, color: r.labels.get(e.label.toLowerCase())?.color ?? 'ededed' } };
    if (e.kind === 'closed') return { ...common, state_reason: e.state_reason };
    return common;
  }

  private issueOf(c: C, key: string): IssueRecord | undefined {
    return this.get(key, Number(c.params.issue_number));
  }

  private notFound(c: C): Error {
    return this.h.httpError(404, { message: 'Not Found', documentation_url: c.op.docsUrl, status: '404' });
  }

  /**
   * The handlers, by operationId. `pull` holds the emulator's handlers for a PR's number (issues/get and the
   * label operations on a pull request); a number that is neither is 404.
   */
  handlers(pull: Record<string, Handler<C>>): Record<string, Handler<C>> {
    const h = this.h;
    const ok = (body: unknown, headers?: Record<string, string>): IssueReply => ({ status: 200, body, ...(headers ? { headers } : {}) });
    const login = (c: C): string => c.auth.login ?? 'ghost';
    const either =
      (op: string, plain: (c: C, r: RepoRecord, i: IssueRecord) => Promise<IssueReply> | IssueReply): Handler<C> =>
      async (c) => {
        const { r, key } = h.repoFor(c);
        const i = this.issueOf(c, key);
        if (i) return plain(c, r, i);
        if (pull[op]) return pull[op]!(c);
        throw this.notFound(c);
      };
    const plainOnly =
      (plain: (c: C, r: RepoRecord, i: IssueRecord) => Promise<IssueReply> | IssueReply) =>
      async (c: C): Promise<IssueReply> => {
        const { r, key } = h.repoFor(c);
        const i = this.issueOf(c, key);
        if (!i) {
          // A PR's own comments and timeline are not emulated: an empty list rather than a 404 GitHub would not give.
          if (c.method === 'GET' && h.pull(key, Number(c.params.issue_number))) return ok([]);
          throw this.notFound(c);
        }
        return plain(c, r, i);
      };
    const labelNames = (raw: unknown): string[] => {
      const b = raw as { labels?: Array<string | { name: string }> } | Array<string | { name: string }> | undefined;
      const list = Array.isArray(b) ? b : (b?.labels ?? []);
      return list.map((l) => (typeof l === 'string' ? l : l.name));
    };

    return {
      'issues/create': async (c) => {
        const { r, key } = h.repoFor(c, 'push');
        const b = c.body as { title: string | number; body?: string | null; labels?: Array<string | { name: string }>; assignees?: string[] };
        const issue = this.create(r, key, { title: String(b.title), body: b.body ?? null, labels: labelNames(b), assignees: b.assignees, user: login(c) });
        return created(this.shape(r, issue));
      },
      'issues/get': either('issues/get', (_c, r, i) => ok(this.shape(r, i))),
      'issues/update': plainOnly((c, r, i) => {
        const b = c.body as {
          title?: string | number | null;
          body?: string | null;
          state?: 'open' | 'closed';
          state_reason?: 'completed' | 'not_planned' | 'duplicate' | 'reopened' | null;
          labels?: Array<string | { name: string }>;
        };
        if (b.title !== undefined && b.title !== null) i.title = String(b.title);
        if (b.body !== undefined) i.body = b.body;
        if (b.labels !== undefined) {
          const want = labelNames(b);
          for (const l of [...i.labels]) if (!want.some((w) => w.toLowerCase() === l.toLowerCase())) this.removeLabel(i, l, login(c));
          for (const l of want) this.addLabel(r, i, l, login(c));
        }
        // "state_reason: … Ignored unless `state` is changed."
        if (b.state === 'closed' && i.state === 'open') {
          const reason = b.state_reason === 'not_planned' || b.state_reason === 'duplicate' ? b.state_reason : 'completed';
          this.close(i, login(c), reason);
        } else if (b.state === 'open' && i.state === 'closed') this.reopen(i, login(c));
        i.updated_at = h.now();
        return ok(this.shape(r, i));
      }),
      'issues/list-for-repo': async (c) => {
        const { r, key } = h.repoFor(c);
        const state = String(c.query.state ?? 'open');
        const wanted =
          c.query.labels === undefined
            ? []
            : String(c.query.labels)
                .split(',')
                .map((s) => s.trim().toLowerCase())
                .filter(Boolean);
        type Row = {
          number: number;
          created: string;
          updated: string;
          comments: number;
          render: () => Promise<Record<string, unknown>>;
          state: string;
          labels: string[];
        };
        const rows: Row[] = [];
        for (const i of this.issues.values()) {
          if (i.repoKey !== key) continue;
          rows.push({
            number: i.number,
            created: i.created_at,
            updated: i.updated_at,
            comments: i.comments.length,
            state: i.state,
            labels: i.labels,
            render: async () => this.shape(r, i),
          });
        }
        // "GitHub's REST API considers every pull request an issue": the listing holds PRs too.
        for (const p of h.pulls(key)) {
          rows.push({
            number: p.number,
            created: p.created_at,
            updated: p.updated_at,
            comments: 0,
            state: p.state,
            labels: p.labels,
            render: () => h.pullIssueShape(p, c),
          });
        }
        let list = rows.filter((x) => state === 'all' || x.state === state);
        if (wanted.length) list = list.filter((x) => wanted.every((w) => x.labels.some((l) => l.toLowerCase() === w)));
        const sort = String(c.query.sort ?? 'created');
        const desc = String(c.query.direction ?? 'desc') === 'desc';
        list.sort((a, b) => {
          const ka = sort === 'updated' ? a.updated : sort === 'comments' ? String(a.comments).padStart(8, '0') : a.created;
          const kb = sort === 'updated' ? b.updated : sort === 'comments' ? String(b.comments).padStart(8, '0') : b.created;
          const d = ka < kb ? -1 : ka > kb ? 1 : a.number - b.number;
          return desc ? -d : d;
        });
        const page = h.paginate(c, list);
        const items = [];
        // A listed issue has no closed_by: GitHub sends it on one issue only (octokit/fixtures paginate-issues).
        for (const x of page.items) items.push(withoutClosedBy(await x.render()));
        return ok(items, page.headers);
      },
      'issues/add-labels': either('issues/add-labels', (c, r, i) => {
        for (const l of labelNames(c.body)) this.addLabel(r, i, l, login(c));
        return ok(i.labels.map((l) => h.labelShape(r.labels.get(l.toLowerCase())!, r)));
      }),
      'issues/list-labels-on-issue': either('issues/list-labels-on-issue', (c, r, i) => {
        const page = h.paginate(c, i.labels);
        return ok(
          page.items.map((l) => h.labelShape(r.labels.get(l.toLowerCase())!, r)),
          page.headers,
        );
      }),
      'issues/remove-label': async (c) => {
        const { r, key } = h.repoFor(c, 'push');
        const number = Number(c.params.issue_number);
        const i = this.issueOf(c, key);
        const p = i ? undefined : h.pull(key, number);
        if (!i && !p) throw this.notFound(c);
        const name = c.params.name ?? '';
        // "Removes the specified label from the issue … Returns a 404 Not Found status if the label does not exist."
        const labels = i ? i.labels : p!.labels;
        const removed = i
          ? this.removeLabel(i, name, login(c))
          : labels.splice(
              labels.findIndex((x) => x.toLowerCase() === name.toLowerCase()),
              labels.some((x) => x.toLowerCase() === name.toLowerCase()) ? 1 : 0,
            ).length > 0;
        if (!removed) throw h.httpError(404, { message: 'Label does not exist', documentation_url: c.op.docsUrl, status: '404' });
        return ok(labels.map((l) => h.labelShape(r.labels.get(l.toLowerCase())!, r)));
      },
      'issues/create-label': async (c) => {
        const { r } = h.repoFor(c, 'push');
        const b = c.body as { name: string; color?: string; description?: string };
        if (r.labels.has(b.name.toLowerCase())) throw h.semantic422(c, [{ resource: 'Label', code: 'already_exists', field: 'name' }]);
        if (b.color !== undefined && !/^[0-9a-f]{6}$/i.test(b.color)) throw h.semantic422(c, [{ resource: 'Label', code: 'invalid', field: 'color' }]);
        const id = h.id();
        const l: LabelRecord = {
          id,
          node_id: h.nodeId('LA_', id),
          name: b.name,
          color: (b.color ?? 'ededed').toLowerCase(),
          description: b.description ?? null,
          default: false,
        };
        r.labels.set(b.name.toLowerCase(), l);
        return created(h.labelShape(l, r));
      },
      'issues/get-label': async (c) => {
        const { r } = h.repoFor(c);
        const l = r.labels.get((c.params.name ?? '').toLowerCase());
        if (!l) throw this.notFound(c);
        return ok(h.labelShape(l, r));
      },
      'issues/list-labels-for-repo': async (c) => {
        const { r } = h.repoFor(c);
        const page = h.paginate(
          c,
          [...r.labels.values()].sort((a, b) => a.id - b.id),
        );
        return ok(
          page.items.map((l) => h.labelShape(l, r)),
          page.headers,
        );
      },
      'issues/create-comment': async (c) => {
        const { r, key } = h.repoFor(c);
        const i = this.issueOf(c, key);
        if (!i) throw this.notFound(c);
        const b = c.body as { body: string };
        return { status: 201, body: this.commentShape(r, i, this.comment(i, login(c), b.body)) };
      },
      'issues/list-comments': plainOnly((c, r, i) => {
        const since = c.query.since === undefined ? null : String(c.query.since);
        const page = h.paginate(
          c,
          i.comments.filter((cm) => since === null || cm.updated_at >= since),
        );
        return ok(
          page.items.map((cm) => this.commentShape(r, i, cm)),
          page.headers,
        );
      }),
      'issues/list-events-for-timeline': plainOnly(async (c, r, i) => {
        const page = h.paginate(c, i.events);
        const items = [];
        for (const e of page.items) items.push(await this.eventShape(r, i, e, c));
        return ok(items, page.headers);
      }),
    };
  }
}
