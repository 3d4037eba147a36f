/**
 * The jobs of one run attempt as a graph, flattened across called workflows
 * (a caller job's children are `caller/child`), and what "Re-run failed jobs"
 * takes from it (https://docs.github.com/actions/how-tos/manage-workflow-runs/re-run-workflows-and-jobs):
 * the failed jobs and every job that depends on them run again; the other
 * jobs keep their results and outputs; a matrix job re-runs only its failed legs.
 */
import type { Json } from './expressions.js';
import type { Conclusion, LegResult, Permissions } from './types.js';
import type { JobDef, LoadedWorkflow } from './workflow.js';

/** One workflow instance in the run: the entry workflow, or a called one. */
export interface Scope {
  /** `''` for the entry workflow, `'fleet / '` for the jobs a caller job named "fleet" called. */
  displayPrefix: string;
  /** `''` or `'fleet/'`. */
  keyPrefix: string;
  workflow: LoadedWorkflow;
  inputs: Record<string, Json>;
  secrets: Record<string, string>;
  /** What a job of this workflow gets when neither it nor the workflow sets `permissions`. */
  inherited: Permissions;
  /** The caller job's key, for a called workflow. */
  caller?: string;
}

export interface Leg {
  index: number;
  name: string;
  matrix: Record<string, Json>;
  conclusion?: Conclusion;
  result?: LegResult;
  /** Kept from an earlier attempt (not run in this one). */
  carried?: boolean;
  attempt?: number;
  emuJobId?: number;
}

export interface JobNode {
  key: string;
  def: JobDef;
  scope: Scope;
  /** Keys of the jobs this one needs (same scope). */
  needs: string[];
  status: 'pending' | 'running' | 'done';
  result?: Conclusion;
  outputs: Record<string, string>;
  legs: Leg[];
  /** For a caller job: the workflow it called and the keys of that workflow's jobs. */
  childScope?: Scope;
  children?: string[];
  /** The result comes from an earlier attempt. */
  carried?: boolean;
  /** The emulator job that stands for a skipped or failed-before-start job. */
  placeholderJobId?: number;
  /** A caller job holding its called workflow's concurrency group: frees it. */
  releaseGroup?: () => void;
}

export type RerunMark = 'failed' | 'dependent' | 'caller';

function isLeaf(n: JobNode): boolean {
  return n.def.model.type === 'job';
}

/** Which jobs "Re-run failed jobs" runs again, and why. */
export function rerunMarks(nodes: Map<string, JobNode>): Map<string, RerunMark> {
  const marks = new Map<string, RerunMark>();
  for (const n of nodes.values()) if (isLeaf(n) && (n.result === 'failure' || n.result === 'cancelled')) marks.set(n.key, 'failed');
  let changed = true;
  while (changed) {
    changed = false;
    for (const n of nodes.values()) {
      const mark = marks.get(n.key);
      // A job that needs a re-run job runs again in full.
      if (mark !== 'dependent' && mark !== 'failed' && n.needs.some((k) => marks.has(k))) {
        marks.set(n.key, 'dependent');
        changed = true;
      }
      // A caller whose called jobs run again is itself re-evaluated (its result and outputs).
      if (!marks.has(n.key) && n.children?.some((k) => marks.has(k))) {
        marks.set(n.key, 'caller');
        changed = true;
      }
      // The jobs of a workflow called by a job that re-runs in full all run again.
      if (marks.get(n.key) === 'dependent') {
        for (const k of n.children ?? []) {
          if (marks.get(k) !== 'dependent') {
            marks.set(k, 'dependent');
            changed = true;
          }
        }
      }
    }
  }
  return marks;
}

/** The node map of the next attempt of "Re-run failed jobs". */
export function nextAttemptNodes(previous: Map<string, JobNode>): Map<string, JobNode> {
  const marks = rerunMarks(previous);
  const out = new Map<string, JobNode>();
  for (const n of previous.values()) {
    const mark = marks.get(n.key);
    if (!mark) {
      out.set(n.key, { ...n, legs: n.legs.map((l) => ({ ...l, carried: true })), carried: true });
      continue;
    }
    // A caller re-run in full forgets its called jobs: they are created again when it starts.
    if (mark === 'dependent' && n.children) continue;
    const parentMark = n.scope.caller ? marks.get(n.scope.caller) : undefined;
    if (parentMark === 'dependent') continue;
    const legs = mark === 'failed' ? n.legs.filter((l) => l.conclusion === 'success' || l.conclusion === 'skipped').map((l) => ({ ...l, carried: true })) : [];
    const node: JobNode = { ...n, status: 'pending', outputs: mark === 'failed' ? n.outputs : {}, legs, carried: false };
    delete node.result;
    delete node.placeholderJobId;
    if (mark === 'dependent') {
      delete node.childScope;
      delete node.children;
    }
    out.set(n.key, node);
  }
  return out;
}

/** Every job `key` transitively needs (its ancestors through `needs`, inside its scope). */
export function ancestors(nodes: Map<string, JobNode>, key: string): JobNode[] {
  const out: JobNode[] = [];
  const seen = new Set<string>();
  const walk = (k: string) => {
    for (const dep of nodes.get(k)?.needs ?? []) {
      if (seen.has(dep)) continue;
      seen.add(dep);
      const n = nodes.get(dep);
      if (n) {
        out.push(n);
        walk(dep);
      }
    }
  };
  walk(key);
  return out;
}
