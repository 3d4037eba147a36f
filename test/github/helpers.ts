import { newLaneRecord, type LaneRecord } from '../../src/core/model.js';
import type { LaneSpec } from '../../src/core/model.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import type { PublishInput } from '../../src/ports.js';
import { startEmulator, type Emulator, type EmulatorOptions } from '../support/github-emulator/index.js';
import { createOctokit, type CreateOctokitOptions, type FleetOctokit } from '../../src/github/octokit.js';
import { GitHubForge, markerFor, type GitHubForgeOptions } from '../../src/github/forge.js';
import type { Logger } from '../../src/ports.js';

const localWorkspace = new GitWorkspace();

/** A GitHub lane with the fleet's defaults. */
export function lane(repo: string, extra: Partial<LaneSpec> = {}): LaneSpec {
  const id = extra.id ?? repo.split('/').pop()!.toLowerCase();
  return {
    id,
    repo,
    repo_kind: 'github',
    title: id,
    directive: 'd',
    run: 'true',
    checks: [],
    depends_on: [],
    owns: [],
    never: [],
    exclusive: false,
    branch: `fleet/t/${id}`,
    base: undefined,
    index: 0,
    review: null,
    ...extra,
  };
}

/** No pacing between requests: tests run against the emulator, whose own limits are what is being tested. */
export const NO_PACING = { writeMs: 0, searchMs: 0, notificationsMs: 0 };

export interface Harness {
  emu: Emulator;
  token: string;
  octokit: FleetOctokit;
  forge: GitHubForge;
  /** Everything logged through the logger (warnings and errors). */
  log: string[];
  logger: Logger;
  client(opts?: Partial<CreateOctokitOptions>): FleetOctokit;
  makeForge(opts?: Partial<GitHubForgeOptions>): GitHubForge;
}

export async function harness(emuOpts: EmulatorOptions = {}, clientOpts: Partial<CreateOctokitOptions> = {}): Promise<Harness> {
  const token = typeof emuOpts.token === 'string' ? emuOpts.token : 'ghs_emulatorTokenForFleetTests0001';
  const emu = await startEmulator({ ...emuOpts, token });
  const log: string[] = [];
  const logger: Logger = { info: () => {}, warn: (m) => log.push(m), error: (m) => log.push(m) };
  const client = (opts: Partial<CreateOctokitOptions> = {}) => createOctokit({ token, apiUrl: emu.url, logger, pacing: NO_PACING, ...clientOpts, ...opts });
  const octokit = client();
  const makeForge = (opts: Partial<GitHubForgeOptions> = {}) =>
    new GitHubForge({
      octokit,
      token,
      name: 'demo',
      serverUrl: `${emu.url}/git`,
      logger,
      pollMs: 10,
      mergeableWaitMs: 5_000,
      ciPollMs: 20,
      ciMaxPollMs: 100,
      ciStartGraceMs: 300,
      ...opts,
    });
  return { emu, token, octokit, forge: makeForge(), log, logger, client, makeForge };
}

/**
 * What a lane does up to its push, through the forge's clone URL and git environment: clone into `dir`, apply
 * `change`, commit, push with a lease. Returns the lane's record (built on `previous` when given).
 */
export async function pushLaneCommit(h: Harness, l: LaneSpec, dir: string, change: (dir: string) => Promise<void>, previous?: LaneRecord): Promise<LaneRecord> {
  const env = h.forge.gitEnv();
  const cloned = await localWorkspace.clone(h.forge.cloneUrl(l), dir, { branch: l.branch, env });
  await change(dir);
  const files = await localWorkspace.changedFiles(dir);
  const commit = await localWorkspace.commit(dir, `${l.title}\n\nFleet-Lane: ${l.id}`);
  const pushed = await localWorkspace.push(dir, l.branch, commit, cloned.remote_branch_commit, env);
  if (!pushed.ok) throw new Error(`push failed: ${pushed.detail}`);
  return {
    ...(previous ?? newLaneRecord({ repo: l.repo, lane: l.id, wave: 0, branch: l.branch, depends_on: [] })),
    status: 'running',
    base_branch: cloned.base_branch,
    base_commit: cloned.base_commit,
    commit,
    changed_files: files,
  };
}

/** A publish request for a lane with the demo fleet's marker and no labels, reviewers or assignees. */
export function publishInput(l: LaneSpec, record: LaneRecord, extra: Partial<PublishInput> = {}): PublishInput {
  return {
    lane: l,
    record,
    title: `demo: ${l.id}`,
    body: `${markerFor('demo', l.id)}\nThis change was made by the Fleet **demo**.`,
    draft: false,
    labels: [],
    reviewers: [],
    team_reviewers: [],
    assignees: [],
    ...extra,
  };
}
