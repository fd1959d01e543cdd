import { launchExtension, openPopup } from '/work/main/tests/e2e/support/browser.mjs';
const kl = await launchExtension({ logName: 'look' });
try {
  const popup = await openPopup(kl.context, kl.extId, null);
  await popup.screenshot({ path: '/work/main/test-output/look-popup-setup.png', fullPage: true });
  const page = await kl.context.newPage();
  await page.setViewportSize({ width: 900, height: 1100 });
  await page.goto(`chrome-extension://${kl.extId}/options.html?provider=ollama`);
  await page.waitForTimeout(1500);
  await page.getByRole('combobox', { name: 'Model' }).fill('llama3');
  await page.getByRole('button', { name: 'Test connection' }).click();
  await page.waitForTimeout(2500);
  await page.screenshot({ path: '/work/main/test-output/look-options.png', fullPage: true });
  console.log(await page.getByRole('status').textContent());
} finally { await kl.close(); }
