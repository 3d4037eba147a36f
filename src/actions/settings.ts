/**
 * The action's inputs as one validated settings object (the actions/checkout
 * input-helper pattern). action.yml passes every input as a FLEET_* variable,
 * so no input is ever spliced into a shell script.
 */
import * as z from 'zod';

const bool = (dflt: 'true' | 'false') =>
  z
    .enum(['true', 'false', ''])
    .default(dflt)
    .transform((v) => (v === '' ? dflt === 'true' : v === 'true'));
const optionalInt = (min: number, max: number, dflt = '') =>
  z
    .string()
    .default(dflt)
    .transform((v, ctx) => {
      if (v.trim() === '') return undefined;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be a whole number from ${min} to ${max}, got "${v}"` });
        return z.NEVER;
      }
      return n;
    });

const SettingsSchema = z.object({
  FLEET_MODE: z.enum(['plan', 'lane', 'report']),
  FLEET_FILE: z.string().default(''),
  FLEET_DIRECTIVE_OVERRIDE: z.string().default(''),
  FLEET_TOKEN: z.string().default(''),
  FLEET_RUN_TOKEN: z.string().default(''),
  FLEET_SHARD: z.string().default(''),
  FLEET_PLAN_DIGEST: z.string().default(''),
  FLEET_WAVE_JOBS: optionalInt(1, 64, '8'),
  FLEET_MAX_PARALLEL: optionalInt(1, 256),
  FLEET_DRY_RUN: bool('false'),
  FLEET_CHECK_NAME: z.string().default('Fleet'),
  FLEET_FAIL_ON_LANE_FAILURE: bool('true'),
  FLEET_WORKSPACE_DIR: z.string().default(''),
  FLEET_APPROVAL_ENVIRONMENT: z.string().default(''),
  GITHUB_RETENTION_DAYS: z.string().default(''),
  GITHUB_REPOSITORY: z.string().default(''),
  GITHUB_SHA: z.string().default(''),
  GITHUB_RUN_ID: z.string().default(''),
  GITHUB_RUN_ATTEMPT: z.string().default('1'),
  GITHUB_SERVER_URL: z.string().default('https://github.com'),
  RUNNER_TEMP: z.string().default(''),
});

export interface Settings {
  mode: 'plan' | 'lane' | 'report';
  file: string;
  directive: string | undefined;
  token: string;
  /** For the run's own repository: the check run and the run's jobs (GITHUB_TOKEN by default). */
  runToken: string;
  shard: string;
  /** The plan job's `plan-digest` output (lane and report jobs): the only plan they accept. */
  planDigest: string | undefined;
  waveJobs: number;
  maxParallel: number | undefined;
  dryRun: boolean;
  checkName: string;
  failOnLaneFailure: boolean;
  workspace: string;
  repository: { owner: string; repo: string } | undefined;
  sha: string;
  runId: number | undefined;
  /** GITHUB_RUN_ATTEMPT: every artifact name carries it (see steps/matrix.ts). */
  runAttempt: number;
  runUrl: string | undefined;
  /** plan — the environment whose required reviewers must approve the plan (checked before planning). */
  approvalEnvironment: string | undefined;
  /** The repository's artifact retention (GITHUB_RETENTION_DAYS), which caps what an upload asks for. */
  retentionDays: number | undefined;
}

const INPUT_NAMES: Record<string, string> = {
  FLEET_MODE: 'mode',
  FLEET_FILE: 'fleet-file',
  FLEET_TOKEN: 'token',
  FLEET_SHARD: 'shard',
  FLEET_PLAN_DIGEST: 'plan-digest',
  FLEET_WAVE_JOBS: 'wave-jobs',
  FLEET_MAX_PARALLEL: 'max-parallel',
  FLEET_DRY_RUN: 'dry-run',
  FLEET_FAIL_ON_LANE_FAILURE: 'fail-on-lane-failure',
};

export function readSettings(env: NodeJS.ProcessEnv): { ok: true; settings: Settings } | { ok: false; problems: string[] } {
  const parsed = SettingsSchema.safeParse(env);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = String(issue.path[0]);
      problems.push(`input ${INPUT_NAMES[key] ?? key}: ${issue.message}`);
    }
    return { ok: false, problems };
  }
  const e = parsed.data;
  if (!e.FLEET_TOKEN) problems.push('input token: a token is required (a GitHub App installation token or a PAT that can push to the targets)');
  if (e.FLEET_MODE === 'plan' && !e.FLEET_FILE) problems.push('input fleet-file: the plan needs the path of the fleet file');
  if (e.FLEET_MODE === 'lane' && !e.FLEET_SHARD) problems.push('input shard: a lane job needs the shard id from the plan (matrix.shard)');
  if (problems.length) return { ok: false, problems };
  const [owner, repo] = e.GITHUB_REPOSITORY.split('/');
  const runId = e.GITHUB_RUN_ID ? Number(e.GITHUB_RUN_ID) : undefined;
  return {
    ok: true,
    settings: {
      mode: e.FLEET_MODE,
      file: e.FLEET_FILE,
      directive: e.FLEET_DIRECTIVE_OVERRIDE.trim() || undefined,
      token: e.FLEET_TOKEN,
      runToken: e.FLEET_RUN_TOKEN || e.FLEET_TOKEN,
      shard: e.FLEET_SHARD,
      planDigest: e.FLEET_PLAN_DIGEST.trim() || undefined,
      waveJobs: e.FLEET_WAVE_JOBS ?? 8,
      maxParallel: e.FLEET_MAX_PARALLEL,
      dryRun: e.FLEET_DRY_RUN,
      checkName: e.FLEET_CHECK_NAME,
      failOnLaneFailure: e.FLEET_FAIL_ON_LANE_FAILURE,
      workspace: e.FLEET_WORKSPACE_DIR || `${e.RUNNER_TEMP || '/tmp'}/fleet`,
      repository: owner && repo ? { owner, repo } : undefined,
      sha: e.GITHUB_SHA,
      runId: runId && Number.isFinite(runId) ? runId : undefined,
      runAttempt: Math.max(1, Number(e.GITHUB_RUN_ATTEMPT) || 1),
      runUrl: owner && repo && runId ? `${e.GITHUB_SERVER_URL}/${owner}/${repo}/actions/runs/${runId}` : undefined,
      approvalEnvironment: e.FLEET_APPROVAL_ENVIRONMENT.trim() || undefined,
      retentionDays: Number(e.GITHUB_RETENTION_DAYS) > 0 ? Number(e.GITHUB_RETENTION_DAYS) : undefined,
    },
  };
}
