/**
 * A fleet's PRs after its run, on GitHub: a real fleet opens one PR per lane on the emulator, then the PRs move on
 * without Fleet (a person turns one into a draft, a reviewer requests changes on another, CI is red on a third),
 * and `fleet prs` reads them live, `fleet prs merge` merges only the one that may merge, `fleet prs close` closes the
 * rest and deletes their branches; each again changes nothing; each dry run changes nothing. The forge is built as
 * the CLI builds it (setupForge, from the fleet file and the environment); every outcome is read back from the
 * emulator and the files.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { setupForge } from '../../src/session/forge.js';
import { renderPrsActions, renderPrsTable } from '../../src/core/prs.js';
import { validateFleetFile } from '../../src/core/validate.js';
import { createOctokit } from '../../src/github/octokit.js';
import { GitWorkspace } from '../../src/workspace/workspace.js';
import { systemClock, type Forge } from '../../src/ports.js';
import { laneSpecFor, prsCommand, type PrsCommandResult, type PrsEventLine } from '../../src/steps/prs.js';
import { runFleet } from '../../src/steps/drivers/process.js';
import { ci } from '../support/github-emulator/index.js';
import { lane, readManifest } from '../integration/helpers.js';
import { startFlow, type Flow } from './helpers.js';

const localWorkspace = new GitWorkspace();
const localExecutor = localWorkspace.executor;

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

const REPOS = ['acme/api', 'acme/web', 'acme/docs', 'acme/cli'];

/** The environment as `fleet` gets it: the flow's variables, unset ones dropped. */
function envOf(f: Flow): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(f.env)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** Four repositories, CI green on three and red on web; the fleet runs with ci.wait off, so every lane completes with its PR open. */
async function ranFleet(f: Flow): Promise<{ forge: Forge; ws: string; manifestPath: string; lanes: ReturnType<typeof validateFleetFile> & { ok: true } }> {
  const { emu } = f;
  for (const full of REPOS) {
    const name = full.split('/')[1]!;
    await emu.createRepo({ owner: 'acme', name, files: { 'README.md': `# ${name}\n` } });
    emu.setCi(full, ci.onBranches(/^fleet\//, name === 'web' ? ci.red(['test']) : ci.green(['test'])));
  }
  const v = validateFleetFile(
    {
      name: 'stamp',
      forge: 'github',
      directive: 'Stamp every repository.',
      run: 'echo "$FLEET_LANE" > STAMP.md',
      isolation: 'off',
      max_retries: 0,
      ci: { wait: false },
      targets: REPOS.map((repo) => ({ repo })),
    },
    join(f.dir, 'fleet.yml'),
  );
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const setup = await setupForge(v.fleet.file, { env: envOf(f), baseDir: f.dir });
  if ('problem' in setup) throw new Error(setup.problem);
  const ws = join(f.dir, 'ws');
  const out = await runFleet({
    fleet: v.fleet,
    file: join(f.dir, 'fleet.yml'),
    forge: setup.forge,
    workspace: localWorkspace,
    exec: localExecutor,
    clock: systemClock,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: f.dir },
    root: ws,
    cwd: f.dir,
  });
  if (!out.ok) throw new Error(JSON.stringify(out.problems));
  expect(out.manifest.lanes.map((l) => [l.lane, l.status, l.phase])).toEqual([
    ['api', 'completed', 'pr-open'],
    ['cli', 'completed', 'pr-open'],
    ['docs', 'completed', 'pr-open'],
    ['web', 'completed', 'pr-open'],
  ]);
  return { forge: setup.forge, ws, manifestPath: join(ws, 'fleet-status.json'), lanes: v };
}

function acted(r: PrsCommandResult) {
  if (!r.ok || r.command === 'list') throw new Error(`expected a merge or close: ${JSON.stringify(r)}`);
  return r;
}

function prsLines(ws: string): PrsEventLine[] {
  return readFileSync(join(ws, 'events.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => typeof e.command === 'string') as unknown as PrsEventLine[];
}

describe('fleet prs on GitHub', () => {
  it('lists live, merges only the green ready unopposed PR, closes the rest with their branches; twice is once; dry runs change nothing', async () => {
    flow = await startFlow();
    const { emu } = flow;
    const { forge, ws, manifestPath, lanes } = await ranFleet(flow);
    const ran = readManifest(ws);
    const number = (id: string) => lane(ran, id).pr_number!;

    // After the run, without Fleet: docs turned into a draft, a reviewer requests changes on cli.
    await forge.setDraft(laneSpecFor(lane(ran, 'docs'), lanes.fleet.lanes) as never, number('docs'), true);
    const reviewer = 'ghs_ReviewerOfFleetPrs0123456789abcdEF';
    emu.addToken(reviewer, { login: 'octocat', default: 'pull' });
    await createOctokit({ token: reviewer, apiUrl: emu.url, pacing: { writeMs: 0, searchMs: 0, notificationsMs: 0 } }).request(
      'POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews',
      {
        owner: 'acme',
        repo: 'cli',
        pull_number: number('cli'),
        event: 'REQUEST_CHANGES',
        body: 'Not like this.',
      },
    );
    // The manifest lost api's PR number (say the run was interrupted after opening it): found by its branch.
    const apiNumber = number('api');
    writeFileSync(
      manifestPath,
      `${JSON.stringify({ ...ran, lanes: ran.lanes.map((l) => (l.lane === 'api' ? { ...l, pr_number: null, pr_url: null } : l)) }, null, 2)}\n`,
    );

    // ---- list
    const input = { manifestPath, forge, clock: systemClock };
    const listed = await prsCommand(input, { command: 'list' });
    if (!listed.ok || listed.command !== 'list') throw new Error('list failed');
    expect(listed.exitCode).toBe(0);
    expect(listed.rows.map((r) => [r.lane, r.pr, r.state, r.draft, r.ci, r.review, r.mergeable])).toEqual([
      ['api', apiNumber, 'open', false, 'success', 'none', true],
      ['cli', number('cli'), 'open', false, 'success', 'changes_requested', true],
      ['docs', number('docs'), 'open', true, 'success', 'none', true],
      ['web', number('web'), 'open', false, 'failure', 'none', true],
    ]);
    for (const r of listed.rows) {
      expect(r.head_sha).toBe(lane(ran, r.lane).commit);
      expect(r.url).toMatch(new RegExp(`/${r.repo}/pull/${r.pr}$`));
      expect(Date.now() - Date.parse(r.created_at!)).toBeLessThan(120_000);
    }
    const table = renderPrsTable(listed.rows, { now: new Date().toISOString(), title: 'stamp' });
    expect(table).toContain('open (draft)');
    expect(table).toContain('changes\\_requested');

    // ---- merge, dry run: says what it would merge, merges nothing, writes nothing
    const merges = () => emu.count({ route: '/repos/{owner}/{repo}/pulls/{pull_number}/merge', method: 'PUT' });
    const bytes0 = readFileSync(manifestPath, 'utf8');
    const lines0 = prsLines(ws).length;
    const dry = acted(await prsCommand(input, { command: 'merge', method: 'squash', dryRun: true }));
    expect(dry.actions.map((a) => [a.lane, a.outcome])).toEqual([
      ['api', 'would-merge'],
      ['cli', 'not-merged'],
      ['docs', 'not-merged'],
      ['web', 'not-merged'],
    ]);
    expect(merges()).toBe(0);
    expect(readFileSync(manifestPath, 'utf8')).toBe(bytes0);
    expect(prsLines(ws)).toHaveLength(lines0);

    // ---- merge
    const merged = acted(await prsCommand(input, { command: 'merge', method: 'squash', dryRun: false }));
    const headOf = (id: string) => lane(ran, id).commit!.slice(0, 12);
    expect(merged.actions.map((a) => [a.lane, a.outcome, a.detail])).toEqual([
      ['api', 'merged', expect.stringMatching(new RegExp(`^#${apiNumber} merged \\(squash\\) as [0-9a-f]{12}$`))],
      ['cli', 'not-merged', `a reviewer requested changes on #${number('cli')}`],
      ['docs', 'not-merged', `#${number('docs')} is a draft`],
      ['web', 'not-merged', `CI is failure on ${headOf('web')}`],
    ]);
    expect(merged.exitCode).toBe(1);
    expect(merges()).toBe(1);
    const pull = (repo: string) => emu.pullRequests(repo)[0]!;
    expect(pull('acme/api').merged_at).not.toBeNull();
    for (const repo of ['acme/cli', 'acme/docs', 'acme/web']) expect(pull(repo)).toMatchObject({ state: 'open', merged_at: null });
    const m1 = readManifest(ws);
    expect(lane(m1, 'api')).toMatchObject({
      pr_number: apiNumber,
      merge_status: 'merged',
      phase: 'merged',
      prs: { command: 'merge', outcome: 'merged', state: 'merged' },
    });
    expect(lane(m1, 'web').prs).toMatchObject({ outcome: 'not-merged', state: 'open', detail: `CI is failure on ${headOf('web')}` });
    expect(m1.summary.merged).toBe(1);
    expect(prsLines(ws).map((e) => [e.lane, e.command, e.pr, e.from, e.to])).toEqual([
      ['api', 'prs merge', apiNumber, 'open', 'merged'],
      ['cli', 'prs merge', number('cli'), 'open', 'open'],
      ['docs', 'prs merge', number('docs'), 'open', 'open'],
      ['web', 'prs merge', number('web'), 'open', 'open'],
    ]);
    expect(renderPrsActions(merged.actions, { command: 'merge', dryRun: false, method: 'squash' })).toContain('merged: 1 · not merged: 3.');

    // ---- merge again: nothing to do, nothing written
    const bytes1 = readFileSync(manifestPath, 'utf8');
    const again = acted(await prsCommand(input, { command: 'merge', method: 'squash', dryRun: false }));
    expect(again.actions[0]).toMatchObject({ lane: 'api', outcome: 'already-merged' });
    expect(again.changed).toBe(false);
    expect(merges()).toBe(1);
    expect(readFileSync(manifestPath, 'utf8')).toBe(bytes1);
    expect(prsLines(ws)).toHaveLength(4);

    // ---- close, dry run
    const closes = () => emu.count({ route: '/repos/{owner}/{repo}/pulls/{pull_number}', method: 'PATCH' });
    const deletes = () => emu.count({ route: '/repos/{owner}/{repo}/git/refs/{ref}', method: 'DELETE' });
    const patchesBefore = closes();
    const dryClose = acted(await prsCommand(input, { command: 'close', dryRun: true }));
    expect(dryClose.actions.map((a) => [a.lane, a.outcome, a.detail])).toEqual([
      ['api', 'already-merged', `#${apiNumber} is merged: left as it is`],
      ['cli', 'would-close', `would close #${number('cli')} and delete fleet/stamp/cli`],
      ['docs', 'would-close', `would close #${number('docs')} and delete fleet/stamp/docs`],
      ['web', 'would-close', `would close #${number('web')} and delete fleet/stamp/web`],
    ]);
    expect([closes(), deletes()]).toEqual([patchesBefore, 0]);
    expect(readFileSync(manifestPath, 'utf8')).toBe(bytes1);

    // ---- close
    const closed = acted(await prsCommand(input, { command: 'close', dryRun: false }));
    expect(closed.actions.map((a) => [a.lane, a.outcome, a.branch_deleted])).toEqual([
      ['api', 'already-merged', false],
      ['cli', 'closed', true],
      ['docs', 'closed', true],
      ['web', 'closed', true],
    ]);
    expect(closed.actions[1]!.detail).toBe(`#${number('cli')} closed; fleet/stamp/cli deleted`);
    expect(closed.exitCode).toBe(0);
    for (const repo of ['acme/cli', 'acme/docs', 'acme/web']) {
      expect(pull(repo)).toMatchObject({ state: 'closed', merged_at: null });
      expect(await emu.branchSha(repo, `fleet/stamp/${repo.split('/')[1]}`)).toBeNull();
    }
    // The merged PR and its branch are left as they are.
    expect(await emu.branchSha('acme/api', 'fleet/stamp/api')).toBe(lane(ran, 'api').commit);
    expect([closes() - patchesBefore, deletes()]).toEqual([3, 3]);
    const m2 = readManifest(ws);
    expect(lane(m2, 'web').prs).toMatchObject({ command: 'close', outcome: 'closed', state: 'closed', branch_deleted: true });
    expect(lane(m2, 'api').prs).toMatchObject({ command: 'merge', outcome: 'merged' });
    expect(
      prsLines(ws)
        .slice(4)
        .map((e) => [e.lane, e.command, e.from, e.to]),
    ).toEqual([
      ['cli', 'prs close', 'open', 'closed'],
      ['docs', 'prs close', 'open', 'closed'],
      ['web', 'prs close', 'open', 'closed'],
    ]);

    // ---- close again: nothing to do, nothing written
    const bytes2 = readFileSync(manifestPath, 'utf8');
    const closedAgain = acted(await prsCommand(input, { command: 'close', dryRun: false }));
    expect(closedAgain.actions.map((a) => [a.lane, a.outcome])).toEqual([
      ['api', 'already-merged'],
      ['cli', 'already-closed'],
      ['docs', 'already-closed'],
      ['web', 'already-closed'],
    ]);
    expect(closedAgain.changed).toBe(false);
    expect([closes() - patchesBefore, deletes()]).toEqual([3, 3]);
    expect(readFileSync(manifestPath, 'utf8')).toBe(bytes2);
    expect(prsLines(ws)).toHaveLength(7);

    // ---- and the list shows where everything ended
    const end = await prsCommand(input, { command: 'list' });
    if (!end.ok || end.command !== 'list') throw new Error('list failed');
    expect(end.rows.map((r) => [r.lane, r.state, r.branch_head === null])).toEqual([
      ['api', 'merged', false],
      ['cli', 'closed', true],
      ['docs', 'closed', true],
      ['web', 'closed', true],
    ]);
    emu.assertNoViolations();
  }, 240_000);

  it('closing leaves a branch someone pushed to after the run, and says so', async () => {
    flow = await startFlow();
    const { emu } = flow;
    const { forge, ws, manifestPath } = await ranFleet(flow);
    const ran = readManifest(ws);
    const sha = await emu.commit({ owner: 'acme', repo: 'web', branch: 'fleet/stamp/web', files: { 'FIX.md': 'a person fixed it\n' } });
    const r = acted(await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'close', dryRun: false }));
    const web = r.actions.find((a) => a.lane === 'web')!;
    expect(web).toMatchObject({ outcome: 'closed', branch_deleted: false });
    expect(web.detail).toBe(
      `#${lane(ran, 'web').pr_number} closed; fleet/stamp/web left: it is at ${sha.slice(0, 12)}, not at the lane's commit ${lane(ran, 'web').commit!.slice(0, 12)}`,
    );
    expect(await emu.branchSha('acme/web', 'fleet/stamp/web')).toBe(sha);
    expect(emu.pullRequests('acme/web')[0]!.state).toBe('closed');
    emu.assertNoViolations();
  }, 180_000);

  it("never merges or closes a PR someone else opened from the lane's branch, nor one into another base", async () => {
    flow = await startFlow();
    const { emu } = flow;
    const { forge, ws, manifestPath } = await ranFleet(flow);
    const ran = readManifest(ws);
    const kit = createOctokit({ token: flow.token, apiUrl: emu.url, pacing: { writeMs: 0, searchMs: 0, notificationsMs: 0 } });
    // A person closes the fleet's PR of api (a decision against it), then opens one of their own from the same
    // branch into another base.
    await kit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
      owner: 'acme',
      repo: 'api',
      pull_number: lane(ran, 'api').pr_number!,
      state: 'closed',
    });
    const production = await emu.commit({ owner: 'acme', repo: 'api', branch: 'production', files: { 'PROD.md': 'production\n' } });
    const theirs = (
      await kit.request('POST /repos/{owner}/{repo}/pulls', {
        owner: 'acme',
        repo: 'api',
        head: 'fleet/stamp/api',
        base: 'production',
        title: 'ship it',
        body: 'by hand',
      })
    ).data.number;
    const merged = acted(await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'merge', method: 'merge', dryRun: false }));
    const api = merged.actions.find((a) => a.lane === 'api')!;
    expect(api.outcome).toBe('not-merged');
    expect(api.detail).toContain(`#${theirs} from fleet/stamp/api was not opened by this fleet's run`);
    expect(await emu.branchSha('acme/api', 'production')).toBe(production);
    const closed = acted(await prsCommand({ manifestPath, forge, clock: systemClock }, { command: 'close', dryRun: false }));
    expect(closed.actions.find((a) => a.lane === 'api')!.outcome).toBe('not-closed');
    expect(emu.pullRequests('acme/api').find((p) => p.number === theirs)!.state).toBe('open');
    expect(await emu.branchSha('acme/api', 'fleet/stamp/api')).toBe(lane(ran, 'api').commit);
    emu.assertNoViolations();
  }, 180_000);
});
