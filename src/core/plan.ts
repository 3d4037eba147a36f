/**
 * The planner: turns resolved lanes into waves and shards.
 *
 * Order of work, each step on the result of the one before:
 *  1. reject the graph if it has a dependency cycle (over every lane, excluded ones too);
 *  2. take excluded lanes out and skip their dependents, transitively, so no lane ever
 *     waits on a checkpoint that will never exist;
 *  3. layer the remaining lanes by longest path, then push lanes whose `owns` overlap a lane
 *     of the same repository in that wave, and give `exclusive` lanes a wave of their own;
 *  4. refuse a plan deeper than `max_waves` (a reusable workflow has a fixed number of wave jobs);
 *  5. shard every wave for the matrix (core/legs.ts sizes the legs; at most 256).
 *
 * Pure: no I/O, no clock. Same input, same plan, whatever the order of the input lanes.
 * Every graph walk is iterative, so 10,000 lanes deep does not blow the stack.
 */
import { globsOverlap } from './glob.js';
import { cutByCost, legCount, type LegSizing } from './legs.js';
import type { Problem, ResolvedFleet } from './validate.js';
import type { LaneSpec } from './model.js';
import type { ContentionEntry, Exclusion, Shard, Wave } from './model.js';

export interface PlannedLane {
  spec: LaneSpec;
  wave: number;
}

/** A lane that does not run because a lane it depends on (directly or transitively) is excluded. */
export interface PlanSkip {
  lane: string;
  repo: string;
  reason: string;
  /** The excluded lane at the root of the chain. */
  because_of: string;
}

export interface Plan {
  /** Runnable lanes only, sorted by (wave, id). */
  lanes: PlannedLane[];
  /** Index 0.., contiguous, none empty. */
  waves: Wave[];
  /** One entry per lane pushed to a later wave than its dependencies allowed. */
  contention: ContentionEntry[];
  /** Input exclusions (fleet file `exclude:` and forge validation), deduplicated, sorted by lane. */
  excluded: Exclusion[];
  /** Lanes not run because a dependency is excluded (transitively), sorted by lane. */
  skipped: PlanSkip[];
}

export interface PlanOptions {
  maxParallel: number;
  maxWaves: number;
  /** Shards per wave; defaults to 256, GitHub's matrix limit. */
  maxShards?: number;
  /** How shards are sized (core/legs.ts legSizing); default one lane per shard. */
  sizing?: LegSizing;
  /** The fleet file's name, for Problem.file. */
  file: string;
}

export type PlanResult = { ok: true; plan: Plan } | { ok: false; problems: Problem[] };

export const MAX_SHARDS = 256;
/** Cycles reported per strongly connected component, and in all; a tangle of thousands helps nobody. */
const MAX_CYCLES_PER_COMPONENT = 10;
const MAX_CYCLE_PROBLEMS = 50;

type DepLane = { id: string; depends_on: readonly string[] };

/** Code-unit order: locale-independent, so the plan is the same on every machine. */
function byString(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Graph helpers
// ---------------------------------------------------------------------------

/** Adjacency over known ids only (lane → the lanes it depends on), deduplicated and sorted by id. */
function adjacency(lanes: readonly DepLane[]): { ids: string[]; index: Map<string, number>; deps: number[][] } {
  const ids = [...new Set(lanes.map((l) => l.id))].sort(byString);
  const index = new Map<string, number>();
  ids.forEach((id, i) => index.set(id, i));
  const sets: Set<number>[] = ids.map(() => new Set<number>());
  for (const l of lanes) {
    const from = index.get(l.id)!;
    for (const d of l.depends_on) {
      const to = index.get(d);
      if (to !== undefined) sets[from]!.add(to);
    }
  }
  // ids are sorted, so sorting indices sorts by id.
  const deps = sets.map((s) => [...s].sort((a, b) => a - b));
  return { ids, index, deps };
}

/** Tarjan's strongly connected components, iteratively. Components come back in no particular order. */
function stronglyConnected(deps: readonly number[][]): number[][] {
  const n = deps.length;
  const order = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  const components: number[][] = [];
  let counter = 0;
  // Explicit call stack: (node, next edge to look at).
  const callNode: number[] = [];
  const callEdge: number[] = [];
  for (let root = 0; root < n; root++) {
    if (order[root] !== -1) continue;
    callNode.push(root);
    callEdge.push(0);
    order[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = 1;
    while (callNode.length) {
      const top = callNode.length - 1;
      const v = callNode[top]!;
      const edges = deps[v]!;
      const e = callEdge[top]!;
      if (e < edges.length) {
        callEdge[top] = e + 1;
        const w = edges[e]!;
        if (order[w] === -1) {
          order[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = 1;
          callNode.push(w);
          callEdge.push(0);
        } else if (onStack[w]) {
          low[v] = Math.min(low[v]!, order[w]!);
        }
        continue;
      }
      // v is done: pop it, hand its low link to its caller, close a component if v is its root.
      callNode.pop();
      callEdge.pop();
      if (callNode.length) {
        const parent = callNode[callNode.length - 1]!;
        low[parent] = Math.min(low[parent]!, low[v]!);
      }
      if (low[v] === order[v]) {
        const component: number[] = [];
        let w: number;
        do {
          w = stack.pop()!;
          onStack[w] = 0;
          component.push(w);
        } while (w !== v);
        components.push(component);
      }
    }
  }
  return components;
}

/** The shortest cycle through `start` inside `within`, as indices start → … → start; BFS, so iterative. */
function shortestCycleThrough(start: number, deps: readonly number[][], within: ReadonlySet<number>): number[] | undefined {
  const parent = new Map<number, number>();
  const queue: number[] = [start];
  for (let head = 0; head < queue.length; head++) {
    const v = queue[head]!;
    for (const w of deps[v]!) {
      if (!within.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let x = v; x !== start; x = parent.get(x)!) path.push(x);
        path.push(start);
        // Built backwards from the closing edge: reverse to read in depends_on direction.
        return [start, ...path.slice(1, -1).reverse(), start];
      }
      if (!parent.has(w)) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return undefined;
}

/**
 * Every distinct dependency cycle found: for each strongly connected component, shortest cycles
 * until each of its lanes is on at least one reported cycle (at most 10 per component).
 * Each cycle reads in `depends_on` direction (`a` depends on `b`: a → b), starts and ends at its
 * smallest id. Sorted; deterministic whatever the input order.
 */
export function findCycles(lanes: readonly DepLane[], limit = Number.POSITIVE_INFINITY): string[][] {
  const { ids, deps } = adjacency(lanes);
  const components = stronglyConnected(deps)
    .filter((c) => c.length > 1 || deps[c[0]!]!.includes(c[0]!))
    .map((c) => c.sort((a, b) => a - b))
    .sort((a, b) => a[0]! - b[0]!);
  const cycles: string[][] = [];
  for (const component of components) {
    const within = new Set(component);
    const covered = new Set<number>();
    let found = 0;
    for (const v of component) {
      if (covered.has(v)) continue;
      if (found >= MAX_CYCLES_PER_COMPONENT || cycles.length >= limit) break;
      const cycle = shortestCycleThrough(v, deps, within);
      if (!cycle) continue; // cannot happen in a strongly connected component; kept for safety
      // Rotate to start at the smallest index (ids are sorted, so the smallest id).
      const body = cycle.slice(0, -1);
      let min = 0;
      for (let i = 1; i < body.length; i++) if (body[i]! < body[min]!) min = i;
      const rotated = [...body.slice(min), ...body.slice(0, min)];
      for (const x of rotated) covered.add(x);
      cycles.push([...rotated, rotated[0]!].map((i) => ids[i]!));
      found++;
    }
    if (cycles.length >= limit) break;
  }
  return cycles;
}

/** One dependency cycle, e.g. `['a', 'b', 'c', 'a']` (a depends on b, …), or undefined when there is none. */
export function findCycle(lanes: { id: string; depends_on: string[] }[]): string[] | undefined {
  return findCycles(lanes, 1)[0];
}

/** Every lane that depends on `id`, directly or transitively, sorted; `id` itself is never listed. */
export function dependentsOf(lanes: { id: string; depends_on: string[] }[], id: string): string[] {
  const dependents = new Map<string, string[]>();
  for (const l of lanes) {
    for (const d of l.depends_on) {
      let list = dependents.get(d);
      if (!list) dependents.set(d, (list = []));
      list.push(l.id);
    }
  }
  const seen = new Set<string>([id]);
  const queue = [id];
  for (let head = 0; head < queue.length; head++) {
    for (const x of dependents.get(queue[head]!) ?? []) {
      if (seen.has(x)) continue;
      seen.add(x);
      queue.push(x);
    }
  }
  seen.delete(id);
  return [...seen].sort(byString);
}

// ---------------------------------------------------------------------------
// Sharding
// ---------------------------------------------------------------------------

/**
 * Splits one wave's lanes, in the given order, into contiguous shards. Without a sizing (or with `legs: per-lane`):
 * as many shards as lanes, up to `maxShards`, their sizes differing by at most one. With one: as many as legCount
 * gives (core/legs.ts), cut by expected cost. `parallel` is how many shards run at once: the matrix max-parallel.
 */
export function shardWave(
  index: number,
  laneIds: string[],
  maxParallel: number,
  opts: { maxShards?: number; sizing?: LegSizing } = {},
): { shards: Shard[]; parallel: number } {
  const n = laneIds.length;
  if (n === 0) return { shards: [], parallel: 0 };
  const maxShards = Math.max(1, Math.floor(opts.maxShards ?? MAX_SHARDS));
  const sizing = opts.sizing;
  const perLane = !sizing || sizing.perLane;
  const count = perLane
    ? Math.min(n, maxShards)
    : legCount(
        n,
        laneIds.reduce((t, id) => t + sizing.seconds(id), 0),
        maxParallel,
        sizing.budgetS,
        maxShards,
      );
  const runs = cutByCost(laneIds, perLane ? () => 1 : sizing.seconds, count);
  const shards = runs.map((lanes, s) => ({ id: `w${index}-s${s}`, wave: index, lanes }));
  return { shards, parallel: Math.min(Math.max(1, Math.floor(maxParallel)), shards.length) };
}

/**
 * The strategies of one target in one shard (the leg that runs them compares them and publishes the pick): each
 * joins the shard of its group's first strategy. A shard emptied by the move is dropped.
 */
export function keepGroupsTogether(shards: Shard[], specs: ReadonlyMap<string, { strategy?: { group: string } }>): Shard[] {
  const home = new Map<string, Shard>();
  const out = shards.map((s) => ({ ...s, lanes: [] as string[] }));
  shards.forEach((s, i) => {
    for (const id of s.lanes) {
      const group = specs.get(id)?.strategy?.group;
      const target = group ? (home.get(group) ?? out[i]!) : out[i]!;
      if (group && !home.has(group)) home.set(group, target);
      target.lanes.push(id);
    }
  });
  return out.filter((s) => s.lanes.length).map((s, i) => ({ ...s, id: `w${s.wave}-s${i}` }));
}

// ---------------------------------------------------------------------------
// The plan
// ---------------------------------------------------------------------------

function describeScope(owns: readonly string[], glob: string): string {
  return owns.length ? `"${glob}"` : 'the whole repository (no owns:)';
}

/** Long chains are shortened for a message: the ends are what a person needs to find it. */
function chainText(chain: readonly string[]): string {
  if (chain.length <= 12) return chain.join(' → ');
  return `${chain.slice(0, 5).join(' → ')} → … (${chain.length - 10} more) … → ${chain.slice(-5).join(' → ')}`;
}

/**
 * Matches exclusions to lanes. An exclusion naming a lane id of the fleet excludes that lane
 * (forge validation reports each lane once). One naming no lane but a repository of the fleet
 * excludes every lane of that repository. The rest are accounted for as they are (targets
 * excluded before they became lanes). The first exclusion of a lane wins: the fleet file's,
 * then the forge's in the order given.
 */
function resolveExclusions(lanes: readonly LaneSpec[], fleetExcluded: ResolvedFleet['excluded'], forge: readonly Exclusion[]): Exclusion[] {
  const byId = new Map<string, LaneSpec>();
  const byRepo = new Map<string, LaneSpec[]>();
  for (const l of lanes) {
    byId.set(l.id, l);
    let list = byRepo.get(l.repo);
    if (!list) byRepo.set(l.repo, (list = []));
    list.push(l);
  }
  const out = new Map<string, Exclusion>();
  const add = (e: Exclusion) => {
    const key = `${e.lane}\u0000${e.repo}`;
    if (!out.has(key)) out.set(key, e);
  };
  const all: Exclusion[] = [...fleetExcluded.map((e) => ({ repo: e.repo, lane: e.lane, reason: e.reason, detail: null })), ...forge];
  for (const e of all) {
    const lane = byId.get(e.lane);
    if (lane) {
      add({ repo: lane.repo, lane: lane.id, reason: e.reason, detail: e.detail ?? null });
      continue;
    }
    const inRepo = byRepo.get(e.repo);
    if (inRepo) {
      for (const l of inRepo) add({ repo: l.repo, lane: l.id, reason: e.reason, detail: e.detail ?? null });
      continue;
    }
    add({ repo: e.repo, lane: e.lane, reason: e.reason, detail: e.detail ?? null });
  }
  return [...out.values()].sort((a, b) => byString(a.lane, b.lane) || byString(a.repo, b.repo));
}

/**
 * Dependents of excluded lanes, transitively: a multi-source BFS from the excluded lanes in id
 * order, so each skipped lane names its nearest excluded root (ties: the smallest id).
 */
function skipDependents(lanes: readonly LaneSpec[], excluded: ReadonlyMap<string, Exclusion>): PlanSkip[] {
  const dependents = new Map<string, string[]>();
  for (const l of [...lanes].sort((a, b) => byString(a.id, b.id))) {
    for (const d of l.depends_on) {
      let list = dependents.get(d);
      if (!list) dependents.set(d, (list = []));
      list.push(l.id);
    }
  }
  const repoOf = new Map(lanes.map((l) => [l.id, l.repo] as const));
  const root = new Map<string, string>();
  const via = new Map<string, string>();
  const queue = [...excluded.keys()].sort(byString);
  for (const id of queue) root.set(id, id);
  for (let head = 0; head < queue.length; head++) {
    const v = queue[head]!;
    for (const w of dependents.get(v) ?? []) {
      if (root.has(w)) continue;
      root.set(w, root.get(v)!);
      via.set(w, v);
      queue.push(w);
    }
  }
  const skipped: PlanSkip[] = [];
  for (const [id, from] of via) {
    const top = root.get(id)!;
    const cause = excluded.get(top)!;
    const reason =
      from === top ? `dependency "${top}" was excluded (${cause.reason})` : `dependency "${top}" was excluded (${cause.reason}), reached through "${from}"`;
    skipped.push({ lane: id, repo: repoOf.get(id)!, reason, because_of: top });
  }
  return skipped.sort((a, b) => byString(a.lane, b.lane));
}

// ---------------------------------------------------------------------------
// Contention bookkeeping
// ---------------------------------------------------------------------------

/** Same notion of a wildcard as glob.ts, plus `\` (an escape) and `.`/`..` segments, to stay conservative. */
const MAGIC = /[*?[\]{}()!+@\\]/;

/**
 * The leading path segments of a glob that are plain text. Two globs whose literal prefixes
 * part ways (neither is a prefix of the other) cannot match one path, since each of those
 * segments must equal the path's segment at the same position; only globs along one trie path
 * need the real overlap test. Splits like glob.ts does (empty segments dropped).
 */
function literalPrefix(glob: string): string[] {
  const out: string[] = [];
  for (const segment of glob.split('/')) {
    if (!segment) continue;
    if (MAGIC.test(segment) || segment === '.' || segment === '..') break;
    out.push(segment);
  }
  return out;
}

interface ParsedGlob {
  glob: string;
  prefix: string[];
}

interface ScopeEntry {
  glob: string;
  lane: LaneSpec;
}

interface TrieNode {
  children: Map<string, TrieNode>;
  here: ScopeEntry[];
}

const newNode = (): TrieNode => ({ children: new Map(), here: [] });

/** The globs a lane owns; no `owns:` is the whole repository. */
const globsOf = (lane: LaneSpec): readonly string[] => (lane.owns.length ? lane.owns : ['**']);

/**
 * The lanes of one repository in one wave, indexed by the literal prefixes of their globs, so a
 * new lane is compared only with lanes whose files could meet its own, not with every lane of
 * the repository. Answers exactly what `scopesOverlap` would (it is `globsOverlap` per pair).
 */
class ScopeIndex {
  readonly root = newNode();
  readonly lanes: LaneSpec[] = [];

  add(lane: LaneSpec, scope: readonly ParsedGlob[]): void {
    this.lanes.push(lane);
    for (const { glob, prefix } of scope) {
      let node = this.root;
      for (const segment of prefix) {
        let child = node.children.get(segment);
        if (!child) node.children.set(segment, (child = newNode()));
        node = child;
      }
      node.here.push({ glob, lane });
    }
  }

  /** The first lane whose globs can meet `scope`'s, with the pair that meets, or undefined. */
  conflict(
    scope: readonly ParsedGlob[],
    overlaps: (a: string, b: string) => boolean,
    ignore: (lane: LaneSpec) => boolean = () => false,
  ): { lane: LaneSpec; pair: [string, string] } | undefined {
    for (const { glob, prefix } of scope) {
      // Globs at the nodes along this glob's prefix (root included) …
      let node: TrieNode | undefined = this.root;
      for (let i = 0; node; i++) {
        for (const e of node.here) if (!ignore(e.lane) && overlaps(glob, e.glob)) return { lane: e.lane, pair: [glob, e.glob] };
        if (i === prefix.length) break;
        node = node.children.get(prefix[i]!);
      }
      if (!node) continue;
      // … and every glob below it.
      const stack = [...node.children.values()];
      while (stack.length) {
        const n = stack.pop()!;
        for (const e of n.here) if (!ignore(e.lane) && overlaps(glob, e.glob)) return { lane: e.lane, pair: [glob, e.glob] };
        for (const c of n.children.values()) stack.push(c);
      }
    }
    return undefined;
  }
}

/**
 * "The next wave at or after w that is not blocked", for blocks that only ever get added:
 * a sparse union-find with path compression, so skipping over long runs of full waves is cheap.
 */
class NextOpen {
  private readonly next = new Map<number, number>();
  block(w: number): void {
    if (!this.next.has(w)) this.next.set(w, w + 1);
  }
  find(w: number): number {
    let r = w;
    for (let n = this.next.get(r); n !== undefined; n = this.next.get(r)) r = n;
    for (let x = w; x !== r; ) {
      const n = this.next.get(x)!;
      this.next.set(x, r);
      x = n;
    }
    return r;
  }
}

/** `globsOverlap` remembered per pair; cleared when it grows large, so memory stays bounded. */
function overlapMemo(): (a: string, b: string) => boolean {
  const memo = new Map<string, boolean>();
  return (a, b) => {
    if (a === b) return true; // a glob always meets itself
    const key = a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`;
    let hit = memo.get(key);
    if (hit === undefined) {
      if (memo.size >= 200_000) memo.clear();
      hit = globsOverlap(a, b);
      memo.set(key, hit);
    }
    return hit;
  };
}

interface WaveSlot {
  lanes: LaneSpec[];
  exclusive: LaneSpec | undefined;
  byRepo: Map<string, ScopeIndex>;
}

export function buildPlan(fleet: ResolvedFleet, exclusions: Exclusion[], opts: PlanOptions): PlanResult {
  const file = opts.file;
  const all = fleet.lanes;
  const problems: Problem[] = [];

  // 0. Defensive checks validate.ts normally makes: duplicate ids, unknown dependencies.
  const byId = new Map<string, LaneSpec>();
  for (const lane of all) {
    const clash = byId.get(lane.id);
    if (clash) {
      problems.push({
        file,
        field: `targets[${lane.index}].lane`,
        message: `lane id "${lane.id}" is already used by targets[${clash.index}] (${clash.repo}): give one of them a distinct lane:`,
      });
    } else byId.set(lane.id, lane);
  }
  for (const lane of all) {
    lane.depends_on.forEach((dep, j) => {
      if (!byId.has(dep)) {
        problems.push({ file, field: `targets[${lane.index}].depends_on[${j}]`, message: `"${dep}" is not a lane of this fleet` });
      }
    });
  }

  // 1. Cycles, over every lane (an excluded lane in a cycle is still a broken fleet file).
  const cycles = findCycles(all, MAX_CYCLE_PROBLEMS + 1);
  for (const cycle of cycles.slice(0, MAX_CYCLE_PROBLEMS)) {
    const first = byId.get(cycle[0]!)!;
    const next = cycle[1]!;
    problems.push({
      file,
      field: `targets[${first.index}].depends_on`,
      message:
        cycle.length === 2
          ? `lane "${first.id}" depends on itself: remove "${first.id}" from its depends_on`
          : `dependency cycle ${cycle.join(' → ')}: no lane in it can ever start; remove one of these depends_on entries (e.g. "${next}" from lane "${first.id}")`,
    });
  }
  if (cycles.length > MAX_CYCLE_PROBLEMS) {
    problems.push({ file, field: 'targets', message: `more dependency cycles were found than the ${MAX_CYCLE_PROBLEMS} listed; fix these and plan again` });
  }
  if (problems.length) return { ok: false, problems };

  // 2. Exclusions and their dependents.
  const excluded = resolveExclusions(all, fleet.excluded, exclusions);
  const excludedLanes = new Map<string, Exclusion>();
  for (const e of excluded) {
    const lane = byId.get(e.lane);
    if (lane && lane.repo === e.repo && !excludedLanes.has(e.lane)) excludedLanes.set(e.lane, e);
  }
  const skipped = skipDependents(all, excludedLanes);
  const skippedIds = new Set(skipped.map((s) => s.lane));
  const runnable = all.filter((l) => !excludedLanes.has(l.id) && !skippedIds.has(l.id));

  // 3a. Longest-path levels (Kahn). Every dependency of a runnable lane is runnable: had one been
  //     excluded or skipped, this lane would have been skipped too.
  const level = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  const waiting = new Map<string, number>();
  for (const l of runnable) {
    waiting.set(l.id, l.depends_on.length);
    for (const d of l.depends_on) {
      let list = dependents.get(d);
      if (!list) dependents.set(d, (list = []));
      list.push(l.id);
    }
  }
  const ready = runnable.filter((l) => l.depends_on.length === 0).map((l) => l.id);
  for (const id of ready) level.set(id, 0);
  for (let head = 0; head < ready.length; head++) {
    const v = ready[head]!;
    const lv = level.get(v)!;
    for (const w of dependents.get(v) ?? []) {
      level.set(w, Math.max(level.get(w) ?? 0, lv + 1));
      const left = waiting.get(w)! - 1;
      waiting.set(w, left);
      if (left === 0) ready.push(w);
    }
  }

  // 3b. Place lanes in (level, id) order: the smallest wave their dependencies allow, pushed on
  //     past waves where a same-repository lane owns overlapping files or exclusivity forbids it.
  //     A lane is compared only with lanes of its repository in the wave it tries (ScopeIndex),
  //     and runs of waves that cannot take it are skipped in one step (NextOpen).
  const order = [...runnable].sort((a, b) => level.get(a.id)! - level.get(b.id)! || byString(a.id, b.id));
  const waveOf = new Map<string, number>();
  const slots: WaveSlot[] = [];
  const contention: ContentionEntry[] = [];
  const overlaps = overlapMemo();
  const nonEmpty = new NextOpen(); // blocks waves holding any lane: where an exclusive lane may go
  const withExclusive = new NextOpen(); // blocks waves holding an exclusive lane
  const withRepo = new Map<string, NextOpen>(); // per repository, blocks waves holding one of its lanes
  type Block = { by: string; reason: string };

  // The strategies of one target run side by side: the first placed decides the wave, the others join it whatever
  // their scopes (they are the same change tried several ways, never merged together).
  const groupWave = new Map<string, number>();
  for (const lane of order) {
    const joined = lane.strategy ? groupWave.get(lane.strategy.group) : undefined;
    if (joined !== undefined) {
      const slot = slots[joined]!;
      slot.lanes.push(lane);
      slot.byRepo.get(lane.repo)!.add(
        lane,
        globsOf(lane).map((glob) => ({ glob, prefix: literalPrefix(glob) })),
      );
      waveOf.set(lane.id, joined);
      continue;
    }
    let wanted = 0;
    for (const d of lane.depends_on) wanted = Math.max(wanted, waveOf.get(d)! + 1);
    const globs = globsOf(lane);
    const scope = globs.map((glob) => ({ glob, prefix: literalPrefix(glob) }));
    const whole = globs.includes('**'); // overlaps anything at all
    let repoWaves = withRepo.get(lane.repo);
    if (!repoWaves) withRepo.set(lane.repo, (repoWaves = new NextOpen()));
    let first: Block | undefined;
    let w = wanted;
    for (;;) {
      const slot = slots[w];
      if (!slot) break; // a new wave takes anything
      if (slot.exclusive) {
        first ??= { by: slot.exclusive.id, reason: `lane "${slot.exclusive.id}" is exclusive` };
        w = lane.exclusive ? nonEmpty.find(w) : withExclusive.find(w);
        continue;
      }
      if (lane.exclusive) {
        if (!slot.lanes.length) break;
        first ??= { by: slot.lanes[0]!.id, reason: 'exclusive lane needs a wave of its own' };
        w = nonEmpty.find(w);
        continue;
      }
      const same = slot.byRepo.get(lane.repo);
      if (!same) break;
      // Lanes joined by a soft edge may share a wave whatever their scopes: the integration checks how they meet.
      const soft = (other: LaneSpec) => (lane.soft_depends_on ?? []).includes(other.id) || (other.soft_depends_on ?? []).includes(lane.id);
      const firstHard = same.lanes.find((o) => !soft(o));
      const hit = whole ? firstHard && { lane: firstHard, pair: ['**', globsOf(firstHard)[0]!] as [string, string] } : same.conflict(scope, overlaps, soft);
      if (!hit) break;
      first ??= {
        by: hit.lane.id,
        reason: `owns ${describeScope(lane.owns, hit.pair[0])} overlaps ${describeScope(hit.lane.owns, hit.pair[1])} of lane "${hit.lane.id}" in the same repository`,
      };
      w = whole ? repoWaves.find(w) : w + 1;
    }
    if (w === slots.length) slots.push({ lanes: [], exclusive: undefined, byRepo: new Map() });
    const slot = slots[w]!;
    slot.lanes.push(lane);
    nonEmpty.block(w);
    repoWaves.block(w);
    if (lane.exclusive) {
      slot.exclusive = lane;
      withExclusive.block(w);
    }
    let same = slot.byRepo.get(lane.repo);
    if (!same) slot.byRepo.set(lane.repo, (same = new ScopeIndex()));
    same.add(lane, scope);
    waveOf.set(lane.id, w);
    if (lane.strategy) groupWave.set(lane.strategy.group, w);
    if (first) contention.push({ lane: lane.id, repo: lane.repo, wanted_wave: wanted, wave: w, because_of: first.by, reason: first.reason });
  }

  // 4. The wave budget.
  if (slots.length > opts.maxWaves) {
    const chain = longestChain(runnable, level);
    const depth = chain.length;
    const pushed = slots.length - depth;
    const why =
      pushed > 0
        ? `; the dependencies alone need ${depth}, contention and exclusive lanes add ${pushed} (${contention.length} lane${contention.length === 1 ? '' : 's'} pushed)`
        : '';
    return {
      ok: false,
      problems: [
        {
          file,
          field: 'max_waves',
          message:
            `the plan needs ${slots.length} waves but max_waves is ${opts.maxWaves}${why}. ` +
            `Longest dependency chain (${depth} lane${depth === 1 ? '' : 's'}): ${chainText(chain)}. ` +
            `Raise max_waves to at least ${slots.length}, or flatten the graph: drop depends_on entries that are not needed, ` +
            `give lanes of one repository disjoint owns:, or mark fewer lanes exclusive.`,
        },
      ],
    };
  }

  // 5. Waves, shards, and the lane list.
  contention.sort((a, b) => byString(a.lane, b.lane));
  const waves: Wave[] = slots.map((slot, index) => {
    const ids = slot.lanes.map((l) => l.id).sort(byString);
    const { shards, parallel } = shardWave(index, ids, opts.maxParallel, { maxShards: opts.maxShards, sizing: opts.sizing });
    const kept = keepGroupsTogether(shards, byId);
    return { index, lanes: ids, exclusive: slot.exclusive !== undefined, shards: kept, parallel: Math.min(parallel, kept.length) };
  });
  const lanes: PlannedLane[] = order.map((spec) => ({ spec, wave: waveOf.get(spec.id)! })).sort((a, b) => a.wave - b.wave || byString(a.spec.id, b.spec.id));

  return { ok: true, plan: { lanes, waves, contention, excluded, skipped } };
}

/** The longest dependency chain, from a lane with no dependencies to the deepest lane (ties: smallest id). */
function longestChain(lanes: readonly LaneSpec[], level: ReadonlyMap<string, number>): string[] {
  const byId = new Map(lanes.map((l) => [l.id, l] as const));
  let deepest: LaneSpec | undefined;
  for (const l of lanes) {
    const lv = level.get(l.id)!;
    if (!deepest || lv > level.get(deepest.id)! || (lv === level.get(deepest.id)! && byString(l.id, deepest.id) < 0)) deepest = l;
  }
  const chain: string[] = [];
  for (let at = deepest; at; ) {
    chain.push(at.id);
    const want = level.get(at.id)! - 1;
    let next: LaneSpec | undefined;
    for (const d of at.depends_on) {
      if (level.get(d) !== want) continue;
      if (!next || byString(d, next.id) < 0) next = byId.get(d);
    }
    at = next;
  }
  return chain.reverse();
}
