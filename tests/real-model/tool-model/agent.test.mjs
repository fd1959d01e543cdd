// The agent calls a page tool on a real model: the built extension (dist/) in Chromium, asked
// through the popup about a page longer than its first excerpt, answered by a model with a
// tool syntax (Qwen2.5-Coder-1.5B-Instruct behind the local model server, as in
// tools.test.mjs). The context window is set to 3,072 tokens, which gives a first excerpt of
// 1,000 characters; the fact asked for is in one passage of about 1,100 characters
// (fixtures/harbour-log.html, "The winter of the ice"), so no first request can hold it. The
// run must find it with query_page or read_page, and its answer must state it: by the model's
// own call, or by the run's when the model answers that the page does not say (or gives an
// answer the page does not support: src/agent/step/further.rs). The report says which.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configureProvider, launchExtension, openPopup, screenshot, tabIdOf } from '../../e2e/support/browser.mjs';
import { askQuestion, requestBackend, waitForRunEnd } from '../../e2e/support/popup.mjs';
import { serveDirectory } from '../../e2e/support/static-server.mjs';
import { localModel, serverStats, writeReport } from '../support.mjs';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const QUESTION = 'How thick was the ice in the winter of the ice?';
/** The fact, as the page states it or in figures. */
const FACT = /forty[- ]three|\b43\b/i;
/** The passage that holds it: never whole in a 1,000-character excerpt. */
const PASSAGE_START = 'In one hard winter the sea froze along the shore';
const MAX_STEPS = 4;
/** A model call on 2 CPU threads is up to about a minute with the tool definitions. */
const RUN_TIMEOUT_MS = 420_000;

let kl;
let site;

before(async () => {
  const model = localModel();
  site = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'real-model-tool-agent' });
  await configureProvider(kl.context, kl.extId, { baseUrl: model.baseUrl, model: model.name, contextWindow: 3072 });
});

after(async () => {
  await kl?.close();
  await site?.close();
});

/**
 * One run in a tab of its own (a new conversation): the question asked through the popup,
 * the run's export, and what it shows: {report, failure} where failure says what the run
 * did not do (null when it did all of it).
 */
async function attempt(n) {
  const page = await kl.context.newPage();
  await page.goto(site.url(`harbour-log.html?attempt=${n}`));
  const tabId = await tabIdOf(kl.context, page);
  const session = `tab:${tabId}`;
  const popup = await openPopup(kl.context, kl.extId, tabId);
  const serverBefore = await serverStats();
  const started = Date.now();
  await askQuestion(popup, QUESTION, { maxSteps: MAX_STEPS });
  const done = await waitForRunEnd(popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() });
  const seconds = (Date.now() - started) / 1000;
  await screenshot(popup, `real-model-tool-agent-${n}.png`);
  // A run that fails or breaks is a bug, never a model's miss: no second attempt for it.
  assert.equal(done.state, 'completed', `the run ended ${done.state}: ${done.errorMessage || done.status}\n${kl.recentLogs()}`);

  const exported = await requestBackend(popup, { type: 'export', session });
  assert.equal(exported.ok, true, JSON.stringify(exported));
  const doc = JSON.parse(exported.data.json);
  const entries = doc.trajectory.map((e) => e.item);
  const calls = entries.filter((i) => i.tool_call).map((i) => i.tool_call.call);
  const results = entries.filter((i) => i.tool_result).map((i) => i.tool_result);
  const serverAfter = await serverStats();
  const report = {
    attempt: n,
    question: QUESTION,
    answer: doc.answer,
    seconds,
    model_calls: doc.metrics.model_calls,
    server_requests: serverAfter.requests - serverBefore.requests,
    // Where the server found the run's calls: the template's syntax, JSON in the text, or
    // a call announced in prose (pkg-scripts/local-model/openai.mjs, replyCalls).
    call_sources: Object.fromEntries(Object.entries(serverAfter.call_sources)
      .map(([source, count]) => [source, count - (serverBefore.call_sources?.[source] ?? 0)])),
    calls: calls.map((c) => `${c.name} ${c.arguments}`),
    // The server found no call in the model's replies: the run made it (step::further).
    page_tool_called_by: Object.values(serverAfter.call_sources).reduce((a, b) => a + b, 0)
      > Object.values(serverBefore.call_sources ?? {}).reduce((a, b) => a + b, 0) ? 'model' : 'run',
    results: results.map((r) => ({ call_id: r.call_id, ok: r.ok, start: String(r.content).slice(0, 300) })),
    trajectory: doc.trajectory.map((e) => Object.keys(e.item)[0]),
  };
  await popup.close();
  await page.close();
  // The first request could not hold the passage: the fact must come from a page tool's result.
  const pageTools = calls.filter((c) => c.name === 'query_page' || c.name === 'read_page');
  const found = results.some((r) => r.ok && pageTools.some((c) => c.id === r.call_id) && r.content.includes(PASSAGE_START));
  let failure = null;
  if (pageTools.length === 0) failure = 'no query_page or read_page call';
  else if (!found) failure = 'no page tool result holds the passage';
  else if (!FACT.test(doc.answer)) failure = 'the answer does not state the ice\'s thickness';
  return { report, failure };
}

// The model samples: each attempt's prompt differs (the fence tag, the page's port), and the
// 1.5B sometimes says it will look further and stops there. The test asks in up to
// ATTEMPTS new conversations and passes when one of them calls a page tool, gets the passage
// and states the fact; every attempt is in the report. The run searches the page itself
// when the best passage did not fit (step::further): by hand the first attempt passed
// (15.7 s, 2 model calls: the run called query_page with the question, a Synthesis request
// wrote "forty-three centimetres thick at its deepest point").
const ATTEMPTS = 3;

test('a question whose fact lies past the first excerpt is answered through query_page or read_page', { timeout: ATTEMPTS * (RUN_TIMEOUT_MS + 60_000) }, async (t) => {
  const reports = [];
  for (let n = 1; n <= ATTEMPTS; n += 1) {
    const { report, failure } = await attempt(n);
    reports.push({ ...report, failure });
    t.diagnostic(`attempt ${n}: ${failure ?? 'passed'}; ${report.seconds.toFixed(1)} s, ${report.model_calls} model calls; ` +
      `calls: ${report.calls.join(' | ') || 'none'} (by the ${report.page_tool_called_by}; ${JSON.stringify(report.call_sources)}); answer: ${report.answer}`);
    if (!failure) break;
  }
  await writeReport('real-model-tool-agent.json', reports);
  assert.ok(reports.some((r) => !r.failure), `no attempt of ${ATTEMPTS} found the fact through a page tool: ${JSON.stringify(reports, null, 2)}`);
});
