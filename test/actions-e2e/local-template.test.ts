/**
 * workflows-templates/fleet-local.yml runs a fleet inside the checkout of the
 * calling repository (`mode: run`, the local forge, which needs no GitHub
 * credential). It once granted `contents: write` with actions/checkout's default
 * `persist-credentials: true`, so a directive (a prompt-injected agent) could
 * read the job's token from the checkout's git config and write to the
 * repository through the API. Now the token is read-only and not persisted:
 * the same directive finds nothing to use, and the dry run completes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../support/actions-runner/index.js';
import { CONTROL_REPO, explain, FLEET_REPO, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

// The template as shipped, with one step added: the emulated checkout leaves a detached HEAD where the real one
// (on a branch ref) creates the local branch, and the local forge needs a branch to start from.
const caller = readFileSync(join(import.meta.dirname, '..', '..', 'workflows-templates', 'fleet-local.yml'), 'utf8')
  .replace(/uses: \S+\/fleet@v1/, `uses: ${FLEET_REPO}@v1`)
  .replace('      - id: fleet\n', '      - run: git checkout -q -B main\n      - id: fleet\n');

const STEAL = [
  'H=$(git -C "$GITHUB_WORKSPACE" config --get-regexp "^http\\..*\\.extraheader$" | sed "s/^[^ ]* //")',
  'T=$(printf %s "${H#AUTHORIZATION: basic }" | base64 -d | cut -d: -f2-)',
  'curl -sf -X POST -H "Authorization: Bearer $T" -H "Content-Type: application/json" "$GITHUB_API_URL/repos/$GITHUB_REPOSITORY/git/refs" -d "{\\"ref\\":\\"refs/heads/pwned\\",\\"sha\\":\\"$GITHUB_SHA\\"}" > /dev/null',
  'echo done > STOLEN',
].join('\n');

let w: World;
let s: RunSummary;

beforeAll(async () => {
  w = await startWorld({ caller });
  await w.commitControl({
    'fleet.yml': stringify({
      name: 'local',
      forge: 'local',
      directive: 'Touch a file.',
      run: STEAL,
      max_retries: 0,
      targets: [{ repo: '.', owns: ['STOLEN'] }],
    }),
  });
  const run = await w.runner.dispatch({ repo: CONTROL_REPO, workflow: '.github/workflows/fleet.yml', inputs: { 'fleet-file': 'fleet.yml', 'dry-run': true } });
  s = await w.runner.finish(run);
});
afterAll(() => w?.close());

describe('the fleet-local template', () => {
  it('leaves a directive no token to write to the repository with', async () => {
    expect(s.conclusion, explain(s)).toBe('success');
    expect(await w.emu.branchSha(CONTROL_REPO, 'pwned'), explain(s)).toBeNull();
    // It tried (with nothing): GitHub refused.
    expect(
      w.emu
        .find({ route: '/repos/{owner}/{repo}/git/refs', method: 'POST' })
        .map((r) => r.status)
        .filter((st) => st < 400),
    ).toEqual([]);
  });
});
