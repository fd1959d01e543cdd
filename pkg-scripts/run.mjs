// KnowledgeLens demo driver (called by pkg-scripts/run.sh after the build).
//
//   node pkg-scripts/run.mjs ["question"]
//
// Serves pkg-scripts/sample-page/ on 127.0.0.1, starts Chromium with dist/ (headed when
// $DISPLAY is set), sets the provider through the options page, opens the sample page and the
// popup for it, asks the question and waits for the run to end.
//
// Environment: KL_BASE_URL (default http://localhost:11434/v1; run.sh sets it to its embedded
// model when none is configured), KL_MODEL, KL_API_KEY, KL_TIMEOUT_S (default 300), KL_DIST
// (default dist/), KL_LOCAL_MODEL_STATS_URL (the embedded model server's /stats, for its
// token rates).
// Output: the answer on stdout; steps, model calls, tokens, elapsed time and the screenshot
// path (test-output/run-popup.png) on stderr. Exit 0 when the run completed (a partial answer
// included), 1 otherwise.

import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  configureProvider,
  distDir,
  launchExtension,
  openPopup,
  requireBuiltExtension,
  screenshot,
  tabIdOf,
} from '../tests/e2e/support/browser.mjs';
import { askQuestion, readPopup, requestBackend, waitForRunEnd } from '../tests/e2e/support/popup.mjs';
import { serveDirectory } from '../tests/e2e/support/static-server.mjs';

const SAMPLE_DIR = fileURLToPath(new URL('./sample-page/', import.meta.url));
const DEFAULT_QUESTION = 'Explain this sentence from the page: "Despite its name, this slow start grows exponentially."';

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
 * load a temporary copy of dist/ whose manifest grants that one origin up front.
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
  log(`${url.origin} is not on localhost: loading a copy of dist/ that grants it up front ` +
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
    const popup = await openPopup(kl.context, kl.extId, tabId);

    log(`page: ${await page.title()} (${page.url()})`);
    log(`question: ${question}`);
    const started = Date.now();
    await askQuestion(popup, question);
    let done;
    try {
      done = await waitForRunEnd(popup, { timeout: settings.timeoutMs });
    } catch {
      const now = await readPopup(popup);
      const shot = await screenshot(popup, 'run-popup.png');
      log(`error: no answer within ${settings.timeoutMs / 1000} s (KL_TIMEOUT_S). The popup shows: "${now.status}"`);
      log(`screenshot: ${shot}`);
      return 1;
    }
    const elapsed = (Date.now() - started) / 1000;
    const shot = await screenshot(popup, 'run-popup.png');
    const reply = await requestBackend(popup, { type: 'snapshot', session: `tab:${tabId}` });
    const view = reply.ok ? reply.data : null;

    if (done.state !== 'completed') {
      const message = done.errorMessage || done.status;
      log(`error: the run ${done.state === 'stopped' ? 'was stopped' : 'failed'}: ${message}`);
      log(`screenshot: ${shot}`);
      return 1;
    }
    if (!done.answerText.trim()) {
      log('error: the run completed with an empty answer');
      log(`screenshot: ${shot}`);
      return 1;
    }
    process.stdout.write(`${done.answerText}\n`);
    const metrics = await exportedMetrics(popup, tabId);
    if (view) {
      const { input, output, budget } = view.usage;
      log(`answer: ${view.partial ? 'partial' : 'complete'}`);
      log(`steps: ${view.step} of ${view.max_steps}` +
        (metrics ? `, model calls: ${metrics.model_calls}, errors: ${metrics.errors}` : ''));
      log(`tokens: ${fmt(input)} in + ${fmt(output)} out = ${fmt(input + output)} of ${fmt(budget)}`);
    } else {
      log(`${done.status} ${done.tokens}`);
    }
    for (const notice of done.notices) log(`notice: ${notice}`);
    log(`elapsed: ${elapsed.toFixed(1)} s from Ask to the answer`);
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
