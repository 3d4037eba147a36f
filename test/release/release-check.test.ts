// scripts/release-check.mjs: what the release workflow checks before it moves a major tag and publishes a release.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { changelogSection, checkRelease, main, parseArgs, parseTag, VERSION_COPIES } from '../../scripts/release-check.mjs';

const SCRIPT = resolve('scripts/release-check.mjs');

const CHANGELOG = `# Changelog

## [Unreleased]

### Added

- Something not released yet.

## [1.2.3] - 2026-12-01

### Fixed

- A lane that failed twice.

## [1.2.2] - 2026-11-01

- Older.

[Unreleased]: https://github.com/acme/fleet/compare/v1.2.3...HEAD
[1.2.3]: https://github.com/acme/fleet/compare/v1.2.2...v1.2.3
`;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * A folder holding a package.json of `version` and a CHANGELOG.md of `changelog` (unless null), and the sources' copies
 * of the version (`copies`, default `version`; none when null).
 */
function fixture(version: string | null, changelog: string | null, copies: string | null = version): string {
  const dir = mkdtempSync(join(tmpdir(), 'fleet-release-'));
  dirs.push(dir);
  if (version !== null) writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'fleet', version }, null, 2));
  if (changelog !== null) writeFileSync(join(dir, 'CHANGELOG.md'), changelog);
  if (copies !== null) {
    for (const c of VERSION_COPIES) {
      mkdirSync(dirname(join(dir, c.path)), { recursive: true });
      writeFileSync(join(dir, c.path), `/** The version. */\nexport const ${c.constant} = '${copies}';\n`);
    }
  }
  return dir;
}

function run(dir: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { cwd: dir, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** main() in-process, its output captured. */
function callMain(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = main(argv, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } });
  return { code, stdout, stderr };
}

describe('parseTag', () => {
  it('reads v<semver>, with pre-releases and build metadata', () => {
    expect(parseTag('v1.2.3')).toEqual({ version: '1.2.3', major: 1, prerelease: false });
    expect(parseTag('v0.1.0')).toEqual({ version: '0.1.0', major: 0, prerelease: false });
    expect(parseTag('v2.0.0-rc.1')).toEqual({ version: '2.0.0-rc.1', major: 2, prerelease: true });
    expect(parseTag('v1.0.0+build.5')).toEqual({ version: '1.0.0+build.5', major: 1, prerelease: false });
  });
  it('refuses what is not v<semver>', () => {
    for (const tag of ['1.2.3', 'v1', 'v1.2', 'v01.2.3', 'v1.2.3.4', 'V1.2.3', 'v1.2.3-', 'release-1.2.3', 'v1.2.3 ']) {
      expect(parseTag(tag), tag).toBeNull();
    }
  });
});

describe('changelogSection', () => {
  it("takes one version's entries, up to the next version, without its heading or the link definitions", () => {
    expect(changelogSection(CHANGELOG, '1.2.3')).toEqual({ heading: '## [1.2.3] - 2026-12-01', body: '### Fixed\n\n- A lane that failed twice.' });
    expect(changelogSection(CHANGELOG, '1.2.2')?.body).toBe('- Older.');
    expect(changelogSection(CHANGELOG, 'Unreleased')?.body).toBe('### Added\n\n- Something not released yet.');
  });
  it('matches the version exactly', () => {
    expect(changelogSection(CHANGELOG, '1.2')).toBeNull();
    expect(changelogSection(CHANGELOG, '1.2.3-rc.1')).toBeNull();
    expect(changelogSection('## [1.2.30]\n\n- x\n', '1.2.3')).toBeNull();
    expect(changelogSection('## [1x2x3]\n\n- x\n', '1.2.3')).toBeNull();
  });
});

describe('checkRelease', () => {
  const pkg = (version: string) => JSON.stringify({ version });

  it('passes a tag that is v + the version, with a dated changelog section, and says which major tag moves', () => {
    expect(checkRelease({ tag: 'v1.2.3', packageJson: pkg('1.2.3'), changelog: CHANGELOG })).toEqual({
      problems: [],
      version: '1.2.3',
      major: 'v1',
      prerelease: false,
      notes: '### Fixed\n\n- A lane that failed twice.',
    });
  });

  it('moves no major tag for a pre-release', () => {
    const changelog = '## [2.0.0-rc.1] - 2026-12-02\n\n- Trying it.\n';
    const r = checkRelease({ tag: 'v2.0.0-rc.1', packageJson: pkg('2.0.0-rc.1'), changelog });
    expect(r.problems).toEqual([]);
    expect(r.major).toBeNull();
    expect(r.prerelease).toBe(true);
  });

  it('reports every problem at once', () => {
    const r = checkRelease({ tag: 'v1.2.4', packageJson: pkg('1.2.3'), changelog: CHANGELOG });
    expect(r.problems).toEqual([
      "tag v1.2.4 is not v + package.json's version 1.2.3: run npm version --no-git-tag-version 1.2.4 and commit it, or tag v1.2.3",
      'CHANGELOG.md: no "## [1.2.4]" section: move the entries under "## [Unreleased]" into one',
    ]);
  });

  it('reports a tag that is not v<semver>, and still checks the changelog for the version in package.json', () => {
    const r = checkRelease({ tag: '1.2.3', packageJson: pkg('1.2.3'), changelog: '# Changelog\n' });
    expect(r.problems).toEqual([
      'tag "1.2.3" is not v<semver>: write it as v1.2.3 (or v1.2.3-rc.1 for a pre-release)',
      'CHANGELOG.md: no "## [1.2.3]" section: move the entries under "## [Unreleased]" into one',
    ]);
    expect(r.major).toBeNull();
  });

  it('refuses a section still marked unreleased, and one without entries', () => {
    const r = checkRelease({ tag: 'v0.1.0', packageJson: pkg('0.1.0'), changelog: '## [0.1.0] - unreleased\n\n## [0.0.9]\n\n- x\n' });
    expect(r.problems).toEqual([
      'CHANGELOG.md: "## [0.1.0] - unreleased" is marked unreleased: write the release date instead (## [0.1.0] - YYYY-MM-DD)',
      'CHANGELOG.md: "## [0.1.0]" has no entries',
    ]);
  });

  it("reports a copy of the version in the sources that is not package.json's", () => {
    const copies = [
      { path: 'src/cli/version.ts', constant: 'VERSION', text: "export const VERSION = '1.2.2';\n" },
      { path: 'src/core/incremental.ts', constant: 'FLEET_VERSION', text: "export const FLEET_VERSION = '1.2.3';\n" },
      { path: 'src/moved.ts', constant: 'VERSION', text: null },
      { path: 'src/renamed.ts', constant: 'VERSION', text: "export const FLEET_VERSION = '1.2.3';\n" },
    ];
    expect(checkRelease({ tag: 'v1.2.3', packageJson: pkg('1.2.3'), changelog: CHANGELOG, copies }).problems).toEqual([
      "src/cli/version.ts: VERSION is '1.2.2', not package.json's '1.2.3': write '1.2.3' there",
      'src/moved.ts: not found (it holds VERSION, a copy of the version; update VERSION_COPIES in scripts/release-check.mjs if it moved)',
      `src/renamed.ts: no "export const VERSION = '…'" (a copy of the version)`,
    ]);
    // Against package.json, not the tag: a tag ahead of package.json is one problem, not one per copy.
    const behind = copies.slice(1, 2);
    expect(checkRelease({ tag: 'v1.2.4', packageJson: pkg('1.2.3'), changelog: CHANGELOG, copies: behind }).problems).toEqual([
      "tag v1.2.4 is not v + package.json's version 1.2.3: run npm version --no-git-tag-version 1.2.4 and commit it, or tag v1.2.3",
      'CHANGELOG.md: no "## [1.2.4]" section: move the entries under "## [Unreleased]" into one',
    ]);
  });

  it('reports missing files and a package.json without a usable version', () => {
    expect(checkRelease({ tag: 'v1.0.0', packageJson: null, changelog: null }).problems).toEqual(['package.json: not found', 'CHANGELOG.md: not found']);
    expect(checkRelease({ tag: 'v1.0.0', packageJson: '{"name":"fleet"}', changelog: '## [1.0.0]\n\n- x\n' }).problems).toEqual([
      'package.json: has no "version"',
    ]);
    expect(checkRelease({ tag: 'v1.0.0', packageJson: '{"version":"1.0"}', changelog: '## [1.0.0]\n\n- x\n' }).problems).toEqual([
      'package.json: version "1.0" is not semver',
    ]);
    expect(checkRelease({ tag: 'v1.0.0', packageJson: '{', changelog: '## [1.0.0]\n\n- x\n' }).problems).toEqual([
      expect.stringMatching(/^package\.json: not valid JSON \(/),
    ]);
  });
});

describe('the command line', () => {
  it('refuses a missing tag, an unknown option, a second tag and an option without its value, all at once', () => {
    expect(parseArgs([])).toEqual({ error: ['no tag given'] });
    expect(parseArgs(['v1.0.0', 'v1.0.1', '--bogus', '--notes'])).toEqual({
      error: ['one tag only (got v1.0.0 and v1.0.1)', 'unknown option --bogus', '--notes needs a value'],
    });
    const r = callMain(['--root']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('release-check: --root needs a value\n');
    expect(r.stderr).toContain('release-check: no tag given\n');
    expect(r.stderr).toContain('usage: node scripts/release-check.mjs');
  });

  it('exits 0 on a releasable tag, prints the major tag, writes the notes and the workflow outputs', () => {
    const dir = fixture('1.2.3', CHANGELOG);
    const r = run(dir, 'v1.2.3', '--notes', 'notes.md', '--outputs', 'outputs.txt');
    expect(r).toEqual({
      code: 0,
      stdout: 'release-check: v1.2.3 can be released (package.json 1.2.3, CHANGELOG.md ## [1.2.3])\nmajor tag to move: v1\n',
      stderr: '',
    });
    expect(readFileSync(join(dir, 'notes.md'), 'utf8')).toBe('### Fixed\n\n- A lane that failed twice.\n');
    expect(readFileSync(join(dir, 'outputs.txt'), 'utf8')).toBe('version=1.2.3\nmajor=v1\nprerelease=false\n');
  });

  it('exits 2 and lists every problem, writing no notes', () => {
    const dir = fixture('0.1.0', '# Changelog\n\n## [Unreleased]\n\n- x\n', '0.0.9');
    const r = run(dir, 'v0.2.0', '--notes', 'notes.md');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      [
        'release-check: v0.2.0 cannot be released (4 problems):',
        "- tag v0.2.0 is not v + package.json's version 0.1.0: run npm version --no-git-tag-version 0.2.0 and commit it, or tag v0.1.0",
        '- CHANGELOG.md: no "## [0.2.0]" section: move the entries under "## [Unreleased]" into one',
        "- src/cli/version.ts: VERSION is '0.0.9', not package.json's '0.1.0': write '0.1.0' there",
        "- src/core/incremental.ts: FLEET_VERSION is '0.0.9', not package.json's '0.1.0': write '0.1.0' there",
        '',
      ].join('\n'),
    );
    expect(() => readFileSync(join(dir, 'notes.md'))).toThrow(/ENOENT/);
  });

  it('exits 2 on a bad tag with the files missing, reading them from --root', () => {
    const dir = fixture(null, null);
    const r = run(process.cwd(), 'latest', '--root', dir);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')).toEqual([
      'release-check: latest cannot be released (5 problems):',
      '- tag "latest" is not v<semver>: write it as v1.2.3 (or v1.2.3-rc.1 for a pre-release)',
      '- package.json: not found',
      '- CHANGELOG.md: not found',
      '- src/cli/version.ts: not found (it holds VERSION, a copy of the version; update VERSION_COPIES in scripts/release-check.mjs if it moved)',
      '- src/core/incremental.ts: not found (it holds FLEET_VERSION, a copy of the version; update VERSION_COPIES in scripts/release-check.mjs if it moved)',
      '',
    ]);
  });

  it('exits 2 on a bad command line, printing the usage', () => {
    const r = run(fixture('1.2.3', CHANGELOG));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'release-check: no tag given\nusage: node scripts/release-check.mjs <tag, e.g. v1.2.3> [--notes FILE] [--outputs FILE] [--root DIR]\n',
    );
  });

  it("accepts this repository's own package.json, CHANGELOG.md and sources once the version's section is dated", () => {
    const version = JSON.parse(readFileSync('package.json', 'utf8')).version as string;
    const changelog = readFileSync('CHANGELOG.md', 'utf8');
    expect(changelog).toMatch(/^## \[Unreleased\]$/m);
    const section = changelogSection(changelog, version);
    expect(section?.body).toBeTruthy();
    const dated = changelog.replace(section!.heading, `## [${version}] - 2026-12-31`);
    const copies = VERSION_COPIES.map((c) => ({ ...c, text: readFileSync(c.path, 'utf8') }));
    expect(checkRelease({ tag: `v${version}`, packageJson: readFileSync('package.json', 'utf8'), changelog: dated, copies }).problems).toEqual([]);
  });
});
