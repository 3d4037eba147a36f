import { describe, expect, it } from 'vitest';
import { conflictBodyLines, conflictRefusal, describeCommits, isFleetCommit, othersCommits, type BranchCommit } from '../../src/core/branch-conflict.js';

const fleetMsg = (fleet: string, lane: string) => `stamp: svc\n\nstamp\n\nFleet-Id: ${fleet}\nFleet-Lane: ${lane}`;
const c = (commit: string, parents: string[], message: string, author = 'Ada <ada@example.com>'): BranchCommit => ({ commit, parents, author, message });

describe('othersCommits', () => {
  it("leaves out Fleet's own commits for this lane, and keeps another fleet's or another lane's", () => {
    const commits = [
      c('f1', ['b'], fleetMsg('stamp', 'svc')),
      c('f2', ['f1'], fleetMsg('stamp', 'lib')),
      c('f3', ['f2'], fleetMsg('other', 'svc')),
      c('p1', ['f3'], 'Fix by hand'),
    ];
    expect(othersCommits(commits, 'stamp', 'svc').map((x) => x.commit)).toEqual(['f2', 'f3', 'p1']);
  });

  it('needs both trailers, as whole lines with the exact names', () => {
    expect(isFleetCommit(c('x', [], 'Fleet-Id: stamp\nFleet-Lane: svc'), 'stamp', 'svc')).toBe(true);
    expect(isFleetCommit(c('x', [], 'Fleet-Id: stamp'), 'stamp', 'svc')).toBe(false);
    expect(isFleetCommit(c('x', [], 'Fleet-Id: stamp\nFleet-Lane: svc2'), 'stamp', 'svc')).toBe(false);
    expect(isFleetCommit(c('x', [], 'see Fleet-Id: stamp\nFleet-Lane: svc'), 'stamp', 'svc')).toBe(false);
  });

  it('takes a clean merge of the base ("Update branch") as moot, and a merge of another branch, or one that changed more, as theirs', () => {
    const update = { ...c('m1', ['f1', 'base2'], "Merge branch 'main'"), cleanMerge: true };
    const feature = [c('x1', ['b'], 'feature work'), { ...c('m2', ['m1', 'x1'], "Merge branch 'feature'"), cleanMerge: true }];
    const commits = [c('f1', ['b'], fleetMsg('stamp', 'svc')), update, ...feature];
    expect(othersCommits(commits, 'stamp', 'svc').map((x) => x.commit)).toEqual(['x1', 'm2']);
    // A conflict resolved by hand, or an edit made in the merge: someone's work, even though it merges the base.
    const resolved = { ...c('m3', ['f1', 'base3'], "Merge branch 'main'"), cleanMerge: false };
    expect(othersCommits([c('f1', ['b'], fleetMsg('stamp', 'svc')), resolved], 'stamp', 'svc').map((x) => x.commit)).toEqual(['m3']);
  });
});

describe('what a person reads', () => {
  const three = [c('a'.repeat(40), [], 'One'), c('b'.repeat(40), [], 'Two'), c('c'.repeat(40), [], 'Three'), c('d'.repeat(40), [], 'x'.repeat(80))];

  it('names the first commits by short id, subject and author, and counts the rest', () => {
    expect(describeCommits(three)).toBe(
      `${'a'.repeat(12)} "One" (Ada <ada@example.com>), ${'b'.repeat(12)} "Two" (Ada <ada@example.com>), ${'c'.repeat(12)} "Three" (Ada <ada@example.com>), and 1 more`,
    );
    expect(describeCommits(three.slice(3))).toContain(`"${'x'.repeat(59)}…"`);
  });

  it('says how to go on when a lane is refused, and "more than" when the list was cut', () => {
    expect(conflictRefusal('fleet/x/svc', three.slice(0, 1), false)).toMatch(
      /^fleet\/x\/svc holds 1 commit Fleet did not make for this lane: .*branch_conflict: rebase.*branch_conflict: replace/,
    );
    expect(conflictRefusal('fleet/x/svc', three, true)).toMatch(/holds more than 4 commits/);
  });

  it('lists kept and replaced commits for the PR body', () => {
    expect(conflictBodyLines('rebase', ['a'.repeat(40)]).join('\n')).toMatch(/\*\*Kept\*\* 1 commit others pushed.*\n\n- `aaaaaaaaaaaa`/);
    const many = Array.from({ length: 22 }, (_, i) => String(i).padStart(40, '0'));
    const lines = conflictBodyLines('replace', many);
    expect(lines[1]).toMatch(/^\*\*Replaced\*\* 22 commits/);
    expect(lines.at(-1)).toBe('- … and 2 more');
  });
});
