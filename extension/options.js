// KnowledgeLens options: the model provider settings and the token budget of a run.
//
// Loads with `get_settings` and saves with `save_settings`; the backend validates and
// normalizes, and its validation message is shown in the status line. A Base URL outside localhost needs a host permission, which Chrome only grants
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
const fieldsets = [document.getElementById('fields'), document.getElementById('limits')];
const provider = document.getElementById('provider');
const baseUrl = document.getElementById('base-url');
const model = document.getElementById('model');
const apiKey = document.getElementById('api-key');
const tokenBudget = document.getElementById('token-budget');
const saveButton = document.getElementById('save');
const status = document.getElementById('status');

/** The settings last loaded or saved; fields the form does not show are kept from here. */
let current = { ...DEFAULTS };

/** Bounds of the token budget, as the backend checks them. */
const BUDGET_MIN = 1000;
const BUDGET_MAX = 10_000_000;

function setStatus(text, kind = 'info') {
  status.textContent = text;
  status.dataset.kind = kind;
}

/** Marks `input` (or no field, with null) as the one the current error is about. */
function markInvalid(input) {
  for (const field of [baseUrl, tokenBudget]) {
    if (field === input) field.setAttribute('aria-invalid', 'true');
    else field.removeAttribute('aria-invalid');
  }
  if (input) input.focus();
}

function setEnabled(enabled) {
  for (const fieldset of fieldsets) fieldset.disabled = !enabled;
  saveButton.disabled = !enabled;
}

function fill(settings) {
  current = { ...DEFAULTS, ...settings };
  provider.value = current.provider === 'openai_compatible' ? current.provider : 'openai_compatible';
  baseUrl.value = current.base_url ?? '';
  model.value = current.model ?? '';
  apiKey.value = current.api_key ?? '';
  tokenBudget.value = String(current.token_budget ?? DEFAULTS.token_budget);
}

/**
 * The budget typed in the field as a number, or null when it is not a whole number (empty,
 * text, a fraction). The range is left to the backend, whose message the status line shows.
 */
function typedBudget() {
  const text = tokenBudget.value.trim();
  if (!/^\d+$/.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
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
    setEnabled(true);
  }
}

async function save() {
  const text = baseUrl.value.trim();
  const problem = urlProblem(text);
  if (problem) {
    setStatus(problem, 'error');
    markInvalid(baseUrl);
    return;
  }
  const budget = typedBudget();
  if (budget === null) {
    setStatus(
      `Enter the token budget as a whole number of tokens from ${BUDGET_MIN.toLocaleString('en-US')} ` +
        `to ${BUDGET_MAX.toLocaleString('en-US')}, e.g. 32000.`,
      'error',
    );
    markInvalid(tokenBudget);
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
    token_budget: budget,
  };
  saveButton.disabled = true;
  setStatus('Saving…');
  try {
    fill(await connection.request('save_settings', { settings }));
    markInvalid(null);
    setStatus('Saved.', 'ok');
  } catch (err) {
    // The backend names the setting it refused; point at that field when it is one we show.
    const message = err.message || 'The settings could not be saved.';
    if (err.kind === 'invalid_settings') {
      markInvalid(/token budget/i.test(message) ? tokenBudget : /base url/i.test(message) ? baseUrl : null);
    }
    setStatus(message, 'error');
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
form.addEventListener('input', (event) => {
  event.target.removeAttribute?.('aria-invalid');
  if (status.dataset.kind === 'ok') setStatus('');
});

connection.start();
