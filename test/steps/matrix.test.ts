/**
 * Artifact names of an Actions fleet carry the run attempt that uploaded them (`fleet-lane-core.a2`): readers pick
 * each lane's artifact by the attempt in its name, never by id, and never one from an earlier plan or a later attempt.
 */
import { describe, expect, it } from 'vitest';
import type { StoredArtifact } from '../../src/ports.js';
import { attemptName, laneArtifact, latestByAttempt, parseAttemptName } from '../../src/steps/drivers/matrix-artifacts.js';

const art = (name: string, id: number): StoredArtifact => ({ name, id });

describe('artifact names', () => {
  it('name the attempt after the base name, and read it back', () => {
    expect(attemptName('fleet-plan', 3)).toBe('fleet-plan.a3');
    expect(laneArtifact('core')).toBe('fleet-lane-core.a1');
    expect(laneArtifact('core', 12)).toBe('fleet-lane-core.a12');
    expect(parseAttemptName('fleet-lane-core.a12')).toEqual({ base: 'fleet-lane-core', attempt: 12 });
    expect(parseAttemptName('fleet-lane-lib.v2.a3')).toEqual({ base: 'fleet-lane-lib.v2', attempt: 3 });
  });

  it('a name without an attempt is attempt 1 of itself; only a trailing .a<digits> is an attempt', () => {
    for (const name of ['fleet-plan', 'fleet-lane-a.abc', 'fleet-lane-x.a', 'fleet-lane-x.a2b', 'fleet-lane-x-a2', 'xa2']) {
      expect(parseAttemptName(name)).toEqual({ base: name, attempt: 1 });
    }
  });
});

describe('latestByAttempt', () => {
  it('picks, per base name, the highest attempt, whatever the ids say', () => {
    const picked = latestByAttempt([
      art('fleet-lane-a.a2', 5),
      art('fleet-lane-a.a3', 1),
      art('fleet-lane-a.a1', 9),
      art('fleet-lane-b', 4),
      art('fleet-lane-b.a2', 2),
    ]);
    expect([...picked].map(([base, a]) => [base, a.name, a.id]).sort()).toEqual([
      ['fleet-lane-a', 'fleet-lane-a.a3', 1],
      ['fleet-lane-b', 'fleet-lane-b.a2', 2],
    ]);
  });

  it('keeps the first seen of two uploads of one attempt', () => {
    expect(latestByAttempt([art('fleet-lane-a.a2', 7), art('fleet-lane-a.a2', 8)]).get('fleet-lane-a')!.id).toBe(7);
  });

  it("ignores attempts before `since` (an earlier plan's) and after `until` (a name from the future), bounds included", () => {
    const all = [art('fleet-lane-a.a1', 1), art('fleet-lane-a.a2', 2), art('fleet-lane-a.a3', 3), art('fleet-lane-a.a4', 4)];
    expect(latestByAttempt(all, 2, 3).get('fleet-lane-a')!.name).toBe('fleet-lane-a.a3');
    expect(latestByAttempt(all, 4, 4).get('fleet-lane-a')!.name).toBe('fleet-lane-a.a4');
    expect(latestByAttempt(all, 1, 1).get('fleet-lane-a')!.name).toBe('fleet-lane-a.a1');
    expect(latestByAttempt(all, 5).size).toBe(0);
    expect(latestByAttempt(all, 1, 0).size).toBe(0);
    expect(latestByAttempt(all).get('fleet-lane-a')!.name).toBe('fleet-lane-a.a4');
  });
});
