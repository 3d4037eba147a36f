/**
 * One lane, start to end: clone, run the directive (with retries), fence,
 * checks, commit, push with lease, publish, merge when the policy says so, and
 * write the lane result. The same code runs in the local runner and in a
 * GitHub matrix job; only the ports differ.
 */
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FleetFile } from '../core/fleet-file.js';
import { checkFence } from '../core/fence.js';
import { conflictBodyLines, conflictRefusal, describeCommits, MAX_BRANCH_COMMITS, othersCommits } from '../core/branch-conflict.js';
import { matchesAny } from '../core/glob.js';
import { SCHEMA_VERSION, type AgentUsage, type Attempt, type ErrorClass, type LaneRecord, type LaneResult, type LaneReview } from '../core/model.js';
import { addUsage, budgetStop, hasUsage, NO_USAGE, remaining, usageFromOutput, type LaneCaps } from '../core/spend.js';
import { routePersonas, type Routing } from '../core/routing.js';
import type { LaneSpec } from '../core/model.js';
import { issueLink, issueMarkdown } from '../core/queue.js';
import { agentAnswer, agentCommand, renderWorkerPrompt, type AgentInvocation } from '../core/agent.js';
import { agentStateEnv } from './agent-state.js';
import { answerDiscoveries, buildRelay, MAX_DISCOVERIES_BYTES, parseDiscoveries, renderRelay, type DiscoveryEntry } from '../core/relay.js';
import { codeSpan, escapeCell, pathSpan } from '../core/markdown.js';
import { reviewBodyLines } from '../core/report.js';
import type { CloneResult, Clock, Executor, ExecResult, Forge, Workspace } from '../ports.js';
import { reviewChange, scrub } from './review.js';
import { diffLines } from '../core/strategies.js';
import { readUntrustedText, writeFileAtomic, writeJsonAtomic } from '../util/fs.js';
import { claudeOutcome, codexOutcome } from '../core/agent-outcome.js';
import type { Semaphore } from '../util/pool.js';

export interface LaneContext {
  fleet_id: string;
  file: FleetFile;
  forge: Forge;
  workspace: Workspace;
  exec: Executor;
  clock: Clock;
  /** The fleet workspace folder; every path a lane records is relative to it. */
  root: string;
  dryRun: boolean;
  /** The environment handed to directives and checks (already stripped of Fleet's own secrets). */
  env: Record<string, string>;
  /** Called on every transition, for the events log and the live view. */
  onUpdate(record: LaneRecord, detail: string): void;
  /** Aborted when the run is interrupted: the lane stops at its next step (its running command is killed by the runner). */
  signal?: AbortSignal;
  /**
   * The global concurrency budget: held while a directive and its checks run.
   * Cloning, committing and pushing happen outside it, so they overlap with
   * other lanes' directives instead of queueing behind them.
   */
  slots?: Semaphore;
  /** Limits git's own heavy work (clone, push) to what the machine's cores can do at once. */
  gitSlots?: Semaphore;
  /**
   * Added to the environment of an agent directive only (not a lane's own `run:`, never the checks): the agent's
   * credential (ANTHROPIC_API_KEY …) and the PATH of the agent CLI a leg installed.
   */
  agentEnv?: Record<string, string>;
  /**
   * Text no change may hold: the agent credentials the directive was given, in every encoded form the caller
   * expands them to. Such a change is neither written to the lane's patch nor pushed.
   */
  neverInChange?: readonly string[];
  /**
   * What lanes of earlier waves left for later ones (the discovery relay): read when a lane starts, so a lane of wave
   * k sees every lane of waves before k. Locally the runner's records; on Actions the relay files of earlier waves.
   */
  relayEntries?: () => readonly DiscoveryEntry[];
  /**
   * What the whole fleet spent so far, shared by its lanes (and on Actions counted from earlier lanes' artifacts):
   * with a `budget.fleet.cost_usd` ceiling, no lane, attempt or lens starts once it is reached.
   */
  fleetSpend?: { spent: number };
}

export function laneDir(root: string, lane: string): string {
  return join(root, 'lanes', lane);
}

export function resultPath(root: string, lane: string): string {
  return join(laneDir(root, lane), 'result.json');
}

/** Where a lane leaves its discoveries for later lanes (FLEET_DISCOVERIES), outside its working copy so nothing commits them. */
export function discoveriesPath(root: string, lane: string): string {
  return join(laneDir(root, lane), 'discoveries.txt');
}

/** Where an issue-queue lane finds the issue it works on (FLEET_ISSUE_FILE): title, body and spec file, as markdown. */
export function issuePath(root: string, lane: string): string {
  return join(laneDir(root, lane), 'issue.md');
}

/** Where a lane finds the relay of earlier waves (FLEET_RELAY). */
export function relayPath(root: string, lane: string): string {
  return join(laneDir(root, lane), 'relay.md');
}

export class LaneFailure extends Error {
  constructor(
    readonly errorClass: ErrorClass,
    message: string,
    /** The lane never began its work: it ends skipped, not failed. */
    readonly notStarted = false,
  ) {
    super(message);
  }
}

function firstLines(text: string, max = 600): string {
  const t = text.trim();
  return t.length > max ? `…${t.slice(-max)}` : t;
}

/** The one line of a failing command's output a person wants first: the last that names an error, else the last. */
export function gist(tail: string): string {
  const lines = tail
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^node\.js v\d/i.test(l) && !/^at\s/.test(l));
  const line = [...lines].reverse().find((l) => /\b(error|fatal|failed|exception|denied|not found)\b/i.test(l)) ?? lines.at(-1) ?? '';
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

export async function runLane(ctx: LaneContext, lane: LaneSpec, start: LaneRecord): Promise<LaneRecord> {
  return new LaneRun(ctx, lane, start).run();
}

/** What one try at a change (a directive attempt, a review fix round) came to. */
export type Tried =
  | { ok: true; changed: string[] }
  /** `final`: trying again cannot help (a shell command fenced out does the same thing every time). */
  | { ok: false; failure: LaneFailure; feedback: string; final: boolean };

/** How a try's steps are recorded: the directive attempts keep an `Attempt` each; a review fix round keeps its own record. */
type NoteStep = (r: ExecResult | null, step: Attempt['failed_step']) => void;

/**
 * One lane's run, phase by phase: clone, produce a change (attempts), review it, commit, push, publish, CI, merge.
 * Each phase is a method; the record is replaced on every update, so read it as `this.rec`.
 */
export class LaneRun {
  rec: LaneRecord;
  readonly t0: number;
  readonly dir: string;
  readonly repoDir: string;
  cloned!: CloneResult;
  routing: Routing | null = null;
  /** The directive attempt running or last run (1-based). */
  n = 0;
  feedback: string | undefined;
  directiveMs = 0;
  checksMs = 0;
  /**
   * The commit a lane without checks made as soon as its directive ended (see `stageForFence`), kept for the push;
   * null when the commit is still to be made (a lane with checks, or a reviewed change: from what is staged).
   */
  made: { commit: string; committed: { files: string[]; patch: string } } | null = null;
  /** The relay of earlier waves as this lane received it (markdown), or empty. */
  relayText = '';
  /** What the lane's agent runs spent so far. */
  spent: AgentUsage = { ...NO_USAGE };
  /** The caps handed to the agent run going on (attempt or fix round). */
  given: LaneCaps = {};

  constructor(
    readonly ctx: LaneContext,
    readonly lane: LaneSpec,
    start: LaneRecord,
  ) {
    this.t0 = ctx.clock.now().getTime();
    this.dir = laneDir(ctx.root, lane.id);
    this.repoDir = join(this.dir, 'repo');
    this.rec = { ...start, status: 'running', started_at: ctx.clock.now().toISOString(), attempts: [], error: null, retry_count: 0 };
    if (lane.strategy) this.rec.strategy = { group: lane.strategy.group, label: lane.strategy.label, picked: null, reason: null, diff_lines: null };
  }

  update(patch: Partial<LaneRecord>, detail: string): void {
    this.rec = { ...this.rec, ...patch, updated_at: this.ctx.clock.now().toISOString() };
    this.ctx.onUpdate(this.rec, detail);
  }

  /** A path as the lane records it: relative to the fleet workspace. */
  rel(p: string): string {
    return p.slice(this.ctx.root.length + 1);
  }

  /** The commit the lane's change is made on: the base, or the commits of others it kept on top (branch_conflict: rebase). */
  get base(): string {
    return this.rec.branch_conflict?.start ?? this.cloned.base_commit;
  }

  async run(): Promise<LaneRecord> {
    const { ctx, lane } = this;
    try {
      this.checkIsolation();
      await this.clone();
      await this.receiveRelay();
      if (this.lane.issue) await writeFileAtomic(issuePath(this.ctx.root, this.lane.id), issueMarkdown(this.lane.issue));
      if (ctx.file.agent) {
        this.routing = await route(ctx, lane, this.repoDir, this.dir);
        this.rec.routing = this.routing.selected;
      }
      let previous = this.cloned.remote_branch_commit;
      for (;;) {
        let changed = await this.produceInBudget();
        this.rec.changed_files = changed;
        if (!changed.length) {
          this.update(
            { status: 'completed', phase: 'no-op', ended_at: ctx.clock.now().toISOString(), ci_conclusion: null, merge_status: null },
            'nothing changed',
          );
          return await this.finish();
        }
        let review: LaneReview | null = null;
        if (lane.review && runsAgent(ctx, lane)) {
          const reviewed = await reviewChange(this, lane.review);
          review = reviewed.review;
          this.rec.review = review;
          changed = reviewed.changed;
          this.rec.changed_files = changed;
          if (!changed.length) {
            this.update(
              { status: 'completed', phase: 'no-op', ended_at: ctx.clock.now().toISOString(), ci_conclusion: null, merge_status: null },
              'nothing changed after review',
            );
            return await this.finish();
          }
        }

        stopIfCancelled(ctx);
        const { commit, upToDate } = await this.commitChange(changed, previous);
        if (ctx.dryRun) {
          // Locally the lane's own checks stand for CI (readCi): they ran and passed in a dry run too.
          const ci_conclusion = ctx.forge.kind === 'local' ? (lane.checks.length ? 'success' : 'none') : this.rec.ci_conclusion;
          this.update(
            { status: 'completed', phase: 'dry-run', ci_conclusion, ended_at: ctx.clock.now().toISOString() },
            `patch kept in ${this.rec.evidence.patch ?? 'the lane folder'}, nothing pushed`,
          );
          return await this.finish();
        }
        if (!upToDate) {
          await this.push(commit, previous);
          previous = commit;
        } else {
          this.rec.timings = { ...this.rec.timings, push_ms: 0 };
        }
        this.update({ phase: 'pushed' }, upToDate ? `${lane.branch} already up to date` : `${lane.branch} at ${commit.slice(0, 12)}`);
        // A strategy opens no PR of its own: once every strategy of its target has finished, only the pick does.
        // Integrated lanes open none either: one PR carries the whole fleet at the end (integrate:).
        if (!lane.strategy && !ctx.file.integrate) await this.publish(review);
        if (review?.verdict === 'needs-person') return await this.handOverReview(review);

        const ci = await this.readCi(commit);
        if (ci === 'done') break;
        if (ci === 'handed-over') return await this.finish();
      }
      if (!lane.strategy && !ctx.file.integrate)
        await applyMergePolicy(
          ctx,
          lane,
          () => this.rec,
          (patch, detail) => this.update(patch, detail),
        );
      // The phase says where the lane ended (pushed, pr-open, merged); the status says that it ended: each said once.
      this.update({ status: 'completed', ended_at: ctx.clock.now().toISOString() }, 'completed');
      return await this.finish();
    } catch (err) {
      const failure =
        err instanceof LaneFailure && err.errorClass === 'cancelled'
          ? err
          : ctx.signal?.aborted
            ? interrupted(this.rec, err)
            : err instanceof LaneFailure
              ? err
              : new LaneFailure('lane-crashed', `Fleet itself failed in this lane: ${(err as Error).message ?? String(err)}`);
      const ended = failure.notStarted ? ('skipped' as const) : ('failed' as const);
      this.update(
        { status: ended, phase: ended, ended_at: ctx.clock.now().toISOString(), error: { class: failure.errorClass, message: failure.message } },
        failure.errorClass,
      );
      return await this.finish();
    }
  }

  private checkIsolation(): void {
    const isolation = this.ctx.exec.isolation(this.ctx.file.isolation);
    this.rec.isolation = isolation;
    if (this.ctx.file.isolation === 'required' && isolation.kind === 'none') {
      throw new LaneFailure('invalid-input', `the fleet file says isolation: required, but directives cannot be isolated on this machine: ${isolation.detail}`);
    }
  }

  private async clone(): Promise<void> {
    const { lane } = this;
    await rm(this.repoDir, { recursive: true, force: true });
    await mkdir(this.dir, { recursive: true });
    this.update({ phase: 'cloning' }, lane.base ? `${lane.repo} at ${lane.base}` : lane.repo);
    const tClone = Date.now();
    const { cloned, headRepo } = await cloneTarget(this.ctx, lane, this.repoDir);
    this.cloned = cloned;
    if (headRepo) this.rec.head_repo = headRepo;
    this.rec.timings = { ...this.rec.timings, clone_ms: Date.now() - tClone };
    this.rec.base_branch = this.cloned.base_branch;
    this.rec.base_commit = this.cloned.base_commit;
    if (this.cloned.base_branch === lane.branch) {
      // The planner refuses this; a lane run on its own (a matrix job) must not push onto its base either.
      throw new LaneFailure('invalid-input', `the lane branch ${lane.branch} is the base branch: Fleet never commits straight onto a base branch`);
    }
    await this.meetOthersCommits();
  }

  /**
   * Commits others pushed to the lane branch (src/core/branch-conflict.ts), met before anything runs: the lane is
   * refused (`fail`), or they are dropped by the push (`replace`), or replayed onto the base for the directive to
   * work on top of (`rebase`). They are replayed here, before any directive could touch the working copy's objects.
   */
  private async meetOthersCommits(): Promise<void> {
    const { ctx, lane, repoDir } = this;
    const remote = this.cloned.remote_branch_commit;
    if (!remote || remote === this.cloned.base_commit) return;
    const listed = await ctx.workspace.branchCommits(repoDir, this.cloned.base_commit, remote, MAX_BRANCH_COMMITS + 1);
    const truncated = listed.length > MAX_BRANCH_COMMITS;
    const others = othersCommits(truncated ? listed.slice(1) : listed, ctx.file.name, lane.id);
    if (!others.length) return;
    const strategy = ctx.file.branch_conflict;
    const commits = others.map((c) => c.commit);
    if (strategy === 'fail') throw new LaneFailure('branch-conflict', conflictRefusal(lane.branch, others, truncated));
    if (strategy === 'replace') {
      this.rec.branch_conflict = { strategy, commits, start: null };
      this.addNote(`branch_conflict: replace: the push replaces ${describeCommits(others)} on ${lane.branch}`);
      return;
    }
    const onto = this.cloned.base_branch;
    if (truncated) {
      throw new LaneFailure(
        'branch-conflict',
        `${lane.branch} holds more than ${MAX_BRANCH_COMMITS} commits ${onto} lacks: too many to replay; rebase the branch by hand, or use branch_conflict: replace`,
      );
    }
    const replayed = await ctx.workspace.replay(repoDir, others);
    if (!replayed.ok) {
      const paths = replayed.conflicts.slice(0, 5).join(', ') + (replayed.conflicts.length > 5 ? ', …' : '');
      throw new LaneFailure(
        'branch-conflict',
        `replaying ${replayed.commit.slice(0, 12)} (pushed to ${lane.branch} by someone else) onto ${onto} conflicts in ${paths}: nothing ran and nothing was pushed. Rebase the branch onto ${onto} by hand, or use branch_conflict: replace`,
      );
    }
    this.rec.branch_conflict = { strategy, commits, start: replayed.head };
    const moved = replayed.head !== commits.at(-1);
    this.addNote(`branch_conflict: rebase: kept ${describeCommits(others)}${moved ? `, replayed onto ${onto}` : ''}; the lane's change goes on top`);
  }

  private addNote(note: string): void {
    this.rec.evidence = { ...this.rec.evidence, notes: [...this.rec.evidence.notes, note] };
  }

  /** The attempts, inside one slot of the concurrency budget. */
  private async produceInBudget(): Promise<string[]> {
    const { ctx } = this;
    const tWait = Date.now();
    if (ctx.slots && ctx.slots.active >= ctx.slots.size) this.update({ phase: 'waiting' }, 'for a slot in the concurrency budget');
    const release = ctx.slots ? await ctx.slots.acquire() : () => undefined;
    this.rec.timings = { ...this.rec.timings, wait_ms: (this.rec.timings.wait_ms ?? 0) + Date.now() - tWait };
    try {
      return await this.produce();
    } finally {
      release();
      this.rec.timings = { ...this.rec.timings, directive_ms: this.directiveMs, checks_ms: this.checksMs };
    }
  }

  /**
   * Runs attempts until one produces a change that passes the fence and the checks, or the retry budget is spent.
   * Every attempt starts from the base.
   */
  private async produce(): Promise<string[]> {
    const { ctx, lane } = this;
    const maxAttempts = ctx.file.max_retries + 1;
    let lastFailure: LaneFailure | undefined;
    while (this.n < maxAttempts) {
      stopIfCancelled(ctx);
      const stop = runsAgent(ctx, lane) ? this.budgetStop() : null;
      // Before its first agent run the lane has done nothing that counts: it did not start, as a lane the runner held back.
      if (stop && this.n === 0) throw new LaneFailure('budget-exceeded', `not started: ${stop}`, true);
      if (stop) throw new LaneFailure('budget-exceeded', `${stop}: attempt ${this.n + 1} did not start`);
      const n = ++this.n;
      if (n > 1) {
        await ctx.workspace.reset(this.repoDir, this.base);
        this.update({ retry_count: n - 1 }, `retry ${n - 1} of ${ctx.file.max_retries}`);
      }
      const log = join(this.dir, `attempt-${n}.log`);
      this.rec.log = this.rel(log);
      const attemptStart = ctx.clock.now().toISOString();
      const tAttempt = Date.now();
      const note: NoteStep = (r, step) =>
        this.rec.attempts.push({
          n,
          started_at: attemptStart,
          duration_ms: Date.now() - tAttempt,
          exit_code: r?.exitCode ?? null,
          signal: r?.signal ?? null,
          timed_out: r?.timedOut ?? false,
          failed_step: step,
          log: this.rel(log),
        });

      this.update({ phase: 'running' }, `attempt ${n} of ${maxAttempts}`);
      this.given = this.caps();
      const { command, env: agentEnv } = await directiveCommand(ctx, lane, this.routing, {
        file: join(this.dir, `prompt-${n}.md`),
        feedback: this.feedback,
        relay: this.relayText,
        caps: this.given,
      });
      const env = { ...laneEnv(ctx, lane, n, this.feedback, this.cloned.base_branch), ...agentEnv };
      const tried = await this.tryChange(command, env, log, note, `attempt ${n}`);
      if (tried.ok) return tried.changed;
      lastFailure = tried.failure;
      this.feedback = tried.feedback;
      if (tried.final) break;
    }
    throw lastFailure ?? new LaneFailure('directive-failed', 'no attempt left');
  }

  /**
   * Runs `command` in the working copy as it stands, then the fence and the checks (and the fence again on what the
   * checks left): the files the change touches, or why it does not count. Throws only when the lane cannot go on (the
   * run interrupted, the working copy broken).
   */
  async tryChange(command: string, env: Record<string, string>, log: string, note: NoteStep, what: string): Promise<Tried> {
    const { ctx, lane, repoDir } = this;
    const timeoutMs = ctx.file.timeout_minutes * 60_000;
    // Isolated, the directive sees of the workspace only this lane's folder.
    const confine = { workspace: ctx.root, lane: this.dir };
    const tDirective = Date.now();
    const r = await ctx.exec.run(command, {
      cwd: repoDir,
      env: runsAgent(ctx, lane) ? { ...env, ...(await agentRunEnv(ctx, this.dir)) } : env,
      timeoutMs,
      logFile: log,
      isolation: ctx.file.isolation,
      confine,
    });
    this.directiveMs += Date.now() - tDirective;
    // Read before the checks write to the same log: what the agent CLI reported, not what a check printed.
    const said = runsAgent(ctx, lane) ? await readUntrustedText(log, 256 * 1024, { tail: true }) : '';
    if (runsAgent(ctx, lane)) this.chargeRun(usageFromOutput(ctx.file.agent!.preset, said), this.given);
    if (ctx.signal?.aborted) {
      note(r, 'directive');
      stopIfCancelled(ctx);
    }
    // A directive that destroyed the repository cannot be retried in place: nothing it did can be trusted.
    if (!(await this.intact())) {
      note(r, 'directive');
      throw new LaneFailure('workspace-corrupted', "the directive removed or broke the working copy's .git; nothing was pushed");
    }
    // Claude Code exits 0 or 1 whatever happened, Codex 1 for any failure: what they printed says why.
    const preset = runsAgent(ctx, lane) && !r.timedOut ? ctx.file.agent!.preset : null;
    const failed = preset === 'claude' ? claudeOutcome(said) : preset === 'codex' ? codexOutcome(said) : null;
    if (failed) {
      note(r, 'directive');
      return { ok: false, failure: new LaneFailure(failed.class, failed.message), feedback: `The last run failed: ${failed.message}.`, final: failed.final };
    }
    if (r.timedOut || r.exitCode !== 0) {
      note(r, 'directive');
      const why = r.timedOut
        ? `the directive ran past its timeout of ${ctx.file.timeout_minutes} min and was killed`
        : `the directive exited with ${r.exitCode ?? r.signal}`;
      return {
        ok: false,
        failure: new LaneFailure(r.timedOut ? 'directive-timeout' : 'directive-failed', `${why}${gist(r.tail) ? `: ${gist(r.tail)}` : ''}`),
        feedback: `${why}. Output:\n${firstLines(r.tail, 2000)}`,
        final: false,
      };
    }

    await ctx.workspace.settle(repoDir, lane.branch, this.base);
    let changed = await this.stageForFence();
    const fence = checkFence(changed, lane.owns, lane.never);
    if (!fence.ok) {
      note(r, 'fence');
      // A shell command does the same thing every time; only an agent can act on the feedback.
      return {
        ok: false,
        failure: new LaneFailure('fence-violation', fence.message ?? 'changed files outside the fence'),
        feedback: fenceFeedback('The change touched files it may not', fence.message, lane),
        final: !ctx.file.agent,
      };
    }

    if (lane.checks.length && changed.length) {
      this.update({ phase: 'checking' }, `${what}: running ${lane.checks.length} check${lane.checks.length > 1 ? 's' : ''}`);
      const tChecks = Date.now();
      let failed: { c: ExecResult; check: string } | undefined;
      for (const check of lane.checks) {
        const c = await ctx.exec.run(check, { cwd: repoDir, env, timeoutMs, logFile: log, isolation: ctx.file.isolation, confine });
        if (ctx.signal?.aborted) {
          note(c, 'check');
          stopIfCancelled(ctx);
        }
        if (c.timedOut || c.exitCode !== 0) {
          failed = { c, check };
          break;
        }
      }
      this.checksMs += Date.now() - tChecks;
      // Checks are commands too: they may have broken the working copy's .git as a directive can.
      if (!(await this.intact())) {
        note(failed?.c ?? r, 'check');
        throw new LaneFailure('workspace-corrupted', "a check removed or broke the working copy's .git; nothing was pushed");
      }
      if (failed) {
        note(failed.c, 'check');
        const { c, check } = failed;
        const why = c.timedOut ? `check \`${check}\` timed out` : `check \`${check}\` exited with ${c.exitCode ?? c.signal}`;
        return {
          ok: false,
          failure: new LaneFailure('check-failed', `${why}${gist(c.tail) ? `: ${gist(c.tail)}` : ''}`),
          feedback: `${why}. Output:\n${firstLines(c.tail, 2000)}`,
          final: false,
        };
      }
      // A check is a command too (a formatter, lint-staged): what it changed, staged or committed goes into the
      // commit, so the fence looks again at exactly what will be committed.
      await ctx.workspace.settle(repoDir, lane.branch, this.base);
      changed = await ctx.workspace.changedFiles(repoDir);
      const after = checkFence(changed, lane.owns, lane.never);
      if (!after.ok) {
        note(r, 'fence');
        return {
          ok: false,
          failure: new LaneFailure('fence-violation', `a check changed files outside the fence: ${after.message ?? 'outside the fence'}`),
          feedback: fenceFeedback('The checks left changes the lane may not make', after.message, lane),
          final: !ctx.file.agent,
        };
      }
    }
    note(r, null);
    return { ok: true, changed };
  }

  /** Is the working copy still there and still a git repository on the lane branch? */
  async intact(): Promise<boolean> {
    return existsSync(join(this.repoDir, '.git')) && (await this.ctx.workspace.intact(this.repoDir));
  }

  /**
   * What the fence is checked on after the directive. With checks to run next, the staged change (a check may still
   * alter it, so it is checked again after them). Without, the commit itself, made at once: the fence then judges the
   * very tree that would be pushed, and the lane saves a git call (`diff --cached`).
   */
  private async stageForFence(): Promise<string[]> {
    const { ctx, lane, repoDir } = this;
    this.made = null;
    if (lane.checks.length) return ctx.workspace.changedFiles(repoDir);
    const commit = await ctx.workspace.commitEverything(repoDir, commitMessage(ctx, lane, this.n));
    this.made = { commit, committed: await ctx.workspace.committed(repoDir, this.base, commit) };
    return this.made.committed.files;
  }

  /** Commits the change (or keeps the commit already made), checks it once more and writes its patch. */
  private async commitChange(changed: string[], previous: string | null): Promise<{ commit: string; upToDate: boolean }> {
    const { ctx, lane, repoDir } = this;
    this.update({ phase: 'committing' }, `${changed.length} file${changed.length > 1 ? 's' : ''}`);
    const tCommit = Date.now();
    // The attempt number keeps a CI retry's commit distinct even when the directive produced the same tree.
    let commit = this.made?.commit ?? (await ctx.workspace.commit(repoDir, commitMessage(ctx, lane, this.n)));
    // The files and the patch of the commit, from its tree; an up-to-date remote commit below has the same tree and parent, so the same patch.
    const committed = this.made?.committed ?? (await ctx.workspace.committed(repoDir, this.base, commit));
    // A lane without checks had its fence judged on this very commit already (stageForFence).
    if (!this.made) verifyCommitted(lane, committed.files, changed);
    // Before the patch is written (it travels in the lane's artifact) and before anything is pushed.
    refuseHeldSecrets(ctx, committed.patch);
    // Idempotent re-runs: when the remote lane branch already holds this exact change on this base, keep its commit.
    let upToDate = false;
    if (
      this.n === 1 &&
      previous &&
      (await ctx.workspace.parent(repoDir, previous)) === this.base &&
      (await ctx.workspace.tree(repoDir, previous)) === (await ctx.workspace.tree(repoDir, commit))
    ) {
      commit = previous;
      upToDate = true;
    }
    this.rec.commit = commit;
    this.rec.timings = { ...this.rec.timings, commit_ms: Date.now() - tCommit };
    const patchFile = join(this.dir, 'patch.diff');
    await writeFileAtomic(patchFile, committed.patch);
    if (this.rec.strategy) this.rec.strategy = { ...this.rec.strategy, diff_lines: diffLines(committed.patch) };
    this.rec.evidence = { ...this.rec.evidence, patch: this.rel(patchFile) };
    return { commit, upToDate };
  }

  private async push(commit: string, previous: string | null): Promise<void> {
    const { lane } = this;
    this.update({ phase: 'pushing' }, `to ${lane.branch}`);
    const tPush = Date.now();
    try {
      await pushCommit(this.ctx, lane, this.repoDir, commit, previous);
    } finally {
      this.rec.timings = { ...this.rec.timings, push_ms: (this.rec.timings.push_ms ?? 0) + Date.now() - tPush };
    }
    await confirmPushed(this.ctx, lane, commit);
  }

  /** Opens or updates the lane's PR (a draft, labelled for a person, when its review left findings open). */
  async publish(review: LaneReview | null, draft = false): Promise<void> {
    const { ctx, lane } = this;
    const pr = ctx.file.pr;
    // Push-only mode: the pushed branch is the lane's checkpoint and its whole outcome; no PR is opened.
    if (!pr.open) return;
    const handOver = review?.verdict === 'needs-person' && lane.review ? lane.review.label : null;
    const published = await forgeCall('pr-failed', 'opening or updating the pull request', () =>
      ctx.forge.publish({
        lane,
        record: this.rec,
        title: lane.title,
        body: prBody(ctx, lane, this.rec),
        draft: pr.draft || draft || handOver !== null,
        labels: handOver && !pr.labels.includes(handOver) ? [...pr.labels, handOver] : pr.labels,
        reviewers: pr.reviewers,
        team_reviewers: pr.team_reviewers,
        assignees: pr.assignees,
      }),
    );
    if (published.notes?.length) this.rec.evidence = { ...this.rec.evidence, notes: [...this.rec.evidence.notes, ...published.notes] };
    if (published.pr_url) {
      this.update(
        { phase: 'pr-open', pr_url: published.pr_url, pr_number: published.pr_number },
        `${published.updated ? 'updated' : 'opened'} ${published.pr_url}`,
      );
    }
    // An existing PR is not made a draft by publishing it again.
    if (handOver && published.updated && this.rec.pr_number !== null) {
      const number = this.rec.pr_number;
      await forgeCall('pr-failed', 'turning the pull request into a draft for a person', () => ctx.forge.setDraft(lane, number, true));
    }
  }

  /** The review reached its round cap with findings open: the lane is handed to a person and does not reach its checkpoint. */
  private async handOverReview(review: LaneReview): Promise<LaneRecord> {
    const open = review.findings.filter((f) => f.status === 'open');
    const failed =
      review.rounds
        .at(-1)
        ?.lenses.filter((l) => l.outcome === 'failed')
        .map((l) => l.lens) ?? [];
    const what = [
      open.length
        ? `${open.length} ACCEPT finding${open.length > 1 ? 's' : ''} open (${open
            .slice(0, 3)
            .map((f) => `${f.id} ${f.file ?? ''}${f.line ? `:${f.line}` : ''} ${f.finding}`.trim())
            .join('; ')}${open.length > 3 ? '; …' : ''})`
        : '',
      failed.length ? `lens${failed.length > 1 ? 'es' : ''} ${failed.join(', ')} gave no readable answer` : '',
    ]
      .filter(Boolean)
      .join(', and ');
    const where =
      this.ctx.forge.kind === 'github' && this.rec.pr_number !== null
        ? `; PR #${this.rec.pr_number} is a draft labelled ${this.lane.review!.label}`
        : `; the branch ${this.lane.branch} is pushed`;
    const rounds = `${review.rounds.length} round${review.rounds.length === 1 ? '' : 's'}`;
    const error = review.stopped
      ? { class: 'budget-exceeded' as const, message: `the review stopped after ${rounds}: ${review.stopped}${what ? `, with ${what}` : ''}${where}` }
      : { class: 'code-review-needed' as const, message: `review reached its cap of ${rounds} with ${what}${where}` };
    this.update(
      {
        status: 'failed',
        phase: 'draft',
        merge_status: 'draft',
        ended_at: this.ctx.clock.now().toISOString(),
        error: { ...error, message: firstLines(error.message, 600) },
      },
      'review open at the round cap: handed to a person',
    );
    return this.finish();
  }

  /** Reads (or waits for) CI on the pushed commit: `done`, `retry` (red, attempts left: feedback set) or `handed-over` (red, out of attempts). */
  private async readCi(commit: string): Promise<'done' | 'retry' | 'handed-over'> {
    const { ctx, lane } = this;
    if (ctx.forge.kind === 'local') {
      // Locally the lane's own checks are its CI: green when they ran and passed.
      this.rec.ci_conclusion = lane.checks.length ? 'success' : 'none';
      return 'done';
    }
    if (!ctx.file.ci.wait) {
      this.rec.ci_conclusion = await forgeCall('ci-failed', 'reading CI', () => ctx.forge.ciConclusion(lane, commit));
      return 'done';
    }
    // `ci` is a phase a lane passes through, never one it ends in: once CI has answered, the lane is back where it
    // was (its PR open, or its branch pushed), so a finished lane never reads as still waiting.
    const before = this.rec.phase;
    this.update({ phase: 'ci' }, `waiting for CI on ${commit.slice(0, 12)}`);
    const verdict = await forgeCall('ci-failed', 'waiting for CI', () => ctx.forge.waitForCi(lane, commit, ctx.file.ci.timeout_minutes * 60_000));
    this.rec.ci_conclusion = verdict.conclusion;
    if (verdict.conclusion !== 'failure' && verdict.conclusion !== 'cancelled' && verdict.conclusion !== 'timed_out') {
      // A PR an earlier run handed over as a draft is ready again once its CI is green.
      if (verdict.conclusion === 'success' && this.rec.pr_number !== null && !ctx.file.pr.draft) {
        await forgeCall('pr-failed', 'marking the pull request ready', () => ctx.forge.setDraft(lane, this.rec.pr_number!, false));
      }
      this.update({ phase: before }, `CI ${verdict.conclusion}`);
      return 'done';
    }
    const n = this.n;
    this.rec.attempts.push({
      n,
      started_at: ctx.clock.now().toISOString(),
      duration_ms: 0,
      exit_code: null,
      signal: null,
      timed_out: false,
      failed_step: 'ci',
      log: this.rec.log ?? '',
    });
    if (n >= ctx.file.max_retries + 1) {
      // Out of retries: hand the PR to a person as a draft instead of leaving a red PR that looks ready.
      if (this.rec.pr_number !== null) {
        const number = this.rec.pr_number;
        await forgeCall('pr-failed', 'turning the pull request into a draft after CI stayed red', () => ctx.forge.setDraft(lane, number, true));
      }
      this.update(
        {
          status: 'failed',
          phase: 'draft',
          merge_status: 'draft',
          ended_at: ctx.clock.now().toISOString(),
          error: {
            class: 'code-review-needed',
            message: `CI is still red after ${n} attempt${n > 1 ? 's' : ''}: ${gist(verdict.failures) || 'see the PR checks'}`,
          },
        },
        'CI red, retries exhausted: handed to a person',
      );
      return 'handed-over';
    }
    this.feedback = `CI failed on the pushed change:\n${firstLines(verdict.failures, 2000)}`;
    return 'retry';
  }

  /** Counts an agent run's spending against the lane and the fleet. */
  charge(u: AgentUsage | null): void {
    if (!u) return;
    this.spent = addUsage(this.spent, u);
    if (this.ctx.fleetSpend && u.cost_usd) this.ctx.fleetSpend.spent += u.cost_usd;
  }

  private fleetCeiling(): { spent: number; ceiling: number } | null {
    const ceiling = this.ctx.file.budget?.fleet?.cost_usd;
    return ceiling !== undefined && this.ctx.fleetSpend ? { spent: this.ctx.fleetSpend.spent, ceiling } : null;
  }

  /** Why no further agent run of this lane may start (a cap or the fleet's ceiling reached), or null. */
  budgetStop(): string | null {
    return budgetStop(this.spent, this.ctx.file.budget?.lane, this.fleetCeiling());
  }

  /**
   * What is left of the caps for the next agent run, for an agent CLI that enforces them within a run; `share` runs
   * going at once (a panel of lenses) split it.
   */
  caps(share = 1): LaneCaps {
    const left = remaining(this.spent, this.ctx.file.budget?.lane, this.fleetCeiling());
    return {
      ...(left.turns !== undefined ? { turns: Math.max(1, Math.floor(left.turns / share)) } : {}),
      ...(left.cost_usd !== undefined ? { cost_usd: Math.max(0.01, Math.floor((left.cost_usd / share) * 100) / 100) } : {}),
    };
  }

  /**
   * Counts what an agent run reported, never more than the cost it was allowed (`given`): a run that prints a
   * made-up result line cannot spend the fleet's whole ceiling on paper and stop every other lane.
   */
  chargeRun(u: AgentUsage | null, given: LaneCaps): void {
    if (u && given.cost_usd !== undefined && u.cost_usd !== null && u.cost_usd > given.cost_usd) u = { ...u, cost_usd: given.cost_usd };
    this.charge(u);
  }

  /** Writes the relay of earlier waves where the lane reads it (FLEET_RELAY, and the agent prompt), and clears a stale discoveries file. */
  private async receiveRelay(): Promise<void> {
    const { ctx, lane } = this;
    const relay = ctx.file.relay;
    if (relay === false) return;
    await rm(discoveriesPath(ctx.root, lane.id), { force: true });
    const items = this.rec.wave !== null && ctx.relayEntries ? buildRelay(ctx.relayEntries(), this.rec.wave, lane.repo, relay) : [];
    this.relayText = renderRelay(items);
    await writeFileAtomic(relayPath(ctx.root, lane.id), this.relayText ? `${this.relayText}\n` : '');
    if (items.length) this.rec.relay = { items: items.length, from: [...new Set(items.flatMap((i) => i.lanes))] };
  }

  /**
   * What the lane left for later lanes: its discoveries file, and for an agent lane the "Discoveries" section of its
   * last answer. Never fails the lane: a file it cannot read says nothing.
   */
  private async leaveDiscoveries(): Promise<void> {
    const { ctx, lane } = this;
    const relay = ctx.file.relay;
    if (relay === false || !this.cloned) return;
    const fromFile = parseDiscoveries(await readUntrustedText(discoveriesPath(ctx.root, lane.id), MAX_DISCOVERIES_BYTES), relay.item_chars);
    let fromAnswer: string[] = [];
    if (runsAgent(ctx, lane) && this.rec.log) {
      const log = await readUntrustedText(join(ctx.root, this.rec.log), MAX_DISCOVERIES_BYTES * 4, { tail: true });
      fromAnswer = answerDiscoveries(agentAnswer(ctx.file.agent!.preset, log).text, relay.item_chars);
    }
    const all = parseDiscoveries([...fromFile, ...fromAnswer].map((d) => scrub(d, ctx.neverInChange)).join('\n'), relay.item_chars);
    if (all.length) this.rec.discoveries = all;
  }

  private async finish(): Promise<LaneRecord> {
    await this.leaveDiscoveries().catch(() => undefined);
    if (hasUsage(this.spent)) this.rec.usage = this.spent;
    return finish(this.ctx, this.rec, this.t0);
  }
}

function fenceFeedback(what: string, message: string | undefined, lane: LaneSpec): string {
  return `${what}: ${message}. Change only files matching ${lane.owns.length ? lane.owns.join(', ') : 'anything'} and never ${[...lane.never, '.git/**'].join(', ')}.`;
}

/**
 * Publishes one strategy of a target once its group is settled: the pick (its PR, then the merge policy), or, when a
 * person picks, each strategy as a draft. `others` says in the PR body where the other strategies are. A forge call
 * that fails leaves the lane failed, saying which step.
 */
export async function publishStrategy(ctx: LaneContext, lane: LaneSpec, start: LaneRecord, draft: boolean, others: string[]): Promise<LaneRecord> {
  let rec = start;
  const update = (patch: Partial<LaneRecord>, detail: string) => {
    rec = { ...rec, ...patch, updated_at: ctx.clock.now().toISOString() };
    ctx.onUpdate(rec, detail);
  };
  const pr = ctx.file.pr;
  if (!pr.open) return rec;
  const why = rec.strategy?.reason ? `${draft ? 'A person picks among the strategies' : 'Picked among the strategies'}: ${rec.strategy.reason}.` : '';
  const body = [
    prBody(ctx, lane, rec),
    '',
    `**Strategy** ${codeSpan(rec.strategy?.label ?? lane.id)}. ${escapeCell(why)}`,
    ...(others.length ? ['', 'The other strategies stay as branches:', ...others.map((o) => `- ${o}`)] : []),
  ].join('\n');
  try {
    const published = await forgeCall('pr-failed', 'opening the pull request of the picked strategy', () =>
      ctx.forge.publish({
        lane,
        record: rec,
        title: lane.title,
        body,
        draft: pr.draft || draft,
        labels: pr.labels,
        reviewers: pr.reviewers,
        team_reviewers: pr.team_reviewers,
        assignees: pr.assignees,
      }),
    );
    if (published.notes?.length) rec.evidence = { ...rec.evidence, notes: [...rec.evidence.notes, ...published.notes] };
    if (published.pr_url)
      update({ phase: 'pr-open', pr_url: published.pr_url, pr_number: published.pr_number }, `${published.updated ? 'updated' : 'opened'} ${published.pr_url}`);
    if (!draft) await applyMergePolicy(ctx, lane, () => rec, update);
  } catch (err) {
    const failure = err instanceof LaneFailure ? err : new LaneFailure('lane-crashed', (err as Error).message);
    update({ status: 'failed', phase: 'failed', error: { class: failure.errorClass, message: failure.message } }, failure.errorClass);
  }
  await writeLaneResult(ctx.root, ctx.fleet_id, rec);
  return rec;
}

/** A forge call that fails is this lane's failure, with a class that says which step, never a crash of Fleet. */
async function forgeCall<T>(errorClass: ErrorClass, what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw new LaneFailure(errorClass, `${what} failed: ${(err as Error).message}`);
  }
}

/** Clones the target for a lane, renewing the forge's credential once if git says it was refused. */
async function cloneTarget(ctx: LaneContext, lane: LaneSpec, repoDir: string) {
  const timeoutMs = ctx.file.git_timeout_minutes * 60_000;
  try {
    // A fork the lane pushes to (pr.fork) is made before the clone reads the lane branch's state there; a dry run makes none.
    const head = await forgeCall('clone-failed', 'finding or making the fork the lane pushes to', async () =>
      ctx.forge.headRepo?.(lane, { create: !ctx.dryRun }),
    );
    const headUrl = head?.url;
    // gitEnv() is read per attempt: the forge's credential may be renewed in between (a GitHub App token).
    const clone = () =>
      ctx.workspace.clone(ctx.forge.cloneUrl(lane), repoDir, {
        base: lane.base ?? ctx.forge.baseBranch?.(lane),
        branch: lane.branch,
        env: ctx.forge.gitEnv(),
        timeoutMs,
        headUrl,
      });
    const slotted = () => (ctx.gitSlots ? ctx.gitSlots.run(clone) : clone());
    await ctx.forge.refreshCredential?.();
    try {
      return { cloned: await slotted(), headRepo: head?.repo };
    } catch (err) {
      if (!refusedCredential((err as Error).message) || !(await ctx.forge.refreshCredential?.(true))) throw err;
      await rm(repoDir, { recursive: true, force: true });
      return { cloned: await slotted(), headRepo: head?.repo };
    }
  } catch (err) {
    throw new LaneFailure('clone-failed', (err as Error).message);
  }
}

/**
 * Pushes the lane's commit with a lease on what the remote branch held (`previous`), renewing the credential once if
 * git says it was refused. A branch that moved meanwhile is never overwritten.
 */
async function pushCommit(ctx: LaneContext, lane: LaneSpec, repoDir: string, commit: string, previous: string | null): Promise<void> {
  // The credential is read now, not when the lane began: a directive may run for hours (an App token renews).
  const push = () => ctx.workspace.push(repoDir, lane.branch, commit, previous, ctx.forge.gitEnv(), ctx.file.git_timeout_minutes * 60_000);
  const slotted = () => (ctx.gitSlots ? ctx.gitSlots.run(push) : push());
  await ctx.forge.refreshCredential?.();
  let pushed = await slotted();
  if (!pushed.ok && pushed.reason !== 'stale' && refusedCredential(pushed.detail) && (await ctx.forge.refreshCredential?.(true))) pushed = await slotted();
  if (!pushed.ok) {
    const msg =
      pushed.reason === 'stale'
        ? `${lane.branch} moved on the remote while this lane ran (another run or a person pushed to it); nothing was overwritten`
        : `push refused: ${firstLines(pushed.detail, 600)}`;
    throw new LaneFailure('push-rejected', msg);
  }
}

/**
 * The merge policy, once the lane's PR is open and its CI read: merge when green, or say why not. `current` reads the
 * lane's record as it stands: `update` replaces it.
 */
async function applyMergePolicy(
  ctx: LaneContext,
  lane: LaneSpec,
  current: () => LaneRecord,
  update: (patch: Partial<LaneRecord>, detail: string) => void,
): Promise<void> {
  if (ctx.file.merge.policy !== 'when-green') {
    current().merge_status = 'not-requested';
    return;
  }
  // Commits others pushed (kept by branch_conflict: rebase) were never judged by the lane's fence: a person merges.
  if (current().branch_conflict?.strategy === 'rebase') {
    const rec = current();
    rec.merge_status = 'blocked';
    rec.evidence = {
      ...rec.evidence,
      notes: [...rec.evidence.notes, 'not merged: the branch keeps commits others pushed (branch_conflict: rebase), which no fence judged; a person merges it'],
    };
    return;
  }
  const ci = current().ci_conclusion;
  if (ci === 'success' || ci === 'none') {
    const before = current().phase;
    update({ phase: 'merging' }, 'the policy is when-green');
    const m = await ctx.forge.merge(lane, current(), ctx.file.merge.method);
    const rec = current();
    rec.merge_status = m.status;
    if (m.status === 'merged') rec.phase = 'merged';
    else {
      // Not merged: the lane ends where it was (its PR open), not in the middle of a merge.
      rec.phase = before;
      rec.evidence = { ...rec.evidence, notes: [...rec.evidence.notes, `merge ${m.status}: ${m.detail}`] };
    }
  } else {
    // CI still running (or a required check not reported yet) may turn green later; anything else will not.
    const rec = current();
    rec.merge_status = ci === 'pending' ? 'pending' : 'blocked';
    rec.evidence = { ...rec.evidence, notes: [...rec.evidence.notes, `not merged: CI is ${ci ?? 'unknown'}`] };
  }
}

/**
 * The fence and the changed files were computed on the index; the commit is
 * checked once more from its own tree against the base, the tree a push
 * carries, so nothing outside the fence can ride along whatever the index or a
 * replace ref showed.
 */
function verifyCommitted(lane: LaneSpec, committed: string[], checked: readonly string[]): void {
  const fence = checkFence(committed, lane.owns, lane.never);
  if (!fence.ok) throw new LaneFailure('fence-violation', `the commit holds files outside the fence: ${fence.message}; nothing was pushed`);
  const expected = new Set(checked);
  const differs = committed.length !== expected.size || committed.some((f) => !expected.has(f));
  if (differs) {
    const extra = committed.filter((f) => !expected.has(f));
    const missing = checked.filter((f) => !committed.includes(f));
    throw new LaneFailure(
      'workspace-corrupted',
      `the commit does not hold the change Fleet checked (${[extra.length ? `also: ${extra.slice(0, 5).join(', ')}` : '', missing.length ? `without: ${missing.slice(0, 5).join(', ')}` : ''].filter(Boolean).join('; ')}); nothing was pushed`,
    );
  }
}

/**
 * After a push, the lane's branch on the forge must be the lane's commit: a push
 * that went somewhere else (a rewritten remote, a redirect) opens no PR. Read
 * a few times, since a forge may show a fresh ref a moment late.
 */
async function confirmPushed(ctx: LaneContext, lane: LaneSpec, commit: string): Promise<void> {
  let head: string | null = null;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      head = await ctx.forge.branchHead(lane, lane.branch);
    } catch (err) {
      throw new LaneFailure('push-rejected', `reading ${lane.branch} after the push failed: ${(err as Error).message}`);
    }
    if (head === commit) return;
    await new Promise((r) => setTimeout(r, 250 * attempt));
  }
  throw new LaneFailure(
    'push-rejected',
    `after the push, ${lane.branch} in ${lane.repo} is at ${head ? head.slice(0, 12) : 'nothing'}, not at the lane's commit ${commit.slice(0, 12)}: the push did not land in the lane's own repository; no pull request was opened`,
  );
}

/** A lane stopped by an interrupt wherever it was (a clone, a push, a forge call): cancelled, saying where. */
function interrupted(rec: LaneRecord, err: unknown): LaneFailure {
  const before = ['queued', 'cloning', 'running', 'checking', 'reviewing', 'committing', 'waiting'].includes(rec.phase);
  const where = `the run was interrupted while this lane was ${rec.phase}`;
  const what = before
    ? 'nothing was pushed'
    : rec.phase === 'pushing'
      ? 'the push may or may not have reached the forge; a resumed run finds out'
      : 'what it pushed stays on the forge; a resumed run checks it again';
  return new LaneFailure('cancelled', `${where}; ${what} (${firstLines(String((err as Error).message ?? err), 200)})`);
}

function stopIfCancelled(ctx: LaneContext): void {
  if (ctx.signal?.aborted) throw new LaneFailure('cancelled', 'the run was interrupted while this lane ran; nothing was pushed');
}

async function finish(ctx: LaneContext, rec: LaneRecord, t0: number): Promise<LaneRecord> {
  rec.timings = { ...rec.timings, total_ms: ctx.clock.now().getTime() - t0 };
  await writeLaneResult(ctx.root, ctx.fleet_id, rec);
  return rec;
}

/** Each lane writes only its own result file; the runner merges them. */
export async function writeLaneResult(root: string, fleet_id: string, rec: LaneRecord): Promise<void> {
  const result: LaneResult = { schema_version: SCHEMA_VERSION, fleet_id, lane: rec };
  await writeJsonAtomic(resultPath(root, rec.lane), result);
}

export function runsAgent(ctx: LaneContext, lane: LaneSpec): boolean {
  return lane.run === undefined && ctx.file.agent !== undefined;
}

/** What every agent run of the lane adds to its environment: the leg's CLI and credentials, and the lane's own agent state. */
export async function agentRunEnv(ctx: LaneContext, laneFolder: string): Promise<Record<string, string>> {
  return { ...ctx.agentEnv, ...(await agentStateEnv(laneFolder, ctx.file.agent!, { ...ctx.env, ...ctx.agentEnv })) };
}

/** A change that holds a credential the directive was handed (a prompt-injected agent writing its key into a file) goes nowhere. */
function refuseHeldSecrets(ctx: LaneContext, patch: string): void {
  for (const secret of ctx.neverInChange ?? []) {
    if (secret.length >= 8 && patch.includes(secret)) {
      throw new LaneFailure(
        'fence-violation',
        'the change holds one of the agent credentials the directive was given (plain or encoded); nothing was pushed and no patch was kept',
      );
    }
  }
}

export function laneEnv(ctx: LaneContext, lane: LaneSpec, attempt: number, feedback: string | undefined, base: string): Record<string, string> {
  return {
    ...ctx.env,
    FLEET_ID: ctx.fleet_id,
    FLEET_NAME: ctx.file.name,
    FLEET_DIRECTIVE: lane.directive,
    FLEET_REPO: lane.repo,
    FLEET_LANE: lane.id,
    FLEET_BRANCH: lane.branch,
    FLEET_BASE_BRANCH: base,
    FLEET_WORKSPACE: ctx.root,
    FLEET_LANE_DIR: laneDir(ctx.root, lane.id),
    FLEET_ATTEMPT: String(attempt),
    FLEET_FEEDBACK: feedback ?? '',
    FLEET_DRY_RUN: ctx.dryRun ? '1' : '0',
    ...(lane.issue ? { FLEET_ISSUE: String(lane.issue.number), FLEET_ISSUE_SLOT: lane.issue.slot ?? '', FLEET_ISSUE_FILE: issuePath(ctx.root, lane.id) } : {}),
    ...(ctx.file.relay !== false ? { FLEET_DISCOVERIES: discoveriesPath(ctx.root, lane.id), FLEET_RELAY: relayPath(ctx.root, lane.id) } : {}),
  };
}

/**
 * The command of a directive attempt or a review fix round: the lane's `run:`, or the agent with the worker prompt
 * written to `opts.file` (with the previous attempt's failure, or the review findings to fix).
 */
export async function directiveCommand(
  ctx: LaneContext,
  lane: LaneSpec,
  routing: Routing | null,
  opts: { file: string; feedback?: string; findings?: string; relay?: string; caps?: LaneCaps },
): Promise<AgentInvocation> {
  // A lane-level run: wins over the fleet's agent, so one odd repository can be scripted.
  if (lane.run !== undefined || !ctx.file.agent) return { command: lane.run!, env: {} };
  const agent = ctx.file.agent;
  const personas = (routing?.selected ?? []).map((name) => agent.personas.find((p) => p.name === name)).filter((p) => p !== undefined);
  const prompt = renderWorkerPrompt({
    directive: lane.directive,
    repo: lane.repo,
    lane: lane.id,
    branch: lane.branch,
    owns: lane.owns,
    never: lane.never,
    personas,
    feedback: opts.feedback,
    findings: opts.findings,
    relay: opts.relay,
    discoveries: ctx.file.relay !== false,
    title: lane.title,
    issue: lane.issue,
  });
  await writeFileAtomic(opts.file, prompt);
  return agentCommand(agent, { prompt_file: opts.file, repo: lane.repo, lane: lane.id, branch: lane.branch }, opts.caps);
}

async function route(ctx: LaneContext, lane: LaneSpec, repoDir: string, dir: string): Promise<Routing> {
  const agent = ctx.file.agent!;
  // Before the agent runs, the files a lane will touch are best known from its scope: the tracked files inside owns.
  let files: string[] = [];
  if (lane.owns.length) files = (await ctx.workspace.listFiles(repoDir)).filter((f) => matchesAny(f, lane.owns));
  const routing = routePersonas({
    personas: agent.personas,
    k: agent.top_k,
    fallback: agent.fallback,
    changed_files: files,
    title: lane.title,
    body: lane.directive,
    repo: lane.repo,
    lane: lane.id,
  });
  await writeJsonAtomic(join(dir, 'agent-routing.json'), routing);
  return routing;
}

function commitMessage(ctx: LaneContext, lane: LaneSpec, attempt: number): string {
  const subject = ctx.file.commit_message ?? lane.title;
  const trailer = attempt > 1 ? `\nFleet-Attempt: ${attempt}` : '';
  return `${subject}\n\n${lane.directive.trim()}\n\nFleet-Id: ${ctx.file.name}\nFleet-Lane: ${lane.id}${trailer}\n`;
}

/** The PR body carries a hidden marker so a re-run finds its own PR and a person sees where it came from. */
export function prBody(ctx: LaneContext, lane: LaneSpec, rec: LaneRecord): string {
  const files = rec.changed_files
    .slice(0, 50)
    .map((f) => `- ${pathSpan(f)}`)
    .join('\n');
  const more = rec.changed_files.length > 50 ? `\n- … and ${rec.changed_files.length - 50} more` : '';
  return [
    `<!-- fleet:${ctx.file.name}:${lane.id} -->`,
    `This change was made by the Fleet **${ctx.file.name}** (lane \`${lane.id}\`).`,
    '',
    ...(lane.issue ? [issueLink(lane.issue.number, lane.issue.slot), ''] : []),
    '**Directive**',
    '',
    lane.directive
      .trim()
      .split('\n')
      .map((l) => `> ${l}`)
      .join('\n'),
    '',
    `**Files changed** (${rec.changed_files.length})`,
    '',
    files + more,
    ...(rec.review ? reviewBodyLines(rec.review) : []),
    ...(rec.branch_conflict ? conflictBodyLines(rec.branch_conflict.strategy, rec.branch_conflict.commits) : []),
  ].join('\n');
}

/** git's words when the server refused its credential (401): an expired token, worth one renewal and retry. */
function refusedCredential(text: string | undefined): boolean {
  return /Authentication failed|could not read Username|\b401\b|Bad credentials/i.test(text ?? '');
}
