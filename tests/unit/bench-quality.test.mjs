// The quality benchmark's scoring (bench/quality/run.mjs): what counts as a right answer, an
// abstention, an echo of our own prompt, and the summary of a run.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ABSTAIN_PHRASE, ECHO_CHARS, abstains, echoIn, holdsSpan, ownText, score, summarise } from '../../bench/quality/run.mjs';

test('an answer holds a reference span as whole words, case and punctuation aside', () => {
  assert.ok(holdsSpan('He stepped down on April 3, 2014.', ['April 3, 2014']));
  assert.ok(holdsSpan('VAN JACOBSON wrote it', ['Van Jacobson']));
  assert.ok(holdsSpan('The codename was "Fennec".', ['Fennec', 'Firefox Mobile']));
  assert.ok(!holdsSpan('It happened in 1842.', ['18']), 'a span is matched as whole words');
  assert.ok(!holdsSpan('The page does not say.', ['April 3, 2014']));
});

test('an abstention says the phrase the prompt names', () => {
  assert.equal(ABSTAIN_PHRASE, 'The page does not say.');
  assert.ok(abstains('The page does not say.'));
  assert.ok(abstains('Sorry, the page does not say who succeeded him.'));
  assert.ok(!abstains('The page is silent on this.'), 'other wordings are not the phrase');
  assert.ok(!abstains('Brendan Eich was succeeded by Chris Beard.'));
});

test('our own text is the request without the page blocks, the question and the page text', () => {
  const messages = [
    { role: 'system', content: 'You are KnowledgeLens, a reading assistant inside the browser.' },
    { role: 'user', content: 'The page:\n<page-abc123>\nMozilla is a free software community.\n</page-abc123>\nCite labels.' },
    { role: 'user', content: 'Who founded Mozilla?' },
    { role: 'tool', content: 'read_page result text that is long enough to matter here' },
    { role: 'user', content: 'User preferences:\n- Reading level: standard' },
  ];
  const own = ownText(messages, { userWords: ['Who founded Mozilla?'] });
  assert.ok(own.includes('You are KnowledgeLens'));
  assert.ok(own.includes('User preferences:'));
  assert.ok(!own.includes('free software community'), 'page text in the fence is not ours');
  assert.ok(!own.includes('Who founded Mozilla?'), "the user's question is not ours");
  assert.ok(!own.includes('read_page result'), 'tool results are page data');
});

test(`an echo is ${ECHO_CHARS} or more characters of our own text in the answer`, () => {
  const own = 'User preferences:\n- Reading level: standard\n- Answer language: the language of the question';
  assert.equal(echoIn('The answer.\n\nUser preferences:\n- Reading level: standard', own), 'User preferences: - Read');
  assert.equal(echoIn('Mozilla was founded in 1998 by Netscape.', own), null);
  assert.equal(echoIn('Reading level: standar', own), null, `${ECHO_CHARS - 1} characters are not an echo`);
});

test('each kind of item is scored, and a run is summarised', () => {
  const q = { kind: 'question', answerable: true, answers: ['1998'], past_excerpt: true };
  const u = { kind: 'question', answerable: false };
  const e = { kind: 'explain', key_facts: [['Cisco'], ['H.264', 'H264']] };
  assert.deepEqual(score(q, 'In 1998.', ''), { correct: true, echo: null });
  assert.deepEqual(score(u, 'The page does not say.', ''), { abstained: true, echo: null });
  assert.deepEqual(score(e, 'Cisco pays for the codec.', ''), { facts: 1, facts_total: 2, echo: null });
  const rows = [
    { ...q, ok: true, correct: true, model_calls: 2, prompt_tokens: 900, first_token_s: 3, seconds: 10 },
    { ...q, past_excerpt: false, ok: true, correct: false, model_calls: 1, prompt_tokens: 700, first_token_s: 2, seconds: 6 },
    { ...u, ok: true, abstained: true, echo: 'User preferences: - Readi', model_calls: 1, prompt_tokens: 600, first_token_s: 1, seconds: 4 },
    { ...e, ok: false, facts: 1, facts_total: 2, model_calls: 3, prompt_tokens: 1200, first_token_s: null, seconds: 20 },
  ];
  const s = summarise(rows);
  assert.equal(s.accuracy, 0.5);
  assert.deepEqual(s.past_excerpt, { n: 1, correct: 1 });
  assert.deepEqual(s.within_excerpt, { n: 1, correct: 0, model_calls_mean: 1, prompt_tokens_median: 700 });
  assert.equal(s.abstain_share, 1);
  assert.equal(s.explain_facts, 0.5);
  assert.equal(s.echoes, 1);
  assert.equal(s.answered, 3);
  assert.equal(s.model_calls_mean, 1.75);
  assert.equal(s.prompt_tokens_median, 700);
  assert.deepEqual(s.first_token_s, { median: 2, p90: 3 });
  assert.deepEqual(s.seconds, { median: 6, p90: 20 });
});
