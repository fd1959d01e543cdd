// The OpenAI chat-completions wire format, as the local model server speaks it: request
// checks, messages -> node-llama-cpp chat history, and the reply bodies (JSON and SSE chunks).
// Pure functions, no model: tests/real-model/wire.test.mjs covers them.
//
// Wire format: https://platform.openai.com/docs/api-reference/chat

/** A request the server refuses, answered with `status` and an OpenAI error body. */
export class RequestError extends Error {
  constructor(status, message, { type = 'invalid_request_error', param = null, code = null } = {}) {
    super(message);
    this.status = status;
    this.type = type;
    this.param = param;
    this.code = code;
  }

  /** The `{"error": {...}}` body. */
  body() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** Text of a message `content`: a string, null, or content parts `[{type: "text", text}]`. */
export function contentText(content) {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : part?.type === 'text' ? String(part.text ?? '') : ''))
      .join('');
  }
  return JSON.stringify(content);
}

/** An assistant message's tool calls, written as text (this server never calls tools). */
function toolCallsText(calls) {
  return calls
    .map((c) => `[called ${c?.function?.name ?? 'a tool'}(${contentText(c?.function?.arguments ?? '')})]`)
    .join('\n');
}

/**
 * OpenAI `messages` -> node-llama-cpp chat history, ending with an empty model turn for the
 * reply. System and developer messages become system turns; a tool result becomes a user
 * turn that says what it is; consecutive user turns are merged.
 * @returns {Array<{type: 'system', text: string} | {type: 'user', text: string} | {type: 'model', response: string[]}>}
 */
export function toChatHistory(messages) {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new RequestError(400, "'messages' must be a non-empty array", { param: 'messages' });
  }
  const history = [];
  const push = (type, text) => {
    const last = history[history.length - 1];
    if (type === 'user' && last?.type === 'user') {
      last.text = `${last.text}\n\n${text}`;
    } else if (type === 'model') {
      history.push({ type, response: [text] });
    } else {
      history.push({ type, text });
    }
  };
  messages.forEach((m, i) => {
    if (!m || typeof m !== 'object') {
      throw new RequestError(400, `messages[${i}] is not an object`, { param: `messages[${i}]` });
    }
    const text = contentText(m.content);
    switch (m.role) {
      case 'system':
      case 'developer':
        push('system', text);
        break;
      case 'user':
        push('user', text);
        break;
      case 'assistant': {
        const calls = Array.isArray(m.tool_calls) && m.tool_calls.length ? toolCallsText(m.tool_calls) : '';
        push('model', [text, calls].filter(Boolean).join('\n'));
        break;
      }
      case 'tool':
      case 'function':
        push('user', `Tool result${m.name ? ` (${m.name})` : ''}:\n${text}`);
        break;
      default:
        throw new RequestError(400, `messages[${i}].role '${m.role}' is not one of system, developer, user, assistant, tool`, {
          param: `messages[${i}].role`,
        });
    }
  });
  // The reply is a new assistant turn, also after an assistant message (as OpenAI does; the
  // agent ends a Reason prompt with its last observation).
  history.push({ type: 'model', response: [] });
  return history;
}

/**
 * The JSON schema a request asks for, `null` for none, or the string 'json' for
 * `{"type": "json_object"}`.
 */
export function requestedFormat(responseFormat) {
  if (responseFormat === undefined || responseFormat === null) return null;
  const type = responseFormat?.type;
  if (type === 'text') return null;
  if (type === 'json_object') return 'json';
  if (type === 'json_schema') {
    const schema = responseFormat.json_schema?.schema;
    if (!schema || typeof schema !== 'object') {
      throw new RequestError(400, "response_format json_schema needs 'json_schema.schema' (an object)", {
        param: 'response_format',
      });
    }
    return schema;
  }
  throw new RequestError(400, `response_format type '${type}' is not supported (text, json_object, json_schema)`, {
    param: 'response_format',
  });
}

const num = (v, name, { min = -Infinity, max = Infinity } = {}) => {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw new RequestError(400, `'${name}' must be a number in [${min}, ${max}]`, { param: name });
  }
  return v;
};

/**
 * The generation options of a request (sampling, stop sequences, token cap). `maxTokensCap`
 * is the server's own cap on generated tokens.
 */
export function generationOptions(body, { maxTokensCap }) {
  const requested = num(body.max_completion_tokens ?? body.max_tokens, 'max_tokens', { min: 1 });
  const stop = body.stop === undefined || body.stop === null ? [] : [body.stop].flat();
  if (!stop.every((s) => typeof s === 'string' && s.length > 0)) {
    throw new RequestError(400, "'stop' must be a string or an array of strings", { param: 'stop' });
  }
  return {
    maxTokens: Math.min(requested ?? maxTokensCap, maxTokensCap),
    temperature: num(body.temperature, 'temperature', { min: 0, max: 2 }) ?? 0,
    topP: num(body.top_p, 'top_p', { min: 0, max: 1 }),
    seed: num(body.seed, 'seed'),
    frequencyPenalty: num(body.frequency_penalty, 'frequency_penalty', { min: -2, max: 2 }),
    presencePenalty: num(body.presence_penalty, 'presence_penalty', { min: -2, max: 2 }),
    stop,
  };
}

/** node-llama-cpp stop reason -> OpenAI `finish_reason`. */
export function finishReason(stopReason) {
  return stopReason === 'maxTokens' ? 'length' : 'stop';
}

/** A non-streamed reply. */
export function completionBody({ id, created, model, content, finish, usage }) {
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finish, logprobs: null }],
    usage,
  };
}

/** One streamed chunk: a content delta (`first` also carries the role), or the finish. */
export function chunkBody({ id, created, model, content, first = false, finish = null }) {
  const delta = finish ? {} : { ...(first ? { role: 'assistant' } : {}), content };
  return {
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  };
}

/** The usage chunk sent before `[DONE]` when `stream_options.include_usage` is set. */
export function usageChunkBody({ id, created, model, usage }) {
  return { id, object: 'chat.completion.chunk', created, model, choices: [], usage };
}

/** `usage` from token counts. */
export function usageOf(promptTokens, completionTokens) {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}

/** One SSE event carrying `data` (JSON-encoded unless it is a string). */
export function sse(data) {
  return `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}
