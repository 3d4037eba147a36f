/**
 * Bad input: exit 2, a message naming the file and the field, every problem at
 * once, and nothing written to the workspace.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
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

describe('an oversized manifest', () => {
  it('is refused by fleet status and fleet report before it is read, with exit 2 and the limit named', async () => {
    const big = join(dir, 'fleet-status.json');
    // Sparse: 65 MiB on paper, nothing on disk.
    writeFileSync(big, '');
    truncateSync(big, 65 * 1024 * 1024);
    for (const cmd of ['status', 'report']) {
      const r = await fleet([cmd, big], { cwd: dir });
      expect(r.code, cmd).toBe(2);
      expect(r.stderr, cmd).toContain(`${big}: (file): it is 65 MiB, over Fleet's limit of 64 MiB for a manifest\n`);
    }
  });
});

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
      targets: [{ repo: './a', depends_on: ['c'] }, { repo: './b', depends_on: ['a'] }, { repo: './c', depends_on: ['b'] }, { repo: './d' }],
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
    const r = await fleet(['plan', file, '--json', '--allow-missing'], { cwd: dir });
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
    expect(r.stderr).toMatch(/^usage: fleet run /m);
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

  it('a YAML alias bomb: a file/line error at once, no stack trace', async () => {
    const file = join(dir, 'fleet.yml');
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++)
      levels.push(
        `l${i}: &l${i} [${Array(10)
          .fill(i === 1 ? '*a' : `*l${i - 1}`)
          .join(',')}]`,
      );
    writeFileSync(file, `name: bomb\ndirective: x\nrun: "true"\n${levels.join('\n')}\ntargets:\n  - repo: ./a\n`);
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(`${file}: line 5, column `);
    expect(r.stderr).toMatch(/aliases \(\*name\) expand to far more data than the file holds/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('JSON keys written twice are refused by field, at any depth, not silently kept last', async () => {
    const file = join(dir, 'fleet.json');
    writeFileSync(
      file,
      '{"name": "bad", "directive": "x", "run": "true", "owns": ["src/**"],\n' +
        '"targets": [{"repo": "./a", "owns": ["docs/**"],\n "owns": []}],\n' +
        '"owns": []}\n',
    );
    const r = await runExpecting2(file);
    expect(r.stderr).toMatch(/2 problems found/);
    expect(r.stderr).toContain(`${file}: targets[0].owns: written twice (lines 2 and 3); JSON would keep only the last: remove one`);
    expect(r.stderr).toContain(`${file}: owns: written twice (lines 1 and 4)`);
  });

  it('a YAML key written twice inside a target is refused too', async () => {
    const file = join(dir, 'fleet.yml');
    writeFileSync(file, 'name: bad\ndirective: x\nrun: "true"\ntargets:\n  - repo: ./a\n    owns: [docs/**]\n    owns: []\n');
    const r = await runExpecting2(file);
    expect(r.stderr).toContain(`${file}: line 7, column 5: YAML: Map keys must be unique`);
  });

  it('a branch template that renders a name git refuses: a leading "-", control characters', async () => {
    for (const [branch, shown, why] of [
      ['-fleet/{lane}', '"-fleet/a"', 'it starts with "-", which git reads as an option'],
      ['fleet/\u0001{lane}\u007f', '"fleet/\\x01a\\x7f"', 'it contains a control character'],
      ['fleet/{lane}.lock/x', '"fleet/a.lock/x"', 'its part "a.lock" ends with ".lock"'],
      ['fleet/.{lane}', '"fleet/.a"', 'its part ".a" starts with "."'],
    ]) {
      const file = writeFleetFile(dir, { ...base, branch, targets: [{ repo: './a' }] });
      const r = await runExpecting2(file);
      expect(r.stderr).toContain(`${file}: branch: ${shown} is not a valid git branch name: ${why}`);
      // eslint-disable-next-line no-control-regex
      expect(r.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
    }
  });

  it('a fleet file over 1 MiB is refused before it is parsed, saying the limit', async () => {
    const file = join(dir, 'fleet.yml');
    const targets = Array.from({ length: 60_000 }, (_, i) => `  - repo: acme/repo-${i}`).join('\n');
    writeFileSync(file, `name: big\ndirective: x\nrun: "true"\ntargets:\n${targets}\n`);
    const r = await runExpecting2(file);
    expect(r.stderr).toMatch(
      new RegExp(`${file}: \\(file\\): it is 1\\.\\d MiB, over Fleet's limit of 1 MiB for a fleet file: list many targets in a targets_file`),
    );
  });

  it('a fleet file that is a pipe or a folder is refused, never waited on', async () => {
    const fifo = join(dir, 'fleet.yml');
    execFileSync('mkfifo', [fifo]);
    const r = await runExpecting2(fifo);
    expect(r.stderr).toContain(`${fifo}: (file): it is not a regular file`);
    const r2 = await runExpecting2(dir);
    expect(r2.stderr).toContain(`${dir}: (file): it is a folder, not a file`);
  });

  it("--workspace naming a file: a --workspace error with the fleet file's problems, no stack trace, nothing written", async () => {
    const file = writeFleetFile(dir, { ...base, retries: 3, targets: [{ repo: './a' }] });
    const notDir = join(dir, 'notes.txt');
    writeFileSync(notDir, 'mine\n');
    for (const workspace of [notDir, join(notDir, 'sub')]) {
      const r = await fleet(['run', file, '--workspace', workspace, '--quiet'], { cwd: dir });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/2 problems found/);
      expect(r.stderr).toContain(`${file}: retries: unknown field`);
      expect(r.stderr).toContain(`${workspace}: --workspace: `);
      expect(r.stderr).not.toMatch(/EEXIST|ENOTDIR|\n\s+at /);
    }
    expect(readFileSync(notDir, 'utf8')).toBe('mine\n');
    expect(existsSync(join(dir, '_workspace'))).toBe(false);
  });

  it('forge: github without a token says so once, naming the field and the variables to set (issue 11)', async () => {
    const file = writeFleetFile(dir, { ...base, forge: 'github', targets: [{ repo: 'acme/api' }] });
    const r = await fleet(['run', file, '--workspace', ws, '--quiet'], {
      cwd: dir,
      env: { FLEET_GITHUB_TOKEN: undefined, GITHUB_TOKEN: undefined, GH_TOKEN: undefined },
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      `${file}: forge: github needs a token: set FLEET_GITHUB_TOKEN, GITHUB_TOKEN, GH_TOKEN (a GitHub App installation token or a PAT that can push to the targets)\n`,
    );
  });

  it('a fleet whose every target is excluded (all paths wrong) exits 2, not 0: no lane ran (issue 11)', async () => {
    const file = writeFleetFile(dir, { ...base, targets: [{ repo: './nope-1' }, { repo: './nope-2' }] });
    // By default (issue 27) the plan stops on them, both named; accepted as missing, no lane runs, which is no success either.
    const refused = await fleet(['run', file, '--workspace', ws, '--quiet'], { cwd: dir });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`${file}: targets[0].repo: ./nope-1 is not there`);
    expect(refused.stderr).toContain(`${file}: targets[1].repo: ./nope-2 is not there`);
    const r = await fleet(['run', file, '--workspace', ws, '--quiet', '--allow-missing'], { cwd: dir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`${file}: no lane ran: every target was excluded (2); the report says why for each\n`);
    expect(r.stdout).toContain('### Excluded');
  });
});
