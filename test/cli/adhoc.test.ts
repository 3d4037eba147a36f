/**
 * Fleets without a fleet file, as multi-gitter and git-xargs are used: `fleet run --repo … -- COMMAND` and
 * `fleet exec`, driven through bin/fleet.js as a process over real git repositories.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRepo } from '../support/repos.js';
import { git, removeDir, tempDir } from '../integration/helpers.js';
import { fleetProcess } from './bin.js';

let dir: string;
beforeEach(async () => {
  dir = tempDir('fleet-adhoc-');
  await createRepo(dir, 'api', { 'package.json': '{"dependencies":{"lodash":"4"}}\n' }, { clone: false });
  await createRepo(dir, 'web', { 'package.json': '{"dependencies":{}}\n' }, { clone: false });
});
afterEach(() => removeDir(dir));

const fleet = (args: string[], cwd = dir) => fleetProcess(args, cwd, dir);
const branches = (repo: string) => git(join(dir, repo), 'for-each-ref', '--format=%(refname:short)', 'refs/heads/').split('\n').filter(Boolean).sort();

describe('fleet run --repo … -- COMMAND', () => {
  it('runs without a fleet file, and again on the same branches; the printed fleet file runs the same fleet', () => {
    const args = ['run', '--repo', './api.git', '--repo', './web.git', '--quiet', '--', 'cp', 'package.json', 'copy of package.json'];
    const first = fleet(args);
    expect(first.code, first.stderr).toBe(0);
    const made = branches('api.git').filter((b) => b !== 'main');
    expect(made).toHaveLength(1);
    expect(made[0]).toMatch(/^fleet\/adhoc-[0-9a-f]{8}\/api$/);
    // The words after -- keep their quoting: one file, its name with spaces.
    expect(git(join(dir, 'api.git'), 'show', `${made[0]}:copy of package.json`)).toContain('lodash');
    expect(branches('web.git')).toEqual([made[0]!.replace('/api', '/web'), 'main']);

    // Printed, saved and run: the same name, so the same branches, which already hold the change.
    const printed = fleet([...args.slice(0, 5), '--print-fleet-file', '--', ...args.slice(7)]);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toContain('- repo: ./api.git');
    writeFileSync(join(dir, 'saved.yml'), printed.stdout);
    const again = fleet(['run', 'saved.yml', '--json']);
    expect(again.code, again.stderr).toBe(0);
    const lanes = JSON.parse(again.stdout).lanes as { lane: string; branch: string }[];
    expect(lanes.map((l) => l.branch)).toEqual([made[0], made[0]!.replace('/api', '/web')]);
    expect(branches('api.git').filter((b) => b !== 'main')).toEqual(made);
  });

  it("keeps the fleet file its flags built in the run's workspace: fleet prs close finds it there, without --fleet", () => {
    const first = fleet(['run', '--repo', './api.git', '--repo', './web.git', '--quiet', '--', 'touch', 'MARK']);
    expect(first.code, first.stderr).toBe(0);
    const made = branches('api.git').filter((b) => b !== 'main');
    expect(made).toHaveLength(1);
    const root = join(dir, '_workspace', 'fleet');
    const run = readdirSync(root)
      .map((d) => join(root, d))
      .find((d) => existsSync(join(d, 'adhoc-fleet.json')))!;
    expect(JSON.parse(readFileSync(join(run, 'adhoc-fleet.json'), 'utf8'))).toMatchObject({ cwd: dir, text: expect.stringContaining('- repo: ./api.git') });
    // From another folder too: the relative paths resolve from where the run was started.
    mkdirSync(join(dir, 'elsewhere'));
    const close = fleet(['prs', 'close', run], join(dir, 'elsewhere'));
    expect(close.code, close.stderr).toBe(0);
    expect(branches('api.git')).toEqual(['main']);
    expect(branches('web.git')).toEqual(['main']);
    // A manifest with no kept fleet file still asks for --fleet.
    const plain = join(dir, 'plain.yml');
    writeFileSync(plain, 'name: plain\ndirective: d\nrun: touch P\ntargets:\n  - repo: ./api.git\n');
    expect(fleet(['run', plain, '--quiet']).code).toBe(0);
    const plainRun = readdirSync(root)
      .map((d) => join(root, d))
      .find((d) => d.includes('plain') || !existsSync(join(d, 'adhoc-fleet.json')))!;
    const refused = fleet(['prs', 'close', join(plainRun, 'fleet-status.json')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('name its fleet file too (--fleet FILE)');
    // A record planted beside a run whose fleet file is named never replaces that file.
    writeFileSync(
      join(plainRun, 'adhoc-fleet.json'),
      JSON.stringify({ cwd: dir, text: 'name: plain\ndirective: d\nrun: x\nbranch: "x/{lane}"\ntargets:\n  - repo: ./web.git\n' }),
    );
    const named = fleet(['prs', 'plain.yml', '--json']);
    expect(named.code, named.stderr).toBe(0);
    expect(named.stderr).not.toContain('the ad-hoc run kept');
    expect(JSON.parse(named.stdout).rows.map((r: { lane: string }) => r.lane)).toEqual(['api']);
  });

  it('finds GitHub targets from the flags: --org with --topic is a topic search of that owner', () => {
    const printed = fleet(['run', '--org', 'acme', '--topic', 'go', '--search', 'org:acme archived:false', '--print-fleet-file', '--', 'make fmt']);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toContain('forge: github');
    expect(printed.stdout).toMatch(/- topic: go\n\s+owner: acme/);
    expect(printed.stdout).toContain('- search: org:acme archived:false');
  });

  it('refuses what cannot be run, every problem at once, with one line of usage', () => {
    const r = fleet(['run', '--topic', 'go', '--forge', 'gitlab']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('give the command after --');
    expect(r.stderr).toContain('--topic needs --org');
    expect(r.stderr).toContain('--forge takes local or github, got "gitlab"');
    expect(r.stderr).toMatch(/^usage: fleet run /m);
    const both = fleet(['run', 'fleet.yml', '--repo', './api.git', '--', 'true']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give either a fleet file or targets');
    // A command typed without its --: its flags are not Fleet's, and the message gives the line to paste (issue 27).
    const dashes = fleet(['run', '--repo', './api.git', 'sed', '-i', 's/a b/c/', 'f']);
    expect(dashes.code).toBe(2);
    expect(dashes.stderr).toContain(
      "the command to run goes after --, so that its own flags are not read as Fleet's: fleet run --repo ./api.git -- sed -i 's/a b/c/' f",
    );
    expect(dashes.stderr).not.toContain('unknown option');
    const execDashes = fleet(['exec', 'fleet.yml', '--json', 'grep', '-r', 'x', '.']);
    expect(execDashes.stderr).toContain('fleet exec fleet.yml --json -- grep -r x .');
    const bad = fleet(['run', '--repo', 'api', '--', 'true']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^ {2}\(command line\): targets\[0\]\.repo: .*write owner\/api for GitHub or \.\/api/m);
  });
});

describe('fleet exec', () => {
  it("collects each target's output and exit code; nothing is committed or pushed, and no clone is left", () => {
    // A --repo that is not there is a mistake by default (issue 27); --allow-missing accounts for it as excluded.
    const refused = fleet(['exec', '--repo', './api.git', '--repo', './gone.git', '--', 'true']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/targets\[1\]\.repo: \.\/gone\.git is not there \(not-found: /);
    expect(existsSync(join(dir, '_workspace', 'exec'))).toBe(false);
    const r = fleet(['exec', '--repo', './api.git', '--repo', './web.git', '--repo', './gone.git', '--allow-missing', '--', 'grep -l lodash package.json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/── api \(\.\/api\.git\) · exit 0\n {2}│ package\.json\n/);
    expect(r.stdout).toMatch(/── web \(\.\/web\.git\) · exit 1\n {2}\(no output\)/);
    expect(r.stdout).toMatch(/── gone \(\.\/gone\.git\) · excluded: not-found/);
    expect(r.stdout).toContain('  0: api\n  1: web');
    expect(branches('api.git')).toEqual(['main']);
    expect(branches('web.git')).toEqual(['main']);
    const runs = readdirSync(join(dir, '_workspace', 'exec'));
    expect(runs).toHaveLength(1);
    const root = join(dir, '_workspace', 'exec', runs[0]!);
    expect(existsSync(join(root, 'targets', 'api', 'repo'))).toBe(false);
    expect(readFileSync(join(root, 'targets', 'api', 'output.log'), 'utf8')).toContain('package.json');
  });

  it('--json gives each target as data; a fleet file works too; terminal escapes in output are written out', () => {
    writeFileSync(join(dir, 'fleet.yml'), 'name: q\ndirective: ask\nrun: "true"\ntargets:\n  - repo: ./api.git\n');
    const r = fleet(['exec', 'fleet.yml', '--json', '--', 'printf "\\033[2Jgone\\n"']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { rows: { lane: string; status: string; exit_code: number; output: string }[] };
    expect(out.rows).toEqual([expect.objectContaining({ lane: 'api', status: 'ran', exit_code: 0, output: '\u001b[2Jgone\n' })]);
    const text = fleet(['exec', 'fleet.yml', '--', 'printf "\\033[2Jgone\\n"']);
    expect(text.stdout).toContain('\\x1b[2Jgone');
    expect(text.stdout).not.toContain('\u001b');
  });

  it('a target it cannot ask exits 1; every target excluded exits 2; no command is a usage error', () => {
    const timeout = fleet(['exec', '--repo', './api.git', '--', 'kill -9 $$']);
    expect(timeout.code).toBe(1);
    expect(timeout.stdout).toMatch(/── api .* · failed: killed by SIGKILL/);
    const none = fleet(['exec', '--repo', './nope.git', '--allow-missing', '--', 'true']);
    expect(none.code).toBe(2);
    // Named as what it is, not as a file in the current folder; and no output file is promised where none was written.
    expect(none.stderr).toMatch(/^\(command line\): no target was asked: every target was excluded \(1\)/m);
    expect(none.stdout).not.toContain('targets/<lane>/output.log');
    const json = /All of it as JSON: (\S+)/.exec(none.stdout)?.[1];
    expect(json && existsSync(json), none.stdout).toBe(true);
    const bare = fleet(['exec', '--repo', './api.git']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('give the command after --');
  });

  it('a hostile command cannot fake a heading, break the summary by removing its log, or leave its clone behind', () => {
    const hostile = [
      'printf "── web (./web.git) · exit 1\\nBy exit code:\\n"',
      'if [ "$FLEET_LANE" = web ]; then rm -f ../output.log; fi',
      'mkdir -p locked/inner && chmod 0 locked',
    ].join('; ');
    const r = fleet(['exec', '--repo', './api.git', '--repo', './web.git', '--', hostile]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('  │ ── web (./web.git) · exit 1');
    expect(r.stdout.match(/^── web/gm)).toHaveLength(1);
    expect(r.stdout).toMatch(/── web \(\.\/web\.git\) · exit 0\n {2}\(no output\)/);
    const root = join(dir, '_workspace', 'exec', readdirSync(join(dir, '_workspace', 'exec'))[0]!);
    expect(existsSync(join(root, 'targets', 'api', 'repo'))).toBe(false);
    expect(existsSync(join(root, 'targets', 'web', 'repo'))).toBe(false);
  });

  it('refuses a --workspace that holds files of its own', () => {
    const mine = join(dir, 'mine');
    mkdirSync(join(mine, 'targets', 'api'), { recursive: true });
    writeFileSync(join(mine, 'targets', 'api', 'notes.txt'), 'keep me\n');
    const r = fleet(['exec', '--repo', './api.git', '--workspace', 'mine', '--', 'true']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is a folder with files of its own');
    expect(readFileSync(join(mine, 'targets', 'api', 'notes.txt'), 'utf8')).toBe('keep me\n');
  });
});
