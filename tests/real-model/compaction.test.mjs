// Compaction by the embedded model: the benchmark's "model's own compaction" beside the
// deterministic fallback's figure (docs/performance.md, "Token estimates and compaction"). The built extension
// (dist/) in Chromium on a 4,096-token context window, answered by SmolLM2-135M on the local
// model server. One question about the sample page; then the session's head record in
// chrome.storage.session gets six earlier turns with long answers (slices of the page's own
// text), so the follow-up's first request passes "Compact at" (80% of the window) with the
// older history well over 40% of it, and the run compacts.
//
// The assertions are about behaviour: the follow-up completes with an answer, a compaction
// entry is in its trajectory, it cut the context to 80% or less, and nothing panicked. Who
// wrote the summary is reported, not asserted: when the model's summary is unusable the
// deterministic fallback takes over, which is a valid outcome.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configureProvider, launchExtension, openPopup, screenshot, tabIdOf } from '../e2e/support/browser.mjs';
import { askQuestion, requestBackend, waitForRunEnd } from '../e2e/support/popup.mjs';
import { serveDirectory } from '../e2e/support/static-server.mjs';
import { localModel, writeReport } from './support.mjs';

const SAMPLE_DIR = fileURLToPath(new URL('../../pkg-scripts/sample-page/', import.meta.url));
const CONTEXT_WINDOW = 4096;
const MAX_STEPS = 2;
/** Longest one run may take (the follow-up makes a compaction call and then its own). */
const RUN_TIMEOUT_MS = 150_000;
const PANIC = /panicked|RuntimeError|unreachable executed/i;
/** Earlier turns added to the session, and the length of each one's answer. */
const EARLIER_TURNS = 6;
const ANSWER_CHARS = 1_500;

const FIRST = 'What is the congestion window, according to the page?';
const FOLLOW_UP = 'What does BBR estimate instead of waiting for losses?';
const EARLIER_QUESTIONS = [
  'What is congestion collapse?',
  'How does slow start grow the window?',
  'What happens when a retransmission timer expires?',
  'Why is a lost packet taken as a sign of congestion?',
  'Which congestion control algorithm is the default in Linux?',
  'How do competing flows converge towards a fair share?',
];

let kl;
let site;

before(async () => {
  const model = localModel();
  site = await serveDirectory(SAMPLE_DIR);
  kl = await launchExtension({ logName: 'real-model-compaction' });
  await configureProvider(kl.context, kl.extId, {
    baseUrl: model.baseUrl,
    model: model.name,
    contextWindow: CONTEXT_WINDOW,
  });
});

after(async () => {
  await kl?.close();
  await site?.close();
});

/** `count` slices of `text` of `length` characters, starting at spread-out offsets (wrapping). */
function slices(text, count, length) {
  const flat = text.replace(/\s+/g, ' ').trim();
  assert.ok(flat.length > 0, 'the sample page has no text');
  const looped = flat.repeat(Math.ceil((length * 2) / flat.length) + 1);
  const step = Math.floor(flat.length / count);
  return Array.from({ length: count }, (_, i) => looped.slice(i * step, i * step + length).trim());
}

/** Asks `question` in `popup` and waits for the run to end; returns the popup state and seconds. */
async function ask(popup, question, run) {
  const started = Date.now();
  await askQuestion(popup, question, { maxSteps: MAX_STEPS });
  const done = await waitForRunEnd(popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() });
  const seconds = (Date.now() - started) / 1000;
  assert.equal(done.state, 'completed', `${run} ended ${done.state}: ${done.errorMessage || done.status}\n${kl.recentLogs()}`);
  assert.ok(done.answerText.trim().length > 0, `${run}: the popup shows an empty answer`);
  return { done, seconds };
}

/** Gives the session's head record `turns` more earlier turns (before its own), in place. */
async function addEarlierTurns(popup, session, turns) {
  const key = `session:${session}`;
  const stored = await popup.evaluate((k) => chrome.storage.session.get(k), key);
  const raw = stored[key];
  assert.ok(raw, `no ${key} in chrome.storage.session`);
  // The head record: {version, entries, state} (docs/architecture.md, "Persistence"), stored as a JSON string.
  const head = typeof raw === 'string' ? JSON.parse(raw) : raw;
  assert.ok(head.state && Array.isArray(head.state.turns), `the head record has no state.turns: ${Object.keys(head)}`);
  assert.equal(head.state.status, 'completed', `the stored head says ${head.state.status}`);
  head.state.turns = [...turns, ...head.state.turns];
  const value = typeof raw === 'string' ? JSON.stringify(head) : head;
  await popup.evaluate(([k, v]) => chrome.storage.session.set({ [k]: v }), [key, value]);
}

test('the embedded model compacts a long conversation on a 4,096-token window',
  { timeout: 2 * RUN_TIMEOUT_MS + 60_000 }, async (t) => {
    const logsFrom = kl.logs.length;
    const page = await kl.context.newPage();
    await page.goto(site.url('index.html'));
    const pageText = await page.evaluate(() => document.body.innerText);
    const tabId = await tabIdOf(kl.context, page);
    const session = `tab:${tabId}`;
    const popup = await openPopup(kl.context, kl.extId, tabId);

    const first = await ask(popup, FIRST, 'the first question');
    t.diagnostic(`first question answered in ${first.seconds.toFixed(1)} s`);

    const answers = slices(pageText, EARLIER_TURNS, ANSWER_CHARS);
    const turns = EARLIER_QUESTIONS.map((question, i) => ({ question, answer: answers[i], status: 'completed' }));
    await addEarlierTurns(popup, session, turns);

    const followUp = await ask(popup, FOLLOW_UP, 'the follow-up');
    await screenshot(popup, 'real-model-compaction.png');

    const exported = await requestBackend(popup, { type: 'export', session });
    assert.equal(exported.ok, true, JSON.stringify(exported));
    const doc = JSON.parse(exported.data.json);
    assert.equal(doc.status, 'completed');
    assert.equal(doc.question, FOLLOW_UP);
    assert.ok(doc.answer.trim().length > 0, 'the follow-up has an empty answer');
    const kinds = doc.trajectory.map((e) => Object.keys(e.item)[0]);
    const compactions = doc.trajectory.filter((e) => e.item.compaction).map((e) => e.item.compaction);
    assert.ok(compactions.length > 0, `the follow-up did not compact: ${kinds.join(', ')}\n${kl.recentLogs()}`);
    const c = compactions[0];
    assert.ok(c.tokens_before > 0, JSON.stringify(c));
    assert.ok(c.tokens_after * 100 <= c.tokens_before * 80,
      `the compaction left ${c.tokens_after} of ${c.tokens_before} tokens (over 80%)`);
    const panics = kl.logs.slice(logsFrom).filter((line) => PANIC.test(line));
    assert.deepEqual(panics, [], 'the console shows a panic');

    const remaining = (100 * c.tokens_after) / c.tokens_before;
    const report = {
      context_window: CONTEXT_WINDOW,
      earlier_turns: turns.length,
      answer_chars: ANSWER_CHARS,
      compactions: compactions.length,
      turns: c.turns,
      entries: c.entries,
      tokens_before: c.tokens_before,
      tokens_after: c.tokens_after,
      remaining_pct: Number(remaining.toFixed(1)),
      by_model: c.by_model,
      first_seconds: Number(first.seconds.toFixed(1)),
      seconds: Number(followUp.seconds.toFixed(1)),
      model_calls: doc.metrics.model_calls,
      partial: doc.partial,
      answer_chars_follow_up: doc.answer.length,
      trajectory: kinds,
      // Why the model's summary was not used, when it was not (e.g. its call failed).
      errors: doc.trajectory.filter((e) => e.item.error).map((e) => e.item.error.error?.message ?? JSON.stringify(e.item.error)),
    };
    const path = await writeReport('real-model-compaction.json', report);
    t.diagnostic(`compaction: ${c.tokens_before} -> ${c.tokens_after} tokens (${report.remaining_pct}% remaining), ` +
      `${c.by_model ? 'written by the model' : 'the deterministic fallback (the model\'s summary was not used)'}; ` +
      `follow-up ${report.seconds} s, ${report.model_calls} model call(s), trajectory: ${kinds.join(' > ')} (${path})` +
      (report.errors.length ? `; errors: ${report.errors.join(' | ')}` : ''));
    await popup.close();
    await page.close();
  });
