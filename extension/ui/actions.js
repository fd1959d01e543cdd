// @ts-check
// Selection actions in the pages: the buttons beside "Explain selection" (popup, side panel,
// in-page panel), one per action but Explain, named by the action's name, and the language
// Translate goes into by default (the browser's). The actions and their templates live in
// the worker (src/actions/); a button sends only the action's id.

import { BUILTIN_ACTIONS } from '../protocol.gen.js';

/** @typedef {{id: string, name: string}} ActionButton */

/** The built-in actions, in menu order (Explain first). */
export const BUILTIN = /** @type {ActionButton[]} */ (/** @type {unknown} */ (BUILTIN_ACTIONS));

/** The built-in actions a page offers as buttons (Explain has its own button). */
export const BUILTIN_BUTTONS = BUILTIN.filter((action) => action.id !== 'explain');

/**
 * The browser's language by its English name ("French"), what Translate translates into
 * unless Options chose another; its tag when the name is not known.
 * @returns {string}
 */
export function browserLanguage() {
  const tag = globalThis.chrome?.i18n?.getUILanguage?.() || globalThis.navigator?.language || 'en';
  try {
    return new Intl.DisplayNames(['en'], { type: 'language' }).of(tag) ?? tag;
  } catch {
    return tag;
  }
}

/**
 * The actions shown in `where` (`menu`, `popup` or `panel`), in order, from a
 * `get_actions` reply: not hidden, and meant for that place.
 * @param {import('../protocol.gen.js').ActionsReply} reply
 * @param {'menu'|'popup'|'panel'} where
 * @returns {ActionButton[]}
 */
export function actionsFor(reply, where) {
  return reply.actions.actions
    .filter((action) => !action.hidden && action[where] !== false)
    .map(({ id, name }) => ({ id: id ?? '', name }));
}

/**
 * Fills `container` with one button per action (its name as textContent: a user's name is
 * never markup), each calling `run(id)`; returns a function that enables or disables them.
 * @param {HTMLElement} container
 * @param {ActionButton[]} actions
 * @param {(id: string) => void} run
 * @returns {(disabled: boolean) => void}
 */
export function mountActionButtons(container, actions, run) {
  const buttons = actions.map((action) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = action.name;
    button.dataset.actionId = action.id;
    button.addEventListener('click', () => run(action.id));
    return button;
  });
  container.replaceChildren(...buttons);
  return (disabled) => {
    for (const button of buttons) button.disabled = disabled;
  };
}
