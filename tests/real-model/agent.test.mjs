// KnowledgeLens with a real model: the built extension (dist/) in Chromium, asking about the
// bundled sample page through the popup, answered by the embedded model (SmolLM2-135M on the
// local model server). Every run must end inside its step bound with a non-empty answer
// (complete or partial), no panic, a complete trajectory and its state in
// chrome.storage.session; one run has its service worker force-stopped mid-call and must
// still finish. The assertions are about behaviour, never the model's wording.
//
// Default: 2 explanations, 2 questions, 1 force-stopped run. KL_REAL_MODEL_FULL=1
// (pkg-scripts/test.sh --full): 4 + 4 + 2 = 10 runs.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  configureProvider,
  launchExtension,
  openPopup,
  screenshot,
  stopServiceWorker,
  tabIdOf,
  waitForWorkerRunning,
  waitUntil,
  workerBootId,
} from '../e2e/support/browser.mjs';
import { askQuestion, requestBackend, waitForRunEnd } from '../e2e/support/popup.mjs';
import { serveDirectory } from '../e2e/support/static-server.mjs';
import { FULL, localModel, serverStats, writeReport } from './support.mjs';

const SAMPLE_DIR = fileURLToPath(new URL('../../pkg-scripts/sample-page/', import.meta.url));
const MAX_STEPS = 3;
/** Longest a run may take (a model call is ~6 s of prompt plus up to ~12 s of reply). */
const RUN_TIMEOUT_MS = 240_000;
const PANIC = /panicked|RuntimeError|unreachable executed/i;

const EXPLANATIONS = [
  'Explain this sentence from the page: "Despite its name, this slow start grows exponentially."',
  'Explain what the page means by "congestion collapse".',
  'Explain this sentence from the page: "Growing slowly but cutting sharply is what makes competing flows converge towards a fair share of the bottleneck."',
  'Explain the main idea of this page in two sentences.',
];
const QUESTIONS = [
  'What does a TCP sender do when a retransmission timer expires, according to the page?',
  'Which congestion control algorithm is the default in Linux, according to the page?',
  'How did the throughput of the Berkeley link change in October 1986?',
  'What does BBR estimate instead of waiting for losses?',
];
const STOPPED = [
  'Explain how the congestion window limits the sending rate.',
  'Why is a lost packet taken as a sign of congestion?',
];

const take = (list) => list.slice(0, FULL ? list.length : 2);
const RUNS = [
  ...take(EXPLANATIONS).map((question) => ({ kind: 'explanation', question })),
  ...take(QUESTIONS).map((question) => ({ kind: 'question', question })),
  ...STOPPED.slice(0, FULL ? 2 : 1).map((question) => ({ kind: 'worker stopped mid-call', question, stopWorker: true })),
];

let kl;
let site;
const results = [];

before(async () => {
  const model = localModel();
  site = await serveDirectory(SAMPLE_DIR);
  kl = await launchExtension({ logName: 'real-model' });
  await configureProvider(kl.context, kl.extId, { baseUrl: model.baseUrl, model: model.name });
});

after(async () => {
  await kl?.close();
  await site?.close();
  const stats = await serverStats().catch(() => null);
  const path = await writeReport('real-model-runs.json', { full: FULL, max_steps: MAX_STEPS, runs: results, server: stats });
  const rows = results.map((r, i) =>
    `  ${String(i + 1).padStart(2)}  ${r.kind.padEnd(24)} ${r.state.padEnd(9)} ${(r.partial ? 'partial' : 'complete').padEnd(8)} ` +
    `steps ${r.steps}/${MAX_STEPS}  calls ${r.model_calls}  tokens ${r.tokens_in}+${r.tokens_out}  ` +
    `${r.seconds.toFixed(1).padStart(5)} s  answer ${r.answer_chars} chars`);
  process.stdout.write(`\nreal-model runs (${path}):\n${rows.join('\n')}\n`);
  if (stats) {
    process.stdout.write(`local model server: ${stats.model}, ${stats.threads} thread(s), loaded in ${(stats.load_ms / 1000).toFixed(1)} s; ` +
      `${stats.requests} requests (${stats.completed} completed, ${stats.aborted} aborted, ${stats.failed} failed); ` +
      `prompt ${stats.prompt_tokens_evaluated} tokens at ${stats.prompt_tokens_per_s} tok/s, ` +
      `generated ${stats.generated_tokens} at ${stats.generation_tokens_per_s} tok/s\n`);
  }
});

/** The trajectory is complete: numbered, timestamped, every tool call answered, one answer last. */
function checkTrajectory(doc, run) {
  const entries = doc.trajectory;
  assert.ok(Array.isArray(entries) && entries.length > 0, `${run}: the trajectory is empty`);
  let lastAt = 0;
  for (const [i, e] of entries.entries()) {
    assert.ok(Number.isInteger(e.step) && e.step >= 0 && e.step <= MAX_STEPS, `${run}: entry ${i} has step ${e.step}`);
    assert.ok(Number.isFinite(e.at_ms) && e.at_ms >= lastAt, `${run}: entry ${i} has time ${e.at_ms} (previous ${lastAt})`);
    lastAt = e.at_ms;
    assert.equal(Object.keys(e.item).length, 1, `${run}: entry ${i} is not one item: ${JSON.stringify(e.item)}`);
  }
  const kinds = entries.map((e) => Object.keys(e.item)[0]);
  for (const [i, e] of entries.entries()) {
    if (!e.item.tool_call) continue;
    const id = e.item.tool_call.call.id;
    assert.ok(entries.slice(i + 1).some((later) => later.item.tool_result?.call_id === id),
      `${run}: tool call ${id} has no result: ${kinds.join(', ')}`);
  }
  const answers = entries.filter((e) => e.item.answer);
  assert.equal(answers.length, 1, `${run}: expected one answer entry: ${kinds.join(', ')}`);
  assert.equal(kinds.at(-1), 'answer', `${run}: the answer is not the last entry: ${kinds.join(', ')}`);
  assert.ok(answers[0].item.answer.text.trim().length > 0, `${run}: the answer entry is empty`);
  assert.equal(answers[0].item.answer.text, doc.answer, `${run}: the answer entry differs from the run's answer`);
  assert.equal(answers[0].item.answer.partial, doc.partial);
}

/** The session's records in chrome.storage.session: the head, the page, every entry. */
async function checkPersisted(popup, session, doc, run) {
  const all = await popup.evaluate(() => chrome.storage.session.get(null));
  const raw = all[`session:${session}`];
  assert.ok(raw, `${run}: no session:${session} in chrome.storage.session (keys: ${Object.keys(all).join(', ')})`);
  // The head record: {version, entries, state} (docs/architecture.md, "Persistence").
  const head = typeof raw === 'string' ? JSON.parse(raw) : raw;
  const state = head.state ?? head;
  assert.equal(state.status, 'completed', `${run}: the stored head says ${state.status}`);
  assert.equal(state.run_id, doc.run, `${run}: the stored head is of run ${state.run_id}, the export of ${doc.run}`);
  assert.ok(all[`page:${session}:${doc.run}`], `${run}: the page text of the run is not stored`);
  const entries = Object.keys(all).filter((k) => k.startsWith(`traj:${session}:${doc.run}:`));
  assert.equal(entries.length, doc.trajectory.length, `${run}: ${entries.length} stored entries, ${doc.trajectory.length} exported`);
  if (head.entries !== undefined) assert.equal(head.entries, doc.trajectory.length, `${run}: the head counts ${head.entries} entries`);
}

for (const [index, spec] of RUNS.entries()) {
  const name = `run ${index + 1}: ${spec.kind}: ${spec.question}`;
  test(name, { timeout: RUN_TIMEOUT_MS + 60_000 }, async (t) => {
    const run = `run ${index + 1}`;
    const logsFrom = kl.logs.length;
    const page = await kl.context.newPage();
    // A run whose worker is stopped gets its own page address, so its prompt is not a cached
    // prefix on the server: the call then spends seconds on the prompt, and the stop lands
    // inside it.
    await page.goto(site.url(spec.stopWorker ? `index.html?run=${index + 1}` : 'index.html'));
    const tabId = await tabIdOf(kl.context, page);
    const session = `tab:${tabId}`;
    const popup = await openPopup(kl.context, kl.extId, tabId);
    const serverBefore = await serverStats();
    const started = Date.now();
    await askQuestion(popup, spec.question, { maxSteps: MAX_STEPS });

    if (spec.stopWorker) {
      // Stop the worker while the model is working on the run's call.
      await waitUntil(async () => {
        const s = await serverStats();
        return s.requests > serverBefore.requests && s.active + s.waiting > 0;
      }, { timeout: 60_000, interval: 100, message: 'the run to call the model' });
      const bootBefore = await workerBootId(kl.context);
      await stopServiceWorker(kl.context);
      // The popup reconnects, which wakes the worker; the worker resumes the run.
      const bootAfter = await waitForWorkerRunning(kl.context, { timeout: 30_000 });
      assert.notEqual(bootAfter, bootBefore, `${run}: the service worker did not restart`);
      t.diagnostic(`${run}: worker stopped ${((Date.now() - started) / 1000).toFixed(1)} s after Ask, and restarted`);
    }

    const done = await waitForRunEnd(popup, { timeout: RUN_TIMEOUT_MS, diagnostics: () => kl.recentLogs() });
    const seconds = (Date.now() - started) / 1000;
    await screenshot(popup, `real-model-run-${index + 1}.png`);
    assert.equal(done.state, 'completed',
      `${run} ended ${done.state}: ${done.errorMessage || done.status}\n${kl.recentLogs()}`);
    assert.ok(done.answerText.trim().length > 0, `${run}: the popup shows an empty answer`);

    const snapshot = await requestBackend(popup, { type: 'snapshot', session });
    assert.equal(snapshot.ok, true, JSON.stringify(snapshot));
    const view = snapshot.data;
    assert.equal(view.status, 'completed');
    assert.equal(view.max_steps, MAX_STEPS, 'the Max steps field was not used');
    assert.ok(view.step >= 1 && view.step <= MAX_STEPS, `${run}: step ${view.step} of ${MAX_STEPS}`);

    const exported = await requestBackend(popup, { type: 'export', session });
    assert.equal(exported.ok, true, JSON.stringify(exported));
    const doc = JSON.parse(exported.data.json);
    assert.equal(doc.status, 'completed');
    assert.equal(doc.question, spec.question);
    assert.ok(doc.metrics.steps <= MAX_STEPS, `${run}: ${doc.metrics.steps} steps`);
    assert.ok(doc.metrics.model_calls >= 1);
    checkTrajectory(doc, run);
    await checkPersisted(popup, session, doc, run);

    const serverAfter = await serverStats();
    if (spec.stopWorker) {
      assert.ok(doc.metrics.model_calls >= 2,
        `${run}: the call cut off by the worker stop should be redone (model calls: ${doc.metrics.model_calls})`);
    }
    const panics = kl.logs.slice(logsFrom).filter((line) => PANIC.test(line));
    assert.deepEqual(panics, [], `${run}: the console shows a panic`);

    const result = {
      kind: spec.kind,
      question: spec.question,
      state: done.state,
      partial: doc.partial,
      steps: view.step,
      model_calls: doc.metrics.model_calls,
      errors: doc.metrics.errors,
      tokens_in: view.usage.input,
      tokens_out: view.usage.output,
      seconds,
      answer_chars: doc.answer.length,
      server_requests: serverAfter.requests - serverBefore.requests,
      server_aborted: serverAfter.aborted - serverBefore.aborted,
      trajectory: doc.trajectory.map((e) => Object.keys(e.item)[0]),
    };
    results.push(result);
    t.diagnostic(`${run}: ${result.partial ? 'partial' : 'complete'} answer (${result.answer_chars} chars) in ${seconds.toFixed(1)} s, ` +
      `${result.steps} step(s), ${result.model_calls} model call(s), tokens ${result.tokens_in} in + ${result.tokens_out} out; ` +
      `trajectory: ${result.trajectory.join(' > ')}`);
    await popup.close();
    await page.close();
  });
}
