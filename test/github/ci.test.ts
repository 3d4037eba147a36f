import { describe, expect, it } from 'vitest';
import {
  combineCi,
  combineRequired,
  describeFailures,
  describePending,
  latestPerName,
  missingRequired,
  type CheckRunLike,
  type StatusLike,
} from '../../src/github/ci.js';

let id = 1;
const run = (name: string, status: string, conclusion: string | null, extra: Partial<CheckRunLike> = {}): CheckRunLike => ({
  id: id++,
  name,
  status,
  conclusion,
  started_at: '2024-01-01T00:00:00Z',
  ...extra,
});
const status = (context: string, state: string, extra: Partial<StatusLike> = {}): StatusLike => ({ context, state, ...extra });

describe('combineCi', () => {
  it('is none when there is nothing at all', () => {
    expect(combineCi([], [])).toBe('none');
  });

  it('is success when every run and status is green (neutral and skipped count as green)', () => {
    expect(combineCi([run('a', 'completed', 'success'), run('b', 'completed', 'neutral'), run('c', 'completed', 'skipped')], [status('ci/x', 'success')])).toBe(
      'success',
    );
  });

  it('is failure when anything is red, even with others pending', () => {
    for (const c of ['failure', 'cancelled', 'timed_out', 'action_required', 'startup_failure', 'stale']) {
      expect(combineCi([run('a', 'completed', c), run('b', 'in_progress', null)], []), c).toBe('failure');
    }
    expect(combineCi([run('a', 'queued', null)], [status('ci/x', 'error')])).toBe('failure');
    expect(combineCi([], [status('ci/x', 'failure'), status('ci/y', 'pending')])).toBe('failure');
  });

  it('is pending when nothing is red and something is unfinished', () => {
    expect(combineCi([run('a', 'completed', 'success'), run('b', 'in_progress', null)], [])).toBe('pending');
    expect(combineCi([run('a', 'queued', null)], [])).toBe('pending');
    expect(combineCi([run('a', 'completed', 'success')], [status('ci/x', 'pending')])).toBe('pending');
  });

  it('judges only the latest run of each name (a re-run replaces a failure)', () => {
    const old = run('test', 'completed', 'failure', { started_at: '2024-01-01T00:00:00Z' });
    const rerun = run('test', 'completed', 'success', { started_at: '2024-01-01T00:05:00Z' });
    expect(combineCi([rerun, old], [])).toBe('success');
    expect(latestPerName([old, rerun])).toEqual([rerun]);
    // Same start time: the higher id (created later) wins.
    const a = run('lint', 'completed', 'failure', { started_at: null });
    const b = run('lint', 'in_progress', null, { started_at: null });
    expect(combineCi([b, a], [])).toBe('pending');
  });

  it('judges only the latest status of each context', () => {
    const old = status('ci/x', 'failure', { updated_at: '2024-01-01T00:00:00Z', id: 1 });
    const fresh = status('ci/x', 'success', { updated_at: '2024-01-01T00:01:00Z', id: 2 });
    expect(combineCi([], [old, fresh])).toBe('success');
  });
});

describe('combineRequired', () => {
  it('is pending, never none or success, while a required check has not reported (by check name or status context)', () => {
    expect(combineRequired([], [], ['test'])).toBe('pending');
    expect(combineRequired([run('lint', 'completed', 'success')], [], ['test'])).toBe('pending');
    expect(missingRequired([run('lint', 'completed', 'success')], [status('ci/legacy', 'success')], ['test', 'ci/legacy', 'lint'])).toEqual(['test']);
    expect(combineRequired([run('test', 'completed', 'success')], [status('ci/legacy', 'success')], ['test', 'ci/legacy'])).toBe('success');
    // A reported but unfinished required check is pending as any other; a red one is failure.
    expect(combineRequired([run('test', 'in_progress', null)], [], ['test'])).toBe('pending');
    expect(combineRequired([run('lint', 'completed', 'failure')], [], ['test'])).toBe('failure');
    // No required checks: exactly combineCi.
    expect(combineRequired([], [], [])).toBe('none');
    expect(describePending([run('lint', 'completed', 'success')], [], ['test'])).toBe('still running: test (required, not reported)');
  });
});

describe('describeFailures', () => {
  it('lists failed checks with title, summary and URL, and failed statuses, a few lines each', () => {
    const text = describeFailures(
      [
        run('test', 'completed', 'failure', {
          output: { title: '3 tests failed', summary: 'FAIL a.test.ts\nFAIL b.test.ts\nFAIL c.test.ts\nline 4\nline 5\nline 6\nline 7\nline 8' },
          details_url: 'https://ci.example/run/1',
        }),
        run('lint', 'completed', 'success'),
      ],
      [status('deploy/preview', 'error', { description: 'preview build broke', target_url: 'https://ci.example/s/2' }), status('ok', 'success')],
    );
    expect(text).toContain('✗ test: failure');
    expect(text).toContain('3 tests failed');
    expect(text).toContain('FAIL a.test.ts');
    expect(text).not.toContain('line 8');
    expect(text).toContain('https://ci.example/run/1');
    expect(text).toContain('✗ deploy/preview: error');
    expect(text).toContain('preview build broke');
    expect(text).not.toContain('lint');
    expect(text).not.toContain('ok:');
  });

  it('stays under its size budget and says how many were left out', () => {
    const runs = Array.from({ length: 50 }, (_, i) =>
      run(`check-${i}`, 'completed', 'failure', { output: { title: 'x'.repeat(150), summary: 'y'.repeat(500) } }),
    );
    const text = describeFailures(runs, [], 2000);
    expect(text.length).toBeLessThan(2100);
    expect(text).toMatch(/… and \d+ more failing checks/);
  });

  it('describePending names what is still running', () => {
    expect(describePending([run('build', 'in_progress', null), run('done', 'completed', 'success')], [status('ci/x', 'pending')])).toBe(
      'still running: build (in_progress), ci/x (pending)',
    );
    expect(describePending([], [])).toBe('');
  });
});

/** What mutation testing found unasserted in the pure verdict code (npm run mutate -- src/github/ci.ts). */
describe('the verdict in detail', () => {
  it('lists the latest run of each name in name order', () => {
    const runs = [run('zeta', 'completed', 'success'), run('alpha', 'completed', 'success'), run('mid', 'completed', 'success')];
    expect(latestPerName(runs).map((r) => r.name)).toEqual(['alpha', 'mid', 'zeta']);
  });

  it('keeps the later run of a name by start time, and by id when they started together', () => {
    // The later start wins even over a higher id (a run queued earlier may start later).
    const late = run('test', 'completed', 'success', { started_at: '2024-01-01T00:05:00Z' });
    const early = run('test', 'completed', 'failure', { started_at: '2024-01-01T00:00:00Z' });
    expect(latestPerName([late, early])).toEqual([late]);
    expect(latestPerName([early, late])).toEqual([late]);
    // A run that has not started has no time to compare: the id decides.
    const started = run('lint', 'completed', 'failure', { started_at: '2024-01-01T00:05:00Z' });
    const queued = run('lint', 'queued', null, { started_at: null });
    expect(latestPerName([started, queued])).toEqual([queued]);
    expect(latestPerName([queued, started])).toEqual([queued]);
    const first = run('e2e', 'completed', 'failure');
    const rerun = run('e2e', 'completed', 'success'); // same start, higher id
    expect(latestPerName([rerun, first])).toEqual([rerun]);
    expect(latestPerName([first, rerun])).toEqual([rerun]);
  });

  it('keeps the later status of a context by update time, and by id when they were updated together', () => {
    const at = '2024-01-01T00:00:00Z';
    const older = status('ci/ext', 'failure', { updated_at: at, id: 1 });
    const newer = status('ci/ext', 'success', { updated_at: at, id: 2 });
    expect(combineCi([], [newer, older])).toBe('success');
    expect(combineCi([], [older, newer])).toBe('success');
    const later = status('ci/ext', 'failure', { updated_at: '2024-01-01T00:01:00Z', id: 0 });
    expect(combineCi([], [newer, later])).toBe('failure');
    // Without times or ids the first one seen stays.
    expect(combineCi([], [status('ci/x', 'success'), status('ci/x', 'failure')])).toBe('success');
  });

  it('reads a completed run without a known conclusion as red, and one with no conclusion as not finished', () => {
    expect(combineCi([run('odd', 'completed', 'something_new')], [])).toBe('failure');
    expect(combineCi([run('none', 'completed', null)], [])).toBe('pending');
    expect(combineCi([run('queued', 'queued', null)], [])).toBe('pending');
    expect(combineCi([], [status('ci/ext', 'error')])).toBe('failure');
  });

  it('cuts an over-long failure title to its limit with an ellipsis', () => {
    const title = 'x'.repeat(500);
    const out = describeFailures([run('lint', 'completed', 'failure', { output: { title } })], []);
    expect(out).toBe(`✗ lint: failure\n  ${'x'.repeat(199)}…`);
  });

  it('says how many failing checks did not fit, in the singular and the plural', () => {
    const long = (name: string) => run(name, 'completed', 'failure', { output: { summary: 's'.repeat(500) } });
    const two = describeFailures([long('a'), long('b')], [], 600);
    expect(two.split('\n').at(-1)).toBe('… and 1 more failing check');
    const three = describeFailures([long('a'), long('b'), long('c')], [], 600);
    expect(three.split('\n').at(-1)).toBe('… and 2 more failing checks');
    expect(describeFailures([long('a')], [], 10)).toBe('… and 1 more failing check');
  });

  it('names at most ten pending checks and counts the rest', () => {
    const runs = Array.from({ length: 13 }, (_, i) => run(`c${String(i).padStart(2, '0')}`, 'in_progress', null));
    expect(describePending(runs, [])).toBe(
      `still running: ${runs
        .slice(0, 10)
        .map((r) => `${r.name} (in_progress)`)
        .join(', ')} and 3 more`,
    );
    expect(describePending(runs.slice(0, 10), [])).not.toContain('more');
  });
});
