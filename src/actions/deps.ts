/**
 * The real parts runAction is given on a runner, built from the job's
 * environment. index.ts uses it; tests use it with their own core and store,
 * so what they drive is wired exactly as the action is.
 */
import { dirname, resolve } from 'node:path';
import { setupForge } from '../adapters.js';
import { directiveEnv } from '../util/directive-env.js';
import { AGENT_CREDENTIALS } from '../core/agent-credentials.js';
import type { AppInstallationToken } from '../github/app-token.js';
import { privateKeyParts } from '../github/app-key.js';
import { staticToken, type TokenCredential } from '../github/credential.js';
import { basicCredential, resolveApiUrl } from '../github/octokit.js';
import { encodedForms, registerSecret } from '../util/secrets.js';
import { adoptCommitSetup } from '../workspace/commit-setup.js';
import { githubClient } from '../github/setup.js';
import { GitWorkspace } from '../workspace/workspace.js';
import { systemClock, type ArtifactStore, type Logger } from '../ports.js';
import type { CacheLike } from './agent-install.js';
import { OtherRunArtifactStore } from './artifact-store.js';
import type { ActionDeps, CoreLike } from './main.js';
import { actionsSweepCache } from './sweep-cache.js';
import type { Settings } from './settings.js';

export function actionDeps(env: NodeJS.ProcessEnv, core: CoreLike, store: ArtifactStore, logger: Logger): ActionDeps {
  // Any variable holding a token, plain or as the basic credential git sends, is withheld from directives; so is
  // one holding the App's private key (or a line of it). Tokens Fleet mints later live in no variable at all.
  const tokens = [env.FLEET_TOKEN, env.FLEET_RUN_TOKEN].flatMap((t) => (t ? [t, basicCredential(t)] : []));
  const keyParts = env.FLEET_APP_PRIVATE_KEY?.trim() ? privateKeyParts(env.FLEET_APP_PRIVATE_KEY) : [];
  // Agent credentials too: only an agent directive gets them, under its CLI's names (see prepareAgent in main.ts).
  const agentCredentials = AGENT_CREDENTIALS.map((c) => env[c.fleetVariable]?.trim()).filter((v): v is string => !!v);
  for (const credential of agentCredentials) registerSecret(credential);
  const withheld = directiveEnv(env, undefined, [...tokens, ...keyParts, ...agentCredentials]);

  // One credential per job: the PAT as given, or the App's installation token, minted at the first need and renewed.
  // Least privilege: the plan and report jobs only read the targets, so their tokens are read-only.
  let credential: Promise<TokenCredential> | undefined;
  const apps: AppInstallationToken[] = [];
  const mint = (app: NonNullable<Settings['app']>, why: string): Promise<AppInstallationToken> =>
    // The App code (and @octokit/auth-app) is loaded only by jobs that have App credentials.
    import('../github/app-token.js')
      .then(({ AppInstallationToken }) => AppInstallationToken.start(app, { apiUrl: resolveApiUrl(env.GITHUB_API_URL), logger }))
      .then((t) => {
        apps.push(t);
        logger.info(`GitHub App ${app.appId}: installation token minted for ${app.owner} (${why}); Fleet renews it while this job runs`);
        return t;
      });
  const credentialFor = (s: Settings): Promise<TokenCredential> =>
    (credential ??= s.app
      ? mint(s.mode === 'lane' ? s.app : { ...s.app, readOnly: true }, s.mode === 'lane' ? 'the lanes' : 'read-only')
      : Promise.resolve(staticToken(s.token)));
  const clientOf = (cred: Promise<TokenCredential>, s: Settings) => {
    const client = cred.then((c) => {
      const octokit = githubClient(env, c.current(), logger, s.app ? c : undefined);
      if ('problem' in octokit) throw new Error(octokit.problem);
      return octokit;
    });
    return { request: async (route: string, params?: Record<string, unknown>) => (await client).request(route, params) };
  };

  // The job's working copies and commands, one for all its lanes: built again once adoptCommitSetup has decided who
  // the lanes' commits are by (runAction asks before any lane runs).
  let workspace = new GitWorkspace();
  return {
    env,
    core,
    store,
    clock: systemClock,
    get workspace() {
      return workspace;
    },
    get exec() {
      return workspace.executor;
    },
    setupForge: async (s, file, writePace) => {
      const baseDir = s.file ? dirname(resolve(s.file)) : process.cwd();
      if (file.forge === 'local') return setupForge(file, { env, baseDir, token: s.token, logger, writePace });
      const cred = await credentialFor(s);
      // A PAT goes through the client as before; only an App token needs the renewing auth.
      return setupForge(file, { env, baseDir, token: cred.current(), credential: s.app ? cred : undefined, logger, writePace });
    },
    api: (s) => {
      // The run's own repository: the job's GITHUB_TOKEN (github-token input); the App's token when there is none.
      if (s.runToken) {
        const client = githubClient(env, s.runToken, logger);
        if ('problem' in client) throw new Error(client.problem);
        return client;
      }
      return clientOf(credentialFor(s), s);
    },
    directiveEnv: withheld,
    adoptCommitSetup: async (file) => {
      const adopted = await adoptCommitSetup(file, env);
      if (adopted.ok) workspace = new GitWorkspace({ commit: adopted.commit });
      return adopted;
    },
    // At the job's end every token Fleet minted is revoked (DELETE /installation/token), as
    // create-github-app-token's post step does: a token outliving its job is a token to steal.
    async finish() {
      for (const app of apps) {
        const { revoked, failed } = await app.revoke();
        logger.info(`GitHub App: ${revoked} installation token(s) revoked${failed ? `, ${failed} could not be` : ''}`);
      }
    },
    // Dispatching the next run of a chained fleet: the PAT, or an App token with Actions write and nothing else.
    fleetApi: (s) =>
      clientOf(
        s.app
          ? mint({ ...s.app, permissions: { actions: 'write' } }, 'Actions write, to continue the fleet in a new run')
          : Promise.resolve(staticToken(s.token)),
        s,
      ),
    runStore: (s, runId) =>
      new OtherRunArtifactStore({ token: s.runToken, workflowRunId: runId, repositoryOwner: s.repository!.owner, repositoryName: s.repository!.repo }),
    installAgent: async (spec, bin) => {
      const { installAgent } = await import('./agent-install.js');
      return installAgent({ spec, bin, env: withheld, log: logger.info, cache: await actionsCache() });
    },
    secretForms: encodedForms,
    sweepCache: actionsSweepCache,
  };
}

/** The job's Actions cache through @actions/cache (loaded only when a leg installs an agent), or none outside Actions. */
async function actionsCache(): Promise<CacheLike | undefined> {
  const cache = await import('@actions/cache');
  if (!cache.isFeatureAvailable()) return undefined;
  return { restore: (paths, key) => cache.restoreCache(paths, key), save: (paths, key) => cache.saveCache(paths, key) };
}
