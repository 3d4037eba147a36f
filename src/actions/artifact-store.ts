/**
 * The run's artifacts through @actions/artifact. Needs ACTIONS_RUNTIME_TOKEN
 * and ACTIONS_RESULTS_URL, which the runner gives to JavaScript actions only:
 * action.yml hands them to this process on purpose (see docs/github-actions.md).
 */
import { DefaultArtifactClient } from '@actions/artifact';
import type { ArtifactStore, StoredArtifact } from '../ports.js';

export interface FindBy {
  token: string;
  workflowRunId: number;
  repositoryOwner: string;
  repositoryName: string;
}

export class ActionsArtifactStore implements ArtifactStore {
  private readonly client = new DefaultArtifactClient();

  /** `findBy` reads another run's artifacts (resume); uploads always go to this run. */
  constructor(private readonly findBy?: FindBy) {}

  async upload(name: string, files: string[], rootDir: string): Promise<StoredArtifact> {
    const r = await this.client.uploadArtifact(name, files, rootDir, { retentionDays: 30 });
    if (r.id === undefined) throw new Error(`artifact ${name} was not uploaded`);
    return { name, id: r.id, digest: r.digest };
  }

  async list(prefix: string): Promise<StoredArtifact[]> {
    const r = await this.client.listArtifacts({ latest: true, ...(this.findBy ? { findBy: this.findBy } : {}) });
    return r.artifacts
      .filter((a) => a.name.startsWith(prefix))
      .map((a) => ({ name: a.name, id: a.id, digest: a.digest }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  async download(artifact: StoredArtifact, dir: string): Promise<void> {
    const r = await this.client.downloadArtifact(artifact.id, {
      path: dir,
      ...(artifact.digest ? { expectedHash: artifact.digest } : {}),
      ...(this.findBy ? { findBy: this.findBy } : {}),
    });
    if (r.digestMismatch) throw new Error(`artifact ${artifact.name} does not match its digest: refusing a result that changed after upload`);
  }
}
