// KnowledgeLens options: the model provider settings.
//
// Loads with `get_settings` and saves with `save_settings`; the backend validates and
// normalizes. A Base URL outside localhost needs a host permission, which Chrome only grants
// from a user gesture: it is requested first thing in the Save handler, before any await.

import { Connection } from './messaging.js';

const DEFAULTS = {
  provider: 'openai_compatible',
  base_url: 'http://localhost:11434/v1',
  model: '',
  api_key: '',
  stream: true,
  token_budget: 32000,
};

const form = document.getElementById('settings-form');
const fields = document.getElementById('fields');
const provider = document.getElementById('provider');
const baseUrl = document.getElementById('base-url');
const model = document.getElementById('model');
const apiKey = document.getElementById('api-key');
const saveButton = document.getElementById('save');
const status = document.getElementById('status');

/** The settings last loaded or saved; fields the form does not show are kept from here. */
let current = { ...DEFAULTS };

function setStatus(text, kind = 'info') {
  status.textContent = text;
  status.dataset.kind = kind;
}

function fill(settings) {
  current = { ...DEFAULTS, ...settings };
  provider.value = current.provider === 'openai_compatible' ? current.provider : 'openai_compatible';
  baseUrl.value = current.base_url ?? '';
  model.value = current.model ?? '';
  apiKey.value = current.api_key ?? '';
}

/** Loopback origins are covered by the manifest's host_permissions. */
function isLoopback(url) {
  return url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1');
}

/** A friendly message for an unusable Base URL, or null. The backend validates again. */
function urlProblem(text) {
  if (!text) return 'Enter the Base URL of your provider, e.g. http://localhost:11434/v1.';
  let url;
  try {
    url = new URL(text);
  } catch {
    return `"${text}" is not a valid URL. Use a full address such as http://localhost:11434/v1.`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return 'The Base URL must start with http:// or https://.';
  }
  if (url.username || url.password) {
    return 'Put credentials in the API key field, not in the Base URL.';
  }
  return null;
}

async function load() {
  try {
    fill(await connection.request('get_settings'));
    setStatus('');
  } catch (err) {
    fill(DEFAULTS);
    setStatus(`Could not load the saved settings: ${err.message}`, 'error');
  } finally {
    fields.disabled = false;
  }
}

async function save() {
  const text = baseUrl.value.trim();
  const problem = urlProblem(text);
  if (problem) {
    setStatus(problem, 'error');
    baseUrl.focus();
    return;
  }
  const url = new URL(text);
  if (!isLoopback(url)) {
    // Must be the first await of the click handler: Chrome needs the user gesture.
    let granted = false;
    try {
      granted = await chrome.permissions.request({ origins: [`${url.origin}/*`] });
    } catch (err) {
      setStatus(`Could not ask for permission to reach ${url.origin}: ${err.message}`, 'error');
      return;
    }
    if (!granted) {
      setStatus(
        `Permission to reach ${url.origin} was not granted, so KnowledgeLens cannot use this ` +
          'provider. Click Save again and choose Allow, or use a server on localhost.',
        'error',
      );
      return;
    }
  }
  const settings = {
    ...current,
    provider: provider.value,
    base_url: text,
    model: model.value.trim(),
    api_key: apiKey.value.trim(),
  };
  saveButton.disabled = true;
  setStatus('Saving…');
  try {
    fill(await connection.request('save_settings', { settings }));
    setStatus('Saved.', 'ok');
  } catch (err) {
    setStatus(err.message || 'The settings could not be saved.', 'error');
  } finally {
    saveButton.disabled = false;
  }
}

const connection = new Connection({
  onConnect: ({ reconnected }) => {
    // Reload only on the first connect: a reconnect must not overwrite the user's edits.
    if (!reconnected) void load();
  },
});

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void save();
});
form.addEventListener('input', () => {
  if (status.dataset.kind === 'ok') setStatus('');
});

connection.start();
