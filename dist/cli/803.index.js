export const id = 803;
export const ids = [803];
export const modules = {

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



/***/ }),

/***/ 1803:
/***/ ((__unused_webpack___webpack_module__, __webpack_exports__, __webpack_require__) => {


// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  githubSetup: () => (/* binding */ githubSetup)
});

// UNUSED EXPORTS: githubClient

// EXTERNAL MODULE: ./.build/src/util/secrets.js
var secrets = __webpack_require__(897);
;// CONCATENATED MODULE: ./.build/src/github/discover.js

const SEARCH_CAP = 1e3;
function topicQuery(topic, owner, ownerType2, includeForks = false) {
  const qualifier = ownerType2 === "Organization" ? "org" : "user";
  return [`topic:${quoteTerm(topic)}`, `${qualifier}:${owner}`, ...includeForks ? ["fork:true"] : []].join(" ");
}
function quoteTerm(term) {
  return /[\s"]/.test(term) ? `"${term.replace(/"/g, "")}"` : term;
}
function describeSource(source) {
  if ("org" in source) return `org ${source.org}`;
  if ("user" in source) return `user ${source.user}`;
  if ("topic" in source) return `topic ${source.topic} of ${source.owner}`;
  return `search "${source.search}"`;
}
function discover_status(err) {
  return err.status ?? 0;
}
function message(err) {
  return (0,secrets/* redact */.E$)(String(err.message ?? err)).split("\n")[0].slice(0, 300);
}
function viewerLogin(ctx) {
  ctx.viewer ??= ctx.octokit.request("GET /user").then((r) => r.data.login).catch(() => null);
  return ctx.viewer;
}
async function ownerType(ctx, owner) {
  try {
    const r = await ctx.octokit.request("GET /users/{username}", { username: owner });
    return r.data.type === "Organization" ? "Organization" : "User";
  } catch (err) {
    return discover_status(err) === 404 ? "missing" : "unknown";
  }
}
async function listAll(ctx, req) {
  const names = [];
  for await (const page of ctx.octokit.paginate.iterator(req.route, req.params)) {
    for (const r of page.data) names.push(r.full_name);
  }
  return names;
}
async function searchAll(ctx, q, problems, label) {
  const names = [];
  let total = 0;
  let incomplete = false;
  for (let page = 1; page <= SEARCH_CAP / 100; page++) {
    const r = await ctx.octokit.request("GET /search/repositories", { q, per_page: 100, page });
    total = r.data.total_count;
    incomplete ||= r.data.incomplete_results;
    for (const item of r.data.items) names.push(item.full_name);
    if (r.data.items.length < 100 || page * 100 >= Math.min(total, SEARCH_CAP)) break;
  }
  if (total > SEARCH_CAP) {
    problems.push(
      `${label}: ${total} repositories match but GitHub's search returns only the first ${SEARCH_CAP}; ${total - Math.min(names.length, SEARCH_CAP)} were not discovered \u2014 narrow the query or split it (by topic, language, created:\u2026)`
    );
  }
  if (incomplete) problems.push(`${label}: GitHub's search timed out and returned incomplete results; run the plan again or narrow the query`);
  return names;
}
async function discoverOne(ctx, source, problems) {
  const label = `github.discover ${describeSource(source)}`;
  try {
    if ("org" in source) {
      try {
        return await listAll(ctx, { kind: "list", route: "GET /orgs/{org}/repos", params: { org: source.org, type: "all", per_page: 100 } });
      } catch (err) {
        if (discover_status(err) !== 404) throw err;
        problems.push(
          `${label}: no organization "${source.org}" (or the token cannot see it)${await ownerType(ctx, source.org) === "User" ? `; ${source.org} is a user: write {user: ${source.org}}` : ""}`
        );
        return [];
      }
    }
    if ("user" in source) {
      const me = await viewerLogin(ctx);
      if (me && me.toLowerCase() === source.user.toLowerCase()) {
        const own = await listAll(ctx, { kind: "list", route: "GET /user/repos", params: { affiliation: "owner", visibility: "all", per_page: 100 } });
        return own.filter((n) => n.toLowerCase().startsWith(`${me.toLowerCase()}/`));
      }
      try {
        return await listAll(ctx, { kind: "list", route: "GET /users/{username}/repos", params: { username: source.user, type: "owner", per_page: 100 } });
      } catch (err) {
        if (discover_status(err) !== 404) throw err;
        problems.push(`${label}: no user "${source.user}"`);
        return [];
      }
    }
    if ("topic" in source) {
      const type = await ownerType(ctx, source.owner);
      if (type === "missing") {
        problems.push(`${label}: no user or organization "${source.owner}"`);
        return [];
      }
      return await searchAll(ctx, topicQuery(source.topic, source.owner, type, ctx.includeForks), problems, label);
    }
    return await searchAll(ctx, source.search, problems, label);
  } catch (err) {
    const s = discover_status(err);
    const hint = s === 422 ? " (GitHub rejected the query)" : s === 401 ? " (the token is not valid)" : s === 403 ? " (forbidden or rate limited)" : "";
    problems.push(`${label}: ${message(err)}${hint}`);
    return [];
  }
}
async function discoverRepos(octokit, sources, opts = {}) {
  const ctx = { octokit, includeForks: opts.allowForks ?? false, viewer: void 0 };
  const problems = [];
  const seen = /* @__PURE__ */ new Map();
  for (const source of sources) {
    for (const name of await discoverOne(ctx, source, problems)) {
      const key = name.toLowerCase();
      if (!seen.has(key)) seen.set(key, name);
    }
  }
  const repos = [...seen.values()].sort((a, b) => {
    const x = a.toLowerCase();
    const y = b.toLowerCase();
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return { repos, problems };
}


// EXTERNAL MODULE: ./.build/src/core/fence.js
var core_fence = __webpack_require__(7238);
// EXTERNAL MODULE: ./.build/src/core/model.js
var model = __webpack_require__(754);
// EXTERNAL MODULE: ./.build/src/core/queue.js
var queue = __webpack_require__(5792);
// EXTERNAL MODULE: ./.build/src/core/validate.js
var validate = __webpack_require__(3173);
// EXTERNAL MODULE: ./.build/src/core/fleet-file.js + 1 modules
var fleet_file = __webpack_require__(5850);
// EXTERNAL MODULE: ./.build/src/core/markdown.js
var markdown = __webpack_require__(9982);
;// CONCATENATED MODULE: ./.build/src/github/queue.js







const SPEC_MAX_BYTES = 64 * 1024;
function statusOf(err) {
  return err.status ?? 0;
}
function messageOf(err) {
  return (0,secrets/* redact */.E$)(String(err.message ?? err)).split("\n")[0].slice(0, 300);
}
function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
const CLOSES = (n) => new RegExp(`\\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\\s*:?\\s+#${n}\\b`, "i");
class IssueQueue {
  constructor(octokit, forge, fleet, opts) {
    this.octokit = octokit;
    this.forge = forge;
    this.fleet = fleet;
    this.opts = opts;
    this.q = fleet.file.source.issues;
    [this.owner, this.repo] = this.q.repo.split("/");
  }
  octokit;
  forge;
  fleet;
  opts;
  owner;
  repo;
  q;
  timelines = /* @__PURE__ */ new Map();
  pulls = /* @__PURE__ */ new Map();
  deps = /* @__PURE__ */ new Map();
  actions = [];
  events = [];
  /** Issues this run closes (every part merged): they keep no in-flight label. */
  closing = /* @__PURE__ */ new Set();
  async run() {
    const base = await this.defaultBranch();
    const settings = this.settings(base);
    let issues = await this.readyIssues();
    let facts = await this.allFacts(issues, base);
    let decision = (0,queue/* decideQueue */.Ah)(facts, settings);
    if (!this.opts.readOnly && this.fleet.file.merge.policy === "when-green") {
      const merged = await this.mergeGreen(decision, facts, base);
      if (merged) {
        this.forget();
        issues = await this.readyIssues();
        facts = await this.allFacts(issues, base);
        decision = (0,queue/* decideQueue */.Ah)(facts, settings);
      }
    }
    const rows = decision.board.map((r) => ({ ...r, waiting_since: waitingSince(r) }));
    const board = () => ({
      repo: this.q.repo,
      label: this.q.label,
      read_at: this.opts.now().toISOString(),
      budget: settings.budget,
      rows,
      actions: [...this.actions],
      events: [...this.events],
      dry_run: this.opts.readOnly
    });
    const lanes = decision.start.map((s) => this.lane(s, facts.find((f) => f.issue.number === s.issue)));
    const commit = async () => {
      if (!this.opts.readOnly) await this.apply(decision, facts);
      this.transitions(decision, issues);
      return { board: board(), events: [...this.events] };
    };
    return { lanes, board: board(), events: [...this.events], problems: [], commit };
  }
  async allFacts(issues, base) {
    const out = [];
    for (const i of issues) out.push(await this.facts(i, base));
    return out;
  }
  forget() {
    this.timelines.clear();
    this.pulls.clear();
    this.deps.clear();
    this.branchesPromise = null;
  }
  settings(base) {
    return {
      name: this.fleet.file.name,
      owns: this.fleet.file.owns,
      label: this.q.label,
      priority: this.q.priority,
      spec_patterns: this.q.spec.patterns,
      needs_person: this.q.labels.needs_person,
      budget: this.opts.budget,
      base
    };
  }
  async defaultBranch() {
    const r = await this.octokit.request("GET /repos/{owner}/{repo}", { owner: this.owner, repo: this.repo });
    return r.data.default_branch;
  }
  /** Open issues with the ready label, oldest first; PRs carrying the label are not issues of the queue. */
  async readyIssues() {
    const out = [];
    const params = {
      owner: this.owner,
      repo: this.repo,
      state: "open",
      labels: this.q.label,
      sort: "created",
      direction: "asc",
      per_page: 100
    };
    for await (const page of this.octokit.paginate.iterator("GET /repos/{owner}/{repo}/issues", params)) {
      for (const i of page.data) {
        if (i.pull_request) continue;
        out.push({
          number: i.number,
          title: i.title,
          body: i.body ?? "",
          labels: i.labels.map((l) => typeof l === "string" ? l : l.name ?? "").filter(Boolean),
          created_at: i.created_at,
          html_url: i.html_url
        });
      }
    }
    return out;
  }
  /**
   * What an issue's timeline says: the PRs of this repository that mention it (each cross-reference, the PR as it is
   * now) and when each label was last taken off.
   */
  timeline(n) {
    let t = this.timelines.get(n);
    if (!t) {
      t = (async () => {
        const prs = /* @__PURE__ */ new Map();
        const unlabeled = /* @__PURE__ */ new Map();
        let reopened = false;
        const own = `/repos/${this.q.repo}`.toLowerCase();
        const params = { owner: this.owner, repo: this.repo, issue_number: n, per_page: 100 };
        for await (const page of this.octokit.paginate.iterator("GET /repos/{owner}/{repo}/issues/{issue_number}/timeline", params)) {
          for (const e of page.data) {
            if (e.event === "unlabeled" && e.label?.name && e.created_at) unlabeled.set(e.label.name.toLowerCase(), e.created_at);
            if (e.event === "reopened") reopened = true;
            const src = e.event === "cross-referenced" ? e.source?.issue : void 0;
            if (!src?.pull_request) continue;
            if (!src.repository_url?.toLowerCase().endsWith(own)) continue;
            const state = src.pull_request.merged_at ? "merged" : src.state === "open" ? "open" : "closed";
            prs.set(src.number, { number: src.number, state, url: src.html_url, created_at: src.created_at, body: src.body ?? "" });
          }
        }
        return { prs: [...prs.values()], unlabeled, reopened };
      })();
      this.timelines.set(n, t);
    }
    return t;
  }
  /** A PR read afresh (cached for the run): its head repository and branch, base, labels and whether it merged. */
  pull(n) {
    let p = this.pulls.get(n);
    if (!p) {
      p = this.octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner: this.owner, repo: this.repo, pull_number: n }).then((r) => ({
        number: n,
        head_repo: r.data.head.repo?.full_name ?? null,
        head_ref: r.data.head.ref,
        head_sha: r.data.head.sha,
        base_ref: r.data.base.ref,
        base_sha: r.data.base.sha,
        merged: Boolean(r.data.merged_at),
        closed_at: r.data.closed_at,
        labels: r.data.labels.map((l) => l.name),
        draft: Boolean(r.data.draft)
      }));
      this.pulls.set(n, p);
    }
    return p;
  }
  marker(lane) {
    return `<!-- fleet:${this.fleet.file.name}:${lane} -->`;
  }
  /**
   * The newest of Fleet's PRs for a work item: its body carries the lane's marker, and (read from the PR itself) its
   * head is a branch of this repository under the item's prefix. A marker alone proves nothing: anyone can copy it
   * into a PR from a fork.
   */
  async itemPr(issue, slot) {
    const prefix = (0,queue/* itemBranchPrefix */.KV)(this.fleet.file.name, issue, slot);
    const candidates = (await this.timeline(issue)).prs.filter((p) => p.body.includes(this.marker((0,queue/* itemLane */.Un)(issue, slot)))).sort((a, b) => a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : b.number - a.number);
    for (const c of candidates) {
      const pull = await this.pull(c.number);
      if (pull.head_repo?.toLowerCase() === this.q.repo.toLowerCase() && pull.head_ref.startsWith(prefix)) return { ...c, pull };
    }
    return null;
  }
  branchesPromise = null;
  /** The queue's branches on the forge (`fleet/<name>/issue-…`), found again by each work item's prefix. */
  branches() {
    this.branchesPromise ??= (async () => {
      const prefix = `fleet/${this.fleet.file.name}/issue-`;
      const r = await this.octokit.request("GET /repos/{owner}/{repo}/git/matching-refs/{ref}", { owner: this.owner, repo: this.repo, ref: `heads/${prefix}` });
      return r.data.map((ref) => ref.ref.slice("refs/heads/".length));
    })();
    return this.branchesPromise;
  }
  async facts(issue, base) {
    const parsed = (0,queue/* parseIssue */.Zp)(issue.body);
    const branches = await this.branches();
    const { unlabeled, reopened } = await this.timeline(issue.number);
    const items = /* @__PURE__ */ new Map();
    for (const slot of parsed.plan?.map((s) => s.slot) ?? [null]) {
      const pr = await this.itemPr(issue.number, slot);
      const prefix = (0,queue/* itemBranchPrefix */.KV)(this.fleet.file.name, issue.number, slot);
      const branch = branches.filter((b) => b.startsWith(prefix)).sort()[0] ?? null;
      const cleared = pr?.state === "closed" && (unlabeled.get(this.q.labels.needs_person.toLowerCase()) ?? "") > (pr.pull.closed_at ?? "");
      const kept = cleared && branch === pr.pull.head_ref ? null : branch;
      const state = pr?.state === "merged" && pr.pull.base_ref !== base ? "closed" : pr?.state;
      items.set(slot ?? "", { branch: kept, pr: pr ? { number: pr.number, state, url: pr.url, created_at: pr.created_at } : null, cleared });
    }
    const deps = /* @__PURE__ */ new Map();
    for (const n of parsed.depends) deps.set(n, await this.dependencyOnce(n, base));
    const spec_text = parsed.spec_file ? await this.specText(parsed.spec_file, base) : null;
    return { issue, parsed, spec_text, deps, items, reopened };
  }
  /**
   * Done only when closed and a merged PR of this repository closes it (a closing keyword, or Fleet's "Part of"
   * for a parallel plan whose issue Fleet closed): the issue's state alone is not enough, nor the closed event's
   * commit_id, which GitHub leaves empty for PR closes (PyGithub/PyGithub#1295).
   */
  /** Several issues naming one dependency read it once a run (forgotten after a merge, as the timelines are). */
  dependencyOnce(n, base) {
    let d = this.deps.get(n);
    if (!d) {
      d = this.dependency(n, base);
      this.deps.set(n, d);
    }
    return d;
  }
  async dependency(n, base) {
    let issue;
    try {
      issue = (await this.octokit.request("GET /repos/{owner}/{repo}/issues/{issue_number}", { owner: this.owner, repo: this.repo, issue_number: n })).data;
    } catch (err) {
      if (statusOf(err) === 404 || statusOf(err) === 410) return { done: false, why: `#${n} does not exist in ${this.q.repo}` };
      throw err;
    }
    if (issue.pull_request) return { done: false, why: `#${n} is a pull request, not an issue` };
    if (issue.state === "open") return { done: false, why: `#${n} is open` };
    if (issue.state_reason && issue.state_reason !== "completed") return { done: false, why: `#${n} was closed as ${issue.state_reason.replace("_", " ")}` };
    for (const p of (await this.timeline(n)).prs) {
      if (p.state !== "merged" || !(CLOSES(n).test(p.body) || p.body.includes(`Part of #${n} `))) continue;
      const pull = await this.pull(p.number);
      if (pull.merged && pull.base_ref === base) return { done: true, why: `closed by #${p.number}` };
    }
    return { done: false, why: `#${n} was closed without a merged PR that closes it` };
  }
  async specText(file, base) {
    try {
      const r = await this.octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
        owner: this.owner,
        repo: this.repo,
        path: file.replace(/^\.?\//, ""),
        ref: base
      });
      const data = r.data;
      if (data.type !== "file" || data.content === void 0) return "missing";
      return Buffer.from(data.content, "base64").subarray(0, SPEC_MAX_BYTES).toString("utf8");
    } catch (err) {
      if (statusOf(err) === 404) return "missing";
      throw err;
    }
  }
  /**
   * Merges the queue's open PRs that are green, under the fleet's merge method. Only issues the decision has not
   * held: a gate, the needs-person label or a closed PR of the issue stops its merges too. Each PR only at a head
   * Fleet made (its commit carries the lane's trailer, on the item's branch of this repository), whose files keep to
   * the lane's fence, and not while it carries the review hand-off or needs-person label. Returns how many merged.
   */
  async mergeGreen(d, facts, base) {
    let merged = 0;
    for (const row of d.board) {
      if (row.state !== "IN_FLIGHT" && row.state !== "READY") continue;
      const f = facts.find((x) => x.issue.number === row.issue);
      for (const item of row.items) {
        if (item.state !== "open-pr") continue;
        const lane = (0,queue/* itemLane */.Un)(row.issue, item.slot);
        const owns = item.slot ? item.owns : this.fleet.file.owns;
        const result = await this.mergeOne(f.issue, lane, item.pr.number, owns, base);
        this.actions.push(`#${row.issue} ${lane}: ${result.detail}`);
        if (result.status === "merged") {
          merged++;
          this.events.push({ issue: row.issue, from: "IN_FLIGHT", to: "MERGED", detail: result.detail });
          if (!item.slot) await this.removeLabel(row.issue, this.q.labels.in_flight);
        }
      }
    }
    return merged;
  }
  async mergeOne(issue, lane, number, owns, base) {
    const pull = await this.pull(number);
    if (pull.base_ref !== base) return { status: "blocked", detail: `PR #${number} targets ${pull.base_ref}, not ${base}: not merged` };
    const held = [this.fleet.file.review?.label ?? fleet_file/* REVIEW_DEFAULTS */.O6.label, this.q.labels.needs_person].find(
      (l) => pull.labels.some((x) => x.toLowerCase() === l.toLowerCase())
    );
    if (held) return { status: "blocked", detail: `PR #${number} is labelled "${held}": a person merges it` };
    const head = pull.head_sha;
    const commit = (await this.octokit.request("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", { owner: this.owner, repo: this.repo, commit_sha: head })).data;
    if (!new RegExp(`^Fleet-Lane: ${lane.replace(/\./g, "\\.")}$`, "m").test(commit.message) || !new RegExp(`^Fleet-Id: ${escapeRe(this.fleet.file.name)}$`, "m").test(commit.message)) {
      return { status: "blocked", detail: `PR #${number}'s head ${head.slice(0, 12)} is not a commit Fleet made for ${lane}: a person merges it` };
    }
    const spec = this.laneSpec(issue, lane, owns, pull.head_ref);
    const baseNow = await this.forge.branchHead(spec, base) ?? pull.base_sha;
    const files = await this.forge.changedFiles(spec, baseNow, head);
    if (files === null) return { status: "blocked", detail: `PR #${number}: the files it changes could not be read, so its fence could not be checked` };
    const fence = (0,core_fence/* checkFence */.AH)(files, spec.owns, spec.never);
    if (!fence.ok) return { status: "blocked", detail: `PR #${number} is outside its fence (${fence.message}): a person merges it` };
    const record = {
      ...(0,model/* newLaneRecord */.Y_)({ repo: this.q.repo, lane, wave: null, branch: pull.head_ref, depends_on: [] }),
      commit: head,
      pr_number: number,
      base_branch: base
    };
    try {
      return await this.forge.merge(spec, record, this.fleet.file.merge.method);
    } catch (err) {
      return { status: "failed", detail: `PR #${number}: ${messageOf(err)}` };
    }
  }
  laneSpec(issue, lane, owns, branch, spec = null, slot = null) {
    const ff = this.fleet.file;
    return {
      id: lane,
      repo: this.q.repo,
      repo_kind: "github",
      title: slot ? `${(0,queue/* neutralTitle */.WN)(issue.title)} (#${issue.number}, slot ${slot})` : `${(0,queue/* neutralTitle */.WN)(issue.title)} (#${issue.number})`,
      directive: ff.directive,
      run: ff.run,
      checks: ff.checks,
      depends_on: [],
      owns,
      never: [...new Set(ff.never)],
      exclusive: false,
      branch,
      base: void 0,
      index: -1,
      review: (0,validate/* resolveReview */.pJ)(ff.review, void 0, ff.agent !== void 0 && ff.run === void 0),
      issue: { number: issue.number, slot, url: issue.html_url, title: issue.title, body: issue.body, spec }
    };
  }
  lane(s, f) {
    const spec = f.parsed.spec_file && typeof f.spec_text === "string" && f.spec_text !== "missing" ? { path: f.parsed.spec_file, text: f.spec_text } : null;
    return this.laneSpec(f.issue, s.lane, s.slot ? s.owns : this.fleet.file.owns, s.branch, spec, s.slot);
  }
  // ---- keeping GitHub in step with the decision
  async apply(d, facts) {
    const byNumber = new Map(facts.map((f) => [f.issue.number, f]));
    for (const n of d.close) this.closing.add(n);
    const wanted = /* @__PURE__ */ new Set();
    const plans = d.board.map((row) => ({ row, change: this.labelChange(row, byNumber.get(row.issue).issue) }));
    for (const { change } of plans) for (const l of change.add) wanted.add(l);
    await this.ensureLabels([...wanted]);
    for (const { row, change } of plans) {
      const issue = byNumber.get(row.issue).issue;
      for (const l of change.add) await this.addLabel(issue.number, l);
      for (const l of change.remove) await this.removeLabel(issue.number, l);
      if (row.state === "NO_SPEC") await this.noSpec(issue, row.reason);
    }
    for (const n of d.close) await this.closeIssue(n, d.board.find((r) => r.issue === n));
  }
  /** The labels an issue should carry for its state: in-flight and blocked are Fleet's; needs-person is only ever added. */
  labelChange(row, issue) {
    const { in_flight, blocked, needs_person } = this.q.labels;
    const has = (l) => issue.labels.some((x) => x.toLowerCase() === l.toLowerCase());
    const want = /* @__PURE__ */ new Set();
    const handOff = row.state === "BLOCKED_PERSON" && row.items.some((i) => i.state === "closed-pr");
    if (row.state === "IN_FLIGHT" || row.started.length || row.items.some((i) => i.state === "open-pr")) want.add(in_flight);
    if (row.state === "BLOCKED_WORK" || row.state === "BLOCKED_PERSON" && !handOff && !has(needs_person)) want.add(blocked);
    if (handOff) want.add(needs_person);
    if (this.closing.has(row.issue)) want.delete(in_flight);
    const add = [...want].filter((l) => !has(l));
    const remove = [in_flight, blocked].filter((l) => !want.has(l) && has(l));
    return { add, remove };
  }
  async ensureLabels(names) {
    const colors = { [this.q.labels.in_flight]: "fbca04", [this.q.labels.blocked]: "c5def5", [this.q.labels.needs_person]: "d93f0b" };
    for (const name of names) {
      if (await ensureLabel(this.octokit, this.owner, this.repo, name, colors[name] ?? "ededed")) this.actions.push(`created label "${name}"`);
    }
  }
  async addLabel(issue, name) {
    await this.octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", {
      owner: this.owner,
      repo: this.repo,
      issue_number: issue,
      labels: [name]
    });
    this.actions.push(`#${issue}: labelled "${name}"`);
  }
  async removeLabel(issue, name) {
    try {
      await this.octokit.request("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", {
        owner: this.owner,
        repo: this.repo,
        issue_number: issue,
        name
      });
      this.actions.push(`#${issue}: label "${name}" removed`);
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  }
  /** One comment per NO_SPEC issue, ever: a hidden marker finds it on every later run. */
  async noSpec(issue, reason) {
    if (this.q.spec.comment) {
      const marker = `<!-- fleet:${this.fleet.file.name}:no-spec -->`;
      if (!await this.hasComment(issue.number, marker)) {
        const body = [
          marker,
          `Fleet's issue queue (**${this.fleet.file.name}**) cannot start this issue: ${(0,markdown/* codeSpan */.SS)(reason)}.`,
          "",
          'Add what done looks like (an "Acceptance criteria" or "Done when" section, a checklist, or steps to reproduce), or a `Spec: path/to/spec.md` line naming a file on the default branch. The next scheduled run picks it up.',
          ...this.q.spec.unlabel ? ["", `The \`${this.q.label}\` label is taken off until then: put it back once the issue says what done is.`] : []
        ].join("\n");
        await this.octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
          owner: this.owner,
          repo: this.repo,
          issue_number: issue.number,
          body
        });
        this.actions.push(`#${issue.number}: commented what its spec lacks`);
        this.events.push({ issue: issue.number, from: null, to: "NO_SPEC", detail: "commented what its spec lacks" });
      }
    }
    if (this.q.spec.unlabel) await this.removeLabel(issue.number, this.q.label);
  }
  async hasComment(issue, marker) {
    for await (const page of this.octokit.paginate.iterator("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", {
      owner: this.owner,
      repo: this.repo,
      issue_number: issue,
      per_page: 100
    })) {
      if (page.data.some((c) => (c.body ?? "").includes(marker))) return true;
    }
    return false;
  }
  /** Every slot of a parallel plan merged: the issue is done, and closed by Fleet with the PRs named. */
  async closeIssue(n, row) {
    const prs = row.items.map((i) => `#${i.pr?.number}`).join(", ");
    const marker = `<!-- fleet:${this.fleet.file.name}:closed -->`;
    if (!await this.hasComment(n, marker)) {
      await this.octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
        owner: this.owner,
        repo: this.repo,
        issue_number: n,
        body: `${marker}
Every part of this issue has merged (${prs}): closed by Fleet's issue queue.`
      });
    }
    await this.octokit.request("PATCH /repos/{owner}/{repo}/issues/{issue_number}", {
      owner: this.owner,
      repo: this.repo,
      issue_number: n,
      state: "closed",
      state_reason: "completed"
    });
    this.actions.push(`#${n}: closed, every part merged (${prs})`);
    this.events.push({ issue: n, from: "IN_FLIGHT", to: "CLOSED", detail: `every part merged (${prs})` });
  }
  /** An issue's state before this run, as far as the labels Fleet keeps tell it. */
  transitions(d, issues) {
    const { in_flight, blocked, needs_person } = this.q.labels;
    for (const row of d.board) {
      const labels = (issues.find((i) => i.number === row.issue)?.labels ?? []).map((l) => l.toLowerCase());
      const from = labels.includes(in_flight.toLowerCase()) ? "IN_FLIGHT" : labels.includes(needs_person.toLowerCase()) ? "BLOCKED_PERSON" : labels.includes(blocked.toLowerCase()) ? "BLOCKED" : null;
      const same = from === row.state || from === "BLOCKED" && row.state.startsWith("BLOCKED");
      const unlabelledWait = from === null && (row.state === "READY" || row.state === "NO_SPEC");
      if (!same && !unlabelledWait || row.started.length)
        this.events.push({ issue: row.issue, from, to: row.state, detail: row.started.length ? `started ${row.started.join(", ")}` : row.reason });
    }
  }
}
function waitingSince(row) {
  const open = row.items.filter((i) => i.pr?.state === "open").map((i) => i.pr.created_at).sort();
  return open[0] ?? row.created_at;
}
async function runIssueQueue(octokit, forge, fleet, opts) {
  const q = fleet.file.source.issues;
  try {
    const out = await new IssueQueue(octokit, forge, fleet, opts).run();
    return { ...out, commit: () => out.commit().catch((err) => Promise.reject(new Error(`source.issues ${q.repo}: ${messageOf(err)}`))) };
  } catch (err) {
    const s = statusOf(err);
    const hint = s === 404 ? " (no such repository, or the token cannot see it)" : s === 403 ? " (the token lacks issues: write or pull-requests: write, or is rate limited)" : "";
    return {
      lanes: [],
      board: {
        repo: q.repo,
        label: q.label,
        read_at: opts.now().toISOString(),
        budget: opts.budget,
        rows: [],
        actions: [],
        events: [],
        dry_run: opts.readOnly
      },
      events: [],
      problems: [`source.issues ${q.repo}: ${messageOf(err)}${hint}`],
      commit: () => Promise.reject(new Error("the issue queue could not be read"))
    };
  }
}
const HAND_OFF = /* @__PURE__ */ new Set([
  "directive-failed",
  "directive-timeout",
  "check-failed",
  "fence-violation",
  "ci-failed",
  "code-review-needed",
  "budget-exceeded"
]);
function handOffReason(lane) {
  if (lane.status === "failed" && lane.error && HAND_OFF.has(lane.error.class)) return `${lane.error.class}: ${lane.error.message}`;
  if (lane.status === "completed" && lane.phase === "no-op") return "the lane changed nothing";
  return null;
}
async function settleQueue(octokit, fleet, manifest) {
  const q = fleet.file.source?.issues;
  if (!q || !manifest.queue || manifest.dry_run) return [];
  const [owner, repo] = q.repo.split("/");
  const actions = [];
  let labelReady = false;
  for (const lane of manifest.lanes) {
    const m = /^issue-(\d+)(\.)?/.exec(lane.lane);
    if (!m) continue;
    const issue_number = Number(m[1]);
    if (lane.merge_status === "merged" && !m[2]) {
      try {
        await octokit.request("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", { owner, repo, issue_number, name: q.labels.in_flight });
        actions.push(`#${issue_number}: merged; label "${q.labels.in_flight}" removed`);
      } catch (err) {
        if (statusOf(err) !== 404) actions.push(`#${issue_number}: could not remove "${q.labels.in_flight}": ${messageOf(err)}`);
      }
      continue;
    }
    const why = handOffReason(lane);
    if (!why) continue;
    try {
      if (!labelReady) {
        await ensureLabel(octokit, owner, repo, q.labels.needs_person, "d93f0b");
        labelReady = true;
      }
      const current = (await octokit.request("GET /repos/{owner}/{repo}/issues/{issue_number}", { owner, repo, issue_number })).data;
      if (!current.labels.some((l) => (typeof l === "string" ? l : l.name)?.toLowerCase() === q.labels.needs_person.toLowerCase())) {
        await octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", { owner, repo, issue_number, labels: [q.labels.needs_person] });
      }
      const marker = `<!-- fleet:${fleet.file.name}:handoff:${manifest.fleet_id}:${lane.lane} -->`;
      let seen = false;
      for await (const page of octokit.paginate.iterator("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", {
        owner,
        repo,
        issue_number,
        per_page: 100
      })) {
        if (page.data.some((c) => (c.body ?? "").includes(marker))) seen = true;
      }
      if (!seen) {
        const body = [
          marker,
          `Fleet's issue queue (**${fleet.file.name}**, run \`${manifest.fleet_id}\`) could not finish lane \`${lane.lane}\`: ${(0,markdown/* codeSpan */.SS)((0,secrets/* redact */.E$)(why).slice(0, 500))}.`,
          "",
          `The issue is labelled \`${q.labels.needs_person}\` so that the queue does not start it again on every run. Remove the label to let it try again (after changing the issue if that is what it needs).`
        ].join("\n");
        await octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", { owner, repo, issue_number, body });
      }
      actions.push(`#${issue_number} ${lane.lane}: handed to a person (${why.split(":")[0]})`);
    } catch (err) {
      actions.push(`#${issue_number} ${lane.lane}: could not hand the issue to a person: ${messageOf(err)}`);
    }
  }
  return actions;
}
async function ensureLabel(octokit, owner, repo, name, color) {
  try {
    await octokit.request("GET /repos/{owner}/{repo}/labels/{name}", { owner, repo, name });
    return false;
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
    try {
      await octokit.request("POST /repos/{owner}/{repo}/labels", { owner, repo, name, color, description: "Set by Fleet's issue queue" });
      return true;
    } catch (e) {
      if (statusOf(e) !== 422) throw e;
      return false;
    }
  }
}


// EXTERNAL MODULE: ./.build/src/core/prs.js
var prs = __webpack_require__(2240);
;// CONCATENATED MODULE: ./.build/src/github/ci.js
const FAILED_CONCLUSIONS = /* @__PURE__ */ new Set(["failure", "cancelled", "timed_out", "action_required", "startup_failure", "stale"]);
const GREEN_CONCLUSIONS = /* @__PURE__ */ new Set(["success", "neutral", "skipped"]);
function latestPerName(runs) {
  const byName = /* @__PURE__ */ new Map();
  for (const run of runs) {
    const prev = byName.get(run.name);
    if (!prev || newer(run, prev)) byName.set(run.name, run);
  }
  return [...byName.values()].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}
function newer(a, b) {
  const ta = a.started_at ? Date.parse(a.started_at) : NaN;
  const tb = b.started_at ? Date.parse(b.started_at) : NaN;
  if (!Number.isNaN(ta) && !Number.isNaN(tb) && ta !== tb) return ta > tb;
  return a.id > b.id;
}
function latestPerContext(statuses) {
  const byContext = /* @__PURE__ */ new Map();
  for (const s of statuses) {
    const prev = byContext.get(s.context);
    if (!prev) {
      byContext.set(s.context, s);
      continue;
    }
    const ts = s.updated_at ? Date.parse(s.updated_at) : 0;
    const tp = prev.updated_at ? Date.parse(prev.updated_at) : 0;
    if (ts > tp || ts === tp && (s.id ?? 0) > (prev.id ?? 0)) byContext.set(s.context, s);
  }
  return [...byContext.values()];
}
function runSignal(run) {
  if (run.status !== "completed") return "pending";
  const c = run.conclusion ?? "";
  if (GREEN_CONCLUSIONS.has(c)) return "success";
  if (FAILED_CONCLUSIONS.has(c)) return "failure";
  return c ? "failure" : "pending";
}
function statusSignal(status) {
  if (status.state === "success") return "success";
  if (status.state === "failure" || status.state === "error") return "failure";
  return "pending";
}
function combineCi(runs, statuses) {
  const signals = [...latestPerName(runs).map(runSignal), ...latestPerContext(statuses).map(statusSignal)];
  if (signals.length === 0) return "none";
  if (signals.includes("failure")) return "failure";
  if (signals.includes("pending")) return "pending";
  return "success";
}
function missingRequired(runs, statuses, required) {
  const seen = /* @__PURE__ */ new Set([...runs.map((r) => r.name), ...statuses.map((s) => s.context)]);
  return [...new Set(required)].filter((name) => !seen.has(name));
}
function combineRequired(runs, statuses, required) {
  const conclusion = combineCi(runs, statuses);
  if (conclusion === "failure") return conclusion;
  return missingRequired(runs, statuses, required).length ? "pending" : conclusion;
}
function clip(text, maxLines, maxChars) {
  if (!text) return "";
  const lines = text.replace(/\r\n/g, "\n").split("\n").map((l) => l.trimEnd()).filter((l) => l.trim());
  let out = lines.slice(0, maxLines).join("\n");
  if (out.length > maxChars) out = `${out.slice(0, maxChars - 1)}\u2026`;
  else if (lines.length > maxLines) out += "\n\u2026";
  return out;
}
function indent(text) {
  return text.split("\n").map((l) => `  ${l}`).join("\n");
}
function describeFailures(runs, statuses, maxChars = 4e3) {
  const blocks = [];
  for (const run of latestPerName(runs)) {
    if (runSignal(run) !== "failure") continue;
    const lines = [`\u2717 ${run.name}: ${run.conclusion ?? run.status}`];
    const title = clip(run.output?.title, 1, 200);
    const summary = clip(run.output?.summary, 6, 600);
    if (title) lines.push(indent(title));
    if (summary && summary !== title) lines.push(indent(summary));
    const url = run.details_url || run.html_url;
    if (url) lines.push(indent(url));
    blocks.push(lines.join("\n"));
  }
  for (const s of latestPerContext(statuses)) {
    if (statusSignal(s) !== "failure") continue;
    const lines = [`\u2717 ${s.context}: ${s.state}`];
    const desc = clip(s.description, 2, 300);
    if (desc) lines.push(indent(desc));
    if (s.target_url) lines.push(indent(s.target_url));
    blocks.push(lines.join("\n"));
  }
  let out = "";
  for (const [i, block] of blocks.entries()) {
    const next = out ? `${out}
${block}` : block;
    if (next.length > maxChars) {
      out += `${out ? "\n" : ""}\u2026 and ${blocks.length - i} more failing check${blocks.length - i === 1 ? "" : "s"}`;
      break;
    }
    out = next;
  }
  return out;
}
function describePending(runs, statuses, required = []) {
  const names = [
    ...latestPerName(runs).filter((r) => runSignal(r) === "pending").map((r) => `${r.name} (${r.status})`),
    ...latestPerContext(statuses).filter((s) => statusSignal(s) === "pending").map((s) => `${s.context} (pending)`),
    ...missingRequired(runs, statuses, required).map((name) => `${name} (required, not reported)`)
  ];
  if (!names.length) return "";
  const shown = names.slice(0, 10).join(", ");
  return `still running: ${shown}${names.length > 10 ? ` and ${names.length - 10} more` : ""}`;
}


// EXTERNAL MODULE: ./.build/src/github/octokit.js + 1 modules
var github_octokit = __webpack_require__(2161);
// EXTERNAL MODULE: ./.build/src/github/credential.js
var credential = __webpack_require__(2846);
// EXTERNAL MODULE: ./.build/src/util/pool.js
var pool = __webpack_require__(9872);
;// CONCATENATED MODULE: ./.build/src/github/trees.js

class TreeTooLarge extends Error {
}
async function changedPathsBetween(octokit, base, head, opts) {
  const [a, b] = await Promise.all([treeOfCommit(octokit, base, opts), treeOfCommit(octokit, head, opts)]);
  const out = /* @__PURE__ */ new Set();
  await diffTrees(octokit, a, b, "", out, opts);
  return [...out].sort();
}
async function treeOfCommit(octokit, commit, opts) {
  const r = await octokit.request("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", { owner: opts.owner, repo: opts.repo, commit_sha: commit });
  return r.data.tree.sha;
}
async function readTree(octokit, sha, recursive, opts) {
  const r = await octokit.request("GET /repos/{owner}/{repo}/git/trees/{tree_sha}", {
    owner: opts.owner,
    repo: opts.repo,
    tree_sha: sha,
    ...recursive ? { recursive: "1" } : {}
  });
  const entries = r.data.tree.map((e) => ({ path: e.path ?? "", mode: e.mode ?? "", type: e.type ?? "", sha: e.sha ?? "" }));
  return { truncated: r.data.truncated, entries };
}
function leaves(entries) {
  return new Map(entries.filter((e) => e.type !== "tree").map((e) => [e.path, e]));
}
async function diffTrees(octokit, a, b, prefix, out, opts) {
  if (a === b) return;
  const [ta, tb] = await Promise.all([a ? readTree(octokit, a, true, opts) : null, b ? readTree(octokit, b, true, opts) : null]);
  if (!ta?.truncated && !tb?.truncated) {
    const la2 = leaves(ta?.entries ?? []);
    const lb2 = leaves(tb?.entries ?? []);
    for (const [p, e] of la2) {
      const other = lb2.get(p);
      if (!other || other.sha !== e.sha || other.mode !== e.mode) out.add(prefix + p);
    }
    for (const p of lb2.keys()) if (!la2.has(p)) out.add(prefix + p);
    return;
  }
  const [la, lb] = await Promise.all([a ? readTree(octokit, a, false, opts) : null, b ? readTree(octokit, b, false, opts) : null]);
  if (la?.truncated || lb?.truncated)
    throw new TreeTooLarge(`a folder${prefix ? ` (${prefix.slice(0, -1)})` : ""} has more entries than GitHub lists in one tree`);
  const byName = (t) => new Map((t?.entries ?? []).map((e) => [e.path, e]));
  const ma = byName(la);
  const mb = byName(lb);
  const names = [.../* @__PURE__ */ new Set([...ma.keys(), ...mb.keys()])];
  const descend = [];
  for (const name of names) {
    const ea = ma.get(name);
    const eb = mb.get(name);
    if (ea && eb && ea.sha === eb.sha && ea.mode === eb.mode) continue;
    const subA = ea?.type === "tree" ? ea.sha : null;
    const subB = eb?.type === "tree" ? eb.sha : null;
    if (ea && ea.type !== "tree" || eb && eb.type !== "tree") out.add(prefix + name);
    if (subA || subB) descend.push([subA, subB, `${prefix}${name}/`]);
  }
  await (0,pool/* mapLimit */.s)(descend, opts.concurrency ?? 4, ([x, y, p]) => diffTrees(octokit, x, y, p, out, opts));
}


;// CONCATENATED MODULE: ./.build/src/github/validate.js

const BATCH_SIZE = 100;
const PUSH_PERMISSIONS = /* @__PURE__ */ new Set(["ADMIN", "MAINTAIN", "WRITE"]);
const FIELDS = "nameWithOwner isArchived isDisabled isFork isEmpty viewerPermission defaultBranchRef { name target { oid } }";
function groupRepos(lanes) {
  const byKey = /* @__PURE__ */ new Map();
  for (const lane of lanes) {
    if (lane.repo_kind !== "github") continue;
    const key = lane.repo.toLowerCase();
    let q = byKey.get(key);
    if (!q) {
      const [owner = "", name = ""] = lane.repo.split("/");
      q = { repo: lane.repo, owner, name, bases: [] };
      byKey.set(key, q);
    }
    if (lane.base && !q.bases.includes(lane.base)) q.bases.push(lane.base);
  }
  return [...byKey.values()];
}
function buildBatchQuery(repos) {
  if (repos.length > BATCH_SIZE) throw new RangeError(`a batch holds at most ${BATCH_SIZE} repositories, got ${repos.length}`);
  const decls = [];
  const parts = [];
  const variables = {};
  const out = [];
  repos.forEach((repo, i) => {
    const alias = `r${i}`;
    decls.push(`$o${i}: String!`, `$n${i}: String!`);
    variables[`o${i}`] = repo.owner;
    variables[`n${i}`] = repo.name;
    const baseAliases = repo.bases.map((branch, j) => {
      decls.push(`$b${i}_${j}: String!`);
      variables[`b${i}_${j}`] = `refs/heads/${branch}`;
      return { alias: `b${j}`, branch };
    });
    const refs = baseAliases.map((b, j) => ` ${b.alias}: ref(qualifiedName: $b${i}_${j}) { name target { oid } }`).join("");
    parts.push(`  ${alias}: repository(owner: $o${i}, name: $n${i}) { ${FIELDS}${refs} }`);
    out.push({ alias, repo, baseAliases });
  });
  const query = `query FleetTargets(${decls.join(", ")}) {
${parts.join("\n")}
}`;
  return { query, variables, repos: out };
}
function batches(items, size = BATCH_SIZE) {
  const out = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
function judgeRepo(repo, node, errors, baseAliases, allowForks, forkMode = false) {
  if (!node) {
    const err = errors[0];
    if (!err || err.type === "NOT_FOUND") {
      return { ok: false, reason: "not-found", detail: `${repo} does not exist, or the token cannot see it` };
    }
    if (err.type === "FORBIDDEN") return { ok: false, reason: "forbidden", detail: `${repo}: ${(0,secrets/* redact */.E$)(err.message)}` };
    return { ok: false, reason: "unreachable", detail: `${repo}: ${(0,secrets/* redact */.E$)(err.message)}` };
  }
  if (node.isDisabled) return { ok: false, reason: "disabled", detail: `${node.nameWithOwner} is disabled` };
  if (node.isArchived) return { ok: false, reason: "archived", detail: `${node.nameWithOwner} is archived (read-only)` };
  if (node.isFork && !allowForks)
    return { ok: false, reason: "fork", detail: `${node.nameWithOwner} is a fork (set github.allow_forks: true to include forks)` };
  if (node.isEmpty || !node.defaultBranchRef) return { ok: false, reason: "empty", detail: `${node.nameWithOwner} has no commits yet` };
  if (!forkMode && (!node.viewerPermission || !PUSH_PERMISSIONS.has(node.viewerPermission))) {
    return {
      ok: false,
      reason: "no-push-permission",
      detail: `the token has ${node.viewerPermission ? `${node.viewerPermission.toLowerCase()} permission` : "no permission"} on ${node.nameWithOwner}; it needs write, or fork mode (pr.fork: true, fleet run --fork) to push to a fork instead`
    };
  }
  const missingBases = baseAliases.filter((b) => !node[b.alias]).map((b) => b.branch);
  const heads = {};
  const oid = (ref) => ref?.target?.oid;
  const defaultOid = oid(node.defaultBranchRef);
  if (typeof defaultOid === "string") heads[node.defaultBranchRef.name] = defaultOid;
  for (const b of baseAliases) {
    const at = oid(node[b.alias]);
    if (typeof at === "string") heads[b.branch] = at;
  }
  return { ok: true, nameWithOwner: node.nameWithOwner, defaultBranch: node.defaultBranchRef.name, missingBases, heads };
}
async function runBatch(octokit, batch) {
  try {
    const data = await octokit.graphql(batch.query, batch.variables);
    return { data, errors: [] };
  } catch (err) {
    const e = err;
    if (e.data && typeof e.data === "object" && Array.isArray(e.errors)) return { data: e.data, errors: e.errors };
    const names = batch.repos.map((r) => r.repo.repo);
    const which = names.length > 3 ? `${names.slice(0, 3).join(", ")} and ${names.length - 3} more` : names.join(", ");
    throw new Error((0,secrets/* redact */.E$)(`validating ${which} on GitHub failed: ${e.status ? `${e.status} ` : ""}${String(e.message ?? err).split("\n")[0]}`));
  }
}
async function checkRepos(octokit, lanes, opts) {
  const repos = groupRepos(lanes);
  const verdicts = /* @__PURE__ */ new Map();
  const queue = batches(repos).map((b) => buildBatchQuery(b));
  const width = Math.max(1, opts.concurrency ?? 1);
  let next = 0;
  const worker = async () => {
    while (next < queue.length) {
      const batch = queue[next++];
      const { data, errors } = await runBatch(octokit, batch);
      for (const { alias, repo, baseAliases } of batch.repos) {
        const own = errors.filter((e) => e.path?.[0] === alias);
        verdicts.set(repo.repo.toLowerCase(), judgeRepo(repo.repo, data[alias], own, baseAliases, opts.allowForks ?? false, opts.forkMode ?? false));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, queue.length) }, worker));
  return lanes.map((lane) => {
    if (lane.repo_kind !== "github") {
      return {
        lane: lane.id,
        repo: lane.repo,
        ok: false,
        reason: "not-a-github-repository",
        detail: (0,secrets/* redact */.E$)(`${lane.repo} is not an owner/repo name; forge: github runs GitHub repositories only`)
      };
    }
    const v = verdicts.get(lane.repo.toLowerCase());
    if (!v) return { lane: lane.id, repo: lane.repo, ok: false, reason: "unreachable", detail: `${lane.repo} was not checked` };
    if (!v.ok) return { lane: lane.id, repo: lane.repo, ok: false, reason: v.reason, detail: v.detail };
    if (lane.base && v.missingBases.includes(lane.base)) {
      return { lane: lane.id, repo: lane.repo, ok: false, reason: "no-base-branch", detail: `${v.nameWithOwner} has no branch ${lane.base}` };
    }
    const branch = lane.base ?? v.defaultBranch;
    return { lane: lane.id, repo: lane.repo, ok: true, clone_url: opts.cloneUrl(lane.repo), default_branch: branch, base_commit: v.heads[branch] ?? null };
  });
}


;// CONCATENATED MODULE: ./.build/src/github/forge.js







const COMPARE_CAP = 300;
function filePaths(files) {
  const out = /* @__PURE__ */ new Set();
  for (const f of files) {
    out.add(f.filename);
    if (f.previous_filename) out.add(f.previous_filename);
  }
  return [...out].sort();
}
class GitHubForgeError extends Error {
  constructor(repo, action, status, detail) {
    super((0,secrets/* redact */.E$)(`${repo}: ${action} failed${status ? ` (${status})` : ""}: ${detail}`));
    this.repo = repo;
    this.action = action;
    this.status = status;
    this.name = "GitHubForgeError";
  }
  repo;
  action;
  status;
}
const MERGE_METHODS = ["merge", "squash", "rebase", "fast-forward"];
function forge_statusOf(err) {
  return err.status ?? 0;
}
function forge_messageOf(err) {
  const e = err;
  const data = e.response?.data;
  const detail = data?.errors?.map((x) => typeof x === "string" ? x : x.message).filter(Boolean).join("; ");
  const msg = data?.message ? `${data.message}${detail ? `: ${detail}` : ""}` : String(e.message ?? err);
  return (0,secrets/* redact */.E$)(msg.split("\n")[0].replace(/\s*-\s*https:\/\/docs\.github\.com\S*/g, "")).slice(0, 500);
}
const defaultSleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const CI_FIELDS = "checkSuites(first: 20) { totalCount nodes { checkRuns(first: 50, filterBy: { checkType: LATEST }) { totalCount nodes { databaseId name status conclusion startedAt } } } } status { contexts { context state createdAt } }";
const CI_BATCH = 20;
function ciFromGraphql(answer) {
  const commit = answer?.object;
  const suites = commit?.checkSuites;
  if (!commit || !suites || suites.totalCount > suites.nodes.length) return void 0;
  const runs = [];
  for (const suite of suites.nodes) {
    if (!suite.checkRuns || suite.checkRuns.totalCount > suite.checkRuns.nodes.length) return void 0;
    for (const r of suite.checkRuns.nodes) {
      runs.push({
        id: r.databaseId ?? 0,
        name: r.name,
        status: r.status.toLowerCase(),
        conclusion: r.conclusion?.toLowerCase() ?? null,
        started_at: r.startedAt
      });
    }
  }
  const statuses = (commit.status?.contexts ?? []).map((c) => ({ context: c.context, state: c.state.toLowerCase(), updated_at: c.createdAt }));
  return { runs, statuses };
}
function markerFor(name, lane) {
  return `<!-- fleet:${name}:${lane} -->`;
}
const MARKER = /<!-- fleet:([^:\s]+):([^\s]+) -->/;
class GitHubForge {
  constructor(opts) {
    this.opts = opts;
    if (!opts.token) throw new Error("the GitHub forge needs a token");
    (0,github_octokit/* maskToken */.gg)(opts.token);
    this.octokit = opts.octokit;
    this.logger = opts.logger ?? { info: () => {
    }, warn: () => {
    }, error: () => {
    } };
    this.sleep = opts.sleep ?? defaultSleep;
    this.now = opts.now ?? Date.now;
    this.serverUrl = (opts.serverUrl ?? defaultServerUrl(opts.octokit)).replace(/\/+$/, "");
    this.credential = opts.credential ?? (0,credential/* staticToken */.i)(opts.token);
  }
  opts;
  kind = "github";
  capabilities = { ci: "forge", pullRequests: true, verifiedBy: "github" };
  serverUrl;
  octokit;
  logger;
  sleep;
  now;
  credential;
  /** Default branches, read once per repository (a lane's base when the fleet file names none). */
  defaultBranches = /* @__PURE__ */ new Map();
  /** Required checks per repository and base, for CI verdicts (a merge reads them afresh). */
  requiredSeen = /* @__PURE__ */ new Map();
  /** Each target's fork (pr.fork), once this process made or found it: where lanes push and open PRs from. */
  forks = /* @__PURE__ */ new Map();
  /** Forks lanes' records name (useHeadRepo), by lane: read there, checked first, never pushed to. */
  recorded = /* @__PURE__ */ new Map();
  login;
  workflowAccess;
  /**
   * Before a git command: an App token near its end is renewed first (`force`: git was refused, 401, so renew
   * now). True when git may try again with a new credential; a PAT never changes.
   */
  async refreshCredential(force = false) {
    if (!force) {
      await this.credential.fresh();
      return false;
    }
    const before = this.credential.current();
    const renewed = await this.credential.renew(before);
    return renewed !== null && renewed !== before;
  }
  // -------------------------------------------------------------------------
  // Targets and git
  // -------------------------------------------------------------------------
  checkTargets(lanes) {
    return checkRepos(this.octokit, lanes, {
      allowForks: this.opts.allowForks ?? false,
      forkMode: this.opts.fork !== void 0,
      cloneUrl: (repo) => this.urlOf(repo)
    });
  }
  /**
   * A GitHub App's installation says whether it has the Workflows permission; a classic PAT names its scopes
   * (classicScopes); a fine-grained PAT says neither, and is only found out by a push GitHub refuses.
   */
  workflowWrites() {
    this.workflowAccess ??= (async () => {
      const granted = this.credential.installationPermissions?.();
      if (granted) {
        return {
          allowed: granted.workflows === "write",
          credential: "the GitHub App's installation",
          fix: "give the App the Workflows permission (Read and write) in its settings, then accept the new permission on its installation (docs/github-app.md)"
        };
      }
      const scopes = await (0,github_octokit/* classicScopes */.qV)(this.octokit).catch(() => void 0);
      if (scopes === void 0) return null;
      return {
        allowed: scopes.includes("workflow"),
        credential: "the token (a classic PAT)",
        fix: "give the token the workflow scope, or use a fine-grained PAT or a GitHub App with the Workflows permission (Read and write)"
      };
    })();
    return this.workflowAccess;
  }
  cloneUrl(lane) {
    if (lane.repo_kind !== "github") throw new Error((0,secrets/* redact */.E$)(`${lane.repo} is not an owner/repo name: forge: github runs GitHub repositories only`));
    return this.urlOf(lane.repo);
  }
  urlOf(repo) {
    return `${this.serverUrl}/${repo}.git`;
  }
  async headRepo(lane, opts) {
    if (!this.opts.fork) return void 0;
    const fork = opts.create ? await this.makeFork(lane) : await this.ownFork(lane);
    return fork ? { repo: `${fork.owner}/${fork.repo}`, url: this.urlOf(`${fork.owner}/${fork.repo}`) } : void 0;
  }
  /**
   * A lane's record names the fork its branch was pushed to. A record is a file anyone could have edited, so the fork
   * is believed only for reading about that lane, and only once GitHub says it is a fork of the target owned by whom
   * Fleet forks into (pr.fork_owner, else the token's user); until then, or when it is not, every read about the lane
   * fails, and the lane is not verified. It never decides where anything is pushed or a PR is opened from.
   */
  useHeadRepo(lane, repo) {
    const key = `${lane.id}\0${lane.repo}`.toLowerCase();
    const [owner, name] = repo.split("/");
    if (!owner || !name || repo.toLowerCase() === lane.repo.toLowerCase() || this.recorded.has(key)) return;
    const checked = this.forkOfTarget(lane, owner, name);
    checked.catch(() => void 0);
    this.recorded.set(key, checked);
  }
  async forkOfTarget(lane, owner, repo) {
    const expected = this.opts.fork?.owner ?? await this.tokenLogin(lane);
    let r;
    try {
      r = (await this.octokit.request("GET /repos/{owner}/{repo}", { owner, repo })).data;
    } catch (err) {
      throw this.error(lane, `reading ${owner}/${repo}, the fork the lane's record names`, err);
    }
    if (!isForkOf(r, lane.repo) || r.owner.login.toLowerCase() !== expected.toLowerCase()) {
      throw new GitHubForgeError(
        lane.repo,
        "reading the lane branch",
        0,
        `${owner}/${repo}, named by the lane's record, is not a fork of ${lane.repo} owned by ${expected}`
      );
    }
    return { owner: r.owner.login, repo: r.name };
  }
  /**
   * The repository a lane branch is read in: the fork the lane's record names (useHeadRepo), else the target, or in
   * fork mode the fork this run made or finds (null when there is none: a dry run makes none).
   */
  async branchRepo(lane) {
    const recorded = this.recorded.get(`${lane.id}\0${lane.repo}`.toLowerCase());
    if (recorded) return recorded;
    return this.opts.fork ? this.ownFork(lane) : this.split(lane);
  }
  /**
   * In fork mode, the fork of the lane's target this process made, else the one under the fork owner named as the
   * target (GitHub names a fork otherwise, `-1`, only when the owner has that name taken: only a run that asks for the
   * fork learns that name). Null when there is none.
   */
  async ownFork(lane) {
    const known = this.forks.get(lane.repo.toLowerCase());
    if (known) return known;
    const { repo } = this.split(lane);
    const owner = this.opts.fork?.owner ?? await this.tokenLogin(lane);
    try {
      const r = (await this.octokit.request("GET /repos/{owner}/{repo}", { owner, repo })).data;
      if (!isForkOf(r, lane.repo)) return null;
      const found = { owner: r.owner.login, repo: r.name };
      if (!this.forks.has(lane.repo.toLowerCase())) this.forks.set(lane.repo.toLowerCase(), Promise.resolve(found));
      return found;
    } catch (err) {
      if (forge_statusOf(err) === 404) return null;
      throw this.error(lane, `looking for the fork of ${lane.repo} in ${owner}`, err);
    }
  }
  tokenLogin(lane) {
    this.login ??= this.octokit.request("GET /user").then((r) => r.data.login);
    return this.login.catch((err) => {
      this.login = void 0;
      throw this.error(lane, "reading the token's user (fork mode forks into it; set pr.fork_owner to fork into an organization)", err);
    });
  }
  /**
   * Forks the lane's target, once per run (`POST …/forks` answers with the fork that exists already, under whatever
   * name it has), and waits until the fork shows its default branch: GitHub makes forks asynchronously.
   */
  makeFork(lane) {
    const key = lane.repo.toLowerCase();
    let made = this.forks.get(key);
    if (!made) {
      made = this.forkNow(lane);
      this.forks.set(key, made);
      made.catch(() => this.forks.delete(key));
    }
    return made;
  }
  async forkNow(lane) {
    const { owner, repo } = this.split(lane);
    let fork;
    try {
      const organization = this.opts.fork?.owner;
      const r = await this.octokit.request("POST /repos/{owner}/{repo}/forks", {
        owner,
        repo,
        default_branch_only: true,
        ...organization ? { organization } : {}
      });
      fork = r.data;
    } catch (err) {
      throw this.error(lane, "forking", err);
    }
    if (!isForkOf(fork, lane.repo))
      throw new GitHubForgeError(lane.repo, "forking", 0, `GitHub answered with ${fork.owner.login}/${fork.name}, which is not a fork of ${lane.repo}`);
    const made = { owner: fork.owner.login, repo: fork.name };
    const deadline = this.now() + (this.opts.forkReadyMs ?? 6e4);
    for (let wait = 1e3; ; wait = Math.min(wait * 2, 1e4)) {
      try {
        await this.octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...made, ref: `heads/${fork.default_branch}` });
        return made;
      } catch (err) {
        if (forge_statusOf(err) !== 404 && forge_statusOf(err) !== 409) throw this.error(lane, `reading the new fork ${made.owner}/${made.repo}`, err);
        if (this.now() >= deadline)
          throw new GitHubForgeError(
            lane.repo,
            "forking",
            0,
            `the fork ${made.owner}/${made.repo} showed no branch within ${Math.round((this.opts.forkReadyMs ?? 6e4) / 1e3)} s; run again later`
          );
        await this.sleep(wait);
      }
    }
  }
  /**
   * The token as an `http.<origin>/.extraheader` through GIT_CONFIG_COUNT /
   * GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n: it lives only in the environment
   * of the git commands given it. An empty value first resets extra headers
   * inherited from other configuration (git's documented reset), so a header
   * persisted by actions/checkout is not sent twice. Entries already in the
   * environment are kept. Built per call: a renewed token is in the next git command's header.
   */
  gitEnv() {
    const inherited = Number.parseInt(process.env.GIT_CONFIG_COUNT ?? "0", 10);
    const n = Number.isInteger(inherited) && inherited > 0 ? inherited : 0;
    const key = `http.${new URL(this.serverUrl).origin}/.extraheader`;
    return {
      GIT_CONFIG_COUNT: String(n + 2),
      [`GIT_CONFIG_KEY_${n}`]: key,
      [`GIT_CONFIG_VALUE_${n}`]: "",
      [`GIT_CONFIG_KEY_${n + 1}`]: key,
      [`GIT_CONFIG_VALUE_${n + 1}`]: `AUTHORIZATION: basic ${(0,github_octokit/* basicCredential */.gp)(this.credential.current())}`
    };
  }
  // -------------------------------------------------------------------------
  // Reads
  // -------------------------------------------------------------------------
  async branchHead(lane, branch) {
    const head = await this.branchRepo(lane);
    if (!head) return null;
    const { owner, repo } = head;
    try {
      const r = await this.octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", { owner, repo, ref: `heads/${branch}` });
      return r.data.object.sha;
    } catch (err) {
      if (forge_statusOf(err) === 404 || forge_statusOf(err) === 409) return null;
      throw this.error(lane, `reading branch ${branch}`, err);
    }
  }
  async branchChanges(lane, base, branch) {
    if (/\.\.|:|^-/.test(branch) || !/^[0-9a-f]{40,64}$/.test(base)) return void 0;
    const at = await this.branchRepo(lane);
    if (!at) return void 0;
    let data;
    try {
      data = (await this.octokit.request("GET /repos/{owner}/{repo}/compare/{basehead}", { ...at, basehead: `${base}...${branch}` })).data;
    } catch (err) {
      if ([404, 409, 422].includes(forge_statusOf(err) ?? 0)) return void 0;
      throw this.error(lane, `comparing ${base.slice(0, 12)}...${branch}`, err);
    }
    const commits = data.commits ?? [];
    const files = data.files ?? [];
    if (!commits.length || data.total_commits !== commits.length || files.length >= COMPARE_CAP) return void 0;
    return { head: commits[commits.length - 1].sha, files: filePaths(files) };
  }
  /**
   * Files changed between two commits; a rename gives both paths. One compare
   * call answers for up to 299 files; GitHub's compare lists at most 300 (and a
   * commit's own listing at most 3,000), so from 300 on the two commits' git
   * trees are compared instead, which holds at any size (see trees.ts): what a
   * lane reports is checked against the forge however many files it changed.
   * Null when the forge cannot say (a commit it does not have, a single folder
   * of more than 100,000 entries).
   */
  async changedFiles(lane, base, head) {
    const { owner, repo } = await this.branchRepo(lane) ?? this.split(lane);
    const what = `${base.slice(0, 12)}...${head.slice(0, 12)}`;
    let files;
    try {
      const r = await this.octokit.request("GET /repos/{owner}/{repo}/compare/{basehead}", { owner, repo, basehead: `${base}...${head}` });
      files = r.data.files ?? [];
    } catch (err) {
      const s = forge_statusOf(err);
      if (s === 404 || s === 422 || s === 409) {
        this.logger.warn(`${lane.repo}: cannot compare ${what}: ${forge_messageOf(err)}`);
        return null;
      }
      throw this.error(lane, `comparing ${what}`, err);
    }
    if (files.length >= COMPARE_CAP) {
      try {
        return await changedPathsBetween(this.octokit, base, head, { owner, repo });
      } catch (err) {
        if (err instanceof TreeTooLarge) {
          this.logger.warn(`${lane.repo}: cannot list the files of ${what}: ${err.message}`);
          return null;
        }
        throw this.error(lane, `comparing the trees of ${what}`, err);
      }
    }
    return filePaths(files);
  }
  // -------------------------------------------------------------------------
  // Pull requests
  // -------------------------------------------------------------------------
  async publish(input) {
    const { lane, record } = input;
    const { owner, repo } = this.split(lane);
    if (!record.branch || !record.base_branch) throw new GitHubForgeError(lane.repo, "opening a pull request", 0, "the lane has no branch or base branch");
    const marker = markerFor(this.opts.name, lane.id);
    const body = input.body.includes(marker) ? input.body : `${marker}
${input.body}`;
    const notes = [];
    let pr = input.branchCreated && !this.opts.fork ? null : await this.findPull(lane, record.branch, record.base_branch);
    let updated = pr !== null;
    if (!pr) {
      try {
        pr = await this.createPull(lane, input, body, input.draft, notes);
      } catch (err) {
        if (forge_statusOf(err) === 422 && /already exists/i.test(forge_messageOf(err))) {
          pr = await this.findPull(lane, record.branch, record.base_branch);
          updated = true;
        }
        if (!pr) throw this.error(lane, `opening a pull request from ${record.branch}`, err);
      }
    }
    if (updated) {
      const patch = {};
      if (pr.title !== input.title) patch.title = input.title;
      if ((pr.body ?? "") !== body) patch.body = body;
      if (pr.base.ref !== record.base_branch) patch.base = record.base_branch;
      if (Object.keys(patch).length) {
        try {
          const r = await this.octokit.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", { owner, repo, pull_number: pr.number, ...patch });
          pr = r.data;
        } catch (err) {
          throw this.error(lane, `updating pull request #${pr.number}`, err);
        }
      }
    }
    await this.decorate(lane, pr, input, updated, notes);
    for (const n of notes) this.logger.warn(`${lane.repo}#${pr.number}: ${n}`);
    return { pr_url: pr.html_url, pr_number: pr.number, updated, notes };
  }
  /** The open PR of a lane branch: the one into the lane's base carrying this lane's marker first. */
  async findPull(lane, branch, base) {
    const { owner, repo } = this.split(lane);
    const head = await this.branchRepo(lane);
    if (!head) return null;
    let pulls;
    try {
      pulls = await this.octokit.paginate("GET /repos/{owner}/{repo}/pulls", {
        owner,
        repo,
        head: `${head.owner}:${branch}`,
        state: "open",
        per_page: 100
      });
    } catch (err) {
      throw this.error(lane, `looking for the pull request of ${branch}`, err);
    }
    pulls = pulls.filter((p) => p.head.ref === branch && fromRepo(p, head, lane));
    if (!pulls.length) return null;
    const ours = (p) => {
      const m = MARKER.exec(p.body ?? "");
      return m ? m[1] === this.opts.name && m[2] === lane.id ? 2 : 0 : 1;
    };
    const ranked = [...pulls].sort((a, b) => Number(b.base.ref === base) - Number(a.base.ref === base) || ours(b) - ours(a) || a.number - b.number);
    const best = ranked[0];
    if (ours(best) === 0) {
      const m = MARKER.exec(best.body ?? "");
      throw new GitHubForgeError(
        lane.repo,
        "publishing",
        0,
        `pull request #${best.number} from ${branch} belongs to fleet ${m[1]} lane ${m[2]}; give this fleet another name or branch template`
      );
    }
    return best;
  }
  async createPull(lane, input, body, draft, notes) {
    const { owner, repo } = this.split(lane);
    const fork = this.opts.fork ? await this.ownFork(lane) : null;
    if (this.opts.fork && !fork) throw new GitHubForgeError(lane.repo, "opening a pull request", 0, "fork mode, and the target has no fork to open it from");
    try {
      const r = await this.octokit.request("POST /repos/{owner}/{repo}/pulls", {
        owner,
        repo,
        title: input.title,
        // From a fork: owner:branch, and the target's maintainers may push to it (GitHub's default for the web form).
        head: fork ? `${fork.owner}:${input.record.branch}` : input.record.branch,
        base: input.record.base_branch,
        body,
        draft,
        ...fork ? { maintainer_can_modify: true } : {}
      });
      return r.data;
    } catch (err) {
      if (draft && forge_statusOf(err) === 422 && /draft/i.test(forge_messageOf(err))) {
        notes.push(`opened as a regular PR: the repository does not allow drafts (${forge_messageOf(err)})`);
        return this.createPull(lane, input, body, false, notes);
      }
      throw err;
    }
  }
  /** Labels, reviewers and assignees: only what is missing; a refusal is a note, not a failed lane (the PR exists). */
  async decorate(lane, pr, input, updated, notes) {
    const { owner, repo } = this.split(lane);
    const n = pr.number;
    const have = new Set(pr.labels.map((l) => (typeof l === "string" ? l : l.name ?? "").toLowerCase()));
    const labels = unique(input.labels).filter((l) => !have.has(l.toLowerCase()));
    if (labels.length) {
      try {
        await this.octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", { owner, repo, issue_number: n, labels });
      } catch (err) {
        notes.push(`labels ${labels.join(", ")} not added: ${forge_messageOf(err)}`);
      }
    }
    const author = pr.user?.login.toLowerCase();
    const requested = new Set((pr.requested_reviewers ?? []).map((u) => u.login.toLowerCase()));
    const teamsRequested = new Set((pr.requested_teams ?? []).map((t) => t.slug.toLowerCase()));
    let reviewers = unique(input.reviewers).filter((r) => !requested.has(r.toLowerCase()));
    const skippedAuthor = reviewers.filter((r) => r.toLowerCase() === author);
    if (skippedAuthor.length) notes.push(`${skippedAuthor[0]} opened the PR and cannot review it`);
    reviewers = reviewers.filter((r) => r.toLowerCase() !== author);
    const teams = unique(input.team_reviewers.map((t) => t.split("/").pop())).filter((t) => !teamsRequested.has(t.toLowerCase()));
    if (updated && reviewers.length) {
      try {
        const reviews = await this.octokit.paginate("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
          owner,
          repo,
          pull_number: n,
          per_page: 100
        });
        const reviewed = new Set(reviews.map((r) => r.user?.login.toLowerCase()).filter(Boolean));
        reviewers = reviewers.filter((r) => !reviewed.has(r.toLowerCase()));
      } catch (err) {
        notes.push(`could not read the reviews: ${forge_messageOf(err)}`);
      }
    }
    if (reviewers.length || teams.length) {
      try {
        await this.octokit.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers", {
          owner,
          repo,
          pull_number: n,
          ...reviewers.length ? { reviewers } : {},
          ...teams.length ? { team_reviewers: teams } : {}
        });
      } catch (err) {
        notes.push(`review not requested from ${[...reviewers, ...teams.map((t) => `team ${t}`)].join(", ")}: ${forge_messageOf(err)}`);
      }
    }
    const assigned = new Set((pr.assignees ?? []).map((u) => u.login.toLowerCase()));
    const assignees = unique(input.assignees).filter((a) => !assigned.has(a.toLowerCase()));
    if (assignees.length) {
      try {
        const r = await this.octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/assignees", { owner, repo, issue_number: n, assignees });
        const now = new Set((r.data.assignees ?? []).map((u) => u.login.toLowerCase()));
        const ignored = assignees.filter((a) => !now.has(a.toLowerCase()));
        if (ignored.length) notes.push(`GitHub did not assign ${ignored.join(", ")} (no access to the repository?)`);
      } catch (err) {
        notes.push(`assignees ${assignees.join(", ")} not added: ${forge_messageOf(err)}`);
      }
    }
  }
  async isMerged(lane, record) {
    if (record.pr_number === null) return false;
    const { owner, repo } = this.split(lane);
    try {
      const pr = (await this.octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner, repo, pull_number: record.pr_number })).data;
      return pr.merged === true;
    } catch (err) {
      throw this.error(lane, `reading pull request #${record.pr_number}`, err);
    }
  }
  async setDraft(lane, prNumber, draft) {
    const { owner, repo } = this.split(lane);
    let pr;
    try {
      pr = (await this.octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner, repo, pull_number: prNumber })).data;
    } catch (err) {
      throw this.error(lane, `reading pull request #${prNumber}`, err);
    }
    if (Boolean(pr.draft) === draft || pr.state !== "open") return;
    const mutation = draft ? "mutation FleetToDraft($id: ID!) { convertPullRequestToDraft(input: { pullRequestId: $id }) { pullRequest { isDraft } } }" : "mutation FleetReady($id: ID!) { markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { isDraft } } }";
    try {
      await this.octokit.graphql(mutation, { id: pr.node_id });
    } catch (err) {
      throw this.error(lane, `${draft ? "turning" : "marking"} pull request #${prNumber} ${draft ? "into a draft" : "ready for review"}`, err);
    }
  }
  // -------------------------------------------------------------------------
  // CI
  // -------------------------------------------------------------------------
  /** Check runs (the latest per name) and the combined status of a commit, every page. */
  async readCi(lane, sha) {
    const { owner, repo } = this.split(lane);
    let runs;
    try {
      runs = await this.octokit.paginate("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
        owner,
        repo,
        ref: sha,
        filter: "latest",
        per_page: 100
      });
    } catch (err) {
      throw this.error(lane, `reading the check runs of ${sha.slice(0, 12)}`, err);
    }
    const statuses = [];
    try {
      for (let page = 1; ; page++) {
        const r = await this.octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/status", { owner, repo, ref: sha, per_page: 100, page });
        statuses.push(...r.data.statuses);
        if (r.data.statuses.length < 100 || statuses.length >= r.data.total_count) break;
      }
    } catch (err) {
      throw this.error(lane, `reading the commit status of ${sha.slice(0, 12)}`, err);
    }
    return { runs, statuses };
  }
  /**
   * Commits' check runs and statuses in one GraphQL read (`Repository.object(oid:)` → `Commit.checkSuites` and
   * `Commit.status`, one alias per commit, CI_BATCH a query), where the REST reads take two requests a commit. An
   * entry is undefined where that read cannot answer for certain (more suites or runs than a page holds, a field the
   * token may not read, any error): the REST reads answer for it, as before. The verdict only: names, states and start
   * times (a failure's details are the REST reads' in waitForCi).
   */
  async readCiBatch(items) {
    const out = items.map(() => void 0);
    for (let from = 0; from < items.length; from += CI_BATCH) {
      const chunk = items.slice(from, from + CI_BATCH);
      const vars = {};
      const decls = [];
      const fields = [];
      chunk.forEach(({ lane, commit }, i) => {
        if (!/^[0-9a-f]{40}$/.test(commit)) return;
        const { owner, repo } = this.split(lane);
        Object.assign(vars, { [`o${i}`]: owner, [`n${i}`]: repo, [`s${i}`]: commit });
        decls.push(`$o${i}: String!, $n${i}: String!, $s${i}: GitObjectID!`);
        fields.push(`c${i}: repository(owner: $o${i}, name: $n${i}) { object(oid: $s${i}) { ...on Commit { ${CI_FIELDS} } } }`);
      });
      if (!fields.length) continue;
      let data;
      const errored = /* @__PURE__ */ new Set();
      try {
        data = await this.octokit.graphql(`query FleetCi(${decls.join(", ")}) { ${fields.join(" ")} }`, vars);
      } catch (err) {
        const partial = err;
        if (!partial.data || !Array.isArray(partial.errors)) continue;
        data = partial.data;
        for (const e of partial.errors) errored.add(String(e.path?.[0] ?? "*"));
        if (errored.has("*")) continue;
      }
      chunk.forEach((_, i) => {
        if (!errored.has(`c${i}`)) out[from + i] = ciFromGraphql(data[`c${i}`]);
      });
    }
    return out;
  }
  /** Many lanes' CI verdicts at once (the report's second read): undefined where the batch could not answer. */
  async ciConclusions(items) {
    const reads = await this.readCiBatch(items);
    return Promise.all(
      reads.map(async (batched, i) => {
        const read = batched ?? await this.readCi(items[i].lane, items[i].commit).catch(() => void 0);
        if (!read) return void 0;
        const seen = combineCi(read.runs, read.statuses);
        if (seen === "failure" || seen === "pending") return seen;
        try {
          return combineRequired(read.runs, read.statuses, await this.requiredForCi(items[i].lane));
        } catch {
          return void 0;
        }
      })
    );
  }
  /** The CI verdict, where a check the base branch requires and that has not reported yet keeps it `pending`. */
  async ciConclusion(lane, commit) {
    const [once] = await this.readCiBatch([{ lane, commit }]);
    const { runs, statuses } = once ?? await this.readCi(lane, commit);
    const seen = combineCi(runs, statuses);
    if (seen === "failure" || seen === "pending") return seen;
    return combineRequired(runs, statuses, await this.requiredForCi(lane));
  }
  async waitForCi(lane, commit, timeoutMs) {
    const start = this.now();
    const deadline = start + Math.max(0, timeoutMs);
    const maxPoll = this.opts.ciMaxPollMs ?? 6e4;
    let delay = Math.min(this.opts.ciPollMs ?? 1e4, maxPoll);
    let expectCi;
    const required = await this.requiredForCi(lane);
    for (; ; ) {
      const { runs, statuses } = await this.readCi(lane, commit);
      const conclusion = combineRequired(runs, statuses, required);
      if (conclusion === "failure") return { conclusion, failures: describeFailures(runs, statuses) };
      if (conclusion === "success") return { conclusion, failures: "" };
      const now = this.now();
      if (conclusion === "none") {
        expectCi ??= await this.expectsCi(lane, commit);
        const grace = Math.min(this.opts.ciStartGraceMs ?? 12e4, timeoutMs);
        if (!expectCi || now - start >= grace) return { conclusion: "none", failures: "" };
      }
      if (now >= deadline) {
        const waited = Math.round((now - start) / 1e3);
        return { conclusion: "pending", failures: describePending(runs, statuses, required) || `no CI result after ${waited}s` };
      }
      await this.sleep(Math.max(0, Math.min(delay, deadline - now)));
      delay = Math.min(Math.round(delay * 1.5), maxPoll);
    }
  }
  /** The lane's base branch: the one the fleet file names, else the repository's default branch. */
  baseOf(lane) {
    if (lane.base) return Promise.resolve(lane.base);
    const { owner, repo } = this.split(lane);
    let branch = this.defaultBranches.get(lane.repo);
    if (!branch) {
      branch = this.octokit.request("GET /repos/{owner}/{repo}", { owner, repo }).then(
        (r) => r.data.default_branch,
        (err) => {
          this.defaultBranches.delete(lane.repo);
          throw this.error(lane, "reading the default branch", err);
        }
      );
      this.defaultBranches.set(lane.repo, branch);
    }
    return branch;
  }
  /** The lane base's required checks, read once per repository and base by this forge (lanes of one repository share them). */
  async requiredForCi(lane) {
    const base = await this.baseOf(lane);
    const key = `${lane.repo}#${base}`;
    let seen = this.requiredSeen.get(key);
    if (!seen) {
      seen = this.requiredChecks(lane, base);
      this.requiredSeen.set(key, seen);
      seen.catch(() => this.requiredSeen.delete(key));
    }
    return seen;
  }
  /**
   * The status checks a PR into `base` must pass, from classic branch
   * protection (shown to anyone who can read the branch) and from the
   * repository's rulesets. A rules endpoint GitHub Enterprise Server does not
   * have yet (404) adds nothing; any other failure throws, so a caller that
   * merges fails closed.
   */
  async requiredChecks(lane, base) {
    const { owner, repo } = this.split(lane);
    const names = /* @__PURE__ */ new Set();
    try {
      const b = await this.octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", { owner, repo, branch: base });
      const rsc = b.data.protection?.required_status_checks;
      for (const c of rsc?.contexts ?? []) names.add(c);
      for (const c of rsc?.checks ?? []) names.add(c.context);
    } catch (err) {
      if (forge_statusOf(err) !== 404) throw this.error(lane, `reading the protection of ${base}`, err);
    }
    try {
      const rules = await this.octokit.paginate("GET /repos/{owner}/{repo}/rules/branches/{branch}", { owner, repo, branch: base, per_page: 100 });
      for (const rule of rules) if (rule.type === "required_status_checks") for (const c of rule.parameters?.required_status_checks ?? []) names.add(c.context);
    } catch (err) {
      if (forge_statusOf(err) !== 404) throw this.error(lane, `reading the rules of ${base}`, err);
    }
    return [...names].sort();
  }
  /**
   * The last word before a merge, read afresh on the lane's commit: every
   * check the base requires has reported and CI is green; "no CI at all" only
   * when the repository shows no sign of CI that may still come. Null when
   * the merge may go ahead, else why not.
   */
  async mergeGate(lane, base, commit, number) {
    const short = commit.slice(0, 12);
    let required;
    let ci;
    try {
      required = await this.requiredChecks(lane, base);
      ci = await this.readCi(lane, commit);
    } catch (err) {
      return { status: "pending", detail: `#${number} not merged: could not read its CI and the required checks of ${base} (${err.message})` };
    }
    const { runs, statuses } = ci;
    const conclusion = combineRequired(runs, statuses, required);
    if (conclusion === "failure")
      return { status: "blocked", detail: `#${number} not merged: CI failed on ${short}: ${describeFailures(runs, statuses, 300).split("\n")[0]}` };
    const missing = missingRequired(runs, statuses, required);
    if (missing.length)
      return {
        status: "pending",
        detail: `#${number} not merged: required check${missing.length > 1 ? "s" : ""} ${missing.join(", ")} of ${base} ha${missing.length > 1 ? "ve" : "s"} not reported on ${short}`
      };
    if (conclusion === "pending")
      return { status: "pending", detail: `#${number} not merged: CI is still running on ${short} (${describePending(runs, statuses)})` };
    if (conclusion === "none" && await this.expectsCi(lane, commit)) {
      return {
        status: "pending",
        detail: `#${number} not merged: no CI has reported on ${short} yet, and the repository has workflows or CI on earlier commits`
      };
    }
    return null;
  }
  /**
   * Whether "no CI at all" on a fresh commit may just mean CI has not started:
   * the repository has workflows, or its parent commit has checks or statuses.
   * When it cannot tell, it assumes CI may come.
   */
  async expectsCi(lane, commit) {
    const { owner, repo } = this.split(lane);
    const once = { request: { retries: 0 } };
    try {
      const wf = await this.octokit.request("GET /repos/{owner}/{repo}/actions/workflows", { owner, repo, per_page: 100, ...once });
      if (wf.data.workflows.some((w) => w.state === "active")) return true;
      const c = await this.octokit.request("GET /repos/{owner}/{repo}/commits/{ref}", { owner, repo, ref: commit, per_page: 1, ...once });
      const parent = c.data.parents[0]?.sha;
      if (!parent) return false;
      const { runs, statuses } = await this.readCi(lane, parent);
      return runs.length + statuses.length > 0;
    } catch {
      return true;
    }
  }
  // -------------------------------------------------------------------------
  // Merge
  // -------------------------------------------------------------------------
  async merge(lane, record, method) {
    const { owner, repo } = this.split(lane);
    if (!record.commit || !record.branch) return { status: "failed", detail: "nothing to merge: the lane has no commit" };
    if (!MERGE_METHODS.includes(method))
      return { status: "failed", detail: `unknown merge method ${method} (merge, squash, rebase or fast-forward)` };
    const short = record.commit.slice(0, 12);
    let number = record.pr_number;
    if (number === null) {
      const found = record.base_branch ? await this.findPull(lane, record.branch, record.base_branch) : null;
      if (!found) return { status: "blocked", detail: `no open pull request from ${record.branch}` };
      number = found.number;
    }
    const deadline = this.now() + (this.opts.mergeableWaitMs ?? 6e4);
    let pr;
    for (; ; ) {
      try {
        pr = (await this.octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner, repo, pull_number: number })).data;
      } catch (err) {
        return { status: "failed", detail: this.error(lane, `reading pull request #${number}`, err).message };
      }
      if (pr.merged || pr.merged_at) {
        return pr.head.sha === record.commit ? { status: "merged", detail: `#${number} was already merged${pr.merge_commit_sha ? ` as ${pr.merge_commit_sha.slice(0, 12)}` : ""}` } : { status: "blocked", detail: `#${number} was merged at ${pr.head.sha.slice(0, 12)}, not at the lane's ${short}` };
      }
      if (pr.state !== "open") return { status: "blocked", detail: `#${number} is closed` };
      if (pr.head.sha !== record.commit) {
        return { status: "blocked", detail: `#${number}'s head is ${pr.head.sha.slice(0, 12)}, not the lane's ${short}: someone pushed to ${record.branch}` };
      }
      if (pr.draft) return { status: "blocked", detail: `#${number} is a draft` };
      if (pr.mergeable !== null && pr.mergeable !== void 0) break;
      if (this.now() >= deadline) {
        return {
          status: "pending",
          detail: `GitHub had not worked out whether #${number} can merge after ${Math.round((this.opts.mergeableWaitMs ?? 6e4) / 1e3)}s`
        };
      }
      await this.sleep(this.opts.pollMs ?? 2e3);
    }
    if (pr.mergeable === false) {
      return { status: "blocked", detail: `#${number} conflicts with ${pr.base.ref}${pr.mergeable_state ? ` (mergeable_state: ${pr.mergeable_state})` : ""}` };
    }
    const gate = await this.mergeGate(lane, pr.base.ref, record.commit, number);
    if (gate) return gate;
    if (method === "fast-forward") return this.fastForward(lane, pr, record.commit);
    try {
      const r = await this.octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        owner,
        repo,
        pull_number: number,
        merge_method: method,
        sha: record.commit
      });
      if (!r.data.merged) return { status: "blocked", detail: `GitHub did not merge #${number}: ${(0,secrets/* redact */.E$)(r.data.message)}` };
      return { status: "merged", detail: `#${number} merged (${method}) as ${r.data.sha.slice(0, 12)}` };
    } catch (err) {
      const s = forge_statusOf(err);
      const why = forge_messageOf(err);
      if (s === 405) return { status: "blocked", detail: `GitHub refused to merge #${number} (405): ${why}` };
      if (s === 409) return { status: "blocked", detail: `#${number}'s head moved while merging (409): ${why}` };
      if (s === 422) return { status: "blocked", detail: `GitHub cannot merge #${number} by ${method} (422): ${why}` };
      return { status: "failed", detail: this.error(lane, `merging #${number}`, err).message };
    }
  }
  /** A true fast-forward: move the base branch to the lane commit; GitHub refuses (422) when that is not a fast-forward. */
  async fastForward(lane, pr, commit) {
    const { owner, repo } = this.split(lane);
    try {
      await this.octokit.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", { owner, repo, ref: `heads/${pr.base.ref}`, sha: commit, force: false });
      return { status: "merged", detail: `${pr.base.ref} fast-forwarded to ${commit.slice(0, 12)} (#${pr.number})` };
    } catch (err) {
      const s = forge_statusOf(err);
      if (s === 422 || s === 409) return { status: "blocked", detail: `${pr.base.ref} cannot be fast-forwarded to ${commit.slice(0, 12)}: ${forge_messageOf(err)}` };
      return { status: "failed", detail: this.error(lane, `fast-forwarding ${pr.base.ref}`, err).message };
    }
  }
  // -------------------------------------------------------------------------
  // After the run (`fleet prs`)
  // -------------------------------------------------------------------------
  /**
   * The lane's PR in any state, found by its head branch as publish finds it (so one an earlier run opened is found
   * without its number): open first, then the record's number, then into the lane's base, then ours by the marker;
   * among open ones the oldest (publish's pick), among closed ones the newest. A PR from the branch carrying
   * another fleet's marker is not this lane's. When the listing shows none, the record's number is read directly.
   */
  async locatePull(lane, record) {
    const { owner, repo } = this.split(lane);
    const branch = record.branch ?? lane.branch;
    const head = await this.branchRepo(lane);
    if (!head) return null;
    let pulls;
    try {
      pulls = await this.octokit.paginate("GET /repos/{owner}/{repo}/pulls", {
        owner,
        repo,
        head: `${head.owner}:${branch}`,
        state: "all",
        per_page: 100
      });
    } catch (err) {
      throw this.error(lane, `looking for the pull request of ${branch}`, err);
    }
    pulls = pulls.filter((p) => p.head.ref === branch && fromRepo(p, head, lane));
    const mark = (p) => {
      const m = MARKER.exec(p.body ?? "");
      return m ? m[1] === this.opts.name && m[2] === lane.id ? 2 : 0 : 1;
    };
    const ours = pulls.filter((p) => mark(p) > 0);
    if (pulls.length && !ours.length) {
      const m = MARKER.exec(pulls[0].body ?? "");
      throw new GitHubForgeError(
        lane.repo,
        "reading pull requests",
        0,
        `pull request #${pulls[0].number} from ${branch} belongs to fleet ${m[1]} lane ${m[2]}, not to this lane`
      );
    }
    const base = record.base_branch ?? lane.base;
    const open = (p) => Number(p.state === "open");
    ours.sort(
      (a, b) => open(b) - open(a) || Number(b.number === record.pr_number) - Number(a.number === record.pr_number) || Number(b.base.ref === base) - Number(a.base.ref === base) || mark(b) - mark(a) || (open(a) ? a.number - b.number : b.number - a.number)
    );
    if (ours.length) return ours[0];
    if (record.pr_number === null) return null;
    try {
      const pr = (await this.octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner, repo, pull_number: record.pr_number })).data;
      return pr.head.ref === branch && fromRepo(pr, head, lane) ? pr : null;
    } catch (err) {
      if (forge_statusOf(err) === 404) return null;
      throw this.error(lane, `reading pull request #${record.pr_number}`, err);
    }
  }
  async readPr(lane, record) {
    const { owner, repo } = this.split(lane);
    const branch = record.branch ?? lane.branch;
    const found = await this.locatePull(lane, record);
    if (!found) {
      const head = await this.branchHead(lane, branch);
      if (!head) return null;
      const base = record.base_branch ?? lane.base ?? null;
      return {
        number: null,
        url: null,
        state: "branch",
        draft: false,
        ci: await this.ciConclusion(base ? { ...lane, base } : lane, head),
        review: null,
        mergeable: null,
        mergeable_state: null,
        created_at: null,
        head_branch: branch,
        head_sha: head,
        base_branch: base,
        marked: true,
        branch_head: head
      };
    }
    if (found.state !== "open") {
      return {
        number: found.number,
        url: found.html_url,
        state: found.merged || found.merged_at ? "merged" : "closed",
        draft: Boolean(found.draft),
        ci: null,
        review: null,
        mergeable: null,
        mergeable_state: null,
        created_at: found.created_at ?? null,
        head_branch: branch,
        head_sha: found.head.sha,
        base_branch: found.base.ref,
        marked: this.carriesMarker(found, lane),
        branch_head: await this.branchHead(lane, branch)
      };
    }
    let pr;
    try {
      pr = (await this.octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner, repo, pull_number: found.number })).data;
    } catch (err) {
      throw this.error(lane, `reading pull request #${found.number}`, err);
    }
    let reviews;
    try {
      reviews = await this.octokit.paginate("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
        owner,
        repo,
        pull_number: pr.number,
        per_page: 100
      });
    } catch (err) {
      throw this.error(lane, `reading the reviews of #${pr.number}`, err);
    }
    const requested = (pr.requested_reviewers?.length ?? 0) + (pr.requested_teams?.length ?? 0);
    return {
      number: pr.number,
      url: pr.html_url,
      state: pr.merged || pr.merged_at ? "merged" : pr.state === "open" ? "open" : "closed",
      draft: Boolean(pr.draft),
      ci: await this.ciConclusion({ ...lane, base: pr.base.ref }, pr.head.sha),
      review: (0,prs/* reviewState */.yL)(reviews, requested),
      mergeable: pr.mergeable ?? null,
      mergeable_state: pr.mergeable_state ?? null,
      created_at: pr.created_at ?? null,
      head_branch: branch,
      head_sha: pr.head.sha,
      base_branch: pr.base.ref,
      marked: this.carriesMarker(pr, lane),
      branch_head: pr.state === "open" ? pr.head.sha : await this.branchHead(lane, branch)
    };
  }
  /** The PR's body carries this fleet's marker for this lane: Fleet opened it (or updated it). */
  carriesMarker(pr, lane) {
    const m = MARKER.exec(pr.body ?? "");
    return !!m && m[1] === this.opts.name && m[2] === lane.id;
  }
  /**
   * Closes the lane's open PR (`PATCH …/pulls/{n}` with `state: closed`), then deletes its branch
   * (`DELETE …/git/refs/heads/<branch>`) when it still holds the lane's commit. A merged PR is left as it is, and so is
   * its branch; a branch someone else pushed to is left, and the detail says so.
   */
  async closePr(lane, record, opts) {
    const { owner, repo } = this.split(lane);
    const branch = record.branch ?? lane.branch;
    const out = { status: "none", detail: "", pr_number: null, pr_url: null, pr_state: null, branch_deleted: false, branch_head: null };
    let pr;
    try {
      pr = await this.locatePull(lane, record);
      out.pr_number = pr?.number ?? null;
      out.pr_url = pr?.html_url ?? null;
      out.pr_state = pr ? pr.merged || pr.merged_at ? "merged" : pr.state === "open" ? "open" : "closed" : null;
      out.branch_head = await this.branchHead(lane, branch);
    } catch (err) {
      return { ...out, status: "failed", detail: err.message };
    }
    if (pr && (pr.merged || pr.merged_at)) return { ...out, status: "merged", detail: `#${pr.number} is merged: nothing to close, ${branch} left as it is` };
    const said = [];
    if (pr?.state === "open") {
      try {
        await this.octokit.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", { owner, repo, pull_number: pr.number, state: "closed" });
      } catch (err) {
        return { ...out, status: "failed", detail: this.error(lane, `closing pull request #${pr.number}`, err).message };
      }
      out.status = "closed";
      out.pr_state = "closed";
      said.push(`#${pr.number} closed`);
    } else if (pr) {
      out.status = "already-closed";
      said.push(`#${pr.number} was already closed`);
    } else said.push(`no pull request from ${branch}`);
    const short = (sha) => sha ? sha.slice(0, 12) : "none";
    if (!opts.deleteBranch || out.branch_head === null) {
      if (out.branch_head === null) said.push(`${branch} is gone`);
    } else if (!record.commit || out.branch_head !== record.commit) {
      said.push(`${branch} left: it is at ${short(out.branch_head)}, not at the lane's commit ${short(record.commit)}`);
    } else {
      try {
        const head = await this.branchRepo(lane);
        if (!head) throw new GitHubForgeError(lane.repo, `deleting ${branch}`, 0, "the fork holding it is gone");
        await this.octokit.request("DELETE /repos/{owner}/{repo}/git/refs/{ref}", { ...head, ref: `heads/${branch}` });
        out.branch_deleted = true;
        out.branch_head = null;
        said.push(`${branch} deleted`);
      } catch (err) {
        if (forge_statusOf(err) === 422 && await this.branchHead(lane, branch).catch(() => out.branch_head) === null) {
          out.branch_head = null;
          said.push(`${branch} is gone`);
        } else {
          return { ...out, status: "failed", detail: `${said.join("; ")}; but ${this.error(lane, `deleting ${branch}`, err).message}` };
        }
      }
    }
    return { ...out, detail: said.join("; ") };
  }
  // -------------------------------------------------------------------------
  split(lane) {
    const [owner, repo] = lane.repo.split("/");
    if (lane.repo_kind !== "github" || !owner || !repo) throw new Error((0,secrets/* redact */.E$)(`${lane.repo} is not an owner/repo name`));
    return { owner, repo };
  }
  error(lane, action, err) {
    return new GitHubForgeError(lane.repo, action, forge_statusOf(err), forge_messageOf(err));
  }
}
function isForkOf(r, target) {
  const t = target.toLowerCase();
  return r.fork === true && (r.parent?.full_name?.toLowerCase() === t || r.source?.full_name?.toLowerCase() === t);
}
function fromRepo(pr, head, lane) {
  const full = pr.head.repo?.full_name;
  const wanted = `${head.owner}/${head.repo}`.toLowerCase();
  return full === void 0 || full === null ? wanted === lane.repo.toLowerCase() : full.toLowerCase() === wanted;
}
function unique(items) {
  const seen = /* @__PURE__ */ new Set();
  return items.filter((x) => {
    const k = x.toLowerCase();
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
function defaultServerUrl(octokit) {
  const apiUrl = String(octokit.request.endpoint.DEFAULTS.baseUrl).replace(/\/+$/, "");
  if (process.env.GITHUB_SERVER_URL && apiUrl === (0,github_octokit/* resolveApiUrl */.c_)()) return process.env.GITHUB_SERVER_URL;
  return (0,github_octokit/* serverUrlFor */.uH)(apiUrl);
}


;// CONCATENATED MODULE: ./.build/src/github/actions-run.js
async function getWorkflowRun(api, repo, runId) {
  const { data } = await api.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", { ...repo, run_id: runId });
  return data;
}
async function dispatchWorkflow(api, repo, workflowId, ref, inputs) {
  await api.request("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", { ...repo, workflow_id: workflowId, ref, inputs });
}
function runJobs(api, repo, runId) {
  return {
    async list() {
      const jobs = [];
      for (let page = 1; ; page++) {
        const { data } = await api.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", {
          ...repo,
          run_id: runId,
          filter: "latest",
          per_page: 100,
          page
        });
        const batch = data.jobs;
        jobs.push(...batch.map((j) => ({ id: j.id, name: j.name, status: j.status, conclusion: j.conclusion, html_url: j.html_url })));
        if (batch.length < 100 || jobs.length >= data.total_count) break;
      }
      return jobs;
    },
    async annotations(jobId) {
      const { data } = await api.request("GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", { ...repo, check_run_id: jobId, per_page: 50 });
      return data.map((a) => a.message);
    },
    async rejection() {
      const { data } = await api.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}/approvals", { ...repo, run_id: runId });
      const rejected = data.find(
        (r) => r.state === "rejected"
      );
      return rejected ? { environment: rejected.environments.map((e) => e.name).join(", "), reviewer: rejected.user.login, comment: rejected.comment } : null;
    }
  };
}
async function createCheckRun(api, repo, run) {
  const { data } = await api.request("POST /repos/{owner}/{repo}/check-runs", {
    ...repo,
    name: run.name,
    head_sha: run.headSha,
    status: "completed",
    conclusion: run.conclusion,
    ...run.detailsUrl ? { details_url: run.detailsUrl } : {},
    output: run.output
  });
  return data.id;
}
async function updateCheckRun(api, repo, checkRunId, output) {
  await api.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", { ...repo, check_run_id: checkRunId, output });
}
async function environmentRules(api, repo, environment) {
  const { data } = await api.request("GET /repos/{owner}/{repo}/environments/{environment_name}", { ...repo, environment_name: environment });
  return data.protection_rules ?? [];
}


;// CONCATENATED MODULE: ./.build/src/github/setup-probe.js



function split(repo) {
  const [owner = "", name = ""] = repo.split("/");
  return { owner, repo: name };
}
function setup_probe_statusOf(err) {
  return err.status ?? 0;
}
function setup_probe_messageOf(err) {
  return (0,secrets/* redact */.E$)(
    String(err.message ?? err).split("\n")[0].replace(/\s*-\s*https:\/\/docs\.github\.com\S*/g, "")
  );
}
class GitHubSetupProbe {
  constructor(octokit, credentialOf) {
    this.octokit = octokit;
    this.credentialOf = credentialOf;
  }
  octokit;
  credentialOf;
  async credential() {
    const granted = this.credentialOf?.installationPermissions?.();
    if (granted) return { kind: "app", account: this.credentialOf?.installationAccount?.() ?? "", permissions: granted };
    let scopes;
    try {
      scopes = await (0,github_octokit/* classicScopes */.qV)(this.octokit);
    } catch (err) {
      if (setup_probe_statusOf(err) === 401) return { kind: "refused", detail: setup_probe_messageOf(err) };
      throw err;
    }
    const login = await this.octokit.request("GET /user").then((r) => r.data.login ?? null).catch(() => null);
    if (scopes !== void 0) return { kind: "classic-pat", login: login ?? "", scopes };
    return { kind: "unknown", login };
  }
  async visibility(repo) {
    try {
      const { data } = await this.octokit.request("GET /repos/{owner}/{repo}", split(repo));
      const v = data.visibility;
      return v === "public" || v === "private" || v === "internal" ? v : data.private ? "private" : "public";
    } catch (err) {
      if (setup_probe_statusOf(err) === 404 || setup_probe_statusOf(err) === 403) return null;
      throw err;
    }
  }
  async environment(repo, name) {
    try {
      const api = { request: (route, params) => this.octokit.request(route, params) };
      const rules = await environmentRules(api, split(repo), name);
      const reviewers = rules.filter((r) => r.type === "required_reviewers").flatMap((r) => r.reviewers ?? []).map((r) => r.reviewer?.login ?? r.reviewer?.slug ?? "?");
      return { reviewers };
    } catch (err) {
      if (setup_probe_statusOf(err) === 404) return { missing: true };
      return { unreadable: `${setup_probe_statusOf(err) || "error"}: ${setup_probe_messageOf(err)}` };
    }
  }
  /**
   * GET …/actions/permissions, …/selected-actions and …/artifact-and-log-retention: each takes administration: read
   * (a workflow's GITHUB_TOKEN never has it; an App must be given it), so a refusal is an answer, not an error.
   * https://docs.github.com/rest/actions/permissions#get-github-actions-permissions-for-a-repository
   */
  async actionsSettings(repo) {
    const r = split(repo);
    let perms;
    try {
      ({ data: perms } = await this.octokit.request("GET /repos/{owner}/{repo}/actions/permissions", r));
    } catch (err) {
      return { unreadable: `${setup_probe_statusOf(err) || "error"}: ${setup_probe_messageOf(err)}` };
    }
    const allowed = perms.allowed_actions === "local_only" || perms.allowed_actions === "selected" ? perms.allowed_actions : "all";
    const out = { enabled: perms.enabled !== false, allowedActions: allowed };
    if (allowed === "selected") {
      try {
        const { data } = await this.octokit.request("GET /repos/{owner}/{repo}/actions/permissions/selected-actions", r);
        out.selected = { githubOwned: data.github_owned_allowed ?? false, verified: data.verified_allowed ?? false, patterns: data.patterns_allowed ?? [] };
      } catch {
      }
    }
    try {
      const { data } = await this.octokit.request("GET /repos/{owner}/{repo}/actions/permissions/artifact-and-log-retention", r);
      if (typeof data.days === "number") out.retentionDays = data.days;
    } catch {
    }
    return out;
  }
}


// EXTERNAL MODULE: ./.build/src/github/tuning.js
var tuning = __webpack_require__(8086);
;// CONCATENATED MODULE: ./.build/src/github/setup.js






function githubClient(env, token, logger, credential) {
  const tuning = githubTuning(env);
  if ("problem" in tuning) return tuning;
  return octokitFor(env, token, tuning, logger, credential);
}
function octokitFor(env, token, tuning, logger, credential, writePace) {
  return (0,github_octokit/* createOctokit */.Qi)({ token, credential, logger, apiUrl: env.GITHUB_API_URL, graphqlUrl: env.GITHUB_GRAPHQL_URL, pacing: tuning.pacing, writePace });
}
function githubSetup(file, opts) {
  const { env, token, credential, tuning, logger } = opts;
  const octokit = octokitFor(env, token, tuning, logger, credential, opts.writePace);
  const forge = new GitHubForge({
    octokit,
    token,
    credential,
    name: file.name,
    allowForks: file.github.allow_forks,
    ...file.pr.fork ? { fork: file.pr.fork_owner ? { owner: file.pr.fork_owner } : {} } : {},
    serverUrl: env.GITHUB_SERVER_URL,
    logger,
    ...tuning.forge
  });
  return {
    forge,
    probe: new GitHubSetupProbe(octokit, credential),
    secrets: [token, (0,github_octokit/* basicCredential */.gp)(token)],
    discover: (fleet) => discoverRepos(octokit, fleet.file.github.discover, { allowForks: fleet.file.github.allow_forks }),
    queue: (fleet, o) => runIssueQueue(octokit, forge, fleet, o),
    settleQueue: (fleet, manifest) => settleQueue(octokit, fleet, manifest)
  };
}



/***/ })

};
