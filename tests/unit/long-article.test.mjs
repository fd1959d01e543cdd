// The long fixture article of the context tests is its generator's output, about 100 KB of
// headed, paragraphed text that carries every fact the tests ask about.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { FACTS, LONG_ARTICLE_PATH, longArticleHtml } from '../e2e/support/long-article.mjs';

test('the committed long article is the generator\'s output, ~100 KB, with every fact', () => {
  const committed = readFileSync(LONG_ARTICLE_PATH, 'utf8');
  assert.equal(committed, longArticleHtml(), 'rerun: node tests/e2e/support/long-article.mjs');
  const bytes = Buffer.byteLength(committed);
  assert.ok(bytes >= 90_000 && bytes <= 110_000, `${bytes} bytes`);
  assert.equal(committed.match(/<h2>/g).length, 15);
  assert.ok(committed.match(/<p>/g).length >= 100);
  for (const fact of FACTS) assert.equal(committed.split(fact).length, 2, `once: ${fact}`);
});
