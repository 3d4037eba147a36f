/**
 * A dependency chain across three GitHub repositories (a → b → c): each lane
 * starts only once its dependency's checkpoint holds on the forge. With
 * `checkpoint: pushed` that is the dependency's branch at its commit; with
 * `checkpoint: merged` the dependency's PR merged (squash) into its base.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci, type RequestRecord } from '../support/github-emulator/index.js';
import { fleet, lane, readEvents, readManifest } from '../integration/helpers.js';
import { history, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

const CHAIN = ['core', 'api', 'web'] as const;

async function chainRepos(f: Flow): Promise<void> {
  for (const name of CHAIN) await f.emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
}

function chainFile(f: Flow, extra: Record<string, unknown>): string {
  return f.fleetFile({
    name: 'chain',
    directive: 'Record the dependency.',
    run: 'echo "after: $FLEET_LANE" > CHAIN.md',
    max_retries: 0,
    targets: [{ repo: 'acme/core' }, { repo: 'acme/api', depends_on: ['core'] }, { repo: 'acme/web', depends_on: ['api'] }],
    ...extra,
  });
}

/** The first request of a lane's own repository: its clone. */
function firstTouch(requests: RequestRecord[], repo: string): RequestRecord {
  const r = requests.find((q) => q.path.startsWith(`/git/${repo}.git/`));
  if (!r) throw new Error(`nothing touched ${repo}`);
  return r;
}

describe('a dependency chain across three repositories on GitHub', () => {
  it("checkpoint: pushed — each lane starts after its dependency's branch is on the forge at the dependency's commit", async () => {
    flow = await startFlow();
    const { emu } = flow;
    await chainRepos(flow);
    emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['test'])));
    const file = chainFile(flow, { checkpoint: 'pushed', ci: { wait: true, timeout_minutes: 1 } });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(file, ws);
    expect(r.code, r.stderr).toBe(0);

    const m = readManifest(ws);
    expect(m.waves.map((w) => w.lanes)).toEqual([['core'], ['api'], ['web']]);
    expect(m.summary).toMatchObject({ total: 3, completed: 3 });
    // Each lane waited for its CI (ci.wait) and then ended where it was, its PR open: `fleet status` never shows a
    // finished lane as still in `ci`.
    expect(m.lanes.map((l) => [l.lane, l.status, l.phase, l.ci_conclusion])).toEqual(CHAIN.map((id) => [id, 'completed', 'pr-open', 'success']));
    const status = await fleet(['status', join(ws, 'fleet-status.json')], { cwd: flow.dir });
    for (const id of CHAIN) expect(status.stdout).toMatch(new RegExp(`\\| acme/${id} \\| ${id} \\| \\d \\| pr-open \\|`));
    expect(status.stdout).not.toMatch(/\| ci \|/);
    const events = readEvents(ws);
    for (const [dep, id] of [
      ['core', 'api'],
      ['api', 'web'],
    ] as const) {
      const d = lane(m, dep);
      // The dependency's push reached the forge (receive-pack done) …
      const push = emu
        .find({ kind: 'git', operationId: 'git-receive-pack', method: 'POST', status: 200 })
        .find((q) => q.path === `/git/acme/${dep}.git/git-receive-pack`)!;
      expect(push).toBeDefined();
      // … then the runner read the dependency's branch on the forge, and found it at the dependency's commit …
      const touch = firstTouch(emu.requests, `acme/${id}`);
      const checks = emu
        .find({ route: '/repos/{owner}/{repo}/git/ref/{ref}', method: 'GET', status: 200 })
        .filter((q) => q.path === `/repos/acme/${dep}/git/ref/${encodeURIComponent(`heads/${d.branch}`)}` && q.id < touch.id);
      expect(checks.length, `${id} read ${dep}'s branch before it started`).toBeGreaterThan(0);
      expect(checks[0]!.time).toBeGreaterThanOrEqual(push.time + push.durationMs);
      expect(await emu.branchSha(`acme/${dep}`, d.branch!)).toBe(d.commit);
      // … and only then did the dependent clone its repository.
      expect(touch.time).toBeGreaterThanOrEqual(push.time + push.durationMs);
      expect(touch.id).toBeGreaterThan(push.id);
      // The events log agrees: the dependent left the queue after its dependency completed.
      const depDone = events.find((e) => e.lane === dep && e.status === 'completed')!;
      const started = events.find((e) => e.lane === id && e.to === 'cloning')!;
      expect(Date.parse(started.time)).toBeGreaterThanOrEqual(Date.parse(depDone.time));
      expect(Date.parse(started.time)).toBeGreaterThanOrEqual(push.time);
    }
    // Nothing merged: the base branches are where they were.
    for (const name of CHAIN) expect(history(emu, `acme/${name}`, 'main')).toHaveLength(1);
    emu.assertNoViolations();
  });

  it("checkpoint: merged with merge: when-green (squash) — each lane starts after its dependency's PR is merged; the bases hold the squash commits", async () => {
    // GitHub answers `mergeable: null` at first after a push: the forge polls (FLEET_GITHUB_POLL_MS) until it knows.
    flow = await startFlow({ mergeableNullReads: 2 });
    const { emu } = flow;
    await chainRepos(flow);
    emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['test'])));
    const file = chainFile(flow, { checkpoint: 'merged', merge: { policy: 'when-green', method: 'squash' }, ci: { wait: true, timeout_minutes: 1 } });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(file, ws);
    expect(r.code, r.stderr).toBe(0);

    const m = readManifest(ws);
    expect(m.summary).toMatchObject({ total: 3, completed: 3 });
    const merges = emu.find({ route: '/repos/{owner}/{repo}/pulls/{pull_number}/merge', method: 'PUT' });
    expect(merges.map((q) => [q.path, q.status])).toEqual(CHAIN.map((n) => [`/repos/acme/${n}/pulls/1/merge`, 200]));
    expect(merges.map((q) => (q.body as { merge_method?: string }).merge_method)).toEqual(['squash', 'squash', 'squash']);

    for (const name of CHAIN) {
      const rec = lane(m, name);
      expect(rec, name).toMatchObject({ status: 'completed', phase: 'merged', merge_status: 'merged', ci_conclusion: 'success' });
      const [pr, ...more] = emu.pullRequests(`acme/${name}`);
      expect(more).toHaveLength(0);
      expect(pr).toMatchObject({ state: 'closed', headSha: rec.commit });
      expect(pr!.merged_at).not.toBeNull();
      // The base branch really received the squash commit: one parent (the old base), the lane's tree, the PR's merge commit.
      const base = history(emu, `acme/${name}`, 'main');
      expect(base).toHaveLength(2);
      const [squash, initial] = base;
      expect(squash!.sha).toBe(pr!.merge_commit_sha);
      expect(squash!.parents).toEqual([initial!.sha]);
      expect(initial!.sha).toBe(rec.base_commit);
      expect(squash!.subject).toBe(`chain: ${name} (#${pr!.number})`);
      expect(await emu.branchSha(`acme/${name}`, 'main')).toBe(squash!.sha);
      // mergeable was null twice, then known: the forge read the PR until it was.
      const reads = emu.find({ route: '/repos/{owner}/{repo}/pulls/{pull_number}', method: 'GET' }).filter((q) => q.path === `/repos/acme/${name}/pulls/1`);
      expect(reads.length, name).toBeGreaterThanOrEqual(3);
    }
    for (const [dep, id] of [
      ['core', 'api'],
      ['api', 'web'],
    ] as const) {
      const merged = merges.find((q) => q.path === `/repos/acme/${dep}/pulls/1/merge`)!;
      const touch = firstTouch(emu.requests, `acme/${id}`);
      expect(touch.id, `${id} started after ${dep} merged`).toBeGreaterThan(merged.id);
      expect(touch.time).toBeGreaterThanOrEqual(merged.time + merged.durationMs);
      const started = readEvents(ws).find((e) => e.lane === id && e.to === 'cloning')!;
      expect(Date.parse(started.time)).toBeGreaterThanOrEqual(merged.time + merged.durationMs);
    }
    emu.assertNoViolations();
  });
});
