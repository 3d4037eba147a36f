/**
 * What a lane's artifact takes from its folder (src/steps/drivers/matrix-artifacts.ts laneFiles): Fleet's own names
 * only, regular files only, and never a second name of another file. A directive writes that folder: a link or a hard
 * link it leaves under one of Fleet's names would upload the file it names (issue 28, second pass: hard links).
 */
import { linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newLaneRecord } from '../../src/core/model.js';
import { laneFiles } from '../../src/steps/drivers/matrix-artifacts.js';
import { removeDir, tempDir } from '../integration/helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

describe('laneFiles', () => {
  it("takes Fleet's files, and no link, hard link or name of the directive's", async () => {
    const lane = join(dir, 'lane');
    mkdirSync(join(lane, 'review'), { recursive: true });
    const secret = join(dir, 'secret.txt');
    writeFileSync(secret, 'SECRET');
    writeFileSync(join(lane, 'result.json'), '{}');
    writeFileSync(join(lane, 'attempt-1.log'), 'log');
    writeFileSync(join(lane, 'patch.diff'), 'diff');
    // Under Fleet's names: a hard link, and a link.
    linkSync(secret, join(lane, 'review', 'a1-r1-security.log'));
    symlinkSync(secret, join(lane, 'prompt-1.md'));
    // Under a name of the directive's own.
    writeFileSync(join(lane, 'notes.txt'), 'x');
    const rec = {
      ...newLaneRecord({ repo: 'acme/api', lane: 'api', wave: 0, branch: 'fleet/t/api', depends_on: [] }),
      attempts: [{ n: 1, log: join(lane, 'attempt-1.log') }],
      evidence: { patch: join(lane, 'patch.diff') },
      review: {},
    } as unknown as Parameters<typeof laneFiles>[1];
    const files = await laneFiles(lane, rec, true);
    expect(files.map((f) => f.slice(lane.length + 1)).sort()).toEqual(['attempt-1.log', 'patch.diff', 'result.json']);
  });
});
