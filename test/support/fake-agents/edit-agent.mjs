#!/usr/bin/env node
// A minimal agent for `command` presets, for tests: `edit-agent.mjs --prompt-file F [--record R] [--fail]`.
// It reads the prompt, takes the first `backticked` path in its Directive section (or a line
// `FILE: <path>`) and appends a line naming the directive to that file, creating it if needed.
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const argv = process.argv.slice(2);
const opt = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const promptFile = opt('--prompt-file');
if (!promptFile) {
  process.stderr.write('usage: edit-agent.mjs --prompt-file F [--record R] [--fail]\n');
  process.exit(2);
}
const prompt = readFileSync(promptFile, 'utf8');
const record = opt('--record');
if (record) writeFileSync(record, prompt);
if (argv.includes('--fail')) {
  process.stderr.write('edit-agent: failing on purpose\n');
  process.exit(3);
}
const m = /(?:^|\n)## Directive\n\n([\s\S]*?)(?:\n\n## |$)/.exec(prompt);
const directive = (m ? m[1] : prompt).trim();
const target = /`([^`\n]+)`/.exec(directive)?.[1] ?? /^FILE: (.+)$/m.exec(prompt)?.[1];
if (!target) {
  process.stderr.write('edit-agent: no file named in the directive\n');
  process.exit(1);
}
mkdirSync(path.dirname(target), { recursive: true });
appendFileSync(target, `edit-agent: ${directive.split('\n')[0]}\n`);
process.stdout.write(`edited ${target}\n`);
