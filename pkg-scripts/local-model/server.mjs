// A local model behind the OpenAI chat-completions API, for pkg-scripts/run.sh and the
// real-model test tier: any GGUF file, run on the CPU by node-llama-cpp's prebuilt binaries.
//
//   node pkg-scripts/local-model/server.mjs --model PATH.gguf [--port 0] [--threads 1]
//       [--context 8192] [--max-tokens 512] [--keep-alive-ms 5000] [--pid-file F]
//       [--ready-file F] [--exit-with PID] [--request-log F]
//
// Binds 127.0.0.1 only. Endpoints: POST /v1/chat/completions (streamed or not;
// `response_format` json_schema / json_object become a grammar; `tools` become node-llama-cpp
// function definitions when the model's chat template has a tool syntax, and its calls come
// back as `tool_calls`; see README.md), GET /v1/models (says whether the model calls tools),
// GET /health, GET /stats (load time, token rates).
// One generation at a time; other requests wait their turn. Streamed replies send their
// headers at once and an SSE comment whenever nothing was sent for --keep-alive-ms (5 s),
// e.g. while the prompt is processed (a Chrome extension's worker is stopped when a fetch
// gets no bytes for 30 s); a JSON reply that takes longer than that sends its headers and
// then blank space, which JSON allows. A client that hangs up aborts its
// generation. The GGUF's own chat template is used. Greedy decoding (temperature 0) with a
// mild repeat penalty unless the request says otherwise; max_tokens is capped by
// --max-tokens.
//
// When ready it writes {url, pid, port, load_ms, ...} to --ready-file and logs to stderr.
// SIGTERM/SIGINT, or the --exit-with process ending, stop it and remove the PID/ready files.
// --request-log appends one JSON line per answered request (its messages, tools, timings and
// what came back), for the quality benchmark (bench/quality/).

import { randomUUID } from 'node:crypto';
import { appendFileSync, rmSync, statSync, writeFileSync, renameSync } from 'node:fs';
import { createServer } from 'node:http';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import {
  RequestError,
  chunkBody,
  forcedCallSchema,
  grammarFunctions,
  mayBeTextCall,
  replyCalls,
  requestedTools,
  completionBody,
  finishReason,
  generationOptions,
  requestedFormat,
  sse,
  toChatHistory,
  usageChunkBody,
  usageOf,
} from './openai.mjs';

const MAX_BODY_BYTES = 8 * 1024 * 1024;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

const log = (line) => process.stderr.write(`[local-model] ${line}\n`);

function parseCli() {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '0' },
      threads: { type: 'string', default: process.env.KL_MODEL_THREADS || '1' },
      context: { type: 'string', default: '8192' },
      'max-tokens': { type: 'string', default: '512' },
      'keep-alive-ms': { type: 'string', default: '5000' },
      name: { type: 'string' },
      'pid-file': { type: 'string' },
      'ready-file': { type: 'string' },
      'exit-with': { type: 'string' },
      'request-log': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: node server.mjs --model PATH.gguf [--port 0] [--threads 1] [--context 8192]\n' +
        '       [--max-tokens 512] [--keep-alive-ms 5000] [--name ID] [--pid-file F] [--ready-file F]\n' +
        '       [--exit-with PID] [--request-log F]\n',
    );
    process.exit(0);
  }
  const int = (name, min) => {
    const v = Number(values[name]);
    if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be an integer >= ${min}, got '${values[name]}'`);
    return v;
  };
  if (!values.model) throw new Error('--model PATH.gguf is required');
  if (!statSync(values.model, { throwIfNoEntry: false })?.isFile()) throw new Error(`--model: no file at ${values.model}`);
  if (!LOOPBACK.has(values.host)) throw new Error(`--host must be a loopback address (127.0.0.1, localhost, ::1), got '${values.host}'`);
  return {
    model: values.model,
    host: values.host,
    port: int('port', 0),
    threads: int('threads', 1),
    context: int('context', 256),
    maxTokensCap: int('max-tokens', 16),
    keepAliveMs: int('keep-alive-ms', 100),
    name: values.name || basename(values.model).replace(/\.gguf$/i, ''),
    pidFile: values['pid-file'],
    readyFile: values['ready-file'],
    exitWith: values['exit-with'] ? int('exit-with', 1) : null,
    requestLog: values['request-log'],
  };
}

// ---- the model ------------------------------------------------------------------------------

async function loadModel(opts) {
  const { getLlama, ChatWrapper, LlamaChat, LlamaLogLevel } = await import('node-llama-cpp');
  const t0 = performance.now();
  let llama;
  try {
    // build: 'never' and gpu: false: only the prebuilt CPU binaries of @node-llama-cpp/linux-x64,
    // never a compile or a download.
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.warn });
  } catch (err) {
    throw new Error(`node-llama-cpp found no prebuilt CPU binary (${err.message}). ` +
      'Install pkg-scripts/local-model with `npm ci --omit=optional` (its package.json lists @node-llama-cpp/linux-x64).');
  }
  const model = await llama.loadModel({ modelPath: opts.model });
  const contextSize = Math.min(opts.context, model.trainContextSize || opts.context);
  const context = await model.createContext({ contextSize, threads: opts.threads, sequences: 1 });
  const sequence = context.getSequence();
  const chat = new LlamaChat({ contextSequence: sequence });
  return {
    llama,
    model,
    context,
    sequence,
    chat,
    contextSize,
    template: chat.chatWrapper.wrapperName ?? chat.chatWrapper.constructor.name,
    // Whether the chat template has a tool syntax of its own (Qwen's <tool_call> tags), rather
    // than node-llama-cpp's generic one, which a model not trained on it does not follow.
    nativeTools: Boolean(chat.chatWrapper.settings?.functions) &&
      chat.chatWrapper.settings.functions !== ChatWrapper.defaultSettings.functions,
    loadMs: performance.now() - t0,
  };
}

// ---- statistics -----------------------------------------------------------------------------

function newStats() {
  return {
    requests: 0,
    completed: 0,
    aborted: 0,
    failed: 0,
    rejected: 0,
    active: 0,
    waiting: 0,
    promptTokensEvaluated: 0,
    promptEvalMs: 0,
    generatedTokens: 0,
    generationMs: 0,
    // Replies with tool calls, by where the calls came from: the chat template's own syntax
    // (or a forced call), JSON written in the text, or a call announced in prose.
    callSources: { native: 0, text: 0, announced: 0 },
    last: null,
  };
}

function statsView(stats, lm, opts) {
  const rate = (tokens, ms) => (ms > 0 ? Math.round((tokens / ms) * 10_000) / 10 : null);
  return {
    model: opts.name,
    model_path: opts.model,
    chat_template: lm.template,
    tool_calls: lm.nativeTools,
    threads: opts.threads,
    context_size: lm.contextSize,
    max_tokens_cap: opts.maxTokensCap,
    keep_alive_ms: opts.keepAliveMs,
    load_ms: Math.round(lm.loadMs),
    requests: stats.requests,
    completed: stats.completed,
    aborted: stats.aborted,
    failed: stats.failed,
    rejected: stats.rejected,
    active: stats.active,
    waiting: stats.waiting,
    prompt_tokens_evaluated: stats.promptTokensEvaluated,
    prompt_eval_ms: Math.round(stats.promptEvalMs),
    prompt_tokens_per_s: rate(stats.promptTokensEvaluated, stats.promptEvalMs),
    generated_tokens: stats.generatedTokens,
    generation_ms: Math.round(stats.generationMs),
    generation_tokens_per_s: rate(stats.generatedTokens, stats.generationMs),
    call_sources: { ...stats.callSources },
    last: stats.last,
  };
}

// ---- replies --------------------------------------------------------------------------------

/**
 * The response side of one request: the headers go out early, blank keep-alives go out while
 * nothing else does, and an error after the headers becomes an error event or body.
 */
class Reply {
  constructor(res, { stream, keepAliveMs }) {
    this.res = res;
    this.stream = stream;
    this.keepAliveMs = keepAliveMs;
    this.lastWrite = Date.now();
    this.timer = setInterval(() => this.keepAlive(), Math.min(1_000, keepAliveMs / 2));
    if (stream) this.head(200);
  }

  get open() {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  head(status) {
    if (this.res.headersSent) return;
    this.res.writeHead(status, this.stream
      ? { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' }
      : { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' });
    this.res.flushHeaders();
  }

  write(text) {
    if (!this.open) return;
    this.head(200);
    this.res.write(text);
    this.lastWrite = Date.now();
  }

  keepAlive() {
    if (!this.open || Date.now() - this.lastWrite < this.keepAliveMs) return;
    // SSE comment lines are ignored by clients; leading blank space is valid JSON.
    this.write(this.stream ? ': keep-alive\n\n' : ' ');
  }

  end(text = '') {
    clearInterval(this.timer);
    if (!this.open) return;
    this.head(200);
    this.res.end(text);
  }

  fail(err) {
    clearInterval(this.timer);
    if (!this.open) return;
    const status = err instanceof RequestError ? err.status : 500;
    const body = err instanceof RequestError
      ? err.body()
      : { error: { message: `The local model failed: ${err.message}`, type: 'server_error', param: null, code: null } };
    if (!this.res.headersSent) {
      this.res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      this.res.end(JSON.stringify(body));
    } else {
      this.res.end(this.stream ? sse(body) + sse('[DONE]') : JSON.stringify(body));
    }
  }

  dispose() {
    clearInterval(this.timer);
  }
}

function sendJson(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new RequestError(413, `the request body is over ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
    req.on('close', () => {
      if (!req.complete) reject(new RequestError(400, 'the client hung up before sending the whole body'));
    });
  });
}

// ---- the server -----------------------------------------------------------------------------

function createHandler(lm, opts, stats) {
  const grammars = new Map();
  let queue = Promise.resolve();
  let seq = 0;

  async function grammarFor(format) {
    if (format === null) return undefined;
    const key = format === 'json' ? 'json' : JSON.stringify(format);
    if (!grammars.has(key)) {
      try {
        grammars.set(key, format === 'json'
          ? await lm.llama.getGrammarFor('json')
          : await lm.llama.createGrammarForJsonSchema(format));
      } catch (err) {
        throw new RequestError(400, `response_format: this json_schema is not supported by the local model server (${err.message})`, {
          param: 'response_format',
        });
      }
      if (grammars.size > 32) grammars.delete(grammars.keys().next().value);
    }
    return grammars.get(key);
  }

  function promptTokens(history, functions) {
    const { contextText } = lm.chat.chatWrapper.generateContextState({
      chatHistory: history,
      availableFunctions: functions,
      documentFunctionParams: functions ? true : undefined,
    });
    return contextText.tokenize(lm.model.tokenizer).length;
  }

  /**
   * How a request's tools reach the model: 'native' (function definitions in the template's
   * tool syntax), 'forced' (a grammar for one call: tool_choice "required" or a named
   * function), or 'none' with the reason they are not used.
   */
  function toolMode(offered, format) {
    if (offered.tools.length === 0) return { mode: 'none' };
    if (offered.choice === 'none') return { mode: 'none', dropped: 'tool_choice none' };
    if (format !== null) return { mode: 'none', dropped: 'response_format takes the grammar' };
    if (offered.choice === 'required') return { mode: 'forced' };
    if (!lm.nativeTools) return { mode: 'none', dropped: `the ${lm.template} chat template has no tool syntax` };
    return { mode: 'native' };
  }

  /** Checks and prepares a chat request; throws RequestError before any byte is sent. */
  async function prepare(body) {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new RequestError(400, 'the body must be a JSON object');
    const offered = requestedTools(body);
    const format = requestedFormat(body.response_format);
    const tools = toolMode(offered, format);
    // Calls and results already in the conversation are written in the template's own tool
    // syntax whenever it has one, also when this request offers no tools (the model reads
    // them as it was trained to, and does not copy a text rendering into its answer).
    const history = toChatHistory(body.messages, { functionCalls: lm.nativeTools });
    const gen = generationOptions(body, { maxTokensCap: opts.maxTokensCap });
    const grammar = tools.mode === 'forced'
      ? await grammarFor(forcedCallSchema(offered.tools, offered.name))
      : await grammarFor(format);
    const functions = tools.mode === 'native' ? grammarFunctions(offered.tools) : undefined;
    const prompt = promptTokens(history, functions);
    const room = lm.contextSize - prompt;
    if (room < 16) {
      throw new RequestError(400, `The prompt is ${prompt} tokens; this model's context holds ${lm.contextSize} ` +
        '(with room for the reply). Shorten the conversation or the page excerpt.', { code: 'context_length_exceeded', param: 'messages' });
    }
    gen.maxTokens = Math.min(gen.maxTokens, room);
    return {
      history,
      gen,
      grammar,
      functions,
      tools: tools.mode === 'none' ? [] : offered.tools,
      toolMode: tools.mode,
      toolsDropped: tools.dropped ? `${offered.tools.length} tools dropped: ${tools.dropped}` : '',
      prompt,
      stream: body.stream === true,
      usageInStream: body.stream_options?.include_usage === true,
    };
  }

  async function generate(job, reply, abort) {
    const { history, gen, grammar, functions } = job;
    const meter0 = lm.sequence.tokenMeter.getState();
    const t0 = performance.now();
    let tFirst = null;
    let text = '';
    // Streamed text not sent yet: a reply that may be a tool call written as JSON is held
    // back until it is known (a forced call is JSON throughout).
    let sent = 0;
    const holdAll = job.toolMode === 'forced';
    const mayHold = job.toolMode === 'native';
    const flush = () => {
      if (!job.stream || sent === text.length) return;
      reply.write(sse(chunkBody({ ...ids, content: text.slice(sent), first: sent === 0 })));
      sent = text.length;
    };
    const ids = { id: `chatcmpl-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model: job.model };
    const result = await lm.chat.generateResponse(history, {
      maxTokens: gen.maxTokens,
      temperature: gen.temperature,
      topP: gen.topP,
      seed: gen.seed,
      grammar,
      functions,
      documentFunctionParams: functions ? true : undefined,
      maxParallelFunctionCalls: functions ? 4 : undefined,
      customStopTriggers: gen.stop.length ? gen.stop : undefined,
      // A mild repeat penalty (llama.cpp's classic 1.1 over the last 64 tokens) keeps small
      // models from looping.
      repeatPenalty: {
        penalty: 1.1,
        lastTokens: 64,
        frequencyPenalty: clamp01(gen.frequencyPenalty),
        presencePenalty: clamp01(gen.presencePenalty),
      },
      signal: abort.signal,
      stopOnAbortSignal: true,
      onTextChunk(chunk) {
        if (!chunk) return;
        tFirst ??= performance.now();
        text += chunk;
        if (holdAll || (mayHold && sent === 0 && mayBeTextCall(text))) return;
        flush();
      },
    });
    const tEnd = performance.now();
    tFirst ??= tEnd;
    const meter1 = lm.sequence.tokenMeter.getState();
    const evaluated = meter1.usedInputTokens - meter0.usedInputTokens;
    const generated = meter1.usedOutputTokens - meter0.usedOutputTokens;
    const forced = holdAll ? forcedCall(result.response ?? text) : [];
    const calls = replyCalls({
      text: holdAll && forced.length ? '' : result.response ?? text,
      functionCalls: [...(result.functionCalls ?? []), ...forced],
      tools: job.tools,
      newId: () => `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`,
    });
    // What was held back and is not a call is prose after all.
    if (calls.toolCalls.length === 0) flush();
    const finish = finishReason(result.metadata.stopReason, { toolCalls: calls.toolCalls.length > 0 });
    const usage = usageOf(job.prompt, generated);
    const timing = {
      started_at: Date.now() - Math.round(performance.now() - t0),
      first_token_ms: Math.round(tFirst - t0),
      prompt_tokens: job.prompt,
      prompt_tokens_evaluated: evaluated,
      prompt_eval_ms: Math.round(tFirst - t0),
      generated_tokens: generated,
      generation_ms: Math.round(tEnd - tFirst),
      finish_reason: finish,
      aborted: abort.signal.aborted,
    };
    return { ids, text: calls.content ?? (calls.toolCalls.length ? null : ''), toolCalls: calls.toolCalls, callSource: calls.source, held: sent === 0, finish, usage, timing };
  }

  async function chatCompletion(req, res) {
    let job;
    try {
      const raw = await readBody(req);
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        throw new RequestError(400, 'the body is not valid JSON');
      }
      job = await prepare(body);
      job.model = typeof body.model === 'string' && body.model ? body.model : opts.name;
      if (opts.requestLog) job.messages = body.messages;
    } catch (err) {
      stats.rejected += 1;
      const e = err instanceof RequestError ? err : new RequestError(400, err.message);
      log(`rejected a request: ${e.message}`);
      sendJson(res, e.status, e.body());
      return;
    }
    const n = ++seq;
    stats.requests += 1;
    const reply = new Reply(res, { stream: job.stream, keepAliveMs: opts.keepAliveMs });
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('the client hung up'));
    });
    stats.waiting += 1;
    const turn = queue.then(async () => {
      stats.waiting -= 1;
      if (abort.signal.aborted) {
        stats.aborted += 1;
        log(`#${n} dropped: the client hung up while it waited`);
        reply.dispose();
        return;
      }
      stats.active += 1;
      try {
        const out = await generate(job, reply, abort);
        const { timing } = out;
        stats.promptTokensEvaluated += timing.prompt_tokens_evaluated;
        stats.promptEvalMs += timing.prompt_eval_ms;
        stats.generatedTokens += Math.max(0, timing.generated_tokens - 1);
        stats.generationMs += timing.generation_ms;
        stats.last = { request: n, stream: job.stream, grammar: Boolean(job.grammar), ...timing };
        if (out.callSource) stats.callSources[out.callSource] += 1;
        if (opts.requestLog) {
          appendFileSync(opts.requestLog, `${JSON.stringify({
            request: n,
            ...timing,
            stream: job.stream,
            max_tokens: job.gen.maxTokens,
            tool_mode: job.toolMode,
            tools: job.tools.map((t) => t.name),
            messages: job.messages,
            content: out.text,
            tool_calls: out.toolCalls.map((c) => c.function),
          })}\n`);
        }
        log(`#${n} ${job.stream ? 'stream' : 'json'}${job.grammar ? '+schema' : ''}` +
          `${job.functions ? ` (${job.tools.length} tools)` : ''}${job.toolMode === 'forced' ? ' (forced tool call)' : ''}` +
          `${job.toolsDropped ? ` (${job.toolsDropped})` : ''}${out.toolCalls.length ? ` -> ${out.toolCalls.map((c) => c.function.name).join(', ')} (${out.callSource})` : ''}: ` +
          `prompt ${timing.prompt_tokens} tok (${timing.prompt_tokens_evaluated} evaluated) in ${secs(timing.prompt_eval_ms)}, ` +
          `${timing.generated_tokens} generated in ${secs(timing.generation_ms)}, ${timing.aborted ? 'ABORTED (client hung up)' : `finish ${timing.finish_reason}`}`);
        if (abort.signal.aborted) {
          stats.aborted += 1;
          reply.dispose();
          return;
        }
        if (job.stream) {
          if (out.toolCalls.length) {
            // Prose held back with the call (rare) goes first, then the calls.
            if (out.held && out.text) reply.write(sse(chunkBody({ ...out.ids, content: out.text, first: true })));
            reply.write(sse(chunkBody({ ...out.ids, toolCalls: out.toolCalls, first: out.held && !out.text })));
          }
          reply.write(sse(chunkBody({ ...out.ids, finish: out.finish })));
          if (job.usageInStream) reply.write(sse(usageChunkBody({ ...out.ids, usage: out.usage })));
          reply.end(sse('[DONE]'));
        } else {
          reply.end(JSON.stringify(completionBody({ ...out.ids, content: out.text, toolCalls: out.toolCalls, finish: out.finish, usage: out.usage })));
        }
        stats.completed += 1;
      } catch (err) {
        if (abort.signal.aborted) {
          stats.aborted += 1;
          log(`#${n} aborted: the client hung up`);
          reply.dispose();
        } else {
          stats.failed += 1;
          log(`#${n} failed: ${err.stack ?? err.message}`);
          reply.fail(err);
        }
      } finally {
        stats.active -= 1;
      }
    });
    queue = turn.catch(() => {});
    await turn;
  }

  return async (req, res) => {
    const { pathname } = new URL(req.url, 'http://127.0.0.1');
    const path = pathname.replace(/\/+$/, '') || '/';
    try {
      if (req.method === 'POST' && (path === '/v1/chat/completions' || path === '/chat/completions')) {
        await chatCompletion(req, res);
      } else if (req.method === 'GET' && (path === '/v1/models' || path === '/models')) {
        // `tool_calls`: whether `tools` reach the model (its chat template has a tool syntax);
        // without it they are dropped unless tool_choice forces a call.
        sendJson(res, 200, {
          object: 'list',
          data: [{ id: opts.name, object: 'model', created: 0, owned_by: 'local', chat_template: lm.template, tool_calls: lm.nativeTools }],
        });
      } else if (req.method === 'GET' && path === '/health') {
        sendJson(res, 200, { status: 'ok' });
      } else if (req.method === 'GET' && path === '/stats') {
        sendJson(res, 200, statsView(stats, lm, opts));
      } else {
        sendJson(res, 404, new RequestError(404, `no route for ${req.method} ${pathname} (POST /v1/chat/completions, GET /v1/models, /health, /stats)`).body());
      }
    } catch (err) {
      log(`error on ${req.method} ${pathname}: ${err.stack ?? err.message}`);
      if (!res.headersSent) sendJson(res, 500, { error: { message: err.message, type: 'server_error' } });
      else res.destroy();
    }
  };
}

/** The call a forced-call grammar wrote (`{"name": ..., "arguments": {...}}`), as node-llama-cpp reports calls. */
function forcedCall(text) {
  try {
    const v = JSON.parse(text);
    return v && typeof v.name === 'string' ? [{ functionName: v.name, params: v.arguments ?? {} }] : [];
  } catch {
    return [];
  }
}

const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
const clamp01 = (v) => (v === undefined ? undefined : Math.min(1, Math.max(0, v)));

function writeAtomically(file, text) {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

async function main() {
  let opts;
  try {
    opts = parseCli();
  } catch (err) {
    log(`error: ${err.message}`);
    return 2;
  }
  if (opts.pidFile) writeAtomically(opts.pidFile, `${process.pid}\n`);
  const cleanupFiles = () => {
    for (const f of [opts.pidFile, opts.readyFile]) if (f) rmSync(f, { force: true });
  };
  log(`loading ${opts.model} (${(statSync(opts.model).size / 1e6).toFixed(0)} MB) on ${opts.threads} thread(s)`);
  let lm;
  try {
    lm = await loadModel(opts);
  } catch (err) {
    log(`error: could not load the model: ${err.message}`);
    cleanupFiles();
    return 1;
  }
  const stats = newStats();
  const server = createServer(createHandler(lm, opts, stats));
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 0;
  const sockets = new Set();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  try {
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port, opts.host, resolve);
    });
  } catch (err) {
    log(`error: cannot listen on ${opts.host}:${opts.port}: ${err.message}`);
    cleanupFiles();
    return 1;
  }
  const { port } = server.address();
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const url = `http://${host}:${port}/v1`;
  if (opts.readyFile) {
    writeAtomically(opts.readyFile, `${JSON.stringify({
      url, pid: process.pid, port, model: opts.name, threads: opts.threads,
      context_size: lm.contextSize, chat_template: lm.template, tool_calls: lm.nativeTools, load_ms: Math.round(lm.loadMs),
    })}\n`);
  }
  log(`ready: ${url} (model ${opts.name}, chat template ${lm.template}, ` +
    `${lm.nativeTools ? 'tool calls' : 'no tool syntax: tools dropped'}, context ${lm.contextSize}, ` +
    `${opts.threads} thread(s), loaded in ${secs(lm.loadMs)}, pid ${process.pid})`);

  return new Promise((resolve) => {
    let stopping = false;
    const stop = (why) => {
      if (stopping) return;
      stopping = true;
      log(`stopping (${why})`);
      clearInterval(watch);
      server.close();
      for (const s of sockets) s.destroy();
      cleanupFiles();
      const hard = setTimeout(() => resolve(0), 3_000);
      hard.unref();
      lm.llama.dispose().catch(() => {}).finally(() => resolve(0));
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    // The server must not outlive the script that started it, even one killed with -9.
    const watch = setInterval(() => {
      if (opts.exitWith === null) return;
      try {
        process.kill(opts.exitWith, 0);
      } catch {
        stop(`process ${opts.exitWith} ended`);
      }
    }, 1_000);
  });
}

process.exit(await main());
