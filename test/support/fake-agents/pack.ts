/**
 * The fake agents as npm packages, for legs that install their agent CLI
 * (agent.install: file:<tarball>): `fake-claude-code` provides a `claude`
 * command that is fake-claude, after it has noted in AGENT.txt (in the
 * working copy, so it lands in the patch) the SHA-256 of each credential it
 * was given, never the credential itself. Given a directive that says
 * "LEAK", it also does what a prompt-injected agent would: prints its key
 * and writes it into the change.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAKE_AGENTS } from '../repos.js';

const WRAPPER = `#!/usr/bin/env node
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
const sha = (v) => (v ? createHash('sha256').update(v).digest('hex') : 'none');
const names = ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'CODEX_API_KEY', 'OPENAI_API_KEY'];
writeFileSync('AGENT.txt', names.map((n) => n + ': ' + sha(process.env[n])).join('\\n') + '\\n');
const prompt = process.argv.slice(2).find((a) => a.includes('## Directive')) ?? '';
if (prompt.includes('LEAK')) {
  console.log('my key is ' + process.env.ANTHROPIC_API_KEY);
  writeFileSync('LEAKED.txt', 'key=' + process.env.ANTHROPIC_API_KEY + '\\n');
}
await import('./fake-claude.mjs');
`;

/** Packs `fake-claude-code@<version>` into a tarball (as npm pack lays it out) and returns its path. */
export function packFakeClaude(version = '1.0.0'): string {
  const dir = mkdtempSync(join(tmpdir(), 'fake-agent-pkg-'));
  const pkg = join(dir, 'package');
  mkdirSync(pkg);
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'fake-claude-code', version, type: 'module', bin: { claude: 'cli.mjs' } }));
  copyFileSync(join(FAKE_AGENTS, 'fake-claude'), join(pkg, 'fake-claude.mjs'));
  writeFileSync(join(pkg, 'cli.mjs'), WRAPPER);
  chmodSync(join(pkg, 'cli.mjs'), 0o755);
  const tarball = join(dir, `fake-claude-code-${version}.tgz`);
  execFileSync('tar', ['czf', tarball, '-C', dir, 'package']);
  return tarball;
}
