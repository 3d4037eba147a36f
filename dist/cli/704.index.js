export const id = 704;
export const ids = [704];
export const modules = {

/***/ 7704:
/***/ ((__unused_webpack___webpack_module__, __webpack_exports__, __webpack_require__) => {

/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   AppInstallationToken: () => (/* binding */ AppInstallationToken),
/* harmony export */   resolveApiUrl: () => (/* reexport safe */ _octokit_js__WEBPACK_IMPORTED_MODULE_2__.c_)
/* harmony export */ });
/* harmony import */ var _actions_github_lib_utils__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(846);
/* harmony import */ var _octokit_auth_app__WEBPACK_IMPORTED_MODULE_6__ = __webpack_require__(6479);
/* harmony import */ var _octokit_request__WEBPACK_IMPORTED_MODULE_4__ = __webpack_require__(2053);
/* harmony import */ var _util_secrets_js__WEBPACK_IMPORTED_MODULE_1__ = __webpack_require__(897);
/* harmony import */ var _octokit_js__WEBPACK_IMPORTED_MODULE_2__ = __webpack_require__(2161);
/* harmony import */ var _app_key_js__WEBPACK_IMPORTED_MODULE_3__ = __webpack_require__(1590);
/* harmony import */ var _credential_js__WEBPACK_IMPORTED_MODULE_5__ = __webpack_require__(2846);










const proxyFetch = _actions_github_lib_utils__WEBPACK_IMPORTED_MODULE_0__/* .defaults */ .NT.request?.fetch;
class AppInstallationToken {
  constructor(creds, installationId, opts, request, permissions) {
    this.creds = creds;
    this.installationId = installationId;
    this.opts = opts;
    this.permissions = permissions;
    this.now = opts.now ?? Date.now;
    this.request = request;
  }
  creds;
  installationId;
  opts;
  permissions;
  minted = [];
  skewMs = 0;
  granted = {};
  renewing = null;
  now;
  request;
  /** Finds the App's installation on the owner and mints the first token. */
  static async start(creds, opts) {
    let observed;
    let skewMs = 0;
    const now = opts.now ?? Date.now;
    const request = _octokit_request__WEBPACK_IMPORTED_MODULE_4__/* .request */ .E.defaults({
      baseUrl: opts.apiUrl.replace(/\/+$/, ""),
      headers: { "user-agent": opts.userAgent ?? "fleet" },
      // Every answer to the App's own requests (the installation, each mint, a 401) tells GitHub's time too.
      request: {
        // @actions/github's fetch: the runner's proxy settings (HTTPS_PROXY, NO_PROXY) apply to the App's requests too.
        ...proxyFetch ? { fetch: proxyFetch } : {},
        hook: async (req, options) => {
          try {
            const res = await req(options);
            noteDate(res.headers.date);
            return res;
          } catch (err) {
            noteDate(err.response?.headers?.date);
            throw err;
          }
        }
      }
    });
    function noteDate(date) {
      if (observed) observed.observe(date);
      else if (date && Number.isFinite(Date.parse(date))) skewMs = Date.parse(date) - now();
    }
    const auth = appAuth(creds, request, 0, opts.logger);
    let data;
    try {
      ({ data } = await auth.hook(request, "GET /users/{username}/installation", { username: creds.owner }));
    } catch (err) {
      const status = err.status;
      const hint = status === 404 && /Integration not found/i.test(err.message) ? `GitHub knows no App with id ${creds.appId} (app-id is the App's id from its settings page)` : status === 404 ? `the App is not installed on ${creds.owner} (install it there, or set app-owner to the account it is installed on)` : status === 401 ? "GitHub refused the App's JWT (is app-id the id of the App this private key belongs to?)" : (0,_util_secrets_js__WEBPACK_IMPORTED_MODULE_1__/* .redact */ .E$)(err.message);
      throw new Error(`GitHub App ${creds.appId}: could not find its installation on ${creds.owner} (${status ?? "error"}): ${hint}`);
    }
    const token = new AppInstallationToken(creds, data.id, opts, request, creds.permissions ?? (creds.readOnly ? readOnly(data.permissions ?? {}) : void 0));
    token.skewMs = skewMs;
    token.granted = { ...data.permissions ?? {} };
    observed = token;
    await token.mint();
    return token;
  }
  current() {
    return this.minted[this.minted.length - 1].token;
  }
  installationPermissions() {
    return this.granted;
  }
  installationAccount() {
    return this.creds.owner;
  }
  /** GitHub's clock, as far as the last `date` header tells (second resolution). */
  githubNow() {
    return this.now() + this.skewMs;
  }
  /** Milliseconds the current token has left by GitHub's clock. */
  remainingMs() {
    return this.minted[this.minted.length - 1].expiresAt - this.githubNow();
  }
  observe(date) {
    const t = date ? Date.parse(date) : NaN;
    if (Number.isFinite(t)) this.skewMs = t - this.now();
  }
  async fresh() {
    if (this.renewing) return this.renewing;
    if (this.remainingMs() >= _credential_js__WEBPACK_IMPORTED_MODULE_5__/* .RENEW_MARGIN_MS */ .A) return this.current();
    this.opts.logger?.info(`GitHub App token: ${Math.max(0, Math.round(this.remainingMs() / 6e4))} min left by GitHub's clock; renewing it`);
    try {
      return await this.renewOnce();
    } catch (err) {
      if (this.remainingMs() <= 6e4) throw err;
      this.opts.logger?.warn(`${err.message}; the current token has ${Math.round(this.remainingMs() / 6e4)} min left and is used meanwhile`);
      return this.current();
    }
  }
  async renew(rejected) {
    if (this.renewing) return this.renewing;
    if (rejected !== this.current()) return this.current();
    this.opts.logger?.warn("GitHub App token refused (401 Bad credentials) before its time; renewing it once");
    return this.renewOnce();
  }
  /** Revokes every token this process minted that has not expired (DELETE /installation/token). */
  async revoke() {
    let revoked = 0;
    let failed = 0;
    for (const m of this.minted) {
      if (m.expiresAt <= this.githubNow()) continue;
      try {
        await this.request("DELETE /installation/token", { headers: { authorization: `token ${m.token}` } });
        revoked++;
      } catch {
        failed++;
      }
    }
    return { revoked, failed };
  }
  renewOnce() {
    this.renewing ??= this.mint().finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }
  /**
   * POST /app/installations/{id}/access_tokens through auth-app (`refresh: true`: its cache keeps tokens by the
   * local clock, Fleet decides by GitHub's). The JWT is signed for GitHub's clock as Fleet estimates it; when the
   * estimate was stale (GitHub refuses the JWT's iat/exp), the refusal's `date` header corrects it for one retry.
   */
  async mint() {
    let data;
    try {
      data = await this.requestToken();
    } catch (err) {
      if (err.status !== 401) throw this.mintError(err);
      data = await this.requestToken().catch((again) => {
        throw this.mintError(again);
      });
    }
    (0,_octokit_js__WEBPACK_IMPORTED_MODULE_2__/* .maskToken */ .gg)(data.token);
    this.opts.onMint?.(data.token);
    this.minted.push({ token: data.token, expiresAt: Date.parse(data.expiresAt) });
    return data.token;
  }
  requestToken() {
    const auth = appAuth(this.creds, this.request, this.skewSeconds(), this.opts.logger);
    return auth({ type: "installation", installationId: this.installationId, refresh: true, ...this.permissions ? { permissions: this.permissions } : {} });
  }
  mintError(err) {
    const status = err.status;
    const hint = status === 422 ? ": the App lacks a permission this job asks for (see the permissions in docs/actions/tokens.md)" : "";
    return new Error(
      `GitHub App ${this.creds.appId}: minting an installation token on ${this.creds.owner} failed (${status ?? "error"}: ${(0,_util_secrets_js__WEBPACK_IMPORTED_MODULE_1__/* .redact */ .E$)(err.message)})${hint}`
    );
  }
  skewSeconds() {
    return Math.round(this.skewMs / 1e3);
  }
}
function readOnly(granted) {
  return Object.fromEntries(
    Object.entries(granted).filter(([name, level]) => name !== "workflows" && (level === "read" || level === "write" || level === "admin")).map(([name]) => [name, "read"])
  );
}
function appAuth(creds, request, timeDifference, logger) {
  return (0,_octokit_auth_app__WEBPACK_IMPORTED_MODULE_6__/* .createAppAuth */ .K)({
    appId: creds.appId,
    privateKey: (0,_app_key_js__WEBPACK_IMPORTED_MODULE_3__/* .normalizePrivateKey */ .W3)(creds.privateKey),
    request,
    ...timeDifference ? { timeDifference } : {},
    log: { warn: (m) => logger?.warn(m) }
  });
}



/***/ }),

/***/ 2161:
/***/ ((__unused_webpack___webpack_module__, __webpack_exports__, __webpack_require__) => {


// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  gp: () => (/* binding */ basicCredential),
  qV: () => (/* binding */ classicScopes),
  Qi: () => (/* binding */ createOctokit),
  gg: () => (/* binding */ maskToken),
  c_: () => (/* binding */ resolveApiUrl),
  uH: () => (/* binding */ serverUrlFor)
});

// UNUSED EXPORTS: graphqlUrlFor, resolveGraphqlUrl

// EXTERNAL MODULE: ./node_modules/@actions/core/lib/core.js + 14 modules
var core = __webpack_require__(6421);
// EXTERNAL MODULE: ./node_modules/@actions/github/lib/github.js
var github = __webpack_require__(1351);
// EXTERNAL MODULE: ./node_modules/@octokit/plugin-retry/dist-bundle/index.js
var dist_bundle = __webpack_require__(9735);
// EXTERNAL MODULE: ./node_modules/@octokit/plugin-throttling/dist-bundle/index.js
var plugin_throttling_dist_bundle = __webpack_require__(6856);
// EXTERNAL MODULE: ./node_modules/bottleneck/light.js
var light = __webpack_require__(3251);
// EXTERNAL MODULE: ./.build/src/util/secrets.js
var secrets = __webpack_require__(897);
// EXTERNAL MODULE: ./.build/src/core/budget.js
var budget = __webpack_require__(3582);
;// CONCATENATED MODULE: ./.build/src/github/pacer.js


const WRITE_METHODS = /* @__PURE__ */ new Set(["POST", "PATCH", "PUT", "DELETE"]);
const AUTH_PATHS = [/^\/applications\/[^/]+\/token(\/scoped)?$/, /^\/app\/installations\/[^/]+\/access_tokens$/, /^\/login\/oauth\/access_token$/];
function pathOf(url) {
  try {
    return new URL(url ?? "", "http://github.test").pathname;
  } catch {
    return url ?? "";
  }
}
function isContentCreating(options) {
  const method = (options.method ?? "GET").toUpperCase();
  if (!WRITE_METHODS.has(method)) return false;
  const path = pathOf(options.url);
  if (AUTH_PATHS.some((re) => re.test(path))) return false;
  if (/\/graphql$/.test(path)) return typeof options.query === "string" && /^\s*(#[^\n]*\n\s*)*mutation\b/.test(options.query);
  return true;
}
class WritePacer {
  /**
   * `waitTurn`: resolves when the leg's slots are its own (the leg that had them before has finished), awaited once,
   * before the first write.
   */
  constructor(pace, now = Date.now, sleep = (ms) => new Promise((r) => setTimeout(r, ms)), waitTurn, onTurnError) {
    this.pace = pace;
    this.now = now;
    this.sleep = sleep;
    this.waitTurn = waitTurn;
    this.onTurnError = onTurnError;
    if (!(pace.interval_ms > 0) || pace.phase_ms < 0) throw new Error(`a write pace needs a positive interval and a phase \u2265 0 (got ${JSON.stringify(pace)})`);
  }
  pace;
  now;
  sleep;
  waitTurn;
  onTurnError;
  last;
  turn;
  queue = Promise.resolve();
  /** How many writes waited, for how long in all, and how many slots were let go because the leg woke too late for them (for the leg's log). */
  stats = { writes: 0, waited_ms: 0, late: 0 };
  /** Resolves at the slot the next write may go in (its time). */
  take() {
    const turn = this.queue.then(async () => {
      this.turn ??= (this.waitTurn?.() ?? Promise.resolve()).catch((err) => void this.onTurnError?.(err));
      await this.turn;
      this.stats.writes++;
      for (; ; ) {
        const at = (0,budget/* nextSlot */.yo)(this.pace, this.now(), this.last);
        const wait = at - this.now();
        if (wait > 0) {
          this.stats.waited_ms += wait;
          await this.sleep(wait);
        }
        if (this.now() - at <= this.tolerance()) {
          this.last = at;
          return at;
        }
        this.stats.late++;
      }
    });
    this.queue = turn.catch(() => void 0);
    return turn;
  }
  tolerance() {
    return (this.pace.slot_ms ?? this.pace.interval_ms) / 2;
  }
}
function writePacerPlugin(pacer) {
  return (octokit) => {
    octokit.hook.wrap("request", async (request, options) => {
      if (isContentCreating(options)) await pacer.take();
      return request(options);
    });
    return {};
  };
}
const SECONDARY = /\bsecondary rate\b/i;
function secondaryResetPlugin(now = Date.now) {
  return (octokit) => {
    octokit.hook.wrap("request", async (request, options) => {
      try {
        return await request(options);
      } catch (err) {
        const headers = err.response?.headers;
        const e = err;
        if (headers && (e.status === 403 || e.status === 429) && SECONDARY.test(String(e.message)) && !headers["retry-after"] && headers["x-ratelimit-remaining"] === "0") {
          const reset = Number(headers["x-ratelimit-reset"]);
          if (Number.isFinite(reset) && reset > 0) headers["retry-after"] = String(Math.max(1, Math.ceil(reset - now() / 1e3)));
        }
        throw err;
      }
    });
    return {};
  };
}
function secondaryLimitMessagePlugin(retries) {
  return (octokit) => {
    octokit.hook.wrap("request", async (request, options) => {
      try {
        return await request(options);
      } catch (err) {
        const e = err;
        if ((e.status === 403 || e.status === 429) && SECONDARY.test(String(e.message)) && isContentCreating(options)) {
          const o = options;
          const why = (
            // The error's request has the URL with its parameters filled in; the options still hold the route's template.
            ` (Fleet: ${(0,secrets/* redact */.E$)(`${o.method ?? ""} ${pathOf(e.request?.url ?? o.url)}`)} was still refused by GitHub's secondary rate limit after ${retries} ${retries === 1 ? "retry" : "retries"}, each after GitHub's retry-after plus jitter. The limit is per account and every leg of the fleet shares it: lower max_parallel, or check what else writes as this account)`
          );
          const data = e.response?.data;
          if (data && typeof data.message === "string" && !data.message.includes("(Fleet:")) data.message = `${data.message.split("\n")[0]}${why}`;
          if (typeof e.message === "string" && !e.message.includes("(Fleet:")) e.message = `${e.message.split("\n")[0]}${why}`;
        }
        throw err;
      }
    });
    return {};
  };
}


;// CONCATENATED MODULE: ./.build/src/github/octokit.js







const stderrLogger = {
  info: () => {
  },
  warn: (m) => process.stderr.write(`${(0,secrets/* redact */.E$)(m)}
`),
  error: (m) => process.stderr.write(`${(0,secrets/* redact */.E$)(m)}
`)
};
function resolveApiUrl(apiUrl) {
  return trimSlash(apiUrl ?? process.env.GITHUB_API_URL ?? "https://api.github.com");
}
function graphqlUrlFor(apiUrl) {
  const base = trimSlash(apiUrl);
  return /\/api\/v3$/.test(base) ? base.replace(/\/api\/v3$/, "/api/graphql") : `${base}/graphql`;
}
function resolveGraphqlUrl(opts) {
  if (opts.graphqlUrl) return trimSlash(opts.graphqlUrl);
  if (opts.apiUrl === void 0 && process.env.GITHUB_GRAPHQL_URL) return trimSlash(process.env.GITHUB_GRAPHQL_URL);
  return graphqlUrlFor(resolveApiUrl(opts.apiUrl));
}
function serverUrlFor(apiUrl) {
  const base = trimSlash(apiUrl);
  if (/\/api\/v3$/.test(base)) return base.replace(/\/api\/v3$/, "");
  try {
    const u = new URL(base);
    if (u.hostname === "api.github.com") return `${u.protocol}//github.com`;
    if (/^api\.[^.]+\.ghe\.com$/.test(u.hostname)) return `${u.protocol}//${u.hostname.slice(4)}`;
    return u.origin;
  } catch {
    return base;
  }
}
function basicCredential(token) {
  return Buffer.from(`x-access-token:${token}`, "utf8").toString("base64");
}
const masked = /* @__PURE__ */ new Set();
function maskToken(token) {
  const basic = basicCredential(token);
  (0,secrets/* registerSecret */.cl)(token);
  (0,secrets/* registerSecret */.cl)(basic);
  if (process.env.GITHUB_ACTIONS === "true" && !masked.has(token)) {
    masked.add(token);
    for (const form of /* @__PURE__ */ new Set([...(0,secrets/* encodedForms */.wV)(token), basic])) core/* setSecret */.Pq(form);
  }
}
const CLIENT_ERRORS = Array.from({ length: 100 }, (_, i) => 400 + i);
function trimSlash(url) {
  return url.replace(/\/+$/, "");
}
function describe(options) {
  let path = (options.url ?? "").replace(/\{([^}]+)\}/g, (whole, key) => {
    const v = options[key];
    return typeof v === "string" || typeof v === "number" ? encodeURIComponent(String(v)) : whole;
  });
  try {
    path = new URL(path, "http://x").pathname;
  } catch {
  }
  return (0,secrets/* redact */.E$)(`${options.method ?? "GET"} ${path}`);
}
function attemptLogger(logger) {
  const plugin = (octokit) => {
    octokit.hook.wrap("request", async (request, options) => {
      try {
        return await request(options);
      } catch (err) {
        const status = err.status ?? 0;
        if (status >= 500 || status === 0) {
          const o = options;
          const attempt = (o.request?.retryCount ?? 0) + 1;
          logger.warn(
            `GitHub: ${describe(o)} failed on attempt ${attempt} (${status || "network error"}: ${(0,secrets/* redact */.E$)(String(err.message ?? err)).slice(0, 200)})`
          );
        }
        throw err;
      }
    });
    return {};
  };
  return plugin;
}
function renewingAuth(credential) {
  const dateOf = (r) => r.headers?.date ?? r.response?.headers?.date;
  return () => Object.assign(async () => ({ type: "token", tokenType: "installation", token: credential.current() }), {
    hook: async (request, route, parameters) => {
      const endpoint = request.endpoint.merge(route, parameters);
      const send = async (token2) => {
        endpoint.headers.authorization = `token ${token2}`;
        try {
          const res = await request(endpoint);
          credential.observe(dateOf(res));
          return res;
        } catch (err) {
          credential.observe(dateOf(err));
          throw err;
        }
      };
      const token = await credential.fresh();
      try {
        return await send(token);
      } catch (err) {
        if (err.status !== 401) throw err;
        const renewed = await credential.renew(token);
        if (!renewed) throw err;
        return send(renewed);
      }
    }
  });
}
function createOctokit(opts) {
  if (!opts.token) throw new Error("a GitHub token is required");
  maskToken(opts.token);
  const logger = opts.logger ?? stderrLogger;
  const baseUrl = resolveApiUrl(opts.apiUrl);
  const graphqlUrl = resolveGraphqlUrl(opts);
  const maxRetries = opts.maxRetries ?? 3;
  const maxWait = opts.maxRetryAfterSeconds ?? 3600;
  const base = opts.retryAfterBaseValue ?? 1e3;
  const random = opts.random ?? Math.random;
  const onLimit = (kind) => async (retryAfter, options, _octokit, retryCount) => {
    const what = describe(options);
    if (retryCount >= maxRetries) {
      logger.warn(`GitHub ${kind} rate limit on ${what}: giving up after ${retryCount} ${retryCount === 1 ? "retry" : "retries"}`);
      return false;
    }
    if (retryAfter > maxWait) {
      logger.warn(`GitHub ${kind} rate limit on ${what}: GitHub asks to wait ${retryAfter}s, more than the ${maxWait}s Fleet may wait; giving up`);
      return false;
    }
    const jitterMs = Math.floor(random() * Math.max(base, retryAfter * base / 2));
    logger.warn(`GitHub ${kind} rate limit on ${what}: retry ${retryCount + 1}/${maxRetries} in ${retryAfter}s (+${jitterMs} ms jitter)`);
    await new Promise((r) => setTimeout(r, jitterMs));
    return true;
  };
  const pacing = opts.pacing;
  const groups = pacing ? {
    write: new light.Group({ maxConcurrent: 1, minTime: pacing.writeMs ?? 1e3 }),
    search: new light.Group({ maxConcurrent: 1, minTime: pacing.searchMs ?? 2e3 }),
    notifications: new light.Group({ maxConcurrent: 1, minTime: pacing.notificationsMs ?? 3e3 })
  } : {};
  const octokit = (0,github/* getOctokit */.Q)(
    opts.token,
    {
      ...opts.credential ? { authStrategy: renewingAuth(opts.credential) } : {},
      baseUrl,
      userAgent: opts.userAgent ?? "fleet",
      ...opts.fetch ? { request: { fetch: opts.fetch } } : {},
      log: { debug: () => {
      }, info: () => {
      }, warn: (m) => logger.warn((0,secrets/* redact */.E$)(m)), error: (m) => logger.error((0,secrets/* redact */.E$)(m)) },
      throttle: {
        onRateLimit: onLimit("primary"),
        onSecondaryRateLimit: onLimit("secondary"),
        retryAfterBaseValue: base,
        ...groups
      },
      // plugin-retry retries every status >= 400 it is not told to leave alone; a 4xx is an answer
      // (405 not mergeable, 409 head moved, …), and 403/429 rate limits belong to the throttling
      // plugin, which counts its own retries. So: 5xx and network errors only.
      retry: { retries: opts.serverErrorRetries ?? 3, retryAfterBaseValue: base, doNotRetry: CLIENT_ERRORS }
    },
    attemptLogger(logger),
    secondaryResetPlugin(),
    ...opts.writePace ? [
      writePacerPlugin(
        new WritePacer(
          opts.writePace,
          void 0,
          void 0,
          opts.writePace.waitTurn,
          (err) => logger.warn(`Write budget: waiting for this leg's slots failed (${err.message}); writing in them now`)
        )
      )
    ] : [],
    plugin_throttling_dist_bundle/* throttling */.A,
    dist_bundle/* retry */.L,
    secondaryLimitMessagePlugin(maxRetries)
  );
  octokit.hook.wrap("request", (request, options) => {
    options.request = { ...options.request };
    return request(options);
  });
  if (graphqlUrl !== graphqlUrlFor(baseUrl)) {
    octokit.graphql = octokit.graphql.defaults({ baseUrl: graphqlUrl, url: graphqlUrl });
  }
  return octokit;
}
const scopesRead = /* @__PURE__ */ new WeakMap();
function classicScopes(octokit) {
  let read = scopesRead.get(octokit);
  if (!read) {
    read = octokit.request("GET /rate_limit").then((res) => {
      const header = res.headers["x-oauth-scopes"];
      return header === void 0 ? void 0 : header.split(",").map((s) => s.trim()).filter(Boolean);
    });
    scopesRead.set(octokit, read);
    read.catch(() => scopesRead.delete(octokit));
  }
  return read;
}



/***/ })

};
