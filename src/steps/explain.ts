/**
 * Why a lane of an Actions fleet left no result, read from the run itself:
 * its shard's job (cancelled, timed out, its runner lost, still running), the
 * annotations GitHub left on that job, or the approval gate that rejected the
 * plan so no wave ran.
 */
import type { LaneRecord } from '../core/model.js';
import type { RunJob, RunJobs } from '../ports.js';

export interface MissingCause {
  status: 'failed' | 'skipped';
  error: NonNullable<LaneRecord['error']>;
}

/** GitHub's annotation on a job killed at its `timeout-minutes`. */
const TIMEOUT = /exceeded the maximum execution time of (\d+) minutes?/i;
/** GitHub's annotations on a job whose runner went away. */
const RUNNER_LOST = /(runner has received a shutdown signal|lost communication with the server|runner .* did not connect)/i;

/** The job that ran a shard: its matrix leg is named after the shard id (`wave 1 (w0-s3)`). */
export function jobOfShard(jobs: RunJob[], shard: string): RunJob | undefined {
  return jobs.find((j) => j.name.endsWith(`(${shard})`)) ?? jobs.find((j) => j.name.includes(`(${shard})`) || j.name.endsWith(shard));
}

export class MissingResultExplainer {
  private jobs: RunJob[] | undefined;
  private rejection: Awaited<ReturnType<NonNullable<RunJobs['rejection']>>> | undefined;
  private readonly annotations = new Map<number, string[]>();

  constructor(private readonly run: RunJobs) {}

  async explain(shard: string | undefined): Promise<MissingCause> {
    this.jobs ??= await this.run.list();
    const job = shard ? jobOfShard(this.jobs, shard) : undefined;
    if (!job) return this.neverRan(shard);
    const where = job.html_url ? ` (${job.html_url})` : '';
    const notes = await this.annotationsOf(job);
    const timeout = notes.map((n) => TIMEOUT.exec(n)).find(Boolean);
    if (timeout || job.conclusion === 'timed_out') {
      const after = timeout ? ` after ${timeout[1]} minutes (the wave job's timeout-minutes)` : '';
      return failed('no-result', `job "${job.name}" timed out${after} before the lane left a result${where}`);
    }
    if (notes.some((n) => RUNNER_LOST.test(n)))
      return failed('lane-crashed', `job "${job.name}" lost its runner before the lane left a result: ${notes.find((n) => RUNNER_LOST.test(n))}${where}`);
    if (job.conclusion === 'cancelled') return failed('cancelled', `job "${job.name}" was cancelled before the lane left a result${where}`);
    if (job.status !== 'completed') return failed('no-result', `job "${job.name}" is still ${job.status}${where}`);
    const detail = notes.length ? `: ${notes[0]}` : '';
    return failed('no-result', `job "${job.name}" ended ${job.conclusion ?? 'without a conclusion'} before uploading the lane result${detail}${where}`);
  }

  private async neverRan(shard: string | undefined): Promise<MissingCause> {
    this.rejection ??= (await this.run.rejection?.()) ?? null;
    if (this.rejection) {
      const r = this.rejection;
      const said = r.comment ? `: "${r.comment}"` : '';
      return {
        status: 'skipped',
        error: {
          class: 'cancelled',
          message: `the plan was rejected at the approval gate (environment ${r.environment}) by ${r.reviewer}${said}; no lane ran`,
        },
      };
    }
    return failed('no-result', `no job ran shard ${shard ?? '?'} (its wave job was skipped or never started)`);
  }

  private async annotationsOf(job: RunJob): Promise<string[]> {
    if (job.id === undefined || !this.run.annotations || job.conclusion === 'success') return [];
    if (!this.annotations.has(job.id)) this.annotations.set(job.id, await this.run.annotations(job.id).catch(() => []));
    return this.annotations.get(job.id)!;
  }
}

function failed(cls: NonNullable<LaneRecord['error']>['class'], message: string): MissingCause {
  return { status: 'failed', error: { class: cls, message } };
}
