// Accessibility of the popup, the side panel and the options page, in the light and the dark
// theme: an axe-core scan (no serious or critical violations) of each, with the Steps region
// open and an answer shown, and a screenshot of each view in each theme under test-output/.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { seriousViolations } from './support/axe.mjs';
import { openPopup, screenshot, waitForSnapshot, waitUntil } from './support/browser.mjs';
import { startHarness } from './support/harness.mjs';
import { askQuestion, checkAccessibleNames, waitForRunEnd } from './support/popup.mjs';

const THEMES = ['light', 'dark'];

let harness;
/** The tab the popup and the side panel ask about, with one finished run. */
let tabId;

before(async () => {
  harness = await startHarness('a11y');
  const { llm, kl } = harness;
  llm.script(
    { content: 'I will read the page first.', tool_calls: [{ name: 'read_page', arguments: { offset: 0, max_chars: 600 } }] },
    {
      content: JSON.stringify({
        should_continue: false,
        final_answer: 'Bellhaven Light was **first lit in 1861**.\n\n- Agnes Tull kept it\n- She blamed the salt\n\nSee [the history](https://example.com/bellhaven).',
      }),
      json: true,
    },
  );
  ({ tabId } = await harness.fixtureTab());
  const popup = await openPopup(kl.context, kl.extId, tabId);
  await askQuestion(popup, 'Who kept Bellhaven Light, and what did she blame?');
  const done = await waitForRunEnd(popup, { diagnostics: () => kl.recentLogs() });
  assert.equal(done.state, 'completed', `${JSON.stringify(done)}\n${kl.recentLogs()}`);
  await popup.close();
});

after(async () => {
  await harness?.close();
});

async function openSteps(page) {
  const toggle = page.getByRole('button', { name: 'Steps', exact: true });
  await toggle.waitFor();
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
}

async function openView(view) {
  const { kl } = harness;
  if (view === 'options') {
    const page = await kl.context.newPage();
    await page.goto(`chrome-extension://${kl.extId}/options.html`);
    await page.getByRole('textbox', { name: 'Base URL', exact: true }).waitFor();
    await waitUntil(async () => (await page.locator('#status').textContent()) !== 'Loading…', {
      message: 'the options page to load the settings',
    });
    return page;
  }
  if (view === 'popup') return openPopup(kl.context, kl.extId, tabId);
  const page = await kl.context.newPage();
  await page.setViewportSize({ width: 420, height: 800 });
  await page.goto(`chrome-extension://${kl.extId}/sidepanel.html?tab=${tabId}`);
  await waitForSnapshot(page);
  return page;
}

for (const view of ['popup', 'sidepanel', 'options']) {
  test(`${view}: no serious or critical axe violations in the light and dark themes`, async () => {
    const page = await openView(view);
    try {
      if (view !== 'options') {
        await openSteps(page);
        await checkAccessibleNames(page, { present: [['button', 'Steps'], ['region', 'Steps'], ['button', 'Copy answer']] });
      }
      for (const colorScheme of THEMES) {
        await page.emulateMedia({ colorScheme });
        const found = await seriousViolations(page);
        await screenshot(page, `a11y-${view}-${colorScheme}.png`);
        assert.deepEqual(found, [], `${view} (${colorScheme}):\n${found.join('\n')}`);
      }
    } finally {
      await page.close();
    }
  });
}

test('popup: every control is reachable with Tab and shows a visible focus ring', async () => {
  const page = await openView('popup');
  try {
    const seen = [];
    for (let i = 0; i < 30; i += 1) {
      await page.keyboard.press('Tab');
      const focused = await page.evaluate(() => {
        const node = document.activeElement;
        if (!node || node === document.body) return null;
        const style = getComputedStyle(node);
        return {
          name: node.getAttribute('aria-label') || node.textContent.trim().slice(0, 40) || node.id,
          outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0,
        };
      });
      if (!focused) continue;
      assert.ok(focused.outline, `no visible focus on "${focused.name}"`);
      seen.push(focused.name);
    }
    for (const name of ['Open side panel', 'Options', 'Ask', 'Steps', 'Copy answer', 'Export trajectory']) {
      assert.ok(seen.includes(name), `Tab never reached "${name}": ${seen.join(' | ')}`);
    }
  } finally {
    await page.close();
  }
});
