// A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for end-to-end tests.
//
// Replies come from a queue (`script(...)`), one per POST /v1/chat/completions:
//   {content: 'text'}                                   an assistant message
//   {tool_calls: [{name, arguments}]}                   tool calls (arguments: object or JSON text)
//   {status: 401, body: {...} | 'text', headers: {...}} an HTTP error
// Optional on any reply: delayMs (before answering), usage ({prompt_tokens, completion_tokens,
// prompt_tokens_details?: {cached_tokens}}),
// json: true (answer with a JSON body even when the request asked for a stream).
// With `stream: true` the reply is SSE (`data: {chunk}` ... `data: [DONE]`), content split into
// `chunks` deltas (default 4) or at the pieces given as `deltas: [...]` (then `content` may be
// left out: it is their concatenation), tool calls streamed as index/id/name/argument pieces, and usage
// in a last chunk; `chunkDelayMs` (default 5) is the pause after each SSE chunk. An exhausted
// script answers 500 so that an unexpected call fails the test loudly.
// Every request is recorded in `requests` ({method, path, headers, body, at, served}); `at` is
// the server's Date.now() when the request arrived (before its body was read), `served` what
// it got ('text', 'tool calls', 'status 429', 'exhausted'; null until chosen).
// Instead of the queue, `respondWith(fn)` answers every request with `await fn(body, record)`
// (a reply as above): a model whose reply depends only on the request, so a call redone
// after the worker was stopped gets the same reply. `fn` may hold a reply back by awaiting.
// A subclass may refuse a request before it is answered by overriding `refuse(body, record)`
// (see windowed-openai-server.mjs).

import { createServer } from 'node:http';

const MODEL = 'scripted-model';

/** Rough token estimate (~4 characters a token), for default usage numbers. */
function estimateTokens(value) {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? '');
  return Math.max(1, Math.ceil(text.length / 4));
}

/** Splits text into `parts` roughly equal pieces (at least one, never empty pieces). */
function pieces(text, parts) {
  if (text.length === 0) return [''];
  const size = Math.max(1, Math.ceil(text.length / parts));
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** A scripted reply with `content` filled in from `deltas` when only those are given. */
function normalizeReply(reply) {
  if (Array.isArray(reply.deltas) && reply.content === undefined) return { ...reply, content: reply.deltas.join('') };
  return reply;
}

function toolCallsOf(reply) {
  return (reply.tool_calls ?? []).map((call, index) => ({
    index,
    id: call.id ?? `call_${index}_${Math.random().toString(36).slice(2, 10)}`,
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
    },
  }));
}

function usageOf(reply, requestBody) {
  const prompt = reply.usage?.prompt_tokens ?? estimateTokens(requestBody?.messages);
  const completion = reply.usage?.completion_tokens ?? estimateTokens(reply.content ?? reply.tool_calls ?? '');
  const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  // Cached prompt tokens, as OpenAI reports them
  // (https://platform.openai.com/docs/api-reference/chat/object).
  if (reply.usage?.prompt_tokens_details) usage.prompt_tokens_details = reply.usage.prompt_tokens_details;
  return usage;
}

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type, accept, x-requested-with',
  'access-control-max-age': '600',
};

export class ScriptedOpenAI {
  constructor() {
    /** @type {object[]} replies not consumed yet */
    this.queue = [];
    /** @type {((body: any, record: object) => Promise<object> | object) | null} */
    this.responder = null;
    /** @type {{method: string, path: string, headers: object, body: any, at: number}[]} */
    this.requests = [];
    this.server = createServer((req, res) => {
      this.route(req, res).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { ...CORS, 'content-type': 'text/plain' });
        res.end(`scripted server error: ${err.stack}`);
      });
    });
    /** Open sockets, destroyed on close so a hanging request never blocks a test's end. */
    this.sockets = new Set();
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Starts listening on 127.0.0.1 (random port). */
  async listen() {
    await new Promise((done) => this.server.listen(0, '127.0.0.1', done));
    const { port } = this.server.address();
    this.origin = `http://127.0.0.1:${port}`;
    /** The Base URL to configure in the extension. */
    this.baseUrl = `${this.origin}/v1`;
    return this;
  }

  /** Answers each request with `await fn(body, record)` instead of the queue (null: the queue again). */
  respondWith(fn) {
    this.responder = fn;
    return this;
  }

  /** Appends replies to the script. */
  script(...replies) {
    this.queue.push(...replies);
    return this;
  }

  /** The chat-completion requests received so far (bodies parsed). */
  get chatRequests() {
    return this.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/chat/completions'));
  }

  /**
   * One line per chat request since index `from` (time, what was served, the last user
   * message), for assertion messages.
   */
  timeline(from = 0) {
    const requests = this.chatRequests;
    const t0 = requests[from]?.at ?? 0;
    return requests.slice(from).map((r, i) => {
      const lastUser = r.body?.messages?.filter((m) => m.role === 'user').at(-1)?.content ?? '';
      return `#${from + i} +${r.at - t0} ms ${r.served ?? '?'}: ${String(lastUser).slice(0, 60)}`;
    }).join('\n') || '(no chat requests)';
  }

  /**
   * A reply that refuses a chat request before the script or responder sees it (null: none).
   * Subclasses override it (e.g. a context window); the base server refuses nothing.
   */
  refuse(_body, _record) {
    return null;
  }

  /**
   * Answers a request itself, bypassing the script (true when it did). Subclasses override it
   * to send what no scripted reply can (see hostile-server.mjs); the base server never does.
   */
  async intercept(_body, _record, _res) {
    return false;
  }

  async close() {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((done) => this.server.close(() => done()));
  }

  async route(req, res) {
    const at = Date.now();
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, CORS);
      res.end();
      return;
    }
    const raw = await readBody(req);
    let body = raw;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      // Keep the raw text: a test will see what arrived.
    }
    const record = { method: req.method, path: url.pathname, headers: req.headers, body, at, served: null };
    this.requests.push(record);
    if (await this.intercept(body, record, res)) return;

    if (req.method === 'GET' && url.pathname === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: [{ id: MODEL, object: 'model', owned_by: 'tests' }] });
      return;
    }
    if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
      sendJson(res, 404, { error: { message: `no route for ${req.method} ${url.pathname}`, type: 'not_found' } });
      return;
    }
    const refusal = this.refuse(body, record);
    const next = refusal ?? (this.responder ? await this.responder(body, record) : this.queue.shift());
    const reply = next && normalizeReply(next);
    record.served = !reply ? 'exhausted' : reply.status ? `status ${reply.status}` : reply.tool_calls ? 'tool calls' : 'text';
    if (!reply) {
      const n = this.chatRequests.length;
      sendJson(res, 500, {
        error: {
          message: `scripted server: script exhausted, no reply left for chat request #${n}`,
          type: 'server_error',
        },
      });
      return;
    }
    if (reply.delayMs) await new Promise((done) => setTimeout(done, reply.delayMs));
    if (reply.status) {
      const headers = { ...CORS, ...(reply.headers ?? {}) };
      const isText = typeof reply.body === 'string';
      res.writeHead(reply.status, { 'content-type': isText ? 'text/plain' : 'application/json', ...headers });
      res.end(isText ? reply.body : JSON.stringify(reply.body ?? {}));
      return;
    }
    if (body?.stream === true && !reply.json) {
      await streamReply(res, reply, body);
    } else {
      sendJson(res, 200, completion(reply, body));
    }
  }
}

/** Starts a scripted server; `await server.close()` when done. */
export async function startScriptedOpenAI() {
  return new ScriptedOpenAI().listen();
}

function readBody(req) {
  return new Promise((done, fail) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
    req.on('error', fail);
  });
}

function sendJson(res, status, value) {
  res.writeHead(status, { ...CORS, 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

function completion(reply, requestBody) {
  const toolCalls = toolCallsOf(reply);
  const message = { role: 'assistant', content: toolCalls.length ? (reply.content ?? null) : (reply.content ?? '') };
  if (toolCalls.length) message.tool_calls = toolCalls.map(({ index, ...call }) => call);
  return {
    id: `chatcmpl-${Date.now()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: requestBody?.model || MODEL,
    choices: [{ index: 0, message, finish_reason: toolCalls.length ? 'tool_calls' : 'stop' }],
    usage: usageOf(reply, requestBody),
  };
}

async function streamReply(res, reply, requestBody) {
  res.writeHead(200, {
    ...CORS,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const id = `chatcmpl-${Date.now()}`;
  const created = Math.floor(Date.now() / 1000);
  const model = requestBody?.model || MODEL;
  const pause = reply.chunkDelayMs ?? 5;
  const send = async (choices, extra = {}) => {
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`);
    await new Promise((done) => setTimeout(done, pause));
  };
  const delta = (d, finish = null) => [{ index: 0, delta: d, finish_reason: finish }];

  const toolCalls = toolCallsOf(reply);
  await send(delta({ role: 'assistant', content: '' }));
  if (reply.content) {
    const parts = Array.isArray(reply.deltas) ? reply.deltas : pieces(reply.content, reply.chunks ?? 4);
    for (const piece of parts) await send(delta({ content: piece }));
  }
  for (const call of toolCalls) {
    await send(delta({
      tool_calls: [{ index: call.index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
    }));
    for (const piece of pieces(call.function.arguments, 3)) {
      await send(delta({ tool_calls: [{ index: call.index, function: { arguments: piece } }] }));
    }
  }
  await send(delta({}, toolCalls.length ? 'tool_calls' : 'stop'));
  // Usage arrives last, with no choices, as OpenAI does with stream_options.include_usage.
  await send([], { usage: usageOf(reply, requestBody) });
  res.write('data: [DONE]\n\n');
  res.end();
}
