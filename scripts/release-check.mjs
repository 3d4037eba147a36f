// Checks that a tag can be released, and says what the release workflow does with it.
//
//   node scripts/release-check.mjs v1.2.3 [--notes FILE] [--outputs FILE] [--root DIR]
//
// Every problem is listed at once, and the exit code is 2 when there is any (or the command line is wrong):
// - the tag is `v<semver>` (https://semver.org: v1.2.3, v1.2.3-rc.1);
// - the tag is `v` + the version in package.json;
// - CHANGELOG.md has a `## [<version>]` section with at least one entry, not marked "unreleased";
// - the copies of the version the bundles carry (they cannot read package.json at run time) say what package.json says:
//   `VERSION` in src/cli/version.ts (`fleet --version`) and `FLEET_VERSION` in src/core/incremental.ts (lane digests).
// On success it prints the major tag the release moves (`v1`; none for a pre-release).
// --notes FILE writes the changelog section (without its heading) to FILE, for `gh release create --notes-file`.
// --outputs FILE appends `version=`, `major=` and `prerelease=` lines to FILE (the workflow passes $GITHUB_OUTPUT).
// --root DIR reads package.json and CHANGELOG.md from DIR instead of the current folder.
//
// Plain Node, no dependencies: the release workflow runs it before anything is built.
import { appendFileSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// The regular expression semver.org gives for a version, with `v` in front.
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** Where the sources hold a copy of the version: the file, and the constant that holds it. */
export const VERSION_COPIES = [
  { path: 'src/cli/version.ts', constant: 'VERSION' },
  { path: 'src/core/incremental.ts', constant: 'FLEET_VERSION' },
];

const USAGE = 'usage: node scripts/release-check.mjs <tag, e.g. v1.2.3> [--notes FILE] [--outputs FILE] [--root DIR]';

/** Reads a version: `{ version, major, prerelease }`, or null when it is not semver. */
export function parseVersion(text) {
  const m = SEMVER.exec(text);
  if (!m) return null;
  return { version: text, major: Number(m[1]), prerelease: m[4] !== undefined };
}

/** Reads a release tag (`v1.2.3`): `{ version, major, prerelease }`, or null when it is not `v<semver>`. */
export function parseTag(tag) {
  return tag.startsWith('v') ? parseVersion(tag.slice(1)) : null;
}

/** The tag a release moves: `v<major>`, or null for a pre-release (a `v1` user must not get an rc). */
export function majorTag(parsed) {
  return parsed.prerelease ? null : `v${parsed.major}`;
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The `## [<version>]` section of a changelog: `{ heading, body }` (the body without its heading, trimmed, up to the
 * next `## ` heading and without the link definitions Keep a Changelog puts at the end), or null when there is none.
 */
export function changelogSection(changelog, version) {
  const lines = changelog.split(/\r?\n/);
  const heading = new RegExp(`^## \\[${escapeRegExp(version)}\\](?:\\s|$)`);
  const start = lines.findIndex((line) => heading.test(line));
  if (start < 0) return null;
  let end = lines.findIndex((line, i) => i > start && /^## /.test(line));
  if (end < 0) end = lines.length;
  const body = lines
    .slice(start + 1, end)
    .filter((line) => !/^\[[^\]]+\]:\s/.test(line))
    .join('\n')
    .trim();
  return { heading: lines[start], body };
}

/**
 * Checks one release. `packageJson` and `changelog` are the files' texts (null when the file is missing); `copies`
 * the files of VERSION_COPIES as `{ path, constant, text }` (text null when missing).
 * Returns `{ problems, version, major, prerelease, notes }`; `problems` is empty when the tag can be released.
 */
export function checkRelease({ tag, packageJson, changelog, copies = [] }) {
  const problems = [];
  const parsed = parseTag(tag);
  if (!parsed) problems.push(`tag "${tag}" is not v<semver>: write it as v1.2.3 (or v1.2.3-rc.1 for a pre-release)`);

  let pkgVersion = null;
  if (packageJson === null) {
    problems.push('package.json: not found');
  } else {
    let pkg;
    let read = false;
    try {
      pkg = JSON.parse(packageJson);
      read = true;
    } catch (error) {
      problems.push(`package.json: not valid JSON (${error.message})`);
    }
    if (read) {
      if (typeof pkg?.version !== 'string') problems.push('package.json: has no "version"');
      else if (!parseVersion(pkg.version)) problems.push(`package.json: version "${pkg.version}" is not semver`);
      else pkgVersion = pkg.version;
    }
  }
  if (parsed && pkgVersion !== null && parsed.version !== pkgVersion) {
    problems.push(
      `tag ${tag} is not v + package.json's version ${pkgVersion}: run npm version --no-git-tag-version ${parsed.version} and commit it, or tag v${pkgVersion}`,
    );
  }

  // The version the rest must say: the tag's when the tag reads, else package.json's.
  const version = parsed?.version ?? pkgVersion;

  let notes = null;
  if (changelog === null) {
    problems.push('CHANGELOG.md: not found');
  } else if (version !== null) {
    const section = changelogSection(changelog, version);
    if (!section) {
      problems.push(`CHANGELOG.md: no "## [${version}]" section: move the entries under "## [Unreleased]" into one`);
    } else {
      if (/unreleased/i.test(section.heading.slice(`## [${version}]`.length))) {
        problems.push(`CHANGELOG.md: "${section.heading}" is marked unreleased: write the release date instead (## [${version}] - YYYY-MM-DD)`);
      }
      if (!section.body) problems.push(`CHANGELOG.md: "## [${version}]" has no entries`);
      notes = section.body;
    }
  }

  // The copies must say what package.json says (the tests hold them equal; the release workflow does not run them).
  const pkgOrTag = pkgVersion ?? parsed?.version ?? null;
  for (const { path, constant, text } of copies) {
    if (text === null) {
      problems.push(`${path}: not found (it holds ${constant}, a copy of the version; update VERSION_COPIES in scripts/release-check.mjs if it moved)`);
      continue;
    }
    const m = new RegExp(`export const ${constant}\\s*=\\s*['"]([^'"]*)['"]`).exec(text);
    if (!m) problems.push(`${path}: no "export const ${constant} = '…'" (a copy of the version)`);
    else if (pkgOrTag !== null && m[1] !== pkgOrTag) {
      problems.push(`${path}: ${constant} is '${m[1]}', not ${pkgVersion !== null ? "package.json's" : "the tag's"} '${pkgOrTag}': write '${pkgOrTag}' there`);
    }
  }

  return {
    problems,
    version,
    major: parsed ? majorTag(parsed) : null,
    prerelease: parsed ? parsed.prerelease : null,
    notes,
  };
}

function readOrNull(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw error;
  }
}

/** Parses the command line: `{ tag, notes, outputs, root }`, or `{ error }`. */
export function parseArgs(argv) {
  const options = { tag: null, notes: null, outputs: null, root: '.' };
  const errors = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const flag = { '--notes': 'notes', '--outputs': 'outputs', '--root': 'root' }[arg];
    if (flag) {
      const value = argv[i + 1];
      if (value === undefined || value === '') errors.push(`${arg} needs a value`);
      else options[flag] = value;
      i++;
    } else if (arg.startsWith('-')) {
      errors.push(`unknown option ${arg}`);
    } else if (options.tag === null) {
      options.tag = arg;
    } else {
      errors.push(`one tag only (got ${options.tag} and ${arg})`);
    }
  }
  if (options.tag === null || options.tag === '') errors.push('no tag given');
  return errors.length ? { error: errors } : options;
}

/** The command. Returns the exit code: 0 when the tag can be released, 2 on a problem or a bad command line. */
export function main(argv, { stdout = process.stdout, stderr = process.stderr } = {}) {
  const options = parseArgs(argv);
  if (options.error) {
    for (const e of options.error) stderr.write(`release-check: ${e}\n`);
    stderr.write(`${USAGE}\n`);
    return 2;
  }
  const result = checkRelease({
    tag: options.tag,
    packageJson: readOrNull(join(options.root, 'package.json')),
    changelog: readOrNull(join(options.root, 'CHANGELOG.md')),
    copies: VERSION_COPIES.map((c) => ({ ...c, text: readOrNull(join(options.root, c.path)) })),
  });
  if (result.problems.length) {
    stderr.write(`release-check: ${options.tag} cannot be released (${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}):\n`);
    for (const p of result.problems) stderr.write(`- ${p}\n`);
    return 2;
  }
  if (options.notes) writeFileSync(options.notes, `${result.notes}\n`);
  if (options.outputs) {
    appendFileSync(options.outputs, `version=${result.version}\nmajor=${result.major ?? ''}\nprerelease=${result.prerelease}\n`);
  }
  stdout.write(`release-check: ${options.tag} can be released (package.json ${result.version}, CHANGELOG.md ## [${result.version}])\n`);
  stdout.write(result.major ? `major tag to move: ${result.major}\n` : `major tag to move: none (${options.tag} is a pre-release)\n`);
  return 0;
}

function invokedDirectly() {
  if (!process.argv[1]) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

if (invokedDirectly()) process.exitCode = main(process.argv.slice(2));
