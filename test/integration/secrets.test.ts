/**
 * Fleet's own credentials never reach a directive, a check, a log, a result or
 * the console, whatever the directive does to look for them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo, readRemoteFile, remoteBranches, remoteHead, tgit } from '../support/repos.js';
import { fleet, lane, readManifest, removeDir, runArgs, sq, tempDir, walkFiles, writeFleetFile, tsxLoader } from './helpers.js';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => removeDir(dir));

const TOKEN = `ghp_${'A1b2C3d4E5f6G7h8I9j0'}K1l2M3n4O5p6Q7r8S9t0`;
const PLAIN = `plain-secret-${Date.now()}-zq`; // not token-shaped: redaction by pattern cannot hide it
// GITHUB_TOKEN and GH_TOKEN are documented token sources: withheld even when they hold some other token than Fleet's (the job's own).
const SECRETS = { FLEET_GITHUB_TOKEN: TOKEN, INPUT_TOKEN: PLAIN, ACTIONS_RUNTIME_TOKEN: `${PLAIN}-rt`, GITHUB_TOKEN: `${PLAIN}-job`, GH_TOKEN: `${PLAIN}-gh` };

const PRINT_ENV = 'env | sort > ENV.txt; env; env >&2; echo "token=[$FLEET_GITHUB_TOKEN]" >> ENV.txt';

function assertNowhere(texts: Record<string, string>) {
  for (const [where, text] of Object.entries(texts)) {
    expect(text.includes(TOKEN), `${where} holds the token`).toBe(false);
    expect(text.includes(PLAIN), `${where} holds the plain secret`).toBe(false);
    expect(text.includes(TOKEN.slice(4)), `${where} holds the token body`).toBe(false);
  }
}

async function setup() {
  const repo = await createRepo(dir, 'r', { 'README.md': '# r\n' }, { clone: false });
  const file = writeFleetFile(dir, {
    name: 'secrets',
    directive: 'print the environment',
    run: PRINT_ENV,
    checks: ['env > ../check-env.txt; env'],
    max_retries: 0,
    targets: [{ repo: './r.git' }],
  });
  return { repo, file };
}

async function everything(ws: string, remote: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of walkFiles(ws)) {
    if (f.includes('/repo/.git/objects/')) continue; // compressed; the remote's content is read below instead
    out[`ws/${f}`] = readFileSync(join(ws, f), 'latin1');
  }
  const log = await tgit(['-C', remote, 'log', '--all', '-p', '--format=%H %s%n%b']);
  out['remote history'] = log.stdout;
  return out;
}

describe('secrets', () => {
  it('in-process: withheld variables are not in the directive or check env, any workspace file, the remote, or the output', async () => {
    const { repo, file } = await setup();
    const ws = join(dir, 'ws');
    const r = await fleet(runArgs(file, ws), { cwd: dir, env: SECRETS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const m = readManifest(ws);
    expect(lane(m, 'r').status).toBe('completed');
    const envTxt = (await readRemoteFile(repo.remote, 'fleet/secrets/r', 'ENV.txt'))!;
    // The directive did print its environment (so the test would have seen a leak)…
    expect(envTxt).toMatch(/^FLEET_LANE=r$/m);
    expect(envTxt).toContain('token=[]');
    expect(envTxt).not.toMatch(/^(FLEET_GITHUB_TOKEN|INPUT_TOKEN|ACTIONS_RUNTIME_TOKEN|GITHUB_TOKEN|GH_TOKEN)=/m);
    const checkEnv = readFileSync(join(ws, 'lanes', 'r', 'check-env.txt'), 'utf8');
    expect(checkEnv).toMatch(/^FLEET_LANE=r$/m);
    expect(checkEnv).not.toMatch(/^(FLEET_GITHUB_TOKEN|INPUT_TOKEN|ACTIONS_RUNTIME_TOKEN|GITHUB_TOKEN|GH_TOKEN)=/m);
    assertNowhere({ stdout: r.stdout, stderr: r.stderr, ...(await everything(ws, repo.remote)) });
  });

  it('the real CLI process: the same, with the secrets in its own environment', async () => {
    const { repo, file } = await setup();
    const ws = join(dir, 'ws');
    const root = resolve(import.meta.dirname, '../..');
    const loader = tsxLoader();
    const p = spawnSync(process.execPath, ['--import', loader, join(root, 'src/cli/index.ts'), ...runArgs(file, ws)], {
      cwd: dir,
      env: { ...process.env, ...SECRETS },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(p.status, p.stderr).toBe(0);
    const envTxt = (await readRemoteFile(repo.remote, 'fleet/secrets/r', 'ENV.txt'))!;
    expect(envTxt).toContain('token=[]');
    assertNowhere({ stdout: p.stdout, stderr: p.stderr, ...(await everything(ws, repo.remote)) });
  });

  it("a directive that configures git to run its programs or to push elsewhere reaches neither Fleet's environment nor another remote", async () => {
    const repo = await createRepo(dir, 'r', { 'README.md': '# r\n' }, { clone: false });
    const evil = await createRepo(dir, 'evil', { 'README.md': '# evil\n' }, { clone: false });
    const leak = join(dir, 'leak');
    // Programs git runs for Fleet (fsmonitor on add/diff, a clean filter), and redirections of Fleet's push.
    const run = [
      `git config core.fsmonitor ${sq(`env >> ${leak}-fsmonitor; exit 1`)}`,
      `git config filter.grab.clean ${sq(`env >> ${leak}-filter; cat`)}`,
      'mkdir -p .git/info && echo "* filter=grab" > .git/info/attributes',
      `git config remote.origin.pushurl ${sq(evil.remote)}`,
      `git config url.${evil.remote}.insteadOf ${sq(repo.remote)}`,
      'echo changed >> README.md',
    ].join(' && ');
    const file = writeFleetFile(dir, { name: 'gitcfg', directive: 'meddle', run, max_retries: 0, targets: [{ repo: './r.git' }] });
    const ws = join(dir, 'ws');
    const root = resolve(import.meta.dirname, '../..');
    const loader = tsxLoader();
    const p = spawnSync(process.execPath, ['--import', loader, join(root, 'src/cli/index.ts'), ...runArgs(file, ws)], {
      cwd: dir,
      env: { ...process.env, ...SECRETS },
      encoding: 'utf8',
      timeout: 20_000,
    });
    const l = lane(readManifest(ws), 'r');
    expect(p.status, JSON.stringify(l.error) + l.evidence.notes.join('; ')).toBe(0);
    expect(l).toMatchObject({ status: 'completed', changed_files: ['README.md'] });
    expect(await remoteHead(repo.remote, 'fleet/gitcfg/r')).toBe(l.commit);
    expect(await remoteBranches(evil.remote)).toEqual(['main']);
    for (const suffix of ['-fsmonitor', '-filter']) {
      const text = existsSync(leak + suffix) ? readFileSync(leak + suffix, 'utf8') : '';
      assertNowhere({ [suffix]: text });
    }
    assertNowhere({ stdout: p.stdout, stderr: p.stderr });
  });

  it("a directive that writes the global git config cannot make Fleet's git calls hand over Fleet's secrets", async () => {
    await createRepo(dir, 'r', { 'README.md': '# r\n' }, { clone: false });
    const home = join(dir, 'home');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(home);
    const leak = join(dir, 'leak-global');
    const run = `git config --global core.fsmonitor ${sq(`env >> ${leak}; exit 1`)} && echo changed >> README.md`;
    // isolation: off: the directive writes Fleet's own HOME, as it can wherever Fleet does not run as root (as root it
    // gets a HOME of its own). What is under test is Fleet's git, which reads none of the user's configuration.
    const file = writeFleetFile(dir, { name: 'global', directive: 'meddle', run, max_retries: 0, isolation: 'off', targets: [{ repo: './r.git' }] });
    const ws = join(dir, 'ws');
    const root = resolve(import.meta.dirname, '../..');
    const loader = tsxLoader();
    const p = spawnSync(process.execPath, ['--import', loader, join(root, 'src/cli/index.ts'), ...runArgs(file, ws)], {
      cwd: dir,
      env: { ...process.env, ...SECRETS, HOME: home, XDG_CONFIG_HOME: join(home, '.config') },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(p.status, p.stdout + p.stderr).toBe(0);
    // The directive did write the global configuration, but Fleet's git reads none of the user's: the fsmonitor never ran.
    expect(readFileSync(join(home, '.gitconfig'), 'utf8')).toContain('fsmonitor');
    expect(existsSync(leak)).toBe(false);
  });

  /**
   * Fleet deletes its credentials from process.env, but the kernel keeps the
   * environment a process was started with: /proc/<pid>/environ of Fleet and
   * of every ancestor. A directive walks them all, and leaves a process behind
   * (in a session of its own) to read them again after it has ended.
   */
  const PROC_SNOOP = `
dump() { for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$f" 2>/dev/null; done; }
dump > "$LEAK"
p=$$
while [ "$p" -gt 1 ] 2>/dev/null; do
  tr '\\0' '\\n' < /proc/$p/environ >> "$LEAK" 2>/dev/null
  p=$(awk '{print $4}' /proc/$p/stat 2>/dev/null || echo 0)
done
setsid sh -c 'sleep 1; for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f" 2>/dev/null; done > "$LEAK.later"' < /dev/null > /dev/null 2>&1 &
cat "$LEAK" > SNOOPED.txt
echo changed >> README.md
`;

  async function procRun(isolation: 'auto' | 'off') {
    const repo = await createRepo(dir, 'r', { 'README.md': '# r\n' }, { clone: false });
    const leak = join(dir, 'leak-proc');
    const script = join(dir, 'snoop.sh');
    writeFileSync(script, PROC_SNOOP);
    const file = writeFleetFile(dir, {
      name: 'proc',
      directive: 'read /proc',
      run: `sh ${sq(script)}`,
      isolation,
      max_retries: 0,
      targets: [{ repo: './r.git' }],
    });
    const ws = join(dir, 'ws');
    const root = resolve(import.meta.dirname, '../..');
    const loader = tsxLoader();
    const p = spawnSync(process.execPath, ['--import', loader, join(root, 'src/cli/index.ts'), ...runArgs(file, ws)], {
      cwd: dir,
      env: { ...process.env, ...SECRETS, LEAK: leak },
      encoding: 'utf8',
      timeout: 20_000,
    });
    // Long enough for the process left behind to have read /proc, had it survived the lane.
    await new Promise((r) => setTimeout(r, 1500));
    return { p, repo, leak, ws };
  }

  it("a directive reading /proc/*/environ, its ancestors' and, from a process left behind, later ones finds no credential", async () => {
    const { p, repo, leak, ws } = await procRun('auto');
    expect(p.status, p.stdout + p.stderr).toBe(0);
    const snooped = readFileSync(leak, 'utf8');
    // It did read environments (its own at least), so a credential there would have shown.
    expect(snooped).toMatch(/^LEAK=/m);
    expect(existsSync(`${leak}.later`), 'the process the directive left behind outlived its lane').toBe(false);
    expect(lane(readManifest(ws), 'r').isolation?.kind).toBe('pid-namespace');
    assertNowhere({ '/proc environments': snooped, pushed: (await readRemoteFile(repo.remote, 'fleet/proc/r', 'SNOOPED.txt')) ?? '' });
  });

  it('with isolation: off the same directive does find the credential, and the report says directives were not isolated', async () => {
    const { p, leak, ws } = await procRun('off');
    expect(p.status, p.stdout + p.stderr).toBe(0);
    // The attack is real: without a namespace, the kernel's copy of Fleet's start-up environment holds the token.
    expect(readFileSync(leak, 'utf8')).toContain(TOKEN);
    expect(lane(readManifest(ws), 'r').isolation).toEqual({ kind: 'none', detail: 'turned off in the fleet file (isolation: off)' });
    expect(readFileSync(join(ws, 'report.md'), 'utf8')).toContain("_Not isolated: the directives of 1 lane ran where they could see Fleet's processes");
  });
});

describe('isolation: required', () => {
  it('on a machine that cannot isolate (no unshare on PATH) is a set-up failure naming the field, and nothing runs', async () => {
    await createRepo(dir, 'r', { 'README.md': '# r\n' }, { clone: false });
    const marker = join(dir, 'ran');
    const file = writeFleetFile(dir, {
      name: 'req',
      directive: 'd',
      run: `touch ${sq(marker)}`,
      isolation: 'required',
      max_retries: 0,
      targets: [{ repo: './r.git' }],
    });
    // A PATH with git and a shell only: no unshare, so no way into a namespace.
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    for (const tool of ['git', 'sh']) symlinkSync(spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim(), join(bin, tool));
    const root = resolve(import.meta.dirname, '../..');
    const loader = tsxLoader();
    const ws = join(dir, 'ws');
    const p = spawnSync(process.execPath, ['--import', loader, join(root, 'src/cli/index.ts'), ...runArgs(file, ws)], {
      cwd: dir,
      env: { PATH: bin, HOME: dir },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(p.status, p.stdout + p.stderr).toBe(2);
    expect(p.stderr).toContain(`${file}: isolation: required, but directives cannot be isolated on this machine: unshare (util-linux) is not installed`);
    expect(existsSync(marker)).toBe(false);
    expect(await remoteBranches(join(dir, 'r.git'))).toEqual(['main']);
  });
});
