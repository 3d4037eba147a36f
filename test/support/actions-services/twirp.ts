/**
 * Twirp over JSON, as the toolkit's generated clients speak it: POST
 * `/twirp/<package>.<Service>/<Method>`, a JSON body, a JSON answer; an error
 * is `{ code, msg }` with the HTTP status of its code
 * (https://twitchtv.github.io/twirp/docs/spec_v7.html#error-codes). The
 * clients turn it into "Failed request: (<status>) <status text>: <msg>".
 *
 * The clients send protobuf JSON with proto field names (`useProtoFieldName`:
 * `workflow_run_backend_id`), wrappers (StringValue, Int64Value) as bare values
 * and int64 as strings; they read either name style. Answers here use the
 * canonical lowerCamel names.
 */

export type TwirpCode =
  | 'invalid_argument'
  | 'unauthenticated'
  | 'permission_denied'
  | 'not_found'
  | 'already_exists'
  | 'failed_precondition'
  | 'bad_route'
  | 'internal';

const STATUS: Record<TwirpCode, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  bad_route: 404,
  already_exists: 409,
  failed_precondition: 412,
  internal: 500,
};

export class TwirpError extends Error {
  readonly status: number;
  constructor(
    readonly code: TwirpCode,
    message: string,
    status?: number,
  ) {
    super(message);
    this.status = status ?? STATUS[code];
  }
}

export type Json = Record<string, unknown>;

/** A field of a request by its proto name, also accepted in lowerCamel. */
export function field(body: Json, protoName: string): unknown {
  if (protoName in body) return body[protoName];
  return body[protoName.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())];
}

export function str(body: Json, protoName: string): string {
  const v = field(body, protoName);
  return typeof v === 'string' ? v : '';
}

/** An int64 (a string in protobuf JSON, a number tolerated), or null when absent. */
export function int(body: Json, protoName: string): number | null {
  const v = field(body, protoName);
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return Number(v);
  return null;
}

export function strList(body: Json, protoName: string): string[] {
  const v = field(body, protoName);
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
