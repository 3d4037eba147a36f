/**
 * The review step of a lane (issue 9): after the directive and the checks pass, a panel of lenses reviews the change,
 * the worker gives every finding a disposition, and ACCEPT findings go back to the worker for a fix round on the same
 * working copy (fence and checks again), until no ACCEPT finding is open or the round cap is reached.
 *
 * Everything the agents do is checked from what they leave behind: a lens or a disposition run that changes the
 * working copy has its changes undone; a fix round whose change fails the fence or a check is undone too. The change
 * that leaves the review is always one that passed the fence and the checks.
 *
 * The review sees the lane only through a `ReviewHandle` (below), which the lane builds (review-phase.ts): this module
 * imports nothing of the lane's state, so the two never import each other.
 */
import { lstat, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { agentAnswer, agentCommand, type AgentInvocation } from '../../core/agent.js';
import type { AgentSpec } from '../../core/fleet-file.js';
import type { AgentUsage, LaneReview, LaneSpec, LensRun, ResolvedReview, ReviewFindingRecord, ReviewRound } from '../../core/model.js';
import {
  applyDispositions,
  carryIds,
  dedupeFindings,
  dispositionPrompt,
  findingStatus,
  fixPrompt,
  lensPrompt,
  lensReaskPrompt,
  parseDispositions,
  parseLensOutput,
  reviewVerdict,
  type LensResult,
  type ReviewFinding,
} from '../../core/review.js';
import { addUsage, type LaneCaps } from '../../core/spend.js';
import type { ExecResult, Workspace } from '../../ports.js';
import { readUntrustedText, writeFileAtomic } from '../../util/fs.js';
import { LaneFailure } from './failure.js';
import { scrub } from './secrets.js';

/**
 * The lane as its review sees it: what it reads of the lane, and the few things it may ask of it. The lane builds it
 * (review-phase.ts); the review never reaches into the lane's own state, and the lane's phases never into the review's.
 */
export interface ReviewHandle {
  readonly lane: LaneSpec;
  readonly agent: AgentSpec;
  readonly workspace: Workspace;
  /** The lane's working copy, the change staged on `base`. */
  readonly repoDir: string;
  /** The commit the change is made on. */
  readonly base: string;
  /** The lane's folder: the review keeps its prompts, answers and logs in `review/` there. */
  readonly dir: string;
  /** The directive attempt whose change is reviewed: it names the review's files. */
  readonly attempt: number;
  /** Credentials no text Fleet keeps may hold. */
  readonly neverInChange: readonly string[] | undefined;
  readonly signal: AbortSignal | undefined;
  /** Moves the lane to `phase`, saying what it does (the events log, the live view). */
  phase(phase: 'reviewing' | 'running', detail: string): void;
  /** Adds a note to the lane's evidence. */
  note(text: string): void;
  /** A path as the lane records it. */
  rel(path: string): string;
  /** Is the working copy still a git repository on the lane branch? */
  intact(): Promise<boolean>;
  /** Why no further agent run of the lane may start (a cap or the fleet's ceiling reached), or null. */
  budgetStop(): string | null;
  /** What is left of the caps for an agent run, `share` of them going at once. */
  caps(share: number): LaneCaps;
  /** Counts what an agent run reported against the lane and the fleet, never more than it was `given`. */
  chargeRun(u: AgentUsage | null, given: LaneCaps): void;
  /**
   * Runs the agent invocation `inv` in the working copy, its standard output to `answerFile`, with the lane's
   * environment and the agent's, inside one slot of the concurrency budget, as isolated as the lane's directives.
   */
  answer(inv: AgentInvocation, opts: { log: string; answerFile: string }): Promise<ExecResult>;
  /**
   * A fix round: the worker, prompted with `findings` (written to `promptFile`), changes the working copy as the
   * review left it, then the fence and the checks as for an attempt; what it came to and what it spent.
   */
  fix(opts: { findings: string; promptFile: string; log: string; what: string }): Promise<{
    tried: { ok: true; changed: string[] } | { ok: false; failure: LaneFailure };
    spent: AgentUsage | null;
  }>;
}

/** The most of an agent's answer Fleet reads: findings and dispositions are short; more is not an answer. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export async function reviewChange(run: ReviewHandle, spec: ResolvedReview): Promise<{ review: LaneReview; changed: string[] }> {
  const known: ReviewFinding[] = [];
  const meta = new Map<string, { rounds: number[]; reason: string | null; forced: boolean }>();
  const rounds: ReviewRound[] = [];
  const usage = new UsageSum();
  await freshReviewFolder(run);
  let snapshot = await takeSnapshot(run);

  let stopped: string | null = null;
  for (let round = 1; ; round++) {
    stopIfCancelled(run);
    stopped = run.budgetStop();
    if (stopped) break;
    run.phase('reviewing', `review round ${round}: ${spec.lenses.map((l) => l.name).join(', ')}`);
    const { files, patch } = await run.workspace.committed(run.repoDir, run.base, snapshot);
    // The lenses run at once: each gets its share of what is left of the caps.
    const share = spec.lenses.length;
    const lensRuns = await Promise.all(
      spec.lenses.map((l) =>
        runLens(run, round, l.name, lensPrompt({ lens: l.name, brief: l.brief, directive: run.lane.directive, diff: patch, files }), usage, share),
      ),
    );
    snapshot = await keepSnapshot(run, snapshot, `a lens of review round ${round}`);
    const results = lensRuns.map((l) => l.result);
    const failed = results.filter((r) => !r.ok).map((r) => r.lens);
    const raised = carryIds(known, dedupeFindings(results));

    let dispositions: ReturnType<typeof parseDispositions> = { assigned: {}, reasons: {} };
    if (raised.length && !(stopped = run.budgetStop())) {
      dispositions = await askDispositions(run, round, raised, usage);
      snapshot = await keepSnapshot(run, snapshot, `the disposition step of review round ${round}`);
    }
    if (stopped) dispositions = { assigned: {}, reasons: {}, problem: `not asked: ${stopped}` };
    const disposed = applyDispositions(raised, dispositions.assigned, spec.block);
    for (const f of disposed) remember(known, meta, f, round, dispositions.reasons[f.id] ?? null, spec.block.includes(f.severity));

    const verdict = reviewVerdict(disposed, round, spec.rounds, failed);
    const record: ReviewRound = {
      n: round,
      lenses: lensRuns.map((l) => l.record),
      raised: raised.map((f) => f.id),
      verdict: verdict.verdict,
      dispositions_problem: dispositions.problem ?? null,
      fix: null,
    };
    rounds.push(record);
    if (verdict.verdict === 'clear' || verdict.verdict === 'needs-person' || stopped) break;
    if (verdict.verdict === 'fix') {
      stopped = run.budgetStop();
      if (stopped) break;
      record.fix = await fixRound(run, round, verdict.open, usage);
      if (record.fix.ok) snapshot = await takeSnapshot(run);
      else await restore(run, snapshot);
    }
  }

  const last = rounds.length;
  const answeredLast = new Set(
    rounds
      .at(-1)
      ?.lenses.filter((l) => l.outcome !== 'failed')
      .map((l) => l.lens) ?? [],
  );
  /**
   * Not raised again is "fixed" only when it was looked at again: a fix round after it succeeded and every lens that
   * raised it answered in the last round. Otherwise nobody checked, and it stays open.
   */
  const checked = (f: ReviewFinding, raisedIn: readonly number[]) =>
    f.lenses.every((l) => answeredLast.has(l)) && rounds.some((r) => r.n >= Math.max(...raisedIn) && r.n < last && r.fix?.ok);
  const findings: ReviewFindingRecord[] = known.map((f) => {
    const m = meta.get(f.id)!;
    const status = findingStatus(f.disposition ?? 'ACCEPT', m.rounds, last);
    return {
      id: f.id,
      severity: f.severity,
      file: f.file,
      line: f.line,
      finding: f.finding,
      suggested_fix: f.suggested_fix,
      lenses: f.lenses,
      disposition: f.disposition ?? 'ACCEPT',
      forced: m.forced,
      reason: m.reason,
      rounds: m.rounds,
      status: status === 'fixed' && !checked(f, m.rounds) ? 'open' : status,
    };
  });
  // The change leaves the review staged on the base, as a lane with checks leaves its attempts: the commit is made
  // from it and checked once more against what the review saw.
  const changed = await run.workspace.changedFiles(run.repoDir);
  return {
    review: {
      verdict: !stopped && rounds.at(-1)?.verdict === 'clear' ? 'clear' : 'needs-person',
      rounds,
      findings,
      open: findings.filter((f) => f.status === 'open').length,
      usage: usage.total(),
      stopped,
    },
    changed,
  };
}

/** Keeps the lane's latest word on a finding: its severity, every lens that ever raised it, its disposition. */
function remember(
  known: ReviewFinding[],
  meta: Map<string, { rounds: number[]; reason: string | null; forced: boolean }>,
  f: ReviewFinding,
  round: number,
  reason: string | null,
  forced: boolean,
): void {
  const seen = known.find((k) => k.id === f.id);
  if (seen) {
    seen.severity = f.severity;
    seen.disposition = f.disposition;
    for (const l of f.lenses) if (!seen.lenses.includes(l)) seen.lenses.push(l);
  } else {
    known.push({ ...f, lenses: [...f.lenses] });
  }
  const m = meta.get(f.id) ?? { rounds: [], reason: null, forced: false };
  meta.set(f.id, { rounds: [...m.rounds, round], reason: reason ?? m.reason, forced });
}

/** One lens: its prompt, its answer read and validated, asked once more when unreadable, then a failed lens. */
async function runLens(
  run: ReviewHandle,
  round: number,
  lens: string,
  prompt: string,
  usage: UsageSum,
  share: number,
): Promise<{ result: LensResult; record: LensRun }> {
  const t = Date.now();
  const name = `a${run.attempt}-r${round}-${lens}`;
  let ran = await runForAnswer(run, name, prompt, share);
  usage.add(ran.usage);
  let result = readLens(lens, ran, run.neverInChange);
  let askedAgain = false;
  const stop = result.ok ? null : run.budgetStop();
  if (stop && !result.ok) result = { ok: false, lens, problem: `${result.problem}; not asked again: ${stop}` };
  else if (!result.ok) {
    askedAgain = true;
    ran = await runForAnswer(run, `${name}-again`, `${prompt}\n\n${lensReaskPrompt(result.problem)}`, share);
    usage.add(ran.usage);
    result = readLens(lens, ran, run.neverInChange);
  }
  return {
    result,
    record: {
      lens,
      outcome: !result.ok ? 'failed' : result.refuted ? 'refuted' : 'findings',
      findings: result.ok ? result.findings.length : 0,
      asked_again: askedAgain,
      problem: result.ok ? null : result.problem,
      exit_code: ran.r.exitCode,
      duration_ms: Date.now() - t,
      log: ran.log,
      usage: ran.usage,
    },
  };
}

function readLens(lens: string, ran: Answered, secrets: readonly string[] | undefined): LensResult {
  if (ran.r.timedOut) return { ok: false, lens, problem: 'the lens ran past its timeout and was killed' };
  if (ran.r.exitCode !== 0) return { ok: false, lens, problem: `the lens exited with ${ran.r.exitCode ?? ran.r.signal}` };
  const result = parseLensOutput(lens, ran.text);
  if (!result.ok) return result;
  // Scrubbed again once parsed: JSON can spell a credential with escapes (\u0073k-…) the raw text did not show.
  const clean = (t: string) => scrub(t, secrets);
  return {
    ...result,
    findings: result.findings.map((f) => ({
      ...f,
      finding: clean(f.finding),
      suggested_fix: clean(f.suggested_fix),
      file: f.file === null ? null : clean(f.file),
    })),
  };
}

/** The worker's disposition step: every finding of the round, one disposition each (an unreadable answer: none, so all ACCEPT). */
async function askDispositions(
  run: ReviewHandle,
  round: number,
  raised: readonly ReviewFinding[],
  usage: UsageSum,
): Promise<ReturnType<typeof parseDispositions>> {
  const prompt = [
    `You made a change in ${run.lane.repo} (lane ${run.lane.id}) for this directive:`,
    '',
    run.lane.directive.trim(),
    '',
    dispositionPrompt(raised),
    'Do not change any file in this step.',
  ].join('\n');
  const ran = await runForAnswer(run, `a${run.attempt}-r${round}-dispositions`, prompt);
  usage.add(ran.usage);
  if (ran.r.timedOut || ran.r.exitCode !== 0) {
    return { assigned: {}, reasons: {}, problem: `the disposition step ${ran.r.timedOut ? 'timed out' : `exited with ${ran.r.exitCode ?? ran.r.signal}`}` };
  }
  const read = parseDispositions(ran.text, raised);
  return { ...read, reasons: Object.fromEntries(Object.entries(read.reasons).map(([id, why]) => [id, scrub(why, run.neverInChange)])) };
}

/** The worker fixes the ACCEPT findings still open, in the working copy as the review left it; fence and checks as for an attempt. */
async function fixRound(
  run: ReviewHandle,
  round: number,
  open: readonly ReviewFinding[],
  usage: UsageSum,
): Promise<{ ok: boolean; detail: string; log: string }> {
  const log = join(run.dir, 'review', `a${run.attempt}-r${round}-fix.log`);
  run.phase('running', `review round ${round}: the worker fixes ${open.length} finding${open.length > 1 ? 's' : ''}`);
  const { tried, spent } = await run.fix({
    findings: fixPrompt(open),
    promptFile: join(run.dir, 'review', `a${run.attempt}-r${round}-fix.md`),
    log,
    what: `review fix ${round}`,
  });
  usage.add(spent);
  return tried.ok
    ? { ok: true, detail: `changed ${tried.changed.length} file${tried.changed.length === 1 ? '' : 's'}; fence and checks passed`, log: run.rel(log) }
    : { ok: false, detail: `${tried.failure.message}; the change before this fix round was kept`, log: run.rel(log) };
}

interface Answered {
  r: ExecResult;
  text: string;
  usage: AgentUsage | null;
  log: string;
}

/**
 * Runs the fleet's agent with `prompt` in the working copy, inside one slot of the concurrency budget, and reads
 * what it answered on standard output. Text holding a credential the directive was handed is scrubbed before
 * Fleet keeps any of it (findings reach the manifest, the report and the PR body).
 */
async function runForAnswer(run: ReviewHandle, name: string, prompt: string, share = 1): Promise<Answered> {
  const { lane, agent } = run;
  const folder = await reviewFolder(run);
  const promptFile = join(folder, `${name}.md`);
  const answerFile = join(folder, `${name}.out`);
  const log = join(folder, `${name}.log`);
  await writeFileAtomic(promptFile, prompt);
  await rm(answerFile, { force: true });
  const given = run.caps(share);
  const inv = agentCommand(agent, { prompt_file: promptFile, repo: lane.repo, lane: lane.id, branch: lane.branch }, given);
  const r = await run.answer(inv, { log, answerFile });
  stopIfCancelled(run);
  const answer = agentAnswer(agent.preset, await readUntrustedText(answerFile, MAX_ANSWER_BYTES));
  run.chargeRun(answer.usage, given);
  return { r, text: scrub(answer.text, run.neverInChange), usage: answer.usage, log: run.rel(log) };
}

/**
 * The lane's review folder, made afresh by Fleet: whatever the directive left at that path (a link to another lane's
 * folder, say) is removed first, so Fleet's prompts, answers and logs land in a folder of its own.
 */
async function freshReviewFolder(run: ReviewHandle): Promise<void> {
  const folder = join(run.dir, 'review');
  await rm(folder, { recursive: true, force: true });
  await mkdir(folder);
}

/** The review folder, checked before each agent run: an agent that swapped it for a link stops the lane. */
async function reviewFolder(run: ReviewHandle): Promise<string> {
  const folder = join(run.dir, 'review');
  const st = await lstat(folder).catch(() => null);
  if (!st?.isDirectory())
    throw new LaneFailure('workspace-corrupted', "the lane's review folder was replaced (by a link or a file) during the review; nothing was pushed");
  return folder;
}

/** Commits the working copy as it stands (on top of whatever HEAD is) and puts the branch back on the base, the change staged. */
async function takeSnapshot(run: ReviewHandle): Promise<string> {
  const ws = run.workspace;
  if (!(await run.intact()))
    throw new LaneFailure('workspace-corrupted', "an agent run of the review removed or broke the working copy's .git; nothing was pushed");
  const commit = await ws.commitEverything(run.repoDir, 'fleet: review snapshot');
  await ws.settle(run.repoDir, run.lane.branch, run.base);
  return commit;
}

/** Puts the working copy back to `snapshot`, the change staged on the base. */
async function restore(run: ReviewHandle, snapshot: string): Promise<void> {
  await run.workspace.reset(run.repoDir, snapshot);
  await run.workspace.settle(run.repoDir, run.lane.branch, run.base);
}

/** After an agent run that was told to change nothing: anything it changed is undone (and noted), the snapshot kept. */
async function keepSnapshot(run: ReviewHandle, snapshot: string, who: string): Promise<string> {
  const ws = run.workspace;
  const now = await takeSnapshot(run);
  if ((await ws.tree(run.repoDir, now)) === (await ws.tree(run.repoDir, snapshot))) return snapshot;
  await restore(run, snapshot);
  run.note(`${who} changed the working copy, which it was told not to do; its changes were undone`);
  return snapshot;
}

function stopIfCancelled(run: ReviewHandle): void {
  if (run.signal?.aborted) throw new LaneFailure('cancelled', 'the run was interrupted while this lane was being reviewed; nothing was pushed');
}

/** What the review's agent runs spent, where the agent CLI said. */
class UsageSum {
  private sum: AgentUsage = { cost_usd: null, turns: null, input_tokens: null, output_tokens: null };
  add(u: AgentUsage | null): void {
    if (u) this.sum = addUsage(this.sum, u);
  }
  total(): AgentUsage {
    return { ...this.sum };
  }
}
