/**
 * The synthetic 10,000-lane fleet: a fleet file object (what YAML parsing would
 * hand to validateFleetFile), forge exclusions, and, for the report bench, a
 * realistic set of lane results. Everything comes from a seeded PRNG.
 */
import type { Exclusion, LaneRecord, Manifest } from '../../src/core/model.js';
import { emptyEvidence } from '../../src/core/model.js';
import { int, mulberry32, pick, type Rng } from './prng.js';

export interface Fleet10kOptions {
  lanes: number;
  edges: number;
  repos: number;
  seed: number;
}

export const DEFAULT_10K: Fleet10kOptions = { lanes: 10_000, edges: 20_000, repos: 200, seed: 0xf1ee7 };

export interface Fleet10k {
  raw: Record<string, unknown>;
  /** What the forge would report (archived, no push permission, …), per lane. */
  exclusions: Exclusion[];
  stats: { lanes: number; edges: number; repos: number; exclusive: number; whole_repo_owns: number; forge_exclusions: number; file_exclusions: number };
}

export function laneId(i: number): string {
  return `lane-${String(i).padStart(5, '0')}`;
}

export function repoName(r: number): string {
  return `acme-${r % 7}/service-${String(r).padStart(3, '0')}`;
}

/**
 * The scope of one lane. Most lanes own one package (lanes of one repository
 * that pick the same package contend), some a source area, a few cross-cutting
 * globs that overlap many others (`**\/*.md`, `src/**`), a few brace sets, and
 * about 1% own the whole repository (no owns).
 */
function ownsFor(rng: Rng): string[] {
  const x = rng();
  if (x < 0.6) {
    const a = `packages/pkg-${int(rng, 40)}/**`;
    return rng() < 0.2 ? [a, `packages/pkg-${int(rng, 40)}/package.json`] : [a];
  }
  if (x < 0.75) return [`src/${pick(rng, ['api', 'cli', 'core', 'db', 'ui', 'util', 'jobs', 'auth'])}/**/*.ts`];
  if (x < 0.82) return ['docs/**', `README.md`];
  if (x < 0.87) return ['{package.json,tsconfig.json}'];
  if (x < 0.92) return [`.github/workflows/${pick(rng, ['ci', 'release', 'lint', 'deploy'])}.yml`];
  if (x < 0.95) return ['src/**'];
  if (x < 0.97) return ['**/*.md'];
  if (x < 0.99) return [`test/**/*.${pick(rng, ['spec', 'test'])}.ts`, `test/fixtures/${int(rng, 10)}/**`];
  return [];
}

export function makeFleet10k(opts: Fleet10kOptions = DEFAULT_10K): Fleet10k {
  const rng = mulberry32(opts.seed);
  const n = opts.lanes;

  // Exactly `edges` distinct edges u → v with u < v (v depends on u): acyclic by construction.
  const deps: number[][] = Array.from({ length: n }, () => []);
  const seen = new Set<number>();
  while (seen.size < opts.edges) {
    let u = int(rng, n);
    let v = int(rng, n);
    if (u === v) continue;
    if (u > v) [u, v] = [v, u];
    const key = u * n + v;
    if (seen.has(key)) continue;
    seen.add(key);
    deps[v]!.push(u);
  }

  let exclusive = 0;
  let wholeRepo = 0;
  const targets: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const owns = ownsFor(rng);
    if (owns.length === 0) wholeRepo++;
    const t: Record<string, unknown> = {
      repo: repoName(i % opts.repos),
      lane: laneId(i),
      depends_on: deps[i]!.sort((a, b) => a - b).map(laneId),
      owns,
    };
    // A handful of exclusive lanes (each needs a wave of its own), late in the graph.
    if (i % 2_500 === 2_499) {
      t.exclusive = true;
      exclusive++;
    }
    if (i % 97 === 0) t.never = ['**/*.lock'];
    targets.push(t);
  }

  // The forge excludes a few late lanes (archived repository, no push permission): their dependents are skipped.
  const exclusions: Exclusion[] = [];
  for (const i of [n - 1, n - 37, n - 150, n - 420, Math.floor(n * 0.9)]) {
    exclusions.push({ repo: repoName(i % opts.repos), lane: laneId(i), reason: i % 2 ? 'archived' : 'no-push-permission', detail: 'reported by the forge' });
  }

  const raw = {
    name: 'bench-10k',
    directive: 'Upgrade the shared lint configuration and fix what it reports.\nKeep the change minimal.',
    run: 'npx --yes @acme/codemod@latest lint-config',
    checks: ['npm test --silent'],
    max_parallel: 64,
    max_retries: 2,
    max_waves: 1000,
    never: ['.github/CODEOWNERS'],
    exclude: [{ repo: 'acme-0/legacy-monolith', reason: 'archived' }, { repo: 'acme-1/forked-tool' }],
    targets,
  };
  return {
    raw,
    exclusions,
    stats: {
      lanes: n,
      edges: seen.size,
      repos: opts.repos,
      exclusive,
      whole_repo_owns: wholeRepo,
      forge_exclusions: exclusions.length,
      file_exclusions: raw.exclude.length,
    },
  };
}

const SHA = (rng: Rng) => Array.from({ length: 40 }, () => '0123456789abcdef'[int(rng, 16)]).join('');

const FAILURES: { class: 'directive-failed' | 'check-failed' | 'push-rejected' | 'directive-timeout' | 'fence-violation'; message: string }[] = [
  {
    class: 'directive-failed',
    message: 'the directive exited with 1: npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/@acme%2fcodemod',
  },
  { class: 'check-failed', message: 'check `npm test --silent` exited with 1: FAIL src/api/handler.test.ts › returns 200 | expected `ok` got <undefined>' },
  {
    class: 'push-rejected',
    message: 'fleet/bench-10k/lane moved on the remote while this lane ran (another run or a person pushed to it); nothing was overwritten',
  },
  { class: 'directive-timeout', message: 'the directive ran past its timeout of 30 min and was killed: Error: still waiting for lock *package-lock.json*' },
  { class: 'fence-violation', message: 'changed 2 files outside owns: packages/pkg-3/index.ts, docs/[draft].md' },
];

/**
 * One result per manifest lane, as lanes report them: mostly completed (pushed,
 * some after retries), some no-ops, failures with real-looking messages,
 * dependency skips; excluded and plan-time skipped lanes come back unchanged.
 */
export function makeLaneRecords(m: Manifest, seed: number): LaneRecord[] {
  const rng = mulberry32(seed);
  const t0 = Date.parse(m.started_at);
  return m.lanes.map((l, k): LaneRecord => {
    if (l.status === 'excluded' || l.status === 'skipped') return l;
    const start = new Date(t0 + k * 50).toISOString();
    const end = new Date(t0 + k * 50 + 20_000 + int(rng, 60_000)).toISOString();
    const clone = 80 + int(rng, 200);
    const directive = 2_000 + int(rng, 30_000);
    const base = {
      ...l,
      started_at: start,
      updated_at: end,
      ended_at: end,
      base_branch: 'main',
      base_commit: SHA(rng),
      log: `lanes/${l.lane}/attempt-1.log`,
      attempts: [
        {
          n: 1,
          started_at: start,
          duration_ms: directive,
          exit_code: 0,
          signal: null,
          timed_out: false,
          failed_step: null,
          log: `lanes/${l.lane}/attempt-1.log`,
        },
      ],
    } satisfies LaneRecord;
    const x = rng();
    if (x < 0.7) {
      const retries = rng() < 0.05 ? 1 + int(rng, 2) : 0;
      const files = Array.from({ length: 1 + int(rng, 6) }, (_, i) => `packages/pkg-${int(rng, 40)}/src/file-${i}.ts`).sort();
      const commit = SHA(rng);
      return {
        ...base,
        status: 'completed',
        phase: 'pushed',
        commit,
        changed_files: files,
        ci_conclusion: 'none',
        merge_status: 'not-requested',
        retry_count: retries,
        evidence: {
          ...emptyEvidence(),
          verified_at: end,
          verified_by: 'local-git',
          branch_head: commit,
          head_matches: true,
          files_match: true,
          fence_ok: true,
          patch: `lanes/${l.lane}/patch.diff`,
        },
        timings: { wait_ms: 0, clone_ms: clone, directive_ms: directive, checks_ms: 3_000, commit_ms: 40, push_ms: 120, total_ms: clone + directive + 3_300 },
      };
    }
    if (x < 0.82) {
      return {
        ...base,
        status: 'completed',
        phase: 'no-op',
        timings: { wait_ms: 0, clone_ms: clone, directive_ms: directive, checks_ms: 0, commit_ms: null, push_ms: null, total_ms: clone + directive + 30 },
      };
    }
    if (x < 0.95) {
      const f = pick(rng, FAILURES);
      return {
        ...base,
        status: 'failed',
        phase: 'failed',
        retry_count: 2,
        error: { class: f.class, message: f.message },
        attempts: [1, 2, 3].map((n) => ({ ...base.attempts[0]!, n, exit_code: 1, failed_step: 'directive' as const, log: `lanes/${l.lane}/attempt-${n}.log` })),
        log: `lanes/${l.lane}/attempt-3.log`,
        timings: {
          wait_ms: 0,
          clone_ms: clone,
          directive_ms: directive * 3,
          checks_ms: 0,
          commit_ms: null,
          push_ms: null,
          total_ms: clone + directive * 3 + 50,
        },
      };
    }
    const dep = l.depends_on[0] ?? 'lane-00000';
    return {
      ...base,
      status: 'skipped',
      phase: 'skipped',
      attempts: [],
      log: null,
      error: { class: 'dependency-failed', message: `dependency "${dep}" failed (check-failed); this lane was not run against a missing checkpoint` },
    };
  });
}
