/**
 * Git smart HTTP through `git http-backend` (CGI): the request body is piped
 * to the CGI's stdin, its response headers (incl. `Status:`) are parsed and
 * the rest of its stdout is streamed to the client, so large packs never sit
 * in memory.
 */
import { execFileSync, spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { GIT_ENV } from './git.js';

let backendPath: string | undefined;

/** `$(git --exec-path)/git-http-backend`. */
export function httpBackendPath(): string {
  if (!backendPath) {
    const exec = execFileSync('git', ['--exec-path'], { encoding: 'utf8', env: GIT_ENV }).trim();
    backendPath = path.join(exec, 'git-http-backend');
  }
  return backendPath;
}

export interface CgiRequest {
  req: IncomingMessage;
  res: ServerResponse;
  projectRoot: string;
  /** `/owner/repo.git/info/refs` (path inside the project root). */
  pathInfo: string;
  query: string;
  remoteUser: string | null;
  /** Extra response headers (rate limit, request id). */
  headers?: Record<string, string>;
  /** git configuration for this request only, after the defaults (a later value wins: the workflow guard's hooks). */
  config?: Record<string, string>;
  /** Counts the bytes of the response body sent (what a clone or fetch downloaded). */
  sent?: { bytes: number };
}

/** Runs the CGI; resolves with the HTTP status sent once the response is complete (the caller may still hold res open). */
export function runHttpBackend(c: CgiRequest, beforeEnd?: (status: number) => Promise<void>): Promise<number> {
  const { req, res } = c;
  const env: NodeJS.ProcessEnv = {
    ...GIT_ENV,
    GIT_PROJECT_ROOT: c.projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    GIT_HTTP_MAX_REQUEST_BUFFER: '100M',
    PATH_INFO: c.pathInfo,
    REQUEST_METHOD: req.method ?? 'GET',
    QUERY_STRING: c.query,
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_SOFTWARE: 'github-emulator',
    GIT_CONFIG_COUNT: '3',
    GIT_CONFIG_KEY_0: 'http.receivepack',
    GIT_CONFIG_VALUE_0: 'true',
    GIT_CONFIG_KEY_1: 'safe.directory',
    GIT_CONFIG_VALUE_1: '*',
    GIT_CONFIG_KEY_2: 'core.hooksPath',
    GIT_CONFIG_VALUE_2: '/dev/null',
  };
  for (const [key, value] of Object.entries(c.config ?? {})) {
    const i = Number(env.GIT_CONFIG_COUNT);
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
    env.GIT_CONFIG_COUNT = String(i + 1);
  }
  if (req.headers['content-length'] !== undefined) env.CONTENT_LENGTH = String(req.headers['content-length']);
  if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = String(req.headers['content-encoding']);
  if (req.headers['git-protocol']) env.GIT_PROTOCOL = String(req.headers['git-protocol']);
  if (c.remoteUser) env.REMOTE_USER = c.remoteUser;

  return new Promise((resolve, reject) => {
    const child = spawn(httpBackendPath(), [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let headerBuf: Buffer | null = Buffer.alloc(0);
    let status = 200;
    const stderr: Buffer[] = [];
    let failed = false;

    child.stderr.on('data', (b: Buffer) => stderr.push(b));
    child.on('error', (e) => {
      failed = true;
      reject(e);
    });
    req.pipe(child.stdin);
    child.stdin.on('error', () => {
      /* the CGI may close stdin early (e.g. on an error); the response says what happened */
    });

    child.stdout.on('data', (chunk: Buffer) => {
      if (headerBuf === null) {
        if (c.sent) c.sent.bytes += chunk.length;
        if (!res.write(chunk)) {
          child.stdout.pause();
          res.once('drain', () => child.stdout.resume());
        }
        return;
      }
      headerBuf = Buffer.concat([headerBuf, chunk]);
      let end = headerBuf.indexOf('\r\n\r\n');
      let sepLen = 4;
      const lf = headerBuf.indexOf('\n\n');
      if (lf >= 0 && (end < 0 || lf < end)) {
        end = lf;
        sepLen = 2;
      }
      if (end < 0) return;
      const head = headerBuf.subarray(0, end).toString('latin1');
      const rest = headerBuf.subarray(end + sepLen);
      headerBuf = null;
      const headers: Record<string, string | string[]> = { ...c.headers };
      for (const line of head.split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i <= 0) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') {
          status = parseInt(v, 10) || 200;
          continue;
        }
        const prev = headers[k];
        headers[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
      }
      res.writeHead(status, headers);
      if (c.sent) c.sent.bytes += rest.length;
      if (rest.length) res.write(rest);
    });

    child.on('close', (code) => {
      if (failed) return;
      void (async () => {
        if (headerBuf !== null) {
          // The CGI died before sending headers.
          status = 500;
          const msg = `git http-backend failed (${code}): ${Buffer.concat(stderr).toString('utf8')}`;
          if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain', ...c.headers });
          res.write(msg);
        } else if (code !== 0 && status < 400) {
          status = 500;
        }
        try {
          if (beforeEnd) await beforeEnd(status);
        } finally {
          res.end();
          resolve(status);
        }
      })().catch(reject);
    });
  });
}
