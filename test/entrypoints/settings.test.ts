/**
 * The action's inputs (FLEET_* variables set by action.yml) and the runner's variables, read into one settings
 * object: the defaults a workflow gets by leaving an input out, and one message per bad input, all at once,
 * each naming the input as the workflow spells it.
 */
import { generateKeyPairSync } from 'node:crypto';
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
      app: undefined,
      runToken: 'tok',
      shard: '',
      planDigest: undefined,
      integrationDigests: [],
      waveJobs: 8,
      wave: undefined,
      maxParallel: undefined,
      dryRun: false,
      incremental: false,
      checkName: 'Fleet',
      failOnLaneFailure: true,
      workspace: '/tmp/fleet',
      repository: undefined,
      sha: '',
      runId: undefined,
      runAttempt: 1,
      runUrl: undefined,
      agentCredentials: {},
      continueRun: undefined,
      caller: undefined,
      approvalEnvironment: undefined,
      gateWaived: false,
      retentionDays: undefined,
    });
  });

  it('an input set to the empty string (how action.yml passes an unset input) is its default too', () => {
    const s = read({
      FLEET_MODE: 'plan',
      FLEET_FILE: 'f.yml',
      FLEET_TOKEN: 't',
      FLEET_WAVE_JOBS: '',
      FLEET_MAX_PARALLEL: ' ',
      FLEET_DRY_RUN: '',
      FLEET_FAIL_ON_LANE_FAILURE: '',
      FLEET_DIRECTIVE_OVERRIDE: '',
      FLEET_PLAN_DIGEST: '  ',
      FLEET_RUN_TOKEN: '',
    });
    expect(s).toMatchObject({
      waveJobs: 8,
      maxParallel: undefined,
      dryRun: false,
      failOnLaneFailure: true,
      directive: undefined,
      planDigest: undefined,
      runToken: 't',
    });
  });

  it("reads every input and the runner's variables", () => {
    const s = read({
      FLEET_MODE: 'lane',
      FLEET_FILE: 'ops/fleet.yml',
      FLEET_DIRECTIVE_OVERRIDE: '  do it now ',
      FLEET_TOKEN: 'pat',
      FLEET_RUN_TOKEN: 'run',
      FLEET_SHARD: 'w1-s3',
      FLEET_PLAN_DIGEST: ' sha256:abc ',
      FLEET_INTEGRATION_DIGEST: ' sha256:d1  sha256:d2 ',
      FLEET_WAVE: '3',
      FLEET_WAVE_JOBS: '64',
      FLEET_MAX_PARALLEL: '256',
      FLEET_DRY_RUN: 'true',
      FLEET_INCREMENTAL: 'true',
      FLEET_CHECK_NAME: 'Platform',
      FLEET_FAIL_ON_LANE_FAILURE: 'false',
      RUNNER_TEMP: '/runner/_temp',
      GITHUB_REPOSITORY: 'acme/control',
      GITHUB_SHA: 'f'.repeat(40),
      GITHUB_RUN_ID: '123',
      GITHUB_RUN_ATTEMPT: '3',
      GITHUB_SERVER_URL: 'https://ghe.example',
      FLEET_AGENT_ANTHROPIC_API_KEY: ' sk-ant-1 ',
      FLEET_AGENT_OPENAI_API_KEY: '',
      FLEET_CONTINUE_RUN: '122',
      GITHUB_WORKFLOW_REF: 'acme/control/.github/workflows/fleet.yml@refs/heads/main',
      GITHUB_REF: 'refs/heads/main',
      GITHUB_EVENT_NAME: 'workflow_dispatch',
      GITHUB_EVENT_PATH: '/runner/_temp/event.json',
      FLEET_APPROVAL_ENVIRONMENT: ' fleet-approval ',
      GITHUB_RETENTION_DAYS: '30',
    });
    expect(s).toEqual({
      mode: 'lane',
      file: 'ops/fleet.yml',
      directive: 'do it now',
      token: 'pat',
      app: undefined,
      runToken: 'run',
      shard: 'w1-s3',
      planDigest: 'sha256:abc',
      integrationDigests: ['sha256:d1', 'sha256:d2'],
      waveJobs: 64,
      wave: 3,
      maxParallel: 256,
      dryRun: true,
      incremental: true,
      checkName: 'Platform',
      failOnLaneFailure: false,
      workspace: '/runner/_temp/fleet',
      repository: { owner: 'acme', repo: 'control' },
      sha: 'f'.repeat(40),
      runId: 123,
      runAttempt: 3,
      runUrl: 'https://ghe.example/acme/control/actions/runs/123',
      // An empty secret is no credential; a key is trimmed (a pasted secret often ends in a newline).
      agentCredentials: { FLEET_AGENT_ANTHROPIC_API_KEY: 'sk-ant-1' },
      continueRun: 122,
      caller: { path: '.github/workflows/fleet.yml', ref: 'main', event: 'workflow_dispatch', eventPath: '/runner/_temp/event.json' },
      approvalEnvironment: 'fleet-approval',
      gateWaived: false,
      retentionDays: 30,
    });
    expect(read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', FLEET_WORKSPACE_DIR: '/w', RUNNER_TEMP: '/r' }).workspace).toBe('/w');
  });

  it('approval-environment none is no gate, chosen: nothing to check, and the plan says so', () => {
    for (const none of [' none ', 'None', 'NONE']) {
      const s = read({ FLEET_MODE: 'plan', FLEET_FILE: 'fleet.yml', FLEET_TOKEN: 't', FLEET_APPROVAL_ENVIRONMENT: none });
      expect([s.approvalEnvironment, s.gateWaived], none).toEqual([undefined, true]);
    }
  });

  it('the lowest accepted numbers are accepted', () => {
    expect(read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', FLEET_WAVE_JOBS: '1', FLEET_MAX_PARALLEL: '1' })).toMatchObject({ waveJobs: 1, maxParallel: 1 });
  });

  it('a run attempt or run id that is not a positive number falls back (attempt 1, no run)', () => {
    for (const attempt of ['0', '-2', 'x', ''])
      expect(read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', GITHUB_RUN_ATTEMPT: attempt }).runAttempt, attempt).toBe(1);
    const s = read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', GITHUB_RUN_ID: 'abc', GITHUB_REPOSITORY: 'acme/control' });
    expect(s.runId).toBeUndefined();
    expect(s.runUrl).toBeUndefined();
    expect(s.repository).toEqual({ owner: 'acme', repo: 'control' });
    expect(read({ FLEET_MODE: 'report', FLEET_TOKEN: 't', GITHUB_RUN_ID: '5', GITHUB_REPOSITORY: 'acme' })).toMatchObject({
      repository: undefined,
      runUrl: undefined,
      runId: 5,
    });
  });

  it('reports every problem at once, each naming the input as the workflow writes it', () => {
    expect(problems({ FLEET_MODE: 'plan' })).toEqual([
      'input token: a token is required: a PAT that can push to the targets (the `token` secret), or GitHub App credentials (the `app-id` input and the `app-private-key` secret)',
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
    expect(problems({ FLEET_MODE: 'integrate', FLEET_TOKEN: 't' })).toEqual([
      'input wave: an integrate job needs the number of the wave job it follows (1 for wave-1)',
    ]);
    expect(problems({ FLEET_MODE: 'integrate', FLEET_TOKEN: 't', FLEET_WAVE: '65' })).toEqual(['input wave: must be a whole number from 1 to 64, got "65"']);
    expect(problems({ FLEET_MODE: 'report', FLEET_TOKEN: 't', FLEET_FAIL_ON_LANE_FAILURE: 'no' })).toEqual([
      expect.stringMatching(/^input fail-on-lane-failure: /),
    ]);
  });

  describe('GitHub App credentials', () => {
    const KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const keyLines = KEY.split('\n').filter((l) => l && !l.startsWith('-----'));

    it('app-id and a private key replace the token; the App is installed on the repository owner unless app-owner says', () => {
      const s = read({
        FLEET_MODE: 'plan',
        FLEET_FILE: 'f.yml',
        FLEET_APP_ID: ' 4242 ',
        FLEET_APP_PRIVATE_KEY: KEY,
        GITHUB_REPOSITORY: 'acme/control',
        GITHUB_REPOSITORY_OWNER: 'acme',
      });
      expect(s).toMatchObject({ token: '', runToken: '', app: { appId: '4242', privateKey: KEY, owner: 'acme' } });
      expect(
        read({ FLEET_MODE: 'report', FLEET_APP_ID: '4242', FLEET_APP_PRIVATE_KEY: KEY, FLEET_APP_OWNER: 'other', GITHUB_REPOSITORY: 'acme/control' }).app!
          .owner,
      ).toBe('other');
      // A key pasted with \n for its newlines is read as the same key.
      expect(read({ FLEET_MODE: 'report', FLEET_APP_ID: 'Iv1.abc123', FLEET_APP_PRIVATE_KEY: KEY.replace(/\n/g, '\\n') }).app!.appId).toBe('Iv1.abc123');
    });

    it('an id without a key, a key without an id, a token as well, a key that is not one: every problem at once, no key text', () => {
      expect(problems({ FLEET_MODE: 'report', FLEET_APP_ID: '4242' })).toEqual([
        "input app-private-key: app-id is set but the App's private key is empty: pass the key (the .pem GitHub generated) as the app-private-key secret",
      ]);
      expect(problems({ FLEET_MODE: 'report', FLEET_APP_PRIVATE_KEY: KEY })).toEqual([
        "input app-id: an App private key was given without the App's id: set app-id (the App's settings page shows it)",
      ]);
      expect(problems({ FLEET_MODE: 'report', FLEET_TOKEN: 't', FLEET_APP_ID: '4242', FLEET_APP_PRIVATE_KEY: KEY })).toEqual([
        'inputs token and app-id/app-private-key: give a token or GitHub App credentials, not both (with App credentials Fleet mints its own tokens: leave the token secret unset)',
      ]);
      const broken = KEY.slice(0, 300);
      const all = problems({ FLEET_MODE: 'lane', FLEET_TOKEN: 't', FLEET_APP_ID: 'my app', FLEET_APP_PRIVATE_KEY: broken });
      expect(all).toEqual([
        expect.stringMatching(/^inputs token and app-id\/app-private-key: /),
        expect.stringMatching(/^input app-id: must be the App's numeric id/),
        'input app-private-key: the key is not a PEM private key (paste the whole .pem file GitHub generated, BEGIN and END lines included)',
        'input shard: a lane job needs the shard id from the plan (matrix.shard)',
      ]);
      for (const line of keyLines) expect(all.join('\n')).not.toContain(line.slice(0, 20));
    });
  });
});
