// The offscreen document's PDF cache (extension/pdf-cache.js): one read per document, shared
// while it goes on, failures forgotten, at most MAX_CACHED_PDFS documents.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_CACHED_PDFS, PdfCache } from '../../extension/pdf-cache.js';

const failed = (r) => Boolean(r.error);

test('a document is read once: a second asker waits for the read in flight, a third gets it kept', async () => {
  const cache = new PdfCache(failed);
  const first = cache.open('doc-1');
  assert.ok('settle' in first);
  const second = cache.open('doc-1');
  assert.ok('known' in second, 'joins the read in flight');
  first.settle({ text: 'page text' });
  assert.deepEqual(await second.known, { text: 'page text' });
  const third = cache.open('doc-1');
  assert.ok('known' in third);
  assert.deepEqual(await third.known, { text: 'page text' });
  first.settle({ text: 'again' });
  assert.deepEqual(await cache.open('doc-1').known, { text: 'page text' }, 'settled once');
});

test('a failure answers those waiting but is not kept', async () => {
  const cache = new PdfCache(failed);
  const first = cache.open('doc-1');
  const waiting = cache.open('doc-1');
  first.settle({ error: { kind: 'http', status: 401 } });
  assert.deepEqual(await waiting.known, { error: { kind: 'http', status: 401 } });
  assert.ok('settle' in cache.open('doc-1'), 'read again next time');
});

test('documents are kept apart, and the least recently used goes first', async () => {
  const cache = new PdfCache(failed);
  for (let n = 0; n < MAX_CACHED_PDFS; n += 1) cache.open(`doc-${n}`).settle({ text: `text ${n}` });
  assert.deepEqual(await cache.open('doc-0').known, { text: 'text 0' });
  cache.open('doc-new').settle({ text: 'new' });
  assert.equal(cache.entries.size, MAX_CACHED_PDFS);
  assert.ok('settle' in cache.open('doc-1'), 'the oldest unused one went');
  assert.deepEqual(await cache.open('doc-0').known, { text: 'text 0' });
});
