/**
 * The real `@actions/artifact` client (DefaultArtifactClient, v6) against the
 * emulated results service and blob storage, within one run attempt: upload,
 * list and download through the runtime token (internal path) and through
 * the REST API (`findBy`), digests, immutability, delete, the 409 for a taken
 * name, the 500-per-job limit and token checks; plus the REST artifact
 * operations in the GitHub emulator, validated against GitHub's OpenAPI
 * description (requests and responses).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegisteredJob } from '../support/actions-services/index.js';
import { READER, REPO, asJob, loadClients, startWorld, twirp, writeTree, type World } from './helpers.js';

const RUN = 101;
let world: World;
let clients: Awaited<ReturnType<typeof loadClients>>;
let n = 0;

beforeAll(async () => {
  world = await startWorld();
  clients = await loadClients();
  world.services.startAttempt({ repo: REPO, runId: RUN, attempt: 1, kind: 'first', headBranch: 'main', headSha: 'a'.repeat(40) });
});

afterAll(async () => {
  world.emu.assertNoViolations();
  expect(world.emu.responseProblems).toEqual([]);
  expect(world.services.errors).toEqual([]);
  await world.close();
});

const newJob = (jobName = `job-${++n}`): RegisteredJob => world.services.registerJob({ repo: REPO, runId: RUN, runAttempt: 1, jobName });
const findBy = (token = READER) => ({ token, workflowRunId: RUN, repositoryOwner: 'acme', repositoryName: 'api' });
const dir = (name: string): string => path.join(world.work, name);

/** Uploads `files` (relative path → content) under a fresh folder as artifact `name`. */
async function upload(job: RegisteredJob, name: string, files: Record<string, string>) {
  const root = dir(`src-${++n}`);
  const paths = await writeTree(root, files);
  return asJob(job, () => clients.artifact.uploadArtifact(name, paths, root));
}

describe('upload, list, download (toolkit: upload/upload-artifact.js, find/list-artifacts.js, download/download-artifact.js)', () => {
  const files = { 'report.json': '{"ok":true}\n', 'logs/a/one.log': 'one\n', 'logs/b/deep/two.log': 'two\n' };
  let id: number;
  let digest: string;

  it('uploads several files in nested folders as one zip and finalizes size and sha256 digest', async () => {
    const up = await upload(newJob('build'), 'lane-1', files);
    id = up.id!;
    digest = `sha256:${up.digest}`;
    const stored = world.services.artifactContent(id)!;
    expect(stored.length).toBe(up.size);
    expect(`sha256:${createHash('sha256').update(stored).digest('hex')}`).toBe(digest);
    expect(world.services.artifacts({ runId: RUN })).toMatchObject([
      { id, name: 'lane-1', attempt: 1, finalized: true, size: up.size, digest, mimeType: 'application/zip' },
    ]);
    // Create, Put Block, Put Block List, Finalize.
    expect(world.services.requests.map((r) => `${r.kind}:${r.rpc ?? r.method}`)).toEqual([
      'twirp:ArtifactService/CreateArtifact',
      'blob:PUT',
      'blob:PUT',
      'twirp:ArtifactService/FinalizeArtifact',
    ]);
  });

  it("lists the run attempt's artifacts for another job with its digest (internal ListArtifacts)", async () => {
    const { artifacts } = await asJob(newJob('report'), () => clients.artifact.listArtifacts());
    expect(artifacts).toEqual([{ name: 'lane-1', id, size: expect.any(Number), createdAt: expect.any(Date), digest }]);
  });

  it('downloads and extracts it with the expected digest (internal GetSignedArtifactURL)', async () => {
    const out = dir('dl-internal');
    const res = await asJob(newJob(), () => clients.artifact.downloadArtifact(id, { path: out, expectedHash: digest }));
    expect(res.digestMismatch).toBe(false);
    expect(await readFile(path.join(out, 'logs/b/deep/two.log'), 'utf8')).toBe('two\n');
    expect(await readFile(path.join(out, 'report.json'), 'utf8')).toBe('{"ok":true}\n');
  });

  it('lists and downloads through the REST API with findBy (a token with read access; redirect to the blob)', async () => {
    const { artifacts } = await clients.artifact.listArtifacts({ findBy: findBy() });
    expect(artifacts).toContainEqual({ name: 'lane-1', id, size: expect.any(Number), createdAt: expect.any(Date), digest });
    const out = dir('dl-rest');
    const res = await clients.artifact.downloadArtifact(id, { path: out, expectedHash: digest, findBy: findBy() });
    expect(res.digestMismatch).toBe(false);
    expect(await readFile(path.join(out, 'logs/a/one.log'), 'utf8')).toBe('one\n');
    expect(world.emu.count({ operationId: 'actions/download-artifact', status: 302 })).toBe(1);
    expect(world.emu.count({ operationId: 'actions/list-workflow-run-artifacts', token: READER })).toBe(1);
  });

  it('reports a digest mismatch when the stored bytes changed, on both paths (download-artifact.js expectedHash)', async () => {
    const up = await upload(newJob(), 'to-corrupt', { 'a.txt': 'a\n' });
    world.services.corruptArtifact(up.id!);
    const expectedHash = `sha256:${up.digest}`;
    const internal = await asJob(newJob(), () => clients.artifact.downloadArtifact(up.id!, { path: dir('bad-1'), expectedHash }));
    const rest = await clients.artifact.downloadArtifact(up.id!, { path: dir('bad-2'), expectedHash, findBy: findBy() });
    expect([internal.digestMismatch, rest.digestMismatch]).toEqual([true, true]);
  });

  it('stores a skipArchive upload as the raw file and downloads it under its name (upload-artifact.js skipArchive, download-artifact.js Content-Disposition)', async () => {
    const root = dir('raw');
    const [file] = await writeTree(root, { 'summary.json': '{"lanes":3}' });
    const up = await asJob(newJob(), () => clients.artifact.uploadArtifact('ignored', [file!], root, { skipArchive: true }));
    expect(world.services.artifacts().find((a) => a.id === up.id)).toMatchObject({ name: 'summary.json', mimeType: 'application/json' });
    const out = dir('raw-out');
    await asJob(newJob(), () => clients.artifact.downloadArtifact(up.id!, { path: out }));
    expect(await readFile(path.join(out, 'summary.json'), 'utf8')).toBe('{"lanes":3}');
  });
});

describe("GitHub's rules", () => {
  it('refuses a second CreateArtifact of a name in the same attempt: 409 (actions/upload-artifact#478, k0rdent/kcm#1636)', async () => {
    await upload(newJob(), 'taken', { 'a.txt': 'a' });
    await expect(upload(newJob(), 'taken', { 'b.txt': 'b' })).rejects.toThrow(
      'Failed to CreateArtifact: Received non-retryable error: Failed request: (409) Conflict: an artifact with this name already exists on the workflow run',
    );
  });

  it('keeps a finalized artifact immutable: its upload URL no longer writes (Azure 409 BlobAlreadyExists)', async () => {
    const job = newJob();
    const created = await twirp(job, 'ArtifactService/CreateArtifact', { name: 'sealed', version: 7 });
    const put = (data: string) => fetch(String(created.signedUploadUrl), { method: 'PUT', headers: { 'x-ms-blob-type': 'BlockBlob' }, body: data });
    expect((await put('first')).status).toBe(201);
    const fin = await twirp(job, 'ArtifactService/FinalizeArtifact', { name: 'sealed', size: '5', hash: 'sha256:x' });
    const again = await put('second');
    expect([again.status, again.headers.get('x-ms-error-code')]).toEqual([409, 'BlobAlreadyExists']);
    expect(world.services.artifactContent(Number(fin.artifactId))!.toString()).toBe('first');
  });

  it('deletes with the runtime token; the name can then be uploaded again (delete/delete-artifact.js)', async () => {
    const job = newJob();
    const first = await upload(job, 'lane-redo', { 'a.txt': 'a' });
    const deleted = await asJob(job, () => clients.artifact.deleteArtifact('lane-redo'));
    expect(deleted.id).toBe(first.id);
    const octokit = clients.getOctokit(READER);
    await expect(octokit.rest.actions.getArtifact({ owner: 'acme', repo: 'api', artifact_id: first.id! })).rejects.toMatchObject({ status: 404 });
    const second = await upload(job, 'lane-redo', { 'a.txt': 'b' });
    expect(second.id).not.toBe(first.id);
  });

  it('deletes through the REST API with findBy: write access needed (403 for a read-only token)', async () => {
    const up = await upload(newJob(), 'rest-delete', { 'a.txt': 'a' });
    await expect(clients.artifact.deleteArtifact('rest-delete', { findBy: findBy() })).rejects.toMatchObject({ status: 403 });
    expect(await clients.artifact.deleteArtifact('rest-delete', { findBy: findBy(world.emu.token!) })).toEqual({ id: up.id });
    expect(world.services.artifacts().some((a) => a.id === up.id)).toBe(false);
  });

  it('allows at most 500 artifacts per job (actions/upload-artifact#470, "raised to 500 Artifacts per job")', async () => {
    const job = newJob('many');
    // 499 CreateArtifact calls as the client makes them (a real upload allocates 8 MiB
    // buffers: 500 of them take seconds), then the client's own 500th and 501st.
    for (let i = 0; i < 499; i++) expect((await twirp(job, 'ArtifactService/CreateArtifact', { name: `m-${i}`, version: 7 })).ok).toBe(true);
    expect((await upload(job, 'm-499', { 'x.txt': 'x' })).id).toBeGreaterThan(0);
    await expect(upload(job, 'm-500', { 'x.txt': 'x' })).rejects.toThrow('Failed to CreateArtifact: Received non-retryable error: Failed request: (412)');
    expect(world.services.artifacts().filter((a) => a.jobName === 'many')).toHaveLength(500);
    // Another job of the attempt has its own allowance.
    expect((await upload(newJob(), 'after-many', { 'a.txt': 'a' })).id).toBeGreaterThan(0);
  });

  it('refuses an edited runtime token (the clients only decode it: util.js getBackendIdsFromToken) and the token of a job that ended, with 401', async () => {
    const job = newJob();
    const [head, payload, sig] = job.runtimeToken.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    claims.ac = JSON.stringify([{ Scope: 'refs/heads/release', Permission: 3 }]);
    const edited = `${head}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${sig}`;
    await expect(asJob({ ...job, env: { ...job.env, ACTIONS_RUNTIME_TOKEN: edited } }, () => clients.artifact.listArtifacts())).rejects.toThrow(
      '(401) Unauthorized',
    );
    world.services.endJob(job.runtimeToken);
    await expect(asJob(job, () => clients.artifact.listArtifacts())).rejects.toThrow('(401) Unauthorized: token is no longer valid');
  });
});

describe('REST artifact operations (docs.github.com/rest/actions/artifacts), response shapes validated', () => {
  it('lists per run (name filter, paging), per repository, gets one with workflow_run and digest', async () => {
    const octokit = clients.getOctokit(READER);
    const own = { owner: 'acme', repo: 'api' };
    const one = await octokit.rest.actions.listWorkflowRunArtifacts({ ...own, run_id: RUN, name: 'lane-1' });
    expect(one.data.total_count).toBe(1);
    const a = one.data.artifacts[0]!;
    expect(a).toMatchObject({
      name: 'lane-1',
      expired: false,
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      workflow_run: { id: RUN, head_branch: 'main', head_sha: 'a'.repeat(40) },
    });
    expect(a.archive_download_url).toBe(`${world.emu.url}/repos/acme/api/actions/artifacts/${a.id}/zip`);
    const paged = await octokit.rest.actions.listWorkflowRunArtifacts({ ...own, run_id: RUN, per_page: 2 });
    expect(paged.data.artifacts).toHaveLength(2);
    expect(paged.headers.link).toContain('rel="next"');
    const all = await octokit.paginate(octokit.rest.actions.listArtifactsForRepo, { ...own, per_page: 100 });
    expect(all.length).toBe(world.services.artifacts({ repo: REPO }).filter((x) => x.finalized).length);
    expect((await octokit.rest.actions.getArtifact({ ...own, artifact_id: a.id })).data.id).toBe(a.id);
    expect((await octokit.rest.actions.listWorkflowRunArtifacts({ ...own, run_id: 999 })).data.total_count).toBe(0);
  });

  it('needs `actions: read` on a GITHUB_TOKEN-like token, `actions: write` to delete (docs: permissions for GITHUB_TOKEN)', async () => {
    const mint = (actions: 'read' | 'write' | 'none') => world.emu.mintInstallationToken({ repositories: [REPO], scopes: { contents: 'read', actions } });
    const { artifacts } = await clients.artifact.listArtifacts({ findBy: findBy(mint('read')) });
    expect(artifacts.length).toBeGreaterThan(0);
    await expect(clients.artifact.listArtifacts({ findBy: findBy(mint('none')) })).rejects.toMatchObject({
      status: 403,
      message: expect.stringContaining('Resource not accessible by integration'),
    });
    await upload(newJob(), 'scoped-delete', { 'a.txt': 'a' });
    await expect(clients.artifact.deleteArtifact('scoped-delete', { findBy: findBy(mint('read')) })).rejects.toMatchObject({ status: 403 });
    await clients.artifact.deleteArtifact('scoped-delete', { findBy: findBy(mint('write')) });
  });

  it('answers download with a 302 to a signed blob URL (Range works on it), only for archive_format zip', async () => {
    const octokit = clients.getOctokit(READER);
    const [a] = world.services.artifacts({ runId: RUN }).filter((x) => x.name === 'lane-1');
    const res = await octokit.rest.actions.downloadArtifact({
      owner: 'acme',
      repo: 'api',
      artifact_id: a!.id,
      archive_format: 'zip',
      request: { redirect: 'manual' },
    });
    expect(res.status).toBe(302);
    const blob = await fetch(String(res.headers.location));
    expect(Buffer.from(await blob.arrayBuffer()).equals(world.services.artifactContent(a!.id)!)).toBe(true);
    const part = await fetch(String(res.headers.location), { headers: { range: 'bytes=0-3' } });
    expect([part.status, part.headers.get('content-range'), Buffer.from(await part.arrayBuffer()).toString('hex')]).toEqual([
      206,
      `bytes 0-3/${a!.size}`,
      '504b0304',
    ]);
    const tampered = new URL(String(res.headers.location));
    tampered.searchParams.set('se', '2099-01-01T00:00:00Z');
    expect((await fetch(tampered)).status).toBe(403);
    await expect(octokit.rest.actions.downloadArtifact({ owner: 'acme', repo: 'api', artifact_id: a!.id, archive_format: 'tar' })).rejects.toMatchObject({
      status: 404,
    });
  });
});

// Last: these move the shared emulator clock forward.
describe('expiry on the emulator clock', () => {
  it('refuses a runtime token past its lifetime, and a signed URL past `se`', async () => {
    const job = world.services.registerJob({ repo: REPO, runId: RUN, runAttempt: 1, jobName: 'short', ttlSec: 60 });
    const up = await upload(job, 'short-lived', { 'a.txt': 'a' });
    const octokit = clients.getOctokit(READER);
    const res = await octokit.rest.actions.downloadArtifact({
      owner: 'acme',
      repo: 'api',
      artifact_id: up.id!,
      archive_format: 'zip',
      request: { redirect: 'manual' },
    });
    world.emu.clock.advance(61_000);
    await expect(asJob(job, () => clients.artifact.listArtifacts())).rejects.toThrow('(401) Unauthorized: token is expired');
    // The REST redirect is signed for one minute ("This URL expires after 1 minute").
    const late = await fetch(String(res.headers.location));
    expect([late.status, late.headers.get('x-ms-error-code')]).toEqual([403, 'AuthenticationFailed']);
  });

  it('expires an artifact after its retention: REST says expired and answers the download 410', async () => {
    const up = await upload(newJob(), 'retained', { 'a.txt': 'a' });
    const root = dir('retention');
    const [file] = await writeTree(root, { 'b.txt': 'b' });
    const short = await asJob(newJob(), () => clients.artifact.uploadArtifact('one-day', [file!], root, { retentionDays: 1 }));
    world.emu.clock.advance(2 * 86_400_000);
    const octokit = clients.getOctokit(READER);
    const get = (id: number) => octokit.rest.actions.getArtifact({ owner: 'acme', repo: 'api', artifact_id: id }).then((r) => r.data.expired);
    expect([await get(up.id!), await get(short.id!)]).toEqual([false, true]);
    await expect(octokit.rest.actions.downloadArtifact({ owner: 'acme', repo: 'api', artifact_id: short.id!, archive_format: 'zip' })).rejects.toMatchObject({
      status: 410,
    });
    expect((await asJob(newJob(), () => clients.artifact.listArtifacts())).artifacts.some((a) => a.id === short.id)).toBe(false);
  });
});
