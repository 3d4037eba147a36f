#!/usr/bin/env node
/**
 * `npm run mutate -- <folder|file>...`: mutation testing, one source folder (core, steps, actions, github) or a
 * few of its files at a time, each against the tests that exercise that folder. With no argument, every folder
 * in turn. Options go to Stryker (e.g. `--concurrency 2` or `--concurrency=2`).
 *
 * Runs are incremental: reports/mutation/<name>-incremental.json keeps each mutant's verdict, and the next run
 * tests again only the mutants whose code or covering tests changed. Delete it for a run from scratch.
 */
import { spawnSync } from 'node:child_process';

/**
 * For each folder: the sources mutated by default and the tests that cover them. The workflow-runner end-to-end
 * suites (test/actions-e2e, test/actions-runner) are never run: they drive the same code as the faster tests here
 * through a simulated runner and take minutes per mutant. Left out of the default globs, with why:
 * - src/actions/index.ts and env-defaults.ts: the entrypoint's side effects at import (covered end to end only);
 * - src/actions/artifact-store.ts: needs the emulated Actions results service (test/actions-services, slow).
 */
const FOLDERS = {
  core: { mutate: ['src/core/**/*.ts'], tests: ['test/core'] },
  actions: { mutate: ['src/actions/main.ts', 'src/actions/settings.ts', 'src/actions/deps.ts'], tests: ['test/entrypoints'] },
  steps: { mutate: ['src/steps/**/*.ts'], tests: ['test/steps', 'test/entrypoints', 'test/integration'] },
  github: { mutate: ['src/github/**/*.ts'], tests: ['test/github'] },
  // Not a folder: the lane and the one-process driver (what src/steps/run.ts held: the driver, the lane-admission
  // rule, the run's end) against the fast tests of test/steps alone (real git, the GitHub emulator; about a second a
  // test), without the CLI suites of test/integration that take minutes per mutant.
  // `npm run mutate -- steps-unit src/steps/lane/attempts.ts` names the files; alone, it runs them all.
  'steps-unit': {
    src: 'steps',
    mutate: ['src/steps/lane/**/*.ts', 'src/steps/drivers/process*.ts', 'src/steps/admission.ts', 'src/steps/outcome.ts', 'src/core/admission.ts'],
    tests: ['test/steps'],
  },
};

const args = process.argv.slice(2);
// Names first, then Stryker's options with their values: `--concurrency 1` must not read "1" as a folder.
const firstOption = args.findIndex((a) => a.startsWith('-'));
const names = firstOption < 0 ? args : args.slice(0, firstOption);
const extra = firstOption < 0 ? [] : args.slice(firstOption).filter((a, i) => i > 0 || a !== '--');

/**
 * A folder name, or a file under src/<folder>/: the runs to make, each with its globs and a report name. A
 * selection named just before files (`steps-unit src/steps/lane/attempts.ts`) runs those files against its own tests.
 */
function runsFor(list) {
  const runs = [];
  const problems = [];
  const files = new Map();
  const clean = (raw) => raw.replace(/^\.\//, '').replace(/\/$/, '');
  let selection = null;
  for (const [i, raw] of list.entries()) {
    const name = clean(raw);
    const folder = name.replace(/^src\//, '');
    if (folder in FOLDERS) {
      const next = list[i + 1] === undefined ? '' : clean(list[i + 1]);
      if (next.startsWith('src/')) selection = folder;
      else runs.push({ folder, globs: FOLDERS[folder].mutate, report: folder });
      continue;
    }
    const m = /^src\/(\w+)\/[\w./-]+\.ts$/.exec(name);
    const chosen = m && selection && (FOLDERS[selection].src ?? selection) === m[1] ? selection : m?.[1];
    if (m && chosen in FOLDERS) files.set(chosen, [...(files.get(chosen) ?? []), name]);
    else problems.push(`"${raw}" is neither a folder (${Object.keys(FOLDERS).join(', ')}) nor a file under one of them`);
  }
  for (const [folder, globs] of files) {
    const report = `${folder}-${globs.map((g) => g.split('/').pop().replace(/\.ts$/, '')).join('-')}`;
    runs.push({ folder, globs, report });
  }
  return { runs, problems };
}

const { runs, problems } = runsFor(names.length > 0 ? names : Object.keys(FOLDERS).filter((k) => !FOLDERS[k].src));
if (problems.length > 0) {
  for (const p of problems) console.error(`mutate: ${p}`);
  process.exit(2);
}

let status = 0;
for (const run of runs) {
  console.log(`\n== mutation testing ${run.globs.join(', ')} against ${FOLDERS[run.folder].tests.join(', ')}`);
  const r = spawnSync('npx', ['stryker', 'run', 'stryker.config.mjs', ...extra], {
    stdio: 'inherit',
    env: {
      ...process.env,
      FLEET_MUTATE: run.report,
      FLEET_MUTATE_GLOBS: run.globs.join(','),
      FLEET_MUTATE_TESTS: FOLDERS[run.folder].tests.join(','),
    },
  });
  status ||= r.status ?? 1;
}
process.exit(status);
