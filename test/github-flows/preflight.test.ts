/**
 * Pre-flight on GitHub: every target is validated in one batched GraphQL
 * query before any lane runs; archived repositories and repositories the
 * token cannot push to are excluded with a reason, listed in the manifest
 * and the report, and never touched; the others run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lane, readManifest } from '../integration/helpers.js';
import { excludedSection, prsOpened, startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

/** A token that can push everywhere except acme/svc-7, where it can only read. */
const APP_TOKEN = 'ghs_PreflightAppToken0123456789abcdefgh';

describe('pre-flight exclusion on GitHub', () => {
  it('2 archived and 1 read-only of 10: excluded with reasons, in the manifest and the report; 7 run; one GraphQL query validated all', async () => {
    flow = await startFlow();
    const { emu } = flow;
    emu.addToken(APP_TOKEN, { login: 'fleet-app', default: 'push', permissions: { 'acme/svc-7': 'pull' } });
    const repos: string[] = [];
    for (let i = 1; i <= 10; i++) {
      const name = `svc-${i}`;
      await emu.createRepo({ owner: 'acme', name, archived: i === 2 || i === 9, files: { 'README.md': `# ${name}\n` } });
      repos.push(`acme/${name}`);
    }
    const excluded = new Map([
      ['svc-2', 'archived'],
      ['svc-9', 'archived'],
      ['svc-7', 'no-push-permission'],
    ]);

    const file = flow.fleetFile({
      name: 'preflight',
      directive: 'Add a CODEOWNERS file.',
      run: 'mkdir -p .github && echo "* @acme/platform" > .github/CODEOWNERS',
      max_retries: 0,
      targets: repos.map((repo) => ({ repo })),
    });
    const ws = join(flow.dir, 'ws');
    const r = await flow.run(file, ws, [], { FLEET_GITHUB_TOKEN: APP_TOKEN });
    expect(r.code, r.stderr).toBe(0);

    const m = readManifest(ws);
    expect(m.summary).toMatchObject({ total: 10, completed: 7, failed: 0, excluded: 3 });
    expect(new Map(m.excluded.map((x) => [x.lane, x.reason]))).toEqual(excluded);
    expect(m.excluded.find((x) => x.lane === 'svc-7')?.detail).toMatch(/read permission on acme\/svc-7; it needs write/);
    for (const [id, reason] of excluded) {
      const rec = lane(m, id);
      expect(rec.status, id).toBe('excluded');
      expect(rec.wave, id).toBeNull();
      expect(m.excluded.some((x) => x.lane === id && x.reason === reason)).toBe(true);
      // Never touched: no clone, no push, no PR, no REST call at all.
      expect(
        emu.find({}).filter((q) => q.path.includes(`/acme/${id}/`) || q.path.includes(`/acme/${id}.git`)),
        id,
      ).toEqual([]);
      expect(emu.pullRequests(`acme/${id}`)).toEqual([]);
    }
    for (const repo of repos) {
      const id = repo.split('/')[1]!;
      if (excluded.has(id)) continue;
      const rec = lane(m, id);
      expect(rec, id).toMatchObject({ status: 'completed', changed_files: ['.github/CODEOWNERS'] });
      const pulls = emu.pullRequests(repo);
      expect(pulls, id).toHaveLength(1);
      expect(pulls[0]).toMatchObject({ headSha: rec.commit, user: 'fleet-app' });
    }
    expect(prsOpened(emu)).toBe(7);

    // One GraphQL request validated all ten repositories (ten aliased `repository` fields), made with the app token.
    // (Each lane's CI read after its push is a GraphQL query of one `repository` too.)
    const queries = emu.find({ kind: 'graphql' }).filter((q) => q.graphqlFields!.length > 1);
    expect(queries).toHaveLength(1);
    expect(queries[0]!.graphqlFields!.filter((f) => f === 'repository')).toHaveLength(10);
    expect(queries[0]!.token).toBe(APP_TOKEN);
    // It came before any lane's work.
    expect(emu.requests[0]!.kind).toBe('graphql');

    // The report lists the three, with their reasons, in stdout and report.md.
    for (const out of [r.stdout, readFileSync(join(ws, 'report.md'), 'utf8')]) {
      const section = excludedSection(out);
      const lines = section.split('\n').filter((l) => l.startsWith('- '));
      expect(lines).toHaveLength(3);
      expect(lines.find((l) => l.includes('`acme/svc-2`'))).toContain('archived');
      expect(lines.find((l) => l.includes('`acme/svc-9`'))).toContain('archived');
      expect(lines.find((l) => l.includes('`acme/svc-7`'))).toContain('no-push-permission');
    }
    emu.assertNoViolations();
  });
});
