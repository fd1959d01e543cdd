// Research mode through the real extension, in one browser: the popup's Research checkbox
// and Subtopics, a research question on the fixture article answered by a scripted research
// model (support/research-model.mjs: it answers by what each request is) with web search on
// a scripted SearXNG, the report with its sections, synthesis and citations to relevant
// results only, the Steps view grouped by stage; and a worker force-stopped (over CDP) while a
// subtopic's model call is in flight, after which the report still completes and no finished
// stage is redone.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { seriousViolations } from './support/axe.mjs';
import {
  configureProvider, launchExtension, openOptions, openPopup, optionsStatus, screenshot, stopServiceWorker, tabIdOf,
  waitForSnapshot, waitForWorkerRunning, waitUntil, workerBootId,
} from './support/browser.mjs';
import { startScriptedOpenAI } from './support/openai-server.mjs';
import { readPopup, sourcesOf, waitForRunEnd } from './support/popup.mjs';
import { RESULTS, UNSUPPORTED, openingOf, queryOf, researchModel } from './support/research-model.mjs';
import { startScriptedSearxng } from './support/searxng-server.mjs';
import { serveDirectory } from './support/static-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
/** Generous: the machine is small and shared. */
const RUN_TIMEOUT_MS = 120_000;
/** The stage headings of a research run of the model's two subtopics. */
const STAGES = [
  'Planning the subtopics', 'Subtopic 1 of 2: The keepers', 'Subtopic 2 of 2: The salt', 'Writing the report',
  'Reviewing the report',
];

let kl;
let llm;
let searx;
let pages;
let model;

before(async () => {
  [llm, searx, pages] = await Promise.all([startScriptedOpenAI(), startScriptedSearxng(), serveDirectory(FIXTURES)]);
  searx.answer(queryOf(1), RESULTS[1]);
  searx.answer(queryOf(2), RESULTS[2]);
  model = researchModel();
  llm.respondWith(model.respond);
  kl = await launchExtension({ logName: 'research' });
  await configureProvider(kl.context, kl.extId, { baseUrl: llm.baseUrl });
  const options = await openOptions(kl.context, kl.extId);
  await options.getByRole('combobox', { name: 'Search provider', exact: true }).selectOption('searxng');
  await options.getByRole('textbox', { name: 'Search base URL', exact: true }).fill(searx.url);
  await options.getByRole('button', { name: 'Save' }).click();
  assert.equal(await optionsStatus(options), 'Saved.');
  await options.close();
});

after(async () => {
  await kl?.close();
  await Promise.all([llm?.close(), searx?.close(), pages?.close()]);
});

/** A new tab on the fixture article (a new session) and a popup for it. */
async function articlePopup() {
  const page = await kl.context.newPage();
  await page.goto(pages.url('article.html'));
  const tabId = await tabIdOf(kl.context, page);
  return { tabId, popup: await openPopup(kl.context, kl.extId, tabId) };
}

const controls = (popup) => ({
  research: popup.getByRole('checkbox', { name: 'Research', exact: true }),
  subtopics: popup.getByRole('spinbutton', { name: 'Subtopics', exact: true }),
  maxSteps: popup.getByRole('spinbutton', { name: 'Max steps', exact: true }),
  bound: popup.locator('#research-bound'),
});

/** Asks `question` in research mode with `subtopics`. */
async function askResearch(popup, question, subtopics) {
  const c = controls(popup);
  await popup.getByRole('textbox', { name: 'Question', exact: true }).fill(question);
  await c.research.check();
  await c.subtopics.fill(String(subtopics));
  await popup.getByRole('button', { name: 'Ask', exact: true }).click();
}

/** Opens the Steps region; returns it. */
async function openSteps(popup) {
  const toggle = popup.getByRole('button', { name: 'Steps', exact: true });
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
  return popup.getByRole('region', { name: 'Steps', exact: true });
}

const diagnostics = () => `model requests: ${model.log.join(', ')}\n${kl.recentLogs(30)}`;

test('Subtopics is enabled only with Research checked, Max steps is disabled with it, and the bound follows Subtopics', async () => {
  const { popup } = await articlePopup();
  const c = controls(popup);
  assert.equal(await c.research.isChecked(), false);
  assert.equal(await c.subtopics.isDisabled(), true);
  assert.equal(await c.maxSteps.isEnabled(), true);
  assert.equal(await c.bound.isVisible(), false);
  assert.equal(await c.subtopics.inputValue(), '4');
  assert.deepEqual(await c.subtopics.evaluate((input) => [input.min, input.max]), ['2', '6']);

  await c.research.check();
  assert.equal(await c.subtopics.isEnabled(), true);
  assert.equal(await c.maxSteps.isDisabled(), true);
  assert.equal((await c.bound.textContent()).trim(), 'Up to 15 rounds');
  // The bound is the spinbutton's accessible description.
  assert.equal(await c.subtopics.getAttribute('aria-describedby'), 'research-bound');
  const described = await popup.evaluate(() => {
    const input = document.getElementById('subtopics');
    return input.getAttribute('aria-describedby').split(' ').map((id) => document.getElementById(id)?.textContent.trim());
  });
  assert.deepEqual(described, ['Up to 15 rounds']);
  await c.subtopics.fill('2');
  assert.equal((await c.bound.textContent()).trim(), 'Up to 9 rounds');
  await c.subtopics.press('ArrowUp');
  assert.equal((await c.bound.textContent()).trim(), 'Up to 12 rounds');
  assert.deepEqual(await seriousViolations(popup), []);
  await screenshot(popup, 'research-controls.png');

  await c.research.uncheck();
  assert.equal(await c.subtopics.isDisabled(), true);
  assert.equal(await c.maxSteps.isEnabled(), true);
  assert.equal(await c.bound.isVisible(), false);
  await popup.close();
});

test('a research question gives a report with its sections, synthesis and relevant citations, and Steps grouped by stage', async () => {
  model.reset();
  const searchesBefore = searx.queries().length;
  const { tabId, popup } = await articlePopup();
  await askResearch(popup, 'Who kept Bellhaven Light, and what troubled the light?', 2);
  const done = await waitForRunEnd(popup, { timeout: RUN_TIMEOUT_MS, diagnostics });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${diagnostics()}`);

  // One planning call, two subtopics of three rounds each, the report and the review.
  assert.deepEqual(model.log.filter((k) => !['grade'].includes(k)), [
    'plan', 'subtopic 1/0', 'subtopic 1/1', 'subtopic 1/2', 'subtopic 2/0', 'subtopic 2/1', 'subtopic 2/2', 'report', 'review',
  ], diagnostics());
  assert.equal(model.count('grade'), 2, 'each search graded once');
  assert.deepEqual(searx.queries().slice(searchesBefore), [queryOf(1), queryOf(2)]);
  // The ask carried Subtopics: the planning call asks for at most 2.
  const plan = llm.chatRequests.find((r) => r.key === 'plan').body;
  assert.match(openingOf(plan), /Split the question into at most 2 subtopics/, openingOf(plan));
  // A subtopic is offered the search and page tools only.
  const subtopicRequest = llm.chatRequests.find((r) => r.key === 'subtopic 1/0').body;
  assert.deepEqual(subtopicRequest.tools.map((t) => t.function.name).sort(), ['query_page', 'read_page', 'search_web_for_info']);
  // The model is shown only the relevant result of each search.
  for (const n of [1, 2]) {
    const seen = llm.chatRequests.find((r) => r.key === `subtopic ${n}/1`).body.messages.find((m) => m.role === 'tool').content;
    assert.match(seen, new RegExp(`\\[${n}\\] ${RESULTS[n][1].title} — `), seen);
    assert.ok(!seen.includes('Hotel'), `a result graded not relevant reached the model: ${seen}`);
  }
  assert.equal(done.status, 'Completed in 9 steps.', 'the research bound for 2 subtopics, used in full');

  // The report: the sections as headings, the synthesis, the review's fix applied, and only
  // citations of relevant results (the made-up [7] is gone).
  const answer = popup.locator('#answer');
  assert.deepEqual(await answer.getByRole('heading').allTextContents(), ['The keepers', 'The salt', 'Synthesis']);
  assert.match(done.answerText, /Agnes Tull kept Bellhaven Light from 1902 to 1931 \[1\] \[p\d+\]/, done.answerText);
  assert.match(done.answerText, /Salt clouded the lantern glass within hours of a storm \[2\] \[p\d+\]/, done.answerText);
  assert.match(done.answerText, /The keepers fought the salt on the lantern glass \[1\] \[2\]\./, done.answerText);
  assert.ok(!done.answerText.includes('[7]'), `a made-up citation was kept: ${done.answerText}`);
  assert.ok(!done.answerText.includes(UNSUPPORTED.slice(0, 20)), `the review's fix was not applied: ${done.answerText}`);
  assert.ok(!/Hotel/.test(done.answerText), done.answerText);
  const sources = await sourcesOf(popup);
  const web = sources.filter((s) => /^\[\d+\]$/.test(s.id));
  assert.deepEqual(web, [
    { id: '[1]', title: RESULTS[1][1].title, href: RESULTS[1][1].url },
    { id: '[2]', title: RESULTS[2][1].title, href: RESULTS[2][1].url },
  ], JSON.stringify(sources));
  assert.ok(sources.some((s) => /^\[p\d+\]$/.test(s.id)), `no page passage among the sources: ${JSON.stringify(sources)}`);
  assert.ok(sources.every((s) => !s.title.includes('Hotel')), JSON.stringify(sources));
  await screenshot(popup, 'research-report.png');

  // The Steps view: one group per stage, each a list item headed by the stage.
  const region = await openSteps(popup);
  const headings = await region.getByRole('heading', { level: 3 }).allTextContents();
  assert.deepEqual(headings, STAGES);
  const stage = region.getByRole('listitem').filter({ has: popup.getByRole('heading', { name: STAGES[1], exact: true }) });
  assert.equal(await stage.count(), 1);
  assert.match(await stage.innerText(), /Tool call: search_web_for_info[\s\S]*Grades[\s\S]*Tool call: query_page/);
  await region.evaluate((node) => {
    node.scrollTop = 0;
  });
  await screenshot(popup, 'research-steps.png');
  await popup.close();

  // The side panel shows the same stages, the whole list at once.
  const panel = await kl.context.newPage();
  await panel.setViewportSize({ width: 420, height: 800 });
  await panel.goto(`chrome-extension://${kl.extId}/sidepanel.html?tab=${tabId}`);
  await waitForSnapshot(panel);
  const panelSteps = await openSteps(panel);
  assert.deepEqual(await panelSteps.getByRole('heading', { level: 3 }).allTextContents(), STAGES);
  assert.deepEqual(await seriousViolations(panel), []);
  await screenshot(panel, 'research-steps-sidepanel.png');
  await panel.emulateMedia({ colorScheme: 'dark' });
  assert.deepEqual(await seriousViolations(panel), []);
  await screenshot(panel, 'research-steps-sidepanel-dark.png');
  await panel.close();
});

test('a worker stopped while a subtopic is researched resumes there: the report completes, no finished stage redone', async () => {
  model.reset();
  const searchesBefore = searx.queries().length;
  // The second subtopic's page query call is held while the worker is stopped.
  const held = model.hold('subtopic 2/1');
  const { popup } = await articlePopup();
  await askResearch(popup, 'Who kept Bellhaven Light, and what troubled the light?', 2);
  await waitUntil(() => held.arrived, { timeout: RUN_TIMEOUT_MS, message: () => `the held call to arrive\n${diagnostics()}` });
  // The status line names the stage with what it does.
  let status = '';
  await waitUntil(async () => {
    ({ status } = await readPopup(popup));
    return status.startsWith('Subtopic 2 of 2: The salt — ');
  }, { message: () => `the status to name the stage: ${status}` });
  await screenshot(popup, 'research-running.png');

  const bootBefore = await workerBootId(kl.context);
  await stopServiceWorker(kl.context);
  const bootAfter = await waitForWorkerRunning(kl.context, { timeout: 60_000 });
  assert.notEqual(bootAfter, bootBefore, 'the service worker did not restart');
  held.release();

  const done = await waitForRunEnd(popup, { timeout: RUN_TIMEOUT_MS, diagnostics });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${diagnostics()}`);
  assert.match(done.answerText, /## |Synthesis/, done.answerText);
  assert.deepEqual(await popup.locator('#answer').getByRole('heading').allTextContents(), ['The keepers', 'The salt', 'Synthesis']);

  // Only the call cut by the stop was made again: one planning call, each subtopic's
  // findings once, one report and one review; each search once.
  assert.deepEqual(model.log.filter((k) => k !== 'grade'), [
    'plan', 'subtopic 1/0', 'subtopic 1/1', 'subtopic 1/2', 'subtopic 2/0', 'subtopic 2/1', 'subtopic 2/1', 'subtopic 2/2',
    'report', 'review',
  ], diagnostics());
  assert.equal(model.count('plan'), 1);
  assert.equal(model.count('subtopic 1/2'), 1);
  assert.equal(model.count('subtopic 2/2'), 1);
  assert.deepEqual(searx.queries().slice(searchesBefore), [queryOf(1), queryOf(2)]);
  const region = await openSteps(popup);
  assert.deepEqual(await region.getByRole('heading', { level: 3 }).allTextContents(), STAGES);
  await popup.close();
});
