// Chromium with the built KnowledgeLens extension, driven through Playwright.
//
// Used by the e2e tests and by pkg-scripts/run.mjs. The extension under test is
// `target/e2e-extension/`: the shipped `dist/` with the test hooks (both built by
// pkg-scripts/build.sh); KL_DIST points elsewhere. See /work/shared/TOOLCHAIN.md
// for the Chromium facts these helpers rely on.

import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const OUTPUT_DIR = join(REPO_ROOT, 'test-output');

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The shipped build (`dist/`), which has no test hooks. */
export const SHIPPED_DIR = join(REPO_ROOT, 'dist');

/** The build under test: KL_DIST, else the shipped build with the test hooks. */
export function distDir() {
  if (process.env.KL_DIST) return resolve(process.env.KL_DIST);
  const target = process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(REPO_ROOT, 'target');
  return join(target, 'e2e-extension');
}

/** Throws (never skips) when the extension has not been built. */
export function requireBuiltExtension(dir = distDir()) {
  const wasm = join(dir, 'wasm', 'knowledgelens_bg.wasm');
  const manifest = join(dir, 'manifest.json');
  if (!existsSync(wasm) || !existsSync(manifest)) {
    throw new Error(
      `The built extension is missing (${existsSync(manifest) ? wasm : manifest} not found): ` +
        'run pkg-scripts/build.sh first.',
    );
  }
  return dir;
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/**
 * Polls `probe` until it returns a truthy value; returns that value.
 * @template T
 * @param {() => Promise<T> | T} probe
 * @param {{timeout?: number, interval?: number, message?: string | (() => string)}} [options]
 * @returns {Promise<T>}
 */
export async function waitUntil(probe, { timeout = 15_000, interval = 100, message = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let lastError;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const text = typeof message === 'function' ? message() : message;
      throw new Error(`Timed out after ${timeout} ms waiting for ${text}` +
        (lastError ? ` (last error: ${lastError.message})` : ''));
    }
    await sleep(interval);
  }
}

/**
 * Launches Chromium with the extension loaded and waits for its service worker.
 * @param {{headless?: boolean, dist?: string, logName?: string|null, args?: string[]}} [options]
 *   logName: also append the collected console lines to test-output/<logName>.log;
 *   args: more Chromium flags
 * @returns {Promise<Launched>}
 */
export async function launchExtension({ headless = true, dist = distDir(), logName = null, args = [] } = {}) {
  const ext = requireBuiltExtension(dist);
  const userDataDir = await mkdtemp(join(tmpdir(), 'kl-e2e-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.KL_CHROMIUM || '/usr/bin/chromium',
    headless,
    args: [...CHROMIUM_ARGS, `--disable-extensions-except=${ext}`, `--load-extension=${ext}`, ...args],
    viewport: { width: 1100, height: 800 },
  });
  let worker;
  try {
    worker =
      context.serviceWorkers().find(isOurWorker) ??
      (await context.waitForEvent('serviceworker', { predicate: isOurWorker, timeout: 20_000 }));
  } catch (err) {
    await context.close().catch(() => {});
    await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
    throw new Error(`The extension's service worker did not start (${err.message}). ` +
      'Launch with --enable-logging=stderr --v=0 to see why.');
  }
  return new Launched(context, worker, userDataDir, logName);
}

function isOurWorker(worker) {
  return worker.url().startsWith('chrome-extension://') && worker.url().endsWith('/background.js');
}

/** The id of the (only) extension loaded in `context`. */
export function extensionIdOf(context) {
  const worker = context.serviceWorkers().find(isOurWorker);
  if (!worker) throw new Error('no extension service worker in this context');
  return new URL(worker.url()).host;
}

/** A running browser with the extension: context, extension id, worker, collected console. */
export class Launched {
  constructor(context, worker, userDataDir, logName) {
    this.context = context;
    this.worker = worker;
    this.extId = new URL(worker.url()).host;
    this.userDataDir = userDataDir;
    /** Console lines of the worker and of every page, for diagnosing failures. */
    this.logs = [];
    this.logFile = logName ? join(OUTPUT_DIR, `${logName}.log`) : null;
    // Playwright keeps this Worker object across worker restarts, so this keeps logging.
    worker.on('console', (msg) => this.log(`[worker ${msg.type()}] ${msg.text()}`));
    const watchPage = (page) => {
      page.on('console', (msg) => this.log(`[page ${shortUrl(page.url())} ${msg.type()}] ${msg.text()}`));
      page.on('pageerror', (err) => this.log(`[page ${shortUrl(page.url())} error] ${err.message}`));
    };
    context.pages().forEach(watchPage);
    context.on('page', watchPage);
  }

  log(line) {
    this.logs.push(line);
    if (this.logFile) {
      const file = this.logFile;
      void mkdir(OUTPUT_DIR, { recursive: true }).then(() => appendFile(file, `${line}\n`));
    }
  }

  /** The last console lines, for assertion messages. */
  recentLogs(n = 40) {
    return this.logs.slice(-n).join('\n') || '(no console output)';
  }

  async close() {
    await this.context.close().catch(() => {});
    await rm(this.userDataDir, { recursive: true, force: true }).catch(() => {});
  }
}

function shortUrl(url) {
  try {
    const u = new URL(url);
    return u.protocol === 'chrome-extension:' ? u.pathname.slice(1) + u.search : u.host + u.pathname;
  } catch {
    return url;
  }
}

// ---------------------------------------------------------------------------------------------
// Service worker lifecycle (CDP ServiceWorker domain).

/** A CDP session on an open page, tracking the extension service worker's running status. */
async function watchServiceWorker(context) {
  const page = context.pages().find((p) => !p.isClosed()) ?? (await context.newPage());
  const cdp = await context.newCDPSession(page);
  const watcher = { cdp, status: 'unknown', history: [] };
  cdp.on('ServiceWorker.workerVersionUpdated', ({ versions }) => {
    for (const v of versions) {
      if (!v.scriptURL.startsWith('chrome-extension://')) continue;
      watcher.status = v.runningStatus;
      watcher.history.push(v.runningStatus);
    }
  });
  await cdp.send('ServiceWorker.enable');
  await waitUntil(() => watcher.status !== 'unknown', { timeout: 5_000, message: 'the worker status' });
  return watcher;
}

/** Force-stops the extension's service worker (as Chrome does when it idles) and waits. */
export async function stopServiceWorker(context) {
  const watcher = await watchServiceWorker(context);
  try {
    watcher.history.length = 0;
    await watcher.cdp.send('ServiceWorker.stopAllWorkers');
    await waitUntil(() => watcher.history.includes('stopped'), {
      timeout: 10_000,
      message: 'the service worker to stop',
    });
  } finally {
    await watcher.cdp.detach().catch(() => {});
  }
}

/**
 * Waits until the service worker runs (something must wake it, e.g. a popup reconnecting)
 * and returns its boot id (`globalThis.__klBootId`, new on every start).
 */
export async function waitForWorkerRunning(context, { timeout = 15_000 } = {}) {
  const watcher = await watchServiceWorker(context);
  try {
    await waitUntil(() => watcher.status === 'running', { timeout, message: 'the service worker to run' });
  } finally {
    await watcher.cdp.detach().catch(() => {});
  }
  return waitUntil(() => workerBootId(context), { timeout, message: "the worker's boot id" });
}

/** The boot id of the running worker (Playwright keeps one Worker object across restarts). */
export async function workerBootId(context) {
  const worker = context.serviceWorkers().find(isOurWorker);
  if (!worker) throw new Error('no extension service worker in this context');
  return worker.evaluate(() => globalThis.__klBootId);
}

// ---------------------------------------------------------------------------------------------
// Tabs, options, popup.

/** Runs `fn(arg)` in a throwaway extension page (full chrome.* APIs) and returns its result. */
export async function inExtensionPage(context, fn, arg) {
  const page = await context.newPage();
  try {
    await page.goto(`chrome-extension://${extensionIdOf(context)}/options.html`);
    return await page.evaluate(fn, arg);
  } finally {
    await page.close();
  }
}

/**
 * The chrome.tabs id of a Playwright page. Matches by URL where the extension may see it
 * (loopback pages, its own pages); otherwise (e.g. chrome://) brings the page to the front and
 * takes the active tab.
 */
export async function tabIdOf(context, page) {
  const url = page.url();
  const byUrl = await inExtensionPage(context, async (target) => {
    const tabs = await chrome.tabs.query({});
    return tabs.filter((t) => t.url === target || t.pendingUrl === target).map((t) => t.id);
  }, url);
  if (byUrl.length === 1) return byUrl[0];
  const helper = await context.newPage();
  try {
    await helper.goto(`chrome-extension://${extensionIdOf(context)}/options.html`);
    await page.bringToFront();
    const active = await helper.evaluate(async () => {
      const tabs = await chrome.tabs.query({ active: true });
      return tabs.map((t) => t.id);
    });
    if (active.length !== 1) throw new Error(`cannot tell the tab id of ${url}: ${active.length} active tabs`);
    return active[0];
  } finally {
    await helper.close();
  }
}

/**
 * Sets the provider (by default the one shown: OpenAI-compatible unless another was saved) and
 * its fields, and when given the token budget, the context window and the model call deadline
 * (seconds), through the options page UI; waits for "Saved.".
 */
export async function configureProvider(
  context,
  extId,
  {
    provider = undefined, baseUrl, model = 'scripted-model', apiKey = '', tokenBudget = undefined, contextWindow = undefined,
    modelDeadline = undefined,
  },
) {
  const page = await context.newPage();
  try {
    await page.goto(`chrome-extension://${extId}/options.html`);
    if (provider !== undefined) {
      await page.getByRole('combobox', { name: 'Provider', exact: true }).selectOption(provider);
    }
    await page.getByRole('textbox', { name: 'Base URL', exact: true }).fill(baseUrl);
    await page.getByRole('combobox', { name: 'Model' }).fill(model);
    await page.getByLabel('API key', { exact: true }).fill(apiKey);
    if (tokenBudget !== undefined) {
      await page.getByRole('spinbutton', { name: 'Token budget', exact: true }).fill(String(tokenBudget));
    }
    if (contextWindow !== undefined) {
      await page.getByRole('spinbutton', { name: 'Context window', exact: true }).fill(String(contextWindow));
    }
    if (modelDeadline !== undefined) {
      await page.getByRole('spinbutton', { name: 'Model call deadline (seconds)', exact: true }).fill(String(modelDeadline));
    }
    await page.getByRole('button', { name: 'Save' }).click();
    const status = page.getByRole('status');
    const text = await waitUntil(
      async () => {
        const t = (await status.textContent())?.trim();
        return t && t !== 'Saving…' && t !== 'Loading…' ? t : null;
      },
      { message: 'the options page to save' },
    );
    if (text !== 'Saved.') throw new Error(`The options page did not save the provider: "${text}"`);
  } finally {
    await page.close();
  }
}

/**
 * The options page's status line once it says something other than "Loading…", "Saving…" or
 * one of the texts in `not` (earlier messages).
 */
export async function optionsStatus(page, { not = [] } = {}) {
  return waitUntil(
    async () => {
      const text = ((await page.getByRole('status').textContent()) ?? '').trim();
      return text && !['Loading…', 'Saving…', ...not].includes(text) ? text : null;
    },
    { message: 'the options status line' },
  );
}

/** Opens the options page (900 px square) and waits until it shows the saved settings. */
export async function openOptions(context, extId) {
  const page = await context.newPage();
  await page.setViewportSize({ width: 900, height: 900 });
  await page.goto(`chrome-extension://${extId}/options.html`);
  await waitUntil(async () => (await page.getByRole('textbox', { name: 'Base URL', exact: true }).inputValue()) !== '', {
    message: 'the settings to load',
  });
  return page;
}

/** Clicks Test connection and returns what the "Connection check" region shows. */
export async function runConnectionCheck(page) {
  const status = page.getByRole('status');
  const section = page.locator('#check');
  const before = Number((await section.getAttribute('data-checks')) ?? 0);
  await page.getByRole('button', { name: 'Test connection' }).click();
  await waitUntil(
    async () => Number((await section.getAttribute('data-checks')) ?? 0) > before,
    { timeout: 60_000, message: 'the connection test to finish' },
  );
  const region = page.getByRole('region', { name: 'Connection check' });
  return {
    status: (await status.textContent()).trim(),
    result: await region.getAttribute('data-result'),
    text: (await region.textContent()).replace(/\s+/g, ' ').trim(),
    buttons: await region.getByRole('button').evaluateAll((nodes) =>
      nodes.filter((n) => !n.closest('[hidden]') && !n.hidden).map((n) => n.textContent.trim())),
  };
}

/** Clicks "Test search" in Options and returns the text of the "Search check" region once it has a result. */
export async function runSearchCheck(page) {
  const region = page.locator('#search-check');
  const before = Number((await region.getAttribute('data-checks')) ?? 0);
  await page.getByRole('button', { name: 'Test search', exact: true }).click();
  await waitUntil(async () => Number((await region.getAttribute('data-checks')) ?? 0) > before, {
    message: 'the search check to finish',
  });
  return (await page.getByRole('region', { name: 'Search check', exact: true }).textContent()).trim();
}

/** Opens popup.html?tab=<id> as a tab, sized like the real popup, and waits for its snapshot. */
export async function openPopup(context, extId, tabId) {
  const page = await context.newPage();
  await page.setViewportSize({ width: 380, height: 720 });
  const query = tabId === null || tabId === undefined ? '' : `?tab=${tabId}`;
  await page.goto(`chrome-extension://${extId}/popup.html${query}`);
  await waitForSnapshot(page);
  return page;
}

/** Waits until the popup has rendered a snapshot (its status left "Connecting…"). */
export async function waitForSnapshot(page, { timeout = 15_000 } = {}) {
  const status = page.getByRole('status');
  await waitUntil(
    async () => {
      const t = (await status.textContent())?.trim();
      return t && !/^(Connecting|Reconnecting)…$/.test(t);
    },
    { timeout, message: 'the popup to show a snapshot' },
  );
}

/** Saves a full-page screenshot under test-output/. */
export async function screenshot(page, name) {
  await mkdir(OUTPUT_DIR, { recursive: true });
  const path = join(OUTPUT_DIR, name);
  await page.screenshot({ path, fullPage: true });
  return path;
}
