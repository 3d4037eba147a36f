/**
 * The GitHub token never leaks: a directive (and a check) that go looking for
 * it — the environment, git's configuration, .git/config, the remote — find
 * nothing, and it appears in no file of the workspace, no output, nothing
 * pushed and no pull request, in plain or in the base64 form git sends —
 * even when the caller's environment holds it a second time (GITHUB_TOKEN
 * exported with the same value, a header built from it).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ci } from '../support/github-emulator/index.js';
import { git, lane, readManifest, walkFiles } from '../integration/helpers.js';
import { basicCredential } from '../../src/github/octokit.js';
import { encodedForms } from '../../src/util/secrets.js';
import { startFlow, type Flow } from './helpers.js';

let flow: Flow | undefined;
afterEach(async () => {
  await flow?.close();
  flow = undefined;
});

const SNOOP = [
  'env | sort > SNOOP.txt',
  'echo "--- git config --list" >> SNOOP.txt; git config --list --show-origin >> SNOOP.txt 2>&1',
  'echo "--- .git/config" >> SNOOP.txt; cat .git/config >> SNOOP.txt',
  'echo "--- http headers" >> SNOOP.txt; git config --get-regexp "http\\..*extraheader" >> SNOOP.txt 2>&1',
  'echo "--- ls-remote" >> SNOOP.txt; GIT_TERMINAL_PROMPT=0 git ls-remote origin >> SNOOP.txt 2>&1 || echo "ls-remote failed: $?" >> SNOOP.txt',
  'cat SNOOP.txt; cat SNOOP.txt >&2',
].join('; ');

describe('the token on GitHub', () => {
  it("is not in the directive's or a check's reach, any workspace file, the output, the pushed change, the PR, or .git/config", async () => {
    flow = await startFlow();
    const { emu, token } = flow;
    const basic = basicCredential(token);
    const needles = {
      token,
      'token body': token.slice(4),
      'x-access-token form': `x-access-token:${token}`,
      'base64 x-access-token form': basic,
      'URL-encoded token': encodeURIComponent(token),
      // Base64 of the token wherever it starts in a longer text (each of the three alignments' stable part).
      ...Object.fromEntries(encodedForms(token).map((f, i) => [`encoded form ${i}`, f])),
    };
    // Private: only a credential can read them, so the directive's own `git ls-remote` shows whether it holds one.
    for (const name of ['one', 'two']) await emu.createRepo({ owner: 'acme', name, visibility: 'private', files: { 'README.md': `# ${name}\n` } });
    emu.setCi('*', ci.onBranches(/^fleet\//, ci.green(['test'])));
    const file = flow.fleetFile({
      name: 'snoop',
      directive: 'Look for credentials.',
      run: SNOOP,
      checks: ['env | sort > ../check-env.txt; git config --list > ../check-git-config.txt 2>&1; env'],
      max_retries: 0,
      ci: { wait: true, timeout_minutes: 1 },
      targets: [{ repo: 'acme/one' }, { repo: 'acme/two' }],
    });
    const ws = join(flow.dir, 'ws');
    // The same token exported a second time, and a header built from it, as a shell or CI might have them; and an unrelated variable.
    const r = await flow.run(file, ws, [], { GITHUB_TOKEN: token, CI_GIT_AUTH: `AUTHORIZATION: basic ${basic}`, SNOOP_KEEP: 'kept' });
    expect(r.code, r.stderr).toBe(0);
    const m = readManifest(ws);
    expect(m.summary.completed).toBe(2);

    const texts: Record<string, string> = { stdout: r.stdout, stderr: r.stderr };
    for (const f of walkFiles(flow.dir)) {
      // Loose and packed objects are compressed: what was committed is read from the forge below instead.
      if (/\/\.git\/objects\//.test(f)) continue;
      texts[f] = readFileSync(join(flow.dir, f), 'latin1');
    }
    for (const name of ['one', 'two']) {
      const rec = lane(m, name);
      // The directive did look (so a leak would have been seen) and found no credentials.
      const snoop = git(join(emu.reposDir, `acme/${name}.git`), 'show', `${rec.commit}:SNOOP.txt`);
      expect(snoop).toMatch(new RegExp(`^FLEET_LANE=${name}$`, 'm'));
      expect(snoop).toMatch(/^FLEET_REPO=acme\//m);
      expect(snoop).toMatch(/^SNOOP_KEEP=kept$/m);
      expect(snoop).not.toMatch(/^CI_GIT_AUTH=/m);
      expect(snoop).toContain('--- .git/config');
      expect(snoop).toMatch(/ls-remote failed: \d+/);
      expect(snoop).not.toMatch(/^(FLEET_GITHUB_TOKEN|GITHUB_TOKEN|GH_TOKEN|GIT_CONFIG_COUNT|GIT_CONFIG_KEY_\d+|GIT_CONFIG_VALUE_\d+)=/m);
      // Nothing configured an extra header anywhere git looks.
      expect(snoop).toContain('--- http headers\n--- ls-remote');
      expect(snoop).not.toMatch(/extraheader|authorization/i);
      texts[`pushed ${name}`] = git(join(emu.reposDir, `acme/${name}.git`), 'log', '--all', '-p', '--format=%H %s%n%b');
      const checkEnv = readFileSync(join(ws, 'lanes', name, 'check-env.txt'), 'utf8');
      expect(checkEnv).toMatch(new RegExp(`^FLEET_LANE=${name}$`, 'm'));
      expect(checkEnv).not.toMatch(/^(GITHUB_TOKEN|CI_GIT_AUTH)=/m);
      // The working copy's own configuration: a plain remote URL, no header, no credential.
      const config = readFileSync(join(ws, 'lanes', name, 'repo', '.git', 'config'), 'utf8');
      expect(config).toContain(`url = ${emu.url}/git/acme/${name}.git`);
      expect(config).not.toMatch(/extraheader|x-access-token|@127\.0\.0\.1|credential/i);
      // The PR as GitHub holds it.
      const [pr] = emu.pullRequests(`acme/${name}`);
      expect(pr!.headSha).toBe(rec.commit);
      texts[`PR ${name}`] = `${pr!.title}\n${pr!.body}`;
    }
    // What Fleet sent GitHub in request bodies (PR bodies, labels, queries).
    texts['request bodies'] = emu.requests.map((q) => JSON.stringify(q.body ?? null)).join('\n');

    expect(Object.keys(texts).length).toBeGreaterThan(10);
    for (const [where, text] of Object.entries(texts)) {
      for (const [what, needle] of Object.entries(needles)) expect(text.includes(needle), `${where} holds the ${what}`).toBe(false);
    }
    // The directive's `git ls-remote` reached the forge without a credential and was refused; every request of Fleet's own carried the token.
    const anonymous = emu.find({ kind: 'git' }).filter((q) => q.token === null);
    expect(anonymous.length).toBeGreaterThan(0);
    expect(anonymous.every((q) => q.status === 401)).toBe(true);
    expect(emu.find({ kind: 'rest' }).every((q) => q.token === token)).toBe(true);
    emu.assertNoViolations();
  });
});
