// The pure side of `fleet prs`: review state, the merge rules, the merge method, the table, the JSON and the exit code.
import { describe, expect, it } from 'vitest';
import {
  formatAge,
  mergeBlocker,
  mergeMethodFor,
  prsCounts,
  prsExitCode,
  prsJson,
  renderPrsActions,
  renderPrsTable,
  reviewState,
  rowFrom,
  type PrAction,
  type PrRow,
  type PrView,
} from '../../src/core/prs.js';

const NOW = '2026-12-03T12:00:00.000Z';
const SHA = 'a'.repeat(40);

function view(extra: Partial<PrView> = {}): PrView {
  return {
    number: 7,
    url: 'https://github.com/acme/api/pull/7',
    state: 'open',
    draft: false,
    ci: 'success',
    review: 'none',
    marked: true,
    mergeable: true,
    mergeable_state: 'clean',
    created_at: '2026-12-01T12:00:00.000Z',
    head_branch: 'fleet/n/api',
    head_sha: SHA,
    base_branch: 'main',
    branch_head: SHA,
    ...extra,
  };
}

function row(lane: string, v: PrView | null, problem: string | null = null): PrRow {
  return rowFrom({ lane, repo: `acme/${lane}`, lane_status: 'completed', branch: `fleet/n/${lane}` }, v, problem);
}

describe('reviewState', () => {
  const r = (login: string, state: string) => ({ user: { login }, state });
  it("counts each reviewer's latest verdict: a change request anywhere wins, then an approval", () => {
    expect(reviewState([r('ann', 'APPROVED'), r('bob', 'CHANGES_REQUESTED')], 0)).toBe('changes_requested');
    // Bob changed his mind: his approval replaces his change request.
    expect(reviewState([r('bob', 'CHANGES_REQUESTED'), r('bob', 'APPROVED')], 0)).toBe('approved');
    // Logins compare without case.
    expect(reviewState([r('Bob', 'CHANGES_REQUESTED'), r('bob', 'APPROVED')], 0)).toBe('approved');
  });
  it('a comment changes no verdict; a dismissal withdraws it', () => {
    expect(reviewState([r('ann', 'APPROVED'), r('ann', 'COMMENTED')], 0)).toBe('approved');
    expect(reviewState([r('ann', 'CHANGES_REQUESTED'), r('ann', 'DISMISSED')], 0)).toBe('none');
  });
  it('without a verdict: review_required while someone is asked, else none', () => {
    expect(reviewState([r('ann', 'COMMENTED')], 1)).toBe('review_required');
    expect(reviewState([], 0)).toBe('none');
    expect(reviewState([{ user: null, state: 'CHANGES_REQUESTED' }], 0)).toBe('none');
  });
});

describe('mergeBlocker', () => {
  it('lets an open, ready, green, unopposed, conflict-free PR through; also with no CI at all, or mergeability not yet known', () => {
    expect(mergeBlocker(view())).toBeNull();
    expect(mergeBlocker(view({ ci: 'none' }))).toBeNull();
    expect(mergeBlocker(view({ mergeable: null, mergeable_state: 'unknown' }))).toBeNull();
    expect(mergeBlocker(view({ review: 'approved' }))).toBeNull();
    expect(mergeBlocker(view({ review: 'review_required' }))).toBeNull();
  });
  it('says why not, for each rule', () => {
    expect(mergeBlocker(view({ state: 'closed' }))).toBe('#7 is closed');
    expect(mergeBlocker(view({ state: 'merged' }))).toBe('#7 is merged');
    expect(mergeBlocker(view({ draft: true }))).toBe('#7 is a draft');
    expect(mergeBlocker(view({ ci: 'failure' }))).toBe(`CI is failure on ${SHA.slice(0, 12)}`);
    expect(mergeBlocker(view({ ci: 'pending' }))).toBe(`CI is pending on ${SHA.slice(0, 12)}`);
    expect(mergeBlocker(view({ review: 'changes_requested' }))).toBe('a reviewer requested changes on #7');
    expect(mergeBlocker(view({ mergeable: false, mergeable_state: 'dirty' }))).toBe('#7 conflicts with main');
    expect(mergeBlocker(view({ number: null, state: 'branch', mergeable: false, mergeable_state: 'diverged' }))).toBe(
      'fleet/n/api cannot merge into main (diverged)',
    );
  });
});

describe('mergeMethodFor', () => {
  it('--method wins and must be a method', () => {
    expect(mergeMethodFor({ flag: 'rebase', policy: 'never' })).toEqual({ method: 'rebase' });
    expect(mergeMethodFor({ flag: 'rebase', policy: 'when-green', method: 'squash' })).toEqual({ method: 'rebase' });
    expect(mergeMethodFor({ flag: 'octopus', policy: 'when-green', method: 'squash' })).toEqual({
      problem: '--method takes merge, squash, rebase, fast-forward, got "octopus"',
    });
  });
  it("without it, the fleet file's method whatever its policy: the command itself is the telling (issue 27)", () => {
    expect(mergeMethodFor({ policy: 'when-green', method: 'merge' })).toEqual({ method: 'merge' });
    expect(mergeMethodFor({ policy: 'never', method: 'squash' })).toEqual({ method: 'squash' });
    expect(mergeMethodFor({ policy: 'never', method: 'octopus' })).toEqual({
      problem: 'merge.method is "octopus": pass --method merge|squash|rebase|fast-forward',
    });
  });
});

describe('formatAge', () => {
  it('the largest whole unit, relative to now', () => {
    expect(formatAge('2026-12-03T11:59:15.000Z', NOW)).toBe('45 s');
    expect(formatAge('2026-12-03T11:48:00.000Z', NOW)).toBe('12 min');
    expect(formatAge('2026-12-02T12:00:00.000Z', NOW)).toBe('24 h');
    expect(formatAge('2026-11-30T12:00:00.000Z', NOW)).toBe('3 d');
  });
  it('a dash when unknown, unparsable or in the future', () => {
    expect(formatAge(null, NOW)).toBe('—');
    expect(formatAge('yesterday', NOW)).toBe('—');
    expect(formatAge('2026-12-04T00:00:00.000Z', NOW)).toBe('—');
  });
});

describe('renderPrsTable', () => {
  it('one row per lane with the PR as the forge shows it, the counts, and the lanes that could not be read', () => {
    const rows = [
      row('api', view()),
      row(
        'web',
        view({
          number: 8,
          url: 'https://github.com/acme/web/pull/8',
          draft: true,
          ci: 'failure',
          review: 'changes_requested',
          mergeable: true,
          mergeable_state: 'unstable',
          created_at: '2026-12-03T09:00:00.000Z',
        }),
      ),
      row(
        'db',
        view({ number: 9, url: 'javascript:alert(1)', state: 'closed', ci: null, review: null, mergeable: null, mergeable_state: null, branch_head: null }),
      ),
      row('cli', view({ number: 10, state: 'merged', ci: null, review: null, mergeable: null, branch_head: SHA })),
      row('docs', null),
      row('x|y', null, 'the forge could not be asked: 502 <bad gateway>'),
    ];
    expect(renderPrsTable(rows, { now: NOW, title: 'node20' })).toBe(
      [
        '## Fleet PRs — node20',
        '',
        '| Lane | Repo | Branch | PR | State | CI | Review | Mergeable | Age |',
        '|---|---|---|---|---|---|---|---|---|',
        '| api | acme/api | `fleet/n/api` | [#7](https://github.com/acme/api/pull/7) | open | success | none | yes | 2 d |',
        '| web | acme/web | `fleet/n/web` | [#8](https://github.com/acme/web/pull/8) | open (draft) | failure | changes\\_requested | yes (unstable) | 3 h |',
        '| db | acme/db | `fleet/n/db` (deleted) | #9 | closed | — | — | — | 2 d |',
        '| cli | acme/cli | `fleet/n/cli` | [#10](https://github.com/acme/api/pull/7) | merged | — | — | — | 2 d |',
        '| docs | acme/docs | `fleet/n/docs` | — | — | — | — | — | — |',
        '| x\\|y | acme/x\\|y | `fleet/n/x\\|y` | — | unread | — | — | — | — |',
        '',
        '6 lanes: 2 open (1 draft), 1 merged, 1 closed, 1 with nothing on the forge, 1 unread.',
        '',
        'Not read:',
        '- x\\|y: the forge could not be asked: 502 &lt;bad gateway&gt;',
        '',
      ].join('\n'),
    );
  });

  it('a local branch without a PR, and mergeability GitHub has not worked out yet', () => {
    const local = row('svc', view({ number: null, url: null, state: 'branch', ci: 'none', review: null, mergeable: false, mergeable_state: 'diverged' }));
    const computing = row('api', view({ mergeable: null, mergeable_state: 'unknown' }));
    const text = renderPrsTable([local, computing], { now: NOW });
    expect(text).toContain('| svc | acme/svc | `fleet/n/svc` | — | branch (no PR) | none | — | no (diverged) | 2 d |');
    expect(text).toContain('| api | acme/api | `fleet/n/api` | [#7](https://github.com/acme/api/pull/7) | open | success | none | unknown | 2 d |');
    expect(text).toContain('2 lanes: 1 open, 1 branch without a PR.');
    expect(renderPrsTable([], { now: NOW })).toBe('## Fleet PRs\n\nNo lanes.\n');
  });
});

describe('prsJson and prsCounts', () => {
  it('rows as they are, with their age in seconds at now', () => {
    const [j] = prsJson([row('api', view())], NOW);
    expect(j).toMatchObject({ lane: 'api', pr: 7, state: 'open', ci: 'success', review: 'none', mergeable: true, age_seconds: 2 * 86_400, problem: null });
    expect(prsJson([row('docs', null)], NOW)[0]!.age_seconds).toBeNull();
    expect(prsCounts([])).toBe('0 lanes');
  });
});

describe('renderPrsActions and prsExitCode', () => {
  const a = (lane: string, outcome: PrAction['outcome'], detail: string, pr: number | null = 1): PrAction => ({
    lane,
    repo: `acme/${lane}`,
    pr,
    url: null,
    outcome,
    detail,
    branch_deleted: false,
  });

  it('says what it did per lane, counts it, and names what is left for a person', () => {
    const actions = [
      a('api', 'merged', '#1 merged (squash) as 0123456789ab'),
      a('web', 'not-merged', 'CI is failure on 0123456789ab', 2),
      a('docs', 'no-pr', 'neither a PR nor a branch on the forge', null),
    ];
    expect(renderPrsActions(actions, { command: 'merge', dryRun: false, method: 'squash', title: 'node20' })).toBe(
      [
        '## Fleet PRs: merge (squash) — node20',
        '',
        '| Lane | Repo | PR | Outcome | Detail |',
        '|---|---|---|---|---|',
        '| api | acme/api | #1 | merged | #&#8203;1 merged (squash) as 0123456789ab |',
        '| web | acme/web | #2 | not merged | CI is failure on 0123456789ab |',
        '| docs | acme/docs | — | no PR | neither a PR nor a branch on the forge |',
        '',
        'merged: 1 · not merged: 1 · no PR: 1.',
        '',
        '1 lane left for a person (exit code 1).',
        '',
      ].join('\n'),
    );
    expect(prsExitCode(actions)).toBe(1);
  });

  it('a dry run says first that it changed nothing; nothing unresolved exits 0', () => {
    const actions = [a('api', 'would-close', 'would close #1 and delete fleet/n/api'), a('cli', 'already-merged', '#3 is merged: left as it is', 3)];
    const text = renderPrsActions(actions, { command: 'close', dryRun: true });
    expect(text.split('\n').slice(0, 3)).toEqual([
      '## Fleet PRs: close',
      '',
      'Dry run: nothing was changed on the forge, in the manifest or in the events log.',
    ]);
    expect(text).toContain('would close: 1 · already merged: 1.');
    expect(text).not.toContain('left for a person');
    expect(prsExitCode(actions)).toBe(0);
    expect(prsExitCode([a('x', 'failed', 'boom'), a('y', 'closed', 'ok')])).toBe(1);
    expect(prsExitCode([a('x', 'not-closed', 'moved')])).toBe(1);
  });
});
