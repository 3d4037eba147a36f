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
 *   repository commits the .gitattributes), which Fleet's own `git add` would
 *   run: Fleet's git reads no user configuration, so it never runs;
 * - `proc`: every process's /proc/<pid>/environ and its ancestors' (where the
 *   kernel keeps the environment Fleet and the step were started with, token
 *   included), and a process left behind in a session of its own that keeps
 *   reading them while the job's later steps run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

/** Where the process the `proc` lane leaves behind would write, on this machine: it must never be written. */
const LEFT_BEHIND = join(tmpdir(), `fleet-left-behind-${process.pid}-${Date.now()}`);

const PROC = [
  `P=$(printf %s '${REVERSED}' | rev); export P`,
  'seen() { tr "\\0" "\\n" < "$1" 2>/dev/null | grep -q -e "$P"; }',
  'all=0; for f in /proc/[0-9]*/environ; do seen "$f" && all=$((all+1)); done',
  'up=0; p=$$; while [ "$p" -gt 1 ] 2>/dev/null; do seen /proc/$p/environ && up=$((up+1)); p=$(awk \'{print $4}\' /proc/$p/stat 2>/dev/null || echo 0); done',
  'echo "proc: $all ancestors: $up" > PROC',
  // Waits for the directive to end, then keeps reading: without isolation it does until the job ends.
  'D=$$; export D',
  `setsid sh -c 'while kill -0 "$D" 2>/dev/null; do sleep 0.05; done; while :; do for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f" 2>/dev/null | grep -q -e "$P" && echo FOUND; done; echo alive; sleep 0.2; done >> ${LEFT_BEHIND}' < /dev/null > /dev/null 2>&1 &`,
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
        { repo: 'acme/proc', run: PROC },
      ],
    },
  });
  await w.emu.createRepo({ owner: 'acme', name: 'look' });
  await w.emu.createRepo({ owner: 'acme', name: 'link' });
  await w.emu.createRepo({ owner: 'acme', name: 'proc' });
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

  it("finds no token variable by name, and not the runner's command files either", () => {
    const names = /\+env-names: (.*)/.exec(patchOf('look'))![1]!.trim().split(' ').filter(Boolean);
    for (const held of ['ACTIONS_RUNTIME_TOKEN', 'INPUT_GITHUB-TOKEN', 'GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_OUTPUT', 'GITHUB_STATE', 'GITHUB_STEP_SUMMARY'])
      expect(names).not.toContain(held);
    expect(names.filter((n) => n.startsWith('FLEET_') && n.includes('TOKEN'))).toEqual([]);
  });

  it("cannot write the wave job's summary", () => {
    const summaries = w.runner.runs
      .get(runId)!
      .summary()
      .jobs.map((j) => j.summary)
      .join('\n');
    expect(summaries).not.toContain('every lane completed, nothing to review');
  });

  it('gets a dispatch input with ${{ }}, $(…), a newline and quotes exactly as typed', () => {
    const patch = patchOf('look');
    expect(patch).toContain(
      NASTY.split('\n')
        .map((l) => `+${l}`)
        .join('\n'),
    );
    expect(patch).not.toContain(PAT);
  });
});

describe('a directive leaving a link in its lane folder', () => {
  it('gets nothing uploaded but the files Fleet writes there', () => {
    const zip = w.services.artifactContent(artifactsOf(w, runId).get('fleet-lane-link.a1')!.id)!;
    const dir = execFileSync('mktemp', ['-d'], { encoding: 'utf8' }).trim();
    execFileSync('sh', ['-c', 'cat > "$1/a.zip" && unzip -q -o "$1/a.zip" -d "$1/x"', 'unzip', dir], { input: zip });
    const files = execFileSync('find', [join(dir, 'x'), '-type', 'f'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((f) => f.slice(join(dir, 'x').length + 1))
      .sort();
    expect(files).toEqual(['lanes/link/attempt-1.log', 'lanes/link/patch.diff', 'lanes/link/result.json']);
    execFileSync('rm', ['-rf', dir]);
  });
});

describe("a directive putting a filter in the runner's global git config", () => {
  it("never gets it run: Fleet's git reads no configuration but its own", () => {
    const patch = patchOf('filter');
    expect(patch).toContain('+stamped');
    expect(patch).not.toContain('runtime=');
    expect(patch).not.toContain(PAT);
  });
});

describe('a directive reading other processes through /proc', () => {
  it("finds the token in no process's start-up environment, its ancestors' included", () => {
    expect(patchOf('proc')).toContain('+proc: 0 ancestors: 0');
  });

  it("leaves nothing running into the job's later steps", () => {
    expect(existsSync(LEFT_BEHIND), 'the process the directive left behind outlived its lane').toBe(false);
  });
});
