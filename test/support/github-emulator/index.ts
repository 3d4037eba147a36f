/**
 * GitHub emulator for tests: a real HTTP server on 127.0.0.1 speaking REST
 * (checked against GitHub's OpenAPI description), GraphQL (the subset Fleet
 * sends) and git smart HTTP (real clones and pushes) over in-memory state and
 * bare repositories on disk. See README.md beside this file.
 */
export { Emulator, startEmulator, HttpError } from './emulator.js';
export { specLoadStats, loadSpec, matchRoute, operationById, responseValidator } from './openapi.js';
export type { GitHubFieldError, LoadStats } from './openapi.js';
export * from './types.js';
export type { PullRecord, RepoRecord, CheckRunRecord, StatusRecord, Permission } from './state.js';
export { ci } from './ci.js';
export type { HeldCi } from './ci.js';
export { EmulatorClock } from './clock.js';
export { signAppJwt, JWT_MESSAGES, DEFAULT_INSTALLATION_SCOPES } from './apps.js';
export { SCOPES, restNeed, permits, acceptedPermissions } from './scopes.js';
export type { ScopeNeed, Access } from './scopes.js';
