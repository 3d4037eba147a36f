/**
 * What `fleet run --resume` leaves for a person to read (issue 11): a resumed lane's logs are its own, the earlier
 * run's files are moved aside where they say what they are, and a fleet file changed since the run is never taken in
 * silence: a change to a lane the run completed is refused (the manifest would report it done with inputs it never
 * ran with), a change to lanes that run again goes on with a note naming what changed.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, remoteBranches, remoteHead } from '../support/repos.js';
import { fleet, lane, readEvents, readManifest, removeDir, runArgs, sq, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-resume-');
});
afterEach(() => removeDir(dir));

const files = { 'README.md': '# r\n' };

/** Lanes ok (completes) and flaky (fails until `marker` exists, printing which run it is in); run once, failing. */
async function failedOnce(extra: Record<string, unknown> = {}) {
  for (const n of ['ok', 'flaky']) await createRepo(dir, n, files, { clone: false });
  const marker = join(dir, 'fixed');
  const spec = (over: Record<string, unknown> = {}) => ({
    name: 'resume',
    directive: 'Append a line.',
    run: 'echo "$FLEET_LANE" >> README.md',
    max_retries: 1,
    targets: [
      { repo: './ok.git' },
      {
        repo: './flaky.git',
        run: `if [ -f ${sq(marker)} ]; then echo "second run"; echo flaky >> README.md; else echo "first run: attempt $FLEET_ATTEMPT"; exit 3; fi`,
      },
    ],
    ...extra,
    ...over,
  });
  const file = writeFleetFile(dir, spec());
  const ws = join(dir, 'ws');
  const r = await fleet(runArgs(file, ws), { cwd: dir });
  expect(r.code, r.stdout + r.stderr).toBe(1);
  return { file, ws, marker, spec, manifest: join(ws, 'fleet-status.json') };
}

const resume = (file: string, manifest: string, ...extra: string[]) => fleet(['run', file, '--resume', manifest, '--quiet', ...extra], { cwd: dir });

describe("a resumed lane's folder", () => {
  it("holds this run's logs alone: the earlier run's attempts, result and patch are in previous/1/, its working copy gone", async () => {
    const { file, ws, marker, manifest } = await failedOnce();
    const laneDir = join(ws, 'lanes', 'flaky');
    // The earlier run tried twice (max_retries 1).
    expect(readdirSync(laneDir).sort()).toEqual(['attempt-1.log', 'attempt-2.log', 'relay.md', 'repo', 'result.json']);

    writeFileSync(marker, '');
    const r = await resume(file, manifest);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const l = lane(readManifest(ws), 'flaky');
    expect(l).toMatchObject({ status: 'completed', retry_count: 0, log: 'lanes/flaky/attempt-1.log' });
    // This run's attempt 1 is a log of its own, not appended to the earlier run's attempt 1; no earlier attempt-2.log
    // is left beside it to pass for this run's.
    const log = readFileSync(join(ws, l.log!), 'utf8');
    expect(log).toMatch(/^second run$/m);
    expect(log).not.toMatch(/^first run/m);
    expect(readdirSync(laneDir).filter((f) => f.startsWith('attempt-'))).toEqual(['attempt-1.log']);
    // The earlier run's files stay readable, moved aside together.
    const aside = join(laneDir, 'previous', '1');
    expect(readdirSync(aside).sort()).toEqual(['attempt-1.log', 'attempt-2.log', 'relay.md', 'result.json']);
    expect(readFileSync(join(aside, 'attempt-1.log'), 'utf8')).toContain('first run: attempt 1');
    expect(readFileSync(join(aside, 'attempt-2.log'), 'utf8')).toContain('first run: attempt 2');
    expect(JSON.parse(readFileSync(join(aside, 'result.json'), 'utf8')).lane).toMatchObject({ status: 'failed', error: { class: 'directive-failed' } });
    // The lane the earlier run completed keeps its folder as it was.
    expect(existsSync(join(ws, 'lanes', 'ok', 'previous'))).toBe(false);
    expect(readdirSync(join(ws, 'lanes', 'ok')).sort()).toEqual(['attempt-1.log', 'patch.diff', 'relay.md', 'repo', 'result.json']);
  });

  it("a second resume moves the first resume's files to previous/2/", async () => {
    const { file, ws, manifest } = await failedOnce();
    const again = await resume(file, manifest);
    expect(again.code).toBe(1);
    const r = await resume(file, manifest);
    expect(r.code).toBe(1);
    const aside = join(ws, 'lanes', 'flaky', 'previous');
    expect(readdirSync(aside).sort()).toEqual(['1', '2']);
    // Each attempt-1.log holds one attempt 1: none was appended to another.
    for (const n of ['1', '2']) expect(readFileSync(join(aside, n, 'attempt-1.log'), 'utf8').match(/^first run: attempt 1$/gm)).toHaveLength(1);
    expect(readFileSync(join(ws, 'lanes', 'flaky', 'attempt-1.log'), 'utf8').match(/^first run: attempt 1$/gm)).toHaveLength(1);
  });
});

describe('a fleet file changed since the run', () => {
  it('changed for a lane the run completed: refused (exit 2), naming the lane and what changed; nothing runs', async () => {
    const { file, ws, marker, spec, manifest } = await failedOnce();
    const before = readFileSync(manifest, 'utf8');
    const events = readEvents(ws).length;
    writeFileSync(marker, '');
    // ok's command changes: ok completed with the old one.
    writeFleetFile(dir, spec({ run: 'echo "$FLEET_LANE, again" >> README.md' }));
    const r = await resume(file, manifest);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}: --resume: the fleet file changed since run ${readManifest(ws).fleet_id}: run (lane "ok")`);
    expect(r.stderr).toMatch(
      /completed in run fleet-[\w-]+ with the fleet file as it was, and a resumed run would report it done with inputs it never ran with/,
    );
    expect(r.stderr).toContain(`Start a new run without --resume`);
    expect(r.stderr).toContain(`--since ${manifest}`);
    // Nothing ran and nothing was written: the manifest, the events and the lane folders are as the run left them.
    expect(readFileSync(manifest, 'utf8')).toBe(before);
    expect(readEvents(ws)).toHaveLength(events);
    expect(existsSync(join(ws, 'lanes', 'flaky', 'previous'))).toBe(false);
    expect(await remoteBranches(join(dir, 'flaky.git'))).toEqual(['main']);
  });

  it('a changed directive touches every lane: refused, naming the field once for the lanes it touched', async () => {
    const { file, spec, manifest } = await failedOnce();
    writeFleetFile(dir, spec({ directive: 'Append another line.' }));
    const r = await resume(file, manifest);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/the fleet file changed since run fleet-[\w-]+: directive \(lane "ok"\)\. That lane completed/);
  });

  it('changed only for lanes that run again: goes on, with a note naming the lanes and fields, and new lanes', async () => {
    const { file, ws, marker, spec, manifest } = await failedOnce();
    await createRepo(dir, 'extra', files, { clone: false });
    const okCommit = lane(readManifest(ws), 'ok').commit;
    writeFileSync(marker, '');
    const changed = spec();
    const targets = (changed.targets as Record<string, unknown>[]).map((t) => (t.repo === './flaky.git' ? { ...t, checks: ['test -s README.md'] } : t));
    writeFleetFile(dir, { ...changed, targets: [...targets, { repo: './extra.git' }] });
    const r = await resume(file, manifest);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /note: the fleet file changed since run fleet-[\w-]+ for lanes that run again: checks \(lane "flaky"\); they run with the fleet file as it is now/,
    );
    expect(r.stderr).toMatch(/note: lane "extra" is new since run fleet-[\w-]+: it runs/);
    const m = readManifest(ws);
    expect(m.lanes.map((l) => [l.lane, l.status])).toEqual([
      ['extra', 'completed'],
      ['flaky', 'completed'],
      ['ok', 'completed'],
    ]);
    expect(lane(m, 'ok').commit).toBe(okCommit);
    expect(lane(m, 'flaky').ci_conclusion).toBe('success');
    expect(await remoteHead(join(dir, 'extra.git'), 'fleet/resume/extra')).toBe(lane(m, 'extra').commit);
  });

  it('a resume with --dry-run of a run that pushed is refused: its manifest would say nothing was pushed', async () => {
    const { file, manifest } = await failedOnce();
    const r = await resume(file, manifest, '--dry-run');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /--dry-run: run fleet-[\w-]+ was not a dry run, and lane "ok" pushed its change; resumed as a dry run, its manifest would say nothing was pushed/,
    );
  });
});
