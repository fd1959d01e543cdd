// @ts-check
// The answer: Markdown rendered into DOM nodes by markdown.js (streamed while the run writes
// it, rendered once more when it is complete), and the sources it cites listed under it. A
// draft's links are text (with their host) until the answer is complete and its links are
// checked against the view's known text (view-state.js, knownText).

import { createStreamRenderer, renderMarkdown } from '../markdown.js';
import { h, setChildren } from './dom.js';

const SAFE_LINK = /^https?:\/\//i;

/** Renders the answer text into `container`, re-rendering only when something changed. */
export function createAnswerView(container) {
  let shown = { text: null, streaming: false, sourcesKey: '', known: '', urlsKey: '' };
  let stream = null;

  return {
    /**
     * @param {string} text the answer (or the draft while `streaming`)
     * @param {{streaming: boolean, sources: object[], known?: string, urls?: string[]}} options
     *   `known`: the page and conversation text the view holds, which no link may carry away;
     *   `urls`: the session's own addresses (view-state.js, sourceUrls), never held back
     */
    render(text, { streaming, sources, known = '', urls = [] }) {
      const sourcesKey = JSON.stringify(sources);
      const urlsKey = JSON.stringify(urls);
      if (text === shown.text && streaming === shown.streaming && sourcesKey === shown.sourcesKey
        && known === shown.known && urlsKey === shown.urlsKey) return;
      container.classList.add('markdown');
      if (streaming && text) {
        // A draft that does not continue the last one (reset, or a new run) starts over.
        const continues = shown.streaming && stream && text.startsWith(shown.text ?? '');
        if (!continues) {
          // A frame the old renderer still waits for must not write into the new text.
          stream?.cancel();
          container.replaceChildren();
          stream = createStreamRenderer(container, { sources, known, urls, draftLinks: false });
        }
        stream.update(text);
      } else {
        stream?.cancel();
        stream = null;
        container.replaceChildren(text ? renderMarkdown(text, { sources, known, urls }) : '');
      }
      shown = { text, streaming, sourcesKey, known, urlsKey };
    },
  };
}

function sourceNode(source) {
  const title = source.title || source.url || source.id;
  const label = h('span', { className: 'source-id' }, `[${source.id}]`);
  const name = source.kind === 'web' && SAFE_LINK.test(source.url ?? '')
    ? h('a', { href: source.url, target: '_blank', rel: 'noopener noreferrer' }, title)
    : h('span', { className: 'source-title' }, title);
  // A PDF's passage says its page; a web page's, where it lies in the text.
  const pdfPage = Number.isInteger(source.page) && source.page > 0 ? source.page : null;
  // "<title>, page 4" for a PDF (the comma outside the page span).
  const where = pdfPage
    ? [',', h('span', { className: 'source-where' }, ` page ${pdfPage}`)]
    : Number.isFinite(source.start) && Number.isFinite(source.end)
      ? h('span', { className: 'source-where' }, ` characters ${source.start}–${source.end}`)
      : null;
  const excerpt = source.excerpt ? h('q', { className: 'source-excerpt' }, source.excerpt) : null;
  // A page passage can be shown in the page, a PDF's by opening the PDF at its page
  // (ui/passages.js handles the click).
  const show = source.kind === 'page' && source.excerpt
    ? h('button', {
      type: 'button', className: 'link source-show', 'data-passage': String(source.id),
      'aria-label': pdfPage ? `Open page ${pdfPage}: passage ${source.id}` : `Show on page: passage ${source.id}`,
    }, pdfPage ? `Open page ${pdfPage}` : 'Show on page')
    : null;
  return h('li', { id: `source-${source.id}`, className: 'source' }, label, ' ', name, where, show ? ' ' : null, show, excerpt);
}

/** Lists `sources` (the ones the answer cites) under the answer; hidden when there are none. */
export function renderSources(section, list, sources) {
  const key = JSON.stringify(sources);
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  setChildren(list, sources.map(sourceNode));
  section.hidden = sources.length === 0;
}
