/**
 * "Re-run failed jobs" under each artifact behaviour reported across run
 * attempts (test/support/actions-services/README.md has the threads):
 * whether a re-run may upload a name again, whether ids follow attempts,
 * which attempts a job's own listing shows, and whether the results service
 * still signs an earlier attempt's download. Fleet must finish the fleet,
 * keep what completed and open no second PR under every one of them; the
 * default behaviours run in dispatch.test.ts. Then "Re-run all jobs" plans
 * again and updates the same PRs.
 */
import { describe, expect, it, vi } from 'vitest';
import type { ArtifactRules } from '../support/actions-services/index.js';
import { artifactsOf, dispatchFleet, explain, reportArtifact, startWorld } from './world.js';

// Whole workflow runs: a loaded 2-core machine can take minutes where an idle one takes seconds.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

const FLEET = {
  name: 'rerun',
  forge: 'github',
  directive: 'Stamp.',
  run: 'if [ "$FLEET_LANE" = flaky ] && [ ! -f READY ]; then exit 3; fi; echo stamped > STAMP',
  max_retries: 0,
  targets: [{ repo: 'acme/base' }, { repo: 'acme/flaky' }, { repo: 'acme/top', depends_on: ['base'] }],
};

const VARIANTS: Array<[string, Partial<ArtifactRules>, { rerunAll: boolean }]> = [
  [
    'a re-upload of a name is refused, ids follow attempts, a job lists only its own attempt',
    { reuploadAcrossAttempts: 'conflict', artifactIds: 'ascending', internalList: 'attempt', earlierAttemptAccess: 'not-found' },
    { rerunAll: false },
  ],
  [
    'everything allowed: both uploads kept, the older one with the higher id, every attempt listed and signed',
    { reuploadAcrossAttempts: 'allow', artifactIds: 'unordered', internalList: 'run', earlierAttemptAccess: 'allow' },
    { rerunAll: true },
  ],
];

describe.each(VARIANTS)('re-running a fleet when %s', (_, artifacts, then) => {
  it(`finishes the fleet in attempt 2, keeps the completed lanes, opens no second PR${then.rerunAll ? '; "Re-run all jobs" then plans again' : ''}`, async () => {
    const w = await startWorld({ fleetFile: FLEET, services: { artifacts } });
    try {
      for (const name of ['base', 'flaky', 'top']) await w.emu.createRepo({ owner: 'acme', name });
      const { runId, s } = await dispatchFleet(w);
      expect(s.conclusion).toBe('failure');
      expect(reportArtifact(w, runId).manifest.summary).toMatchObject({ completed: 2, failed: 1 });

      await w.emu.commit({ owner: 'acme', repo: 'flaky', branch: 'main', files: { READY: '1\n' } });
      w.runner.rerunFailed(runId);
      const second = await w.runner.finish(w.runner.runs.get(runId)!);
      expect(second.conclusion, explain(second)).toBe('success');
      expect(reportArtifact(w, runId, 2).manifest.summary).toMatchObject({ total: 3, completed: 3, failed: 0 });
      expect(second.jobs.find((j) => j.name === 'fleet / wave 2 (w1-s0)')!.log).toContain('top: completed in an earlier attempt of this run; kept');
      for (const repo of ['base', 'flaky', 'top']) expect(w.emu.pullRequests(`acme/${repo}`)).toHaveLength(1);

      if (!then.rerunAll) return;
      w.runner.rerunAll(runId);
      const third = await w.runner.finish(w.runner.runs.get(runId)!);
      expect(third.conclusion, explain(third)).toBe('success');
      const { manifest } = reportArtifact(w, runId, 3);
      expect(manifest.summary).toMatchObject({ total: 3, completed: 3 });
      // A fresh plan: its lanes ran again (nothing read back from attempts 1 and 2), and updated the same PRs.
      expect(third.jobs.find((j) => j.name === 'fleet / wave 2 (w1-s0)')!.log).not.toContain('kept');
      expect([...artifactsOf(w, runId).keys()]).toContain('fleet-plan.a3');
      for (const repo of ['base', 'flaky', 'top']) expect(w.emu.pullRequests(`acme/${repo}`)).toHaveLength(1);
    } finally {
      await w.close();
    }
  });
});

describe('a leg that runs several lanes (legs: auto, max_parallel 1)', () => {
  it('runs the lanes after a failed one, and on "Re-run failed jobs" runs only the failed lane again', async () => {
    const w = await startWorld({
      fleetFile: {
        ...FLEET,
        max_parallel: 1,
        run: 'if [ "$FLEET_LANE" = b-flaky ] && [ ! -f READY ]; then exit 3; fi; echo stamped > STAMP',
        targets: [{ repo: 'acme/a-first' }, { repo: 'acme/b-flaky' }, { repo: 'acme/c-last' }],
      },
    });
    try {
      for (const name of ['a-first', 'b-flaky', 'c-last']) await w.emu.createRepo({ owner: 'acme', name });
      const { runId, s } = await dispatchFleet(w);
      // One leg for the wave (core/legs.ts: max_parallel legs), its lanes one after another in id order.
      const legs = s.jobs.filter((j) => j.name.startsWith('fleet / wave 1 ('));
      expect(legs.map((j) => j.name)).toEqual(['fleet / wave 1 (w0-s0)']);
      expect(s.conclusion).toBe('failure');
      const first = reportArtifact(w, runId).manifest;
      expect(Object.fromEntries(first.lanes.map((l) => [l.lane, l.status]))).toEqual({ 'a-first': 'completed', 'b-flaky': 'failed', 'c-last': 'completed' });

      await w.emu.commit({ owner: 'acme', repo: 'b-flaky', branch: 'main', files: { READY: '1\n' } });
      w.runner.rerunFailed(runId);
      const second = await w.runner.finish(w.runner.runs.get(runId)!);
      expect(second.conclusion, explain(second)).toBe('success');
      const log = second.jobs.find((j) => j.name === 'fleet / wave 1 (w0-s0)' && j.attempt === 2)!.log;
      expect(log).toContain('a-first: completed in an earlier attempt of this run; kept');
      expect(log).toContain('c-last: completed in an earlier attempt of this run; kept');
      expect(log).not.toContain('b-flaky: completed in an earlier attempt');
      expect(reportArtifact(w, runId, 2).manifest.summary).toMatchObject({ total: 3, completed: 3, failed: 0 });
      for (const repo of ['a-first', 'b-flaky', 'c-last']) expect(w.emu.pullRequests(`acme/${repo}`)).toHaveLength(1);
    } finally {
      await w.close();
    }
  });
});
