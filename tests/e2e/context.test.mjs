// Context management through the real extension, against a model server with a real context
// window: an OpenAI-compatible server that counts every request with o200k_base and refuses
// one over 4,096 tokens as OpenAI does (support/windowed-openai-server.mjs), and a ~100 KB
// page (fixtures/long-article.html, from support/long-article.mjs). One browser for the file.
//
// - eight follow-up questions about the long page in one popup conversation are all answered,
//   no request is refused or over the window, and the conversation was compacted on the way
//   (a compaction request, a "compaction" entry in a run's exported trajectory, "Compacting
//   the conversation" in the status line);
// - a tool call that fails twice is reflected on ("Reflecting", a "reflection" entry), and
//   the model takes a different, valid approach only when the retry request carries the
//   reflection's suggested fix;
// - a model repeating the same read is stopped by the loop detector: the same result at most
//   three times, a repeated_call reflection, and an answer with a notice.
//
// The scripted model answers by request kind (see the server): reason requests offer tools,
// observe requests ask for the "control" schema, compaction and reflection requests for the
// schemas of those names, synthesis requests neither. A kind a test does not expect is
// answered 500 and fails the test.

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configureProvider, launchExtension, openPopup, screenshot, tabIdOf, waitUntil } from './support/browser.mjs';
import { FACTS } from './support/long-article.mjs';
import { askQuestion, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';
import { requestText, startWindowedOpenAI } from './support/windowed-openai-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const WINDOW = 4096;
/** Generous: the machine is small and shared. */
const RUN_TIMEOUT_MS = 90_000;
/** Compaction and reflection replies are this late, so their status line shows. */
const PHASE_DELAY_MS = 400;

let kl;
let llm;
let pages;

before(async () => {
  llm = await startWindowedOpenAI({ contextWindow: WINDOW });
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'context' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, contextWindow: WINDOW });
  // The options page kept the window.
  const options = await kl.context.newPage();
  await options.goto(`chrome-extension://${kl.extId}/options.html`);
  const field = options.getByRole('spinbutton', { name: 'Context window', exact: true });
  await waitUntil(async () => (await field.inputValue()) === String(WINDOW), {
    message: () => `the Context window field to show ${WINDOW}`,
  });
  await options.close();
});

after(async () => {
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers.

/** The long article in a new tab, and a popup for it that records every status line text. */
async function longArticlePopup() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('long-article.html'));
  const tabId = await tabIdOf(kl.context, page);
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await popup.evaluate(() => {
    const seen = [];
    globalThis.__klStatusTexts = seen;
    const status = document.querySelector('[role="status"]');
    const note = () => {
      const text = status.textContent.trim();
      if (text && seen.at(-1) !== text) seen.push(text);
    };
    new MutationObserver(note).observe(status, { childList: true, subtree: true, characterData: true });
    note();
  });
  return { page, tabId, popup };
}

/** Every text the popup's status line has shown since it was opened. */
const statusTexts = (popup) => popup.evaluate(() => [...globalThis.__klStatusTexts]);

/** Downloads the popup's trajectory export (the last run) and parses it. */
async function exportTrajectory(popup) {
  const [download] = await Promise.all([
    popup.waitForEvent('download'),
    popup.getByRole('button', { name: 'Export trajectory' }).click(),
  ]);
  return JSON.parse(await readFile(await download.path(), 'utf8'));
}

/** An export entry's kind: its item's tag (`{"thought": {...}}`) or its `kind` field. */
const kindOf = (entry) => entry?.item?.kind ?? Object.keys(entry?.item ?? {})[0];

/** Asks in the popup and waits for the end; asserts it completed. */
async function askAndComplete(popup, question, { from, maxSteps } = {}) {
  await askQuestion(popup, question, { maxSteps });
  const done = await waitForRunEnd(popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => diagnostics(from) });
  assert.equal(done.state, 'completed', `"${question}" did not complete: ${JSON.stringify(done)}\n${diagnostics(from)}`);
  return done;
}

const diagnostics = (from = 0) => `server requests:\n${llm.ledger(from)}\n${kl.recentLogs(20)}`;

const json = (value) => ({ content: JSON.stringify(value), json: true });
const control = (finalAnswer) => json({ should_continue: finalAnswer === null, final_answer: finalAnswer });

/** The tool messages after the last user message that is `question` as typed (an Observe
 * or Synthesis instruction after them names the question too, but is not only it). */
function toolMessagesAfter(body, question) {
  const messages = body?.messages ?? [];
  let at = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user' && String(m.content ?? '') === question) at = i;
  });
  return at < 0 ? [] : messages.slice(at + 1).filter((m) => m.role === 'tool');
}

// ---------------------------------------------------------------------------------------------
// 1. Eight follow-ups about a 100 KB page in a 4,096-token window.

const QUESTIONS = [
  'Q1: What did the first boat through the Harrow locks carry?',
  'Q2: How long did the Castlebeck aqueduct take to build?',
  'Q3: What lined the summit pound?',
  'Q4: How much did the canal carry at its busiest?',
  'Q5: How do boats get through Greyholme tunnel?',
  'Q6: What did the railway company pay for the canal?',
  'Q7: When did the last commercial cargo arrive?',
  'Q8: When was the summit reopened?',
];

/** A long answer (about 300 tokens) that quotes the fact: it makes the history grow fast. */
function answerFor(q) {
  const context = [
    'The article tells this in the section that opens with this fact, and it gives the context around it:',
    'the company minutes, the letters in the county archive and the accounts of the boat families all agree on it,',
    'and the surrounding paragraphs describe the lengthsmen, the tolls charged by the ton-mile, the wharves and',
    'warehouses along the line, the winter stoppages when the ice was broken by gangs rocking a heavy boat, and',
    'the long arguments between engineers about stone or cast iron for the lock gates and bridges.',
  ].join(' ');
  return `Answer ${q + 1}: ${FACTS[q]} ${context} ${context} In short: ${FACTS[q]}`;
}

/** The current question's index: the latest question a request carries (asked in order). */
function currentQuestion(body) {
  const text = requestText(body);
  let q = -1;
  QUESTIONS.forEach((question, i) => {
    if (text.includes(question)) q = i;
  });
  return q;
}

const followUpModel = {
  // Read a part of the page for the question, then answer.
  reason: (body) => {
    const q = currentQuestion(body);
    if (q < 0) return { content: 'No question found in the request.' };
    if (toolMessagesAfter(body, QUESTIONS[q]).length === 0) {
      return {
        content: `Reading the part of the page about question ${q + 1}.`,
        tool_calls: [{ name: 'read_page', arguments: { offset: q * 11_000, max_chars: 2_400 } }],
      };
    }
    return { content: answerFor(q) };
  },
  observe: (body) => {
    const q = currentQuestion(body);
    return control(q < 0 ? null : answerFor(q));
  },
  synthesis: (body) => ({ content: answerFor(Math.max(0, currentQuestion(body))) }),
  compaction: () => ({
    ...json({ summary: 'The user is asking follow-up questions about the history of the Harrow and Lune Canal; each was answered from the page.' }),
    delayMs: PHASE_DELAY_MS,
  }),
};

test('eight follow-ups about a 100 KB page fit a 4,096-token window, compacting on the way', async () => {
  const from = llm.chatRequests.length;
  llm.setResponders(followUpModel);
  const { popup, page } = await longArticlePopup();
  const kinds = [];
  for (let q = 0; q < QUESTIONS.length; q++) {
    const done = await askAndComplete(popup, QUESTIONS[q], { from });
    assert.ok(done.answerText.includes(`Answer ${q + 1}: ${FACTS[q]}`),
      `answer ${q + 1} is not shown: ${done.answerText.slice(0, 200)}\n${diagnostics(from)}`);
    const doc = await exportTrajectory(popup);
    kinds.push(...(doc.trajectory ?? []).map(kindOf));
  }
  await screenshot(popup, 'popup-context-followups.png');

  const sent = llm.chatRequests.slice(from);
  assert.deepEqual(sent.filter((r) => r.refused).map((r) => r.tokens), [],
    `the server refused requests over the window:\n${diagnostics(from)}`);
  const over = sent.filter((r) => r.tokens.total > WINDOW);
  assert.equal(over.length, 0, `requests over ${WINDOW} tokens:\n${diagnostics(from)}`);
  assert.deepEqual(sent.filter((r) => r.unexpected).map((r) => r.kind), [], diagnostics(from));

  // Compaction: the model was asked for a summary, the trajectory has its entry, the status
  // line said so.
  assert.ok(llm.ofKind('compaction').some((r) => r.at >= sent[0].at),
    `no compaction request was made:\n${diagnostics(from)}`);
  assert.ok(kinds.includes('compaction'), `no "compaction" entry in the exported trajectories: ${[...new Set(kinds)]}`);
  const statuses = await statusTexts(popup);
  assert.ok(statuses.some((t) => t.includes('Compacting the conversation')),
    `the status line never showed "Compacting the conversation": ${JSON.stringify(statuses)}`);

  // Options offer the threshold: "Compact at", percent of the window, 50-95, default 80.
  const options = await kl.context.newPage();
  await options.goto(`chrome-extension://${kl.extId}/options.html`);
  const compactAt = options.getByRole('spinbutton', { name: 'Compact at', exact: true });
  assert.equal(await compactAt.count(), 1, 'the Options page has no "Compact at" spinbutton');
  assert.equal(await compactAt.inputValue(), '80');
  assert.equal(await compactAt.getAttribute('min'), '50');
  assert.equal(await compactAt.getAttribute('max'), '95');
  await options.close();
  await page.close();
});

// ---------------------------------------------------------------------------------------------
// 2. A tool call that fails twice: reflection, then a different approach.

const BAD_READ = { offset: -1 };
const GOOD_READ = { offset: 0, max_chars: 800 };
const FIXES = [
  'Call read_page again with a non-negative offset, for example 0.',
  'Stop passing a negative offset to read_page: start reading at offset 0 with max_chars 800.',
];
const REFLECTED_ANSWER = `After reading the start of the page: ${FACTS[0]}`;

test('a tool that fails twice is reflected on, and the fix fed back leads to a different call', async () => {
  const from = llm.chatRequests.length;
  let reflections = 0;
  /** Reason requests after each reflection: whether they carried its fix. */
  const retries = [];
  llm.setResponders({
    reason: (body) => {
      const tools = toolMessagesAfter(body, 'What boat opened the Harrow locks?');
      const text = requestText(body);
      if (reflections > 0) retries.push({ after: reflections, hasFix: text.includes(FIXES[reflections - 1]), text });
      // The model fails twice; then it changes its call only when told how.
      if (tools.length >= 2 && text.includes(FIXES[1])) {
        return { content: 'Reading from the start instead.', tool_calls: [{ name: 'read_page', arguments: GOOD_READ }] };
      }
      return { content: 'Reading the page.', tool_calls: [{ name: 'read_page', arguments: BAD_READ }] };
    },
    observe: (body) => {
      const last = (body.messages ?? []).filter((m) => m.role === 'tool').at(-1);
      // A page tool's result reaches the model inside the run's fence.
      const read = /^(<page-[0-9a-f]+>\s*)?Characters \d+–\d+ of \d+ \(passages p\d+/.test(String(last?.content ?? '').trim());
      return control(read ? REFLECTED_ANSWER : null);
    },
    reflection: () => {
      reflections++;
      return {
        ...json({
          error_type: 'invalid_arguments',
          analysis: `read_page refused a negative offset (attempt ${reflections}).`,
          suggested_fix: FIXES[Math.min(reflections, FIXES.length) - 1],
        }),
        delayMs: PHASE_DELAY_MS,
      };
    },
    synthesis: () => ({ content: 'Synthesized without a successful read.' }),
  });
  const { popup, page } = await longArticlePopup();
  const done = await askAndComplete(popup, 'What boat opened the Harrow locks?', { from, maxSteps: 6 });
  const doc = await exportTrajectory(popup);
  const entries = doc.trajectory ?? [];
  const kinds = entries.map(kindOf);

  // The tool refused the model's argument (twice, at least).
  const results = entries.filter((e) => kindOf(e) === 'tool_result').map((e) => e.item.tool_result ?? {});
  assert.ok(results.length >= 2 && results[0].ok === false && results[1].ok === false,
    `read_page did not refuse ${JSON.stringify(BAD_READ)}: ${JSON.stringify(results.slice(0, 2))}`);
  assert.ok(reflections >= 1, `no reflection request was made:\n${diagnostics(from)}`);
  assert.ok(kinds.includes('reflection'), `no "reflection" entry in the export: ${kinds.join(', ')}`);
  const statuses = await statusTexts(popup);
  assert.ok(statuses.some((t) => t.includes('Reflecting')), `no "Reflecting" status: ${JSON.stringify(statuses)}`);
  assert.ok(retries.length && retries[0].hasFix,
    `the retry after the first reflection did not carry its suggested fix:\n${diagnostics(from)}`);
  assert.equal(reflections, 2, `one reflection per failed call:\n${diagnostics(from)}`);
  const second = retries.find((r) => r.after === 2);
  assert.ok(second?.hasFix, `the retry after the second reflection did not carry its suggested fix:\n${diagnostics(from)}`);
  assert.match(second.text, /alternative|different approach/i, 'a repeated error type asks for an alternative approach');
  // The different, valid call was made and read the page; the run ended with its answer.
  const calls = entries.filter((e) => kindOf(e) === 'tool_call').map((e) => JSON.stringify(e.item));
  assert.equal(calls.length, 3, `two failed calls and one different call: ${calls.join('\n')}`);
  assert.ok(calls[2].includes('800'), `the third call is not the different one: ${calls[2]}`);
  assert.equal(done.answerText, REFLECTED_ANSWER, diagnostics(from));
  // The Steps view lists the reflections with their fix.
  const toggle = popup.getByRole('button', { name: 'Steps', exact: true });
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
  const steps = await popup.getByRole('region', { name: 'Steps', exact: true }).innerText();
  assert.ok(steps.includes('Reflection') && steps.includes(FIXES[1]), `the Steps view shows no reflection:\n${steps}`);
  await screenshot(popup, 'popup-context-reflection.png');
  assert.deepEqual(llm.chatRequests.slice(from).filter((r) => r.unexpected || r.refused).map((r) => r.kind), [],
    diagnostics(from));
  await page.close();
});

// ---------------------------------------------------------------------------------------------
// 3. The same call, the same result, three times: the loop detector stops it.

const SAME_READ = { offset: 0, max_chars: 400 };
const BEST_ANSWER = 'From the opening of the article: the canal was surveyed before the Act of 1792.';

test('a model repeating the same read is stopped by the loop detector', async () => {
  const from = llm.chatRequests.length;
  const reflectionTypes = [];
  llm.setResponders({
    // The model insists on the same read every time.
    reason: () => ({ content: 'Reading the start again.', tool_calls: [{ name: 'read_page', arguments: SAME_READ }] }),
    observe: () => control(null),
    reflection: (body) => {
      reflectionTypes.push(/repeat|repetit|same call/i.test(requestText(body)) ? 'repeated_call' : 'other');
      return {
        ...json({
          error_type: 'repeated_call',
          analysis: 'The same read_page call returned the same passage three times.',
          suggested_fix: 'Answer from the passage already read instead of reading it again.',
        }),
        delayMs: PHASE_DELAY_MS,
      };
    },
    synthesis: () => ({ content: BEST_ANSWER }),
  });
  const { popup, page } = await longArticlePopup();
  // Enough steps that only the loop detector, not the step limit, can stop the fourth call.
  const done = await askAndComplete(popup, 'What does the article say first?', { from, maxSteps: 8 });
  const doc = await exportTrajectory(popup);
  const entries = doc.trajectory ?? [];
  const kinds = entries.map(kindOf);

  // A page read's result begins with its passage label ([p1: ...], [p2: ...]), which counts
  // the reads: the same result is the same text after the label's number.
  const resultText = (e) => String(e.item.tool_result?.content ?? '').replace(/^\[p\d+/, '[p');
  const toolResults = entries.filter((e) => kindOf(e) === 'tool_result');
  const results = toolResults.map((e) => JSON.stringify(e.item.tool_result ?? e.item).slice(0, 160));
  const first = toolResults[0] && resultText(toolResults[0]);
  const same = toolResults.filter((e) => e.item.tool_result?.ok !== false && resultText(e) === first);
  assert.ok(first, `no tool result in the export: ${kinds.join(', ')}`);
  // The status recorder saw the run's steps (so a missing phase text below is the engine's).
  const statuses = await statusTexts(popup);
  assert.ok(statuses.some((t) => /Step \d+ of 8/.test(t)), `no step in the status texts: ${JSON.stringify(statuses)}`);
  assert.ok(same.length <= 3, `the same result ${same.length} times:\n${results.join('\n')}\n${diagnostics(from)}`);
  const repeated = entries.filter((e) => kindOf(e) === 'reflection' && JSON.stringify(e.item).includes('repeated_call'));
  assert.ok(repeated.length >= 1, `no repeated_call reflection in the export: ${kinds.join(', ')}`);
  assert.ok(reflectionTypes.includes('repeated_call'), `the reflection request did not name the repetition:\n${diagnostics(from)}`);
  assert.equal(done.answerText, BEST_ANSWER, diagnostics(from));
  assert.ok(done.notices.some((n) => /repeat/i.test(n)), `no notice about the repeated call: ${JSON.stringify(done.notices)}`);
  assert.deepEqual(llm.chatRequests.slice(from).filter((r) => r.unexpected || r.refused).map((r) => r.kind), [],
    diagnostics(from));
  await page.close();
});
