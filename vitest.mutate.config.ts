import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The vitest configuration Stryker runs (`npm run mutate`): the suite's own configuration (so
 * @actions/workflow-parser stays inlined), narrowed to the test folders that exercise the folder being mutated.
 * scripts/mutate.mjs names them in FLEET_MUTATE_TESTS. `include` is replaced, not merged: mergeConfig would
 * concatenate it with the suite's `test/**` and run everything.
 */
const folders = (process.env.FLEET_MUTATE_TESTS ?? 'test/core').split(',').filter(Boolean);

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: folders.map((f) => (f.endsWith('.ts') ? f : `${f.replace(/\/$/, '')}/**/*.test.ts`)),
  },
});
