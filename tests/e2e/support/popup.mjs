// Reading and driving the popup through its accessible names (see the contract).

import { waitUntil } from './browser.mjs';

const TERMINAL = new Set(['completed', 'failed', 'stopped', 'timed_out']);

/**
 * What the popup shows, read in one go (a consistent snapshot of the DOM). The accessible
 * names themselves are checked by `checkAccessibleNames`.
 */
export async function readPopup(popup) {
  return popup.evaluate(() => {
    const byId = (id) => document.getElementById(id);
    const text = (node) => (node && !node.closest('[hidden]') ? node.textContent.trim() : '');
    const status = document.querySelector('[role="status"]');
    const root = document.documentElement.dataset;
    return {
      status: text(status),
      state: status?.dataset.state ?? null,
      answer: text(byId('answer-section')),
      answerText: text(byId('answer')),
      partialBadge: Boolean(text(byId('answer-partial'))),
      error: text(document.querySelector('[role="alert"]')),
      errorMessage: text(byId('error-message')),
      notices: [...document.querySelectorAll('#notices li')].map((li) => li.textContent.trim()),
      tokens: text(byId('tokens')),
      tokensWarn: byId('tokens').classList.contains('warn'),
      askEnabled: !byId('ask').disabled,
      stopEnabled: !byId('stop').disabled,
      snapshots: Number(root.snapshots ?? 0),
      snapshotConnection: Number(root.snapshotConnection ?? 0),
      connection: root.connection ?? null,
    };
  });
}

/**
 * Names added with the steps, Markdown answers, History and the side panel, and
 * explaining a selection, and the offer to search the web. Each is
 * unique on the page whenever it shows; which of them show depends on the state.
 */
export const VIEW_NAMES = [
  ['button', 'Steps'],
  ['region', 'Steps'],
  ['region', 'Sources'],
  ['button', 'Copy answer'],
  ['button', 'Open side panel'],
  ['button', 'Allow on this site'],
  ['button', 'New conversation'],
  ['button', 'History'],
  ['region', 'History'],
  ['button', 'Clear history'],
  ['button', 'Back to the current conversation'],
  ['region', 'Question from KnowledgeLens'],
  ['region', 'Earlier in this session'],
  ['button', 'Options'],
  ['textbox', 'Selected text'],
  ['button', 'Explain selection'],
  ['region', 'Search the web with Wikipedia?'],
  ['button', 'Turn on'],
  ['button', 'Not now'],
];

/**
 * Asserts that the popup exposes its controls under the contract's accessible names, that
 * none of VIEW_NAMES shows more than once, and that each of `present` (from VIEW_NAMES or
 * not) shows exactly once.
 */
export async function checkAccessibleNames(popup, { present = [] } = {}) {
  const expected = [
    ['textbox', 'Question'],
    ['button', 'Ask'],
    ['spinbutton', 'Max steps'],
    ['checkbox', 'Research'],
    ['spinbutton', 'Subtopics'],
    ['button', 'Stop'],
    ['status', undefined],
    ['region', 'Answer'],
    ['button', 'Export trajectory'],
  ];
  const missing = [];
  for (const [role, name] of expected) {
    const count = await popup.getByRole(role, name === undefined ? {} : { name, exact: true }).count();
    if (count !== 1) missing.push(`${role} "${name ?? ''}" (found ${count})`);
  }
  for (const [role, name] of VIEW_NAMES) {
    const count = await popup.getByRole(role, { name, exact: true }).count();
    if (count > 1) missing.push(`${role} "${name}" is not unique (found ${count})`);
  }
  for (const [role, name] of present) {
    const count = await popup.getByRole(role, { name, exact: true }).count();
    if (count !== 1) missing.push(`${role} "${name}" (found ${count})`);
  }
  if (missing.length) throw new Error(`popup accessible names missing: ${missing.join(', ')}`);
}

/** Types the question, optionally sets max steps, and clicks Ask (or presses Enter). */
export async function askQuestion(popup, question, { maxSteps, pressEnter = false } = {}) {
  const box = popup.getByRole('textbox', { name: 'Question' });
  await box.fill(question);
  if (maxSteps !== undefined) await popup.getByRole('spinbutton', { name: 'Max steps' }).fill(String(maxSteps));
  if (pressEnter) {
    await box.press('Enter');
  } else {
    await popup.getByRole('button', { name: 'Ask' }).click();
  }
}

/** Waits until the run in this popup ended (completed, failed, stopped or timed out); returns readPopup(). */
export async function waitForRunEnd(popup, { timeout = 60_000, diagnostics = () => '' } = {}) {
  let last;
  await waitUntil(
    async () => {
      last = await readPopup(popup);
      return TERMINAL.has(last.state) && last.askEnabled;
    },
    {
      timeout,
      interval: 150,
      message: () => `the run to end; popup shows ${JSON.stringify(last)}\n${diagnostics()}`,
    },
  );
  return last;
}

/**
 * Sends one request to the worker over a fresh Port from an extension page (as the popup
 * does) and returns the envelope ({id, ok, data} | {id, ok: false, error}).
 */
export async function requestBackend(extensionPage, request, { timeout = 15_000 } = {}) {
  return extensionPage.evaluate(
    ({ request: message, timeout: ms }) =>
      new Promise((resolve, reject) => {
        const port = chrome.runtime.connect({ name: 'knowledgelens' });
        const id = 900_000 + Math.floor(Math.random() * 99_999);
        const timer = setTimeout(() => reject(new Error(`no reply to ${message.type} in ${ms} ms`)), ms);
        port.onMessage.addListener((reply) => {
          if (reply?.type === 'event' || reply?.id !== id) return;
          clearTimeout(timer);
          port.disconnect();
          resolve(reply);
        });
        port.postMessage({ ...message, id });
      }),
    { request, timeout },
  );
}

/** The sources listed under the answer: [{id, title, href}]. */
export function sourcesOf(popup) {
  return popup.getByRole('region', { name: 'Sources', exact: true }).locator('li').evaluateAll((items) =>
    items.map((li) => ({
      id: li.querySelector('.source-id')?.textContent ?? '',
      title: (li.querySelector('a, .source-title')?.textContent ?? '').trim(),
      href: li.querySelector('a')?.getAttribute('href') ?? null,
    })));
}
