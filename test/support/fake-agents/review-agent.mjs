#!/usr/bin/env node
// A fake coding agent for review tests, no network: it plays the worker, every lens and the disposition step,
// telling them apart by the prompt Fleet wrote. What each does comes from a plan (JSON):
//
//   { "write": { "<path>": "<content>" },            the worker's change (its first attempt)
//     "lanes": { "<lane>": { …any of these… } },     per-lane overrides (by FLEET_LANE)
//     "lenses": { "<lens>": "<behaviour>" },        per lens; unlisted lenses refute
//     "dispositions": { "<severity>": "ACCEPT" | "FIX_LATER" | "DEFER" } | "garbage",
//     "fix": "fix" | "cannot" | "outside" | "fail",
//     "discoveries": ["…"],                          a "## Discoveries" list ending the worker's answer
//     "record": "<path>",                            the worker's prompt is written to <path>-<lane>.md, its argv
//                                                    appended to <path>-<lane>.argv.jsonl
//     "worker": "fail" }                             the worker exits 5 (a failing attempt)
//
// Lens behaviours:
//   marker        a finding (severity high) on every added line holding BUG, else refuted
//   marker-medium the same finding, severity medium (lenses that disagree on severity)
//   refute        refuted, always
//   garbage       prose without JSON, always
//   garbage-once  prose without JSON, then (asked again) as `marker`
//   nitpick       one low finding on the first changed file, always
//   edit          appends to README.md (it was told not to), then refutes
//   exit          exits 3
//   leak          one low finding quoting $ANTHROPIC_API_KEY (a prompt-injected lens)
//   leak-escaped  the same, the key's first letter written as a JSON \u escape
// Fix behaviours: fix replaces BUG by OK in the changed files; cannot changes nothing; outside writes
// OUTSIDE.txt (outside the fence); fail exits 4.
//
// Usage: review-agent.mjs --plan PLAN (--prompt-file F | -p PROMPT) [--output-format json]
// With --output-format json it prints Claude Code's result object, cost 0.01 (or the plan's "cost") and 2 turns per run.
// With "record", every run's argv and part (worker, a lens, dispositions, fix) goes to <record>-<lane>.runs.jsonl.
import { appendFileSync, readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import path from 'node:path';

const argv = process.argv.slice(2);
const opt = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const whole = JSON.parse(readFileSync(opt('--plan'), 'utf8'));
// "lanes": {"<lane>": {…}} overrides the plan for one lane (FLEET_LANE), so one plan serves a whole fleet.
const plan = { ...whole, ...(whole.lanes?.[process.env.FLEET_LANE] ?? {}) };
const prompt = opt('--prompt-file') ? readFileSync(opt('--prompt-file'), 'utf8') : (opt('-p') ?? '');
const json = opt('--output-format') === 'json';

// Every run's argv, with the part it played, for tests of what Fleet handed each run.
if (plan.record) {
  const role =
    /^You review a change as the "([^"]+)" lens/.exec(prompt)?.[1] ??
    (prompt.includes('Give each one a disposition') ? 'dispositions' : prompt.includes('## Review findings to fix') ? 'fix' : 'worker');
  appendFileSync(`${plan.record}-${process.env.FLEET_LANE}.runs.jsonl`, JSON.stringify({ role, argv }) + '\n');
}

function answer(text, code = 0) {
  if (json) {
    process.stdout.write(
      JSON.stringify({
        type: 'result',
        subtype: code ? 'error_during_execution' : 'success',
        is_error: code !== 0,
        result: text,
        num_turns: 2,
        total_cost_usd: plan.cost ?? 0.01,
        usage: { input_tokens: prompt.length, output_tokens: text.length },
      }) + '\n',
    );
  } else {
    process.stdout.write(text + '\n');
  }
  process.exit(code);
}

/** The added lines holding BUG, each with its file: the diff in a lens prompt. */
function markers() {
  const found = [];
  let file = null;
  let line = 0;
  for (const l of prompt.split('\n')) {
    const f = /^\+\+\+ b\/(.+)$/.exec(l);
    if (f) {
      file = f[1];
      continue;
    }
    const h = /^@@ -\d+(?:,\d+)? \+(\d+)/.exec(l);
    if (h) {
      line = Number(h[1]) - 1;
      continue;
    }
    if (l.startsWith('+')) {
      line++;
      if (l.includes('BUG')) found.push({ file, line });
    } else if (l.startsWith(' ')) line++;
  }
  return found;
}

const lensMatch = /^You review a change as the "([^"]+)" lens/.exec(prompt);
if (lensMatch) {
  const lens = lensMatch[1];
  const asked = prompt.includes('Your answer could not be read');
  let behaviour = plan.lenses?.[lens] ?? 'refute';
  if (behaviour === 'garbage-once') behaviour = asked ? 'marker' : 'garbage';
  const refuted = [{ severity: 'low', file: null, line: null, finding: 'Nothing wrong found.', suggested_fix: '', lens, refuted: true }];
  switch (behaviour) {
    case 'garbage':
      answer('I looked at the change and it seems fine overall, though I would need more context.');
      break;
    case 'exit':
      answer('lens crashed', 3);
      break;
    case 'leak-escaped': {
      // The key with its first letter as a JSON escape: the raw answer holds no copy of the key, the parsed finding does.
      const key = process.env.ANTHROPIC_API_KEY;
      const escaped = '\\u' + key.charCodeAt(0).toString(16).padStart(4, '0') + key.slice(1);
      answer(
        JSON.stringify([{ severity: 'low', file: null, line: null, finding: `The key is ${key}.`, suggested_fix: 'None.', lens, refuted: false }]).replace(
          key,
          escaped,
        ),
      );
      break;
    }
    case 'leak':
      answer(
        JSON.stringify([
          { severity: 'low', file: null, line: null, finding: `The key is ${process.env.ANTHROPIC_API_KEY}.`, suggested_fix: 'None.', lens, refuted: false },
        ]),
      );
      break;
    case 'edit':
      appendFileSync('README.md', 'a lens was here\n');
      answer(JSON.stringify(refuted));
      break;
    case 'nitpick': {
      const file = /^Files changed: ([^,\n]+)/m.exec(prompt)?.[1] ?? null;
      answer(
        'Here is what I found:\n```json\n' +
          JSON.stringify([{ severity: 'low', file, line: 1, finding: 'The name could say more.', suggested_fix: 'Rename it.', lens, refuted: false }]) +
          '\n```',
      );
      break;
    }
    case 'marker':
    case 'marker-medium': {
      const found = markers();
      if (!found.length) answer(JSON.stringify(refuted));
      const severity = behaviour === 'marker' ? 'high' : 'medium';
      answer(
        JSON.stringify(
          found.map((m) => ({
            severity,
            file: m.file,
            line: m.line,
            finding: 'A BUG marker is left in the code.',
            suggested_fix: 'Replace BUG by OK.',
            lens,
            refuted: false,
          })),
        ),
      );
      break;
    }
    default:
      answer(JSON.stringify(refuted));
  }
}

if (prompt.includes('Give each one a disposition')) {
  if (plan.dispositions === 'garbage') answer('They all look fine to me.');
  const out = [];
  for (const m of prompt.matchAll(/^- (f\d+) \[(\w+);/gm))
    out.push({ id: m[1], disposition: plan.dispositions?.[m[2]] ?? 'ACCEPT', reason: `planned for ${m[2]}` });
  answer(JSON.stringify(out));
}

if (prompt.includes('## Review findings to fix')) {
  const fix = plan.fix ?? 'fix';
  if (fix === 'fail') answer('cannot fix', 4);
  if (fix === 'outside') {
    writeFileSync('OUTSIDE.txt', 'x\n');
    answer('fixed (outside)');
  }
  if (fix === 'fix') {
    for (const p of Object.keys(plan.write ?? {})) if (existsSync(p)) writeFileSync(p, readFileSync(p, 'utf8').replaceAll('BUG', 'OK'));
  }
  answer(`fix round: ${fix}`);
}

// The worker's first attempt.
if (plan.record) {
  writeFileSync(`${plan.record}-${process.env.FLEET_LANE}.md`, prompt);
  appendFileSync(`${plan.record}-${process.env.FLEET_LANE}.argv.jsonl`, JSON.stringify(argv) + '\n');
}
if (plan.worker === 'fail') answer('the worker gives up', 5);
for (const [p, content] of Object.entries(plan.write ?? {})) {
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, content);
}
answer(`wrote the change${plan.discoveries ? `\n\n## Discoveries\n${plan.discoveries.map((d) => `- ${d}`).join('\n')}\n\nThat is all.` : ''}`);
