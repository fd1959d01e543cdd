// Model servers already running on this computer, for the popup's setup card and Options.
// The worker looks for them (`find_local_models`: only the model-list request, only to
// 127.0.0.1 on the usual ports, 1 s each, in parallel) when this view asks, which it does
// only while the card or Options is open. Each server that answered is listed with its models
// ("Ollama on this computer: llama3.2, qwen2.5:7b") and a "Use <model> (<server>)" button per
// model; what a click does is the page's (`onUse`). Server replies are written as text only.

import { REQUESTS } from '../protocol.gen.js';
import { h, setChildren } from './dom.js';

/** Buttons shown per server at most (the rest stay in Options' Model list). */
export const MAX_MODEL_BUTTONS = 6;

/** "Ollama on this computer: llama3.2, qwen2.5:7b". */
export function serverLine(server) {
  const models = server.models?.length ? server.models.join(', ') : 'no models yet';
  return `${server.name} on this computer: ${models}`;
}

/** The accessible name of a model's button: "Use llama3.2 (Ollama)". */
export function useLabel(model, server) {
  return `Use ${model} (${server.name})`;
}

/**
 * The saved settings `current` switched to a server found on this computer: its provider,
 * Base URL and model, no key and the model's own context window, remembered in that
 * provider's profile as Options does; prices are the user's business and start empty.
 */
export function settingsUsing(current, { provider, base_url: baseUrl, model }) {
  const fields = { base_url: baseUrl, model, api_key: '', context_window: 0 };
  return {
    ...current,
    provider,
    ...fields,
    prices: {},
    profiles: { ...current.profiles, [provider]: { ...fields, prices: {} } },
  };
}

/**
 * Wires the list into `container`. `request(type)` sends a request to the worker;
 * `onUse({provider, base_url, model, server})` is called for a click. `find()` looks again.
 * The container's `data-state` is `looking` or `done` (tests wait on it).
 */
export function createLocalModels(container, { request, onUse }) {
  let asked = 0;

  function render(servers) {
    if (!servers.length) {
      return [h('p', { className: 'hint' }, 'No model server answered on this computer (Ollama, LM Studio, llama.cpp or vLLM on their usual ports).')];
    }
    return servers.map((server) => h('div', { className: 'found-server' },
      h('p', { className: 'found-line' }, serverLine(server)),
      h('div', { className: 'found-models' },
        (server.models ?? []).slice(0, MAX_MODEL_BUTTONS).map((model) => {
          const button = h('button', { type: 'button', className: 'secondary' }, useLabel(model, server));
          button.addEventListener('click', () => onUse({
            provider: server.provider, base_url: server.base_url, model, server: server.name,
          }));
          return button;
        }))));
  }

  async function find() {
    const ticket = ++asked;
    container.dataset.state = 'looking';
    setChildren(container, [h('p', { className: 'hint' }, 'Looking for models on this computer…')]);
    let servers = [];
    try {
      servers = (await request(REQUESTS.FIND_LOCAL_MODELS))?.servers ?? [];
    } catch {
      servers = [];
    }
    if (ticket !== asked) return;
    setChildren(container, render(servers));
    container.dataset.state = 'done';
  }

  return { find };
}
