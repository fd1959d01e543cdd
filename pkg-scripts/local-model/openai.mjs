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

/** An assistant message's tool calls, written as text (for models without a tool syntax). */
function toolCallsText(calls) {
  return calls
    .map((c) => `[called ${c?.function?.name ?? 'a tool'}(${contentText(c?.function?.arguments ?? '')})]`)
    .join('\n');
}

/** A call's `arguments` (a JSON string, as OpenAI sends them) as a value; text that is not JSON stays text. */
function callParams(args) {
  if (typeof args !== 'string') return args ?? {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/**
 * OpenAI `messages` -> node-llama-cpp chat history. System and developer messages become
 * system turns; consecutive user turns are merged.
 *
 * With `functionCalls` (the model's chat template has a tool syntax and the request offers
 * tools), an assistant message's `tool_calls` become function calls of its model turn, and the
 * `role: "tool"` messages that answer them (by `tool_call_id`, else in order) their results,
 * so the template renders both in its own tags. Otherwise a call is written as text and a tool
 * result becomes a user turn that says what it is.
 *
 * The history ends with the turn the model writes: a new empty model turn, or, when the last
 * message is a tool result, the model turn that made the calls (the model goes on after their
 * results, as its template expects).
 * @returns {Array<{type: 'system', text: string} | {type: 'user', text: string} | {type: 'model', response: Array<string | object>}>}
 */
export function toChatHistory(messages, { functionCalls = false } = {}) {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new RequestError(400, "'messages' must be a non-empty array", { param: 'messages' });
  }
  const history = [];
  // The model turn whose calls still wait for results: [{id, item}].
  let pending = [];
  const push = (type, text) => {
    const last = history[history.length - 1];
    if (type === 'user' && last?.type === 'user') {
      last.text = `${last.text}\n\n${text}`;
    } else if (type === 'model') {
      history.push({ type, response: text ? [text] : [] });
    } else {
      history.push({ type, text });
    }
  };
  messages.forEach((m, i) => {
    if (!m || typeof m !== 'object') {
      throw new RequestError(400, `messages[${i}] is not an object`, { param: `messages[${i}]` });
    }
    const text = contentText(m.content);
    const isResult = m.role === 'tool' || m.role === 'function';
    if (!isResult) pending = [];
    switch (m.role) {
      case 'system':
      case 'developer':
        push('system', text);
        break;
      case 'user':
        push('user', text);
        break;
      case 'assistant': {
        const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
        if (functionCalls && calls.length) {
          push('model', text);
          const turn = history[history.length - 1];
          pending = calls.map((c, k) => {
            const name = c?.function?.name;
            if (typeof name !== 'string' || !name) {
              throw new RequestError(400, `messages[${i}].tool_calls[${k}] has no function name`, { param: `messages[${i}].tool_calls` });
            }
            const item = { type: 'functionCall', name, params: callParams(c.function.arguments), result: '' };
            turn.response.push(item);
            return { id: c.id, item, answered: false };
          });
        } else {
          push('model', [text, calls.length ? toolCallsText(calls) : ''].filter(Boolean).join('\n'));
        }
        break;
      }
      case 'tool':
      case 'function': {
        const open = pending.filter((p) => !p.answered);
        // By its id; a result without one answers the first call still open.
        const match = m.tool_call_id === undefined ? open[0] : open.find((p) => p.id === m.tool_call_id);
        if (match) {
          match.item.result = text;
          match.answered = true;
        } else {
          push('user', `Tool result${m.name ? ` (${m.name})` : ''}:\n${text}`);
        }
        break;
      }
      default:
        throw new RequestError(400, `messages[${i}].role '${m.role}' is not one of system, developer, user, assistant, tool`, {
          param: `messages[${i}].role`,
        });
    }
  });
  // The reply is a new assistant turn, also after an assistant message (as OpenAI does; the
  // agent ends a Reason prompt with its last observation), except after tool results.
  const last = history[history.length - 1];
  const afterResults = ['tool', 'function'].includes(messages.at(-1)?.role) && last?.type === 'model' &&
    last.response.some((r) => typeof r === 'object' && r.type === 'functionCall');
  if (!afterResults) history.push({ type: 'model', response: [] });
  return history;
}

// ---- tools ----------------------------------------------------------------------------------

/**
 * The tools a request offers and how it lets the model use them: `{tools: [{name,
 * description, parameters}], choice: 'auto' | 'none' | 'required', name?: string}`.
 * Wire format: https://platform.openai.com/docs/api-reference/chat/create (`tools`, `tool_choice`).
 */
export function requestedTools(body) {
  const raw = body.tools;
  if (raw === undefined || raw === null) return { tools: [], choice: 'none' };
  if (!Array.isArray(raw)) throw new RequestError(400, "'tools' must be an array", { param: 'tools' });
  const tools = raw.map((t, i) => {
    const f = t?.function;
    if (t?.type !== 'function' || !f || typeof f.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(f.name)) {
      throw new RequestError(400, `tools[${i}] must be {"type": "function", "function": {"name": ...}} with a name of letters, digits, _ or -`, {
        param: `tools[${i}]`,
      });
    }
    if (f.parameters !== undefined && (typeof f.parameters !== 'object' || f.parameters === null || Array.isArray(f.parameters))) {
      throw new RequestError(400, `tools[${i}].function.parameters must be a JSON schema object`, { param: `tools[${i}].function.parameters` });
    }
    return { name: f.name, description: typeof f.description === 'string' ? f.description : '', parameters: f.parameters ?? { type: 'object', properties: {} } };
  });
  const choice = body.tool_choice ?? 'auto';
  if (choice === 'auto' || choice === 'none' || choice === 'required') return { tools, choice: tools.length ? choice : 'none' };
  const name = choice?.type === 'function' ? choice.function?.name : undefined;
  if (typeof name === 'string') {
    if (!tools.some((t) => t.name === name)) {
      throw new RequestError(400, `tool_choice names '${name}', which is not in 'tools'`, { param: 'tool_choice' });
    }
    return { tools, choice: 'required', name };
  }
  throw new RequestError(400, "tool_choice must be 'auto', 'none', 'required' or {\"type\": \"function\", \"function\": {\"name\": ...}}", {
    param: 'tool_choice',
  });
}

const BASIC_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/**
 * A JSON schema (as schemars writes tool arguments) -> the subset node-llama-cpp's grammar
 * understands (GbnfJsonSchema): `$ref`s are inlined, `anyOf` becomes `oneOf`, keywords it
 * has no use for (`minimum`, `format: uint32`, `default`, `title`, ...) go. A property not in
 * `required` may be null, since the grammar writes every property (see `dropNulls`).
 */
export function toGrammarSchema(schema, root = schema, depth = 0) {
  if (depth > 16) return { type: [...BASIC_TYPES] };
  if (schema === true || schema === undefined || schema === null || typeof schema !== 'object') return { type: [...BASIC_TYPES] };
  const desc = typeof schema.description === 'string' ? { description: schema.description } : {};
  if (typeof schema.$ref === 'string') {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(schema.$ref);
    const target = m ? root?.[m[1]]?.[m[2]] : undefined;
    return { ...toGrammarSchema(target, root, depth + 1), ...desc };
  }
  if ('const' in schema) return { const: schema.const, ...desc };
  if (Array.isArray(schema.enum)) return { enum: schema.enum, ...desc };
  const alts = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alts)) return { oneOf: alts.map((a) => toGrammarSchema(a, root, depth + 1)), ...desc };
  const types = [schema.type ?? []].flat();
  if (types.length > 1) {
    if (types.every((t) => BASIC_TYPES.has(t))) return { type: types, ...desc };
    return { oneOf: types.map((t) => toGrammarSchema({ ...schema, type: t, description: undefined }, root, depth + 1)), ...desc };
  }
  switch (types[0]) {
    case 'object': {
      const required = new Set(Array.isArray(schema.required) ? schema.required : []);
      const properties = {};
      for (const [key, sub] of Object.entries(schema.properties ?? {})) {
        const converted = toGrammarSchema(sub, root, depth + 1);
        properties[key] = required.has(key) ? converted : nullable(converted);
      }
      return { type: 'object', properties, ...desc };
    }
    case 'array': {
      const out = { type: 'array', items: toGrammarSchema(schema.items, root, depth + 1), ...desc };
      if (Number.isInteger(schema.minItems)) out.minItems = schema.minItems;
      if (Number.isInteger(schema.maxItems)) out.maxItems = schema.maxItems;
      return out;
    }
    case 'string': {
      const out = { type: 'string', ...desc };
      if (Number.isInteger(schema.minLength)) out.minLength = schema.minLength;
      if (Number.isInteger(schema.maxLength)) out.maxLength = schema.maxLength;
      return out;
    }
    case undefined:
      return { type: [...BASIC_TYPES], ...desc };
    default:
      return { type: types[0], ...desc };
  }
}

function nullable(schema) {
  if (Array.isArray(schema.type)) return schema.type.includes('null') ? schema : { ...schema, type: [...schema.type, 'null'] };
  if (BASIC_TYPES.has(schema.type) && schema.type !== 'null' && Object.keys(schema).every((k) => k === 'type' || k === 'description')) {
    return { ...schema, type: [schema.type, 'null'] };
  }
  if (schema.type === 'null') return schema;
  const { description, ...rest } = schema;
  return { oneOf: [rest, { type: 'null' }], ...(description ? { description } : {}) };
}

/** The arguments of a call made under `toGrammarSchema`: the null values of optional properties go. */
export function dropNulls(params, schema) {
  if (!params || typeof params !== 'object' || Array.isArray(params)) return params;
  const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
  return Object.fromEntries(Object.entries(params).filter(([k, v]) => v !== null || required.has(k)));
}

/**
 * node-llama-cpp's function definitions for `tools` (no handlers: the server only reports
 * the calls).
 */
export function grammarFunctions(tools) {
  return Object.fromEntries(tools.map((t) => [t.name, { description: t.description, params: toGrammarSchema(t.parameters) }]));
}

/**
 * The schema of a forced call (`tool_choice` "required" or a named function), for a
 * grammar: `{"name": <tool>, "arguments": {...}}`, one of the allowed tools.
 */
export function forcedCallSchema(tools, name) {
  const allowed = name ? tools.filter((t) => t.name === name) : tools;
  const one = (t) => ({ type: 'object', properties: { name: { const: t.name }, arguments: toGrammarSchema(t.parameters) } });
  return allowed.length === 1 ? one(allowed[0]) : { oneOf: allowed.map(one) };
}

/**
 * The balanced `{...}` substrings of `text`, outermost first, left to right (the scan of
 * src/types/json_text.rs, strings skipped).
 */
export function* jsonObjects(text) {
  let start = 0;
  while (start < text.length) {
    const open = text.indexOf('{', start);
    if (open < 0) return;
    let depth = 0;
    let inString = false;
    let escaped = false;
    let end = -1;
    for (let i = open; i < text.length; i++) {
      const ch = text[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (ch === '\\') escaped = true;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === '"') inString = true;
      else if (ch === '{') depth += 1;
      else if (ch === '}' && --depth === 0) {
        end = i;
        break;
      }
    }
    if (end < 0) {
      start = open + 1;
      continue;
    }
    yield { text: text.slice(open, end + 1), start: open, end: end + 1 };
    start = end + 1;
  }
}

/**
 * The first tool call written as JSON in the model's text, the rule of src/tools/parse.rs:
 * an object whose `name` (or `tool` / `tool_name`) is one of `names`, with its arguments in
 * `arguments` (or `parameters` / `args` / `input`) as an object or a JSON string. Returns
 * `{name, arguments (a JSON string), start, end}` or null. Small models write calls this way
 * (bare, or fenced as ```json) instead of in their template's tags, and may leave the last
 * brace or two off (closed here when nothing else is found).
 */
export function callInText(text, names, properties = null) {
  const found = callIn(text, names) ?? callIn(closeBraces(text), names) ??
    (properties && (namedBefore(text, properties) ?? namedBefore(closeBraces(text), properties)));
  return found && { ...found, end: Math.min(found.end, text.length) };
}

/**
 * A call announced in prose and not made, the reply's last paragraph (seen from
 * Qwen2.5-Coder-1.5B on long prompts: 'I will call query_page with the query "ice
 * thickness winter".'): "call" or "use" right before an offered tool's name, then its
 * string parameters each as its name and a quoted value; a tool with one required string
 * parameter also takes the one quoted value alone, or with none quoted, when that parameter
 * is words to look for (its description says so), the rest of the sentence. Only an
 * intention ("I will", "I'll", "let me", "I need to", "I can" … before it in its sentence),
 * never a negated or reported one ("I did not call", "without calling"). `tools`:
 * [{name, parameters}]. Returns {name, arguments} or null.
 */
export function announcedCall(text, tools) {
  const last = text.trim().split(/\n\s*\n/).at(-1) ?? '';
  for (const tool of tools) {
    const named = new RegExp(`\\b(?:call|calling|use|using)\\s+(?:the\\s+)?\`?${tool.name}\`?(?:\\s+(?:function|tool))?\\b`, 'i').exec(last);
    if (!named) continue;
    // The sentence up to the tool's name: it must announce, and not deny, the call.
    const before = last.slice(0, named.index).split(/[.!?](?:\s|$)/).at(-1);
    if (!INTENT.test(before) || NOT_MEANT.test(before)) continue;
    const rest = last.slice(named.index + named[0].length);
    const props = tool.parameters?.properties ?? {};
    const strings = Object.keys(props).filter((k) => k !== 'reasoning' && [props[k].type].flat().includes('string'));
    const args = {};
    for (const key of strings) {
      const m = new RegExp(`\\b${key}\\s*[:=]?\\s*["“]([^"”]+)["”]`, 'i').exec(rest);
      if (m) args[key] = m[1];
    }
    const required = (tool.parameters?.required ?? []).filter((k) => strings.includes(k));
    const quoted = [...rest.matchAll(/["“]([^"”]+)["”]/g)].map((m) => m[1]);
    if (Object.keys(args).length === 0 && required.length === 1) {
      if (quoted.length === 1) args[required[0]] = quoted[0];
      // No value quoted: what the sentence says it looks for ("to find the passages about
      // the ice in winter"), for a tool whose one string is words to look for.
      else if (quoted.length === 0 && props[required[0]]?.description && /words|query|look for/i.test(props[required[0]].description)) {
        const sought = rest.split(/[.!?](?:\s|$)/)[0].replace(/^\W+/, '').trim();
        if (sought.split(/\s+/).length >= 3) args[required[0]] = sought;
      }
    }
    if ((tool.parameters?.required ?? []).every((k) => k in args) && Object.keys(args).length > 0) {
      return { name: tool.name, arguments: JSON.stringify(args) };
    }
  }
  return null;
}

/** Words that announce a call the model means to make, before the tool's name. */
const INTENT = /\b(?:will|shall|let me|let's|need to|needs to|going to|have to|must|should|can|now)\b|'ll\b/i;
/** Words that deny or report a call instead. */
const NOT_MEANT = /\b(?:not|no need|never|without|instead of|did|didn't|don't|won't|cannot|can't|could)\b|n't\b/i;

/** How far before an arguments object the prose may name its tool (characters). */
const NAMED_WITHIN = 200;

/**
 * A call written as prose naming an offered tool, then its arguments alone as a JSON object
 * ("I will call query_page with the following arguments: ```json {"query": "ice"}```", seen
 * from Qwen2.5-Coder-1.5B): the object counts as that tool's call when the last offered tool
 * named in the 200 characters before it has every key of the object among its parameters.
 * `properties`: Map of tool name -> its parameter names.
 */
function namedBefore(text, properties) {
  for (const { value, ...candidate } of plainObjects(text)) {
    const keys = Object.keys(value);
    if (keys.length === 0) continue;
    const before = text.slice(Math.max(0, candidate.start - NAMED_WITHIN), candidate.start);
    let name = null;
    let at = -1;
    for (const tool of properties.keys()) {
      const i = before.lastIndexOf(tool);
      if (i > at) [name, at] = [tool, i];
    }
    if (name === null || !keys.every((k) => properties.get(name).includes(k))) continue;
    return { name, arguments: JSON.stringify(value), start: candidate.start, end: candidate.end };
  }
  return null;
}

/**
 * `text` with the braces it leaves open closed, when it ends inside at most two objects
 * (outside a string): small models often stop before a call's last `}`. Otherwise `text`.
 */
function closeBraces(text) {
  const body = text.replace(/\s*(```\s*)?$/, '');
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (const ch of body) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{') depth += 1;
    else if (ch === '}') depth = Math.max(0, depth - 1);
  }
  return !inString && depth >= 1 && depth <= 2 ? body + '}'.repeat(depth) : text;
}

/** The JSON objects (not arrays or scalars) written in `text`, parsed, with their span. */
function* plainObjects(text) {
  for (const candidate of jsonObjects(text)) {
    let value;
    try {
      value = JSON.parse(candidate.text);
    } catch {
      continue;
    }
    if (value && typeof value === 'object' && !Array.isArray(value)) yield { ...candidate, value };
  }
}

function callIn(text, names) {
  for (const { value, ...candidate } of plainObjects(text)) {
    const name = ['name', 'tool', 'tool_name'].map((k) => value[k]).find((v) => typeof v === 'string');
    if (name === undefined || !names.includes(name)) continue;
    const key = ['arguments', 'parameters', 'args', 'input'].find((k) => k in value);
    const args = key === undefined ? {} : value[key];
    let argumentsText;
    if (typeof args === 'string') argumentsText = args;
    else if (args && typeof args === 'object' && !Array.isArray(args)) argumentsText = JSON.stringify(args);
    else continue;
    return { name, arguments: argumentsText, start: candidate.start, end: candidate.end };
  }
  return null;
}

/**
 * What a reply says once the model is done: its text without a call written in it (and the
 * code fence around that call), and the calls as OpenAI `tool_calls`: those the template's
 * tool syntax carried, and a call written as JSON in the text (small models write one beside
 * or instead of their tags).
 */
export function replyCalls({ text, functionCalls = [], tools = [], newId }) {
  const names = tools.map((t) => t.name);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const calls = functionCalls
    .filter((c) => byName.has(c.functionName))
    .map((c) => ({ name: c.functionName, arguments: JSON.stringify(dropNulls(c.params ?? {}, byName.get(c.functionName).parameters) ?? {}) }));
  let content = text;
  let source = calls.length ? 'native' : null;
  if (names.length) {
    const properties = new Map(tools.map((t) => [t.name, Object.keys(t.parameters?.properties ?? {})]));
    const found = callInText(text, names, properties);
    if (found) {
      source ??= 'text';
      calls.push({ name: found.name, arguments: coerceArguments(found.arguments, byName.get(found.name).parameters) });
      const before = text.slice(0, found.start).replace(/```(?:json)?\s*$/i, '');
      const after = text.slice(found.end).replace(/^\s*```/, '');
      content = `${before}${after}`.trim();
    } else if (calls.length === 0) {
      // The prose stays the reply's text (the client takes it for the call's thought).
      const announced = announcedCall(text, tools);
      if (announced) {
        source = 'announced';
        calls.push({ name: announced.name, arguments: coerceArguments(announced.arguments, byName.get(announced.name).parameters) });
      }
    }
  }
  return {
    source,
    content: calls.length && content.trim() === '' ? null : content,
    toolCalls: calls.map((c, index) => ({ index, id: newId(), type: 'function', function: { name: c.name, arguments: c.arguments } })),
  };
}

/**
 * A call written as text, held to its tool's schema where a small model's slip has one obvious
 * reading (the template's grammar does this for calls in its tags): a list of strings where a
 * string is wanted is joined, a number where a string is wanted is written, a string of
 * digits where a number is wanted is read, and `null` for an optional property goes. Anything
 * else is left for the client to judge. `argumentsText` and the result are JSON strings.
 */
export function coerceArguments(argumentsText, schema) {
  let args;
  try {
    args = JSON.parse(argumentsText);
  } catch {
    return argumentsText;
  }
  if (!args || typeof args !== 'object' || Array.isArray(args) || !schema?.properties) return argumentsText;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  let changed = false;
  for (const [key, value] of Object.entries(args)) {
    const types = [schema.properties[key]?.type ?? []].flat();
    let fixed = value;
    if (value === null && !required.has(key) && !types.includes('null')) fixed = undefined;
    else if (types.includes('string') && Array.isArray(value) && value.every((v) => typeof v === 'string')) fixed = value.join(' ');
    else if (types.includes('string') && typeof value === 'number') fixed = String(value);
    else if ((types.includes('integer') || types.includes('number')) && typeof value === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(value)) {
      fixed = Number(value);
      if (types.includes('integer') && !Number.isInteger(fixed)) fixed = value;
    }
    if (fixed !== value) {
      changed = true;
      if (fixed === undefined) delete args[key];
      else args[key] = fixed;
    }
  }
  return changed ? JSON.stringify(args) : argumentsText;
}

/**
 * Whether a streamed reply that has produced `text` so far may still turn out to be a call
 * written as JSON, so it is held back: it starts (after blank space) with `{` or a code fence.
 */
export function mayBeTextCall(text) {
  const t = text.trimStart();
  if (t === '' || t.startsWith('{')) return true;
  if (t.length < 3) return '```'.startsWith(t);
  // A fence, an optional language word, blank space, then an object or nothing yet.
  return /^```[A-Za-z]*\s*(\{[\s\S]*)?$/.test(t);
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
export function finishReason(stopReason, { toolCalls = false } = {}) {
  if (toolCalls) return 'tool_calls';
  return stopReason === 'maxTokens' ? 'length' : 'stop';
}

/** A non-streamed reply, with `tool_calls` when the model called tools. */
export function completionBody({ id, created, model, content, toolCalls = [], finish, usage }) {
  const message = { role: 'assistant', content };
  if (toolCalls.length) message.tool_calls = toolCalls.map(({ index, ...call }) => call);
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
    usage,
  };
}

/**
 * One streamed chunk: a content delta (`first` also carries the role), the tool calls (each
 * whole, with its index, in one delta), or the finish.
 */
export function chunkBody({ id, created, model, content, toolCalls, first = false, finish = null }) {
  const role = first ? { role: 'assistant' } : {};
  const delta = finish ? {} : toolCalls ? { ...role, tool_calls: toolCalls } : { ...role, content };
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
