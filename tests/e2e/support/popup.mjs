// Reading and driving the popup through its accessible names (see the contract).

import { waitUntil } from './browser.mjs';

const TERMINAL = new Set(['completed', 'failed', 'stopped']);

/** What the popup shows, by role and name. */
export async function readPopup(popup) {
  const text = async (locator) => ((await locator.count()) ? ((await locator.first().textContent()) ?? '').trim() : '');
  const alert = popup.getByRole('alert');
  const notices = popup.locator('#notices li');
  return {
    status: await text(popup.getByRole('status')),
    state: await popup.getByRole('status').getAttribute('data-state'),
    answer: await text(popup.getByRole('region', { name: 'Answer' })),
    answerText: await text(popup.locator('#answer')),
    error: (await alert.isVisible()) ? await text(alert) : '',
    notices: await notices.allTextContents(),
    tokens: await text(popup.locator('#tokens')),
    askEnabled: await popup.getByRole('button', { name: 'Ask' }).isEnabled(),
    stopEnabled: await popup.getByRole('button', { name: 'Stop' }).isEnabled(),
    snapshots: Number(await popup.locator('html').getAttribute('data-snapshots')),
  };
}

/** Types the question, optionally sets max steps, and clicks Ask. */
export async function askQuestion(popup, question, { maxSteps } = {}) {
  await popup.getByRole('textbox', { name: 'Question' }).fill(question);
  if (maxSteps !== undefined) await popup.getByRole('spinbutton', { name: 'Max steps' }).fill(String(maxSteps));
  await popup.getByRole('button', { name: 'Ask' }).click();
}

/** Waits until the run in this popup ended (completed, failed or stopped); returns readPopup(). */
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
