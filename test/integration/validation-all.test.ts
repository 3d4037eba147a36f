/**
 * Issue 11, "what a new user hit", through the CLI: a bad fleet file gets every problem at once (a missing repo: no
 * longer hides the rest), each saying what to write, and exit code 2; a glob naming a folder of a local target is
 * refused before any lane runs.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo } from '../support/repos.js';
import { fleet, removeDir, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

/** `fleet plan <file>`, which must exit 2: the problem lines of stderr, each without its `  <file>: ` prefix. */
async function planProblems(file: string): Promise<string[]> {
  const r = await fleet(['plan', file], { cwd: dir });
  expect(r.code, r.stderr + r.stdout).toBe(2);
  expect(existsSync(join(dir, '_workspace'))).toBe(false);
  const lines = r.stderr.split('\n').filter((l) => l.startsWith(`  ${file}: `));
  expect(r.stderr).toContain(`${lines.length} problem${lines.length === 1 ? '' : 's'} found:`);
  return lines.map((l) => l.slice(`  ${file}: `.length));
}

describe('every problem of a fleet file at once', () => {
  it('a target without repo: hides neither the empty directive, run and agent both set, the branch without {lane}, nor the rest', async () => {
    const file = writeFleetFile(dir, {
      name: 'all',
      directive: ' ',
      run: 'true',
      agent: { preset: 'claude' },
      branch: 'fleet/{name}',
      maxparallel: 4,
      checks: 'npm test',
      never: ['!docs/**'],
      targets: [{ owns: ['src/**'] }, { repo: './b', ownz: ['x'], depends_on: 'a' }, './c'],
    });
    const problems = await planProblems(file);
    expect(problems.sort()).toEqual(
      [
        'targets[0].repo: missing: add repo: (owner/repo on GitHub, a local path (./x, /x, ~/x) or a git URL)',
        'directive: the directive is empty: say what every lane should do',
        'agent: set either `run:` or `agent:`, not both',
        'branch: the branch template must contain {lane} so every lane gets its own branch',
        'maxparallel: unknown field "maxparallel": did you mean max_parallel?',
        'checks: expected a list, not the text "npm test": write it as a list: checks: ["npm test"]',
        'never[0]: "!docs/**" is a negation, and never: has none: it only lists files no lane may change (even inside owns); to keep lanes to docs/**, write owns: ["docs/**"]; to let them change docs/** inside another never: glob, narrow that glob',
        'targets[1].ownz: unknown field "ownz": did you mean owns?',
        'targets[1].depends_on: expected a list, not the text "a": write it as a list: depends_on: ["a"]',
        'targets[2]: expected a mapping, not the text "./c": write it as a mapping: - { repo: "./c" }',
      ].sort(),
    );
  });

  it('a JSON fleet file is shown the fix in JSON', async () => {
    const file = writeFleetFile(dir, { name: 'j', directive: 'd', run: 'true', owns: 'src/**', targets: [{ repo: './a', exclusive: 'true' }] }, 'fleet.json');
    expect((await planProblems(file)).sort()).toEqual([
      'owns: expected a list, not the text "src/**": write it as a list: "owns": ["src/**"]',
      'targets[0].exclusive: expected true or false, not the text "true": write "exclusive": true (without quotes)',
    ]);
  });
});

describe('a glob without a wildcard naming a folder of a local target', () => {
  it('is refused before any lane runs, at its field, with the glob to write; a file such as Makefile is fine', async () => {
    await createRepo(dir, 'mono', { 'packages/web/index.ts': 'x\n', 'secrets/key': 'k\n', Makefile: 'all:\n' }, { bare: false });
    await createRepo(dir, 'svc', { 'secrets/key': 'k\n' }, { bare: false });
    const spec = {
      name: 'folders',
      directive: 'd',
      run: 'true',
      never: ['secrets'],
      targets: [{ repo: './mono', owns: ['packages/web', 'Makefile'] }, { repo: './svc' }],
    };
    const problems = await planProblems(writeFleetFile(dir, spec));
    expect(problems).toEqual([
      'targets[0].owns[0]: "packages/web" is a folder in ./mono, and a glob without a wildcard matches only a file of exactly that path: the lane could change nothing in it; write "packages/web/**" for everything under it',
      'never[0]: "secrets" is a folder in ./mono (and 1 more target), and a glob without a wildcard matches only a file of exactly that path: nothing in it would be fenced off; write "secrets/**" for everything under it',
    ]);

    // Reported with the file's other problems, not after them.
    const more = await planProblems(writeFleetFile(dir, { ...spec, directive: '', checks: 'make' }));
    expect(more.map((p) => p.split(':')[0]).sort()).toEqual(['checks', 'directive', 'never[0]', 'targets[0].owns[0]']);

    // Written as the message says, the plan goes through.
    const fixed = writeFleetFile(dir, {
      ...spec,
      never: ['secrets/**'],
      targets: [{ repo: './mono', owns: ['packages/web/**', 'Makefile'] }, { repo: './svc' }],
    });
    const ok = await fleet(['plan', fixed], { cwd: dir });
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('a bare repository has no working copy to look into: its own folders (hooks) are not taken for the target’s', async () => {
    await createRepo(dir, 'bare', { 'README.md': 'x\n' }, { clone: false });
    const file = writeFleetFile(dir, { name: 'bare', directive: 'd', run: 'true', owns: ['hooks'], targets: [{ repo: './bare.git' }] });
    const r = await fleet(['plan', file], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
  });
});

describe('a key written twice hides no other problem', () => {
  it('in JSON and in YAML, the key is named with the problems of the rest of the file', async () => {
    const json = join(dir, 'fleet.json');
    writeFileSync(json, '{\n  "name": "dup",\n  "directive": "",\n  "run": "true",\n  "run": "false",\n  "targets": [{ "owns": ["x/**"] }]\n}\n');
    expect(await planProblems(json)).toEqual([
      'run: written twice (lines 4 and 5); JSON would keep only the last: remove one',
      'targets[0].repo: missing: add repo: (owner/repo on GitHub, a local path (./x, /x, ~/x) or a git URL)',
      'directive: the directive is empty: say what every lane should do',
    ]);
    const yaml = join(dir, 'fleet.yml');
    writeFileSync(yaml, 'name: dup\ndirective: ""\nrun: "true"\nrun: "false"\ntargets:\n  - repo: ./a\n    checks: make\n');
    const problems = await planProblems(yaml);
    expect(problems[0]).toMatch(/^line 4, column 1: YAML: Map keys must be unique/);
    expect(problems.slice(1)).toEqual([
      'targets[0].checks: expected a list, not the text "make": write it as a list: checks: ["make"]',
      'directive: the directive is empty: say what every lane should do',
    ]);
  });
});
