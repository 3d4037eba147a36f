/** The bench's handle on a GitHub emulator running in a child process (emulator-host.ts). */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CreateRepoSpec, EmulatorOptions, TokenSpec } from '../../test/support/github-emulator/index.js';
import type { HostCall, LoggedRequest, StartInfo } from './emulator-host.js';

export type { LoggedRequest };

export class RemoteEmulator {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private exited: Error | undefined;
  private started: StartInfo | undefined;

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m: { id: number; ok: boolean; value?: unknown; error?: string }) => {
      const w = this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id);
      if (m.ok) w.resolve(m.value);
      else w.reject(new Error(`emulator: ${m.error}`));
    });
    child.on('exit', (code, signal) => {
      this.exited = new Error(`the emulator process exited (${code ?? signal})`);
      for (const w of this.waiting.values()) w.reject(this.exited);
      this.waiting.clear();
    });
  }

  static async start(opts: EmulatorOptions, cwd: string): Promise<RemoteEmulator> {
    const child = fork(fileURLToPath(new URL('./emulator-host.ts', import.meta.url)), [], {
      cwd,
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const emu = new RemoteEmulator(child);
    emu.started = await emu.call<StartInfo>({ op: 'start', opts });
    return emu;
  }

  get info(): StartInfo {
    if (!this.started) throw new Error('the emulator has not started');
    return this.started;
  }

  get url(): string {
    return this.info.url;
  }

  private call<T>(call: HostCall): Promise<T> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: (v) => resolve(v as T), reject });
      this.child.send({ id, call });
    });
  }

  createRepos(specs: CreateRepoSpec[], concurrency = 16): Promise<{ created: number; ms: number }> {
    return this.call({ op: 'createRepos', specs, concurrency });
  }

  addToken(token: string, spec: TokenSpec): Promise<void> {
    return this.call({ op: 'addToken', token, spec });
  }

  /** Every request logged since index `from` (the log's length is the next `from`). */
  requests(from = 0): Promise<LoggedRequest[]> {
    return this.call({ op: 'requests', from });
  }

  resetLog(): Promise<void> {
    return this.call({ op: 'resetLog' });
  }

  /** Requests GitHub's API description refuses, and handler errors: Fleet bugs or emulator gaps. */
  problems(): Promise<{ violations: string[]; errors: string[] }> {
    return this.call({ op: 'problems' });
  }

  /** Open PRs of each repository (owner/name), in order. */
  openPulls(repos: string[]): Promise<number[]> {
    return this.call({ op: 'openPulls', repos });
  }

  /** CPU seconds the emulator process (self) and its git http-backend children have used so far, and its RSS. */
  cpu(): Promise<{ self_s: number; children_s: number | null; rss_mb: number }> {
    return this.call({ op: 'cpu' });
  }

  async close(): Promise<void> {
    if (!this.exited) await this.call({ op: 'close' }).catch(() => undefined);
    this.child.disconnect();
    await new Promise<void>((resolve) => (this.exited || this.child.exitCode !== null ? resolve() : this.child.once('exit', () => resolve())));
  }
}
