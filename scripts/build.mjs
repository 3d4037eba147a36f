// Builds the committed bundles in dist/ with ncc: one per entrypoint, ESM
// (the package is "type": "module"), plus dist/package.json so Node treats them as ESM.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync, readdirSync, renameSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const entries = {
  cli: 'src/cli/index.ts',
  action: 'src/actions/index.ts',
};

rmSync('dist', { recursive: true, force: true });
for (const [name, entry] of Object.entries(entries)) {
  if (!existsSync(entry)) continue;
  const out = join('dist', name);
  execFileSync(process.execPath, ['node_modules/@vercel/ncc/dist/ncc/cli.js', 'build', entry, '-o', out, '--quiet', '--no-source-map-register', '--license', 'licenses.txt', '--target', 'es2022'], { stdio: 'inherit' });
  // ncc writes its own package.json per bundle; one at dist/ covers them all.
  rmSync(join(out, 'package.json'), { force: true });
}
writeFileSync('dist/package.json', `${JSON.stringify({ type: 'module' }, null, 2)}\n`);
