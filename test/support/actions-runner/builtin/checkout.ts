/**
 * actions/checkout, emulated in the runner by its documented contract
 * (https://github.com/actions/checkout#usage): init a repository at
 * $GITHUB_WORKSPACE/<path>, fetch the ref from ${GITHUB_SERVER_URL}/<repository>
 * with the token as an HTTP extra header, check it out, and — unless
 * `persist-credentials: false` — leave that header in .git/config until the
 * post step removes it, as the real action does. In-process (only git runs),
 * because a fleet starts hundreds of jobs that each check out twice; and the
 * remote, the credential and the fetched commit are written to and read from
 * .git's own files (what `git remote add`, `git config` and `git rev-parse
 * FETCH_HEAD` would do), logged as those commands: three git processes a
 * checkout instead of six, each a fork of the test's large worker.
 */
import { execFile } from 'node:child_process';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import type { Builtin, BuiltinResult, BuiltinStep } from './types.js';

const run = promisify(execFile);

async function git(step: BuiltinStep, cwd: string, args: string[]): Promise<string> {
  step.log(`[command]/usr/bin/git ${args.map((a) => a.replace(/AUTHORIZATION: basic \S+/, 'AUTHORIZATION: basic ***')).join(' ')}`);
  const { stdout } = await run('git', args, {
    cwd,
    env: { PATH: step.env.PATH ?? '', HOME: step.env.HOME ?? '', GIT_TERMINAL_PROMPT: '0' },
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.trim();
}

function target(ref: string, own: boolean, sha: string): string {
  if (!ref) return own ? sha : 'HEAD';
  return ref;
}

export const checkout: Builtin = {
  async main(step): Promise<BuiltinResult> {
    const { inputs, env } = step;
    const repository = inputs.repository || env.GITHUB_REPOSITORY || '';
    const workspace = resolve(step.workspace);
    const dest = resolve(workspace, inputs.path || '.');
    if (dest !== workspace && !dest.startsWith(workspace + sep))
      return { ok: false, outputs: {}, error: `Repository path '${dest}' is not under '${workspace}'` };
    // actions/checkout's own check (input-helper.ts): and so nothing but owner/name reaches the .git/config written below.
    if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(repository))
      return { ok: false, outputs: {}, error: `Invalid repository '${repository}'. Expected format {owner}/{repo}.` };
    const server = new URL(env.GITHUB_SERVER_URL ?? '');
    const url = `${server.origin}${server.pathname.replace(/\/$/, '')}/${repository}.git`;
    const basic = Buffer.from(`x-access-token:${inputs.token ?? ''}`).toString('base64');
    step.mask(basic);
    const header = `AUTHORIZATION: basic ${basic}`;
    const key = `http.${server.origin}/.extraheader`;
    const own = repository.toLowerCase() === (env.GITHUB_REPOSITORY ?? '').toLowerCase();
    const depth = Number(inputs['fetch-depth'] || '1');
    try {
      await mkdir(dest, { recursive: true });
      await git(step, dest, ['init', '-q']);
      step.log(`[command]/usr/bin/git remote add origin ${url}`);
      await appendFile(join(dest, '.git', 'config'), `[remote "origin"]\n\turl = ${url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n`);
      await git(step, dest, [
        '-c',
        `${key}=${header}`,
        'fetch',
        '--no-tags',
        '--prune',
        ...(depth > 0 ? [`--depth=${depth}`] : []),
        'origin',
        target(inputs.ref ?? '', own, env.GITHUB_SHA ?? ''),
      ]);
      step.log('[command]/usr/bin/git rev-parse FETCH_HEAD');
      const commit = /^[0-9a-f]{40,64}/.exec(await readFile(join(dest, '.git', 'FETCH_HEAD'), 'utf8'))?.[0];
      if (!commit) throw new Error('git fetch left no commit in FETCH_HEAD');
      await git(step, dest, ['checkout', '-q', '--force', commit]);
      if ((inputs['persist-credentials'] ?? 'true') === 'true') {
        step.log(`[command]/usr/bin/git config --local ${key} AUTHORIZATION: basic ***`);
        await appendFile(join(dest, '.git', 'config'), `[http "${server.origin}/"]\n\textraheader = ${header}\n`);
      }
      step.state.repositoryPath = dest;
      step.state.configKey = key;
      return { ok: true, outputs: { ref: inputs.ref || (own ? (env.GITHUB_REF ?? '') : 'HEAD'), commit } };
    } catch (err) {
      const e = err as Error & { stderr?: string };
      return {
        ok: false,
        outputs: {},
        error: `${e.message}${e.stderr ? `\n${e.stderr}` : ''}`.replace(/AUTHORIZATION: basic \S+/g, 'AUTHORIZATION: basic ***'),
      };
    }
  },
  async post(step) {
    const dir = step.state.repositoryPath;
    if (!dir || !step.state.configKey) return;
    await run('git', ['config', '--local', '--unset-all', step.state.configKey], { cwd: dir }).catch(() => undefined);
  },
};
