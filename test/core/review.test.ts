/**
 * Review lenses, pure (src/core/review.ts): a lens's answer read and validated, the panel's findings merged with
 * their provenance, dispositions given, and the verdict after each round.
 */
import { describe, expect, it } from 'vitest';
import { applyDispositions, BUILTIN_LENSES, dedupeFindings, parseLensOutput, reviewVerdict, type LensRecord } from '../../src/core/review.js';

const rec = (over: Partial<LensRecord> = {}): LensRecord => ({ severity: 'high', file: 'src/a.ts', line: 3, finding: 'Off by one in the loop.', suggested_fix: 'Use <.', lens: 'x', refuted: false, ...over });

describe('a lens answer', () => {
  it('reads a JSON list, a fenced block after prose, or the last list in the text; the lens Fleet asked is the provenance', () => {
    const plain = parseLensOutput('correctness', JSON.stringify([rec({ lens: 'made-up' })]));
    expect(plain).toMatchObject({ ok: true, refuted: false, findings: [{ lens: 'correctness', finding: 'Off by one in the loop.' }] });
    const fenced = parseLensOutput('security', `I looked.\n\`\`\`json\n${JSON.stringify([rec({ severity: 'critical' })])}\n\`\`\`\nDone.`);
    expect(fenced).toMatchObject({ ok: true, findings: [{ severity: 'critical', lens: 'security' }] });
    const trailing = parseLensOutput('edge-cases', `Findings: ${JSON.stringify([rec()])}`);
    expect(trailing.ok).toBe(true);
  });

  it('refuted: true, alone, is the explicit "found nothing"', () => {
    const r = parseLensOutput('correctness', JSON.stringify([rec({ refuted: true, finding: 'Nothing wrong found.', file: null, line: null, severity: 'low' })]));
    expect(r).toEqual({ ok: true, lens: 'correctness', refuted: true, findings: [] });
  });

  it('an empty list, prose, or a record off the schema is a failed answer, never "no findings"', () => {
    expect(parseLensOutput('a', '[]')).toMatchObject({ ok: false, problem: expect.stringContaining('at least one record') });
    expect(parseLensOutput('a', 'Looks good to me!')).toMatchObject({ ok: false, problem: 'the answer holds no JSON list of findings' });
    expect(parseLensOutput('a', JSON.stringify([{ ...rec(), severity: 'blocker' }]))).toMatchObject({ ok: false, problem: expect.stringContaining('0.severity') });
    expect(parseLensOutput('a', JSON.stringify([{ ...rec(), refuted: undefined }]))).toMatchObject({ ok: false, problem: expect.stringContaining('0.refuted') });
    expect(parseLensOutput('a', JSON.stringify([{ ...rec(), line: 0 }])).ok).toBe(false);
  });

  it('has a brief for each built-in lens', () => {
    expect(Object.keys(BUILTIN_LENSES)).toEqual(['correctness', 'completeness', 'security', 'edge-cases', 'consistency']);
  });
});

describe('the panel\'s findings', () => {
  it('are one per file, line and finding, keeping every lens that raised it and the gravest severity', () => {
    const a = parseLensOutput('correctness', JSON.stringify([rec({ severity: 'medium' }), rec({ line: 9, finding: 'Unchecked null.' })]));
    const b = parseLensOutput('edge-cases', JSON.stringify([rec({ finding: 'off by ONE in the  loop', severity: 'critical', suggested_fix: '' })]));
    const c = parseLensOutput('security', 'no json here');
    const merged = dedupeFindings([a, b, c]);
    expect(merged).toEqual([
      { id: 'f1', severity: 'critical', file: 'src/a.ts', line: 3, finding: 'Off by one in the loop.', suggested_fix: 'Use <.', lenses: ['correctness', 'edge-cases'] },
      { id: 'f2', severity: 'high', file: 'src/a.ts', line: 9, finding: 'Unchecked null.', suggested_fix: 'Use <.', lenses: ['correctness'] },
    ]);
    // Another line is another finding.
    expect(dedupeFindings([parseLensOutput('x', JSON.stringify([rec(), rec({ line: 4 })]))])).toHaveLength(2);
  });
});

describe('dispositions and the verdict', () => {
  const findings = dedupeFindings([parseLensOutput('correctness', JSON.stringify([rec({ severity: 'critical' }), rec({ line: 7, severity: 'low', finding: 'Name is vague.' }), rec({ line: 8, severity: 'medium', finding: 'No test.' })]))]);

  it('the worker\'s, a forced severity is ACCEPT whatever it said, and a finding it left out is ACCEPT', () => {
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
