// @ts-check
/**
 * Mutation testing (`npm run mutate -- <folder>`): Stryker changes one expression at a time in the folder's
 * sources and runs the tests that cover it; a mutant the tests do not notice is a behaviour nothing asserts.
 * scripts/mutate.mjs picks the folder (FLEET_MUTATE) and the test folders that exercise it (FLEET_MUTATE_TESTS,
 * read by vitest.mutate.config.ts); this file holds what every folder shares.
 */
/** The report's name: a folder (core), or a folder and files (core-plan-glob). */
const name = process.env.FLEET_MUTATE ?? 'core';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts', related: false },
  // Only the tests that execute a mutant run for it: without this each mutant would run the whole selection.
  coverageAnalysis: 'perTest',
  mutate: (process.env.FLEET_MUTATE_GLOBS ?? `src/${name}/**/*.ts`).split(','),
  // Two runners on two cores: each mutant's tests run in one vitest worker of its own.
  concurrency: 2,
  // Each verdict is kept; the next run tests only mutants whose code or covering tests changed.
  incremental: true,
  incrementalFile: `reports/mutation/${name}-incremental.json`,
  // A shared machine slows tests unevenly; a mutant is a timeout only when it is far past the dry run.
  timeoutMS: 20_000,
  timeoutFactor: 2,
  dryRunTimeoutMinutes: 15,
  // A mutant seen only while a module loads makes Stryker reload everything and run every test; they are few
  // here (constants and schemas, which the schema tests cover directly) and not worth an hour each run.
  ignoreStatic: true,
  // mutant-log (scripts/stryker-mutant-log.mjs): each verdict as it comes, in reports/mutation/<name>-mutants.jsonl,
  // so a run stopped before its end still says what it tested.
  appendPlugins: ['./scripts/stryker-mutant-log.mjs'],
  reporters: ['clear-text', 'progress', 'html', 'json', 'mutant-log'],
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  tempDirName: '.stryker-tmp',
  ignorePatterns: ['dist', 'bench', 'docs', 'reports', '.fleet-demo', '_workspace', 'coverage'],
  cleanTempDir: 'always',
  thresholds: { high: 85, low: 70, break: null },
};
