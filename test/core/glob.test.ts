import { describe, expect, it } from 'vitest';
import { globProblem, globsOverlap, matchesAny, matchesGlob, scopesOverlap } from '../../src/core/glob.js';

describe('globProblem', () => {
  it.each(['src/**', '**', '*', '**/*.ts', '*.{ts,js}', 'docs/**/*.md', 'package.json', '.github/**', 'a/[abc].ts', '\\[literal\\].txt', 'src/*/index.ts'])(
    'accepts %s',
    (g) => {
      expect(globProblem(g)).toBeUndefined();
    },
  );

  it('rejects an empty or blank glob', () => {
    expect(globProblem('')).toBe('a glob cannot be empty');
    expect(globProblem('   ')).toBe('a glob cannot be empty');
  });

  it('rejects an absolute glob', () => {
    expect(globProblem('/src/**')).toMatch(/is absolute.*drop the leading \//);
  });

  it('rejects a negation and points at never:', () => {
    expect(globProblem('!src/**')).toMatch(/negation.*never:/);
  });

  it('rejects .. segments but not dots inside names', () => {
    expect(globProblem('../other/**')).toMatch(/climbs out/);
    expect(globProblem('src/../../x')).toMatch(/climbs out/);
    expect(globProblem('src/..hidden/**')).toBeUndefined();
    expect(globProblem('a..b')).toBeUndefined();
  });

  it('rejects an unclosed [', () => {
    expect(globProblem('src/[ab.ts')).toMatch(/unclosed \[/);
  });

  it('rejects unbalanced braces', () => {
    expect(globProblem('src/*.{ts,js')).toMatch(/unbalanced \{ \}/);
    expect(globProblem('src/*.ts}')).toMatch(/unbalanced \{ \}/);
  });

  it('does not count escaped brackets or braces', () => {
    expect(globProblem('a\\[b')).toBeUndefined();
    expect(globProblem('a\\{b')).toBeUndefined();
  });

  it('rejects a leading ./, which would match nothing', () => {
    expect(matchesGlob('src/a.ts', './src/**')).toBe(false);
    expect(globProblem('./src/**')).toMatch(/starts with \.\/.*drop the \.\//);
  });

  it('rejects a trailing /, which would match nothing, and suggests /**', () => {
    expect(matchesGlob('docs/a.md', 'docs/')).toBe(false);
    expect(globProblem('docs/')).toMatch(/ends with \/.*docs\/\*\*/);
  });

  it('quotes the glob in its message', () => {
    expect(globProblem('/abs')).toContain('"/abs"');
  });
});

describe('matchesGlob', () => {
  it('** spans directories and matches the root', () => {
    expect(matchesGlob('a.ts', '**/*.ts')).toBe(true);
    expect(matchesGlob('src/a.ts', '**/*.ts')).toBe(true);
    expect(matchesGlob('src/deep/a.ts', '**/*.ts')).toBe(true);
    expect(matchesGlob('src/a.js', '**/*.ts')).toBe(false);
  });

  it('* stays in one directory', () => {
    expect(matchesGlob('a.ts', '*.ts')).toBe(true);
    expect(matchesGlob('src/a.ts', '*.ts')).toBe(false);
  });

  it('dir/** matches what is below the directory', () => {
    expect(matchesGlob('docs/a.md', 'docs/**')).toBe(true);
    expect(matchesGlob('docs/x/y/z.png', 'docs/**')).toBe(true);
    expect(matchesGlob('mydocs/a.md', 'docs/**')).toBe(false);
  });

  it('includes dotfiles', () => {
    expect(matchesGlob('.env', '*')).toBe(true);
    expect(matchesGlob('.github/workflows/ci.yml', '**/*.yml')).toBe(true);
    expect(matchesGlob('src/.eslintrc.json', 'src/**')).toBe(true);
  });

  it('is case-sensitive', () => {
    expect(matchesGlob('README.md', 'readme.md')).toBe(false);
    expect(matchesGlob('README.md', 'README.md')).toBe(true);
  });

  it('does not match by basename alone', () => {
    expect(matchesGlob('sub/package.json', 'package.json')).toBe(false);
    expect(matchesGlob('sub/package.json', '**/package.json')).toBe(true);
    expect(matchesGlob('package.json', '**/package.json')).toBe(true);
  });

  it('expands braces and character classes', () => {
    expect(matchesGlob('src/a.js', 'src/*.{ts,js}')).toBe(true);
    expect(matchesGlob('src/b.ts', 'src/[ab].ts')).toBe(true);
    expect(matchesGlob('src/c.ts', 'src/[ab].ts')).toBe(false);
  });

  it('treats # and a leading ! literally (no comments, no negation)', () => {
    expect(matchesGlob('#notes', '#notes')).toBe(true);
    expect(matchesGlob('!x', '!x')).toBe(true);
    expect(matchesGlob('y', '!x')).toBe(false);
  });

  it('gives the same answer on repeated calls (cached)', () => {
    for (let i = 0; i < 3; i++) expect(matchesGlob('src/a.ts', 'src/**')).toBe(true);
  });
});

describe('matchesAny', () => {
  it('is true when any pattern matches', () => {
    expect(matchesAny('docs/a.md', ['src/**', 'docs/**'])).toBe(true);
    expect(matchesAny('lib/a.md', ['src/**', 'docs/**'])).toBe(false);
  });

  it('is false for no patterns', () => {
    expect(matchesAny('a', [])).toBe(false);
  });
});

describe('globsOverlap', () => {
  it('is symmetric on a range of pairs', () => {
    const pairs: [string, string][] = [
      ['src/**', 'src/a.ts'],
      ['src/*.ts', 'src/*.js'],
      ['**/*.md', 'docs/**'],
      ['a*', 'b*'],
      ['{src,lib}/**', 'lib/x'],
      ['**', 'x/y/z'],
      ['src/**', 'test/**'],
    ];
    for (const [a, b] of pairs) expect(globsOverlap(a, b), `${a} ~ ${b}`).toBe(globsOverlap(b, a));
  });

  it('is true for identical globs', () => {
    expect(globsOverlap('src/**', 'src/**')).toBe(true);
    expect(globsOverlap('package.json', 'package.json')).toBe(true);
  });

  it('is false for different literal paths', () => {
    expect(globsOverlap('package.json', 'package-lock.json')).toBe(false);
    expect(globsOverlap('a/b', 'a/c')).toBe(false);
    expect(globsOverlap('a/b', 'a/b/c')).toBe(false);
  });

  it('is false for disjoint directories', () => {
    expect(globsOverlap('src/**', 'test/**')).toBe(false);
    expect(globsOverlap('packages/a/**', 'packages/b/**')).toBe(false);
  });

  it('is true when a directory glob contains a path', () => {
    expect(globsOverlap('src/**', 'src/a.ts')).toBe(true);
    expect(globsOverlap('src/**', 'src/deep/er/a.ts')).toBe(true);
    expect(globsOverlap('src/**', 'lib/a.ts')).toBe(false);
  });

  it('handles ** at the start and in the middle', () => {
    expect(globsOverlap('**/*.md', 'docs/**')).toBe(true);
    expect(globsOverlap('**/*.md', 'README.md')).toBe(true);
    expect(globsOverlap('**/*.md', 'src/a.ts')).toBe(false);
    expect(globsOverlap('src/**/index.ts', 'src/a/b/index.ts')).toBe(true);
    expect(globsOverlap('src/**/index.ts', 'src/a/b/main.ts')).toBe(false);
    expect(globsOverlap('**', 'anything/at/all')).toBe(true);
  });

  it('keeps * within one segment', () => {
    expect(globsOverlap('*.ts', 'src/a.ts')).toBe(false);
    expect(globsOverlap('*.ts', 'a.ts')).toBe(true);
    expect(globsOverlap('src/*', 'src/a/b')).toBe(false);
  });

  it('compares extensions of two wildcards', () => {
    expect(globsOverlap('src/*.ts', 'src/*.js')).toBe(false);
    expect(globsOverlap('src/*.ts', 'src/*.test.ts')).toBe(true);
    expect(globsOverlap('src/a*', 'src/b*')).toBe(false);
    expect(globsOverlap('src/ab*', 'src/a*')).toBe(true);
    expect(globsOverlap('src/a*b', 'src/*c')).toBe(false);
    expect(globsOverlap('src/ab*', 'src/*b')).toBe(true); // "ab" matches both
  });

  it('compares each alternative of a brace set', () => {
    expect(globsOverlap('{src,lib}/**', 'lib/x')).toBe(true);
    expect(globsOverlap('{src,lib}/**', 'test/x')).toBe(false);
    expect(globsOverlap('src/*.{ts,js}', 'src/*.js')).toBe(true);
    expect(globsOverlap('src/*.{ts,js}', 'src/*.md')).toBe(false);
  });

  it('uses character classes against literals', () => {
    expect(globsOverlap('src/[ab].ts', 'src/a.ts')).toBe(true);
    expect(globsOverlap('src/[ab].ts', 'src/c.ts')).toBe(false);
  });

  it('includes dotfiles', () => {
    expect(globsOverlap('*', '.env')).toBe(true);
    expect(globsOverlap('**', '.github/workflows/ci.yml')).toBe(true);
  });

  it('says yes when unsure (extglobs)', () => {
    expect(globsOverlap('@(a|b)', '+(c|d)')).toBe(true);
  });

  it('agrees with matching: whenever a path matches both, they overlap', () => {
    const globs = ['src/**', '**/*.ts', '*.md', 'docs/**', 'src/*.test.ts', '{src,test}/**/*.ts', 'package.json', '**/package.json', 'src/[ab]*.ts'];
    const paths = ['src/a.ts', 'src/b.test.ts', 'README.md', 'docs/x.md', 'test/deep/c.ts', 'package.json', 'sub/package.json', 'a.ts'];
    for (const a of globs) {
      for (const b of globs) {
        if (paths.some((p) => matchesGlob(p, a) && matchesGlob(p, b))) expect(globsOverlap(a, b), `${a} ~ ${b}`).toBe(true);
      }
    }
  });
});

describe('scopesOverlap', () => {
  it('treats an empty list as the whole repository', () => {
    expect(scopesOverlap([], [])).toEqual(['**', '**']);
    expect(scopesOverlap([], ['src/**'])).toEqual(['**', 'src/**']);
    expect(scopesOverlap(['docs/**'], [])).toEqual(['docs/**', '**']);
  });

  it('returns undefined for disjoint scopes', () => {
    expect(scopesOverlap(['src/**'], ['docs/**'])).toBeUndefined();
    expect(scopesOverlap(['src/**', 'package.json'], ['docs/**', 'README.md'])).toBeUndefined();
  });

  it('returns the first overlapping pair', () => {
    expect(scopesOverlap(['src/**', 'docs/**'], ['test/**', 'docs/a.md'])).toEqual(['docs/**', 'docs/a.md']);
    expect(scopesOverlap(['a/**', 'b/**'], ['b/x', 'a/x'])).toEqual(['a/**', 'a/x']);
  });
});

describe('two wildcards in one segment', () => {
  it('overlap when one literal start extends the other, in either order', () => {
    expect(globsOverlap('a*', 'ab*')).toBe(true);
    expect(globsOverlap('ab*', 'a*')).toBe(true);
    expect(globsOverlap('*.ts', '*x.ts')).toBe(true);
    expect(globsOverlap('*x.ts', '*.ts')).toBe(true);
  });

  it('do not overlap when their literal starts or ends differ', () => {
    expect(globsOverlap('ab*', 'ac*')).toBe(false);
    expect(globsOverlap('x*.ts', 'xy*.js')).toBe(false);
  });
});

describe('globProblem and brackets', () => {
  it('accepts a ] that closes a class holding a [ (a[[b]] is a class, then a literal ])', () => {
    expect(globProblem('a[[b]]')).toBeUndefined();
    expect(globProblem('src/[[]x]/*.ts')).toBeUndefined();
  });
});
