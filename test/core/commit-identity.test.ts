import { describe, expect, it } from 'vitest';
import { commitSetup, describeCommitSetup, parseAuthor } from '../../src/core/commit-identity.js';

describe('parseAuthor', () => {
  it('reads "Name <email>" and nothing else', () => {
    expect(parseAuthor('Ada Lovelace <ada@example.com>')).toEqual({ name: 'Ada Lovelace', email: 'ada@example.com' });
    expect(parseAuthor('  renovate[bot] <29139614+renovate[bot]@users.noreply.github.com> ')).toEqual({
      name: 'renovate[bot]',
      email: '29139614+renovate[bot]@users.noreply.github.com',
    });
    for (const bad of ['ada@example.com', '<ada@example.com>', 'Ada <>', 'Ada <a b@c>', 'A <a> <b>']) expect(parseAuthor(bad), bad).toBeNull();
  });
});

describe('commitSetup', () => {
  const user = { name: 'Ada', email: 'ada@example.com' };

  it('takes commit_author, else the user, else the default; a half identity is no identity', () => {
    expect(commitSetup('Bot <bot@example.com>', 'auto', user)).toMatchObject({
      ok: true,
      setup: { identity: { name: 'Bot' }, identitySource: 'commit_author' },
    });
    expect(commitSetup(undefined, 'auto', user)).toMatchObject({ ok: true, setup: { identity: user, identitySource: 'your git configuration' } });
    expect(commitSetup(undefined, 'auto', { name: 'Ada' })).toMatchObject({
      ok: true,
      setup: { identity: { name: 'Fleet', email: 'fleet@users.noreply.github.com' }, identitySource: 'the default' },
    });
  });

  it('signs under auto only when the user signs, always under required, never under off', () => {
    const signs = { ...user, gpgsign: true, format: 'ssh', signingKey: '~/.ssh/id.pub' };
    expect(commitSetup(undefined, 'auto', { ...signs, gpgsign: false })).toMatchObject({ ok: true, setup: { signing: null, notes: [] } });
    expect(commitSetup(undefined, 'auto', signs)).toMatchObject({
      ok: true,
      setup: { signing: { format: 'ssh', key: '~/.ssh/id.pub', program: 'ssh-keygen' } },
    });
    expect(commitSetup(undefined, 'off', signs)).toMatchObject({ ok: true, setup: { signing: null } });
    expect(commitSetup(undefined, 'required', user)).toMatchObject({ ok: true, setup: { signing: { format: 'openpgp', key: null, program: 'gpg' } } });
    expect(commitSetup(undefined, 'required', { ...user, format: 'X509', program: '/opt/gpgsm' })).toMatchObject({
      ok: true,
      setup: { signing: { format: 'x509', program: '/opt/gpgsm' } },
    });
  });

  it('required: refuses what git could not sign with, saying how to fix it; auto: leaves commits unsigned, saying why', () => {
    expect(commitSetup(undefined, 'required', { format: 'ssh' })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/needs a key: set user\.signingkey/),
    });
    expect(commitSetup(undefined, 'required', { gpgsign: true, format: 'pgp' })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/gpg\.format "pgp".*openpgp, ssh or x509/),
    });
    expect(commitSetup(undefined, 'auto', { gpgsign: true, format: 'pgp' })).toMatchObject({
      ok: true,
      setup: { signing: null, notes: [expect.stringMatching(/^commits are not signed: .*gpg\.format "pgp"/)] },
    });
    expect(commitSetup(undefined, 'auto', { gpgsign: true, format: 'ssh' })).toMatchObject({
      ok: true,
      setup: { signing: null, notes: [expect.stringMatching(/needs a key/)] },
    });
  });

  it('auto signs with ssh alone: gpg starts programs its own (rewritable) configuration names', () => {
    const r = commitSetup(undefined, 'auto', { ...user, gpgsign: true });
    expect(r).toMatchObject({
      ok: true,
      setup: { signing: null, notes: [expect.stringMatching(/your git signs with gpg, which starts programs.*sign_commits: required/)] },
    });
    expect(commitSetup(undefined, 'auto', { ...user, gpgsign: true, format: 'x509' })).toMatchObject({
      ok: true,
      setup: { signing: null, notes: [expect.stringMatching(/gpgsm/)] },
    });
  });

  it('describes itself in one line', () => {
    const r = commitSetup(undefined, 'required', { ...user, format: 'ssh', signingKey: 'k' });
    expect(r.ok && describeCommitSetup(r.setup)).toBe('commits by Ada <ada@example.com> (your git configuration), signed (ssh)');
  });
});
