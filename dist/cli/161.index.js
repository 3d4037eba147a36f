export const id = 161;
export const ids = [161];
export const modules = {

/***/ 2161:
/***/ ((__unused_webpack___webpack_module__, __webpack_exports__, __webpack_require__) => {

// ESM COMPAT FLAG
__webpack_require__.r(__webpack_exports__);

// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  basicCredential: () => (/* binding */ basicCredential),
  createOctokit: () => (/* binding */ createOctokit),
  graphqlUrlFor: () => (/* binding */ graphqlUrlFor),
  maskToken: () => (/* binding */ maskToken),
  resolveApiUrl: () => (/* binding */ resolveApiUrl),
  resolveGraphqlUrl: () => (/* binding */ resolveGraphqlUrl),
  serverUrlFor: () => (/* binding */ serverUrlFor)
});

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
// EXTERNAL MODULE: ./.build/src/local/git.js
var git = __webpack_require__(4335);
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
            ` (Fleet: ${(0,git/* redact */.E$)(`${o.method ?? ""} ${pathOf(e.request?.url ?? o.url)}`)} was still refused by GitHub's secondary rate limit after ${retries} ${retries === 1 ? "retry" : "retries"}, each after GitHub's retry-after plus jitter. The limit is per account and every leg of the fleet shares it: lower max_parallel, or check what else writes as this account)`
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
  warn: (m) => process.stderr.write(`${(0,git/* redact */.E$)(m)}
`),
  error: (m) => process.stderr.write(`${(0,git/* redact */.E$)(m)}
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
  (0,git/* registerSecret */.cl)(token);
  (0,git/* registerSecret */.cl)(basic);
  if (process.env.GITHUB_ACTIONS === "true" && !masked.has(token)) {
    masked.add(token);
    for (const form of /* @__PURE__ */ new Set([...(0,git/* encodedForms */.wV)(token), basic])) core/* setSecret */.Pq(form);
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
  return (0,git/* redact */.E$)(`${options.method ?? "GET"} ${path}`);
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
          logger.warn(`GitHub: ${describe(o)} failed on attempt ${attempt} (${status || "network error"}: ${(0,git/* redact */.E$)(String(err.message ?? err)).slice(0, 200)})`);
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
      }, warn: (m) => logger.warn((0,git/* redact */.E$)(m)), error: (m) => logger.error((0,git/* redact */.E$)(m)) },
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
    ...opts.writePace ? [writePacerPlugin(new WritePacer(opts.writePace, void 0, void 0, opts.writePace.waitTurn, (err) => logger.warn(`Write budget: waiting for this leg's slots failed (${err.message}); writing in them now`)))] : [],
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



/***/ })

};
