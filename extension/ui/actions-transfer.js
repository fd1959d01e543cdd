// @ts-check
// Options, section "Actions": "Export actions" downloads the list as it is shown (a JSON
// file: the saved record's shape, version included); "Import actions" reads a file through
// the worker (`import_actions`: parsed, migrated and checked in Rust, nothing saved) and
// shows every template in a dialog, since a template is an instruction to the model; only
// "Import" there puts the list in the section and saves it.

import { REQUESTS } from '../protocol.gen.js';

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
    try {
      const reply = await connection.request(REQUESTS.IMPORT_ACTIONS, { text: await chosen.text() });
      if (reply.errors.length) {
        setStatus(`This file's actions cannot be used: ${reply.errors[0].message}`, 'error');
        return;
      }
      pending = reply.actions;
      list.replaceChildren(...reply.actions.actions.filter((a) => a.template).map((action) => {
        const item = document.createElement('div');
        item.className = 'import-item';
        const name = document.createElement('h3');
        name.textContent = action.name;
        const template = document.createElement('pre');
        template.textContent = action.template;
        item.append(name, template);
        return item;
      }));
      if (!list.children.length) list.textContent = 'Only the built-in actions (their order and where they show).';
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
