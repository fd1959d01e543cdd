// Clicking the toolbar icon, as far as a test can: the DevTools protocol's
// `Extensions.triggerAction` runs the extension's default action on a tab, which opens the
// real action popup and grants `activeTab` on that tab as a toolbar click does. Chromium
// offers it only with `--enable-unsafe-extension-debugging` and on the pipe connection
// Playwright uses (`--remote-debugging-pipe`), and only on a *tab* target (a page target
// answers "Action can only be triggered on a tab target").
// https://chromedevtools.github.io/devtools-protocol/tot/Extensions/#method-triggerAction
//
// Playwright does not surface the action popup as a Page, so it is driven through a raw
// session (`Target.attachToTarget` without flattening, `Target.sendMessageToTarget`):
// `evaluate(fn, arg)` runs `fn(arg)` in it, which is all `readPopup` and `waitForRunEnd`
// (support/popup.mjs) need of a page.

import { waitUntil } from './browser.mjs';

/** The Chromium flag that opens the `Extensions` domain to the test's CDP connection. */
export const ACTION_DEBUGGING_FLAG = '--enable-unsafe-extension-debugging';

/**
 * Runs the extension's action on the tab showing `url` (as a toolbar click on it would) and
 * returns its popup: `{evaluate(fn, arg), close()}`.
 * @param {import('./browser.mjs').Launched} kl
 * @param {string} url the tab's address
 */
export async function clickToolbarIcon(kl, url) {
  const browser = kl.context.browser();
  if (!browser) throw new Error('no Browser behind this context: Extensions.triggerAction needs a browser CDP session');
  const cdp = await browser.newBrowserCDPSession();
  const { targetInfos: tabs } = await cdp.send('Target.getTargets', { filter: [{ type: 'tab' }] });
  const tab = tabs.find((t) => t.url === url);
  if (!tab) throw new Error(`no tab target at ${url}: ${JSON.stringify(tabs.map((t) => t.url))}`);
  const popupUrl = `chrome-extension://${kl.extId}/popup.html`;
  await cdp.send('Extensions.triggerAction', { id: kl.extId, targetId: tab.targetId });
  const popup = await waitUntil(async () => {
    const { targetInfos } = await cdp.send('Target.getTargets');
    return targetInfos.find((t) => t.type === 'page' && t.url === popupUrl);
  }, { message: 'the action popup to open' });
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId: popup.targetId, flatten: false });
  let nextId = 1;
  const waiting = new Map();
  cdp.on('Target.receivedMessageFromTarget', (event) => {
    if (event.sessionId !== sessionId) return;
    const message = JSON.parse(event.message);
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  const send = (method, params) => new Promise((resolve, reject) => {
    const id = nextId;
    nextId += 1;
    waiting.set(id, (message) => (message.error ? reject(new Error(message.error.message)) : resolve(message.result)));
    cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params }) }).catch(reject);
  });
  const shown = {
    /** `fn(arg)` evaluated in the popup (awaited), its value. */
    async evaluate(fn, arg) {
      const expression = `(${fn})(${arg === undefined ? '' : JSON.stringify(arg)})`;
      const { result, exceptionDetails } = await send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
      if (exceptionDetails) throw new Error(`in the action popup: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
      return result.value;
    },
    async close() {
      await cdp.send('Target.closeTarget', { targetId: popup.targetId }).catch(() => {});
      await cdp.detach().catch(() => {});
    },
  };
  // Its script is ready once it has rendered a snapshot (a click on Ask before that submits
  // the form as a plain GET, reloading the popup).
  await waitUntil(() => shown.evaluate(() => Number(document.documentElement.dataset.snapshots ?? 0) > 0), {
    message: 'the action popup to show a snapshot',
  });
  return shown;
}
