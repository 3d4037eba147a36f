import { describe, expect, it } from 'vitest';
import { checkFence, isGitPath, ownsOnlyWorkflows } from '../../src/core/fence.js';

describe('checkFence', () => {
  it('passes files inside owns and outside never', () => {
    const v = checkFence(['src/a.ts', 'src/lib/b.ts'], ['src/**'], ['src/generated/**']);
    expect(v).toEqual({ ok: true, outside_owns: [], in_never: [], message: undefined });
  });

  it('passes an empty change', () => {
    expect(checkFence([], ['src/**'], ['secrets/**']).ok).toBe(true);
  });

  it('treats empty owns as the whole repository', () => {
    const v = checkFence(['README.md', 'deep/nested/file.txt', '.github/workflows/ci.yml'], [], []);
    expect(v.ok).toBe(true);
    expect(v.outside_owns).toEqual([]);
  });

  it('reports files outside owns', () => {
    const v = checkFence(['src/a.ts', 'a.txt', 'docs/b.md'], ['src/**'], []);
    expect(v.ok).toBe(false);
    expect(v.outside_owns).toEqual(['a.txt', 'docs/b.md']);
    expect(v.in_never).toEqual([]);
    expect(v.message).toBe('2 files outside owns [src/**]: a.txt, docs/b.md');
  });

  it('accepts a file matching any one of several owns globs', () => {
    const v = checkFence(['src/a.ts', 'package.json', 'b.md'], ['src/**', 'package.json'], []);
    expect(v.outside_owns).toEqual(['b.md']);
    expect(v.message).toBe('1 file outside owns [src/**, package.json]: b.md');
  });

  it('reports files in never, even inside owns', () => {
    const v = checkFence(['src/a.ts', 'src/secrets/k'], ['src/**'], ['**/secrets/**']);
    expect(v.ok).toBe(false);
    expect(v.outside_owns).toEqual([]);
    expect(v.in_never).toEqual(['src/secrets/k']);
    expect(v.message).toBe('1 file in never [**/secrets/**]: src/secrets/k');
  });

  it('reports both kinds in one message', () => {
    const v = checkFence(['a.txt', 'b.txt', 'c.txt', 'secrets/k', 'src/ok.ts'], ['src/**'], ['secrets/**']);
    expect(v.outside_owns).toEqual(['a.txt', 'b.txt', 'c.txt', 'secrets/k']);
    expect(v.in_never).toEqual(['secrets/k']);
    expect(v.message).toBe('4 files outside owns [src/**]: a.txt, b.txt, c.txt, secrets/k; 1 file in never [secrets/**]: secrets/k');
  });

  it('names only the never rules that were broken', () => {
    const v = checkFence(['secrets/k'], [], ['dist/**', 'secrets/**', '*.pem']);
    expect(v.message).toBe('1 file in never [secrets/**]: secrets/k');
  });

  it('names at most 10 files and says how many more', () => {
    const files = Array.from({ length: 13 }, (_, i) => `f${String(i).padStart(2, '0')}.txt`);
    const v = checkFence(files, ['src/**'], []);
    expect(v.outside_owns).toHaveLength(13);
    expect(v.message).toBe(`13 files outside owns [src/**]: ${files.slice(0, 10).join(', ')}, … (3 more)`);
  });

  it('names exactly 10 files without an ellipsis', () => {
    const files = Array.from({ length: 10 }, (_, i) => `f${i}.txt`);
    expect(checkFence(files, ['src/**'], []).message).not.toContain('…');
  });

  it('always fences off the .git directory', () => {
    for (const path of ['.git', '.git/config', '.git/hooks/pre-commit']) {
      const v = checkFence([path], [], []);
      expect(v.ok, path).toBe(false);
      expect(v.in_never).toEqual([path]);
      expect(v.message).toBe(`1 file in never [.git]: ${path}`);
    }
  });

  it('fences off .git even when owns would allow it', () => {
    const v = checkFence(['.git/hooks/post-checkout'], ['**'], []);
    expect(v.outside_owns).toEqual([]);
    expect(v.in_never).toEqual(['.git/hooks/post-checkout']);
  });

  it('fences off a .git component anywhere, in any case', () => {
    expect(checkFence(['vendor/lib/.git/config'], [], []).in_never).toEqual(['vendor/lib/.git/config']);
    expect(checkFence(['.GIT/config'], [], []).ok).toBe(false);
  });

  it('does not confuse .gitignore, .github or foo.git with .git', () => {
    const v = checkFence(['.gitignore', '.github/workflows/ci.yml', '.gitattributes', 'mirror.git/HEAD', 'a/.gitkeep'], [], []);
    expect(v.ok).toBe(true);
    expect(isGitPath('.gitignore')).toBe(false);
    expect(isGitPath('.git')).toBe(true);
  });

  it('lists .git beside the user never rules when both are broken', () => {
    const v = checkFence(['.git/config', 'secrets/k'], [], ['secrets/**']);
    expect(v.in_never).toEqual(['.git/config', 'secrets/k']);
    expect(v.message).toBe('2 files in never [secrets/**, .git]: .git/config, secrets/k');
  });

  it('checks both paths of a rename', () => {
    // A file moved out of the fence: the old path is inside owns, the new one is not.
    const out = checkFence(['src/a.ts', 'lib/a.ts'], ['src/**'], []);
    expect(out.outside_owns).toEqual(['lib/a.ts']);
    // A file moved out of a never area is still a change to that area.
    const fromNever = checkFence(['config/prod.env', 'src/prod.env'], ['src/**', 'config/**'], ['config/*.env']);
    expect(fromNever.in_never).toEqual(['config/prod.env']);
  });

  it('lists a repeated path once', () => {
    const v = checkFence(['x.txt', 'x.txt'], ['src/**'], []);
    expect(v.outside_owns).toEqual(['x.txt']);
    expect(v.message).toBe('1 file outside owns [src/**]: x.txt');
  });

  it('matches dotfiles with wildcards', () => {
    expect(checkFence(['src/.env'], ['src/**'], []).ok).toBe(true);
    expect(checkFence(['.env'], [], ['*.env', '.env']).in_never).toEqual(['.env']);
  });

  it('is case-sensitive', () => {
    expect(checkFence(['SRC/a.ts'], ['src/**'], []).outside_owns).toEqual(['SRC/a.ts']);
  });
});

describe('ownsOnlyWorkflows', () => {
  it('holds for fences whose every glob lies under .github/workflows/ before its first wildcard', () => {
    expect(ownsOnlyWorkflows(['.github/workflows/**'])).toBe(true);
    expect(ownsOnlyWorkflows(['.github/workflows/*.yml', './.github/workflows/ci.yml'])).toBe(true);
  });
  it('does not for the whole repository, a wider glob, or one glob outside', () => {
    expect(ownsOnlyWorkflows([])).toBe(false);
    expect(ownsOnlyWorkflows(['.github/**'])).toBe(false);
    expect(ownsOnlyWorkflows(['.github/work*/**'])).toBe(false);
    expect(ownsOnlyWorkflows(['**/.github/workflows/**'])).toBe(false);
    expect(ownsOnlyWorkflows(['.github/workflows/**', 'README.md'])).toBe(false);
  });
});
