/**
 * Helpers for the emulator's own tests: raw HTTP with fetch (no client
 * library in the way) and real git processes. Everything is asynchronous:
 * the emulator runs in the test's process, so a synchronous child process
 * would block the server it talks to.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, realpath, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Emulator } from '../support/github-emulator/index.js';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export async function api<T = any>(
  emu: Emulator,
  method: string,
  p: string,
  opts: { body?: unknown; token?: string | null; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse<T>> {
  const token = opts.token === undefined ? emu.token : opts.token;
  const headers: Record<string, string> = { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', ...opts.headers };
  if (token) headers.authorization = `token ${token}`;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json; charset=utf-8';
  }
  const res = await fetch(`${emu.url}${p}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* text body */
  }
  return { status: res.status, headers: res.headers, body: parsed as T };
}

export async function graphql<T = any>(
  emu: Emulator,
  query: string,
  variables?: Record<string, unknown>,
  token: string | null = emu.token,
): Promise<ApiResponse<T>> {
  return api<T>(emu, 'POST', '/graphql', { body: { query, variables }, token });
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs git asynchronously with a clean environment (plus `env`). */
export function git(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<Run> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  Object.assign(env, {
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'Lane',
    GIT_AUTHOR_EMAIL: 'lane@example.com',
    GIT_COMMITTER_NAME: 'Lane',
    GIT_COMMITTER_EMAIL: 'lane@example.com',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_ASKPASS: '/bin/false',
    LC_ALL: 'C',
    ...opts.env,
  });
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'commit.gpgsign=false', '-c', 'credential.helper=', ...args], {
      cwd: opts.cwd ?? os.tmpdir(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

export async function mustGit(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<string> {
  const r = await git(args, opts);
  if (r.code !== 0) throw new Error(`git ${args.join(' ')} → ${r.code}\n${r.stderr}`);
  return r.stdout.trim();
}

export async function tempDir(prefix = 'emu-test-'): Promise<string> {
  return realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Clones `owner/repo` over HTTP (token as an extra header), checks out
 * `branch` (new from the default branch unless it exists), writes `files`,
 * commits and pushes. Returns the pushed commit.
 */
export async function pushFiles(
  emu: Emulator,
  work: string,
  spec: { owner: string; repo: string; branch: string; files: Record<string, string>; message?: string; token?: string; force?: boolean },
): Promise<string> {
  const env = emu.gitEnv(spec.token ?? emu.token);
  const dir = path.join(work, `${spec.repo}-${Math.random().toString(36).slice(2)}`);
  await mustGit(['clone', '--quiet', emu.gitUrl(spec.owner, spec.repo), dir], { env });
  const exists = await git(['rev-parse', '--verify', '--quiet', `refs/remotes/origin/${spec.branch}`], { cwd: dir });
  await mustGit(exists.code === 0 ? ['checkout', '--quiet', '-B', spec.branch, `origin/${spec.branch}`] : ['checkout', '--quiet', '-b', spec.branch], {
    cwd: dir,
  });
  for (const [f, content] of Object.entries(spec.files)) {
    await mkdir(path.dirname(path.join(dir, f)), { recursive: true });
    await writeFile(path.join(dir, f), content);
  }
  await mustGit(['add', '-A'], { cwd: dir });
  await mustGit(['commit', '--quiet', '-m', spec.message ?? `change ${Object.keys(spec.files).join(', ')}`], { cwd: dir });
  await mustGit(['push', '--quiet', ...(spec.force ? ['--force'] : []), 'origin', `HEAD:refs/heads/${spec.branch}`], { cwd: dir, env });
  return mustGit(['rev-parse', 'HEAD'], { cwd: dir });
}
