/**
 * The parts of a lane a person reads: the one line of a failing command's output its error shows (gist), and the
 * pull request body (prBody) with the marker a re-run finds its PR by.
 */
import { describe, expect, it } from 'vitest';
import type { LaneRecord } from '../../src/core/model.js';
import { validateFleetFile } from '../../src/core/validate.js';
import { LocalForge } from '../../src/local/forge.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock } from '../../src/ports.js';
import { gist, laneDir, prBody, resultPath, type LaneContext } from '../../src/steps/lane/index.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

describe('gist', () => {
  it('takes the last line that names an error, not the last line', () => {
    expect(gist('building\nerror: cannot find module x\nnpm notice: done\n')).toBe('error: cannot find module x');
    expect(gist('a\nFATAL: disk full\nb failed here\nc\n')).toBe('b failed here');
    for (const word of ['Error', 'fatal', 'FAILED', 'exception', 'Permission denied', 'not found']) {
      expect(gist(`x ${word} y\nlast\n`)).toBe(`x ${word} y`);
    }
  });

  it('words inside other words do not count; without an error line, the last line', () => {
    expect(gist('no errors\nterrors ahead\nall good\n')).toBe('all good');
    expect(gist('one\ntwo\n')).toBe('two');
    expect(gist('')).toBe('');
    expect(gist('\n  \n')).toBe('');
  });

  it('skips stack frames and the node version banner, and trims', () => {
    expect(gist('Error: boom\n    at f (x.js:1:1)\n    at g (y.js:2:2)\n\nNode.js v20.11.0\n')).toBe('Error: boom');
    expect(gist('  plain  \n    at f (x.js:1:1)\n')).toBe('plain');
    expect(gist('attempt one\n')).toBe('attempt one');
  });

  it('only a line that starts with the node banner, or a stack frame, is skipped', () => {
    expect(gist('one\nuses node.js v20 here')).toBe('uses node.js v20 here');
    expect(gist('one\nNode.js vNext')).toBe('Node.js vNext');
    expect(gist('one\nwhat a day')).toBe('what a day');
  });

  it('cuts a long line to 200 characters, ending with an ellipsis', () => {
    expect(gist(`error ${'x'.repeat(300)}`)).toBe(`error ${'x'.repeat(193)}…`);
    expect(gist(`error ${'x'.repeat(300)}`)).toHaveLength(200);
    const exact = `error ${'y'.repeat(194)}`;
    expect(gist(exact)).toBe(exact);
  });
});

describe('laneDir and resultPath', () => {
  it('put each lane under lanes/<lane> of the workspace, its result in result.json', () => {
    expect(laneDir('/ws', 'core')).toBe('/ws/lanes/core');
    expect(resultPath('/ws', 'core')).toBe('/ws/lanes/core/result.json');
  });
});

describe('prBody', () => {
  const v = validateFleetFile(
    { name: 'node20', directive: 'Require Node 20.\nUpdate the engines field.\n', run: 'true', targets: [{ repo: './svc', lane: 'svc' }] },
    'fleet.yml',
  );
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const fleet = v.fleet;
  const lane = fleet.lanes[0]!;
  const ctx: LaneContext = {
    fleet_id: 'fleet-1',
    file: fleet.file,
    forge: new LocalForge({ baseDir: '/nowhere' }),
    workspace: localWorkspace,
    exec: localExecutor,
    clock: systemClock,
    root: '/nowhere',
    dryRun: false,
    env: {},
    onUpdate: () => undefined,
  };
  const record = (files: string[]) => ({ changed_files: files }) as LaneRecord;

  it('carries the marker, the fleet and lane, the directive quoted line by line, and the files', () => {
    expect(prBody(ctx, lane, record(['package.json', 'src/a b.ts']))).toBe(
      [
        '<!-- fleet:node20:svc -->',
        'This change was made by the Fleet **node20** (lane `svc`).',
        '',
        '**Directive**',
        '',
        '> Require Node 20.',
        '> Update the engines field.',
        '',
        '**Files changed** (2)',
        '',
        '- `package.json`',
        '- `src/a b.ts`',
      ].join('\n'),
    );
  });

  it('lists at most 50 files, then says how many more', () => {
    const files = (n: number) => Array.from({ length: n }, (_, i) => `f${i}.txt`);
    const fifty = prBody(ctx, lane, record(files(50)));
    expect(fifty).toContain('**Files changed** (50)');
    expect(fifty.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(50);
    expect(fifty).not.toContain('more');
    const many = prBody(ctx, lane, record(files(53)));
    expect(many).toContain('**Files changed** (53)');
    expect(many.split('\n').filter((l) => l.startsWith('- `'))).toHaveLength(50);
    expect(many.endsWith('- `f49.txt`\n- … and 3 more')).toBe(true);
  });
});
