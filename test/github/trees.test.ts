/**
 * The files that differ between two commits, read from the emulator's git
 * trees: whole (`recursive`) when GitHub lists a tree in full, and one level at
 * a time, only into folders whose sha differs, when it says `truncated`
 * (https://docs.github.com/en/rest/git/trees#get-a-tree: "If truncated is true
 * in the response then the number of items in the tree array exceeded our
 * maximum limit. If you need to fetch more items, use the non-recursive method
 * of fetching trees, and fetch one sub-tree at a time."). The emulator's limit
 * is lowered to reach the walk with a few files.
 */
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedPathsBetween } from '../../src/github/trees.js';
import { makeTempDir, removeDir, tgit } from '../support/repos.js';
import { harness, type Harness } from './helpers.js';

let h: Harness;
let tmp: string;
let base: string;
let head: string;
let empty: string;
/** Tree shas of folders that did not change between base and head. */
let unchanged: string[];

const TREES = '/repos/{owner}/{repo}/git/trees/{tree_sha}';

/** What changed from base to head, as git itself says (`--no-renames`: a rename is both paths). */
const EXPECTED = [
  'becomes-dir', // a file replaced by a folder
  'becomes-dir/z.txt',
  'fresh/f0.txt', // a folder added, too big to list whole on the walk
  'fresh/f1.txt',
  'fresh/f2.txt',
  'fresh/f3.txt',
  'gone/y.txt', // a folder removed
  'grow/g1.txt', // a folder listed whole before and truncated after, on the walk
  'grow/g2.txt',
  'grow/g3.txt',
  'lib/m.ts', // small folder (listed whole inside the walk): content, and mode only
  'lib/p.sh',
  'new/sub/n.txt', // a folder added
  'old-dir', // a folder replaced by a file
  'old-dir/x.txt',
  'run.sh', // mode only, at the root
  'src/a.ts', // changed
  'src/deep/d.ts', // deleted
  'src/deep/e.ts', // added
];

beforeAll(async () => {
  h = await harness();
  tmp = await makeTempDir('fleet-trees-');
  const files: Record<string, string> = {
    'README.md': '# t\n',
    'run.sh': 'echo run\n',
    'src/a.ts': 'a\n',
    'src/b.ts': 'b\n',
    'src/deep/c.ts': 'c\n',
    'src/deep/d.ts': 'd\n',
    'docs/guide.md': 'guide\n',
    'docs/more/faq.md': 'faq\n',
    'lib/m.ts': 'm\n',
    'lib/p.sh': 'p\n',
    'old-dir/x.txt': 'x\n',
    'becomes-dir': 'a file\n',
    'gone/y.txt': 'y\n',
    'grow/g0.txt': 'g0\n',
  };
  const created = await h.emu.createRepo({ owner: 'acme', name: 'trees', files });
  base = created.headSha!;
  // The head commit is pushed over git, as a lane pushes: a mode change needs a real working copy.
  const dir = path.join(tmp, 'work');
  await tgit(['clone', '--quiet', h.emu.gitUrl('acme', 'trees', { token: h.token }), dir]);
  const at = (p: string) => path.join(dir, p);
  await writeFile(at('src/a.ts'), 'a changed\n');
  await rm(at('src/deep/d.ts'));
  await writeFile(at('src/deep/e.ts'), 'e\n');
  await writeFile(at('lib/m.ts'), 'm changed\n');
  await chmod(at('lib/p.sh'), 0o755);
  await chmod(at('run.sh'), 0o755);
  await rm(at('old-dir'), { recursive: true });
  await writeFile(at('old-dir'), 'now a file\n');
  await rm(at('becomes-dir'));
  await mkdir(at('becomes-dir'));
  await writeFile(at('becomes-dir/z.txt'), 'z\n');
  await rm(at('gone'), { recursive: true });
  for (let i = 1; i <= 3; i++) await writeFile(at(`grow/g${i}.txt`), `g${i}\n`);
  await mkdir(at('fresh'));
  for (let i = 0; i <= 3; i++) await writeFile(at(`fresh/f${i}.txt`), `f${i}\n`);
  await mkdir(at('new/sub'), { recursive: true });
  await writeFile(at('new/sub/n.txt'), 'n\n');
  await tgit(['-c', 'core.fileMode=true', 'add', '-A'], { cwd: dir });
  await tgit(['commit', '--quiet', '-m', 'change'], { cwd: dir });
  head = (await tgit(['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim();
  await tgit(['commit', '--quiet', '--allow-empty', '-m', 'nothing'], { cwd: dir });
  empty = (await tgit(['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim();
  await tgit(['push', '--quiet', 'origin', 'HEAD:refs/heads/lane'], { cwd: dir });
  const diff = await tgit(['diff', '--no-renames', '--name-only', base, head], { cwd: dir });
  expect(diff.stdout.split('\n').filter(Boolean).sort()).toEqual(EXPECTED);
  unchanged = await Promise.all(['docs', 'docs/more'].map(async (p) => (await tgit(['rev-parse', `${head}:${p}`], { cwd: dir })).stdout.trim()));
});

afterAll(async () => {
  h.emu.assertNoViolations();
  await h.emu.close();
  await removeDir(tmp);
});

const diff = (from: string, to: string) => changedPathsBetween(h.octokit, from, to, { owner: 'acme', repo: 'trees' });

describe('changedPathsBetween', () => {
  it('lists what changed (content, mode, files and folders swapped, added, removed) from the two whole trees', async () => {
    h.emu.resetLog();
    expect(await diff(base, head)).toEqual(EXPECTED);
    // Two commits, two recursive trees.
    const trees = h.emu.find({ route: TREES });
    expect(trees.map((r) => new URLSearchParams(r.query).get('recursive'))).toEqual(['1', '1']);
    expect(h.emu.count({})).toBe(4);
    // Backwards, the same paths.
    expect(await diff(head, base)).toEqual(EXPECTED);
  });

  it('walks one level at a time when GitHub truncates a tree, never into a folder that did not change', async () => {
    h.emu.setTreeEntryLimit(3);
    try {
      h.emu.resetLog();
      expect(await diff(base, head)).toEqual(EXPECTED);
      const read = h.emu.find({ route: TREES }).map((r) => r.path.split('/').pop());
      for (const sha of unchanged) expect(read).not.toContain(sha);
      expect(await diff(head, base)).toEqual(EXPECTED);
    } finally {
      h.emu.setTreeEntryLimit(null);
    }
  });

  it('reads no tree at all for two commits with the same tree', async () => {
    h.emu.resetLog();
    expect(await diff(head, empty)).toEqual([]);
    expect(h.emu.count({ route: TREES })).toBe(0);
  });
});
