/**
 * Reading a fleet file (YAML or JSON) and its targets_file from disk: every problem at once, each at the file
 * and field (or line) where it is, and nothing silently dropped (keys written twice, alias bombs, cycles).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadFleetFile, parseFleetText } from '../../src/steps/load.js';
import { removeDir, tempDir } from '../integration/helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-load-');
});
afterEach(() => removeDir(dir));

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const HEAD = 'name: n\ndirective: d\nrun: "true"\n';

describe('parseFleetText', () => {
  it('reads YAML, and JSON from a .json file', () => {
    expect(parseFleetText('name: n\ntargets: [{ repo: ./a }]\n', 'f.yml')).toEqual({ ok: true, value: { name: 'n', targets: [{ repo: './a' }] } });
    expect(parseFleetText('{"name": "n"}', 'f.json')).toEqual({ ok: true, value: { name: 'n' } });
  });

  it('a file that is not a mapping is refused at the top level, whatever its syntax', () => {
    const want = {
      ok: false,
      problems: [{ file: 'f', field: '(top level)', message: 'a fleet file is a mapping with name, directive, run or agent, and targets' }],
    };
    expect(parseFleetText('- a\n- b\n', 'f')).toEqual(want);
    expect(parseFleetText('just words\n', 'f')).toEqual(want);
    expect(parseFleetText('', 'f')).toEqual(want);
    expect(parseFleetText('[1]', 'f')).toEqual(want);
    expect(parseFleetText('null', 'g.json')).toEqual({ ...want, problems: [{ ...want.problems[0], file: 'g.json' }] });
  });

  it("JSON that does not parse: (syntax), with the parser's words", () => {
    const r = parseFleetText('{"name": ', 'f.json');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]).toMatchObject({ file: 'f.json', field: '(syntax)' });
    expect(r.problems[0]!.message).toMatch(/^not valid JSON: \S/);
    // A .json file is read as JSON: what YAML would take is refused.
    expect(parseFleetText('name: n\n', 'f.json').ok).toBe(false);
  });

  it('JSON keys written twice: each at its path, with both lines', () => {
    const text = '{\n  "owns": ["a"],\n  "targets": [{\n    "repo": "./a",\n    "owns": ["x"],\n    "owns": ["y"]\n  }],\n  "owns": ["b"]\n}';
    expect(parseFleetText(text, 'f.json')).toEqual({
      ok: false,
      problems: [
        { file: 'f.json', field: 'targets[0].owns', message: 'written twice (lines 5 and 6); JSON would keep only the last: remove one' },
        { file: 'f.json', field: 'owns', message: 'written twice (lines 2 and 8); JSON would keep only the last: remove one' },
      ],
    });
  });

  it('YAML errors: each at its line and column, the message without the position repeated', () => {
    const r = parseFleetText('name: n\nname: m\ntargets: [\n', 'f.yml');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.length).toBeGreaterThanOrEqual(2);
    expect(r.problems[0]).toMatchObject({ file: 'f.yml', field: 'line 2, column 1' });
    expect(r.problems[0]!.message).toMatch(/^YAML: Map keys must be unique/);
    for (const p of r.problems) {
      expect(p.field).toMatch(/^line \d+, column \d+$/);
      expect(p.message).toMatch(/^YAML: /);
      expect(p.message).not.toMatch(/at line \d+, column \d+:?$/);
      expect(p.message).not.toContain('\n');
    }
  });

  it('an alias bomb is refused at its first alias, saying what it is', () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]',
      'e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]',
    ].join('\n');
    expect(parseFleetText(bomb, 'f.yml')).toEqual({
      ok: false,
      problems: [
        {
          file: 'f.yml',
          field: 'line 2, column 8',
          message: 'YAML: its aliases (*name) expand to far more data than the file holds (an alias bomb?): write the values out, or use fewer aliases',
        },
      ],
    });
    // A few aliases are fine.
    expect(parseFleetText('a: &a [x]\nb: *a\n', 'f.yml')).toEqual({ ok: true, value: { a: ['x'], b: ['x'] } });
  });
});

describe('loadFleetFile', () => {
  it('loads a valid file, returning its path', async () => {
    const path = write('fleet.yml', `${HEAD}targets: [{ repo: ./a }]\n`);
    const r = await loadFleetFile(path);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.path).toBe(path);
    expect(r.fleet.lanes.map((l) => l.id)).toEqual(['a']);
  });

  it('a file that cannot be read: (file), without a hint that is only for size', async () => {
    const path = join(dir, 'nope.yml');
    const r = await loadFleetFile(path);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]).toMatchObject({ file: path, field: '(file)' });
    expect(r.problems[0]!.message).toMatch(/^no such file/);
    expect(r.problems[0]!.message).not.toContain('targets_file');
  });

  it('a parse problem stops there', async () => {
    const path = write('fleet.json', '[]');
    expect(await loadFleetFile(path)).toEqual({ ok: false, problems: [{ file: path, field: '(top level)', message: expect.any(String) }] });
  });

  describe('targets_file', () => {
    it('appends one target per line after the listed ones, skipping comments and blank lines, any line ending', async () => {
      write('repos.txt', '# the services\r\n./b  # second\r\n\r\n   \n./c\r./d\n#./e\n');
      const path = write('fleet.yml', `${HEAD}targets: [{ repo: ./a }]\ntargets_file: repos.txt\n`);
      const r = await loadFleetFile(path);
      if (!r.ok) throw new Error(JSON.stringify(r.problems));
      expect(r.fleet.lanes.map((l) => l.repo)).toEqual(['./a', './b', './c', './d']);
    });

    it('is read relative to the fleet file', async () => {
      const sub = join(dir, 'sub');
      mkdirSync(sub);
      writeFileSync(join(sub, 'list.txt'), './x\n');
      writeFileSync(join(sub, 'fleet.yml'), `${HEAD}targets_file: list.txt\n`);
      const r = await loadFleetFile(join(sub, 'fleet.yml'));
      if (!r.ok) throw new Error(JSON.stringify(r.problems));
      expect(r.fleet.lanes.map((l) => l.repo)).toEqual(['./x']);
    });

    it('a problem with a listed target is reported at its line of the list, naming the field; one in the fleet file stays there', async () => {
      const list = write('repos.txt', '# header\n./ok\n\nhas space # the bad one\n');
      const path = write('fleet.yml', `${HEAD}targets: [{ repo: ./a, depends_on: [nope] }]\ntargets_file: repos.txt\n`);
      const r = await loadFleetFile(path);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.problems.map((p) => [p.file, p.field]).sort()).toEqual([
        [path, 'targets[0].depends_on[0]'],
        [list, 'line 4 (repo)'],
      ]);
      expect(r.problems.find((p) => p.file === list)!.message).toContain('"has space" is neither owner/repo nor a path');
    });

    it('the first listed target, and one past the tenth, are found at their lines', async () => {
      const list = write('repos.txt', ['bad one', ...Array.from({ length: 10 }, (_, i) => `./r${i}`), 'bad two'].join('\n'));
      const path = write('fleet.yml', `${HEAD}targets_file: repos.txt\n`);
      const r = await loadFleetFile(path);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.problems.map((p) => [p.file, p.field])).toEqual([
        [list, 'line 1 (repo)'],
        [list, 'line 12 (repo)'],
      ]);
    });

    it('must name a file', async () => {
      for (const value of ['""', '"  "', '3', '[a.txt]']) {
        const path = write('fleet.yml', `${HEAD}targets_file: ${value}\n`);
        expect(await loadFleetFile(path)).toEqual({
          ok: false,
          problems: [{ file: path, field: 'targets_file', message: 'give the path of a file with one target per line' }],
        });
      }
    });

    it('a list that cannot be read is reported at targets_file, with its path', async () => {
      const path = write('fleet.yml', `${HEAD}targets_file: missing.txt\n`);
      const r = await loadFleetFile(path);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.problems).toHaveLength(1);
      expect(r.problems[0]).toMatchObject({ file: path, field: 'targets_file' });
      expect(r.problems[0]!.message.startsWith(`${join(dir, 'missing.txt')}: `)).toBe(true);
      expect(r.problems[0]!.message).not.toContain('github.discover');
    });
  });

  describe('dependency cycles in a file that has other problems', () => {
    it('are named with the other problems, lane by lane, with the edge to remove', async () => {
      const path = write(
        'fleet.yml',
        'name: n\nrun: "true"\ntargets:\n  - { repo: ./a, depends_on: [b] }\n  - { repo: ./b, depends_on: [c] }\n  - { repo: ./c, depends_on: [a] }\n',
      );
      const r = await loadFleetFile(path);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.problems.some((p) => p.field === 'directive')).toBe(true);
      expect(r.problems.filter((p) => p.message.includes('cycle'))).toEqual([
        {
          file: path,
          field: 'targets[0].depends_on',
          message: 'dependency cycle a → b → c → a: no lane in it can ever start; remove one of these depends_on entries (e.g. "b" from lane "a")',
        },
      ]);
    });

    it('use the lane id when one is written, and the derived one otherwise; later duplicates of an id are ignored', async () => {
      const path = write(
        'fleet.yml',
        'name: n\nrun: "true"\ntargets:\n  - just-a-string\n  - { repo: ./x/core.git, lane: first, depends_on: [api, 7] }\n  - { repo: ./api, depends_on: [first] }\n  - { repo: ./other, lane: first, depends_on: [] }\n',
      );
      const r = await loadFleetFile(path);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      // "first" is the lane id written (not core, derived from the repository); the second "first" is left out.
      expect(r.problems.filter((p) => p.message.includes('cycle')).map((p) => [p.field, p.message.split(':')[0]])).toEqual([
        ['targets[2].depends_on', 'dependency cycle api → first → api'],
      ]);
    });

    it('a lane depending on itself is named once', async () => {
      const invalid = write('bad.yml', 'name: n\nrun: "true"\ntargets:\n  - { repo: ./a, depends_on: [a] }\n');
      const r = await loadFleetFile(invalid);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      const self = r.problems.filter((p) => p.message.includes('itself'));
      expect(self).toHaveLength(1);
      expect(self[0]!.field.startsWith('targets[0].depends_on')).toBe(true);
    });

    it('a lane depending on itself in a file otherwise valid is named once, by validation', async () => {
      const path = write('fleet.yml', `${HEAD}targets:\n  - { repo: ./a, depends_on: [a] }\n`);
      const r = await loadFleetFile(path);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.problems).toEqual([{ file: path, field: 'targets[0].depends_on[0]', message: 'lane "a" cannot depend on itself' }]);
    });

    it('a target that is null is passed over when looking for cycles', async () => {
      const path = write('fleet.yml', 'name: n\nrun: "true"\ntargets:\n  - ~\n  - { repo: ./a, depends_on: [b] }\n  - { repo: ./b, depends_on: [a] }\n');
      const r = await loadFleetFile(path);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.problems.filter((p) => p.message.includes('cycle')).map((p) => p.field)).toEqual(['targets[1].depends_on']);
    });

    it('a targets list that is not a list has no cycles to find', async () => {
      const path = write('fleet.yml', 'name: n\nrun: "true"\ntargets: { a: 1 }\n');
      const r = await loadFleetFile(path);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.problems.some((p) => p.message.includes('cycle'))).toBe(false);
    });
  });
});
