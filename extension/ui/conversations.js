// @ts-check
// History: the archived conversations of every tab (newest first), each reopened read-only.

import { h, setChildren } from './dom.js';

const when = (ms) => (ms ? new Date(ms).toLocaleString() : '');

/**
 * Lists `conversations` in `list` as buttons named by their first question; `onOpen(id)`
 * runs when one is chosen.
 */
export function renderConversations(list, empty, conversations, onOpen) {
  const items = conversations.map((conversation) => {
    const button = h('button', { type: 'button', className: 'archive-open' }, conversation.title || '(no question)');
    button.addEventListener('click', () => onOpen(conversation.id));
    const turns = Number(conversation.turns) || 0;
    const meta = h('span', { className: 'archive-meta' },
      `${turns} question${turns === 1 ? '' : 's'} · ${when(conversation.updated_at)}`);
    return h('li', { 'data-id': conversation.id }, button, meta);
  });
  setChildren(list, items);
  empty.hidden = items.length > 0;
}
