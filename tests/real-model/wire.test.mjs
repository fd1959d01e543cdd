// The local model server's OpenAI wire mapping (pkg-scripts/local-model/openai.mjs), without
// a model: request checks, messages -> chat history, reply bodies.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  RequestError,
  chunkBody,
  completionBody,
  contentText,
  finishReason,
  generationOptions,
  requestedFormat,
  sse,
  toChatHistory,
  usageChunkBody,
  usageOf,
} from '../../pkg-scripts/local-model/openai.mjs';

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
