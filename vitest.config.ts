import { availableParallelism } from 'node:os';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';

/**
 * GitHub's workflow parser ships source maps that point at sources it does not ship, and vite warns about each
 * file: hundreds of lines of noise in every run. Vitest installs its own logger, so the filter wraps it once resolved.
 */
function quietMissingSourcemaps(): Plugin {
  return {
    name: 'quiet-missing-sourcemaps',
    configResolved(config) {
      const warnOnce = config.logger.warnOnce.bind(config.logger);
      config.logger.warnOnce = (msg, opts) => {
        if (msg.startsWith('Sourcemap for ') && msg.includes('/node_modules/@actions/')) return;
        warnOnce(msg, opts);
      };
    },
  };
}

export default defineConfig({
  plugins: [quietMissingSourcemaps()],
  test: {
    include: ['test/**/*.test.ts'],
    // Generous: on a loaded 2-core machine a fleet against the emulator has taken over 30 s. Speed is the bench's
    // business (npm run bench), never a test's timeout.
    testTimeout: 90_000,
    hookTimeout: 90_000,
    pool: 'forks',
    // Most tests wait on processes (git, the workflow runner's jobs): one worker more than the machine has cores
    // keeps the cores busy (on 2 cores: 3 minutes instead of 5½ with one worker, vitest's default there).
    maxWorkers: availableParallelism() + 1,
    server: {
      deps: {
        // GitHub's workflow parser imports its JSON schemas without import attributes, which Node 20
        // refuses; inlined, vite transforms those imports.
        inline: ['@actions/workflow-parser', '@actions/expressions'],
      },
    },
  },
});
