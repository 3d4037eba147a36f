// Builds the committed bundles in dist/ with ncc: one per entrypoint, ESM
// (the package is "type": "module"), plus dist/package.json so Node treats them as ESM.
//
// The TypeScript is transpiled once, file by file (esbuild; `npm run typecheck` is where types are checked),
// and ncc bundles the JavaScript. Given the .ts entries, ncc type-checked the whole program again for each
// bundle, one after the other: about a minute of a build that now takes seconds. The bundles build side by side.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const entries = {
  cli: 'src/cli/index.ts',
  action: 'src/actions/index.ts',
};
const STAGE = '.build';

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
  );
}

function ncc(entry, out) {
  return new Promise((resolve, reject) => {
    const args = [
      'node_modules/@vercel/ncc/dist/ncc/cli.js',
      'build',
      entry,
      '-o',
      out,
      '--quiet',
      '--no-source-map-register',
      '--license',
      '[name].licenses.txt',
      '--target',
      'es2022',
    ];
    const child = spawn(process.execPath, args, { stdio: 'inherit' });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`ncc build ${entry} exited with ${code}`))));
  });
}

/**
 * ncc's license plugin writes one file per chunk; given one name, each chunk overwrote the last, and licenses.txt
 * listed only the smallest chunk's packages. Each chunk now gets its own (`[name].licenses.txt`), joined here.
 */
function joinLicenses(out) {
  const parts = readdirSync(out)
    .filter((f) => f.endsWith('.licenses.txt'))
    .sort((a, b) => (a === 'main.licenses.txt' ? -1 : b === 'main.licenses.txt' ? 1 : a.localeCompare(b)));
  writeFileSync(join(out, 'licenses.txt'), parts.map((f) => readFileSync(join(out, f), 'utf8').trimEnd()).join('\n\n') + '\n');
  for (const f of parts) rmSync(join(out, f));
}

rmSync('dist', { recursive: true, force: true });
rmSync(STAGE, { recursive: true, force: true });
try {
  await build({
    entryPoints: sources('src'),
    outdir: join(STAGE, 'src'),
    outbase: 'src',
    format: 'esm',
    platform: 'node',
    target: 'es2022',
    bundle: false,
    logLevel: 'warning',
  });
  // Node (and so ncc) reads the staged .js as ESM only under a "type": "module" package.json.
  writeFileSync(join(STAGE, 'package.json'), '{ "type": "module" }\n');
  await Promise.all(
    Object.entries(entries)
      .filter(([, entry]) => existsSync(entry))
      .map(async ([name, entry]) => {
        const out = join('dist', name);
        await ncc(join(STAGE, entry.replace(/\.ts$/, '.js')), out);
        // ncc writes its own package.json per bundle; one at dist/ covers them all.
        rmSync(join(out, 'package.json'), { force: true });
        joinLicenses(out);
      }),
  );
} catch (err) {
  console.error(err.message);
  process.exit(1);
} finally {
  rmSync(STAGE, { recursive: true, force: true });
}
writeFileSync('dist/package.json', `${JSON.stringify({ type: 'module' }, null, 2)}\n`);
