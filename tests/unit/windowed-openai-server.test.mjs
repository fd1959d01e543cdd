// The windowed OpenAI-compatible test server (tests/e2e/support/windowed-openai-server.mjs):
// its token count against js-tiktoken's o200k_base, OpenAI's refusal body for a request over
// the window, request kinds, and its replies (JSON and SSE) with the counted usage.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getEncoding } from 'js-tiktoken';
import {
  countChatTokens,
  requestKind,
  startWindowedOpenAI,
} from '../e2e/support/windowed-openai-server.mjs';

const enc = getEncoding('o200k_base');
const n = (text) => enc.encode(text).length;

const TOOLS = [{
  type: 'function',
  function: {
    name: 'read_page',
    description: 'Read the page.',
    parameters: { type: 'object', properties: { offset: { type: 'integer' } } },
  },
}];
const controlFormat = {
  type: 'json_schema',
  json_schema: { name: 'control', schema: { type: 'object' }, strict: true },
};
const format = (name) => ({ type: 'json_schema', json_schema: { name, schema: { type: 'object' }, strict: true } });

let server;
before(async () => {
  server = await startWindowedOpenAI({ contextWindow: 4096 });
});
after(async () => {
  await server?.close();
});

async function post(body) {
  const res = await fetch(`${server.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

test('counts a chat request the way OpenAI does, with o200k_base', () => {
  const messages = [
    { role: 'system', content: 'You answer questions about the page.' },
    { role: 'user', content: 'When was the canal opened?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_page', arguments: '{"offset":0}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: '[p1: Canal — characters 0..40 of 90]\nThe canal opened in 1823.' },
  ];
  const expected =
    3 + // the reply's priming
    (3 + n('system') + n('You answer questions about the page.')) +
    (3 + n('user') + n('When was the canal opened?')) +
    (3 + n('assistant') + n(JSON.stringify(messages[2].tool_calls))) +
    (3 + n('tool') + n('c1') + n(messages[3].content)) +
    n(JSON.stringify(TOOLS));
  const counted = countChatTokens({ messages, tools: TOOLS, max_tokens: 1024 });
  assert.deepEqual(counted, { prompt: expected, completion: 1024, total: expected + 1024 });
  // max_completion_tokens wins over max_tokens; a name costs one more token; text parts count.
  const named = countChatTokens({
    messages: [{ role: 'user', name: 'ann', content: [{ type: 'text', text: 'Hi there' }] }],
    max_tokens: 5,
    max_completion_tokens: 7,
  });
  assert.deepEqual(named, { prompt: 3 + 3 + n('user') + n('ann') + 1 + n('Hi there'), completion: 7, total: 3 + 3 + n('user') + n('ann') + 1 + n('Hi there') + 7 });
  // The response format is part of the prompt.
  const withFormat = countChatTokens({ messages: [{ role: 'user', content: 'x' }], response_format: controlFormat });
  assert.equal(withFormat.prompt, 3 + 3 + n('user') + n('x') + n(JSON.stringify(controlFormat)));
  // Page text that looks like a special token is counted as text, not refused.
  assert.ok(countChatTokens({ messages: [{ role: 'user', content: 'a <|endoftext|> b' }] }).prompt > 6);
});

test('tells request kinds apart', () => {
  assert.equal(requestKind({ messages: [], tools: TOOLS }), 'reason');
  assert.equal(requestKind({ messages: [], response_format: controlFormat }), 'observe');
  assert.equal(requestKind({ messages: [], response_format: format('compaction') }), 'compaction');
  assert.equal(requestKind({ messages: [], response_format: format('reflection') }), 'reflection');
  assert.equal(requestKind({ messages: [] }), 'synthesis');
  assert.equal(requestKind({ messages: [], tools: [] }), 'synthesis');
  assert.equal(requestKind({ messages: [], response_format: format('other') }), 'unknown:other');
});

test('refuses a request over the window with OpenAI\'s error body, and records it', async () => {
  server.setResponders({ synthesis: () => ({ content: 'never sent' }) });
  const long = 'The towpath ran beside the water for eleven miles. '.repeat(300);
  const body = { model: 'scripted-model', messages: [{ role: 'user', content: long }], max_tokens: 1024 };
  const { prompt } = countChatTokens(body);
  assert.ok(prompt < 4096 && prompt + 1024 > 4096, `the test body should only fit without its completion: ${prompt}`);
  const res = await post(body);
  assert.equal(res.status, 400);
  assert.deepEqual(JSON.parse(res.text), {
    error: {
      message: `This model's maximum context length is 4096 tokens. However, you requested ${prompt + 1024} tokens ` +
        `(${prompt} in the messages, 1024 in the completion). Please reduce the length of the messages or completion.`,
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  });
  const record = server.chatRequests.at(-1);
  assert.equal(record.refused, true);
  assert.equal(record.kind, 'synthesis');
  assert.deepEqual(record.tokens, { prompt, completion: 1024, total: prompt + 1024 });
  assert.equal(server.refused.length, 1);
  // Exactly at the window is allowed.
  const fits = await post({ ...body, max_tokens: 4096 - prompt });
  assert.equal(fits.status, 200, fits.text);
  assert.equal(server.chatRequests.at(-1).refused, false);
});

test('answers by kind, as JSON and as SSE, with the counted prompt tokens as usage', async () => {
  server.setResponders({
    observe: () => ({ content: '{"should_continue":false,"final_answer":"Done."}', json: true }),
    reason: (body) => ({ tool_calls: [{ id: 'c9', name: 'read_page', arguments: { offset: body.messages.length } }] }),
  });
  const observe = { model: 'm', messages: [{ role: 'user', content: 'Go on?' }], response_format: controlFormat, max_tokens: 64 };
  const res = await post(observe);
  assert.equal(res.status, 200, res.text);
  const json = JSON.parse(res.text);
  assert.equal(json.choices[0].message.content, '{"should_continue":false,"final_answer":"Done."}');
  assert.equal(json.usage.prompt_tokens, countChatTokens(observe).prompt);
  assert.equal(json.usage.completion_tokens, n('{"should_continue":false,"final_answer":"Done."}'));

  const reason = { model: 'm', messages: [{ role: 'user', content: 'Read it.' }], tools: TOOLS, stream: true, stream_options: { include_usage: true } };
  const streamed = await post(reason);
  assert.equal(streamed.status, 200);
  const chunks = streamed.text.split('\n\n').filter(Boolean).map((l) => l.replace(/^data: /, ''));
  assert.equal(chunks.at(-1), '[DONE]');
  const parsed = chunks.slice(0, -1).map((c) => JSON.parse(c));
  const args = parsed.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []).map((t) => t.function.arguments).join('');
  assert.deepEqual(JSON.parse(args), { offset: 1 });
  assert.equal(parsed.at(-1).usage.prompt_tokens, countChatTokens(reason).prompt);
  assert.equal(server.ofKind('reason').length, 1);

  // A kind without a responder is an unexpected call: 500, recorded.
  const before = server.unexpected.length;
  const compaction = await post({ model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: format('compaction') });
  assert.equal(compaction.status, 500);
  assert.match(JSON.parse(compaction.text).error.message, /no responder for a compaction request/);
  assert.equal(server.unexpected.length, before + 1);
  assert.match(server.ledger(), /compaction \d+\+0=\d+ -> status 500/);
});
