// @ts-check
// KnowledgeLens options: the model provider, its connection check, its prices per million
// tokens (for the cost estimate), the token budget, and web search (off by default).
//
// Loads with `get_settings`, saves with `save_settings`, checks with `test_connection` and
// `test_search`, and fills the Model list with `list_models`; the backend validates,
// normalizes and explains (the connection doctor and the search errors live in Rust). Each
// provider's fields are remembered while switching between providers. Two things must happen
// here, in the click handler, because Chrome only allows them during a user gesture: asking
// for host permissions (a Base URL outside localhost, a search provider other than
// Wikipedia), and starting the download of Chrome's built-in model.
//
// Everything shown from the backend or a server is set as text, never as HTML.

import { Connection } from './messaging.js';
import {
  CONTEXT_WINDOW, DEFAULT_SETTINGS, PRICE_PER_MILLION, PROVIDERS as PROVIDER_DEFAULTS, REQUESTS,
  COMPACT_AT, INPUT_ANSWER_TIMEOUT, MODEL_DEADLINE, READING_LEVELS, SEARCH_PROVIDERS, TOKEN_BUDGET,
} from './protocol.gen.js';
import { PROVIDER_TEXTS, SEARCH_TEXTS } from './ui/options-texts.js';
import { isLoopback, keyInClear, searchUrlProblem, urlProblem } from './ui/urls.js';
import { createLocalModels } from './ui/local-models.js';
import { createActionsEditor } from './ui/actions-options.js';
import { createActionsTransfer } from './ui/actions-transfer.js';

const PROVIDERS = Object.fromEntries(
  Object.entries(PROVIDER_TEXTS).map(([name, texts]) => [
    name,
    { ...texts, baseUrl: PROVIDER_DEFAULTS[name]?.base_url ?? '' },
  ]),
);

const DEFAULTS = DEFAULT_SETTINGS;

/** Bounds the backend checks (it has the last word; these only pick a message). */
const BUDGET = TOKEN_BUDGET;
const WINDOW = CONTEXT_WINDOW;

const $ = (id) => document.getElementById(id);
const form = /** @type {HTMLFormElement} */ ($('settings-form'));
const fieldsets = [/** @type {HTMLFieldSetElement} */ ($('fields')), /** @type {HTMLFieldSetElement} */ ($('prices')), /** @type {HTMLFieldSetElement} */ ($('limits')), /** @type {HTMLFieldSetElement} */ ($('search')), /** @type {HTMLFieldSetElement} */ ($('actions'))];
const provider = /** @type {HTMLSelectElement} */ ($('provider'));
const baseUrl = /** @type {HTMLInputElement} */ ($('base-url'));
const model = /** @type {HTMLInputElement} */ ($('model'));
const modelList = /** @type {HTMLDataListElement} */ ($('model-list'));
const apiKey = /** @type {HTMLInputElement} */ ($('api-key'));
const contextWindow = /** @type {HTMLInputElement} */ ($('context-window'));
const tokenBudget = /** @type {HTMLInputElement} */ ($('token-budget'));
const compactAt = /** @type {HTMLInputElement} */ ($('compact-at'));
const modelDeadline = /** @type {HTMLInputElement} */ ($('model-deadline'));
const readingLevel = /** @type {HTMLSelectElement} */ ($('reading-level'));
const answerTimeout = /** @type {HTMLInputElement} */ ($('answer-timeout'));
/** The price inputs, by the settings' field names. */
const priceInputs = {
  input: /** @type {HTMLInputElement} */ ($('price-input')),
  output: /** @type {HTMLInputElement} */ ($('price-output')),
  cached_input: /** @type {HTMLInputElement} */ ($('price-cached')),
};
const searchProvider = /** @type {HTMLSelectElement} */ ($('search-provider'));
const searchBaseUrl = /** @type {HTMLInputElement} */ ($('search-base-url'));
const searchApiKey = /** @type {HTMLInputElement} */ ($('search-api-key'));
const searchCheck = {
  section: $('search-check'),
  summary: $('search-check-summary'),
  titles: $('search-check-titles'),
  button: /** @type {HTMLButtonElement} */ ($('test-search')),
};
const saveButton = /** @type {HTMLButtonElement} */ ($('save'));
const testButton = /** @type {HTMLButtonElement} */ ($('test'));
const status = $('status');
const check = {
  section: $('check'),
  summary: $('check-summary'),
  steps: $('check-steps'),
  suggestions: $('check-suggestions'),
  detail: $('check-detail'),
  allow: /** @type {HTMLButtonElement} */ ($('allow-access')),
  download: /** @type {HTMLButtonElement} */ ($('download-model')),
};

/** The settings last loaded or saved; fields the form does not show are kept from here. */
let current = { ...DEFAULTS };
/** Per-provider fields while editing: switching providers keeps what was typed. */
let drafts = {};
/** The provider whose fields the form shows. */
let shown = DEFAULTS.provider;
/** The origin a failed check asked permission for (the "Allow access" button). */
let pendingOrigin = null;

function setStatus(text, kind = 'info') {
  status.textContent = text;
  status.dataset.kind = kind;
}

/** Marks `input` (or no field, with null) as the one the current error is about. */
function markInvalid(input) {
  for (const field of [baseUrl, model, apiKey, contextWindow, ...Object.values(priceInputs), tokenBudget, compactAt,
    modelDeadline, answerTimeout, searchBaseUrl, searchApiKey]) {
    if (field === input) field.setAttribute('aria-invalid', 'true');
    else field.removeAttribute('aria-invalid');
  }
  if (input) input.focus();
}

function setEnabled(enabled) {
  for (const fieldset of fieldsets) fieldset.disabled = !enabled;
  saveButton.disabled = !enabled;
  testButton.disabled = !enabled;
}

const plainNumber = (n) => n.toLocaleString('en-US');

/** The form's connection fields (a context window that is not a whole number counts as 0). */
function typedFields() {
  const window = typedNumber(contextWindow);
  return {
    base_url: baseUrl.value.trim(),
    model: model.value.trim(),
    api_key: apiKey.value.trim(),
    context_window: typeof window === 'number' ? window : 0,
    prices: typedPrices() ?? {},
  };
}

/** The prices typed (`null` for an empty field), or null when one is not a number. */
function typedPrices() {
  const prices = {};
  for (const [name, input] of Object.entries(priceInputs)) {
    if (input.validity.badInput) return null;
    const text = input.value.trim();
    const value = text === '' ? null : Number(text);
    if (value !== null && !Number.isFinite(value)) return null;
    prices[name] = value;
  }
  return prices;
}

/** The first price input whose text is not a number. */
function badPriceInput() {
  return Object.values(priceInputs).find((input) => {
    const text = input.value.trim();
    return input.validity.badInput || (text !== '' && !Number.isFinite(Number(text)));
  });
}

/** Shows `which` provider's fields: its draft, else its saved profile, else its defaults. */
function showProvider(which) {
  const meta = PROVIDERS[which] ?? PROVIDERS.openai_compatible;
  const saved = drafts[which] ?? current.profiles?.[which] ?? {};
  shown = which;
  provider.value = which;
  baseUrl.value = saved.base_url || meta.baseUrl;
  baseUrl.placeholder = meta.baseUrl;
  model.value = saved.model ?? '';
  model.placeholder = meta.modelPlaceholder;
  apiKey.value = saved.api_key ?? '';
  const window = Number(saved.context_window) || 0;
  contextWindow.value = window ? String(window) : '';
  for (const [name, input] of Object.entries(priceInputs)) {
    const value = saved.prices?.[name];
    input.value = typeof value === 'number' ? String(value) : '';
  }
  $('provider-hint').textContent = meta.hint;
  $('base-url-hint').textContent = meta.urlHint;
  $('api-key-hint').textContent = meta.keyHint;
  const http = which !== 'chrome_builtin';
  $('base-url-field').hidden = !http;
  $('api-key-field').hidden = !http;
  $('model-field').hidden = !http;
  contextWindow.placeholder = 'model default';
  $('context-window-hint').textContent =
    'Tokens the model can take in at once (prompt and reply). Leave empty for the model\'s ' +
    'default; KnowledgeLens sizes the page excerpt to fit it.' +
    (which === 'ollama' ? ' Ollama is asked for this window (8,192 unless you set one).' : '');
  setModels([], '');
}

function fill(settings) {
  current = { ...DEFAULTS, ...settings };
  drafts = {};
  current.profiles = { ...(current.profiles ?? {}) };
  // The record's own fields are the truth for its provider.
  current.profiles[current.provider] = {
    base_url: current.base_url,
    model: current.model,
    api_key: current.api_key,
    context_window: current.context_window,
    prices: current.prices ?? {},
  };
  showProvider(current.provider in PROVIDERS ? current.provider : DEFAULTS.provider);
  tokenBudget.value = String(current.token_budget ?? DEFAULTS.token_budget);
  compactAt.value = String(current.compact_at_percent ?? COMPACT_AT.default);
  answerTimeout.value = String(current.input_answer_timeout_secs ?? INPUT_ANSWER_TIMEOUT.default);
  modelDeadline.value = String(current.model_deadline_secs ?? MODEL_DEADLINE.default);
  readingLevel.value = READING_LEVELS.includes(current.reading_level) ? current.reading_level : DEFAULTS.reading_level;
  searchProvider.value = current.search_provider in SEARCH_PROVIDERS ? current.search_provider : 'off';
  searchBaseUrl.value = current.search_base_url ?? '';
  searchApiKey.value = current.search_api_key ?? '';
  showSearchProvider();
}

/** Explains the chosen search provider's fields. */
function showSearchProvider() {
  const which = searchProvider.value;
  const texts = SEARCH_TEXTS[which] ?? SEARCH_TEXTS.off;
  const meta = SEARCH_PROVIDERS[which] ?? SEARCH_PROVIDERS.off;
  $('search-provider-hint').textContent = texts.hint;
  $('search-base-url-hint').textContent = texts.urlHint;
  $('search-api-key-hint').textContent = texts.keyHint;
  searchBaseUrl.placeholder = which === 'wikipedia' ? 'Wikipedia in the page\'s language' : meta.base_url;
}

/** The search fields as typed. */
function typedSearch() {
  return {
    // The select lists SEARCH_PROVIDERS' names.
    search_provider: /** @type {import('./protocol.gen.js').WebSearch} */ (searchProvider.value),
    search_base_url: searchBaseUrl.value.trim(),
    search_api_key: searchApiKey.value.trim(),
  };
}

/**
 * The host permission pattern the search settings need, or null: Wikipedia answers any origin
 * (MediaWiki's anonymous CORS), loopback is in the manifest, off sends nothing, and settings
 * the backend will refuse ask for nothing.
 */
function searchPermission({ search_provider: which, search_base_url: base, search_api_key: key }) {
  const meta = SEARCH_PROVIDERS[which];
  if (!meta || which === 'off' || which === 'wikipedia') return null;
  // Settings that cannot work are refused by the backend, which says what is missing.
  if ((meta.needs_key && !key) || (meta.needs_base_url && !base)) return null;
  const text = base || meta.base_url;
  if (!text) return null;
  const url = new URL(text);
  return isLoopback(url) ? null : `${url.origin}/*`;
}

function setModels(names, hint) {
  modelList.replaceChildren(
    ...names.map((name) => {
      const option = document.createElement('option');
      option.value = name;
      return option;
    }),
  );
  $('model-hint').textContent = hint;
}

/** A whole number typed in `input`, '' when empty, or null when it is not one. */
function typedNumber(input) {
  const text = input.value.trim();
  if (text === '') return '';
  if (!/^\d+$/.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

/**
 * The settings the form describes, or null after showing what is wrong. Asks for the host
 * permissions a non-local Base URL and (when saving) the search provider need, in one prompt:
 * call it first thing in a click handler. Saving needs them; a connection test goes on
 * without (the doctor then explains, with a button to ask again).
 */
async function settingsFromForm({ requirePermission }) {
  const fields = typedFields();
  const http = shown !== 'chrome_builtin';
  if (http) {
    const problem = urlProblem(fields.base_url, PROVIDERS[shown].baseUrl);
    if (problem) {
      setStatus(problem, 'error');
      markInvalid(baseUrl);
      return null;
    }
  }
  const budget = typedNumber(tokenBudget);
  if (budget === null || budget === '') {
    setStatus(
      `Enter the token budget as a whole number of tokens from ${plainNumber(BUDGET.min)} ` +
        `to ${plainNumber(BUDGET.max)}, e.g. 32000.`,
      'error',
    );
    markInvalid(tokenBudget);
    return null;
  }
  const compact = typedNumber(compactAt);
  if (compact === null || compact === '' || compact < COMPACT_AT.min || compact > COMPACT_AT.max) {
    setStatus(
      `Enter Compact at as a whole percent of the context window from ${COMPACT_AT.min} ` +
        `to ${COMPACT_AT.max}, e.g. ${COMPACT_AT.default}.`,
      'error',
    );
    markInvalid(compactAt);
    return null;
  }
  const answerSecs = typedNumber(answerTimeout);
  if (answerSecs === null || answerSecs === '' || answerSecs < INPUT_ANSWER_TIMEOUT.min || answerSecs > INPUT_ANSWER_TIMEOUT.max) {
    setStatus(
      `Enter Time to answer a question as a whole number of seconds from ${plainNumber(INPUT_ANSWER_TIMEOUT.min)} ` +
        `to ${plainNumber(INPUT_ANSWER_TIMEOUT.max)}, e.g. ${plainNumber(INPUT_ANSWER_TIMEOUT.default)} (half an hour).`,
      'error',
    );
    markInvalid(answerTimeout);
    return null;
  }
  const deadline = typedNumber(modelDeadline);
  if (deadline === null || deadline === '' || deadline < MODEL_DEADLINE.min || deadline > MODEL_DEADLINE.max) {
    setStatus(
      `Enter the model call deadline as a whole number of seconds from ${MODEL_DEADLINE.min} ` +
        `to ${plainNumber(MODEL_DEADLINE.max)}, e.g. ${MODEL_DEADLINE.default}.`,
      'error',
    );
    markInvalid(modelDeadline);
    return null;
  }
  const window = typedNumber(contextWindow);
  if (window === null) {
    setStatus(
      `Enter the context window as a whole number of tokens from ${plainNumber(WINDOW.min)} ` +
        `to ${plainNumber(WINDOW.max)}, or leave it empty for the model's default.`,
      'error',
    );
    markInvalid(contextWindow);
    return null;
  }
  const prices = typedPrices();
  if (prices === null) {
    setStatus(
      `Enter each price as a number of US$ per million tokens from ${PRICE_PER_MILLION.min} ` +
        `to ${plainNumber(PRICE_PER_MILLION.max)} (e.g. 0.15), or leave it empty.`,
      'error',
    );
    markInvalid(badPriceInput() ?? priceInputs.input);
    return null;
  }
  const search = typedSearch();
  const searchProblem = searchUrlProblem(search.search_base_url);
  if (searchProblem) {
    setStatus(searchProblem, 'error');
    markInvalid(searchBaseUrl);
    return null;
  }
  // One request for every origin: a second prompt would come after the click's gesture ended.
  const origins = [];
  if (http) {
    const url = new URL(fields.base_url);
    // A key over plain http:// to another computer is refused by the backend (which says
    // why): no permission is asked for a server that will not be used.
    if (!isLoopback(url) && !keyInClear(url, fields.api_key)) origins.push(`${url.origin}/*`);
  }
  // Saving turns the search provider on: its origin is asked for with the model's.
  const searchOrigin = requirePermission ? searchPermission(search) : null;
  if (searchOrigin && !origins.includes(searchOrigin)) origins.push(searchOrigin);
  if (origins.length && !(await requestAccess(origins)) && requirePermission) return null;
  drafts[shown] = { ...fields, context_window: window === '' ? 0 : window };
  return {
    ...current,
    provider: shown,
    base_url: http ? fields.base_url : '',
    model: http ? fields.model : '',
    api_key: http ? fields.api_key : '',
    context_window: window === '' ? 0 : window,
    prices,
    profiles: { ...current.profiles, ...drafts },
    token_budget: budget,
    compact_at_percent: compact,
    input_answer_timeout_secs: answerSecs,
    model_deadline_secs: deadline,
    reading_level: readingLevel.value,
    ...search,
  };
}

/** Asks Chrome for host permissions (needs a user gesture); true when granted. */
async function requestAccess(patterns) {
  const list = Array.isArray(patterns) ? patterns : [patterns];
  const origin = list.map((pattern) => pattern.replace(/\/\*$/, '')).join(' and ');
  let granted = false;
  try {
    granted = await chrome.permissions.request({ origins: list });
  } catch (err) {
    setStatus(`Could not ask for permission to reach ${origin}: ${err.message}`, 'error');
    return false;
  }
  if (!granted) {
    setStatus(
      `Permission to reach ${origin} was not granted, so KnowledgeLens cannot use this ` +
        'provider. Try again and choose Allow, or use a server on localhost.',
      'error',
    );
  }
  return granted;
}

function pointAt(message) {
  if (/search base url|searxng needs the address/i.test(message)) return searchBaseUrl;
  if (/search api key/i.test(message)) return searchApiKey;
  if (/token budget/i.test(message)) return tokenBudget;
  if (/compact at/i.test(message)) return compactAt;
  if (/wait for your answer/i.test(message)) return answerTimeout;
  if (/model call deadline/i.test(message)) return modelDeadline;
  if (/context window/i.test(message)) return contextWindow;
  if (/cached input price/i.test(message)) return priceInputs.cached_input;
  if (/output price/i.test(message)) return priceInputs.output;
  if (/input price/i.test(message)) return priceInputs.input;
  if (/base url/i.test(message)) return baseUrl;
  if (/api key/i.test(message)) return apiKey;
  return null;
}

async function load() {
  try {
    const settings = await connection.request(REQUESTS.GET_SETTINGS);
    fill(settings);
    const asked = new URLSearchParams(location.search).get('provider');
    if (asked in PROVIDERS && !settings.configured) showProvider(asked);
    setStatus(settings.notice ?? (settings.configured ? '' : 'Choose a provider, then click Test connection.'),
      settings.notice ? 'error' : 'info');
  } catch (err) {
    fill(DEFAULTS);
    setStatus(`Could not load the saved settings: ${err.message}`, 'error');
  } finally {
    setEnabled(true);
  }
  actions.load().then((notice) => { if (notice) setStatus(notice, 'error'); },
    (err) => setStatus(`Could not load the actions: ${err.message}`, 'error'));
  void refreshModels();
}

async function save() {
  const settings = await settingsFromForm({ requirePermission: true });
  if (!settings) return;
  saveButton.disabled = true;
  setStatus('Saving…');
  // The actions first: a field marked in Actions saves nothing.
  try {
    if (!(await actions.save())) {
      setStatus('Fix the actions marked in Actions: nothing was saved.', 'error');
      saveButton.disabled = false;
      return;
    }
  } catch (err) {
    setStatus(err.message || 'The actions could not be saved.', 'error');
    saveButton.disabled = false;
    return;
  }
  try {
    const saved = await connection.request(REQUESTS.SAVE_SETTINGS, { settings });
    fill(saved);
    markInvalid(null);
    // A Chrome that cannot keep keys from content scripts: saved without them, and said so.
    if (saved.notice) setStatus(saved.notice, 'error');
    else setStatus('Saved.', 'ok');
    void refreshModels();
  } catch (err) {
    // The backend names the setting it refused; point at that field when it is one we show.
    const message = err.message || 'The settings could not be saved.';
    if (err.kind === 'invalid_settings') markInvalid(pointAt(message));
    setStatus(message, 'error');
  } finally {
    saveButton.disabled = false;
  }
}

function clearCheck() {
  check.section.hidden = true;
  check.section.dataset.result = '';
  check.summary.textContent = '';
  check.steps.replaceChildren();
  check.suggestions.replaceChildren();
  check.suggestions.hidden = true;
  check.detail.hidden = true;
  check.allow.hidden = true;
  check.download.hidden = true;
  pendingOrigin = null;
}

/** Appends `text` to `parent`, with `backticked` parts as <code> (built as nodes, never HTML). */
function appendWithCode(parent, text) {
  text.split('`').forEach((part, i) => {
    if (i % 2 === 1) {
      const code = document.createElement('code');
      code.textContent = part;
      parent.append(code);
    } else if (part) {
      parent.append(document.createTextNode(part));
    }
  });
}

function showSuccess(result) {
  clearCheck();
  check.section.hidden = false;
  check.section.dataset.result = 'ok';
  const reply = result.reply ? ` The model replied: “${result.reply}”.` : ' The model replied with nothing.';
  check.summary.textContent = `Connected in ${plainNumber(result.latency_ms)} ms.${reply}`;
  const caps = result.capabilities ?? {};
  const li = document.createElement('li');
  li.textContent =
    `Context window ${plainNumber(caps.context_window ?? 0)} tokens; ` +
    `${caps.native_tools ? 'native tool calls' : 'tools through the prompt'}; ` +
    `${caps.constrained_output ? 'constrained JSON output' : 'JSON read from the text'}.`;
  check.steps.append(li);
}

function showDiagnosis(diagnosis) {
  clearCheck();
  check.section.hidden = false;
  check.section.dataset.result = diagnosis.problem;
  check.summary.textContent = diagnosis.summary;
  for (const step of diagnosis.steps ?? []) {
    const li = document.createElement('li');
    appendWithCode(li, step);
    check.steps.append(li);
  }
  if (diagnosis.suggestions?.length) {
    check.suggestions.hidden = false;
    for (const name of diagnosis.suggestions) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'secondary';
      button.textContent = `Use ${name}`;
      button.addEventListener('click', () => {
        model.value = name;
        model.focus();
        setStatus(`Model set to ${name}: click Test connection, then Save.`);
      });
      check.suggestions.append(button);
    }
  }
  if (diagnosis.detail) {
    check.detail.hidden = false;
    check.detail.textContent = `The server said: ${diagnosis.detail}`;
  }
  if (diagnosis.permission_origin) {
    pendingOrigin = diagnosis.permission_origin;
    check.allow.hidden = false;
    check.allow.textContent = `Allow access to ${pendingOrigin.replace(/\/\*$/, '')}`;
  }
  if (diagnosis.problem === 'builtin_unavailable' && diagnosis.detail === 'downloadable') {
    check.download.hidden = false;
  }
}

/** Connection checks finished so far (exposed as data-checks: tests wait on it). */
let checksDone = 0;

async function testConnection() {
  const settings = await settingsFromForm({ requirePermission: false });
  if (!settings) return;
  testButton.disabled = true;
  clearCheck();
  setStatus('Testing the connection…');
  try {
    const result = await connection.request(REQUESTS.TEST_CONNECTION, { settings });
    if (result.ok) {
      showSuccess(result);
      setStatus('Connection works. Save to use it.', 'ok');
      void refreshModels();
    } else {
      showDiagnosis(/** @type {import('./protocol.gen.js').ConnectionFailed} */ (result).diagnosis);
      setStatus('The connection failed: see below.', 'error');
    }
  } catch (err) {
    clearCheck();
    if (err.kind === 'invalid_settings') markInvalid(pointAt(err.message));
    setStatus(err.message || 'The connection could not be tested.', 'error');
  } finally {
    testButton.disabled = false;
    checksDone += 1;
    check.section.dataset.checks = String(checksDone);
  }
}

function clearSearchCheck() {
  searchCheck.section.hidden = true;
  searchCheck.section.dataset.result = '';
  searchCheck.summary.textContent = '';
  searchCheck.titles.replaceChildren();
  searchCheck.titles.hidden = true;
}

/** Shows a `test_search` reply in the Search check region. */
function showSearchCheck(result) {
  clearSearchCheck();
  searchCheck.section.hidden = false;
  const time = `${plainNumber(result.latency_ms)} ms`;
  if (result.ok) {
    searchCheck.section.dataset.result = 'ok';
    const count = result.count === 1 ? '1 result' : `${plainNumber(result.count)} results`;
    searchCheck.summary.textContent =
      `${result.provider} found ${count} for “${result.query}” in ${time}.`;
    for (const title of result.titles ?? []) {
      const li = document.createElement('li');
      li.textContent = title;
      searchCheck.titles.append(li);
    }
    searchCheck.titles.hidden = !result.titles?.length;
  } else {
    searchCheck.section.dataset.result = result.error.kind;
    searchCheck.summary.textContent = result.error.message;
  }
}

/** Search checks finished so far (exposed as data-checks: tests wait on it). */
let searchChecksDone = 0;

async function testSearch() {
  const search = typedSearch();
  const problem = searchUrlProblem(search.search_base_url);
  clearSearchCheck();
  if (problem) {
    showSearchCheck({ ok: false, latency_ms: 0, error: { kind: 'config', message: problem } });
    markInvalid(searchBaseUrl);
  } else {
    // Asked here, in the click: the check goes on without it (the error then says so).
    const origin = searchPermission(search);
    if (origin) await requestAccess(origin);
    searchCheck.button.disabled = true;
    searchCheck.section.hidden = false;
    searchCheck.section.dataset.result = 'pending';
    searchCheck.summary.textContent = 'Searching…';
    try {
      showSearchCheck(await connection.request(REQUESTS.TEST_SEARCH, { settings: { ...current, ...search } }));
    } catch (err) {
      showSearchCheck({ ok: false, latency_ms: 0, error: { kind: err.kind ?? 'internal', message: err.message || 'The search could not be tested.' } });
    } finally {
      searchCheck.button.disabled = false;
    }
  }
  searchChecksDone += 1;
  searchCheck.section.dataset.checks = String(searchChecksDone);
}

/**
 * Fills the Model list from the server, quietly: a server that cannot list is fine. Called
 * only on load (the saved settings), after Save and after a connection test that worked, never
 * while typing: the typed key must not go to a half-typed address. Nothing is sent to a server
 * the extension has no host permission for.
 */
let modelsAsked = 0;
async function refreshModels() {
  const which = shown;
  const fields = typedFields();
  if (which === 'chrome_builtin' || urlProblem(fields.base_url, PROVIDERS[shown].baseUrl)) return;
  const url = new URL(fields.base_url);
  if (keyInClear(url, fields.api_key)) return;
  const ticket = ++modelsAsked;
  if (!isLoopback(url)) {
    let allowed = false;
    try {
      allowed = await chrome.permissions.contains({ origins: [`${url.origin}/*`] });
    } catch {
      allowed = false;
    }
    if (!allowed) return;
  }
  try {
    const settings = { ...current, provider: which, ...fields, context_window: 0 };
    const result = await connection.request(REQUESTS.LIST_MODELS, { settings });
    if (ticket !== modelsAsked || which !== shown) return;
    if (result.listed) {
      setModels(result.models, result.models.length
        ? `${plainNumber(result.models.length)} models on this server: type to filter, or choose one.`
        : 'The server lists no models yet.');
    } else {
      setModels([], '');
    }
  } catch {
    if (ticket === modelsAsked) setModels([], '');
  }
}

/** Starts the built-in model's download: Chrome only allows it from a user gesture. */
async function downloadModel() {
  if (!('LanguageModel' in globalThis)) {
    setStatus('This browser has no built-in model to download.', 'error');
    return;
  }
  check.download.disabled = true;
  try {
    const session = await globalThis.LanguageModel.create({
      monitor(m) {
        m.addEventListener('downloadprogress', (e) => {
          setStatus(`Downloading Chrome's built-in model… ${Math.round(e.loaded * 100)}%`);
        });
      },
    });
    session.destroy();
    setStatus('The built-in model is ready: click Test connection.', 'ok');
  } catch (err) {
    setStatus(`The download did not start: ${err.message}`, 'error');
  } finally {
    check.download.disabled = false;
  }
}

/** "Use <model> (<server>)": fills the form with that server and model, saves, and tests. */
async function useLocalModel({ provider: which, base_url: url, model: name }) {
  drafts[shown] = { ...typedFields() };
  showProvider(which);
  baseUrl.value = url;
  model.value = name;
  apiKey.value = '';
  clearCheck();
  await save();
  await testConnection();
}

const localModels = createLocalModels($('found-list'), {
  request: (type, fields) => connection.request(type, fields),
  onUse: (choice) => void useLocalModel(choice),
});

const actions = createActionsEditor({
  connection: { request: (type, fields) => connection.request(type, fields) },
  list: $('action-list'),
  language: /** @type {HTMLInputElement} */ ($('target-language')),
  add: /** @type {HTMLButtonElement} */ ($('add-action')),
  reset: /** @type {HTMLButtonElement} */ ($('reset-actions')),
  error: $('actions-error'),
  shortcuts: $('shortcuts-link'),
});

createActionsTransfer({
  connection: { request: (type, fields) => connection.request(type, fields) },
  editor: actions,
  exportButton: /** @type {HTMLButtonElement} */ ($('export-actions')),
  importButton: /** @type {HTMLButtonElement} */ ($('import-actions')),
  file: /** @type {HTMLInputElement} */ ($('import-file')),
  dialog: /** @type {HTMLDialogElement} */ ($('import-dialog')),
  list: $('import-list'),
  confirm: /** @type {HTMLButtonElement} */ ($('import-confirm')),
  cancel: /** @type {HTMLButtonElement} */ ($('import-cancel')),
  setStatus,
});

const connection = new Connection({
  onConnect: ({ reconnected }) => {
    // Reload only on the first connect: a reconnect must not overwrite the user's edits.
    if (!reconnected) {
      void load();
      void localModels.find();
    }
  },
});

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void save();
});
form.addEventListener('input', (event) => {
  /** @type {Element} */ (event.target).removeAttribute?.('aria-invalid');
  if (status.dataset.kind === 'ok') setStatus('');
});
provider.addEventListener('change', () => {
  drafts[shown] = { ...typedFields() };
  showProvider(provider.value);
  clearCheck();
});
testButton.addEventListener('click', () => void testConnection());
searchProvider.addEventListener('change', () => {
  showSearchProvider();
  clearSearchCheck();
});
searchCheck.button.addEventListener('click', () => void testSearch());
check.allow.addEventListener('click', async () => {
  if (pendingOrigin && (await requestAccess(pendingOrigin))) {
    check.allow.hidden = true;
    setStatus('Access granted: click Test connection again.', 'ok');
  }
});
check.download.addEventListener('click', () => void downloadModel());

connection.start();
