// @ts-check
// Page passage citations in the answer (`[pN]`, links to `#source-pN` made by markdown.js):
// - hovering or focusing one shows the cited passage in a tooltip (one element with
//   role="tooltip", named from the link by aria-describedby while it shows; text only, set
//   with textContent). Escape, moving away or blurring hides it; the pointer may move onto it.
// - activating one (click, Enter), or a page source's "Show on page" button in the source
//   list, asks the worker (`locate_passage`) to scroll the session's tab to the passage and
//   highlight it briefly. When the page no longer has it, the popup's alert says so. A PDF's
//   passage (its source has a `page`) opens the PDF at that page instead (`#page=N`).

import { MAX_LOCATE_CHARS } from '../protocol.gen.js';

/** The alert's text when the page no longer has the passage. */
export const PASSAGE_GONE = 'This passage is no longer on the page.';
/** The error kind of that alert (the popup's own; never sent by the worker). */
export const PASSAGE_GONE_KIND = 'passage_not_found';

const CITATION = 'a.md-citation[href^="#source-p"]';
const GAP = 6;

/** `excerpt` as paragraphs: the page's own line breaks within one collapsed to spaces. */
export function readable(excerpt) {
  return String(excerpt ?? '')
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .join('\n\n');
}

/**
 * The address that opens the PDF at `source.url` at page `source.page` (`#page=N`, which
 * Chrome's viewer follows), or null for anything but an http(s) PDF passage.
 */
export function pdfPageUrl(source) {
  if (!Number.isInteger(source?.page) || source.page < 1) return null;
  let url;
  try {
    url = new URL(String(source.url ?? ''));
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  url.hash = `page=${source.page}`;
  return url.href;
}

/** The passage id a citation link names (`#source-p3` → `p3`), or null. */
export function passageIdOf(link) {
  const match = /^#source-(p\d+)$/.exec(link?.getAttribute?.('href') ?? '');
  return match ? match[1] : null;
}

/**
 * Wires the citations of `answer` and the "Show on page" buttons of `list` to `preview`.
 * @param {{answer: HTMLElement, list: HTMLElement, preview: HTMLElement,
 *   sources: () => object[], locate: (text: string, source: object) => Promise<{found: boolean}>,
 *   openPage: (url: string) => Promise<void>,
 *   onResult: (error: {kind: string, message: string}|null) => void}} options
 *   `sources()`: the shown view's sources; `locate(text, source)`: the `locate_passage`
 *   request (for an added page's passage, its tab or URL: ui/add-pages.js);
 *   `openPage(url)`: shows the session's tab at `url` (a PDF passage's page);
 *   `onResult(error)`: an error to show in the alert, or null once a passage was shown.
 */
export function createPassageCitations({ answer, list, preview, sources, locate, openPage, onResult }) {
  let anchor = null;

  const pageSource = (id) => (sources() ?? []).find((s) => s && s.kind === 'page' && String(s.id) === id) ?? null;

  const hide = () => {
    if (anchor) anchor.removeAttribute('aria-describedby');
    anchor = null;
    preview.hidden = true;
    preview.replaceChildren();
  };

  // Under the link (over it when there is no room below), in page coordinates, so it scrolls
  // with the answer and a full-page capture shows it where it belongs.
  const place = (link) => {
    const box = link.getBoundingClientRect();
    const viewport = document.documentElement.clientWidth;
    preview.style.maxWidth = `${Math.min(360, viewport - 2 * GAP)}px`;
    const tip = preview.getBoundingClientRect();
    const left = Math.max(GAP, Math.min(box.left, viewport - tip.width - GAP));
    const fitsBelow = box.bottom + GAP + tip.height <= window.innerHeight - GAP;
    const fitsAbove = box.top - GAP - tip.height >= GAP;
    const top = fitsBelow || !fitsAbove ? box.bottom + GAP : box.top - GAP - tip.height;
    preview.style.left = `${left + window.scrollX}px`;
    preview.style.top = `${top + window.scrollY}px`;
  };

  const show = (link) => {
    const id = passageIdOf(link);
    const source = id && pageSource(id);
    if (!source || !source.excerpt) return;
    if (anchor && anchor !== link) anchor.removeAttribute('aria-describedby');
    anchor = link;
    const title = String(source.title ?? '').trim();
    const head = document.createElement('span');
    head.className = 'passage-preview-head';
    const where = pdfPageUrl(source) ? `, page ${source.page}` : '';
    head.textContent = title ? `[${id}] ${title}${where}` : `[${id}]${where}`;
    const text = document.createElement('span');
    text.className = 'passage-preview-text';
    text.textContent = readable(source.excerpt);
    const hint = document.createElement('span');
    hint.className = 'passage-preview-hint';
    hint.textContent = where ? 'Click or press Enter to open the PDF at this page.' : 'Click or press Enter to show it on the page.';
    preview.replaceChildren(head, text, hint);
    preview.hidden = false;
    link.setAttribute('aria-describedby', preview.id);
    place(link);
  };

  const activate = async (id) => {
    const source = pageSource(id);
    if (!source) return;
    const pageUrl = pdfPageUrl(source);
    if (pageUrl && openPage) {
      try {
        await openPage(pageUrl);
        document.documentElement.dataset.located = `page:${source.page}`;
        onResult(null);
      } catch (err) {
        document.documentElement.dataset.located = `error:${id}`;
        onResult({ kind: err?.kind ?? 'internal', message: err?.message || String(err) });
      }
      return;
    }
    const text = String(source.excerpt ?? '').slice(0, MAX_LOCATE_CHARS);
    document.documentElement.dataset.located = 'pending';
    try {
      const { found } = await locate(text, source);
      document.documentElement.dataset.located = found ? `found:${id}` : `gone:${id}`;
      onResult(found ? null : { kind: PASSAGE_GONE_KIND, message: PASSAGE_GONE });
    } catch (err) {
      document.documentElement.dataset.located = `error:${id}`;
      onResult({ kind: err?.kind ?? 'internal', message: err?.message || String(err) });
    }
  };

  const citationOf = (event) => /** @type {Element | null} */ (event.target)?.closest?.(CITATION) ?? null;

  answer.addEventListener('mouseover', (event) => {
    const link = citationOf(event);
    if (link && link !== anchor) show(link);
  });
  answer.addEventListener('mouseout', (event) => {
    const link = citationOf(event);
    if (!link || link !== anchor) return;
    const to = /** @type {Node | null} */ (event.relatedTarget);
    if (to && (link.contains(to) || preview.contains(to))) return;
    if (document.activeElement !== link) hide();
  });
  preview.addEventListener('mouseleave', (event) => {
    if (anchor && !anchor.contains(/** @type {Node | null} */ (event.relatedTarget)) && document.activeElement !== anchor) hide();
  });
  answer.addEventListener('focusin', (event) => {
    const link = citationOf(event);
    if (link) show(link);
  });
  answer.addEventListener('focusout', (event) => {
    if (citationOf(event) === anchor) hide();
  });
  answer.addEventListener('click', (event) => {
    const link = citationOf(event);
    const id = passageIdOf(link);
    if (!id || !pageSource(id)) return;
    event.preventDefault();
    void activate(id);
  });
  list.addEventListener('click', (event) => {
    const button = /** @type {HTMLElement | null} */ (/** @type {Element | null} */ (event.target)?.closest?.('button[data-passage]'));
    if (button) void activate(button.dataset.passage);
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && anchor) {
      event.preventDefault();
      hide();
    }
  });
  // The answer box scrolls on its own in the popup: the preview follows its link.
  const follow = () => {
    if (anchor) place(anchor);
  };
  window.addEventListener('resize', follow);
  document.addEventListener('scroll', follow, true);
  // ...and so does it when the popup's layout moves (an alert shows, the answer re-renders).
  new ResizeObserver(follow).observe(document.body);

  return {
    /** Hides the preview when the answer it points into is re-rendered. */
    refresh() {
      if (anchor && !anchor.isConnected) hide();
    },
  };
}
