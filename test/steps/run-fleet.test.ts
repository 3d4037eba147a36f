/**
 * runFleet, the local runner, on real repositories through the local forge: what it writes (plan, events, the
 * live and final manifest, lane results), waves gated on their dependencies, the concurrency budget, resume, a
 * workspace that holds an earlier run or is locked, interrupts, and the last-resort write of a second Ctrl-C.
 * Nothing here waits on the clock for an outcome: tests wait on the run's own events.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/core/model.js';
import { validateFleetFile, type ResolvedFleet } from '../../src/core/validate.js';
import { LocalForge } from '../../src/local/forge.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock } from '../../src/ports.js';
import { exitCodeFor } from '../../src/steps/outcome.js';
import { runFleet, type FleetEvent, type RunOptions } from '../../src/steps/drivers/process.js';
import { writeInterruptedState } from '../../src/steps/drivers/process-interrupt.js';
import { manifestPath } from '../../src/steps/drivers/process-workspace.js';
import { lockWorkspace } from '../../src/util/lock.js';
import { createRepo, remoteBranches, remoteHead } from '../support/repos.js';
import { lane, readEvents, readLaneResult, removeDir, tempDir } from '../integration/helpers.js';
import { harness } from '../github/helpers.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

const FILE = 'fleet.yml';
let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-run-fleet-');
});
afterEach(() => removeDir(dir));

/** Creates ./<name>.git for each target and validates the fleet `spec` (name `run`) over them. */
async function fleetOf(spec: Record<string, unknown>, targets: Array<Record<string, unknown> & { name: string }>): Promise<ResolvedFleet> {
  for (const t of targets) await createRepo(dir, t.name, { 'README.md': `# ${t.name}\n` }, { clone: false });
  const v = validateFleetFile(
    {
      name: 'run',
      directive: 'Stamp it.',
      isolation: 'off',
      max_retries: 0,
      ...spec,
      targets: targets.map(({ name, ...rest }) => ({ repo: `./${name}.git`, ...rest })),
    },
    FILE,
  );
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  return v.fleet;
}

function options(fleet: ResolvedFleet, more: Partial<RunOptions> = {}): RunOptions {
  return {
    fleet,
    file: FILE,
    forge: new LocalForge({ baseDir: dir }),
    workspace: localWorkspace,
    exec: localExecutor,
    clock: systemClock,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    root: join(dir, 'ws'),
    cwd: dir,
    ...more,
  };
}

async function ran(opts: RunOptions) {
  const out = await runFleet(opts);
  if (!out.ok) throw new Error(JSON.stringify(out.problems));
  return out;
}

const readJson = (...p: string[]) => JSON.parse(readFileSync(join(...p), 'utf8'));

describe('a run', () => {
  it('runs every lane, writes the plan, the events, the lane results and the manifest it returns', async () => {
    const fleet = await fleetOf({ run: 'echo "$FLEET_LANE" >> README.md' }, [{ name: 'a' }, { name: 'b' }]);
    const seen: FleetEvent[] = [];
    let planned: { manifest: Manifest; root: string; events: number } | undefined;
    const out = await ran(
      options(fleet, {
        onPlan: (manifest, root) => (planned = { manifest, root, events: seen.length }),
        onEvent: (e, lanes) => {
          seen.push(e);
          expect(lanes.get(e.lane)?.phase).toBe(e.to);
        },
      }),
    );
    const root = join(dir, 'ws');
    expect(out.root).toBe(root);
    expect(out.notes).toEqual([]);
    expect(out.manifest.lanes.map((l) => [l.lane, l.status, l.phase])).toEqual([
      ['a', 'completed', 'pushed'],
      ['b', 'completed', 'pushed'],
    ]);
    expect(exitCodeFor(out.manifest)).toBe(0);
    // The plan is handed over before any lane moves.
    expect(planned).toMatchObject({ root, events: 0, manifest: { fleet_id: out.manifest.fleet_id } });
    expect(readJson(root, 'plan.json')).toEqual({
      fleet_id: out.manifest.fleet_id,
      waves: out.plan.waves,
      contention: out.plan.contention,
      excluded: out.plan.excluded,
      skipped: out.plan.skipped,
    });
    expect(readJson(manifestPath(root))).toEqual(JSON.parse(JSON.stringify(out.manifest)));
    // And stays so: no write of the live view lands after the final one (it comes at most 250 ms after a change).
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(readJson(manifestPath(root))).toEqual(JSON.parse(JSON.stringify(out.manifest)));
    for (const id of ['a', 'b']) {
      expect(readLaneResult(root, id)).toMatchObject({ lane: id, status: 'completed', commit: lane(out.manifest, id).commit });
      expect(await remoteHead(join(dir, `${id}.git`), `fleet/run/${id}`)).toBe(lane(out.manifest, id).commit);
    }
    // Every transition, in order per lane, each starting where the last ended; the log on disk is the same.
    expect(readEvents(root)).toEqual(JSON.parse(JSON.stringify(seen)));
    for (const id of ['a', 'b']) {
      const mine = seen.filter((e) => e.lane === id);
      // Each line says each thing once: the phase in to, what is cloned in the detail.
      expect(mine[0]).toMatchObject({ from: 'queued', to: 'cloning', status: 'running', detail: `./${id}.git` });
      for (let i = 1; i < mine.length; i++) expect(mine[i]!.from).toBe(mine[i - 1]!.to);
      expect(mine.at(-1)).toMatchObject({ to: 'pushed', status: 'completed' });
      for (const e of mine) expect(Date.parse(e.time)).not.toBeNaN();
    }
  });

  it('without a workspace, makes one named by the fleet id under <cwd>/_workspace/fleet', async () => {
    const fleet = await fleetOf({ run: 'true' }, [{ name: 'a' }]);
    const out = await ran(options(fleet, { root: undefined }));
    expect(out.root).toBe(join(dir, '_workspace', 'fleet', out.manifest.fleet_id));
    expect(existsSync(manifestPath(out.root))).toBe(true);
    expect(lane(out.manifest, 'a')).toMatchObject({ status: 'completed', phase: 'no-op' });
  });

  it('a fleet that requires isolation on a machine without: a set-up problem, nothing planned or cloned', async () => {
    const fleet = await fleetOf({ run: 'true', isolation: 'required' }, [{ name: 'a' }]);
    const exec = { ...localExecutor, isolation: async () => ({ kind: 'none' as const, detail: 'no namespaces' }) };
    const out = await runFleet(options(fleet, { exec }));
    expect(out).toEqual({
      ok: false,
      problems: [
        {
          file: FILE,
          field: 'isolation',
          message:
            'required, but directives cannot be isolated on this machine: no namespaces. Run where user namespaces or sudo are available, or set isolation: auto',
        },
      ],
    });
    expect(existsSync(join(dir, 'ws'))).toBe(false);
  });

  it("a fleet that cannot be planned: the planner's problems, no workspace", async () => {
    const fleet = await fleetOf({ run: 'true' }, [{ name: 'a' }]);
    const onBase: ResolvedFleet = { ...fleet, lanes: [{ ...fleet.lanes[0]!, branch: 'main' }] };
    const out = await runFleet(options(onBase));
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.problems).toEqual([expect.objectContaining({ message: expect.stringMatching(/base branch/) })]);
    expect(existsSync(join(dir, 'ws'))).toBe(false);
  });

  it('a workspace another run holds is refused; a lock left by a process that is gone is taken over and said', async () => {
    const fleet = await fleetOf({ run: 'true' }, [{ name: 'a' }]);
    const root = join(dir, 'ws');
    mkdirSync(root, { recursive: true });
    const held = await lockWorkspace(root, 'fleet-other');
    if (!held.ok) throw new Error(held.message);
    const refused = await runFleet(options(fleet));
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.problems).toHaveLength(1);
    expect(refused.problems[0]).toMatchObject({ file: join(root, '.fleet.lock'), field: '(workspace)' });
    expect(refused.problems[0]!.message).toMatch(/^another fleet run holds this workspace/);
    await held.release();

    writeFileSync(
      join(root, '.fleet.lock'),
      `${JSON.stringify({ pid: 2 ** 22 + 7, process_start: '1', host: hostname(), since: new Date().toISOString(), fleet_id: 'fleet-gone' })}\n`,
    );
    const out = await ran(options(fleet));
    expect(out.notes).toHaveLength(1);
    expect(out.notes[0]).toMatch(/^took over the lock of .*no longer running$/);
    // The run gives its own lock back.
    expect(existsSync(join(root, '.fleet.lock'))).toBe(false);
  });

  it('a target the plan excludes is recorded with its reason, and the others run', async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md', missing_targets: 'exclude' }, [{ name: 'a' }]);
    const gone = { ...fleet.lanes[0]!, id: 'gone', repo: './gone.git', branch: 'fleet/run/gone', index: 1 };
    const withMissing: ResolvedFleet = {
      ...fleet,
      lanes: [...fleet.lanes, gone, { ...gone, id: 'needs-gone', repo: './a.git', branch: 'fleet/run/needs-gone', depends_on: ['gone'], index: 2 }],
    };
    const seen: FleetEvent[] = [];
    const out = await ran(options(withMissing, { onEvent: (e) => seen.push(e) }));
    const excluded = lane(out.manifest, 'gone');
    expect(excluded.status).toBe('excluded');
    expect(seen.filter((e) => e.lane === 'gone')).toEqual([
      expect.objectContaining({ from: 'excluded', to: 'excluded', status: 'excluded', detail: excluded.error!.message }),
    ]);
    // A lane that depends on an excluded target is skipped by the plan, and said so too.
    const skipped = lane(out.manifest, 'needs-gone');
    expect(skipped.status).toBe('skipped');
    expect(seen.filter((e) => e.lane === 'needs-gone')).toEqual([expect.objectContaining({ status: 'skipped', detail: skipped.error!.message })]);
    expect(lane(out.manifest, 'a').status).toBe('completed');
    expect(exitCodeFor(out.manifest)).toBe(1);
  });

  it('a lane whose branch moved on the forge once it ended is not confirmed: failed, and said so', async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md' }, [{ name: 'a' }]);
    const remote = join(dir, 'a.git');
    const base = (await remoteHead(remote, 'main'))!;
    const seen: FleetEvent[] = [];
    const out = await ran(
      options(fleet, {
        onEvent: (e) => {
          seen.push(e);
          // Someone moves the branch the moment the lane has pushed and ended, before the runner checks it.
          if (e.status === 'completed') execFileSync('git', ['--git-dir', remote, 'update-ref', 'refs/heads/fleet/run/a', base]);
        },
      }),
    );
    const a = lane(out.manifest, 'a');
    expect(a.status).toBe('failed');
    expect(seen.at(-1)).toMatchObject({ lane: 'a', status: 'failed', detail: a.error!.message });
  });

  it('a signal that is never aborted changes nothing, however short the grace', async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md' }, [{ name: 'a' }]);
    const out = await ran(options(fleet, { signal: new AbortController().signal, interruptGraceMs: 1 }));
    expect(lane(out.manifest, 'a')).toMatchObject({ status: 'completed', phase: 'pushed', error: null });
  });

  it('isolation: required where the machine can isolate: the lanes run', async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md', isolation: 'required' }, [{ name: 'a' }]);
    const exec = {
      ...localExecutor,
      isolation: async () => ({ kind: 'pid-namespace' as const, detail: 'in a test' }),
      run: (c: string, o: Parameters<typeof localExecutor.run>[1]) => localExecutor.run(c, { ...o, isolation: 'off' }),
    };
    const out = await ran(options(fleet, { exec }));
    expect(lane(out.manifest, 'a')).toMatchObject({ status: 'completed', isolation: { kind: 'pid-namespace' } });
  });
});

describe('a lane that crashes', () => {
  it('stays in its lane: failed as lane-crashed, its result written, the other lanes run', async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md' }, [{ name: 'a' }, { name: 'b' }]);
    // A live view that throws on lane a's updates (its first, then the failure runLane records): runLane itself fails.
    const out = await ran(
      options(fleet, {
        onEvent: (e) => {
          if (e.lane === 'a' && (e.to === 'cloning' || e.detail === 'lane-crashed')) throw new Error('the view broke');
        },
      }),
    );
    const want = { status: 'failed', phase: 'failed', error: { class: 'lane-crashed', message: 'Fleet failed in this lane: the view broke' } };
    expect(lane(out.manifest, 'a')).toMatchObject(want);
    expect(readLaneResult(out.root, 'a')).toMatchObject(want);
    // What the lane recorded before it crashed is kept.
    expect(lane(out.manifest, 'a').started_at).not.toBeNull();
    expect(lane(out.manifest, 'b')).toMatchObject({ status: 'completed', phase: 'pushed' });
    expect(
      readEvents(out.root)
        .filter((e) => e.lane === 'a')
        .at(-1),
    ).toMatchObject({ to: 'failed', status: 'failed', detail: 'crashed' });
  });
});

describe('a workspace that holds an earlier run', () => {
  it("a new run clears that run's own files (lane folders, events, plan, report, manifest) and nothing else", async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md' }, [{ name: 'a' }]);
    const root = join(dir, 'ws');
    const first = await ran(options(fleet));
    writeFileSync(join(root, 'lanes', 'a', 'left-over.txt'), 'x');
    writeFileSync(join(root, 'keep.txt'), 'mine');
    mkdirSync(join(root, 'lanes', 'other'), { recursive: true });
    writeFileSync(join(root, 'lanes', 'other', 'keep.txt'), 'mine');
    const second = await ran(options(fleet));
    expect(second.manifest.fleet_id).not.toBe(first.manifest.fleet_id);
    expect(existsSync(join(root, 'lanes', 'a', 'left-over.txt'))).toBe(false);
    expect(readFileSync(join(root, 'keep.txt'), 'utf8')).toBe('mine');
    expect(readFileSync(join(root, 'lanes', 'other', 'keep.txt'), 'utf8')).toBe('mine');
    // The events log is this run's alone.
    const events = readEvents(root);
    expect(events.filter((e) => e.to === 'cloning')).toHaveLength(1);
    expect(Date.parse(events[0]!.time)).toBeGreaterThanOrEqual(Date.parse(second.manifest.started_at));
  });

  it('a hand-edited manifest cannot point the clean-up outside the lanes folder', async () => {
    const fleet = await fleetOf({ run: 'true' }, [{ name: 'a' }]);
    const root = join(dir, 'ws');
    const first = await ran(options(fleet));
    // A lane outside the lanes folder, and one whose folder is already gone.
    const edited = {
      ...first.manifest,
      lanes: [...first.manifest.lanes, { ...first.manifest.lanes[0]!, lane: '../precious' }, { ...first.manifest.lanes[0]!, lane: 'ghost' }],
    };
    writeFileSync(manifestPath(root), JSON.stringify(edited));
    mkdirSync(join(root, 'precious'), { recursive: true });
    writeFileSync(join(root, 'precious', 'data.txt'), 'keep');
    await ran(options(fleet));
    expect(readFileSync(join(root, 'precious', 'data.txt'), 'utf8')).toBe('keep');
  });

  it('a workspace whose manifest Fleet cannot read: nothing is removed', async () => {
    const fleet = await fleetOf({ run: 'true' }, [{ name: 'a' }]);
    const root = join(dir, 'ws');
    mkdirSync(join(root, 'lanes', 'a'), { recursive: true });
    writeFileSync(join(root, 'lanes', 'a', 'mine.txt'), 'x');
    writeFileSync(manifestPath(root), '{ not json');
    await ran(options(fleet));
    expect(existsSync(join(root, 'lanes', 'a', 'mine.txt'))).toBe(true);
  });
});

describe('waves', () => {
  it('a lane whose dependency failed is skipped, with the dependency named, and its result written', async () => {
    const fleet = await fleetOf({ run: '[ "$FLEET_LANE" = lib ] && exit 3; echo x >> README.md' }, [{ name: 'lib' }, { name: 'app', depends_on: ['lib'] }]);
    const out = await ran(options(fleet));
    expect(lane(out.manifest, 'lib')).toMatchObject({ status: 'failed', error: { class: 'directive-failed' } });
    const app = lane(out.manifest, 'app');
    expect(app).toMatchObject({
      status: 'skipped',
      phase: 'skipped',
      error: { class: 'dependency-failed', message: 'dependency "lib" failed (directive-failed); this lane was not run against a missing checkpoint' },
    });
    expect(app.ended_at).not.toBeNull();
    expect(readLaneResult(out.root, 'app')).toMatchObject({ status: 'skipped', error: { class: 'dependency-failed' } });
    expect(await remoteBranches(join(dir, 'app.git'))).toEqual(['main']);
    expect(exitCodeFor(out.manifest)).toBe(1);
  });

  it("a lane runs only after its dependency's wave ended, and against the dependency's pushed checkpoint", async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md' }, [{ name: 'lib' }, { name: 'app', depends_on: ['lib'] }]);
    const out = await ran(options(fleet));
    const lib = lane(out.manifest, 'lib');
    const app = lane(out.manifest, 'app');
    expect([lib.status, app.status]).toEqual(['completed', 'completed']);
    expect(Date.parse(app.started_at!)).toBeGreaterThanOrEqual(Date.parse(lib.ended_at!));
  });
});

describe('the concurrency budget', () => {
  it('never runs more directives at once than max_parallel; the lanes over it wait for a slot', async () => {
    const lock = join(dir, 'running');
    mkdirSync(lock);
    // Each directive counts the directives running with it.
    const run = `touch ${JSON.stringify(lock)}/$FLEET_LANE; ls ${JSON.stringify(lock)} | wc -l >> ${JSON.stringify(join(dir, 'counts'))}; sleep 0.3; rm ${JSON.stringify(lock)}/$FLEET_LANE; echo x >> README.md`;
    const fleet = await fleetOf({ run, max_parallel: 1 }, [{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    const seen: FleetEvent[] = [];
    const out = await ran(options(fleet, { onEvent: (e) => seen.push(e) }));
    expect(out.manifest.lanes.map((l) => l.status)).toEqual(['completed', 'completed', 'completed']);
    const counts = readFileSync(join(dir, 'counts'), 'utf8').trim().split('\n').map(Number);
    expect(counts).toEqual([1, 1, 1]);
    expect(seen.some((e) => e.to === 'waiting' && e.detail === 'for a slot in the concurrency budget')).toBe(true);
  });

  it('max_parallel 2: at most two at once', async () => {
    const lock = join(dir, 'running');
    mkdirSync(lock);
    const run = `touch ${JSON.stringify(lock)}/$FLEET_LANE; ls ${JSON.stringify(lock)} | wc -l >> ${JSON.stringify(join(dir, 'counts'))}; sleep 0.3; rm ${JSON.stringify(lock)}/$FLEET_LANE`;
    const fleet = await fleetOf({ run, max_parallel: 2 }, [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'd' }]);
    const out = await ran(options(fleet));
    expect(out.manifest.lanes.map((l) => l.phase)).toEqual(['no-op', 'no-op', 'no-op', 'no-op']);
    const counts = readFileSync(join(dir, 'counts'), 'utf8').trim().split('\n').map(Number);
    expect(counts).toHaveLength(4);
    expect(Math.max(...counts)).toBeLessThanOrEqual(2);
  });
});

describe('resume', () => {
  it('keeps the lanes the earlier run completed and runs the others again', async () => {
    const flag = join(dir, 'fixed');
    const run = `echo "$FLEET_LANE" >> ${JSON.stringify(join(dir, 'ran'))}; [ "$FLEET_LANE" = b ] && [ ! -f ${JSON.stringify(flag)} ] && exit 4; echo x >> README.md`;
    const fleet = await fleetOf({ run }, [{ name: 'a' }, { name: 'b' }]);
    const first = await ran(options(fleet));
    expect(first.manifest.lanes.map((l) => l.status)).toEqual(['completed', 'failed']);
    writeFileSync(flag, '');
    const seen: FleetEvent[] = [];
    let atPlan: Manifest | undefined;
    const out = await ran(
      options(fleet, {
        resume: { manifest: first.manifest, root: join(dir, 'ws') },
        onEvent: (e) => seen.push(e),
        onPlan: (_m, root) => (atPlan = readJson(manifestPath(root))),
      }),
    );
    expect(out.manifest.fleet_id).toBe(first.manifest.fleet_id);
    expect(readFileSync(join(dir, 'ran'), 'utf8').split('\n').filter(Boolean).sort()).toEqual(['a', 'b', 'b']);
    expect(lane(out.manifest, 'a')).toMatchObject({ status: 'completed', commit: lane(first.manifest, 'a').commit });
    expect(lane(out.manifest, 'b')).toMatchObject({ status: 'completed', phase: 'pushed' });
    expect(seen.filter((e) => e.lane === 'a')).toEqual([expect.objectContaining({ detail: 'kept from the previous run', to: 'pushed', status: 'completed' })]);
    // Written before any lane ran: the kept lane already completed, the other queued.
    expect(atPlan!.lanes.map((l) => [l.lane, l.status])).toEqual([
      ['a', 'completed'],
      ['b', 'queued'],
    ]);
  });

  it('a lane the earlier run did not end completed runs again, whatever its own result file says; so does a new target', async () => {
    const fleet = await fleetOf({ run: `echo "$FLEET_LANE" >> ${JSON.stringify(join(dir, 'ran'))}; echo x >> README.md` }, [{ name: 'a' }, { name: 'b' }]);
    const first = await ran(options(fleet));
    // The forge did not confirm a (its record failed); b was not in the earlier run at all.
    const previous: Manifest = { ...first.manifest, lanes: [{ ...lane(first.manifest, 'a'), status: 'failed' }] };
    await ran(options(fleet, { resume: { manifest: previous, root: join(dir, 'ws') } }));
    expect(readFileSync(join(dir, 'ran'), 'utf8').split('\n').filter(Boolean).sort()).toEqual(['a', 'a', 'b', 'b']);
  });

  it('a kept lane is checked on the forge again: one whose branch moved since is not confirmed', async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md' }, [{ name: 'a' }]);
    const first = await ran(options(fleet));
    const remote = join(dir, 'a.git');
    execFileSync('git', ['--git-dir', remote, 'update-ref', 'refs/heads/fleet/run/a', (await remoteHead(remote, 'main'))!]);
    // With a signal that is never aborted: the forge is asked as it is without one.
    const out = await ran(options(fleet, { resume: { manifest: first.manifest, root: join(dir, 'ws') }, signal: new AbortController().signal }));
    expect(lane(out.manifest, 'a').status).toBe('failed');
  });

  it('a lane whose result file is missing or not completed runs again', async () => {
    const fleet = await fleetOf({ run: `echo "$FLEET_LANE" >> ${JSON.stringify(join(dir, 'ran'))}; echo x >> README.md` }, [{ name: 'a' }, { name: 'b' }]);
    const first = await ran(options(fleet));
    const root = join(dir, 'ws');
    removeDir(join(root, 'lanes', 'a'));
    const result = readJson(root, 'lanes', 'b', 'result.json');
    writeFileSync(join(root, 'lanes', 'b', 'result.json'), JSON.stringify({ ...result, lane: { ...result.lane, status: 'failed' } }));
    await ran(options(fleet, { resume: { manifest: first.manifest, root } }));
    expect(readFileSync(join(dir, 'ran'), 'utf8').split('\n').filter(Boolean).sort()).toEqual(['a', 'a', 'b', 'b']);
  });

  it("a dry run's lanes run again when resumed for real, and are kept when resumed dry", async () => {
    const fleet = await fleetOf({ run: `echo "$FLEET_LANE" >> ${JSON.stringify(join(dir, 'ran'))}; echo x >> README.md` }, [{ name: 'a' }]);
    const root = join(dir, 'ws');
    const dry = await ran(options(fleet, { dryRun: true }));
    expect(lane(dry.manifest, 'a').phase).toBe('dry-run');
    await ran(options(fleet, { dryRun: true, resume: { manifest: dry.manifest, root } }));
    expect(readFileSync(join(dir, 'ran'), 'utf8')).toBe('a\n');
    const real = await ran(options(fleet, { resume: { manifest: dry.manifest, root } }));
    expect(readFileSync(join(dir, 'ran'), 'utf8')).toBe('a\na\n');
    expect(lane(real.manifest, 'a')).toMatchObject({ status: 'completed', phase: 'pushed' });
  });
});

describe('the live manifest', () => {
  it('shows a lane running while its directive runs', async () => {
    const live = join(dir, 'ws', 'fleet-status.json');
    // The directive waits for the live manifest to show its lane in the running phase (an event, not a time: under
    // load the write of the cloning phase can still be the latest when the directive starts), then keeps a copy.
    const run = `until grep -q '"phase": "running"' ${JSON.stringify(live)}; do sleep 0.05; done; cp ${JSON.stringify(live)} "$FLEET_LANE_DIR/live.json"`;
    const fleet = await fleetOf({ run }, [{ name: 'a' }]);
    const out = await ran(options(fleet));
    const seen: Manifest = readJson(out.root, 'lanes', 'a', 'live.json');
    expect(seen.fleet_id).toBe(out.manifest.fleet_id);
    expect(seen.lanes[0]).toMatchObject({ lane: 'a', status: 'running', phase: 'running' });
    expect(seen.summary).toMatchObject({ total: 1 });
    expect(seen.ended_at).toBeNull();
  });
});

describe('interrupts', () => {
  it('an interrupt before the run: no lane starts; each is skipped as cancelled, with its result', async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md' }, [{ name: 'a' }, { name: 'b' }]);
    const stop = new AbortController();
    stop.abort();
    const out = await ran(options(fleet, { signal: stop.signal }));
    for (const id of ['a', 'b']) {
      expect(lane(out.manifest, id)).toMatchObject({
        status: 'skipped',
        phase: 'skipped',
        error: { class: 'cancelled', message: 'the run was interrupted before this lane started' },
      });
      expect(readLaneResult(out.root, id).error?.class).toBe('cancelled');
      expect(await remoteBranches(join(dir, `${id}.git`))).toEqual(['main']);
    }
    expect(exitCodeFor(out.manifest)).toBe(1);
  });

  it('lanes that stop by themselves within the grace end cancelled; the run waits for them', async () => {
    const fleet = await fleetOf({ run: 'sleep 0.5; echo x >> README.md' }, [{ name: 'a' }]);
    const stop = new AbortController();
    const out = await ran(
      options(fleet, {
        signal: stop.signal,
        interruptGraceMs: 60_000,
        onEvent: (e) => {
          if (e.to === 'running') stop.abort();
        },
      }),
    );
    expect(lane(out.manifest, 'a')).toMatchObject({
      status: 'failed',
      error: { class: 'cancelled', message: 'the run was interrupted while this lane ran; nothing was pushed' },
    });
  });

  it('after an interrupt, a lane waiting for the budget and the next wave do not start', async () => {
    const fleet = await fleetOf({ run: 'sleep 0.5; echo x >> README.md', max_parallel: 1 }, [
      { name: 'a' },
      { name: 'b' },
      { name: 'c' },
      { name: 'd', depends_on: ['a'] },
    ]);
    const stop = new AbortController();
    const seen: FleetEvent[] = [];
    const out = await ran(
      options(fleet, {
        signal: stop.signal,
        interruptGraceMs: 60_000,
        onEvent: (e) => {
          seen.push(e);
          if (e.to === 'running') stop.abort();
        },
      }),
    );
    const ran_ = 'the run was interrupted while this lane ran; nothing was pushed';
    // Issue 27: the lane that waited for its slot never ran its directive, and says so.
    const waited = "the run was interrupted before this lane's directive started; nothing was pushed";
    const before = 'the run was interrupted before this lane started';
    const outcome = (id: string) => [lane(out.manifest, id).status, lane(out.manifest, id).error?.message];
    // Two lanes held the budget (max_parallel 2 × ... = 2): one ran its directive, the other waited for its slot.
    expect(['a', 'b', 'c'].map(outcome).sort()).toEqual([
      ['failed', waited],
      ['failed', ran_],
      ['skipped', before],
    ]);
    expect(outcome('d')).toEqual(['skipped', before]);
    expect(
      seen
        .filter((e) => e.to === 'skipped' && e.detail === 'cancelled')
        .map((e) => e.lane)
        .sort(),
    ).toEqual([...['a', 'b', 'c'].filter((id) => lane(out.manifest, id).status === 'skipped'), 'd'].sort());
  });

  it('a lane stuck pushing: whether it pushed is unknown', async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md' }, [{ name: 'p' }]);
    // The remote hangs the push of the lane branch.
    const hooks = join(dir, 'p.git', 'hooks');
    mkdirSync(hooks, { recursive: true });
    writeFileSync(join(hooks, 'pre-receive'), '#!/bin/sh\nsleep 20\n', { mode: 0o755 });
    const stop = new AbortController();
    const out = await ran(
      options(fleet, {
        signal: stop.signal,
        interruptGraceMs: 1000,
        onEvent: (e) => {
          if (e.to === 'pushing') stop.abort();
        },
      }),
    );
    expect(lane(out.manifest, 'p').error).toEqual({
      class: 'cancelled',
      message:
        'the run was interrupted while this lane was pushing, and the lane did not stop within 1 s (a git or forge call that did not answer); whether it pushed is unknown',
    });
  });

  it('a lane stuck in a forge call after its push (GitHub, opening the PR): what it pushed stays on the forge', async () => {
    const h = await harness();
    try {
      await h.emu.createRepo({ owner: 'acme', name: 'svc', files: { 'README.md': '# svc\n' } });
      const v = validateFleetFile(
        { name: 'run', forge: 'github', directive: 'Stamp it.', isolation: 'off', run: 'echo x >> README.md', targets: [{ repo: 'acme/svc' }] },
        FILE,
      );
      if (!v.ok) throw new Error(JSON.stringify(v.problems));
      h.emu.fault({ match: { kind: 'rest', method: 'POST', path: '/repos/{owner}/{repo}/pulls' }, kind: 'stall', times: Infinity });
      const stop = new AbortController();
      const out = await ran(
        options(v.fleet, {
          forge: h.makeForge({ name: 'run' }),
          signal: stop.signal,
          interruptGraceMs: 1000,
          onEvent: (e) => {
            if (e.to === 'pushed') stop.abort();
          },
        }),
      );
      expect(out.manifest.lanes[0]!.error).toEqual({
        class: 'cancelled',
        message:
          'the run was interrupted while this lane was pushed, and the lane did not stop within 1 s (a git or forge call that did not answer); what it pushed stays on the forge',
      });
    } finally {
      h.emu.clearFaults();
      await h.emu.close();
    }
  });

  it('a lane whose forge check hangs after it completed: ended unconfirmed', async () => {
    const h = await harness();
    try {
      await h.emu.createRepo({ owner: 'acme', name: 'svc', files: { 'README.md': '# svc\n' } });
      const v = validateFleetFile(
        { name: 'run', forge: 'github', directive: 'Stamp it.', isolation: 'off', run: 'echo x >> README.md', targets: [{ repo: 'acme/svc' }] },
        FILE,
      );
      if (!v.ok) throw new Error(JSON.stringify(v.problems));
      // The runner's own check of the lane compares the commit with its base; that answer never comes.
      h.emu.fault({ match: { kind: 'rest', method: 'GET', path: '/repos/{owner}/{repo}/compare/{basehead}' }, kind: 'stall', times: Infinity });
      const stop = new AbortController();
      const out = await ran(
        options(v.fleet, {
          forge: h.makeForge({ name: 'run' }),
          signal: stop.signal,
          interruptGraceMs: 1000,
          onEvent: (e) => {
            if (e.status === 'completed') stop.abort();
          },
        }),
      );
      expect(out.manifest.lanes[0]).toMatchObject({
        status: 'failed',
        error: { class: 'cancelled', message: 'the run was interrupted while the forge confirmed this lane; it ended unconfirmed after 1 s' },
      });
    } finally {
      h.emu.clearFaults();
      await h.emu.close();
    }
  });

  it('lanes that ended before the grace was spent keep their result', async () => {
    const run = 'case $FLEET_LANE in done) echo x >> README.md;; bad) exit 3;; *) sleep 30;; esac';
    const fleet = await fleetOf({ run, max_parallel: 3, missing_targets: 'exclude' }, [{ name: 'done' }, { name: 'bad' }, { name: 'slow' }]);
    const gone = { ...fleet.lanes[0]!, id: 'gone', repo: './gone.git', branch: 'fleet/run/gone', run, index: 3 };
    const more: ResolvedFleet = {
      ...fleet,
      lanes: [...fleet.lanes, gone, { ...gone, id: 'needs-gone', repo: './done.git', branch: 'fleet/run/needs-gone', depends_on: ['gone'], index: 4 }],
    };
    const stop = new AbortController();
    const seen: FleetEvent[] = [];
    const out = await ran(
      options(more, {
        signal: stop.signal,
        interruptGraceMs: 1000,
        onEvent: (e, lanes) => {
          seen.push(e);
          if (lanes.get('done')?.status === 'completed' && lanes.get('bad')?.status === 'failed' && lanes.get('slow')?.phase === 'running') stop.abort();
        },
      }),
    );
    expect(lane(out.manifest, 'done')).toMatchObject({ status: 'completed', phase: 'pushed', error: null });
    expect(lane(out.manifest, 'bad')).toMatchObject({ status: 'failed', error: { class: 'directive-failed' } });
    expect(lane(out.manifest, 'gone').status).toBe('excluded');
    expect(lane(out.manifest, 'needs-gone').status).toBe('skipped');
    expect(lane(out.manifest, 'needs-gone').error?.class).not.toBe('cancelled');
    expect(lane(out.manifest, 'slow').error?.message).toMatch(/^the run was interrupted while this lane was running, and the lane did not stop within 1 s/);
    // Only the stuck lane is cancelled: no event says so of the others.
    expect(seen.filter((e) => e.detail === 'cancelled').map((e) => e.lane)).toEqual(['slow']);
  });

  it('lanes still busy when the grace is spent: the running one failed as cancelled, the waiting ones too, the queued skipped', async () => {
    const fleet = await fleetOf({ run: 'sleep 30', max_parallel: 1 }, [{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    const stop = new AbortController();
    const seen: FleetEvent[] = [];
    const out = await ran(
      options(fleet, {
        signal: stop.signal,
        interruptGraceMs: 1000,
        onEvent: (e, lanes) => {
          seen.push(e);
          if ([...lanes.values()].some((l) => l.phase === 'running') && [...lanes.values()].some((l) => l.phase === 'waiting')) stop.abort();
        },
      }),
    );
    const phases = out.manifest.lanes.map((l) => [l.status, l.error?.class]);
    expect(phases.filter(([s]) => s === 'failed')).toHaveLength(2);
    expect(seen.filter((e) => e.detail === 'cancelled')).toHaveLength(3);
    const running = out.manifest.lanes.find((l) => l.error?.message.includes('while this lane was running'))!;
    expect(running.error).toEqual({
      class: 'cancelled',
      message:
        'the run was interrupted while this lane was running, and the lane did not stop within 1 s (a git or forge call that did not answer); whether it pushed is unknown',
    });
    const waiting = out.manifest.lanes.find((l) => l.error?.message.includes('while this lane was waiting'))!;
    expect(waiting.status).toBe('failed');
    const queued = out.manifest.lanes.find((l) => l.status === 'skipped')!;
    expect(queued.error).toEqual({ class: 'cancelled', message: 'the run was interrupted before this lane started' });
    for (const l of out.manifest.lanes) {
      expect(readLaneResult(out.root, l.lane)).toMatchObject({ status: l.status, error: { class: 'cancelled' } });
    }
    expect(readdirSync(join(dir, 'ws')).includes('fleet-status.json')).toBe(true);
  });
});

describe('writeInterruptedState', () => {
  it('keeps the lanes that ended failed, skipped or excluded as they are', async () => {
    // c runs in the second wave, once bad has failed and ok has completed.
    const fleet = await fleetOf({ run: '[ "$FLEET_LANE" = bad ] && exit 3; sleep 0.3; echo x >> README.md', missing_targets: 'exclude' }, [
      { name: 'bad' },
      { name: 'ok' },
      { name: 'c', depends_on: ['ok'] },
    ]);
    const gone = { ...fleet.lanes[0]!, id: 'gone', repo: './gone.git', branch: 'fleet/run/gone', depends_on: [], index: 3 };
    let written: Manifest | undefined;
    await ran(
      options(
        { ...fleet, lanes: [...fleet.lanes, gone] },
        {
          onEvent: (e) => {
            if (!written && e.lane === 'c' && e.to === 'running') written = readJson(manifestPath(writeInterruptedState()!));
          },
        },
      ),
    );
    expect(lane(written!, 'bad')).toMatchObject({ status: 'failed', error: { class: 'directive-failed' } });
    expect(lane(written!, 'gone')).toMatchObject({ status: 'excluded' });
    expect(lane(written!, 'ok')).toMatchObject({ status: 'completed', error: null });
  });

  it('with no fleet running: writes nothing, returns null', () => {
    expect(writeInterruptedState()).toBeNull();
  });

  it('while a fleet runs: writes its manifest and report at once, lanes not ended as cancelled', async () => {
    const fleet = await fleetOf({ run: 'echo x >> README.md', max_parallel: 1 }, [
      { name: 'a' },
      { name: 'b', depends_on: ['a'] },
      { name: 'c', depends_on: ['b'] },
    ]);
    let written: { root: string | null; manifest: Manifest; report: string } | undefined;
    let unconfirmed: Manifest | undefined;
    const now = new Date('2026-12-01T12:00:00.000Z');
    const out = await ran(
      options(fleet, {
        onEvent: (e) => {
          if (e.lane === 'a' && e.status === 'completed' && !unconfirmed) {
            // a has ended but the forge has not confirmed it yet: not trusted as completed.
            unconfirmed = readJson(manifestPath(writeInterruptedState(now)!));
          }
          if (written || e.lane !== 'b' || e.to !== 'running') return;
          const root = writeInterruptedState(now);
          written = { root, manifest: readJson(manifestPath(root!)), report: readFileSync(join(root!, 'report.md'), 'utf8') };
        },
      }),
    );
    expect(written!.root).toBe(out.root);
    const m = written!.manifest;
    expect(m.ended_at).toBe(now.toISOString());
    // a ended before (completed and checked on the forge): kept as it is.
    expect(lane(m, 'a')).toMatchObject({ status: 'completed', phase: 'pushed' });
    expect(lane(m, 'b')).toMatchObject({
      status: 'failed',
      phase: 'failed',
      ended_at: now.toISOString(),
      error: { class: 'cancelled', message: 'Fleet was stopped at once (a second interrupt, or the lanes did not stop in time) while this lane was running' },
    });
    expect(lane(m, 'c')).toMatchObject({ status: 'skipped', error: { class: 'cancelled', message: 'the run was interrupted before this lane started' } });
    expect(written!.report).toContain('cancelled');
    // Paths in the report are under the workspace.
    expect(written!.report).toContain(join(out.root, 'lanes', 'b', 'attempt-1.log'));
    expect(lane(unconfirmed!, 'a')).toMatchObject({
      status: 'failed',
      error: { class: 'cancelled', message: 'Fleet was stopped at once (a second interrupt, or the lanes did not stop in time) while this lane was pushed' },
    });
    // The run itself went on, and once it ended there is nothing left to write.
    expect(out.manifest.lanes.map((l) => l.status)).toEqual(['completed', 'completed', 'completed']);
    expect(writeInterruptedState()).toBeNull();
  });
});
