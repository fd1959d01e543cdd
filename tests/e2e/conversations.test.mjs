// Conversations through the real extension, driven over the extension's Port: "New
// conversation" archives the current one (conv:<session>:<n> in chrome.storage.session) and
// starts the session afresh; history lists every tab's archives newest first; an archive
// reopens read-only, survives its tab closing, and clear_history deletes them all.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configureProvider, launchExtension, tabIdOf, waitUntil } from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { openWorkerPort } from './support/port.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

let kl;
let llm;
let pages;
let worker;

before(async () => {
  llm = await startScriptedOpenAI();
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ logName: 'conversations' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
  worker = await openWorkerPort(kl.context);
});

after(async () => {
  await worker?.close().catch(() => {});
  await kl?.close();
  await llm?.close();
  await pages?.close();
});

async function fixtureTab() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  return { page, tabId: await tabIdOf(kl.context, page) };
}

/** Asks `question` in `session` and waits for the run's `completed` event. */
async function askAndWait(session, tabId, question, answer) {
  llm.script({ content: answer });
  const from = (await worker.events(session)).length;
  const asked = await worker.request({ type: 'ask', session, question, tab_id: tabId });
  assert.equal(asked.ok, true, JSON.stringify(asked));
  const end = await worker.waitForEvent(session, ['completed', 'failed', 'stopped', 'timed_out'], { from });
  assert.equal(end.type, 'completed', `${JSON.stringify(end)}\n${kl.recentLogs()}`);
}

async function storedKeys(prefix) {
  return kl.worker.evaluate(async (p) => {
    const all = await chrome.storage.session.get(null);
    return Object.keys(all).filter((k) => k.startsWith(p)).sort();
  }, prefix);
}

test('new conversation archives, history lists and reopens, closing the tab keeps it, clear deletes', async () => {
  const a = await fixtureTab();
  const b = await fixtureTab();
  const sa = `tab:${a.tabId}`;
  const sb = `tab:${b.tabId}`;

  await askAndWait(sa, a.tabId, 'Who lit the lighthouse?', 'The keeper did.');
  await askAndWait(sa, a.tabId, 'And when?', 'In 1861.');
  const before = await worker.request({ type: 'snapshot', session: sa });
  const fresh = await worker.request({ type: 'new_conversation', session: sa });
  assert.equal(fresh.ok, true, JSON.stringify(fresh));
  assert.equal(fresh.data.status, 'idle');
  assert.equal(fresh.data.question, '');
  assert.deepEqual(fresh.data.turns, []);
  assert.equal(fresh.data.archived, false);
  assert.ok(fresh.data.rev > before.data.rev, 'the fresh view is newer than what a popup shows');
  assert.deepEqual(await storedKeys('conv:'), [`conv:${sa}:1`]);

  await askAndWait(sb, b.tabId, 'What is the article about?', 'A lighthouse.');
  const archivedB = await worker.request({ type: 'new_conversation', session: sb });
  assert.equal(archivedB.ok, true, JSON.stringify(archivedB));

  const history = await worker.request({ type: 'history' });
  assert.equal(history.ok, true, JSON.stringify(history));
  const listed = history.data.conversations;
  assert.deepEqual(listed.map((c) => c.id), [`conv:${sb}:1`, `conv:${sa}:1`], 'newest first');
  assert.deepEqual(listed.map((c) => c.title), ['What is the article about?', 'Who lit the lighthouse?']);
  assert.deepEqual(listed.map((c) => c.turns), [1, 2]);
  assert.equal(listed[1].session, sa);

  const opened = await worker.request({ type: 'open_conversation', conversation: `conv:${sa}:1` });
  assert.equal(opened.ok, true, JSON.stringify(opened));
  assert.equal(opened.data.archived, true);
  assert.equal(opened.data.status, 'completed');
  assert.equal(opened.data.question, 'And when?');
  assert.equal(opened.data.answer, 'In 1861.');
  assert.equal(opened.data.turns[0].question, 'Who lit the lighthouse?');
  assert.ok(opened.data.steps.length > 0, 'the last run\'s steps are kept');

  // The tab closes: its session goes, its archive stays.
  await a.page.close();
  await waitUntil(async () => !(await storedKeys(`session:${sa}`)).length, {
    message: 'the closed tab\'s session to be deleted',
  });
  const afterClose = await worker.request({ type: 'history' });
  assert.equal(afterClose.data.conversations.length, 2);
  assert.equal(
    (await worker.request({ type: 'open_conversation', conversation: `conv:${sa}:1` })).data.answer,
    'In 1861.',
  );

  const cleared = await worker.request({ type: 'clear_history' });
  assert.deepEqual(cleared.data, { cleared: 2 });
  assert.deepEqual((await worker.request({ type: 'history' })).data.conversations, []);
  assert.deepEqual(await storedKeys('conv:'), []);
  const gone = await worker.request({ type: 'open_conversation', conversation: `conv:${sa}:1` });
  assert.equal(gone.ok, false);
  assert.equal(gone.error.kind, 'not_found');
  await b.page.close();
});

test('bad ids and busy sessions get clear errors and change nothing', async () => {
  const bad = await worker.request({ type: 'open_conversation', conversation: 'tab:3' });
  assert.equal(bad.error?.kind, 'bad_request');
  assert.match(bad.error.message, /not a conversation id/);
  const missing = await worker.request({ type: 'open_conversation' });
  assert.match(missing.error?.message ?? '', /needs a "conversation"/);

  // A run that is still going: new_conversation is refused, the run carries on.
  const { page, tabId } = await fixtureTab();
  const session = `tab:${tabId}`;
  let release;
  const held = new Promise((done) => { release = done; });
  llm.respondWith(async () => {
    await held;
    return { content: 'Finally.' };
  });
  const from = (await worker.events(session)).length;
  const asked = await worker.request({ type: 'ask', session, question: 'Slow one?', tab_id: tabId });
  assert.equal(asked.ok, true, JSON.stringify(asked));
  const busy = await worker.request({ type: 'new_conversation', session });
  assert.equal(busy.error?.kind, 'busy', JSON.stringify(busy));
  assert.match(busy.error.message, /Stop/);
  release();
  const end = await worker.waitForEvent(session, ['completed', 'failed'], { from });
  llm.respondWith(null);
  assert.equal(end.type, 'completed');
  assert.deepEqual(await storedKeys('conv:'), []);
  await page.close();
});

test('a conversation belongs to one page: another origin starts afresh, the earlier one is in History', async () => {
  const { page, tabId } = await fixtureTab();
  const session = `tab:${tabId}`;
  // The answer on page A carries words of A's text only (so the grounding check keeps it).
  const marker = 'Agnes Tull';
  await askAndWait(session, tabId, 'Who lit the lighthouse?', `Keeper ${marker} did, with colza oil.`);
  assert.match((await worker.request({ type: 'snapshot', session })).data.answer, new RegExp(marker));
  // The same tab goes to another page on another origin (the fixture server under another
  // host name).
  const elsewhere = pages.url('long-article.html').replace('//127.0.0.1:', '//localhost:');
  assert.notEqual(new URL(elsewhere).origin, new URL(pages.url('article.html')).origin);
  await page.goto(elsewhere);
  const from = llm.chatRequests.length;
  await askAndWait(session, tabId, 'What is this page about?', 'A demonstration.');
  const sent = llm.chatRequests.slice(from);
  assert.ok(sent.length > 0);
  for (const request of sent) {
    const body = JSON.stringify(request.body);
    assert.ok(!body.includes(marker), 'the answer given on the other page reaches no request here');
    assert.ok(!body.includes('Who lit the lighthouse?'), 'nor the question asked there');
  }
  const view = await worker.request({ type: 'snapshot', session });
  assert.deepEqual(view.data.turns, []);
  assert.equal(view.data.page.url, elsewhere);
  assert.ok(view.data.notices.some((n) => /^Earlier conversation about .+ is in History\.$/.test(n)), JSON.stringify(view.data.notices));
  const history = await worker.request({ type: 'history' });
  const listed = history.data.conversations.filter((c) => c.session === session);
  assert.deepEqual(listed.map((c) => c.title), ['Who lit the lighthouse?']);
  const archived = await worker.request({ type: 'open_conversation', conversation: listed[0].id });
  assert.match(archived.data.answer, new RegExp(marker));
  await worker.request({ type: 'clear_history' });
  await page.close();
});

test('a page with a 7 MB title is answered; no record holds more than the title cap; History and another tab are intact', async () => {
  const other = await fixtureTab();
  const otherSession = `tab:${other.tabId}`;
  await askAndWait(otherSession, other.tabId, 'Who lit the lighthouse?', 'Keeper Agnes Tull did, with colza oil.');
  const archived = await worker.request({ type: 'new_conversation', session: otherSession });
  assert.equal(archived.ok, true, JSON.stringify(archived));
  await askAndWait(otherSession, other.tabId, 'What does the article say about the lamp?', 'It burned colza oil.');

  const page = await kl.context.newPage();
  await page.goto(pages.url('long-title.html'));
  assert.equal(await page.evaluate(() => document.title.length), 7_000_000);
  const tabId = await tabIdOf(kl.context, page);
  const session = `tab:${tabId}`;
  await askAndWait(session, tabId, 'How far apart are the high waters?', 'About twelve hours and twenty-five minutes.');
  const view = await worker.request({ type: 'snapshot', session });
  assert.equal(view.data.status, 'completed');
  assert.ok(view.data.page.title.length <= 300, `title of ${view.data.page.title.length} characters`);
  assert.ok(view.data.page.url.length <= 2000, `URL of ${view.data.page.url.length} characters`);
  // No saved record holds more of the title than its cap (300 characters), nor the request.
  const longest = await kl.worker.evaluate(async () => {
    const all = await chrome.storage.session.get(null);
    const run = /(?:Tidal)+/g;
    let most = 0;
    for (const value of Object.values(all)) {
      for (const m of JSON.stringify(value).matchAll(run)) most = Math.max(most, m[0].length);
    }
    return most;
  });
  assert.ok(longest > 0 && longest <= 300, `a record holds ${longest} characters of the title`);
  const sent = JSON.stringify(llm.chatRequests.at(-1).body);
  assert.ok(!sent.includes('Tidal'.repeat(61)), 'the request carries more than the title cap');
  // The other tab's session and History are as they were.
  const kept = await worker.request({ type: 'snapshot', session: otherSession });
  assert.equal(kept.data.answer, 'It burned colza oil.');
  const history = await worker.request({ type: 'history' });
  assert.deepEqual(history.data.conversations.filter((c) => c.session === otherSession).map((c) => c.title), ['Who lit the lighthouse?']);
  await worker.request({ type: 'clear_history' });
  await page.close();
  await other.page.close();
});
