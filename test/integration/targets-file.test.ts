/** targets_file: a plain list of targets beside the fleet file, appended with the fleet's defaults. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo } from '../support/repos.js';
import { fleet, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

describe('targets_file', () => {
  it('runs the listed targets after the explicit ones', async () => {
    for (const n of ['a', 'b', 'c']) await createRepo(dir, n, { 'README.md': `# ${n}\n` }, { clone: false });
    writeFileSync(join(dir, 'repos.txt'), '# the rest of the fleet\n./b.git\n\n./c.git   # owned by team c\n');
    const file = writeFleetFile(dir, {
      name: 'listed',
      directive: 'x',
      run: 'echo x >> README.md',
      max_retries: 0,
      targets: [{ repo: './a.git' }],
      targets_file: 'repos.txt',
    });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(readManifest(join(dir, 'ws')).lanes.map((l) => [l.lane, l.status])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'completed'],
    ]);
  });

  it('names the list file and line of a bad entry, and a missing list file', async () => {
    writeFileSync(join(dir, 'repos.txt'), './ok.git\napi\n');
    const file = writeFleetFile(dir, { name: 'bad', directive: 'x', run: 'true', targets_file: 'repos.txt' });
    const r = await fleet(['plan', file], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${join(dir, 'repos.txt')}: line 2 (repo): "api" is neither owner/repo nor a path`);
    const missing = writeFleetFile(dir, { name: 'gone', directive: 'x', run: 'true', targets_file: 'nope.txt' }, 'gone.yml');
    const r2 = await fleet(['plan', missing], { cwd: dir });
    expect(r2.code).toBe(2);
    expect(r2.stderr).toContain('targets_file: ');
    expect(r2.stderr).toContain('nope.txt: no such file');
  });

  it('reads a list saved with Windows line endings (and a byte order mark) as it reads any other', async () => {
    for (const n of ['b', 'c']) await createRepo(dir, n, { 'README.md': `# ${n}\n` }, { clone: false });
    writeFileSync(join(dir, 'repos.txt'), '\ufeff# the rest of the fleet\r\n./b.git\r\n\r\n./c.git   # owned by team c\r\n');
    const file = writeFleetFile(dir, { name: 'crlf', directive: 'x', run: 'echo x >> README.md', max_retries: 0, targets_file: 'repos.txt' });
    const r = await fleet(runArgs(file, join(dir, 'ws')), { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(readManifest(join(dir, 'ws')).lanes.map((l) => [l.repo, l.status])).toEqual([
      ['./b.git', 'completed'],
      ['./c.git', 'completed'],
    ]);
  });

  it('refuses a list over 4 MiB before reading it, saying the limit', async () => {
    const list = join(dir, 'repos.txt');
    writeFileSync(list, `${Array.from({ length: 200_000 }, (_, i) => `acme/repository-number-${i}`).join('\n')}\n`);
    const file = writeFleetFile(dir, { name: 'huge', directive: 'x', run: 'true', targets_file: 'repos.txt' });
    const r = await fleet(['plan', file], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/1 problem found/);
    expect(r.stderr).toMatch(new RegExp(`${file}: targets_file: ${list}: it is 5\\.\\d MiB, over Fleet's limit of 4 MiB for a targets_file`));
  });
});
