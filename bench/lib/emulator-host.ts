/**
 * The GitHub emulator in a process of its own, driven by the bench over IPC
 * (see emulator-client.ts). GitHub is another machine: its request validation,
 * git http-backend work and memory must not stall Fleet's event loop or show
 * up in Fleet's own CPU and RSS figures (plan_10k_rss_mb runs in the bench
 * process after the GitHub suite).
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { startEmulator, type Emulator } from '../../test/support/github-emulator/index.js';
import type { CreateRepoSpec, EmulatorOptions, RequestRecord, TokenSpec } from '../../test/support/github-emulator/index.js';

export type HostCall =
  | { op: 'start'; opts: EmulatorOptions }
  | { op: 'createRepos'; specs: CreateRepoSpec[]; concurrency: number }
  | { op: 'addToken'; token: string; spec: TokenSpec }
  | { op: 'requests'; from: number }
  | { op: 'resetLog' }
  | { op: 'problems' }
  | { op: 'openPulls'; repos: string[] }
  | { op: 'cpu' }
  | { op: 'close' };

export interface StartInfo {
  url: string;
  graphqlUrl: string;
  token: string | null;
  login: string;
}

/** A request as the emulator logged it, without its body (the bench only counts). */
export type LoggedRequest = Omit<RequestRecord, 'body'>;

let emu: Emulator | undefined;

/** CPU seconds of this process and of the children it reaped (git http-backend), from /proc; process.cpuUsage() elsewhere. */
function cpu(): { self_s: number; children_s: number | null; rss_mb: number } {
  const rss_mb = process.memoryUsage().rss / 1024 / 1024;
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    return { self_s: (f[11]! + f[12]!) / 100, children_s: (f[13]! + f[14]!) / 100, rss_mb };
  } catch {
    const u = process.cpuUsage();
    return { self_s: (u.user + u.system) / 1e6, children_s: null, rss_mb };
  }
}

async function handle(call: HostCall): Promise<unknown> {
  if (call.op === 'start') {
    emu = await startEmulator(call.opts);
    return { url: emu.url, graphqlUrl: emu.graphqlUrl, token: emu.token, login: emu.login } satisfies StartInfo;
  }
  if (call.op === 'cpu') return cpu();
  if (!emu) throw new Error('the emulator has not started');
  const e = emu;
  switch (call.op) {
    case 'createRepos': {
      const t0 = performance.now();
      let next = 0;
      const worker = async () => {
        while (next < call.specs.length) await e.createRepo(call.specs[next++]!);
      };
      await Promise.all(Array.from({ length: Math.max(1, call.concurrency) }, worker));
      return { created: call.specs.length, ms: performance.now() - t0 };
    }
    case 'addToken':
      e.addToken(call.token, call.spec);
      return null;
    case 'requests':
      return e.requests.slice(call.from).map(({ body: _body, ...r }) => r);
    case 'resetLog':
      e.resetLog();
      return null;
    case 'problems':
      return {
        violations: e.violations.map((v) => `${v.kind}: ${v.method} ${v.path} → ${v.status} ${v.message}`),
        errors: e.errors.map((x) => x.message),
      };
    case 'openPulls':
      return call.repos.map((r) => e.pullRequests(r).filter((p) => p.state === 'open').length);
    case 'close':
      await e.close();
      emu = undefined;
      return null;
  }
}

if (process.send) {
  process.on('message', (msg: { id: number; call: HostCall }) => {
    handle(msg.call).then(
      (value) => process.send!({ id: msg.id, ok: true, value }),
      (err: unknown) => process.send!({ id: msg.id, ok: false, error: err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : String(err) }),
    );
  });
  // The bench went away: do not linger.
  process.on('disconnect', () => {
    void (emu?.close() ?? Promise.resolve()).finally(() => process.exit(0));
  });
}
