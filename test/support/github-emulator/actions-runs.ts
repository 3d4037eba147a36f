/**
 * Workflow runs driven by the Actions runner (test/support/actions-runner):
 * jobs listed per attempt (`filter=latest` shows each job's most recent
 * execution, `filter=all` every attempt's), the annotations a job left,
 * and the run controls a user reaches over REST — re-run, re-run failed
 * jobs, cancel, dispatch, and the review of a pending deployment — handed to
 * the runner that registered itself with `emu.onRunControl`.
 *
 * https://docs.github.com/rest/actions/workflow-jobs, https://docs.github.com/rest/actions/workflow-runs,
 * https://docs.github.com/rest/checks/runs#list-check-run-annotations
 */
import type { CheckRunAnnotation, WorkflowJobRecord, WorkflowRunRecord } from './state.js';

export interface JobAnnotation {
  level: 'error' | 'warning' | 'notice';
  message: string;
  title?: string;
}

export interface PendingDeployment {
  environmentId: number;
  environment: string;
  reviewers: string[];
  waitingSince: string;
}

export interface RunReviewRecord {
  state: 'approved' | 'rejected';
  comment: string;
  environments: Array<{ id: number; name: string }>;
  reviewer: string;
}

/** What the runner answers for the run controls (errors are thrown as `{ status, message }`). */
export interface RunControl {
  rerun(runId: number, failedOnly: boolean): void;
  cancel(runId: number): void;
  dispatch(repo: string, workflow: string, ref: string, inputs: Record<string, unknown>): Promise<void>;
  pendingDeployments(runId: number): PendingDeployment[];
  review(runId: number, environmentIds: number[], state: 'approved' | 'rejected', comment: string, reviewer: string): void;
  reviews(runId: number): RunReviewRecord[];
  /** A repository's environment as the runner knows it (`runner.setEnvironment`, or made by a job that named it). */
  environment(repo: string, name: string): EnvironmentRecord | undefined;
}

export interface EnvironmentRecord {
  id: number;
  name: string;
  /** Required reviewers (logins); empty: an environment with no protection rule. */
  reviewers: string[];
  createdAt: string;
}

export class RunControlError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface Ctx {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body?: unknown;
  op: { docsUrl: string };
  auth: { login: string | null };
}

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

type Handler<C> = (c: C) => Promise<Reply>;

export interface RunsHost<C> {
  repoFor(c: C, need: 'pull' | 'push' | 'admin'): { r: { owner: string; name: string }; key: string };
  paginate<T>(c: C, items: T[]): { items: T[]; headers: Record<string, string> };
  httpError(status: number, body: Record<string, unknown>): Error;
  run(id: number): WorkflowRunRecord | undefined;
  jobShape(job: WorkflowJobRecord, run: WorkflowRunRecord, c: C): Record<string, unknown>;
  userShape(login: string): Record<string, unknown>;
  annotations(jobId: number): JobAnnotation[] | undefined;
  /** A check run created over REST: the annotations its create and update requests sent (undefined: no such check run). */
  checkRunAnnotations(id: number, repoKey: string): CheckRunAnnotation[] | undefined;
  control(): RunControl | null;
  /** An environment set on the emulator itself (no runner attached). */
  ownEnvironment(repoKey: string, name: string): EnvironmentRecord | undefined;
  apiUrl(): string;
  htmlUrl(): string;
}

/** Each job's most recent execution up to `attempt` (jobs are keyed by name across attempts). */
export function latestJobs(jobs: WorkflowJobRecord[], attempt = Infinity): WorkflowJobRecord[] {
  const byName = new Map<string, WorkflowJobRecord>();
  for (const j of jobs) {
    const a = j.run_attempt ?? 1;
    if (a > attempt) continue;
    const seen = byName.get(j.name);
    if (!seen || (seen.run_attempt ?? 1) <= a) byName.set(j.name, j);
  }
  return [...byName.values()].sort((x, y) => x.id - y.id);
}

export function addRunHandlers<C extends Ctx>(H: Record<string, Handler<C>>, h: RunsHost<C>): void {
  const notFound = (c: C) => h.httpError(404, { message: 'Not Found', documentation_url: c.op.docsUrl, status: '404' });
  const runOf = (c: C, need: 'pull' | 'push' = 'pull') => {
    const { key } = h.repoFor(c, need);
    const run = h.run(Number(c.params.run_id));
    if (!run || run.repoKey !== key) throw notFound(c);
    return run;
  };
  const control = (c: C): RunControl => {
    const rc = h.control();
    if (!rc) throw h.httpError(501, { message: 'No Actions runner is attached to the emulator', documentation_url: c.op.docsUrl });
    return rc;
  };
  const guard = async <T>(c: C, fn: () => T | Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof RunControlError) throw h.httpError(err.status, { message: err.message, documentation_url: c.op.docsUrl, status: String(err.status) });
      throw err;
    }
  };
  const jobsReply = (c: C, run: WorkflowRunRecord, jobs: WorkflowJobRecord[]): Reply => {
    const page = h.paginate(c, jobs);
    return { status: 200, body: { total_count: jobs.length, jobs: page.items.map((j) => h.jobShape(j, run, c)) }, headers: page.headers };
  };

  H['actions/list-jobs-for-workflow-run'] = async (c) => {
    const run = runOf(c);
    return jobsReply(c, run, c.query.filter === 'all' ? run.jobs : latestJobs(run.jobs));
  };
  H['actions/list-jobs-for-workflow-run-attempt'] = async (c) => {
    const run = runOf(c);
    const attempt = Number(c.params.attempt_number);
    if (attempt > run.run_attempt) throw notFound(c);
    return jobsReply(c, run, latestJobs(run.jobs, attempt));
  };
  H['checks/list-annotations'] = async (c) => {
    const { key } = h.repoFor(c, 'pull');
    const sent = h.checkRunAnnotations(Number(c.params.check_run_id), key);
    if (sent) {
      const page = h.paginate(c, sent);
      const body = page.items.map((a) => ({
        path: a.path,
        start_line: a.start_line,
        end_line: a.end_line,
        start_column: a.start_column ?? null,
        end_column: a.end_column ?? null,
        annotation_level: a.annotation_level,
        title: a.title ?? '',
        message: a.message,
        raw_details: a.raw_details ?? '',
        blob_href: `${h.htmlUrl()}/${key}/blob/HEAD/${a.path}`,
      }));
      return { status: 200, body, headers: page.headers };
    }
    const list = h.annotations(Number(c.params.check_run_id));
    if (!list) throw notFound(c);
    const page = h.paginate(c, list);
    const body = page.items.map((a) => ({
      path: '.github',
      start_line: 1,
      end_line: 1,
      start_column: null,
      end_column: null,
      annotation_level: a.level === 'error' ? 'failure' : a.level,
      title: a.title ?? '',
      message: a.message,
      raw_details: '',
      blob_href: `${h.htmlUrl()}/.github`,
    }));
    return { status: 200, body, headers: page.headers };
  };
  H['actions/re-run-workflow'] = async (c) => {
    const run = runOf(c, 'push');
    await guard(c, () => control(c).rerun(run.id, false));
    return { status: 201, body: {} };
  };
  H['actions/re-run-workflow-failed-jobs'] = async (c) => {
    const run = runOf(c, 'push');
    await guard(c, () => control(c).rerun(run.id, true));
    return { status: 201, body: {} };
  };
  H['actions/cancel-workflow-run'] = async (c) => {
    const run = runOf(c, 'push');
    if (run.status === 'completed')
      throw h.httpError(409, { message: 'Cannot cancel a workflow run that is completed.', documentation_url: c.op.docsUrl, status: '409' });
    await guard(c, () => control(c).cancel(run.id));
    return { status: 202, body: {} };
  };
  H['actions/create-workflow-dispatch'] = async (c) => {
    const { r } = h.repoFor(c, 'push');
    const b = (c.body ?? {}) as { ref: string; inputs?: Record<string, unknown> };
    await guard(c, () => control(c).dispatch(`${r.owner}/${r.name}`, String(c.params.workflow_id), b.ref, b.inputs ?? {}));
    return { status: 204 };
  };
  H['actions/get-pending-deployments-for-run'] = async (c) => {
    const run = runOf(c);
    const body = control(c)
      .pendingDeployments(run.id)
      .map((p) => ({
        environment: {
          id: p.environmentId,
          node_id: Buffer.from(`EN${p.environmentId}`).toString('base64'),
          name: p.environment,
          url: `${h.apiUrl()}/repos/${run.repoKey}/environments/${encodeURIComponent(p.environment)}`,
          html_url: `${h.htmlUrl()}/${run.repoKey}/deployments/activity_log?environments_filter=${encodeURIComponent(p.environment)}`,
        },
        wait_timer: 0,
        wait_timer_started_at: p.waitingSince,
        current_user_can_approve: c.auth.login ? p.reviewers.includes(c.auth.login) : false,
        reviewers: p.reviewers.map((login) => ({ type: 'User', reviewer: h.userShape(login) })),
      }));
    return { status: 200, body };
  };
  H['actions/review-pending-deployments-for-run'] = async (c) => {
    const run = runOf(c, 'pull');
    const b = c.body as { environment_ids: number[]; state: 'approved' | 'rejected'; comment: string };
    await guard(c, () => control(c).review(run.id, b.environment_ids, b.state, b.comment, c.auth.login ?? ''));
    return { status: 200, body: [] };
  };
  // https://docs.github.com/rest/deployments/environments#get-an-environment: anyone with read access; a fine-grained
  // token needs "Actions" repository permissions (read) (scopes.ts). An environment that does not exist is 404.
  H['repos/get-environment'] = async (c) => {
    const { key } = h.repoFor(c, 'pull');
    // With no runner attached, the environments a test set on the emulator (emu.setEnvironment).
    const rc = h.control();
    const env = rc ? rc.environment(key, String(c.params.environment_name)) : h.ownEnvironment(key, String(c.params.environment_name));
    if (!env) throw notFound(c);
    const rules = env.reviewers.length
      ? [
          {
            id: env.id * 10,
            node_id: Buffer.from(`GA${env.id * 10}`).toString('base64'),
            prevent_self_review: false,
            type: 'required_reviewers',
            reviewers: env.reviewers.map((login) => ({ type: 'User', reviewer: h.userShape(login) })),
          },
        ]
      : [];
    return {
      status: 200,
      body: {
        id: env.id,
        node_id: Buffer.from(`EN${env.id}`).toString('base64'),
        name: env.name,
        url: `${h.apiUrl()}/repos/${key}/environments/${encodeURIComponent(env.name)}`,
        html_url: `${h.htmlUrl()}/${key}/deployments/activity_log?environments_filter=${encodeURIComponent(env.name)}`,
        created_at: env.createdAt,
        updated_at: env.createdAt,
        protection_rules: rules,
      },
    };
  };
  H['actions/get-reviews-for-run'] = async (c) => {
    const run = runOf(c);
    const body = control(c)
      .reviews(run.id)
      .map((r) => ({
        state: r.state,
        comment: r.comment,
        environments: r.environments.map((e) => ({
          id: e.id,
          node_id: Buffer.from(`EN${e.id}`).toString('base64'),
          name: e.name,
          url: `${h.apiUrl()}/repos/${run.repoKey}/environments/${encodeURIComponent(e.name)}`,
          html_url: `${h.htmlUrl()}/${run.repoKey}/deployments/activity_log?environments_filter=${encodeURIComponent(e.name)}`,
          created_at: run.created_at,
          updated_at: run.updated_at,
        })),
        user: h.userShape(r.reviewer),
      }));
    return { status: 200, body };
  };
}
