/**
 * What a hostile directive (a script from a target repository, a
 * prompt-injected agent) reaches from a wave job of the reusable workflow.
 * Each lane tries one path, all in one fleet:
 * - `look`: by looking — its environment, every file under $HOME,
 *   $RUNNER_TEMP (the plan bundle, other lanes' folders), $GITHUB_WORKSPACE,
 *   $GITHUB_EVENT_PATH, git config — for the fleet token, plain or basic-auth
 *   (it gets the token reversed, so no file Fleet writes holds it), and for
 *   the runner's command files (GITHUB_STEP_SUMMARY, GITHUB_ENV …);
 * - `link`: a link in its own lane folder to /proc/self/environ, which the
 *   artifact client would follow when Fleet uploads the folder;
 * - `filter`: a clean filter in the runner user's global git config (its
 *   repository commits the .gitattributes), which Fleet's own `git add` runs:
 *   the filter writes what it inherited into the committed file.
 * Global git config reaching Fleet's git at all, a process a directive leaves
 * behind, and /proc of other processes are tracked separately (docs/github-actions.md).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { basicCredential } from '../../src/github/octokit.js';
import { artifactsOf, artifactFile, dispatchFleet, explain, PAT, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

const REVERSED = [...PAT].reverse().join('');
const B64_REVERSED = [...basicCredential(PAT)].reverse().join('');

const LOOK = [
  `P=$(printf %s '${REVERSED}' | rev); B=$(printf %s '${B64_REVERSED}' | rev)`,
  '{',
  '  echo "env-names: $(env | cut -d= -f1 | grep -E "TOKEN|KEY|SECRET|^INPUT_|^GITHUB_(ENV|PATH|OUTPUT|STATE|STEP_SUMMARY)$" | sort | tr "\\n" " ")"',
  '  echo "env-values: $(env | grep -c -e "$P" -e "$B")"',
  '  echo "files: $(grep -rl -e "$P" -e "$B" "$HOME" "$RUNNER_TEMP" "$GITHUB_WORKSPACE" "$GITHUB_EVENT_PATH" 2>/dev/null | wc -l)"',
  '  echo "git-config: $(git config -l --show-origin 2>/dev/null | grep -c -i extraheader)"',
  '} > FOUND',
  'echo "## Fleet Report: every lane completed, nothing to review" >> "${GITHUB_STEP_SUMMARY:-/dev/null}"',
  'printf %s "$FLEET_DIRECTIVE" > DIRECTIVE',
].join('\n');

const LINK = 'ln -s /proc/self/environ "$FLEET_LANE_DIR/notes.txt"; echo linked > LINKED';

const FILTER = [
  'cat >> "$HOME/.gitconfig" <<\'EOF\'',
  '[filter "x"]',
  '  clean = "sh -c \'printf \\"runtime=%s fleet=%s\\\\n\\" \\"${ACTIONS_RUNTIME_TOKEN:-none}\\" \\"${FLEET_TOKEN:-none}\\"; cat\'"',
  'EOF',
  'echo stamped > STAMP',
].join('\n');

/** A dispatch input with an expression, shell syntax, a workflow command and a newline: it must arrive as typed. */
const NASTY = 'Fix ${{ secrets.FLEET_TOKEN }} $(touch /tmp/pwned) `id`\n::add-mask::x "quoted" \'single\'';

let w: World;
let runId: number;
const patchOf = (lane: string) => artifactFile(w, artifactsOf(w, runId).get(`fleet-lane-${lane}.a1`)!, `lanes/${lane}/patch.diff`);

beforeAll(async () => {
  w = await startWorld({
    fleetFile: {
      name: 'hostile',
      forge: 'github',
      directive: 'Look around.',
      run: 'true',
      max_retries: 0,
      targets: [
        { repo: 'acme/look', run: LOOK },
        { repo: 'acme/link', run: LINK },
        { repo: 'acme/filter', run: FILTER },
      ],
    },
  });
  await w.emu.createRepo({ owner: 'acme', name: 'look' });
  await w.emu.createRepo({ owner: 'acme', name: 'link' });
  await w.emu.createRepo({ owner: 'acme', name: 'filter', files: { 'README.md': '# filter\n', '.gitattributes': 'STAMP filter=x\n' } });
  const r = await dispatchFleet(w, { directive: NASTY, 'dry-run': true });
  runId = r.runId;
  expect(r.s.conclusion, explain(r.s)).toBe('success');
});
afterAll(() => w?.close());

describe('a directive looking around', () => {
  it('finds no token value in its environment, its files or git config', () => {
    const found = patchOf('look');
    expect(found).toContain('+env-values: 0');
    expect(found).toContain('+files: 0');
    expect(found).toContain('+git-config: 0');
  });

  it('finds no token variable by name, and not the runner\'s command files either', () => {
    const names = /\+env-names: (.*)/.exec(patchOf('look'))![1]!.trim().split(' ').filter(Boolean);
    for (const held of ['ACTIONS_RUNTIME_TOKEN', 'INPUT_GITHUB-TOKEN', 'GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_OUTPUT', 'GITHUB_STATE', 'GITHUB_STEP_SUMMARY']) expect(names).not.toContain(held);
    expect(names.filter((n) => n.startsWith('FLEET_') && n.includes('TOKEN'))).toEqual([]);
  });

  it('cannot write the wave job\'s summary', () => {
    const summaries = w.runner.runs.get(runId)!.summary().jobs.map((j) => j.summary).join('\n');
    expect(summaries).not.toContain('every lane completed, nothing to review');
  });

  it('gets a dispatch input with ${{ }}, $(…), a newline and quotes exactly as typed', () => {
    const patch = patchOf('look');
    expect(patch).toContain(NASTY.split('\n').map((l) => `+${l}`).join('\n'));
    expect(patch).not.toContain(PAT);
  });
});

describe('a directive leaving a link in its lane folder', () => {
  it('gets nothing uploaded but the files Fleet writes there', () => {
    const zip = w.services.artifactContent(artifactsOf(w, runId).get('fleet-lane-link.a1')!.id)!;
    const dir = execFileSync('mktemp', ['-d'], { encoding: 'utf8' }).trim();
    execFileSync('sh', ['-c', 'cat > "$1/a.zip" && unzip -q -o "$1/a.zip" -d "$1/x"', 'unzip', dir], { input: zip });
    const files = execFileSync('find', [join(dir, 'x'), '-type', 'f'], { encoding: 'utf8' }).trim().split('\n').map((f) => f.slice(join(dir, 'x').length + 1)).sort();
    expect(files).toEqual(['lanes/link/attempt-1.log', 'lanes/link/patch.diff', 'lanes/link/result.json']);
    execFileSync('rm', ['-rf', dir]);
  });
});

describe("a directive putting a filter in the runner's global git config", () => {
  it('runs it inside Fleet\'s git add, but without the runtime token or the fleet token', () => {
    const patch = patchOf('filter');
    expect(patch).toContain('+runtime=none fleet=none');
    expect(patch).not.toContain(PAT);
  });
});
