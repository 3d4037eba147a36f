/**
 * Artifacts across the attempts of a run, with the real `@actions/artifact`
 * client. GitHub documents none of this; the defaults follow the reports
 * cited in each test name, and every point is a switch (ArtifactRules):
 *  - a "re-run failed jobs" attempt may upload a name an earlier attempt
 *    uploaded, and both are kept (Kong/insomnia#10253);
 *  - ids are not ordered by attempt: the earlier upload can hold the higher id,
 *    so `listArtifacts({ latest: true })` returns it (Systemorph/MeshWeaver#4303,
 *    dotnet/orleans#11328);
 *  - the internal ListArtifacts of a partial re-run shows earlier attempts'
 *    artifacts, but GetSignedArtifactURL refuses them with 404 "workflow run
 *    not found" while the REST path (`findBy`) downloads them
 *    (actions/download-artifact#486, MeshInspector/MeshLib#6474);
 *  - a "re-run all jobs" attempt does not see earlier attempts' artifacts
 *    internally (actions/upload-artifact#585); REST lists every attempt.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startActionsServices, type ActionsServices, type ArtifactRules, type RegisteredJob } from '../support/actions-services/index.js';
import { READER, REPO, asJob, loadClients, startWorld, writeTree, type World } from './helpers.js';

const RUN = 201;
let world: World;
let clients: Awaited<ReturnType<typeof loadClients>>;
let n = 0;

beforeAll(async () => {
  world = await startWorld();
  clients = await loadClients();
});

afterAll(async () => {
  world.emu.assertNoViolations();
  expect(world.emu.responseProblems).toEqual([]);
  expect(world.services.errors).toEqual([]);
  await world.close();
});

const findBy = { token: READER, workflowRunId: RUN, repositoryOwner: 'acme', repositoryName: 'api' };

function job(services: ActionsServices, runAttempt: number, jobName: string, runId = RUN): RegisteredJob {
  return services.registerJob({ repo: REPO, runId, runAttempt, jobName });
}

async function upload(j: RegisteredJob, name: string, content: string) {
  const root = path.join(world.work, `src-${++n}`);
  const files = await writeTree(root, { 'result.json': content });
  return asJob(j, () => clients.artifact.uploadArtifact(name, files, root));
}

const names = (list: Array<{ name: string }>) => list.map((a) => a.name).sort();

describe('re-run failed jobs (default rules)', () => {
  let lane1: number;
  let other1: number;
  let lane2: number;

  beforeAll(async () => {
    const s = world.services;
    s.startAttempt({ repo: REPO, runId: RUN, attempt: 1, kind: 'first' });
    lane1 = (await upload(job(s, 1, 'lane-a'), 'lane-a', '{"status":"failed"}')).id!;
    other1 = (await upload(job(s, 1, 'lane-b'), 'lane-b', '{"status":"ok"}')).id!;
    s.startAttempt({ repo: REPO, runId: RUN, attempt: 2, kind: 'rerun-failed' });
  });

  it('lets the re-run job upload the name attempt 1 uploaded, and keeps both (Kong/insomnia#10253)', async () => {
    lane2 = (await upload(job(world.services, 2, 'lane-a'), 'lane-a', '{"status":"ok"}')).id!;
    const laneA = world.services.artifacts({ runId: RUN }).filter((a) => a.name === 'lane-a');
    expect(laneA.map((a) => [a.attempt, a.finalized])).toEqual([
      [1, true],
      [2, true],
    ]);
  });

  it("gives attempt 1's upload the higher id, so listArtifacts({ latest: true }) returns the older one (MeshWeaver#4303, orleans#11328)", async () => {
    expect(lane1).toBeGreaterThan(lane2);
    const report = job(world.services, 2, 'report');
    const internal = await asJob(report, () => clients.artifact.listArtifacts({ latest: true }));
    expect(internal.artifacts.find((a) => a.name === 'lane-a')?.id).toBe(lane1);
    const rest = await clients.artifact.listArtifacts({ latest: true, findBy });
    expect(rest.artifacts.find((a) => a.name === 'lane-a')?.id).toBe(lane1);
  });

  it('lists attempt 1\'s artifacts internally, but GetSignedArtifactURL answers 404 "workflow run not found" for them (download-artifact#486)', async () => {
    const report = job(world.services, 2, 'report');
    const { artifacts } = await asJob(report, () => clients.artifact.listArtifacts());
    expect(names(artifacts)).toEqual(['lane-a', 'lane-a', 'lane-b']);
    await expect(asJob(report, () => clients.artifact.downloadArtifact(other1, { path: path.join(world.work, 'dl-1') }))).rejects.toThrow(
      'Failed to GetSignedArtifactURL: Received non-retryable error: Failed request: (404) Not Found: workflow run not found',
    );
    // The attempt's own upload downloads internally.
    await asJob(report, () => clients.artifact.downloadArtifact(lane2, { path: path.join(world.work, 'dl-2') }));
    expect(await readFile(path.join(world.work, 'dl-2', 'result.json'), 'utf8')).toBe('{"status":"ok"}');
  });

  it("downloads attempt 1's artifact through the REST path, findBy (MeshInspector/MeshLib#6474)", async () => {
    await clients.artifact.downloadArtifact(other1, { path: path.join(world.work, 'dl-3'), findBy });
    expect(await readFile(path.join(world.work, 'dl-3', 'result.json'), 'utf8')).toBe('{"status":"ok"}');
  });

  it('inherits through a chain of partial re-runs, and stops at a re-run of all jobs (actions/upload-artifact#585)', async () => {
    const s = world.services;
    s.startAttempt({ repo: REPO, runId: RUN, attempt: 3, kind: 'rerun-all' });
    const fresh = job(s, 3, 'report');
    expect((await asJob(fresh, () => clients.artifact.listArtifacts())).artifacts).toEqual([]);
    await upload(job(s, 3, 'lane-a'), 'lane-a', '{"status":"ok","attempt":3}');
    expect(names((await asJob(fresh, () => clients.artifact.listArtifacts())).artifacts)).toEqual(['lane-a']);
    s.startAttempt({ repo: REPO, runId: RUN, attempt: 4, kind: 'rerun-failed' });
    const attempts = (await asJob(job(s, 4, 'report'), () => clients.artifact.listArtifacts())).artifacts.map(
      (a) => s.artifacts().find((x) => x.id === a.id)!.attempt,
    );
    expect(attempts).toEqual([3]);
    // REST is run-scoped: every attempt's uploads.
    const rest = await clients.artifact.listArtifacts({ findBy });
    expect(names(rest.artifacts)).toEqual(['lane-a', 'lane-a', 'lane-a', 'lane-b']);
  });
});

describe('the switches (ArtifactRules)', () => {
  /** Attempt 1 uploads `lane-a`, attempt 2 (re-run failed jobs) starts; `run` uploads in attempt 2. */
  async function twoAttempts(rules: Partial<ArtifactRules>, run: (s: ActionsServices, first: number) => Promise<void>): Promise<void> {
    const s = await startActionsServices({ artifacts: rules });
    try {
      s.startAttempt({ repo: REPO, runId: 1, attempt: 1, kind: 'first' });
      const first = (await upload(job(s, 1, 'lane-a', 1), 'lane-a', '{"attempt":1}')).id!;
      s.startAttempt({ repo: REPO, runId: 1, attempt: 2, kind: 'rerun-failed' });
      await run(s, first);
    } finally {
      await s.close();
    }
  }

  it('reuploadAcrossAttempts: conflict answers the re-upload 409 (the behaviour super-productivity#9611 describes)', async () => {
    await twoAttempts({ reuploadAcrossAttempts: 'conflict' }, async (s) => {
      await expect(upload(job(s, 2, 'lane-a', 1), 'lane-a', '{"attempt":2}')).rejects.toThrow(
        '(409) Conflict: an artifact with this name already exists on the workflow run',
      );
    });
  });

  it("artifactIds: ascending makes latest: true pick the re-run's upload", async () => {
    await twoAttempts({ artifactIds: 'ascending' }, async (s, first) => {
      const second = (await upload(job(s, 2, 'lane-a', 1), 'lane-a', '{"attempt":2}')).id!;
      expect(second).toBeGreaterThan(first);
      const { artifacts } = await asJob(job(s, 2, 'report', 1), () => clients.artifact.listArtifacts({ latest: true }));
      expect(artifacts.map((a) => a.id)).toEqual([second]);
    });
  });

  it("earlierAttemptAccess: allow signs a URL for attempt 1's artifact", async () => {
    await twoAttempts({ earlierAttemptAccess: 'allow' }, async (s, first) => {
      const out = path.join(world.work, `allow-${++n}`);
      await asJob(job(s, 2, 'report', 1), () => clients.artifact.downloadArtifact(first, { path: out }));
      expect(await readFile(path.join(out, 'result.json'), 'utf8')).toBe('{"attempt":1}');
    });
  });

  it('internalList: attempt hides attempt 1 from a partial re-run', async () => {
    await twoAttempts({ internalList: 'attempt' }, async (s) => {
      expect((await asJob(job(s, 2, 'report', 1), () => clients.artifact.listArtifacts())).artifacts).toEqual([]);
    });
  });

  it('refuses a registration the runner did not announce, and a first attempt numbered 2', async () => {
    const s = await startActionsServices();
    try {
      expect(() => job(s, 1, 'x', 9)).toThrow('call startAttempt first');
      expect(() => s.startAttempt({ repo: REPO, runId: 9, attempt: 2, kind: 'first' })).toThrow("attempt 2 cannot be of kind 'first'");
    } finally {
      await s.close();
    }
  });
});
