// A hostile or broken OpenAI-compatible server on 127.0.0.1, for the hostile-server e2e suite.
//
// A chat request whose messages contain `fault:<mode>` gets that fault; any other request is
// answered as the scripted server does (`respondWith` / `script`), so one Base URL serves the
// faults and the normal questions that show the worker still answers.
//
// The faults bend the chat-completions streaming format
// (https://platform.openai.com/docs/api-reference/chat-streaming: `text/event-stream`, one
// `data: {chat.completion.chunk}` per event, `: comment` lines allowed by the SSE spec
// https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation,
// and a final `data: [DONE]`):
//   huge-index   a tool-call delta with `"index": 4294967295`, then [DONE]
//   keep-alive   `: keep-alive` comments every 200 ms, forever (until the client goes)
//   big-body     content deltas for 50 MB, written as the socket drains (never held in memory)
//   cut          two content deltas, then the body ends without finish_reason or [DONE]
//   html         200 with a captive-portal HTML page
//   late         the response head only after `lateMs` (default 15 s)
//   bad-json     chunks whose every field has the wrong type, a chunk that is not JSON, [DONE]
// `faults` counts the requests each mode received; `closedEarly` the ones the client dropped.

import { ScriptedOpenAI } from './openai-server.mjs';

const SSE_HEAD = {
  'access-control-allow-origin': '*',
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
};

const MODES = ['huge-index', 'keep-alive', 'big-body', 'cut', 'html', 'late', 'bad-json'];

/** The fault a request asks for (`fault:<mode>` in any message), or null. */
function faultOf(body) {
  for (const message of body?.messages ?? []) {
    const text = typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '');
    const found = MODES.find((mode) => text.includes(`fault:${mode}`));
    if (found) return found;
  }
  return null;
}

/** One chat.completion.chunk as an SSE event. */
function chunk(delta, finish = null) {
  const value = {
    id: 'chatcmpl-hostile',
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: 'scripted-model',
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(value)}\n\n`;
}

/** Resolves after `ms`, or at once when `res`'s client goes away (true: it went). */
function waitOrClose(res, ms) {
  return new Promise((done) => {
    if (res.destroyed || res.closed) return done(true);
    const timer = setTimeout(() => {
      res.off('close', onClose);
      done(false);
    }, ms);
    const onClose = () => {
      clearTimeout(timer);
      done(true);
    };
    res.once('close', onClose);
  });
}

/** Writes `text`, waiting for the socket to drain; false when the client went away. */
async function write(res, text) {
  if (res.destroyed || res.closed) return false;
  if (res.write(text)) return true;
  return new Promise((done) => {
    const onDrain = () => {
      res.off('close', onClose);
      done(true);
    };
    const onClose = () => {
      res.off('drain', onDrain);
      done(false);
    };
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

export class HostileOpenAI extends ScriptedOpenAI {
  constructor({ lateMs = 15_000 } = {}) {
    super();
    this.lateMs = lateMs;
    /** Requests per mode. */
    this.faults = Object.fromEntries(MODES.map((m) => [m, 0]));
    /** Bytes of the big body sent before the client dropped it. */
    this.bigBodySent = 0;
    /** Fault responses the client dropped before they ended. */
    this.closedEarly = Object.fromEntries(MODES.map((m) => [m, 0]));
  }

  async intercept(body, record, res) {
    const mode = faultOf(body);
    if (!mode) return false;
    record.served = `fault ${mode}`;
    this.faults[mode] += 1;
    res.on('close', () => {
      if (!res.writableEnded) this.closedEarly[mode] += 1;
    });
    await this[`send_${mode.replace('-', '_')}`](res);
    return true;
  }

  async send_huge_index(res) {
    res.writeHead(200, SSE_HEAD);
    await write(res, chunk({ role: 'assistant', content: '' }));
    await write(res, chunk({
      tool_calls: [{ index: 4294967295, id: 'call_huge', type: 'function', function: { name: 'read_page', arguments: '{}' } }],
    }));
    res.end('data: [DONE]\n\n');
  }

  async send_keep_alive(res) {
    res.writeHead(200, SSE_HEAD);
    while (await write(res, ': keep-alive\n\n')) {
      if (await waitOrClose(res, 200)) return;
    }
  }

  async send_big_body(res) {
    res.writeHead(200, SSE_HEAD);
    const piece = chunk({ content: 'x'.repeat(64 * 1024) });
    const total = 50 * 1024 * 1024;
    for (let sent = 0; sent < total; sent += piece.length) {
      if (!(await write(res, piece))) return;
      this.bigBodySent = sent + piece.length;
    }
    res.end(chunk({}, 'stop') + 'data: [DONE]\n\n');
  }

  async send_cut(res) {
    res.writeHead(200, SSE_HEAD);
    await write(res, chunk({ role: 'assistant', content: 'The keeper' }));
    await write(res, chunk({ content: ' lit the' }));
    res.end();
  }

  async send_html(res) {
    res.writeHead(200, { 'access-control-allow-origin': '*', 'content-type': 'text/html; charset=utf-8' });
    res.end('<!DOCTYPE html><html><head><title>Sign in to Hotel Wi-Fi</title></head>' +
      '<body><h1>Welcome</h1><p>Accept the terms to get online.</p></body></html>');
  }

  async send_late(res) {
    if (await waitOrClose(res, this.lateMs)) return;
    res.writeHead(200, SSE_HEAD);
    res.end(chunk({ content: 'Too late.' }, 'stop') + 'data: [DONE]\n\n');
  }

  async send_bad_json(res) {
    res.writeHead(200, SSE_HEAD);
    const events = [
      { id: 5, object: [], created: 'yesterday', model: {}, choices: 'none' },
      { choices: [{ index: 'first', delta: 'hello', finish_reason: 3 }] },
      { choices: [{ delta: { role: 7, content: 42, tool_calls: 'all of them' } }] },
      { choices: [{ delta: { content: { text: 'nested' }, tool_calls: [{ index: -3, id: 9, function: 'read_page' }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 1.5, function: { name: 12, arguments: { a: 1 } } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: '2', function: { name: null, arguments: null } }] } }] },
      { choices: [], usage: { prompt_tokens: 'many', completion_tokens: -1 } },
      { choices: null, error: null, usage: [] },
    ];
    for (const event of events) await write(res, `data: ${JSON.stringify(event)}\n\n`);
    await write(res, 'data: {"choices": [{"delta": {"content": "unterminated\n\n');
    await write(res, 'data: \u0000\u0001 not json at all\n\n');
    res.end('data: [DONE]\n\n');
  }
}

/** Starts a hostile server; `await server.close()` when done. */
export async function startHostileOpenAI(options) {
  return new HostileOpenAI(options).listen();
}
