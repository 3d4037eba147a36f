/**
 * GitHub's documented limits on how many changed files it lists, which the
 * emulator keeps so Fleet's verification meets them in tests:
 * - compare: at most 300 files, on the first page only, whatever the paging
 *   (https://docs.github.com/en/rest/commits/commits#compare-two-commits);
 * - a commit: 300 files a page with Link headers, 3,000 in all
 *   (https://docs.github.com/en/rest/commits/commits#get-a-commit);
 * - a recursive git tree: 100,000 entries and 7 MB, then `truncated: true`
 *   (https://docs.github.com/en/rest/git/trees#get-a-tree).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api } from './helpers.js';

let emu: Emulator;
let base: string;
let head: string;
const N = 3100;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  const r = await emu.createRepo({ owner: 'acme', name: 'big', files: { 'README.md': '# big\n' } });
  base = r.headSha!;
  const files: Record<string, string> = {};
  for (let i = 0; i < N; i++) files[`d${i % 10}/f${i}.txt`] = `${i}\n`;
  head = await emu.commit({ owner: 'acme', repo: 'big', branch: 'many', files });
}, 60_000);

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
});

describe('listing limits', () => {
  it('compare lists 300 files, on the first page only', async () => {
    const r = await api(emu, 'GET', `/repos/acme/big/compare/${base}...${head}`);
    expect(r.status).toBe(200);
    expect(r.body.files).toHaveLength(300);
    const p2 = await api(emu, 'GET', `/repos/acme/big/compare/${base}...${head}?per_page=1&page=2`);
    expect(p2.body.files ?? []).toHaveLength(0);
  });

  it('a commit lists 300 files a page and 3,000 in all', async () => {
    const first = await api(emu, 'GET', `/repos/acme/big/commits/${head}`);
    expect(first.body.files).toHaveLength(300);
    expect(first.headers.get('link')).toMatch(/rel="next"/);
    const last = await api(emu, 'GET', `/repos/acme/big/commits/${head}?page=10`);
    expect(last.body.files).toHaveLength(300);
    const beyond = await api(emu, 'GET', `/repos/acme/big/commits/${head}?page=11`);
    expect(beyond.body.files).toHaveLength(0);
  });

  it('a recursive tree says truncated past its limit; one level is always whole', async () => {
    const commit = await api(emu, 'GET', `/repos/acme/big/git/commits/${head}`);
    expect(commit.body.parents.map((p: { sha: string }) => p.sha)).toEqual([base]);
    const tree = commit.body.tree.sha as string;
    const whole = await api(emu, 'GET', `/repos/acme/big/git/trees/${tree}?recursive=1`);
    expect(whole.body.truncated, JSON.stringify(whole.body).slice(0, 500)).toBe(false);
    expect(whole.body.tree.filter((e: { type: string }) => e.type === 'blob')).toHaveLength(N + 1);
    emu.setTreeEntryLimit(100);
    try {
      const cut = await api(emu, 'GET', `/repos/acme/big/git/trees/${tree}?recursive=1`);
      expect(cut.body.truncated).toBe(true);
      expect(cut.body.tree).toHaveLength(100);
      const level = await api(emu, 'GET', `/repos/acme/big/git/trees/${tree}`);
      expect(level.body.truncated).toBe(false);
      expect(level.body.tree.map((e: { path: string }) => e.path)).toEqual(['README.md', ...Array.from({ length: 10 }, (_, i) => `d${i}`)]);
    } finally {
      emu.setTreeEntryLimit(null);
    }
  });
});
