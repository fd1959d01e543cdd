// The shipped build carries no test hooks: the entry points the end-to-end tests call in the
// worker (pkg-scripts/lib/test-hooks.js) are appended only to the test builds' background.js
// (target/e2e-extension/, --test, --bench), never to dist/ or its zip.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SHIPPED_DIR, distDir, launchExtension, requireBuiltExtension } from './support/browser.mjs';

// Every name test-hooks.js puts on globalThis (a hook added there is checked here without
// being listed twice).
const HOOKS_FILE = new URL('../../pkg-scripts/lib/test-hooks.js', import.meta.url);
const HOOKS = [...new Set([...readFileSync(HOOKS_FILE, 'utf8').matchAll(/^globalThis\.(\w+)\s*=/gm)].map((m) => m[1]))];

let kl;

before(async () => {
  kl = await launchExtension({ dist: requireBuiltExtension(SHIPPED_DIR), logName: 'shipped' });
});

after(async () => {
  await kl?.close();
});

test('the shipped worker has none of the test hooks; the build under test has them all', async () => {
  assert.ok(HOOKS.includes('klExplainFromTab') && HOOKS.length >= 9, `hooks read from test-hooks.js: ${HOOKS}`);
  const present = await kl.worker.evaluate((names) => names.filter((n) => n in globalThis), HOOKS);
  assert.deepEqual(present, [], 'the shipped worker exposes test hooks');
  const shipped = readFileSync(join(SHIPPED_DIR, 'background.js'), 'utf8');
  for (const name of HOOKS) assert.ok(!shipped.includes(name), `dist/background.js mentions ${name}`);
  const tested = readFileSync(join(distDir(), 'background.js'), 'utf8');
  for (const name of HOOKS) assert.ok(tested.includes(`globalThis.${name}`), `the e2e build lacks ${name}`);
});
