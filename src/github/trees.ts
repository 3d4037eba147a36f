/**
 * The files that differ between two commits, read from GitHub's git trees
 * rather than its compare API, which lists at most 300 files
 * (https://docs.github.com/en/rest/commits/commits#compare-two-commits) —
 * a commit's own listing stops at 3,000
 * (https://docs.github.com/en/rest/commits/commits#get-a-commit). Trees hold at
 * any size: each side's tree is read whole (`recursive`, up to 100,000 entries
 * and 7 MB: https://docs.github.com/en/rest/git/trees#get-a-tree) and, where
 * that is truncated, one level at a time, descending only into subtrees whose
 * sha differs. Equal shas mean equal content, so unchanged folders cost nothing.
 */
import { mapLimit } from '../util/pool.js';
import type { FleetOctokit } from './octokit.js';

interface TreeEntry {
  path: string;
  mode: string;
  type: string;
  sha: string;
}

interface Tree {
  truncated: boolean;
  entries: TreeEntry[];
}

/** A tree GitHub would not list in full even one level at a time (a folder of more than 100,000 entries). */
export class TreeTooLarge extends Error {}

export interface TreeDiffOptions {
  owner: string;
  repo: string;
  /** Requests in flight at once while descending (default 4). */
  concurrency?: number;
}

/** Every path added, removed or changed (content, mode or type) from commit `base` to commit `head`, sorted. */
export async function changedPathsBetween(octokit: FleetOctokit, base: string, head: string, opts: TreeDiffOptions): Promise<string[]> {
  const [a, b] = await Promise.all([treeOfCommit(octokit, base, opts), treeOfCommit(octokit, head, opts)]);
  const out = new Set<string>();
  await diffTrees(octokit, a, b, '', out, opts);
  return [...out].sort();
}

async function treeOfCommit(octokit: FleetOctokit, commit: string, opts: TreeDiffOptions): Promise<string> {
  const r = await octokit.request('GET /repos/{owner}/{repo}/git/commits/{commit_sha}', { owner: opts.owner, repo: opts.repo, commit_sha: commit });
  return r.data.tree.sha;
}

async function readTree(octokit: FleetOctokit, sha: string, recursive: boolean, opts: TreeDiffOptions): Promise<Tree> {
  const r = await octokit.request('GET /repos/{owner}/{repo}/git/trees/{tree_sha}', {
    owner: opts.owner,
    repo: opts.repo,
    tree_sha: sha,
    ...(recursive ? { recursive: '1' } : {}),
  });
  const entries = r.data.tree.map((e) => ({ path: e.path ?? '', mode: e.mode ?? '', type: e.type ?? '', sha: e.sha ?? '' }));
  return { truncated: r.data.truncated, entries };
}

/** Blobs and submodules only (what a diff names), keyed by path, from a whole listing. */
function leaves(entries: TreeEntry[]): Map<string, TreeEntry> {
  return new Map(entries.filter((e) => e.type !== 'tree').map((e) => [e.path, e]));
}

async function diffTrees(octokit: FleetOctokit, a: string | null, b: string | null, prefix: string, out: Set<string>, opts: TreeDiffOptions): Promise<void> {
  if (a === b) return;
  const [ta, tb] = await Promise.all([a ? readTree(octokit, a, true, opts) : null, b ? readTree(octokit, b, true, opts) : null]);
  if (!ta?.truncated && !tb?.truncated) {
    const la = leaves(ta?.entries ?? []);
    const lb = leaves(tb?.entries ?? []);
    for (const [p, e] of la) {
      const other = lb.get(p);
      if (!other || other.sha !== e.sha || other.mode !== e.mode) out.add(prefix + p);
    }
    for (const p of lb.keys()) if (!la.has(p)) out.add(prefix + p);
    return;
  }
  // Too big to list whole: one level, then only into what differs.
  const [la, lb] = await Promise.all([a ? readTree(octokit, a, false, opts) : null, b ? readTree(octokit, b, false, opts) : null]);
  if (la?.truncated || lb?.truncated)
    throw new TreeTooLarge(`a folder${prefix ? ` (${prefix.slice(0, -1)})` : ''} has more entries than GitHub lists in one tree`);
  const byName = (t: Tree | null) => new Map((t?.entries ?? []).map((e) => [e.path, e]));
  const ma = byName(la);
  const mb = byName(lb);
  const names = [...new Set([...ma.keys(), ...mb.keys()])];
  const descend: Array<[string | null, string | null, string]> = [];
  for (const name of names) {
    const ea = ma.get(name);
    const eb = mb.get(name);
    if (ea && eb && ea.sha === eb.sha && ea.mode === eb.mode) continue;
    const subA = ea?.type === 'tree' ? ea.sha : null;
    const subB = eb?.type === 'tree' ? eb.sha : null;
    // A file on either side is a changed path; a folder on either side is compared below.
    if ((ea && ea.type !== 'tree') || (eb && eb.type !== 'tree')) out.add(prefix + name);
    if (subA || subB) descend.push([subA, subB, `${prefix}${name}/`]);
  }
  await mapLimit(descend, opts.concurrency ?? 4, ([x, y, p]) => diffTrees(octokit, x, y, p, out, opts));
}
