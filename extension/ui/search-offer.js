// @ts-check
// The offer to search the web: after a question whose reply says so (`search_offer` on the
// `ask` reply: search is off and the offer was never answered), a card asks whether to turn
// Wikipedia search on. The question is asked either way. Its answer goes to the worker
// (`search_offer`), which saves it: the card does not come back once answered. No setting
// beyond the answer passes through this page (API keys stay with Options).

import { REQUESTS, SEARCH_OFFER_ANSWERS } from '../protocol.gen.js';

/** What the status line says once search is on. */
export const SEARCH_ON_TEXT = 'Web search is on (Wikipedia). Ask again to search the web.';

/**
 * Wires the card: `els` holds the card `section`, its buttons `turnOn` and `notNow`, the
 * polite live region `done`, and `after` (where focus goes once the card is gone);
 * `request(type, fields)` sends a request; `onError(err)` shows a failed one.
 */
export function createSearchOffer(els, request, onError) {
  let answered = false;
  let busy = false;

  function setBusy(value) {
    busy = value;
    els.turnOn.disabled = value;
    els.notNow.disabled = value;
  }

  async function answer(choice) {
    if (busy) return;
    // Read before the buttons are disabled: a disabled button loses focus.
    const hadFocus = els.section.contains(document.activeElement);
    setBusy(true);
    try {
      const reply = await request(REQUESTS.SEARCH_OFFER, { answer: choice });
      answered = true;
      els.section.hidden = true;
      els.done.textContent = reply?.search_provider === 'wikipedia' ? SEARCH_ON_TEXT : '';
      if (hadFocus) els.after.focus();
    } catch (err) {
      onError(err);
    } finally {
      setBusy(false);
    }
  }

  els.turnOn.addEventListener('click', () => void answer(SEARCH_OFFER_ANSWERS.TURN_ON));
  els.notNow.addEventListener('click', () => void answer(SEARCH_OFFER_ANSWERS.NOT_NOW));

  return {
    /** Shows the card when `view` (a reply to `ask`) carries the offer. */
    offer(view) {
      if (!view?.search_offer || answered) return;
      els.done.textContent = '';
      els.section.hidden = false;
    },
  };
}
