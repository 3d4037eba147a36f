/**
 * The report `fleet run`, `fleet report` and `fleet plan` print is markdown (report.md, the job summary): untrusted
 * names are escaped there so they make no link or HTML. On a terminal the escapes read back: a message naming
 * `[.editorconfig]` is printed so, not `\[.editorconfig\]`. Into a pipe (the action's run mode appends stdout to
 * the job summary) it stays markdown.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo } from '../support/repos.js';
import { fleet, removeDir, runArgs, tempDir, writeFleetFile } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

describe('the report on a terminal', () => {
  it('reads the markdown escapes back on a terminal, and keeps them in a pipe and in report.md', async () => {
    await createRepo(dir, 'api', { 'README.md': '# api\n' }, { clone: false });
    const file = writeFleetFile(dir, {
      name: 'brackets',
      directive: 'x',
      run: 'echo "error: [.editorconfig] <root> is missing" >&2; exit 3',
      max_retries: 0,
      targets: [{ repo: './api.git' }],
    });
    const tty = await fleet([...runArgs(file, join(dir, 'ws1'))], { cwd: dir, tty: true });
    expect(tty.code).toBe(1);
    expect(tty.stdout).toContain('error: [.editorconfig] <root> is missing');
    expect(tty.stdout).not.toContain('\\[');
    const piped = await fleet([...runArgs(file, join(dir, 'ws2'))], { cwd: dir, tty: false });
    expect(piped.stdout).toContain('error: \\[.editorconfig\\] &lt;root&gt; is missing');
    expect(readFileSync(join(dir, 'ws1', 'report.md'), 'utf8')).toContain('error: \\[.editorconfig\\] &lt;root&gt; is missing');
    const again = await fleet(['report', join(dir, 'ws1')], { cwd: dir, tty: true });
    expect(again.stdout).toContain('error: [.editorconfig] <root> is missing');
  });
});
