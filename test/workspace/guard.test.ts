/**
 * The working-copy guard (src/workspace/guard.ts) knows a working copy by the folder it is, not only by its path: a
 * folder above it moved aside and another made at the same path (where a directive could write the folder above:
 * isolation off, or a sandbox without the pins of sandbox.ts) is not the working copy Fleet cloned, and Fleet's git
 * does not run there. With real git and real folders.
 */
import { mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkingCopyGuard } from '../../src/workspace/guard.js';
import { git, removeDir, tempDir } from '../integration/helpers.js';
import { createRepo } from '../support/repos.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

describe('the working-copy guard', () => {
  it('refuses a working copy made anew at the same path after the folder above it was moved aside', async () => {
    const { remote } = await createRepo(dir, 'b', { 'README.md': '# b\n' }, { clone: false });
    const lanes = join(dir, 'ws', 'lanes');
    mkdirSync(join(lanes, 'b'), { recursive: true });
    const repo = join(lanes, 'b', 'repo');
    git(dir, 'clone', '--quiet', remote, repo);
    const guard = new WorkingCopyGuard();
    guard.cloned(repo);
    expect(guard.intact(repo)).toBe(true);

    // The run's folder moved aside, and a clone of the same repository, of another's making, at the old path.
    renameSync(join(dir, 'ws'), join(dir, 'ws-aside'));
    mkdirSync(join(lanes, 'b'), { recursive: true });
    git(dir, 'clone', '--quiet', remote, repo);
    expect(guard.sameFolder(repo)).toBe(false);
    expect(guard.intact(repo)).toBe(false);
    guard.touched(repo);
    expect(() => guard.check(repo)).toThrow(/no longer the folder Fleet cloned/);
  });
});
