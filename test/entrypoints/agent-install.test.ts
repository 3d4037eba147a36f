/**
 * The agent CLI install of a leg (src/actions/agent-install.ts), with real npm over local tarballs (no network):
 * an Actions cache that cannot be read costs only time, and a package that installs no command for the preset
 * fails with what to set. The Actions cache itself is exercised end to end in test/actions-e2e/agents.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { installAgent, type CacheLike } from '../../src/actions/agent-install.js';
import { packFakeClaude } from '../support/fake-agents/pack.js';

const home = mkdtempSync(join(tmpdir(), 'fleet-agent-home-'));
const saved = process.env.HOME;
process.env.HOME = home;
const made: string[] = [home];
afterAll(() => {
  process.env.HOME = saved;
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

const env = { PATH: process.env.PATH ?? '', HOME: home, npm_config_cache: join(home, '.npm') };

describe('installing the agent CLI in a leg', () => {
  it('installs with npm when the Actions cache cannot be read, and says so', async () => {
    const tarball = packFakeClaude('3.0.1');
    made.push(dirname(tarball));
    const said: string[] = [];
    const broken: CacheLike = {
      restore: () => Promise.reject(new Error('cache service unavailable')),
      save: () => Promise.resolve(1),
    };
    const got = await installAgent({ spec: `file:${tarball}`, bin: 'claude', env, log: (l) => said.push(l), cache: broken });
    expect(got.from).toBe('npm');
    expect(said.join('\n')).toContain('the Actions cache could not be read (cache service unavailable); installing with npm');
    expect(execFileSync(join(got.binDir, 'claude'), ['-p', '## Directive\n\nx'], { cwd: home, encoding: 'utf8' })).toContain('fake-claude');
  });

  it('fails, naming the setting to change, when the package installs no command the preset runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fake-noagent-'));
    made.push(dir);
    mkdirSync(join(dir, 'package'));
    writeFileSync(join(dir, 'package', 'package.json'), JSON.stringify({ name: 'not-an-agent', version: '1.0.0' }));
    execFileSync('tar', ['czf', join(dir, 'p.tgz'), '-C', dir, 'package']);
    await expect(installAgent({ spec: `file:${join(dir, 'p.tgz')}`, bin: 'claude', env, log: () => {} })).rejects.toThrow(
      /installed no `claude` command; set agent\.install to the package that provides it, or agent\.command to the binary/,
    );
  });
});
