// An OpenAI-compatible chat-completions server on 127.0.0.1 with a context window, for the
// end-to-end tests of context management (tests/e2e/context.test.mjs).
//
// It is the scripted server of openai-server.mjs (same routes, same JSON and SSE replies,
// same `requests` records) with three differences:
// - every chat request is counted with the reference tokenizer, o200k_base (js-tiktoken), the
//   way OpenAI counts a chat prompt (see `countChatTokens`), and one whose prompt plus
//   requested completion (`max_completion_tokens` or `max_tokens`) exceeds the window is
//   refused with HTTP 400 and OpenAI's own error body (see `contextLengthExceeded`);
// - replies come from one responder per request KIND (`requestKind`): reason, observe,
//   compaction, reflection, synthesis. A request of a kind without a responder is answered
//   500 and recorded as unexpected, so an unexpected call fails the test loudly;
// - usage reports the counted prompt tokens (and the reply's completion tokens, counted too).
// Each chat request's record gains `kind`, `tokens` ({prompt, completion, total}) and `refused`.

import { Tiktoken } from 'js-tiktoken/lite';
import o200k_base from 'js-tiktoken/ranks/o200k_base';
import { ScriptedOpenAI } from './openai-server.mjs';

const encoder = new Tiktoken(o200k_base);

/** o200k_base tokens of `text`; special-token look-alikes in page text are plain text. */
export function countTextTokens(text) {
  return encoder.encode(String(text ?? ''), [], []).length;
}

// OpenAI's chat-format counting, as in the OpenAI Cookbook's "How to count tokens with
// tiktoken" (examples/How_to_count_tokens_with_tiktoken.ipynb, num_tokens_from_messages for
// the gpt-4o family): 3 tokens per message (<|start|>{role}\n ... <|end|>), 1 more for a
// `name`, every string value of a message counted, and 3 for the reply's priming
// (<|start|>assistant<|message|>). Tool definitions, tool calls and the response format are
// counted as their JSON text (a slight over-count, which only makes the window stricter).
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const REPLY_PRIMING = 3;

/** The text of a message's `content`: a string, or the text parts of a content array. */
function contentText(content) {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => part?.text ?? '').join('');
  return JSON.stringify(content);
}

/**
 * The tokens a chat-completions request body asks for: `prompt` (messages, tools and response
 * format, counted as above) and `completion` (what it reserves for the reply).
 */
export function countChatTokens(body) {
  let prompt = REPLY_PRIMING;
  for (const message of body?.messages ?? []) {
    prompt += TOKENS_PER_MESSAGE;
    for (const [key, value] of Object.entries(message ?? {})) {
      if (key === 'content') prompt += countTextTokens(contentText(value));
      else if (key === 'tool_calls') prompt += countTextTokens(JSON.stringify(value));
      else if (typeof value === 'string') prompt += countTextTokens(value);
      if (key === 'name') prompt += TOKENS_PER_NAME;
    }
  }
  if (Array.isArray(body?.tools) && body.tools.length) prompt += countTextTokens(JSON.stringify(body.tools));
  if (body?.response_format) prompt += countTextTokens(JSON.stringify(body.response_format));
  const completion = Number(body?.max_completion_tokens ?? body?.max_tokens ?? 0) || 0;
  return { prompt, completion, total: prompt + completion };
}

/**
 * OpenAI's refusal of a request longer than the model's window: HTTP 400 with this body.
 * The message's wording is quoted verbatim in reports of the error, e.g.
 * https://github.com/The-Vibe-Company/quivr/issues/505 ("This model's maximum context length
 * is 4097 tokens. However, you requested 4203 tokens (3703 in the messages, 500 in the
 * completion). Please reduce the length of the messages or completion."), and the whole body
 * (type invalid_request_error, param messages, code context_length_exceeded) in
 * https://github.com/chathub-dev/chathub/issues/126 and
 * https://github.com/rahul2002m/ChatPDF/issues/6.
 */
export function contextLengthExceeded(window, { prompt, completion, total }) {
  return {
    error: {
      message:
        `This model's maximum context length is ${window} tokens. However, you requested ` +
        `${total} tokens (${prompt} in the messages, ${completion} in the completion). ` +
        'Please reduce the length of the messages or completion.',
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  };
}

/** The response_format schema names that identify a request's kind. */
const KIND_BY_SCHEMA = { control: 'observe', compaction: 'compaction', reflection: 'reflection' };

/**
 * What a chat request is, from its shape: a `response_format.json_schema.name` of "control"
 * (observe), "compaction" or "reflection"; otherwise tools offered (reason) or neither
 * (synthesis). Any other schema name gives `unknown:<name>`.
 */
export function requestKind(body) {
  const format = body?.response_format;
  if (format) {
    const name = format.json_schema?.name ?? format.type ?? '?';
    return KIND_BY_SCHEMA[name] ?? `unknown:${name}`;
  }
  return Array.isArray(body?.tools) && body.tools.length ? 'reason' : 'synthesis';
}

/** Every message's text of a request, joined: for responders that look for a phrase. */
export function requestText(body) {
  return (body?.messages ?? []).map((m) => contentText(m?.content)).join('\n');
}

export const KINDS = ['reason', 'observe', 'compaction', 'reflection', 'synthesis'];

export class WindowedOpenAI extends ScriptedOpenAI {
  /**
   * @param {{contextWindow?: number, responders?: Record<string, Function>}} [options]
   *   responders: {kind: (body, record) => reply | Promise<reply>}, replies as in
   *   openai-server.mjs ({content}, {tool_calls}, {status, body}, delayMs, json, ...)
   */
  constructor({ contextWindow = 4096, responders = {} } = {}) {
    super();
    this.contextWindow = contextWindow;
    this.responders = { ...responders };
    this.respondWith((body, record) => this.answer(body, record));
  }

  /** Replaces the responders (all of them: a kind left out is unexpected from now on). */
  setResponders(responders) {
    this.responders = { ...responders };
    return this;
  }

  /** Counts the request; refuses it when prompt + completion exceed the window. */
  refuse(body, record) {
    if (record.method !== 'POST' || !record.path.endsWith('/chat/completions')) return null;
    record.kind = requestKind(body);
    record.tokens = countChatTokens(body);
    record.refused = record.tokens.total > this.contextWindow;
    if (!record.refused) return null;
    return { status: 400, body: contextLengthExceeded(this.contextWindow, record.tokens) };
  }

  async answer(body, record) {
    const responder = this.responders[record.kind];
    if (!responder) {
      record.unexpected = true;
      return {
        status: 500,
        body: {
          error: {
            message: `windowed server: no responder for a ${record.kind} request (chat request #${this.chatRequests.length - 1})`,
            type: 'server_error',
          },
        },
      };
    }
    const reply = await responder(body, record);
    if (!reply || reply.status) return reply;
    const text = reply.content ?? (Array.isArray(reply.deltas) ? reply.deltas.join('') : '');
    const calls = reply.tool_calls ? JSON.stringify(reply.tool_calls) : '';
    const completion = Math.max(1, countTextTokens(text) + countTextTokens(calls));
    return {
      ...reply,
      usage: { prompt_tokens: record.tokens.prompt, completion_tokens: completion, ...reply.usage },
    };
  }

  /** Chat requests of one kind. */
  ofKind(kind) {
    return this.chatRequests.filter((r) => r.kind === kind);
  }

  /** Chat requests refused for their length. */
  get refused() {
    return this.chatRequests.filter((r) => r.refused);
  }

  /** Chat requests no responder was given for. */
  get unexpected() {
    return this.chatRequests.filter((r) => r.unexpected);
  }

  /** One line per chat request since `from`: kind, tokens, refused, what was served. */
  ledger(from = 0) {
    return this.chatRequests.slice(from).map((r, i) =>
      `#${from + i} ${r.kind} ${r.tokens?.prompt}+${r.tokens?.completion}=${r.tokens?.total}` +
      `${r.refused ? ' REFUSED' : ''} -> ${r.served ?? '?'}`).join('\n') || '(no chat requests)';
  }
}

/** Starts a windowed server; `await server.close()` when done. */
export async function startWindowedOpenAI(options) {
  return new WindowedOpenAI(options).listen();
}
