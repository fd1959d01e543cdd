import { launchExtension } from '../tests/e2e/support/browser.mjs';
const kl = await launchExtension({ logName: 'look2' });
try {
  const page = await kl.context.newPage();
  await page.goto(`chrome-extension://${kl.extId}/options.html`);
  await page.waitForTimeout(1000);
  await page.getByRole('combobox', { name: 'Provider' }).selectOption('chrome_builtin');
  await page.getByRole('button', { name: 'Test connection' }).click();
  await page.waitForTimeout(3000);
  console.log('status:', await page.getByRole('status').textContent());
  console.log(await page.locator('#check').evaluate(n => [n.hidden, n.dataset.result, n.textContent.slice(0,300)]));
  console.log(kl.recentLogs());
} finally { await kl.close(); }
