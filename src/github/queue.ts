/**
 * The issue queue on GitHub (source.issues): reads the ready-labelled issues and what the forge says about each
 * (its PRs from the timeline, its branch, its dependencies, its spec file), merges the queue's green PRs when the
 * merge policy says so, decides (src/core/queue.ts), then keeps the issues' labels and comments in step, each
 * change made only when the issue lacks it, so any number of runs leave one label and one comment.
 */
import { checkFence } from '../core/fence.js';
import type { IssueSourceSpec } from '../core/fleet-file.js';
import { newLaneRecord, type Manifest, type QueueBoard } from '../core/model.js';
import {
  decideQueue,
  itemBranchPrefix,
  itemLane,
  neutralTitle,
  parseIssue,
  type BoardRow,
  type DependencyFact,
  type IssueFacts,
  type ItemFacts,
  type QueueDecision,
  type QueueIssue,
  type QueueSettings,
  type StartItem,
} from '../core/queue.js';
import { resolveReview, type ResolvedFleet } from '../core/validate.js';
import type { LaneSpec } from '../core/model.js';
import { REVIEW_DEFAULTS } from '../core/fleet-file.js';
import { codeSpan } from '../core/markdown.js';
import { redact } from '../util/secrets.js';
import type { Forge, QueueOptions, QueueOutcome, QueueEvent } from '../ports.js';
import type { FleetOctokit } from './octokit.js';

/** The spec file a `Spec:` line points to is read up to this size; more is cut. */
const SPEC_MAX_BYTES = 64 * 1024;

interface TimelinePr {
  number: number;
  state: 'open' | 'merged' | 'closed';
  url: string;
  created_at: string;
  body: string;
}

interface Timeline {
  prs: TimelinePr[];
  /** Label name (lower case) → when it was last taken off. */
  unlabeled: Map<string, string>;
  reopened: boolean;
}

interface TimelineEvent {
  event?: string;
  created_at?: string;
  label?: { name?: string };
  source?: {
    issue?: {
      number: number;
      state: string;
      html_url: string;
      created_at: string;
      body?: string | null;
      repository_url?: string;
      pull_request?: { merged_at?: string | null };
    };
  };
}

interface PullFacts {
  number: number;
  head_repo: string | null;
  head_ref: string;
  head_sha: string;
  base_ref: string;
  base_sha: string;
  merged: boolean;
  closed_at: string | null;
  labels: string[];
  draft: boolean;
}

function statusOf(err: unknown): number {
  return (err as { status?: number }).status ?? 0;
}

function messageOf(err: unknown): string {
  return redact(String((err as Error).message ?? err))
    .split('\n')[0]!
    .slice(0, 300);
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const CLOSES = (n: number) => new RegExp(`\\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\\s*:?\\s+#${n}\\b`, 'i');

export class IssueQueue {
  private readonly owner: string;
  private readonly repo: string;
  private readonly q: IssueSourceSpec;
  private readonly timelines = new Map<number, Promise<Timeline>>();
  private readonly pulls = new Map<number, Promise<PullFacts>>();
  private readonly deps = new Map<number, Promise<DependencyFact>>();
  private readonly actions: string[] = [];
  private readonly events: QueueEvent[] = [];
  /** Issues this run closes (every part merged): they keep no in-flight label. */
  private readonly closing = new Set<number>();

  constructor(
    private readonly octokit: FleetOctokit,
    private readonly forge: Forge,
    private readonly fleet: ResolvedFleet,
    private readonly opts: QueueOptions,
  ) {
    this.q = fleet.file.source!.issues!;
    [this.owner, this.repo] = this.q.repo.split('/') as [string, string];
  }

  async run(): Promise<QueueOutcome> {
    const base = await this.defaultBranch();
    const settings = this.settings(base);
    let issues = await this.readyIssues();
    let facts = await this.allFacts(issues, base);
    let decision = decideQueue(facts, settings);
    if (!this.opts.readOnly && this.fleet.file.merge.policy === 'when-green') {
      const merged = await this.mergeGreen(decision, facts, base);
      // A merge closes its issue and may make others ready: read the queue again, as GitHub now has it.
      if (merged) {
        this.forget();
        issues = await this.readyIssues();
        facts = await this.allFacts(issues, base);
        decision = decideQueue(facts, settings);
      }
    }
    const rows = decision.board.map((r) => ({ ...r, waiting_since: waitingSince(r) }));
    const board = (): QueueBoard => ({
      repo: this.q.repo,
      label: this.q.label,
      read_at: this.opts.now().toISOString(),
      budget: settings.budget,
      rows,
      actions: [...this.actions],
      events: [...this.events],
      dry_run: this.opts.readOnly,
    });
    const lanes = decision.start.map((s) => this.lane(s, facts.find((f) => f.issue.number === s.issue)!));
    const commit = async () => {
      if (!this.opts.readOnly) await this.apply(decision, facts);
      this.transitions(decision, issues);
      return { board: board(), events: [...this.events] };
    };
    return { lanes, board: board(), events: [...this.events], problems: [], commit };
  }

  private async allFacts(issues: QueueIssue[], base: string): Promise<IssueFacts[]> {
    const out: IssueFacts[] = [];
    for (const i of issues) out.push(await this.facts(i, base));
    return out;
  }

  private forget(): void {
    this.timelines.clear();
    this.pulls.clear();
    this.deps.clear();
    this.branchesPromise = null;
  }

  private settings(base: string): QueueSettings {
    return {
      name: this.fleet.file.name,
      owns: this.fleet.file.owns,
      label: this.q.label,
      priority: this.q.priority,
      spec_patterns: this.q.spec.patterns,
      needs_person: this.q.labels.needs_person,
      budget: this.opts.budget,
      base,
    };
  }

  private async defaultBranch(): Promise<string> {
    const r = await this.octokit.request('GET /repos/{owner}/{repo}', { owner: this.owner, repo: this.repo });
    return r.data.default_branch;
  }

  /** Open issues with the ready label, oldest first; PRs carrying the label are not issues of the queue. */
  private async readyIssues(): Promise<QueueIssue[]> {
    const out: QueueIssue[] = [];
    const params = {
      owner: this.owner,
      repo: this.repo,
      state: 'open' as const,
      labels: this.q.label,
      sort: 'created' as const,
      direction: 'asc' as const,
      per_page: 100,
    };
    for await (const page of this.octokit.paginate.iterator('GET /repos/{owner}/{repo}/issues', params)) {
      for (const i of page.data) {
        if (i.pull_request) continue;
        out.push({
          number: i.number,
          title: i.title,
          body: i.body ?? '',
          labels: i.labels.map((l) => (typeof l === 'string' ? l : (l.name ?? ''))).filter(Boolean),
          created_at: i.created_at,
          html_url: i.html_url,
        });
      }
    }
    return out;
  }

  /**
   * What an issue's timeline says: the PRs of this repository that mention it (each cross-reference, the PR as it is
   * now) and when each label was last taken off.
   */
  private timeline(n: number): Promise<Timeline> {
    let t = this.timelines.get(n);
    if (!t) {
      t = (async () => {
        const prs = new Map<number, TimelinePr>();
        const unlabeled = new Map<string, string>();
        let reopened = false;
        const own = `/repos/${this.q.repo}`.toLowerCase();
        const params = { owner: this.owner, repo: this.repo, issue_number: n, per_page: 100 };
        for await (const page of this.octokit.paginate.iterator('GET /repos/{owner}/{repo}/issues/{issue_number}/timeline', params)) {
          for (const e of page.data as TimelineEvent[]) {
            if (e.event === 'unlabeled' && e.label?.name && e.created_at) unlabeled.set(e.label.name.toLowerCase(), e.created_at);
            if (e.event === 'reopened') reopened = true;
            const src = e.event === 'cross-referenced' ? e.source?.issue : undefined;
            if (!src?.pull_request) continue;
            // GitHub lists references from other repositories (and forks) too: only this repository's PRs count.
            if (!src.repository_url?.toLowerCase().endsWith(own)) continue;
            const state = src.pull_request.merged_at ? 'merged' : src.state === 'open' ? 'open' : 'closed';
            prs.set(src.number, { number: src.number, state, url: src.html_url, created_at: src.created_at, body: src.body ?? '' });
          }
        }
        return { prs: [...prs.values()], unlabeled, reopened };
      })();
      this.timelines.set(n, t);
    }
    return t;
  }

  /** A PR read afresh (cached for the run): its head repository and branch, base, labels and whether it merged. */
  private pull(n: number): Promise<PullFacts> {
    let p = this.pulls.get(n);
    if (!p) {
      p = this.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner: this.owner, repo: this.repo, pull_number: n }).then((r) => ({
        number: n,
        head_repo: r.data.head.repo?.full_name ?? null,
        head_ref: r.data.head.ref,
        head_sha: r.data.head.sha,
        base_ref: r.data.base.ref,
        base_sha: r.data.base.sha,
        merged: Boolean(r.data.merged_at),
        closed_at: r.data.closed_at,
        labels: r.data.labels.map((l) => l.name),
        draft: Boolean(r.data.draft),
      }));
      this.pulls.set(n, p);
    }
    return p;
  }

  private marker(lane: string): string {
    return `<!-- fleet:${this.fleet.file.name}:${lane} -->`;
  }

  /**
   * The newest of Fleet's PRs for a work item: its body carries the lane's marker, and (read from the PR itself) its
   * head is a branch of this repository under the item's prefix. A marker alone proves nothing: anyone can copy it
   * into a PR from a fork.
   */
  private async itemPr(issue: number, slot: string | null): Promise<(TimelinePr & { pull: PullFacts }) | null> {
    const prefix = itemBranchPrefix(this.fleet.file.name, issue, slot);
    const candidates = (await this.timeline(issue)).prs
      .filter((p) => p.body.includes(this.marker(itemLane(issue, slot))))
      .sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : b.number - a.number));
    for (const c of candidates) {
      const pull = await this.pull(c.number);
      if (pull.head_repo?.toLowerCase() === this.q.repo.toLowerCase() && pull.head_ref.startsWith(prefix)) return { ...c, pull };
    }
    return null;
  }

  private branchesPromise: Promise<string[]> | null = null;

  /** The queue's branches on the forge (`fleet/<name>/issue-…`), found again by each work item's prefix. */
  private branches(): Promise<string[]> {
    this.branchesPromise ??= (async () => {
      const prefix = `fleet/${this.fleet.file.name}/issue-`;
      const r = await this.octokit.request('GET /repos/{owner}/{repo}/git/matching-refs/{ref}', { owner: this.owner, repo: this.repo, ref: `heads/${prefix}` });
      return r.data.map((ref) => ref.ref.slice('refs/heads/'.length));
    })();
    return this.branchesPromise;
  }

  private async facts(issue: QueueIssue, base: string): Promise<IssueFacts> {
    const parsed = parseIssue(issue.body);
    const branches = await this.branches();
    const { unlabeled, reopened } = await this.timeline(issue.number);
    const items = new Map<string, ItemFacts>();
    for (const slot of parsed.plan?.map((s) => s.slot) ?? [null]) {
      const pr = await this.itemPr(issue.number, slot);
      const prefix = itemBranchPrefix(this.fleet.file.name, issue.number, slot);
      const branch = branches.filter((b) => b.startsWith(prefix)).sort()[0] ?? null;
      // A PR closed unmerged holds the item for a person; taking the needs-person label off after it closed lets it start again.
      const cleared = pr?.state === 'closed' && (unlabeled.get(this.q.labels.needs_person.toLowerCase()) ?? '') > (pr.pull.closed_at ?? '');
      const kept = cleared && branch === pr!.pull.head_ref ? null : branch;
      // A PR merged into another branch than the base did not land the work: a person looks at it.
      const state = pr?.state === 'merged' && pr.pull.base_ref !== base ? 'closed' : pr?.state;
      items.set(slot ?? '', { branch: kept, pr: pr ? { number: pr.number, state: state!, url: pr.url, created_at: pr.created_at } : null, cleared });
    }
    const deps = new Map<number, DependencyFact>();
    for (const n of parsed.depends) deps.set(n, await this.dependencyOnce(n, base));
    const spec_text = parsed.spec_file ? await this.specText(parsed.spec_file, base) : null;
    return { issue, parsed, spec_text, deps, items, reopened };
  }

  /**
   * Done only when closed and a merged PR of this repository closes it (a closing keyword, or Fleet's "Part of"
   * for a parallel plan whose issue Fleet closed): the issue's state alone is not enough, nor the closed event's
   * commit_id, which GitHub leaves empty for PR closes (PyGithub/PyGithub#1295).
   */
  /** Several issues naming one dependency read it once a run (forgotten after a merge, as the timelines are). */
  private dependencyOnce(n: number, base: string): Promise<DependencyFact> {
    let d = this.deps.get(n);
    if (!d) {
      d = this.dependency(n, base);
      this.deps.set(n, d);
    }
    return d;
  }

  private async dependency(n: number, base: string): Promise<DependencyFact> {
    let issue: { state: string; state_reason?: string | null; pull_request?: unknown; closed_at?: string | null };
    try {
      issue = (await this.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', { owner: this.owner, repo: this.repo, issue_number: n })).data;
    } catch (err) {
      if (statusOf(err) === 404 || statusOf(err) === 410) return { done: false, why: `#${n} does not exist in ${this.q.repo}` };
      throw err;
    }
    if (issue.pull_request) return { done: false, why: `#${n} is a pull request, not an issue` };
    if (issue.state === 'open') return { done: false, why: `#${n} is open` };
    if (issue.state_reason && issue.state_reason !== 'completed') return { done: false, why: `#${n} was closed as ${issue.state_reason.replace('_', ' ')}` };
    for (const p of (await this.timeline(n)).prs) {
      if (p.state !== 'merged' || !(CLOSES(n).test(p.body) || p.body.includes(`Part of #${n} `))) continue;
      // Merged into the default branch, read from the PR itself: a PR merged elsewhere closes nothing.
      const pull = await this.pull(p.number);
      if (pull.merged && pull.base_ref === base) return { done: true, why: `closed by #${p.number}` };
    }
    return { done: false, why: `#${n} was closed without a merged PR that closes it` };
  }

  private async specText(file: string, base: string): Promise<string | 'missing'> {
    try {
      const r = await this.octokit.request('GET /repos/{owner}/{repo}/contents/{path}', {
        owner: this.owner,
        repo: this.repo,
        path: file.replace(/^\.?\//, ''),
        ref: base,
      });
      const data = r.data as { type?: string; content?: string; encoding?: string };
      if (data.type !== 'file' || data.content === undefined) return 'missing';
      return Buffer.from(data.content, 'base64').subarray(0, SPEC_MAX_BYTES).toString('utf8');
    } catch (err) {
      if (statusOf(err) === 404) return 'missing';
      throw err;
    }
  }

  /**
   * Merges the queue's open PRs that are green, under the fleet's merge method. Only issues the decision has not
   * held: a gate, the needs-person label or a closed PR of the issue stops its merges too. Each PR only at a head
   * Fleet made (its commit carries the lane's trailer, on the item's branch of this repository), whose files keep to
   * the lane's fence, and not while it carries the review hand-off or needs-person label. Returns how many merged.
   */
  private async mergeGreen(d: QueueDecision, facts: IssueFacts[], base: string): Promise<number> {
    let merged = 0;
    for (const row of d.board) {
      if (row.state !== 'IN_FLIGHT' && row.state !== 'READY') continue;
      const f = facts.find((x) => x.issue.number === row.issue)!;
      for (const item of row.items) {
        if (item.state !== 'open-pr') continue;
        const lane = itemLane(row.issue, item.slot);
        const owns = item.slot ? item.owns : this.fleet.file.owns;
        const result = await this.mergeOne(f.issue, lane, item.pr!.number, owns, base);
        this.actions.push(`#${row.issue} ${lane}: ${result.detail}`);
        if (result.status === 'merged') {
          merged++;
          this.events.push({ issue: row.issue, from: 'IN_FLIGHT', to: 'MERGED', detail: result.detail });
          // Its PR closed a whole issue: it leaves the queue, and with it Fleet's in-flight label.
          if (!item.slot) await this.removeLabel(row.issue, this.q.labels.in_flight);
        }
      }
    }
    return merged;
  }

  private async mergeOne(issue: QueueIssue, lane: string, number: number, owns: string[], base: string): Promise<{ status: string; detail: string }> {
    const pull = await this.pull(number);
    if (pull.base_ref !== base) return { status: 'blocked', detail: `PR #${number} targets ${pull.base_ref}, not ${base}: not merged` };
    const held = [this.fleet.file.review?.label ?? REVIEW_DEFAULTS.label, this.q.labels.needs_person].find((l) =>
      pull.labels.some((x) => x.toLowerCase() === l.toLowerCase()),
    );
    if (held) return { status: 'blocked', detail: `PR #${number} is labelled "${held}": a person merges it` };
    const head = pull.head_sha;
    const commit = (await this.octokit.request('GET /repos/{owner}/{repo}/git/commits/{commit_sha}', { owner: this.owner, repo: this.repo, commit_sha: head }))
      .data;
    if (
      !new RegExp(`^Fleet-Lane: ${lane.replace(/\./g, '\\.')}$`, 'm').test(commit.message) ||
      !new RegExp(`^Fleet-Id: ${escapeRe(this.fleet.file.name)}$`, 'm').test(commit.message)
    ) {
      return { status: 'blocked', detail: `PR #${number}'s head ${head.slice(0, 12)} is not a commit Fleet made for ${lane}: a person merges it` };
    }
    const spec = this.laneSpec(issue, lane, owns, pull.head_ref);
    // The fence against the base branch as it is now: what the merge would bring in.
    const baseNow = (await this.forge.branchHead(spec, base)) ?? pull.base_sha;
    const files = await this.forge.changedFiles(spec, baseNow, head);
    if (files === null) return { status: 'blocked', detail: `PR #${number}: the files it changes could not be read, so its fence could not be checked` };
    const fence = checkFence(files, spec.owns, spec.never);
    if (!fence.ok) return { status: 'blocked', detail: `PR #${number} is outside its fence (${fence.message}): a person merges it` };
    const record = {
      ...newLaneRecord({ repo: this.q.repo, lane, wave: null, branch: pull.head_ref, depends_on: [] }),
      commit: head,
      pr_number: number,
      base_branch: base,
    };
    try {
      return await this.forge.merge(spec, record, this.fleet.file.merge.method);
    } catch (err) {
      return { status: 'failed', detail: `PR #${number}: ${messageOf(err)}` };
    }
  }

  private laneSpec(
    issue: QueueIssue,
    lane: string,
    owns: string[],
    branch: string,
    spec: { path: string; text: string } | null = null,
    slot: string | null = null,
  ): LaneSpec {
    const ff = this.fleet.file;
    return {
      id: lane,
      repo: this.q.repo,
      repo_kind: 'github',
      title: slot ? `${neutralTitle(issue.title)} (#${issue.number}, slot ${slot})` : `${neutralTitle(issue.title)} (#${issue.number})`,
      directive: ff.directive,
      run: ff.run,
      checks: ff.checks,
      depends_on: [],
      owns,
      never: [...new Set(ff.never)],
      exclusive: false,
      branch,
      base: undefined,
      index: -1,
      review: resolveReview(ff.review, undefined, ff.agent !== undefined && ff.run === undefined),
      issue: { number: issue.number, slot, url: issue.html_url, title: issue.title, body: issue.body, spec },
    };
  }

  private lane(s: StartItem, f: IssueFacts): LaneSpec {
    const spec = f.parsed.spec_file && typeof f.spec_text === 'string' && f.spec_text !== 'missing' ? { path: f.parsed.spec_file, text: f.spec_text } : null;
    return this.laneSpec(f.issue, s.lane, s.slot ? s.owns : this.fleet.file.owns, s.branch, spec, s.slot);
  }

  // ---- keeping GitHub in step with the decision

  private async apply(d: QueueDecision, facts: IssueFacts[]): Promise<void> {
    const byNumber = new Map(facts.map((f) => [f.issue.number, f]));
    for (const n of d.close) this.closing.add(n);
    const wanted = new Set<string>();
    const plans = d.board.map((row) => ({ row, change: this.labelChange(row, byNumber.get(row.issue)!.issue) }));
    for (const { change } of plans) for (const l of change.add) wanted.add(l);
    await this.ensureLabels([...wanted]);
    for (const { row, change } of plans) {
      const issue = byNumber.get(row.issue)!.issue;
      for (const l of change.add) await this.addLabel(issue.number, l);
      for (const l of change.remove) await this.removeLabel(issue.number, l);
      if (row.state === 'NO_SPEC') await this.noSpec(issue, row.reason);
    }
    for (const n of d.close) await this.closeIssue(n, d.board.find((r) => r.issue === n)!);
  }

  /** The labels an issue should carry for its state: in-flight and blocked are Fleet's; needs-person is only ever added. */
  private labelChange(row: BoardRow, issue: QueueIssue): { add: string[]; remove: string[] } {
    const { in_flight, blocked, needs_person } = this.q.labels;
    const has = (l: string) => issue.labels.some((x) => x.toLowerCase() === l.toLowerCase());
    const want = new Set<string>();
    const handOff = row.state === 'BLOCKED_PERSON' && row.items.some((i) => i.state === 'closed-pr');
    // In flight: a lane started, or a PR of it open (a READY plan whose lead is open is in flight too).
    if (row.state === 'IN_FLIGHT' || row.started.length || row.items.some((i) => i.state === 'open-pr')) want.add(in_flight);
    if (row.state === 'BLOCKED_WORK' || (row.state === 'BLOCKED_PERSON' && !handOff && !has(needs_person))) want.add(blocked);
    if (handOff) want.add(needs_person);
    if (this.closing.has(row.issue)) want.delete(in_flight);
    const add = [...want].filter((l) => !has(l));
    const remove = [in_flight, blocked].filter((l) => !want.has(l) && has(l));
    return { add, remove };
  }

  private async ensureLabels(names: string[]): Promise<void> {
    const colors: Record<string, string> = { [this.q.labels.in_flight]: 'fbca04', [this.q.labels.blocked]: 'c5def5', [this.q.labels.needs_person]: 'd93f0b' };
    for (const name of names) {
      if (await ensureLabel(this.octokit, this.owner, this.repo, name, colors[name] ?? 'ededed')) this.actions.push(`created label "${name}"`);
    }
  }

  private async addLabel(issue: number, name: string): Promise<void> {
    await this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', {
      owner: this.owner,
      repo: this.repo,
      issue_number: issue,
      labels: [name],
    });
    this.actions.push(`#${issue}: labelled "${name}"`);
  }

  private async removeLabel(issue: number, name: string): Promise<void> {
    try {
      await this.octokit.request('DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}', {
        owner: this.owner,
        repo: this.repo,
        issue_number: issue,
        name,
      });
      this.actions.push(`#${issue}: label "${name}" removed`);
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  }

  /** One comment per NO_SPEC issue, ever: a hidden marker finds it on every later run. */
  private async noSpec(issue: QueueIssue, reason: string): Promise<void> {
    if (this.q.spec.comment) {
      const marker = `<!-- fleet:${this.fleet.file.name}:no-spec -->`;
      if (!(await this.hasComment(issue.number, marker))) {
        const body = [
          marker,
          `Fleet's issue queue (**${this.fleet.file.name}**) cannot start this issue: ${codeSpan(reason)}.`,
          '',
          'Add what done looks like (an "Acceptance criteria" or "Done when" section, a checklist, or steps to reproduce), or a `Spec: path/to/spec.md` line naming a file on the default branch. The next scheduled run picks it up.',
          ...(this.q.spec.unlabel ? ['', `The \`${this.q.label}\` label is taken off until then: put it back once the issue says what done is.`] : []),
        ].join('\n');
        await this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
          owner: this.owner,
          repo: this.repo,
          issue_number: issue.number,
          body,
        });
        this.actions.push(`#${issue.number}: commented what its spec lacks`);
        this.events.push({ issue: issue.number, from: null, to: 'NO_SPEC', detail: 'commented what its spec lacks' });
      }
    }
    if (this.q.spec.unlabel) await this.removeLabel(issue.number, this.q.label);
  }

  private async hasComment(issue: number, marker: string): Promise<boolean> {
    for await (const page of this.octokit.paginate.iterator('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner: this.owner,
      repo: this.repo,
      issue_number: issue,
      per_page: 100,
    })) {
      if (page.data.some((c) => (c.body ?? '').includes(marker))) return true;
    }
    return false;
  }

  /** Every slot of a parallel plan merged: the issue is done, and closed by Fleet with the PRs named. */
  private async closeIssue(n: number, row: BoardRow): Promise<void> {
    const prs = row.items.map((i) => `#${i.pr?.number}`).join(', ');
    const marker = `<!-- fleet:${this.fleet.file.name}:closed -->`;
    if (!(await this.hasComment(n, marker))) {
      await this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        owner: this.owner,
        repo: this.repo,
        issue_number: n,
        body: `${marker}\nEvery part of this issue has merged (${prs}): closed by Fleet's issue queue.`,
      });
    }
    await this.octokit.request('PATCH /repos/{owner}/{repo}/issues/{issue_number}', {
      owner: this.owner,
      repo: this.repo,
      issue_number: n,
      state: 'closed',
      state_reason: 'completed',
    });
    this.actions.push(`#${n}: closed, every part merged (${prs})`);
    this.events.push({ issue: n, from: 'IN_FLIGHT', to: 'CLOSED', detail: `every part merged (${prs})` });
  }

  /** An issue's state before this run, as far as the labels Fleet keeps tell it. */
  private transitions(d: QueueDecision, issues: QueueIssue[]): void {
    const { in_flight, blocked, needs_person } = this.q.labels;
    for (const row of d.board) {
      const labels = (issues.find((i) => i.number === row.issue)?.labels ?? []).map((l) => l.toLowerCase());
      const from = labels.includes(in_flight.toLowerCase())
        ? 'IN_FLIGHT'
        : labels.includes(needs_person.toLowerCase())
          ? 'BLOCKED_PERSON'
          : labels.includes(blocked.toLowerCase())
            ? 'BLOCKED'
            : null;
      const same = from === row.state || (from === 'BLOCKED' && row.state.startsWith('BLOCKED'));
      // An issue that waits unlabelled (READY without a slot, NO_SPEC already commented) has no earlier state to move from.
      const unlabelledWait = from === null && (row.state === 'READY' || row.state === 'NO_SPEC');
      if ((!same && !unlabelledWait) || row.started.length)
        this.events.push({ issue: row.issue, from, to: row.state, detail: row.started.length ? `started ${row.started.join(', ')}` : row.reason });
    }
  }
}

/** How long an issue has waited: since its oldest open PR, or since it was opened when nothing of it is open. */
function waitingSince(row: BoardRow): string {
  const open = row.items
    .filter((i) => i.pr?.state === 'open')
    .map((i) => i.pr!.created_at)
    .sort();
  return open[0] ?? row.created_at;
}

/** Reads and keeps the queue; a GitHub failure comes back as a problem naming the repository. */
export async function runIssueQueue(octokit: FleetOctokit, forge: Forge, fleet: ResolvedFleet, opts: QueueOptions): Promise<QueueOutcome> {
  const q = fleet.file.source!.issues!;
  try {
    const out = await new IssueQueue(octokit, forge, fleet, opts).run();
    return { ...out, commit: () => out.commit().catch((err: unknown) => Promise.reject(new Error(`source.issues ${q.repo}: ${messageOf(err)}`))) };
  } catch (err) {
    const s = statusOf(err);
    const hint =
      s === 404
        ? ' (no such repository, or the token cannot see it)'
        : s === 403
          ? ' (the token lacks issues: write or pull-requests: write, or is rate limited)'
          : '';
    return {
      lanes: [],
      board: {
        repo: q.repo,
        label: q.label,
        read_at: opts.now().toISOString(),
        budget: opts.budget,
        rows: [],
        actions: [],
        events: [],
        dry_run: opts.readOnly,
      },
      events: [],
      problems: [`source.issues ${q.repo}: ${messageOf(err)}${hint}`],
      commit: () => Promise.reject(new Error('the issue queue could not be read')),
    };
  }
}

/**
 * What a lane's end says about its issue: its work failed for a reason trying again will not change (the directive
 * or its checks failed, the fence or the budget stopped it, review or CI wants a person), or it changed nothing.
 * Such an issue goes to a person (needs-person) instead of being started again on every run; a lane stopped by
 * the infrastructure (a clone, a push race, a lost runner, a cancel) is simply tried again by the next run.
 */
const HAND_OFF: ReadonlySet<string> = new Set([
  'directive-failed',
  'directive-timeout',
  'check-failed',
  'fence-violation',
  'ci-failed',
  'code-review-needed',
  'budget-exceeded',
]);

export function handOffReason(lane: Manifest['lanes'][number]): string | null {
  if (lane.status === 'failed' && lane.error && HAND_OFF.has(lane.error.class)) return `${lane.error.class}: ${lane.error.message}`;
  if (lane.status === 'completed' && lane.phase === 'no-op') return 'the lane changed nothing';
  return null;
}

/**
 * After a run: a whole issue whose PR merged loses the in-flight label, and each queue lane that needs a person labels its issue needs-person and says why in one comment (one
 * per run and lane: a re-run of the report job finds its marker). A person removes the label to let the queue try
 * the issue again. Returns what it did, for the board.
 */
export async function settleQueue(octokit: FleetOctokit, fleet: ResolvedFleet, manifest: Manifest): Promise<string[]> {
  const q = fleet.file.source?.issues;
  if (!q || !manifest.queue || manifest.dry_run) return [];
  const [owner, repo] = q.repo.split('/') as [string, string];
  const actions: string[] = [];
  let labelReady = false;
  for (const lane of manifest.lanes) {
    const m = /^issue-(\d+)(\.)?/.exec(lane.lane);
    if (!m) continue;
    const issue_number = Number(m[1]);
    // A whole issue's PR that merged in the run closed the issue: it leaves the queue, and with it the in-flight label.
    if (lane.merge_status === 'merged' && !m[2]) {
      try {
        await octokit.request('DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}', { owner, repo, issue_number, name: q.labels.in_flight });
        actions.push(`#${issue_number}: merged; label "${q.labels.in_flight}" removed`);
      } catch (err) {
        if (statusOf(err) !== 404) actions.push(`#${issue_number}: could not remove "${q.labels.in_flight}": ${messageOf(err)}`);
      }
      continue;
    }
    const why = handOffReason(lane);
    if (!why) continue;
    try {
      if (!labelReady) {
        await ensureLabel(octokit, owner, repo, q.labels.needs_person, 'd93f0b');
        labelReady = true;
      }
      const current = (await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', { owner, repo, issue_number })).data;
      if (!current.labels.some((l) => (typeof l === 'string' ? l : l.name)?.toLowerCase() === q.labels.needs_person.toLowerCase())) {
        await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', { owner, repo, issue_number, labels: [q.labels.needs_person] });
      }
      const marker = `<!-- fleet:${fleet.file.name}:handoff:${manifest.fleet_id}:${lane.lane} -->`;
      let seen = false;
      for await (const page of octokit.paginate.iterator('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        owner,
        repo,
        issue_number,
        per_page: 100,
      })) {
        if (page.data.some((c) => (c.body ?? '').includes(marker))) seen = true;
      }
      if (!seen) {
        const body = [
          marker,
          `Fleet's issue queue (**${fleet.file.name}**, run \`${manifest.fleet_id}\`) could not finish lane \`${lane.lane}\`: ${codeSpan(redact(why).slice(0, 500))}.`,
          '',
          `The issue is labelled \`${q.labels.needs_person}\` so that the queue does not start it again on every run. Remove the label to let it try again (after changing the issue if that is what it needs).`,
        ].join('\n');
        await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', { owner, repo, issue_number, body });
      }
      actions.push(`#${issue_number} ${lane.lane}: handed to a person (${why.split(':')[0]})`);
    } catch (err) {
      actions.push(`#${issue_number} ${lane.lane}: could not hand the issue to a person: ${messageOf(err)}`);
    }
  }
  return actions;
}

/** Creates a label the repository lacks; true when this call created it. Another run making it in between is fine. */
async function ensureLabel(octokit: FleetOctokit, owner: string, repo: string, name: string, color: string): Promise<boolean> {
  try {
    await octokit.request('GET /repos/{owner}/{repo}/labels/{name}', { owner, repo, name });
    return false;
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
    try {
      await octokit.request('POST /repos/{owner}/{repo}/labels', { owner, repo, name, color, description: "Set by Fleet's issue queue" });
      return true;
    } catch (e) {
      if (statusOf(e) !== 422) throw e;
      return false;
    }
  }
}
