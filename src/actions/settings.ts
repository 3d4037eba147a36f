/**
 * The action's inputs as one validated settings object (the actions/checkout
 * input-helper pattern). action.yml passes every input as a FLEET_* variable,
 * so no input is ever spliced into a shell script.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { AGENT_CREDENTIALS } from '../core/agent-credentials.js';
import { appCredentialProblems, normalizePrivateKey } from '../github/app-key.js';
import type { AppCredentials } from '../github/app-token.js';

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
  FLEET_MODE: z.enum(['plan', 'lane', 'integrate', 'report']),
  FLEET_FILE: z.string().default(''),
  FLEET_DIRECTIVE_OVERRIDE: z.string().default(''),
  FLEET_TOKEN: z.string().default(''),
  FLEET_RUN_TOKEN: z.string().default(''),
  FLEET_APP_ID: z.string().default(''),
  FLEET_APP_PRIVATE_KEY: z.string().default(''),
  FLEET_APP_OWNER: z.string().default(''),
  FLEET_SHARD: z.string().default(''),
  FLEET_PLAN_DIGEST: z.string().default(''),
  FLEET_INTEGRATION_DIGEST: z.string().default(''),
  FLEET_WAVE_JOBS: optionalInt(1, 64, '8'),
  FLEET_WAVE: optionalInt(1, 64),
  FLEET_MAX_PARALLEL: optionalInt(1, 256),
  FLEET_LEG_TIMEOUT_MINUTES: optionalInt(1, 7200),
  FLEET_DRY_RUN: bool('false'),
  FLEET_INCREMENTAL: bool('false'),
  FLEET_CHECK_NAME: z.string().default('Fleet'),
  FLEET_FAIL_ON_LANE_FAILURE: bool('true'),
  FLEET_WORKSPACE_DIR: z.string().default(''),
  FLEET_CONTINUE_RUN: optionalInt(1, Number.MAX_SAFE_INTEGER),
  GITHUB_WORKFLOW_REF: z.string().default(''),
  GITHUB_REF: z.string().default(''),
  GITHUB_EVENT_NAME: z.string().default(''),
  GITHUB_EVENT_PATH: z.string().default(''),
  FLEET_APPROVAL_ENVIRONMENT: z.string().default(''),
  GITHUB_RETENTION_DAYS: z.string().default(''),
  GITHUB_REPOSITORY: z.string().default(''),
  GITHUB_REPOSITORY_OWNER: z.string().default(''),
  GITHUB_SHA: z.string().default(''),
  GITHUB_RUN_ID: z.string().default(''),
  GITHUB_RUN_ATTEMPT: z.string().default('1'),
  GITHUB_SERVER_URL: z.string().default('https://github.com'),
  RUNNER_TEMP: z.string().default(''),
});

export interface Settings {
  mode: 'plan' | 'lane' | 'integrate' | 'report';
  file: string;
  directive: string | undefined;
  /** The PAT (or a token minted by the caller); empty with App credentials, where Fleet mints its own. */
  token: string;
  /** GitHub App credentials: Fleet mints the installation token and renews it while the job runs. */
  app: AppCredentials | undefined;
  /** For the run's own repository: the check run and the run's jobs (GITHUB_TOKEN by default). */
  runToken: string;
  shard: string;
  /** The plan job's `plan-digest` output (lane and report jobs): the only plan they accept. */
  planDigest: string | undefined;
  /**
   * lane, integrate and report modes with integrate: — the integrate jobs' `integration-digest` outputs (space
   * separated): the only integration records the job reads.
   */
  integrationDigests: string[];
  waveJobs: number;
  /** integrate mode: the wave job (1 … wave-jobs) whose wave this job integrates. */
  wave: number | undefined;
  maxParallel: number | undefined;
  /** plan — each wave job's timeout-minutes, which a leg's lanes are sized to fit (core/legs.ts). */
  legTimeoutMinutes: number | undefined;
  dryRun: boolean;
  /** Incremental sweep: the plan restores the previous sweep's outcomes, the report saves this one's. */
  incremental: boolean;
  checkName: string;
  failOnLaneFailure: boolean;
  workspace: string;
  repository: { owner: string; repo: string } | undefined;
  sha: string;
  runId: number | undefined;
  /** Agent credentials given to the action (FLEET_AGENT_* → value), for agent directives only. */
  agentCredentials: Record<string, string>;
  /** plan mode: the run whose fleet this run continues (a DAG deeper than the workflow's wave jobs). */
  continueRun: number | undefined;
  /** The calling workflow (GITHUB_WORKFLOW_REF: `owner/repo/path@ref`), the ref it ran on and its event, to dispatch the next run of a chain. */
  caller: { path: string; ref: string; event: string; eventPath: string } | undefined;
  /** GITHUB_RUN_ATTEMPT: every artifact name carries it (see steps/drivers/matrix-artifacts.ts). */
  runAttempt: number;
  runUrl: string | undefined;
  /** plan — the environment whose required reviewers must approve the plan (checked before planning). */
  approvalEnvironment: string | undefined;
  /** plan — approval-environment is `none`: no gate, chosen, and said in the plan's summary. */
  gateWaived: boolean;
  /** The repository's artifact retention (GITHUB_RETENTION_DAYS), which caps what an upload asks for. */
  retentionDays: number | undefined;
}

const INPUT_NAMES: Record<string, string> = {
  FLEET_MODE: 'mode',
  FLEET_FILE: 'fleet-file',
  FLEET_TOKEN: 'token',
  FLEET_APP_ID: 'app-id',
  FLEET_APP_PRIVATE_KEY: 'app-private-key',
  FLEET_APP_OWNER: 'app-owner',
  FLEET_SHARD: 'shard',
  FLEET_PLAN_DIGEST: 'plan-digest',
  FLEET_WAVE_JOBS: 'wave-jobs',
  FLEET_WAVE: 'wave',
  FLEET_MAX_PARALLEL: 'max-parallel',
  FLEET_LEG_TIMEOUT_MINUTES: 'leg-timeout-minutes',
  FLEET_DRY_RUN: 'dry-run',
  FLEET_INCREMENTAL: 'incremental',
  FLEET_FAIL_ON_LANE_FAILURE: 'fail-on-lane-failure',
  FLEET_CONTINUE_RUN: 'continue-run',
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
  problems.push(...credentialProblems(e.FLEET_TOKEN, e.FLEET_APP_ID.trim(), e.FLEET_APP_PRIVATE_KEY));
  if (e.FLEET_MODE === 'plan' && !e.FLEET_FILE) problems.push('input fleet-file: the plan needs the path of the fleet file');
  if (e.FLEET_MODE === 'lane' && !e.FLEET_SHARD) problems.push('input shard: a lane job needs the shard id from the plan (matrix.shard)');
  if (e.FLEET_MODE === 'integrate' && !e.FLEET_WAVE) problems.push('input wave: an integrate job needs the number of the wave job it follows (1 for wave-1)');
  if (problems.length) return { ok: false, problems };
  const [owner, repo] = e.GITHUB_REPOSITORY.split('/');
  const appOwner = e.FLEET_APP_OWNER.trim() || e.GITHUB_REPOSITORY_OWNER || owner || '';
  const runId = e.GITHUB_RUN_ID ? Number(e.GITHUB_RUN_ID) : undefined;
  return {
    ok: true,
    settings: {
      mode: e.FLEET_MODE,
      file: e.FLEET_FILE,
      directive: e.FLEET_DIRECTIVE_OVERRIDE.trim() || undefined,
      token: e.FLEET_TOKEN,
      app: e.FLEET_APP_ID.trim() ? { appId: e.FLEET_APP_ID.trim(), privateKey: e.FLEET_APP_PRIVATE_KEY, owner: appOwner } : undefined,
      runToken: e.FLEET_RUN_TOKEN || e.FLEET_TOKEN,
      shard: e.FLEET_SHARD,
      planDigest: e.FLEET_PLAN_DIGEST.trim() || undefined,
      integrationDigests: e.FLEET_INTEGRATION_DIGEST.split(/[\s,]+/).filter(Boolean),
      waveJobs: e.FLEET_WAVE_JOBS ?? 8,
      wave: e.FLEET_WAVE,
      maxParallel: e.FLEET_MAX_PARALLEL,
      legTimeoutMinutes: e.FLEET_LEG_TIMEOUT_MINUTES,
      dryRun: e.FLEET_DRY_RUN,
      incremental: e.FLEET_INCREMENTAL,
      checkName: e.FLEET_CHECK_NAME,
      failOnLaneFailure: e.FLEET_FAIL_ON_LANE_FAILURE,
      workspace: e.FLEET_WORKSPACE_DIR || `${e.RUNNER_TEMP || '/tmp'}/fleet`,
      repository: owner && repo ? { owner, repo } : undefined,
      sha: e.GITHUB_SHA,
      runId: runId && Number.isFinite(runId) ? runId : undefined,
      agentCredentials: agentCredentials(env),
      continueRun: e.FLEET_CONTINUE_RUN,
      caller: callerOf(e.GITHUB_WORKFLOW_REF, e.GITHUB_REF, e.GITHUB_EVENT_NAME, e.GITHUB_EVENT_PATH),
      runAttempt: Math.max(1, Number(e.GITHUB_RUN_ATTEMPT) || 1),
      runUrl: owner && repo && runId ? `${e.GITHUB_SERVER_URL}/${owner}/${repo}/actions/runs/${runId}` : undefined,
      // none in any case (GitHub's expressions compare strings case-insensitively) is no gate, by choice.
      approvalEnvironment: gateWaived(e.FLEET_APPROVAL_ENVIRONMENT) ? undefined : e.FLEET_APPROVAL_ENVIRONMENT.trim() || undefined,
      gateWaived: gateWaived(e.FLEET_APPROVAL_ENVIRONMENT),
      retentionDays: Number(e.GITHUB_RETENTION_DAYS) > 0 ? Number(e.GITHUB_RETENTION_DAYS) : undefined,
    },
  };
}

function agentCredentials(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of AGENT_CREDENTIALS) {
    const value = env[c.fleetVariable]?.trim();
    if (value) out[c.fleetVariable] = value;
  }
  return out;
}

/** `acme/control/.github/workflows/fleet.yml@refs/heads/main` → the workflow's path in its repository, and the branch. */
function callerOf(workflowRef: string, ref: string, event: string, eventPath: string): Settings['caller'] {
  const m = /^[^/]+\/[^/]+\/(.+?)@(.+)$/.exec(workflowRef);
  if (!m) return undefined;
  return { path: m[1]!, ref: (ref || m[2]!).replace(/^refs\/(heads|tags)\//, ''), event, eventPath };
}

/**
 * A token, or App credentials (an id and a private key), never both: every problem with them, none quoting
 * the key. With App credentials Fleet mints and renews the installation token itself.
 */
function credentialProblems(token: string, appId: string, key: string): string[] {
  const problems: string[] = [];
  const keyGiven = key.trim() !== '';
  if (!token && !appId && !keyGiven) {
    return [
      'input token: a token is required: a PAT that can push to the targets (the `token` secret), or GitHub App credentials (the `app-id` input and the `app-private-key` secret)',
    ];
  }
  if (token && (appId || keyGiven)) {
    problems.push(
      'inputs token and app-id/app-private-key: give a token or GitHub App credentials, not both (with App credentials Fleet mints its own tokens: leave the token secret unset)',
    );
  }
  problems.push(
    ...appCredentialProblems(appId, key, {
      id: 'input app-id',
      key: 'input app-private-key',
      idShort: 'app-id',
      howToGiveKey: 'pass the key (the .pem GitHub generated) as the app-private-key secret',
    }),
  );
  return problems;
}

/**
 * A key only the holder of the fleet's credential can derive (the App's private key, or the PAT): it seals what
 * Fleet keeps in the Actions cache, which any job of the repository's default branch can write.
 */
export function sealKey(settings: Pick<Settings, 'token' | 'app'>): Buffer {
  const secret = settings.app ? normalizePrivateKey(settings.app.privateKey) : settings.token;
  return createHash('sha256').update('fleet-cache-seal\0').update(secret).digest();
}

/** approval-environment `none` (any case, any spaces around it): no approval gate, by choice. */
export function gateWaived(value: string | undefined): boolean {
  return (value ?? '').trim().toLowerCase() === 'none';
}
