/**
 * A small, real GraphQL implementation for the subset Fleet sends: one
 * operation (query or mutation) with variable definitions, selection sets,
 * aliases, and arguments (string, block string, int, float, boolean, null,
 * enum, list, input object, variable), and inline fragments (`... on Commit
 * { … }`) on objects and interfaces (`Repository.object` answers a GitObject).
 * Named fragments, directives and subscriptions are refused with a GraphQL error. Every query is validated
 * against the emulated schema before it runs (unknown field or argument,
 * missing required argument, selections on scalars, undefined variables),
 * as GitHub does, and answers `{errors}` without `data` when invalid.
 */

// ---------------------------------------------------------------- lexer

type TokKind = 'punct' | 'name' | 'int' | 'float' | 'string' | 'eof';
interface Token {
  kind: TokKind;
  value: string;
  line: number;
  column: number;
}

export interface Loc {
  line: number;
  column: number;
}

export class GraphQLSyntaxError extends Error {
  constructor(
    message: string,
    readonly loc: Loc,
  ) {
    super(message);
  }
}

function lex(src: string): Token[] {
  const toks: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const loc = (at: number): Loc => ({ line, column: at - lineStart + 1 });
  while (i < src.length) {
    const c = src[i]!;
    if (c === '\n') {
      i++;
      line++;
      lineStart = i;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === ',' || c === '\ufeff') {
      i++;
      continue;
    }
    if (c === '#') {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    const start = loc(i);
    if (src.startsWith('...', i)) {
      toks.push({ kind: 'punct', value: '...', ...start });
      i += 3;
      continue;
    }
    if ('!$()[]{}:=@|&'.includes(c)) {
      toks.push({ kind: 'punct', value: c, ...start });
      i++;
      continue;
    }
    if (/[_A-Za-z]/.test(c)) {
      let j = i + 1;
      while (j < src.length && /[_0-9A-Za-z]/.test(src[j]!)) j++;
      toks.push({ kind: 'name', value: src.slice(i, j), ...start });
      i = j;
      continue;
    }
    if (c === '-' || /[0-9]/.test(c)) {
      const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(src.slice(i));
      if (!m) throw new GraphQLSyntaxError(`Parse error on "${c}" at [${start.line}, ${start.column}]`, start);
      toks.push({ kind: m[2] || m[3] ? 'float' : 'int', value: m[0], ...start });
      i += m[0].length;
      continue;
    }
    if (c === '"') {
      if (src.startsWith('"""', i)) {
        const end = src.indexOf('"""', i + 3);
        if (end < 0) throw new GraphQLSyntaxError(`Unterminated string at [${start.line}, ${start.column}]`, start);
        const raw = src.slice(i + 3, end);
        toks.push({ kind: 'string', value: blockString(raw), ...start });
        for (const ch of src.slice(i, end + 3)) if (ch === '\n') line++;
        const lastNl = src.lastIndexOf('\n', end);
        if (lastNl >= i) lineStart = lastNl + 1;
        i = end + 3;
        continue;
      }
      let j = i + 1;
      let out = '';
      for (;;) {
        if (j >= src.length || src[j] === '\n') throw new GraphQLSyntaxError(`Unterminated string at [${start.line}, ${start.column}]`, start);
        const ch = src[j]!;
        if (ch === '"') break;
        if (ch === '\\') {
          const e = src[j + 1];
          const map: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
          if (e === 'u') {
            const hex = src.slice(j + 2, j + 6);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new GraphQLSyntaxError(`Bad unicode escape at [${start.line}, ${start.column}]`, start);
            out += String.fromCharCode(parseInt(hex, 16));
            j += 6;
            continue;
          }
          if (e === undefined || !(e in map)) throw new GraphQLSyntaxError(`Bad escape at [${start.line}, ${start.column}]`, start);
          out += map[e];
          j += 2;
          continue;
        }
        out += ch;
        j++;
      }
      toks.push({ kind: 'string', value: out, ...start });
      i = j + 1;
      continue;
    }
    throw new GraphQLSyntaxError(`Parse error on "${c}" at [${start.line}, ${start.column}]`, start);
  }
  toks.push({ kind: 'eof', value: '', ...loc(i) });
  return toks;
}

function blockString(raw: string): string {
  const lines = raw.replace(/\\"""/g, '"""').split(/\r\n|\n|\r/);
  let common: number | null = null;
  for (const l of lines.slice(1)) {
    const indent = l.length - l.trimStart().length;
    if (indent < l.length && (common === null || indent < common)) common = indent;
  }
  const out = lines.map((l, i) => (i === 0 || common === null ? l : l.slice(common)));
  while (out.length && out[0]!.trim() === '') out.shift();
  while (out.length && out[out.length - 1]!.trim() === '') out.pop();
  return out.join('\n');
}

// ---------------------------------------------------------------- parser

export type TypeRef = { kind: 'named'; name: string } | { kind: 'list'; of: TypeRef } | { kind: 'nonnull'; of: TypeRef };

export type ValueNode =
  | { kind: 'var'; name: string; loc: Loc }
  | { kind: 'int' | 'float'; value: number; loc: Loc }
  | { kind: 'string'; value: string; loc: Loc }
  | { kind: 'boolean'; value: boolean; loc: Loc }
  | { kind: 'null'; loc: Loc }
  | { kind: 'enum'; value: string; loc: Loc }
  | { kind: 'list'; values: ValueNode[]; loc: Loc }
  | { kind: 'object'; fields: Array<{ name: string; value: ValueNode }>; loc: Loc };

export interface FieldNode {
  alias?: string;
  name: string;
  args: Array<{ name: string; value: ValueNode; loc: Loc }>;
  selections?: SelectionNode[];
  loc: Loc;
}

/** `... on Type { … }` (or `... { … }`, no type condition): its fields apply where the object is of that type. */
export interface InlineFragmentNode {
  inline: true;
  on: string | undefined;
  selections: SelectionNode[];
  loc: Loc;
}

export type SelectionNode = FieldNode | InlineFragmentNode;

export function isFragment(s: SelectionNode): s is InlineFragmentNode {
  return (s as InlineFragmentNode).inline === true;
}

export interface VarDef {
  name: string;
  type: TypeRef;
  defaultValue?: ValueNode;
  loc: Loc;
}

export interface OperationNode {
  kind: 'query' | 'mutation';
  name?: string;
  variables: VarDef[];
  selections: SelectionNode[];
  loc: Loc;
}

export function parse(src: string): OperationNode[] {
  const toks = lex(src);
  let p = 0;
  const peek = (): Token => toks[p]!;
  const fail = (t: Token, what?: string): never => {
    const shown = t.kind === 'eof' ? 'end of file' : `"${t.value}"`;
    throw new GraphQLSyntaxError(`Parse error on ${shown}${what ? ` (expected ${what})` : ''} at [${t.line}, ${t.column}]`, { line: t.line, column: t.column });
  };
  const expect = (v: string): Token => {
    const t = toks[p]!;
    if (t.kind !== 'punct' || t.value !== v) fail(t, v);
    p++;
    return t;
  };
  const isP = (v: string): boolean => peek().kind === 'punct' && peek().value === v;
  const name = (): Token => {
    const t = toks[p]!;
    if (t.kind !== 'name') fail(t, 'a name');
    p++;
    return t;
  };
  const unsupported = (t: Token, what: string): never => {
    throw new GraphQLSyntaxError(`${what} are not supported by this emulator (at [${t.line}, ${t.column}])`, { line: t.line, column: t.column });
  };

  const parseType = (): TypeRef => {
    let t: TypeRef;
    if (isP('[')) {
      p++;
      t = { kind: 'list', of: parseType() };
      expect(']');
    } else t = { kind: 'named', name: name().value };
    if (isP('!')) {
      p++;
      t = { kind: 'nonnull', of: t };
    }
    return t;
  };

  const parseValue = (constOnly: boolean): ValueNode => {
    const t = peek();
    const loc = { line: t.line, column: t.column };
    if (t.kind === 'punct' && t.value === '$') {
      if (constOnly) fail(t, 'a constant');
      p++;
      return { kind: 'var', name: name().value, loc };
    }
    if (t.kind === 'int') {
      p++;
      return { kind: 'int', value: Number(t.value), loc };
    }
    if (t.kind === 'float') {
      p++;
      return { kind: 'float', value: Number(t.value), loc };
    }
    if (t.kind === 'string') {
      p++;
      return { kind: 'string', value: t.value, loc };
    }
    if (t.kind === 'name') {
      p++;
      if (t.value === 'true' || t.value === 'false') return { kind: 'boolean', value: t.value === 'true', loc };
      if (t.value === 'null') return { kind: 'null', loc };
      return { kind: 'enum', value: t.value, loc };
    }
    if (isP('[')) {
      p++;
      const values: ValueNode[] = [];
      while (!isP(']')) values.push(parseValue(constOnly));
      p++;
      return { kind: 'list', values, loc };
    }
    if (isP('{')) {
      p++;
      const fields: Array<{ name: string; value: ValueNode }> = [];
      while (!isP('}')) {
        const n = name().value;
        expect(':');
        fields.push({ name: n, value: parseValue(constOnly) });
      }
      p++;
      return { kind: 'object', fields, loc };
    }
    return fail(t, 'a value');
  };

  const parseSelections = (): SelectionNode[] => {
    expect('{');
    const out: SelectionNode[] = [];
    while (!isP('}')) {
      const t = peek();
      if (t.kind === 'punct' && t.value === '...') {
        p++;
        let on: string | undefined;
        if (peek().kind === 'name' && peek().value === 'on') {
          p++;
          on = name().value;
        } else if (peek().kind === 'name') unsupported(peek(), 'Fragment spreads');
        if (isP('@')) unsupported(peek(), 'Directives');
        out.push({ inline: true, on, selections: parseSelections(), loc: { line: t.line, column: t.column } });
        continue;
      }
      const first = name();
      let alias: string | undefined;
      let fieldName = first.value;
      if (isP(':')) {
        p++;
        alias = first.value;
        fieldName = name().value;
      }
      const args: FieldNode['args'] = [];
      if (isP('(')) {
        p++;
        while (!isP(')')) {
          const an = name();
          expect(':');
          args.push({ name: an.value, value: parseValue(false), loc: { line: an.line, column: an.column } });
        }
        p++;
      }
      if (isP('@')) unsupported(peek(), 'Directives');
      const field: FieldNode = { name: fieldName, args, loc: { line: first.line, column: first.column } };
      if (alias !== undefined) field.alias = alias;
      if (isP('{')) field.selections = parseSelections();
      out.push(field);
    }
    if (out.length === 0) fail(peek(), 'a field');
    p++;
    return out;
  };

  const ops: OperationNode[] = [];
  while (peek().kind !== 'eof') {
    const t = peek();
    const loc = { line: t.line, column: t.column };
    if (isP('{')) {
      ops.push({ kind: 'query', variables: [], selections: parseSelections(), loc });
      continue;
    }
    if (t.kind !== 'name') fail(t);
    if (t.value === 'fragment') unsupported(t, 'Fragments');
    if (t.value === 'subscription') unsupported(t, 'Subscriptions');
    if (t.value !== 'query' && t.value !== 'mutation') fail(t, 'query or mutation');
    p++;
    const op: OperationNode = { kind: t.value as 'query' | 'mutation', variables: [], selections: [], loc };
    if (peek().kind === 'name') op.name = name().value;
    if (isP('(')) {
      p++;
      while (!isP(')')) {
        const d = expect('$');
        const vn = name().value;
        expect(':');
        const type = parseType();
        const def: VarDef = { name: vn, type, loc: { line: d.line, column: d.column } };
        if (isP('=')) {
          p++;
          def.defaultValue = parseValue(true);
        }
        op.variables.push(def);
      }
      p++;
    }
    if (isP('@')) unsupported(peek(), 'Directives');
    op.selections = parseSelections();
    ops.push(op);
  }
  if (ops.length === 0) fail(peek(), 'an operation');
  return ops;
}

// ---------------------------------------------------------------- schema & execution

export interface GraphQLErrorJson {
  message: string;
  type?: string;
  path?: Array<string | number>;
  locations?: Loc[];
  extensions?: Record<string, unknown>;
}

/** A resolver error: the field becomes null and the error is reported with its path. */
export class FieldError extends Error {
  constructor(
    message: string,
    readonly type: string,
  ) {
    super(message);
  }
}

export type Resolver = (parent: unknown, args: Record<string, unknown>, field: FieldNode) => unknown;

export interface FieldDef {
  /** GraphQL type: `String!`, `Repository`, `[RepositoryTopic!]!` … */
  type: string;
  args?: Record<string, string>;
  resolve: Resolver;
}

export interface ObjectTypeDef {
  kind: 'object';
  fields: Record<string, FieldDef>;
}
export interface InputTypeDef {
  kind: 'input';
  fields: Record<string, string>;
}
export interface EnumTypeDef {
  kind: 'enum';
  values: string[];
}
/** An interface: the fields every implementation has, which types implement it, and which one a value is. */
export interface InterfaceTypeDef {
  kind: 'interface';
  fields: Record<string, FieldDef>;
  possibleTypes: string[];
  resolveType(value: unknown): string;
}
export type TypeDef = ObjectTypeDef | InputTypeDef | EnumTypeDef | InterfaceTypeDef;

/** Object or interface: a type with fields that takes a selection set. */
function hasFields(def: TypeDef | undefined): def is ObjectTypeDef | InterfaceTypeDef {
  return def?.kind === 'object' || def?.kind === 'interface';
}

export interface Schema {
  types: Record<string, TypeDef>;
  query: string;
  mutation: string;
}

const SCALARS = new Set(['String', 'Int', 'Float', 'Boolean', 'ID', 'DateTime', 'URI', 'GitObjectID', 'HTML', 'GitSSHRemote', 'X509Certificate']);

export function parseTypeString(s: string): TypeRef {
  const r = parse(`query($x: ${s}) { a }`)[0]!;
  return r.variables[0]!.type;
}

const typeCache = new Map<string, TypeRef>();
function typeOf(s: string): TypeRef {
  let t = typeCache.get(s);
  if (!t) {
    t = parseTypeString(s);
    typeCache.set(s, t);
  }
  return t;
}

function namedType(t: TypeRef): string {
  return t.kind === 'named' ? t.name : namedType(t.of);
}

export function typeToString(t: TypeRef): string {
  return t.kind === 'named' ? t.name : t.kind === 'list' ? `[${typeToString(t.of)}]` : `${typeToString(t.of)}!`;
}

export interface ExecResult {
  data?: Record<string, unknown> | null;
  errors?: GraphQLErrorJson[];
}

/** Static validation of an operation against the schema (GitHub rejects the whole query when it fails). */
function validate(schema: Schema, op: OperationNode): GraphQLErrorJson[] {
  const errors: GraphQLErrorJson[] = [];
  const declared = new Map(op.variables.map((v) => [v.name, v]));
  for (const v of op.variables) {
    const n = namedType(v.type);
    if (!SCALARS.has(n) && !schema.types[n]) {
      errors.push({
        message: `${n} isn't a defined input type (on $${v.name})`,
        locations: [v.loc],
        extensions: { code: 'variableRequiresValidType', typeName: n, variableName: v.name },
      });
    }
  }
  const used = new Set<string>();
  const checkValue = (val: ValueNode, path: Array<string | number>): void => {
    if (val.kind === 'var') {
      used.add(val.name);
      if (!declared.has(val.name)) {
        errors.push({
          message: `Variable $${val.name} is used by ${op.name ?? 'anonymous ' + op.kind} but not declared`,
          locations: [val.loc],
          path,
          extensions: { code: 'variableNotDefined', variableName: val.name },
        });
      }
    } else if (val.kind === 'list') val.values.forEach((v) => checkValue(v, path));
    else if (val.kind === 'object') val.fields.forEach((f) => checkValue(f.value, path));
  };
  const walk = (typeName: string, selections: SelectionNode[], path: Array<string | number>, seen = new Map<string, FieldNode>()): void => {
    const type = schema.types[typeName];
    if (!hasFields(type)) return;
    const seenAliases = seen;
    for (const f of selections) {
      if (isFragment(f)) {
        const on = f.on ?? typeName;
        const cond = schema.types[on];
        if (!hasFields(cond)) {
          errors.push({
            message: `No such type ${on}, so it can't be a fragment condition`,
            locations: [f.loc],
            path,
            extensions: { code: 'undefinedType', typeName: on },
          });
          continue;
        }
        const overlaps =
          on === typeName ||
          (type.kind === 'interface' && type.possibleTypes.includes(on)) ||
          (cond.kind === 'interface' && cond.possibleTypes.includes(typeName));
        if (!overlaps) {
          errors.push({
            message: `Fragment on ${on} can't be spread inside ${typeName}`,
            locations: [f.loc],
            path: [...path, `... on ${on}`],
            extensions: { code: 'fragmentSpreadTypeMismatch', fragmentName: `... on ${on}`, parentName: typeName, typeName: on },
          });
          continue;
        }
        walk(on, f.selections, [...path, `... on ${on}`], on === typeName ? seenAliases : new Map());
        continue;
      }
      const key = f.alias ?? f.name;
      const fpath = [...path, key];
      const prev = seenAliases.get(key);
      if (prev && (prev.name !== f.name || JSON.stringify(prev.args) !== JSON.stringify(f.args))) {
        errors.push({ message: `Field '${key}' has a field conflict`, locations: [f.loc], path: fpath, extensions: { code: 'fieldConflict', fieldName: key } });
      }
      seenAliases.set(key, f);
      if (f.name === '__typename') {
        if (f.selections)
          errors.push({
            message: `Selections can't be made on scalars (field '__typename' returns String but has selections)`,
            locations: [f.loc],
            path: fpath,
          });
        continue;
      }
      const def = type.fields[f.name];
      if (!def) {
        errors.push({
          message: `Field '${f.name}' doesn't exist on type '${typeName}'`,
          locations: [f.loc],
          path: fpath,
          extensions: { code: 'undefinedField', typeName, fieldName: f.name },
        });
        continue;
      }
      const argDefs = def.args ?? {};
      for (const a of f.args) {
        if (!(a.name in argDefs)) {
          errors.push({
            message: `Field '${f.name}' doesn't accept argument '${a.name}'`,
            locations: [a.loc],
            path: [...fpath, a.name],
            extensions: { code: 'argumentNotAccepted', name: f.name, typeName: 'Field', argumentName: a.name },
          });
        }
        checkValue(a.value, [...fpath, a.name]);
      }
      for (const [an, at] of Object.entries(argDefs)) {
        if (at.endsWith('!') && !f.args.some((a) => a.name === an)) {
          errors.push({
            message: `Field '${f.name}' is missing required arguments: ${an}`,
            locations: [f.loc],
            path: fpath,
            extensions: { code: 'missingRequiredArguments', className: 'Field', name: f.name, arguments: an },
          });
        }
      }
      const rt = namedType(typeOf(def.type));
      const rdef = schema.types[rt];
      const isObject = hasFields(rdef);
      if (isObject && !f.selections) {
        errors.push({
          message: `Field must have selections (field '${f.name}' returns ${rt} but has no selections. Did you mean '${f.name} { ... }'?)`,
          locations: [f.loc],
          path: fpath,
          extensions: { code: 'selectionMismatch', nodeName: `field '${f.name}'`, typeName: rt },
        });
      } else if (!isObject && f.selections) {
        errors.push({
          message: `Selections can't be made on scalars (field '${f.name}' returns ${rt} but has selections [${f.selections.map((s) => (isFragment(s) ? `... on ${s.on ?? rt}` : s.name)).join(', ')}])`,
          locations: [f.loc],
          path: fpath,
          extensions: { code: 'selectionMismatch', nodeName: `field '${f.name}'`, typeName: rt },
        });
      } else if (isObject && f.selections) walk(rt, f.selections, fpath);
    }
  };
  walk(op.kind === 'query' ? schema.query : schema.mutation, op.selections, [op.kind]);
  for (const v of op.variables) {
    if (!used.has(v.name))
      errors.push({
        message: `Variable $${v.name} is declared by ${op.name ?? 'anonymous ' + op.kind} but not used`,
        locations: [v.loc],
        path: [op.kind],
        extensions: { code: 'variableNotUsed', variableName: v.name },
      });
  }
  return errors;
}

class CoercionError extends Error {}

function coerce(schema: Schema, type: TypeRef, value: unknown, what: string): unknown {
  if (type.kind === 'nonnull') {
    if (value === null || value === undefined) throw new CoercionError(`${what}: Expected value to not be null`);
    return coerce(schema, type.of, value, what);
  }
  if (value === null || value === undefined) return null;
  if (type.kind === 'list') {
    const arr = Array.isArray(value) ? value : [value];
    return arr.map((v, i) => coerce(schema, type.of, v, `${what}[${i}]`));
  }
  const n = type.name;
  switch (n) {
    case 'String':
    case 'DateTime':
    case 'URI':
    case 'GitObjectID':
    case 'HTML':
      if (typeof value !== 'string') throw new CoercionError(`${what}: Could not coerce value ${JSON.stringify(value)} to ${n}`);
      return value;
    case 'ID':
      if (typeof value !== 'string' && !(typeof value === 'number' && Number.isInteger(value)))
        throw new CoercionError(`${what}: Could not coerce value ${JSON.stringify(value)} to ID`);
      return String(value);
    case 'Int':
      if (typeof value !== 'number' || !Number.isInteger(value) || Math.abs(value) > 2 ** 31)
        throw new CoercionError(`${what}: Could not coerce value ${JSON.stringify(value)} to Int`);
      return value;
    case 'Float':
      if (typeof value !== 'number') throw new CoercionError(`${what}: Could not coerce value ${JSON.stringify(value)} to Float`);
      return value;
    case 'Boolean':
      if (typeof value !== 'boolean') throw new CoercionError(`${what}: Could not coerce value ${JSON.stringify(value)} to Boolean`);
      return value;
  }
  const def = schema.types[n];
  if (def?.kind === 'enum') {
    if (typeof value !== 'string' || !def.values.includes(value))
      throw new CoercionError(`${what}: Expected ${JSON.stringify(value)} to be one of: ${def.values.join(', ')}`);
    return value;
  }
  if (def?.kind === 'input') {
    if (typeof value !== 'object' || Array.isArray(value)) throw new CoercionError(`${what}: Expected an input object of type ${n}`);
    const out: Record<string, unknown> = {};
    const obj = value as Record<string, unknown>;
    for (const k of Object.keys(obj)) if (!(k in def.fields)) throw new CoercionError(`${what}: Field is not defined on ${n}: ${k}`);
    for (const [k, t] of Object.entries(def.fields)) out[k] = coerce(schema, typeOf(t), obj[k], `${what}.${k}`);
    return out;
  }
  throw new CoercionError(`${what}: unknown type ${n}`);
}

function valueToJs(v: ValueNode, vars: Record<string, unknown>): unknown {
  switch (v.kind) {
    case 'var':
      return vars[v.name];
    case 'int':
    case 'float':
    case 'string':
    case 'boolean':
      return v.value;
    case 'enum':
      return v.value;
    case 'null':
      return null;
    case 'list':
      return v.values.map((x) => valueToJs(x, vars));
    case 'object':
      return Object.fromEntries(v.fields.map((f) => [f.name, valueToJs(f.value, vars)]));
  }
}

export interface ExecOptions {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

export interface ParsedRequest {
  op: OperationNode;
  vars: Record<string, unknown>;
}

/** Parse, pick the operation, validate, coerce variables. Returns errors (GitHub answers them without `data`). */
export function prepare(schema: Schema, req: ExecOptions): ParsedRequest | { errors: GraphQLErrorJson[] } {
  let ops: OperationNode[];
  try {
    ops = parse(req.query);
  } catch (e) {
    if (e instanceof GraphQLSyntaxError) return { errors: [{ message: e.message, locations: [e.loc] }] };
    throw e;
  }
  let op: OperationNode | undefined;
  if (req.operationName) op = ops.find((o) => o.name === req.operationName);
  else if (ops.length === 1) op = ops[0];
  if (!op) {
    return {
      errors: [
        { message: req.operationName ? `No operation named "${req.operationName}"` : 'An operation name is required when the document has several operations' },
      ],
    };
  }
  const errors = validate(schema, op);
  if (errors.length) return { errors };
  const vars: Record<string, unknown> = {};
  const given = req.variables ?? {};
  for (const d of op.variables) {
    let v = given[d.name];
    if (v === undefined && d.defaultValue) v = valueToJs(d.defaultValue, {});
    try {
      vars[d.name] = coerce(schema, d.type, v, `Variable $${d.name} of type ${typeToString(d.type)}`);
    } catch (e) {
      if (!(e instanceof CoercionError)) throw e;
      return {
        errors: [
          {
            message: `Variable $${d.name} of type ${typeToString(d.type)} was provided invalid value`,
            locations: [d.loc],
            extensions: { value: v ?? null, problems: [{ path: [], explanation: e.message }] },
          },
        ],
      };
    }
  }
  return { op, vars };
}

/** Runs a prepared operation. Fields run in order (mutations serially, as the spec says). */
export async function execute(schema: Schema, prepared: ParsedRequest, root: unknown = {}): Promise<ExecResult> {
  const errors: GraphQLErrorJson[] = [];
  const { op, vars } = prepared;

  const completeValue = async (type: TypeRef, value: unknown, field: FieldNode, path: Array<string | number>): Promise<unknown> => {
    if (type.kind === 'nonnull') return completeValue(type.of, value, field, path);
    if (value === null || value === undefined) return null;
    if (type.kind === 'list') {
      const arr = value as unknown[];
      const out: unknown[] = [];
      for (let i = 0; i < arr.length; i++) out.push(await completeValue(type.of, arr[i], field, [...path, i]));
      return out;
    }
    const def = schema.types[type.name];
    if (def?.kind === 'object') return selectFields(type.name, field.selections ?? [], value, path);
    if (def?.kind === 'interface') return selectFields(def.resolveType(value), field.selections ?? [], value, path);
    return value;
  };

  /** The fields that apply to an object of `typeName`: its own, and those of each inline fragment whose type it is. */
  const collect = (typeName: string, selections: SelectionNode[]): FieldNode[] =>
    selections.flatMap((s) => {
      if (!isFragment(s)) return [s];
      const cond = s.on === undefined ? undefined : schema.types[s.on];
      const applies = s.on === undefined || s.on === typeName || (cond?.kind === 'interface' && cond.possibleTypes.includes(typeName));
      return applies ? collect(typeName, s.selections) : [];
    });

  const selectFields = async (
    typeName: string,
    selections: SelectionNode[],
    parent: unknown,
    path: Array<string | number>,
  ): Promise<Record<string, unknown>> => {
    const type = schema.types[typeName] as ObjectTypeDef;
    const out: Record<string, unknown> = {};
    for (const f of collect(typeName, selections)) {
      const key = f.alias ?? f.name;
      const fpath = [...path, key];
      if (f.name === '__typename') {
        out[key] = typeName;
        continue;
      }
      const def = type.fields[f.name]!;
      const args: Record<string, unknown> = {};
      try {
        for (const [an, at] of Object.entries(def.args ?? {})) {
          const node = f.args.find((a) => a.name === an);
          const raw = node ? valueToJs(node.value, vars) : undefined;
          if (raw === undefined && !at.endsWith('!')) continue;
          args[an] = coerce(schema, typeOf(at), raw, `Argument '${an}' on Field '${f.name}'`);
        }
      } catch (e) {
        if (!(e instanceof CoercionError)) throw e;
        errors.push({
          message: e.message,
          path: fpath,
          locations: [f.loc],
          extensions: { code: 'argumentLiteralsIncompatible', typeName: 'Field', argumentName: f.name },
        });
        out[key] = null;
        continue;
      }
      try {
        const value = await def.resolve(parent, args, f);
        out[key] = await completeValue(typeOf(def.type), value, f, fpath);
      } catch (e) {
        if (!(e instanceof FieldError)) throw e;
        errors.push({ type: e.type, path: fpath, locations: [f.loc], message: e.message });
        out[key] = null;
      }
    }
    return out;
  };

  const data = await selectFields(op.kind === 'query' ? schema.query : schema.mutation, op.selections, root, []);
  const result: ExecResult = { data };
  if (errors.length) result.errors = errors;
  return result;
}
