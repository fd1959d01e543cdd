// A scripted Ollama server on 127.0.0.1 speaking Ollama's native API, for end-to-end tests.
// Wire format: https://github.com/ollama/ollama/blob/main/docs/api.md
//
//   POST /api/chat   replies from a queue (`script(...)`), one per call:
//                      {content: 'text'}                          an assistant message
//                      {tool_calls: [{name, arguments: {...}}]}   tool calls (arguments are objects)
//                      {status: 500, body: {...} | 'text'}        an HTTP error
//                    `stream` defaults to true, as in Ollama: NDJSON lines
//                    (`application/x-ndjson`), content split into `chunks` pieces (default 3), then
//                    a last `done: true` line with the counts. `stream: false` gives one JSON object.
//                    A model that is not in `models` gets Ollama's 404.
//   GET  /api/tags   the `models` list.
//   GET  /           "Ollama is running".
// With `lockOrigins: true`, a request whose Origin is a chrome-extension:// origin gets 403 with
// an empty body, as Ollama does unless OLLAMA_ORIGINS allows it; with `lockOrigins: 'always'`
// every request does, Origin or none (something in front of Ollama that the extension's rule,
// which removes its Origin, cannot get past). Every request is recorded in
// `requests` ({method, path, origin, body}).

import { createServer } from 'node:http';

function readBody(req) {
  return new Promise((done, fail) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
    req.on('error', fail);
  });
}

function sendJson(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(value));
}

function pieces(text, parts) {
  if (!text) return [];
  const size = Math.max(1, Math.ceil(text.length / parts));
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

export class ScriptedOllama {
  constructor({ models = ['llama3.2:latest', 'qwen2.5:7b'], lockOrigins = false } = {}) {
    this.models = models;
    this.lockOrigins = lockOrigins;
    /** @type {object[]} replies not consumed yet */
    this.queue = [];
    /** @type {{method: string, path: string, origin: string|undefined, body: any}[]} */
    this.requests = [];
    this.server = createServer((req, res) => {
      this.route(req, res).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`scripted server error: ${err.stack}`);
      });
    });
    this.sockets = new Set();
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  async listen() {
    await new Promise((done) => this.server.listen(0, '127.0.0.1', done));
    const { port } = this.server.address();
    /** The Base URL to configure in the extension (the server root). */
    this.baseUrl = `http://127.0.0.1:${port}`;
    return this;
  }

  script(...replies) {
    this.queue.push(...replies);
    return this;
  }

  get chatRequests() {
    return this.requests.filter((r) => r.method === 'POST' && r.path === '/api/chat');
  }

  async close() {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((done) => this.server.close(() => done()));
  }

  async route(req, res) {
    const url = new URL(req.url, 'http://127.0.0.1');
    const raw = await readBody(req);
    let body = raw;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      // Keep the raw text: a test will see what arrived.
    }
    const origin = req.headers.origin;
    this.requests.push({ method: req.method, path: url.pathname, origin, body });
    if (this.lockOrigins === 'always' || (this.lockOrigins && origin?.startsWith('chrome-extension://'))) {
      res.writeHead(403);
      res.end();
      return;
    }
    if (req.method === 'GET' && url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Ollama is running');
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/tags') {
      sendJson(res, 200, {
        models: this.models.map((name) => ({
          name,
          model: name,
          modified_at: '2026-11-01T10:00:00Z',
          size: 2019393189,
          digest: 'a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72',
          details: { format: 'gguf', family: 'llama', parameter_size: '3.2B', quantization_level: 'Q4_K_M' },
        })),
      });
      return;
    }
    if (req.method !== 'POST' || url.pathname !== '/api/chat') {
      sendJson(res, 404, { error: `no route for ${req.method} ${url.pathname}` });
      return;
    }
    const model = body?.model ?? '';
    if (!this.models.includes(model) && !this.models.includes(`${model}:latest`)) {
      sendJson(res, 404, { error: `model "${model}" not found, try pulling it first` });
      return;
    }
    const reply = this.queue.shift();
    if (!reply) {
      sendJson(res, 500, { error: `scripted server: script exhausted, no reply left for chat request #${this.chatRequests.length}` });
      return;
    }
    if (reply.delayMs) await new Promise((done) => setTimeout(done, reply.delayMs));
    if (reply.status) {
      const isText = typeof reply.body === 'string';
      res.writeHead(reply.status, { 'content-type': isText ? 'text/plain' : 'application/json' });
      res.end(isText ? reply.body : JSON.stringify(reply.body ?? {}));
      return;
    }
    const toolCalls = (reply.tool_calls ?? []).map((call) => ({
      function: { name: call.name, arguments: call.arguments ?? {} },
    }));
    const created_at = new Date().toISOString();
    const counts = { prompt_eval_count: 120, eval_count: Math.max(1, Math.ceil((reply.content ?? '').length / 4)) };
    const final = (message) => ({
      model, created_at, message, done: true, done_reason: 'stop',
      total_duration: 5_000_000, load_duration: 1_000_000, prompt_eval_duration: 1_000_000, eval_duration: 3_000_000,
      ...counts,
    });
    if (body?.stream === false) {
      const message = { role: 'assistant', content: reply.content ?? '' };
      if (toolCalls.length) message.tool_calls = toolCalls;
      sendJson(res, 200, final(message));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    const line = async (value) => {
      res.write(`${JSON.stringify(value)}\n`);
      await new Promise((done) => setTimeout(done, reply.chunkDelayMs ?? 5));
    };
    for (const piece of pieces(reply.content ?? '', reply.chunks ?? 3)) {
      await line({ model, created_at, message: { role: 'assistant', content: piece }, done: false });
    }
    if (toolCalls.length) {
      await line({ model, created_at, message: { role: 'assistant', content: '', tool_calls: toolCalls }, done: false });
    }
    await line(final({ role: 'assistant', content: '' }));
    res.end();
  }
}

/** Starts a scripted Ollama; `await server.close()` when done. */
export async function startScriptedOllama(options) {
  return new ScriptedOllama(options).listen();
}
