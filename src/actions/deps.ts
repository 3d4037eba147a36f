/**
 * The real parts runAction is given on a runner, built from the job's
 * environment. index.ts uses it; tests use it with their own core and store,
 * so what they drive is wired exactly as the action is.
 */
import { dirname, resolve } from 'node:path';
import { setupForge } from '../adapters.js';
import { directiveEnv } from '../cli/main.js';
import { AppInstallationToken, normalizePrivateKey, staticToken, type TokenCredential } from '../github/app-token.js';
import { basicCredential, resolveApiUrl } from '../github/octokit.js';
import { githubClient } from '../github/setup.js';
import { localExecutor, localWorkspace } from '../local/workspace.js';
import { systemClock, type ArtifactStore, type Logger } from '../ports.js';
import type { ActionDeps, CoreLike } from './main.js';
import type { Settings } from './settings.js';

export function actionDeps(env: NodeJS.ProcessEnv, core: CoreLike, store: ArtifactStore, logger: Logger): ActionDeps {
  // Any variable holding a token, plain or as the basic credential git sends, is withheld from directives; so is
  // one holding the App's private key (or a line of it). Tokens Fleet mints later live in no variable at all.
  const tokens = [env.FLEET_TOKEN, env.FLEET_RUN_TOKEN].flatMap((t) => (t ? [t, basicCredential(t)] : []));
  const key = env.FLEET_APP_PRIVATE_KEY ? normalizePrivateKey(env.FLEET_APP_PRIVATE_KEY) : '';
  const keyParts = key ? [env.FLEET_APP_PRIVATE_KEY!, key, ...key.split('\n').filter((l) => l.length >= 16 && !l.startsWith('-----'))] : [];

  // One credential per job: the PAT as given, or the App's installation token, minted at the first need and renewed.
  // Least privilege: the plan and report jobs only read the targets, so their tokens are read-only.
  let credential: Promise<TokenCredential> | undefined;
  let app: AppInstallationToken | undefined;
  const credentialFor = (s: Settings): Promise<TokenCredential> =>
    (credential ??= s.app
      ? AppInstallationToken.start(s.mode === 'lane' ? s.app : { ...s.app, readOnly: true }, { apiUrl: resolveApiUrl(env.GITHUB_API_URL), logger }).then((t) => {
          app = t;
          logger.info(`GitHub App ${s.app!.appId}: installation token minted for ${s.app!.owner}; Fleet renews it while this job runs`);
          return t;
        })
      : Promise.resolve(staticToken(s.token)));

  return {
    env,
    core,
    store,
    clock: systemClock,
    workspace: localWorkspace,
    exec: localExecutor,
    setupForge: async (s, file) => {
      const baseDir = s.file ? dirname(resolve(s.file)) : process.cwd();
      if (file.forge === 'local') return setupForge(file, { env, baseDir, token: s.token, logger });
      const cred = await credentialFor(s);
      // A PAT goes through the client as before; only an App token needs the renewing auth.
      return setupForge(file, { env, baseDir, token: cred.current(), credential: s.app ? cred : undefined, logger });
    },
    api: (s) => {
      // The run's own repository: the job's GITHUB_TOKEN (github-token input); the App's token when there is none.
      if (s.runToken) {
        const client = githubClient(env, s.runToken, logger);
        if ('problem' in client) throw new Error(client.problem);
        return client;
      }
      const client = credentialFor(s).then((cred) => {
        const c = githubClient(env, cred.current(), logger, cred);
        if ('problem' in c) throw new Error(c.problem);
        return c;
      });
      return { request: async (route, params) => (await client).request(route, params) };
    },
    directiveEnv: directiveEnv(env, undefined, [...tokens, ...keyParts]),
    // At the job's end every token Fleet minted is revoked (DELETE /installation/token), as
    // create-github-app-token's post step does: a token outliving its job is a token to steal.
    async finish() {
      if (!app) return;
      const { revoked, failed } = await app.revoke();
      logger.info(`GitHub App: ${revoked} installation token(s) revoked${failed ? `, ${failed} could not be` : ''}`);
    },
  };
}
