/**
 * Review lenses, pure (src/core/review.ts): a lens's answer read and validated, the panel's findings merged with
 * their provenance, dispositions given, and the verdict after each round.
 */
import { describe, expect, it } from 'vitest';
import {
  applyDispositions,
  BUILTIN_LENSES,
  carryIds,
  dedupeFindings,
  dispositionPrompt,
  findingStatus,
  fixPrompt,
  LENS_DIFF_LIMIT,
  lensPrompt,
  lensReaskPrompt,
  parseDispositions,
  parseLensOutput,
  reviewVerdict,
  type LensRecord,
  type ReviewFinding,
} from '../../src/core/review.js';

const rec = (over: Partial<LensRecord> = {}): LensRecord => ({
  severity: 'high',
  file: 'src/a.ts',
  line: 3,
  finding: 'Off by one in the loop.',
  suggested_fix: 'Use <.',
  lens: 'x',
  refuted: false,
  ...over,
});

describe('a lens answer', () => {
  it('reads a JSON list, a fenced block after prose, or the last list in the text; the lens Fleet asked is the provenance', () => {
    const plain = parseLensOutput('correctness', JSON.stringify([rec({ lens: 'made-up' })]));
    expect(plain).toMatchObject({ ok: true, refuted: false, findings: [{ lens: 'correctness', finding: 'Off by one in the loop.' }] });
    const fenced = parseLensOutput('security', `I looked.\n\`\`\`json\n${JSON.stringify([rec({ severity: 'critical' })])}\n\`\`\`\nDone.`);
    expect(fenced).toMatchObject({ ok: true, findings: [{ severity: 'critical', lens: 'security' }] });
    const trailing = parseLensOutput('edge-cases', `See [the docs]. Findings: ${JSON.stringify([rec({ finding: 'Uses a[0] on [] input.' })])}`);
    expect(trailing).toMatchObject({ ok: true, findings: [{ finding: 'Uses a[0] on [] input.' }] });
  });

  it('refuted: true, alone, is the explicit "found nothing"', () => {
    const r = parseLensOutput(
      'correctness',
      JSON.stringify([rec({ refuted: true, finding: 'Nothing wrong found.', file: null, line: null, severity: 'low' })]),
    );
    expect(r).toEqual({ ok: true, lens: 'correctness', refuted: true, findings: [] });
  });

  it('an empty list, prose, or a record off the schema is a failed answer, never "no findings"', () => {
    expect(parseLensOutput('a', '[]')).toMatchObject({ ok: false, problem: expect.stringContaining('at least one record') });
    expect(parseLensOutput('a', 'Looks good to me!')).toMatchObject({ ok: false, problem: 'the answer holds no JSON list of findings' });
    expect(parseLensOutput('a', JSON.stringify([{ ...rec(), severity: 'blocker' }]))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('0.severity'),
    });
    expect(parseLensOutput('a', JSON.stringify([{ ...rec(), refuted: undefined }]))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('0.refuted'),
    });
    expect(parseLensOutput('a', JSON.stringify([{ ...rec(), line: 0 }])).ok).toBe(false);
  });

  it('has a brief for each built-in lens', () => {
    expect(Object.keys(BUILTIN_LENSES)).toEqual(['correctness', 'completeness', 'security', 'edge-cases', 'consistency']);
  });
});

describe("the panel's findings", () => {
  it('are one per file, line and finding, keeping every lens that raised it and the gravest severity', () => {
    const a = parseLensOutput('correctness', JSON.stringify([rec({ severity: 'medium' }), rec({ line: 9, finding: 'Unchecked null.' })]));
    const b = parseLensOutput('edge-cases', JSON.stringify([rec({ finding: 'off by ONE in the  loop', severity: 'critical', suggested_fix: '' })]));
    const c = parseLensOutput('security', 'no json here');
    const merged = dedupeFindings([a, b, c]);
    expect(merged).toEqual([
      {
        id: 'f1',
        severity: 'critical',
        file: 'src/a.ts',
        line: 3,
        finding: 'Off by one in the loop.',
        suggested_fix: 'Use <.',
        lenses: ['correctness', 'edge-cases'],
      },
      { id: 'f2', severity: 'high', file: 'src/a.ts', line: 9, finding: 'Unchecked null.', suggested_fix: 'Use <.', lenses: ['correctness'] },
    ]);
    // Another line is another finding.
    expect(dedupeFindings([parseLensOutput('x', JSON.stringify([rec(), rec({ line: 4 })]))])).toHaveLength(2);
  });
});

describe('dispositions and the verdict', () => {
  const findings = dedupeFindings([
    parseLensOutput(
      'correctness',
      JSON.stringify([
        rec({ severity: 'critical' }),
        rec({ line: 7, severity: 'low', finding: 'Name is vague.' }),
        rec({ line: 8, severity: 'medium', finding: 'No test.' }),
      ]),
    ),
  ]);

  it("the worker's, a forced severity is ACCEPT whatever it said, and a finding it left out is ACCEPT", () => {
    const d = applyDispositions(findings, { f1: 'DEFER', f2: 'FIX_LATER' }, ['critical']);
    expect(d.map((f) => [f.id, f.disposition])).toEqual([
      ['f1', 'ACCEPT'],
      ['f2', 'FIX_LATER'],
      ['f3', 'ACCEPT'],
    ]);
  });

  it('clear only with no ACCEPT open and every lens answered; fix, review again, or a person at the round cap', () => {
    const none = applyDispositions(findings, { f1: 'DEFER', f2: 'FIX_LATER', f3: 'DEFER' });
    expect(reviewVerdict(none, 1, 3)).toEqual({ verdict: 'clear', open: [] });
    const open = applyDispositions(findings, { f2: 'FIX_LATER', f3: 'DEFER' });
    expect(reviewVerdict(open, 1, 3)).toMatchObject({ verdict: 'fix', open: [{ id: 'f1' }] });
    expect(reviewVerdict(open, 3, 3)).toMatchObject({ verdict: 'needs-person', open: [{ id: 'f1' }], failed: [] });
    expect(reviewVerdict(none, 1, 3, ['security'])).toEqual({ verdict: 'review-again', open: [], failed: ['security'] });
    expect(reviewVerdict(none, 2, 2, ['security'])).toEqual({ verdict: 'needs-person', open: [], failed: ['security'] });
  });
});

describe('what the agents are asked', () => {
  it('a lens: its brief, the directive, the files and the diff, and an answer its own output can be read back from', () => {
    const p = lensPrompt({ lens: 'security', brief: BUILTIN_LENSES.security!, directive: 'Bump the Node version.', diff: '+node: 20', files: ['.nvmrc'] });
    expect(p).toContain('You review a change as the "security" lens. Look for what the change lets an attacker do');
    expect(p).toContain('Bump the Node version.');
    expect(p).toContain('Files changed: .nvmrc');
    expect(p).toContain('+node: 20');
    // The "found nothing" answer the prompt shows is itself a valid, refuted answer.
    const shown = /answer exactly: (\[.*\])$/m.exec(p)![1]!;
    expect(parseLensOutput('security', shown)).toMatchObject({ ok: true, refuted: true });
    const long = lensPrompt({ lens: 'x', brief: 'b', directive: 'd', diff: 'y'.repeat(LENS_DIFF_LIMIT + 10), files: [] });
    expect(long).toContain(`cut at ${LENS_DIFF_LIMIT} characters`);
    expect(long.length).toBeLessThan(LENS_DIFF_LIMIT + 2000);
    expect(lensReaskPrompt('no JSON')).toContain('Your answer could not be read: no JSON.');
  });

  it('the worker: a disposition for each finding, read back; unknown ids dropped, garbage gives none', () => {
    const findings = dedupeFindings([parseLensOutput('correctness', JSON.stringify([rec(), rec({ line: 9, finding: 'Unchecked null.' })]))]);
    const p = dispositionPrompt(findings);
    expect(p).toContain('- f1 [high; correctness] src/a.ts:3: Off by one in the loop. Suggested: Use <.');
    const answer = 'Here:\n```json\n[{"id":"f1","disposition":"FIX_LATER","reason":"later"},{"id":"f9","disposition":"DEFER","reason":"x"}]\n```';
    expect(parseDispositions(answer, findings)).toEqual({ assigned: { f1: 'FIX_LATER' }, reasons: { f1: 'later' } });
    expect(parseDispositions('all good', findings)).toMatchObject({ assigned: {}, problem: 'the answer holds no JSON list of dispositions' });
    expect(parseDispositions('[{"id":"f1","disposition":"MAYBE","reason":"x"}]', findings).problem).toContain('0.disposition');
    // Nothing assigned: every finding blocks.
    expect(applyDispositions(findings, parseDispositions('all good', findings).assigned).every((f) => f.disposition === 'ACCEPT')).toBe(true);
    expect(fixPrompt(findings.slice(1))).toContain('- f2 src/a.ts:9: Unchecked null.');
  });
});

describe('carryIds and findingStatus', () => {
  const f = (id: string, finding: string, line = 1): ReviewFinding => ({
    id,
    severity: 'high',
    file: 'a.ts',
    line,
    finding,
    suggested_fix: '',
    lenses: ['correctness'],
  });
  it('keeps the id of a finding raised again (same file, line, wording up to case and a full stop) and numbers new ones on', () => {
    const known = [f('f1', 'Off by one.'), f('f2', 'Null deref.', 9)];
    expect(carryIds(known, [f('f1', 'null deref', 9), f('f2', 'A new one.'), f('f3', 'off by one')]).map((x) => x.id)).toEqual(['f2', 'f3', 'f1']);
  });
  it('an ACCEPT finding the last round raised again is open; one it did not raise is fixed; FIX_LATER and DEFER keep their word', () => {
    expect(findingStatus('ACCEPT', [1, 2], 2)).toBe('open');
    expect(findingStatus('ACCEPT', [1], 2)).toBe('fixed');
    expect(findingStatus('FIX_LATER', [1, 2], 2)).toBe('follow-up');
    expect(findingStatus('DEFER', [2], 2)).toBe('deferred');
  });
});
