/**
 * The issue queue on GitHub (source.issues): reads the ready-labelled issues and what the forge says about each
 * (its PRs from the timeline, its branch, its dependencies, its spec file), merges the queue's green PRs when the
 * merge policy says so, decides (src/core/queue.ts), then keeps the issues' labels and comments in step, each
 * change made only when the issue lacks it, so any number of runs leave one label and one comment.
 */
import { checkFence } from '../core/fence.js';
import type { IssueSourceSpec } from '../core/fleet-file.js';
import { newLaneRecord, type QueueBoard } from '../core/model.js';
import {
  decideQueue,
  itemLane,
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
import { resolveReview, type LaneSpec, type ResolvedFleet } from '../core/validate.js';
import { redact } from '../local/git.js';
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

function statusOf(err: unknown): number {
  return (err as { status?: number }).status ?? 0;
}

function messageOf(err: unknown): string {
  return redact(String((err as Error).message ?? err)).split('\n')[0]!.slice(0, 300);
}

const CLOSES = (n: number) => new RegExp(`\\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\\s*:?\\s+#${n}\\b`, 'i');

export class IssueQueue {
  private readonly owner: string;
  private readonly repo: string;
  private readonly q: IssueSourceSpec;
  private readonly timelines = new Map<number, Promise<TimelinePr[]>>();
  private readonly actions: string[] = [];
  private readonly events: QueueEvent[] = [];

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
    let issues = await this.readyIssues();
    if (!this.opts.readOnly && this.fleet.file.merge.policy === 'when-green') {
      const merged = await this.mergeGreen(issues, base);
      // A merge closes its issue and may make others ready: read the queue again, as GitHub now has it.
      if (merged) {
        this.timelines.clear();
        issues = await this.readyIssues();
      }
    }
    const settings = this.settings(base);
    const facts = await Promise.all(issues.map((i) => this.facts(i, base)));
    const decision = decideQueue(facts, settings);
    if (!this.opts.readOnly) await this.apply(decision, facts);
    this.transitions(decision, issues);
    const rows = decision.board.map((r) => ({ ...r, waiting_since: waitingSince(r) }));
    const board: QueueBoard = { repo: this.q.repo, label: this.q.label, read_at: this.opts.now().toISOString(), budget: settings.budget, rows, actions: this.actions, events: this.events, dry_run: this.opts.readOnly };
    const lanes = decision.start.map((s) => this.lane(s, facts.find((f) => f.issue.number === s.issue)!));
    return { lanes, board, events: this.events, problems: [] };
  }

  private settings(base: string): QueueSettings {
    return {
      name: this.fleet.file.name,
      label: this.q.label,
      priority: this.q.priority,
      spec_patterns: this.q.spec.patterns,
      needs_person: this.q.labels.needs_person,
      budget: this.fleet.file.max_parallel,
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
    const params = { owner: this.owner, repo: this.repo, state: 'open' as const, labels: this.q.label, sort: 'created' as const, direction: 'asc' as const, per_page: 100 };
    for await (const page of this.octokit.paginate.iterator('GET /repos/{owner}/{repo}/issues', params)) {
      for (const i of page.data) {
        if (i.pull_request) continue;
        out.push({ number: i.number, title: i.title, body: i.body ?? '', labels: i.labels.map((l) => (typeof l === 'string' ? l : (l.name ?? ''))).filter(Boolean), created_at: i.created_at, html_url: i.html_url });
      }
    }
    return out;
  }

  /** The PRs that mention an issue, read from its timeline: each cross-reference from a PR, as the PR is now. */
  private timeline(n: number): Promise<TimelinePr[]> {
    let t = this.timelines.get(n);
    if (!t) {
      t = (async () => {
        const prs = new Map<number, TimelinePr>();
        const params = { owner: this.owner, repo: this.repo, issue_number: n, per_page: 100 };
        for await (const page of this.octokit.paginate.iterator('GET /repos/{owner}/{repo}/issues/{issue_number}/timeline', params)) {
          for (const e of page.data as Array<{ event?: string; source?: { issue?: { number: number; state: string; html_url: string; created_at: string; body?: string | null; pull_request?: { merged_at?: string | null }; repository?: { full_name?: string } } } }>) {
            const src = e.event === 'cross-referenced' ? e.source?.issue : undefined;
            if (!src?.pull_request) continue;
            // A PR of another repository never belongs to this queue (GitHub shows cross-repository references too).
            if (src.repository?.full_name && src.repository.full_name.toLowerCase() !== this.q.repo.toLowerCase()) continue;
            const state = src.pull_request.merged_at ? 'merged' : src.state === 'open' ? 'open' : 'closed';
            prs.set(src.number, { number: src.number, state, url: src.html_url, created_at: src.created_at, body: src.body ?? '' });
          }
        }
        return [...prs.values()];
      })();
      this.timelines.set(n, t);
    }
    return t;
  }

  private marker(lane: string): string {
    return `<!-- fleet:${this.fleet.file.name}:${lane} -->`;
  }

  /** The newest of Fleet's PRs for a work item (its body carries the lane's marker). */
  private async itemPr(issue: number, slot: string | null): Promise<TimelinePr | null> {
    const mine = (await this.timeline(issue)).filter((p) => p.body.includes(this.marker(itemLane(issue, slot))));
    return mine.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : b.number - a.number))[0] ?? null;
  }

  private branchesPromise: Promise<Map<string, string>> | null = null;

  /** The queue's branches on the forge, by lane (`fleet/<name>/issue-<n>[.<slot>]-<slug>`). */
  private branches(): Promise<Map<string, string>> {
    this.branchesPromise ??= (async () => {
      const prefix = `fleet/${this.fleet.file.name}/issue-`;
      const r = await this.octokit.request('GET /repos/{owner}/{repo}/git/matching-refs/{ref}', { owner: this.owner, repo: this.repo, ref: `heads/${prefix}` });
      const out = new Map<string, string>();
      for (const ref of r.data) {
        const branch = ref.ref.slice('refs/heads/'.length);
        const m = /^issue-(\d+(?:\.[a-z0-9-]+)?)-/.exec(branch.slice(prefix.length - 'issue-'.length));
        if (m) out.set(`issue-${m[1]}`, branch);
      }
      return out;
    })();
    return this.branchesPromise;
  }

  private async facts(issue: QueueIssue, base: string): Promise<IssueFacts> {
    const parsed = parseIssue(issue.body);
    const branches = await this.branches();
    const items = new Map<string, ItemFacts>();
    for (const slot of parsed.plan?.map((s) => s.slot) ?? [null]) {
      const pr = await this.itemPr(issue.number, slot);
      items.set(slot ?? '', { branch: branches.get(itemLane(issue.number, slot)) ?? null, pr: pr ? { number: pr.number, state: pr.state, url: pr.url, created_at: pr.created_at } : null });
    }
    const deps = new Map<number, DependencyFact>();
    for (const n of parsed.depends) deps.set(n, await this.dependency(n));
    const spec_text = parsed.spec_file ? await this.specText(parsed.spec_file, base) : null;
    return { issue, parsed, spec_text, deps, items };
  }

  /**
   * Done only when closed and a merged PR of this repository closes it (a closing keyword, or Fleet's "Part of"
   * for a parallel plan whose issue Fleet closed): the issue's state alone is not enough, nor the closed event's
   * commit_id, which GitHub leaves empty for PR closes (PyGithub/PyGithub#1295).
   */
  private async dependency(n: number): Promise<DependencyFact> {
    let issue: { state: string; state_reason?: string | null; pull_request?: unknown };
    try {
      issue = (await this.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', { owner: this.owner, repo: this.repo, issue_number: n })).data;
    } catch (err) {
      if (statusOf(err) === 404 || statusOf(err) === 410) return { done: false, why: `#${n} does not exist in ${this.q.repo}` };
      throw err;
    }
    if (issue.pull_request) return { done: false, why: `#${n} is a pull request, not an issue` };
    if (issue.state === 'open') return { done: false, why: `#${n} is open` };
    const merged = (await this.timeline(n)).filter((p) => p.state === 'merged' && (CLOSES(n).test(p.body) || p.body.includes(`Part of #${n} `)));
    if (merged.length) return { done: true, why: `closed by #${merged[0]!.number}` };
    return { done: false, why: `#${n} was closed${issue.state_reason ? ` (${issue.state_reason})` : ''} without a merged PR` };
  }

  private async specText(file: string, base: string): Promise<string | 'missing'> {
    try {
      const r = await this.octokit.request('GET /repos/{owner}/{repo}/contents/{path}', { owner: this.owner, repo: this.repo, path: file.replace(/^\.?\//, ''), ref: base });
      const data = r.data as { type?: string; content?: string; encoding?: string };
      if (data.type !== 'file' || data.content === undefined) return 'missing';
      return Buffer.from(data.content, 'base64').subarray(0, SPEC_MAX_BYTES).toString('utf8');
    } catch (err) {
      if (statusOf(err) === 404) return 'missing';
      throw err;
    }
  }

  /**
   * Merges the queue's open PRs that are green, under the fleet's merge method, each only at a head Fleet made
   * (its commit carries the lane's trailer) whose files keep to the lane's fence: someone else's push is never
   * merged silently. Returns how many merged.
   */
  private async mergeGreen(issues: QueueIssue[], base: string): Promise<number> {
    let merged = 0;
    for (const issue of issues) {
      const parsed = parseIssue(issue.body);
      for (const slot of parsed.plan ?? [null]) {
        const name = slot?.slot ?? null;
        const pr = await this.itemPr(issue.number, name);
        if (pr?.state !== 'open') continue;
        const lane = itemLane(issue.number, name);
        const result = await this.mergeOne(issue, lane, pr.number, slot?.touches ?? this.fleet.file.owns, base);
        this.actions.push(`#${issue.number} ${lane}: ${result.detail}`);
        this.events.push({ issue: issue.number, from: 'IN_FLIGHT', to: result.status === 'merged' ? 'MERGED' : 'IN_FLIGHT', detail: result.detail });
        if (result.status === 'merged') merged++;
      }
    }
    return merged;
  }

  private async mergeOne(issue: QueueIssue, lane: string, number: number, owns: string[], base: string): Promise<{ status: string; detail: string }> {
    const { owner, repo } = this;
    const pull = (await this.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: number })).data;
    if (pull.base.ref !== base) return { status: 'blocked', detail: `PR #${number} targets ${pull.base.ref}, not ${base}: not merged` };
    const head = pull.head.sha;
    const commit = (await this.octokit.request('GET /repos/{owner}/{repo}/git/commits/{commit_sha}', { owner, repo, commit_sha: head })).data;
    if (!new RegExp(`^Fleet-Lane: ${lane.replace(/\./g, '\\.')}$`, 'm').test(commit.message)) {
      return { status: 'blocked', detail: `PR #${number}'s head ${head.slice(0, 12)} is not a commit Fleet made for ${lane}: a person merges it` };
    }
    const spec = this.laneSpec(issue, lane, owns, pull.head.ref);
    const files = await this.forge.changedFiles(spec, pull.base.sha, head);
    if (files === null) return { status: 'blocked', detail: `PR #${number}: the files it changes could not be read, so its fence could not be checked` };
    const fence = checkFence(files, spec.owns, spec.never);
    if (!fence.ok) return { status: 'blocked', detail: `PR #${number} is outside its fence (${fence.message}): a person merges it` };
    const record = { ...newLaneRecord({ repo: this.q.repo, lane, wave: null, branch: pull.head.ref, depends_on: [] }), commit: head, pr_number: number, base_branch: base };
    try {
      return await this.forge.merge(spec, record, this.fleet.file.merge.method);
    } catch (err) {
      return { status: 'failed', detail: `PR #${number}: ${messageOf(err)}` };
    }
  }

  private laneSpec(issue: QueueIssue, lane: string, owns: string[], branch: string, spec: { path: string; text: string } | null = null, slot: string | null = null): LaneSpec {
    const ff = this.fleet.file;
    return {
      id: lane,
      repo: this.q.repo,
      repo_kind: 'github',
      title: slot ? `${issue.title} (#${issue.number}, slot ${slot})` : `${issue.title} (#${issue.number})`,
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
    if (row.state === 'IN_FLIGHT') want.add(in_flight);
    if (row.state === 'BLOCKED_WORK' || (row.state === 'BLOCKED_PERSON' && !has(needs_person))) want.add(blocked);
    if (row.state === 'BLOCKED_PERSON' && row.items.some((i) => i.state === 'closed-pr')) want.add(needs_person);
    const add = [...want].filter((l) => !has(l));
    const remove = [in_flight, blocked].filter((l) => !want.has(l) && has(l));
    return { add, remove };
  }

  private async ensureLabels(names: string[]): Promise<void> {
    const colors: Record<string, string> = { [this.q.labels.in_flight]: 'fbca04', [this.q.labels.blocked]: 'c5def5', [this.q.labels.needs_person]: 'd93f0b' };
    for (const name of names) {
      try {
        await this.octokit.request('GET /repos/{owner}/{repo}/labels/{name}', { owner: this.owner, repo: this.repo, name });
      } catch (err) {
        if (statusOf(err) !== 404) throw err;
        try {
          await this.octokit.request('POST /repos/{owner}/{repo}/labels', { owner: this.owner, repo: this.repo, name, color: colors[name] ?? 'ededed', description: 'Set by Fleet\'s issue queue' });
          this.actions.push(`created label "${name}"`);
        } catch (e) {
          // Another run made it in between: what was wanted is there.
          if (statusOf(e) !== 422) throw e;
        }
      }
    }
  }

  private async addLabel(issue: number, name: string): Promise<void> {
    await this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', { owner: this.owner, repo: this.repo, issue_number: issue, labels: [name] });
    this.actions.push(`#${issue}: labelled "${name}"`);
  }

  private async removeLabel(issue: number, name: string): Promise<void> {
    try {
      await this.octokit.request('DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}', { owner: this.owner, repo: this.repo, issue_number: issue, name });
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
          `Fleet's issue queue (**${this.fleet.file.name}**) cannot start this issue: ${reason}.`,
          '',
          'Add what done looks like (an "Acceptance criteria" or "Done when" section, a checklist, or steps to reproduce), or a `Spec: path/to/spec.md` line naming a file on the default branch. The next scheduled run picks it up.',
          ...(this.q.spec.unlabel ? ['', `The \`${this.q.label}\` label is taken off until then: put it back once the issue says what done is.`] : []),
        ].join('\n');
        await this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', { owner: this.owner, repo: this.repo, issue_number: issue.number, body });
        this.actions.push(`#${issue.number}: commented what its spec lacks`);
        this.events.push({ issue: issue.number, from: null, to: 'NO_SPEC', detail: 'commented what its spec lacks' });
      }
    }
    if (this.q.spec.unlabel) await this.removeLabel(issue.number, this.q.label);
  }

  private async hasComment(issue: number, marker: string): Promise<boolean> {
    for await (const page of this.octokit.paginate.iterator('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', { owner: this.owner, repo: this.repo, issue_number: issue, per_page: 100 })) {
      if (page.data.some((c) => (c.body ?? '').includes(marker))) return true;
    }
    return false;
  }

  /** Every slot of a parallel plan merged: the issue is done, and closed by Fleet with the PRs named. */
  private async closeIssue(n: number, row: BoardRow): Promise<void> {
    const prs = row.items.map((i) => `#${i.pr?.number}`).join(', ');
    const marker = `<!-- fleet:${this.fleet.file.name}:closed -->`;
    if (!(await this.hasComment(n, marker))) {
      await this.octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', { owner: this.owner, repo: this.repo, issue_number: n, body: `${marker}\nEvery part of this issue has merged (${prs}): closed by Fleet's issue queue.` });
    }
    await this.octokit.request('PATCH /repos/{owner}/{repo}/issues/{issue_number}', { owner: this.owner, repo: this.repo, issue_number: n, state: 'closed', state_reason: 'completed' });
    this.actions.push(`#${n}: closed, every part merged (${prs})`);
    this.events.push({ issue: n, from: 'IN_FLIGHT', to: 'CLOSED', detail: `every part merged (${prs})` });
  }

  /** An issue's state before this run, as far as the labels Fleet keeps tell it. */
  private transitions(d: QueueDecision, issues: QueueIssue[]): void {
    const { in_flight, blocked, needs_person } = this.q.labels;
    for (const row of d.board) {
      const labels = (issues.find((i) => i.number === row.issue)?.labels ?? []).map((l) => l.toLowerCase());
      const from = labels.includes(in_flight.toLowerCase()) ? 'IN_FLIGHT' : labels.includes(needs_person.toLowerCase()) ? 'BLOCKED_PERSON' : labels.includes(blocked.toLowerCase()) ? 'BLOCKED' : null;
      const same = from === row.state || (from === 'BLOCKED' && row.state.startsWith('BLOCKED'));
      if (!same || row.started.length) this.events.push({ issue: row.issue, from, to: row.state, detail: row.started.length ? `started ${row.started.join(', ')}` : row.reason });
    }
  }
}

/** How long an issue has waited: since its oldest open PR, or since it was opened when nothing of it is open. */
function waitingSince(row: BoardRow): string {
  const open = row.items.filter((i) => i.pr?.state === 'open').map((i) => i.pr!.created_at).sort();
  return open[0] ?? row.created_at;
}

/** Reads and keeps the queue; a GitHub failure comes back as a problem naming the repository. */
export async function runIssueQueue(octokit: FleetOctokit, forge: Forge, fleet: ResolvedFleet, opts: QueueOptions): Promise<QueueOutcome> {
  const q = fleet.file.source!.issues!;
  try {
    return await new IssueQueue(octokit, forge, fleet, opts).run();
  } catch (err) {
    const s = statusOf(err);
    const hint = s === 404 ? ' (no such repository, or the token cannot see it)' : s === 403 ? ' (the token lacks issues: write or pull-requests: write, or is rate limited)' : '';
    return {
      lanes: [],
      board: { repo: q.repo, label: q.label, read_at: opts.now().toISOString(), budget: fleet.file.max_parallel, rows: [], actions: [], events: [], dry_run: opts.readOnly },
      events: [],
      problems: [`source.issues ${q.repo}: ${messageOf(err)}${hint}`],
    };
  }
}
