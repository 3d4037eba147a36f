/**
 * What a cancelled run does, the same for the CLI and the action. Directives and Fleet's own git run in process
 * groups of their own, which a terminal's Ctrl-C or a runner's cancel never reaches, so Fleet ends them itself; and
 * the App tokens it minted are revoked even then, as create-github-app-token's post step does on a cancel: a few
 * seconds at most, before the runner's SIGKILL. No exit leaves a process of Fleet's.
 */
import { closeInheritedDescriptors } from './descriptors.js';
import { withholdFromProcessEnv } from '../util/directive-env.js';
import { killAllRunning } from '../workspace/processes.js';
import { closeSessions } from './session.js';

/** 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C. */
export const EXIT_INTERRUPTED = 130;

/** How long an interrupt waits for the App tokens' revocation before the process exits. */
const REVOKE_WAIT_MS = 3_000;

export interface InterruptOptions {
  /**
   * A first interrupt that stops gently (the CLI): the abort signal fires (no lane starts, running lanes stop),
   * every running group gets SIGTERM and, `killAfterMs` later, SIGKILL; only a second interrupt, or `stopAfterMs`
   * without an exit, stops at once. Without it (the action: the runner's SIGKILL follows within seconds) every
   * interrupt stops at once.
   */
  gentle?: { say(signal: NodeJS.Signals): void; killAfterMs: number; stopAfterMs: number };
  /** Before stopping at once: what the run can still leave behind (the CLI's manifest and report as they stand). */
  beforeExit?(): void;
}

/**
 * Installs the SIGINT and SIGTERM handler: the returned signal aborts on the first interrupt; stopping at once
 * kills every running group, closes every open session (its tokens revoked) and exits EXIT_INTERRUPTED.
 */
export function installInterruptHandler(opts: InterruptOptions = {}): { signal: AbortSignal; uninstall(): void } {
  const controller = new AbortController();
  let interrupts = 0;
  const stopAtOnce = () => {
    killAllRunning('SIGKILL');
    opts.beforeExit?.();
    void Promise.race([closeSessions().catch(() => undefined), new Promise((r) => setTimeout(r, REVOKE_WAIT_MS))]).finally(() =>
      process.exit(EXIT_INTERRUPTED),
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts++;
    const { gentle } = opts;
    if (!gentle || interrupts > 1) {
      controller.abort();
      return stopAtOnce();
    }
    gentle.say(signal);
    controller.abort();
    killAllRunning('SIGTERM');
    setTimeout(() => killAllRunning('SIGKILL'), gentle.killAfterMs).unref();
    // The run ends by itself after its grace; this only guards against a write that never returns.
    setTimeout(stopAtOnce, gentle.stopAfterMs).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    uninstall: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/**
 * The start of an entrypoint's process: Fleet's credentials leave process.env at once, so no child (git, a
 * directive) inherits them (they live in the returned `env`, less those named in `keep`), nor a descriptor the
 * process inherited open (descriptors.ts), and interrupts are handled. `end` closes what is left: every open session, and the git launcher.
 */
export function enterProcess(opts: InterruptOptions & { keep?: readonly string[] } = {}): {
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  end(): Promise<void>;
} {
  const env = withholdFromProcessEnv(opts.keep);
  closeInheritedDescriptors();
  const { signal, uninstall } = installInterruptHandler(opts);
  return {
    env,
    signal,
    end: async () => {
      uninstall();
      await closeSessions();
    },
  };
}
