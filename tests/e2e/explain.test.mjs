// Explain selection, end to end in Chromium with the scripted OpenAI-compatible
// server and fixture pages on loopback:
// - the popup reads the tab's selection into "Selected text" and "Explain selection" sends it
//   with its paragraph and heading path (also from a <textarea> and a same-origin iframe);
// - klExplainFromTab (what the context menu and the keyboard command call) shows the in-page
//   panel, read through its frame's accessibility tree over CDP: streamed text, Stop, Close,
//   Escape, and a worker stop while it streams, after which it shows the whole answer;
// - the command is declared with Alt+Shift+E; a chrome:// tab gives the popup's message and
//   not_scriptable;
// - no hidden text reaches the model; a hostile page stays inside the fence and out of every
//   system message;
// - screenshots of the panel (light, dark) and of the popup under test-output/.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  openPopup, screenshot, stopServiceWorker, tabIdOf, waitForWorkerRunning, waitUntil, workerBootId,
} from './support/browser.mjs';
import { startHarness } from './support/harness.mjs';
import { panelFrame, panelHandle, panelTree } from './support/panel.mjs';
import { askQuestion, checkAccessibleNames, readPopup, waitForRunEnd } from './support/popup.mjs';
import { createServer } from 'node:http';


let harness;

before(async () => {
  harness = await startHarness('explain');
});

after(async () => {
  await harness?.close();
});

const describe = () => `${harness.llm.timeline()}\n${harness.kl.recentLogs()}`;

/** A new tab on a fixture page: its page and chrome.tabs id. */
async function fixture(name) {
  const page = await harness.kl.context.newPage();
  await page.goto(harness.pages.url(name));
  return { page, tabId: await tabIdOf(harness.kl.context, page) };
}

/** Selects the contents of the element `selector` in `frame` (a page or a frame). */
const selectIn = (frame, selector) => frame.evaluate((sel) => {
  const range = document.createRange();
  range.selectNodeContents(document.querySelector(sel));
  getSelection().removeAllRanges();
  getSelection().addRange(range);
  return getSelection().toString();
}, selector);

/** Every message of every chat request since `from`, as {role, content} with text content. */
function messagesSince(from) {
  return harness.llm.chatRequests.slice(from).flatMap((r) => (r.body?.messages ?? []).map((m) => ({
    role: m.role,
    content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''),
  })));
}

/** Opens the popup for `tabId` and waits until it has read the selection. */
async function popupWithSelection(tabId) {
  const popup = await openPopup(harness.kl.context, harness.kl.extId, tabId);
  await waitUntil(() => popup.evaluate(() => document.documentElement.dataset.selection), {
    message: 'the popup to read the selection',
  });
  return popup;
}

// ---------------------------------------------------------------------------------------------
// The in-page panel through its frame's accessibility tree. The panel is panel.html in a frame
// of the extension's origin (out of the page's process: the page's own accessibility tree
// does not include it), so it is read over a CDP session attached to that frame's target.

/** Whether the panel's host element is in the page and shown. */
const panelShown = (page) => page.evaluate(() => {
  const host = document.querySelector('[data-knowledgelens="panel"]');
  return Boolean(host) && getComputedStyle(host).display !== 'none';
});

/** The panel as its frame's accessibility tree shows it: null when absent or hidden, else
 * its text and its buttons' names. */
async function readPanel(handle) {
  if (!(await panelShown(handle.page))) return null;
  const tree = await panelTree(handle);
  if (!tree) return null;
  const { byId, region } = tree;
  const texts = [];
  const buttons = {};
  const walk = (node) => {
    if (!node) return;
    if (!node.ignored && node.role?.value === 'StaticText') texts.push(node.name?.value ?? '');
    for (const id of node.childIds ?? []) walk(byId.get(id));
  };
  walk(region);
  // The buttons sit next to the region, inside the panel (the region's parent).
  const panel = byId.get(region.parentId);
  const collect = (node) => {
    if (!node) return;
    if (!node.ignored && node.role?.value === 'button') buttons[node.name?.value] = true;
    for (const id of node.childIds ?? []) collect(byId.get(id));
  };
  collect(panel);
  const [title = '', status = '', ...answer] = texts;
  return { title, status, answer: answer.join('\n'), buttons };
}

/** Clicks a panel button, as a user does (a real click in the frame: a user gesture). */
async function clickPanelButton(handle, panel, name) {
  assert.ok(panel.buttons[name], `no "${name}" button in the panel: ${JSON.stringify(panel)}`);
  await panelFrame(handle.page).getByRole('button', { name, exact: true }).click();
}

/** What reads the panel of `page` (its frame's CDP session is made when the frame is there). */
const panelSession = async (page) => panelHandle(page);

/** Waits until `probe(panel)` holds (the panel may be null: closed or absent); returns the panel. */
async function waitForPanel(cdp, probe, message) {
  let last;
  const { panel } = await waitUntil(async () => {
    last = await readPanel(cdp);
    return probe(last) ? { panel: last } : null;
  }, { timeout: 30_000, interval: 100, message: () => `${message}; panel: ${JSON.stringify(last)}\n${describe()}` });
  return panel;
}

const explainFromTab = (tabId, source = 'menu') =>
  harness.kl.worker.evaluate(([id, from]) => globalThis.klExplainFromTab(id, from), [tabId, source]);

// ---------------------------------------------------------------------------------------------

test('popup: the selection fills "Selected text"; Explain selection sends it with its paragraph and headings', async () => {
  const { llm } = harness;
  const { page, tabId } = await fixture('explain.html');
  const selected = await selectIn(page, '#target');
  const popup = await popupWithSelection(tabId);
  const box = popup.getByRole('textbox', { name: 'Selected text' });
  assert.equal(await box.inputValue(), selected.trim());
  await checkAccessibleNames(popup, { present: [['textbox', 'Selected text'], ['button', 'Explain selection']] });
  const button = popup.getByRole('button', { name: 'Explain selection' });
  assert.ok(await button.isEnabled());
  await screenshot(popup, 'explain-popup-selected-text.png');
  // Emptied, the button is disabled; the text comes back by typing it.
  await box.fill('');
  assert.ok(await button.isDisabled(), 'Explain selection is enabled with an empty box');
  await box.fill(selected.trim());

  const start = llm.chatRequests.length;
  llm.script({ content: 'Salt spray pitted the glass, so the lens cracked when it heated.' });
  await button.click();
  const done = await waitForRunEnd(popup, { diagnostics: describe });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${describe()}`);
  assert.match(done.answerText, /Salt spray pitted the glass/);
  // The captured context reaches the model outside the system message: the paragraph, and
  // the heading path (outermost first, "Later years" comes after the selection).
  const text = messagesSince(start).filter((m) => m.role !== 'system').map((m) => m.content).join('\n');
  assert.ok(text.includes('Keeper Agnes Tull blamed the salt spray for every cracked lens'), `no selection:\n${text}`);
  assert.ok(text.includes('The lamp burned 412 litres of colza oil each winter. Keeper Agnes Tull blamed the salt spray'),
    `no paragraph:\n${text}`);
  assert.match(text, /The Keepers of Bellhaven Light[\s>›»/|,]+The lamp[\s>›»/|,]+Fuel and salt(?![\s>›»/|,]+Later years)/,
    'no heading path');
  assert.equal(llm.queue.length, 0);
  await popup.close();
  await page.close();
});

test('popup: a selection inside a <textarea> and inside a same-origin iframe', async () => {
  const { llm } = harness;
  const { page, tabId } = await fixture('explain.html');
  await page.evaluate(() => {
    const box = document.getElementById('notes');
    box.focus();
    const start = box.value.indexOf('The fog');
    box.setSelectionRange(start, start + 'The fog signal sounded for nine hours.'.length);
  });
  let popup = await popupWithSelection(tabId);
  assert.equal(await popup.getByRole('textbox', { name: 'Selected text' }).inputValue(), 'The fog signal sounded for nine hours.');
  await popup.close();

  await page.evaluate(() => document.activeElement.blur());
  const frame = page.frames().find((f) => f.url().endsWith('explain-frame.html'));
  assert.ok(frame, 'the fixture iframe did not load');
  await selectIn(frame, '#entry');
  popup = await popupWithSelection(tabId);
  const box = popup.getByRole('textbox', { name: 'Selected text' });
  assert.equal(await box.inputValue(), 'Am 3. März 1861 wurde das Feuer zum ersten Mal entzündet.');
  const start = llm.chatRequests.length;
  llm.script({ content: 'On 3 March 1861 the light was lit for the first time.' });
  await popup.getByRole('button', { name: 'Explain selection' }).click();
  const done = await waitForRunEnd(popup, { diagnostics: describe });
  assert.equal(done.state, 'completed', describe());
  const text = messagesSince(start).filter((m) => m.role !== 'system').map((m) => m.content).join('\n');
  assert.ok(text.includes('Logbuch'), `the iframe's heading is not in the request:\n${text}`);
  assert.ok(text.includes('Log book of Bellhaven'), `the iframe's title is not in the request:\n${text}`);
  await popup.close();
  await page.close();
});

test('klExplainFromTab: the panel streams the answer; Stop, Close and Escape', async () => {
  const { llm, kl } = harness;
  const { page, tabId } = await fixture('explain.html');
  await selectIn(page, '#target');
  const cdp = await panelSession(page);
  const parts = ['Salt spray ', 'pitted the glass, ', 'so each lens ', 'cracked when ', 'the lamp heated it.'];
  llm.script({ deltas: parts, chunkDelayMs: 400 });
  assert.deepEqual(await explainFromTab(tabId, 'menu'), { ok: true });

  // Streamed text shows while the run goes on, with Stop.
  const early = await waitForPanel(cdp, (p) => p?.answer && p.buttons.Stop, 'streamed text in the panel');
  assert.ok(parts[0].trim().length && parts.join('').startsWith(early.answer.trim()), early.answer);
  assert.ok(early.answer.length < parts.join('').length, 'the whole answer was there at once');
  for (const name of ['Copy', 'Ask a follow-up', 'Close']) assert.ok(early.buttons[name], `no "${name}"`);
  // Focus moved into the panel: its host is the page's active element, and inside the frame
  // the region has it (not an empty frame).
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.knowledgelens), 'panel');
  await waitUntil(() => panelFrame(page).evaluate(() => document.hasFocus() && document.activeElement?.getAttribute('role') === 'region'), {
    message: 'focus on the panel\'s region',
  });

  const done = await waitForPanel(cdp, (p) => p?.status === 'Done.', 'the panel to show the whole answer');
  assert.equal(done.answer, parts.join(''));
  assert.ok(!done.buttons.Stop, 'Stop is shown after the run');
  await page.emulateMedia({ colorScheme: 'light' });
  await screenshot(page, 'explain-panel-light.png');
  await page.emulateMedia({ colorScheme: 'dark' });
  await screenshot(page, 'explain-panel-dark.png');
  await page.emulateMedia({ colorScheme: 'light' });

  // Escape closes it and focus goes back to the page; injecting again reuses the panel.
  await page.keyboard.press('Escape');
  await waitForPanel(cdp, (p) => p === null, 'Escape to close the panel');
  assert.notEqual(await page.evaluate(() => document.activeElement?.dataset.knowledgelens), 'panel');

  // Stop while streaming: the run ends as stopped.
  await selectIn(page, '#lamp');
  llm.script({ deltas: ['The lamp ', 'burned colza ', 'oil, ', 'a rapeseed oil, ', 'all winter ', 'long.'], chunkDelayMs: 700 });
  assert.deepEqual(await explainFromTab(tabId, 'command'), { ok: true });
  const streaming = await waitForPanel(cdp, (p) => p?.answer && p.buttons.Stop, 'the second answer to stream');
  assert.equal(await page.evaluate(() => document.querySelectorAll('[data-knowledgelens="panel"]').length), 1,
    'a second panel was injected');
  await clickPanelButton(cdp, streaming, 'Stop');
  const stopped = await waitForPanel(cdp, (p) => p?.status === 'Stopped.', 'Stop to end the run');
  assert.ok(!stopped.buttons.Stop);

  // Close hides the panel; the run goes on and the popup shows it.
  await selectIn(page, '#target');
  llm.script({ deltas: ['Agnes Tull ', 'wrote eleven ', 'letters.'], chunkDelayMs: 500 });
  assert.deepEqual(await explainFromTab(tabId, 'menu'), { ok: true });
  const third = await waitForPanel(cdp, (p) => p?.buttons.Close && p.status !== 'Stopped.', 'the third run in the panel');
  await clickPanelButton(cdp, third, 'Close');
  await waitForPanel(cdp, (p) => p === null, 'Close to hide the panel');
  const popup = await openPopup(kl.context, kl.extId, tabId);
  const end = await waitForRunEnd(popup, { diagnostics: describe });
  assert.equal(end.state, 'completed');
  assert.equal(end.answerText, 'Agnes Tull wrote eleven letters.');
  assert.equal(llm.queue.length, 0);
  await popup.close();
  await cdp.detach();
  await page.close();
});

test('the panel stays on screen as a long answer streams in below a selection near the bottom', async () => {
  const { llm } = harness;
  const { page, tabId } = await fixture('explain.html');
  // The selection 120 px above the bottom of the viewport.
  await page.evaluate(() => {
    const spacer = document.createElement('div');
    spacer.style.height = '1500px';
    document.body.prepend(spacer);
    const target = document.querySelector('#target');
    scrollBy(0, target.getBoundingClientRect().bottom - (innerHeight - 120));
  });
  await selectIn(page, '#target');
  const cdp = await panelSession(page);
  const paragraph = 'The keeper wrote the weather, the ships and the oil burned into the log every night. ';
  llm.script({ deltas: Array.from({ length: 12 }, () => `${paragraph.repeat(2)}\n\n`), chunkDelayMs: 150 });
  assert.deepEqual(await explainFromTab(tabId, 'menu'), { ok: true });
  await waitForPanel(cdp, (p) => p?.status === 'Done.', 'the long answer');
  const { top, bottom, height } = await page.evaluate(() => {
    const r = document.querySelector('[data-knowledgelens="panel"]').getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, height: innerHeight };
  });
  assert.ok(top >= 0 && bottom <= height, `the panel runs off the screen: ${top}..${bottom} of ${height}`);
  await screenshot(page, 'explain-panel-long.png');
  await cdp.detach();
  await page.close();
});

test('a worker stop while the panel streams: the panel reconnects and shows the whole answer', async () => {
  const { llm, kl } = harness;
  const { page, tabId } = await fixture('explain.html');
  await selectIn(page, '#target');
  const cdp = await panelSession(page);
  const parts = ['The salt ', 'left a crust ', 'on the lens, ', 'and the heat ', 'of the lamp ', 'cracked it.'];
  const answer = parts.join('');
  // Every call (the first, and the one redone after the stop) gets the same streamed reply.
  llm.respondWith(() => ({ deltas: parts, chunkDelayMs: 500 }));
  try {
    const boot = await workerBootId(kl.context);
    assert.deepEqual(await explainFromTab(tabId, 'command'), { ok: true });
    await waitForPanel(cdp, (p) => p?.answer, 'streamed text before the stop');
    await stopServiceWorker(kl.context);
    // The panel's reconnect wakes the worker, which resumes the run.
    const newBoot = await waitForWorkerRunning(kl.context, { timeout: 30_000 });
    assert.notEqual(newBoot, boot, 'the worker did not restart');
    const done = await waitForPanel(cdp, (p) => p?.status === 'Done.', 'the whole answer after the worker stop');
    assert.equal(done.answer, answer);
  } finally {
    llm.respondWith(null);
  }
  await cdp.detach();
  await page.close();
});

test('"Ask a follow-up" in the panel opens the side panel on this tab\'s conversation', async () => {
  const { llm, kl } = harness;
  const { page, tabId } = await fixture('explain.html');
  await selectIn(page, '#target');
  const cdp = await panelSession(page);
  llm.script({ content: 'Salt spray cracked the lenses.' });
  assert.deepEqual(await explainFromTab(tabId, 'menu'), { ok: true });
  const done = await waitForPanel(cdp, (p) => p?.status === 'Done.', 'the explanation');
  // The panel frame opens the side panel from the click itself (Chrome asks for the
  // gesture); where Chrome refuses, popup.html?tab=<id> opens in a window instead.
  await clickPanelButton(cdp, done, 'Ask a follow-up');
  const opened = await waitUntil(async () => {
    const views = await kl.worker.evaluate(async () => {
      const contexts = await chrome.runtime.getContexts({});
      return contexts.map((c) => c.documentUrl ?? '').filter((u) => /\/(sidepanel|popup)\.html/.test(u));
    });
    return views.length ? views : null;
  }, { message: () => `a side panel for the follow-up\n${describe()}` });
  assert.ok(opened.some((u) => u.endsWith(`/sidepanel.html?tab=${tabId}`) || u.endsWith(`/popup.html?tab=${tabId}`)), opened.join(', '));
  const options = await kl.worker.evaluate((id) => chrome.sidePanel.getOptions({ tabId: id }), tabId);
  assert.equal(options.path, `sidepanel.html?tab=${tabId}`);
  const after = await readPanel(cdp);
  assert.ok(!/failed|refused|forbidden|could not/i.test(after?.status ?? ''), JSON.stringify(after));
  // Close the popup window, if that is how it opened (its tab would be a second active tab).
  await kl.worker.evaluate(async () => {
    for (const w of await chrome.windows.getAll({ windowTypes: ['popup'] })) await chrome.windows.remove(w.id);
  });
  await cdp.detach();
  await page.close();
});

test('the page cannot read the panel: neither the explanation nor a follow-up typed in the popup reaches its script', async () => {
  const { llm, kl, pages } = harness;
  // The loopback collector the page's script reports to.
  const bodies = [];
  const collector = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => { bodies.push(body); res.end('ok'); });
  });
  await new Promise((resolve) => collector.listen(0, '127.0.0.1', resolve));
  try {
    const page = await kl.context.newPage();
    await page.goto(`${pages.url('snoop.html')}?collector=http://127.0.0.1:${collector.address().port}/`);
    const tabId = await tabIdOf(kl.context, page);
    await selectIn(page, '#target');
    const cdp = await panelSession(page);
    // The explanation carries one marker; the follow-up typed in the popup, another.
    llm.script({ content: 'The harbour master kept the night log ZEPHYRMARK of ships.' });
    assert.deepEqual(await explainFromTab(tabId, 'menu'), { ok: true });
    const done = await waitForPanel(cdp, (p) => p?.status === 'Done.', 'the explanation in the panel');
    assert.match(done.answer, /ZEPHYRMARK/, 'the user sees the explanation');
    const popup = await openPopup(kl.context, kl.extId, tabId);
    llm.script({ content: 'It logged ships at night.' });
    await askQuestion(popup, 'What did the QUOKKAMARK log hold?');
    assert.equal((await waitForRunEnd(popup, { diagnostics: describe })).state, 'completed');
    await popup.close();
    // The panel still shows its own run, and nothing of the follow-up.
    const still = await readPanel(cdp);
    assert.match(still.answer, /ZEPHYRMARK/);
    assert.doesNotMatch(JSON.stringify(still), /QUOKKA|logged ships/);

    const notes = await page.evaluate(() => window.snoop());
    assert.ok(notes > 0);
    await waitUntil(() => bodies.length > 0, { message: 'the page to report to the collector' });
    const report = bodies.join('\n');
    assert.match(report, /harbour master logged every ship/, 'the probe reads the page itself');
    for (const marker of ['ZEPHYRMARK', 'QUOKKAMARK', 'night log', 'logged ships at night']) {
      assert.ok(!report.includes(marker), `the page read "${marker}"`);
    }
    await cdp.detach();
    await page.close();
  } finally {
    await new Promise((resolve) => collector.close(resolve));
  }
});

test('the keyboard command is declared with Alt+Shift+E', async () => {
  const commands = await harness.kl.worker.evaluate(() => chrome.commands.getAll());
  const command = commands.find((c) => c.name === 'explain-selection');
  assert.ok(command, JSON.stringify(commands));
  assert.equal(command.shortcut, 'Alt+Shift+E');
  assert.equal(command.description, 'Explain the selected text');
});

test('a chrome:// tab: the popup says so, and klExplainFromTab returns not_scriptable', async () => {
  const { kl } = harness;
  // Opened by the worker, which gets its id (Chrome hides a chrome:// tab's address from the
  // extension, so it cannot be found by URL).
  const tabId = await kl.worker.evaluate(async () => (await chrome.tabs.create({ url: 'chrome://version' })).id);
  const popup = await popupWithSelection(tabId);
  const note = await popup.evaluate(() => {
    const node = document.getElementById('explain-note');
    return node.hidden ? '' : node.textContent;
  });
  assert.match(note, /KnowledgeLens can't read this page \(chrome:\/\/ pages and the Chrome Web Store are off-limits/);
  await screenshot(popup, 'explain-popup-not-scriptable.png');
  assert.equal(await popup.getByRole('textbox', { name: 'Selected text' }).count(), 0);
  assert.ok((await readPopup(popup)).askEnabled, 'a general question is still possible');
  const result = await explainFromTab(tabId, 'command');
  assert.equal(result.ok, false);
  assert.equal(result.error.kind, 'not_scriptable');
  await popup.close();
  await kl.worker.evaluate((id) => chrome.tabs.remove(id), tabId);
});

test('an empty selection is refused with a message, never silently', async () => {
  const { page, tabId } = await fixture('explain.html');
  const result = await explainFromTab(tabId, 'menu');
  assert.deepEqual(result, { ok: false, error: { kind: 'bad_request', message: 'Select some text to explain.' } });
  await page.close();
});

test('no hidden text reaches the model when a selection spans hidden elements', async () => {
  const { llm } = harness;
  const { page, tabId } = await fixture('hidden.html');
  await selectIn(page, '#visible');
  const start = llm.chatRequests.length;
  const cdp = await panelSession(page);
  llm.script({ content: 'Miriam Okafor computed the table.' });
  assert.deepEqual(await explainFromTab(tabId, 'menu'), { ok: true });
  await waitForPanel(cdp, (p) => p?.status === 'Done.', 'the explanation of the hidden page');
  const all = llm.chatRequests.slice(start).map((r) => JSON.stringify(r.body)).join('\n');
  assert.deepEqual(all.match(/HIDDEN_[A-Z_]+/g) ?? [], [], 'hidden text reached the model server');
  assert.ok(all.includes('Miriam Okafor'), 'the visible text is missing');
  assert.ok(all.includes('The Tide Tables of Port Anselm'), 'the heading is missing');
  await cdp.detach();
  await page.close();
});

test('a hostile page stays inside the fence and out of every system message', async () => {
  const { llm } = harness;
  const { page, tabId } = await fixture('hostile.html');
  await selectIn(page, '#hostile-selection');
  const start = llm.chatRequests.length;
  const popup = await popupWithSelection(tabId);
  llm.script({ content: 'This paragraph tries to give instructions; it is about the harbour.' });
  await popup.getByRole('button', { name: 'Explain selection' }).click();
  const done = await waitForRunEnd(popup, { diagnostics: describe });
  assert.equal(done.state, 'completed', describe());
  const messages = messagesSince(start);
  assert.ok(messages.length > 0);
  for (const m of messages.filter((x) => x.role === 'system')) {
    for (const marker of ['HOSTILE_', 'developer mode', '0000000000000000']) {
      assert.ok(!m.content.includes(marker), `page text "${marker}" in a system message:\n${m.content}`);
    }
  }
  const carrying = messages.filter((m) => m.content.includes('HOSTILE_'));
  assert.ok(carrying.length > 0, 'the page text did not reach the model');
  for (const m of carrying) {
    assert.notEqual(m.role, 'system');
    assert.ok(!m.content.includes('<page-0000000000000000>'), `the fake fence is not escaped:\n${m.content}`);
    const opens = [...m.content.matchAll(/<page-([A-Za-z0-9]+)>/g)];
    assert.equal(opens.length, 1, `not one fence:\n${m.content}`);
    const nonce = opens[0][1];
    const open = opens[0].index;
    const close = m.content.indexOf(`</page-${nonce}>`);
    assert.ok(close > open, `the fence is not closed:\n${m.content}`);
    assert.equal(m.content.split(`</page-${nonce}>`).length, 2, `the fence closes twice:\n${m.content}`);
    for (const hit of m.content.matchAll(/HOSTILE_[A-Z]+/g)) {
      assert.ok(hit.index > open && hit.index < close, `${hit[0]} outside the fence:\n${m.content}`);
    }
  }
  await popup.close();
  await page.close();
});
