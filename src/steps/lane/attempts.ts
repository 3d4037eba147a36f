/**
 * Producing the lane's change: attempts of the directive (the lane's `run:` or the agent), each from the base, inside
 * one slot of the concurrency budget, until one leaves a change that passes the fence and the checks or the retries
 * and the budget are spent. A failed attempt's output is the next one's feedback. `tryChange` is one such try; a
 * review fix round is another.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { claudeOutcome, codexOutcome } from '../../core/agent-outcome.js';
import { checkFence } from '../../core/fence.js';
import type { Attempt, LaneSpec } from '../../core/model.js';
import { usageFromOutput } from '../../core/spend.js';
import type { ExecResult } from '../../ports.js';
import { readUntrustedText } from '../../util/fs.js';
import { commitMessage } from './commit.js';
import { agentRunEnv, directiveCommand, laneEnv, runsAgent } from './directive.js';
import { firstLines, gist, LaneFailure, stopIfCancelled } from './failure.js';
import type { LaneRun } from './state.js';

/** What one try at a change (a directive attempt, a review fix round) came to. */
export type Tried =
  | { ok: true; changed: string[] }
  /** `final`: trying again cannot help (a shell command fenced out does the same thing every time). */
  | { ok: false; failure: LaneFailure; feedback: string; final: boolean };

/** How a try's steps are recorded: the directive attempts keep an `Attempt` each; a review fix round keeps its own record. */
export type NoteStep = (r: ExecResult | null, step: Attempt['failed_step']) => void;

/** The attempts, inside one slot of the concurrency budget. */
export async function produceInBudget(run: LaneRun): Promise<string[]> {
  const { ctx } = run;
  const tWait = Date.now();
  if (ctx.slots && ctx.slots.active >= ctx.slots.size) run.update({ phase: 'waiting' }, 'for a slot in the concurrency budget');
  const release = ctx.slots ? await ctx.slots.acquire() : () => undefined;
  run.rec.timings = { ...run.rec.timings, wait_ms: (run.rec.timings.wait_ms ?? 0) + Date.now() - tWait };
  try {
    return await produce(run);
  } finally {
    release();
    run.rec.timings = { ...run.rec.timings, directive_ms: run.directiveMs, checks_ms: run.checksMs };
  }
}

/**
 * Runs attempts until one produces a change that passes the fence and the checks, or the retry budget is spent.
 * Every attempt starts from the base.
 */
async function produce(run: LaneRun): Promise<string[]> {
  const { ctx, lane } = run;
  const maxAttempts = ctx.file.max_retries + 1;
  let lastFailure: LaneFailure | undefined;
  while (run.n < maxAttempts) {
    stopIfCancelled(ctx, run.n > 0);
    const stop = runsAgent(ctx, lane) ? run.budget.budgetStop() : null;
    // Before its first agent run the lane has done nothing that counts: it did not start, as a lane the runner held back.
    if (stop && run.n === 0) throw new LaneFailure('budget-exceeded', `not started: ${stop}`, true);
    if (stop) throw new LaneFailure('budget-exceeded', `${stop}: attempt ${run.n + 1} did not start`);
    const n = ++run.n;
    if (n > 1) {
      await ctx.workspace.reset(run.repoDir, run.base);
      run.update({ retry_count: n - 1 }, `retry ${n - 1} of ${ctx.file.max_retries}`);
    }
    const log = join(run.dir, `attempt-${n}.log`);
    run.rec.log = run.rel(log);
    const attemptStart = ctx.clock.now().toISOString();
    const tAttempt = Date.now();
    const note: NoteStep = (r, step) =>
      run.rec.attempts.push({
        n,
        started_at: attemptStart,
        duration_ms: Date.now() - tAttempt,
        exit_code: r?.exitCode ?? null,
        signal: r?.signal ?? null,
        timed_out: r?.timedOut ?? false,
        failed_step: step,
        log: run.rel(log),
      });

    run.update({ phase: 'running' }, `attempt ${n} of ${maxAttempts}`);
    run.budget.given = run.budget.caps();
    const { command, env: agentEnv } = await directiveCommand(ctx, lane, run.routing, {
      file: join(run.dir, `prompt-${n}.md`),
      feedback: run.feedback,
      relay: run.relayText,
      caps: run.budget.given,
    });
    const env = { ...laneEnv(ctx, lane, n, run.feedback, run.cloned.base_branch), ...agentEnv };
    const tried = await tryChange(run, command, env, log, note, `attempt ${n}`);
    if (tried.ok) return tried.changed;
    lastFailure = tried.failure;
    run.feedback = tried.feedback;
    if (tried.final) break;
  }
  throw lastFailure ?? new LaneFailure('directive-failed', 'no attempt left');
}

/**
 * Runs `command` in the working copy as it stands, then the fence and the checks (and the fence again on what the
 * checks left): the files the change touches, or why it does not count. Throws only when the lane cannot go on (the
 * run interrupted, the working copy broken).
 */
export async function tryChange(run: LaneRun, command: string, env: Record<string, string>, log: string, note: NoteStep, what: string): Promise<Tried> {
  const { ctx, lane, repoDir } = run;
  const timeoutMs = ctx.file.timeout_minutes * 60_000;
  // Isolated, the directive sees of the workspace only this lane's folder.
  const confine = { workspace: ctx.root, lane: run.dir };
  const tDirective = Date.now();
  const r = await ctx.exec.run(command, {
    cwd: repoDir,
    env: runsAgent(ctx, lane) ? { ...env, ...(await agentRunEnv(ctx, run.dir)) } : env,
    timeoutMs,
    logFile: log,
    isolation: ctx.file.isolation,
    confine,
  });
  run.directiveMs += Date.now() - tDirective;
  // Read before the checks write to the same log: what the agent CLI reported, not what a check printed.
  const said = runsAgent(ctx, lane) ? await readUntrustedText(log, 256 * 1024, { tail: true }) : '';
  if (runsAgent(ctx, lane)) run.budget.chargeRun(usageFromOutput(ctx.file.agent!.preset, said), run.budget.given);
  if (ctx.signal?.aborted) {
    note(r, 'directive');
    stopIfCancelled(ctx);
  }
  // A directive that destroyed the repository cannot be retried in place: nothing it did can be trusted.
  if (!(await intact(run))) {
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

  await ctx.workspace.settle(repoDir, lane.branch, run.base);
  let changed = await stageForFence(run);
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
    run.update({ phase: 'checking' }, `${what}: running ${lane.checks.length} check${lane.checks.length > 1 ? 's' : ''}`);
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
    run.checksMs += Date.now() - tChecks;
    // Checks are commands too: they may have broken the working copy's .git as a directive can.
    if (!(await intact(run))) {
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
    await ctx.workspace.settle(repoDir, lane.branch, run.base);
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
export async function intact(run: LaneRun): Promise<boolean> {
  return existsSync(join(run.repoDir, '.git')) && (await run.ctx.workspace.intact(run.repoDir));
}

/**
 * What the fence is checked on after the directive. With checks to run next, the staged change (a check may still
 * alter it, so it is checked again after them). Without, the commit itself, made at once: the fence then judges the
 * very tree that would be pushed, and the lane saves a git call (`diff --cached`).
 */
async function stageForFence(run: LaneRun): Promise<string[]> {
  const { ctx, lane, repoDir } = run;
  run.made = null;
  if (lane.checks.length) return ctx.workspace.changedFiles(repoDir);
  const commit = await ctx.workspace.commitEverything(repoDir, commitMessage(ctx, lane, run.n));
  run.made = { commit, committed: await ctx.workspace.committed(repoDir, run.base, commit) };
  return run.made.committed.files;
}

function fenceFeedback(what: string, message: string | undefined, lane: LaneSpec): string {
  return `${what}: ${message}. Change only files matching ${lane.owns.length ? lane.owns.join(', ') : 'anything'} and never ${[...lane.never, '.git/**'].join(', ')}.`;
}
