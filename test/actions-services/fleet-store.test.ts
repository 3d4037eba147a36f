/**
 * Fleet's artifact store (src/actions/artifact-store.ts) on the real client
 * against the emulated services: its complete listing reads a run past the
 * 1,000 artifacts the toolkit's REST listing stops at by default
 * (ACTIONS_ARTIFACT_MAX_ARTIFACT_COUNT, read once when the client loads:
 * lib/internal/shared/config.js). A fleet of 1,000 lanes has more, and a
 * re-run's job may see none of them on its own path, only through REST.
 */
import '../../src/actions/env-defaults.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegisteredJob } from '../support/actions-services/index.js';
import { READER, REPO, asJob, startWorld, twirp, type World } from './helpers.js';

const RUN = 301;
const COUNT = 1_010;
let world: World;

/** An artifact made the way the client makes one (create, upload to the signed URL, finalize), minus the zip. */
async function artifact(job: RegisteredJob, name: string): Promise<void> {
  const created = await twirp(job, 'ArtifactService/CreateArtifact', { name, version: 7 });
  const put = await fetch(String(created.signed_upload_url ?? created.signedUploadUrl), {
    method: 'PUT',
    headers: { 'x-ms-blob-type': 'BlockBlob' },
    body: 'x',
  });
  expect(put.status).toBe(201);
  expect((await twirp(job, 'ArtifactService/FinalizeArtifact', { name, size: '1' })).ok).toBe(true);
}

beforeAll(async () => {
  // The job's own listing shows only its own attempt: the earlier attempt's artifacts are reachable through REST alone.
  world = await startWorld({ artifacts: { internalList: 'attempt' } });
  world.services.startAttempt({ repo: REPO, runId: RUN, attempt: 1, kind: 'first' });
  // At most 500 a job: three jobs' worth.
  for (let j = 0; j * 500 < COUNT; j++) {
    const job = world.services.registerJob({ repo: REPO, runId: RUN, runAttempt: 1, jobName: `lanes ${j}` });
    for (let i = j * 500; i < Math.min(COUNT, (j + 1) * 500); i++) await artifact(job, `fleet-lane-l${String(i).padStart(4, '0')}.a1`);
  }
});
afterAll(() => world?.close());

describe("Fleet's artifact store", () => {
  it("lists every artifact of a run past 1,000 through REST (the entrypoint raises the toolkit's limit before the client loads)", async () => {
    const { ActionsArtifactStore } = await import('../../src/actions/artifact-store.js');
    world.services.startAttempt({ repo: REPO, runId: RUN, attempt: 2, kind: 'rerun-failed' });
    const reporter = world.services.registerJob({ repo: REPO, runId: RUN, runAttempt: 2, jobName: 'report' });
    const store = new ActionsArtifactStore({ token: READER, workflowRunId: RUN, repositoryOwner: 'acme', repositoryName: 'api' });
    expect(await asJob(reporter, () => store.list('fleet-lane-'))).toHaveLength(0);
    const listed = await asJob(reporter, () => store.list('fleet-lane-', { complete: true }));
    expect(listed).toHaveLength(COUNT);
    // The bundle evaluates modules in import order: env-defaults must come before anything that loads the client.
    const entry = readFileSync(join(import.meta.dirname, '../../src/actions/index.ts'), 'utf8');
    expect(entry.match(/^import .*$/m)?.[0]).toBe("import './env-defaults.js';");
  });

  it('cannot work on GitHub Enterprise Server: @actions/artifact v2+ refuses it, so the reusable workflow does not run there', async () => {
    const { ActionsArtifactStore } = await import('../../src/actions/artifact-store.js');
    const job = world.services.registerJob({ repo: REPO, runId: RUN, runAttempt: 1, jobName: 'on GHES' });
    const store = new ActionsArtifactStore();
    await expect(asJob({ ...job, env: { ...job.env, GITHUB_SERVER_URL: 'https://ghes.example.com' } }, () => store.list('fleet-'))).rejects.toThrow(
      '@actions/artifact v2.0.0+, upload-artifact@v4+ and download-artifact@v4+ are not currently supported on GHES.',
    );
  });
});
