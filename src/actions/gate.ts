/**
 * The approval gate of the reusable workflow holds only if its environment
 * has required reviewers: GitHub creates an environment a job names without
 * any protection rule, and such a gate opens at once. So the plan job reads
 * the environment (GET /repos/{owner}/{repo}/environments/{name}, which a
 * GITHUB_TOKEN reads with `actions: read`:
 * https://docs.github.com/rest/deployments/environments#get-an-environment)
 * and refuses the fleet when no reviewer would hold it.
 *
 * And a gate can wait 30 days, a run lasts at most 35: the plan artifact must
 * outlive that, which the repository's artifact retention may not allow.
 */
import { RUN_LIFETIME_DAYS } from '../core/doctor.js';
import { environmentRules, type EnvironmentRule, type GitHubApi } from '../github/actions-run.js';

const MANAGE_ENVIRONMENTS = 'https://docs.github.com/actions/how-tos/deploy/configure-and-manage-deployments/manage-environments';
const RETENTION_SETTINGS =
  'https://docs.github.com/repositories/managing-your-repositorys-settings-and-features/enabling-features-for-your-repository/managing-github-actions-settings-for-a-repository';

/**
 * What Fleet asks for on every upload: GitHub's default and the most a public repository allows. A gated run lives up
 * to 35 days and "Re-run failed jobs" works up to 30 days after the run, reading the plan and lane artifacts of
 * attempt 1; a repository or organization setting below this caps it (@actions/artifact reads GITHUB_RETENTION_DAYS).
 */
export const ARTIFACT_RETENTION_DAYS = 90;

function howTo(environment: string, repo: string): string {
  return (
    `To set it up: in ${repo}, Settings → Environments → New environment "${environment}" (or open it), tick "Required reviewers", ` +
    `add the people or teams who approve fleet plans (up to six), and Save protection rules. ` +
    `Required reviewers exist on public repositories on every plan; on private and internal repositories only with GitHub Enterprise ` +
    `(GitHub Free, Pro and Team offer them on public repositories only): ${MANAGE_ENVIRONMENTS}. ` +
    `Or choose to run without a gate, visibly: approval-environment none (the dispatch template reads it from the repository variable FLEET_APPROVAL_ENVIRONMENT).`
  );
}

/** Undefined when `environment` holds the waves for a reviewer; otherwise why it would not, and how to fix it. */
export async function approvalGateProblem(api: GitHubApi, repo: { owner: string; repo: string }, environment: string): Promise<string | undefined> {
  const full = `${repo.owner}/${repo.repo}`;
  const head = `input approval-environment: the approval gate would not hold the lanes:`;
  let rules: EnvironmentRule[];
  try {
    rules = await environmentRules(api, repo, environment);
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 404) {
      return `${head} ${full} has no environment "${environment}", and GitHub creates a missing environment without protection rules when a job names it, so the gate would open at once. ${howTo(environment, full)}`;
    }
    if (status === 403) {
      return `${head} the plan job could not read environment "${environment}" of ${full} (403: ${(err as Error).message}). The plan job's GITHUB_TOKEN needs \`actions: read\`; the calling workflow must grant it (a called workflow gets no more than its caller).`;
    }
    throw err;
  }
  const reviewers = rules.filter((r) => r.type === 'required_reviewers').flatMap((r) => r.reviewers ?? []);
  if (reviewers.length) return undefined;
  return `${head} environment "${environment}" of ${full} has no required reviewers, so the gate would open at once. ${howTo(environment, full)}`;
}

/**
 * What the plan summary says about how long this run's artifacts live, and a
 * warning when a gate could outwait them. `retentionDays`: the repository's
 * (or organization's) setting, GITHUB_RETENTION_DAYS, which caps what Fleet asks for.
 */
export function retentionNote(retentionDays: number | undefined, asked: number, gated: boolean, now: Date): { line: string; warning?: string } {
  const kept = Math.min(asked, retentionDays ?? asked);
  const until = new Date(now.getTime() + kept * 86_400_000).toISOString().slice(0, 10);
  const line = `Artifacts of this run (the plan, each lane's result, the report) are kept ${kept} days, until ${until}.`;
  if (!gated || kept >= RUN_LIFETIME_DAYS) return { line };
  const warning =
    `This repository keeps artifacts ${kept} days (its artifact retention setting caps the ${asked} Fleet asks for), but the approval gate can wait 30 days and a run can last ${RUN_LIFETIME_DAYS}: ` +
    `approve this plan before ${until}, or the waves will not find it. Raise the retention to at least ${RUN_LIFETIME_DAYS} days in Settings → Actions → General → Artifact and log retention (${RETENTION_SETTINGS}).`;
  return { line: `${line} **Approve before ${until}**: the plan expires then.`, warning };
}
