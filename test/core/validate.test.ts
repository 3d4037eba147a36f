import { describe, expect, it } from 'vitest';
import { BUILTIN_LENSES } from '../../src/core/review.js';
import {
  addDiscoveredLanes,
  branchRuleBroken,
  classifyRepo,
  defaultLaneId,
  formatProblems,
  renderBranch,
  validateFleetFile,
  type Problem,
  type ResolvedFleet,
  type ValidationResult,
} from '../../src/core/validate.js';

const FILE = 'fleet.yml';

function base(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'upgrade', directive: 'Bump the linter', run: 'npm i -D eslint@9', targets: [{ repo: 'acme/api' }], ...over };
}

function ok(result: ValidationResult): ResolvedFleet {
  if (!result.ok) throw new Error(`expected a valid file, got:\n${formatProblems(result.problems)}`);
  return result.fleet;
}

function problems(result: ValidationResult): Problem[] {
  if (result.ok) throw new Error('expected problems, the file was valid');
  return result.problems;
}

function fields(result: ValidationResult): string[] {
  return problems(result).map((p) => p.field);
}

function problemAt(result: ValidationResult, field: string): Problem {
  const found = problems(result).filter((p) => p.field === field);
  if (found.length !== 1) throw new Error(`expected one problem at ${field}, got ${JSON.stringify(problems(result))}`);
  return found[0]!;
}

describe('classifyRepo', () => {
  it.each([
    ['acme/api', 'github'],
    ['Acme-Corp/my.repo_name-2', 'github'],
    ['acme/api.git', 'github'],
    ['./api', 'path'],
    ['../api', 'path'],
    ['/srv/git/api', 'path'],
    ['~/code/api', 'path'],
    ['https://github.com/acme/api.git', 'url'],
    ['http://git.local/api', 'url'],
    ['ssh://git@host/acme/api', 'url'],
    ['git://host/acme/api', 'url'],
    ['file:///tmp/api', 'url'],
    ['git@github.com:acme/api.git', 'url'],
  ])('%s is %s', (repo, kind) => {
    expect(classifyRepo(repo)).toBe(kind);
  });

  it('suggests owner/x or ./x for a bare name', () => {
    const r = classifyRepo('api');
    expect(r).toEqual({ problem: expect.stringContaining('owner/api') });
    expect(r).toEqual({ problem: expect.stringContaining('./api') });
  });

  it.each(['acme/api/extra', '-acme/api', 'ac me/api', 'acme/', 'acme/.', 'acme/..'])('rejects %s', (repo) => {
    expect(classifyRepo(repo)).toEqual({ problem: expect.stringContaining(`"${repo}"`) });
  });
});

describe('defaultLaneId', () => {
  it.each([
    ['acme/api', 'api'],
    ['acme/API', 'api'],
    ['acme/api.git', 'api'],
    ['https://github.com/acme/api.git', 'api'],
    ['git@github.com:acme/api.git', 'api'],
    ['./services/api/', 'api'],
    ['/srv/My Repo', 'my-repo'],
    ['acme/_internal', 'internal'],
    ['acme/web.app', 'web.app'],
    ['./', 'repo'],
    ['/', 'repo'],
  ])('%s → %s', (repo, id) => {
    expect(defaultLaneId(repo)).toBe(id);
  });

  it('keeps within 100 characters', () => {
    expect(defaultLaneId(`acme/${'x'.repeat(150)}`)).toHaveLength(100);
  });
});

describe('renderBranch', () => {
  it('replaces every {name} and {lane}', () => {
    expect(renderBranch('fleet/{name}/{lane}', 'upgrade', 'api')).toBe('fleet/upgrade/api');
    expect(renderBranch('{lane}-{lane}', 'n', 'x')).toBe('x-x');
  });
});

describe('validateFleetFile: a valid file', () => {
  it('applies defaults', () => {
    const fleet = ok(validateFleetFile(base(), FILE));
    expect(fleet.file.max_parallel).toBe(8);
    expect(fleet.file.max_retries).toBe(2);
    expect(fleet.file.timeout_minutes).toBe(30);
    expect(fleet.file.max_waves).toBe(20);
    expect(fleet.file.branch).toBe('fleet/{name}/{lane}');
    expect(fleet.file.checkpoint).toBe('pushed');
    expect(fleet.file.merge).toEqual({ policy: 'never', method: 'squash' });
    expect(fleet.notes).toEqual([]);
    expect(fleet.excluded).toEqual([]);
    expect(fleet.lanes).toEqual([
      {
        id: 'api',
        repo: 'acme/api',
        repo_kind: 'github',
        title: 'upgrade: api',
        directive: 'Bump the linter',
        run: 'npm i -D eslint@9',
        checks: [],
        depends_on: [],
        owns: [],
        never: [],
        exclusive: false,
        branch: 'fleet/upgrade/api',
        base: undefined,
        index: 0,
        review: null,
      },
    ]);
  });

  it('defaults merge.method when only the policy is given', () => {
    const fleet = ok(validateFleetFile(base({ merge: { policy: 'when-green' } }), FILE));
    expect(fleet.file.merge).toEqual({ policy: 'when-green', method: 'squash' });
  });

  it('renders a custom branch template', () => {
    const fleet = ok(validateFleetFile(base({ branch: 'bots/{name}-{lane}' }), FILE));
    expect(fleet.lanes[0]?.branch).toBe('bots/upgrade-api');
  });

  it('applies per-target overrides and merges scopes', () => {
    const fleet = ok(
      validateFleetFile(
        base({
          checks: ['npm test'],
          owns: ['src/**'],
          never: ['secrets/**'],
          targets: [
            { repo: 'acme/api' },
            {
              repo: 'acme/web',
              title: 'Web: bump the linter',
              directive: 'Bump it differently',
              run: 'pnpm add -D eslint@9',
              checks: ['pnpm lint'],
              owns: ['app/**'],
              never: ['secrets/**', 'dist/**'],
              exclusive: true,
              base: 'develop',
            },
          ],
        }),
        FILE,
      ),
    );
    const [api, web] = fleet.lanes;
    expect(api).toMatchObject({ owns: ['src/**'], never: ['secrets/**'], checks: ['npm test'], run: 'npm i -D eslint@9', exclusive: false });
    expect(web).toMatchObject({
      id: 'web',
      title: 'Web: bump the linter',
      directive: 'Bump it differently',
      run: 'pnpm add -D eslint@9',
      checks: ['pnpm lint'],
      owns: ['app/**'],
      never: ['secrets/**', 'dist/**'],
      exclusive: true,
      base: 'develop',
      index: 1,
    });
  });

  it('accepts an agent instead of run', () => {
    const raw = base({
      run: undefined,
      agent: { preset: 'claude', personas: [{ name: 'code-reviewer', applies_to: ['**/*.ts'] }], fallback: 'code-reviewer' },
    });
    const fleet = ok(validateFleetFile(raw, FILE));
    expect(fleet.file.agent).toMatchObject({ preset: 'claude', top_k: 2, args: [] });
    expect(fleet.file.agent?.personas[0]).toEqual({ name: 'code-reviewer', applies_to: ['**/*.ts'], keywords: [] });
    expect(fleet.lanes[0]?.run).toBeUndefined();
  });

  it("takes agent.env, the variables every agent run gets (a gateway, a model), and refuses a credential or Fleet's own, all at once", () => {
    const env = { ANTHROPIC_BASE_URL: 'https://llm-gateway.example/anthropic', ANTHROPIC_MODEL: 'claude-sonnet-4-5' };
    expect(ok(validateFleetFile(base({ run: undefined, agent: { preset: 'claude', env } }), FILE)).file.agent?.env).toEqual(env);
    const refused = validateFleetFile(
      base({ run: undefined, agent: { preset: 'claude', env: { ANTHROPIC_API_KEY: 'sk-ant-x', FLEET_TOKEN: 'x', PATH: '/x', '1BAD': 'x' } } }),
      FILE,
    );
    expect(fields(refused).sort()).toEqual(['agent.env.1BAD', 'agent.env.ANTHROPIC_API_KEY', 'agent.env.FLEET_TOKEN', 'agent.env.PATH']);
    expect(problemAt(refused, 'agent.env.ANTHROPIC_API_KEY').message).toMatch(/never belongs in the fleet file: pass it as the anthropic-api-key secret/);
    expect(problemAt(refused, 'agent.env.PATH').message).toMatch(/set by Fleet, git or the runner/);
    // The refused value is a secret the user put where it does not belong: never echoed back.
    expect(JSON.stringify(problems(refused))).not.toContain('sk-ant-x');
  });

  it('accepts a run on every target and none at the top', () => {
    const raw = base({
      run: undefined,
      targets: [
        { repo: 'acme/api', run: 'make a' },
        { repo: 'acme/web', run: 'make b' },
      ],
    });
    expect(ok(validateFleetFile(raw, FILE)).lanes.map((l) => l.run)).toEqual(['make a', 'make b']);
  });

  it('classifies each target', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: './web' }, { repo: 'https://git.local/cli.git' }] });
    expect(ok(validateFleetFile(raw, FILE)).lanes.map((l) => [l.id, l.repo_kind])).toEqual([
      ['api', 'github'],
      ['web', 'path'],
      ['cli', 'url'],
    ]);
  });

  it('runs several lanes in one repository with explicit lane ids', () => {
    const raw = base({
      targets: [
        { repo: 'acme/mono', lane: 'mono-web', owns: ['web/**'] },
        { repo: 'acme/mono', lane: 'mono-api', owns: ['api/**'], depends_on: ['mono-web'] },
      ],
    });
    const fleet = ok(validateFleetFile(raw, FILE));
    expect(fleet.lanes.map((l) => [l.id, l.branch, l.depends_on])).toEqual([
      ['mono-web', 'fleet/upgrade/mono-web', []],
      ['mono-api', 'fleet/upgrade/mono-api', ['mono-web']],
    ]);
  });

  it('de-duplicates depends_on', () => {
    const raw = base({ targets: [{ repo: 'acme/a' }, { repo: 'acme/b', depends_on: ['a', 'a'] }] });
    expect(ok(validateFleetFile(raw, FILE)).lanes[1]?.depends_on).toEqual(['a']);
  });

  it('accounts for excluded targets with their reason', () => {
    const raw = base({
      targets: [{ repo: 'acme/api' }, { repo: 'acme/legacy' }],
      exclude: [{ repo: 'acme/legacy', reason: 'frozen' }, { repo: 'acme/old' }],
    });
    const fleet = ok(validateFleetFile(raw, FILE));
    expect(fleet.excluded).toEqual([
      { repo: 'acme/legacy', lane: 'legacy', reason: 'frozen' },
      { repo: 'acme/old', lane: 'old', reason: 'excluded-by-config' },
    ]);
    // The excluded lane stays in the lane list so its dependents can be skipped with a reason.
    expect(fleet.lanes.map((l) => l.id)).toEqual(['api', 'legacy']);
  });

  it('reports an invalid exclude repository', () => {
    expect(problemAt(validateFleetFile(base({ exclude: [{ repo: 'old' }] }), FILE), 'exclude[0].repo').message).toContain('owner/old');
  });
});

describe('validateFleetFile: lane ids', () => {
  it('gives two repositories with the same basename distinct derived lane ids', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: 'other/api' }, { repo: 'acme/web' }] });
    const fleet = ok(validateFleetFile(raw, FILE));
    const ids = fleet.lanes.map((l) => l.id);
    expect(ids).toEqual(['acme-api', 'other-api', 'web']);
    expect(new Set(fleet.lanes.map((l) => l.branch)).size).toBe(3);
  });

  it('tells a GitHub repository and a local folder of the same name apart', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: './services/api' }] });
    expect(ok(validateFleetFile(raw, FILE)).lanes.map((l) => l.id)).toEqual(['acme-api', 'services-api']);
  });

  it('derives a usable id from a very long path', () => {
    // The last 100 characters of the full slug start with "-": the id must not.
    const long = `/${'a'.repeat(10)}/${'b'.repeat(95)}/api`;
    const fleet = ok(validateFleetFile(base({ targets: [{ repo: long }, { repo: 'acme/api' }] }), FILE));
    const id = fleet.lanes[0]!.id;
    expect(id).toMatch(/^[a-z0-9][a-z0-9._-]{0,99}$/);
    expect(id.endsWith('-api')).toBe(true);
  });

  it('reports a duplicate lane id across different repositories', () => {
    const raw = base({
      targets: [
        { repo: 'acme/api', lane: 'svc' },
        { repo: 'acme/web', lane: 'svc' },
      ],
    });
    const p = problemAt(validateFleetFile(raw, FILE), 'targets[1].lane');
    expect(p.message).toContain('"svc"');
    expect(p.message).toContain('targets[0] (acme/api)');
  });

  it('reports an explicit lane id that equals another target’s derived id', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: 'acme/web', lane: 'api' }] });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['targets[1].lane']);
  });

  it('removes a repeated target with a note', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: 'acme/web' }, { repo: 'acme/api' }] });
    const fleet = ok(validateFleetFile(raw, FILE));
    expect(fleet.lanes.map((l) => l.id)).toEqual(['api', 'web']);
    expect(fleet.notes).toEqual(['fleet.yml: targets[2] repeats acme/api (lane api); the duplicate was removed']);
  });

  it('treats a target that spells out its default lane id as a repeat', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: 'acme/api', lane: 'api' }] });
    expect(ok(validateFleetFile(raw, FILE)).notes).toHaveLength(1);
  });

  it('reports two different targets that would share one lane', () => {
    // Forgetting lane: when splitting a repository by scope would otherwise drop half the work.
    const raw = base({
      targets: [
        { repo: 'acme/mono', owns: ['web/**'] },
        { repo: 'acme/mono', owns: ['api/**'] },
      ],
    });
    const p = problemAt(validateFleetFile(raw, FILE), 'targets[1].lane');
    expect(p.message).toContain('targets[0]');
    expect(p.message).toContain('distinct lane');
  });
});

describe('validateFleetFile: problems', () => {
  it('names an unknown top-level field by its path', () => {
    const p = problemAt(validateFleetFile(base({ directiv: 'x' }), FILE), 'directiv');
    expect(p.file).toBe(FILE);
    expect(p.message).toContain('unknown field "directiv"');
  });

  it('names an unknown field in a target by its path', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: 'acme/web', onws: ['src/**'] }] });
    expect(problemAt(validateFleetFile(raw, FILE), 'targets[1].onws').message).toContain('unknown field "onws"');
  });

  it('names each of several unknown fields', () => {
    const raw = base({ foo: 1, bar: 2, merge: { policy: 'never', strategy: 'x' } });
    expect(fields(validateFleetFile(raw, FILE)).sort()).toEqual(['bar', 'foo', 'merge.strategy']);
  });

  it('names an unknown field in a persona', () => {
    const raw = base({ run: undefined, agent: { preset: 'claude', personas: [{ name: 'p', globs: ['x'] }] } });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['agent.personas[0].globs']);
  });

  it('still reports the other problems when a field is unknown', () => {
    const raw = base({ directive: '', colour: 'blue', targets: [{ repo: 'api', ownz: [] }] });
    expect(fields(validateFleetFile(raw, FILE)).sort()).toEqual(['colour', 'directive', 'targets[0].ownz', 'targets[0].repo']);
  });

  it('does not change the caller’s object', () => {
    const raw = base({ colour: 'blue' });
    validateFleetFile(raw, FILE);
    expect(raw.colour).toBe('blue');
  });

  it('reports an empty directive', () => {
    expect(problemAt(validateFleetFile(base({ directive: '' }), FILE), 'directive').message).toMatch(/empty/);
    expect(fields(validateFleetFile(base({ directive: '  \n ' }), FILE))).toEqual(['directive']);
  });

  it('reports an empty lane directive', () => {
    const raw = base({ targets: [{ repo: 'acme/api', directive: ' ' }] });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['targets[0].directive']);
  });

  it('reports neither run nor agent once', () => {
    const raw = base({ run: undefined, targets: [{ repo: 'acme/api' }, { repo: 'acme/web' }] });
    const p = problemAt(validateFleetFile(raw, FILE), 'run');
    expect(p.message).toMatch(/run:.*agent:/);
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['run']);
  });

  it('reports the targets left without a run when others have one', () => {
    const raw = base({ run: undefined, targets: [{ repo: 'acme/api', run: 'make' }, { repo: 'acme/web' }] });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['targets[1].run']);
  });

  it('reports both run and agent', () => {
    const raw = base({ agent: { preset: 'claude' } });
    expect(problemAt(validateFleetFile(raw, FILE), 'agent').message).toMatch(/not both/);
  });

  it('reports a command preset without a command', () => {
    const raw = base({ run: undefined, agent: {} });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['agent.command']);
  });

  it('reports a fallback that is not a persona', () => {
    const raw = base({ run: undefined, agent: { preset: 'codex', personas: [{ name: 'a' }], fallback: 'b' } });
    expect(problemAt(validateFleetFile(raw, FILE), 'agent.fallback').message).toContain('"b"');
  });

  it('reports a persona defined twice', () => {
    const raw = base({ run: undefined, agent: { preset: 'codex', personas: [{ name: 'a' }, { name: 'b' }, { name: 'a' }] } });
    expect(problemAt(validateFleetFile(raw, FILE), 'agent.personas[2].name').message).toContain('agent.personas[0]');
  });

  it('suggests owner/x or ./x for a target without "/"', () => {
    const p = problemAt(validateFleetFile(base({ targets: [{ repo: 'api' }] }), FILE), 'targets[0].repo');
    expect(p.message).toContain('owner/api');
    expect(p.message).toContain('./api');
  });

  it('reports an invalid repository name', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: 'acme/api/extra' }] });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['targets[1].repo']);
  });

  it('reports a dependency on an unknown lane and names it', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: 'acme/web', depends_on: ['api', 'shared'] }] });
    const p = problemAt(validateFleetFile(raw, FILE), 'targets[1].depends_on[1]');
    expect(p.message).toContain('"shared"');
    expect(p.message).toContain('lanes: api, web');
  });

  it('points at the written entry of depends_on even after a repeat', () => {
    const raw = base({ targets: [{ repo: 'acme/api' }, { repo: 'acme/web', depends_on: ['api', 'api', 'nope'] }] });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['targets[1].depends_on[2]']);
  });

  it('reports an unknown dependency once even when repeated', () => {
    const raw = base({ targets: [{ repo: 'acme/api', depends_on: ['nope', 'nope'] }] });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['targets[0].depends_on[0]']);
  });

  it('reports a self-dependency', () => {
    const raw = base({ targets: [{ repo: 'acme/api', depends_on: ['api'] }] });
    expect(problemAt(validateFleetFile(raw, FILE), 'targets[0].depends_on[0]').message).toMatch(/cannot depend on itself/);
  });

  it.each([
    [{ owns: ['/src/**'] }, 'owns[0]', /absolute/],
    [{ never: ['src/**', '!secrets/**'] }, 'never[1]', /negation/],
    [{ targets: [{ repo: 'acme/api', owns: ['src/[ab'] }] }, 'targets[0].owns[0]', /unclosed/],
    [{ targets: [{ repo: 'acme/api', never: ['../x'] }] }, 'targets[0].never[0]', /climbs out/],
    [{ owns: ['./src/**'] }, 'owns[0]', /drop the \.\//],
    [
      { run: undefined, agent: { preset: 'claude', personas: [{ name: 'p', applies_to: ['**/*.ts', '*.{ts,js'] }] } },
      'agent.personas[0].applies_to[1]',
      /unbalanced/,
    ],
  ])('reports an invalid glob (%#)', (over, field, message) => {
    expect(problemAt(validateFleetFile(base(over), FILE), field).message).toMatch(message);
  });

  it('reports an empty glob through the schema', () => {
    expect(fields(validateFleetFile(base({ owns: [''] }), FILE))).toEqual(['owns[0]']);
  });

  it('reports a branch template without {lane}', () => {
    const raw = base({ branch: 'fleet/{name}', targets: [{ repo: 'acme/api' }, { repo: 'acme/web' }] });
    const p = problemAt(validateFleetFile(raw, FILE), 'branch');
    expect(p.message).toContain('{lane}');
  });

  it('reports an invalid branch template once, not once per lane', () => {
    const raw = base({ branch: 'fleet {name}/{lane}', targets: [{ repo: 'acme/api' }, { repo: 'acme/web' }, { repo: 'acme/cli' }] });
    const p = problemAt(validateFleetFile(raw, FILE), 'branch');
    expect(p.message).toContain('"fleet upgrade/api" is not a valid git branch name');
    expect(p.message).toContain('2 more');
  });

  it.each(['fleet/{lane}.lock', 'fleet..{lane}', 'fleet/{lane}/', 'fleet~{lane}', 'fleet:{lane}'])('reports the invalid branch %s', (branch) => {
    expect(fields(validateFleetFile(base({ branch }), FILE))).toEqual(['branch']);
  });

  it('reports schema problems by field', () => {
    expect(fields(validateFleetFile(base({ name: 'Upgrade Now' }), FILE))).toEqual(['name']);
    expect(fields(validateFleetFile(base({ targets: [] }), FILE))).toEqual(['targets']);
    expect(fields(validateFleetFile(base({ max_parallel: 0 }), FILE))).toEqual(['max_parallel']);
    expect(fields(validateFleetFile(base({ targets: [{ repo: 'acme/api', lane: 'Has Space' }] }), FILE))).toEqual(['targets[0].lane']);
    expect(fields(validateFleetFile({ name: 'x', run: 'y', targets: [{ repo: 'a/b' }] }, FILE))).toEqual(['directive']);
  });

  it('reports a value that is not an object', () => {
    expect(fields(validateFleetFile(null, FILE))).toEqual(['(top level)']);
    expect(fields(validateFleetFile('name: x', FILE))).toEqual(['(top level)']);
  });

  it('reports every problem at once: four distinct mistakes, four problems', () => {
    const raw = base({
      directive: '',
      branch: 'fleet/{name}',
      owns: ['/src/**'],
      targets: [{ repo: 'api' }],
    });
    const found = problems(validateFleetFile(raw, FILE));
    expect(found).toHaveLength(4);
    expect(found.map((p) => p.field).sort()).toEqual(['branch', 'directive', 'owns[0]', 'targets[0].repo']);
    expect(found.every((p) => p.file === FILE)).toBe(true);
  });

  it('reports every problem at once across targets', () => {
    const raw = base({
      targets: [
        { repo: 'api', owns: ['/abs'] }, // bad repo and bad glob in one target
        { repo: 'acme/web', depends_on: ['ghost'] },
        { repo: 'acme/cli', depends_on: ['cli'] },
        { repo: 'acme/db', never: ['!x'] },
      ],
    });
    expect(fields(validateFleetFile(raw, FILE))).toEqual([
      'targets[0].owns[0]',
      'targets[0].repo',
      'targets[3].never[0]',
      'targets[1].depends_on[0]',
      'targets[2].depends_on[0]',
    ]);
  });

  it('reports every schema problem at once', () => {
    const raw = base({ extra: true, max_parallel: 0, merge: { policy: 'always' }, targets: [{ repo: 'acme/api', lane: 'BAD' }] });
    expect(fields(validateFleetFile(raw, FILE)).sort()).toEqual(['extra', 'max_parallel', 'merge.policy', 'targets[0].lane']);
  });
});

describe('formatProblems', () => {
  it('counts and lists problems with file and field', () => {
    const text = formatProblems([
      { file: 'a.yml', field: 'directive', message: 'the directive is empty' },
      { file: 'a.yml', field: 'targets[0].repo', message: 'bad repo' },
    ]);
    expect(text).toBe('2 problems found:\n  a.yml: directive: the directive is empty\n  a.yml: targets[0].repo: bad repo');
  });

  it('uses the singular for one problem', () => {
    expect(formatProblems([{ file: '<cli>', field: 'x', message: 'y' }])).toBe('1 problem found:\n  <cli>: x: y');
  });

  it('formats the problems of a real file', () => {
    const result = validateFleetFile(base({ directive: '', targets: [{ repo: 'api' }] }), FILE);
    const text = formatProblems(problems(result));
    expect(text.split('\n')[0]).toBe('2 problems found:');
    expect(text).toContain('  fleet.yml: directive: ');
    expect(text).toContain('  fleet.yml: targets[0].repo: ');
  });
});

describe('github.discover', () => {
  const discover = { github: { discover: [{ org: 'acme' }] } };

  it('needs forge: github: the local forge only runs the targets listed', () => {
    const p = problemAt(validateFleetFile(base({ ...discover, forge: 'local' }), FILE), 'github.discover');
    expect(p.file).toBe(FILE);
    expect(p.message).toContain('set forge: github');
    // forge defaults to local: the rule holds when forge is not written at all
    expect(fields(validateFleetFile(base(discover), FILE))).toEqual(['github.discover']);
  });

  it('is enough on its own with forge: github: no listed target is needed', () => {
    const fleet = ok(validateFleetFile(base({ ...discover, forge: 'github', targets: [] }), FILE));
    expect(fleet.lanes).toEqual([]);
    expect(fleet.file.github.discover).toEqual([{ org: 'acme' }]);
  });

  it('a fleet with neither targets nor discovery is refused at targets', () => {
    expect(problemAt(validateFleetFile(base({ forge: 'github', targets: [] }), FILE), 'targets').message).toContain('at least one target');
  });
});

describe('agent command templates', () => {
  it('refuses {prompt}: the prompt is untrusted text and only ever arrives as a file', () => {
    const r = validateFleetFile(base({ run: undefined, agent: { preset: 'command', command: 'my-agent --prompt {prompt}' } }), FILE);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([
      expect.objectContaining({ file: FILE, field: 'agent.command', message: expect.stringMatching(/^\{prompt\} is not a placeholder: .*\{prompt_file\}/) }),
    ]);
    ok(validateFleetFile(base({ run: undefined, agent: { preset: 'command', command: 'my-agent --prompt-file {prompt_file}' } }), FILE));
  });
});

/** Discovered repositories become lanes with the fleet's defaults (what mutation testing found no core test reach). */
describe('addDiscoveredLanes', () => {
  const gh = (over: Record<string, unknown> = {}) =>
    ok(
      validateFleetFile(
        base({
          forge: 'github',
          owns: ['src/**'],
          never: ['.github/**'],
          checks: ['npm test'],
          targets: [{ repo: 'acme/api', lane: 'api' }],
          github: { discover: [{ org: 'acme' }], include: ['acme/*'], exclude: ['acme/legacy-*'] },
          ...over,
        }),
        FILE,
      ),
    );

  it('adds each new repository once, after the explicit ones, with the fleet defaults', () => {
    const fleet = gh();
    const out = addDiscoveredLanes(fleet, ['acme/web', 'ACME/API', 'acme/web', 'acme/Tools']);
    expect(out.lanes.map((l) => [l.id, l.repo])).toEqual([
      ['api', 'acme/api'],
      ['web', 'acme/web'],
      ['tools', 'acme/Tools'],
    ]);
    const web = out.lanes[1]!;
    expect(web).toMatchObject({
      repo_kind: 'github',
      title: 'upgrade: web',
      directive: 'Bump the linter',
      run: 'npm i -D eslint@9',
      checks: ['npm test'],
      depends_on: [],
      owns: ['src/**'],
      never: ['.github/**'],
      exclusive: false,
      branch: 'fleet/upgrade/web',
      base: undefined,
    });
    expect(out.notes.at(-1)).toBe('discovery found 2 repositories beyond the listed targets');
    expect(addDiscoveredLanes(fleet, ['acme/web']).notes.at(-1)).toBe('discovery found 1 repository beyond the listed targets');
    expect(addDiscoveredLanes(fleet, []).notes).toEqual(fleet.notes);
    // The input is not changed.
    expect(fleet.lanes).toHaveLength(1);
  });

  it('gives repositories of the same name in different owners, or named like an existing lane, ids of their own', () => {
    const fleet = gh({ github: { discover: [{ search: 'topic:x' }] } });
    const out = addDiscoveredLanes(fleet, ['acme/web', 'other/web', 'other/api']);
    expect(out.lanes.map((l) => l.id)).toEqual(['api', 'acme-web', 'other-web', 'other-api']);
  });

  it('accounts for a repository outside include, or matching exclude, as excluded by pattern', () => {
    const out = addDiscoveredLanes(gh(), ['acme/legacy-app', 'elsewhere/lib', 'acme/web']);
    expect(out.excluded.slice(-2)).toEqual([
      { repo: 'acme/legacy-app', lane: 'legacy-app', reason: 'excluded-by-pattern' },
      { repo: 'elsewhere/lib', lane: 'lib', reason: 'excluded-by-pattern' },
    ]);
    expect(out.lanes.map((l) => l.id)).toEqual(['api', 'web']);
    expect(out.notes.at(-1)).toBe('discovery found 3 repositories beyond the listed targets');
  });
});

describe('repository names and the lane ids they give', () => {
  const ids = (...repos: string[]) => ok(validateFleetFile(base({ targets: repos.map((repo) => ({ repo })) }), FILE)).lanes.map((l) => l.id);

  it('accepts a repository whose name only starts with a dot, and says which rule a nested name breaks', () => {
    expect(classifyRepo('acme/.github')).toBe('github');
    expect(classifyRepo('acme/api/extra')).toEqual({ problem: '"acme/api/extra" is not a valid owner/repo name, path (start it with ./ or /) or git URL' });
  });

  it.each([
    ['./services/api//', 'api'],
    ['acme/acme.github.io', 'acme.github.io'],
    ['/srv/My  Repo', 'my-repo'],
    ['acme/__internal', 'internal'],
  ])('derives %s → %s', (repo, id) => {
    expect(defaultLaneId(repo)).toBe(id);
  });

  it('names lanes of same-named repositories after their whole URL or path, tidied', () => {
    expect(ids('https://git.example.com/acme/api.git', 'https://git.example.com/other/api')).toEqual(['git.example.com-acme-api', 'git.example.com-other-api']);
    expect(ids('acme/site.git', 'other/site')).toEqual(['acme-site', 'other-site']);
    expect(ids('acme/site.github.io', 'other/site.github.io')).toEqual(['acme-site.github.io', 'other-site.github.io']);
    expect(ids('/srv/old  stuff/api', './api')).toEqual(['srv-old-stuff-api', 'api']);
    expect(ids('./a/api--', './b/api--')).toEqual(['a-api', 'b-api']);
  });

  it('cuts a long derived id to its last 100 characters, starting at a letter or digit', () => {
    // The last 100 characters of the full slug start with ".-": neither may lead the id.
    const long = `/x/${'a'.repeat(10)}./${'b'.repeat(94)}/api`;
    expect(ids(long, 'acme/api')[0]).toBe(`${'b'.repeat(94)}-api`);
  });

  it('falls back to "repo" when a path has no name, and then needs an explicit lane', () => {
    const p = problemAt(validateFleetFile(base({ targets: [{ repo: './' }, { repo: '/' }] }), FILE), 'targets[1].lane');
    expect(p.message).toBe('lane id "repo" is already used by targets[0] (./): give one of them a distinct lane:');
  });

  it('counts only targets without an explicit lane when deciding that two share a name', () => {
    const raw = base({ targets: [{ repo: 'acme/api', lane: 'svc' }, { repo: 'other/api' }] });
    expect(ok(validateFleetFile(raw, FILE)).lanes.map((l) => l.id)).toEqual(['svc', 'api']);
  });
});

describe('branchRuleBroken says which rule a branch breaks', () => {
  it.each([
    ['', 'it is empty'],
    ['-x', 'it starts with "-", which git reads as an option'],
    ['HEAD', '"HEAD" is reserved'],
    ['a\u0001b', 'it contains a control character'],
    ['a b', 'it contains a space'],
    ['a~b', 'it contains "~"'],
    ['a..b', 'it contains ".."'],
    ['a@{b', 'it contains "@{"'],
    ['a//b', 'it has an empty part (a leading, trailing or doubled "/")'],
    ['a.', 'it ends with "."'],
    ['a/.b', 'its part ".b" starts with "."'],
    ['a/x.lock/b', 'its part "x.lock" ends with ".lock"'],
  ])('%j: %s', (branch, why) => {
    expect(branchRuleBroken(branch)).toBe(why);
  });
});

describe('validateFleetFile: more problems, with their messages', () => {
  it('checks github.include and github.exclude globs', () => {
    const raw = base({ forge: 'github', github: { include: ['acme/*', 'acme/[ab'], exclude: ['!acme/x'] } });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['github.include[1]', 'github.exclude[0]']);
    expect(problemAt(validateFleetFile(raw, FILE), 'github.include[1]').message).toMatch(/unclosed/);
  });

  it('tells what a command preset needs, what an empty lane directive is, and what a lane without a run lacks', () => {
    expect(problemAt(validateFleetFile(base({ run: undefined, agent: {} }), FILE), 'agent.command').message).toBe(
      'preset "command" needs a command template, e.g. "my-agent --prompt-file {prompt_file}"',
    );
    expect(problemAt(validateFleetFile(base({ targets: [{ repo: 'acme/api', directive: ' ' }] }), FILE), 'targets[0].directive').message).toBe(
      'the lane directive is empty',
    );
    const noRun = base({ run: undefined, targets: [{ repo: 'acme/api', run: 'make' }, { repo: 'acme/web' }] });
    expect(problemAt(validateFleetFile(noRun, FILE), 'targets[1].run').message).toBe(
      'this lane has no way to run: set run: here or at the top level, or agent:',
    );
  });

  it('accepts a fallback that is one of several personas', () => {
    const raw = base({ run: undefined, agent: { preset: 'codex', personas: [{ name: 'a' }, { name: 'b' }], fallback: 'a' } });
    expect(ok(validateFleetFile(raw, FILE)).file.agent?.fallback).toBe('a');
  });

  it('refuses a path or URL target with forge: github', () => {
    const raw = base({ forge: 'github', targets: [{ repo: 'acme/api' }, { repo: './api' }, { repo: 'https://git.example.com/x.git' }] });
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['targets[1].repo', 'targets[2].repo']);
    expect(problemAt(validateFleetFile(raw, FILE), 'targets[1].repo').message).toBe(
      '"./api" is not an owner/repo name; with forge: github every target is a GitHub repository',
    );
    expect(ok(validateFleetFile(base({ forge: 'local', targets: [{ repo: './api' }] }), FILE)).lanes[0]!.repo_kind).toBe('path');
    // A name that is no repository at all gets its own problem, once.
    expect(problemAt(validateFleetFile(base({ forge: 'github', targets: [{ repo: 'api' }] }), FILE), 'targets[0].repo').message).toContain('owner/api');
  });

  it('reports a branch one lane breaks even when the first lane’s is fine, and counts the others', () => {
    const targets = (...lanes: string[]) => lanes.map((lane, i) => ({ repo: `acme/r${i}`, lane }));
    const one = base({ branch: 'fleet/{lane}', targets: targets('api', 'web.lock') });
    expect(problemAt(validateFleetFile(one, FILE), 'branch').message).toBe(
      '"fleet/web.lock" is not a valid git branch name: its part "web.lock" ends with ".lock"',
    );
    const two = base({ branch: 'fleet/{lane}', targets: targets('a.lock', 'api', 'b.lock') });
    expect(problemAt(validateFleetFile(two, FILE), 'branch').message).toBe(
      '"fleet/a.lock" is not a valid git branch name: its part "a.lock" ends with ".lock" (and 1 more lane branch)',
    );
    const three = base({ branch: 'fleet/{lane}', targets: targets('a.lock', 'b.lock', 'c.lock') });
    expect(problemAt(validateFleetFile(three, FILE), 'branch').message).toMatch(/ \(and 2 more lane branches\)$/);
  });

  it('lists at most ten lanes when naming an unknown dependency', () => {
    const lanes = (n: number) => Array.from({ length: n }, (_, i) => ({ repo: `acme/r${i}`, lane: `l${i}`, depends_on: i === 0 ? ['ghost'] : [] }));
    expect(problemAt(validateFleetFile(base({ targets: lanes(10) }), FILE), 'targets[0].depends_on[0]').message).toBe(
      '"ghost" is not a lane of this fleet (lanes: l0, l1, l2, l3, l4, l5, l6, l7, l8, l9)',
    );
    expect(problemAt(validateFleetFile(base({ targets: lanes(11) }), FILE), 'targets[0].depends_on[0]').message).toBe(
      '"ghost" is not a lane of this fleet (lanes: l0, l1, l2, l3, l4, l5, l6, l7, l8, l9, …)',
    );
  });

  it('says why a dependency on a lane github.discover would find is refused, and what to write (issue 27)', () => {
    const fleet = base({ forge: 'github', github: { discover: [{ org: 'acme' }] }, targets: [{ repo: 'acme/web', depends_on: ['api'] }] });
    expect(problemAt(validateFleetFile(fleet, FILE), 'targets[0].depends_on[0]').message).toBe(
      '"api" is not a lane of this fleet (lanes: web): depends_on names listed targets only, since github.discover finds its lanes when the plan runs; to depend on a repository it finds, list it under targets: too',
    );
  });

  it('reports an unknown field holding something that is not plain data, instead of failing', () => {
    const raw = { ...base(), hook: () => 'not data' };
    expect(fields(validateFleetFile(raw, FILE))).toEqual(['hook']);
  });
});

describe('addDiscoveredLanes: ids and what it keeps', () => {
  const fleetOf = (over: Record<string, unknown>) => ok(validateFleetFile(base({ forge: 'github', ...over }), FILE));

  it('keeps the fleet’s exclusions and notes, and gives no discovered repository an excluded lane’s id', () => {
    const fleet = fleetOf({ targets: [{ repo: 'acme/api' }, { repo: 'acme/api' }], exclude: [{ repo: 'acme/web', reason: 'frozen' }] });
    const out = addDiscoveredLanes(fleet, ['other/web']);
    expect(out.lanes.map((l) => [l.id, l.repo])).toEqual([
      ['api', 'acme/api'],
      ['other-web', 'other/web'],
    ]);
    expect(out.excluded).toEqual([{ repo: 'acme/web', lane: 'web', reason: 'frozen' }]);
    expect(out.notes).toEqual([...fleet.notes, 'discovery found 1 repository beyond the listed targets']);
    expect(fleet.notes).toHaveLength(1);
  });

  it('numbers a discovered lane whose full name is taken too', () => {
    const fleet = fleetOf({ targets: [{ repo: 'acme/api', lane: 'acme-web' }] });
    const out = addDiscoveredLanes(fleet, ['acme/web', 'other/web']);
    expect(out.lanes.map((l) => l.id)).toEqual(['acme-web', 'acme-web-2', 'other-web']);
    expect(new Set(out.lanes.map((l) => l.branch)).size).toBe(3);
    const taken = fleetOf({
      targets: [
        { repo: 'acme/api', lane: 'acme-web' },
        { repo: 'acme/cli', lane: 'acme-web-2' },
      ],
    });
    expect(addDiscoveredLanes(taken, ['acme/web', 'other/web']).lanes.map((l) => l.id)).toEqual(['acme-web', 'acme-web-2', 'acme-web-3', 'other-web']);
  });

  it('keeps a numbered id of a long name within the 100 characters a lane id may have', () => {
    const name = 'x'.repeat(96);
    // Both the short id (the name) and the full one (its last 100 characters) are taken by listed targets.
    const fleet = fleetOf({
      targets: [
        { repo: 'acme/api', lane: name },
        { repo: 'acme/cli', lane: `cme-${name}` },
      ],
    });
    const id = addDiscoveredLanes(fleet, [`acme/${name}`]).lanes[2]!.id;
    expect(id).toBe(`cme-${'x'.repeat(91)}-2`);
    expect(id).toMatch(/^[a-z0-9][a-z0-9._-]{0,99}$/);
  });

  it('marks a discovered lane as having no entry in the file’s targets', () => {
    const out = addDiscoveredLanes(fleetOf({}), ['acme/web']);
    expect(out.lanes[1]).toMatchObject({ id: 'web', index: -1 });
  });
});

describe('validateFleetFile: review', () => {
  const agent = { preset: 'command', command: 'my-agent --prompt-file {prompt_file}' };
  const withAgent = (over: Record<string, unknown>) => {
    const b = base(over);
    delete b.run;
    return { agent, ...b };
  };

  it('resolves the panel: built-in briefs, custom lenses, cut to the panel size; a target overrides field by field', () => {
    const fleet = ok(
      validateFleetFile(
        withAgent({
          review: { lenses: ['security', { name: 'perf', brief: 'Look for slow paths.' }, 'correctness'], panel: 2, block: ['critical'] },
          targets: [{ repo: 'acme/api' }, { repo: 'acme/web', review: { rounds: 5, panel: 3 } }, { repo: 'acme/doc', review: false }],
        }),
        FILE,
      ),
    );
    const [api, web, doc] = fleet.lanes;
    expect(api!.review).toEqual({
      lenses: [
        { name: 'security', brief: BUILTIN_LENSES.security },
        { name: 'perf', brief: 'Look for slow paths.' },
      ],
      rounds: 2,
      block: ['critical'],
      label: 'fleet:needs-person',
    });
    expect(web!.review!.rounds).toBe(5);
    expect(web!.review!.lenses.map((l) => l.name)).toEqual(['security', 'perf', 'correctness']);
    expect(doc!.review).toBeNull();
  });

  it('a target asks for review where the fleet does not: the built-in defaults (all five lenses, 2 rounds, critical and high block)', () => {
    const fleet = ok(validateFleetFile(withAgent({ targets: [{ repo: 'acme/api', review: {} }, { repo: 'acme/web' }] }), FILE));
    expect(fleet.lanes[0]!.review).toMatchObject({ rounds: 2, block: ['critical', 'high'] });
    expect(fleet.lanes[0]!.review!.lenses.map((l) => l.name)).toEqual(Object.keys(BUILTIN_LENSES));
    expect(fleet.lanes[1]!.review).toBeNull();
  });

  it('reports every problem at once: no agent, an unknown lens, a duplicate, a panel larger than the lenses, a reviewed script lane', () => {
    const none = problems(validateFleetFile(base({ review: { lenses: ['correctness'] } }), FILE));
    expect(none).toContainEqual({ file: FILE, field: 'review', message: expect.stringContaining('review needs agent:') });

    const many = problems(
      validateFleetFile(
        withAgent({
          review: { lenses: ['correctness', { name: 'correctness', brief: 'again' }], panel: 3 },
          targets: [
            { repo: 'acme/api', run: 'true', review: { rounds: 1 } },
            { repo: 'acme/web', review: { lenses: ['security', 'security'] } },
          ],
        }),
        FILE,
      ),
    );
    const fields = many.map((p) => p.field);
    expect(fields).toEqual(expect.arrayContaining(['review.lenses[1]', 'review.panel', 'targets[0].review', 'targets[1].review.lenses[1]']));
    expect(many.find((p) => p.field === 'review.panel')!.message).toBe(
      'a panel of 3 needs at least 3 lenses, and 2 are listed: list more lenses or lower panel',
    );
    expect(many.find((p) => p.field === 'targets[0].review')!.message).toContain('this target has its own run:');

    // A lens that is neither built in nor {name, brief}: named where it stands, with the lenses there are.
    const unknown = problems(
      validateFleetFile(withAgent({ review: { lenses: ['speed'] }, targets: [{ repo: 'acme/api', review: { lenses: [{ name: 'perf' }] } }] }), FILE),
    );
    expect(unknown).toEqual([
      { file: FILE, field: 'targets[0].review.lenses[0].brief', message: expect.stringMatching(/^missing: add brief:/) },
      {
        file: FILE,
        field: 'review.lenses[0]',
        message: 'not a built-in lens (correctness, completeness, security, edge-cases, consistency); a lens of your own is {name, brief}',
      },
    ]);
  });
});
