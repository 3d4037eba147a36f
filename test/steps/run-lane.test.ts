/**
 * One lane run on its own (as a matrix job runs it) on real repositories, with the local workspace and executor:
 * what the directive sees, what the lane records of each attempt, and the refusals only a lane on its own can meet.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LaneRecord } from '../../src/core/model.js';
import { validateFleetFile, type ResolvedFleet } from '../../src/core/validate.js';
import { LocalForge } from '../../src/local/forge.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock } from '../../src/ports.js';
import { runLane, type LaneContext } from '../../src/steps/lane/index.js';
import { planStep } from '../../src/steps/plan.js';
import { createRepo, readRemoteFile, remoteBranches, tgit } from '../support/repos.js';
import { removeDir, tempDir } from '../integration/helpers.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

const FILE = 'fleet.yml';
let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-run-lane-');
});
afterEach(() => removeDir(dir));

/** The fleet `spec` over ./svc.git (created), planned; returns what runLane needs for its first lane. */
async function laneOf(spec: Record<string, unknown>, target: Record<string, unknown> = {}) {
  const repo = await createRepo(dir, 'svc', { 'README.md': '# svc\n', 'src/a.ts': 'a\n' }, { clone: false });
  const v = validateFleetFile(
    { name: 'lanes', directive: 'Stamp it.', isolation: 'off', max_retries: 0, ...spec, targets: [{ repo: './svc.git', ...target }] },
    FILE,
  );
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const fleet: ResolvedFleet = v.fleet;
  const forge = new LocalForge({ baseDir: dir });
  const planned = await planStep(fleet, forge, systemClock, { file: FILE, fleet_id: 'fleet-lanes-1' });
  if (!planned.ok) throw new Error(JSON.stringify(planned.problems));
  const events: string[] = [];
  const root = join(dir, 'ws');
  const ctx: LaneContext = {
    fleet_id: 'fleet-lanes-1',
    file: planned.fleet.file,
    forge,
    workspace: localWorkspace,
    exec: localExecutor,
    clock: systemClock,
    root,
    dryRun: false,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    onUpdate: (rec: LaneRecord, detail: string) => void events.push(`${rec.phase}: ${detail}`),
  };
  return { repo, ctx, spec: planned.fleet.lanes[0]!, start: planned.manifest.lanes[0]!, events, root };
}

describe('runLane', () => {
  it('hands the directive its lane in FLEET_* variables', async () => {
    const { ctx, spec, start, root } = await laneOf({ run: 'env | grep ^FLEET_ | sort > "$FLEET_LANE_DIR/env.txt"' });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'no-op' });
    const env = Object.fromEntries(
      readFileSync(join(root, 'lanes', 'svc', 'env.txt'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(env).toEqual({
      FLEET_ID: 'fleet-lanes-1',
      FLEET_NAME: 'lanes',
      FLEET_DIRECTIVE: 'Stamp it.',
      FLEET_REPO: './svc.git',
      FLEET_LANE: 'svc',
      FLEET_BRANCH: 'fleet/lanes/svc',
      FLEET_BASE_BRANCH: 'main',
      FLEET_WORKSPACE: root,
      FLEET_LANE_DIR: join(root, 'lanes', 'svc'),
      FLEET_ATTEMPT: '1',
      FLEET_FEEDBACK: '',
      FLEET_DRY_RUN: '0',
      FLEET_DISCOVERIES: join(root, 'lanes', 'svc', 'discoveries.txt'),
      FLEET_RELAY: join(root, 'lanes', 'svc', 'relay.md'),
    });
  });

  it('a failing attempt is retried with its failure fed back, and each attempt is recorded', async () => {
    const { ctx, spec, start, repo } = await laneOf({
      max_retries: 1,
      run: 'if [ "$FLEET_ATTEMPT" = 1 ]; then echo "fatal: first try" >&2; exit 4; fi; printf "%s" "$FLEET_FEEDBACK" > feedback.txt',
    });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'pushed', retry_count: 1, changed_files: ['feedback.txt'], log: 'lanes/svc/attempt-2.log' });
    expect(rec.attempts.map((a) => [a.n, a.exit_code, a.failed_step, a.timed_out, a.log])).toEqual([
      [1, 4, 'directive', false, 'lanes/svc/attempt-1.log'],
      [2, 0, null, false, 'lanes/svc/attempt-2.log'],
    ]);
    const feedback = await readRemoteFile(repo.remote, 'fleet/lanes/svc', 'feedback.txt');
    expect(feedback).toMatch(/^the directive exited with 4\. Output:\n(.*\n)*.*fatal: first try/);
    // The second attempt's commit says which attempt made it.
    const message = (await tgit(['-C', repo.remote, 'log', '-1', '--format=%B', 'fleet/lanes/svc'])).stdout;
    expect(message).toBe('lanes: svc\n\nStamp it.\n\nFleet-Id: lanes\nFleet-Lane: svc\nFleet-Attempt: 2\n\n');
  });

  it('a directive that fails every attempt: directive-failed with the gist of its output', async () => {
    const { ctx, spec, start } = await laneOf({ run: 'echo working; echo "Error: no such thing" >&2; echo bye; exit 2' });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({
      status: 'failed',
      phase: 'failed',
      error: { class: 'directive-failed', message: 'the directive exited with 2: Error: no such thing' },
    });
  });

  it('the first commit has no attempt trailer, and a commit_message replaces the title', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md', commit_message: 'chore: stamp' });
    expect((await runLane(ctx, spec, start)).status).toBe('completed');
    const message = (await tgit(['-C', repo.remote, 'log', '-1', '--format=%B', 'fleet/lanes/svc'])).stdout;
    expect(message).toBe('chore: stamp\n\nStamp it.\n\nFleet-Id: lanes\nFleet-Lane: svc\n\n');
  });

  it('a lane whose branch is its base branch is refused before the directive runs, even without the planner', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md' });
    const rec = await runLane(ctx, { ...spec, branch: 'main' }, start);
    expect(rec).toMatchObject({
      status: 'failed',
      error: { class: 'invalid-input', message: 'the lane branch main is the base branch: Fleet never commits straight onto a base branch' },
    });
    expect(rec.attempts).toEqual([]);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it("a repository that cannot be cloned: clone-failed, with git's words", async () => {
    const { ctx, spec, start } = await laneOf({ run: 'true' });
    const rec = await runLane({ ...ctx, forge: new LocalForge({ baseDir: join(dir, 'elsewhere') }) }, spec, start);
    expect(rec.status).toBe('failed');
    expect(rec.error?.class).toBe('clone-failed');
    expect(rec.error?.message).toMatch(/elsewhere\/svc\.git|does not exist|not a git repository|not found/i);
  });

  it('a fence violation by a shell command is not retried: it would do the same again', async () => {
    const { ctx, spec, start } = await laneOf({ max_retries: 2, run: 'echo x >> README.md' }, { owns: ['src/**'] });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'failed', error: { class: 'fence-violation' } });
    expect(rec.attempts.map((a) => [a.n, a.failed_step])).toEqual([[1, 'fence']]);
  });

  it('a check that fails names the check and its exit code; the lane is not pushed', async () => {
    const { ctx, spec, start, repo } = await laneOf({
      run: 'echo x >> README.md',
      checks: ['true', 'echo "lint failed: 3 problems"; exit 7', 'touch never-ran'],
    });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({
      status: 'failed',
      error: { class: 'check-failed', message: 'check `echo "lint failed: 3 problems"; exit 7` exited with 7: lint failed: 3 problems' },
    });
    expect(rec.attempts.map((a) => [a.exit_code, a.failed_step])).toEqual([[7, 'check']]);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it('checks do not run when nothing changed', async () => {
    const { ctx, spec, start, events } = await laneOf({ run: 'true', checks: ['exit 1'] });
    expect(await runLane(ctx, spec, start)).toMatchObject({ status: 'completed', phase: 'no-op', ci_conclusion: null, merge_status: null });
    expect(events.some((e) => e.startsWith('checking'))).toBe(false);
  });

  it("locally, a lane's own checks are its CI: success when it has checks, none without; not merged unless asked", async () => {
    const withChecks = await laneOf({ run: 'echo x >> README.md', checks: ['true'] });
    const rec = await runLane(withChecks.ctx, withChecks.spec, withChecks.start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'pushed', ci_conclusion: 'success', merge_status: 'not-requested' });
    expect(withChecks.events).toContain('checking: attempt 1: running 1 check');
    removeDir(dir);
    dir = tempDir('fleet-run-lane-');
    const without = await laneOf({ run: 'echo x >> README.md' });
    expect(await runLane(without.ctx, without.spec, without.start)).toMatchObject({ ci_conclusion: 'none' });
  });

  it('tells its progress: cloning, running, committing, pushing, pushed', async () => {
    const { ctx, spec, start, events } = await laneOf({ run: 'echo x >> README.md; echo y > NEW.md', checks: ['true', 'true'] });
    const rec = await runLane(ctx, spec, start);
    // Each line says each thing once: the phase, then what the phase alone does not say.
    expect(events).toEqual([
      `cloning: ${spec.repo}`,
      'running: attempt 1 of 1',
      'checking: attempt 1: running 2 checks',
      'committing: 2 files',
      'pushing: to fleet/lanes/svc',
      `pushed: fleet/lanes/svc at ${rec.commit!.slice(0, 12)}`,
      'pushed: completed',
    ]);
  });

  it('a dry run keeps the patch and pushes nothing', async () => {
    const { ctx, spec, start, repo, root } = await laneOf({ run: 'echo stamped >> README.md' });
    const rec = await runLane({ ...ctx, dryRun: true }, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'dry-run', changed_files: ['README.md'], evidence: { patch: 'lanes/svc/patch.diff' } });
    expect(readFileSync(join(root, 'lanes', 'svc', 'patch.diff'), 'utf8')).toContain('+stamped');
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it('run again with the same change, a lane keeps the commit already pushed and pushes nothing', async () => {
    const { ctx, spec, start, events, repo } = await laneOf({ run: 'echo stamped >> README.md' });
    const first = await runLane(ctx, spec, start);
    events.length = 0;
    const again = await runLane(ctx, spec, start);
    expect(again).toMatchObject({ status: 'completed', phase: 'pushed', commit: first.commit, timings: { push_ms: 0 } });
    expect(events).toContain('pushed: fleet/lanes/svc already up to date');
    expect(events.some((e) => e.startsWith('pushing'))).toBe(false);
    expect((await tgit(['-C', repo.remote, 'rev-parse', 'fleet/lanes/svc'])).stdout.trim()).toBe(first.commit);
  });

  it('an interrupt before the lane runs its directive: cancelled, nothing run or pushed', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md' });
    const stop = new AbortController();
    stop.abort();
    const rec = await runLane({ ...ctx, signal: stop.signal }, spec, start);
    expect(rec).toMatchObject({ status: 'failed', phase: 'failed', error: { class: 'cancelled' } });
    expect(rec.attempts).toEqual([]);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it('an interrupt while the directive runs: the attempt is recorded, the lane cancelled, nothing pushed', async () => {
    // The interrupt comes once the directive has started (it leaves a marker), not after a fixed time: on a busy
    // machine the clone alone has taken longer than a fixed delay.
    const marker = join(dir, 'started');
    const { ctx, spec, start, repo } = await laneOf({ run: `touch '${marker}'; sleep 2; echo x >> README.md` });
    const stop = new AbortController();
    const started = (async () => {
      for (let i = 0; i < 600 && !existsSync(marker); i++) await new Promise((r) => setTimeout(r, 25));
      stop.abort();
    })();
    const rec = await runLane({ ...ctx, signal: stop.signal }, spec, start);
    await started;
    expect(rec).toMatchObject({ status: 'failed', error: { class: 'cancelled', message: 'the run was interrupted while this lane ran; nothing was pushed' } });
    expect(rec.attempts.map((a) => [a.n, a.exit_code, a.failed_step])).toEqual([[1, 0, 'directive']]);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });
});
