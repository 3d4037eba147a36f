/**
 * fleet exec's step on the local forge, over real repositories: what docs/cli.md says of its isolation and its
 * folder (the command-line behaviour is in test/cli/adhoc.test.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateFleetFile } from '../../src/core/validate.js';
import { LocalForge } from '../../src/local/forge.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock } from '../../src/ports.js';
import { execFleet } from '../../src/steps/exec.js';
import { lockWorkspace } from '../../src/util/lock.js';
import { createRepo } from '../support/repos.js';
import { removeDir, tempDir } from '../integration/helpers.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

let dir: string;
beforeEach(async () => {
  dir = tempDir('fleet-exec-');
  await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
});
afterEach(() => removeDir(dir));

function input(isolation: 'auto' | 'required', kind: 'none' | 'pid-namespace') {
  const v = validateFleetFile({ name: 'ask', directive: 'x', run: 'true', isolation, targets: [{ repo: './a.git' }] }, join(dir, 'fleet.yml'));
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const exec = {
    ...localExecutor,
    isolation: async () => ({ kind, detail: 'no namespaces here' }),
    run: (c: string, o: Parameters<typeof localExecutor.run>[1]) => localExecutor.run(c, { ...o, isolation: 'off' }),
  };
  return {
    fleet: v.fleet,
    file: join(dir, 'fleet.yml'),
    command: 'cat README.md',
    forge: new LocalForge({ baseDir: dir }),
    workspace: localWorkspace,
    exec,
    clock: systemClock,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    root: join(dir, 'out'),
  };
}

describe('execFleet', () => {
  it('isolation: required on a machine without it is refused before anything is cloned', async () => {
    const r = await execFleet(input('required', 'none'));
    expect(r).toEqual({
      ok: false,
      problems: [
        { file: join(dir, 'fleet.yml'), field: 'isolation', message: 'required, but commands cannot be isolated on this machine: no namespaces here' },
      ],
    });
    expect(existsSync(join(dir, 'out'))).toBe(false);
  });

  it('says in a note when the command ran without isolation, and not when it was isolated', async () => {
    const bare = await execFleet(input('auto', 'none'));
    if (!bare.ok) throw new Error(JSON.stringify(bare.problems));
    expect(bare.outcome.notes).toEqual(['the command ran without isolation in every target: no namespaces here']);
    expect(bare.outcome.rows).toEqual([expect.objectContaining({ lane: 'a', status: 'ran', exit_code: 0, output: '# a\n' })]);
    removeDir(join(dir, 'out'));
    const isolated = await execFleet(input('auto', 'pid-namespace'));
    expect(isolated.ok && isolated.outcome.notes).toEqual([]);
  });

  it('one exec at a time in a folder: a held .fleet.lock refuses the second', async () => {
    const first = await execFleet(input('auto', 'pid-namespace'));
    expect(first.ok).toBe(true);
    const held = await lockWorkspace(join(dir, 'out'), 'someone-else');
    if (!held.ok) throw new Error(held.message);
    try {
      const second = await execFleet(input('auto', 'pid-namespace'));
      expect(second.ok).toBe(false);
      expect(!second.ok && second.problems[0]!.field).toBe('(workspace)');
    } finally {
      await held.release();
    }
  });
});
