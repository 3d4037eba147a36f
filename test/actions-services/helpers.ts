/**
 * Shared set-up for the Actions services tests: the GitHub emulator (REST,
 * response schemas checked) with the services attached, the environment a
 * job's JavaScript action sees, and the real toolkit clients loaded after
 * GITHUB_API_URL is set (`@actions/github` reads it when first imported).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { startActionsServices, type ActionsServices, type ActionsServicesOptions, type RegisteredJob } from '../support/actions-services/index.js';

export const REPO = 'acme/api';
/** A token that may read but not write `acme/api` (REST reads need read access). */
export const READER = 'ghs_actionsreader000000000000000000001';

export interface World {
  emu: Emulator;
  services: ActionsServices;
  work: string;
  close(): Promise<void>;
}

/** Emulator + services + a scratch folder; sets GITHUB_API_URL / GITHUB_SERVER_URL until `close()`. */
export async function startWorld(opts: ActionsServicesOptions = {}): Promise<World> {
  const emu = await startEmulator({ validateResponses: true });
  await emu.createRepo({ owner: 'acme', name: 'api', files: { 'README.md': '# api\n' } });
  emu.addToken(READER, { login: 'reader', default: 'none', permissions: { [REPO]: 'pull' } });
  // One clock for both: advancing `emu.clock` expires runtime tokens, signed URLs and artifacts too.
  const services = await startActionsServices({ now: () => emu.clock.now(), ...opts });
  emu.attachActionsServices(services.restBackend());
  const work = await mkdtemp(path.join(os.tmpdir(), 'actions-services-'));
  const restoreEnv = setEnv({
    GITHUB_API_URL: emu.url,
    // The toolkit refuses GHES: a *.localhost host passes its check (Node never resolves it, the
    // clients only read the hostname).
    GITHUB_SERVER_URL: `http://github.localhost:${emu.port}`,
    GITHUB_WORKSPACE: work,
    RUNNER_TEMP: path.join(work, '_temp'),
  });
  const restoreStdout = quietStdout();
  return {
    emu,
    services,
    work,
    async close() {
      restoreStdout();
      restoreEnv();
      await services.close();
      await emu.close();
      await rm(work, { recursive: true, force: true });
    },
  };
}

/** The real clients, imported once GITHUB_API_URL points at the emulator. */
export async function loadClients() {
  const [artifact, cache, github] = await Promise.all([import('@actions/artifact'), import('@actions/cache'), import('@actions/github')]);
  return { artifact: new artifact.DefaultArtifactClient(), cache, getOctokit: github.getOctokit };
}

/** Runs `fn` with the job's environment (runtime token, results URL, cache v2), restored afterwards. */
export async function asJob<T>(job: RegisteredJob, fn: () => Promise<T>): Promise<T> {
  const restore = setEnv(job.env);
  try {
    return await fn();
  } finally {
    restore();
  }
}

/**
 * A results-service call made the way the toolkit's twirp clients make it (POST,
 * JSON with proto field names, the job's bearer token), for set-up the real
 * clients cannot do cheaply. The job's backend ids are filled in.
 */
export async function twirp(job: RegisteredJob, rpc: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${job.env.ACTIONS_RESULTS_URL}twirp/github.actions.results.api.v1.${rpc}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${job.runtimeToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ workflow_run_backend_id: job.workflowRunBackendId, workflow_job_run_backend_id: job.workflowJobRunBackendId, ...body }),
  });
  return (await res.json()) as Record<string, unknown>;
}

/** Sets variables (undefined deletes) and returns a function that puts the old values back. */
export function setEnv(vars: Record<string, string | undefined>): () => void {
  const old = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  apply(vars);
  return () => apply(old);
}

function apply(vars: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

/** Writes files (path → content) under `root`, creating folders. */
export async function writeTree(root: string, files: Record<string, string>): Promise<string[]> {
  const out: string[] = [];
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(root, rel);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, content);
    out.push(file);
  }
  return out;
}

/**
 * `@actions/core` logs with process.stdout.write (and `::add-mask::` for every
 * signed URL); drop it unless ACTIONS_SERVICES_VERBOSE is set. The test
 * reporter writes from vitest's main process, not this fork.
 */
function quietStdout(): () => void {
  if (process.env.ACTIONS_SERVICES_VERBOSE) return () => undefined;
  const write = process.stdout.write;
  process.stdout.write = (() => true) as typeof process.stdout.write;
  return () => {
    process.stdout.write = write;
  };
}
