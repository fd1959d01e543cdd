// @ts-check
// Questions across pages: "Add pages" lists the pages read with KnowledgeLens in this browser
// session (`read_pages`; never an incognito tab's) as checkboxes named by title and site,
// "Add" makes the checked ones sources of the current conversation (`add_pages`), and
// "Also using: …" names the pages it uses, each with a button that removes it
// (`remove_page`). A passage of an added page is shown in the tab it was read in while that
// tab still shows it, else its page opens in a new tab (showAddedPassage). Titles and sites
// are page text: textContent only.

import { REQUESTS } from '../protocol.gen.js';
import { h, setChildren } from './dom.js';

/** How a read page is named: its title and site, "Leaves (127.0.0.1)". */
export function pageName(page) {
  const title = String(page?.title ?? '').trim() || String(page?.url ?? '');
  const site = String(page?.site ?? '').trim();
  return site ? `${title} (${site})` : title;
}

/**
 * The "Add pages" controls in `container`.
 * @param {HTMLElement} container
 * @param {{request: (type: any, fields: object) => Promise<any>, session: () => string|null,
 *   onView: (view: object) => void, onError: (error: any) => void}} options
 *   `onView(view)`: the session view an add or a remove replied with;
 *   `onError(error)`: a failed request, for the popup's alert.
 */
export function createAddPages(container, { request, session, onView, onError }) {
  const also = h('p', { id: 'also-using', className: 'also-using', hidden: true });
  const open = /** @type {HTMLButtonElement} */ (h('button', {
    type: 'button', id: 'add-pages', className: 'secondary', 'aria-expanded': 'false', 'aria-controls': 'add-pages-list',
  }, 'Add pages'));
  const list = h('ul', { className: 'add-pages-choices' });
  const empty = h('p', { className: 'hint', hidden: true },
    'No other page was read yet: ask KnowledgeLens about a page once, in its tab, to add it here.');
  const add = /** @type {HTMLButtonElement} */ (h('button', { type: 'button', id: 'add-pages-add', className: 'primary' }, 'Add'));
  const panel = h('fieldset', { id: 'add-pages-list', className: 'add-pages-list', hidden: true },
    h('legend', {}, 'Pages read in this browser session'), empty, list, add);
  container.replaceChildren(h('div', { className: 'controls' }, open), also, panel);

  const close = () => {
    panel.hidden = true;
    open.setAttribute('aria-expanded', 'false');
  };

  const choices = () => [...list.querySelectorAll('input[type="checkbox"]')]
    .filter((box) => /** @type {HTMLInputElement} */ (box).checked && !(/** @type {HTMLInputElement} */ (box).disabled))
    .map((box) => Number(/** @type {HTMLInputElement} */ (box).value));

  const showList = (pages) => {
    setChildren(list, pages.map((page) => {
      const id = `read-page-${page.id}`;
      const box = h('input', { type: 'checkbox', id, value: String(page.id), checked: Boolean(page.added), disabled: Boolean(page.added) });
      const when = Number.isFinite(page.read_at)
        ? h('span', { className: 'read-at' }, ` read ${new Date(page.read_at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}`)
        : null;
      return h('li', {}, box, ' ', h('label', { htmlFor: id }, pageName(page)), when);
    }));
    empty.hidden = pages.length > 0;
    add.hidden = pages.length === 0;
  };

  open.addEventListener('click', async () => {
    if (!panel.hidden) return close();
    try {
      const data = await request(REQUESTS.READ_PAGES, { session: session() });
      showList(data?.pages ?? []);
      panel.hidden = false;
      open.setAttribute('aria-expanded', 'true');
    } catch (err) {
      onError(err);
    }
  });

  add.addEventListener('click', async () => {
    const pages = choices();
    if (pages.length === 0) return close();
    add.disabled = true;
    try {
      onView(await request(REQUESTS.ADD_PAGES, { session: session(), pages }));
      close();
    } catch (err) {
      onError(err);
    } finally {
      add.disabled = false;
    }
  });

  const remove = async (page) => {
    try {
      onView(await request(REQUESTS.REMOVE_PAGE, { session: session(), page: page.id }));
    } catch (err) {
      onError(err);
    }
  };

  let shownKey = '';
  return {
    /** Shows the view's added pages (`view.added`); hidden for no view (an archived one). */
    render(view) {
      container.hidden = !view;
      const added = view?.added ?? [];
      const running = view?.status === 'running';
      open.disabled = running;
      const key = JSON.stringify([added, running]);
      if (key === shownKey) return;
      shownKey = key;
      also.hidden = added.length === 0;
      const items = added.map((page) => h('span', { className: 'also-page' },
        h('span', { className: 'also-title' }, pageName(page)), ' ',
        h('button', {
          type: 'button', className: 'link also-remove', disabled: running, 'aria-label': `Remove ${pageName(page)}`,
          onclick: () => void remove(page),
        }, 'Remove')));
      also.replaceChildren('Also using: ', ...items.flatMap((item, i) => (i ? ['; ', item] : [item])));
    },
  };
}

/**
 * Shows a passage of an added page (a source with `added`): looked for in the tab its page
 * was read in (`locate(text, page)`, the `locate_passage` request naming the page), that tab
 * is switched to when it still shows it; else the page's URL opens in a new tab.
 * @returns {Promise<{found: boolean}>}
 */
export async function showAddedPassage(source, view, text, locate) {
  const page = (view?.added ?? []).find((p) => p.url === source.url);
  const reply = page ? await locate(text, page.id) : { found: false };
  if (reply?.found && Number.isInteger(reply.tab)) {
    const tab = await chrome.tabs.update(reply.tab, { active: true });
    if (tab?.windowId !== undefined) await chrome.windows.update(tab.windowId, { focused: true });
    return { found: true };
  }
  if (!/^https?:\/\//i.test(String(source.url ?? ''))) return { found: false };
  await chrome.tabs.create({ url: source.url });
  return { found: true };
}
