/**
 * What a hostile directive reaches from a wave job when the fleet runs with
 * GitHub App credentials: Fleet's step then holds the App's private key and
 * the installation tokens it mints (see hostile-directives.test.ts for the
 * same paths with a PAT). The directive looks for any line of the key's body
 * (it gets one reversed, so no file Fleet writes holds it) and for any
 * installation token (`ghs_` and 36 characters: it needs no value to know
 * one when it sees it) in its environment by name and by value, in every file
 * under $HOME, $RUNNER_TEMP and $GITHUB_WORKSPACE, in git configuration, and
 * in every process's /proc/<pid>/environ, its ancestors' included. Then the
 * test reads every job's log and every artifact of the run for the key and
 * for each token the App minted.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AddedApp } from '../support/github-emulator/index.js';
import { artifactFile, artifactsOf, CONTROL_REPO, dispatchFleet, explain, startWorld, type World } from './world.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

const TOKEN_RE = 'ghs_[A-Za-z0-9]\\{36\\}';

function look(keyLine: string): string {
  const reversed = [...keyLine].reverse().join('');
  return [
    `K=$(printf %s '${reversed}' | rev)`,
    `T='${TOKEN_RE}'`,
    'seen() { tr "\\0" "\\n" < "$1" 2>/dev/null | grep -q -e "$K" -e "$T"; }',
    '{',
    '  echo "env-names: $(env | cut -d= -f1 | grep -E "TOKEN|KEY|PRIVATE|SECRET|^INPUT_" | sort | tr "\\n" " ")"',
    '  echo "env-values: $(env | grep -c -e "$K" -e "$T")"',
    '  echo "files: $(grep -rl -e "$K" -e "$T" "$HOME" "$RUNNER_TEMP" "$GITHUB_WORKSPACE" 2>/dev/null | wc -l)"',
    '  echo "git-config: $(git config -l --show-origin 2>/dev/null | grep -c -i extraheader)"',
    '  all=0; for f in /proc/[0-9]*/environ; do seen "$f" && all=$((all+1)); done',
    '  up=0; p=$$; while [ "$p" -gt 1 ] 2>/dev/null; do seen /proc/$p/environ && up=$((up+1)); p=$(awk \'{print $4}\' /proc/$p/stat 2>/dev/null || echo 0); done',
    '  echo "proc: $all ancestors: $up"',
    '} > FOUND',
  ].join('\n');
}

let w: World;
let app: AddedApp;
let runId: number;
let found: string;
/** Every line of the key's body: a log or an artifact holding any of them holds part of the key. */
let keyLines: string[];

beforeAll(async () => {
  // The key is made before the fleet file: the directive gets one of its lines, reversed.
  const { generateKeyPairSync } = await import('node:crypto');
  const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  keyLines = pem.split('\n').filter((l) => l && !l.startsWith('-----'));
  w = await startWorld({
    fleetFile: { name: 'hostile-app', forge: 'github', directive: 'Look around.', run: look(keyLines[5]!), max_retries: 0, targets: [{ repo: 'acme/look' }] },
  });
  await w.emu.createRepo({ owner: 'acme', name: 'look' });
  app = w.emu.addApp({
    id: 4242,
    slug: 'fleet-app',
    privateKey: pem,
    installations: [
      { account: 'acme', permissions: { contents: 'write', 'pull-requests': 'write', issues: 'write', checks: 'read', statuses: 'read', actions: 'read' } },
    ],
  });
  w.runner.setVariable(CONTROL_REPO, 'FLEET_APP_ID', String(app.id));
  w.runner.setSecret(CONTROL_REPO, 'FLEET_APP_PRIVATE_KEY', pem);
  w.runner.setSecret(CONTROL_REPO, 'FLEET_TOKEN', '');
  const r = await dispatchFleet(w, { 'dry-run': true });
  runId = r.runId;
  expect(r.s.conclusion, explain(r.s)).toBe('success');
  found = artifactFile(w, artifactsOf(w, runId).get('fleet-lane-look.a1')!, 'lanes/look/patch.diff');
});
afterAll(() => w?.close());

/** Every token the App minted in this run, as the emulator saw them used. */
function mintedTokens(): string[] {
  return [...new Set(w.emu.find({}).flatMap((r) => (r.token?.startsWith('ghs_') && r.login === 'fleet-app[bot]' ? [r.token] : [])))];
}

describe('a directive in a fleet run with GitHub App credentials', () => {
  it('finds neither the private key nor an installation token in its environment, its files or git config', () => {
    expect(found).toContain('+env-values: 0');
    expect(found).toContain('+files: 0');
    expect(found).toContain('+git-config: 0');
  });

  it('finds no variable holding them by name', () => {
    const names = /\+env-names: (.*)/.exec(found)![1]!.trim().split(' ').filter(Boolean);
    expect(names.filter((n) => /APP|PRIVATE|FLEET_.*TOKEN/.test(n))).toEqual([]);
  });

  it("finds them in no process's start-up environment, its ancestors' included", () => {
    expect(found).toContain('+proc: 0 ancestors: 0');
  });
});

describe('what the run leaves behind', () => {
  it('the App minted tokens (one per job, each revoked at its end)', () => {
    expect(mintedTokens().length).toBeGreaterThanOrEqual(3);
    const revoked = w.emu.find({ route: '/installation/token', method: 'DELETE' }).map((r) => r.status);
    const minted = w.emu.find({ route: '/app/installations/{installation_id}/access_tokens', method: 'POST', status: 201 });
    expect(revoked).toEqual(minted.map(() => 204));
  });

  it('no job log holds a line of the key or a minted token', () => {
    const logs = w.runner.runs
      .get(runId)!
      .summary()
      .jobs.map((j) => `${j.log}\n${j.summary ?? ''}\n${j.annotations.map((a) => a.message).join('\n')}`)
      .join('\n');
    for (const line of keyLines) expect(logs.includes(line), 'a line of the private key is in a job log').toBe(false);
    for (const token of mintedTokens()) expect(logs.includes(token), 'a minted token is in a job log').toBe(false);
    expect(logs).not.toMatch(/ghs_[A-Za-z0-9]{36}/);
  });

  it('no artifact holds a line of the key or a minted token', () => {
    const dir = mkdtempSync(join(tmpdir(), 'artifacts-'));
    try {
      let text = '';
      for (const a of artifactsOf(w, runId).values()) {
        writeFileSync(join(dir, 'a.zip'), w.services.artifactContent(a.id)!);
        execFileSync('unzip', ['-q', '-o', join(dir, 'a.zip'), '-d', join(dir, String(a.id))]);
        text += execFileSync('sh', ['-c', 'find "$1" -type f -exec cat {} +', 'cat', join(dir, String(a.id))], { encoding: 'utf8' });
      }
      expect(text.length).toBeGreaterThan(0);
      for (const line of keyLines) expect(text.includes(line), 'a line of the private key is in an artifact').toBe(false);
      for (const token of mintedTokens()) expect(text.includes(token), 'a minted token is in an artifact').toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
