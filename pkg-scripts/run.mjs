// KnowledgeLens demo driver (called by pkg-scripts/run.sh after the build).
//
//   node pkg-scripts/run.mjs ["question"]
//
// Serves pkg-scripts/sample-page/ on 127.0.0.1, starts Chromium with the build (headed when
// $DISPLAY is set), sets the provider through the options page and opens the sample page.
// Then, as a reader would:
// 1. selects the sentence "Despite its name, this slow start grows exponentially." and
//    explains it through the menu path (`klExplainFromTab(tab, 'menu')`, what the context menu
//    item and Alt+Shift+E call), reading the in-page panel's frame (region "KnowledgeLens
//    explanation") through the page's accessibility tree until its run ends;
// 2. opens the popup on that tab and asks the question (by default one about the page whose
//    answer is on it), in the tab's conversation, until that run ends.
//
// Environment: KL_BASE_URL (default http://localhost:11434/v1; run.sh sets it to its embedded
// model when none is configured), KL_MODEL, KL_API_KEY, KL_TIMEOUT_S (per run, default 300),
// KL_DIST (default target/e2e-extension/: dist/ with the test hooks, whose klExplainFromTab
// is the menu path), KL_LOCAL_MODEL_STATS_URL (the embedded model server's /stats, for
// its token rates).
// Output: on stdout the explanation (the panel's paragraphs, one a line), a blank line and the
// answer (the popup's, paragraphs one a line), each followed by a newline. On stderr, lines
// starting "[run]": progress; for each run its timings ("explanation: first text after X.X s,
// done after Y.Y s", then "answer: …", from the trigger to the first non-empty text shown and
// to the run's end), steps, model calls and tokens; and the screenshot paths
// (test-output/run-panel.png, test-output/run-popup.png). Exit 0 when both runs completed with
// text (a partial answer included), 1 otherwise, with the reason.

import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  OUTPUT_DIR,
  configureProvider,
  distDir,
  launchExtension,
  openPopup,
  requireBuiltExtension,
  screenshot,
  tabIdOf,
  waitUntil,
} from '../tests/e2e/support/browser.mjs';
import { askQuestion, readPopup, requestBackend, waitForRunEnd } from '../tests/e2e/support/popup.mjs';
import { panelHandle, panelTree } from '../tests/e2e/support/panel.mjs';
import { serveDirectory } from '../tests/e2e/support/static-server.mjs';

const SAMPLE_DIR = fileURLToPath(new URL('./sample-page/', import.meta.url));
const SENTENCE = 'Despite its name, this slow start grows exponentially.';
const DEFAULT_QUESTION = 'Which congestion control algorithm is the default in Linux, according to the page?';
const TERMINAL = new Set(['completed', 'failed', 'stopped', 'timed_out']);

const log = (line) => process.stderr.write(`[run] ${line}\n`);

function settingsFromEnv() {
  const timeoutS = Number(process.env.KL_TIMEOUT_S ?? 300);
  return {
    baseUrl: process.env.KL_BASE_URL || 'http://localhost:11434/v1',
    model: process.env.KL_MODEL ?? '',
    apiKey: process.env.KL_API_KEY ?? '',
    timeoutMs: (Number.isFinite(timeoutS) && timeoutS > 0 ? timeoutS : 300) * 1000,
  };
}

function isLoopback(url) {
  return url.protocol === 'http:' && ['localhost', '127.0.0.1'].includes(url.hostname);
}

/**
 * The extension directory to load. A provider outside localhost needs a host permission that
 * the options page requests with a prompt only a person can answer; for an unattended demo we
 * load a temporary copy of the build whose manifest grants that one origin up front.
 */
async function extensionDir(baseUrl) {
  const dist = requireBuiltExtension(distDir());
  let url;
  try {
    url = new URL(baseUrl);
  } catch {
    return { dir: dist, cleanup: async () => {} };
  }
  if (isLoopback(url)) return { dir: dist, cleanup: async () => {} };
  const copy = await mkdtemp(join(tmpdir(), 'kl-run-dist-'));
  await cp(dist, copy, { recursive: true });
  const manifestPath = join(copy, 'manifest.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
  manifest.host_permissions = [...(manifest.host_permissions ?? []), `${url.origin}/*`];
  await writeFile(manifestPath, JSON.stringify(manifest, null, 2));
  log(`${url.origin} is not on localhost: loading a copy of the build that grants it up front ` +
    '(in normal use, Save in Options asks for this permission).');
  return { dir: copy, cleanup: () => rm(copy, { recursive: true, force: true }) };
}

const fmt = (n) => Number(n ?? 0).toLocaleString('en-US');

/** The run's metrics from its exported trajectory (model calls, errors), or null. */
async function exportedMetrics(page, tabId) {
  try {
    const reply = await requestBackend(page, { type: 'export', session: `tab:${tabId}` });
    return reply.ok ? JSON.parse(reply.data.json).metrics ?? null : null;
  } catch {
    return null;
  }
}

/** One line on the embedded model server's speed, when run.sh started one. */
async function localModelRates() {
  const url = process.env.KL_LOCAL_MODEL_STATS_URL;
  if (!url) return null;
  try {
    const s = await (await fetch(url)).json();
    return `embedded model: ${s.model} on ${s.threads} thread(s), loaded in ${(s.load_ms / 1000).toFixed(1)} s; ` +
      `prompt ${fmt(s.prompt_tokens_evaluated)} tokens at ${s.prompt_tokens_per_s ?? '-'} tok/s, ` +
      `generated ${fmt(s.generated_tokens)} at ${s.generation_tokens_per_s ?? '-'} tok/s`;
  } catch (err) {
    return `embedded model: no statistics (${err.message})`;
  }
}

/**
 * Selects `sentence` on the page (whitespace aside, across elements) and scrolls it into view;
 * returns the selected text, or '' when the page does not have it.
 */
function selectSentence(page, sentence) {
  return page.evaluate((wanted) => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    let flat = '';
    const map = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.nodeValue.length; i++) {
        const space = /\s/.test(node.nodeValue[i]);
        if (space && (flat === '' || flat.endsWith(' '))) continue;
        flat += space ? ' ' : node.nodeValue[i];
        map.push([node, i]);
      }
    }
    const want = wanted.replace(/\s+/g, ' ').trim();
    const at = flat.indexOf(want);
    if (at < 0) return '';
    const [startNode, startOffset] = map[at];
    const [endNode, endOffset] = map[at + want.length - 1];
    const range = document.createRange();
    range.setStart(startNode, startOffset);
    range.setEnd(endNode, endOffset + 1);
    startNode.parentElement.scrollIntoView({ block: 'center' });
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    return getSelection().toString();
  }, sentence);
}

/**
 * The in-page panel as its frame's accessibility tree shows it (as tests/e2e/explain.test.mjs
 * reads it: the panel is panel.html in a frame of the extension's origin, read over a CDP
 * session on that frame): null when absent, else its status line and the answer's
 * paragraphs, one a line (`handle`: tests/e2e/support/panel.mjs's panelHandle).
 */
async function readPanel(handle) {
  const tree = await panelTree(handle);
  if (!tree) return null;
  const { byId, region } = tree;
  const status = [];
  const texts = [];
  const walk = (node, inStatus) => {
    if (!node) return;
    const isStatus = inStatus || (!node.ignored && node.role?.value === 'status');
    if (!node.ignored && node.role?.value === 'StaticText') (isStatus ? status : texts).push(node.name?.value ?? '');
    for (const id of node.childIds ?? []) walk(byId.get(id), isStatus);
  };
  walk(region, false);
  const [, ...answer] = texts; // the first is the panel's title, "KnowledgeLens"
  return { status: status.join('').trim(), answer: nonBlankLines(answer.join('\n')) };
}

/** The panel's status line once its run ended: "Done.", "Stopped.", "The run failed: …", "Ended: …". */
const panelEnded = (status) => status === 'Done.' || status === 'Stopped.' || /^(The run failed:|Ended:)/.test(status);

/**
 * Explains the selection of `tabId` through the menu path and follows the in-page panel until
 * its run ends: {status, text, firstS, totalS}, the times from the trigger in seconds.
 */
async function explainInPanel(kl, page, tabId, timeoutMs) {
  const handle = panelHandle(page);
  try {
    const started = Date.now();
    const result = await kl.worker.evaluate((id) => globalThis.klExplainFromTab(id, 'menu'), tabId);
    if (!result?.ok) throw new Error(`the explanation did not start: ${result?.error?.message ?? JSON.stringify(result)}`);
    let first = null;
    let last = null;
    try {
      await waitUntil(async () => {
        last = await readPanel(handle);
        if (first === null && last?.answer) first = Date.now();
        return last && panelEnded(last.status);
      }, { timeout: timeoutMs, interval: 100, message: 'the explanation to end' });
    } catch {
      return { status: null, last, text: last?.answer ?? '', firstS: null, totalS: null };
    }
    const ended = Date.now();
    return {
      status: last.status,
      text: last.answer,
      firstS: first === null ? null : (first - started) / 1000,
      totalS: (ended - started) / 1000,
    };
  } finally {
    await handle.detach();
  }
}

/**
 * Asks `question` in the popup and follows it until its run ends: {done: readPopup() at the
 * end, or null on a timeout; last; started: whether the popup showed this question's run;
 * firstS; totalS}. The popup shows the tab's previous run (the explanation) until the worker
 * answers the request, so text counts only once the popup shows this question.
 */
async function askInPopup(popup, question, timeoutMs) {
  const squash = (text) => text.replace(/\s+/g, ' ').trim();
  const asked = async () => squash((await popup.locator('#asked').textContent()) ?? '');
  const started = Date.now();
  await askQuestion(popup, question);
  let first = null;
  let last = null;
  let ours = false;
  try {
    await waitUntil(async () => {
      last = await readPopup(popup);
      ours = (await asked()) === squash(question);
      if (first === null && ours && last.answerText) first = Date.now();
      // Ask enabled again on a terminal state: this run ended, or the request was refused.
      return TERMINAL.has(last.state) && last.askEnabled;
    }, { timeout: timeoutMs, interval: 100, message: 'the answer' });
  } catch {
    return { done: null, last, started: ours, firstS: null, totalS: null };
  }
  const done = await waitForRunEnd(popup, { timeout: 5_000 });
  return {
    done,
    last: done,
    started: ours,
    firstS: first === null ? null : (first - started) / 1000,
    totalS: (Date.now() - started) / 1000,
  };
}

/**
 * The answer as the popup shows it, its paragraphs (and list items, table rows…) one a line
 * like the panel's: no blank line in it, so the one before it on stdout is unambiguous. (The
 * answer region's textContent would glue paragraphs together.)
 */
async function answerLines(popup) {
  return nonBlankLines(await popup.locator('#answer').innerText().catch(() => ''));
}

/** `text` without its blank lines and trailing spaces. */
const nonBlankLines = (text) => text.split('\n').map((line) => line.trimEnd()).filter((line) => line.trim()).join('\n');

/** "first text after X.X s, done after Y.Y s". */
const timings = (run) => `first text after ${run.firstS === null ? '-' : run.firstS.toFixed(1)} s, done after ${run.totalS.toFixed(1)} s`;

/** Logs the steps, model calls and tokens of the tab's current run (from the worker's snapshot and export). */
async function logRunStats(label, extensionPage, tabId) {
  const reply = await requestBackend(extensionPage, { type: 'snapshot', session: `tab:${tabId}` }).catch(() => null);
  const view = reply?.ok ? reply.data : null;
  if (!view) return;
  const metrics = await exportedMetrics(extensionPage, tabId);
  const { input, output, budget } = view.usage;
  log(`${label}: ${view.partial ? 'partial' : 'complete'}; steps: ${view.step} of ${view.max_steps}` +
    (metrics ? `, model calls: ${metrics.model_calls}, errors: ${metrics.errors}` : '') +
    `; tokens: ${fmt(input)} in + ${fmt(output)} out = ${fmt(input + output)} of ${fmt(budget)}`);
}

/** A screenshot of what the page's viewport shows (the panel is fixed in it), under test-output/. */
async function viewportScreenshot(page, name) {
  await mkdir(OUTPUT_DIR, { recursive: true });
  const path = join(OUTPUT_DIR, name);
  await page.screenshot({ path });
  return path;
}

async function main() {
  const question = process.argv[2]?.trim() || DEFAULT_QUESTION;
  const settings = settingsFromEnv();
  const headless = !process.env.DISPLAY;
  const resources = [];
  const closeAll = async () => {
    for (const close of resources.reverse()) await close().catch(() => {});
    resources.length = 0;
  };
  const onSignal = (signal) => {
    log(`${signal}: closing the browser`);
    void closeAll().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const site = await serveDirectory(SAMPLE_DIR);
    resources.push(site.close);
    const ext = await extensionDir(settings.baseUrl);
    resources.push(ext.cleanup);
    log(`Chromium ${headless ? 'headless' : 'headed'}, extension ${ext.dir}`);
    const kl = await launchExtension({ headless, dist: ext.dir, logName: 'run' });
    resources.push(() => kl.close());

    log(`provider: ${settings.baseUrl}  model: ${settings.model || '(none)'}  api key: ${settings.apiKey ? 'set' : 'none'}`);
    await configureProvider(kl.context, kl.extId, settings);

    const page = await kl.context.newPage();
    await page.goto(site.url('index.html'));
    const tabId = await tabIdOf(kl.context, page);
    log(`page: ${await page.title()} (${page.url()})`);

    // 1. The selected sentence, explained through the menu path in the in-page panel.
    const selected = await selectSentence(page, SENTENCE);
    if (!selected) {
      log(`error: the sample page does not have the sentence "${SENTENCE}"`);
      return 1;
    }
    log(`explain (menu, in-page panel): ${selected.replace(/\s+/g, ' ')}`);
    const explained = await explainInPanel(kl, page, tabId, settings.timeoutMs);
    const panelShot = await viewportScreenshot(page, 'run-panel.png');
    if (explained.status === null) {
      log(`error: the explanation did not end within ${settings.timeoutMs / 1000} s (KL_TIMEOUT_S). ` +
        `The panel shows: "${explained.last ? explained.last.status : '(no panel)'}"`);
      log(`screenshot: ${panelShot}`);
      return 1;
    }
    if (explained.status !== 'Done.') {
      log(`error: the explanation did not complete. The panel says: "${explained.status}"`);
      log(`screenshot: ${panelShot}`);
      return 1;
    }
    if (!explained.text) {
      log('error: the explanation completed with no text in the panel');
      log(`screenshot: ${panelShot}`);
      return 1;
    }
    log(`explanation: ${timings(explained)}`);
    log(`screenshot: ${panelShot}`);

    // 2. A question in the popup, on the same tab (its conversation goes on).
    const popup = await openPopup(kl.context, kl.extId, tabId);
    await logRunStats('explanation', popup, tabId);
    log(`question: ${question}`);
    const asked = await askInPopup(popup, question, settings.timeoutMs);
    const shot = await screenshot(popup, 'run-popup.png');
    if (!asked.done) {
      log(`error: no answer within ${settings.timeoutMs / 1000} s (KL_TIMEOUT_S). The popup shows: "${asked.last?.status ?? ''}"`);
      log(`screenshot: ${shot}`);
      return 1;
    }
    const done = asked.done;
    if (!asked.started) {
      log(`error: the question did not start: ${done.error || done.status}`);
      log(`screenshot: ${shot}`);
      return 1;
    }
    if (done.state !== 'completed') {
      const message = done.errorMessage || done.status;
      log(`error: the run ${done.state === 'stopped' ? 'was stopped' : 'failed'}: ${message}`);
      log(`screenshot: ${shot}`);
      return 1;
    }
    const answer = (await answerLines(popup)) || done.answerText.trim();
    if (!answer) {
      log('error: the run completed with an empty answer');
      log(`screenshot: ${shot}`);
      return 1;
    }
    process.stdout.write(`${explained.text}\n\n${answer}\n`);
    log(`answer: ${timings(asked)}`);
    await logRunStats('answer', popup, tabId);
    for (const notice of done.notices) log(`notice: ${notice}`);
    const rates = await localModelRates();
    if (rates) log(rates);
    log(`screenshot: ${shot}`);
    return 0;
  } catch (err) {
    log(`error: ${err.message}`);
    return 1;
  } finally {
    await closeAll();
  }
}

process.exitCode = await main();
