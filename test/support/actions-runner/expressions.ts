/**
 * Expressions and templates, evaluated the way the runner does: `${{ }}`
 * expressions through GitHub's own evaluator (@actions/expressions), template
 * tokens from GitHub's own parser (@actions/workflow-parser) turned into
 * values. Status functions and hashFiles are the runner's, given as extension
 * functions, with GitHub's semantics
 * (https://docs.github.com/actions/reference/workflows-and-actions/expressions#status-check-functions).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { data, Evaluator, Lexer, Parser } from '@actions/expressions';
import { TokenType } from '@actions/expressions/lexer';
import type { FunctionDefinition } from '@actions/expressions/funcs/info';
import type { BasicExpressionToken } from '@actions/workflow-parser/templates/tokens/basic-expression-token';
import type { TemplateToken } from '@actions/workflow-parser/templates/tokens/template-token';
import { TokenType as TemplateTokenType } from '@actions/workflow-parser/templates/tokens/types';
import { isBasicExpression, isBoolean, isMapping, isNumber, isSequence, isString } from '@actions/workflow-parser';
import { minimatch } from 'minimatch';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every named context a workflow can read (which one is allowed where is the parser's business). */
export const CONTEXT_NAMES = ['github', 'env', 'vars', 'secrets', 'inputs', 'needs', 'strategy', 'matrix', 'steps', 'job', 'jobs', 'runner'];

/** What the status functions look at: the job's needs (job level) or the steps so far (step level). */
export interface StatusView {
  /** `success` | `failure` | `cancelled`: the state the status functions read. */
  status: 'success' | 'failure' | 'cancelled';
  /** The run (or job) was cancelled. */
  cancelled: boolean;
}

export interface EvalEnv {
  contexts: Record<string, Json>;
  status?: StatusView;
  /** For hashFiles: the workspace (GITHUB_WORKSPACE) the patterns are relative to. */
  workspace?: string;
}

export class ExpressionFailure extends Error {}

const STATUS_FUNCTIONS = ['success', 'failure', 'cancelled', 'always'] as const;

function functionInfos() {
  return [...STATUS_FUNCTIONS.map((name) => ({ name, minArgs: 0, maxArgs: 0 })), { name: 'hashFiles', minArgs: 1, maxArgs: 255 }];
}

function functionsFor(env: EvalEnv): Map<string, FunctionDefinition> {
  const s = env.status ?? { status: 'success', cancelled: false };
  const bool = (v: boolean) => new data.BooleanData(v);
  const defs: FunctionDefinition[] = [
    { name: 'success', minArgs: 0, maxArgs: 0, call: () => bool(s.status === 'success' && !s.cancelled) },
    { name: 'failure', minArgs: 0, maxArgs: 0, call: () => bool(s.status === 'failure' && !s.cancelled) },
    { name: 'cancelled', minArgs: 0, maxArgs: 0, call: () => bool(s.cancelled) },
    { name: 'always', minArgs: 0, maxArgs: 0, call: () => bool(true) },
    {
      name: 'hashFiles',
      minArgs: 1,
      maxArgs: 255,
      call: (...patterns) =>
        new data.StringData(
          hashFiles(
            env.workspace ?? process.cwd(),
            patterns.map((p) => p.coerceString()),
          ),
        ),
    },
  ];
  return new Map(defs.map((d) => [d.name.toLowerCase(), d]));
}

/**
 * hashFiles as the runner computes it: the SHA-256 of the concatenated
 * SHA-256 digests of every matching file under the workspace, in path order;
 * '' when nothing matches. Patterns starting with `!` exclude.
 */
export function hashFiles(workspace: string, patterns: string[]): string {
  const include = patterns.filter((p) => !p.startsWith('!'));
  const exclude = patterns.filter((p) => p.startsWith('!')).map((p) => p.slice(1));
  const files = walk(workspace)
    .map((f) => relative(workspace, f))
    .filter((f) => include.some((p) => minimatch(f, p, { dot: true })) && !exclude.some((p) => minimatch(f, p, { dot: true })))
    .sort();
  if (!files.length) return '';
  const outer = createHash('sha256');
  for (const f of files)
    outer.update(
      createHash('sha256')
        .update(readFileSync(join(workspace, f)))
        .digest(),
    );
  return outer.digest('hex');
}

function walk(dir: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    if (name === '.git') continue;
    const p = resolve(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) out.push(...walk(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

function toData(value: Json): data.ExpressionData {
  return JSON.parse(JSON.stringify(value ?? null), data.reviver) as data.ExpressionData;
}

function toJson(value: data.ExpressionData): Json {
  return JSON.parse(JSON.stringify(value, data.replacer) ?? 'null') as Json;
}

/**
 * The lexer of @actions/expressions 0.3.61 unescapes only the first `''` of a
 * string literal (`value.replace("''", "'")`); GitHub's own evaluator unescapes
 * them all. Every STRING token is given its value again from its lexeme.
 */
function lex(expression: string) {
  const lexed = new Lexer(expression).lex();
  for (const t of lexed.tokens) {
    if (t.type === TokenType.STRING && t.lexeme.length >= 2) t.value = t.lexeme.slice(1, -1).replace(/''/g, "'");
  }
  return lexed;
}

/** Evaluates one expression (without `${{ }}`). Throws ExpressionFailure with the expression in the message. */
export function evaluate(expression: string, env: EvalEnv): Json {
  try {
    const lexed = lex(expression);
    const ast = new Parser(lexed.tokens, CONTEXT_NAMES, functionInfos()).parse();
    const ctx = new data.Dictionary();
    for (const [k, v] of Object.entries(env.contexts)) ctx.add(k, toData(v));
    return toJson(new Evaluator(ast, ctx, functionsFor(env)).evaluate());
  } catch (err) {
    throw new ExpressionFailure(`The template is not valid. ${expression}: ${(err as Error).message}`);
  }
}

/** Truthiness as the expression language defines it. */
export function truthy(v: Json): boolean {
  if (v === null || v === false || v === 0 || v === '') return false;
  if (typeof v === 'number' && Number.isNaN(v)) return false;
  return true;
}

/** A value as a string, the way the runner coerces an expression's result into a string field. */
export function asString(v: Json): string {
  if (v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return String(v);
  return JSON.stringify(v, null, 2);
}

/**
 * A block scalar (`run: |`) with expressions. The parser of
 * @actions/workflow-parser builds its expression from the raw YAML source
 * (indentation and all, also inside an expression that spans lines), which
 * suits an editor but not a runner. Here, as GitHub's TemplateReader.cs
 * (ParseScalar) does, the block's value (indentation removed, chomping by its
 * header) is split into text and `${{ }}` expressions: a value that is exactly
 * one expression keeps its type (a matrix vector from fromJSON), anything else
 * is the text with each expression's value in place.
 */
function evaluateBlockScalar(token: BasicExpressionToken, env: EvalEnv): Json {
  const parts = scalarSegments(blockValue(token.source ?? '', token.blockScalarHeader ?? '|'));
  const only = parts.length === 1 ? parts[0]! : undefined;
  if (only && typeof only !== 'string') return evaluate(only.expression, env);
  return parts.map((p) => (typeof p === 'string' ? p : asString(evaluate(p.expression, env)))).join('');
}

/** Text and expressions of a scalar's value; `}}` inside a '…' string literal does not close an expression (TemplateReader.cs). */
function scalarSegments(raw: string): Array<string | { expression: string }> {
  const out: Array<string | { expression: string }> = [];
  let at = 0;
  for (let open = raw.indexOf('${{'); open >= 0; open = raw.indexOf('${{', at)) {
    if (open > at) out.push(raw.slice(at, open));
    let inString = false;
    let close = open + 3;
    for (; close < raw.length; close++) {
      if (raw[close] === "'") inString = !inString;
      else if (!inString && raw[close] === '}' && raw[close - 1] === '}') break;
    }
    if (close >= raw.length) throw new ExpressionFailure(`The expression is not closed: ${raw.slice(open)}`);
    out.push({ expression: raw.slice(open + 3, close - 1).trim() });
    at = close + 1;
  }
  if (at < raw.length) out.push(raw.slice(at));
  return out;
}

/** A YAML block scalar's value from its source lines (literal `|` or folded `>`, with `-`/`+` chomping). */
export function blockValue(source: string, header: string): string {
  const lines = source.replace(/\r\n/g, '\n').split('\n');
  const explicit = /\d/.exec(header);
  const first = lines.find((l) => l.trim() !== '');
  const indent = explicit ? Number(explicit[0]) : first ? first.length - first.trimStart().length : 0;
  const body = lines.map((l) => (l.trim() === '' ? '' : l.slice(indent)));
  while (body.length && body[body.length - 1] === '') body.pop();
  let value = header.startsWith('>') ? fold(body) : body.join('\n');
  if (header.includes('-')) return value;
  if (header.includes('+')) {
    const trailing = source.replace(/[ \t]*$/, '').match(/\n*$/)?.[0].length ?? 0;
    return value + '\n'.repeat(Math.max(1, trailing));
  }
  if (value !== '') value += '\n';
  return value;
}

function fold(lines: string[]): string {
  let out = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (i === 0) out = line;
    else if (line === '' || /^\s/.test(line) || /^\s/.test(lines[i - 1]!) || lines[i - 1] === '') out += `\n${line}`;
    else out += ` ${line}`;
  }
  return out;
}

/** A template token (literal, expression, mapping, sequence) as a value. */
export function evaluateToken(token: TemplateToken | undefined, env: EvalEnv): Json {
  if (!token) return null;
  if (isBasicExpression(token) && token.blockScalarHeader && token.originalExpressions?.length) return evaluateBlockScalar(token, env);
  if (isBasicExpression(token)) return evaluate(token.expression, env);
  if (isString(token)) return token.value;
  if (isNumber(token)) return token.value;
  if (isBoolean(token)) return token.value;
  // What GitHub's TemplateUnraveler.cs does: an item that is an expression yielding a sequence is spliced into its
  // sequence, and a `${{ insert }}` key merges the mapping its value yields into the mapping that holds it.
  if (isSequence(token)) {
    const out: Json[] = [];
    for (const item of token) {
      const value = evaluateToken(item, env);
      if (isBasicExpression(item) && Array.isArray(value)) out.push(...value);
      else out.push(value);
    }
    return out;
  }
  if (isMapping(token)) {
    const out: Record<string, Json> = {};
    for (const pair of token) {
      if (pair.key.templateTokenType !== TemplateTokenType.InsertExpression) {
        out[asString(evaluateToken(pair.key, env))] = evaluateToken(pair.value, env);
        continue;
      }
      const inserted = evaluateToken(pair.value, env);
      if (inserted === null || typeof inserted !== 'object' || Array.isArray(inserted))
        throw new ExpressionFailure(`Expected a mapping for \${{ insert }}, got ${asString(inserted)}`);
      Object.assign(out, inserted);
    }
    return out;
  }
  return null;
}

/** A job or step `if:`: the parser already wrapped a condition without a status function in `success() && (…)`. */
export function condition(token: TemplateToken | undefined, env: EvalEnv, fallback = 'success()'): boolean {
  if (!token) return truthy(evaluate(fallback, env));
  if (isBasicExpression(token)) return truthy(evaluate(token.expression, env));
  return truthy(evaluateToken(token, env));
}

/** A mapping of strings (`env:`, a step's `with:`), evaluated whole as GitHub does: its keys do not see each other. */
export function evaluateStrings(token: TemplateToken | undefined, env: EvalEnv): Record<string, string> {
  const value = evaluateToken(token, env);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asString(v)]));
}

/** A string field that may contain expressions (a step's `run`, `with` values, names). */
export function evaluateString(token: TemplateToken | undefined, env: EvalEnv): string {
  return asString(evaluateToken(token, env));
}
