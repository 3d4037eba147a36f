/**
 * `--only agents`: Fleet around the real Claude Code CLI (node_modules/.bin/claude, the version package.json pins)
 * talking to the model-API emulator (test/support/model-api/), every agent run one scripted edit: Read README.md,
 * Edit it, answer "Done.". `fleet run` is bin/fleet.js as a process of its own, with the environment the fleet()
 * helper of test/integration/real-claude.test.ts gives it (the real `claude` first on PATH, a fresh HOME, no system git
 * configuration, the emulator's URL and key), and nothing else of the bench's environment.
 *
 *   single lane   each repetition runs, in an order that alternates, a one-lane `fleet run` on a fresh bare
 *                 repository and the same CLI invocation alone (`claude -p <prompt> --output-format json
 *                 --permission-mode acceptEdits`) in a plain `git clone` of another fresh one, with the same
 *                 environment and the same scripted conversation. The prompt is the one Fleet wrote for its lane
 *                 (read from the workspace of an unmeasured warm-up run, which also brings the 200 MB CLI into the
 *                 page cache), so the CLI reads and says the same.
 *   32 lanes      one `fleet run` of 32 lanes at max_parallel 8, one emulator; each lane's conversation is keyed by
 *                 its repository's name, which Fleet's prompt names.
 *
 * Every run gets a conversation of its own (matched by a name no other run's prompt holds), and is checked: a
 * fleet's lanes must be completed with README.md changed, a bare run must exit 0 with the file edited, and each must
 * have had exactly the three scripted turns; a run that did less would look fast.
 * Wall time is spawn → exit; CPU the whole process tree's (floor.ts's measure(): the bench's children times).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { claudeEnv, startModelApi, workingDirectory, type Conversation, type MessagesRequest, type ModelApi } from '../../test/support/model-api/index.js';
import { createRepo } from '../../test/support/repos.js';
import { lane, readManifest, removeDir, runArgs, tempDir, writeFleetFile } from '../../test/integration/helpers.js';
import type { Manifest } from '../../src/core/model.js';
import { measure, type Measured } from './floor.js';

const README = '# bench\n';
const EDITED = '# bench\n\n## Support\n\nAsk in #help.\n';
const DIRECTIVE = 'Add a Support section to README.md.';

export interface AgentSingleRep {
  /** Which side ran first in this repetition. */
  first: 'fleet' | 'bare';
  fleet: Measured;
  bare: Measured;
  /** The fleet lane's own figures from its manifest: the agent run inside the lane, and the lane end to end. */
  lane_directive_ms: number;
  lane_total_ms: number;
}

export interface AgentsResult {
  claude_version: string;
  cli: string;
  isolation: { kind: string; detail: string } | null;
  single: AgentSingleRep[];
  fleet32: {
    lanes: number;
    parallel: number;
    run: Measured;
    /** Each lane end to end less its wait for a slot (total_ms − wait_ms: clone to push), in lane order. */
    lane_ms: number[];
    /** The agent run inside each lane (directive_ms): most of what a slot of the concurrency budget holds. */
    directive_ms: number[];
  };
}

/** The three scripted turns: Read README.md, Edit it, "Done."; paths absolute, as the model gives them. */
function oneEdit(name: string): Conversation {
  const at = (req: MessagesRequest) => `${workingDirectory(req)}/README.md`;
  return {
    name,
    match: name,
    turns: [
      (req) => ({ blocks: [{ tool: 'Read', input: { file_path: at(req) } }] }),
      (req) => ({ blocks: [{ tool: 'Edit', input: { file_path: at(req), old_string: README, new_string: EDITED } }] }),
      { blocks: [{ text: 'Done.' }] },
    ],
  };
}

/** The conversation went as scripted: turns 0, 1, 2 (a retried or missing request would change the work timed). */
function checkTurns(api: ModelApi, name: string): void {
  const turns = api.of(name).map((q) => q.turn);
  if (turns.join() !== '0,1,2') throw new Error(`agents bench: conversation ${name} took turns [${turns.join(', ')}], not [0, 1, 2]`);
}

export async function benchAgents(opts: {
  root: string;
  reps: number;
  lanes: number;
  parallel: number;
  keep: boolean;
  log: (s: string) => void;
}): Promise<AgentsResult> {
  const bin = join(opts.root, 'bin', 'fleet.js');
  const claude = join(opts.root, 'node_modules', '.bin', 'claude');
  const version = (JSON.parse(readFileSync(join(opts.root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[
    '@anthropic-ai/claude-code'
  ]!;
  // Open to every user (tempDir): as root, Fleet runs the agent as a lane user of its own.
  const dir = tempDir('fleet-bench-agents-');
  const api = await startModelApi();
  let runs = 0;
  /** A folder of its own per run (no spaces: the emulator reads the working directory out of the CLI's prompt), a fresh HOME, the fleet() helper's environment. */
  const fresh = (tag: string) => {
    const d = join(dir, `${++runs}-${tag.replace(/\W+/g, '-')}`);
    const home = join(d, 'home');
    mkdirSync(home, { recursive: true });
    return {
      d,
      env: { PATH: `${join(opts.root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`, HOME: home, GIT_CONFIG_NOSYSTEM: '1', ...claudeEnv(api) },
    };
  };

  /** `fleet run` over fresh repositories named `names`; checked lane by lane. */
  const fleetRun = async (tag: string, names: string[], parallel: number): Promise<Measured & { ws: string; manifest: Manifest }> => {
    const { d, env } = fresh(tag);
    await Promise.all(names.map((n) => createRepo(d, n, { 'README.md': README }, { clone: false })));
    for (const n of names) api.converse(oneEdit(n));
    const file = writeFleetFile(d, {
      name: 'agents',
      directive: DIRECTIVE,
      agent: { preset: 'claude', install: false },
      max_parallel: parallel,
      // A failed attempt retried would be timed as one lane: fail instead.
      max_retries: 0,
      targets: names.map((n) => ({ repo: `./${n}.git` })),
    });
    const ws = join(d, 'ws');
    const m = await measure(`fleet run (${tag})`, process.execPath, [bin, ...runArgs(file, ws)], { cwd: d, env });
    const manifest = readManifest(ws);
    const bad = manifest.lanes.filter((l) => l.status !== 'completed' || l.changed_files.join() !== 'README.md');
    if (bad.length || manifest.lanes.length !== names.length) {
      throw new Error(
        `agents bench: ${bad.length} of ${manifest.lanes.length} lanes of ${tag} did not end completed with README.md changed (${bad[0]?.lane} ${bad[0]?.status}: ${bad[0]?.error?.message ?? ''})`,
      );
    }
    for (const n of names) checkTurns(api, n);
    return { wall_ms: m.wall_ms, cpu_s: m.cpu_s, ws, manifest };
  };

  /** The same CLI invocation alone, in a plain clone, with `prompt`; checked by its result and the file it edited. */
  const bareRun = async (tag: string, name: string, prompt: string): Promise<Measured> => {
    const { d, env } = fresh(tag);
    const repo = await createRepo(d, name, { 'README.md': README });
    api.converse(oneEdit(name));
    const m = await measure(`claude (${tag})`, claude, ['-p', prompt, '--output-format', 'json', '--permission-mode', 'acceptEdits'], { cwd: repo.dir, env });
    // Its result is one JSON line on stdout (stderr shares the output here: the last line that is an object).
    const result = JSON.parse(
      m.output
        .trim()
        .split('\n')
        .findLast((l) => l.startsWith('{')) ?? '{}',
    ) as { is_error?: boolean };
    if (result.is_error !== false || readFileSync(join(repo.dir, 'README.md'), 'utf8') !== EDITED)
      throw new Error(`agents bench: the bare claude run ${tag} did not make its edit:\n${m.output.slice(-2000)}`);
    checkTurns(api, name);
    return { wall_ms: m.wall_ms, cpu_s: m.cpu_s };
  };

  try {
    // Warm-up, not measured: the page cache, and the prompt Fleet writes for a lane. The names of every single-lane
    // run have the same length (agent-solo-<2 characters><f or b>), so every prompt has the same length too.
    const solo = (r: number | 'wu', side: 'fleet' | 'bare') => `agent-solo-${typeof r === 'number' ? String(r).padStart(2, '0') : r}${side[0]}`;
    const warm = await fleetRun('warm-up', [solo('wu', 'fleet')], 1);
    const template = readFileSync(join(warm.ws, 'lanes', solo('wu', 'fleet'), 'prompt-1.md'), 'utf8');
    if (!template.includes(solo('wu', 'fleet')))
      throw new Error("agents bench: Fleet's prompt does not name the repository; the conversations cannot be told apart");
    const promptFor = (name: string) => template.replaceAll(solo('wu', 'fleet'), name);
    await bareRun('warm-up bare', solo('wu', 'bare'), promptFor(solo('wu', 'bare')));
    opts.log(`  warm-up: fleet ${(warm.wall_ms / 1000).toFixed(2)} s, then the bare CLI once`);

    const single: AgentSingleRep[] = [];
    for (let r = 0; r < opts.reps; r++) {
      // The order alternates, so a load spike or a warmer cache is not always the same side's.
      const first = r % 2 === 0 ? 'fleet' : 'bare';
      const names = { fleet: solo(r, 'fleet'), bare: solo(r, 'bare') };
      let fleet: Awaited<ReturnType<typeof fleetRun>> | undefined;
      let bare: Measured | undefined;
      for (const side of first === 'fleet' ? (['fleet', 'bare'] as const) : (['bare', 'fleet'] as const)) {
        if (side === 'fleet') fleet = await fleetRun(`rep ${r + 1} fleet`, [names.fleet], 1);
        else bare = await bareRun(`rep ${r + 1} bare`, names.bare, promptFor(names.bare));
      }
      const t = lane(fleet!.manifest, names.fleet).timings;
      single.push({
        first,
        fleet: { wall_ms: fleet!.wall_ms, cpu_s: fleet!.cpu_s },
        bare: bare!,
        lane_directive_ms: t.directive_ms ?? 0,
        lane_total_ms: t.total_ms ?? 0,
      });
      opts.log(
        `  agent lane rep ${r + 1}/${opts.reps} (${first} first): fleet ${fleet!.wall_ms.toFixed(0)} ms / ${fleet!.cpu_s ?? '?'} cpu-s ` +
          `(lane ${t.total_ms} ms, agent ${t.directive_ms} ms); bare claude ${bare!.wall_ms.toFixed(0)} ms / ${bare!.cpu_s ?? '?'} cpu-s; ` +
          `overhead ${(fleet!.wall_ms - bare!.wall_ms).toFixed(0)} ms`,
      );
    }

    const names = Array.from({ length: opts.lanes }, (_, i) => `agent-lane-${String(i).padStart(2, '0')}`);
    opts.log(`  ${opts.lanes} agent lanes at max_parallel ${opts.parallel} …`);
    const big = await fleetRun(`${opts.lanes} lanes`, names, opts.parallel);
    const lanes = names.map((n) => lane(big.manifest, n));
    const lane_ms = lanes.map((l) => (l.timings.total_ms ?? 0) - (l.timings.wait_ms ?? 0));
    const directive_ms = lanes.map((l) => l.timings.directive_ms ?? 0);
    opts.log(
      `  ${opts.lanes} agent lanes: ${(big.wall_ms / 1000).toFixed(2)} s, ${big.cpu_s ?? '?'} cpu-s; agent runs ${(directive_ms.reduce((a, b) => a + b, 0) / 1000).toFixed(1)} s in all`,
    );
    if (opts.keep) opts.log(`  kept: ${dir}`);

    return {
      claude_version: version,
      cli: 'bin/fleet.js (the committed dist/cli bundle), as test/integration/real-claude.test.ts runs it',
      isolation: lane(warm.manifest, solo('wu', 'fleet')).isolation ?? null,
      single,
      fleet32: { lanes: opts.lanes, parallel: opts.parallel, run: { wall_ms: big.wall_ms, cpu_s: big.cpu_s }, lane_ms, directive_ms },
    };
  } finally {
    await api.close();
    if (!opts.keep) removeDir(dir);
  }
}
