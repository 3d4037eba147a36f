/**
 * The action's inputs (FLEET_* variables set by action.yml) and the runner's variables, read into one settings
 * object: the defaults a workflow gets by leaving an input out, and one message per bad input, all at once,
 * each naming the input as the workflow spells it.
 */
import { describe, expect, it } from 'vitest';
import { readSettings, type Settings } from '../../src/actions/settings.js';

function read(env: NodeJS.ProcessEnv): Settings {
  const r = readSettings(env);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.settings;
}

function problems(env: NodeJS.ProcessEnv): string[] {
  const r = readSettings(env);
  if (r.ok) throw new Error('expected problems');
  return r.problems;
}

describe('readSettings', () => {
  it('fills every input a workflow leaves out with its documented default', () => {
    expect(read({ FLEET_MODE: 'plan', FLEET_FILE: 'fleet.yml', FLEET_TOKEN: 'tok' })).toEqual({
      mode: 'plan',
      file: 'fleet.yml',
      directive: undefined,
      token: 'tok',
      runToken: 'tok',
      shard: '',
      planDigest: undefined,
      waveJobs: 8,
      maxParallel: undefined,
      dryRun: false,
      checkName: 'Fleet',
      failOnLaneFailure: true,
      workspace: '/tmp/fleet',
      repository: undefined,
      sha: '',
      runId: undefined,
      runAttempt: 1,
      runUrl: undefined,
      approvalEnvironment: undefined,
      retentionDays: undefined,
    });
  });

  it('an input set to the empty string (how action.yml passes an unset input) is its default too', () => {
    const s = read({ FLEET_MODE: 'plan', FLEET_FILE: 'f.yml', FLEET_TOKEN: 't', FLEET_WAVE_JOBS: '', FLEET_MAX_PARALLEL: ' ', FLEET_DRY_RUN: '', FLEET_FAIL_ON_LANE_FAILURE: '', FLEET_DIRECTIVE_OVERRIDE: '', FLEET_PLAN_DIGEST: '  ', FLEET_RUN_TOKEN: '' });
    expect(s).toMatchObject({ waveJobs: 8, maxParallel: undefined, dryRun: false, failOnLaneFailure: true, directive: undefined, planDigest: undefined, runToken: 't' });
  });

  it('reads every input and the runner\'s variables', () => {
    const s = read({
      FLEET_MODE: 'lane',
      FLEET_FILE: 'ops/fleet.yml',
      FLEET_DIRECTIVE_OVERRIDE: '  do it now ',
      FLEET_TOKEN: 'pat',
      FLEET_RUN_TOKEN: 'run',
      FLEET_SHARD: 'w1-s3',
      FLEET_PLAN_DIGEST: ' sha256:abc ',
      FLEET_WAVE_JOBS: '64',
      FLEET_MAX_PARALLEL: '256',
      FLEET_DRY_RUN: 'true',
      FLEET_CHECK_NAME: 'Platform',
      FLEET_FAIL_ON_LANE_FAILURE: 'false',
      RUNNER_TEMP: '/runner/_temp',
      GITHUB_REPOSITORY: 'acme/control',
      GITHUB_SHA: 'f'.repeat(40),
      GITHUB_RUN_ID: '123',
      GITHUB_RUN_ATTEMPT: '3',
      GITHUB_SERVER_URL: 'https://ghe.example',
      FLEET_APPROVAL_ENVIRONMENT: ' fleet-approval ',
      GITHUB_RETENTION_DAYS: '30',
    });
    expect(s).toEqual({
      mode: 'lane',
      file: 'ops/fleet.yml',
      directive: 'do it now',
      token: 'pat',
      runToken: 'run',
      shard: 'w1-s3',
      planDigest: 'sha256:abc',
      waveJobs: 64,
      maxParallel: 256,
      dryRun: true,
      checkName: 'Platform',
      failOnLaneFailure: false,
      workspace: '/runner/_temp/fleet',
      repository: { owner: 'acme', repo: 'control' },
      sha: 'f'.repeat(40),
      runId: 123,
      runAttempt: 3,
      runUrl: 'https://ghe.example/acme/control/actions/runs/123',
      approvalEnvironment: 'fleet-approval',
      retentionDays: 30,
    });
    expect(read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', FLEET_WORKSPACE_DIR: '/w', RUNNER_TEMP: '/r' }).workspace).toBe('/w');
  });

  it('the lowest accepted numbers are accepted', () => {
    expect(read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', FLEET_WAVE_JOBS: '1', FLEET_MAX_PARALLEL: '1' })).toMatchObject({ waveJobs: 1, maxParallel: 1 });
  });

  it('a run attempt or run id that is not a positive number falls back (attempt 1, no run)', () => {
    for (const attempt of ['0', '-2', 'x', '']) expect(read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', GITHUB_RUN_ATTEMPT: attempt }).runAttempt, attempt).toBe(1);
    const s = read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', GITHUB_RUN_ID: 'abc', GITHUB_REPOSITORY: 'acme/control' });
    expect(s.runId).toBeUndefined();
    expect(s.runUrl).toBeUndefined();
    expect(s.repository).toEqual({ owner: 'acme', repo: 'control' });
    expect(read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', GITHUB_RUN_ID: '5', GITHUB_REPOSITORY: 'acme' })).toMatchObject({ repository: undefined, runUrl: undefined, runId: 5 });
  });

  it('reports every problem at once, each naming the input as the workflow writes it', () => {
    expect(problems({ FLEET_MODE: 'plan' })).toEqual([
      'input token: a token is required (a GitHub App installation token or a PAT that can push to the targets)',
      'input fleet-file: the plan needs the path of the fleet file',
    ]);
    expect(problems({ FLEET_MODE: 'lane', FLEET_TOKEN: 't' })).toEqual(['input shard: a lane job needs the shard id from the plan (matrix.shard)']);
    expect(problems({ FLEET_MODE: 'report', FLEET_TOKEN: 't', FLEET_WAVE_JOBS: '65', FLEET_MAX_PARALLEL: '2.5', FLEET_DRY_RUN: 'yes' })).toEqual([
      'input wave-jobs: must be a whole number from 1 to 64, got "65"',
      'input max-parallel: must be a whole number from 1 to 256, got "2.5"',
      expect.stringMatching(/^input dry-run: /),
    ]);
    expect(problems({ FLEET_MODE: 'report', FLEET_TOKEN: 't', FLEET_MAX_PARALLEL: '257', FLEET_WAVE_JOBS: '0' })).toEqual([
      'input wave-jobs: must be a whole number from 1 to 64, got "0"',
      'input max-parallel: must be a whole number from 1 to 256, got "257"',
    ]);
    expect(problems({ FLEET_MODE: 'deploy', FLEET_SHARD: 'x', FLEET_PLAN_DIGEST: 'd' })).toEqual([expect.stringMatching(/^input mode: /)]);
    expect(problems({})).toEqual([expect.stringMatching(/^input mode: /)]);
    expect(problems({ FLEET_MODE: 'report', FLEET_TOKEN: 't', FLEET_FAIL_ON_LANE_FAILURE: 'no' })).toEqual([expect.stringMatching(/^input fail-on-lane-failure: /)]);
  });
});
