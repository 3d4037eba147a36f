import { describe, expect, it } from 'vitest';
import { validateFleetFile } from '../../src/core/validate.js';
import {
  DEFAULT_PRIORITY_LABELS,
  DEFAULT_SPEC_PATTERNS,
  classify,
  decideQueue,
  hasSpec,
  insideOwns,
  itemBranch,
  neutralTitle,
  parseIssue,
  parsePlan,
  type IssueFacts,
  type ItemFacts,
  type QueueSettings,
} from '../../src/core/queue.js';

const settings: QueueSettings = {
  name: 'q',
  owns: [],
  label: 'fleet:ready',
  priority: DEFAULT_PRIORITY_LABELS,
  spec_patterns: DEFAULT_SPEC_PATTERNS,
  needs_person: 'fleet:needs-person',
  budget: 3,
  base: 'main',
};
const SPEC = '## Acceptance criteria\n- it works\n';

function facts(number: number, body: string, extra: Partial<IssueFacts> & { labels?: string[]; title?: string } = {}): IssueFacts {
  return {
    issue: {
      number,
      title: extra.title ?? `Issue ${number}`,
      body,
      labels: extra.labels ?? ['fleet:ready'],
      created_at: '2026-12-01T00:00:00Z',
      html_url: `https://x/${number}`,
    },
    parsed: parseIssue(body),
    spec_text: extra.spec_text ?? null,
    deps: extra.deps ?? new Map(),
    items: extra.items ?? new Map(),
    reopened: extra.reopened,
  };
}

const pr = (number: number, state: 'open' | 'merged' | 'closed'): ItemFacts['pr'] => ({
  number,
  state,
  url: `https://x/pull/${number}`,
  created_at: '2026-12-01T00:00:00Z',
});

describe('parseIssue', () => {
  it('reads Depends on lines (several numbers, a list item), gates not ticked, and a Spec: file', () => {
    const p = parseIssue(
      'Depends on #3\n- depends on: #4, #5 and #3\nGate: security review by @sec\n- [x] Gate: done already\n- [ ] Gate: product sign-off\nSpec: `docs/specs/12.md`\nMentions #9 elsewhere.',
    );
    expect(p.depends).toEqual([3, 4, 5]);
    expect(p.gates).toEqual(['security review by @sec', 'product sign-off']);
    expect(p.spec_file).toBe('docs/specs/12.md');
    expect(p.plan).toBeNull();
  });

  it('reads a parallel plan table into slots with their fences and dependencies', () => {
    const body = [
      'Intro',
      '',
      '## Parallel plan',
      '',
      '| Slot | Touches | Depends on |',
      '|---|---|---|',
      '| lead | `src/core/**` | — |',
      '| API | `src/api/**`, `docs/api.md` | lead |',
      '| web | src/web/** | lead |',
      '',
      '## Acceptance criteria',
      '- x',
    ].join('\n');
    expect(parsePlan(body)).toEqual({
      slots: [
        { slot: 'lead', touches: ['src/core/**'], depends_on: [] },
        { slot: 'api', touches: ['src/api/**', 'docs/api.md'], depends_on: ['lead'] },
        { slot: 'web', touches: ['src/web/**'], depends_on: ['lead'] },
      ],
    });
  });

  it('names every problem of a plan table at once', () => {
    const body = '## Parallel plan\n| slot | touches | depends on |\n|-|-|-|\n| a | | b |\n| a | x/** | |\n';
    const p = parsePlan(body);
    expect('problem' in p && p.problem).toMatch(/slot "a" says nothing it touches; slot "a" is listed twice; slot "a" depends on "b"/);
  });
});

describe('what an issue may not do', () => {
  it('a plan cannot widen a fence: touches must start with a name, stay inside the repository and have no braces', () => {
    const body = '## Parallel plan\n| slot | touches |\n|-|-|\n| a | ** |\n| b | ../x/** |\n| c | src/{a,b}/** |\n| d | src/d/** |\n';
    const p = parsePlan(body);
    expect('problem' in p && p.problem).toMatch(
      /slot "a" touches "\*\*": .*start with a folder or file name[^;]*; slot "b" touches "..\/x\/\*\*": .*cannot leave the repository; slot "c" touches "src\/\{a": braces/,
    );
  });

  it("a plan's touches must lie inside the fleet's owns", () => {
    expect(insideOwns('src/api/**', ['src/**'])).toBe(true);
    expect(insideOwns('src/api/index.ts', ['src/**'])).toBe(true);
    expect(insideOwns('docs/**', ['src/**'])).toBe(false);
    expect(insideOwns('docs/**', [])).toBe(true);
    const body = `${SPEC}\n## Parallel plan\n| slot | touches |\n|-|-|\n| a | src/a/** |\n| b | infra/** |\n`;
    expect(classify(facts(3, body), { ...settings, owns: ['src/**'] })).toMatchObject({
      state: 'NO_SPEC',
      reason: "the parallel plan reaches outside the fleet's owns: slot b touches infra/**",
    });
  });

  it('a dependency Fleet cannot follow is said, not ignored', () => {
    expect(classify(facts(4, `${SPEC}Depends on other/repo#5\n`), settings)).toMatchObject({
      state: 'NO_SPEC',
      reason: expect.stringContaining('"Depends on other/repo#5"'),
    });
  });

  it('a branch without a PR is resumed only when the issue passes every check', () => {
    const items = new Map([['', { branch: 'fleet/q/issue-5-x', pr: null }]]);
    expect(classify(facts(5, 'no spec here', { items }), settings).state).toBe('NO_SPEC');
    expect(classify(facts(5, `${SPEC}Gate: wait`, { items }), settings).state).toBe('BLOCKED_PERSON');
    expect(classify(facts(5, `${SPEC}Depends on #1`, { items, deps: new Map([[1, { done: false, why: '#1 is open' }]]) }), settings).state).toBe(
      'BLOCKED_WORK',
    );
  });

  it('a PR closed unmerged holds the issue until a person clears it', () => {
    const closed = { branch: null, pr: pr(9, 'closed') };
    expect(classify(facts(6, SPEC, { items: new Map([['', closed]]) }), settings).state).toBe('BLOCKED_PERSON');
    expect(classify(facts(6, SPEC, { items: new Map([['', { ...closed, cleared: true }]]) }), settings).state).toBe('READY');
  });

  it('titles reach commits and PRs with no issue reference a closing keyword could act on', () => {
    expect(neutralTitle('Fix #42 and fixes https://github.com/a/b/issues/7')).toBe('Fix issue 42 and fixes issue 7');
  });

  it('reads a body line by line: a Depends on line is not continued by the next', () => {
    expect(parseIssue('Depends on\n#3 is unrelated').depends).toEqual([]);
    expect(parseIssue(`${'\n'.repeat(10_000)}Depends on #3`).depends).toEqual([3]);
  });
});

describe('spec rule', () => {
  it('the default patterns accept acceptance criteria, "Done when:", a checklist and steps to reproduce, and refuse prose', () => {
    for (const body of [SPEC, 'Done when: the test passes', 'Do it\n- [ ] a box', '### Steps to reproduce\n1. run'])
      expect(hasSpec(body, DEFAULT_SPEC_PATTERNS)).toBe(true);
    expect(hasSpec('Make it faster, please. It is slow.', DEFAULT_SPEC_PATTERNS)).toBe(false);
  });
});

describe('classify', () => {
  it('gives each issue one state, with the reason quoted from it', () => {
    expect(classify(facts(1, 'just do it'), settings)).toMatchObject({ state: 'NO_SPEC' });
    expect(classify(facts(2, `${SPEC}Gate: legal approves`), settings)).toMatchObject({ state: 'BLOCKED_PERSON', reason: '"Gate: legal approves"' });
    expect(classify(facts(3, SPEC, { labels: ['fleet:ready', 'Fleet:Needs-Person'] }), settings)).toMatchObject({
      state: 'BLOCKED_PERSON',
      reason: 'labelled "fleet:needs-person"',
    });
    const deps = new Map([
      [1, { done: false, why: '#1 is open' }],
      [4, { done: true, why: '' }],
    ]);
    expect(classify(facts(5, `${SPEC}Depends on #1, #4`, { deps }), settings)).toMatchObject({ state: 'BLOCKED_WORK', reason: '"Depends on #1": #1 is open' });
    expect(classify(facts(6, `${SPEC}Depends on #4`, { deps }), settings)).toMatchObject({ state: 'READY' });
    expect(classify(facts(7, SPEC, { items: new Map([['', { branch: 'fleet/q/issue-7-x', pr: pr(20, 'open') }]]) }), settings)).toMatchObject({
      state: 'IN_FLIGHT',
      reason: 'the issue: PR #20 open',
    });
    expect(classify(facts(8, SPEC, { items: new Map([['', { branch: null, pr: pr(21, 'closed') }]]) }), settings)).toMatchObject({ state: 'BLOCKED_PERSON' });
    expect(classify(facts(9, 'Spec: docs/9.md', { spec_text: 'missing' }), settings)).toMatchObject({
      state: 'NO_SPEC',
      reason: 'the issue points to "Spec: docs/9.md", and docs/9.md is not on main',
    });
    expect(classify(facts(10, 'Spec: docs/10.md', { spec_text: 'the spec' }), settings)).toMatchObject({ state: 'READY' });
  });

  it('keeps work on the forge in flight even when the body lost its spec', () => {
    const f = facts(11, 'rewritten to nothing', { items: new Map([['', { branch: 'b', pr: pr(30, 'open') }]]) });
    expect(classify(f, settings).state).toBe('IN_FLIGHT');
  });
});

describe('decideQueue', () => {
  it('orders by priority label then number, and starts budget minus the open PRs', () => {
    const queue = [
      facts(1, SPEC),
      facts(2, SPEC, { labels: ['fleet:ready', 'priority: high'] }),
      facts(3, SPEC, { items: new Map([['', { branch: 'fleet/q/issue-3-x', pr: pr(40, 'open') }]]) }),
      facts(4, SPEC, { labels: ['fleet:ready', 'priority: critical'] }),
      facts(5, SPEC),
    ];
    const d = decideQueue(queue, settings);
    expect(d.start.map((s) => s.lane)).toEqual(['issue-4', 'issue-2']);
    expect(d.board.find((r) => r.issue === 1)).toMatchObject({ state: 'READY', reason: expect.stringContaining('waits for a free slot') });
    expect(d.board.find((r) => r.issue === 4)).toMatchObject({ state: 'IN_FLIGHT', started: ['issue-4'] });
  });

  it('resumes a branch without a PR before anything new, on its own branch name', () => {
    const d = decideQueue([facts(1, SPEC), facts(9, SPEC, { items: new Map([['', { branch: 'fleet/q/issue-9-old-title', pr: null }]]) })], {
      ...settings,
      budget: 1,
    });
    expect(d.start).toEqual([{ issue: 9, slot: null, lane: 'issue-9', branch: 'fleet/q/issue-9-old-title', resume: true, owns: [] }]);
  });

  it('a parallel plan: the lead first, its dependents when the lead PR has merged, the issue closed when all have', () => {
    const body = `${SPEC}\n## Parallel plan\n| slot | touches | depends on |\n|--|--|--|\n| lead | src/core/** | |\n| api | src/api/** | lead |\n| web | src/web/** | lead |\n`;
    const first = decideQueue([facts(12, body)], settings);
    expect(first.start.map((s) => [s.lane, s.owns])).toEqual([['issue-12.lead', ['src/core/**']]]);
    const leadOpen = decideQueue([facts(12, body, { items: new Map([['lead', { branch: 'b', pr: pr(50, 'open') }]]) })], settings);
    expect(leadOpen.start).toEqual([]);
    expect(leadOpen.board[0]).toMatchObject({ state: 'IN_FLIGHT', reason: expect.stringContaining('slot api waits for lead to merge') });
    const leadMerged = decideQueue([facts(12, body, { items: new Map([['lead', { branch: 'b', pr: pr(50, 'merged') }]]) })], settings);
    expect(leadMerged.start.map((s) => s.lane)).toEqual(['issue-12.api', 'issue-12.web']);
    const all = new Map(['lead', 'api', 'web'].map((s, i) => [s, { branch: null, pr: pr(50 + i, 'merged' as const) }]));
    expect(decideQueue([facts(12, body, { items: all })], settings).close).toEqual([12]);
    // Reopened by a person after every part merged: left to the person, never closed again.
    const reopened = decideQueue([facts(12, body, { items: all, reopened: true })], settings);
    expect(reopened.close).toEqual([]);
    expect(reopened.board[0]).toMatchObject({ state: 'BLOCKED_PERSON', reason: expect.stringContaining('reopened') });
  });

  it('branch names carry the issue number and a slug of its title', () => {
    expect(itemBranch('q', { number: 7, title: 'Fix: the `login` page (again)!', body: '', labels: [], created_at: '', html_url: '' }, null)).toBe(
      'fleet/q/issue-7-fix-the-login-page-again',
    );
    expect(itemBranch('q', { number: 7, title: '', body: '', labels: [], created_at: '', html_url: '' }, 'api')).toBe('fleet/q/issue-7.api-work');
  });
});

describe('source.issues in the fleet file', () => {
  it('names every problem at once: the forge, the repository, a bad pattern, labels that clash, a lane id of the queue', () => {
    const r = validateFleetFile(
      {
        name: 'q',
        directive: 'd',
        run: 'true',
        targets: [{ repo: './x', lane: 'issue-3' }],
        source: { issues: { repo: 'not a repo', label: 'fleet:blocked', spec: { patterns: ['(unclosed'] } } },
      },
      'fleet.yml',
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.field)).toEqual([
      'source.issues',
      'source.issues.repo',
      'source.issues.spec.patterns[0]',
      'source.issues.labels',
      'targets',
    ]);
  });

  it('refuses integrate:, a draft under when-green, and a ready label with a comma', () => {
    const r = validateFleetFile(
      {
        name: 'q',
        directive: 'd',
        run: 'true',
        forge: 'github',
        source: { issues: { repo: 'acme/app', label: 'a,b' } },
        integrate: {},
        pr: { draft: true },
        merge: { policy: 'when-green' },
      },
      'fleet.yml',
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.field)).toEqual(['source.issues.label', 'integrate', 'pr.draft']);
  });

  it('a queue alone is a fleet: no targets needed', () => {
    const r = validateFleetFile({ name: 'q', directive: 'd', run: 'true', forge: 'github', source: { issues: { repo: 'acme/app' } } }, 'fleet.yml');
    expect(r.ok).toBe(true);
  });
});
