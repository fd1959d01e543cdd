// Tool calling with a real model that has a tool syntax (Qwen2.5-Coder-1.5B-Instruct, whose
// chat template writes <tool_call> tags), behind the local model server: pkg-scripts/test.sh
// (tier real-model) starts it after the embedded model's tests and passes its address in
// KL_LOCAL_MODEL_URL. The server's calls come back in the OpenAI wire format
// (https://platform.openai.com/docs/api-reference/chat/object: `message.tool_calls`,
// `finish_reason: "tool_calls"`; streamed as `delta.tool_calls`), the tool's result sent back
// as a `role: "tool"` message yields an answer.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { READ_PAGE } from '../page-tools.mjs';
import { chat, localModel } from '../support.mjs';

// The agent's own page tools, as it sends them (src/tools/schemas.gen.json, trimmed).
const QUERY_PAGE = {
  type: 'function',
  function: {
    name: 'query_page',
    description: 'Finds the passages of the page that best match a query, best first.',
    parameters: {
      type: 'object',
      additionalProperties: false,
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 300, description: 'Words to look for: names, terms, a phrase from the question.' },
        k: { type: ['integer', 'null'], minimum: 1, maximum: 10, default: null, description: 'How many passages to return (default 5, at most 10).' },
      },
      required: ['query'],
    },
  },
};
const TOOLS = [QUERY_PAGE, READ_PAGE];
const SYSTEM = 'You answer questions about the web page the user is reading. You have seen only the first part of the page. ' +
  'When the part you have seen does not hold the answer, call query_page to find the passages that do.';
const ASK = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: 'Page: "The Harbour Log of Saltmere". First part: Saltmere is a small fishing harbour. Its harbour office kept a log for more than a century.\n\nQuestion: How thick was the ice in the harbour basin in the winter of the ice?' },
];

/** The arguments of a call, parsed; fails the test when they are not a JSON object. */
function argumentsOf(call) {
  let args;
  assert.doesNotThrow(() => { args = JSON.parse(call.function.arguments); }, `arguments are not JSON: ${call.function.arguments}`);
  assert.ok(args && typeof args === 'object' && !Array.isArray(args), `arguments are not an object: ${call.function.arguments}`);
  return args;
}

/** Checks one call against the offered tools' schemas (names, types, ranges). */
function checkCall(call) {
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_[0-9a-f]{24}$/);
  const args = argumentsOf(call);
  if (call.function.name === 'query_page') {
    assert.equal(typeof args.query, 'string', JSON.stringify(args));
    assert.ok(args.query.trim().length > 0 && args.query.length <= 300, JSON.stringify(args));
    if ('k' in args) assert.ok(Number.isInteger(args.k), JSON.stringify(args));
  } else {
    assert.equal(call.function.name, 'read_page', `a tool that was not offered: ${call.function.name}`);
    if ('offset' in args) assert.ok(Number.isInteger(args.offset) && args.offset >= 0, JSON.stringify(args));
  }
  assert.ok(Object.values(args).every((v) => v !== null), `null optional arguments are dropped: ${JSON.stringify(args)}`);
  return args;
}

test('the model server says this model calls tools', async () => {
  const models = await (await fetch(`${localModel().baseUrl}/models`)).json();
  assert.equal(models.data[0].tool_calls, true, JSON.stringify(models));
  assert.equal(models.data[0].chat_template, 'Qwen');
});

test('a question that needs the page comes back as a tool call with valid arguments, and its result yields the answer', async () => {
  const res = await chat({ stream: false, max_tokens: 120, messages: ASK, tools: TOOLS });
  assert.equal(res.status, 200);
  const body = await res.json();
  const { message, finish_reason: finish } = body.choices[0];
  assert.equal(finish, 'tool_calls', JSON.stringify(body));
  assert.ok(Array.isArray(message.tool_calls) && message.tool_calls.length >= 1, JSON.stringify(message));
  for (const call of message.tool_calls) checkCall(call);
  const call = message.tool_calls[0];

  // The tool's result goes back as a role "tool" message answering the call by its id, in a
  // request that lets the model call no more tools (as an agent's last step does; offered
  // the tools again, these small models search once more).
  const passage = '[p8] The winter of the ice: the log states that the ice in the inner basin was forty-three centimetres thick at its deepest point.';
  const answer = await chat({
    stream: false,
    max_tokens: 120,
    tools: TOOLS,
    tool_choice: 'none',
    messages: [...ASK, { role: 'assistant', content: null, tool_calls: message.tool_calls },
      ...message.tool_calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: c.id === call.id ? passage : 'No more passages.' }))],
  });
  assert.equal(answer.status, 200);
  const reply = (await answer.json()).choices[0];
  assert.equal(reply.finish_reason, 'stop', JSON.stringify(reply));
  assert.equal(reply.message.tool_calls, undefined);
  assert.match(reply.message.content, /forty[- ]three|43/i, `the answer does not use the tool's result: ${reply.message.content}`);
});

test('streamed, the call arrives as delta.tool_calls with finish_reason tool_calls, and no text', async () => {
  const res = await chat({ stream: true, stream_options: { include_usage: true }, max_tokens: 120, messages: ASK, tools: TOOLS });
  assert.equal(res.status, 200);
  const data = (await res.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
  assert.equal(data.at(-1), '[DONE]');
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  const calls = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
  assert.ok(calls.length >= 1, JSON.stringify(chunks));
  calls.forEach((c, i) => assert.equal(c.index, i));
  for (const call of calls) checkCall(call);
  assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), '', 'a call is not also streamed as text');
  assert.deepEqual(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean), ['tool_calls']);
  assert.ok(chunks.at(-1).usage?.completion_tokens > 0);
});

test('tool_choice "none" keeps the tools away; a named tool_choice forces that call', async () => {
  const none = await (await chat({ stream: false, max_tokens: 30, messages: ASK, tools: TOOLS, tool_choice: 'none' })).json();
  assert.equal(none.choices[0].message.tool_calls, undefined, JSON.stringify(none));
  const forced = await (await chat({
    stream: false, max_tokens: 80, messages: ASK, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'read_page' } },
  })).json();
  const calls = forced.choices[0].message.tool_calls;
  assert.equal(calls?.length, 1, JSON.stringify(forced));
  assert.equal(calls[0].function.name, 'read_page');
  checkCall(calls[0]);
});
