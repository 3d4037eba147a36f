/**
 * A local npm registry holding a few real packages, so a wave leg's `npm view` and `npm install` of the agent CLI
 * run as they do against registry.npmjs.org, with no network: the tarballs are the registry's own bytes (packed from
 * the npm cache `npm ci` filled, see packFromNpmCache), served with their integrity.
 *
 * What it answers, after the registry's documented responses
 * (https://github.com/npm/registry/blob/main/docs/responses/package-metadata.md):
 * - `GET /<name>` (a scoped name's "/" as %2f, as npm sends it): the package document, `dist-tags.latest` and one
 *   entry per version with `dist.tarball`, `dist.integrity` (sha512) and `dist.shasum`, for either Accept header npm
 *   sends (the abbreviated "corgi" format is a subset of the full one, so the full one answers both);
 * - `GET <tarball url>`: the tarball;
 * - anything else: 404 `{"error":"Not found"}`.
 * A package may also be known by its manifest alone (no tarball): enough for npm to decide that an optional
 * dependency for another platform is not installed, never enough to install it.
 *
 * Not reproduced: publishing, authentication, search, audit and `-/v1/` endpoints, the registry's rate limits.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename } from 'node:path';

export interface PackageManifest {
  name: string;
  version: string;
  [field: string]: unknown;
}

export interface NpmRegistry {
  /** The registry's URL, ending with "/" (as npm_config_registry takes it). */
  url: string;
  /** Every request, in order. */
  requests: { method: string; path: string; status: number }[];
  /** The tarball requests, by package name. */
  downloads(name: string): number;
  close(): Promise<void>;
}

/** Serves `tarballs` (real .tgz files; each one's package.json names it) and `manifests` (packages without a tarball). */
export async function startNpmRegistry(opts: { tarballs: string[]; manifests?: PackageManifest[] }): Promise<NpmRegistry> {
  const requests: NpmRegistry['requests'] = [];
  const docs = new Map<string, { name: string; versions: Record<string, Record<string, unknown>> }>();
  const files = new Map<string, { name: string; path: string }>();
  const server = createServer((req, res) => answer(req, res));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

  const add = (manifest: PackageManifest, dist?: Record<string, string>) => {
    const doc = docs.get(manifest.name) ?? { name: manifest.name, versions: {} };
    doc.versions[manifest.version] = { ...manifest, _id: `${manifest.name}@${manifest.version}`, ...(dist ? { dist } : {}) };
    docs.set(manifest.name, doc);
  };
  for (const path of opts.tarballs) {
    const manifest = JSON.parse(execFileSync('tar', ['-xOzf', path, 'package/package.json'], { encoding: 'utf8', maxBuffer: 1 << 20 })) as PackageManifest;
    const bytes = readFileSync(path);
    const tarballPath = `/${manifest.name}/-/${basename(manifest.name)}-${manifest.version}.tgz`;
    files.set(tarballPath, { name: manifest.name, path });
    add(
      // What npm's publish adds to the manifest it uploads, that the tarball's own package.json lacks.
      { ...manifest, ...(manifest.scripts && (manifest.scripts as Record<string, string>).postinstall ? { hasInstallScript: true } : {}) },
      {
        tarball: `${url.slice(0, -1)}${tarballPath}`,
        integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        shasum: createHash('sha1').update(bytes).digest('hex'),
      },
    );
  }
  for (const m of opts.manifests ?? []) if (!docs.get(m.name)?.versions[m.version]) add(m, { tarball: `${url}${m.name}/-/not-held.tgz` });

  function answer(req: IncomingMessage, res: ServerResponse): void {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    const send = (status: number, body: string | Buffer, type = 'application/json') => {
      requests.push({ method: req.method ?? '', path, status });
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    const file = files.get(path);
    if (req.method === 'GET' && file) return send(200, readFileSync(file.path), 'application/octet-stream');
    const doc = req.method === 'GET' ? docs.get(path.slice(1)) : undefined;
    if (!doc) return send(404, JSON.stringify({ error: 'Not found' }));
    const versions = Object.keys(doc.versions);
    return send(
      200,
      JSON.stringify({ _id: doc.name, name: doc.name, 'dist-tags': { latest: versions.at(-1) }, versions: doc.versions, modified: new Date(0).toISOString() }),
    );
  }

  return {
    url,
    requests,
    downloads: (name) => requests.filter((r) => r.status === 200 && files.get(r.path)?.name === name).length,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

/**
 * The registry's own tarballs of `specs` (`name@version`), taken from the npm cache when `npm ci` put them there
 * (`--prefer-offline`: the registry is asked only for what the cache lacks), into `dir`. Scripts never run: packing
 * a package runs its `prepare`, which Claude Code's refuses outside its release pipeline.
 */
export function packFromNpmCache(specs: string[], dir: string): string[] {
  const out = execFileSync('npm', ['pack', ...specs, '--prefer-offline', '--ignore-scripts', '--json', '--pack-destination', dir], {
    encoding: 'utf8',
    maxBuffer: 16 << 20,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return (JSON.parse(out) as { filename: string }[]).map((p) => `${dir}/${p.filename}`);
}
