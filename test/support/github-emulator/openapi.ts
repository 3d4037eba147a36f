/**
 * GitHub's OpenAPI description (`@octokit/openapi`'s `generated/api.github.com.json`),
 * loaded once per process, lazily, and turned into a route table and Ajv
 * validators (compiled per operation on first use, then cached).
 *
 * OpenAPI 3.0 schema → JSON Schema: `nullable` becomes a `null` type (or an
 * `anyOf` with `{type: 'null'}`), `$ref`s to components become `$defs` of the
 * compiled schema, `oneOf` is read as `anyOf` (GitHub's bodies use `oneOf`
 * with overlapping object branches that a strict `oneOf` would reject), and
 * OpenAPI-only keywords (example, discriminator, x-*) are dropped.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

export interface OpenApiOperation {
  operationId: string;
  method: string;
  template: string;
  tags: string[];
  docsUrl: string;
  raw: JsonObject;
}

export interface RouteTemplate {
  template: string;
  segments: Array<{ literal: string } | { param: string }>;
  literalCount: number;
  operations: Map<string, OpenApiOperation>;
  /** Regex allowing multi-segment values for ref-like params (`ref`, `branch`, `basehead`, `path`). */
  multi: RegExp | null;
  params: string[];
}

export interface RouteMatch {
  route: RouteTemplate;
  params: Record<string, string>;
  /** The operation for the method, or undefined when the path is known but the method is not. */
  operation?: OpenApiOperation;
}

export interface LoadStats {
  ms: number;
  rssBeforeMB: number;
  rssAfterMB: number;
  bytes: number;
  paths: number;
  operations: number;
}

interface Spec {
  doc: JsonObject;
  routes: RouteTemplate[];
  byOperationId: Map<string, OpenApiOperation>;
  stats: LoadStats;
}

const MULTI_SEGMENT_PARAMS = new Set(['ref', 'branch', 'basehead', 'path', 'tag']);
const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'];

let spec: Spec | undefined;

export function specPath(): string {
  const require = createRequire(import.meta.url);
  return require.resolve('@octokit/openapi/generated/api.github.com.json');
}

/** Loads and indexes the description; once per process. */
export function loadSpec(): Spec {
  if (spec) return spec;
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const text = readFileSync(specPath(), 'utf8');
  const doc = JSON.parse(text) as JsonObject;
  const routes: RouteTemplate[] = [];
  const byOperationId = new Map<string, OpenApiOperation>();
  const paths = doc.paths as { [k: string]: JsonObject };
  let operations = 0;
  for (const [template, item] of Object.entries(paths)) {
    const segments = template
      .split('/')
      .slice(1)
      .map((s): { literal: string } | { param: string } => (/^\{[^}]+\}$/.test(s) ? { param: s.slice(1, -1) } : { literal: s }));
    const params = segments.flatMap((s) => ('param' in s ? [s.param] : []));
    const hasMulti = params.some((p) => MULTI_SEGMENT_PARAMS.has(p));
    const multi = hasMulti
      ? new RegExp('^/' + segments.map((s) => ('param' in s ? (MULTI_SEGMENT_PARAMS.has(s.param) ? '(.+?)' : '([^/]+)') : escapeRe(s.literal))).join('/') + '$')
      : null;
    const route: RouteTemplate = {
      template,
      segments,
      literalCount: segments.filter((s) => 'literal' in s).length,
      operations: new Map(),
      multi,
      params,
    };
    for (const m of METHODS) {
      const op = item[m] as JsonObject | undefined;
      if (!op) continue;
      const ext = op.externalDocs as JsonObject | undefined;
      const o: OpenApiOperation = {
        operationId: String(op.operationId),
        method: m.toUpperCase(),
        template,
        tags: (op.tags as string[] | undefined) ?? [],
        docsUrl: typeof ext?.url === 'string' ? ext.url : 'https://docs.github.com/rest',
        raw: op,
      };
      route.operations.set(o.method, o);
      byOperationId.set(o.operationId, o);
      operations++;
    }
    routes.push(route);
  }
  const t1 = performance.now();
  spec = {
    doc,
    routes,
    byOperationId,
    stats: {
      ms: Math.round(t1 - t0),
      rssBeforeMB: Math.round(rssBefore / 1e6),
      rssAfterMB: Math.round(process.memoryUsage().rss / 1e6),
      bytes: text.length,
      paths: routes.length,
      operations,
    },
  };
  return spec;
}

/** How long the load took and what it cost (null before the first load). */
export function specLoadStats(): LoadStats | null {
  return spec?.stats ?? null;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function decodeSegment(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/**
 * Finds the path template for `path` (no query). Literal segments win over
 * parameters; a route with an operation for `method` wins over one without;
 * ref-like parameters may span several segments when nothing else matches.
 */
export function matchRoute(method: string, path: string): RouteMatch | null {
  const { routes } = loadSpec();
  const raw = path.split('/').slice(1);
  const candidates: RouteMatch[] = [];
  for (const route of routes) {
    if (route.segments.length !== raw.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < raw.length; i++) {
      const seg = route.segments[i]!;
      const value = decodeSegment(raw[i]!);
      if (value === null || value === '') {
        ok = false;
        break;
      }
      if ('literal' in seg) {
        if (seg.literal !== value) {
          ok = false;
          break;
        }
      } else params[seg.param] = value;
    }
    if (ok) candidates.push({ route, params });
  }
  if (candidates.length === 0) {
    for (const route of routes) {
      if (!route.multi) continue;
      const m = route.multi.exec(path);
      if (!m) continue;
      const params: Record<string, string> = {};
      let ok = true;
      route.params.forEach((p, i) => {
        const v = decodeSegment(m[i + 1]!);
        if (v === null || v === '') ok = false;
        else params[p] = v;
      });
      if (ok) candidates.push({ route, params });
    }
  }
  if (candidates.length === 0) return null;
  const score = (c: RouteMatch): number[] => [
    c.route.operations.has(method) ? 1 : 0,
    c.route.literalCount,
    ...c.route.segments.map((s) => ('literal' in s ? 1 : 0)),
  ];
  candidates.sort((a, b) => {
    const sa = score(a);
    const sb = score(b);
    for (let i = 0; i < Math.max(sa.length, sb.length); i++) {
      const d = (sb[i] ?? 0) - (sa[i] ?? 0);
      if (d) return d;
    }
    return 0;
  });
  const best = candidates[0]!;
  const operation = best.route.operations.get(method);
  return operation ? { ...best, operation } : best;
}

export function operationById(operationId: string): OpenApiOperation | undefined {
  return loadSpec().byOperationId.get(operationId);
}

// ---------------------------------------------------------------- schemas → Ajv

const KNOWN_FORMATS: Record<string, true | RegExp> = {
  'date-time': /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  uri: /^[a-zA-Z][a-zA-Z0-9+.-]*:[^\s]*$/,
  email: /^[^\s@]+@[^\s@]+$/,
};
const DROP_KEYS = new Set(['example', 'examples', 'discriminator', 'xml', 'externalDocs', 'nullable', 'readOnly', 'writeOnly']);

let ajvInstance: Ajv | undefined;
function ajv(): Ajv {
  if (!ajvInstance) {
    ajvInstance = new Ajv({ strict: false, allErrors: true, validateFormats: true, validateSchema: false });
    for (const [name, re] of Object.entries(KNOWN_FORMATS)) if (re !== true) ajvInstance.addFormat(name, re);
  }
  return ajvInstance;
}

function resolveRef(ref: string): JsonObject {
  const doc = loadSpec().doc;
  let node: Json = doc;
  for (const part of ref.replace(/^#\//, '').split('/')) {
    node = (node as JsonObject)[part.replace(/~1/g, '/').replace(/~0/g, '~')] ?? null;
  }
  if (!node || typeof node !== 'object') throw new Error(`unresolvable $ref ${ref}`);
  return node as JsonObject;
}

/** Resolves a (non-schema) $ref chain, e.g. a parameter or a response. */
function deref(node: JsonObject): JsonObject {
  let n = node;
  while (typeof n.$ref === 'string') n = resolveRef(n.$ref);
  return n;
}

function convert(node: Json, refs: Set<string>): Json {
  if (Array.isArray(node)) return node.map((n) => convert(n, refs));
  if (!node || typeof node !== 'object') return node;
  if (typeof node.$ref === 'string') {
    const m = /^#\/components\/schemas\/(.+)$/.exec(node.$ref);
    if (m) {
      refs.add(m[1]!);
      return { $ref: `#/$defs/${m[1]!}` };
    }
    return convert(deref(node), refs);
  }
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) {
    if (DROP_KEYS.has(k) || k.startsWith('x-')) continue;
    if (k === 'format') {
      if (typeof v === 'string' && KNOWN_FORMATS[v]) out.format = v;
      continue;
    }
    if (k === 'properties' && v && typeof v === 'object' && !Array.isArray(v)) {
      const props: JsonObject = {};
      for (const [pk, pv] of Object.entries(v)) props[pk] = convert(pv, refs);
      out.properties = props;
      continue;
    }
    if (k === 'oneOf') {
      out.anyOf = convert(v, refs);
      continue;
    }
    out[k] = convert(v, refs);
  }
  if (node.nullable === true) {
    if (typeof out.type === 'string') {
      out.type = [out.type, 'null'];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    } else if (out.type === undefined) {
      const { description, ...rest } = out;
      const wrapped: JsonObject = { anyOf: [rest, { type: 'null' }] };
      if (description !== undefined) wrapped.description = description;
      return wrapped;
    }
  }
  return out;
}

/** A JSON Schema (with the `$defs` it needs) for an OpenAPI schema node. */
export function toJsonSchema(node: Json): JsonObject {
  const refs = new Set<string>();
  const root = convert(node, refs) as JsonObject;
  const defs: JsonObject = {};
  const doc = loadSpec().doc;
  const schemas = (doc.components as JsonObject).schemas as JsonObject;
  const queue = [...refs];
  while (queue.length) {
    const name = queue.pop()!;
    if (name in defs) continue;
    const before = new Set(refs);
    defs[name] = convert(schemas[name] ?? {}, refs);
    for (const r of refs) if (!before.has(r)) queue.push(r);
  }
  return Object.keys(defs).length ? { ...root, $defs: defs } : root;
}

const validatorCache = new Map<string, ValidateFunction | null>();

function cached(key: string, build: () => JsonObject | null): ValidateFunction | null {
  if (validatorCache.has(key)) return validatorCache.get(key)!;
  const schema = build();
  const v = schema ? ajv().compile(schema) : null;
  validatorCache.set(key, v);
  return v;
}

export interface RequestBodySpec {
  required: boolean;
  validate: ValidateFunction | null;
}

export function requestBodySpec(op: OpenApiOperation): RequestBodySpec | null {
  const rb = op.raw.requestBody as JsonObject | undefined;
  if (!rb) return null;
  const body = deref(rb);
  const content = body.content as JsonObject | undefined;
  const json = content?.['application/json'] as JsonObject | undefined;
  return {
    required: body.required === true,
    validate: json?.schema ? cached(`body:${op.operationId}`, () => toJsonSchema(json.schema!)) : null,
  };
}

export interface ParamSpec {
  name: string;
  in: 'query' | 'path' | 'header';
  required: boolean;
  schema: JsonObject;
}

export function operationParams(op: OpenApiOperation): ParamSpec[] {
  const list = (op.raw.parameters as JsonObject[] | undefined) ?? [];
  return list.map((p) => {
    const d = deref(p);
    return {
      name: String(d.name),
      in: d.in as ParamSpec['in'],
      required: d.required === true,
      schema: (d.schema as JsonObject | undefined) ?? {},
    };
  });
}

/** Validator for an object holding every query (or path) parameter, already coerced. */
export function paramsValidator(op: OpenApiOperation, where: 'query' | 'path'): ValidateFunction | null {
  return cached(`${where}:${op.operationId}`, () => {
    const params = operationParams(op).filter((p) => p.in === where);
    if (params.length === 0) return null;
    const properties: JsonObject = {};
    for (const p of params) properties[p.name] = p.schema;
    return toJsonSchema({
      type: 'object',
      properties,
      required: params.filter((p) => p.required).map((p) => p.name),
    });
  });
}

/** Turns a query string value into the type its schema declares, so Ajv can check it. */
export function coerceParam(schema: JsonObject, raw: string): Json {
  let s = schema;
  if (typeof s.$ref === 'string') s = deref(s);
  const type = s.type;
  if (type === 'integer' || type === 'number') {
    if (/^-?\d+(\.\d+)?$/.test(raw)) return Number(raw);
    return raw;
  }
  if (type === 'boolean') return raw === 'true' ? true : raw === 'false' ? false : raw;
  if (type === 'array') {
    const items = (s.items as JsonObject | undefined) ?? {};
    return raw.split(',').map((x) => coerceParam(items, x));
  }
  return raw;
}

/** Validator of the JSON response for `status` of an operation (null when the spec declares none). */
export function responseValidator(op: OpenApiOperation, status: number): ValidateFunction | null {
  const key = `response:${op.operationId}:${status}`;
  if (validatorCache.has(key)) return validatorCache.get(key)!;
  const responses = op.raw.responses as JsonObject | undefined;
  const r = responses?.[String(status)] as JsonObject | undefined;
  const json = r ? ((deref(r).content as JsonObject | undefined)?.['application/json'] as JsonObject | undefined) : undefined;
  const v = json?.schema ? sharedAjv().compile(sharedSchema(json.schema)) : null;
  validatorCache.set(key, v);
  return v;
}

/*
 * Response validators share their component schemas: each one (pull-request,
 * repository, simple-user …) is added once to a dedicated Ajv as `gh:<name>`
 * and compiled once, instead of inlined again into every operation's
 * validator. Validation runs on every answer, so this keeps its cost to the
 * first use of each component (most operations reuse the same few).
 */
let sharedInstance: Ajv | undefined;
const sharedAdded = new Set<string>();
function sharedAjv(): Ajv {
  if (!sharedInstance) {
    sharedInstance = new Ajv({ strict: false, allErrors: true, validateFormats: true, validateSchema: false, inlineRefs: false });
    for (const [name, re] of Object.entries(KNOWN_FORMATS)) if (re !== true) sharedInstance.addFormat(name, re);
  }
  return sharedInstance;
}

/** `node` converted, its component refs pointing at shared schemas (added as needed). */
function sharedSchema(node: Json): JsonObject {
  const refs = new Set<string>();
  const root = convert(node, refs) as JsonObject;
  const schemas = (loadSpec().doc.components as JsonObject).schemas as JsonObject;
  const queue = [...refs];
  while (queue.length) {
    const name = queue.pop()!;
    if (sharedAdded.has(name)) continue;
    sharedAdded.add(name);
    const own = new Set<string>();
    const schema = convert(schemas[name] ?? {}, own) as JsonObject;
    sharedAjv().addSchema(retarget({ ...schema, $id: `gh:${name}` }) as JsonObject);
    queue.push(...own);
  }
  return retarget(root) as JsonObject;
}

/** `#/$defs/<name>` (what `convert` writes) → `gh:<name>`. */
function retarget(node: Json): Json {
  if (Array.isArray(node)) return node.map(retarget);
  if (!node || typeof node !== 'object') return node;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')) out.$ref = `gh:${v.slice('#/$defs/'.length)}`;
    else out[k] = retarget(v);
  }
  return out;
}

export function declaredStatuses(op: OpenApiOperation): number[] {
  return Object.keys((op.raw.responses as JsonObject | undefined) ?? {})
    .map(Number)
    .filter(Number.isFinite);
}

export interface GitHubFieldError {
  resource: string;
  field: string;
  code: 'missing_field' | 'invalid' | 'missing' | 'already_exists' | 'unprocessable' | 'custom';
  message?: string;
  value?: Json;
}

const TAG_RESOURCE: Record<string, string> = {
  pulls: 'PullRequest',
  issues: 'Issue',
  checks: 'CheckRun',
  repos: 'Repository',
  git: 'Reference',
  actions: 'WorkflowRun',
  search: 'Search',
  orgs: 'Organization',
  users: 'User',
};

export function resourceOf(op: OpenApiOperation): string {
  const tag = op.tags[0] ?? 'resource';
  if (op.operationId === 'repos/create-commit-status') return 'Status';
  return TAG_RESOURCE[tag] ?? tag.charAt(0).toUpperCase() + tag.slice(1);
}

function fieldOf(instancePath: string, extra?: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  return parts.join('.').replace(/\.(\d+)(?=\.|$)/g, '[$1]');
}

/** Ajv errors → GitHub's `errors: [{resource, field, code}]`. */
export function toGitHubErrors(resource: string, errors: ErrorObject[] | null | undefined, root: Json): GitHubFieldError[] {
  const out: GitHubFieldError[] = [];
  const seen = new Set<string>();
  const list = errors ?? [];
  const useful = list.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'if');
  for (const e of useful.length ? useful : list) {
    let err: GitHubFieldError;
    if (e.keyword === 'required') {
      const missing = String((e.params as { missingProperty: string }).missingProperty);
      err = { resource, field: fieldOf(e.instancePath, missing), code: 'missing_field', message: `${fieldOf(e.instancePath, missing)} is missing` };
    } else if (e.keyword === 'additionalProperties') {
      const extra = String((e.params as { additionalProperty: string }).additionalProperty);
      err = { resource, field: fieldOf(e.instancePath, extra), code: 'invalid', message: `${fieldOf(e.instancePath, extra)} is not a permitted key` };
    } else {
      const field = fieldOf(e.instancePath) || '(body)';
      let msg = `${field} ${e.message ?? 'is invalid'}`;
      if (e.keyword === 'enum') msg = `${field} must be one of: ${((e.params as { allowedValues: unknown[] }).allowedValues ?? []).join(', ')}`;
      err = { resource, field, code: 'invalid', message: msg, value: valueAt(root, e.instancePath) };
    }
    const key = `${err.field}|${err.code}|${err.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(err);
  }
  return out;
}

function valueAt(root: Json, pointer: string): Json {
  let node: Json = root;
  for (const part of pointer.split('/').slice(1)) {
    if (node && typeof node === 'object') node = (node as JsonObject)[part.replace(/~1/g, '/').replace(/~0/g, '~')] ?? null;
    else return null;
  }
  if (node && typeof node === 'object') return null;
  return node;
}
