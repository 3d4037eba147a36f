/**
 * The paths of one lane a directive's success does not take, on real repositories (a bare "remote" with hooks where
 * a forge would refuse): pushes the remote refuses or moves, working copies a command breaks, timeouts, fence and
 * check feedback handed to the next attempt, the concurrency budget, interrupts, and the lane's timings.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION, type LaneRecord } from '../../src/core/model.js';
import { runLane } from '../../src/steps/lane/index.js';
import { Semaphore } from '../../src/util/pool.js';
import { createRepo, readRemoteFile, remoteBranches, remoteHead, tgit } from '../support/repos.js';
import { removeDir, tempDir } from '../integration/helpers.js';
import { localExecutor, localForge, planLane } from './lane-support.js';

let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-lane-paths-');
});
afterEach(() => removeDir(dir));

const BRANCH = 'fleet/lanes/svc';

/** ./svc.git (created) as the one target of the fleet `spec`. */
async function laneOf(spec: Record<string, unknown>, target: Record<string, unknown> = {}) {
  const repo = await createRepo(dir, 'svc', { 'README.md': '# svc\n', 'src/a.ts': 'a\n' }, { clone: false });
  return { repo, ...(await planLane(dir, localForge(dir), spec, { repo: './svc.git', ...target })) };
}

/** Installs `hook` (a shell script body) in the bare repository `remote`. */
function hook(remote: string, name: string, body: string): void {
  mkdirSync(join(remote, 'hooks'), { recursive: true });
  writeFileSync(join(remote, 'hooks', name), `#!/bin/sh\n${body}\n`);
  chmodSync(join(remote, 'hooks', name), 0o755);
}

const steps = (rec: LaneRecord) => rec.attempts.map((a) => [a.n, a.exit_code, a.failed_step, a.timed_out]);

describe('a push the remote refuses', () => {
  it("by a hook: push-rejected with the remote's words, nothing on the remote", async () => {
    const { ctx, spec, start, repo, events } = await laneOf({ run: 'echo x >> README.md' });
    hook(repo.remote, 'pre-receive', 'echo "policy: lane branches are frozen" >&2; exit 1');
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'failed', phase: 'failed', error: { class: 'push-rejected' } });
    expect(rec.error!.message).toMatch(/^push refused: /);
    expect(rec.error!.message).toContain('policy: lane branches are frozen');
    expect(steps(rec)).toEqual([[1, 0, null, false]]);
    expect(events).toContain(`pushing: to ${BRANCH}`);
    expect(rec.timings.push_ms).toBeGreaterThanOrEqual(0);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it('because the lane branch moved on the remote while the lane ran: stale, nothing overwritten', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'true' });
    const moved = `git --git-dir=${JSON.stringify(repo.remote)} update-ref refs/heads/${BRANCH} ${repo.commit}`;
    const rec = await runLane(ctx, { ...spec, run: `${moved} && echo x >> README.md` }, start);
    expect(rec.error).toEqual({
      class: 'push-rejected',
      message: `${BRANCH} moved on the remote while this lane ran (another run or a person pushed to it); nothing was overwritten`,
    });
    expect(await remoteHead(repo.remote, BRANCH)).toBe(repo.commit);
  });

  it('a push that did not land where the lane pushed it (the remote moved the branch): no PR, the branch named', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md' });
    hook(repo.remote, 'post-receive', `git update-ref refs/heads/${BRANCH} ${repo.commit}`);
    const rec = await runLane(ctx, spec, start);
    expect(rec.error).toEqual({
      class: 'push-rejected',
      message: `after the push, ${BRANCH} in ./svc.git is at ${repo.commit.slice(0, 12)}, not at the lane's commit ${rec.commit!.slice(0, 12)}: the push did not land in the lane's own repository; no pull request was opened`,
    });
    expect(rec.pr_url).toBeNull();
  });

  it('a push whose branch is gone straight after: "at nothing"', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md' });
    hook(repo.remote, 'post-receive', `git update-ref -d refs/heads/${BRANCH}`);
    const rec = await runLane(ctx, spec, start);
    expect(rec.error?.class).toBe('push-rejected');
    expect(rec.error?.message).toMatch(
      new RegExp(`^after the push, ${BRANCH} in \\./svc\\.git is at nothing, not at the lane's commit ${rec.commit!.slice(0, 12)}:`),
    );
  });
});

describe('a broken working copy', () => {
  it('a directive that removes .git: workspace-corrupted, its attempt recorded, nothing pushed', async () => {
    const { ctx, spec, start, repo } = await laneOf({ max_retries: 2, run: 'echo x >> README.md; rm -rf .git' });
    const rec = await runLane(ctx, spec, start);
    expect(rec.error).toEqual({ class: 'workspace-corrupted', message: "the directive removed or broke the working copy's .git; nothing was pushed" });
    // Not retried: nothing it did can be trusted.
    expect(steps(rec)).toEqual([[1, 0, 'directive', false]]);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it("a check that removes .git: workspace-corrupted, the failing check's attempt recorded", async () => {
    const { ctx, spec, start, repo } = await laneOf({ max_retries: 2, run: 'echo x >> README.md', checks: ['rm -rf .git; exit 3'] });
    const rec = await runLane(ctx, spec, start);
    expect(rec.error).toEqual({ class: 'workspace-corrupted', message: "a check removed or broke the working copy's .git; nothing was pushed" });
    expect(steps(rec)).toEqual([[1, 3, 'check', false]]);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  it("a check that exits 0 but removes .git: the directive's own result is recorded", async () => {
    const { ctx, spec, start } = await laneOf({ run: 'echo x >> README.md', checks: ['rm -rf .git'] });
    const rec = await runLane(ctx, spec, start);
    expect(rec.error?.class).toBe('workspace-corrupted');
    expect(steps(rec)).toEqual([[1, 0, 'check', false]]);
  });
});

describe('timeouts', () => {
  it('a directive past timeout_minutes is killed: directive-timeout, the attempt marked timed out', async () => {
    const { ctx, spec, start } = await laneOf({ timeout_minutes: 0.005, run: 'echo "still going"; sleep 30' });
    const rec = await runLane(ctx, spec, start);
    expect(rec.error).toEqual({ class: 'directive-timeout', message: 'the directive ran past its timeout of 0.005 min and was killed: still going' });
    expect(rec.attempts).toHaveLength(1);
    expect(rec.attempts[0]).toMatchObject({ n: 1, failed_step: 'directive', timed_out: true });
  });

  it('a check past the timeout: check-failed, "timed out", the attempt marked timed out', async () => {
    const { ctx, spec, start } = await laneOf({ timeout_minutes: 0.05, run: 'echo x >> README.md', checks: ['sleep 60'] });
    const rec = await runLane(ctx, spec, start);
    expect(rec.error).toEqual({ class: 'check-failed', message: 'check `sleep 60` timed out' });
    expect(rec.attempts[0]).toMatchObject({ n: 1, failed_step: 'check', timed_out: true });
  });
});

describe('feedback to the next attempt', () => {
  it('a failing check: the next attempt gets its command, exit code and output, and is recorded as a retry', async () => {
    const { ctx, spec, start, repo, events } = await laneOf({
      max_retries: 1,
      run: 'printf "%s" "$FLEET_FEEDBACK" > feedback.txt',
      checks: ['[ "$FLEET_ATTEMPT" = 2 ] || { echo "lint error: bad" >&2; exit 5; }'],
    });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'pushed', retry_count: 1 });
    expect(steps(rec)).toEqual([
      [1, 5, 'check', false],
      [2, 0, null, false],
    ]);
    expect(events).toContain('checking: retry 1 of 1');
    expect(events).toContain('committing: 1 file');
    expect(await readRemoteFile(repo.remote, BRANCH, 'feedback.txt')).toBe(
      'check `[ "$FLEET_ATTEMPT" = 2 ] || { echo "lint error: bad" >&2; exit 5; }` exited with 5. Output:\nlint error: bad',
    );
  });

  it('a check that writes outside the fence: fence-violation; a shell command is not retried', async () => {
    const { ctx, spec, start, repo } = await laneOf({ max_retries: 2, run: 'echo x >> README.md', checks: ['echo y > OTHER.md'] }, { owns: ['README.md'] });
    const rec = await runLane(ctx, spec, start);
    expect(rec.error).toEqual({ class: 'fence-violation', message: 'a check changed files outside the fence: 1 file outside owns [README.md]: OTHER.md' });
    expect(steps(rec)).toEqual([[1, 0, 'fence', false]]);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });

  /** An agent (a `command` preset) that keeps what it is handed, and writes `out-<attempt>` (a path) each attempt. */
  function agent(script: string) {
    const file = join(dir, 'agent.sh');
    writeFileSync(
      file,
      `#!/bin/sh\nprintf "%s" "$FLEET_FEEDBACK" > "$FLEET_LANE_DIR/feedback-$FLEET_ATTEMPT.txt"\ncp "$1" "$FLEET_LANE_DIR/handed-$FLEET_ATTEMPT.md"\n${script}\n`,
    );
    chmodSync(file, 0o755);
    return { preset: 'command', command: `${file} {prompt_file}` };
  }

  it('an agent that wrote outside the fence is told which files and what it may change, and tries again', async () => {
    const { ctx, spec, start, root } = await laneOf(
      { max_retries: 1, agent: agent('if [ "$FLEET_ATTEMPT" = 1 ]; then echo x > OUT.md; else echo x >> README.md; fi') },
      { owns: ['README.md', 'docs/**'], never: ['docs/secret/**'] },
    );
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', phase: 'pushed', retry_count: 1, changed_files: ['README.md'] });
    expect(steps(rec)).toEqual([
      [1, 0, 'fence', false],
      [2, 0, null, false],
    ]);
    const feedback =
      'The change touched files it may not: 1 file outside owns [README.md, docs/**]: OUT.md. Change only files matching README.md, docs/** and never docs/secret/**, .git/**.';
    expect(readFileSync(join(root, 'lanes', 'svc', 'feedback-2.txt'), 'utf8')).toBe(feedback);
    expect(readFileSync(join(root, 'lanes', 'svc', 'prompt-2.md'), 'utf8')).toContain(feedback);
    expect(readFileSync(join(root, 'lanes', 'svc', 'feedback-1.txt'), 'utf8')).toBe('');
  });

  it('an agent with no owns is told it may change anything but never', async () => {
    const { ctx, spec, start, root } = await laneOf(
      { max_retries: 1, agent: agent('if [ "$FLEET_ATTEMPT" = 1 ]; then mkdir -p keys && echo x > keys/k; else echo x >> README.md; fi') },
      { never: ['keys/**'] },
    );
    const rec = await runLane(ctx, spec, start);
    expect(rec.status).toBe('completed');
    expect(readFileSync(join(root, 'lanes', 'svc', 'feedback-2.txt'), 'utf8')).toBe(
      'The change touched files it may not: 1 file in never [keys/**]: keys/k. Change only files matching anything and never keys/**, .git/**.',
    );
  });

  it('an agent whose checks wrote outside the fence is told so, and tries again', async () => {
    const { ctx, spec, start, root } = await laneOf(
      { max_retries: 1, agent: agent('echo x >> README.md'), checks: ['[ "$FLEET_ATTEMPT" = 2 ] || echo y > OTHER.md'] },
      { owns: ['README.md'] },
    );
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', retry_count: 1, changed_files: ['README.md'] });
    expect(steps(rec)).toEqual([
      [1, 0, 'fence', false],
      [2, 0, null, false],
    ]);
    expect(readFileSync(join(root, 'lanes', 'svc', 'feedback-2.txt'), 'utf8')).toBe(
      'The checks left changes the lane may not make: 1 file outside owns [README.md]: OTHER.md. Change only files matching README.md and never .git/**.',
    );
  });

  it("a lane-level run wins over the fleet's agent: no prompt is written", async () => {
    const { ctx, spec, start, repo, root } = await laneOf({ agent: agent('echo agent > AGENT.md') }, { run: 'echo scripted > SCRIPTED.md' });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', changed_files: ['SCRIPTED.md'] });
    expect(existsSync(join(root, 'lanes', 'svc', 'prompt-1.md'))).toBe(false);
    expect(await readRemoteFile(repo.remote, BRANCH, 'AGENT.md')).toBeNull();
  });

  it('an agent is routed the personas its owned files and title call for, and handed their prompts', async () => {
    const personas = [
      { name: 'ts', applies_to: ['**/*.ts'], prompt: 'You write TypeScript.' },
      { name: 'docs', applies_to: ['**/*.md'], prompt: 'You write docs.' },
      { name: 'sec', keywords: ['password'], prompt: 'You guard secrets.' },
    ];
    const { ctx, spec, start, root } = await laneOf({ agent: { ...agent('echo x >> README.md'), personas, top_k: 1 } }, { owns: ['**/*.md'] });
    const rec = await runLane(ctx, spec, start);
    expect(rec).toMatchObject({ status: 'completed', routing: ['docs'] });
    const routing = JSON.parse(readFileSync(join(root, 'lanes', 'svc', 'agent-routing.json'), 'utf8'));
    expect(routing.selected).toEqual(['docs']);
    // Scored on the tracked files inside owns only: src/a.ts is outside, so ts scores nothing.
    expect(routing.all_scores.find((x: { agent: string }) => x.agent === 'ts').score).toBe(0);
    // The agent is handed the prompt file Fleet wrote.
    expect(readFileSync(join(root, 'lanes', 'svc', 'handed-1.md'), 'utf8')).toBe(readFileSync(join(root, 'lanes', 'svc', 'prompt-1.md'), 'utf8'));
    const prompt = readFileSync(join(root, 'lanes', 'svc', 'prompt-1.md'), 'utf8');
    expect(prompt).toContain('You write docs.');
    expect(prompt).not.toContain('You write TypeScript.');
  });
});

describe('the output handed back', () => {
  it('is trimmed, and cut to its last 2,000 characters after an ellipsis when longer', async () => {
    const print = (n: number) => `printf "  %s  \\n" "$(head -c ${n} /dev/zero | tr '\\0' B)"`;
    const { ctx, spec, start, root } = await laneOf({
      max_retries: 2,
      run: `printf "%s" "$FLEET_FEEDBACK" > "$FLEET_LANE_DIR/feedback-$FLEET_ATTEMPT.txt"; case $FLEET_ATTEMPT in 1) ${print(2000)}; exit 1;; 2) echo A; ${print(2001)}; exit 1;; esac; echo x >> README.md`,
    });
    const rec = await runLane(ctx, spec, start);
    expect(rec.status).toBe('completed');
    const feedback = (n: number) => readFileSync(join(root, 'lanes', 'svc', `feedback-${n}.txt`), 'utf8');
    expect(feedback(2)).toBe(`the directive exited with 1. Output:\n${'B'.repeat(2000)}`);
    expect(feedback(3)).toBe(`the directive exited with 1. Output:\n…${'B'.repeat(2000)}`);
  });

  it('a directive that fails without a word: the exit code alone', async () => {
    const { ctx, spec, start } = await laneOf({ run: 'exit 6' });
    expect((await runLane(ctx, spec, start)).error).toEqual({ class: 'directive-failed', message: 'the directive exited with 6' });
  });

  it('a directive killed by a signal: the signal is recorded and named', async () => {
    const { ctx, spec, start } = await laneOf({ run: 'echo "going down"; kill -TERM $$' });
    const rec = await runLane(ctx, spec, start);
    expect(rec.error).toEqual({ class: 'directive-failed', message: 'the directive exited with SIGTERM: going down' });
    expect(rec.attempts[0]).toMatchObject({ exit_code: null, signal: 'SIGTERM', timed_out: false, failed_step: 'directive' });
  });

  it('a dry run tells the directive so', async () => {
    const { ctx, spec, start, root } = await laneOf({ run: 'echo "dry=$FLEET_DRY_RUN" > DRY.md' });
    const rec = await runLane({ ...ctx, dryRun: true }, spec, start);
    expect(rec.phase).toBe('dry-run');
    expect(readFileSync(join(root, 'lanes', 'svc', 'patch.diff'), 'utf8')).toContain('+dry=1');
  });

  it('the commit message quotes the directive trimmed', async () => {
    const { ctx, spec, start, repo } = await laneOf({ directive: '  Stamp it.\n\n', run: 'echo x >> README.md' });
    expect((await runLane(ctx, spec, start)).status).toBe('completed');
    expect((await tgit(['-C', repo.remote, 'log', '-1', '--format=%B', BRANCH])).stdout).toBe(
      'lanes: svc\n\nStamp it.\n\nFleet-Id: lanes\nFleet-Lane: svc\n\n',
    );
  });
});

describe('what a lane refuses before it starts', () => {
  it('isolation: required on a machine that cannot isolate: invalid-input, nothing cloned', async () => {
    const { ctx, spec, start, events, root } = await laneOf({ isolation: 'required', run: 'echo x >> README.md' });
    const exec = { ...localExecutor, isolation: async () => ({ kind: 'none' as const, detail: 'no user namespaces here' }) };
    const rec = await runLane({ ...ctx, exec }, spec, start);
    expect(rec).toMatchObject({
      status: 'failed',
      phase: 'failed',
      isolation: { kind: 'none', detail: 'no user namespaces here' },
      error: {
        class: 'invalid-input',
        message: 'the fleet file says isolation: required, but directives cannot be isolated on this machine: no user namespaces here',
      },
    });
    expect(events).toEqual(['failed: invalid-input']);
    expect(existsSync(join(root, 'lanes', 'svc', 'repo'))).toBe(false);
  });

  it('isolation: required on a machine that can isolate: the lane runs', async () => {
    const { ctx, spec, start } = await laneOf({ isolation: 'required', run: 'echo x >> README.md' });
    const exec = {
      ...localExecutor,
      isolation: async () => ({ kind: 'pid-namespace' as const, detail: 'in a test' }),
      run: (c: string, o: Parameters<typeof localExecutor.run>[1]) => localExecutor.run(c, { ...o, isolation: 'off' }),
    };
    expect(await runLane({ ...ctx, exec }, spec, start)).toMatchObject({ status: 'completed', isolation: { kind: 'pid-namespace' } });
  });

  it('refused after an interrupt, before anything ran: cancelled, nothing pushed, the refusal kept', async () => {
    const { ctx, spec, start } = await laneOf({ isolation: 'required', run: 'echo x >> README.md' });
    const exec = { ...localExecutor, isolation: async () => ({ kind: 'none' as const, detail: 'no user namespaces here' }) };
    const stop = new AbortController();
    stop.abort();
    const rec = await runLane({ ...ctx, exec, signal: stop.signal }, spec, start);
    expect(rec.error).toEqual({
      class: 'cancelled',
      message:
        'the run was interrupted while this lane was queued; nothing was pushed (the fleet file says isolation: required, but directives cannot be isolated on this machine: no user namespaces here)',
    });
  });

  it('isolation: auto on a machine that cannot isolate runs the directive all the same', async () => {
    const { ctx, spec, start } = await laneOf({ isolation: 'auto', run: 'echo x >> README.md' });
    const exec = { ...localExecutor, isolation: async () => ({ kind: 'none' as const, detail: 'no user namespaces here' }) };
    expect(await runLane({ ...ctx, exec }, spec, start)).toMatchObject({ status: 'completed', isolation: { kind: 'none' } });
  });
});

describe('a lane that crashes', () => {
  it("Fleet's own failure inside a lane: lane-crashed, with what failed, the result written", async () => {
    const { ctx, spec, start, root } = await laneOf({ run: 'echo x >> README.md' });
    for (const [thrown, said] of [
      [new Error('the view broke'), 'the view broke'],
      ['a plain string', 'a plain string'],
    ] as const) {
      let once = true;
      const rec = await runLane(
        {
          ...ctx,
          onUpdate: (r, d) => {
            if (once && r.phase === 'cloning') {
              once = false;
              throw thrown;
            }
            ctx.onUpdate(r, d);
          },
        },
        spec,
        start,
      );
      expect(rec).toMatchObject({ status: 'failed', phase: 'failed', error: { class: 'lane-crashed', message: `Fleet itself failed in this lane: ${said}` } });
      expect(JSON.parse(readFileSync(join(root, 'lanes', 'svc', 'result.json'), 'utf8')).lane.error.class).toBe('lane-crashed');
    }
  });
});

describe('the concurrency budget', () => {
  it('a lane waits for a slot before its directive, says so, and counts the wait', async () => {
    const { ctx, spec, start, events } = await laneOf({ run: 'echo x >> README.md' });
    const slots = new Semaphore(1);
    const release = await slots.acquire();
    let waiting!: () => void;
    const waited = new Promise<void>((resolve) => (waiting = resolve));
    const lane = runLane(
      {
        ...ctx,
        slots,
        onUpdate: (rec, detail) => {
          ctx.onUpdate(rec, detail);
          if (rec.phase === 'waiting') waiting();
        },
      },
      spec,
      start,
    );
    await waited;
    expect(events).toEqual([`cloning: ${spec.repo}`, 'waiting: for a slot in the concurrency budget']);
    release();
    const rec = await lane;
    expect(rec.status).toBe('completed');
    expect(rec.timings.wait_ms).toBeGreaterThanOrEqual(0);
    // The slot is given back once the directive has run.
    expect(slots.active).toBe(0);
  });

  it('a lane with a free slot does not wait', async () => {
    const { ctx, spec, start, events } = await laneOf({ run: 'echo x >> README.md' });
    const slots = new Semaphore(2);
    const other = await slots.acquire();
    expect(await runLane({ ...ctx, slots, gitSlots: new Semaphore(1) }, spec, start)).toMatchObject({ status: 'completed' });
    expect(events.some((e) => e.startsWith('waiting'))).toBe(false);
    expect(slots.active).toBe(1);
    other();
  });
});

describe('interrupts', () => {
  /** Aborts the run when the lane reaches `phase`. */
  function abortAt(ctx: Parameters<typeof runLane>[0], phase: LaneRecord['phase']) {
    const stop = new AbortController();
    return {
      ...ctx,
      signal: stop.signal,
      onUpdate: (rec: LaneRecord, detail: string) => {
        ctx.onUpdate(rec, detail);
        if (rec.phase === phase) stop.abort();
      },
    };
  }

  it('a failure while cloning after an interrupt: cancelled, nothing pushed, the failure kept', async () => {
    const { ctx, spec, start } = await laneOf({ run: 'echo x >> README.md' });
    const rec = await runLane(abortAt({ ...ctx, forge: localForge(join(dir, 'elsewhere')) }, 'cloning'), spec, start);
    expect(rec.error?.class).toBe('cancelled');
    expect(rec.error?.message).toMatch(/^the run was interrupted while this lane was cloning; nothing was pushed \(.+\)$/s);
  });

  it('a failure while pushing after an interrupt: whether the push landed is unknown', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md' });
    hook(repo.remote, 'pre-receive', 'echo "no" >&2; exit 1');
    const rec = await runLane(abortAt(ctx, 'pushing'), spec, start);
    expect(rec.error?.class).toBe('cancelled');
    expect(rec.error?.message).toMatch(
      /^the run was interrupted while this lane was pushing; the push may or may not have reached the forge; a resumed run finds out \(push refused: .*\)$/s,
    );
  });

  it('an interrupt after the directive ran and before the commit: cancelled, nothing pushed', async () => {
    const { ctx, spec, start, repo } = await laneOf({ run: 'echo x >> README.md', checks: ['true'] });
    const rec = await runLane(abortAt(ctx, 'checking'), spec, start);
    expect(rec.error).toEqual({ class: 'cancelled', message: 'the run was interrupted while this lane ran; nothing was pushed' });
    expect(steps(rec)).toEqual([[1, 0, 'check', false]]);
    expect(await remoteBranches(repo.remote)).toEqual(['main']);
  });
});

describe('what a lane records', () => {
  it('each attempt: its number, start, a non-negative duration, exit code, signal and log', async () => {
    const { ctx, spec, start } = await laneOf({ max_retries: 1, run: '[ "$FLEET_ATTEMPT" = 2 ] || exit 9; echo x >> README.md' });
    const before = Date.now();
    const rec = await runLane(ctx, spec, start);
    expect(rec.attempts).toHaveLength(2);
    for (const [i, a] of rec.attempts.entries()) {
      expect(a).toMatchObject({ n: i + 1, signal: null, timed_out: false, log: `lanes/svc/attempt-${i + 1}.log` });
      expect(a.duration_ms).toBeGreaterThanOrEqual(0);
      expect(Date.parse(a.started_at)).toBeGreaterThanOrEqual(before - 1000);
    }
    expect(rec.attempts.map((a) => a.exit_code)).toEqual([9, 0]);
    for (const a of rec.attempts) expect(a.duration_ms).toBeLessThanOrEqual(Date.now() - before);
  });

  it("timings: each step non-negative, and together no more than the lane's total", async () => {
    const { ctx, spec, start } = await laneOf({ run: 'echo x >> README.md; sleep 0.2', checks: ['sleep 0.2'] });
    const before = Date.now();
    const rec = await runLane({ ...ctx, slots: new Semaphore(1) }, spec, start);
    const elapsed = Date.now() - before;
    expect(rec.status).toBe('completed');
    const t = rec.timings;
    // Measured inside the call: none can exceed what the call took.
    expect(t.total_ms).toBeLessThanOrEqual(elapsed);
    const parts = [t.clone_ms, t.wait_ms, t.directive_ms, t.checks_ms, t.commit_ms, t.push_ms];
    for (const p of parts) {
      expect(p).toBeTypeOf('number');
      expect(p).toBeGreaterThanOrEqual(0);
    }
    expect(t.directive_ms).toBeGreaterThanOrEqual(150);
    expect(t.checks_ms).toBeGreaterThanOrEqual(150);
    expect(t.total_ms).toBeGreaterThanOrEqual(parts.reduce((a, b) => a! + b!, 0)!);
  });

  it("a retry's time is added to the directive's, not restarted", async () => {
    const { ctx, spec, start } = await laneOf({ max_retries: 1, run: 'sleep 0.2; [ "$FLEET_ATTEMPT" = 2 ] || exit 1; echo x >> README.md' });
    const rec = await runLane(ctx, spec, start);
    expect(rec.status).toBe('completed');
    expect(rec.timings.directive_ms).toBeGreaterThanOrEqual(350);
    expect(rec.timings.total_ms).toBeGreaterThanOrEqual(rec.timings.directive_ms!);
  });

  it('the result file holds the record the lane returned', async () => {
    const { ctx, spec, start, root } = await laneOf({ run: 'echo x >> README.md' });
    const rec = await runLane(ctx, spec, start);
    const result = JSON.parse(readFileSync(join(root, 'lanes', 'svc', 'result.json'), 'utf8'));
    expect(result).toEqual({ schema_version: SCHEMA_VERSION, fleet_id: 'fleet-lanes-1', lane: JSON.parse(JSON.stringify(rec)) });
    expect(rec.started_at).not.toBe('');
    expect(Date.parse(rec.started_at!)).not.toBeNaN();
  });

  it('the log of an attempt holds what the directive printed', async () => {
    const { ctx, spec, start, root } = await laneOf({ run: 'echo "hello from the directive"; echo x >> README.md' });
    const rec = await runLane(ctx, spec, start);
    expect(rec.log).toBe('lanes/svc/attempt-1.log');
    expect(readFileSync(join(root, rec.log!), 'utf8')).toContain('hello from the directive');
    expect((await tgit(['-C', join(dir, 'svc.git'), 'log', '-1', '--format=%s', BRANCH])).stdout.trim()).toBe('lanes: svc');
  });
});
