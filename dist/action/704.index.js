export const id = 704;
export const ids = [704];
export const modules = {

/***/ 87704:
/***/ ((__unused_webpack___webpack_module__, __webpack_exports__, __webpack_require__) => {

/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   AppInstallationToken: () => (/* binding */ AppInstallationToken),
/* harmony export */   resolveApiUrl: () => (/* reexport safe */ _octokit_js__WEBPACK_IMPORTED_MODULE_2__.c_)
/* harmony export */ });
/* harmony import */ var _actions_github_lib_utils__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(80846);
/* harmony import */ var _octokit_auth_app__WEBPACK_IMPORTED_MODULE_6__ = __webpack_require__(76479);
/* harmony import */ var _octokit_request__WEBPACK_IMPORTED_MODULE_4__ = __webpack_require__(2053);
/* harmony import */ var _util_secrets_js__WEBPACK_IMPORTED_MODULE_1__ = __webpack_require__(20897);
/* harmony import */ var _octokit_js__WEBPACK_IMPORTED_MODULE_2__ = __webpack_require__(91586);
/* harmony import */ var _app_key_js__WEBPACK_IMPORTED_MODULE_3__ = __webpack_require__(81590);
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



/***/ })

};
