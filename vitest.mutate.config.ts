import { statSync } from 'node:fs';
import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import base from './vitest.config.js';

/**
 * The vitest configuration Stryker runs (`npm run mutate`): the suite's own configuration (so
 * @actions/workflow-parser stays inlined), narrowed to the test folders that exercise the folder being mutated.
 * scripts/mutate.mjs names them in FLEET_MUTATE_TESTS. `include` is replaced, not merged: mergeConfig would
 * concatenate it with the suite's `test/**` and run everything.
 */
const folders = (process.env.FLEET_MUTATE_TESTS ?? 'test/core').split(',').filter(Boolean);

/**
 * Test files in the order the folders are named (the fast unit folders first), smaller files first within one.
 * Stryker stops a mutant's run at its first failing test, so a mutant a unit test kills costs that test, not the
 * integration files vitest's own order (longest first) would run before it.
 */
class FastFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const rel = relative(process.cwd(), f.moduleId);
      const i = folders.findIndex((d) => rel === d || rel.startsWith(`${d.replace(/\/$/, '')}/`));
      return i < 0 ? folders.length : i;
    };
    const size = (f: TestSpecification) => {
      try {
        return statSync(f.moduleId).size;
      } catch {
        return 0;
      }
    };
    return [...files].sort((a, b) => rank(a) - rank(b) || size(a) - size(b));
  }
}

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: folders.map((f) => (f.endsWith('.ts') ? f : `${f.replace(/\/$/, '')}/**/*.test.ts`)),
    sequence: { sequencer: FastFirst },
  },
});
