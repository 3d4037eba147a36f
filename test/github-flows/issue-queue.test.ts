/**
 * The issue queue (source.issues) on the emulated GitHub, through the real CLI: a queue of 15 issues with a
 * dependency chain, a gate, a NO_SPEC issue, a parallel plan, a spec file and priorities, worked down by
 * repeated runs (as the scheduled workflow runs it) until only the gated and NO_SPEC issues are open; ten runs
 * leave one PR per work item, one comment and one label event each; a worker killed after pushing its branch
 * is resumed by the next run on the same branch.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ci } from '../support/github-emulator/index.js';
import { readManifest } from '../integration/helpers.js';
import { startFlow, type Flow } from './helpers.js';

const REPO = 'acme/app';
const SPEC = '## Acceptance criteria\n- [ ] the file exists\n';
/** Copies the issue the lane works on into the slot's folder (or work/): the change a worker would make. */
const RUN = [
  'case "$FLEET_ISSUE_SLOT" in lead) d=src/core;; api) d=src/api;; web) d=src/web;; *) d=work;; esac',
  'mkdir -p "$d" && cp "$FLEET_ISSUE_FILE" "$d/issue-$FLEET_ISSUE${FLEET_ISSUE_SLOT:+-$FLEET_ISSUE_SLOT}.md"',
].join('\n');

function queueFleet(flow: Flow, extra: Record<string, unknown> = {}): string {
  return flow.fleetFile({
    name: 'q',
    directive: 'Work on the issue below.',
    run: RUN,
    source: { issues: { repo: REPO, label: 'fleet:ready' } },
    max_parallel: 3,
    merge: { policy: 'when-green', method: 'squash' },
    ...extra,
  });
}

function openIssues(flow: Flow): number[] {
  return flow.emu
    .issues(REPO)
    .filter((i) => i.state === 'open')
    .map((i) => i.number);
}

function readJsonLines(path: string): Array<Record<string, unknown>> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('issue queue: 15 issues over scheduled runs', () => {
  let flow: Flow;
  beforeAll(async () => {
    flow = await startFlow();
    await flow.emu.createRepo({
      owner: 'acme',
      name: 'app',
      files: { 'README.md': '# app\n', 'docs/specs/10.md': '# Spec 10\nDone when the file exists.\n', 'src/core/a.ts': 'export {};\n' },
    });
    // CI is still running when a lane ends, so its PR merges at the start of the next run, as on a schedule.
    flow.emu.setCi(REPO, ci.green(['test'], 50));
    const issue = (title: string, body: string, labels: string[] = []) => flow.emu.createIssue(REPO, { title, body, labels: ['fleet:ready', ...labels] });
    issue('Add request logging', SPEC); // 1
    issue('Fix crash on start', SPEC, ['priority: critical']); // 2
    issue('Rename the config key', SPEC); // 3
    issue('Chain: first', SPEC); // 4
    issue('Chain: second', `${SPEC}Depends on #4\n`); // 5
    issue('Chain: third', `${SPEC}Depends on #5\n`); // 6
    issue('Rotate the signing keys', `${SPEC}Gate: security signs off the rotation plan\n`); // 7
    issue('Make it better', 'It is slow. Please make it better.'); // 8
    issue(
      'Split the client',
      `${SPEC}\n## Parallel plan\n\n| Slot | Touches | Depends on |\n|---|---|---|\n| lead | \`src/core/**\` | — |\n| api | \`src/api/**\` | lead |\n| web | \`src/web/**\` | lead |\n`,
    ); // 9
    issue('Follow the spec file', 'Spec: docs/specs/10.md\n'); // 10
    issue('Speed up the build', SPEC, ['priority: high']); // 11
    issue('Update the README', SPEC, ['priority: high']); // 12
    issue('Add a health check', SPEC, ['priority: medium']); // 13
    // Its body names another issue with a closing keyword: the PR body never quotes it, so #7 stays open.
    issue('Drop the old flag', `${SPEC}This also fixes #7.\n`); // 14
    issue('Document the API', `${SPEC}Depends on #3\n`); // 15
    // A PR with the ready label is not an issue of the queue.
  }, 60_000);
  afterAll(() => flow.close());

  it('works the queue down until only the gated and NO_SPEC issues remain, and ten runs duplicate nothing', async () => {
    const file = queueFleet(flow);
    const started: string[][] = [];
    for (let run = 1; run <= 10; run++) {
      const ws = join(flow.dir, `ws-${run}`);
      const r = await flow.run(file, ws);
      expect(r.code, `run ${run}: ${r.stderr}${r.stdout}`).toBe(0);
      const m = readManifest(ws);
      expect(m.queue).toBeDefined();
      started.push(m.queue!.rows.flatMap((row) => row.started));
      // The budget: never more than max_parallel work items started or open at once.
      const open = m.queue!.rows.flatMap((row) => row.items).filter((i) => i.state === 'open-pr').length;
      expect(open + started[run - 1]!.length).toBeLessThanOrEqual(3);
      await flow.emu.idle();
    }
    // Priority first (critical, then high), then lowest number.
    expect(started[0]).toEqual(['issue-2', 'issue-11', 'issue-12']);
    const runOf = (lane: string) => started.findIndex((s) => s.includes(lane));
    // The chain: each link starts only after the one before merged (a run later at least).
    expect(runOf('issue-5')).toBeGreaterThan(runOf('issue-4'));
    expect(runOf('issue-6')).toBeGreaterThan(runOf('issue-5'));
    expect(runOf('issue-15')).toBeGreaterThan(runOf('issue-3'));
    // The parallel plan: the lead alone, then its two dependents together once the lead's PR merged.
    expect(runOf('issue-9.api')).toBeGreaterThan(runOf('issue-9.lead'));
    expect(runOf('issue-9.api')).toBe(runOf('issue-9.web'));
    expect(openIssues(flow)).toEqual([7, 8]);

    // Done by merged PRs: every other issue closed completed, its work on main.
    const issues = flow.emu.issues(REPO);
    for (const i of issues.filter((x) => ![7, 8].includes(x.number))) {
      expect(i.state_reason, `#${i.number}`).toBe('completed');
      // Done issues keep none of Fleet's working labels.
      expect(i.labels, `#${i.number}`).not.toContain('fleet:in-flight');
    }
    const prs = flow.emu.pullRequests(REPO);
    const lanes = prs.map((p) => /<!-- fleet:q:([^ ]+) -->/.exec(p.body ?? '')?.[1]);
    expect(new Set(lanes).size).toBe(prs.length);
    expect(prs).toHaveLength(15);
    expect(prs.every((p) => p.merged_at)).toBe(true);
    expect(prs.find((p) => p.body?.includes('fleet:q:issue-9.api'))!.body).toContain('Part of #9');
    expect(prs.find((p) => p.body?.includes('fleet:q:issue-10 '))!.body).toContain('Closes #10');

    // One comment on the NO_SPEC issue, one blocked label on the gated one: after ten runs.
    const noSpec = issues.find((i) => i.number === 8)!;
    expect(noSpec.comments).toHaveLength(1);
    expect(noSpec.comments[0]!.body).toContain('does not say what done looks like');
    const gated = issues.find((i) => i.number === 7)!;
    expect(gated.labels).toEqual(['fleet:ready', 'fleet:blocked']);
    expect(gated.events.filter((e) => e.kind === 'labeled' && e.label === 'fleet:blocked')).toHaveLength(1);
    const byLabel = new Map<string, number>();
    for (const i of issues)
      for (const e of i.events) if (e.kind === 'labeled') byLabel.set(`${i.number}:${e.label}`, (byLabel.get(`${i.number}:${e.label}`) ?? 0) + 1);
    expect([...byLabel.values()].every((n) => n === 1)).toBe(true);
    const labels = flow.emu.repo(REPO)!.labels;
    expect([...labels.keys()].filter((k) => k.startsWith('fleet:')).sort()).toEqual(['fleet:blocked', 'fleet:in-flight', 'fleet:ready']);
    // The parallel plan's issue was closed by Fleet once every slot merged, with the PRs named once.
    expect(issues.find((i) => i.number === 9)!.comments.filter((c) => c.body.includes('Every part of this issue has merged'))).toHaveLength(1);

    // The last run's board: the two that remain, each with its reason quoted from the issue.
    const last = readManifest(join(flow.dir, 'ws-10')).queue!;
    expect(last.rows.map((r) => [r.issue, r.state, r.reason])).toEqual([
      [7, 'BLOCKED_PERSON', '"Gate: security signs off the rotation plan"'],
      [8, 'NO_SPEC', expect.stringContaining('does not say what done looks like')],
    ]);
    const report = readFileSync(join(flow.dir, 'ws-10', 'report.md'), 'utf8');
    expect(report).toContain('### Issue queue');
    expect(report).toMatch(/\| #7 .*BLOCKED_PERSON/);
    // The spec file reached the lane: the issue file it copied holds it.
    const events = readJsonLines(join(flow.dir, 'ws-1', 'events.jsonl')).filter((e) => 'issue' in e);
    expect(events).toContainEqual(expect.objectContaining({ issue: 8, to: 'NO_SPEC' }));
    expect(events).toContainEqual(expect.objectContaining({ issue: 2, from: null, to: 'IN_FLIGHT', detail: 'started issue-2' }));
    flow.emu.assertNoViolations();
  }, 600_000);
});

describe('issue queue: a worker killed mid-run', () => {
  let flow: Flow;
  beforeAll(async () => {
    flow = await startFlow();
    await flow.emu.createRepo({ owner: 'acme', name: 'app', files: { 'README.md': '# app\n' } });
    flow.emu.createIssue(REPO, { title: 'Add a feature', body: SPEC, labels: ['fleet:ready'] });
  }, 60_000);
  afterAll(() => flow.close());

  it('is resumed by the next run on its own branch, with one PR in the end', async () => {
    const file = queueFleet(flow, { merge: { policy: 'never', method: 'squash' } });
    // The real CLI as its own process, killed the moment its branch reaches GitHub: before it opens the PR.
    const child = spawn(process.execPath, [resolve('bin/fleet.js'), 'run', file, '--workspace', join(flow.dir, 'ws-killed'), '--quiet'], {
      cwd: flow.dir,
      env: Object.fromEntries(Object.entries({ ...process.env, ...flow.env }).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv,
      stdio: 'ignore',
    });
    const exited = new Promise<NodeJS.Signals | null>((done) => child.on('exit', (_code, signal) => done(signal)));
    const off = flow.emu.onPush((e) => {
      if (e.branch?.startsWith('fleet/q/issue-1-')) child.kill('SIGKILL');
    });
    expect(await exited).toBe('SIGKILL');
    off();
    const branch = 'fleet/q/issue-1-add-a-feature';
    expect(await flow.emu.branchSha(REPO, branch)).not.toBeNull();
    expect(flow.emu.pullRequests(REPO)).toHaveLength(0);

    const ws = join(flow.dir, 'ws-next');
    const r = await flow.run(file, ws);
    expect(r.code, r.stderr).toBe(0);
    const row = readManifest(ws).queue!.rows[0]!;
    expect(row).toMatchObject({ issue: 1, state: 'IN_FLIGHT', started: ['issue-1'] });
    expect(row.reason).toContain(`branch ${branch} has no PR and no live run: resumed`);
    const prs = flow.emu.pullRequests(REPO);
    expect(prs.map((p) => [p.headRef, p.state])).toEqual([[branch, 'open']]);

    // And the run after that only sees it in flight: no second PR, no second lane.
    const again = await flow.run(file, join(flow.dir, 'ws-third'));
    expect(again.code).toBe(0);
    expect(readManifest(join(flow.dir, 'ws-third')).queue!.rows[0]).toMatchObject({ state: 'IN_FLIGHT', started: [], reason: 'the issue: PR #2 open' });
    expect(flow.emu.pullRequests(REPO)).toHaveLength(1);
    expect(flow.emu.issues(REPO)[0]!.labels).toEqual(['fleet:ready', 'fleet:in-flight']);
  }, 300_000);

  it('fleet plan reads the queue and changes nothing on GitHub', async () => {
    flow.emu.createIssue(REPO, { title: 'Vague', body: 'hmm', labels: ['fleet:ready'] });
    const file = queueFleet(flow);
    const before = flow.emu.count({ method: 'POST' }) + flow.emu.count({ method: 'DELETE' }) + flow.emu.count({ method: 'PATCH' });
    const { fleet } = await import('../integration/helpers.js');
    const r = await fleet(['plan', file], { cwd: flow.dir, env: flow.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/### Issue queue[\s\S]*\(read only: nothing on GitHub was changed\)[\s\S]*NO_SPEC 1/);
    expect(r.stdout).toMatch(/\| #3 +\| Vague +\| NO_SPEC +\|/);
    expect(flow.emu.count({ method: 'POST' }) + flow.emu.count({ method: 'DELETE' }) + flow.emu.count({ method: 'PATCH' })).toBe(before);
  });
});

describe('issue queue: what is left to a person', () => {
  let flow: Flow;
  beforeAll(async () => {
    flow = await startFlow();
    await flow.emu.createRepo({ owner: 'acme', name: 'app', files: { 'README.md': '# app\n' } });
  }, 60_000);
  afterAll(() => flow.close());

  let runs = 0;
  const run = async (file: string) => {
    const ws = join(flow.dir, `ws-${++runs}`);
    const r = await flow.run(file, ws);
    await flow.emu.idle();
    return { r, m: readManifest(ws) };
  };
  const row = (m: ReturnType<typeof readManifest>, issue: number) => m.queue!.rows.find((x) => x.issue === issue);

  it('a lane that fails hands its issue to a person once, instead of starting it again every run', async () => {
    const n = flow.emu.createIssue(REPO, { title: 'Cannot be done', body: SPEC, labels: ['fleet:ready'] }).number;
    const file = queueFleet(flow, { run: `if [ "$FLEET_ISSUE" = ${n} ]; then echo "the build is broken" >&2; exit 3; fi; ${RUN}`, max_retries: 0 });
    const first = await run(file);
    expect(first.r.code).toBe(1);
    expect(first.m.queue!.actions).toContainEqual(`#${n} issue-${n}: handed to a person (directive-failed)`);
    const issue = () => flow.emu.issues(REPO).find((i) => i.number === n)!;
    expect(issue().labels).toContain('fleet:needs-person');
    expect(issue().comments).toHaveLength(1);
    expect(issue().comments[0]!.body).toContain('could not finish lane `issue-' + n + '`');
    // The next run leaves it to the person: no lane, no second comment.
    const second = await run(file);
    expect(second.r.code).toBe(0);
    expect(row(second.m, n)).toMatchObject({ state: 'BLOCKED_PERSON', started: [], reason: 'labelled "fleet:needs-person"' });
    expect(issue().comments).toHaveLength(1);
    flow.emu.editIssue(REPO, n, { state: 'closed', stateReason: 'not_planned' });
  });

  it('a gate added while the PR is open stops the merge; ticking it lets the next run merge', async () => {
    const n = flow.emu.createIssue(REPO, { title: 'Ship the flag', body: SPEC, labels: ['fleet:ready'] }).number;
    const held = ci.held(ci.green(['test']), { until: 'finish' });
    flow.emu.setCi(REPO, held);
    const file = queueFleet(flow);
    const first = await run(file);
    expect(first.r.code, first.r.stderr).toBe(0);
    expect(row(first.m, n)!.started).toEqual([`issue-${n}`]);
    flow.emu.editIssue(REPO, n, { body: `${SPEC}- [ ] Gate: product signs off the launch\n` });
    held.release();
    await flow.emu.idle();
    const second = await run(file);
    expect(row(second.m, n)).toMatchObject({ state: 'BLOCKED_PERSON', reason: '"Gate: product signs off the launch"' });
    expect(flow.emu.pullRequests(REPO).find((p) => p.body?.includes(`fleet:q:issue-${n} `))!.merged_at).toBeNull();
    flow.emu.editIssue(REPO, n, { body: `${SPEC}- [x] Gate: product signs off the launch\n` });
    await run(file);
    expect(flow.emu.pullRequests(REPO).find((p) => p.body?.includes(`fleet:q:issue-${n} `))!.merged_at).not.toBeNull();
    expect(flow.emu.issues(REPO).find((i) => i.number === n)!.state).toBe('closed');
    flow.emu.setCi(REPO, null);
  });

  it("a PR that copies Fleet's marker from another branch is neither the issue's work nor merged", async () => {
    const n = flow.emu.createIssue(REPO, { title: 'Tidy the docs', body: SPEC, labels: ['fleet:ready'] }).number;
    await flow.emu.commit({
      owner: 'acme',
      repo: 'app',
      branch: 'sneaky',
      from: 'main',
      files: { '.github/workflows/evil.yml': 'on: push\n' },
      message: `Sneak\n\nFleet-Id: q\nFleet-Lane: issue-${n}\n`,
    });
    const { api } = await import('../emulator/helpers.js');
    const forged = await api(flow.emu, 'POST', '/repos/acme/app/pulls', {
      body: { head: 'acme:sneaky', base: 'main', title: 'x', body: `<!-- fleet:q:issue-${n} -->\nCloses #${n}` },
    });
    expect(forged.status).toBe(201);
    const first = await run(queueFleet(flow));
    expect(row(first.m, n)!.started).toEqual([`issue-${n}`]);
    const sneaky = flow.emu.pullRequests(REPO).find((p) => p.headRef === 'sneaky')!;
    expect(sneaky.merged_at).toBeNull();
    expect(await flow.emu.branchSha(REPO, `fleet/q/issue-${n}-tidy-the-docs`)).not.toBeNull();
  });

  it('--resume is refused: the next run is how a queue resumes', async () => {
    const { fleet } = await import('../integration/helpers.js');
    const r = await fleet(['run', queueFleet(flow), '--resume', join(flow.dir, 'ws-1', 'fleet-status.json')], { cwd: flow.dir, env: flow.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('an issue queue resumes by running again');
  });
});
