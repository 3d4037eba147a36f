/**
 * Issue 11, "what a new user hit": every problem of a fleet file at once, a structural one (a missing repo:, a list
 * written as text) no longer hiding the checks of the rest; messages that say what to write, with the user's value.
 */
import { describe, expect, it } from 'vitest';
import { checkFence } from '../../src/core/fence.js';
import { editDistance, nearest } from '../../src/core/suggest.js';
import { validateFleetFile, type Problem, type ValidationResult } from '../../src/core/validate.js';

const FILE = 'fleet.yml';

function base(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'upgrade', directive: 'Bump the linter', run: 'npm i -D eslint@9', targets: [{ repo: 'acme/api' }], ...over };
}

function problems(result: ValidationResult): Problem[] {
  if (result.ok) throw new Error('expected problems, the file was valid');
  return result.problems;
}

/** The message at `field`, which must be the only problem there. */
function messageAt(result: ValidationResult, field: string): string {
  const found = problems(result).filter((p) => p.field === field);
  if (found.length !== 1) throw new Error(`expected one problem at ${field}, got ${JSON.stringify(problems(result), null, 1)}`);
  return found[0]!.message;
}

function fields(result: ValidationResult): string[] {
  return problems(result).map((p) => p.field);
}

describe('a structural problem hides no other problem', () => {
  it('a target without repo:, an empty directive, both run and agent, a branch without {lane}: all four in one go', () => {
    const raw = base({
      directive: '  ',
      agent: { preset: 'claude' },
      branch: 'fleet/{name}',
      targets: [{ owns: ['src/**'] }, { repo: 'acme/web' }],
    });
    const r = validateFleetFile(raw, FILE);
    expect(fields(r).sort()).toEqual(['agent', 'branch', 'directive', 'targets[0].repo']);
    expect(messageAt(r, 'targets[0].repo')).toMatch(/^missing: add repo:/);
    expect(messageAt(r, 'directive')).toMatch(/empty/);
    expect(messageAt(r, 'agent')).toMatch(/not both/);
    expect(messageAt(r, 'branch')).toMatch(/\{lane\}/);
  });

  it('checks each target on its own: the other fields of a target without repo:, and the targets after it', () => {
    const raw = base({ targets: [{ directive: '', owns: ['/abs/**'] }, 'acme/web', { repo: 'acme/x', never: ['../up'] }] });
    expect(fields(validateFleetFile(raw, FILE)).sort()).toEqual([
      'targets[0].directive',
      'targets[0].owns[0]',
      'targets[0].repo',
      'targets[1]',
      'targets[2].never[0]',
    ]);
  });

  it('checks the top-level fields beside one of the wrong type', () => {
    const raw = base({ checks: 'npm test', directive: '', owns: ['!docs/**'], max_parallel: 'many' });
    expect(fields(validateFleetFile(raw, FILE)).sort()).toEqual(['checks', 'directive', 'max_parallel', 'owns[0]']);
  });

  it('reports "both run and agent" even when agent: itself does not fit', () => {
    const r = validateFleetFile(base({ agent: { preset: 'claud' } }), FILE);
    expect(fields(r).sort()).toEqual(['agent', 'agent.preset']);
  });

  // What a field that did not parse would make the checks say is a consequence, not a problem of the file.
  it('reports no consequence of a field that did not fit', () => {
    // An empty run: is reported as empty, not as "say how the directive runs" or "this lane has no way to run".
    expect(fields(validateFleetFile(base({ run: '' }), FILE))).toEqual(['run']);
    expect(
      fields(
        validateFleetFile(
          base({
            run: undefined,
            targets: [
              { repo: 'acme/a', run: '' },
              { repo: 'acme/b', run: 'make' },
            ],
          }),
          FILE,
        ),
      ),
    ).toEqual(['targets[0].run']);
    // A broken agent: is no missing agent: review and a lane's review do not "need agent".
    const review = base({ run: undefined, agent: { preset: 'claud' }, review: {}, targets: [{ repo: 'acme/api', review: { rounds: 1 } }] });
    expect(fields(validateFleetFile(review, FILE))).toEqual(['agent.preset']);
    // A broken targets list, github or forge: no "needs at least one target", no "discovery needs GitHub".
    expect(fields(validateFleetFile(base({ targets: 'acme/api' }), FILE))).toEqual(['targets']);
    expect(fields(validateFleetFile(base({ targets: [], github: { discover: [{ org: 'acme' }], allow_forks: 'yes' } }), FILE))).toEqual(['github.allow_forks']);
    expect(fields(validateFleetFile(base({ forge: 'gitlab', github: { discover: [{ org: 'acme' }] } }), FILE))).toEqual(['forge']);
    // A broken integrate: is no missing one for soft edges.
    const soft = base({
      targets: [
        { repo: 'acme/api', lane: 'a', soft_depends_on: ['b'] },
        { repo: 'acme/api', lane: 'b' },
      ],
      integrate: { branch: 5 },
    });
    expect(fields(validateFleetFile(soft, FILE))).toEqual(['integrate.branch']);
  });

  it('reports an unknown dependency beside another target’s broken repo:, saying it may be that target’s lane (issue 27)', () => {
    // targets[1] has no repo, but its lane id is written: depending on it is fine.
    const named = base({ targets: [{ repo: 'acme/api', depends_on: ['web'] }, { lane: 'web' }] });
    expect(fields(validateFleetFile(named, FILE))).toEqual(['targets[1].repo']);
    // targets[1] has neither: "db" is reported at once, saying it may be targets[1]'s lane once its repo: is written.
    const unnamed = base({ targets: [{ repo: 'acme/api', depends_on: ['db'] }, { owns: ['x/**'] }] });
    const r = validateFleetFile(unnamed, FILE);
    expect(fields(r)).toEqual(['targets[1].repo', 'targets[0].depends_on[0]']);
    expect(r.ok ? null : r.problems.find((x) => x.field === 'targets[0].depends_on[0]')?.message).toBe(
      '"db" is not a lane of this fleet (lanes: api); unless it is the lane of targets[1], whose lane id cannot be read until its repo: is fixed',
    );
    // With every lane id known, an unknown dependency is still reported beside the schema's problems.
    const known = base({ checks: 'make', targets: [{ repo: 'acme/api', depends_on: ['db'] }] });
    expect(fields(validateFleetFile(known, FILE))).toEqual(['checks', 'targets[0].depends_on[0]']);
  });

  it('names a field once: the schema’s problem, not a check’s on its stand-in', () => {
    const r = validateFleetFile(base({ directive: 5, name: undefined, targets: [{ repo: null }] }), FILE);
    expect(fields(r).sort()).toEqual(['directive', 'name', 'targets[0].repo']);
  });
});

describe('unknown fields: the nearest known one', () => {
  it.each([
    [{ maxparallel: 4 }, 'maxparallel', 'unknown field "maxparallel": did you mean max_parallel?'],
    [{ maxParallel: 4 }, 'maxParallel', 'unknown field "maxParallel": did you mean max_parallel?'],
    [{ directiv: 'x' }, 'directiv', 'unknown field "directiv": did you mean directive?'],
    [{ retries: 2 }, 'retries', 'unknown field "retries": did you mean max_retries?'],
    [{ targets: [{ repo: 'acme/api', ownz: ['x'] }] }, 'targets[0].ownz', 'unknown field "ownz": did you mean owns?'],
    [{ targets: [{ repo: 'acme/api', onws: ['x'] }] }, 'targets[0].onws', 'unknown field "onws": did you mean owns?'],
    [{ targets: [{ repo: 'acme/api', dependson: ['x'] }] }, 'targets[0].dependson', 'unknown field "dependson": did you mean depends_on?'],
    [{ merge: { policy: 'never', methd: 'squash' } }, 'merge.methd', 'unknown field "methd": did you mean method?'],
    [{ ci: { wiat: true } }, 'ci.wiat', 'unknown field "wiat": did you mean wait?'],
    [{ pr: { label: ['x'] } }, 'pr.label', 'unknown field "label": did you mean labels?'],
  ])('%j', (over, field, message) => {
    expect(messageAt(validateFleetFile(base(over), FILE), field)).toBe(message);
  });

  it('suggests nothing when nothing is close: the fields of a small mapping, else the reference', () => {
    expect(messageAt(validateFleetFile(base({ colour: 'blue' }), FILE), 'colour')).toBe(
      'unknown field "colour": check the spelling against the fleet file reference (docs/fleet-file.md)',
    );
    expect(messageAt(validateFleetFile(base({ merge: { strategy: 'squash' } }), FILE), 'merge.strategy')).toBe(
      'unknown field "strategy": the fields of merge are policy, method',
    );
  });

  it('says where a field written in the wrong place belongs', () => {
    expect(messageAt(validateFleetFile(base({ repo: './a' }), FILE), 'repo')).toBe(
      'unknown field "repo" at the top level: it is a field of each target (targets: [{ repo: … }])',
    );
    expect(messageAt(validateFleetFile(base({ depends_on: ['a'] }), FILE), 'depends_on')).toContain('it is a field of each target');
    expect(messageAt(validateFleetFile(base({ targets: [{ repo: 'acme/api', max_parallel: 2 }] }), FILE), 'targets[0].max_parallel')).toBe(
      'unknown field "max_parallel" in a target: it is a setting of the whole fleet; write it at the top level',
    );
    expect(messageAt(validateFleetFile(base({ wait: true }), FILE), 'wait')).toBe('unknown field "wait" here: it is a field of ci');
    expect(messageAt(validateFleetFile(base({ preset: 'claude' }), FILE), 'preset')).toBe('unknown field "preset" here: it is a field of agent');
  });

  it('nearest: same name in other case or separators, a close spelling, a word of a longer name; else nothing', () => {
    const known = ['max_parallel', 'max_retries', 'timeout_minutes', 'git_timeout_minutes', 'owns', 'run', 'depends_on', 'soft_depends_on'];
    expect(nearest('max-parallel', known)).toBe('max_parallel');
    expect(nearest('own', known)).toBe('owns');
    expect(nearest('timeout', known)).toBe('timeout_minutes');
    expect(nearest('depends', known)).toBe('depends_on');
    expect(nearest('foo', known)).toBeUndefined();
    expect(nearest('on', known)).toBeUndefined();
    expect(nearest('colour', known)).toBeUndefined();
  });

  it('editDistance counts a swap of neighbours as one edit', () => {
    expect(editDistance('owns', 'owns')).toBe(0);
    expect(editDistance('onws', 'owns')).toBe(1);
    expect(editDistance('maxparallel', 'max_parallel')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});

describe('a value of the wrong type: the right form, with the user’s value', () => {
  it.each([
    [{ checks: 'npm test' }, 'checks', 'expected a list, not the text "npm test": write it as a list: checks: ["npm test"]'],
    [{ owns: 'src/**' }, 'owns', 'write it as a list: owns: ["src/**"]'],
    [{ never: 'dist/**' }, 'never', 'write it as a list: never: ["dist/**"]'],
    [{ targets: [{ repo: 'acme/api', depends_on: 'core' }] }, 'targets[0].depends_on', 'write it as a list: depends_on: ["core"]'],
    [{ targets: [{ repo: 'acme/api', checks: 'make test' }] }, 'targets[0].checks', 'write it as a list: checks: ["make test"]'],
    [{ pr: { labels: 'fleet' } }, 'pr.labels', 'write it as a list: labels: ["fleet"]'],
    [{ max_parallel: '8' }, 'max_parallel', 'expected a number, not the text "8": write it without quotes: max_parallel: 8'],
    [{ max_parallel: 1.5 }, 'max_parallel', 'expected a whole number, not 1.5'],
    [
      { targets: [{ repo: 'acme/api', exclusive: 'yes' }] },
      'targets[0].exclusive',
      'expected true or false, not the text "yes": write exclusive: true (without quotes)',
    ],
    [{ targets: ['acme/api'] }, 'targets[0]', 'expected a mapping, not the text "acme/api": write it as a mapping: - { repo: "acme/api" }'],
    [{ run: undefined, agent: 'claude' }, 'agent', 'write it as a mapping: agent: { preset: "claude" }'],
    [{ merge: 'when-green' }, 'merge', 'write it as a mapping: merge: { policy: "when-green" }'],
    [{ forge: 'gitub' }, 'forge', '"gitub" is not one of local, github: did you mean github?'],
    [{ max_retries: 99 }, 'max_retries', 'must be at most 10, not 99'],
    [{ run: '' }, 'run', 'is empty: give it a value, or leave the field out'],
    [{ targets: [{ repo: null }] }, 'targets[0].repo', 'empty: give repo: a value (owner/repo on GitHub'],
    [{ name: undefined }, 'name', 'missing: add name:'],
  ])('%j', (over, field, message) => {
    expect(messageAt(validateFleetFile(base(over), FILE), field)).toContain(message);
  });

  it('a list of mappings given as text is not told to wrap the text in a list', () => {
    const m = messageAt(validateFleetFile(base({ exclude: 'acme/old' }), FILE), 'exclude');
    expect(m).toMatch(/^expected a list, not the text "acme\/old": write a list of mappings/);
    expect(m).not.toContain('["acme/old"]');
  });

  it('shows the form in JSON for a .json file', () => {
    expect(messageAt(validateFleetFile(base({ checks: 'npm test' }), 'fleet.json'), 'checks')).toContain('write it as a list: "checks": ["npm test"]');
  });

  it('keeps a message the schema sets itself', () => {
    expect(messageAt(validateFleetFile(base({ owns: [''] }), FILE), 'owns[0]')).toBe('a glob cannot be empty');
  });
});

describe('negated globs: a message that is true for the list it is in', () => {
  it('in never: there is no exception to make; keeping lanes to the folder is owns:', () => {
    const m = messageAt(validateFleetFile(base({ never: ['!docs/**'] }), FILE), 'never[0]');
    expect(m).toBe(
      '"!docs/**" is a negation, and never: has none: it only lists files no lane may change (even inside owns); to keep lanes to docs/**, write owns: ["docs/**"]; to let them change docs/** inside another never: glob, narrow that glob',
    );
    // The old message told the user to move the pattern to never:, where it already was.
    expect(m).not.toContain('put the pattern in never');
    expect(messageAt(validateFleetFile(base({ targets: [{ repo: 'acme/api', never: ['!docs/**'] }] }), FILE), 'targets[0].never[0]')).toBe(m);
  });

  it('in owns: the glob without its "!" goes in never:', () => {
    expect(messageAt(validateFleetFile(base({ owns: ['!docs/**'] }), FILE), 'owns[0]')).toBe(
      '"!docs/**" is a negation, and owns: has none: it only lists files the lane may change; to keep the lane out of docs/**, put "docs/**" in never: instead',
    );
  });

  it('in github.include: the glob without its "!" goes in github.exclude', () => {
    const raw = base({ forge: 'github', github: { include: ['!acme/legacy-*'] } });
    expect(messageAt(validateFleetFile(raw, FILE), 'github.include[0]')).toContain('put "acme/legacy-*" in github.exclude instead');
  });
});

describe('a glob naming a folder', () => {
  it('ending in / is refused, with the glob that covers the folder', () => {
    expect(messageAt(validateFleetFile(base({ targets: [{ repo: 'acme/api', owns: ['packages/web/'] }] }), FILE), 'targets[0].owns[0]')).toContain(
      'write packages/web/** for everything under it',
    );
  });

  it('without a wildcard: the fence says why the files in the folder are outside owns, and what to write', () => {
    const v = checkFence(['packages/web/index.ts', 'Makefile'], ['packages/web', 'Makefile'], []);
    expect(v.message).toBe(
      '1 file outside owns [packages/web, Makefile]: packages/web/index.ts ("packages/web" matches only a file of that exact path, not the files in a folder of that name: write "packages/web/**" for everything under it)',
    );
    // No hint where no such glob is the reason.
    expect(checkFence(['docs/a.md'], ['src/**', 'Makefile'], []).message).toBe('1 file outside owns [src/**, Makefile]: docs/a.md');
  });
});
