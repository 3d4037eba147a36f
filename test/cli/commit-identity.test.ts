/**
 * Who a lane's commit is by, and its signature, as a user running bin/fleet.js gets them: `--author` or
 * `commit_author`, else the user's own git identity, else Fleet's default; signed the way the user's git signs
 * (here with an SSH key, `gpg.format ssh`, which needs no agent). The user's git configuration is read once, before
 * any directive runs: a directive that rewrites ~/.gitconfig changes nothing about Fleet's commits.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, run, tgit } from '../support/repos.js';
import { removeDir, tempDir } from '../integration/helpers.js';
import { fleetProcess } from './bin.js';

let dir: string;
let home: string;
let remote: string;
const BRANCH = 'fleet/stamp/svc';
// No identity from git's variables (fleetProcess sets them): only what the configuration files say.
const NO_ENV_IDENTITY = { GIT_AUTHOR_NAME: '', GIT_AUTHOR_EMAIL: '', GIT_COMMITTER_NAME: '', GIT_COMMITTER_EMAIL: '' };

beforeEach(async () => {
  dir = tempDir('fleet-cli-identity-');
  home = join(dir, 'home');
  mkdirSync(home);
  remote = (await createRepo(dir, 'svc', { 'README.md': '# svc\n' }, { clone: false })).remote;
  writeFileSync(join(dir, 'fleet.yml'), 'name: stamp\ndirective: stamp\nrun: echo stamped > STAMP.md\ntargets:\n  - repo: ./svc.git\n');
});
afterEach(() => removeDir(dir));

const fleet = (args: string[], env: Record<string, string> = {}) => fleetProcess(args, dir, home, undefined, { ...NO_ENV_IDENTITY, ...env });

async function show(format: string): Promise<string> {
  return (await tgit(['-C', remote, 'log', '-1', `--format=${format}`, BRANCH])).stdout.trim();
}

async function sshKey(name: string): Promise<string> {
  const key = join(home, name);
  const made = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', key]);
  if (made.code !== 0) throw new Error(made.stderr);
  return key;
}

/** Verifies the branch's commit against `key` alone (an allowed-signers file of that key). */
async function verifiedBy(key: string): Promise<boolean> {
  const signers = join(dir, 'allowed_signers');
  writeFileSync(signers, `* ${readFileSync(`${key}.pub`, 'utf8')}`);
  const r = await tgit(['-C', remote, '-c', `gpg.ssh.allowedSignersFile=${signers}`, 'verify-commit', BRANCH], { allowFail: true });
  return r.code === 0;
}

describe("a lane commit's author and committer", () => {
  it("are the user's git identity (user.name and user.email of ~/.gitconfig)", async () => {
    writeFileSync(join(home, '.gitconfig'), '[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n');
    const r = fleet(['run', 'fleet.yml', '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(await show('%an <%ae>|%cn <%ce>')).toBe('Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>');
  });

  it('are commit_author, or --author over it, whatever the user configured', async () => {
    writeFileSync(join(home, '.gitconfig'), '[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n');
    writeFileSync(join(dir, 'fleet.yml'), `${readFileSync(join(dir, 'fleet.yml'), 'utf8')}commit_author: Platform Bot <platform-bot@example.com>\n`);
    expect(fleet(['run', 'fleet.yml', '--quiet']).code).toBe(0);
    expect(await show('%an <%ae>')).toBe('Platform Bot <platform-bot@example.com>');
    writeFileSync(join(dir, 'fleet.yml'), readFileSync(join(dir, 'fleet.yml'), 'utf8').replace('stamped', 'stamped again'));
    expect(fleet(['run', 'fleet.yml', '--quiet', '--author', 'Grace Hopper <grace@example.com>']).code).toBe(0);
    expect(await show('%an <%ae>')).toBe('Grace Hopper <grace@example.com>');
  });

  it('are Fleet <fleet@users.noreply.github.com> when git has no identity', async () => {
    const r = fleet(['run', 'fleet.yml', '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(await show('%an <%ae>')).toBe('Fleet <fleet@users.noreply.github.com>');
  });

  it('refuses an --author or commit_author not in the "Name <email>" form, with exit 2', () => {
    const flag = fleet(['run', 'fleet.yml', '--author', 'ada@example.com']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--author takes "Name <email>"');
    writeFileSync(join(dir, 'fleet.yml'), `${readFileSync(join(dir, 'fleet.yml'), 'utf8')}commit_author: Ada\n`);
    const file = fleet(['run', 'fleet.yml']);
    expect(file.code).toBe(2);
    expect(file.stderr).toMatch(/commit_author.*"Name <email>"/);
  });
});

describe("a lane commit's signature", () => {
  it("is made the way the user's git signs (commit.gpgsign, gpg.format ssh, user.signingkey)", async () => {
    const key = await sshKey('signing');
    writeFileSync(
      join(home, '.gitconfig'),
      `[user]\n\tname = Ada\n\temail = ada@example.com\n\tsigningkey = ${key}.pub\n[gpg]\n\tformat = ssh\n[commit]\n\tgpgsign = true\n`,
    );
    const r = fleet(['run', 'fleet.yml', '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(await verifiedBy(key)).toBe(true);
  });

  it('is not made with sign_commits: off, nor when the user does not sign', async () => {
    const key = await sshKey('signing');
    writeFileSync(join(home, '.gitconfig'), `[user]\n\tsigningkey = ${key}.pub\n[gpg]\n\tformat = ssh\n`);
    expect(fleet(['run', 'fleet.yml', '--quiet']).code).toBe(0);
    expect(await show('%G?')).toBe('N');
    writeFileSync(join(home, '.gitconfig'), `[user]\n\tsigningkey = ${key}.pub\n[gpg]\n\tformat = ssh\n[commit]\n\tgpgsign = true\n`);
    writeFileSync(join(dir, 'fleet.yml'), `${readFileSync(join(dir, 'fleet.yml'), 'utf8').replace('stamped', 'unsigned')}sign_commits: off\n`);
    expect(fleet(['run', 'fleet.yml', '--quiet']).code).toBe(0);
    expect(await show('%G?')).toBe('N');
  });

  it('required: refused before anything runs when it cannot be made (ssh without a key), exit 2', () => {
    writeFileSync(join(home, '.gitconfig'), '[gpg]\n\tformat = ssh\n');
    writeFileSync(join(dir, 'fleet.yml'), `${readFileSync(join(dir, 'fleet.yml'), 'utf8')}sign_commits: required\n`);
    const r = fleet(['run', 'fleet.yml']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/sign_commits: .*needs a key: set user\.signingkey/);
  });

  it('ignores a ~/.gitconfig a directive rewrote: another key, another signing program, another identity', async () => {
    const key = await sshKey('signing');
    const planted = await sshKey('planted');
    const marker = join(dir, 'PROGRAM-RAN');
    const evil = join(home, 'evil-sign.sh');
    writeFileSync(evil, `#!/bin/sh\ntouch ${marker}\nexec ssh-keygen "$@"\n`, { mode: 0o755 });
    writeFileSync(
      join(home, '.gitconfig'),
      `[user]\n\tname = Ada\n\temail = ada@example.com\n\tsigningkey = ${key}.pub\n[gpg]\n\tformat = ssh\n[commit]\n\tgpgsign = true\n`,
    );
    const hostile = `[user]\n\tname = Mallory\n\temail = mallory@example.com\n\tsigningkey = ${planted}.pub\n[gpg]\n\tformat = ssh\n[gpg "ssh"]\n\tprogram = ${evil}\n[commit]\n\tgpgsign = true\n`;
    writeFileSync(join(dir, 'hostile.gitconfig'), hostile);
    // isolation: off: the directive writes Fleet's own HOME, as it can wherever Fleet does not run as root (as root
    // it gets a HOME of its own). What is under test is Fleet's git, which reads the configuration once, at the start.
    writeFileSync(
      join(dir, 'fleet.yml'),
      'name: stamp\ndirective: stamp\nisolation: off\nrun: cp "$FLEET_FILE_DIR/hostile.gitconfig" "$HOME/.gitconfig" && echo stamped > STAMP.md\ntargets:\n  - repo: ./svc.git\n',
    );
    const r = fleet(['run', 'fleet.yml', '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(home, '.gitconfig'), 'utf8')).toBe(hostile);
    expect(await show('%an <%ae>')).toBe('Ada <ada@example.com>');
    expect(await verifiedBy(key)).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });
});
