#!/usr/bin/env node
/**
 * `npm run mutate -- <folder|file>...`: mutation testing, one source folder (core, steps, actions, github) or a
 * few of its files at a time, each against the tests that exercise that folder. With no argument, every folder
 * in turn. Options after the names go to Stryker (e.g. `--concurrency 2`).
 *
 * Runs are incremental: reports/mutation/<name>-incremental.json keeps each mutant's verdict, and the next run
 * tests again only the mutants whose code or covering tests changed. Delete it for a run from scratch.
 */
import { spawnSync } from 'node:child_process';

/** For each mutated folder, the tests that cover it. The workflow-runner end-to-end suites (test/actions-e2e,
 * test/actions-runner) are left out: they drive the same code as test/github-flows and test/entrypoints through
 * a simulated runner and take minutes per mutant. */
const FOLDERS = {
  core: ['test/core'],
  actions: ['test/entrypoints', 'test/github-flows/actions.test.ts'],
  steps: ['test/integration', 'test/entrypoints'],
  github: ['test/github'],
};

const args = process.argv.slice(2);
const names = args.filter((a) => !a.startsWith('-'));
const extra = args.filter((a) => a.startsWith('-'));

/** A folder name, or a file under src/<folder>/: the runs to make, each with its globs and a report name. */
function runsFor(list) {
  const runs = [];
  const problems = [];
  const files = new Map();
  for (const raw of list) {
    const name = raw.replace(/^\.\//, '').replace(/\/$/, '');
    const folder = name.replace(/^src\//, '');
    if (folder in FOLDERS) {
      runs.push({ folder, globs: [`src/${folder}/**/*.ts`], report: folder });
      continue;
    }
    const m = /^src\/(\w+)\/[\w./-]+\.ts$/.exec(name);
    if (m && m[1] in FOLDERS) files.set(m[1], [...(files.get(m[1]) ?? []), name]);
    else problems.push(`"${raw}" is neither a folder (${Object.keys(FOLDERS).join(', ')}) nor a file under one of them`);
  }
  for (const [folder, globs] of files) {
    const report = `${folder}-${globs.map((g) => g.split('/').pop().replace(/\.ts$/, '')).join('-')}`;
    runs.push({ folder, globs, report });
  }
  return { runs, problems };
}

const { runs, problems } = runsFor(names.length > 0 ? names : Object.keys(FOLDERS));
if (problems.length > 0) {
  for (const p of problems) console.error(`mutate: ${p}`);
  process.exit(2);
}

let status = 0;
for (const run of runs) {
  console.log(`\n== mutation testing ${run.globs.join(', ')} against ${FOLDERS[run.folder].join(', ')}`);
  const r = spawnSync('npx', ['stryker', 'run', 'stryker.config.mjs', ...extra], {
    stdio: 'inherit',
    env: {
      ...process.env,
      FLEET_MUTATE: run.report,
      FLEET_MUTATE_GLOBS: run.globs.join(','),
      FLEET_MUTATE_TESTS: FOLDERS[run.folder].join(','),
    },
  });
  status ||= r.status ?? 1;
}
process.exit(status);
