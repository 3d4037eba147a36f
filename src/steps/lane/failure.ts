/**
 * How a lane fails: a `LaneFailure` carries the error class the record keeps, so every phase (and the review) says
 * which step failed and why in words a person acts on, and Fleet itself never crashes on a lane's trouble.
 */
import type { ErrorClass, LaneRecord } from '../../core/model.js';
import type { LaneContext } from './context.js';

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

export function firstLines(text: string, max = 600): string {
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

/** A forge call that fails is this lane's failure, with a class that says which step, never a crash of Fleet. */
export async function forgeCall<T>(errorClass: ErrorClass, what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw new LaneFailure(errorClass, `${what} failed: ${(err as Error).message}`);
  }
}

/** A lane stopped by an interrupt wherever it was (a clone, a push, a forge call): cancelled, saying where. */
export function interrupted(rec: LaneRecord, err: unknown): LaneFailure {
  const before = ['queued', 'cloning', 'running', 'checking', 'reviewing', 'committing', 'waiting'].includes(rec.phase);
  const where = `the run was interrupted while this lane was ${rec.phase}`;
  const what = before
    ? 'nothing was pushed'
    : rec.phase === 'pushing'
      ? 'the push may or may not have reached the forge; a resumed run finds out'
      : 'what it pushed stays on the forge; a resumed run checks it again';
  return new LaneFailure('cancelled', `${where}; ${what} (${firstLines(String((err as Error).message ?? err), 200)})`);
}

/** `started`: whether the lane's directive has run yet; a lane stopped before it (waiting for a slot, say) never ran. */
export function stopIfCancelled(ctx: LaneContext, started = true): void {
  if (!ctx.signal?.aborted) return;
  throw new LaneFailure(
    'cancelled',
    started
      ? 'the run was interrupted while this lane ran; nothing was pushed'
      : "the run was interrupted before this lane's directive started; nothing was pushed",
  );
}
