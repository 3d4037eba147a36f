/**
 * Emulated GitHub Actions services for tests: the results service (artifacts,
 * cache v2) and signed blob storage that the real `@actions/artifact` and
 * `@actions/cache` clients talk to unchanged. See README.md beside this file.
 */
export { ActionsServices, startActionsServices } from './services.js';
export type * from './types.js';
