/**
 * Bad input: exit 2, a message naming the file and the field, every problem at
 * once, and nothing written to the workspace.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fleet, removeDir, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
let ws: string;
beforeEach(() => {
  dir = tempDir();
  ws = join(dir, 'ws');
});
afterEach(() => removeDir(dir));

async function runExpecting2(file: string, extra: string[] = []) {
  const r = await fleet(['run', file, '--workspace', ws, '--quiet', ...extra], { cwd: dir });
  expect(r.code, r.stderr).toBe(2);
  expect(existsSync(ws), 'the workspace must not be created for bad input').toBe(false);
  expect(existsSync(join(dir, '_workspace'))).toBe(false);
  return r;
}

const base = { name: 'bad', directive: 'do it', run: 'true', max_retries: 0 };

describe('bad input', () => {
  it('malformed YAML: names the file, line and column', async () => {
    const file = join(dir, 'fleet.yml');
    writeFileSync(file, 'name: bad\ndirective: x\nrun: "true"\ntargets:\n  - repo: ./a\n   depends_on: [b]\n');
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toMatch(/line 6, column \d+/);
    expect(r.stderr).toMatch(/YAML/);
    expect(r.stdout).toBe('');
  });

  it('a key written twice in YAML is an error, not a silent overwrite', async () => {
    const file = join(dir, 'fleet.yml');
    writeFileSync(file, 'name: bad\ndirective: x\nrun: "true"\nrun: "false"\ntargets:\n  - repo: ./a\n');
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toMatch(/line 4, column 1/);
  });

  it('reports every problem at once: unknown fields, empty directive, invalid glob, unknown dependency', async () => {
    const file = writeFleetFile(dir, {
      ...base,
      directive: '   ',
      retries: 3,
      owns: ['src/[abc'],
      targets: [
        { repo: './a', ownz: ['x'] },
        { repo: './b', depends_on: ['nope'] },
      ],
    });
    const r = await runExpecting2(file);
    expect(r.stderr).toMatch(/\b5 problems found/);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith(`  ${file}: `));
    const fields = lines.map((l) => l.slice(`  ${file}: `.length).split(': ')[0]);
    expect(fields.sort()).toEqual(['directive', 'owns[0]', 'retries', 'targets[0].ownz', 'targets[1].depends_on[0]'].sort());
    expect(r.stderr).toMatch(/unknown field "retries"/);
    expect(r.stderr).toMatch(/unknown field "ownz"/);
    expect(r.stderr).toMatch(/"nope" is not a lane of this fleet/);
    expect(r.stderr).toMatch(/owns\[0\]: .*unclosed \[/);
  });

  it('an empty directive is named by its field', async () => {
    const file = writeFleetFile(dir, { ...base, directive: '', targets: [{ repo: './a' }] });
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(`${file}: directive: `);
    expect(r.stderr).toMatch(/1 problem found/);
  });

  it('a dependency cycle is named, lane by lane', async () => {
    const file = writeFleetFile(dir, {
      ...base,
      targets: [
        { repo: './a', depends_on: ['c'] },
        { repo: './b', depends_on: ['a'] },
        { repo: './c', depends_on: ['b'] },
        { repo: './d' },
      ],
    });
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toMatch(/targets\[\d\]\.depends_on/);
    expect(r.stderr).toMatch(/cycle a → c → b → a/);
    expect(r.stderr).not.toMatch(/\bd\b.*cycle/);
  });

  it('a cycle is reported together with the other problems of the file', async () => {
    const file = writeFleetFile(dir, {
      ...base,
      directive: '',
      targets: [
        { repo: './a', depends_on: ['b'] },
        { repo: './b', depends_on: ['a'] },
      ],
    });
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(`${file}: directive: `);
    expect(r.stderr).toMatch(/cycle a → b → a/);
    expect(r.stderr).toMatch(/2 problems found/);
  });

  it('a dependency on an unknown lane names the lanes there are', async () => {
    const file = writeFleetFile(dir, { ...base, targets: [{ repo: './a' }, { repo: './b', depends_on: ['a', 'ghost'] }] });
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(`${file}: targets[1].depends_on[1]: "ghost" is not a lane of this fleet (lanes: a, b)`);
  });

  it('an invalid glob in a target names its field', async () => {
    const file = writeFleetFile(dir, { ...base, targets: [{ repo: './a', owns: ['src/**'], never: ['{a,b'] }] });
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(`${file}: targets[0].never[0]: `);
  });

  it('duplicate targets: a note, not an error, and the duplicate is removed', async () => {
    const file = writeFleetFile(dir, { ...base, targets: [{ repo: './a' }, { repo: './b' }, { repo: './a' }] });
    const r = await fleet(['plan', file, '--json'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/note: .*targets\[2\] repeats \.\/a \(lane a\); the duplicate was removed/);
    const m = JSON.parse(r.stdout);
    expect(m.lanes.map((l: { lane: string }) => l.lane).sort()).toEqual(['a', 'b']);
    expect(existsSync(join(dir, '_workspace'))).toBe(false);
  });

  it('a missing fleet file', async () => {
    const file = join(dir, 'missing.yml');
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(`${file}: (file): no such file`);
  });

  it('--max-parallel 0', async () => {
    const file = writeFleetFile(dir, { ...base, targets: [{ repo: './a' }] });
    const r = await runExpecting2(file, ['--max-parallel', '0']);
    expect(r.stderr).toMatch(/--max-parallel takes a whole number from 1 to 256, got "0"/);
  });

  it('an unknown flag', async () => {
    const file = writeFleetFile(dir, { ...base, targets: [{ repo: './a' }] });
    const r = await runExpecting2(file, ['--paralel', '3']);
    expect(r.stderr).toMatch(/--paralel/);
    expect(r.stderr).toMatch(/Usage:/);
  });

  it('an unknown command and no command', async () => {
    const r = await fleet(['launch', 'x.yml'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown command "launch"/);
    const none = await fleet([], { cwd: dir });
    expect(none.code).toBe(2);
  });

  it('a JSON fleet file with a syntax error', async () => {
    const file = join(dir, 'fleet.json');
    writeFileSync(file, '{"name": "bad",');
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(`${file}: (syntax): not valid JSON`);
  });
});
