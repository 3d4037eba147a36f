import { describe, expect, it } from 'vitest';
import type { Persona } from '../../src/core/fleet-file.js';
import { routePersonas, type RoutingInput } from '../../src/core/routing.js';

function persona(name: string, applies_to: string[], keywords: string[]): Persona {
  return { name, applies_to, keywords };
}

const documentationWriter = persona('documentation-writer', ['**/*.md', 'docs/**'], ['docs', 'readme']);
const testStrategist = persona('test-strategist', ['**/*.test.ts', 'test/**'], ['test', 'coverage']);
const codeReviewer = persona('code-reviewer', ['**/*.ts', '**/*.js'], ['security', 'refactor']);
const dependencyAuditor = persona('dependency-auditor', ['package.json', '**/package-lock.json'], ['security', 'dependency', 'vulnerability']);
const structureExplorer = persona('structure-explorer', ['src/index.ts'], ['architecture']);

const ALL = [documentationWriter, testStrategist, codeReviewer, dependencyAuditor, structureExplorer];

function route(over: Partial<RoutingInput>) {
  return routePersonas({
    personas: ALL,
    k: 2,
    changed_files: [],
    title: '',
    body: '',
    repo: 'acme/api',
    lane: 'api',
    ...over,
  });
}

function scoreOf(r: ReturnType<typeof routePersonas>, agent: string): number {
  const s = r.all_scores.find((x) => x.agent === agent);
  if (!s) throw new Error(`no score for ${agent}`);
  return s.score;
}

describe('routePersonas', () => {
  it('docs-only change picks documentation-writer over test-strategist at K=2', () => {
    const r = route({
      k: 2,
      changed_files: ['README.md', 'docs/guide/install.md'],
      title: 'Refresh the install docs',
      body: 'The readme points at an old flag.',
    });
    // 2 globs (**/*.md, docs/**) × 2 + 2 keywords (docs, readme) × 1
    expect(scoreOf(r, 'documentation-writer')).toBe(6);
    expect(scoreOf(r, 'test-strategist')).toBe(0);
    expect(r.selected[0]).toBe('documentation-writer');
    expect(r.selected).not.toContain('test-strategist');
    // Nothing else is relevant, so K=2 leaves the second slot empty rather than padding it.
    expect(r.selected).toEqual(['documentation-writer']);
    expect(r.disabled).toBe(false);
    expect(r.fallback_used).toBe(false);
  });

  it('TypeScript plus a security keyword ranks code-reviewer and dependency-auditor above structure-explorer', () => {
    const r = route({
      k: 2,
      changed_files: ['src/auth/session.ts', 'src/auth/token.ts'],
      title: 'Fix a security vulnerability in session handling',
      body: 'Tokens were compared with ==; no architecture change.',
    });
    // code-reviewer: **/*.ts (2) + "security" (1) = 3
    // dependency-auditor: "security" + "vulnerability" (2) = 2
    // structure-explorer: "architecture" (1) = 1 — positive, so only the ranking keeps it out
    expect(r.all_scores.map((s) => [s.agent, s.score])).toEqual([
      ['code-reviewer', 3],
      ['dependency-auditor', 2],
      ['structure-explorer', 1],
      ['documentation-writer', 0],
      ['test-strategist', 0],
    ]);
    expect(r.selected).toEqual(['code-reviewer', 'dependency-auditor']);
    expect(r.all_scores[0]?.matched_globs).toEqual(['**/*.ts']);
    expect(r.all_scores[0]?.matched_keywords).toEqual(['security']);
    expect(r.all_scores[1]?.matched_keywords).toEqual(['security', 'vulnerability']);
  });

  it('structure-explorer is picked only when its own file changes', () => {
    const r = route({ k: 5, changed_files: ['src/index.ts'], title: 'Fix a security bug' });
    expect(scoreOf(r, 'structure-explorer')).toBe(2);
    expect(r.selected).toEqual(['code-reviewer', 'structure-explorer', 'dependency-auditor']);
  });

  it('empty globs and keywords score 0 and are excluded', () => {
    const empty = persona('empty-persona', [], []);
    const r = routePersonas({
      personas: [empty, codeReviewer],
      k: 5,
      changed_files: ['src/a.ts'],
      title: 'anything at all',
      body: '',
      repo: 'acme/api',
      lane: 'api',
    });
    expect(r.all_scores).toContainEqual({ agent: 'empty-persona', score: 0, matched_globs: [], matched_keywords: [] });
    expect(r.selected).toEqual(['code-reviewer']);
  });

  it('K >= agent count selects all positives in score order', () => {
    const r = route({
      k: 10,
      changed_files: ['src/index.ts', 'README.md', 'test/app.test.ts'],
      title: 'Architecture notes and test coverage',
      body: '',
    });
    // documentation-writer: **/*.md (2) = 2
    // test-strategist: **/*.test.ts, test/** (4) + test, coverage (2) = 6
    // code-reviewer: **/*.ts (2) = 2
    // structure-explorer: src/index.ts (2) + architecture (1) = 3
    // dependency-auditor: 0
    expect(r.selected).toEqual(['test-strategist', 'structure-explorer', 'code-reviewer', 'documentation-writer']);
    expect(r.selected).not.toContain('dependency-auditor');
    expect(r.all_scores.map((s) => [s.agent, s.score])).toEqual([
      ['test-strategist', 6],
      ['structure-explorer', 3],
      ['code-reviewer', 2],
      ['documentation-writer', 2],
      ['dependency-auditor', 0],
    ]);
  });

  it('ties break alphabetically', () => {
    const zeta = persona('zeta', ['**/*.go'], []);
    const alpha = persona('alpha', ['cmd/**'], []);
    const mid = persona('mid', ['**/main.go'], []);
    for (const personas of [
      [zeta, alpha, mid],
      [mid, zeta, alpha],
      [alpha, mid, zeta],
    ]) {
      const r = routePersonas({
        personas,
        k: 2,
        changed_files: ['cmd/main.go'],
        title: '',
        body: '',
        repo: 'acme/cli',
        lane: 'cli',
      });
      expect(r.all_scores.map((s) => s.score)).toEqual([2, 2, 2]);
      expect(r.all_scores.map((s) => s.agent)).toEqual(['alpha', 'mid', 'zeta']);
      expect(r.selected).toEqual(['alpha', 'mid']);
    }
  });

  it('k = 0 disables routing and selects every persona', () => {
    const r = route({ k: 0, changed_files: ['README.md'] });
    expect(r.disabled).toBe(true);
    expect(r.k).toBe(0);
    expect(r.selected).toEqual(ALL.map((x) => x.name));
    expect(r.fallback_used).toBe(false);
    // Scores are still recorded, for the routing artifact.
    expect(r.all_scores).toHaveLength(ALL.length);
    expect(scoreOf(r, 'documentation-writer')).toBe(2);
  });

  it('uses the fallback when nothing scores', () => {
    const r = route({ k: 2, changed_files: ['Makefile'], title: 'Bump the toolchain', fallback: 'code-reviewer' });
    expect(r.all_scores.every((s) => s.score === 0)).toBe(true);
    expect(r.selected).toEqual(['code-reviewer']);
    expect(r.fallback_used).toBe(true);
    expect(r.disabled).toBe(false);
  });

  it('selects nothing when nothing scores and there is no fallback', () => {
    const r = route({ k: 2, changed_files: ['Makefile'], title: 'Bump the toolchain' });
    expect(r.selected).toEqual([]);
    expect(r.fallback_used).toBe(false);
  });

  it('does not use the fallback when some persona scores', () => {
    const r = route({ k: 2, changed_files: ['README.md'], fallback: 'code-reviewer' });
    expect(r.selected).toEqual(['documentation-writer']);
    expect(r.fallback_used).toBe(false);
  });

  it('ignores a fallback that names no persona', () => {
    const r = route({ k: 2, changed_files: ['Makefile'], fallback: 'ghost' });
    expect(r.selected).toEqual([]);
    expect(r.fallback_used).toBe(false);
  });

  it('matches keywords case-insensitively as substrings of title and body', () => {
    const r = routePersonas({
      personas: [dependencyAuditor],
      k: 1,
      changed_files: [],
      title: 'Security-audit of the lockfile',
      body: 'Addresses a known VULNERABILITY.',
      repo: 'acme/api',
      lane: 'api',
    });
    const [s] = r.all_scores;
    expect(s?.matched_keywords).toEqual(['security', 'vulnerability']);
    expect(s?.score).toBe(2);
    expect(r.selected).toEqual(['dependency-auditor']);
  });

  it('looks for keywords in the body as well as the title', () => {
    const r = route({ k: 1, title: 'Chore', body: 'Needs a refactor.' });
    expect(r.selected).toEqual(['code-reviewer']);
  });

  it('does not match a keyword across the title/body boundary', () => {
    const p = persona('joined', [], ['ab']);
    const r = routePersonas({ personas: [p], k: 1, changed_files: [], title: 'a', body: 'b', repo: 'r/r', lane: 'r' });
    expect(r.all_scores[0]?.score).toBe(0);
  });

  it('**/*.ts matches a.ts at the root and src/a.ts', () => {
    const root = route({ k: 5, changed_files: ['a.ts'] });
    const nested = route({ k: 5, changed_files: ['src/a.ts'] });
    expect(root.all_scores.find((s) => s.agent === 'code-reviewer')?.matched_globs).toEqual(['**/*.ts']);
    expect(nested.all_scores.find((s) => s.agent === 'code-reviewer')?.matched_globs).toEqual(['**/*.ts']);
    expect(root.selected).toContain('code-reviewer');
    expect(nested.selected).toContain('code-reviewer');
  });

  it('counts a glob once however many files it matches', () => {
    const r = route({ k: 5, changed_files: ['a.ts', 'b.ts', 'src/c.ts', 'src/d.ts'] });
    expect(scoreOf(r, 'code-reviewer')).toBe(2);
  });

  it('counts a repeated glob or keyword once', () => {
    const p = persona('repeats', ['**/*.ts', '**/*.ts'], ['fix', 'FIX']);
    const r = routePersonas({ personas: [p], k: 1, changed_files: ['a.ts'], title: 'fix', body: '', repo: 'r/r', lane: 'r' });
    expect(r.all_scores[0]).toEqual({ agent: 'repeats', score: 3, matched_globs: ['**/*.ts'], matched_keywords: ['fix'] });
  });

  it('records the work item and K', () => {
    const r = route({ k: 3, title: 'T', repo: 'acme/web', lane: 'web' });
    expect(r.work_item).toEqual({ repo: 'acme/web', lane: 'web', title: 'T' });
    expect(r.k).toBe(3);
  });

  it('handles no personas', () => {
    const r = routePersonas({ personas: [], k: 2, changed_files: ['a.ts'], title: '', body: '', repo: 'r/r', lane: 'r' });
    expect(r).toMatchObject({ all_scores: [], selected: [], disabled: false, fallback_used: false });
  });

  it('is deterministic and JSON-serialisable', () => {
    const input: RoutingInput = {
      personas: ALL,
      k: 2,
      changed_files: ['src/index.ts', 'docs/a.md'],
      title: 'Docs and architecture',
      body: '',
      repo: 'acme/api',
      lane: 'api',
    };
    const a = routePersonas(input);
    expect(routePersonas(input)).toEqual(a);
    expect(JSON.parse(JSON.stringify(a))).toEqual(a);
  });
});

describe('ties', () => {
  it('equal scores are ordered by name, whatever order the fleet file lists the personas in', () => {
    const zed = persona('zed', ['**/*.md'], []);
    const amy = persona('amy', ['**/*.md'], []);
    const mia = persona('mia', [], []);
    const r = route({ personas: [zed, mia, amy], k: 1, changed_files: ['README.md'] });
    expect(r.all_scores.map((s) => [s.agent, s.score])).toEqual([
      ['amy', 2],
      ['zed', 2],
      ['mia', 0],
    ]);
    // K=1 takes the first of the tie by name.
    expect(r.selected).toEqual(['amy']);
  });
});
