/**
 * The REST calls the action makes on its own repository and workflow run: the run it continues, the workflow it
 * dispatches, the run's jobs (with their annotations and the approval gate's verdict), the report's check run, and
 * the approval environment. Typed here; src/actions decides when to make them.
 */
import type { RunJob, RunJobs } from '../ports.js';

/** The slice of Octokit the action uses for the run's own repository. */
export interface GitHubApi {
  request(route: string, params?: Record<string, unknown>): Promise<{ data: unknown }>;
}

export interface Repo {
  owner: string;
  repo: string;
}

/** What the action reads of a workflow run (GET /repos/{owner}/{repo}/actions/runs/{run_id}). */
export interface WorkflowRun {
  path?: string;
  event?: string;
  head_branch?: string | null;
  repository?: { full_name?: string };
  head_repository?: { full_name?: string } | null;
}

export async function getWorkflowRun(api: GitHubApi, repo: Repo, runId: number): Promise<WorkflowRun> {
  const { data } = await api.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}', { ...repo, run_id: runId });
  return data as WorkflowRun;
}

/** Starts a run of the workflow `workflowId` (its file name) on `ref` with `inputs`. */
export async function dispatchWorkflow(api: GitHubApi, repo: Repo, workflowId: string, ref: string, inputs: Record<string, string>): Promise<void> {
  await api.request('POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches', { ...repo, workflow_id: workflowId, ref, inputs });
}

/** The run's jobs (every page: a big fleet has thousands), their annotations, and the approval gate's verdict. */
export function runJobs(api: GitHubApi, repo: Repo, runId: number): RunJobs {
  return {
    async list(): Promise<RunJob[]> {
      const jobs: RunJob[] = [];
      for (let page = 1; ; page++) {
        const { data } = await api.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs', {
          ...repo,
          run_id: runId,
          filter: 'latest',
          per_page: 100,
          page,
        });
        const batch = (data as { jobs: RunJob[]; total_count: number }).jobs;
        jobs.push(...batch.map((j) => ({ id: j.id, name: j.name, status: j.status, conclusion: j.conclusion, html_url: j.html_url })));
        if (batch.length < 100 || jobs.length >= (data as { total_count: number }).total_count) break;
      }
      return jobs;
    },
    async annotations(jobId: number): Promise<string[]> {
      const { data } = await api.request('GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations', { ...repo, check_run_id: jobId, per_page: 50 });
      return (data as Array<{ message: string }>).map((a) => a.message);
    },
    async rejection() {
      const { data } = await api.request('GET /repos/{owner}/{repo}/actions/runs/{run_id}/approvals', { ...repo, run_id: runId });
      const rejected = (data as Array<{ state: string; comment: string; user: { login: string }; environments: Array<{ name?: string }> }>).find(
        (r) => r.state === 'rejected',
      );
      return rejected ? { environment: rejected.environments.map((e) => e.name).join(', '), reviewer: rejected.user.login, comment: rejected.comment } : null;
    },
  };
}

export interface CheckRunOutput {
  title: string;
  summary: string;
  annotations?: unknown[];
}

/** Creates a completed check run on `headSha`; its id, for the updates that append more annotations. */
export async function createCheckRun(
  api: GitHubApi,
  repo: Repo,
  run: { name: string; headSha: string; conclusion: string; detailsUrl?: string; output: CheckRunOutput },
): Promise<number> {
  const { data } = await api.request('POST /repos/{owner}/{repo}/check-runs', {
    ...repo,
    name: run.name,
    head_sha: run.headSha,
    status: 'completed',
    conclusion: run.conclusion,
    ...(run.detailsUrl ? { details_url: run.detailsUrl } : {}),
    output: run.output,
  });
  return (data as { id: number }).id;
}

export async function updateCheckRun(api: GitHubApi, repo: Repo, checkRunId: number, output: CheckRunOutput): Promise<void> {
  await api.request('PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}', { ...repo, check_run_id: checkRunId, output });
}

export interface EnvironmentRule {
  type?: string;
  reviewers?: unknown[];
}

/** A deployment environment's protection rules (GET /repos/{owner}/{repo}/environments/{name}); rejects with GitHub's status. */
export async function environmentRules(api: GitHubApi, repo: Repo, environment: string): Promise<EnvironmentRule[]> {
  const { data } = await api.request('GET /repos/{owner}/{repo}/environments/{environment_name}', { ...repo, environment_name: environment });
  return (data as { protection_rules?: EnvironmentRule[] }).protection_rules ?? [];
}
