// @ts-check
// Options, section "Actions": the selection actions in menu order. Built-ins can be moved
// and hidden, never deleted or renamed; the user's own have an "Action name" and an "Action
// template" (placeholders {{selection}}, {{context}}, {{title}}, {{page_language}},
// {{target_language}}), and where they show (menu, popup, panel). Every check is the
// worker's (src/actions/: `check_actions` as you type, `save_actions` on the page's Save),
// and each problem shows beside its field. Names and templates are only ever textContent or
// input values, never markup.

import { REQUESTS } from '../protocol.gen.js';

/** @typedef {import('../protocol.gen.js').ActionsRecord} ActionsRecord */
/** @typedef {import('../protocol.gen.js').ActionDef} ActionDef */
/** @typedef {import('../protocol.gen.js').ActionFieldError} ActionFieldError */

const BUILTIN_IDS = new Set(['explain', 'summarize', 'translate', 'define', 'simplify']);
/** Most actions (src/actions/mod.rs MAX_ACTIONS). */
const MAX_ACTIONS = 30;

/** @param {string} tag @param {Record<string, string>} [attrs] @param {string} [text] */
function node(tag, attrs = {}, text = '') {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
  if (text) element.textContent = text;
  return element;
}

/**
 * The Actions section's editor.
 * @param {{connection: {request: Function}, list: HTMLElement, language: HTMLInputElement, add: HTMLButtonElement, reset: HTMLButtonElement, error: HTMLElement, shortcuts: HTMLElement}} parts
 */
export function createActionsEditor({ connection, list, language, add, reset, error, shortcuts }) {
  /** @type {ActionsRecord} */
  let record = { version: 1, actions: [], target_language: '' };
  let checks = 0;
  /** The first load (Save waits for it; when it failed there is nothing of ours to save). */
  /** @type {Promise<unknown> | null} */
  let loading = null;
  let loaded = false;

  /** The list as the fields now show it. */
  function typed() {
    return { ...record, target_language: language.value, actions: record.actions.map((a) => ({ ...a })) };
  }

  /** @param {ActionFieldError[]} errors */
  function showErrors(errors) {
    for (const field of list.querySelectorAll('[data-field]')) {
      field.removeAttribute('aria-invalid');
    }
    for (const message of list.querySelectorAll('.field-error')) {
      message.textContent = '';
      /** @type {HTMLElement} */ (message).hidden = true;
    }
    const general = [];
    for (const e of errors) {
      const input = e.index === null || e.index === undefined ? null : list.querySelector(`[data-index="${e.index}"][data-field="${e.field}"]`);
      const beside = input && list.querySelector(`#${input.id}-error`);
      if (input && beside) {
        input.setAttribute('aria-invalid', 'true');
        beside.textContent = e.message;
        /** @type {HTMLElement} */ (beside).hidden = false;
      } else {
        general.push(e.message);
      }
    }
    error.textContent = general.join(' ');
    error.hidden = general.length === 0;
    add.disabled = record.actions.length >= MAX_ACTIONS;
  }

  /** Asks the worker to check the list as typed (the latest answer wins). */
  async function check() {
    const asked = ++checks;
    const { errors } = await connection.request(REQUESTS.CHECK_ACTIONS, { actions: typed() });
    if (asked === checks) showErrors(errors);
    return errors;
  }

  /** A checkbox bound to `key` of action `index`. */
  function toggle(index, key, label) {
    const id = `action-${index}-${key}`;
    const box = /** @type {HTMLInputElement} */ (node('input', { type: 'checkbox', id }));
    box.checked = key === 'hidden' ? record.actions[index].hidden : record.actions[index][key] !== false;
    box.addEventListener('change', () => {
      record.actions[index][key] = box.checked;
    });
    const wrap = node('span', { class: 'action-toggle' });
    wrap.append(box, node('label', { for: id }, label));
    return wrap;
  }

  /** A button on the row of action `index`. */
  function rowButton(label, onClick, disabled = false) {
    const button = /** @type {HTMLButtonElement} */ (node('button', { type: 'button', class: 'secondary' }, label));
    button.disabled = disabled;
    button.addEventListener('click', onClick);
    return button;
  }

  /** A text field of action `index` (`name` or `template`), with its error beside it. */
  function textField(index, key, label) {
    const id = `action-${index}-${key}`;
    const input = /** @type {HTMLInputElement | HTMLTextAreaElement} */ (key === 'template'
      ? node('textarea', { id, rows: '4', spellcheck: 'false' })
      : node('input', { id, type: 'text', autocomplete: 'off' }));
    input.value = record.actions[index][key];
    input.dataset.index = String(index);
    input.dataset.field = key;
    input.setAttribute('aria-describedby', `${id}-error`);
    input.addEventListener('input', () => {
      record.actions[index][key] = input.value;
      void check().catch(() => {});
    });
    const field = node('div', { class: 'field' });
    const message = node('p', { id: `${id}-error`, class: 'field-error' });
    message.hidden = true;
    field.append(node('label', { for: id }, label), input, message);
    return field;
  }

  function render() {
    const rows = record.actions.map((action, index) => {
      const builtin = BUILTIN_IDS.has(action.id);
      const row = node('div', { class: 'action-row', role: 'group', 'aria-label': action.name || 'New action' });
      if (builtin) row.append(node('p', { class: 'action-title' }, `${action.name} (built in)`));
      else row.append(textField(index, 'name', 'Action name'), textField(index, 'template', 'Action template'));
      const toggles = node('div', { class: 'action-toggles' });
      toggles.append(toggle(index, 'menu', 'Menu'), toggle(index, 'popup', 'Popup'), toggle(index, 'panel', 'Panel'), toggle(index, 'hidden', 'Hidden'));
      const buttons = node('div', { class: 'field-actions' });
      const move = (by) => () => {
        const [moved] = record.actions.splice(index, 1);
        record.actions.splice(index + by, 0, moved);
        render();
      };
      buttons.append(rowButton('Move up', move(-1), index === 0), rowButton('Move down', move(1), index === record.actions.length - 1));
      if (!builtin) {
        buttons.append(rowButton('Delete', () => {
          record.actions.splice(index, 1);
          render();
        }));
      }
      row.append(toggles, buttons);
      return row;
    });
    list.replaceChildren(...rows);
    void check().catch(() => {});
  }

  add.addEventListener('click', () => {
    if (record.actions.length >= MAX_ACTIONS) return;
    record.actions.push({ id: '', name: '', template: 'Rewrite as a haiku:\n{{selection}}', hidden: false, menu: true, popup: true, panel: true });
    render();
    /** @type {HTMLElement | null} */ (list.querySelector(`#action-${record.actions.length - 1}-name`))?.focus();
  });
  reset.addEventListener('click', () => {
    // The built-ins back, shown everywhere and in their order; the user's stay after them.
    const builtins = [...BUILTIN_IDS].map((id) => ({ ...(record.actions.find((a) => a.id === id) ?? { id, name: id[0].toUpperCase() + id.slice(1), template: '' }), hidden: false, menu: true, popup: true, panel: true }));
    record.actions = [...builtins, ...record.actions.filter((a) => !BUILTIN_IDS.has(a.id))];
    render();
  });
  language.addEventListener('input', () => void check().catch(() => {}));
  shortcuts.addEventListener('click', (event) => {
    event.preventDefault();
    void chrome.tabs.create({ url: 'chrome://extensions/shortcuts' });
  });

  return {
    /** Shows the saved actions; resolves to the notice when the saved ones are not used. */
    async load() {
      loading = connection.request(REQUESTS.GET_ACTIONS);
      const reply = /** @type {import('../protocol.gen.js').ActionsReply} */ (await loading);
      record = reply.actions;
      loaded = true;
      language.value = record.target_language ?? '';
      render();
      return reply.notice ?? null;
    },
    /** Saves the actions as typed: true when saved, false when a field is wrong (shown). */
    async save() {
      await loading?.catch(() => {});
      if (!loaded) return true;
      const errors = await check();
      if (errors.length) return false;
      const reply = await connection.request(REQUESTS.SAVE_ACTIONS, { actions: typed() });
      record = reply.actions;
      render();
      return true;
    },
    /** @param {ActionsRecord} imported the list to show (it is saved by Save). */
    replace(imported) {
      record = imported;
      loaded = true;
      language.value = record.target_language ?? '';
      render();
    },
    typed,
  };
}
