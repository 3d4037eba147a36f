/**
 * Pushing a lane's commit, and the local forge's merge (a fast-forward of the base): always with a lease, so a push
 * never overwrites what someone else pushed meanwhile, and with the remote's own words when it refuses. Transient
 * failures are tried again (run.ts's policy), and a try whose answer was lost is checked for having landed.
 */
import { redact } from '../../util/secrets.js';
import { isInterrupted } from '../processes.js';
import { revParse } from './refs.js';
import {
  backoffMs,
  DEFAULT_GIT_TIMEOUT_MS,
  errorLines,
  GitError,
  type GitResult,
  type GitRunner,
  isTransientGitFailure,
  lastLines,
  NETWORK_ATTEMPTS,
  sleep,
} from './run.js';

export type PushResult =
  | { ok: true; status: 'created' | 'updated' | 'forced' | 'up-to-date' }
  | { ok: false; reason: 'stale' | 'rejected' | 'error'; detail: string };

interface PorcelainLine {
  flag: string;
  summary: string;
}

function parsePorcelain(stdout: string, dst: string): PorcelainLine | null {
  for (const line of stdout.split('\n')) {
    const parts = line.split('\t');
    if (parts.length < 3) continue;
    const [flag, refs, summary] = parts as [string, string, string];
    if (refs.endsWith(`:${dst}`)) return { flag: flag.trim() === '' ? ' ' : flag.trim(), summary: summary.trim() };
  }
  return null;
}

/**
 * What the remote said about a refused push, its first line first (reports
 * show only that): the porcelain line with the words a hook printed on
 * `remote:` lines (a pre-receive hook explains itself only there, in words
 * that need not say "error"), then git's own error lines.
 */
function pushDetail(line: PorcelainLine | null, stderr: string): string {
  const said = stderr
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => /^remote:\s*\S/.test(l) && !/^remote:\s*(Resolving deltas|Counting objects|Compressing objects|Total \d)/i.test(l))
    .slice(-10)
    .map((l) => l.replace(/^remote:\s*/, ''))
    .join(' ');
  const first = [line ? `${line.flag} ${line.summary}` : '', said].filter(Boolean).join(': ');
  const errors = errorLines(
    stderr
      .split('\n')
      .filter((l) => !l.startsWith('remote:'))
      .join('\n'),
    4,
  );
  return redact([first, errors].filter(Boolean).join('\n'));
}

async function pushWithLease(
  git: GitRunner,
  dir: string,
  src: string,
  dstRef: string,
  expected: string | null,
  env?: Record<string, string>,
  timeoutMs = DEFAULT_GIT_TIMEOUT_MS,
): Promise<PushResult> {
  let last: PushResult = { ok: false, reason: 'error', detail: 'push was not attempted' };
  for (let attempt = 1; attempt <= NETWORK_ATTEMPTS; attempt++) {
    let r: GitResult;
    try {
      r = await git.run(
        [
          'push',
          '--porcelain',
          '--no-verify',
          '--no-signed',
          '--no-follow-tags',
          '--recurse-submodules=no',
          `--force-with-lease=${dstRef}:${expected ?? ''}`,
          'origin',
          `${src}:${dstRef}`,
        ],
        { cwd: dir, allowFail: true, env, timeoutMs },
      );
    } catch (err) {
      if (!(err instanceof GitError) || err.killedBy !== null) throw err;
      r = { stdout: '', stderr: err.message, code: err.exitCode };
    }
    const line = parsePorcelain(r.stdout, dstRef);
    const detail = pushDetail(line, r.stderr);
    if (line && line.flag !== '!' && r.code === 0) {
      const status = line.flag === '*' ? 'created' : line.flag === '+' ? 'forced' : line.flag === '=' ? 'up-to-date' : 'updated';
      return { ok: true, status };
    }
    const transient = isTransientGitFailure(line?.summary ?? '') || isTransientGitFailure(r.stderr);
    if (line && line.flag === '!') {
      if (/stale info|fetch first|non-fast-forward/i.test(line.summary)) {
        // A try whose answer was lost (a dropped connection) may have pushed all the same: then the lease is ours.
        if (attempt > 1 && (await landed(git, dir, src, dstRef, env, timeoutMs))) return { ok: true, status: expected ? 'forced' : 'created' };
        return { ok: false, reason: 'stale', detail };
      }
      last = { ok: false, reason: 'rejected', detail };
    } else {
      last = { ok: false, reason: 'error', detail: detail || `git push exited with ${r.code}` };
    }
    if (!transient || isInterrupted()) return last;
    if (attempt < NETWORK_ATTEMPTS) await sleep(backoffMs(attempt));
  }
  return last;
}

/** Does the remote's `dstRef` hold the commit `src` names here? */
async function landed(git: GitRunner, dir: string, src: string, dstRef: string, env: Record<string, string> | undefined, timeoutMs: number): Promise<boolean> {
  const mine = await revParse(git, dir, src);
  const r = await git.run(['ls-remote', 'origin', dstRef], { cwd: dir, env, allowFail: true, timeoutMs }).catch(() => null);
  const theirs =
    r?.code === 0
      ? r.stdout
          .split('\n')
          .find((l) => l.endsWith(`\t${dstRef}`))
          ?.split('\t')[0]
      : undefined;
  return mine !== null && theirs === mine;
}

/**
 * Pushes HEAD to refs/heads/<branch> on origin, with a lease: the remote
 * branch must still be at `expected` (null: must not exist yet). A lease
 * failure (someone else pushed) is `stale`; a refusal by the remote (hook,
 * protection) is `rejected`, with the hook's own words; anything else (auth,
 * network) is `error`. Each try is killed at `timeoutMs`; transient failures
 * (a 5xx, a dropped connection, a timeout, a ref lock) are tried again, up to
 * 3 tries, with exponential backoff and jitter.
 */
export async function pushBranch(
  git: GitRunner,
  dir: string,
  branch: string,
  opts: { commit?: string; expected: string | null; env?: Record<string, string>; timeoutMs?: number },
): Promise<PushResult> {
  // `commit`: the very commit the caller judged, not whatever HEAD names by the time git reads it.
  return pushWithLease(git, dir, opts.commit ?? 'HEAD', `refs/heads/${branch}`, opts.expected, opts.env, opts.timeoutMs);
}

/**
 * The local merge: moves refs/heads/<baseBranch> on origin to `commit`, only if
 * it still is `expectedBaseCommit` (lease → `stale` otherwise) and `commit`
 * descends from it (a fast-forward; `rejected` otherwise).
 */
export async function pushFastForward(git: GitRunner, dir: string, commit: string, baseBranch: string, expectedBaseCommit: string): Promise<PushResult> {
  const anc = await git.run(['merge-base', '--is-ancestor', expectedBaseCommit, commit], { cwd: dir, allowFail: true });
  if (anc.code === 1) return { ok: false, reason: 'rejected', detail: `${commit} is not a fast-forward of ${baseBranch} (${expectedBaseCommit})` };
  if (anc.code !== 0) return { ok: false, reason: 'error', detail: redact(lastLines(anc.stderr, 4)) || 'cannot compare commits' };
  return pushWithLease(git, dir, commit, `refs/heads/${baseBranch}`, expectedBaseCommit);
}
