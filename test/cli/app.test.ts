/**
 * The CLI's GitHub App credentials (src/cli/app.ts), pure: whose installation a fleet needs, every problem with the
 * variables at once, and why App credentials need isolated directives.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { appFromEnv, targetOwners } from '../../src/cli/app.js';
import { appIsolationProblem } from '../../src/core/isolation.js';

const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
const fleet = (repos: string[], discover: object[] = []) => ({ lanes: repos.map((repo) => ({ repo })), file: { github: { discover } } }) as never;

describe("the accounts a fleet's targets belong to", () => {
  it("are the explicit targets' owners and the discovery sources', without local paths", () => {
    expect(targetOwners(fleet(['acme/api', 'acme/web', './local.git']))).toEqual(['acme']);
    expect(targetOwners(fleet(['acme/api'], [{ org: 'octo' }, { user: 'mona' }, { topic: 't', owner: 'acme' }, { search: 'x' }]))).toEqual([
      'acme',
      'mona',
      'octo',
    ]);
  });
});

describe('App credentials from the environment', () => {
  it('none set: no App, no problem (a token variable is used as before)', () => {
    expect(appFromEnv({}, ['acme'], 'f.yml')).toEqual({ problems: [] });
  });

  it("an id and a key: the App of the targets' one owner, the key with real newlines", () => {
    const r = appFromEnv({ FLEET_APP_ID: ' 42 ', FLEET_APP_PRIVATE_KEY: pem.replace(/\n/g, '\\n') }, ['acme'], 'f.yml');
    expect(r.problems).toEqual([]);
    expect(r.app).toMatchObject({ appId: '42', owner: 'acme' });
    expect(r.app!.privateKey).toBe(pem.trim());
    expect(appFromEnv({ FLEET_APP_ID: 'Iv1.abc', FLEET_APP_PRIVATE_KEY: pem, FLEET_APP_OWNER: 'octo' }, ['acme', 'b'], 'f.yml').app?.owner).toBe('octo');
  });

  it('a key without an id, a token beside the App, no owner to take: each a problem, naming its variable, the key never quoted', () => {
    const r = appFromEnv({ FLEET_APP_PRIVATE_KEY: 'secret-not-a-key', FLEET_GITHUB_TOKEN: 't' }, [], 'f.yml');
    const messages = r.problems.map((p) => p.message);
    expect(messages).toEqual([
      expect.stringContaining("FLEET_APP_ID: an App private key was given without the App's id"),
      expect.stringContaining('FLEET_APP_PRIVATE_KEY: the key is not a PEM private key'),
      expect.stringContaining('FLEET_GITHUB_TOKEN and FLEET_APP_ID'),
      expect.stringContaining('FLEET_APP_OWNER: no target names its owner'),
    ]);
    expect(r.problems.every((p) => p.file === 'f.yml')).toBe(true);
    expect(messages.join('\n')).not.toContain('secret-not-a-key');
  });
});

describe('App credentials and isolation', () => {
  it('under isolation: auto, a machine that cannot isolate is refused: the key would be readable from /proc', () => {
    expect(appIsolationProblem('auto', 'none', 'unshare is not installed')).toMatch(
      /directives must be isolated .* cannot be isolated here: unshare is not installed\. .*isolation: off/,
    );
    expect(appIsolationProblem('auto', 'pid-namespace', 'userns')).toBeNull();
    // off: the user accepted it (the report says directives were not isolated); required: refused by the run itself.
    expect(appIsolationProblem('off', 'none', 'off')).toBeNull();
    expect(appIsolationProblem('required', 'none', 'x')).toBeNull();
  });
});
