// The agent loop's bounds through the real extension and a scripted OpenAI-compatible server:
// a prose reply is the answer in one call, streamed text shows while the run goes on, 429/5xx
// are retried (honouring Retry-After), the token budget ends a run with what it has, and a
// failed run leaves the conversation usable. This file runs in its own browser, so the token
// budget it changes does not reach the other test files.

import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configureProvider, launchExtension, openPopup, screenshot, tabIdOf, waitUntil } from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { askQuestion, readPopup, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const DEFAULT_BUDGET = 32_000;

let kl;
let llm;
let pages;

before(async () => {
  llm = await startScriptedOpenAI();
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'loop' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
});

after(async () => {
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

/** A new tab on the fixture article (so a new session) and a popup for it. */
async function popupForFixture() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  return openPopup(kl.context, kl.extId, await tabIdOf(kl.context, page));
}

/** Index of the first chat request of the current test, for `describe`. */
let testStart = 0;

beforeEach(() => {
  testStart = llm.chatRequests.length;
});

/** Runs `ask` and returns the popup state at the end plus the chat requests it caused. */
async function run(popup, question, options) {
  const start = llm.chatRequests.length;
  await askQuestion(popup, question, options);
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  return { done, requests: llm.chatRequests.slice(start) };
}

/** The popup state, this test's chat requests and the recent console, for assertion messages. */
const describe = (done) =>
  `${JSON.stringify(done)}\nchat requests of this test:\n${llm.timeline(testStart)}\n${kl.recentLogs()}`;

test('a prose reply is the final answer after exactly one model call', async () => {
  const answer = 'Bellhaven Light was first lit in 1861 and kept by Agnes Tull from 1902.';
  llm.script({ content: answer });

  const popup = await popupForFixture();
  const { done, requests } = await run(popup, 'When was Bellhaven Light first lit?');

  assert.equal(done.state, 'completed', describe(done));
  assert.match(done.status, /^Completed in 1 step\.$/);
  assert.equal(done.answerText, answer);
  assert.ok(!done.partialBadge, 'a complete answer is marked partial');
  assert.equal(requests.length, 1, llm.timeline(testStart));
  // The fixture page is shown whole: no tool reads more of it, and none is offered at all.
  assert.equal(requests[0].body.tools, undefined, JSON.stringify(requests[0].body.tools));
  assert.equal(llm.queue.length, 0);
});

test('streamed text is visible in the Answer region before the run completes', async () => {
  const parts = [
    'The keepers of Bellhaven ',
    'were Agnes Tull and ',
    'her brother, who ',
    'tended the lamp ',
    'through the winters.',
  ];
  const answer = parts.join('');
  llm.script({ deltas: parts, chunkDelayMs: 400 });

  const popup = await popupForFixture();
  await askQuestion(popup, 'Who kept the light?');
  // The first delta arrives ~0.4 s before the next one and ~2 s before the end of the reply.
  const early = await waitUntil(
    async () => {
      const now = await readPopup(popup);
      return now.answerText ? now : null;
    },
    { interval: 50, timeout: 20_000, message: 'the first streamed text' },
  );
  assert.equal(early.state, 'running', `the run had already ended when text first showed: ${describe(early)}`);
  assert.match(early.status, /Thinking/, early.status);
  assert.ok(early.stopEnabled, 'Stop should be enabled while the answer streams');
  // What shows is the text of the deltas received so far (not yet all of them); readPopup trims.
  const prefixes = parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('').trim());
  assert.ok(prefixes.includes(early.answerText), `"${early.answerText}" is not the text of the first deltas`);

  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', describe(done));
  assert.equal(done.answerText, answer);
});

test('429 (Retry-After: 1) then 500 are retried, and the Retry-After delay is honoured', async () => {
  const answer = 'The lamp burned 412 litres of colza oil each winter.';
  llm.script(
    {
      status: 429,
      headers: { 'retry-after': '1' },
      body: { error: { message: 'Rate limit reached, retry after 1 s.', type: 'rate_limit_exceeded' } },
    },
    { status: 500, body: { error: { message: 'The server had an error.', type: 'server_error' } } },
    { content: answer },
  );

  const popup = await popupForFixture();
  const { done, requests } = await run(popup, 'How much oil did the lamp burn?');

  assert.equal(done.state, 'completed', describe(done));
  assert.equal(done.answerText, answer);
  assert.equal(done.errorMessage, '', 'an error stayed on screen after the retries succeeded');
  assert.equal(requests.length, 3, llm.timeline(testStart));
  const [first, second, third] = requests.map((r) => r.at);
  assert.ok(second - first >= 900, `the retry after the 429 came ${second - first} ms later (Retry-After: 1)`);
  assert.ok(third > second, 'the third request did not follow the second');
  // Every attempt is the same Reason call.
  assert.deepEqual(requests[1].body.messages, requests[0].body.messages);
  assert.deepEqual(requests[2].body.messages, requests[0].body.messages);
  assert.equal(llm.queue.length, 0);
});

test('an exhausted token budget ends the run with a partial answer, a warning and a notice', async () => {
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, tokenBudget: 2000 });
  const thought = 'Bellhaven Light was first lit in 1861; the page should say who kept it.';
  llm.script(
    {
      content: thought,
      tool_calls: [{ name: 'read_page', arguments: { offset: 0, max_chars: 2000 } }],
      usage: { prompt_tokens: 1600, completion_tokens: 200 },
    },
    {
      content: JSON.stringify({ should_continue: true, final_answer: null }),
      json: true,
      usage: { prompt_tokens: 1600, completion_tokens: 200 },
    },
  );

  try {
    const popup = await popupForFixture();
    const { done, requests } = await run(popup, 'Who kept Bellhaven Light, and for how long?');
    await screenshot(popup, 'popup-budget.png');

    assert.equal(done.state, 'completed', describe(done));
    assert.match(done.status, /partial answer/, done.status);
    assert.equal(done.answerText, thought, `the best answer so far is not shown: ${describe(done)}`);
    assert.ok(done.partialBadge, 'the answer is not marked partial');
    // 1,800 of 2,000 tokens after the Reason call: past the 80% warning, and too few left
    // for the Observe call (its prompt alone is larger than the remaining 200 tokens).
    assert.equal(done.tokens, 'Tokens: 1,800 / 2,000');
    assert.ok(done.tokensWarn, 'the token counter does not show the budget warning');
    const notice = done.notices.find((n) => /token budget for this run is used up/i.test(n));
    assert.ok(notice, `no token budget notice: ${JSON.stringify(done.notices)}`);
    assert.match(notice, /1,800 of 2,000 tokens/);
    assert.equal(done.errorMessage, '', 'a budget stop is not an error');
    assert.equal(requests.length, 1, `a chat request after the budget ran out:\n${llm.timeline(testStart)}`);
    assert.equal(llm.queue.length, 1, 'the Observe reply was asked for although the budget was used up');
    const tokensTitle = await popup.locator('#tokens').getAttribute('title');
    assert.match(tokensTitle ?? '', /token budget/i);
  } finally {
    llm.queue.length = 0;
    await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, tokenBudget: DEFAULT_BUDGET });
  }
});

test('after a 401 the next question in the same session works and carries the first one', async () => {
  const first = 'Who was Agnes Tull?';
  const second = 'And when did she stop keeping the light?';
  const answer = 'Agnes Tull kept the light until 1931.';
  llm.script(
    { status: 401, body: { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } } },
    { content: answer },
  );

  const popup = await popupForFixture();
  const failed = await run(popup, first);
  assert.equal(failed.done.state, 'failed', describe(failed.done));
  assert.match(failed.done.errorMessage, /api key/i, failed.done.errorMessage);
  assert.equal(failed.requests.length, 1, `401 must not be retried:\n${llm.timeline(testStart)}`);

  const { done, requests } = await run(popup, second);
  assert.equal(done.state, 'completed', describe(done));
  assert.equal(done.answerText, answer);
  assert.equal(done.errorMessage, '', 'the old error is still shown');
  assert.equal(requests.length, 1, llm.timeline(testStart));
  // The page block is the first user turn (fenced page text), then the questions as typed
  // with nothing between them (the system text says earlier turns are context), so the
  // request starts with the previous one's bytes: the new question is the last message the
  // model reads.
  const [pageBlock, ...userMessages] = requests[0].body.messages.filter((m) => m.role === 'user').map((m) => m.content);
  assert.match(pageBlock, /^(The page the user is reading|The user is on this page|No page text is available)/, pageBlock);
  assert.deepEqual(userMessages, [first, second], 'the conversation did not carry the first question');
  assert.equal(requests[0].body.messages.at(-1).content, second);
  const history = await popup.locator('#turns li').allTextContents();
  assert.equal(history.length, 1, `history: ${JSON.stringify(history)}`);
  assert.ok(history[0].includes(first), `history: ${JSON.stringify(history)}`);
  assert.equal(llm.queue.length, 0);
});
