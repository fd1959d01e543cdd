// @ts-check
// Options, section "Actions": "Export actions" downloads the list as it is shown (a JSON
// file: the saved record's shape, version included); "Import actions" reads a file through
// the worker (`import_actions`: parsed, migrated and checked in Rust, nothing saved) and
// shows in a dialog Translate's language, where each action shows and every template (a
// template is an instruction to the model, and so is the language); only
// "Import" there puts the list in the section and saves it.

import { REQUESTS } from '../protocol.gen.js';

/** The largest file Import reads (the worker refuses a longer text too). */
export const MAX_IMPORT_BYTES = 256 * 1024;

/**
 * Where an imported action shows, as the dialog says it: "Hidden", or the places it is in.
 * @param {import('../protocol.gen.js').ActionDef} action
 * @returns {string}
 */
export function placesOf(action) {
  if (action.hidden) return 'Hidden: shown nowhere.';
  const places = [['menu', 'the context menu'], ['popup', 'the popup and side panel'], ['panel', 'the in-page panel']]
    .filter(([where]) => action[where] !== false)
    .map(([, label]) => label);
  return places.length ? `Shown in ${places.join(', ')}.` : 'Shown nowhere.';
}

/** @typedef {import('../protocol.gen.js').ActionsRecord} ActionsRecord */

/**
 * @param {{connection: {request: Function}, editor: {typed: () => ActionsRecord, replace: (r: ActionsRecord) => void, save: () => Promise<boolean>}, exportButton: HTMLButtonElement, importButton: HTMLButtonElement, file: HTMLInputElement, dialog: HTMLDialogElement, list: HTMLElement, confirm: HTMLButtonElement, cancel: HTMLButtonElement, setStatus: (text: string, kind?: string) => void}} parts
 */
export function createActionsTransfer({ connection, editor, exportButton, importButton, file, dialog, list, confirm, cancel, setStatus }) {
  /** @type {ActionsRecord | null} */
  let pending = null;

  exportButton.addEventListener('click', () => {
    const text = `${JSON.stringify(editor.typed(), null, 2)}\n`;
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    link.download = 'knowledgelens-actions.json';
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  });

  importButton.addEventListener('click', () => file.click());

  file.addEventListener('change', async () => {
    const chosen = file.files?.[0];
    file.value = '';
    if (!chosen) return;
    if (chosen.size > MAX_IMPORT_BYTES) {
      setStatus(`This file is too big to be an actions file (${Math.ceil(chosen.size / 1024)} KB, at most 256 KB): choose the file Export actions saved.`, 'error');
      return;
    }
    try {
      const reply = await connection.request(REQUESTS.IMPORT_ACTIONS, { text: await chosen.text() });
      if (reply.errors.length) {
        setStatus(`This file's actions cannot be used: ${reply.errors[0].message}`, 'error');
        return;
      }
      pending = reply.actions;
      // Everything the file changes: Translate's language (it goes into Translate's request),
      // then each action in order with where it shows and, for the user's, its template.
      const language = document.createElement('p');
      language.className = 'import-language';
      const target = reply.actions.target_language?.trim();
      language.textContent = target ? `Translate translates into: ${target}` : "Translate translates into the browser's language.";
      list.replaceChildren(language, ...reply.actions.actions.map((action) => {
        const item = document.createElement('div');
        item.className = 'import-item';
        const name = document.createElement('h3');
        name.textContent = action.name;
        const places = document.createElement('p');
        places.className = 'import-places';
        places.textContent = placesOf(action);
        item.append(name, places);
        if (action.template) {
          const template = document.createElement('pre');
          template.textContent = action.template;
          item.append(template);
        }
        return item;
      }));
      dialog.showModal();
    } catch (err) {
      setStatus(err.message || 'The file could not be read.', 'error');
    }
  });

  cancel.addEventListener('click', () => {
    pending = null;
    dialog.close();
  });

  confirm.addEventListener('click', async () => {
    dialog.close();
    if (!pending) return;
    editor.replace(pending);
    pending = null;
    try {
      if (await editor.save()) setStatus('Imported and saved.', 'ok');
      else setStatus('Fix the actions marked in Actions: nothing was saved.', 'error');
    } catch (err) {
      setStatus(err.message || 'The actions could not be saved.', 'error');
    }
  });
}
