/** Bare git repositories for the end-to-end benches, made once from a seed and copied. */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Fleet bench',
  GIT_AUTHOR_EMAIL: 'bench@example.invalid',
  GIT_COMMITTER_NAME: 'Fleet bench',
  GIT_COMMITTER_EMAIL: 'bench@example.invalid',
};

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'init.defaultBranch=main', '-c', 'commit.gpgsign=false', '-c', 'core.hooksPath=/dev/null', ...args], {
    cwd,
    env: GIT_ENV,
    stdio: 'ignore',
  });
}

/** A bare repository with one commit (a README and a small package), the template every bench repository is copied from. */
export function makeSeedRepo(root: string): string {
  const src = join(root, 'seed-src');
  mkdirSync(join(src, 'src'), { recursive: true });
  writeFileSync(join(src, 'README.md'), '# bench\n');
  writeFileSync(join(src, 'package.json'), `${JSON.stringify({ name: 'bench', version: '1.0.0' }, null, 2)}\n`);
  writeFileSync(join(src, 'src', 'index.js'), 'export const x = 1;\n');
  git(src, 'init', '-q');
  git(src, 'add', '-A');
  git(src, 'commit', '-q', '-m', 'Initial commit');
  const bare = join(root, 'seed.git');
  git(root, 'clone', '-q', '--bare', src, bare);
  return bare;
}

/** `count` bare repositories `<dir>/r00.git` … copied from `seed`; returns their paths. */
export function makeBareRepos(seed: string, dir: string, count: number): string[] {
  mkdirSync(dir, { recursive: true });
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const p = join(dir, `r${String(i).padStart(2, '0')}.git`);
    cpSync(seed, p, { recursive: true });
    out.push(p);
  }
  return out;
}
