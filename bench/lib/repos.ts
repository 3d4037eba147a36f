/** Bare git repositories for the end-to-end benches, made once from a seed and copied. */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { int, mulberry32 } from './prng.js';

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

/**
 * A bare repository with the history and size of a real project, the same on every run: `files` files in nested
 * folders (a few hundred bytes to a few kilobytes each), then `commits − 1` commits that each change a few of them.
 * Written with `git fast-import` (one process, a few seconds), then repacked as a served repository would be.
 */
export function makeHistorySeed(root: string, opts: { commits: number; files: number; seed?: number }): string {
  const rng = mulberry32(opts.seed ?? 0x5eed);
  const paths = Array.from({ length: opts.files }, (_, i) => `src/m${String(i % 40).padStart(2, '0')}/p${String(Math.floor(i / 40) % 8)}/f${i}.js`);
  const body = (i: number, rev: number) => {
    const lines = 10 + ((i * 7 + rev) % 90);
    return Array.from({ length: lines }, (_, l) => `export const v${l} = ${(i * 31 + l * 17 + rev) % 1000}; // line ${l} of ${paths[i]}\n`).join('');
  };
  const chunks: string[] = [];
  const data = (s: string) => `data ${Buffer.byteLength(s)}\n${s}\n`;
  let t = 1_600_000_000;
  for (let c = 0; c < opts.commits; c++) {
    t += 600 + int(rng, 6000);
    chunks.push('commit refs/heads/main\n', `committer Fleet bench <bench@example.invalid> ${t} +0000\n`, data(`Change ${c}`));
    const changed = c === 0 ? paths.map((_, i) => i) : Array.from({ length: 1 + int(rng, 4) }, () => int(rng, paths.length));
    for (const i of changed) chunks.push(`M 100644 inline ${paths[i]}\n`, data(body(i, c)));
    if (c === 0) chunks.push('M 100644 inline README.md\n', data('# bench (history)\n'));
  }
  const bare = join(root, 'history-seed.git');
  git(root, 'init', '-q', '--bare', bare);
  execFileSync('git', ['fast-import', '--quiet'], {
    cwd: bare,
    input: chunks.join(''),
    env: GIT_ENV,
    stdio: ['pipe', 'ignore', 'inherit'],
    maxBuffer: 1 << 30,
  });
  git(bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
  git(bare, 'repack', '-a', '-d', '-q');
  git(bare, 'prune-packed');
  return bare;
}
