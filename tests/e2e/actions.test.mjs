// Selection actions, end to end in Chromium with the scripted OpenAI-compatible server and
// the fixture pages on loopback:
// - the context menu is a submenu "KnowledgeLens" with Explain, Summarize, Translate, Define
//   and Simplify (the test build records what chrome.contextMenus.create received);
// - each built-in action through the worker's menu entry point (klRunActionFromTab) and
//   through the popup's buttons beside "Explain selection": the request to the model server
//   holds the action's template (src/actions/<id>.tpl) with the selection and its paragraph;
// - the in-page panel's "Summarize" runs on the selection its run kept in the worker, and the
//   panel follows the new run, also when the worker stops during it (the worker notes the run
//   a panel follows in chrome.storage.session; Stop stops it);
// - a custom action made in Options (section "Actions") is offered in the popup, the menu
//   and the in-page panel, and runs its own template with the selection fenced; an invalid template is
//   refused with its message beside the field, and Save saves nothing;
// - Export actions then Import actions (with the confirmation showing the templates)
//   restores the list; the keyboard command slots action-1 … action-3 are declared and run
//   the first actions after Explain;
// - screenshots of the popup's action buttons and of the Actions section under test-output/.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  openOptions, openPopup, optionsStatus, screenshot, stopServiceWorker, tabIdOf, waitForWorkerRunning, waitUntil, workerBootId,
} from './support/browser.mjs';
import { startHarness } from './support/harness.mjs';
import { panelFrame } from './support/panel.mjs';
import { checkAccessibleNames, waitForRunEnd } from './support/popup.mjs';

const ACTIONS = [['summarize', 'Summarize'], ['translate', 'Translate'], ['define', 'Define'], ['simplify', 'Simplify']];
const SELECTED = 'Keeper Agnes Tull blamed the salt spray for every cracked lens';
const PARAGRAPH = 'The lamp burned 412 litres of colza oil each winter.';

let harness;
let language;

before(async () => {
  harness = await startHarness('actions');
  language = await harness.kl.worker.evaluate(() =>
    new Intl.DisplayNames(['en'], { type: 'language' }).of(chrome.i18n.getUILanguage()));
});

after(async () => {
  await harness?.close();
});

const describe = () => `${harness.llm.timeline()}\n${harness.kl.recentLogs()}`;

/** The first line of action `id`'s template, as the model reads it. */
function instruction(id) {
  const text = readFileSync(new URL(`../../src/actions/${id}.tpl`, import.meta.url), 'utf8');
  const line = text.split('## request\n')[1].split('\n')[0];
  return line.replace('{{target_language}}', language);
}

/** A new tab on the explain fixture with #target selected: its page and tab id. */
async function selectedTab() {
  const page = await harness.kl.context.newPage();
  await page.goto(harness.pages.url('explain.html'));
  await page.evaluate(() => {
    const range = document.createRange();
    range.selectNodeContents(document.querySelector('#target'));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
  });
  return { page, tabId: await tabIdOf(harness.kl.context, page) };
}

/** Waits for the model request after `from` and returns its last user message's text. */
async function requestAfter(from) {
  await waitUntil(() => harness.llm.chatRequests.length > from, { timeout: 30_000, message: () => `a model request\n${describe()}` });
  const { messages } = harness.llm.chatRequests[from].body;
  return { last: messages.filter((m) => m.role === 'user').at(-1).content, body: harness.llm.chatRequests[from].body };
}

/** Checks that `text` is action `id`'s request with the fixture's selection and paragraph. */
function assertActionRequest(id, { last, body }) {
  assert.ok(last.startsWith(instruction(id)), `${id}: not its template:\n${last}`);
  assert.match(last, new RegExp(`<page-[0-9a-f]+>\\n${SELECTED}\\n</page-[0-9a-f]+>`), `${id}: the selection, fenced`);
  assert.ok(last.includes(PARAGRAPH), `${id}: the paragraph around it`);
  assert.ok(last.includes('Headings: The Keepers of Bellhaven Light > The lamp > Fuel and salt'), `${id}: the headings`);
  assert.ok(!body.tools?.length, `${id}: tools offered`);
}

test('the context menu is a submenu "KnowledgeLens" with the built-in actions', async () => {
  const menus = await waitUntil(async () => {
    const recorded = await harness.kl.worker.evaluate(() => globalThis.__klMenus);
    return recorded.length >= 6 ? recorded : null;
  }, { message: 'the menu to be built' });
  const created = menus.filter(([method]) => method === 'create').map(([, props]) => props);
  assert.deepEqual(created[0], { id: 'knowledgelens', title: 'KnowledgeLens', contexts: ['selection'] });
  assert.deepEqual(
    created.slice(1).map((p) => [p.parentId, p.title, p.id]),
    [['Explain', 'explain'], ...ACTIONS.map(([id, name]) => [name, id])]
      .map(([name, id]) => ['knowledgelens', name, `knowledgelens-action:${id}`]),
  );
});

test('two rebuilds of the menu at once (two quick saves) leave it built once, not interleaved', async () => {
  const { kl } = harness;
  const menus = await kl.worker.evaluate(async () => {
    await Promise.all([globalThis.klRefreshMenus(), globalThis.klRefreshMenus(), globalThis.klRefreshMenus()]);
    return globalThis.__klMenus;
  });
  // Each rebuild starts with removeAll (which empties the record): the last one's creates only.
  const ids = menus.filter(([method]) => method === 'create').map(([, props]) => props.id);
  assert.deepEqual(ids, ['knowledgelens', 'knowledgelens-action:explain', ...ACTIONS.map(([id]) => `knowledgelens-action:${id}`)]);
});

test('each built-in action through the menu entry point sends its template with the selection and context', async () => {
  const { page, tabId } = await selectedTab();
  const popup = await openPopup(harness.kl.context, harness.kl.extId, tabId);
  for (const [id, name] of ACTIONS) {
    const from = harness.llm.chatRequests.length;
    harness.llm.script({ content: `${name} done.` });
    const result = await harness.kl.worker.evaluate(([tab, action]) => globalThis.klRunActionFromTab(tab, action, 'menu'), [tabId, id]);
    assert.equal(result.ok, true, `${id}: ${JSON.stringify(result)}\n${describe()}`);
    assertActionRequest(id, await requestAfter(from));
    const done = await waitForRunEnd(popup, { diagnostics: describe });
    assert.equal(done.state, 'completed', `${id}: ${JSON.stringify(done)}`);
    assert.equal(done.answerText, `${name} done.`);
  }
  await popup.close();
  await page.close();
});

test('the popup offers the actions beside "Explain selection", and each sends its template', async () => {
  const { page, tabId } = await selectedTab();
  const popup = await openPopup(harness.kl.context, harness.kl.extId, tabId);
  await waitUntil(() => popup.evaluate(() => document.documentElement.dataset.selection), { message: 'the selection' });
  await checkAccessibleNames(popup, {
    present: [['button', 'Explain selection'], ...ACTIONS.map(([, name]) => ['button', name])],
  });
  await screenshot(popup, 'popup-actions.png');
  for (const [id, name] of ACTIONS) {
    const from = harness.llm.chatRequests.length;
    harness.llm.script({ content: `${name} from the popup.` });
    await popup.getByRole('button', { name, exact: true }).click();
    assertActionRequest(id, await requestAfter(from));
    const done = await waitForRunEnd(popup, { diagnostics: describe });
    assert.equal(done.answerText, `${name} from the popup.`, id);
  }
  await popup.close();
  await page.close();
});

test('the in-page panel runs another action on its selection and follows the new run', async () => {
  const { page, tabId } = await selectedTab();
  harness.llm.script({ content: 'Salt spray cracked the lenses.' });
  assert.deepEqual(await harness.kl.worker.evaluate((tab) => globalThis.klExplainFromTab(tab, 'menu'), tabId), { ok: true });
  const answer = async () => (await panelFrame(page)?.locator('.answer').textContent().catch(() => '')) ?? '';
  await waitUntil(async () => (await answer()).includes('Salt spray cracked'), { timeout: 30_000, message: () => `the explanation\n${describe()}` });
  const frame = panelFrame(page);
  const summarize = frame.getByRole('button', { name: 'Summarize', exact: true });
  await waitUntil(() => summarize.isEnabled(), { message: 'Summarize enabled after the run' });
  for (const [, name] of ACTIONS) assert.equal(await frame.getByRole('button', { name, exact: true }).count(), 1, name);
  // Another selection on the page now: the panel's action uses the selection its run kept.
  await page.evaluate(() => getSelection().removeAllRanges());
  const from = harness.llm.chatRequests.length;
  harness.llm.script({ content: 'Agnes blamed salt.' });
  await summarize.click();
  assertActionRequest('summarize', await requestAfter(from));
  await waitUntil(async () => (await answer()).includes('Agnes blamed salt.'), { timeout: 30_000, message: () => `the panel to follow the new run\n${describe()}` });
  await waitUntil(async () => (await frame.locator('.status').textContent()) === 'Done.', { message: 'the new run done' });
  await page.close();
});

test('after a worker restart the in-page panel still follows and stops the run its action started', async () => {
  const { kl, llm } = harness;
  const { page, tabId } = await selectedTab();
  llm.script({ content: 'Salt spray cracked the lenses.' });
  assert.deepEqual(await kl.worker.evaluate((tab) => globalThis.klExplainFromTab(tab, 'menu'), tabId), { ok: true });
  const text = async (selector) => (await panelFrame(page)?.locator(selector).textContent().catch(() => '')) ?? '';
  await waitUntil(async () => (await text('.status')) === 'Done.', { timeout: 30_000, message: () => `the explanation\n${describe()}` });
  const frame = panelFrame(page);
  const opened = new URL(frame.url()).searchParams;
  const openedRun = Number(opened.get('run'));

  // Summarize's model requests wait until the test lets each one go; the one Stop makes (for
  // the best short answer so far) is answered at once.
  const held = [];
  const stopping = (body) => String(body.messages.filter((m) => m.role === 'user').at(-1)?.content).startsWith('The user asked you to stop');
  llm.respondWith((body) => (stopping(body) ? { content: 'Stopped short.' } : new Promise((reply) => held.push({ body, reply }))));
  try {
    const summarize = frame.getByRole('button', { name: 'Summarize', exact: true });
    await waitUntil(() => summarize.isEnabled(), { message: 'Summarize enabled' });
    await summarize.click();
    await waitUntil(() => held.length === 1, { timeout: 30_000, message: () => `the Summarize request\n${describe()}` });
    // The worker noted the run the panel follows now (the frame's address, which the Port's
    // sender gives, still names the opening run).
    const followedOf = () => kl.worker.evaluate(async (tab) =>
      (await chrome.storage.session.get(`panel-runs:${tab}`))[`panel-runs:${tab}`] ?? null, tabId);
    const noted = await followedOf();
    const followed = noted?.[openedRun];
    assert.ok(Number.isInteger(followed) && followed > openedRun, `noted ${JSON.stringify(noted)}, opened ${openedRun}`);
    assert.equal(new URL(frame.url()).searchParams.get('run'), String(openedRun));
    await waitUntil(async () => (await text('.status')) === 'Thinking…', { message: 'the Summarize run going' });

    // The worker stops while the Summarize run waits for its model; the panel reconnects,
    // which wakes it, and the run goes on where it was.
    const before = await workerBootId(kl.context);
    await stopServiceWorker(kl.context);
    held.shift().reply({ content: 'Lost with the old worker.' });
    assert.notEqual(await waitForWorkerRunning(kl.context, { timeout: 60_000 }), before, 'the worker did not restart');
    await waitUntil(() => held.length === 1, { timeout: 60_000, message: () => `the resumed Summarize request\n${describe()}` });
    // The restarted worker reads the run the panel follows from its note: the panel shows it going on
    // (not "This explanation was followed by another question…").
    let shown = '';
    await waitUntil(async () => (shown = await text('.status')) === 'Thinking…', { message: () => `the panel on the resumed run (it says "${shown}")\n${describe()}` });
    const stop = frame.getByRole('button', { name: 'Stop', exact: true });
    await waitUntil(() => stop.isVisible(), { message: 'Stop shown while the run goes on' });
    await screenshot(page, 'panel-after-restart.png');
    await stop.click();
    await waitUntil(async () => (shown = await text('.status')) === 'Stopped.', { timeout: 30_000, message: () => `Stopped. (it says "${shown}")\n${describe()}` });
    assert.equal(await text('.answer'), 'Stopped short.');
    held.splice(0).forEach((h) => h.reply({ content: 'Too late.' }));

    // The panel goes on following: another action from it, which now completes.
    llm.respondWith(null);
    llm.script({ content: 'Agnes blamed salt, after the restart.' });
    const define = frame.getByRole('button', { name: 'Define', exact: true });
    await waitUntil(() => define.isEnabled(), { message: 'Define enabled after the stop' });
    await define.click();
    await waitUntil(async () => (await text('.answer')).includes('Agnes blamed salt, after the restart.'),
      { timeout: 30_000, message: () => `the Define answer\n${describe()}` });
    await waitUntil(async () => (await text('.status')) === 'Done.', { message: 'Define done' });
    assert.ok((await followedOf())[openedRun] > followed, 'the run of Define noted');
    // Closing the tab deletes the note.
    await page.close();
    await waitUntil(async () => (await followedOf()) === null, { message: 'the note deleted with the tab' });
  } finally {
    llm.respondWith(null);
    held.splice(0).forEach((h) => h.reply({ content: 'Too late.' }));
    if (!page.isClosed()) await page.close();
  }
});

test('a custom action made in Options is offered in the popup and the menu, and runs its template', async () => {
  const { kl } = harness;
  const options = await openOptions(kl.context, kl.extId);
  const group = options.getByRole('group', { name: 'Actions', exact: true });
  await waitUntil(async () => (await group.getByRole('group').count()) === 5, { message: 'the built-in actions' });
  await group.getByRole('button', { name: 'Add action', exact: true }).click();
  const name = group.getByRole('textbox', { name: 'Action name', exact: true });
  const template = group.getByRole('textbox', { name: 'Action template', exact: true });
  await name.fill('Quiz me');
  await template.fill('Ask me one question about {{selection}} (from {{title}}).');
  await waitUntil(async () => (await template.getAttribute('aria-invalid')) === null, { message: 'a valid template' });
  await options.getByRole('button', { name: 'Save', exact: true }).click();
  assert.equal(await optionsStatus(options), 'Saved.');
  await group.screenshot({ path: 'test-output/options-actions.png' });

  // The menu follows the saved list.
  await waitUntil(async () => {
    const menus = await kl.worker.evaluate(() => globalThis.__klMenus);
    return menus.some(([method, p]) => method === 'create' && p.title === 'Quiz me' && p.parentId === 'knowledgelens' && p.id === 'knowledgelens-action:custom-1');
  }, { message: () => `"Quiz me" in the menu\n${describe()}` });

  // The popup offers it, and it runs its own template with the selection fenced.
  const { page, tabId } = await selectedTab();
  const popup = await openPopup(kl.context, kl.extId, tabId);
  const quiz = popup.getByRole('button', { name: 'Quiz me', exact: true });
  await waitUntil(() => quiz.count().then((n) => n === 1), { message: 'the Quiz me button' });
  await waitUntil(() => popup.evaluate(() => document.documentElement.dataset.selection), { message: 'the selection' });
  const from = harness.llm.chatRequests.length;
  harness.llm.script({ content: 'Who blamed the salt?' });
  await quiz.click();
  const { last, body } = await requestAfter(from);
  assert.match(last, /^Ask me one question about <page-([0-9a-f]+)>\nKeeper Agnes Tull blamed the salt spray for every cracked lens\n<\/page-\1> \(from <page-\1>\nThe Keepers of Bellhaven Light\n<\/page-\1>\)\.$/, last);
  assert.ok(!body.tools?.length, 'no tools for a custom action');
  assert.equal((await waitForRunEnd(popup, { diagnostics: describe })).answerText, 'Who blamed the salt?');
  await popup.close();
  await page.close();

  // The menu's entry runs it too.
  const second = await selectedTab();
  const menuFrom = harness.llm.chatRequests.length;
  harness.llm.script({ content: 'Which coast?' });
  const result = await kl.worker.evaluate(([tab]) => globalThis.klRunActionFromTab(tab, 'custom-1', 'menu'), [second.tabId]);
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.match((await requestAfter(menuFrom)).last, /^Ask me one question about <page-/);
  // The in-page panel it opened offers it too.
  await waitUntil(async () => (await panelFrame(second.page)?.getByRole('button', { name: 'Quiz me', exact: true }).count()) === 1,
    { timeout: 30_000, message: () => `"Quiz me" in the in-page panel\n${describe()}` });
  await second.page.close();
  await options.close();
});

test('an invalid template is refused with its message beside the field, and Save saves nothing', async () => {
  const { kl } = harness;
  const options = await openOptions(kl.context, kl.extId);
  const group = options.getByRole('group', { name: 'Actions', exact: true });
  await waitUntil(async () => (await group.getByRole('group').count()) === 6, { message: 'the saved actions' });
  await group.getByRole('button', { name: 'Add action', exact: true }).click();
  await group.getByRole('textbox', { name: 'Action name', exact: true }).last().fill('Broken');
  const template = group.getByRole('textbox', { name: 'Action template', exact: true }).last();
  await template.fill('Explain {{selection}} in {{langauge}}.');
  const message = 'Unknown placeholder {{langauge}}: use {{selection}}, {{context}}, {{title}}, {{page_language}} or {{target_language}}.';
  await waitUntil(async () => (await template.getAttribute('aria-invalid')) === 'true', { message: 'the template marked invalid' });
  const described = await template.evaluate((el) => document.getElementById(el.getAttribute('aria-describedby')).textContent);
  assert.equal(described, message);
  // A name already used, built-ins included, case aside.
  const name = group.getByRole('textbox', { name: 'Action name', exact: true }).last();
  await name.fill('define');
  await waitUntil(async () => (await name.getAttribute('aria-invalid')) === 'true', { message: 'the name marked invalid' });
  await options.getByRole('button', { name: 'Save', exact: true }).click();
  assert.equal(await optionsStatus(options), 'Fix the actions marked in Actions: nothing was saved.');
  const saved = await kl.worker.evaluate(() => chrome.storage.local.get('actions'));
  assert.ok(!saved.actions.includes('Broken') && !saved.actions.includes('langauge'), saved.actions);
  await options.close();
});

test('Export actions then Import actions, after a confirmation that shows the templates, restores them', async () => {
  const { kl } = harness;
  const options = await openOptions(kl.context, kl.extId);
  const group = options.getByRole('group', { name: 'Actions', exact: true });
  await waitUntil(async () => (await group.getByRole('group').count()) === 6, { message: 'the saved actions' });
  const downloaded = options.waitForEvent('download');
  await group.getByRole('button', { name: 'Export actions', exact: true }).click();
  const download = await downloaded;
  assert.equal(download.suggestedFilename(), 'knowledgelens-actions.json');
  const dir = await mkdtemp(join(tmpdir(), 'kl-actions-'));
  const path = join(dir, 'knowledgelens-actions.json');
  await download.saveAs(path);
  const exported = JSON.parse(await readFile(path, 'utf8'));
  assert.equal(exported.version, 1);
  assert.deepEqual(exported.actions.map((a) => a.name), ['Explain', 'Summarize', 'Translate', 'Define', 'Simplify', 'Quiz me']);

  // Delete the custom action and save: only the built-ins are left.
  await group.getByRole('group', { name: 'Quiz me', exact: true }).getByRole('button', { name: 'Delete', exact: true }).click();
  await options.getByRole('button', { name: 'Save', exact: true }).click();
  assert.equal(await optionsStatus(options), 'Saved.');
  const left = JSON.parse((await kl.worker.evaluate(() => chrome.storage.local.get('actions'))).actions);
  assert.equal(left.actions.length, 5);

  // Import: the dialog shows each template; Cancel saves nothing, Import saves the list.
  await options.locator('#import-file').setInputFiles(path);
  const dialog = options.getByRole('dialog', { name: 'Import these actions?' });
  await waitUntil(() => dialog.isVisible(), { message: 'the import confirmation' });
  assert.match(await dialog.textContent(), /Quiz me\s*Shown in [^.]*\.\s*Ask me one question about \{\{selection\}\} \(from \{\{title\}\}\)\./);
  await screenshot(options, 'options-import-confirm.png');
  assert.match(await dialog.textContent(), /Translate translates into the browser's language\./);
  assert.match(await dialog.textContent(), /Define\s*Shown in the context menu, the popup and side panel, the in-page panel\./);
  await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
  assert.equal(JSON.parse((await kl.worker.evaluate(() => chrome.storage.local.get('actions'))).actions).actions.length, 5);

  // The confirmation shows what else a file changes: Translate's language (it goes into
  // Translate's request), a hidden action, one kept out of a place.
  const changed = join(dir, 'changed.json');
  const edited = structuredClone(exported);
  edited.target_language = 'Welsh';
  edited.actions.find((a) => a.name === 'Define').hidden = true;
  edited.actions.find((a) => a.name === 'Simplify').menu = false;
  await writeFile(changed, JSON.stringify(edited));
  await options.locator('#import-file').setInputFiles(changed);
  await waitUntil(() => dialog.isVisible(), { message: 'the confirmation of the changed file' });
  const shown = await dialog.textContent();
  assert.match(shown, /Translate translates into: Welsh/);
  assert.match(shown, /Define\s*Hidden: shown nowhere\./);
  assert.match(shown, /Simplify\s*Shown in the popup and side panel, the in-page panel\./);
  await screenshot(options, 'options-import-confirm-changed.png');
  await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
  await options.locator('#import-file').setInputFiles(path);
  await waitUntil(() => dialog.isVisible(), { message: 'the import confirmation again' });
  await dialog.getByRole('button', { name: 'Import', exact: true }).click();
  assert.equal(await optionsStatus(options, { not: ['Saved.'] }), 'Imported and saved.');
  const restored = JSON.parse((await kl.worker.evaluate(() => chrome.storage.local.get('actions'))).actions);
  assert.deepEqual(restored.actions.map((a) => [a.id, a.name, a.template]), exported.actions.map((a) => [a.id, a.name, a.template]));
  assert.equal(await group.getByRole('textbox', { name: 'Action name', exact: true }).inputValue(), 'Quiz me');

  // A file that is not an actions file is refused with a message.
  const junk = join(dir, 'junk.json');
  await writeFile(junk, '{"version": 9, "actions": []}');
  await options.locator('#import-file').setInputFiles(junk);
  const refused = await optionsStatus(options, { not: ['Imported and saved.'] });
  assert.match(refused, /newer version of KnowledgeLens \(schema 9\)/);
  // A file over 256 KB is refused before it is read.
  const big = join(dir, 'big.json');
  await writeFile(big, `{"version": 1, "actions": [], "pad": "${'x'.repeat(300 * 1024)}"}`);
  await options.locator('#import-file').setInputFiles(big);
  assert.equal(await optionsStatus(options, { not: [refused] }),
    'This file is too big to be an actions file (301 KB, at most 256 KB): choose the file Export actions saved.');
  await options.close();
});

test('the keyboard command slots action-1 … action-3 are declared and run the first actions after Explain', async () => {
  const { kl } = harness;
  const commands = await kl.worker.evaluate(() => chrome.commands.getAll());
  const names = commands.map((c) => c.name);
  for (const slot of ['explain-selection', 'action-1', 'action-2', 'action-3']) assert.ok(names.includes(slot), `${slot}: ${names}`);
  const runs = await kl.worker.evaluate(() => Promise.all(['action-1', 'action-2', 'action-3'].map((c) => globalThis.klCommandAction(c))));
  assert.deepEqual(runs, ['summarize', 'translate', 'define']);
});
