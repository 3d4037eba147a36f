/**
 * An interrupted `fleet run`: the waves get a grace to stop by themselves, lanes still busy after it end cancelled,
 * and a second interrupt writes the manifest and report at once, synchronously, from what the run knows then.
 */
import { join } from 'node:path';
import { notStarted } from '../../core/admission.js';
import { finalizeManifest } from '../../core/manifest.js';
import { type LaneRecord, type Manifest, TERMINAL } from '../../core/model.js';
import { renderReport } from '../../core/report.js';
import { writeFileAtomicSync } from '../../util/fs.js';
import { writeManifestSync } from '../../util/manifest-seal.js';
import { manifestPath } from './process-workspace.js';

/** How long lanes get to stop after an interrupt before the run ends without them. */
export const INTERRUPT_GRACE_MS = 10_000;

/**
 * Waits for the waves to end. After an interrupt, waits at most `graceMs` more; true when the
 * grace was spent with lanes still busy.
 */
export async function untilDoneOrGraceSpent(waves: Promise<void>, signal: AbortSignal | undefined, graceMs: number): Promise<boolean> {
  if (!signal) {
    await waves;
    return false;
  }
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const spent = new Promise<true>((resolve) => {
    const start = () => {
      timer = setTimeout(() => resolve(true), graceMs);
    };
    if (signal.aborted) start();
    else {
      onAbort = start;
      signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([waves.then(() => false as const), spent]);
  } finally {
    if (timer) clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/** A lane that was still busy when the run ended after an interrupt. */
export function stuckLane(rec: LaneRecord, now: string, graceMs: number): LaneRecord {
  if (rec.status === 'queued') return notStarted(rec, now);
  const s = Math.round(graceMs / 1000);
  const message =
    rec.status === 'completed'
      ? `the run was interrupted while the forge confirmed this lane; it ended unconfirmed after ${s} s`
      : `the run was interrupted while this lane was ${rec.phase}, and the lane did not stop within ${s} s (a git or forge call that did not answer); ${
          rec.phase === 'pushing' || rec.commit === null ? 'whether it pushed is unknown' : 'what it pushed stays on the forge'
        }`;
  return { ...rec, status: 'failed', phase: 'failed', updated_at: now, ended_at: now, error: { class: 'cancelled', message } };
}

/** The fleet this process is running, for a last-resort write of its state (a second interrupt). */
let active: { root: string; snapshot: () => Manifest } | null = null;

/** The fleet this process now runs (null: none), for writeInterruptedState. */
export function trackRunningFleet(fleet: { root: string; snapshot: () => Manifest } | null): void {
  active = fleet;
}

/**
 * Writes the running fleet's manifest and report at once, synchronously, with every lane that
 * has not ended recorded as cancelled: for an exit that cannot wait for the lanes (a second
 * Ctrl-C). Returns the workspace written, or null when no fleet runs.
 */
export function writeInterruptedState(now: Date = new Date()): string | null {
  if (!active) return null;
  const iso = now.toISOString();
  const snap = active.snapshot();
  const lanes = snap.lanes.map((l): LaneRecord => {
    if ((TERMINAL.has(l.status) && l.status !== 'completed') || (l.status === 'completed' && l.evidence.verified_at)) return l;
    if (l.status === 'queued') return notStarted(l, now.toISOString());
    const message = `Fleet was stopped at once (a second interrupt, or the lanes did not stop in time) while this lane was ${l.phase}`;
    return { ...l, status: 'failed', phase: 'failed', updated_at: iso, ended_at: iso, error: { class: 'cancelled', message } };
  });
  const manifest = finalizeManifest({ ...snap, lanes }, iso);
  writeManifestSync(manifestPath(active.root), manifest);
  writeFileAtomicSync(join(active.root, 'report.md'), `${renderReport(manifest, { now: iso, workspace: active.root })}\n`);
  return active.root;
}
