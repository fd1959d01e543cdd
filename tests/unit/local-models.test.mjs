// The setup card's server list, as text and as the settings a "Use" click saves.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { serverLine, settingsUsing, useLabel } from '../../extension/ui/local-models.js';

const ollama = { name: 'Ollama', provider: 'ollama', base_url: 'http://127.0.0.1:11434', models: ['llama3.2', 'qwen2.5:7b'] };

test('a server reads as its name and models, a button as its model and server', () => {
  assert.equal(serverLine(ollama), 'Ollama on this computer: llama3.2, qwen2.5:7b');
  assert.equal(serverLine({ ...ollama, models: [] }), 'Ollama on this computer: no models yet');
  assert.equal(useLabel('llama3.2', ollama), 'Use llama3.2 (Ollama)');
});

test('using a found model switches provider, address and model, drops the key and keeps other profiles', () => {
  const current = {
    provider: 'openai_compatible', base_url: 'https://api.openai.com/v1', model: 'gpt-4o-mini', api_key: 'sk-x',
    context_window: 128000, prices: { input: 1, output: 2 }, max_steps: 7,
    profiles: { openai_compatible: { base_url: 'https://api.openai.com/v1', model: 'gpt-4o-mini', api_key: 'sk-x' } },
  };
  const settings = settingsUsing(current, { provider: 'ollama', base_url: 'http://127.0.0.1:11434', model: 'qwen2.5:7b', server: 'Ollama' });
  assert.deepEqual(settings, {
    provider: 'ollama', base_url: 'http://127.0.0.1:11434', model: 'qwen2.5:7b', api_key: '',
    context_window: 0, prices: {}, max_steps: 7,
    profiles: {
      openai_compatible: current.profiles.openai_compatible,
      ollama: { base_url: 'http://127.0.0.1:11434', model: 'qwen2.5:7b', api_key: '', context_window: 0, prices: {} },
    },
  });
  assert.equal(current.provider, 'openai_compatible', 'the saved settings are not changed in place');
});
