// The local model server's OpenAI wire mapping (pkg-scripts/local-model/openai.mjs), without
// a model: request checks, messages -> chat history, reply bodies.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  RequestError,
  announcedCall,
  callInText,
  chunkBody,
  coerceArguments,
  completionBody,
  contentText,
  dropNulls,
  finishReason,
  forcedCallSchema,
  generationOptions,
  mayBeTextCall,
  replyCalls,
  requestedFormat,
  requestedTools,
  sse,
  toChatHistory,
  toGrammarSchema,
  usageChunkBody,
  usageOf,
} from '../../pkg-scripts/local-model/openai.mjs';
import { READ_PAGE } from './page-tools.mjs';

test('messages become a chat history ending with an empty model turn', () => {
  const history = toChatHistory([
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'Hi ' }, { type: 'text', text: 'there' }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_page', arguments: '{"offset":0}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'page text' },
    { role: 'user', content: 'So?' },
  ]);
  assert.deepEqual(history, [
    { type: 'system', text: 'Be brief.' },
    { type: 'user', text: 'Hi there' },
    { type: 'model', response: ['[called read_page({"offset":0})]'] },
    { type: 'user', text: 'Tool result:\npage text\n\nSo?' },
    { type: 'model', response: [] },
  ]);
});

test('a reply after an assistant message is a new model turn', () => {
  assert.deepEqual(toChatHistory([
    { role: 'user', content: 'Q' },
    { role: 'assistant', content: 'Observation: not yet.' },
  ]), [
    { type: 'user', text: 'Q' },
    { type: 'model', response: ['Observation: not yet.'] },
    { type: 'model', response: [] },
  ]);
});

test('bad messages are 400 request errors', () => {
  for (const messages of [undefined, [], [{ role: 'robot', content: 'x' }], [null]]) {
    assert.throws(() => toChatHistory(messages), (err) => err instanceof RequestError && err.status === 400,
      JSON.stringify(messages));
  }
});

test('content text of strings, null and parts', () => {
  assert.equal(contentText(null), '');
  assert.equal(contentText('x'), 'x');
  assert.equal(contentText([{ type: 'text', text: 'a' }, { type: 'image_url', image_url: {} }, 'b']), 'ab');
});

test('response_format: json_schema gives its schema, json_object "json", text none, others 400', () => {
  const schema = { type: 'object', properties: { a: { type: 'boolean' } } };
  assert.deepEqual(requestedFormat({ type: 'json_schema', json_schema: { name: 'x', schema, strict: true } }), schema);
  assert.equal(requestedFormat({ type: 'json_object' }), 'json');
  assert.equal(requestedFormat({ type: 'text' }), null);
  assert.equal(requestedFormat(undefined), null);
  for (const bad of [{ type: 'json_schema', json_schema: {} }, { type: 'yaml' }]) {
    assert.throws(() => requestedFormat(bad), (err) => err.status === 400 && /response_format/.test(err.message));
  }
});

test('generation options: max_tokens is capped by the server, sampling defaults to greedy', () => {
  assert.equal(generationOptions({ max_tokens: 1024 }, { maxTokensCap: 512 }).maxTokens, 512);
  assert.equal(generationOptions({ max_tokens: 100 }, { maxTokensCap: 512 }).maxTokens, 100);
  assert.equal(generationOptions({ max_completion_tokens: 50 }, { maxTokensCap: 512 }).maxTokens, 50);
  assert.equal(generationOptions({}, { maxTokensCap: 512 }).maxTokens, 512);
  const o = generationOptions({ stop: 'END', temperature: 0.7 }, { maxTokensCap: 512 });
  assert.deepEqual(o.stop, ['END']);
  assert.equal(o.temperature, 0.7);
  assert.equal(generationOptions({}, { maxTokensCap: 512 }).temperature, 0);
  assert.throws(() => generationOptions({ max_tokens: 0 }, { maxTokensCap: 512 }), /max_tokens/);
  assert.throws(() => generationOptions({ temperature: 'hot' }, { maxTokensCap: 512 }), /temperature/);
  assert.throws(() => generationOptions({ stop: [1] }, { maxTokensCap: 512 }), /stop/);
});

test('reply bodies follow the chat-completions format', () => {
  const ids = { id: 'chatcmpl-1', created: 1, model: 'm' };
  const usage = usageOf(10, 3);
  assert.deepEqual(usage, { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 });
  const full = completionBody({ ...ids, content: 'Hi', finish: 'stop', usage });
  assert.equal(full.object, 'chat.completion');
  assert.deepEqual(full.choices[0].message, { role: 'assistant', content: 'Hi' });
  assert.equal(full.choices[0].finish_reason, 'stop');
  const first = chunkBody({ ...ids, content: 'H', first: true });
  assert.deepEqual(first.choices[0].delta, { role: 'assistant', content: 'H' });
  assert.deepEqual(chunkBody({ ...ids, content: 'i' }).choices[0].delta, { content: 'i' });
  const end = chunkBody({ ...ids, finish: 'length' });
  assert.deepEqual(end.choices[0].delta, {});
  assert.equal(end.choices[0].finish_reason, 'length');
  assert.deepEqual(usageChunkBody({ ...ids, usage }).choices, []);
  assert.equal(sse('[DONE]'), 'data: [DONE]\n\n');
  assert.equal(sse({ a: 1 }), 'data: {"a":1}\n\n');
  assert.equal(finishReason('maxTokens'), 'length');
  assert.equal(finishReason('eogToken'), 'stop');
  assert.deepEqual(new RequestError(400, 'no').body(), {
    error: { message: 'no', type: 'invalid_request_error', param: null, code: null },
  });
});

// ---- tools ----------------------------------------------------------------------------------

const QUERY_PAGE = {
  type: 'function',
  function: {
    name: 'query_page',
    description: 'Finds passages.',
    parameters: { type: 'object', properties: { query: { type: 'string', maxLength: 200 } }, required: ['query'] },
  },
};

test('with a tool syntax, tool calls and their results become function calls of one model turn', () => {
  const messages = [
    { role: 'system', content: 'S' },
    { role: 'user', content: 'Q' },
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        { id: 'a', type: 'function', function: { name: 'read_page', arguments: '{"offset":10}' } },
        { id: 'b', type: 'function', function: { name: 'query_page', arguments: '{"query":"x"}' } },
      ],
    },
    // Answered out of order: matched by tool_call_id.
    { role: 'tool', tool_call_id: 'b', content: 'found x' },
    { role: 'tool', tool_call_id: 'a', content: 'page from 10' },
  ];
  const history = toChatHistory(messages, { functionCalls: true });
  assert.deepEqual(history, [
    { type: 'system', text: 'S' },
    { type: 'user', text: 'Q' },
    {
      type: 'model',
      response: [
        { type: 'functionCall', name: 'read_page', params: { offset: 10 }, result: 'page from 10' },
        { type: 'functionCall', name: 'query_page', params: { query: 'x' }, result: 'found x' },
      ],
    },
  ], 'the model goes on in the turn that made the calls');
  // A result whose id answers no call is not taken for another call's result.
  const stray = toChatHistory([...messages.slice(0, 3), { role: 'tool', tool_call_id: 'zz', content: 'stray' }], { functionCalls: true });
  assert.deepEqual(stray.at(-3).response.map((r) => r.result), ['', '']);
  assert.deepEqual(stray.slice(-2), [{ type: 'user', text: 'Tool result:\nstray' }, { type: 'model', response: [] }]);
  // A user message after the results starts a new exchange: a new model turn is written.
  const more = toChatHistory([...messages, { role: 'user', content: 'And?' }], { functionCalls: true });
  assert.deepEqual(more.slice(-2), [{ type: 'user', text: 'And?' }, { type: 'model', response: [] }]);
  // Without a tool syntax, the same messages are text (as before).
  assert.deepEqual(toChatHistory(messages).slice(2), [
    { type: 'model', response: ['[called read_page({"offset":10})]\n[called query_page({"query":"x"})]'] },
    { type: 'user', text: 'Tool result:\nfound x\n\nTool result:\npage from 10' },
    { type: 'model', response: [] },
  ]);
});

test('tools and tool_choice are read as OpenAI sends them; bad ones are 400s naming the field', () => {
  assert.deepEqual(requestedTools({}), { tools: [], choice: 'none' });
  const offered = requestedTools({ tools: [READ_PAGE, QUERY_PAGE] });
  assert.equal(offered.choice, 'auto');
  assert.deepEqual(offered.tools.map((t) => t.name), ['read_page', 'query_page']);
  assert.equal(requestedTools({ tools: [READ_PAGE], tool_choice: 'none' }).choice, 'none');
  assert.deepEqual(requestedTools({ tools: [READ_PAGE, QUERY_PAGE], tool_choice: { type: 'function', function: { name: 'query_page' } } }),
    { tools: offered.tools, choice: 'required', name: 'query_page' });
  for (const [body, param] of [
    [{ tools: {} }, 'tools'],
    [{ tools: [{ type: 'function', function: { name: 'bad name!' } }] }, 'tools[0]'],
    [{ tools: [{ type: 'function', function: { name: 'x', parameters: [] } }] }, 'tools[0].function.parameters'],
    [{ tools: [READ_PAGE], tool_choice: { type: 'function', function: { name: 'query_page' } } }, 'tool_choice'],
    [{ tools: [READ_PAGE], tool_choice: 'sometimes' }, 'tool_choice'],
  ]) {
    assert.throws(() => requestedTools(body), (err) => err instanceof RequestError && err.status === 400 && err.param === param,
      JSON.stringify(body));
  }
});

test('argument schemas become the grammar subset: optional properties may be null, unknown keywords go', () => {
  assert.deepEqual(toGrammarSchema(READ_PAGE.function.parameters), {
    type: 'object',
    properties: {
      max_chars: { type: ['integer', 'null'] },
      offset: { type: ['integer', 'null'] },
    },
  });
  assert.deepEqual(toGrammarSchema(QUERY_PAGE.function.parameters), {
    type: 'object',
    properties: { query: { type: 'string', maxLength: 200 } },
  });
  // $ref into $defs is inlined; anyOf becomes oneOf; an optional enum is one of it or null.
  assert.deepEqual(toGrammarSchema({
    type: 'object',
    properties: { mode: { $ref: '#/$defs/Mode', description: 'How.' }, n: { anyOf: [{ type: 'integer' }, { type: 'string' }] } },
    required: ['n'],
    $defs: { Mode: { enum: ['fast', 'slow'] } },
  }), {
    type: 'object',
    properties: {
      mode: { oneOf: [{ enum: ['fast', 'slow'] }, { type: 'null' }], description: 'How.' },
      n: { oneOf: [{ type: 'integer' }, { type: 'string' }] },
    },
  });
  assert.deepEqual(dropNulls({ query: 'x', max_chars: null }, { required: ['query'] }), { query: 'x' });
  assert.deepEqual(dropNulls({ query: null }, { required: ['query'] }), { query: null });
  const forced = forcedCallSchema(requestedTools({ tools: [READ_PAGE, QUERY_PAGE] }).tools, 'query_page');
  assert.deepEqual(forced.properties.name, { const: 'query_page' });
});

test('a call written as JSON naming an offered tool is a call: bare, fenced, in prose, string arguments (src/tools/parse.rs)', () => {
  const names = ['read_page', 'query_page'];
  const fenced = 'Let me look.\n```json\n{"name": "query_page", "arguments": {"query": "toll"}}\n```';
  assert.deepEqual(callInText(fenced, names), {
    name: 'query_page', arguments: '{"query":"toll"}', start: fenced.indexOf('{'), end: fenced.lastIndexOf('}') + 1,
  });
  assert.equal(callInText('{"tool": "read_page", "parameters": "{\\"offset\\": 2}"}', names).arguments, '{"offset": 2}');
  assert.equal(callInText('{"name": "read_page"}', names).arguments, '{}');
  assert.equal(callInText('{"name": "delete_everything", "arguments": {}}', names), null);
  assert.equal(callInText('The answer is {42} and {"name": "x"}.', names), null);
  assert.equal(callInText('{"name": "read_page", "arguments": [1]}', names), null);
  assert.equal(callInText('{"a": "}", "name": "read_page"}', names).name, 'read_page', 'braces in strings are skipped');
  // Seen from Qwen2.5-Coder-0.5B: the call's last brace left off.
  const unclosed = '{"name": "read_page", "arguments": {"offset": 1500, "reasoning": ["a {b}"]}';
  assert.deepEqual(callInText(unclosed, names),
    { name: 'read_page', arguments: '{"offset":1500,"reasoning":["a {b}"]}', start: 0, end: unclosed.length });
  assert.equal(callInText('{"name": "read_page", "arguments": {"q": "}', names), null, 'an open string is not closed');
  // Seen from Qwen2.5-Coder-1.5B: the tool named in prose, its arguments alone in a fence.
  const properties = new Map([['read_page', ['offset', 'max_chars', 'reasoning']], ['query_page', ['query', 'k', 'reasoning']]]);
  const named = 'I will call query_page with the following arguments:\n```json\n{\n  "k": 1,\n  "query": "ice thickness winter"\n}\n```\nThis will help.';
  assert.deepEqual(callInText(named, names, properties),
    { name: 'query_page', arguments: '{"k":1,"query":"ice thickness winter"}', start: named.indexOf('{'), end: named.lastIndexOf('}') + 1 });
  assert.equal(callInText(named, names), null, 'only with the tools\' parameters');
  assert.equal(callInText('Use query_page. Example: {"offset": 3}', names, properties), null, 'keys of another tool');
  assert.equal(callInText(`query_page ${' '.repeat(250)}{"query": "x"}`, names, properties), null, 'named too far before');
  assert.equal(callInText('The JSON is {"query": "x"}.', names, properties), null, 'no tool named');

  const tools = requestedTools({ tools: [READ_PAGE, QUERY_PAGE] }).tools;
  let n = 0;
  const newId = () => `call_${++n}`;
  const reply = replyCalls({ text: fenced, tools, newId });
  assert.equal(reply.content, 'Let me look.');
  assert.equal(reply.source, 'text');
  assert.deepEqual(reply.toolCalls, [{ index: 0, id: 'call_1', type: 'function', function: { name: 'query_page', arguments: '{"query":"toll"}' } }]);
  // Calls the template's syntax carried, with the nulls of optional arguments dropped.
  const native = replyCalls({ text: '', functionCalls: [{ functionName: 'read_page', params: { offset: 4, max_chars: null } }], tools, newId });
  assert.equal(native.content, null);
  assert.equal(native.source, 'native');
  assert.deepEqual(native.toolCalls.map((c) => c.function), [{ name: 'read_page', arguments: '{"offset":4}' }]);
  assert.deepEqual(replyCalls({ text: 'The toll was two pence.', tools, newId }), { source: null, content: 'The toll was two pence.', toolCalls: [] });
  assert.deepEqual(replyCalls({ text: '{"name": "query_page"}', tools: [], newId }).toolCalls, [], 'no tools offered: no calls');
});

test('a streamed reply is held back only while it may be a call written as JSON', () => {
  for (const t of ['', '  ', '{', ' {"na', '`', '``', '```', '```json', '```json\n{"name"', '```\n{']) assert.equal(mayBeTextCall(t), true, JSON.stringify(t));
  for (const t of ['The', '`x', '```python\nprint', 'Sure {', '```json\nThe']) assert.equal(mayBeTextCall(t), false, JSON.stringify(t));
});

test('tool calls on the wire: a message with tool_calls and finish_reason tool_calls, a streamed delta', () => {
  const ids = { id: 'chatcmpl-1', created: 1, model: 'm' };
  const toolCalls = [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read_page', arguments: '{}' } }];
  const body = completionBody({ ...ids, content: null, toolCalls, finish: finishReason('functionCalls', { toolCalls: true }), usage: usageOf(1, 1) });
  assert.deepEqual(body.choices[0].message, {
    role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_page', arguments: '{}' } }],
  });
  assert.equal(body.choices[0].finish_reason, 'tool_calls');
  assert.deepEqual(chunkBody({ ...ids, toolCalls, first: true }).choices[0].delta, { role: 'assistant', tool_calls: toolCalls });
});

test('a call written as text is held to its schema where the slip has one reading', () => {
  const schema = {
    type: 'object',
    properties: {
      reasoning: { type: 'string' }, offset: { type: 'integer' }, note: { type: ['string', 'null'] }, k: { type: ['integer', 'null'] },
    },
    required: ['offset'],
  };
  // Seen from Qwen2.5-Coder-0.5B: the reasoning as a list of strings.
  assert.equal(coerceArguments('{"offset": 1250, "reasoning": ["The ice", "was thick."]}', schema), '{"offset":1250,"reasoning":"The ice was thick."}');
  assert.equal(coerceArguments('{"offset": "40", "reasoning": 7}', schema), '{"offset":40,"reasoning":"7"}');
  assert.equal(coerceArguments('{"offset": "4.5"}', schema), '{"offset": "4.5"}', 'no integer reading: left as it is');
  assert.equal(coerceArguments('{"offset": 1, "note": null}', schema), '{"offset": 1, "note": null}', 'null is allowed there');
  assert.equal(coerceArguments('{"offset": [1, 2]}', schema), '{"offset": [1, 2]}', 'no obvious reading: left for the client');
  assert.equal(coerceArguments('not json', schema), 'not json');
  const tools = [{ name: 'read_page', description: '', parameters: schema }];
  const reply = replyCalls({ text: '{"name": "read_page", "arguments": {"offset": 1250, "reasoning": ["a", "b"]}', tools, newId: () => 'call_1' });
  assert.equal(reply.toolCalls[0].function.arguments, '{"offset":1250,"reasoning":"a b"}');
});

test('a call announced in prose and not made is a call: the tool after "call", its string arguments quoted', () => {
  // query_page's query as the agent describes it (src/tools/schemas.gen.json).
  const query = { type: 'string', maxLength: 200, description: 'Words to look for: names, terms, a phrase from the question.' };
  const queryPage = { ...QUERY_PAGE, function: { ...QUERY_PAGE.function, parameters: { ...QUERY_PAGE.function.parameters, properties: { query } } } };
  const tools = requestedTools({ tools: [READ_PAGE, queryPage] }).tools;
  const said = 'The passage [p1] does not say.\n\nI will call query_page with the query "ice thickness winter 1902" to find the relevant passages.';
  assert.deepEqual(announcedCall(said, tools), { name: 'query_page', arguments: '{"query":"ice thickness winter 1902"}' });
  // One required string parameter takes the one quoted value.
  assert.deepEqual(announcedCall('I will call query_page to find the passages that best match "winter ice".', tools),
    { name: 'query_page', arguments: '{"query":"winter ice"}' });
  assert.equal(announcedCall('You could call query_page yourself.', tools), null, 'no arguments: no call');
  assert.deepEqual(announcedCall('To find this, I can call the `query_page` function with the query "ice thickness winter 1902".', tools),
    { name: 'query_page', arguments: '{"query":"ice thickness winter 1902"}' });
  // Nothing quoted: a tool whose one string is words to look for takes the rest of the sentence.
  assert.deepEqual(announcedCall('I will call query_page to find the passages about the ice in winter. Then I answer.', tools),
    { name: 'query_page', arguments: '{"query":"to find the passages about the ice in winter"}' });
  assert.equal(announcedCall('I will use read_page to read on from there.', tools), null, 'read_page takes numbers');
  assert.equal(announcedCall('I will call query_page with "a" or "b".', tools), null, 'two values: no guess');
  assert.equal(announcedCall('I will call query_page with the query "ice".\n\nThe ice was thick.', tools), null, 'only the last paragraph');
  assert.equal(announcedCall('The page says "call query_page".', tools), null);
  // Only an intention: not a denied, reported or hypothetical call.
  for (const prose of [
    'I did not need to call query_page with the query "ice".',
    'Without calling query_page with "ice", the answer is 43 cm.',
    'I won\'t call query_page with the query "ice" since the passage says it.',
    'Using query_page with "ice" found passage [p4], which says 43 cm.',
    'You could use query_page with the query "ice".',
  ]) {
    assert.equal(announcedCall(prose, tools), null, prose);
  }
  assert.deepEqual(announcedCall('Let me use query_page with the query "ice".', tools), { name: 'query_page', arguments: '{"query":"ice"}' });
  assert.deepEqual(announcedCall("I'll call query_page with \"ice\".", tools), { name: 'query_page', arguments: '{"query":"ice"}' });
  let n = 0;
  const reply = replyCalls({ text: said, tools, newId: () => `call_${++n}` });
  assert.equal(reply.content, said, 'the prose stays the reply\'s text');
  assert.equal(reply.source, 'announced');
  assert.deepEqual(reply.toolCalls.map((c) => [c.function.name, c.function.arguments]), [['query_page', '{"query":"ice thickness winter 1902"}']]);
});
