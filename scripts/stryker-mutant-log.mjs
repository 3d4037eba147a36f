// @ts-check
/**
 * A Stryker reporter (`mutant-log`) that appends each mutant's verdict to reports/mutation/<name>-mutants.jsonl
 * as soon as it is known. Stryker writes its incremental file and its reports only when a run ends, so a run
 * stopped part-way (a deadline, a busy machine) leaves nothing else behind: this file says which mutants were
 * tested, with what verdict, and what each survivor is, while the run goes on and after it is stopped.
 * The first line is the plan: how many mutants the run has, and how many it reuses from the incremental file.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PluginKind, commonTokens, declareClassPlugin } from '@stryker-mutator/api/plugin';

class MutantLog {
  static inject = /** @type {const} */ ([commonTokens.options]);

  /** @param {import('@stryker-mutator/api/core').StrykerOptions} options */
  constructor(options) {
    this.file = path.join(path.dirname(options.incrementalFile), `${process.env.FLEET_MUTATE ?? 'mutation'}-mutants.jsonl`);
    mkdirSync(path.dirname(this.file), { recursive: true });
    writeFileSync(this.file, '');
  }

  /** @param {import('@stryker-mutator/api/report').MutationTestingPlanReadyEvent} event */
  onMutationTestingPlanReady(event) {
    const reused = event.mutantPlans.filter((p) => p.plan === 'EarlyResult').length;
    this.write({ plan: { mutants: event.mutantPlans.length, reused, toRun: event.mutantPlans.length - reused, at: new Date().toISOString() } });
  }

  /** @param {import('@stryker-mutator/api/core').MutantResult} m */
  onMutantTested(m) {
    this.write({
      id: m.id,
      file: m.fileName,
      line: m.location.start.line,
      column: m.location.start.column,
      mutator: m.mutatorName,
      replacement: m.replacement,
      status: m.status,
      killedBy: m.killedBy,
      tests: m.coveredBy?.length,
      at: new Date().toISOString(),
    });
  }

  /** @param {unknown} entry */
  write(entry) {
    appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
  }
}

export const strykerPlugins = [declareClassPlugin(PluginKind.Reporter, 'mutant-log', MutantLog)];
