export const id = 740;
export const ids = [740];
export const modules = {

/***/ 76740:
/***/ ((__unused_webpack___webpack_module__, __webpack_exports__, __webpack_require__) => {

/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   installAgent: () => (/* binding */ installAgent)
/* harmony export */ });
/* harmony import */ var node_child_process__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(31421);
/* harmony import */ var node_crypto__WEBPACK_IMPORTED_MODULE_1__ = __webpack_require__(77598);
/* harmony import */ var node_fs__WEBPACK_IMPORTED_MODULE_2__ = __webpack_require__(73024);
/* harmony import */ var node_os__WEBPACK_IMPORTED_MODULE_3__ = __webpack_require__(48161);
/* harmony import */ var node_path__WEBPACK_IMPORTED_MODULE_4__ = __webpack_require__(76760);





async function installAgent(input) {
  const t0 = Date.now();
  const { resolved, exact } = await resolveSpec(input.spec, input.env);
  const cache = exact ? input.cache : void 0;
  if (!exact && input.cache) input.log(`Agent CLI ${input.spec}: not resolved to one version, so not cached: installing with npm`);
  const id = (0,node_crypto__WEBPACK_IMPORTED_MODULE_1__.createHash)("sha256").update(`${resolved}
${process.platform}-${process.arch}
node${process.versions.node.split(".")[0]}`).digest("hex").slice(0, 20);
  const cachePath = `~/.fleet-agent/${id}`;
  const dir = (0,node_path__WEBPACK_IMPORTED_MODULE_4__.join)((0,node_os__WEBPACK_IMPORTED_MODULE_3__.homedir)(), ".fleet-agent", id);
  const binDir = (0,node_path__WEBPACK_IMPORTED_MODULE_4__.join)(dir, "node_modules", ".bin");
  const key = `fleet-agent-${process.platform}-${process.arch}-${id}`;
  const seconds = () => Math.round((Date.now() - t0) / 10) / 100;
  if (cache && await restored(cache, cachePath, key, input.log) && usable(binDir, input.bin)) {
    input.log(`Agent CLI ${resolved}: restored from the Actions cache (${key}) in ${seconds()} s`);
    return { binDir, resolved, from: "cache", seconds: seconds() };
  }
  await npm(["install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", "--loglevel=error", input.spec], input.env);
  if (!usable(binDir, input.bin)) {
    throw new Error(
      `the package ${input.spec} installed no \`${input.bin}\` command; set agent.install to the package that provides it, or agent.command to the binary`
    );
  }
  const installedIn = seconds();
  if (cache) await saved(cache, cachePath, key, input.log);
  input.log(`Agent CLI ${resolved}: installed with npm in ${installedIn} s${cache ? ` and saved to the Actions cache as ${key}` : " (not cached)"}`);
  return { binDir, resolved, from: "npm", seconds: installedIn };
}
function usable(binDir, bin) {
  return (0,node_fs__WEBPACK_IMPORTED_MODULE_2__.existsSync)(bin ? (0,node_path__WEBPACK_IMPORTED_MODULE_4__.join)(binDir, bin) : binDir);
}
async function restored(cache, path, key, log) {
  try {
    return await cache.restore([path], key) === key;
  } catch (err) {
    log(`Agent CLI: the Actions cache could not be read (${err.message}); installing with npm`);
    return false;
  }
}
async function saved(cache, path, key, log) {
  try {
    await cache.save([path], key);
  } catch (err) {
    log(`Agent CLI: not saved to the Actions cache (${err.message})`);
  }
}
async function resolveSpec(spec, env) {
  if (spec.startsWith("file:")) {
    const file = spec.slice("file:".length);
    return (0,node_fs__WEBPACK_IMPORTED_MODULE_2__.existsSync)(file) ? { resolved: `${spec}#sha256:${(0,node_crypto__WEBPACK_IMPORTED_MODULE_1__.createHash)("sha256").update((0,node_fs__WEBPACK_IMPORTED_MODULE_2__.readFileSync)(file)).digest("hex")}`, exact: true } : { resolved: spec, exact: false };
  }
  if (/^(git\+|https?:|github:)/.test(spec)) return { resolved: spec, exact: false };
  try {
    const out = JSON.parse(await npm(["view", spec, "name", "version", "--json"], env));
    const last = Array.isArray(out) ? out.at(-1) : out;
    return last ? { resolved: `${last.name}@${last.version}`, exact: true } : { resolved: spec, exact: false };
  } catch {
    return { resolved: spec, exact: false };
  }
}
function npm(args, env) {
  return new Promise((resolve, reject) => {
    const child = (0,node_child_process__WEBPACK_IMPORTED_MODULE_0__.spawn)("npm", args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => out += d.toString());
    child.stderr.on("data", (d) => err = (err + d.toString()).slice(-2e3));
    child.on("error", (e) => reject(new Error(`npm could not be started (${e.message}): the runner needs Node.js with npm`)));
    child.on(
      "close",
      (code) => code === 0 ? resolve(out) : reject(new Error(`npm ${args[0]} exited with ${code}: ${err.trim().split("\n").slice(-5).join(" ")}`))
    );
  });
}



/***/ })

};
