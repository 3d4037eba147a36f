/**
 * A model API for the real agent CLIs to talk to, scripted by the test: Anthropic's Messages API as Claude Code
 * calls it (ANTHROPIC_BASE_URL), and OpenAI's Responses API as `codex exec` calls it (a model provider in its
 * config.toml). See README.md for what it reproduces and what it does not.
 *
 * A test registers conversations: each is matched by what the agent was asked (its first user message), and answers
 * turn by turn, the turn being the number of assistant messages the request already carries (the CLI sends the whole
 * conversation every time), so many lanes and lenses can talk to one emulator at once and a retried request gets the
 * same answer. Every request is logged, with what the agent was told and what its tools returned.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One block of an assistant message: text, or a call of one of the CLI's tools (Write, Edit, Bash, Read…). */
export type Block = { text: string } | { tool: string; input: Record<string, unknown> };

/**
 * An error the API returns instead of an answer, in its own shape (https://docs.claude.com/en/api/errors):
 * `{"type":"error","error":{"type":…,"message":…},"request_id":…}`; `cut` ends a streamed answer after its first
 * block started; `hang` never answers.
 */
export type Failure =
  | { status: 400 | 401 | 403 | 404 | 413 | 429 | 500 | 529; type?: string; message?: string; retryAfter?: number }
  | { cut: true }
  | { hang: true };

export interface Turn {
  /** What the assistant says and calls; a turn with a tool call stops with `tool_use`, else `end_turn`. */
  blocks?: Block[];
  /** Instead of an answer, this many times (default once, Infinity for ever); then the answer. */
  fail?: Failure;
  times?: number;
  /** The stop reason, when not the one the blocks imply (`max_tokens`, `refusal`). */
  stop?: string;
  /** Tokens the answer reports (default: a quarter of the characters in and out). */
  usage?: { input_tokens?: number; output_tokens?: number };
}

export interface Conversation {
  name: string;
  /** A text the agent's first user message holds (the prompt Fleet wrote: the lane, the lens, the round). */
  match: string | RegExp;
  /** Turn n answers the request that carries n assistant messages (or tool calls); past the end, "Done." */
  turns: (Turn | ((req: MessagesRequest) => Turn))[];
}

/** The part of a Responses API request body the emulator reads (`codex exec`). */
export interface ResponsesRequest {
  model: string;
  stream?: boolean;
  instructions?: string;
  input: ({
    type?: string;
    role?: string;
    content?: string | { type: string; text?: string }[];
    call_id?: string;
    output?: unknown;
    name?: string;
    arguments?: string;
  } & Record<string, unknown>)[];
  tools?: { name?: string; type?: string }[];
}

/** The part of a Messages API request body the emulator reads. */
export interface MessagesRequest {
  model: string;
  max_tokens: number;
  stream?: boolean;
  system?: string | { type: string; text: string }[];
  messages: { role: 'user' | 'assistant'; content: string | ContentBlock[] }[];
  tools?: { name: string }[];
}

type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: unknown; is_error?: boolean }
  | { type: string; [k: string]: unknown };

export interface LoggedRequest {
  method: string;
  path: string;
  /** The request's headers, the credential replaced by whether it was the one expected. */
  headers: Record<string, string>;
  /** A Messages API request; a Responses API request is in `responses`. */
  body?: MessagesRequest;
  responses?: ResponsesRequest;
  /** The conversation and turn it was answered from, if any. */
  conversation?: string;
  turn?: number;
  status: number;
}

export interface ModelApiOptions {
  /** API keys the API accepts (x-api-key; for the Responses API, Authorization: Bearer); default ['sk-ant-emulated']. */
  keys?: string[];
  /** OAuth tokens it accepts (Authorization: Bearer, as CLAUDE_CODE_OAUTH_TOKEN sends). */
  tokens?: string[];
}

export interface ModelApi {
  url: string;
  /** The hosts a CLI tried to reach through it as a proxy (HTTPS_PROXY): every other host it called. */
  tunnels(): string[];
  /** The first key it accepts. */
  key: string;
  requests: LoggedRequest[];
  converse(c: Conversation): void;
  /** The requests answered from a conversation, in order. */
  of(conversation: string): LoggedRequest[];
  close(): Promise<void>;
}

const DONE: Turn = { blocks: [{ text: 'Done.' }] };

/** The text of a message's content. */
export function textOf(content: string | ContentBlock[] | undefined): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .map((b) =>
      b.type === 'text' ? (b as { text: string }).text : b.type === 'tool_result' ? textOf((b as { content: string | ContentBlock[] }).content) : '',
    )
    .join('\n');
}

/** What the tools returned to the last assistant message (the tool_result blocks of the last user message). */
export function toolResults(req: MessagesRequest): { id: string; text: string; error: boolean }[] {
  const last = req.messages.at(-1);
  if (!last || typeof last.content === 'string') return [];
  return last.content
    .filter((b): b is Extract<ContentBlock, { type: 'tool_result' }> => b.type === 'tool_result')
    .map((b) => ({ id: b.tool_use_id, text: textOf(b.content as ContentBlock[]), error: b.is_error === true }));
}

/** The text of the user's (and the developer's) messages of a Responses API request: Fleet's prompt is among them. */
export function responsesText(req: ResponsesRequest): string {
  return req.input
    .filter((i) => (i.type === undefined || i.type === 'message') && i.role !== 'assistant')
    .map((i) => (typeof i.content === 'string' ? i.content : (i.content ?? []).map((c) => c.text ?? '').join('\n')))
    .join('\n');
}

/** What the tools returned to the last answer of a Responses API request (its function_call_output items). */
export function responsesToolResults(req: ResponsesRequest): { id: string; text: string }[] {
  return req.input
    .filter((i) => i.type === 'function_call_output')
    .map((i) => ({ id: String(i.call_id), text: typeof i.output === 'string' ? i.output : JSON.stringify(i.output) }));
}

/** The folder the CLI works in, as its system prompt names it ("Primary working directory: …"). */
export function workingDirectory(req: MessagesRequest): string | undefined {
  return /[Ww]orking directory: ([^\s\\"]+)/.exec(JSON.stringify({ system: req.system, messages: req.messages }))?.[1];
}

function errorBody(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: `req_emulated_${Math.random().toString(36).slice(2, 12)}` });
}

const ERROR_TYPES: Record<number, [string, string]> = {
  400: ['invalid_request_error', 'Invalid request'],
  401: ['authentication_error', 'invalid x-api-key'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'The requested resource could not be found.'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'This request would exceed your rate limit.'],
  500: ['api_error', 'An unexpected error has occurred internal to our systems.'],
  529: ['overloaded_error', 'Overloaded'],
};

/** OpenAI's error shape and types (https://platform.openai.com/docs/guides/error-codes). */
const OPENAI_ERRORS: Record<number, [string, string, string | null]> = {
  400: ['invalid_request_error', 'Invalid request.', null],
  401: ['invalid_request_error', 'Incorrect API key provided.', 'invalid_api_key'],
  403: ['invalid_request_error', 'You are not allowed to use this model.', null],
  404: ['invalid_request_error', 'The model does not exist.', 'model_not_found'],
  413: ['invalid_request_error', 'Request too large.', null],
  429: ['requests', 'Rate limit reached for requests.', 'rate_limit_exceeded'],
  500: ['server_error', 'The server had an error while processing your request.', null],
  529: ['server_error', 'The engine is currently overloaded, please try again later.', null],
};

function openaiError(status: number, message?: string): string {
  const [type, text, code] = OPENAI_ERRORS[status] ?? OPENAI_ERRORS[500]!;
  return JSON.stringify({ error: { message: message ?? text, type, param: null, code } });
}

export async function startModelApi(opts: ModelApiOptions = {}): Promise<ModelApi> {
  const keys = opts.keys ?? ['sk-ant-emulated'];
  const tokens = opts.tokens ?? [];
  const conversations: Conversation[] = [];
  const requests: LoggedRequest[] = [];
  const served = new Map<string, number>();
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  let ids = 0;

  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): number => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body);
    return status;
  };

  /**
   * The turn a request is answered from: the conversation its asked text matches (the agent's own loop offers tools;
   * a side request, a title or a summary, gets a plain answer), the turn its count of earlier answers names, and
   * whether a scripted failure is still to be served.
   */
  const resolve = (asked: string, offersTools: boolean, n: number, req: unknown, log: LoggedRequest): { turn: Turn; failing?: Failure } => {
    const c = offersTools ? conversations.find((x) => (typeof x.match === 'string' ? asked.includes(x.match) : x.match.test(asked))) : undefined;
    let turn = DONE;
    if (c) {
      log.conversation = c.name;
      log.turn = n;
      const t = c.turns[n];
      turn = t === undefined ? DONE : typeof t === 'function' ? t(req as MessagesRequest) : t;
    } else if (!offersTools) {
      turn = { blocks: [{ text: 'OK' }] };
    }
    if (!turn.fail) return { turn };
    const key = `${c?.name}:${n}`;
    const seen = served.get(key) ?? 0;
    if (seen >= (turn.times ?? 1)) return { turn };
    served.set(key, seen + 1);
    return { turn, failing: turn.fail };
  };

  const answer = (req: MessagesRequest, res: ServerResponse, log: LoggedRequest): number => {
    const n = req.messages.filter((m) => m.role === 'assistant').length;
    const { turn, failing } = resolve(textOf(req.messages[0]?.content), !!req.tools?.length, n, req, log);
    if (failing) {
      if ('hang' in failing) {
        hanging.add(res);
        return 0;
      }
      if ('status' in failing) {
        const [type, message] = ERROR_TYPES[failing.status]!;
        return send(
          res,
          failing.status,
          errorBody(failing.type ?? type, failing.message ?? message),
          failing.retryAfter !== undefined ? { 'retry-after': String(failing.retryAfter) } : {},
        );
      }
      // A cut: the stream starts, then the connection drops.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: message(req, [], null, { input_tokens: 1, output_tokens: 1 }) })}\n\n`,
      );
      res.socket?.destroy();
      return 200;
    }
    const blocks = (turn.blocks ?? []).map((b) =>
      'text' in b ? { type: 'text', text: b.text } : { type: 'tool_use', id: `toolu_emulated_${++ids}`, name: b.tool, input: b.input },
    );
    const stop = turn.stop ?? (blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
    const chars = JSON.stringify(req.messages).length + JSON.stringify(req.system ?? '').length;
    const usage = {
      input_tokens: turn.usage?.input_tokens ?? Math.ceil(chars / 4),
      output_tokens: turn.usage?.output_tokens ?? Math.max(1, Math.ceil(JSON.stringify(blocks).length / 4)),
    };
    if (!req.stream) return send(res, 200, JSON.stringify(message(req, blocks, stop, usage)));
    // Server-sent events, as https://docs.claude.com/en/docs/build-with-claude/streaming lays them out.
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const event = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event('message_start', { message: message(req, [], null, { input_tokens: usage.input_tokens, output_tokens: 1 }) });
    blocks.forEach((b, index) => {
      if (b.type === 'text') {
        event('content_block_start', { index, content_block: { type: 'text', text: '' } });
        event('content_block_delta', { index, delta: { type: 'text_delta', text: b.text } });
      } else {
        event('content_block_start', { index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
        const json = JSON.stringify(b.input);
        // The input arrives as partial JSON, in pieces.
        for (let i = 0; i < json.length; i += 64)
          event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(i, i + 64) } });
      }
      event('content_block_stop', { index });
    });
    event('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
    event('message_stop', {});
    res.end();
    return 200;
  };

  /**
   * A Responses API answer, streamed as `codex exec` reads it: response.created, each output item added and done (a
   * message, or a function_call whose arguments are the tool's input as JSON), response.completed with usage.
   */
  const answerResponses = (req: ResponsesRequest, res: ServerResponse, log: LoggedRequest): number => {
    const n = req.input.filter((i) => i.type === 'function_call' || (i.type === 'message' && i.role === 'assistant')).length;
    const { turn, failing } = resolve(responsesText(req), !!req.tools?.length, n, req, log);
    if (failing) {
      if ('hang' in failing) {
        hanging.add(res);
        return 0;
      }
      if ('status' in failing)
        return send(
          res,
          failing.status,
          openaiError(failing.status, failing.message),
          failing.retryAfter !== undefined ? { 'retry-after': String(failing.retryAfter) } : {},
        );
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { id: 'resp_cut' } })}\n\n`);
      res.socket?.destroy();
      return 200;
    }
    const id = `resp_emulated_${++ids}`;
    const items = (turn.blocks ?? []).map((b) =>
      'text' in b
        ? {
            type: 'message',
            role: 'assistant',
            id: `msg_${ids}_${Math.random().toString(36).slice(2, 8)}`,
            content: [{ type: 'output_text', text: b.text, annotations: [] }],
          }
        : {
            type: 'function_call',
            id: `fc_${ids}_${Math.random().toString(36).slice(2, 8)}`,
            call_id: `call_emulated_${++ids}`,
            name: b.tool,
            arguments: JSON.stringify(b.input),
          },
    );
    const chars = JSON.stringify(req.input).length + (req.instructions ?? '').length;
    const input_tokens = turn.usage?.input_tokens ?? Math.ceil(chars / 4);
    const output_tokens = turn.usage?.output_tokens ?? Math.max(1, Math.ceil(JSON.stringify(items).length / 4));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const event = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event('response.created', { response: { id, status: 'in_progress' } });
    items.forEach((item, output_index) => {
      event('response.output_item.added', { output_index, item: item.type === 'message' ? { ...item, content: [] } : { ...item, arguments: '' } });
      if (item.type === 'message')
        event('response.output_text.delta', { item_id: item.id, output_index, content_index: 0, delta: (item.content as { text: string }[])[0]!.text });
      event('response.output_item.done', { output_index, item });
    });
    event('response.completed', {
      response: {
        id,
        status: 'completed',
        usage: {
          input_tokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: input_tokens + output_tokens,
        },
      },
    });
    res.end();
    return 200;
  };

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string, log: LoggedRequest): number => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'POST' && path === '/v1/responses') {
      const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
      if (!bearer || !keys.includes(bearer))
        return send(res, 401, openaiError(401, `Incorrect API key provided: ${bearer ? `${bearer.slice(0, 3)}***` : '(none)'}.`));
      let body: ResponsesRequest;
      try {
        body = JSON.parse(raw) as ResponsesRequest;
      } catch {
        return send(res, 400, openaiError(400, 'We could not parse the JSON body of your request.'));
      }
      if (!Array.isArray(body.input) || typeof body.model !== 'string') return send(res, 400, openaiError(400, "Missing required parameter: 'input'."));
      log.responses = body;
      return answerResponses(body, res, log);
    }
    // Claude Code checks that the API is reachable before it starts.
    if (path === '/api/hello') return send(res, 200, '{}');
    if (req.method !== 'POST' || (path !== '/v1/messages' && path !== '/v1/messages/count_tokens'))
      return send(res, 404, errorBody('not_found_error', `Not found: ${req.method} ${path}`));
    const key = req.headers['x-api-key'];
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    if (!(typeof key === 'string' && keys.includes(key)) && !(bearer && tokens.includes(bearer)))
      return send(res, 401, errorBody('authentication_error', 'invalid x-api-key'));
    if (!req.headers['anthropic-version']) return send(res, 400, errorBody('invalid_request_error', 'anthropic-version: header is required'));
    let body: MessagesRequest;
    try {
      body = JSON.parse(raw) as MessagesRequest;
    } catch {
      return send(res, 400, errorBody('invalid_request_error', 'The request body is not valid JSON.'));
    }
    if (!Array.isArray(body.messages) || typeof body.model !== 'string') return send(res, 400, errorBody('invalid_request_error', 'messages: Field required'));
    if (path.endsWith('/count_tokens')) return send(res, 200, JSON.stringify({ input_tokens: Math.ceil(raw.length / 4) }));
    log.body = body;
    return answer(body, res, log);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      if (headers['x-api-key']) headers['x-api-key'] = keys.includes(headers['x-api-key']) ? '<the key>' : '<another key>';
      if (headers.authorization) headers.authorization = '<a bearer token>';
      const log: LoggedRequest = { method: req.method ?? '', path: req.url ?? '', headers, status: 0 };
      requests.push(log);
      log.status = handle(req, res, Buffer.concat(chunks).toString('utf8'), log);
    });
  });
  // As a proxy (HTTPS_PROXY pointed here), it logs and refuses every tunnel: a CLI's traffic to any other host.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    requests.push({ method: 'CONNECT', path: req.url ?? '', headers: {}, status: 403 });
    socket.on('error', () => {
      /* the CLI gave up on its tunnel first */
    });
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    key: keys[0]!,
    requests,
    converse: (c) => conversations.push(c),
    tunnels: () => requests.filter((r) => r.method === 'CONNECT').map((r) => r.path),
    of: (name) => requests.filter((r) => r.conversation === name),
    close: () =>
      new Promise<void>((r) => {
        for (const res of hanging) res.destroy();
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

function message(
  req: MessagesRequest,
  content: unknown[],
  stop: string | null,
  usage: { input_tokens: number; output_tokens: number },
): Record<string, unknown> {
  return {
    id: `msg_emulated_${Math.random().toString(36).slice(2, 12)}`,
    type: 'message',
    role: 'assistant',
    model: req.model,
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage,
  };
}

/**
 * The environment a real Claude Code needs to talk to `api` and to nothing else: the base URL, the key, and no
 * nonessential traffic (telemetry, error reports, update checks: https://code.claude.com/docs/en/env-vars).
 */
export function claudeEnv(api: ModelApi, key = api.key): Record<string, string> {
  return { ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: key, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' };
}

/**
 * What a real `codex exec` needs to talk to `api` and to nothing else: CODEX_HOME (made in `dir`, open to every user,
 * for the lane's user writes its state there) holding a config.toml whose model provider is the emulator, the key in
 * OPENAI_API_KEY (the provider's env_key: codex ignores OPENAI_BASE_URL), and no analytics. `retries` caps the CLI's
 * own stream and request retries (its defaults: 5 streams of 5 requests each).
 */
export function codexEnv(api: ModelApi, dir: string, opts: { key?: string; retries?: number } = {}): Record<string, string> {
  const home = join(dir, 'codex-home');
  mkdirSync(home, { recursive: true });
  chmodSync(home, 0o777);
  const retries = opts.retries === undefined ? [] : [`request_max_retries = ${opts.retries}`, `stream_max_retries = ${opts.retries}`];
  writeFileSync(
    join(home, 'config.toml'),
    [
      'model = "emulated-model"',
      'model_provider = "emulator"',
      '[analytics]',
      'enabled = false',
      '[model_providers.emulator]',
      'name = "Model-API emulator"',
      `base_url = "${api.url}/v1"`,
      'env_key = "OPENAI_API_KEY"',
      'wire_api = "responses"',
      ...retries,
      '',
    ].join('\n'),
  );
  return { CODEX_HOME: home, OPENAI_API_KEY: opts.key ?? api.key };
}

/**
 * A review panel's scripted models (docs/review.md), as the review tests script them: a "correctness" lens that finds
 * the `BUG` marker a diff adds to src/app.js (answering in prose first, with `proseOnce`, so Fleet has to ask again)
 * and refutes any other change, and a disposition step that ACCEPTs every finding. `asked` reads the prompt Fleet wrote
 * from a request of the CLI's API. Registered before the workers', whose prompts the panel's quote.
 */
export function reviewPanel(api: ModelApi, asked: (req: unknown) => string, opts: { proseOnce?: boolean } = {}): void {
  api.converse({
    name: 'lens',
    match: 'You review a change as the "correctness" lens',
    turns: [
      (req) => {
        const p = asked(req);
        const bug = p.includes('+export const value = BUG;');
        if (opts.proseOnce && bug && !p.includes('Your answer could not be read'))
          return { blocks: [{ text: 'It looks mostly fine, but I would need more context.' }] };
        const finding = bug
          ? [
              {
                severity: 'high',
                file: 'src/app.js',
                line: 1,
                finding: 'A BUG marker is left in the code.',
                suggested_fix: 'Set it to OK.',
                lens: 'correctness',
                refuted: false,
              },
            ]
          : [{ severity: 'low', file: null, line: null, finding: 'Nothing wrong found.', suggested_fix: '', lens: 'correctness', refuted: true }];
        return { blocks: [{ text: JSON.stringify(finding) }] };
      },
    ],
  });
  api.converse({
    name: 'dispositions',
    match: 'Give each one a disposition',
    turns: [
      (req) => ({
        blocks: [
          { text: JSON.stringify([...asked(req).matchAll(/^- (f\d+) \[/gm)].map((m) => ({ id: m[1], disposition: 'ACCEPT', reason: 'It is right.' }))) },
        ],
      }),
    ],
  });
}
