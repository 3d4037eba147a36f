/**
 * Issues that are not pull requests, as the issue queue reads and changes them: listing by label (PRs listed
 * too, as GitHub lists them), labels created and removed, comments, the timeline, matching refs, and a closing
 * keyword closing an issue when its PR merges into the default branch, under both closed-event forms.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../support/github-emulator/index.js';
import { api, pushFiles, removeDir, tempDir } from './helpers.js';

let emu: Emulator;
let work: string;
let n = 0;

beforeAll(async () => {
  emu = await startEmulator({ validateResponses: true });
  work = await tempDir();
});

afterAll(async () => {
  emu.assertNoViolations();
  await emu.close();
  await removeDir(work);
});

async function freshRepo(): Promise<string> {
  const name = `tracker-${++n}`;
  await emu.createRepo({ owner: 'acme', name, files: { 'README.md': '# t\n' } });
  return name;
}

async function openPr(repo: string, branch: string, body: string): Promise<number> {
  await pushFiles(emu, work, { owner: 'acme', repo, branch, files: { [`${branch.replace(/\//g, '-')}.txt`]: 'x\n' } });
  const r = await api(emu, 'POST', `/repos/acme/${repo}/pulls`, { body: { head: `acme:${branch}`, base: 'main', title: branch, body } });
  expect(r.status).toBe(201);
  return r.body.number;
}

describe('issues', () => {
  it('lists open issues carrying every named label; PRs share the numbering and the listing (https://docs.github.com/rest/issues/issues#list-repository-issues)', async () => {
    const repo = await freshRepo();
    const a = await api(emu, 'POST', `/repos/acme/${repo}/issues`, { body: { title: 'one', body: 'done when: x', labels: ['fleet:ready', 'priority: high'] } });
    expect(a.status).toBe(201);
    expect(a.body.number).toBe(1);
    emu.createIssue(`acme/${repo}`, { title: 'two', labels: ['fleet:ready'] });
    emu.createIssue(`acme/${repo}`, { title: 'three', labels: ['other'] });
    const pr = await openPr(repo, 'feature/x', 'no link');
    expect(pr).toBe(4);
    await api(emu, 'POST', `/repos/acme/${repo}/issues/${pr}/labels`, { body: { labels: ['fleet:ready'] } });
    const ready = await api(emu, 'GET', `/repos/acme/${repo}/issues?labels=fleet:ready&state=open&sort=created&direction=asc`);
    expect(ready.body.map((i: any) => [i.number, Boolean(i.pull_request)])).toEqual([
      [1, false],
      [2, false],
      [4, true],
    ]);
    const both = await api(emu, 'GET', `/repos/acme/${repo}/issues?labels=fleet:ready,priority:%20high`);
    expect(both.body.map((i: any) => i.number)).toEqual([1]);
  });

  it('creates a label once (422 already_exists after), gets it by name, removes one from an issue (404 when absent)', async () => {
    const repo = await freshRepo();
    const created = await api(emu, 'POST', `/repos/acme/${repo}/labels`, { body: { name: 'fleet:in-flight', color: 'fbca04' } });
    expect(created.status).toBe(201);
    const again = await api(emu, 'POST', `/repos/acme/${repo}/labels`, { body: { name: 'Fleet:In-Flight', color: 'fbca04' } });
    expect(again.status).toBe(422);
    expect(again.body.errors[0]).toMatchObject({ resource: 'Label', code: 'already_exists' });
    expect((await api(emu, 'GET', `/repos/acme/${repo}/labels/fleet:in-flight`)).body.color).toBe('fbca04');
    expect((await api(emu, 'GET', `/repos/acme/${repo}/labels/missing`)).status).toBe(404);
    const i = emu.createIssue(`acme/${repo}`, { title: 'x', labels: ['fleet:in-flight'] });
    const removed = await api(emu, 'DELETE', `/repos/acme/${repo}/issues/${i.number}/labels/fleet:in-flight`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual([]);
    const twice = await api(emu, 'DELETE', `/repos/acme/${repo}/issues/${i.number}/labels/fleet:in-flight`);
    expect(twice.status).toBe(404);
    const timeline = await api(emu, 'GET', `/repos/acme/${repo}/issues/${i.number}/timeline`);
    expect(timeline.body.map((e: any) => [e.event, e.label?.name])).toEqual([
      ['labeled', 'fleet:in-flight'],
      ['unlabeled', 'fleet:in-flight'],
    ]);
  });

  it('comments: created, listed, counted and in the timeline', async () => {
    const repo = await freshRepo();
    const i = emu.createIssue(`acme/${repo}`, { title: 'x' });
    const c = await api(emu, 'POST', `/repos/acme/${repo}/issues/${i.number}/comments`, { body: { body: '<!-- fleet:q:no-spec -->\nsay what done is' } });
    expect(c.status).toBe(201);
    const list = await api(emu, 'GET', `/repos/acme/${repo}/issues/${i.number}/comments`);
    expect(list.body.map((x: any) => x.body)).toEqual(['<!-- fleet:q:no-spec -->\nsay what done is']);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/issues/${i.number}`)).body.comments).toBe(1);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/issues/${i.number}/timeline`)).body.map((e: any) => e.event)).toEqual(['commented']);
  });

  for (const mode of ['null', 'merge-commit'] as const) {
    it(`a closing keyword closes the issue when the PR merges into the default branch (closed event commit_id: ${mode}; docs vs PyGithub/PyGithub#1295)`, async () => {
      emu.setClosedEventCommit(mode);
      try {
        const repo = await freshRepo();
        const fixed = emu.createIssue(`acme/${repo}`, { title: 'fixed' });
        const mentioned = emu.createIssue(`acme/${repo}`, { title: 'mentioned' });
        const pr = await openPr(repo, `fleet/q/issue-${fixed.number}-fixed`, `Fixes #${fixed.number}\n\nSee also #${mentioned.number}.`);
        expect(emu.issues(`acme/${repo}`)[0]!.state).toBe('open');
        const merged = await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${pr}/merge`, { body: { merge_method: 'squash' } });
        expect(merged.status).toBe(200);
        const [a, b] = emu.issues(`acme/${repo}`);
        expect([a!.state, a!.state_reason, b!.state]).toEqual(['closed', 'completed', 'open']);
        const timeline = (await api(emu, 'GET', `/repos/acme/${repo}/issues/${fixed.number}/timeline`)).body;
        expect(timeline.map((e: any) => e.event)).toEqual(['cross-referenced', 'closed']);
        expect(timeline[0].source.issue).toMatchObject({ number: pr, pull_request: { merged_at: expect.any(String) } });
        expect(timeline[1].commit_id).toBe(mode === 'null' ? null : merged.body.sha);
        const other = (await api(emu, 'GET', `/repos/acme/${repo}/issues/${mentioned.number}/timeline`)).body;
        expect(other.map((e: any) => e.event)).toEqual(['cross-referenced']);
      } finally {
        emu.setClosedEventCommit('null');
      }
    });
  }

  it('a PR into another branch closes nothing; an issue closed by hand has no cross-reference', async () => {
    const repo = await freshRepo();
    await pushFiles(emu, work, { owner: 'acme', repo, branch: 'develop', files: { 'd.txt': 'd\n' } });
    const i = emu.createIssue(`acme/${repo}`, { title: 'x' });
    await pushFiles(emu, work, { owner: 'acme', repo, branch: 'topic', files: { 't.txt': 't\n' } });
    const r = await api(emu, 'POST', `/repos/acme/${repo}/pulls`, { body: { head: 'acme:topic', base: 'develop', title: 't', body: `Closes #${i.number}` } });
    await api(emu, 'PUT', `/repos/acme/${repo}/pulls/${r.body.number}/merge`, { body: {} });
    expect(emu.issues(`acme/${repo}`)[0]!.state).toBe('open');
    const hand = emu.createIssue(`acme/${repo}`, { title: 'y' });
    const closed = await api(emu, 'PATCH', `/repos/acme/${repo}/issues/${hand.number}`, { body: { state: 'closed', state_reason: 'not_planned' } });
    expect(closed.body).toMatchObject({ state: 'closed', state_reason: 'not_planned' });
    const timeline = (await api(emu, 'GET', `/repos/acme/${repo}/issues/${hand.number}/timeline`)).body;
    expect(timeline.map((e: any) => [e.event, e.commit_id, e.state_reason])).toEqual([['closed', null, 'not_planned']]);
  });

  it('matching refs list the branches under a prefix, [] when none (https://docs.github.com/rest/git/refs#list-matching-references)', async () => {
    const repo = await freshRepo();
    await pushFiles(emu, work, { owner: 'acme', repo, branch: 'fleet/q/issue-3-x', files: { 'a.txt': 'a\n' } });
    await pushFiles(emu, work, { owner: 'acme', repo, branch: 'fleet/q/issue-30-y', files: { 'b.txt': 'b\n' } });
    const all = await api(emu, 'GET', `/repos/acme/${repo}/git/matching-refs/heads/fleet/q/issue-`);
    expect(all.body.map((r: any) => r.ref)).toEqual(['refs/heads/fleet/q/issue-3-x', 'refs/heads/fleet/q/issue-30-y']);
    expect((await api(emu, 'GET', `/repos/acme/${repo}/git/matching-refs/heads/none/`)).body).toEqual([]);
  });
});
