/**
 * `npm run emulator [-- --port 8787]`: the GitHub emulator with a few sample
 * repositories, for trying Fleet (or curl, gh, git) against it by hand.
 * Prints the URLs, a token and the environment to export; Ctrl-C stops it.
 */
import { ci, specLoadStats, startEmulator } from '../test/support/github-emulator/index.js';

/** The tuning that suits the emulator (src/github/tuning.ts TUNING_VARIABLES): never for github.com. */
const EMULATOR_TUNING = { FLEET_GITHUB_PACING_MS: '0', FLEET_GITHUB_POLL_MS: '200', FLEET_GITHUB_CI_GRACE_MS: '2000' };

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const port = Number(arg('port') ?? process.env.PORT ?? 0);
const token = arg('token') ?? 'ghs_emulator_token';
const emu = await startEmulator({ port, token, login: 'fleet-bot' });

await emu.createRepo({
  owner: 'acme',
  name: 'core-lib',
  topics: ['service', 'library'],
  description: 'Shared library',
  files: { 'README.md': '# core-lib\n', 'package.json': '{ "name": "core-lib", "version": "1.0.0" }\n', 'src/index.ts': 'export const version = 1;\n' },
});
await emu.createRepo({ owner: 'acme', name: 'api', topics: ['service'], files: { 'README.md': '# api\n', 'src/server.ts': 'export {};\n' } });
await emu.createRepo({ owner: 'acme', name: 'web', topics: ['service', 'frontend'], files: { 'README.md': '# web\n', 'index.html': '<!doctype html>\n' } });
await emu.createRepo({ owner: 'acme', name: 'legacy', topics: ['service'], archived: true });
await emu.createRepo({ owner: 'acme', name: 'forked-tool', fork: true });
await emu.createRepo({ owner: 'acme', name: 'empty', empty: true });
await emu.createRepo({ owner: 'acme', name: 'secret', visibility: 'private' });
emu.setCi('*', ci.onBranches(/^(?!main$)/, ci.flakyOnce(['test'], 500)));
const readOnly = 'ghs_emulator_read_only';
emu.addToken(readOnly, { login: 'reader', default: 'pull' });

const stats = specLoadStats();
const out = [
  `GitHub emulator listening on ${emu.url}`,
  `  REST     ${emu.url}   (also ${emu.url}/api/v3)`,
  `  GraphQL  ${emu.graphqlUrl}`,
  `  git      ${emu.gitUrl('acme', 'api')}`,
  `  token    ${token}   (admin everywhere; read-only: ${readOnly})`,
  `  repos    acme/core-lib acme/api acme/web acme/legacy (archived) acme/forked-tool (fork) acme/empty acme/secret (private)`,
  `  CI       every push to a branch other than main: check "test", failing on the first push of the branch`,
  stats ? `  openapi  ${stats.operations} operations loaded in ${stats.ms} ms (RSS ${stats.rssAfterMB} MB)` : '',
  '',
  'export GITHUB_API_URL=' + emu.url,
  'export GITHUB_GRAPHQL_URL=' + emu.graphqlUrl,
  'export GITHUB_SERVER_URL=' + `${emu.url}/git`,
  'export GITHUB_TOKEN=' + token,
  // The emulator has no secondary rate limits and its CI answers in half a second: without these, Fleet paces
  // itself and polls as it must against github.com, and a four-lane trial takes 30 s instead of 4.
  ...Object.entries(EMULATOR_TUNING).map(([k, v]) => `export ${k}=${v}`),
  '',
  `curl -s -H "Authorization: token ${token}" ${emu.url}/repos/acme/api`,
  `git -c http.extraheader="Authorization: Bearer ${token}" clone ${emu.gitUrl('acme', 'api')}`,
  '',
  'Every request is logged below; Ctrl-C stops.',
];
console.log(out.join('\n'));

let shown = 0;
const timer = setInterval(() => {
  for (; shown < emu.requests.length; shown++) {
    const r = emu.requests[shown]!;
    console.log(
      `${new Date(r.time).toISOString()} ${r.kind.padEnd(7)} ${r.method.padEnd(6)} ${r.status} ${r.path}${r.query ? `?${r.query}` : ''}${r.fault ? ` [${r.fault}]` : ''}`,
    );
  }
  for (; emu.violations.length; ) {
    const v = emu.violations.shift()!;
    console.log(`  ! ${v.kind}: ${v.method} ${v.path} → ${v.status} ${v.message}${v.errors ? ' ' + JSON.stringify(v.errors) : ''}`);
  }
}, 200);

const stop = async (): Promise<void> => {
  clearInterval(timer);
  await emu.close();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
