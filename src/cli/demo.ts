/**
 * `npm run demo`: make a handful of sample repositories in a temporary folder
 * and run a real fleet over them, so a new user sees every kind of outcome in
 * one run: a dependency chain, a lane whose directive fails, an excluded
 * target, and a lane with nothing to do.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from './main.js';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Fleet demo',
  GIT_AUTHOR_EMAIL: 'demo@example.invalid',
  GIT_COMMITTER_NAME: 'Fleet demo',
  GIT_COMMITTER_EMAIL: 'demo@example.invalid',
};

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'init.defaultBranch=main', '-c', 'commit.gpgsign=false', ...args], { cwd, env: GIT_ENV, stdio: 'ignore' });
}

/** A bare "remote" with one commit holding `files`, the way a forge would hold it. */
function sampleRepo(root: string, name: string, files: Record<string, string>): void {
  const src = join(root, 'src', name);
  mkdirSync(src, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(src, path, '..'), { recursive: true });
    writeFileSync(join(src, path), text);
  }
  git(src, 'init', '-q');
  git(src, 'add', '-A');
  git(src, 'commit', '-q', '-m', 'Initial commit');
  git(root, 'clone', '-q', '--bare', src, join(root, 'remotes', `${name}.git`));
}

const EDITORCONFIG = 'root = true\n\n[*]\nindent_style = space\nindent_size = 2\nend_of_line = lf\ninsert_final_newline = true\n';

/** The directive: a small, real codemod. It fails loudly on a package.json it cannot parse. */
const CODEMOD = `import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const EDITORCONFIG = ${JSON.stringify(EDITORCONFIG)};
if (!existsSync('.editorconfig')) writeFileSync('.editorconfig', EDITORCONFIG);
if (existsSync('package.json')) {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
  if (pkg.engines?.node !== '>=20') {
    pkg.engines = { ...pkg.engines, node: '>=20' };
    writeFileSync('package.json', JSON.stringify(pkg, null, 2) + '\\n');
  }
}
`;

export function createDemo(root: string): string {
  mkdirSync(join(root, 'remotes'), { recursive: true });
  const pkg = (name: string, deps: Record<string, string> = {}) => `${JSON.stringify({ name, version: '1.0.0', dependencies: deps }, null, 2)}\n`;
  sampleRepo(root, 'core-lib', { 'package.json': pkg('core-lib'), 'index.js': 'export const add = (a, b) => a + b;\n' });
  sampleRepo(root, 'api', { 'package.json': pkg('api', { 'core-lib': '^1.0.0' }), 'server.js': "import { add } from 'core-lib';\n" });
  sampleRepo(root, 'web', { 'package.json': pkg('web', { api: '^1.0.0' }), 'app.js': 'console.log("web");\n' });
  sampleRepo(root, 'legacy', { 'package.json': '{ "name": "legacy", "version": 1.0.0 }\n', 'main.js': '// broken manifest\n' });
  sampleRepo(root, 'docs-site', { '.editorconfig': EDITORCONFIG, 'index.md': '# Docs\n' });
  // A plain folder listed by mistake: by default the plan stops on it; this fleet accepts it (missing_targets: exclude),
  // so the demo shows an excluded target accounted for with its reason.
  mkdirSync(join(root, 'remotes', 'notes'), { recursive: true });
  writeFileSync(join(root, 'remotes', 'notes', 'todo.txt'), 'not a repository\n');

  const codemod = join(root, 'add-editorconfig.mjs');
  writeFileSync(codemod, CODEMOD);
  const fleetFile = join(root, 'fleet.yml');
  writeFileSync(
    fleetFile,
    `# A sample fleet: add an .editorconfig and require Node 20 everywhere.
name: editorconfig
directive: Add a shared .editorconfig and require Node.js 20 or newer in package.json.
run: node ${JSON.stringify(codemod)}
checks:
  - node -e "if (require('fs').existsSync('package.json')) JSON.parse(require('fs').readFileSync('package.json', 'utf8'))"
max_parallel: 4
max_retries: 1
timeout_minutes: 2
never: ["**/*.lock"]
# A target that is not there stops the plan by default; here it is excluded with its reason and the rest run.
missing_targets: exclude
targets:
  - repo: ./remotes/core-lib.git
  - repo: ./remotes/api.git
    depends_on: [core-lib]
  - repo: ./remotes/web.git
    depends_on: [api]
  - repo: ./remotes/legacy.git
  - repo: ./remotes/docs-site.git
  - repo: ./remotes/notes
`,
  );
  return fleetFile;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('demo.ts') || process.argv[1]?.endsWith('demo.js')) {
  // One folder, replaced by each run: the demo never leaves a trail of temporary folders behind (the last one stays,
  // to look at its branches). Per user, so two users of one machine do not share it.
  const root = join(tmpdir(), `fleet-demo-${process.getuid?.() ?? 'user'}`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { mode: 0o700 });
  const fleetFile = createDemo(root);
  process.stdout.write(`Sample repositories and fleet file: ${root}\n\n`);
  const code = await main(['run', fleetFile, '--workspace', join(root, 'workspace')], {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: root,
  });
  process.stdout.write(
    `\nThe demo is meant to show every outcome: "legacy" fails on purpose (its package.json is broken), "notes" is excluded (not a git repository), "docs-site" has nothing to do.\n` +
      `Look at a lane branch:  git -C ${join(root, 'remotes', 'api.git')} log --stat fleet/editorconfig/api\n` +
      `Run it again (idempotent: no new commits):  node bin/fleet.js run ${fleetFile} --workspace ${join(root, 'workspace-2')}\n` +
      `The next npm run demo replaces ${root}.\n`,
  );
  // Exit 1 is the expected outcome here (one lane fails by design); anything else means the demo itself broke.
  process.exitCode = code === 1 ? 0 : code === 0 ? 3 : code;
}
