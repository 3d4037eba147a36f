/**
 * A GitHub emulator, its Actions services and the workflow runner over them,
 * for tests that run real workflow files.
 */
import { startActionsServices, type ActionsServices } from '../support/actions-services/index.js';
import { ActionsRunner, type RunnerOptions } from '../support/actions-runner/index.js';
import { startEmulator, type Emulator, type EmulatorOptions } from '../support/github-emulator/index.js';

export interface Actions {
  emu: Emulator;
  services: ActionsServices;
  runner: ActionsRunner;
  close(): Promise<void>;
}

export async function startActions(
  opts: { emulator?: EmulatorOptions; runner?: Partial<RunnerOptions>; services?: Parameters<typeof startActionsServices>[0] } = {},
): Promise<Actions> {
  const emu = await startEmulator({ validateResponses: true, ...opts.emulator });
  const services = await startActionsServices({ now: () => emu.clock.now(), ...opts.services });
  const runner = new ActionsRunner({ emulator: emu, services, ...opts.runner });
  return {
    emu,
    services,
    runner,
    async close() {
      await runner.close();
      await services.close();
      await emu.close();
    },
  };
}

/** Creates a repository holding these files (workflows under .github/workflows/). */
export async function repoWith(emu: Emulator, fullName: string, files: Record<string, string>): Promise<void> {
  const [owner, name] = fullName.split('/') as [string, string];
  await emu.createRepo({ owner, name, files: { 'README.md': `# ${name}\n`, ...files } });
}
