/**
 * The run's artifacts through @actions/artifact. Needs ACTIONS_RUNTIME_TOKEN
 * and ACTIONS_RESULTS_URL, which the runner gives to JavaScript actions only:
 * action.yml hands them to this process on purpose (see docs/actions/limits.md, "Why the action is a composite").
 *
 * Two paths reach an artifact. The job's own (the results service, with the
 * runtime token) costs no API calls but, after "Re-run failed jobs", may not
 * list an earlier attempt's upload or may refuse to sign its URL
 * (actions/download-artifact#486). The run's REST endpoints (`findBy`, with a
 * token that has `actions: read`) see every attempt, at the price of API
 * calls. So: list on the job's path, read the REST listing only when asked
 * for the complete one, and download on the job's path first, falling back
 * to REST when it refuses.
 */
import { DefaultArtifactClient } from '@actions/artifact';
import type { ArtifactStore, StoredArtifact } from '../ports.js';
import { ARTIFACT_RETENTION_DAYS } from './gate.js';

export interface FindBy {
  token: string;
  workflowRunId: number;
  repositoryOwner: string;
  repositoryName: string;
}

interface Listed {
  name: string;
  id: number;
  digest?: string | undefined;
}

function withPrefix(digest: string | undefined): string | undefined {
  if (!digest) return undefined;
  return digest.startsWith('sha256:') ? digest : `sha256:${digest}`;
}

export class ActionsArtifactStore implements ArtifactStore {
  private readonly client = new DefaultArtifactClient();

  /** `run`: this run's REST coordinates (and a token with `actions: read`), for what the job's own path cannot reach. */
  constructor(
    private readonly run?: FindBy,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  async upload(name: string, files: string[], rootDir: string): Promise<StoredArtifact> {
    const r = await this.client.uploadArtifact(name, files, rootDir, { retentionDays: ARTIFACT_RETENTION_DAYS });
    if (r.id === undefined) throw new Error(`artifact ${name} was not uploaded`);
    return { name, id: r.id, digest: withPrefix(r.digest) };
  }

  async list(prefix: string, opts: { complete?: boolean } = {}): Promise<StoredArtifact[]> {
    const byId = new Map<number, Listed>();
    for (const a of (await this.client.listArtifacts()).artifacts) byId.set(a.id, a);
    if (opts.complete && this.run) {
      for (const a of (await this.client.listArtifacts({ findBy: this.run })).artifacts) byId.set(a.id, a);
    }
    return [...byId.values()]
      .filter((a) => a.name.startsWith(prefix))
      .map((a) => ({ name: a.name, id: a.id, digest: withPrefix(a.digest) }))
      .sort((a, b) => a.name.localeCompare(b.name) || a.id - b.id);
  }

  async download(artifact: StoredArtifact, dir: string): Promise<void> {
    const expected = artifact.digest ? { expectedHash: artifact.digest } : {};
    let r: { digestMismatch?: boolean };
    try {
      r = await this.client.downloadArtifact(artifact.id, { path: dir, ...expected });
    } catch (err) {
      if (!this.run) throw err;
      // An earlier attempt's artifact: the results service may no longer sign its URL; the run's REST path still serves it.
      this.log(`${artifact.name}: the job's artifact path refused it (${(err as Error).message}); reading it through the run's REST endpoints`);
      r = await this.client.downloadArtifact(artifact.id, { path: dir, ...expected, findBy: this.run });
    }
    if (r.digestMismatch) throw new Error(`artifact ${artifact.name} does not match its digest: refusing a result that changed after upload`);
  }
}

/**
 * The artifacts of another run of this repository (the run a chained fleet continues): listed and downloaded only
 * through that run's REST endpoints, with a token that has `actions: read`; the job's own path sees this run only.
 */
export class OtherRunArtifactStore implements ArtifactStore {
  private readonly client = new DefaultArtifactClient();

  constructor(private readonly run: FindBy) {}

  upload(name: string): Promise<StoredArtifact> {
    return Promise.reject(new Error(`artifact ${name}: another run's artifacts are read, never written`));
  }

  async list(prefix: string): Promise<StoredArtifact[]> {
    return (await this.client.listArtifacts({ findBy: this.run })).artifacts
      .filter((a) => a.name.startsWith(prefix))
      .map((a) => ({ name: a.name, id: a.id, digest: withPrefix(a.digest) }))
      .sort((a, b) => a.name.localeCompare(b.name) || a.id - b.id);
  }

  async download(artifact: StoredArtifact, dir: string): Promise<void> {
    const r = await this.client.downloadArtifact(artifact.id, { path: dir, findBy: this.run, ...(artifact.digest ? { expectedHash: artifact.digest } : {}) });
    if (r.digestMismatch) throw new Error(`artifact ${artifact.name} of run ${this.run.workflowRunId} does not match its digest`);
  }
}
