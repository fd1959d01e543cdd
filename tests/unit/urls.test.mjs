// The options page's address checks (extension/ui/urls.js). The loopback and clear-text key
// cases are those of the backend's own (src/url.rs), so the page never asks for a host
// permission or lists models where the backend would refuse to send the key: the table of
// tricky addresses is the one tests/native/keys.rs and tests/wasm_bindings/urls.rs read.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { isLoopback, isLoopbackHost, keyInClear, searchUrlProblem, urlProblem } from '../../extension/ui/urls.js';

test('loopback hosts are this computer, and only those', () => {
  for (const host of ['localhost', 'ollama.localhost', '127.0.0.1', '127.1.2.3', '[::1]']) {
    assert.equal(isLoopbackHost(host), true, host);
  }
  for (const host of ['10.0.0.2', '192.168.1.5', 'example.com', 'localhost.example.com', '127.0.0.1.nip.io', '[::2]', '128.0.0.1', '']) {
    assert.equal(isLoopbackHost(host), false, host);
  }
  // As a URL parses them (lower-cased, IPv6 shortened).
  assert.equal(isLoopbackHost(new URL('http://LOCALHOST:1/').hostname), true);
  assert.equal(isLoopbackHost(new URL('http://[0:0:0:0:0:0:0:1]:8080/').hostname), true);
});

test('a key is in clear text only over plain http to another computer', () => {
  const key = 'sk-secret';
  for (const url of ['http://192.168.1.5:11434/v1', 'http://example.com/v1', 'http://user@example.com:8080']) {
    assert.equal(keyInClear(new URL(url), key), true, url);
  }
  for (const url of ['https://example.com/v1', 'http://localhost:11434/v1', 'http://127.0.0.1:8080', 'http://[::1]:8080/v1']) {
    assert.equal(keyInClear(new URL(url), key), false, url);
  }
  assert.equal(keyInClear(new URL('http://example.com/v1'), ''), false);
});

test('the manifest covers http://localhost and http://127.0.0.1, nothing else', () => {
  assert.equal(isLoopback(new URL('http://localhost:11434/v1')), true);
  assert.equal(isLoopback(new URL('http://127.0.0.1:8080')), true);
  assert.equal(isLoopback(new URL('https://localhost/v1')), false);
  assert.equal(isLoopback(new URL('http://127.0.0.2/')), false);
});

test('unusable addresses get a message that says what to type', () => {
  const example = 'http://localhost:11434/v1';
  assert.match(urlProblem('', example), /Enter the Base URL of your provider, e\.g\. http:\/\/localhost:11434\/v1\./);
  assert.match(urlProblem('localhost:11434', example), /not a valid URL|must start with http/);
  assert.match(urlProblem('nonsense', example), /"nonsense" is not a valid URL\. Use a full address such as http:\/\/localhost:11434\/v1\./);
  assert.equal(urlProblem('ftp://example.com/', example), 'The Base URL must start with http:// or https://.');
  assert.equal(urlProblem('https://me:pw@example.com/v1', example), 'Put credentials in the API key field, not in the Base URL.');
  assert.equal(urlProblem('https://api.openai.com/v1', example), null);
  assert.equal(searchUrlProblem(''), null);
  assert.match(searchUrlProblem('nonsense'), /not a valid Search base URL/);
  assert.equal(searchUrlProblem('file:///etc'), 'The Search base URL must start with http:// or https://.');
  assert.equal(searchUrlProblem('http://u:p@localhost:8888'), 'Put credentials in the Search API key field, not in the Search base URL.');
  assert.equal(searchUrlProblem('http://localhost:8888'), null);
});

test('tricky addresses: the page decides as the backend does (tests/fixtures/urls.json)', () => {
  const { rows } = JSON.parse(readFileSync(new URL('../fixtures/urls.json', import.meta.url), 'utf8'));
  assert.ok(rows.length >= 30);
  const key = 'sk-secret';
  for (const row of rows) {
    const typed = row.url.trim();
    let url = null;
    try {
      url = new URL(typed);
    } catch {}
    assert.equal(url ? url.hostname : null, row.host, row.url);
    const problem = urlProblem(typed, 'http://localhost:11434/v1');
    assert.equal(problem === null, row.key !== 'invalid', `${row.url}: ${problem}`);
    if (row.key !== 'invalid') assert.equal(keyInClear(url, key), row.key === 'refused', row.url);
  }
});
