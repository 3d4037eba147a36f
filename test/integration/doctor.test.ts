/**
 * `fleet doctor` against the GitHub emulator, one misconfiguration at a time: each is caught, named, and given its
 * fix, and a set-up that holds exits 0. What it reads and the source of each rule:
 *  - an App installation's permissions (POST …/access_tokens answers them; docs/actions/tokens.md, Permissions);
 *  - a classic PAT's scopes (X-OAuth-Scopes, test/emulator/workflow-guard.test.ts);
 *  - the targets, through the plan's own target check;
 *  - the Workflows permission for lanes that may change .github/workflows/ (GitHub refuses their push without it);
 *  - the approval environment's required reviewers (GET …/environments/{name}; the plan job refuses a gate without
 *    them), and the repository's visibility, since required reviewers on a private repository need Enterprise;
 *  - the Actions settings (GET …/actions/permissions, …/selected-actions, …/artifact-and-log-retention), which
 *    take admin: an App's read-only token cannot read them, and doctor says what to check by hand.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearSecrets } from '../../src/util/secrets.js';
import { startEmulator, type AddedApp, type Emulator } from '../support/github-emulator/index.js';
import { fleet, removeDir, tempDir, writeFleetFile } from './helpers.js';

let emu: Emulator;
let dir: string;
let good: AddedApp;
let noPrs: AddedApp;
let someRepos: AddedApp;
const ADMIN = 'ghp_DoctorAdmin000000000000000000000000000';
const PERMS = { contents: 'write', 'pull-requests': 'write', issues: 'write', checks: 'read', statuses: 'read', actions: 'read', metadata: 'read' } as const;

beforeAll(async () => {
  emu = await startEmulator({ token: ADMIN, login: 'platform-admin' });
  for (const name of ['api', 'web']) await emu.createRepo({ owner: 'acme', name, ownerType: 'Organization', files: { 'README.md': `# ${name}\n` } });
  await emu.createRepo({ owner: 'acme', name: 'control', ownerType: 'Organization', files: { 'fleet.yml': 'x\n' } });
  await emu.createRepo({ owner: 'acme', name: 'private-control', ownerType: 'Organization', visibility: 'private' });
  emu.setEnvironment('acme/control', 'fleet-approval', ['octocat']);
  good = emu.addApp({ id: 7001, slug: 'fleet-good', installations: [{ account: 'acme', permissions: PERMS }] });
  const { 'pull-requests': _, ...withoutPrs } = PERMS;
  noPrs = emu.addApp({ id: 7002, slug: 'fleet-no-prs', installations: [{ account: 'acme', permissions: withoutPrs }] });
  someRepos = emu.addApp({ id: 7003, slug: 'fleet-some', installations: [{ account: 'acme', repositories: ['api'], permissions: PERMS }] });
  dir = tempDir();
});
afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  removeDir(dir);
  clearSecrets();
});

const gh = (extra: Record<string, string | undefined>) => ({
  GITHUB_API_URL: emu.url,
  GITHUB_GRAPHQL_URL: emu.graphqlUrl,
  GITHUB_SERVER_URL: `${emu.url}/git`,
  FLEET_GITHUB_PACING_MS: '0',
  FLEET_GITHUB_TOKEN: undefined,
  GITHUB_TOKEN: undefined,
  GH_TOKEN: undefined,
  GITHUB_REPOSITORY: undefined,
  GITHUB_ACTION_REPOSITORY: undefined,
  GITHUB_RETENTION_DAYS: undefined,
  FLEET_APPROVAL_ENVIRONMENT: undefined,
  ...extra,
});
const app = (a: AddedApp) => ({ FLEET_APP_ID: String(a.id), FLEET_APP_PRIVATE_KEY: a.privateKeyPem, FLEET_APP_OWNER: 'acme' });

interface Finding {
  check: string;
  status: string;
  message: string;
  fix?: string;
}

async function doctor(spec: Record<string, unknown>, env: Record<string, string | undefined>, args: string[] = []) {
  const file = writeFleetFile(dir, { name: 'doc', forge: 'github', directive: 'd', run: 'true', ...spec }, `f${Math.random().toString(16).slice(2)}.yml`);
  const r = await fleet(['doctor', file, '--json', ...args], { cwd: dir, env: gh(env) });
  const findings = r.code === 2 ? [] : ((JSON.parse(r.stdout) as { findings: Finding[] }).findings ?? []);
  const text = await fleet(['doctor', file, ...args], { cwd: dir, env: gh(env) });
  return { code: r.code, findings, stderr: r.stderr, text: text.stdout };
}

const byCheck = (fs: Finding[], check: string) => fs.filter((f) => f.check === check);
const TARGETS = [{ repo: 'acme/api' }, { repo: 'acme/web' }];

describe('fleet doctor', () => {
  it('passes a set-up that holds: App permissions, targets, gate with reviewers; the Actions settings it cannot read are named', async () => {
    const r = await doctor({ targets: TARGETS }, app(good), ['--control-repo', 'acme/control']);
    expect(r.code, r.stderr + r.text).toBe(0);
    expect(r.findings.filter((f) => f.status === 'fail')).toEqual([]);
    expect(byCheck(r.findings, 'credential')[0]!.message).toBe('a GitHub App installation on acme: Fleet mints and renews its tokens');
    expect(byCheck(r.findings, 'permissions')[0]).toMatchObject({ status: 'ok' });
    expect(byCheck(r.findings, 'targets')[0]).toMatchObject({ status: 'ok', message: '2 of the 2 target(s) can be cloned and pushed to' });
    expect(byCheck(r.findings, 'approval gate')[0]).toMatchObject({
      status: 'ok',
      message: 'environment "fleet-approval" of acme/control holds each plan for octocat',
    });
    // An App's token cannot read Settings → Actions (administration): doctor says what to check by hand.
    expect(byCheck(r.findings, 'actions settings')[0]).toMatchObject({ status: 'skip' });
    expect(byCheck(r.findings, 'actions settings')[0]!.fix).toContain('Settings → Actions → General');
    expect(r.text).toContain('Nothing to fix');
  });

  it('catches an App without the Pull requests permission, with where to grant it', async () => {
    const r = await doctor({ targets: TARGETS }, app(noPrs));
    expect(r.code).toBe(1);
    const f = byCheck(r.findings, 'permissions').find((x) => x.status === 'fail')!;
    expect(f.message).toBe("the GitHub App has no pull_requests permission, and the fleet needs pull_requests: write to open and update each lane's PR");
    expect(f.fix).toContain('Repository permissions → Pull requests: Read and write');
    expect(r.text).toMatch(/^FAIL {2}permissions: /m);
  });

  it('warns of a target in a state the plan excludes (archived), without failing', async () => {
    await emu.createRepo({ owner: 'acme', name: 'retired', ownerType: 'Organization', archived: true });
    const r = await doctor({ targets: [...TARGETS, { repo: 'acme/retired' }] }, app(good));
    expect(r.code, r.text).toBe(0);
    expect(byCheck(r.findings, 'target acme/retired')[0]).toMatchObject({ status: 'warn', message: expect.stringMatching(/^archived/) });
    expect(byCheck(r.findings, 'target acme/retired')[0]!.fix).toBe(
      'the plan excludes it with this reason; remove it from the targets if that is not what you want',
    );
  });

  it('catches a target the App is not installed on', async () => {
    const r = await doctor({ targets: TARGETS }, app(someRepos));
    expect(r.code).toBe(1);
    // acme/web is public: the App's token reads it, and cannot push to it.
    expect(byCheck(r.findings, 'target acme/web')[0]).toMatchObject({ status: 'fail' });
    expect(byCheck(r.findings, 'target acme/web')[0]!.message).toMatch(/^no-push-permission/);
    expect(byCheck(r.findings, 'target acme/web')[0]!.fix).toContain('a GitHub App must be installed on it (the installation\'s "Repository access")');
    expect(byCheck(r.findings, 'targets')[0]!.message).toBe('1 of the 2 target(s) can be cloned and pushed to');
  });

  it('catches lanes fenced to workflow files under an App without the Workflows permission, and warns for wider fences', async () => {
    const r = await doctor(
      {
        targets: [
          { repo: 'acme/api', lane: 'ci', owns: ['.github/workflows/**'] },
          { repo: 'acme/web' },
          { repo: 'acme/api', lane: 'docs', owns: ['docs/**'] },
        ],
      },
      app(good),
    );
    expect(r.code).toBe(1);
    const wf = byCheck(r.findings, 'workflow files');
    expect(wf.map((f) => f.status)).toEqual(['fail', 'warn']);
    expect(wf[0]!.message).toContain('(ci) would be excluded');
    expect(wf[1]!.message).toContain('(web) fail at their push if the directive changes a workflow file');
    expect(wf[1]!.fix).toContain('never: [".github/workflows/**"]');
  });

  it('catches an approval environment that is missing, and on a private repository says required reviewers need Enterprise or an explicit none', async () => {
    const missing = await doctor({ targets: TARGETS }, app(good), ['--control-repo', 'acme/control', '--approval-environment', 'prod-gate']);
    expect(missing.code).toBe(1);
    expect(byCheck(missing.findings, 'approval gate')[0]!.message).toBe(
      'acme/control has no environment "prod-gate", so the plan job refuses the fleet (a gate without reviewers opens at once)',
    );
    emu.setEnvironment('acme/private-control', 'fleet-approval', []);
    const priv = await doctor({ targets: TARGETS }, app(good), ['--control-repo', 'acme/private-control']);
    expect(priv.code).toBe(1);
    const f = byCheck(priv.findings, 'approval gate')[0]!;
    expect(f.message).toContain('has no required reviewers');
    expect(f.fix).toContain('acme/private-control is private: required reviewers on a private repository need GitHub Enterprise');
    expect(f.fix).toContain('set the repository variable FLEET_APPROVAL_ENVIRONMENT to none');
    // The explicit choice: no gate, a warning that says so, and nothing to fix.
    const none = await doctor({ targets: TARGETS }, { ...app(good), FLEET_APPROVAL_ENVIRONMENT: 'none' }, ['--control-repo', 'acme/private-control']);
    expect(none.code).toBe(0);
    expect(byCheck(none.findings, 'approval gate')[0]).toMatchObject({ status: 'warn' });
  });

  it("reads the Actions settings with an admin's token: Actions off, only local actions, a list without Fleet, a short retention", async () => {
    const pat = { FLEET_GITHUB_TOKEN: ADMIN };
    const base = ['--control-repo', 'acme/control', '--fleet-repo', 'platform/fleet'];
    emu.setActionsSettings('acme/control', { enabled: false });
    expect(byCheck((await doctor({ targets: TARGETS }, pat, base)).findings, 'actions settings')[0]).toMatchObject({ status: 'fail' });
    emu.setActionsSettings('acme/control', { allowedActions: 'local_only' });
    const local = byCheck((await doctor({ targets: TARGETS }, pat, base)).findings, 'actions settings')[0]!;
    expect(local.message).toContain('allows only actions and reusable workflows of acme, not platform/fleet');
    emu.setActionsSettings('acme/control', { allowedActions: 'selected', githubOwnedAllowed: true, patternsAllowed: ['acme/*'] });
    const selected = byCheck((await doctor({ targets: TARGETS }, pat, base)).findings, 'actions settings')[0]!;
    expect(selected).toMatchObject({ status: 'fail' });
    expect(selected.message).toContain('not platform/fleet (add platform/fleet@* or platform/*)');
    emu.setActionsSettings('acme/control', { allowedActions: 'selected', githubOwnedAllowed: true, patternsAllowed: ['platform/fleet@*'], retentionDays: 10 });
    const r = await doctor({ targets: TARGETS }, pat, base);
    expect(byCheck(r.findings, 'actions settings')[0]).toMatchObject({ status: 'ok' });
    expect(byCheck(r.findings, 'artifact retention')[0]).toMatchObject({ status: 'warn' });
    expect(byCheck(r.findings, 'artifact retention')[0]!.fix).toContain('at least 35 days');
    emu.setActionsSettings('acme/control', {});
  });

  it('catches a classic PAT without the repo scope, and a token GitHub refuses', async () => {
    emu.addToken('ghp_PublicOnly0000000000000000000000000000', { login: 'octocat', type: 'pat', oauthScopes: ['read:org'] });
    emu.resetLog();
    const r = await doctor({ targets: TARGETS }, { FLEET_GITHUB_TOKEN: 'ghp_PublicOnly0000000000000000000000000000' });
    expect(r.code).toBe(1);
    // The scopes are read once a run (doctor() runs it twice: --json, then as text), for the credential and the
    // workflow-files check alike.
    expect(emu.find({ route: '/rate_limit' })).toHaveLength(2);
    expect(byCheck(r.findings, 'workflow files')[0]).toMatchObject({ status: 'warn', message: expect.stringContaining('the token (a classic PAT) lacks') });
    expect(byCheck(r.findings, 'credential')[0]).toMatchObject({ status: 'warn' });
    expect(byCheck(r.findings, 'permissions')[0]).toMatchObject({ status: 'fail' });
    expect(byCheck(r.findings, 'permissions')[0]!.message).toBe(
      'the token (a classic PAT) has the scopes read:org, and pushing a branch and opening a PR take repo',
    );
    const refused = await doctor({ targets: TARGETS }, { FLEET_GITHUB_TOKEN: 'ghp_Revoked00000000000000000000000000000000' });
    expect(refused.code).toBe(1);
    expect(refused.findings).toEqual([
      {
        check: 'credential',
        status: 'fail',
        message: 'GitHub refused the token (Bad credentials)',
        fix: 'the token is expired, revoked or mistyped: make a new one, or use a GitHub App (docs/github-app.md)',
      },
    ]);
    expect(refused.text).not.toContain('ghp_Revoked');
  });

  it("checks a local fleet's targets, and has no GitHub set-up to check", async () => {
    const file = writeFleetFile(dir, { name: 'loc', directive: 'd', run: 'true', missing_targets: 'exclude', targets: [{ repo: './not-here' }] }, 'local.yml');
    const r = await fleet(['doctor', file, '--json'], { cwd: dir, env: gh({}) });
    expect(r.code, r.stderr).toBe(1);
    const findings = (JSON.parse(r.stdout) as { findings: Finding[] }).findings;
    expect(findings[0]).toMatchObject({ check: 'forge', status: 'ok' });
    expect(findings.find((f) => f.check.startsWith('target '))).toMatchObject({ status: 'fail', message: expect.stringMatching(/^not-found/) });
  });

  it('refuses bad flags with exit 2', async () => {
    const r = await doctor({ targets: TARGETS }, app(good), ['--control-repo', 'not a repo']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--control-repo: "not a repo" is not OWNER/NAME');
    const lone = await doctor({ targets: TARGETS }, app(good), ['--approval-environment', 'prod']);
    expect(lone.code).toBe(2);
    expect(lone.stderr).toContain('--approval-environment is the environment of the repository --control-repo names: give --control-repo too');
  });
});
