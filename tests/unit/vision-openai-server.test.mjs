// The scripted vision server's own checks (tests/e2e/support/vision-openai-server.mjs): the
// PNG header reader and the image-part checks the screenshot e2e test relies on.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkImage, imageParts, isTranscription, pngSize } from '../e2e/support/vision-openai-server.mjs';

function png(width, height) {
  const bytes = Buffer.alloc(33);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).copy(bytes, 0);
  bytes.write('IHDR', 12, 'latin1');
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  return bytes;
}

const request = (url) => ({
  messages: [
    { role: 'system', content: 'You read text from screenshots for KnowledgeLens.' },
    { role: 'user', content: [{ type: 'text', text: 'Transcribe.' }, { type: 'image_url', image_url: { url } }] },
  ],
});

test('pngSize reads the IHDR size and refuses anything else', () => {
  assert.deepEqual(pngSize(png(1568, 980)), { width: 1568, height: 980 });
  assert.equal(pngSize(Buffer.from('GIF89a....................')), null);
  assert.equal(pngSize(png(1, 1).subarray(0, 20)), null);
});

test('a PNG within the limit passes; too large, not PNG or misplaced images are problems', () => {
  const ok = request(`data:image/png;base64,${png(1568, 800).toString('base64')}`);
  assert.ok(isTranscription(ok));
  const [image, problems] = checkImage(ok);
  assert.deepEqual(problems, []);
  assert.equal(image.width, 1568);
  assert.equal(imageParts(ok).length, 1);

  assert.match(checkImage(request(`data:image/png;base64,${png(1600, 900).toString('base64')}`))[1].join(), /over 1568/);
  assert.match(checkImage(request('data:image/jpeg;base64,/9j/4AAQ'))[1].join(), /not a PNG data URL/);
  const misplaced = request(`data:image/png;base64,${png(10, 10).toString('base64')}`);
  misplaced.messages.push({ role: 'assistant', content: 'ok' });
  assert.match(checkImage(misplaced)[1].join(), /last user message/);
  assert.ok(!isTranscription({ messages: [{ role: 'system', content: 'You are KnowledgeLens.' }] }));
});
