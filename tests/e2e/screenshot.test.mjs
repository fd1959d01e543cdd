// extract_screenshot_text through the real extension, in one browser: a page whose only text
// is drawn on a canvas is shown in a window of its own (its tab in front), the question is
// asked from a popup in another window, the scripted model calls extract_screenshot_text,
// and a scripted vision server (support/vision-openai-server.mjs) receives the screenshot as
// an OpenAI `image_url` part holding a PNG no larger than 1,568 px on its long side; the
// answer uses the text it "read". A tab that is not in front is refused as "the page is not
// visible", and a tab that went to another page meanwhile as "the tab now shows another page"; a model known to take text only, and a server refusing the image, end with the
// popup saying "this model cannot read images". The screenshot is never stored.
//
// No toolbar click can grant activeTab here, so this file runs on the test-only build
// (`pkg-scripts/build.sh --test target/test-extension`, whose manifest adds "<all_urls>";
// KL_TEST_DIST points elsewhere). It throws, never skips, when that build is missing.

import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import {
  OUTPUT_DIR, REPO_ROOT, configureProvider, inExtensionPage, launchExtension, screenshot, waitForSnapshot, waitUntil,
} from './support/browser.mjs';
import { askQuestion, waitForRunEnd } from './support/popup.mjs';
import { serveDirectory } from './support/static-server.mjs';
import { MAX_SIDE, imageParts, isTranscription, startScriptedVision } from './support/vision-openai-server.mjs';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const TEST_DIST = process.env.KL_TEST_DIST ?? join(REPO_ROOT, 'target', 'test-extension');
const TRANSCRIPT = 'FERRY TO ISLAY\nDeparts 07:40 from pier 3';
const ANSWER = 'The ferry to Islay departs at 07:40 from pier 3.';
const NO_IMAGES = 'this model cannot read images';

let kl;
let vision;
let pages;

/** What a chat request is: 'transcribe', 'observe', 'reflection', 'reason' or 'synthesis'. */
function kindOf(body) {
  if (isTranscription(body)) return 'transcribe';
  const schema = body?.response_format?.json_schema?.name;
  if (schema === 'control') return 'observe';
  if (schema === 'reflection') return 'reflection';
  return body?.tools?.length ? 'reason' : 'synthesis';
}

const toolMessages = (body) => (body?.messages ?? []).filter((m) => m.role === 'tool');

/**
 * The model: the first Reason call asks for the screenshot, and every later call answers
 * with `answer` (in the Observe call's control block, or as text).
 */
function respond(answer) {
  return (body) => {
    switch (kindOf(body)) {
      case 'reason':
        if (toolMessages(body).length === 0) {
          return {
            content: 'The page has no readable text; I will read a screenshot.',
            tool_calls: [{ name: 'extract_screenshot_text', arguments: { reasoning: 'the text is drawn on a canvas' } }],
          };
        }
        return { content: answer };
      case 'observe':
        return { content: JSON.stringify({ should_continue: false, final_answer: answer }), json: true };
      case 'reflection':
        return {
          content: JSON.stringify({ error_type: 'not_visible', analysis: 'The page was not in front.', suggested_fix: 'Answer without it.' }),
          json: true,
        };
      default:
        return { content: answer };
    }
  };
}

before(async () => {
  vision = await startScriptedVision({ transcript: TRANSCRIPT, respond: (body) => current(body) });
  pages = await serveDirectory(FIXTURES);
  kl = await launchExtension({ dist: TEST_DIST, logName: 'screenshot' });
  await configureProvider(kl.context, kl.extId, { baseUrl: vision.baseUrl });
});

after(async () => {
  await kl?.close();
  await vision?.close();
  await pages?.close();
});

let current = respond(ANSWER);

/** Opens `url` in a new normal window of its own: {windowId, tabId, page}. */
async function openInOwnWindow(url, { width = 1000, height = 700 } = {}) {
  const { windowId, tabId } = await inExtensionPage(kl.context, async (args) => {
    const win = await chrome.windows.create({ url: args.url, focused: true, width: args.width, height: args.height });
    return { windowId: win.id, tabId: win.tabs[0].id };
  }, { url, width, height });
  const page = await waitUntil(() => kl.context.pages().find((p) => p.url() === url), {
    message: `the page ${url} to open`,
  });
  await page.waitForLoadState('load');
  return { windowId, tabId, page };
}

/** The canvas page in front of its own window, and a popup about it in another window. */
async function canvasAndPopup({ width, height } = {}) {
  const fixture = await openInOwnWindow(pages.url('canvas.html'), { width, height });
  const popupUrl = `chrome-extension://${kl.extId}/popup.html?tab=${fixture.tabId}`;
  const { page: popup } = await openInOwnWindow(popupUrl, { width: 420, height: 760 });
  await waitForSnapshot(popup);
  const tab = await inExtensionPage(kl.context, (id) => chrome.tabs.get(id), fixture.tabId);
  assert.equal(tab.active, true, 'the fixture tab is in front of its window');
  return { fixture, popup, tab };
}

async function askAbout(popup, question, from) {
  await askQuestion(popup, question);
  const done = await waitForRunEnd(popup, { diagnostics: () => `${vision.timeline(from)}\n${kl.recentLogs()}` });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${vision.timeline(from)}\n${kl.recentLogs()}`);
  return done;
}

/** Everything in chrome.storage.session, as one string. */
const sessionStorageText = () =>
  inExtensionPage(kl.context, async () => JSON.stringify(await chrome.storage.session.get(null)));

test('a canvas page: the vision model receives a PNG screenshot of at most 1568 px and the answer uses its text', async (t) => {
  current = respond(ANSWER);
  const { popup, fixture } = await canvasAndPopup();
  // Wider than 1,568 px, so the screenshot is scaled down in the worker.
  await fixture.page.setViewportSize({ width: 2000, height: 1000 });
  const shown = await fixture.page.evaluate(() => ({
    width: Math.round(innerWidth * devicePixelRatio),
    height: Math.round(innerHeight * devicePixelRatio),
  }));
  const from = vision.chatRequests.length;
  const imagesBefore = vision.images.length;

  const done = await askAbout(popup, 'When does the ferry leave?', from);

  const requests = vision.chatRequests.slice(from).map((r) => r.body);
  const reason = requests.find((b) => kindOf(b) === 'reason');
  assert.ok(reason.tools.some((t) => t.function?.name === 'extract_screenshot_text'), 'the tool was not offered');
  assert.equal(requests.filter(isTranscription).length, 1, vision.timeline(from));
  assert.deepEqual(vision.problems, []);
  const images = vision.images.slice(imagesBefore);
  assert.equal(images.length, 1);
  const [image] = images;
  t.diagnostic(`page ${shown.width}x${shown.height} px; screenshot ${image.width}x${image.height} px, ${image.bytes} bytes`);
  assert.ok(shown.width > MAX_SIDE, `the page is only ${shown.width} px wide: nothing to scale`);
  assert.equal(image.width, MAX_SIDE, `a ${shown.width} px wide page was not scaled to ${MAX_SIDE}`);
  assert.ok(Math.abs(image.height - (shown.height * MAX_SIDE) / shown.width) <= 1, `${image.width}x${image.height}`);
  assert.ok(image.bytes > 1000, `a ${image.bytes}-byte PNG is too small to show the page`);
  // What the model was shown, for a look: test-output/screenshot-received.png.
  await mkdir(OUTPUT_DIR, { recursive: true });
  await writeFile(join(OUTPUT_DIR, 'screenshot-received.png'), Buffer.from(image.url.split(',')[1], 'base64'));
  // Only the transcription carries an image; the text comes back fenced as page data.
  for (const body of requests.filter((b) => !isTranscription(b))) assert.deepEqual(imageParts(body), []);
  const observe = requests.find((b) => kindOf(b) === 'observe');
  const result = toolMessages(observe).map((m) => m.content).join('\n');
  assert.match(result, /<page-[0-9a-f]{16}>/, result);
  assert.ok(result.includes('FERRY TO ISLAY') && result.includes('Departs 07:40 from pier 3'), result);

  assert.equal(done.answerText, ANSWER);
  assert.deepEqual(done.notices, []);
  const stored = await sessionStorageText();
  assert.ok(stored.includes('FERRY TO ISLAY'), 'the extracted text is kept');
  assert.ok(!stored.includes('iVBORw0KGgo') && !stored.includes('data:image'), 'a screenshot was stored');
  await screenshot(popup, 'screenshot-answer.png');
  await popup.close();
});

test('a tab that is not in front of its window is refused: "the page is not visible"', async () => {
  current = respond('I could not see the page.');
  const { popup, fixture } = await canvasAndPopup();
  // Another tab comes to the front of the fixture's window.
  await inExtensionPage(kl.context, (windowId) => chrome.tabs.create({ windowId, url: 'about:blank', active: true }), fixture.windowId);
  const from = vision.chatRequests.length;
  const imagesBefore = vision.images.length;

  await askAbout(popup, 'When does the ferry leave?', from);

  const requests = vision.chatRequests.slice(from).map((r) => r.body);
  assert.equal(requests.filter(isTranscription).length, 0, vision.timeline(from));
  assert.equal(vision.images.length, imagesBefore);
  // The error result reaches the model (after a reflection on it, in the next Reason call).
  const results = requests.flatMap((b) => toolMessages(b).map((m) => m.content));
  assert.ok(results.some((r) => /Error: the page is not visible/.test(r)), `${results.join('\n')}\n${vision.timeline(from)}`);
  assert.ok(requests.some((b) => kindOf(b) === 'reflection'), vision.timeline(from));
  await popup.close();
});

test('a tab that went to another page meanwhile is not captured: "the tab now shows another page"', async () => {
  const { popup, fixture } = await canvasAndPopup();
  const elsewhere = pages.url('article.html');
  const plain = respond('I could not see the page.');
  // The model asks for the screenshot only once the tab shows another page of the same site.
  current = async (body) => {
    if (kindOf(body) === 'reason' && toolMessages(body).length === 0) {
      // By tab id: earlier tests left other tabs on canvas.html open.
      await inExtensionPage(kl.context, (args) => chrome.tabs.update(args.tabId, { url: args.url }), { tabId: fixture.tabId, url: elsewhere });
      await waitUntil(async () => {
        const tab = await inExtensionPage(kl.context, (id) => chrome.tabs.get(id), fixture.tabId);
        return tab.url === elsewhere && tab.status === 'complete';
      }, { message: 'the tab to show the other page' });
    }
    return plain(body);
  };
  const from = vision.chatRequests.length;
  const imagesBefore = vision.images.length;

  await askAbout(popup, 'When does the ferry leave?', from);

  const requests = vision.chatRequests.slice(from).map((r) => r.body);
  assert.equal(requests.filter(isTranscription).length, 0, vision.timeline(from));
  assert.equal(vision.images.length, imagesBefore, 'a screenshot of the other page was sent');
  const results = requests.flatMap((b) => toolMessages(b).map((m) => m.content));
  assert.ok(results.some((r) => /Error: the tab now shows another page/.test(r)), `${results.join('\n')}\n${vision.timeline(from)}`);
  const tab = await inExtensionPage(kl.context, (id) => chrome.tabs.get(id), fixture.tabId);
  assert.equal(tab.url, elsewhere, 'the tab was not on the other page');
  assert.equal(tab.active, true, 'the tab was not in front (the refusal would be another one)');
  await popup.close();
});

test('a model known to take text only: no screenshot, and the popup says "this model cannot read images"', async () => {
  current = respond('I cannot read this page.');
  await configureProvider(kl.context, kl.extId, { baseUrl: vision.baseUrl, model: 'llama3.2' });
  try {
    const { popup } = await canvasAndPopup();
    const from = vision.chatRequests.length;
    const imagesBefore = vision.images.length;

    const done = await askAbout(popup, 'When does the ferry leave?', from);

    const requests = vision.chatRequests.slice(from).map((r) => r.body);
    assert.equal(requests.filter(isTranscription).length, 0, vision.timeline(from));
    assert.equal(vision.images.length, imagesBefore);
    const observe = requests.find((b) => kindOf(b) === 'observe');
    assert.match(toolMessages(observe).map((m) => m.content).join('\n'), /this model cannot read images/);
    assert.ok(done.notices.some((n) => n.includes(NO_IMAGES)), JSON.stringify(done.notices));
    assert.ok((await popup.locator('#notices').innerText()).includes(NO_IMAGES));
    await screenshot(popup, 'screenshot-no-images.png');
    await popup.close();
  } finally {
    await configureProvider(kl.context, kl.extId, { baseUrl: vision.baseUrl });
  }
});

test('a server refusing the image (llama.cpp without a projector): the same clear notice, no guess', async () => {
  current = respond('I cannot read this page.');
  vision.refuseImages = true;
  try {
    const { popup } = await canvasAndPopup();
    const from = vision.chatRequests.length;

    const done = await askAbout(popup, 'When does the ferry leave?', from);

    const requests = vision.chatRequests.slice(from);
    const transcriptions = requests.filter((r) => isTranscription(r.body));
    assert.equal(transcriptions.length, 1, 'a 400 is not retried');
    assert.equal(transcriptions[0].served, 'status 400');
    assert.ok(done.notices.some((n) => n.includes(NO_IMAGES)), JSON.stringify(done.notices));
    assert.equal(done.answerText, 'I cannot read this page.');
    await popup.close();
  } finally {
    vision.refuseImages = false;
  }
});
