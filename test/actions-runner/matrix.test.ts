// Matrix expansion, as GitHub documents it: https://docs.github.com/actions/how-tos/write-workflows/choose-what-workflows-do/run-job-variations
import { describe, expect, it } from 'vitest';
import { expandMatrix, legName, MATRIX_LIMIT } from '../support/actions-runner/matrix.js';

describe('matrix expansion (docs: "Using a matrix for your jobs")', () => {
  it('is the cartesian product of the vectors, in order', () => {
    expect(expandMatrix({ os: ['a', 'b'], node: [20, 22] }, 'x')).toEqual([
      { os: 'a', node: 20 },
      { os: 'a', node: 22 },
      { os: 'b', node: 20 },
      { os: 'b', node: 22 },
    ]);
  });

  it('"Expanding or adding matrix configurations": the docs example, include after exclude', () => {
    const combos = expandMatrix(
      {
        fruit: ['apple', 'pear'],
        animal: ['cat', 'dog'],
        include: [
          { color: 'green' },
          { color: 'pink', animal: 'cat' },
          { fruit: 'apple', shape: 'circle' },
          { fruit: 'banana' },
          { fruit: 'banana', animal: 'cat' },
        ],
      },
      'x',
    );
    expect(combos).toEqual([
      { fruit: 'apple', animal: 'cat', color: 'pink', shape: 'circle' },
      { fruit: 'apple', animal: 'dog', color: 'green', shape: 'circle' },
      { fruit: 'pear', animal: 'cat', color: 'pink' },
      { fruit: 'pear', animal: 'dog', color: 'green' },
      { fruit: 'banana' },
      { fruit: 'banana', animal: 'cat' },
    ]);
  });

  it('"Excluding matrix configurations": a partial match removes every combination it matches', () => {
    const combos = expandMatrix(
      {
        os: ['macos', 'windows'],
        version: [12, 14, 16],
        environment: ['staging', 'production'],
        exclude: [
          { os: 'macos', version: 12, environment: 'production' },
          { os: 'windows', version: 16 },
        ],
      },
      'x',
    );
    expect(combos).toHaveLength(12 - 1 - 2);
    expect(combos.some((c) => c.os === 'windows' && c.version === 16)).toBe(false);
  });

  it('an empty vector is an error, worded as GitHub reports it', () => {
    expect(() => expandMatrix({ shard: [] }, "'wave-1'. o/r/.github/workflows/f.yml@refs/heads/main")).toThrow(
      "Error when evaluating 'strategy' for job 'wave-1'. o/r/.github/workflows/f.yml@refs/heads/main: Matrix vector 'shard' does not contain any values",
    );
    expect(() => expandMatrix({}, "'x'")).toThrow('Matrix must define at least one vector');
  });

  it(`more than ${MATRIX_LIMIT} legs is an error ("A matrix will generate a maximum of 256 jobs per workflow run")`, () => {
    expect(expandMatrix({ i: Array.from({ length: 256 }, (_, i) => i) }, 'x')).toHaveLength(256);
    expect(() => expandMatrix({ i: Array.from({ length: 257 }, (_, i) => i) }, "'x'")).toThrow(/at most 256 jobs/);
  });

  it('names a leg without `name:` after its values: `job (a, 20)`', () => {
    expect(legName('test', { os: 'a', node: 20 })).toBe('test (a, 20)');
    expect(legName('test', {})).toBe('test');
  });
});
