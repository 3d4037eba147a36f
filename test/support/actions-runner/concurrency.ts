/**
 * Workflow-level `concurrency` groups, across every run of the runner
 * (https://docs.github.com/actions/how-tos/write-workflows/choose-when-workflows-run/control-workflow-concurrency):
 * at most one holder runs per group (names are case insensitive); a newer
 * request waits, and with `queue: single` (the default) replaces an older
 * waiting one ("Canceling since a higher priority waiting request for 'G'
 * exists"); `queue: max` keeps up to 100 waiting, first come first served,
 * and cancels what comes beyond; `cancel-in-progress: true` cancels the
 * holder instead (`queue: max` with it is refused by GitHub's parser).
 *
 * A called workflow's own `concurrency` is taken by the job that calls it,
 * inside the caller's run. When that run's top level already holds the same
 * group, GitHub cancels the call: "Canceling since a deadlock was detected for
 * concurrency group: 'G' between a top level workflow and 'job'" (reported in
 * github/gh-aw#42846, forcedotcom/apex-language-support#595, rhysd/actionlint#538).
 */
import { evaluateString, type EvalEnv } from './expressions.js';
import type { TemplateToken } from '@actions/workflow-parser/templates/tokens/template-token';
import { prop } from './workflow.js';

/** GitHub's limit on waiting runs or jobs in one group with `queue: max`. */
const MAX_QUEUE = 100;

export interface ConcurrencySpec {
  group: string;
  cancelInProgress: boolean;
  queue: 'single' | 'max';
}

/** Who holds (or waits for) a group: a run's top level, or a job calling a reusable workflow in a run. */
export interface Holder {
  runId: number;
  topLevel: boolean;
  /** The job id for a call, as GitHub names it in the deadlock message. */
  label: string;
  cancel(): void;
}

interface Waiter {
  holder: Holder;
  start(release: () => void): void;
  drop(reason: string): void;
}

interface Slot {
  running?: Holder;
  pending: Waiter[];
}

/** A workflow's `concurrency:` (a string, or a mapping with group / cancel-in-progress / queue), evaluated. */
export function readConcurrency(token: TemplateToken | undefined, env: EvalEnv): ConcurrencySpec | undefined {
  if (!token) return undefined;
  const groupToken = prop(token, 'group');
  const group = evaluateString(groupToken ?? token, env);
  const cancelInProgress = groupToken ? evaluateString(prop(token, 'cancel-in-progress'), env) === 'true' : false;
  const queue = groupToken && evaluateString(prop(token, 'queue'), env) === 'max' ? 'max' : 'single';
  return { group, cancelInProgress, queue };
}

export class ConcurrencyGroups {
  private readonly slots = new Map<string, Slot>();

  /**
   * Asks for the group: `start` is called (with the release to call when the holder ends) now or when the group
   * frees; `drop` when the request is replaced, overflows the queue, or would deadlock. Returns whether it waits.
   */
  request(spec: ConcurrencySpec, holder: Holder, start: (release: () => void) => void, drop: (reason: string) => void): boolean {
    const key = spec.group.toLowerCase();
    const slot = this.slots.get(key) ?? { pending: [] };
    this.slots.set(key, slot);
    const waiter: Waiter = { holder, start, drop };
    if (!slot.running) {
      this.begin(key, slot, waiter);
      return false;
    }
    if (!holder.topLevel && slot.running.runId === holder.runId && slot.running.topLevel) {
      drop(`Canceling since a deadlock was detected for concurrency group: '${spec.group}' between a top level workflow and '${holder.label}'`);
      return false;
    }
    const replaced = `Canceling since a higher priority waiting request for '${spec.group}' exists`;
    if (spec.cancelInProgress) {
      for (const w of slot.pending.splice(0)) w.drop(replaced);
      slot.pending.push(waiter);
      slot.running.cancel();
      return true;
    }
    if (spec.queue === 'single') {
      for (const w of slot.pending.splice(0)) w.drop(replaced);
    } else if (slot.pending.length >= MAX_QUEUE) {
      drop(`Canceling since the queue for concurrency group '${spec.group}' is full (${MAX_QUEUE} waiting)`);
      return false;
    }
    slot.pending.push(waiter);
    return true;
  }

  /** The groups a run waits for (its top level, or a job calling a workflow), in the case they were requested in. */
  waitingOf(runId: number): string[] {
    const out: string[] = [];
    for (const [key, slot] of this.slots) if (slot.pending.some((w) => w.holder.runId === runId)) out.push(key);
    return out;
  }

  /** A run was cancelled: its requests still waiting leave the queue. */
  withdraw(runId: number, reason: string): void {
    for (const slot of this.slots.values()) {
      const gone = slot.pending.filter((w) => w.holder.runId === runId);
      slot.pending = slot.pending.filter((w) => w.holder.runId !== runId);
      for (const w of gone) w.drop(reason);
    }
  }

  private begin(key: string, slot: Slot, waiter: Waiter): void {
    slot.running = waiter.holder;
    let released = false;
    waiter.start(() => {
      if (released) return;
      released = true;
      if (slot.running === waiter.holder) slot.running = undefined;
      const next = slot.pending.shift();
      if (next) this.begin(key, slot, next);
    });
  }
}
